//! `DELETE /v1/pools/{pool}?confirm={pool}` on both backends: admin only, the name repeated,
//! refused while the pool is rated again for a correction; every row of the pool goes in one
//! transaction and memory forgets it (its past boards too), so a pool created later under the
//! name starts empty. Other replicas dropping it: `tests/e2e/replicas.rs`.

use axum::http::{Method, StatusCode};
use serde_json::json;
use sqlx::{Connection, PgConnection, SqliteConnection};

use crate::support::{round, Payload, TestApp, ADMIN_KEY, POOL, READ_KEY, UNKNOWN_KEYS, WRITE_KEY};

backend_tests!(
    a_deleted_pool_leaves_no_row_and_a_new_one_of_its_name_starts_empty,
    a_deletion_must_repeat_the_name_and_be_an_admin_s,
    a_pool_rated_again_for_a_correction_is_not_deleted_until_that_ends,
);

async fn delete(app: &TestApp, uri: &str, key: Option<&str>) -> crate::support::TestResponse {
    app.send(Method::DELETE, uri, key, Payload::Empty).await
}

/// Rows of pool `pool` in each table that holds a pool's data.
async fn rows_of(app: &TestApp, pool: &str) -> Vec<(String, i64)> {
    let url = app.state.settings.database.url.clone();
    let mut counts = Vec::new();
    for (table, column) in [
        ("pools", "name"),
        ("rounds", "pool"),
        ("players", "pool"),
        ("history", "pool"),
    ] {
        let query = format!("SELECT COUNT(*) FROM {table} WHERE {column} = $1");
        let count: i64 = if url.starts_with("sqlite") {
            let mut db = SqliteConnection::connect(&url).await.expect("the database");
            sqlx::query_scalar(&query)
                .bind(pool)
                .fetch_one(&mut db)
                .await
        } else {
            let mut db = PgConnection::connect(&url).await.expect("the database");
            sqlx::query_scalar(&query)
                .bind(pool)
                .fetch_one(&mut db)
                .await
        }
        .expect("a count");
        counts.push((table.to_owned(), count));
    }
    counts
}

async fn a_deleted_pool_leaves_no_row_and_a_new_one_of_its_name_starts_empty(app: TestApp) {
    app.create_pool(POOL).await;
    app.create_pool("kept").await;
    app.play([round("r1", &["a", "b", "c"]), round("r2", &["b", "a"])])
        .await;
    app.post_round("kept", round("k1", &["x", "y"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "another pool's round");
    app.apply_queued("kept").await;
    // A round still queued, and a past board built and kept.
    app.queue_round(round("r3", &["c", "a"])).await;
    app.get("/v1/pools/main/leaderboard?as_of=r1&established=false")
        .await
        .assert_status(StatusCode::OK, "a past board");

    let deleted = delete(&app, "/v1/pools/main?confirm=main", Some(ADMIN_KEY)).await;
    let body = deleted.assert_status(StatusCode::OK, "deleted");
    assert_eq!(body["outcome"], "deleted");
    for (table, count) in rows_of(&app, POOL).await {
        assert_eq!(count, 0, "{table} keeps rows of the deleted pool");
    }
    assert!(
        rows_of(&app, "kept")
            .await
            .iter()
            .all(|(_, count)| *count > 0),
        "another pool keeps its rows"
    );
    for uri in [
        "/v1/pools/main",
        "/v1/pools/main/players/a",
        "/v1/pools/main/rounds/r1",
        "/v1/pools/main/leaderboard",
    ] {
        app.get(uri)
            .await
            .assert_error(StatusCode::NOT_FOUND, "pool_not_found", None, uri);
    }
    let listed = app.get("/v1/pools").await;
    let names: Vec<&str> = listed.body["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["kept"]);
    assert!(app.state.pools.get(POOL).is_none(), "memory forgot it");
    delete(&app, "/v1/pools/main?confirm=main", Some(ADMIN_KEY))
        .await
        .assert_error(StatusCode::NOT_FOUND, "pool_not_found", None, "twice");

    // The name again: nothing of the old pool shows, its past boards included.
    app.create_pool(POOL).await;
    app.play([round("r1", &["z", "y"])]).await;
    let info = app.pool_info(POOL).await;
    assert_eq!(
        (info["players"].clone(), info["rounds_applied"].clone()),
        (json!(2), json!(1))
    );
    let past = app
        .get("/v1/pools/main/leaderboard?as_of=r1&established=false")
        .await;
    let players: Vec<&str> = past.body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["player"].as_str())
        .collect();
    assert_eq!(players.len(), 2, "the new pool's board: {players:?}");
    assert!(
        players.contains(&"z") && !players.contains(&"a"),
        "{players:?}"
    );
    app.get("/v1/pools/main/players/a").await.assert_error(
        StatusCode::NOT_FOUND,
        "player_not_found",
        None,
        "the old pool's player",
    );
}

async fn a_deletion_must_repeat_the_name_and_be_an_admin_s(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    for uri in [
        "/v1/pools/main",
        "/v1/pools/main?confirm=other",
        "/v1/pools/main?confirm=",
    ] {
        delete(&app, uri, Some(ADMIN_KEY)).await.assert_error(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("confirm"),
            uri,
        );
    }
    for (key, case) in UNKNOWN_KEYS {
        delete(&app, "/v1/pools/main?confirm=main", key)
            .await
            .assert_error(StatusCode::UNAUTHORIZED, "unauthenticated", None, case);
    }
    for (key, case) in [(READ_KEY, "a read key"), (WRITE_KEY, "a write key")] {
        delete(&app, "/v1/pools/main?confirm=main", Some(key))
            .await
            .assert_error(StatusCode::FORBIDDEN, "forbidden", None, case);
    }
    delete(&app, "/v1/pools/none?confirm=none", Some(ADMIN_KEY))
        .await
        .assert_error(
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
            "no such pool",
        );
    let info = app.pool_info(POOL).await;
    assert_eq!(info["rounds_applied"], 1, "nothing was deleted: {info}");
}

async fn a_pool_rated_again_for_a_correction_is_not_deleted_until_that_ends(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    let pool = app.state.pools.get(POOL).expect("the pool");
    // As the worker marks a recomputation it runs (no test runs a worker).
    drop(pool.start_recompute("fix", 1));
    delete(&app, "/v1/pools/main?confirm=main", Some(ADMIN_KEY))
        .await
        .assert_error(
            StatusCode::CONFLICT,
            "recompute_running",
            None,
            "while it runs",
        );
    assert_eq!(app.pool_info(POOL).await["rounds_applied"], 1);
    pool.finish_recompute("applied");
    delete(&app, "/v1/pools/main?confirm=main", Some(ADMIN_KEY))
        .await
        .assert_status(StatusCode::OK, "once it ended");
}
