//! Errors no single resource owns: unknown routes, wrong methods, bodies over the limit, the
//! database going away, requests that take too long, and failures inside the service. Each
//! answers with the shared JSON body.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, Method, StatusCode};
use mmr_service::config::Settings;
use mmr_service::state::AppState;
use serde_json::json;
use sqlx::Connection;

use crate::support::{capture_log, round, settings, Payload, TestApp, ADMIN_KEY, POOL, WRITE_KEY};

#[tokio::test]
async fn an_unknown_route_returns_404_route_not_found_as_json() {
    let app = TestApp::new().await;
    let cases = [
        (
            Method::GET,
            "/ui/nothing.js",
            "beside the dashboard's files",
        ),
        (Method::GET, "/v2/pools", "another version"),
        (
            Method::GET,
            "/v1/pools/main/players/a/history/extra",
            "a path too long",
        ),
        (Method::POST, "/v1/nothing", "a POST"),
    ];
    for (method, uri, case) in cases {
        app.send(method, uri, Some(ADMIN_KEY), Payload::Empty)
            .await
            .assert_error(StatusCode::NOT_FOUND, "route_not_found", None, case);
    }
}

#[tokio::test]
async fn a_path_segment_that_is_not_utf8_returns_400_as_json() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    for uri in ["/v1/pools/%FF", "/v1/pools/main/players/%C3%28"] {
        app.get(uri)
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_query", None, uri);
    }
}

#[tokio::test]
async fn a_method_a_route_does_not_take_returns_405_as_json_with_allow() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let cases = [
        (
            Method::POST,
            "/v1/pools/main",
            &["GET", "PUT", "DELETE"][..],
            "posting to a pool",
        ),
        (
            Method::POST,
            "/v1/pools",
            &["GET"][..],
            "posting to the pool list",
        ),
        (
            Method::DELETE,
            "/v1/pools/main/rounds",
            &["GET", "POST"][..],
            "deleting the round list",
        ),
        (
            Method::PUT,
            "/v1/pools/main/rounds/r1",
            &["GET", "DELETE"][..],
            "replacing a round",
        ),
        (
            Method::GET,
            "/v1/pools/main/predictions",
            &["POST"][..],
            "reading predictions",
        ),
        (Method::POST, "/healthz", &["GET"][..], "posting to healthz"),
    ];
    for (method, uri, allowed, case) in cases {
        let response = app
            .send(method, uri, Some(ADMIN_KEY), Payload::Json(json!({})))
            .await;
        response.assert_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            None,
            case,
        );
        let allow: BTreeSet<String> = response
            .headers
            .get(header::ALLOW)
            .unwrap_or_else(|| panic!("{case}: no Allow header"))
            .to_str()
            .expect("an ASCII header")
            .split(',')
            .map(|m| m.trim().to_owned())
            .filter(|m| m != "HEAD")
            .collect();
        let allowed: BTreeSet<String> = allowed.iter().map(|m| (*m).to_owned()).collect();
        assert_eq!(allow, allowed, "{case}");
    }
}

#[tokio::test]
async fn a_body_beyond_what_is_left_of_the_body_budget_returns_503_overloaded_unparsed() {
    let mut settings = settings(&[]);
    settings.server.body_bytes_in_flight = 4096;
    let app = TestApp::with_settings(settings).await;
    app.create_pool(POOL).await;
    let post = |length: usize, body: axum::body::Body| {
        axum::http::Request::builder()
            .method(Method::POST)
            .uri("/v1/pools/main/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {WRITE_KEY}"))
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, length)
            .body(body)
            .expect("a request")
    };
    // A client that declared 3,000 bytes and is still sending them holds that much of 4,096.
    let (_sending, pipe) = tokio::io::duplex(64);
    let trickling = post(
        3000,
        axum::body::Body::from_stream(tokio_util::io::ReaderStream::new(pipe)),
    );
    let mut first = Box::pin(app.send_unread(trickling));
    assert!(
        tokio::time::timeout(Duration::from_millis(100), &mut first)
            .await
            .is_err(),
        "the first body is still being read"
    );
    let body = round("r1", &["a", "b"]).to_string();
    let beyond = post(2000, axum::body::Body::from(format!("{body:2000}")));
    app.send_request(beyond).await.assert_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        None,
        "2,000 bytes beyond the 1,096 left",
    );
    let within = post(1000, axum::body::Body::from(format!("{body:1000}")));
    app.send_request(within)
        .await
        .assert_status(StatusCode::ACCEPTED, "1,000 bytes within them");
    drop(first);
    let after = post(
        2000,
        axum::body::Body::from(format!("{:2000}", round("r2", &["a", "b"]))),
    );
    app.send_request(after)
        .await
        .assert_status(StatusCode::ACCEPTED, "the budget came back");
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 2);
}

