//! `?as_of=ROUND_ID` on a player and on the leaderboard, on both backends: what the pool
//! showed right after an applied round, rebuilt from history rows, equals what it answered
//! at the time.

use std::collections::BTreeMap;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{round, round_at, Payload, TestApp, TestResponse, ADMIN_KEY, POOL};

backend_tests!(
    as_of_reads_answer_what_the_pool_showed_right_after_the_round,
    as_of_names_an_applied_round_of_the_pool,
    a_past_board_is_read_again_after_a_correction,
    a_season_whose_successor_is_queued_still_takes_in_its_rounds,
    one_client_builds_one_past_board_at_a_time_and_beyond_gets_429,
);

async fn get(app: &TestApp, uri: &str) -> Value {
    app.get(uri)
        .await
        .assert_status(StatusCode::OK, uri)
        .clone()
}

async fn as_of_reads_answer_what_the_pool_showed_right_after_the_round(app: TestApp) {
    app.create_plain_pool(POOL).await;
    app.play([
        round_at("r1", "2026-01-01T00:00:00Z", &["a", "b", "c"]),
        round("r2", &["c", "a", "d"]),
    ])
    .await;
    let reads = [
        "/v1/pools/main/players/a",
        "/v1/pools/main/players/c",
        "/v1/pools/main/leaderboard",
        "/v1/pools/main/leaderboard?order=conservative&limit=2",
        "/v1/pools/main/leaderboard?around=a&limit=1",
    ];
    let mut then = Vec::new();
    for uri in reads {
        then.push(get(&app, uri).await);
    }
    app.play([round("r3", &["d", "b", "a", "e"])]).await;
    for (uri, answer) in reads.iter().zip(&then) {
        let joiner = if uri.contains('?') { '&' } else { '?' };
        let past = get(&app, &format!("{uri}{joiner}as_of=r2")).await;
        assert_eq!(&past, answer, "{uri} as of r2");
        let now = get(&app, &format!("{uri}{joiner}as_of=r3")).await;
        assert_eq!(now, get(&app, uri).await, "{uri} as of the newest round");
    }
    let first = get(&app, "/v1/pools/main/players/b?as_of=r1").await;
    assert_eq!(
        (first["rounds"].as_u64(), first["mu"].as_f64().is_some()),
        (Some(1), true)
    );
    assert_eq!(
        first["last_round"],
        json!({"id": "r1", "time": "2026-01-01T00:00:00Z"})
    );
    app.get("/v1/pools/main/players/e?as_of=r2")
        .await
        .assert_error(
            StatusCode::NOT_FOUND,
            "player_not_found",
            None,
            "e had not played by r2",
        );
    put_provisional(&app).await;
    let established = get(&app, "/v1/pools/main/leaderboard?established=true&as_of=r1").await;
    assert_eq!(established["total"], 0, "everyone had one round after r1");
    let established = get(&app, "/v1/pools/main/leaderboard?established=true&as_of=r2").await;
    assert_eq!(established["total"], 2, "a and c had two");
}

async fn put_provisional(app: &TestApp) {
    app.send(
        axum::http::Method::PUT,
        "/v1/pools/main/display",
        Some(ADMIN_KEY),
        Payload::Json(json!({"provisional": {"min_rounds": 2}})),
    )
    .await
    .assert_status(StatusCode::OK, "display");
}

async fn as_of_names_an_applied_round_of_the_pool(app: TestApp) {
    app.create_plain_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    app.queue_round(round("r2", &["b", "a"])).await;
    for uri in [
        "/v1/pools/main/players/a?as_of=nope",
        "/v1/pools/main/leaderboard?as_of=nope",
    ] {
        app.get(uri)
            .await
            .assert_error(StatusCode::NOT_FOUND, "round_not_found", None, uri);
    }
    for uri in [
        "/v1/pools/main/players/a?as_of=r2",
        "/v1/pools/main/leaderboard?as_of=r2",
    ] {
        app.get(uri).await.assert_error(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("as_of"),
            uri,
        );
    }
}

