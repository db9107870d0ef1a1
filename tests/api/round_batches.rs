//! `POST /v1/pools/{pool}/round-batches`: many rounds in one transaction, all or none.

use axum::http::{header, StatusCode};
use serde_json::{json, Value};

use crate::support::{round, settings, TestApp, POOL, WRITE_KEY};

backend_tests!(
    a_batch_is_rated_as_its_rounds_posted_one_by_one,
    a_batch_posted_again_changes_nothing_and_a_longer_one_queues_only_its_new_rounds,
    a_batch_with_one_bad_round_stores_none_of_them,
);

const BATCHES: &str = "/v1/pools/main/round-batches";

/// Rounds with ties, teams and a player who comes back.
fn rounds() -> Vec<Value> {
    let mut tied = round("r2", &["c", "a", "d", "b"]);
    tied["standings"][1]["rank"] = json!(1);
    let mut teams = round("r3", &["a", "b", "c", "d"]);
    for (i, team) in ["x", "x", "y", "y"].iter().enumerate() {
        teams["standings"][i]["team"] = json!(team);
        teams["standings"][i]["rank"] = json!(1 + i / 2);
    }
    vec![
        round("r1", &["a", "b", "c"]),
        tied,
        teams,
        round("r4", &["e", "a"]),
        round("r5", &["b", "e", "d"]),
    ]
}

async fn post_batch(app: &TestApp, rounds: &[Value]) -> crate::support::TestResponse {
    app.post(BATCHES, Some(WRITE_KEY), json!({ "rounds": rounds }))
        .await
}

/// The ids in a batch answer with their statuses and positions.
fn statuses(body: &Value) -> Vec<(String, String, Option<u64>)> {
    body["rounds"]
        .as_array()
        .expect("rounds")
        .iter()
        .map(|r| {
            (
                r["id"].as_str().expect("id").to_owned(),
                r["status"].as_str().expect("status").to_owned(),
                r["position"].as_u64(),
            )
        })
        .collect()
}

async fn a_batch_is_rated_as_its_rounds_posted_one_by_one(app: TestApp) {
    app.create_pool(POOL).await;
    app.create_pool("one").await;
    let rounds = rounds();
    let response = post_batch(&app, &rounds).await;
    let body = response.assert_status(StatusCode::ACCEPTED, "the batch");
    let queued: Vec<_> = (1..=5)
        .map(|i| (format!("r{i}"), "queued".to_owned(), Some(i)))
        .collect();
    assert_eq!(statuses(body), queued);
    assert!(response.headers.get(header::LOCATION).is_none());
    for round in &rounds {
        app.post_round("one", round.clone())
            .await
            .assert_status(StatusCode::ACCEPTED, "one by one");
    }
    app.apply_queued(POOL).await;
    app.apply_queued("one").await;
    for i in 1..=5 {
        let batched = app.get(&format!("/v1/pools/main/rounds/r{i}")).await;
        let single = app.get(&format!("/v1/pools/one/rounds/r{i}")).await;
        let batched = batched.assert_status(StatusCode::OK, "batched");
        assert_eq!(batched["status"], "applied");
        assert_eq!(
            batched,
            single.assert_status(StatusCode::OK, "single"),
            "r{i}"
        );
    }
    let board = |pool: &str| format!("/v1/pools/{pool}/leaderboard");
    assert_eq!(
        app.get(&board(POOL)).await.body,
        app.get(&board("one")).await.body
    );
}

async fn a_batch_posted_again_changes_nothing_and_a_longer_one_queues_only_its_new_rounds(
    app: TestApp,
) {
    app.create_pool(POOL).await;
    let rounds = rounds();
    post_batch(&app, &rounds[..2])
        .await
        .assert_status(StatusCode::ACCEPTED, "first");
    let again = post_batch(&app, &rounds[..2]).await;
    assert_eq!(
        statuses(again.assert_status(StatusCode::OK, "again")),
        [
            ("r1".to_owned(), "queued".to_owned(), None),
            ("r2".to_owned(), "queued".to_owned(), None)
        ]
    );
    app.apply_queued(POOL).await;
    let longer = post_batch(&app, &rounds[..3]).await;
    assert_eq!(
        statuses(longer.assert_status(StatusCode::ACCEPTED, "longer")),
        [
            ("r1".to_owned(), "applied".to_owned(), None),
            ("r2".to_owned(), "applied".to_owned(), None),
            ("r3".to_owned(), "queued".to_owned(), Some(1))
        ]
    );
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 1);
}

