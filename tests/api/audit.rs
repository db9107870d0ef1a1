//! The audit log on both backends: every admin and key action that changed something is
//! recorded with the key that acted, the request's id and the state before and after, newest
//! first, filtered by pool and action and paged by id, across a restart; what changed nothing
//! (an unchanged `PUT`, a refused change, a re-posted correction, a second revocation) records
//! nothing; a deleted pool keeps its entries, its deletion last; and an admin key scoped to some
//! pools reads their entries alone.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};

use mmr_service::api::auth::hash_key;
use mmr_service::config::{KeySettings, Role};
use mmr_service::scope::Scope;

use crate::support::{round, settings, Payload, TestApp, ADMIN_KEY, POOL, WRITE_KEY};

backend_tests!(
    every_admin_action_is_recorded_with_its_key_request_and_states,
    a_scoped_admin_reads_the_entries_of_its_pools_alone,
);

/// `method uri` with the admin key, a JSON body where given, and request id `id`.
async fn acted(app: &TestApp, method: Method, uri: &str, body: Value, id: &str) -> Value {
    let mut builder = Request::builder()
        .method(method.clone())
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {ADMIN_KEY}"))
        .header("x-request-id", id);
    let body = if body.is_null() {
        Body::empty()
    } else {
        builder = builder.header(header::CONTENT_TYPE, "application/json");
        Body::from(body.to_string())
    };
    let response = app
        .send_request(builder.body(body).expect("a request"))
        .await;
    assert!(
        response.status.is_success(),
        "{method} {uri}: {} {:#}",
        response.status,
        response.body
    );
    response.body
}

/// `GET uri` (of the audit log) with `key`.
async fn audit(app: &TestApp, uri: &str, key: &str) -> Value {
    let response = app.send(Method::GET, uri, Some(key), Payload::Empty).await;
    response.assert_status(StatusCode::OK, uri).clone()
}

/// The `(action, pool, subject, request id)` of each entry of a page, newest first.
fn summary(page: &Value) -> Vec<(String, Value, Value, Value)> {
    page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["action"].as_str().expect("an action").to_owned(),
                e["pool"].clone(),
                e["subject"].clone(),
                e["request_id"].clone(),
            )
        })
        .collect()
}

