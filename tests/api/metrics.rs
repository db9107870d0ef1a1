//! `GET /metrics` on both backends: the Prometheus series move as rounds are posted and
//! applied (requests by route and status, rounds applied, rating and commit time, queue depth,
//! players), and the database's connections are reported.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};

use crate::support::{round, TestApp};

backend_tests!(
    the_series_move_as_rounds_are_posted_and_applied,
    methods_of_the_clients_own_are_counted_as_other,
);

/// The value of the series `name` whose labels include every one of `labels`, if any.
fn value(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find(|line| {
            let (series, _) = line.rsplit_once(' ').unwrap_or_default();
            (series == name || series.starts_with(&format!("{name}{{")))
                && labels.iter().all(|label| series.contains(label))
        })
        .and_then(|line| line.rsplit_once(' ')?.1.parse().ok())
}

async fn scrape(app: &TestApp) -> String {
    let (status, content_type, text) = app.get_text("/metrics", "text/plain").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    text
}

async fn the_series_move_as_rounds_are_posted_and_applied(app: TestApp) {
    // The recorder is the process's: a pool of its own keeps this test's series apart.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .subsec_nanos();
    let pool = format!("metrics-{nanos}");
    let label = format!("pool=\"{pool}\"");
    app.create_pool(&pool).await;
    let posted = |text: &str| {
        value(
            text,
            "mmr_http_requests_total",
            &[
                "route=\"/v1/pools/{pool}/rounds\"",
                "method=\"POST\"",
                "status=\"202\"",
            ],
        )
        .unwrap_or(0.0)
    };
    let before = scrape(&app).await;
    assert_eq!(value(&before, "mmr_database_up", &[]), Some(1.0));
    for counter in [
        "mmr_http_connections_refused_total",
        "mmr_http_connections_evicted_total",
    ] {
        assert!(
            value(&before, counter, &[]).is_some(),
            "{counter} is shown before its first event: {before}"
        );
    }

    for id in ["m1", "m2"] {
        app.post_round(&pool, round(id, &["ann", "bob", "cy"]))
            .await
            .assert_status(StatusCode::ACCEPTED, id);
    }
    let queued = scrape(&app).await;
    assert_eq!(
        value(&queued, "mmr_queue_depth", &[&label]),
        Some(2.0),
        "{queued}"
    );
    assert!(posted(&queued) >= posted(&before) + 2.0, "{queued}");

    app.apply_queued(&pool).await;
    let after = scrape(&app).await;
    assert_eq!(value(&after, "mmr_queue_depth", &[&label]), Some(0.0));
    assert_eq!(
        value(&after, "mmr_rounds_applied_total", &[&label]),
        Some(2.0),
        "{after}"
    );
    assert_eq!(
        value(&after, "mmr_rounds_failed_total", &[&label]),
        Some(0.0)
    );
    assert_eq!(value(&after, "mmr_players", &[&label]), Some(3.0));
    for histogram in [
        "mmr_apply_rating_seconds_count",
        "mmr_apply_commit_seconds_count",
    ] {
        assert!(
            value(&after, histogram, &[&label]).is_some_and(|n| n >= 1.0),
            "{histogram}"
        );
    }
    assert!(
        value(
            &after,
            "mmr_http_request_duration_seconds_count",
            &["route=\"/metrics\""]
        )
        .is_some_and(|n| n >= 2.0),
        "{after}"
    );
    assert!(
        value(&after, "mmr_db_connections", &[]).is_some_and(|n| n >= 1.0),
        "{after}"
    );
}

async fn methods_of_the_clients_own_are_counted_as_other(app: TestApp) {
    let others = |text: &str| {
        value(
            text,
            "mmr_http_requests_total",
            &["route=\"/v1/pools\"", "method=\"other\""],
        )
        .unwrap_or(0.0)
    };
    let before = scrape(&app).await;
    // Any token is a method to HTTP: each kept as a label would be a series for good.
    for method in ["BREW", "XYZZY-1", "XYZZY-2"] {
        let request = Request::builder()
            .method(Method::from_bytes(method.as_bytes()).expect("a token"))
            .uri("/v1/pools")
            .body(Body::empty())
            .expect("a request");
        let response = app.send_request(request).await;
        assert_eq!(response.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
    }
    let after = scrape(&app).await;
    assert!(others(&after) >= others(&before) + 3.0, "{after}");
    assert!(
        !after.contains("BREW") && !after.contains("XYZZY"),
        "{after}"
    );
}
