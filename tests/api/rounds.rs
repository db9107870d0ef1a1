//! `POST /v1/pools/{pool}/rounds` and `GET /v1/pools/{pool}/rounds/{id}`.

use crate::storage_ext::StorageExt;
use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use mmr_service::worker::{self, Processed, Settled};
use serde_json::{json, Value};

use crate::support::{
    num, round, round_at, settings, Payload, TestApp, ADMIN_KEY, POOL, READ_KEY, UNKNOWN_KEYS,
    WRITE_KEY,
};

const ROUNDS: &str = "/v1/pools/main/rounds";

/// Checks that `pool` has exactly `queued` rounds waiting.
async fn assert_queued(app: &TestApp, queued: u64, context: &str) {
    let info = app.pool_info(POOL).await;
    assert_eq!(info["rounds_queued"], queued, "{context}");
}

#[tokio::test]
async fn posting_a_valid_round_returns_202_with_its_location_and_queue_position() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    for (id, position) in [("r1", 1), ("r2", 2)] {
        let response = app.post_round(POOL, round(id, &["a", "b", "c"])).await;
        let body = response.assert_status(StatusCode::ACCEPTED, id);
        assert_eq!(
            body,
            &json!({"id": id, "status": "queued", "position": position})
        );
        assert_eq!(
            response.headers[header::LOCATION],
            format!("/v1/pools/main/rounds/{id}").as_str()
        );
    }
    assert_queued(&app, 2, "both rounds wait").await;
}

#[tokio::test]
async fn a_round_timed_within_a_day_of_the_services_clock_is_accepted() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let in_an_hour = (time::OffsetDateTime::now_utc() + time::Duration::hours(1))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("a time in range");
    app.post_round(POOL, round_at("r1", &in_an_hour, &["a", "b"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "clock skew of an hour");
}

#[tokio::test]
async fn the_location_of_a_round_percent_encodes_its_id_and_leads_to_it() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    for (id, encoded) in [
        ("cup/final 1-a_b.c~", "cup%2Ffinal%201-a_b.c~"),
        ("..", "%2E%2E"),
        (".", "%2E"),
    ] {
        let response = app.post_round(POOL, round(id, &["a", "b"])).await;
        response.assert_status(StatusCode::ACCEPTED, id);
        let location = response.headers[header::LOCATION]
            .to_str()
            .expect("an ASCII header");
        assert_eq!(location, format!("/v1/pools/main/rounds/{encoded}"));
        let status = app.get(location).await;
        assert_eq!(
            status.assert_status(StatusCode::OK, "follow the location")["id"],
            id
        );
    }
}

