//! Security across routes: every route that changes something refuses every credential short
//! of its role; keys never reach the log; per-client rate limits (429 with `Retry-After`);
//! CORS off unless configured. Keys are compared with `subtle::ConstantTimeEq` over their
//! SHA-256 (`src/api/auth.rs`), so a near miss takes as long as a wild guess; that is not timed
//! here. Body size (413) and request time (503 `timeout`) limits are tested in `errors.rs` and
//! `rounds.rs`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Method, Request, StatusCode};
use mmr_service::api::auth::hash_key;
use mmr_service::rate_limit::Client;
use serde_json::{json, Value};

use crate::support::{
    capture_log, round, settings, Payload, TestApp, TestResponse, ADMIN_KEY, POOL, READ_KEY,
    WRITE_KEY,
};

/// Every route that needs a write or admin key, with a body it accepts and the least role.
fn keyed_routes() -> Vec<(Method, &'static str, Value, &'static str)> {
    vec![
        (
            Method::PUT,
            "/v1/pools/main",
            json!({"beta": 100.0}),
            "admin",
        ),
        (
            Method::POST,
            "/v1/keys",
            json!({"name": "new", "role": "read"}),
            "admin",
        ),
        (Method::GET, "/v1/keys", Value::Null, "admin"),
        (Method::GET, "/v1/audit", Value::Null, "admin"),
        (Method::DELETE, "/v1/keys/new", Value::Null, "admin"),
        (
            Method::PUT,
            "/v1/pools/main/display",
            json!({"conservative_k": 2.0}),
            "admin",
        ),
        (
            Method::PATCH,
            "/v1/pools/main/display",
            json!({"conservative_k": 2.0}),
            "admin",
        ),
        (
            Method::POST,
            "/v1/pools/main/rounds",
            round("r1", &["a", "b"]),
            "write",
        ),
        (
            Method::POST,
            "/v1/pools/main/round-batches",
            json!({"rounds": [round("r2", &["a", "b"])]}),
            "write",
        ),
        (
            Method::POST,
            "/v1/pools/main/seasons",
            json!({"id": "s2", "mu_reset": 0.5}),
            "admin",
        ),
        (
            Method::POST,
            "/v1/pools/main/corrections",
            json!({"id": "c1", "action": "params", "params": {"beta": 150.0}}),
            "admin",
        ),
        (
            Method::DELETE,
            "/v1/pools/main/rounds/r1",
            Value::Null,
            "admin",
        ),
        (Method::DELETE, "/v1/pools/main", Value::Null, "admin"),
    ]
}

#[tokio::test]
async fn the_routes_listed_here_are_every_route_the_api_document_says_needs_a_key() {
    let document = serde_json::to_value(mmr_service::api::openapi()).expect("a JSON document");
    let mut keyed = BTreeSet::new();
    for (path, operations) in document["paths"].as_object().expect("paths") {
        for (method, operation) in operations.as_object().expect("operations") {
            let requirements = operation["security"].as_array();
            let anonymous = requirements.is_none_or(|r| r.iter().any(|r| r == &json!({})));
            if !anonymous {
                keyed.insert(format!(
                    "{} {}",
                    method.to_uppercase(),
                    path.replace("{pool}", POOL)
                        .replace("{name}", "new")
                        .replace("{id}", "r1")
                ));
            }
        }
    }
    let listed: BTreeSet<String> = keyed_routes()
        .into_iter()
        .map(|(method, uri, _, _)| format!("{method} {uri}"))
        .collect();
    assert_eq!(
        keyed, listed,
        "a keyed route is missing from the tests here"
    );
}

