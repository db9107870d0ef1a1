//! `/v1/keys` and the first start on both backends: keys kept in the database are created
//! (shown once, stored as a hash), listed without secrets, work at once, and stop working at
//! once when revoked; a first start with no key anywhere creates one admin key, once; a key
//! scoped to some pools reaches those alone.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use mmr_service::api::auth::hash_key;
use mmr_service::config::{KeySettings, Role};
use mmr_service::scope::Scope;
use mmr_service::state::AppState;

use crate::support::{round, settings, Payload, TestApp, ADMIN_KEY, POOL, WRITE_KEY};

backend_tests!(
    keys_are_created_listed_used_and_revoked_at_once,
    a_first_start_with_no_key_creates_one_admin_key_once,
    a_configured_key_may_not_take_the_name_of_a_stored_one,
    a_scoped_key_reaches_its_pools_alone,
);

async fn create(app: &TestApp, key: &str, body: Value) -> crate::support::TestResponse {
    app.send(Method::POST, "/v1/keys", Some(key), Payload::Json(body))
        .await
}

async fn revoke(app: &TestApp, name: &str) -> crate::support::TestResponse {
    app.send(
        Method::DELETE,
        &format!("/v1/keys/{name}"),
        Some(ADMIN_KEY),
        Payload::Empty,
    )
    .await
}

async fn post_round_with(app: &TestApp, key: &str, id: &str) -> StatusCode {
    app.send(
        Method::POST,
        "/v1/pools/main/rounds",
        Some(key),
        Payload::Json(round(id, &["a", "b"])),
    )
    .await
    .status
}

async fn keys_are_created_listed_used_and_revoked_at_once(app: TestApp) {
    app.create_pool(POOL).await;
    let created = create(
        &app,
        ADMIN_KEY,
        json!({"name": "scoreboard", "role": "write"}),
    )
    .await;
    let created = created
        .assert_status(StatusCode::CREATED, "create a key")
        .clone();
    assert_eq!(
        (&created["name"], &created["role"]),
        (&json!("scoreboard"), &json!("write"))
    );
    let key = created["key"].as_str().expect("the key").to_owned();
    assert!(key.starts_with("mmr_") && key.len() > 40, "{key}");

    assert_eq!(
        post_round_with(&app, &key, "r1").await,
        StatusCode::ACCEPTED
    );
    create(&app, &key, json!({"name": "x", "role": "admin"}))
        .await
        .assert_error(
            StatusCode::FORBIDDEN,
            "forbidden",
            None,
            "a write key makes no keys",
        );

    let listed = app
        .send(Method::GET, "/v1/keys", Some(ADMIN_KEY), Payload::Empty)
        .await
        .assert_status(StatusCode::OK, "list")
        .clone();
    let text = listed.to_string();
    assert!(
        !text.contains(&key) && !text.contains("sha256"),
        "no secret is listed: {text}"
    );
    let names: Vec<(&str, &str)> = listed["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| {
            (
                k["name"].as_str().expect("a name"),
                k["source"].as_str().expect("a source"),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("ops", "configuration"),
            ("judge", "configuration"),
            ("frontend", "configuration"),
            ("scoreboard", "database")
        ]
    );

    for (name, why) in [
        ("scoreboard", "a stored key's name"),
        ("judge", "a configured key's name"),
    ] {
        create(&app, ADMIN_KEY, json!({"name": name, "role": "read"}))
            .await
            .assert_error(StatusCode::CONFLICT, "key_conflict", Some("name"), why);
    }

    // A restarted service knows the key from the database.
    let restarted = app.restarted().await;
    assert_eq!(
        post_round_with(&restarted, &key, "r2").await,
        StatusCode::ACCEPTED
    );

    assert_eq!(
        revoke(&app, "scoreboard").await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        post_round_with(&app, &key, "r3").await,
        StatusCode::UNAUTHORIZED
    );
    // The other process sees it within a refresh.
    restarted
        .state
        .refresh_keys()
        .await
        .expect("re-read the keys");
    assert_eq!(
        post_round_with(&restarted, &key, "r3").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post_round_with(&app, WRITE_KEY, "r3").await,
        StatusCode::ACCEPTED
    );

    let revoked_at = |listed: &Value| listed["keys"][3]["revoked_at"].clone();
    let before = app
        .send(Method::GET, "/v1/keys", Some(ADMIN_KEY), Payload::Empty)
        .await
        .assert_status(StatusCode::OK, "list")
        .clone();
    // Revoking again (a retry) is what was asked: 204, and the first revocation's time stays.
    assert_eq!(
        revoke(&app, "scoreboard").await.status,
        StatusCode::NO_CONTENT,
        "revoked already"
    );
    revoke(&app, "never-made").await.assert_error(
        StatusCode::NOT_FOUND,
        "key_not_found",
        None,
        "no such key",
    );
    revoke(&app, "ops").await.assert_error(
        StatusCode::CONFLICT,
        "key_conflict",
        Some("name"),
        "a configured key",
    );
    let listed = app
        .send(Method::GET, "/v1/keys", Some(ADMIN_KEY), Payload::Empty)
        .await
        .assert_status(StatusCode::OK, "list")
        .clone();
    assert!(revoked_at(&listed).is_string(), "{listed}");
    assert_eq!(revoked_at(&listed), revoked_at(&before), "{listed}");
}