#[tokio::test]
async fn a_body_over_the_limit_returns_413_on_every_route_that_takes_one() {
    let mut settings = settings(&[]);
    settings.server.body_limit_bytes = 256;
    let app = TestApp::with_settings(settings).await;
    app.create_pool(POOL).await;
    let filler = "x".repeat(300);
    let cases = [
        (
            Method::PUT,
            "/v1/pools/other",
            json!({"variant": filler}),
            "a pool",
        ),
        (
            Method::POST,
            "/v1/pools/main/rounds",
            round(&filler, &["a", "b"]),
            "a round",
        ),
        (
            Method::POST,
            "/v1/pools/main/predictions",
            json!({"entrants": [{"players": [filler]}, {"players": ["b"]}]}),
            "a prediction",
        ),
        (
            Method::POST,
            "/v1/pools/main/match-quality",
            json!({"sides": [[filler], ["b"]]}),
            "a match",
        ),
    ];
    for (method, uri, body, case) in cases {
        app.send(method, uri, Some(ADMIN_KEY), Payload::Json(body))
            .await
            .assert_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                None,
                case,
            );
    }
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 0);
    app.get("/v1/pools/other").await.assert_error(
        StatusCode::NOT_FOUND,
        "pool_not_found",
        None,
        "no pool was created",
    );
}

#[tokio::test]
async fn a_database_that_does_not_answer_returns_503_database_unavailable_with_retry_after() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.state.storage.close().await;
    app.state.reads.close().await;
    let cases = [
        (Method::GET, "/v1/pools", None, None, "listing pools"),
        (Method::GET, "/v1/pools/main", None, None, "reading a pool"),
        (
            Method::POST,
            "/v1/pools/main/rounds",
            Some(WRITE_KEY),
            Some(round("r1", &["a", "b"])),
            "posting a round",
        ),
        (
            Method::GET,
            "/v1/pools/main/rounds/r1",
            None,
            None,
            "reading a round",
        ),
        (
            Method::PUT,
            "/v1/pools/other",
            Some(ADMIN_KEY),
            Some(json!({})),
            "creating a pool",
        ),
    ];
    for (method, uri, key, body, case) in cases {
        let payload = body.map_or(Payload::Empty, Payload::Json);
        let response = app.send(method, uri, key, payload).await;
        response.assert_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable",
            None,
            case,
        );
        assert_eq!(response.headers[header::RETRY_AFTER], "1", "{case}");
    }
    assert!(
        app.state.pools.get("other").is_none(),
        "no pool appeared in memory"
    );
}

#[tokio::test]
async fn a_request_that_takes_longer_than_the_timeout_returns_503_timeout() {
    let mut settings = settings(&[]);
    settings.server.request_timeout_secs = 1;
    let app = TestApp::with_settings(settings).await;
    app.create_pool(POOL).await;
    let pool = app.state.pools.get(POOL).expect("the pool");
    // A parameter change waits for the pool's turn, which the worker would hold while
    // applying a long round; here the test holds it.
    let turn = pool.turn().await;
    let response = app.put_pool(POOL, json!({"beta": 100.0})).await;
    response.assert_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "timeout",
        None,
        "a change stuck behind the worker",
    );
    assert_eq!(response.headers[header::RETRY_AFTER], "1");
    drop(turn);
    assert_eq!(
        app.pool_info(POOL).await["params"]["beta"],
        200.0,
        "the timed-out change was not made"
    );
}

/// A pool where one round was played, after `sql` ran on its database beside the service.
async fn played_then_altered(sql: &str) -> TestApp {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    alter(&app, sql).await;
    app
}

/// Runs `sql` on `app`'s SQLite database beside the service.
async fn alter(app: &TestApp, sql: &str) {
    let mut connection = sqlx::SqliteConnection::connect(&app.state.settings.database.url)
        .await
        .expect("open the database beside the service");
    sqlx::query(sql)
        .execute(&mut connection)
        .await
        .expect("alter the database");
    connection.close().await.expect("close");
}