#[tokio::test]
async fn every_keyed_route_refuses_missing_unknown_malformed_and_lower_role_keys_changing_nothing()
{
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let credentials = [
        (None, StatusCode::UNAUTHORIZED, "no Authorization header"),
        (
            Some("Bearer guess".to_owned()),
            StatusCode::UNAUTHORIZED,
            "an unknown key",
        ),
        (
            Some(format!("Bearer {ADMIN_KEY}x")),
            StatusCode::UNAUTHORIZED,
            "a near miss of the admin key",
        ),
        (
            Some(format!("Basic {ADMIN_KEY}")),
            StatusCode::UNAUTHORIZED,
            "the admin key under another scheme",
        ),
        (
            Some(hash_key(ADMIN_KEY)),
            StatusCode::UNAUTHORIZED,
            "the admin key's configured hash",
        ),
        (
            Some(format!("Bearer {}", hash_key(ADMIN_KEY))),
            StatusCode::UNAUTHORIZED,
            "the admin key's hash as a bearer token",
        ),
        (
            Some(format!("Bearer {READ_KEY}")),
            StatusCode::FORBIDDEN,
            "a read key",
        ),
    ];
    for (method, uri, body, role) in keyed_routes() {
        let mut cases = credentials.to_vec();
        if role == "admin" {
            cases.push((
                Some(format!("Bearer {WRITE_KEY}")),
                StatusCode::FORBIDDEN,
                "a write key",
            ));
        }
        for (authorization, status, case) in cases {
            let mut request = Request::builder()
                .method(method.clone())
                .uri(uri)
                .header(header::CONTENT_TYPE, "application/json");
            if let Some(authorization) = authorization {
                request = request.header(header::AUTHORIZATION, authorization);
            }
            let request = request
                .body(Body::from(body.to_string()))
                .expect("a valid request");
            let code = if status == StatusCode::FORBIDDEN {
                "forbidden"
            } else {
                "unauthenticated"
            };
            app.send_request(request).await.assert_error(
                status,
                code,
                None,
                &format!("{method} {uri}: {case}"),
            );
        }
    }
    let pool = app.pool_info(POOL).await;
    assert_eq!(
        pool["params"]["beta"], 200.0,
        "the parameters are unchanged"
    );
    assert_eq!(pool["rounds_queued"], 0, "no round was stored");
}

#[tokio::test]
async fn keys_and_their_hashes_never_reach_the_log_at_any_level() {
    let (log, _capture) = capture_log(tracing::Level::TRACE);

    let app = TestApp::with_settings(settings(&[
        ("MMR__AUTH__READ_KEY_REQUIRED", "true"),
        ("MMR__RATE_LIMIT__WRITES_PER_SECOND", "1"),
        ("MMR__RATE_LIMIT__WRITES_BURST", "3"),
    ]))
    .await;
    let unknown = "an-unknown-key-7f3a";
    let secrets = [ADMIN_KEY, WRITE_KEY, READ_KEY, unknown];
    app.put_pool(POOL, json!({})).await;
    for (i, key) in secrets.into_iter().enumerate() {
        for (method, uri, payload) in [
            (Method::GET, "/v1/pools/main", Payload::Empty),
            (Method::GET, "/v1/pools/main/players/nobody", Payload::Empty),
            (Method::PUT, "/v1/pools/main", Payload::Json(json!({}))),
            (
                Method::POST,
                "/v1/pools/main/rounds",
                Payload::Json(round(&format!("r{i}"), &["a", "b"])),
            ),
            (
                Method::POST,
                "/v1/pools/main/rounds",
                Payload::Json(json!({"id": "bad", "standings": []})),
            ),
            (
                Method::POST,
                "/v1/pools/main/rounds",
                Payload::Raw(Some("application/json"), b"{".to_vec()),
            ),
        ] {
            app.send(method, uri, Some(key), payload).await;
        }
    }
    let statuses: BTreeSet<u16> = [
        app.post_round(POOL, round("once-more", &["a", "b"])).await,
        app.post_round(POOL, round("and-again", &["a", "b"])).await,
    ]
    .iter()
    .map(|r: &TestResponse| r.status.as_u16())
    .collect();
    assert!(
        statuses.contains(&429),
        "a rate-limited request is among those logged: {statuses:?}"
    );
    app.apply_queued(POOL).await;

    let text = log.text();
    assert!(
        text.contains("authenticated") && text.contains("judge") && text.contains("ops"),
        "the log was captured, naming keys by their configured names:\n{text}"
    );
    for key in secrets {
        assert!(
            !text.contains(key),
            "the key `{key}` is in the log:\n{text}"
        );
        let hash = hash_key(key);
        assert!(
            !text.contains(&hash),
            "the hash of `{key}` is in the log:\n{text}"
        );
    }
}

/// A service whose keys may post 1 round a second, 2 at once.
async fn one_write_a_second_burst_of_two() -> TestApp {
    let app = TestApp::with_settings(settings(&[
        ("MMR__RATE_LIMIT__WRITES_PER_SECOND", "1"),
        ("MMR__RATE_LIMIT__WRITES_BURST", "2"),
    ]))
    .await;
    app.create_pool(POOL).await;
    app
}

/// Checks a 429 `rate_limited` asking to wait 1 second; `context` names the case.
#[track_caller]
fn assert_rate_limited(response: &TestResponse, context: &str) {
    response.assert_error(StatusCode::TOO_MANY_REQUESTS, "rate_limited", None, context);
    response.assert_retry_after(1, context);
}

