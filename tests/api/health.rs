//! `GET /healthz`, `GET /readyz` and `GET /openapi.json`.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::support::{round, settings, Payload, TestApp, ADMIN_KEY, POOL, READ_KEY};

/// Every route of the API, as `METHOD path`.
const ROUTES: [&str; 39] = [
    "GET /healthz",
    "GET /readyz",
    "GET /openapi.json",
    "GET /metrics",
    "GET /v1/pools",
    "GET /v1/pools/{pool}",
    "PUT /v1/pools/{pool}",
    "DELETE /v1/pools/{pool}",
    "GET /v1/pools/{pool}/display",
    "PUT /v1/pools/{pool}/display",
    "PATCH /v1/pools/{pool}/display",
    "GET /v1/pools/{pool}/leagues",
    "GET /v1/keys",
    "GET /v1/audit",
    "POST /v1/keys",
    "DELETE /v1/keys/{name}",
    "POST /v1/pools/{pool}/rounds",
    "POST /v1/pools/{pool}/round-batches",
    "GET /v1/pools/{pool}/rounds",
    "GET /v1/pools/{pool}/rounds/{id}",
    "GET /v1/pools/{pool}/events",
    "POST /v1/pools/{pool}/seasons",
    "POST /v1/pools/{pool}/corrections",
    "DELETE /v1/pools/{pool}/rounds/{id}",
    "GET /v1/pools/{pool}/recompute",
    "GET /v1/pools/{pool}/seasons",
    "GET /v1/pools/{pool}/seasons/{number}/leaderboard",
    "GET /v1/pools/{pool}/players",
    "GET /v1/pools/{pool}/players/{player}",
    "GET /v1/pools/{pool}/players/{player}/history",
    "GET /v1/pools/{pool}/players/{player}/opponents",
    "GET /v1/pools/{pool}/leaderboard",
    "GET /v1/pools/{pool}/distribution",
    "GET /v1/pools/{pool}/win-probability",
    "POST /v1/pools/{pool}/match-qualities",
    "POST /v1/pools/{pool}/player-ratings",
    "POST /v1/pools/{pool}/predictions",
    "POST /v1/pools/{pool}/match-quality",
    "POST /v1/pools/{pool}/matchmaking",
];

#[tokio::test]
async fn healthz_returns_200_ok() {
    let app = TestApp::new().await;
    let response = app.get("/healthz").await;
    assert_eq!(
        response.assert_status(StatusCode::OK, "healthz"),
        &json!({"status": "ok"})
    );
}

#[tokio::test]
async fn readyz_with_no_pools_is_ready_with_an_empty_queue() {
    let app = TestApp::new().await;
    let response = app.get("/readyz").await;
    assert_eq!(
        response.assert_status(StatusCode::OK, "readyz"),
        &json!({"status": "ready", "database": true, "workers": true, "stalled_pools": 0,
                "queue_depth": 0, "replica": null, "owned_pools": []})
    );
}

#[tokio::test]
async fn readyz_is_not_ready_while_a_pools_worker_is_not_running_and_counts_the_queue() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.queue_round(round("r1", &["a", "b"])).await;
    let response = app.get("/readyz").await;
    assert_eq!(
        response.assert_status(StatusCode::SERVICE_UNAVAILABLE, "no worker"),
        &json!({"status": "not_ready", "database": true, "workers": false, "stalled_pools": 0,
                "queue_depth": 1, "replica": null, "owned_pools": [POOL]})
    );
}

#[tokio::test]
async fn readyz_is_ready_while_every_worker_runs_and_not_once_they_stop() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let pool = app.state.pools.get(POOL).expect("the pool");
    app.state.start_worker(pool.clone());
    for _ in 0..500 {
        if pool.worker_running() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let response = app.get("/readyz").await;
    assert_eq!(
        response.assert_status(StatusCode::OK, "a running worker"),
        &json!({"status": "ready", "database": true, "workers": true, "stalled_pools": 0,
                "queue_depth": 0, "replica": null, "owned_pools": [POOL]})
    );
    app.state.stop_workers().await;
    let response = app.get("/readyz").await;
    assert_eq!(
        response.assert_status(StatusCode::SERVICE_UNAVAILABLE, "stopped")["workers"],
        false
    );
}