async fn a_first_start_with_no_key_creates_one_admin_key_once(app: TestApp) {
    let mut bare = settings(&[]);
    bare.auth.keys.clear();
    let mut off = bare.clone();
    off.auth.bootstrap = false;

    let refused = app.restarted_with(off.clone()).await;
    assert_eq!(
        refused.state.bootstrap_key().await.expect("bootstrap"),
        None,
        "turned off"
    );

    let first = app.restarted_with(bare.clone()).await;
    let key = first
        .state
        .bootstrap_key()
        .await
        .expect("bootstrap")
        .expect("a first start creates a key");
    first
        .send(
            Method::PUT,
            "/v1/pools/main",
            Some(&key),
            Payload::Json(json!({})),
        )
        .await
        .assert_status(StatusCode::CREATED, "the first key is an admin's");
    assert_eq!(
        post_round_with(&first, &key, "r1").await,
        StatusCode::ACCEPTED
    );
    // The audit log names the service's own start as the first key's creator, and the key
    // as the pool's.
    let log = first
        .send(Method::GET, "/v1/audit", Some(&key), Payload::Empty)
        .await;
    let log = log.assert_status(StatusCode::OK, "the audit log");
    let acted: Vec<(&Value, &Value)> = log["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| (&e["action"], &e["key"]))
        .collect();
    assert_eq!(
        acted,
        [
            (&json!("pool.create"), &json!("admin")),
            (&json!("key.create"), &json!("@bootstrap"))
        ]
    );

    let again = app.restarted_with(bare.clone()).await;
    assert_eq!(
        again.state.bootstrap_key().await.expect("bootstrap"),
        None,
        "once only"
    );
    assert_eq!(
        post_round_with(&again, &key, "r2").await,
        StatusCode::ACCEPTED
    );

    // Revoking every key does not make the next start create another: only the first does.
    let with_config = app.restarted().await;
    assert_eq!(
        revoke(&with_config, "admin").await.status,
        StatusCode::NO_CONTENT
    );
    let after = app.restarted_with(bare).await;
    assert_eq!(after.state.bootstrap_key().await.expect("bootstrap"), None);
    assert_eq!(
        post_round_with(&after, &key, "r3").await,
        StatusCode::UNAUTHORIZED
    );
}

/// A stored admin key, then a configuration that names a key of its own alike: the stored one
/// would go on working and could not be revoked (DELETE refuses a configured name), so the
/// service refuses to start; revoked first, the name is free for the configuration.
async fn a_configured_key_may_not_take_the_name_of_a_stored_one(app: TestApp) {
    let created = create(&app, ADMIN_KEY, json!({"name": "referee", "role": "admin"})).await;
    created.assert_status(StatusCode::CREATED, "stored");
    let mut clashing = settings(&[]);
    clashing.auth.keys.push(KeySettings {
        name: "referee".into(),
        role: Role::Read,
        sha256: hash_key("another-secret"),
        pools: Scope::All,
    });
    let state = AppState::new(std::sync::Arc::clone(&app.state.storage), clashing.clone())
        .expect("the state");
    let refused = state.load_pools(false).await.expect_err("a clash refused");
    assert!(
        format!("{refused:#}").contains("`referee`"),
        "names the key: {refused:#}"
    );
    revoke(&app, "referee")
        .await
        .assert_status(StatusCode::NO_CONTENT, "revoked");
    let restarted = app.restarted_with(clashing).await;
    let read = restarted
        .send(Method::GET, "/v1/keys", Some(ADMIN_KEY), Payload::Empty)
        .await;
    read.assert_status(StatusCode::OK, "listed");
}

/// A key scoped to `chess-*` (stored here, so it outlives a restart): it creates, posts to and
/// reads its pools; every route of another pool answers it exactly as a pool that does not
/// exist; the list of pools shows its own alone; it cannot manage keys. A key created without
/// pools reaches every pool, as every key did before keys had scopes.
async fn a_scoped_key_reaches_its_pools_alone(app: TestApp) {
    app.create_pool(POOL).await;
    let created = create(
        &app,
        ADMIN_KEY,
        json!({"name": "chess-ops", "role": "admin", "pools": ["chess-*"]}),
    )
    .await
    .assert_status(StatusCode::CREATED, "a scoped key")
    .clone();
    assert_eq!(created["pools"], json!(["chess-*"]));
    let chess = created["key"].as_str().expect("the key").to_owned();
    let unscoped = create(&app, ADMIN_KEY, json!({"name": "all", "role": "write"}))
        .await
        .assert_status(StatusCode::CREATED, "a key of every pool")
        .clone();
    assert_eq!(unscoped["pools"], Value::Null);
    let everywhere = unscoped["key"].as_str().expect("the key").to_owned();

    for (i, app) in [&app, &app.restarted().await].into_iter().enumerate() {
        let put =
            |uri: &'static str| app.send(Method::PUT, uri, Some(&chess), Payload::Json(json!({})));
        let created = put("/v1/pools/chess-blitz").await.status;
        assert!(created.is_success(), "its own pool: {created}");
        let elsewhere = put("/v1/pools/go").await;
        elsewhere.assert_error(
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
            "another pool",
        );
        let missing = app
            .send(
                Method::GET,
                "/v1/pools/nowhere",
                Some(ADMIN_KEY),
                Payload::Empty,
            )
            .await;
        let existing = app
            .send(
                Method::GET,
                &format!("/v1/pools/{POOL}"),
                Some(&chess),
                Payload::Empty,
            )
            .await;
        assert_eq!(
            (existing.status, &existing.body["error"]["code"]),
            (missing.status, &missing.body["error"]["code"]),
            "an existing pool out of reach answers as a missing one"
        );
        let message = |response: &crate::support::TestResponse, pool: &str| {
            response.body["error"]["message"]
                .as_str()
                .expect("a message")
                .replace(pool, "…")
        };
        assert_eq!(message(&existing, POOL), message(&missing, "nowhere"));
        assert_eq!(
            post_round_with(app, &chess, &format!("r{i}")).await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            app.send(
                Method::POST,
                "/v1/pools/chess-blitz/rounds",
                Some(&chess),
                Payload::Json(round(&format!("c{i}"), &["a", "b"])),
            )
            .await
            .status,
            StatusCode::ACCEPTED,
        );
        assert_eq!(
            post_round_with(app, &everywhere, &format!("r{i}")).await,
            StatusCode::ACCEPTED,
            "a key without pools reaches every pool"
        );

        let listed = app
            .send(Method::GET, "/v1/pools", Some(&chess), Payload::Empty)
            .await
            .assert_status(StatusCode::OK, "its pools")
            .clone();
        let names: Vec<&str> = listed["pools"]
            .as_array()
            .expect("pools")
            .iter()
            .map(|p| p["name"].as_str().expect("a name"))
            .collect();
        assert_eq!(names, ["chess-blitz"]);
        let all = app
            .send(Method::GET, "/v1/pools", Some(ADMIN_KEY), Payload::Empty)
            .await
            .assert_status(StatusCode::OK, "every pool")
            .clone();
        assert_eq!(all["pools"].as_array().map(Vec::len), Some(2));

        for (method, uri, body) in [
            (Method::GET, "/v1/keys", Payload::Empty),
            (
                Method::POST,
                "/v1/keys",
                Payload::Json(json!({"name": "wider", "role": "admin"})),
            ),
            (Method::DELETE, "/v1/keys/all", Payload::Empty),
        ] {
            app.send(method.clone(), uri, Some(&chess), body)
                .await
                .assert_error(StatusCode::FORBIDDEN, "forbidden", None, uri);
        }
        let keys = app
            .send(Method::GET, "/v1/keys", Some(ADMIN_KEY), Payload::Empty)
            .await
            .assert_status(StatusCode::OK, "the keys")
            .clone();
        let scope_of = |name: &str| {
            keys["keys"]
                .as_array()
                .expect("keys")
                .iter()
                .find(|k| k["name"] == name)
                .map(|k| k["pools"].clone())
        };
        assert_eq!(scope_of("chess-ops"), Some(json!(["chess-*"])));
        assert_eq!(scope_of("all"), Some(Value::Null));
        assert_eq!(scope_of("ops"), Some(Value::Null));

        let (_, _, metrics) = app.get_text("/metrics", "text/plain").await;
        assert!(
            metrics.contains("mmr_key_requests_total{key=\"chess-ops\"}")
                && !metrics.contains(&chess),
            "usage counted by name, never by secret"
        );
    }
}