#[tokio::test]
async fn posting_the_same_round_again_returns_200_with_its_stored_status() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.queue_round(round_at("r1", "2024-05-01T12:00:00Z", &["a", "b"]))
        .await;
    // The same round written differently: other key order and spacing, `null` for absent.
    let reordered = br#"{ "standings": [{"rank": 1, "player": "a", "team": null},
        {"player": "b", "rank": 2}], "weight": null, "time": "2024-05-01T12:00:00Z", "id": "r1" }"#;
    let response = app
        .send(
            Method::POST,
            ROUNDS,
            Some(WRITE_KEY),
            Payload::Raw(Some("application/json"), reordered.to_vec()),
        )
        .await;
    assert_eq!(
        response.assert_status(StatusCode::OK, "while queued"),
        &json!({"id": "r1", "status": "queued"})
    );
    assert!(!response.headers.contains_key(header::LOCATION));
    assert_queued(&app, 1, "nothing new was queued").await;
    // Nor do what changes no rating: the order of the standings, an explicit weight of 1,
    // and the same instant written in another offset.
    let same = [
        json!({"id": "r1", "time": "2024-05-01T12:00:00Z",
            "standings": [{"player": "b", "rank": 2}, {"player": "a", "rank": 1}]}),
        json!({"id": "r1", "time": "2024-05-01T12:00:00Z", "weight": 1.0,
            "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}),
        json!({"id": "r1", "time": "2024-05-01T14:00:00+02:00",
            "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}),
    ];
    for body in same {
        assert_eq!(
            app.post_round(POOL, body.clone())
                .await
                .assert_status(StatusCode::OK, &body.to_string()),
            &json!({"id": "r1", "status": "queued"})
        );
    }
    assert_queued(&app, 1, "nothing new was queued").await;
    app.apply_queued(POOL).await;
    let response = app
        .post_round(POOL, round_at("r1", "2024-05-01T12:00:00Z", &["a", "b"]))
        .await;
    assert_eq!(
        response.assert_status(StatusCode::OK, "once applied"),
        &json!({"id": "r1", "status": "applied"})
    );
    assert_eq!(app.apply_queued(POOL).await, [], "it is not applied twice");
}

#[tokio::test]
async fn posting_a_round_id_again_with_other_content_returns_409_and_keeps_the_first() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.queue_round(round("r1", &["a", "b"])).await;
    let cases = [
        (round("r1", &["b", "a"]), "other ranks"),
        (round("r1", &["a", "b", "c"]), "another player"),
        (
            round_at("r1", "2024-05-01T12:00:00Z", &["a", "b"]),
            "a time added",
        ),
        (
            json!({"id": "r1", "weight": 2.0,
                "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}),
            "another weight",
        ),
        (
            json!({"id": "r1",
                "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 1}]}),
            "a tie instead",
        ),
    ];
    for (body, case) in cases {
        app.post_round(POOL, body).await.assert_error(
            StatusCode::CONFLICT,
            "round_conflict",
            Some("id"),
            case,
        );
    }
    assert_queued(&app, 1, "nothing new was queued").await;
    app.apply_queued(POOL).await;
    let stored = app.get(&format!("{ROUNDS}/r1")).await;
    let results = &stored.assert_status(StatusCode::OK, "the first round")["results"];
    let players: Vec<_> = results
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["player"].clone())
        .collect();
    assert_eq!(players, [json!("a"), json!("b")], "as first posted");
}

#[tokio::test]
async fn posting_an_invalid_round_returns_422_naming_the_field_and_stores_nothing() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let standing = |player: &str, rank: Value| json!({"player": player, "rank": rank});
    let long_id = "x".repeat(257);
    let long_player = "é".repeat(129);
    let cases = [
        (
            json!({"id": "bad", "standings": [standing("a", json!(1)), standing("a", json!(2))]}),
            "standings[1].player",
            "a duplicate player",
        ),
        (
            json!({"id": "bad", "standings": [standing("a", json!(1))]}),
            "standings",
            "one entrant",
        ),
        (
            json!({"id": "bad", "standings": [
                {"player": "a", "rank": 1, "team": "red"}, {"player": "b", "rank": 1, "team": "red"}]}),
            "standings",
            "one team is one entrant",
        ),
        (
            json!({"id": "bad", "standings": []}),
            "standings",
            "no entrants",
        ),
        (
            json!({"id": "bad", "standings": [standing("a", json!(1)), standing("b", json!(0))]}),
            "standings[1].rank",
            "rank 0",
        ),
        (
            json!({"id": "bad", "standings": [standing("a", json!(1.5)), standing("b", json!(2))]}),
            "standings[0].rank",
            "a fractional rank",
        ),
        (
            json!({"id": "bad", "standings": [standing("a", json!(-1)), standing("b", json!(2))]}),
            "standings[0].rank",
            "a negative rank",
        ),
        (
            json!({"id": "bad", "standings": [{"player": "a"}, standing("b", json!(2))]}),
            "standings[0].rank",
            "a missing rank",
        ),
        (
            json!({"id": "bad", "standings": [
                {"player": "a", "rank": 1, "team": "red"}, {"player": "b", "rank": 2, "team": "red"},
                {"player": "c", "rank": 3}]}),
            "standings[1].rank",
            "team members with different ranks",
        ),
        (
            json!({"id": "bad", "colour": "red", "standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "colour",
            "an unknown field",
        ),
        (
            json!({"id": "bad", "standings": [{"player": "a", "rank": 1, "score": 9}, standing("b", json!(2))]}),
            "standings[0].score",
            "an unknown field in a standing",
        ),
        (
            json!({"standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "id",
            "no id",
        ),
        (
            json!({"id": 7, "standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "id",
            "a numeric id",
        ),
        (
            json!({"id": "", "standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "id",
            "an empty id",
        ),
        (
            json!({"id": "bad\u{0}1", "standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "id",
            "a NUL in the round id",
        ),
        (
            json!({"id": "bad", "standings": [standing("a\u{0}b", json!(1)), standing("b", json!(2))]}),
            "standings[0].player",
            "a NUL in a player id",
        ),
        (
            json!({"id": "bad", "standings": [
                {"player": "a", "rank": 1, "team": "red\u{0}"}, standing("b", json!(2))]}),
            "standings[0].team",
            "a NUL in a team name",
        ),
        (
            json!({"id": long_id, "standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "id",
            "a round id of 257 bytes",
        ),
        (
            json!({"id": "bad", "standings": [standing("a", json!(1)), standing(&long_player, json!(2))]}),
            "standings[1].player",
            "a player id of 258 bytes in 129 characters",
        ),
        (
            json!({"id": "bad", "standings": [standing("", json!(1)), standing("b", json!(2))]}),
            "standings[0].player",
            "an empty player id",
        ),
        (json!({"id": "bad"}), "standings", "no standings"),
        (
            json!({"id": "bad", "standings": {"a": 1}}),
            "standings",
            "standings that are not a list",
        ),
        (
            json!({"id": "bad", "standings": ["a", "b"]}),
            "standings[0]",
            "a standing that is not an object",
        ),
        (
            json!({"id": "bad", "time": "yesterday", "standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "time",
            "a time that is not RFC 3339",
        ),
        (
            json!({"id": "bad", "weight": 0.0, "standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "weight",
            "a zero weight",
        ),
        (
            json!({"id": "bad", "perf_ceiling": "high", "standings": [standing("a", json!(1)), standing("b", json!(2))]}),
            "perf_ceiling",
            "a ceiling that is not a number",
        ),
    ];
    for (body, field, case) in cases {
        let response = app.post_round(POOL, body).await;
        response.assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_round",
            Some(field),
            case,
        );
    }
    app.post_round(POOL, json!(["not", "a", "round"]))
        .await
        .assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_round",
            None,
            "a body that is not an object names no field",
        );
    assert_queued(&app, 0, "no invalid round was stored").await;
    app.get(&format!("{ROUNDS}/bad")).await.assert_error(
        StatusCode::NOT_FOUND,
        "round_not_found",
        None,
        "no invalid round was stored",
    );
    app.post_round(POOL, round(&"x".repeat(256), &["a", "b"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "256 bytes is the longest id");
}

#[tokio::test]
async fn ids_with_control_characters_other_than_nul_are_accepted_and_read_back() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    // Real scoreboards carry tabs and stray control bytes in team names.
    app.play([round("week\t1", &["team\tred", "blue\u{7}", "plain"])])
        .await;
    let status = app.get(&format!("{ROUNDS}/week%091")).await;
    assert_eq!(
        status.assert_status(StatusCode::OK, "the round")["status"],
        "applied"
    );
    let player = app.get("/v1/pools/main/players/team%09red").await;
    assert_eq!(
        player.assert_status(StatusCode::OK, "the player")["player"],
        "team\tred"
    );
}

#[tokio::test]
async fn posting_a_round_to_a_full_queue_returns_503_queue_full_with_retry_after() {
    let app = TestApp::with_settings(settings(&[("MMR__QUEUE__MAX_QUEUED_PER_POOL", "2")])).await;
    app.create_pool(POOL).await;
    app.queue_round(round("r1", &["a", "b"])).await;
    app.queue_round(round("r2", &["a", "b"])).await;
    let response = app.post_round(POOL, round("r3", &["a", "b"])).await;
    response.assert_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "queue_full",
        None,
        "the third round",
    );
    assert_eq!(response.headers[header::RETRY_AFTER], "1");
    assert_queued(&app, 2, "the refused round was not stored").await;
    app.get(&format!("{ROUNDS}/r3")).await.assert_error(
        StatusCode::NOT_FOUND,
        "round_not_found",
        None,
        "the refused round was not stored",
    );
    app.post_round(POOL, round("r1", &["a", "b"]))
        .await
        .assert_status(
            StatusCode::OK,
            "a re-post of a stored round is not a new one",
        );
    app.apply_queued(POOL).await;
    app.post_round(POOL, round("r3", &["a", "b"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "once the queue has drained");
}

#[tokio::test]
async fn posting_a_round_larger_than_the_body_limit_returns_413_and_stores_nothing() {
    let mut settings = settings(&[]);
    settings.server.body_limit_bytes = 1024;
    let app = TestApp::with_settings(settings).await;
    app.create_pool(POOL).await;
    let players: Vec<String> = (0..100).map(|i| format!("player-{i}")).collect();
    let players: Vec<&str> = players.iter().map(String::as_str).collect();
    let body = round("big", &players).to_string();
    assert!(body.len() > 1024);
    for with_length in [true, false] {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(ROUNDS)
            .header(header::AUTHORIZATION, format!("Bearer {WRITE_KEY}"))
            .header(header::CONTENT_TYPE, "application/json");
        if with_length {
            request = request.header(header::CONTENT_LENGTH, body.len());
        }
        let request = request
            .body(Body::from(body.clone()))
            .expect("a valid request");
        app.send_request(request).await.assert_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            None,
            if with_length {
                "with Content-Length"
            } else {
                "without Content-Length"
            },
        );
    }
    assert_queued(&app, 0, "nothing was stored").await;
    app.post_round(POOL, round("small", &["a", "b"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "a body under the limit");
}

#[tokio::test]
async fn posting_a_round_without_a_write_key_is_refused_with_401_or_403() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    for (key, case) in UNKNOWN_KEYS {
        app.post(ROUNDS, key, round("r1", &["a", "b"]))
            .await
            .assert_error(StatusCode::UNAUTHORIZED, "unauthenticated", None, case);
    }
    app.post(ROUNDS, Some(READ_KEY), round("r1", &["a", "b"]))
        .await
        .assert_error(StatusCode::FORBIDDEN, "forbidden", None, "a read key");
    assert_queued(&app, 0, "nothing was stored").await;
    app.post(ROUNDS, Some(ADMIN_KEY), round("r1", &["a", "b"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "an admin key may write too");
}

#[tokio::test]
async fn posting_a_round_that_is_not_json_returns_415_or_400_and_stores_nothing() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let valid = round("r1", &["a", "b"]);
    app.assert_refuses_bodies_that_are_not_json(&Method::POST, ROUNDS, Some(WRITE_KEY), &valid)
        .await;
    assert_queued(&app, 0, "nothing was stored").await;
}

#[tokio::test]
async fn posting_a_round_to_an_unknown_pool_returns_404_pool_not_found() {
    let app = TestApp::new().await;
    app.post_round("nowhere", round("r1", &["a", "b"]))
        .await
        .assert_error(
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
            "unknown pool",
        );
}

#[tokio::test]
async fn a_round_reads_as_queued_then_as_applied_with_every_entrants_results() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.queue_round(round("r1", &["a", "b", "c"])).await;
    let queued = app.get(&format!("{ROUNDS}/r1")).await;
    assert_eq!(
        queued.assert_status(StatusCode::OK, "queued"),
        &json!({"id": "r1", "kind": "round", "status": "queued"}),
        "no results and no error yet"
    );
    assert_eq!(
        app.apply_queued(POOL).await,
        [Settled::Applied("r1".into())]
    );
    let applied = app.get(&format!("{ROUNDS}/r1")).await;
    let body = applied.assert_status(StatusCode::OK, "applied");
    assert_eq!(body["status"], "applied");
    assert!(body.get("error").is_none());
    let results = body["results"].as_array().expect("results once applied");
    assert_eq!(results.len(), 3, "every entrant");
    for (result, (player, rank)) in results.iter().zip([("a", 1), ("b", 2), ("c", 3)]) {
        assert_eq!(
            (&result["player"], &result["rank"]),
            (&json!(player), &json!(rank))
        );
        let mut keys: Vec<_> = result
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "conservative_after",
                "conservative_before",
                "delta",
                "display_rating_after",
                "display_rating_before",
                "expected_rank",
                "league_after",
                "league_before",
                "mu_after",
                "mu_before",
                "performance",
                "player",
                "rank",
                "sigma_after",
                "sigma_before"
            ],
            "{player}"
        );
        assert_eq!(
            num(&result["mu_before"]),
            1500.0,
            "newcomers start at mu_init"
        );
        assert_eq!(num(&result["sigma_before"]), 350.0);
        assert!(
            num(&result["sigma_after"]) < 350.0,
            "{player} is better known"
        );
        assert_eq!(
            num(&result["delta"]),
            num(&result["mu_after"]) - num(&result["mu_before"])
        );
        let player = app.get(&format!("/v1/pools/main/players/{player}")).await;
        assert_eq!(
            player.assert_status(StatusCode::OK, "the player")["mu"],
            result["mu_after"],
            "reads see the applied round"
        );
    }
    assert!(num(&results[0]["delta"]) > 0.0 && num(&results[2]["delta"]) < 0.0);
    assert!(num(&results[0]["performance"]) > num(&results[2]["performance"]));
}

#[tokio::test]
async fn rounds_are_applied_in_the_order_they_were_accepted() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    for id in ["r3", "r1", "r2"] {
        app.queue_round(round(id, &["a", "b"])).await;
    }
    assert_eq!(
        app.apply_queued(POOL).await,
        ["r3", "r1", "r2"].map(|id| Settled::Applied(id.into()))
    );
    let info = app.pool_info(POOL).await;
    assert_eq!(
        (&info["rounds_applied"], &info["rounds_queued"]),
        (&json!(3), &json!(0))
    );
    let next = app.post_round(POOL, round("r4", &["a", "b"])).await;
    assert_eq!(
        next.assert_status(StatusCode::ACCEPTED, "after the queue drained")["position"],
        1
    );
}

/// Posts `round`, or stores a body the worker cannot read under `id` when there is none.
async fn queue_or_store(app: &TestApp, id: &str, round: Option<&Value>) {
    match round {
        Some(round) => app.queue_round(round.clone()).await,
        // The API never stores such a body; a round stored by an older version might.
        None => {
            app.state
                .storage
                .enqueue_round(POOL, id, "{}", 10)
                .await
                .expect("enqueue directly");
        }
    }
}

#[tokio::test]
async fn rounds_waiting_together_settle_in_one_step_exactly_as_one_by_one() {
    let players = ["a", "b", "c", "d", "e"];
    // Overlapping entrants, so each round's priors come from the rounds before it in the
    // batch; the broken round in the middle must leave every belief as it was.
    let rounds: Vec<(String, Option<Value>)> = (0..6)
        .map(|i| {
            let id = format!("r{i}");
            let round = (i != 3).then(|| {
                let mut order = players;
                order.rotate_left(i % players.len());
                round_at(&id, &format!("2026-01-0{}T00:00:00Z", i + 1), &order[..4])
            });
            (id, round)
        })
        .collect();
    let one_by_one = TestApp::new().await;
    one_by_one.create_pool(POOL).await;
    for (id, round) in &rounds {
        queue_or_store(&one_by_one, id, round.as_ref()).await;
        assert_eq!(one_by_one.apply_queued(POOL).await.len(), 1);
    }
    let together = TestApp::new().await;
    together.create_pool(POOL).await;
    for (id, round) in &rounds {
        queue_or_store(&together, id, round.as_ref()).await;
    }
    let pool = together.state.pools.get(POOL).expect("the pool is loaded");
    let step = worker::process_next(together.state.storage.as_ref(), &pool)
        .await
        .expect("a worker step");
    let expected = rounds
        .iter()
        .map(|(id, round)| match round {
            Some(_) => Settled::Applied(id.clone()),
            None => Settled::Failed(id.clone()),
        })
        .collect();
    assert_eq!(
        step,
        Processed::Settled(expected),
        "one step settles the queue in order"
    );

    for (id, _) in &rounds {
        let path = format!("{ROUNDS}/{id}");
        assert_eq!(
            together.get(&path).await.body,
            one_by_one.get(&path).await.body,
            "round {id}"
        );
    }
    for player in players {
        let path = format!("/v1/pools/{POOL}/players/{player}");
        let (alone, batched) = (one_by_one.get(&path).await, together.get(&path).await);
        assert_eq!(batched.status, StatusCode::OK);
        assert_eq!(batched.body, alone.body, "{player}: bit for bit");
    }
    assert_eq!(
        together.pool_info(POOL).await,
        one_by_one.pool_info(POOL).await
    );
}

#[tokio::test]
async fn a_round_the_worker_cannot_rate_reads_as_failed_with_its_error() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    // The API never stores such a body; a round stored by an older version might be one.
    app.state
        .storage
        .enqueue_round(POOL, "broken", "{\"id\": \"broken\"}", 10)
        .await
        .expect("enqueue directly");
    assert_eq!(
        app.apply_queued(POOL).await,
        [Settled::Failed("broken".into())]
    );
    let response = app.get(&format!("{ROUNDS}/broken")).await;
    let body = response.assert_status(StatusCode::OK, "failed");
    assert_eq!(body["status"], "failed");
    assert!(
        body["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{body}"
    );
    assert!(body.get("results").is_none());
    assert_eq!(app.pool_info(POOL).await["rounds_failed"], 1);
}

#[tokio::test]
async fn getting_an_unknown_round_returns_404() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let cases = [
        (
            format!("{ROUNDS}/nothing"),
            "round_not_found",
            "an unknown round",
        ),
        (
            "/v1/pools/nowhere/rounds/r1".to_owned(),
            "pool_not_found",
            "an unknown pool",
        ),
    ];
    for (uri, code, case) in cases {
        app.get(&uri)
            .await
            .assert_error(StatusCode::NOT_FOUND, code, None, case);
    }
}

backend_tests!(
    a_rounds_results_come_in_pages_that_a_cursor_walks_once_each,
    a_large_rounds_pages_follow_the_corrections_made_after_its_order_was_built,
);

/// Round `id` of `n` entrants `p0001`… tied three by three, the higher ids first in each tie.
fn tied_round(id: &str, n: usize) -> Value {
    let standings: Vec<Value> = (0..n)
        .map(|i| json!({"player": format!("p{:04}", n - i), "rank": i / 3 + 1}))
        .collect();
    json!({"id": id, "standings": standings})
}

/// Every result of round `id`, read page by page `limit` at a time, each page checked.
async fn walk(app: &TestApp, id: &str, limit: usize) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut uri = format!("{ROUNDS}/{id}?limit={limit}");
    loop {
        let page = app.get(&uri).await;
        let page = page.assert_status(StatusCode::OK, &uri);
        let results = page["results"].as_array().expect("results");
        assert!(results.len() <= limit, "{uri}");
        seen.extend(results.iter().cloned());
        match page["next_cursor"].as_str() {
            Some(cursor) => uri = format!("{ROUNDS}/{id}?limit={limit}&cursor={cursor}"),
            None => {
                assert!(page["next_cursor"].is_null(), "the last page says so");
                return seen;
            }
        }
    }
}

/// Each result's rank and player, and its rating after the round.
fn ranked(results: &[Value]) -> Vec<(u64, String, f64)> {
    results
        .iter()
        .map(|r| {
            let player = r["player"].as_str().expect("a player").to_owned();
            (
                r["rank"].as_u64().expect("a rank"),
                player,
                num(&r["mu_after"]),
            )
        })
        .collect()
}

/// Round `id`'s results as the database sorts them, every one in one read.
async fn sorted_by_the_database(app: &TestApp, id: &str) -> Vec<(u64, String, f64)> {
    let all = mmr_service::storage::ResultsPage::first(u32::MAX);
    let record = app.state.storage.round(POOL, id, &all).await;
    let results = record
        .expect("read")
        .expect("stored")
        .results
        .expect("results");
    results
        .into_iter()
        .map(|r| (r.rank, r.player, r.change.after.mu))
        .collect()
}

/// A round the database sorts for each page (1,500 entrants) and one whose order is sorted
/// once (2,345): both walk every entrant once, best rank first, then by player.
async fn a_rounds_results_come_in_pages_that_a_cursor_walks_once_each(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([tied_round("sorted", 1_500), tied_round("big", 2_345)])
        .await;
    for (id, n) in [("sorted", 1_500), ("big", 2_345)] {
        let first = app.get(&format!("{ROUNDS}/{id}")).await;
        let first = first.assert_status(StatusCode::OK, "first page");
        assert_eq!(first["results"].as_array().expect("results").len(), 1_000);
        let seen = ranked(&walk(&app, id, 700).await);
        assert_eq!(seen.len(), n, "{id}");
        assert_eq!(seen, sorted_by_the_database(&app, id).await, "{id}");
        let mut order: Vec<(u64, String)> = seen.into_iter().map(|(r, p, _)| (r, p)).collect();
        assert!(order.is_sorted(), "{id}: best rank first, then by player");
        order.dedup();
        assert_eq!(order.len(), n, "{id}: every entrant once");
    }

    let small = round("small", &["a", "b"]);
    app.play([small]).await;
    let whole = app.get(&format!("{ROUNDS}/small")).await;
    let whole = whole.assert_status(StatusCode::OK, "a round in one page");
    assert_eq!(whole["results"].as_array().expect("results").len(), 2);
    assert!(whole["next_cursor"].is_null());

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("cursor=!!", "cursor"),
        ("cursor=bTAwMDAwMDAwMDAwMDAwMDFh", "cursor"),
    ] {
        app.get(&format!("{ROUNDS}/big?{query}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_query", Some(field), query);
    }
}

/// A large round's order is built by its first read; a disqualification and a rename in it
/// then change its pages as the database's own sort changes.
async fn a_large_rounds_pages_follow_the_corrections_made_after_its_order_was_built(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([tied_round("big", 2_345)]).await;
    let before = ranked(&walk(&app, "big", 1_000).await);
    assert_eq!(before, sorted_by_the_database(&app, "big").await);
    for body in [
        json!({"id": "dq", "action": "disqualify", "round": "big", "player": "p2344"}),
        json!({"id": "handle", "action": "rename", "player": "p0005", "to": "a-first"}),
    ] {
        app.post("/v1/pools/main/corrections", Some(ADMIN_KEY), body.clone())
            .await
            .assert_status(StatusCode::ACCEPTED, &body.to_string());
    }
    app.apply_queued(POOL).await;
    let after = ranked(&walk(&app, "big", 1_000).await);
    assert_eq!(after, sorted_by_the_database(&app, "big").await);
    assert_eq!(after.len(), 2_344, "one disqualified");
    let tie = |seen: &[(u64, String, f64)]| -> Vec<String> {
        let rank = seen.iter().find(|(_, p, _)| p == "p0004").expect("p0004").0;
        seen.iter()
            .filter(|(r, _, _)| *r == rank)
            .map(|(_, p, _)| p.clone())
            .collect()
    };
    assert_eq!(tie(&before), ["p0003", "p0004", "p0005"]);
    assert_eq!(
        tie(&after),
        ["a-first", "p0003", "p0004"],
        "renamed, sorted anew"
    );
    assert_ne!(before[..10], after[..10], "rated again without p2344");
}