#[tokio::test]
async fn readyz_looks_at_the_database_at_most_once_a_second() {
    let app = TestApp::new().await;
    let looked = std::time::Instant::now();
    app.get("/readyz")
        .await
        .assert_status(StatusCode::OK, "a first look");
    app.state.storage.close().await;
    let again = app.get("/readyz").await;
    // On a machine too slow to ask again within the second, there is nothing to check.
    if looked.elapsed() < std::time::Duration::from_millis(900) {
        again.assert_status(StatusCode::OK, "the look of a moment ago");
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let body = app.get("/readyz").await;
    let body = body.assert_status(StatusCode::SERVICE_UNAVAILABLE, "a second later");
    assert_eq!(body["database"], false);
}

#[tokio::test]
async fn readyz_is_not_ready_when_the_database_does_not_answer() {
    let app = TestApp::new().await;
    app.state.storage.close().await;
    let response = app.get("/readyz").await;
    let body = response.assert_status(StatusCode::SERVICE_UNAVAILABLE, "closed database");
    assert_eq!(
        (&body["status"], &body["database"]),
        (&json!("not_ready"), &json!(false))
    );
    assert!(body["queue_depth"].is_null(), "no depth without a database");
}

#[tokio::test]
async fn openapi_json_is_an_openapi_3_document_of_every_route() {
    let app = TestApp::new().await;
    let response = app.get("/openapi.json").await;
    let doc = response.assert_status(StatusCode::OK, "openapi.json");
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().expect("paths");
    let documented: BTreeSet<String> = paths
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .expect("a path item")
                .keys()
                .filter(|key| matches!(key.as_str(), "get" | "put" | "post" | "delete" | "patch"))
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    let expected: BTreeSet<String> = ROUTES.iter().map(|r| (*r).to_owned()).collect();
    assert_eq!(documented, expected);
    for route in &documented {
        let operation = {
            let (method, path) = route.split_once(' ').expect("METHOD path");
            &paths[path][method.to_lowercase()]
        };
        assert!(
            operation["responses"]
                .as_object()
                .is_some_and(|r| ["200", "201", "202", "204"]
                    .iter()
                    .any(|s| r.contains_key(*s))),
            "{route} documents its success"
        );
    }
}

#[tokio::test]
async fn openapi_json_documents_the_errors_the_shared_layers_give_on_every_route() {
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json").await.body;
    for route in ROUTES {
        let (method, path) = route.split_once(' ').expect("METHOD path");
        let operation = &doc["paths"][path][method.to_lowercase()];
        let responses = operation["responses"].as_object().expect("responses");
        let keyed = operation["security"]
            .as_array()
            .is_some_and(|s| !s.is_empty());
        let mut expected = vec!["500", "503"];
        if operation.get("requestBody").is_some() {
            expected.extend(["400", "413", "415"]);
        }
        if keyed {
            expected.extend(["401", "403", "429"]);
        }
        for status in expected {
            let response = &responses
                .get(status)
                .unwrap_or_else(|| panic!("{route} does not document {status}"));
            let schema = response["content"]["application/json"]["schema"].to_string();
            assert!(
                schema.contains("#/components/schemas/ErrorResponse"),
                "{route} {status}: the error body: {schema}"
            );
            if matches!(status, "429" | "503") {
                assert!(
                    response["headers"].get("Retry-After").is_some(),
                    "{route} {status}: Retry-After"
                );
            }
        }
    }
}

#[tokio::test]
async fn every_documented_route_is_served_by_the_router() {
    let app = TestApp::new().await;
    for route in ROUTES {
        let (method, path) = route.split_once(' ').expect("METHOD path");
        let uri = path
            .replace("{pool}", "main")
            .replace("{id}", "r1")
            .replace("{player}", "a")
            .replace("{number}", "1");
        if path == "/v1/pools/{pool}/events" {
            // An endless answer: its head is enough.
            let response = app.get_stream(&uri, &[]).await;
            assert_eq!(response.status(), StatusCode::OK, "{route}");
            continue;
        }
        if path == "/metrics" {
            // The one answer that is not JSON.
            let (status, _, _) = app.get_text(path, "text/plain").await;
            assert_eq!(status, StatusCode::OK, "{route}");
            continue;
        }
        let method: Method = method.parse().expect("a method");
        let payload = if method == Method::GET {
            Payload::Empty
        } else {
            Payload::Json(json!({}))
        };
        let response = app.send(method, &uri, Some(ADMIN_KEY), payload).await;
        assert_ne!(response.body["error"]["code"], "route_not_found", "{route}");
        assert_ne!(response.status, StatusCode::METHOD_NOT_ALLOWED, "{route}");
    }
}

#[tokio::test]
async fn readyz_names_the_pools_only_to_a_client_that_may_read_them() {
    let app = TestApp::with_settings(settings(&[("MMR__AUTH__READ_KEY_REQUIRED", "true")])).await;
    app.create_pool(POOL).await;
    let anonymous = app.get("/readyz").await;
    assert_eq!(
        anonymous.body["owned_pools"],
        json!([]),
        "{:#}",
        anonymous.body
    );
    let wrong = app
        .send(Method::GET, "/readyz", Some("guess"), Payload::Empty)
        .await;
    assert_eq!(wrong.body["owned_pools"], json!([]), "{:#}", wrong.body);
    let reader = app
        .send(Method::GET, "/readyz", Some(READ_KEY), Payload::Empty)
        .await;
    assert_eq!(
        reader.body["owned_pools"],
        json!([POOL]),
        "{:#}",
        reader.body
    );
}
