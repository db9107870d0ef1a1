//! `GET /v1/pools/{pool}/rounds` on both backends: the applied rounds in order, paged as JSON or
//! streamed as JSON Lines after the pool's line; re-posting the export into a new pool
//! reproduces every rating.

use axum::http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};

use crate::support::{round, round_at, Payload, TestApp, ADMIN_KEY, POOL};

backend_tests!(
    an_exported_pool_posted_into_another_rates_every_player_the_same,
    pages_end_by_size_and_a_round_larger_than_a_page_opens_one_alone,
    a_streamed_export_a_rename_outdates_ends_with_an_error_the_client_sees,
    a_streamed_export_a_void_outdates_ends_with_an_error_the_client_sees,
);

/// The rounds of every page of the pool's export, `limit` at most a page, first to last.
async fn pages(app: &TestApp, limit: u32) -> Vec<Vec<Value>> {
    let mut pages = Vec::new();
    let mut uri = format!("/v1/pools/main/rounds?limit={limit}");
    loop {
        let page = app
            .get(&uri)
            .await
            .assert_status(StatusCode::OK, &uri)
            .clone();
        let rounds = page["rounds"].as_array().expect("rounds");
        pages.push(rounds.iter().map(|r| r["round"].clone()).collect());
        match page["next_after"].as_i64() {
            Some(after) => uri = format!("/v1/pools/main/rounds?limit={limit}&after={after}"),
            None => return pages,
        }
    }
}

async fn an_exported_pool_posted_into_another_rates_every_player_the_same(app: TestApp) {
    app.create_pool(POOL).await;
    let mut weighted = round("r3", &["c", "d", "a"]);
    weighted["weight"] = json!(0.5);
    app.play([
        round_at("r1", "2026-01-01T00:00:00Z", &["a", "b", "c"]),
        round_at("r2", "2026-01-02T00:00:00Z", &["b", "a"]),
        weighted,
        round("r4", &["d", "e", "b", "a"]),
        round("r5", &["e", "c"]),
    ])
    .await;
    app.queue_round(round("r6", &["a", "e"])).await;

    let paged: Vec<Value> = pages(&app, 2).await.concat();
    let ids: Vec<&str> = paged
        .iter()
        .map(|r| r["id"].as_str().expect("an id"))
        .collect();
    assert_eq!(
        ids,
        ["r1", "r2", "r3", "r4", "r5"],
        "applied rounds only, in order"
    );

    let (status, content_type, text) = app
        .get_text("/v1/pools/main/rounds", "application/x-ndjson")
        .await;
    assert_eq!(
        (status, content_type.as_str()),
        (StatusCode::OK, "application/x-ndjson")
    );
    let mut lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("one line of JSON each"))
        .collect();
    // The pool's line first: what `GET /v1/pools/{pool}` says of its settings.
    let opening = lines.remove(0);
    let pool = app.pool_info(POOL).await;
    assert_eq!(opening["pool"]["name"], POOL);
    for field in ["system", "params", "display"] {
        assert_eq!(opening["pool"][field], pool[field], "{field}");
    }
    assert_eq!(lines, paged);
    let (_, _, tail) = app
        .get_text("/v1/pools/main/rounds?after=3", "application/x-ndjson")
        .await;
    assert_eq!(
        tail.lines().count(),
        2,
        "resumed after the third round, without the pool's line"
    );

    app.create_pool("copy").await;
    for line in &lines {
        app.post_round("copy", line.clone())
            .await
            .assert_status(StatusCode::ACCEPTED, "re-post");
    }
    app.apply_queued("copy").await;
    for player in ["a", "b", "c", "d", "e"] {
        let original = app.get(&format!("/v1/pools/main/players/{player}")).await;
        let copied = app.get(&format!("/v1/pools/copy/players/{player}")).await;
        assert_eq!(copied.body, original.body, "{player}");
    }
}