/// A past board is built once and kept for the pages that follow; a correction rewrites the
/// history it was built from, so the next read builds it again.
async fn a_past_board_is_read_again_after_a_correction(app: TestApp) {
    app.create_plain_pool(POOL).await;
    app.play([
        round("r1", &["a", "b", "c"]),
        round("r2", &["c", "a", "d"]),
        round("r3", &["d", "c"]),
    ])
    .await;
    let board = "/v1/pools/main/leaderboard?as_of=r2";
    let before = get(&app, board).await;
    assert_eq!(before["total"], 4);
    assert_eq!(get(&app, board).await, before, "the same board, read twice");
    get(&app, "/v1/pools/main/players/b?as_of=r2").await;
    app.send(
        axum::http::Method::DELETE,
        "/v1/pools/main/rounds/r1",
        Some(ADMIN_KEY),
        Payload::Empty,
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "void r1");
    app.apply_queued(POOL).await;
    let after = get(&app, board).await;
    assert_eq!(after["total"], 3, "b played only r1: {after:#}");
    app.get("/v1/pools/main/players/b?as_of=r2")
        .await
        .assert_error(
            StatusCode::NOT_FOUND,
            "player_not_found",
            None,
            "b's only round was voided",
        );
}

/// A season ends when the next one's start is applied, not when it is posted: its standings,
/// read while that start waits in the queue, take in the rounds applied before it.
async fn a_season_whose_successor_is_queued_still_takes_in_its_rounds(app: TestApp) {
    app.create_plain_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    app.queue_round(round("r2", &["c", "d"])).await;
    app.post(
        "/v1/pools/main/seasons",
        Some(ADMIN_KEY),
        json!({"id": "s2", "mu_reset": 0.5}),
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "season 2 queued");
    let standings = "/v1/pools/main/seasons/1/leaderboard";
    assert_eq!(get(&app, standings).await["total"], 2, "r1's players");
    app.apply_queued(POOL).await;
    assert_eq!(get(&app, standings).await["total"], 4, "r2's players too");
}

/// A client asking for boards of many rounds at once, each built from the history rows, gets
/// one built at a time (of the 2 built at once, `server.client_share_percent` 50); beyond,
/// 429 `rate_limited` with Retry-After, while another client's boards are built beside it.
async fn one_client_builds_one_past_board_at_a_time_and_beyond_gets_429(app: TestApp) {
    app.create_plain_pool(POOL).await;
    let names: Vec<String> = (0..60).map(|i| format!("p{i}")).collect();
    let rounds = (0..90).map(|r| {
        let players: Vec<&str> = (0..30)
            .map(|i| names[(r * 7 + i * 11) % names.len()].as_str())
            .collect();
        round(&format!("r{r}"), &players)
    });
    app.play(rounds).await;
    let app = &app;
    let from = |peer: &'static str, round: usize| async move {
        let uri = format!("/v1/pools/main/leaderboard?as_of=r{round}");
        app.send_from(peer, Method::GET, &uri, Payload::Empty).await
    };
    let kind = |answer: &TestResponse| match answer.status {
        StatusCode::OK => "200".to_owned(),
        status => format!("{} {}", status.as_u16(), answer.body["error"]["code"]),
    };
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    // Each board asked for once: a board kept would be answered without a build.
    for r in (0..90).step_by(3) {
        let (one, two, other) = tokio::join!(
            from("192.0.2.1:5000", r),
            from("192.0.2.1:5001", r + 1),
            from("192.0.2.2:5000", r + 2),
        );
        other.assert_status(StatusCode::OK, "another client's board is built beside");
        for answer in [&one, &two] {
            if answer.status == StatusCode::TOO_MANY_REQUESTS {
                answer.assert_error(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    None,
                    "the client's board under way",
                );
                answer.assert_retry_after(2, "a board takes seconds to build");
            }
            *answers.entry(kind(answer)).or_default() += 1;
        }
    }
    println!("one client's boards two at a time, by answer: {answers:?}");
    assert!(
        answers.keys().all(|k| k == "200" || k.starts_with("429")),
        "{answers:?}"
    );
    assert!(
        answers.contains_key("429 \"rate_limited\"") && answers.contains_key("200"),
        "a second board of the same client while its first is built is refused: {answers:?}"
    );
}