#[tokio::test]
async fn a_key_over_its_write_budget_gets_429_with_retry_after_while_other_keys_are_unaffected() {
    let app = one_write_a_second_burst_of_two().await;
    for id in ["r1", "r2"] {
        app.post_round(POOL, round(id, &["a", "b"]))
            .await
            .assert_status(StatusCode::ACCEPTED, "within the burst");
    }
    let refused = app.post_round(POOL, round("r3", &["a", "b"])).await;
    assert_rate_limited(&refused, "the write key's third round at once");
    assert_eq!(
        app.pool_info(POOL).await["rounds_queued"],
        2,
        "the refused round was not stored"
    );
    app.post(
        "/v1/pools/main/rounds",
        Some(ADMIN_KEY),
        round("r3", &["a", "b"]),
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "the admin key has its own budget");
    app.get("/v1/pools/main")
        .await
        .assert_status(StatusCode::OK, "reads are not limited by default");
    assert_rate_limited(
        &app.post_round(POOL, round("r4", &["a", "b"])).await,
        "the write key is still over its budget",
    );
}

/// Budgets are kept per process (docs/replicas.md, "Limits"): a second process on the same
/// database grants the same key a burst of its own, and refuses beyond it.
#[tokio::test]
async fn each_replica_keeps_its_own_write_budget_for_a_key() {
    let app = one_write_a_second_burst_of_two().await;
    let replica = app.restarted().await;
    for (id, process) in [
        ("r1", &app),
        ("r2", &app),
        ("r3", &replica),
        ("r4", &replica),
    ] {
        process
            .post_round(POOL, round(id, &["a", "b"]))
            .await
            .assert_status(StatusCode::ACCEPTED, "within each process's burst");
    }
    for (id, process) in [("r5", &app), ("r6", &replica)] {
        assert_rate_limited(
            &process.post_round(POOL, round(id, &["a", "b"])).await,
            "over the burst in each process",
        );
    }
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 4);
}