/// Creates pool `broken` with one round applied, then puts a player in a league it does not
/// have: a pool another process created that this one cannot load.
async fn break_a_pool(app: &TestApp) {
    app.create_pool("broken").await;
    let posted = app.post_round("broken", round("b1", &["a", "b"])).await;
    posted.assert_status(StatusCode::ACCEPTED, "queued");
    app.apply_queued("broken").await;
    alter(
        app,
        "UPDATE players SET league = 'nowhere', division = 1 WHERE pool = 'broken'",
    )
    .await;
}

/// Asserts that pool `broken` answers 500 `internal` on `app`.
async fn fails_to_load(app: &TestApp, context: &str) {
    app.get("/v1/pools/broken").await.assert_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        None,
        context,
    );
}

/// A pool another process created that this one cannot load (here: a player in a league the
/// pool does not have) answers 500 on its own routes, and is listed without its players, in its
/// place by name, rather than failing the list.
#[tokio::test]
async fn a_pool_that_cannot_be_loaded_fails_its_own_routes_not_the_list() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    let here = app.restarted().await;
    break_a_pool(&app).await;
    fails_to_load(&here, "the pool's own route").await;
    let list = here.get("/v1/pools").await;
    let pools = &list.assert_status(StatusCode::OK, "the list")["pools"];
    assert_eq!(pools[0]["name"], "broken");
    assert_eq!(pools[0]["players"], serde_json::Value::Null);
    assert_eq!(pools[0]["rounds_applied"], 1);
    assert_eq!(pools[1]["name"], POOL);
    assert_eq!(pools[1]["players"], 2);
}

/// A pool that failed to load is not read again at every request that names it (each load
/// reads the whole pool): repaired in the database, it keeps answering 500 on this replica until
/// the retry time, while a replica started after the repair loads it.
#[tokio::test]
async fn a_pool_that_failed_to_load_is_not_read_again_at_each_request() {
    let app = TestApp::new().await;
    let here = app.restarted().await;
    break_a_pool(&app).await;
    fails_to_load(&here, "the first load").await;
    alter(
        &app,
        "UPDATE players SET league = NULL, division = NULL WHERE pool = 'broken'",
    )
    .await;
    fails_to_load(&here, "answered from memory").await;
    let list = here.get("/v1/pools").await;
    let pools = &list.assert_status(StatusCode::OK, "the list")["pools"];
    assert_eq!(pools[0]["players"], serde_json::Value::Null);
    let later = app.restarted().await;
    let loaded = later.get("/v1/pools/broken").await;
    assert_eq!(
        loaded.assert_status(StatusCode::OK, "repaired")["players"],
        2
    );
}

/// Looking for pools another process created goes past one this process cannot load, while a
/// start with such a pool fails.
#[tokio::test]
async fn a_pool_that_cannot_be_loaded_keeps_no_other_new_pool_from_loading() {
    let app = TestApp::new().await;
    let here = app.restarted().await;
    break_a_pool(&app).await;
    // Pools are looked for by name: `later` comes after `broken`.
    app.create_pool("later").await;
    here.state
        .load_new_pools()
        .await
        .expect("a pool that cannot load is no outage");
    assert!(here.state.pools.get("broken").is_none());
    assert!(here.state.pools.get("later").is_some());
    let starting = AppState::new(
        Arc::clone(&app.state.storage),
        Settings::clone(&app.state.settings),
    )
    .expect("the state");
    assert!(starting.load_pools(false).await.is_err());
}

#[tokio::test]
async fn a_failure_inside_the_service_returns_500_internal_revealing_nothing() {
    let app = played_then_altered("UPDATE history SET rank = -7").await;
    for uri in [
        "/v1/pools/main/rounds/r1",
        "/v1/pools/main/players/a/history",
    ] {
        let response = app.get(uri).await;
        response.assert_error(StatusCode::INTERNAL_SERVER_ERROR, "internal", None, uri);
        let message = response.body["error"]["message"]
            .as_str()
            .expect("a message");
        assert!(
            !message.contains("rank") && !message.contains("-7"),
            "{uri}: the cause stays in the log: {message}"
        );
    }
}

