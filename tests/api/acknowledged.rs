//! An acknowledged round is one its pool can rate. A round is checked against the pool's
//! system, and queued only if the pool still has that system and no correction was queued
//! since, under the pool's lock; a round posted behind a queued correction that sets new
//! parameters is checked against those too, since they rate it. Before, a round checked against
//! the system memory had was queued whatever had changed since: racing a POST against a PUT
//! that switched TrueSkill to Glicko-2 gave 202 and then `failed` in 113 of 200 tries.

use axum::http::StatusCode;
use serde_json::{json, Value};

use mmr_service::engine::{Glicko2Params, SystemParams};
use mmr_service::worker::Settled;

use crate::storage_ext::tester;
use crate::support::{round, TestApp, ADMIN_KEY, POOL};

backend_tests!(
    a_round_checked_against_a_system_changed_since_is_checked_again_before_it_is_queued,
    a_round_posted_behind_a_queued_change_of_system_is_checked_against_it_too,
    rounds_racing_a_change_of_system_are_acknowledged_only_if_they_can_be_rated,
);

/// A round only TrueSkill (of these systems) rates: `b` played half of it.
fn partial(id: &str) -> Value {
    json!({"id": id, "standings": [
        {"player": "a", "rank": 1},
        {"player": "b", "rank": 2, "partial_play": 0.5},
    ]})
}

async fn a_round_checked_against_a_system_changed_since_is_checked_again_before_it_is_queued(
    app: TestApp,
) {
    app.put_pool(POOL, json!({"system": "trueskill"}))
        .await
        .assert_status(StatusCode::CREATED, "a TrueSkill pool");
    // Another process switches the pool to Glicko-2; memory here has not heard of it yet.
    app.state
        .storage
        .put_pool(
            POOL,
            &SystemParams::Glicko2(Glicko2Params::default()),
            &tester(),
        )
        .await
        .expect("switched in the database");
    app.post_round(POOL, partial("half")).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("standings[1].partial_play"),
        "Glicko-2 takes no partial play",
    );
    let queued = app.post_round(POOL, round("whole", &["a", "b"])).await;
    queued.assert_status(StatusCode::ACCEPTED, "a round Glicko-2 rates");
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 1);
}

async fn a_round_posted_behind_a_queued_change_of_system_is_checked_against_it_too(app: TestApp) {
    app.put_pool(POOL, json!({"system": "trueskill"}))
        .await
        .assert_status(StatusCode::CREATED, "a TrueSkill pool");
    app.play([round("r1", &["a", "b"])]).await;
    let correction =
        json!({"id": "to-glicko", "action": "params", "params": {"system": "glicko2"}});
    app.post(
        &format!("/v1/pools/{POOL}/corrections"),
        Some(ADMIN_KEY),
        correction,
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "a change of system, queued");
    app.post_round(POOL, partial("half")).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("standings[1].partial_play"),
        "rated by Glicko-2 once the correction is applied",
    );
    app.post_round(POOL, round("r2", &["b", "a"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "a round both systems rate");
    let batch = json!({"rounds": [round("r3", &["a", "b"]), partial("r4")]});
    app.post(
        &format!("/v1/pools/{POOL}/round-batches"),
        Some(ADMIN_KEY),
        batch,
    )
    .await
    .assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("rounds[1].standings[1].partial_play"),
        "a batch is checked alike",
    );
    let settled = app.apply_queued(POOL).await;
    assert!(
        settled.iter().all(|s| matches!(s, Settled::Applied(_))),
        "{settled:?}"
    );
    assert_eq!(app.pool_info(POOL).await["rounds_failed"], 0);
}

async fn rounds_racing_a_change_of_system_are_acknowledged_only_if_they_can_be_rated(app: TestApp) {
    const TRIES: usize = 40;
    let mut accepted = 0;
    for i in 0..TRIES {
        let pool = format!("race{i}");
        app.put_pool(&pool, json!({"system": "trueskill"}))
            .await
            .assert_status(StatusCode::CREATED, "a TrueSkill pool");
        let (posted, switched) = tokio::join!(
            app.post_round(&pool, partial("half")),
            app.put_pool(&pool, json!({"system": "glicko2"})),
        );
        match posted.status {
            StatusCode::ACCEPTED => accepted += 1,
            StatusCode::UNPROCESSABLE_ENTITY => {}
            other => panic!("try {i}: {other}: {:#}", posted.body),
        }
        assert!(
            matches!(switched.status, StatusCode::OK | StatusCode::CONFLICT),
            "try {i}: {:#}",
            switched.body
        );
        let settled = app.apply_queued(&pool).await;
        assert!(
            settled.iter().all(|s| matches!(s, Settled::Applied(_))),
            "try {i}: an acknowledged round failed: {settled:?}"
        );
    }
    println!("{accepted} of {TRIES} racing rounds acknowledged, every one applied");
}