#[tokio::test]
async fn a_budget_refills_at_its_rate_after_the_retry_after_delay() {
    let app = one_write_a_second_burst_of_two().await;
    for id in ["r1", "r2"] {
        app.post_round(POOL, round(id, &["a", "b"])).await;
    }
    let refused = app.post_round(POOL, round("r3", &["a", "b"])).await;
    assert_rate_limited(&refused, "the burst is spent");
    tokio::time::sleep(Duration::from_secs(1)).await;
    app.post_round(POOL, round("r3", &["a", "b"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "one second refills one request");
    assert_rate_limited(
        &app.post_round(POOL, round("r4", &["a", "b"])).await,
        "and only one",
    );
}

#[tokio::test]
async fn the_default_budget_lets_a_backfill_of_a_thousand_rounds_through() {
    let app = TestApp::new().await;
    for i in 0..1000 {
        app.state
            .limits
            .rate_limits
            .check(
                mmr_service::rate_limit::Budget::Write,
                &mmr_service::rate_limit::Client::Key("judge".to_owned()),
            )
            .unwrap_or_else(|wait| panic!("request {i} refused, wait {wait:?}"));
    }
}

/// `GET uri` from `peer`, as the real server sees it, with `key`.
async fn get_from(app: &TestApp, uri: &str, peer: &str, key: Option<&str>) -> TestResponse {
    let peer: SocketAddr = peer.parse().expect("a socket address");
    let mut request = Request::builder().uri(uri).extension(ConnectInfo(peer));
    if let Some(key) = key {
        request = request.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    app.send_request(request.body(Body::empty()).expect("a valid request"))
        .await
}

#[tokio::test]
async fn one_client_keeps_at_most_sixteen_change_feeds_and_streamed_exports_open() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let open = |peer: &str| {
        let peer: SocketAddr = peer.parse().expect("a socket address");
        let request = Request::builder()
            .uri("/v1/pools/main/events")
            .extension(ConnectInfo(peer))
            .body(Body::empty())
            .expect("a valid request");
        app.send_unread(request)
    };
    let mut feeds = Vec::new();
    for port in 0..mmr_service::state::MAX_FEEDS_PER_CLIENT {
        let feed = open(&format!("192.0.2.1:{}", 6000 + port)).await;
        assert_eq!(feed.status(), StatusCode::OK, "feed {port}");
        feeds.push(feed);
    }
    let refused = open("192.0.2.1:7000").await;
    assert_eq!(
        refused.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "one more from the same address"
    );
    assert!(refused.headers().contains_key(header::RETRY_AFTER));
    let export = Request::builder()
        .uri("/v1/pools/main/rounds")
        .header(header::ACCEPT, "application/x-ndjson")
        .extension(ConnectInfo(
            "192.0.2.1:7002".parse::<SocketAddr>().expect("an address"),
        ))
        .body(Body::empty())
        .expect("a valid request");
    assert_eq!(
        app.send_unread(export).await.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "a streamed export takes a feed's place"
    );
    let other = open("192.0.2.2:6000").await;
    assert_eq!(other.status(), StatusCode::OK, "another address");
    // A feed the client dropped gives its place back once the feed next writes.
    drop(feeds.pop());
    app.play([round("r1", &["a", "b"])]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let again = open("192.0.2.1:7001").await;
        if again.status() == StatusCode::OK {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the place was not given back"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_client_beyond_its_turns_at_the_database_waits_while_others_read() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    // The client's turns all held (half of the connections), as by its reads under way.
    let settings = &app.state.settings;
    let whole = settings.database.read_connections as usize;
    let client = Client::address("192.0.2.1".parse().expect("an address"));
    let mut held = Vec::new();
    for _ in 0..settings.server.client_share(whole) {
        held.push(app.state.limits.read_turns.take(&client).await);
    }
    let database_reads = [
        "/v1/pools",
        "/v1/pools/main",
        "/v1/pools/main/players/a/history",
        "/v1/pools/main/rounds/r1",
        "/v1/pools/main/rounds",
        "/v1/pools/main/seasons",
        "/v1/pools/main/seasons/1/leaderboard",
        "/v1/pools/main/leaderboard?as_of=r1",
        "/v1/pools/main/players/a?as_of=r1",
        // Their peak, from their history.
        "/v1/pools/main/players/a",
        "/v1/pools/nowhere/leaderboard",
    ];
    let expected = |uri: &str| {
        if uri.contains("nowhere") {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::OK
        }
    };
    let mut waiting = Vec::new();
    for uri in database_reads {
        let mut read = Box::pin(app.send_from("192.0.2.1:6000", Method::GET, uri, Payload::Empty));
        let early = tokio::time::timeout(Duration::from_millis(50), &mut read).await;
        assert!(early.is_err(), "{uri} waits for the client's turn");
        waiting.push((uri, read));
        let other = app
            .send_from("192.0.2.2:6000", Method::GET, uri, Payload::Empty)
            .await;
        other.assert_status(expected(uri), &format!("{uri} from another address"));
    }
    // Reads of the snapshot wait for no turn.
    for uri in [
        "/v1/pools/main/players/a?peak=false",
        "/v1/pools/main/players?prefix=a",
        "/v1/pools/main/leaderboard",
    ] {
        let answered = app
            .send_from("192.0.2.1:6000", Method::GET, uri, Payload::Empty)
            .await;
        answered.assert_status(StatusCode::OK, uri);
    }
    drop(held);
    // Polled together, as the server's tasks would be: a read that takes a turn twice (the
    // seasons' and the board's) queues again behind the others, which must run meanwhile.
    let mut answers: Vec<Option<TestResponse>> = waiting.iter().map(|_| None).collect();
    let all = std::future::poll_fn(|cx| {
        for ((_, read), answer) in waiting.iter_mut().zip(&mut answers) {
            if answer.is_none() {
                if let std::task::Poll::Ready(answered) =
                    std::future::Future::poll(read.as_mut(), cx)
                {
                    *answer = Some(answered);
                }
            }
        }
        if answers.iter().all(Option::is_some) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    });
    tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .expect("every read answered once the turns are back");
    for ((uri, _), answered) in waiting.iter().zip(answers) {
        answered
            .expect("answered")
            .assert_status(expected(uri), uri);
    }
}

#[tokio::test]
async fn when_configured_anonymous_reads_are_limited_per_client_address() {
    let app = TestApp::with_settings(settings(&[
        ("MMR__RATE_LIMIT__READS_PER_SECOND", "1"),
        ("MMR__RATE_LIMIT__READS_BURST", "1"),
    ]))
    .await;
    app.create_pool(POOL).await;
    let uri = "/v1/pools/main";
    get_from(&app, uri, "192.0.2.1:5000", None)
        .await
        .assert_status(StatusCode::OK, "the first read");
    assert_rate_limited(
        &get_from(&app, uri, "192.0.2.1:5001", None).await,
        "the same address from another port",
    );
    get_from(&app, uri, "192.0.2.1:5002", Some(ADMIN_KEY))
        .await
        .assert_status(
            StatusCode::OK,
            "a read given a key draws on the key's budget",
        );
    assert_rate_limited(
        &get_from(&app, uri, "192.0.2.3:5000", Some(ADMIN_KEY)).await,
        "wherever the key comes from",
    );
    get_from(&app, uri, "192.0.2.2:5000", None)
        .await
        .assert_status(StatusCode::OK, "another address");
    get_from(&app, uri, "[2001:db8::1]:5000", None)
        .await
        .assert_status(StatusCode::OK, "an IPv6 client");
    assert_rate_limited(
        &get_from(&app, uri, "[2001:db8::2]:5000", None).await,
        "another address of the same IPv6 /64",
    );
    for uri in ["/healthz", "/readyz", "/openapi.json"] {
        let response = get_from(&app, uri, "192.0.2.1:5000", None).await;
        assert_ne!(
            response.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{uri} is never limited"
        );
    }
}

#[tokio::test]
async fn when_reads_need_a_key_they_are_limited_per_key_apart_from_writes() {
    let app = TestApp::with_settings(settings(&[
        ("MMR__AUTH__READ_KEY_REQUIRED", "true"),
        ("MMR__RATE_LIMIT__READS_PER_SECOND", "1"),
        ("MMR__RATE_LIMIT__READS_BURST", "1"),
    ]))
    .await;
    app.create_pool(POOL).await;
    let uri = "/v1/pools/main";
    get_from(&app, uri, "192.0.2.1:5000", Some(READ_KEY))
        .await
        .assert_status(StatusCode::OK, "the read key's first read");
    assert_rate_limited(
        &get_from(&app, uri, "192.0.2.2:5000", Some(READ_KEY)).await,
        "the same key from another address",
    );
    get_from(&app, uri, "192.0.2.1:5000", Some(WRITE_KEY))
        .await
        .assert_status(StatusCode::OK, "another key");
    app.post_round(POOL, round("r1", &["a", "b"]))
        .await
        .assert_status(StatusCode::ACCEPTED, "the write budget is separate");
}

/// A request from a browser page at `origin`: a preflight for a POST, or a plain GET.
async fn from_origin(app: &TestApp, origin: &str, preflight: bool) -> TestResponse {
    let request = Request::builder().header(header::ORIGIN, origin);
    let request = if preflight {
        request
            .method(Method::OPTIONS)
            .uri("/v1/pools/main/rounds")
            .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
            .header(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                "authorization,content-type",
            )
    } else {
        request.method(Method::GET).uri("/v1/pools")
    };
    app.send_request(request.body(Body::empty()).expect("a valid request"))
        .await
}

#[tokio::test]
async fn cors_is_off_unless_origins_are_configured() {
    let app = TestApp::new().await;
    for preflight in [true, false] {
        let response = from_origin(&app, "https://scores.example", preflight).await;
        assert!(
            response
                .headers
                .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
                .is_none(),
            "preflight {preflight}: {:?}",
            response.headers
        );
    }
}

#[tokio::test]
async fn a_lone_star_lets_every_origin_in() {
    let mut settings = settings(&[]);
    settings.server.cors_allowed_origins = vec!["*".to_owned()];
    let app = TestApp::with_settings(settings).await;
    for preflight in [true, false] {
        let response = from_origin(&app, "https://anyone.example", preflight).await;
        assert_eq!(
            response.headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN),
            Some(&header::HeaderValue::from_static("*")),
            "preflight {preflight}: {:?}",
            response.headers
        );
    }
}

#[tokio::test]
async fn configured_origins_get_cors_headers_and_other_origins_do_not() {
    let mut settings = settings(&[]);
    settings.server.cors_allowed_origins = vec!["https://scores.example".to_owned()];
    let app = TestApp::with_settings(settings).await;
    for preflight in [true, false] {
        let allowed = from_origin(&app, "https://scores.example", preflight).await;
        assert_eq!(
            allowed.headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN),
            Some(&header::HeaderValue::from_static("https://scores.example")),
            "preflight {preflight}: {:?}",
            allowed.headers
        );
        let other = from_origin(&app, "https://evil.example", preflight).await;
        assert!(
            other
                .headers
                .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
                .is_none(),
            "preflight {preflight}: {:?}",
            other.headers
        );
    }
    let preflight = from_origin(&app, "https://scores.example", true).await;
    let methods = preflight.headers[header::ACCESS_CONTROL_ALLOW_METHODS]
        .to_str()
        .expect("ASCII");
    assert!(methods.contains("POST"), "{methods}");
    let headers = preflight.headers[header::ACCESS_CONTROL_ALLOW_HEADERS]
        .to_str()
        .expect("ASCII")
        .to_ascii_lowercase();
    assert!(
        headers.contains("authorization") && headers.contains("content-type"),
        "{headers}"
    );
}