async fn every_admin_action_is_recorded_with_its_key_request_and_states(app: TestApp) {
    let pool = format!("/v1/pools/{POOL}");
    acted(&app, Method::PUT, &pool, json!({}), "r-create").await;
    acted(&app, Method::PUT, &pool, json!({"beta": 150.0}), "r-beta").await;
    // Unchanged: nothing to record.
    acted(&app, Method::PUT, &pool, json!({"beta": 150.0}), "r-same").await;
    let display = format!("{pool}/display");
    acted(
        &app,
        Method::PUT,
        &display,
        json!({"conservative_k": 2.0}),
        "r-k",
    )
    .await;
    acted(
        &app,
        Method::PATCH,
        &display,
        json!({"list_provisional": true}),
        "r-patch",
    )
    .await;
    // A write key's round is no admin action.
    app.post_round(POOL, round("cup-1", &["ann", "bob"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "a round");
    app.apply_queued(POOL).await;
    // Refused once the pool has rounds: nothing recorded.
    let locked = app.put_pool(POOL, json!({"beta": 175.0})).await;
    assert_eq!(locked.status, StatusCode::CONFLICT, "{:#}", locked.body);
    let void = format!("{pool}/rounds/cup-1");
    acted(&app, Method::DELETE, &void, Value::Null, "r-void").await;
    // The same void again: a retry stores nothing and records nothing.
    acted(&app, Method::DELETE, &void, Value::Null, "r-void-again").await;
    let corrections = format!("{pool}/corrections");
    acted(
        &app,
        Method::POST,
        &corrections,
        json!({"id": "fix-beta", "action": "params", "params": {"beta": 120.0}}),
        "r-params",
    )
    .await;
    acted(
        &app,
        Method::POST,
        &format!("{pool}/seasons"),
        json!({"id": "spring", "mu_reset": 0.5, "sigma_reset": 0.5}),
        "r-season",
    )
    .await;
    app.apply_queued(POOL).await;
    let created = acted(
        &app,
        Method::POST,
        "/v1/keys",
        json!({"name": "scoreboard", "role": "write", "pools": ["main"]}),
        "r-key",
    )
    .await;
    let secret = created["key"].as_str().expect("the new key").to_owned();
    acted(
        &app,
        Method::DELETE,
        "/v1/keys/scoreboard",
        Value::Null,
        "r-revoke",
    )
    .await;
    acted(
        &app,
        Method::DELETE,
        "/v1/keys/scoreboard",
        Value::Null,
        "r-revoke-again",
    )
    .await;
    acted(
        &app,
        Method::PUT,
        "/v1/pools/scratch",
        json!({}),
        "r-scratch",
    )
    .await;
    acted(
        &app,
        Method::DELETE,
        "/v1/pools/scratch?confirm=scratch",
        Value::Null,
        "r-delete",
    )
    .await;

    let log = audit(&app, "/v1/audit", ADMIN_KEY).await;
    let s = |x: &str| json!(x);
    let main = s(POOL);
    let expected = vec![
        (
            "pool.delete".to_owned(),
            s("scratch"),
            Value::Null,
            s("r-delete"),
        ),
        (
            "pool.create".to_owned(),
            s("scratch"),
            Value::Null,
            s("r-scratch"),
        ),
        (
            "key.revoke".to_owned(),
            Value::Null,
            s("scoreboard"),
            s("r-revoke"),
        ),
        (
            "key.create".to_owned(),
            Value::Null,
            s("scoreboard"),
            s("r-key"),
        ),
        (
            "season.start".to_owned(),
            main.clone(),
            s("spring"),
            s("r-season"),
        ),
        (
            "correction.params".to_owned(),
            main.clone(),
            s("fix-beta"),
            s("r-params"),
        ),
        (
            "correction.void".to_owned(),
            main.clone(),
            s("void/cup-1"),
            s("r-void"),
        ),
        (
            "display.update".to_owned(),
            main.clone(),
            Value::Null,
            s("r-patch"),
        ),
        (
            "display.update".to_owned(),
            main.clone(),
            Value::Null,
            s("r-k"),
        ),
        (
            "pool.update".to_owned(),
            main.clone(),
            Value::Null,
            s("r-beta"),
        ),
        (
            "pool.create".to_owned(),
            main.clone(),
            Value::Null,
            s("r-create"),
        ),
    ];
    assert_eq!(summary(&log), expected, "{log:#}");
    assert_eq!(log["next_before"], Value::Null);
    let entries = log["entries"].as_array().expect("entries");
    for entry in entries {
        assert_eq!(entry["key"], "ops", "{entry}");
        assert!(
            entry["at"].as_str().is_some_and(|at| at.ends_with('Z')),
            "{entry}"
        );
    }
    let ids: Vec<i64> = entries
        .iter()
        .map(|e| e["id"].as_i64().expect("an id"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");

    // What each changed, before and after.
    let entry = |action: &str, request: &str| {
        entries
            .iter()
            .find(|e| e["action"] == action && e["request_id"] == request)
            .unwrap_or_else(|| panic!("{action} {request}"))
            .clone()
    };
    let created_pool = entry("pool.create", "r-create");
    assert_eq!(created_pool["before"], Value::Null);
    assert_eq!(created_pool["after"]["system"], "elo_mmr");
    let beta = entry("pool.update", "r-beta");
    assert_eq!(beta["before"]["params"]["beta"], 200.0);
    assert_eq!(beta["after"]["params"]["beta"], 150.0);
    let k = entry("display.update", "r-k");
    assert_eq!(k["before"]["conservative_k"], 3.0);
    assert_eq!(k["after"]["conservative_k"], 2.0);
    let patched = entry("display.update", "r-patch");
    assert_eq!(patched["before"]["list_provisional"], false);
    assert_eq!(patched["after"]["list_provisional"], true);
    assert_eq!(patched["after"]["conservative_k"], 2.0, "the rest kept");
    let void = entry("correction.void", "r-void");
    assert_eq!(void["before"], Value::Null);
    assert_eq!(void["after"]["correction"]["round"], "cup-1", "{void}");
    let params = entry("correction.params", "r-params");
    assert_eq!(params["before"]["params"]["beta"], 150.0, "{params}");
    assert_eq!(
        params["after"]["correction"]["system"]["params"]["beta"], 120.0,
        "{params}"
    );
    let key = entry("key.create", "r-key");
    assert_eq!(
        key["after"],
        json!({"name": "scoreboard", "role": "write", "pools": ["main"]})
    );
    let text = log.to_string();
    assert!(
        !text.contains(&secret) && !text.contains(&hash_key(&secret)),
        "no secret and no hash in the log"
    );
    let revoked = entry("key.revoke", "r-revoke");
    assert_eq!(revoked["before"]["revoked_at"], Value::Null);
    assert!(revoked["after"]["revoked_at"].is_i64(), "{revoked}");
    let deleted = entry("pool.delete", "r-delete");
    assert_eq!(
        deleted["before"]["params"]["system"], "elo_mmr",
        "{deleted}"
    );
    assert_eq!(deleted["after"], Value::Null);

    // Filters, and pages by the cursor.
    let of_main = audit(&app, "/v1/audit?pool=main", ADMIN_KEY).await;
    assert_eq!(summary(&of_main), expected[4..].to_vec());
    let scratch = audit(&app, "/v1/audit?pool=scratch", ADMIN_KEY).await;
    assert_eq!(
        summary(&scratch),
        expected[..2].to_vec(),
        "a deleted pool's entries stay"
    );
    let displays = audit(&app, "/v1/audit?action=display.update", ADMIN_KEY).await;
    assert_eq!(summary(&displays), expected[7..9].to_vec());
    let mut walked = Vec::new();
    let mut uri = "/v1/audit?pool=main&limit=3".to_owned();
    loop {
        let page = audit(&app, &uri, ADMIN_KEY).await;
        walked.extend(summary(&page));
        match page["next_before"].as_i64() {
            Some(before) => uri = format!("/v1/audit?pool=main&limit=3&before={before}"),
            None => break,
        }
    }
    assert_eq!(
        walked,
        expected[4..].to_vec(),
        "pages of 3 walk the pool's entries once"
    );

    // Kept across a restart.
    let restarted = app.restarted().await;
    assert_eq!(audit(&restarted, "/v1/audit", ADMIN_KEY).await, log);
}

async fn a_scoped_admin_reads_the_entries_of_its_pools_alone(app: TestApp) {
    let mut scoped = settings(&[]);
    scoped.auth.keys.push(KeySettings {
        name: "chess-ops".to_owned(),
        role: Role::Admin,
        sha256: hash_key("chess-secret"),
        pools: Scope::of(Some(vec!["chess-*".to_owned()])).expect("a scope"),
    });
    let app = app.restarted_with(scoped).await;
    for name in ["chess-blitz", "chess_blitz", "go"] {
        app.put_pool(name, json!({}))
            .await
            .assert_status(StatusCode::CREATED, name);
    }
    acted(
        &app,
        Method::POST,
        "/v1/keys",
        json!({"name": "viewer", "role": "read"}),
        "r-key",
    )
    .await;
    let mine = audit(&app, "/v1/audit", "chess-secret").await;
    let pools: Vec<&Value> = mine["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| &e["pool"])
        .collect();
    // `chess_blitz` does not start with `chess-`: `_` is no wildcard here.
    assert_eq!(pools, [&json!("chess-blitz")], "{mine:#}");
    let everything = audit(&app, "/v1/audit", ADMIN_KEY).await;
    assert_eq!(everything["entries"].as_array().map(Vec::len), Some(4));
    let other = app
        .send(
            Method::GET,
            "/v1/audit?pool=go",
            Some("chess-secret"),
            Payload::Empty,
        )
        .await;
    other.assert_error(
        StatusCode::NOT_FOUND,
        "pool_not_found",
        None,
        "another pool",
    );
    let missing = app
        .send(
            Method::GET,
            "/v1/audit?pool=chess-none",
            Some("chess-secret"),
            Payload::Empty,
        )
        .await;
    let missing = missing.assert_status(StatusCode::OK, "a pool of its scope with no entries");
    assert_eq!(missing["entries"], json!([]));
    let write = app
        .send(Method::GET, "/v1/audit", Some(WRITE_KEY), Payload::Empty)
        .await;
    write.assert_error(StatusCode::FORBIDDEN, "forbidden", None, "a write key");
}
