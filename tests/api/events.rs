//! `GET /v1/pools/{pool}/events` on both backends: every applied round (and season start and
//! correction) once, in order, as `GET …/rounds/{id}` shows it, resumed after `Last-Event-ID`,
//! and ended when the service stops.

use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use http_body_util::BodyExt;
use serde_json::Value;

use crate::storage_ext::StorageExt;
use crate::support::{round, TestApp, POOL};

backend_tests!(
    a_feed_from_the_start_sends_every_applied_round_then_each_new_one,
    a_feed_resumes_after_last_event_id_and_otherwise_starts_now,
    a_feed_ends_when_the_service_stops,
    a_large_rounds_event_holds_its_first_page_of_results,
);

/// How long a test waits for an event before failing.
const PATIENCE: Duration = Duration::from_secs(10);

/// One event: its id, its type and its data (parsed).
#[derive(Debug)]
struct Event {
    id: String,
    kind: String,
    data: Value,
}

/// The value of the line of `block` that starts with `name`.
fn field(block: &str, name: &str) -> Option<String> {
    block
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .map(str::to_owned)
}

/// The client side of a feed.
struct Feed {
    body: Body,
    buffer: String,
    /// The id the feed's first block sets: where it starts.
    start: String,
}

impl Feed {
    async fn open(app: &TestApp, uri: &str, headers: &[(&str, &str)]) -> Self {
        let response = app.get_stream(uri, headers).await;
        assert_eq!(response.status(), StatusCode::OK, "{uri}");
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        assert_eq!(response.headers()["cache-control"], "no-cache");
        let mut feed = Self {
            body: response.into_body(),
            buffer: String::new(),
            start: String::new(),
        };
        let opening = feed.block().await.expect("an opening block");
        assert!(opening.starts_with("retry: "), "{opening}");
        feed.start = field(&opening, "id: ").expect("the starting id");
        feed
    }

    /// The next block of lines, or `None` when the stream ends.
    async fn block(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                return Some(self.buffer.drain(..end + 2).collect());
            }
            let frame = tokio::time::timeout(PATIENCE, self.body.frame())
                .await
                .expect("an event in time")?
                .expect("the stream reads");
            if let Ok(data) = frame.into_data() {
                self.buffer
                    .push_str(std::str::from_utf8(&data).expect("UTF-8"));
            }
        }
    }

    /// The next event with data (comments skipped), or `None` when the stream ends.
    async fn next(&mut self) -> Option<Event> {
        loop {
            let block = self.block().await?;
            if let Some(data) = field(&block, "data: ") {
                return Some(Event {
                    id: field(&block, "id: ").expect("an id"),
                    kind: field(&block, "event: ").expect("an event type"),
                    data: serde_json::from_str(&data).expect("JSON data"),
                });
            }
        }
    }

    /// The next event, which must be round `id`'s, as the round's own route shows it.
    async fn expect_round(&mut self, app: &TestApp, id: &str) -> i64 {
        self.expect(app, "round", id).await
    }

    /// The next event, which must be of type `kind` (`round`, `season` or `correction`) for line
    /// `id`, as the round route shows it.
    async fn expect(&mut self, app: &TestApp, kind: &str, id: &str) -> i64 {
        let event = self.next().await.expect("an event");
        assert_eq!(event.kind, kind);
        let seq = event.data["seq"].as_i64().expect("a seq");
        assert_eq!(event.id, seq.to_string(), "the event id is the seq");
        let mut shown = app
            .get(&format!("/v1/pools/{POOL}/rounds/{id}"))
            .await
            .assert_status(StatusCode::OK, id)
            .clone();
        shown["seq"] = seq.into();
        assert_eq!(event.data, shown, "round {id}");
        seq
    }
}

