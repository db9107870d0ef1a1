//! Keys and roles across routes: reads are public unless `auth.read_key_required`; writes need
//! a key of the right role, given as `Authorization: Bearer <key>`.

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, Request, StatusCode};
use serde_json::{json, Value};

use crate::support::{
    round, settings, Payload, TestApp, TestResponse, ADMIN_KEY, POOL, READ_KEY, UNKNOWN_KEYS,
    WRITE_KEY,
};

/// Every route that reads, with a request that succeeds once authorized.
fn reads() -> Vec<(Method, &'static str, Option<Value>)> {
    let prediction = json!({"entrants": [{"players": ["a"]}, {"players": ["b"]}]});
    vec![
        (Method::GET, "/v1/pools", None),
        (Method::GET, "/v1/pools/main", None),
        (Method::GET, "/v1/pools/main/rounds/r1", None),
        (Method::GET, "/v1/pools/main/players?prefix=a", None),
        (Method::GET, "/v1/pools/main/players/a", None),
        (Method::GET, "/v1/pools/main/players/a/history", None),
        (Method::GET, "/v1/pools/main/leaderboard", None),
        (Method::GET, "/v1/pools/main/win-probability?a=a&b=b", None),
        (Method::POST, "/v1/pools/main/predictions", Some(prediction)),
        (
            Method::POST,
            "/v1/pools/main/match-quality",
            Some(json!({"sides": [["a"], ["b"]]})),
        ),
    ]
}

/// A pool with one applied round between `a` and `b`, with reads locked or not.
async fn one_round_played(read_key_required: bool) -> TestApp {
    let app = TestApp::with_settings(settings(&[(
        "MMR__AUTH__READ_KEY_REQUIRED",
        if read_key_required { "true" } else { "false" },
    )]))
    .await;
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    app
}

async fn read(
    app: &TestApp,
    route: &(Method, &str, Option<Value>),
    key: Option<&str>,
) -> TestResponse {
    let (method, uri, body) = route;
    let payload = body.clone().map_or(Payload::Empty, Payload::Json);
    app.send(method.clone(), uri, key, payload).await
}

#[tokio::test]
async fn reads_are_public_by_default() {
    let app = one_round_played(false).await;
    for route in reads() {
        read(&app, &route, None)
            .await
            .assert_status(StatusCode::OK, &format!("{} {}", route.0, route.1));
    }
}

#[tokio::test]
async fn a_public_read_checks_a_bearer_key_it_is_given() {
    let app = one_round_played(false).await;
    let mut cases = vec![
        ("Bearer guess".to_owned(), StatusCode::UNAUTHORIZED),
        ("Bearer".to_owned(), StatusCode::UNAUTHORIZED),
        ("Basic dXNlcjpwYXNz".to_owned(), StatusCode::OK),
    ];
    cases.extend([READ_KEY, WRITE_KEY, ADMIN_KEY].map(|k| (format!("Bearer {k}"), StatusCode::OK)));
    for (method, uri, body) in reads() {
        for (authorization, status) in &cases {
            let context = format!("{method} {uri} with {authorization:?}");
            let mut request = Request::builder()
                .method(method.clone())
                .uri(uri)
                .header(header::AUTHORIZATION, authorization);
            if body.is_some() {
                request = request.header(header::CONTENT_TYPE, "application/json");
            }
            let body = body.as_ref().map(Value::to_string).unwrap_or_default();
            let response = app
                .send_request(request.body(Body::from(body)).expect("a valid request"))
                .await;
            if *status == StatusCode::OK {
                response.assert_status(StatusCode::OK, &context);
            } else {
                response.assert_error(*status, "unauthenticated", None, &context);
            }
        }
    }
}

#[tokio::test]
async fn when_read_keys_are_required_reads_without_a_known_key_return_401() {
    let app = one_round_played(true).await;
    for route in reads() {
        for (key, case) in UNKNOWN_KEYS {
            let context = format!("{} {}: {case}", route.0, route.1);
            let response = read(&app, &route, key).await;
            response.assert_error(StatusCode::UNAUTHORIZED, "unauthenticated", None, &context);
            assert_eq!(
                response.headers.get(header::WWW_AUTHENTICATE),
                Some(&HeaderValue::from_static("Bearer")),
                "{context}: a 401 names the scheme"
            );
        }
    }
}

#[tokio::test]
async fn when_read_keys_are_required_every_role_may_read() {
    let app = one_round_played(true).await;
    for route in reads() {
        for key in [READ_KEY, WRITE_KEY, ADMIN_KEY] {
            read(&app, &route, Some(key)).await.assert_status(
                StatusCode::OK,
                &format!("{} {} with {key}", route.0, route.1),
            );
        }
    }
}

#[tokio::test]
async fn health_and_the_openapi_document_need_no_key_even_when_reads_do() {
    let app = one_round_played(true).await;
    for uri in ["/healthz", "/readyz", "/openapi.json"] {
        let response = app.get(uri).await;
        assert_ne!(response.status, StatusCode::UNAUTHORIZED, "{uri}");
        assert!(
            response.body.get("error").is_none(),
            "{uri}: {:#}",
            response.body
        );
    }
}

#[tokio::test]
async fn a_malformed_authorization_header_returns_401() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let cases = [
        (format!("Basic {WRITE_KEY}"), "another scheme"),
        (WRITE_KEY.to_owned(), "no scheme"),
        ("Bearer ".to_owned(), "an empty key"),
        (format!("Bearer {WRITE_KEY}x"), "a near miss"),
        (format!("Bearer {}", &WRITE_KEY[1..]), "a prefix of the key"),
    ];
    for (authorization, case) in cases {
        let request = Request::builder()
            .method(Method::POST)
            .uri("/v1/pools/main/rounds")
            .header(header::AUTHORIZATION, authorization)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(round("r1", &["a", "b"]).to_string()))
            .expect("a valid request");
        app.send_request(request).await.assert_error(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            None,
            case,
        );
    }
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 0);
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    for (i, scheme) in ["bearer", "BEARER", "Bearer"].into_iter().enumerate() {
        let request = Request::builder()
            .method(Method::POST)
            .uri("/v1/pools/main/rounds")
            .header(header::AUTHORIZATION, format!("{scheme} {WRITE_KEY}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(round(&format!("r{i}"), &["a", "b"]).to_string()))
            .expect("a valid request");
        app.send_request(request)
            .await
            .assert_status(StatusCode::ACCEPTED, scheme);
    }
}

#[tokio::test]
async fn keys_are_checked_before_the_body_and_the_pool() {
    let app = TestApp::new().await;
    let cases = [
        (
            Method::POST,
            "/v1/pools/nowhere/rounds",
            None,
            StatusCode::UNAUTHORIZED,
            "no key, unknown pool",
        ),
        (
            Method::PUT,
            "/v1/pools/Bad%20Name",
            Some(WRITE_KEY),
            StatusCode::FORBIDDEN,
            "a write key, a bad pool name",
        ),
        (
            Method::POST,
            "/v1/pools/nowhere/rounds",
            Some(READ_KEY),
            StatusCode::FORBIDDEN,
            "a read key, unknown pool",
        ),
    ];
    for (method, uri, key, status, case) in cases {
        let payload = Payload::Raw(Some("text/plain"), b"not json".to_vec());
        let response = app.send(method, uri, key, payload).await;
        assert_eq!(response.status, status, "{case}: {:#}", response.body);
    }
}