#[tokio::test]
async fn an_sql_error_is_500_internal_not_an_outage_to_retry() {
    // A schema the code does not expect: every statement on the table is an SQL error, as a
    // bug in a query would be.
    let app = played_then_altered("ALTER TABLE history RENAME TO history_elsewhere").await;
    let response = app.get("/v1/pools/main/players/a/history").await;
    response.assert_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        None,
        "a missing table",
    );
    assert!(
        response.headers.get(header::RETRY_AFTER).is_none(),
        "a bug is not an outage: no Retry-After"
    );
}

#[tokio::test]
async fn every_answer_carries_a_request_id_and_keeps_a_plain_one_from_the_client() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let mut seen = BTreeSet::new();
    for (method, uri, case) in [
        (Method::GET, "/healthz", "a health check"),
        (Method::GET, "/v1/pools/main", "a read"),
        (Method::GET, "/nowhere", "an unknown route"),
        (Method::DELETE, "/v1/pools/main", "a wrong method"),
    ] {
        let response = app.send(method, uri, None, Payload::Empty).await;
        let id = response
            .headers
            .get("x-request-id")
            .and_then(|id| id.to_str().ok())
            .unwrap_or_else(|| panic!("{case}: no x-request-id"));
        let (prefix, counter) = id.split_once('-').expect("prefix-counter");
        assert!(
            prefix.len() == 16 && counter.parse::<u64>().is_ok(),
            "{case}: this process's prefix and a counter, not {id}"
        );
        assert!(seen.insert(id.to_owned()), "{case}: ids are not reused");
    }
    for (sent, kept) in [
        ("job-42.retry:3", true),
        ("has spaces", false),
        (&*"x".repeat(65), false),
    ] {
        let request = axum::http::Request::builder()
            .uri("/healthz")
            .header("x-request-id", sent)
            .body(axum::body::Body::empty())
            .expect("a request");
        let response = app.send_request(request).await;
        let echoed = response.headers.get("x-request-id").expect("an id");
        assert_eq!(echoed == sent, kept, "{sent:?} answered with {echoed:?}");
    }
}

#[tokio::test]
async fn the_log_lines_of_a_request_carry_its_id() {
    let (log, _capture) = capture_log(tracing::Level::DEBUG);
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let request = axum::http::Request::builder()
        .method(Method::POST)
        .uri("/v1/pools/main/rounds")
        .header(header::AUTHORIZATION, format!("Bearer {WRITE_KEY}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-request-id", "trace-me-7")
        .body(axum::body::Body::from(round("r1", &["a", "b"]).to_string()))
        .expect("a request");
    assert_eq!(app.send_request(request).await.status, StatusCode::ACCEPTED);
    let text = log.text();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("trace-me-7")).collect();
    assert!(
        lines.iter().any(|l| l.contains("authenticated")),
        "the request's log lines name its id:\n{text}"
    );
}

#[tokio::test]
async fn a_body_over_its_routes_limit_is_413_naming_the_limit() {
    let app = TestApp::with_settings(settings(&[("MMR__SERVER__BODY_LIMIT_BYTES", "1000")])).await;
    app.create_pool(POOL).await;
    let players: Vec<String> = (0..100).map(|i| format!("player-{i}")).collect();
    let players: Vec<&str> = players.iter().map(String::as_str).collect();
    let large = round("r1", &players).to_string();
    assert!(large.len() > 1000);
    let post = |declared: bool| {
        let mut request = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/v1/pools/main/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {WRITE_KEY}"))
            .header(header::CONTENT_TYPE, "application/json");
        if declared {
            request = request.header(header::CONTENT_LENGTH, large.len());
        }
        request
            .body(axum::body::Body::from(large.clone()))
            .expect("a request")
    };
    // Refused on its declared length by the limit's layer, or as it is read.
    for declared in [true, false] {
        let response = app.send_request(post(declared)).await;
        response.assert_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            None,
            &format!("declared: {declared}"),
        );
        assert_eq!(
            response.body["error"]["message"],
            "the body is larger than the 1000 bytes this route takes"
        );
    }

    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let sides = format!(r#"{{"sides": [{}]}}"#, vec!["[]"; 3 << 20].join(","));
    let response = app
        .send(
            Method::POST,
            "/v1/pools/main/match-quality",
            None,
            Payload::Raw(Some("application/json"), sides.into_bytes()),
        )
        .await;
    response.assert_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        None,
        "a compute route's body",
    );
    assert_eq!(
        response.body["error"]["message"],
        "the body is larger than the 4194304 bytes this route takes"
    );
}