async fn a_batch_with_one_bad_round_stores_none_of_them(app: TestApp) {
    app.create_pool(POOL).await;
    app.queue_round(round("r1", &["a", "b"])).await;
    let good = |id: &str| round(id, &["c", "d"]);
    let mut zero = good("bad");
    zero["standings"][1]["rank"] = json!(0);
    let mut changed = round("r1", &["b", "a"]);
    changed["weight"] = json!(2.0);
    let refused: [(Value, StatusCode, &str, Option<&str>); 9] = [
        (
            json!({"rounds": [good("n1"), zero, good("n2")]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_round",
            Some("rounds[1].standings[1].rank"),
        ),
        (
            json!({"rounds": [good("n1"), {"standings": []}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_round",
            Some("rounds[1].id"),
        ),
        (
            json!({"rounds": [good("n1"), good("n1")]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_round",
            Some("rounds[1].id"),
        ),
        (
            json!({"rounds": [good("n1"), changed]}),
            StatusCode::CONFLICT,
            "round_conflict",
            Some("rounds[1].id"),
        ),
        (
            json!({"rounds": []}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            Some("rounds"),
        ),
        (
            json!({"rounds": (0..1001).map(|i| good(&format!("n{i}"))).collect::<Vec<_>>()}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            Some("rounds"),
        ),
        (
            json!({"rounds": [good("n1")], "force": true}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            Some("force"),
        ),
        (
            json!({}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            Some("rounds"),
        ),
        (
            json!([good("n1")]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            None,
        ),
    ];
    for (body, status, code, field) in refused {
        let context = format!("{body:.200}");
        app.post(BATCHES, Some(WRITE_KEY), body)
            .await
            .assert_error(status, code, field, &context);
    }
    let info = app.pool_info(POOL).await;
    assert_eq!(info["rounds_queued"], 1, "only r1 waits");
    app.get("/v1/pools/main/rounds/n1").await.assert_error(
        StatusCode::NOT_FOUND,
        "round_not_found",
        None,
        "n1 was in every refused batch",
    );
}

#[tokio::test]
async fn a_batch_that_does_not_fit_in_the_queue_stores_nothing() {
    let app = TestApp::with_settings(settings(&[("MMR__QUEUE__MAX_QUEUED_PER_POOL", "3")])).await;
    app.create_pool(POOL).await;
    app.queue_round(round("r1", &["a", "b"])).await;
    let batch = [
        round("r2", &["a", "b"]),
        round("r3", &["a", "b"]),
        round("r4", &["a", "b"]),
    ];
    let response = post_batch(&app, &batch).await;
    response.assert_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "queue_full",
        None,
        "three more do not fit beside one",
    );
    assert_eq!(response.headers[header::RETRY_AFTER], "1");
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 1);
    let fits = post_batch(&app, &batch[..2]).await;
    assert_eq!(
        statuses(fits.assert_status(StatusCode::ACCEPTED, "two fit")),
        [
            ("r2".to_owned(), "queued".to_owned(), Some(2)),
            ("r3".to_owned(), "queued".to_owned(), Some(3))
        ]
    );
    let more: Vec<Value> = ["r1", "r2", "r3", "r5", "r6", "r7", "r8"]
        .iter()
        .map(|id| round(id, &["a", "b"]))
        .collect();
    post_batch(&app, &more).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
        Some("rounds"),
        "four new rounds never fit a queue of three: waiting would not help",
    );
    post_batch(&app, &more[..3])
        .await
        .assert_status(StatusCode::OK, "known rounds need no room");
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 3);
}