async fn a_feed_from_the_start_sends_every_applied_round_then_each_new_one(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"]), round("r2", &["b", "c", "a"])])
        .await;
    let mut feed = Feed::open(&app, "/v1/pools/main/events?after=0", &[]).await;
    let first = feed.expect_round(&app, "r1").await;
    let second = feed.expect_round(&app, "r2").await;
    assert!(first < second);
    app.play([round("r3", &["c", "a"])]).await;
    let third = feed.expect_round(&app, "r3").await;
    assert!(second < third);
    // A failed round between two applied ones is not sent.
    app.queue_round(round("r4", &["a", "d"])).await;
    app.state
        .storage
        .enqueue_round(POOL, "broken", "{\"id\": \"broken\"}", 10)
        .await
        .expect("enqueue directly");
    app.play([round("r5", &["d", "b"])]).await;
    feed.expect_round(&app, "r4").await;
    feed.expect_round(&app, "r5").await;
    // A season start is an event of its own, between the rounds around it.
    app.post(
        "/v1/pools/main/seasons",
        Some(crate::support::ADMIN_KEY),
        serde_json::json!({"id": "s2", "mu_reset": 0.5}),
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "start a season");
    app.play([round("r6", &["a", "b"])]).await;
    feed.expect(&app, "season", "s2").await;
    feed.expect_round(&app, "r6").await;
    // So is a correction: the rounds before it changed, and a client reads them again.
    app.post(
        "/v1/pools/main/corrections",
        Some(crate::support::ADMIN_KEY),
        serde_json::json!({"id": "c1", "action": "rename", "player": "d", "to": "dee"}),
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "rename a player");
    app.play([round("r7", &["dee", "a"])]).await;
    feed.expect(&app, "correction", "c1").await;
    feed.expect_round(&app, "r7").await;
}

async fn a_large_rounds_event_holds_its_first_page_of_results(app: TestApp) {
    app.create_pool(POOL).await;
    let players: Vec<String> = (0..1_001).map(|i| format!("p{i:04}")).collect();
    let names: Vec<&str> = players.iter().map(String::as_str).collect();
    app.play([round("big", &names)]).await;
    let mut feed = Feed::open(&app, "/v1/pools/main/events?after=0", &[]).await;
    let event = feed.next().await.expect("an event");
    assert_eq!(event.data["results"].as_array().map(Vec::len), Some(1_000));
    let page = app.get(&format!("/v1/pools/{POOL}/rounds/big")).await;
    let page = page.assert_status(StatusCode::OK, "the first page");
    assert!(event.data["next_cursor"].is_string());
    assert_eq!(event.data["next_cursor"], page["next_cursor"]);
    assert_eq!(event.data["results"], page["results"]);
}

async fn a_feed_resumes_after_last_event_id_and_otherwise_starts_now(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"]), round("r2", &["b", "c", "a"])])
        .await;
    let mut from_start = Feed::open(&app, "/v1/pools/main/events?after=0", &[]).await;
    let first = from_start.expect_round(&app, "r1").await.to_string();

    // Last-Event-ID wins over `after`.
    let second = from_start.expect_round(&app, "r2").await;
    let mut resumed = Feed::open(
        &app,
        "/v1/pools/main/events?after=0",
        &[("Last-Event-ID", &first)],
    )
    .await;
    resumed.expect_round(&app, "r2").await;

    let mut now = Feed::open(&app, "/v1/pools/main/events", &[]).await;
    assert_eq!(
        now.start,
        second.to_string(),
        "it starts after the last applied round"
    );
    app.play([round("r3", &["c", "a"])]).await;
    now.expect_round(&app, "r3").await;
    resumed.expect_round(&app, "r3").await;

    // A client that lost a feed before any event came resumes from the feed's start.
    let gap = Feed::open(&app, "/v1/pools/main/events", &[]).await;
    let start = gap.start.clone();
    drop(gap);
    app.play([round("r4", &["b", "d"])]).await;
    let mut back = Feed::open(&app, "/v1/pools/main/events", &[("Last-Event-ID", &start)]).await;
    back.expect_round(&app, "r4").await;
}

async fn a_feed_ends_when_the_service_stops(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    let mut feed = Feed::open(&app, "/v1/pools/main/events?after=0", &[]).await;
    feed.expect_round(&app, "r1").await;
    app.state.close_streams();
    assert!(feed.next().await.is_none(), "the stream ends");
}
