//! `?wait=applied` on the routes that post rounds and season starts, with the pool's worker
//! running: the answer comes once they are applied or failed, or as a 202 when the wait's time
//! is up; and a round whose id holds `/` (a void's correction) is read at the path a user
//! writes.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{round, Payload, TestApp, ADMIN_KEY, POOL, WRITE_KEY};

backend_tests!(
    a_post_that_waits_answers_once_its_rounds_are_applied_or_failed,
    a_void_is_read_at_the_path_its_id_writes,
);

async fn post(app: &TestApp, uri: &str, key: &str, body: Value) -> (StatusCode, Value) {
    let response = app.post(uri, Some(key), body).await;
    (response.status, response.body)
}

async fn a_post_that_waits_answers_once_its_rounds_are_applied_or_failed(app: TestApp) {
    app.create_pool(POOL).await;
    let pool = app.state.pools.get(POOL).expect("the pool");

    // No worker yet: the wait's time runs out and the answer is the 202 of a queued round.
    let (status, body) = post(
        &app,
        "/v1/pools/main/rounds?wait=applied&timeout=0.2",
        WRITE_KEY,
        round("r1", &["a", "b"]),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::ACCEPTED,
            json!({"id": "r1", "status": "queued", "position": 1})
        )
    );

    app.state.start_worker(pool.clone());
    let (status, body) = post(
        &app,
        "/v1/pools/main/rounds?wait=applied",
        WRITE_KEY,
        round("r2", &["b", "a"]),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"id": "r2", "status": "applied"}))
    );
    let player = app.get("/v1/pools/main/players/a").await.body;
    assert_eq!(player["rounds"], 2, "the read right after sees the round");

    // A batch waits for every round.
    let (status, body) = post(
        &app,
        "/v1/pools/main/round-batches?wait=applied&timeout=5",
        WRITE_KEY,
        json!({"rounds": [round("r3", &["c", "d"]), round("r4", &["a", "c"])]}),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"rounds": [{"id": "r3", "status": "applied"}, {"id": "r4", "status": "applied"}]})
        )
    );

    // A round posted again answers its status as it is, and a void waits for its recompute.
    let (status, body) = post(
        &app,
        "/v1/pools/main/rounds?wait=applied",
        WRITE_KEY,
        round("r2", &["b", "a"]),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"id": "r2", "status": "applied"}))
    );
    let voided = app
        .send(
            Method::DELETE,
            "/v1/pools/main/rounds/r2?wait=applied",
            Some(ADMIN_KEY),
            Payload::Empty,
        )
        .await;
    assert_eq!(
        (voided.status, voided.body),
        (
            StatusCode::OK,
            json!({"id": "void/r2", "status": "applied"})
        )
    );
    let player = app.get("/v1/pools/main/players/a").await.body;
    assert_eq!(player["rounds"], 2, "r2 no longer counts: r1 and r4");

    // A season start waits as a round does.
    let (status, body) = post(
        &app,
        "/v1/pools/main/seasons?wait=applied",
        ADMIN_KEY,
        json!({"id": "s2", "mu_reset": 0.2, "sigma_reset": 0.5}),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"number": 2, "id": "s2", "status": "applied", "mu_reset": 0.2, "sigma_reset": 0.5})
        )
    );
    let seasons = app.get("/v1/pools/main/seasons").await.body;
    assert_eq!(
        seasons["current"], 2,
        "the read right after sees the new season"
    );

    for (query, field) in [
        ("wait=queued", "wait"),
        ("wait=applied&timeout=-1", "timeout"),
        ("wait=applied&timeout=soon", "timeout"),
        ("timeout=3", "timeout"),
    ] {
        app.post(
            &format!("/v1/pools/main/rounds?{query}"),
            Some(WRITE_KEY),
            round("never", &["a", "b"]),
        )
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_query", Some(field), query);
    }
    let rounds = app.get("/v1/pools/main/rounds/never").await;
    assert_eq!(rounds.status, StatusCode::NOT_FOUND, "nothing was stored");
    app.state.stop_workers().await;
    tokio::time::sleep(Duration::from_millis(10)).await;
}

async fn a_void_is_read_at_the_path_its_id_writes(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([round("cup-7", &["a", "b"]), round("cup/8", &["b", "a"])])
        .await;
    let voided = app
        .send(
            Method::DELETE,
            "/v1/pools/main/rounds/cup-7",
            Some(ADMIN_KEY),
            Payload::Empty,
        )
        .await;
    assert_eq!(voided.body["id"], "void/cup-7");
    for path in ["void/cup-7", "void%2Fcup-7"] {
        let read = app.get(&format!("/v1/pools/main/rounds/{path}")).await;
        let read = read.assert_status(StatusCode::OK, path);
        assert_eq!(
            (
                read["id"].as_str(),
                read["kind"].as_str(),
                read["status"].as_str()
            ),
            (Some("void/cup-7"), Some("correction"), Some("queued")),
            "{path}"
        );
    }
    // A round whose own id holds `/` is read and voided at its path too.
    let read = app.get("/v1/pools/main/rounds/cup/8").await;
    assert_eq!(
        read.assert_status(StatusCode::OK, "cup/8")["status"],
        "applied"
    );
    let voided = app
        .send(
            Method::DELETE,
            "/v1/pools/main/rounds/cup/8",
            Some(ADMIN_KEY),
            Payload::Empty,
        )
        .await;
    assert_eq!(
        voided.assert_status(StatusCode::ACCEPTED, "void cup/8")["id"],
        "void/cup/8"
    );
    app.apply_queued(POOL).await;
    let read = app.get("/v1/pools/main/rounds/void/cup/8").await;
    assert_eq!(
        read.assert_status(StatusCode::OK, "void/cup/8")["status"],
        "applied"
    );
    assert_eq!(
        app.get("/v1/pools/main/rounds/cup/8").await.body["status"],
        "voided"
    );
    app.get("/v1/pools/main/rounds/cup/9").await.assert_error(
        StatusCode::NOT_FOUND,
        "round_not_found",
        None,
        "no such round",
    );
}