async fn pages_end_by_size_and_a_round_larger_than_a_page_opens_one_alone(app: TestApp) {
    app.create_pool(POOL).await;
    // 4 MiB of bodies end a page: 1,000 entrants with ids of 250 bytes make a round of about
    // 270 kB, and 17,000 one of about 4.6 MB.
    let players = |count: usize, tag: &str| -> Vec<String> {
        (0..count).map(|i| format!("{tag}{i:0>249}")).collect()
    };
    let round_of = |id: &str, count: usize| {
        let names = players(count, &id[..1]);
        round(id, &names.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let rounds: Vec<Value> = [("a1", 1_000), ("b2", 17_000), ("c3", 1_000), ("d4", 1_000)]
        .into_iter()
        .map(|(id, count)| round_of(id, count))
        .collect();
    app.play(rounds).await;
    let ids: Vec<Vec<String>> = pages(&app, 1000)
        .await
        .iter()
        .map(|page| {
            page.iter()
                .map(|r| r["id"].as_str().expect("an id").to_owned())
                .collect()
        })
        .collect();
    assert_eq!(
        ids,
        [vec!["a1"], vec!["b2"], vec!["c3", "d4"]],
        "the round over 4 MiB goes alone, and paging goes on after it"
    );
    // The stream reads 1 MiB of bodies at a time: here a1, then b2 alone, then c3 and d4,
    // after the pool's line.
    let (status, _, text) = app
        .get_text("/v1/pools/main/rounds", "application/x-ndjson")
        .await;
    assert_eq!(status, StatusCode::OK);
    let streamed: Vec<String> = text
        .lines()
        .skip(1)
        .map(|line| {
            let round: Value = serde_json::from_str(line).expect("one round per line");
            round["id"].as_str().expect("an id").to_owned()
        })
        .collect();
    assert_eq!(streamed, ["a1", "b2", "c3", "d4"], "every batch streamed");
}

/// Rounds in the pool the slow reader exports: more than the export reads at a time (500), and
/// large enough (ten players of long names each) that the first batch fills the stream's pipe,
/// so that the next batch is read only once the reader reads on.
const EXPORTED: usize = 600;

/// A pool of [`EXPORTED`] applied rounds.
async fn a_long_pool(app: &TestApp) {
    app.create_pool(POOL).await;
    let names: Vec<String> = (0..10)
        .map(|i| format!("player-with-a-long-name-{i:02}"))
        .collect();
    let mut players: Vec<&str> = names.iter().map(String::as_str).collect();
    for i in 0..EXPORTED {
        players.rotate_left(1);
        app.queue_round(round(&format!("r{i}"), &players)).await;
    }
    app.apply_queued(POOL).await;
}

/// Starts a streamed export, reads a little of it, runs `correct` and reads on: the text read,
/// and whether the body ended in an error.
async fn read_across<F: std::future::Future<Output = ()>>(
    app: &TestApp,
    correct: impl FnOnce() -> F,
) -> (String, bool) {
    let response = app
        .get_stream(
            "/v1/pools/main/rounds",
            &[("accept", "application/x-ndjson")],
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut text = Vec::new();
    while text.len() < 4096 {
        let frame = body.frame().await.expect("a frame").expect("data");
        text.extend_from_slice(&frame.into_data().expect("data"));
    }
    correct().await;
    let failed = loop {
        match body.frame().await {
            None => break false,
            Some(Err(_)) => break true,
            Some(Ok(frame)) => text.extend_from_slice(&frame.into_data().expect("data")),
        }
    };
    (String::from_utf8(text).expect("UTF-8"), failed)
}

/// Checks an export that a correction outdated: its last line says so, every line between
/// the pool's line and it is a round as it was before the correction, and the body ended in an
/// error.
fn assert_outdated(text: &str, failed: bool, before: &str) {
    assert!(failed, "the body ends in an error, not as if whole");
    let lines: Vec<&str> = text.lines().collect();
    let opening: Value = serde_json::from_str(lines[0]).expect("JSON");
    assert_eq!(opening["pool"]["name"], "main", "{opening}");
    let last: Value = serde_json::from_str(lines.last().expect("a line")).expect("JSON");
    assert_eq!(last["error"]["code"], "export_outdated", "{last}");
    assert!(
        lines.len() - 2 < EXPORTED,
        "{} rounds sent",
        lines.len() - 2
    );
    for line in &lines[1..lines.len() - 1] {
        let round: Value = serde_json::from_str(line).expect("a round");
        assert!(round["id"].is_string(), "{round}");
    }
    assert!(
        text.contains(before),
        "the rounds sent are as before the correction"
    );
}

async fn a_streamed_export_a_rename_outdates_ends_with_an_error_the_client_sees(app: TestApp) {
    a_long_pool(&app).await;
    let (text, failed) = read_across(&app, || async {
        let rename = json!({"id": "rename", "action": "rename",
            "player": "player-with-a-long-name-00", "to": "renamed"});
        app.post("/v1/pools/main/corrections", Some(ADMIN_KEY), rename)
            .await
            .assert_status(StatusCode::ACCEPTED, "rename");
        app.apply_queued(POOL).await;
    })
    .await;
    assert!(
        !text.contains("renamed"),
        "no line after the rename was sent"
    );
    assert_outdated(&text, failed, "player-with-a-long-name-00");
}

async fn a_streamed_export_a_void_outdates_ends_with_an_error_the_client_sees(app: TestApp) {
    a_long_pool(&app).await;
    let (text, failed) = read_across(&app, || async {
        app.send(
            Method::DELETE,
            "/v1/pools/main/rounds/r1",
            Some(ADMIN_KEY),
            Payload::Empty,
        )
        .await
        .assert_status(StatusCode::ACCEPTED, "void");
        app.apply_queued(POOL).await;
    })
    .await;
    assert_outdated(&text, failed, r#""id":"r1""#);
}
