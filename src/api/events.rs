//! `GET /v1/pools/{pool}/events`: a change feed of the pool's applied rounds as server-sent
//! events. Each event is one applied round (event `round`), season start (event `season`, no
//! results) or correction (event `correction`, no results: the rounds before it changed), in
//! the order they were applied, with its entrants' changes (the body `GET
//! …/rounds/{id}` gives, plus its `seq`: the first 1,000, and a cursor to page through the rest
//! of a larger round, so that no event holds a million results); its event id is the
//! round's `seq`, so a client that reconnects with `Last-Event-ID` misses nothing and sees
//! nothing twice. Events are read from the database, never from memory: a round applied by
//! another process sharing it is sent too, within one queue poll interval.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tokio::io::DuplexStream;
use tokio_util::io::ReaderStream;
use tokio_util::sync::CancellationToken;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Authorized, Read};
use super::error::{Error, ErrorResponse};
use super::query::{not_a_seq, seq_param, QueryParams};
use super::round_results::{read_round, RoundResponse, DEFAULT_RESULTS};
use super::streams::{send, stream_place, KEEP_ALIVE};
use super::{pool_of, reads};
use crate::state::AppState;

/// The media type of the feed.
const EVENT_STREAM: &str = "text/event-stream";

/// The header a reconnecting client sends with the last id it received.
const LAST_EVENT_ID: &str = "last-event-id";

/// Rounds listed from the database at a time (each is then read with its first page of
/// results).
const BATCH: u32 = 100;

/// How long a feed waits before it reads a large round again when every build of a round's
/// order was taken.
const OVERLOADED_WAIT: Duration = Duration::from_millis(200);

/// How long a client should wait before reconnecting (the feed's `retry:` field), in ms.
const RETRY_MS: u64 = 2_000;

/// `?after=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Start after this `seq` (0: from the first applied round). Without it and without
    /// `Last-Event-ID`, the feed starts after the last round applied so far.
    #[param(minimum = 0)]
    after: Option<i64>,
}

/// One event of the feed: an applied round, as `GET …/rounds/{id}` shows it: its first 1,000
/// results, and a `next_cursor` for the rest when it has more.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoundEvent {
    /// The round's place in the pool's order; also the event's id.
    pub seq: i64,
    /// The round.
    #[serde(flatten)]
    pub round: RoundResponse,
}

/// The route of this module.
pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(events))
}

/// The pool's applied lines as server-sent events (`event: round`, `season` or `correction`,
/// `id:` the line's `seq`, `data:` a [`RoundEvent`]), first those after the starting point, then each as it is
/// applied. Resumes after `Last-Event-ID` (or `?after=`); the stream stays open, with a
/// comment line every 15 s, until the client leaves or the service stops.
#[utoipa::path(get, path = "/v1/pools/{pool}/events", tag = "rounds",
    params(("Last-Event-ID" = Option<i64>, Header, description = "Resume after this round `seq` \
            (takes precedence over `after`)"),
        EventsQuery),
    responses((status = 200, content_type = "text/event-stream", body = RoundEvent,
            description = "An endless stream of `event: round`, `season` and `correction` events, \
                each `data:` a RoundEvent"), (status = 404, body = ErrorResponse),
        (status = 429, body = ErrorResponse, description = "This client has 16 feeds open",
            headers(("Retry-After" = u64, description = "Seconds to wait")))),
    security((), ("bearer" = [])))]
async fn events(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(query): QueryParams<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    let pool = pool_of(&state, auth.client(), &pool).await?;
    seq_param("after", query.after)?;
    // Subscribed before the starting point is read, so no round falls in between.
    let changes = pool.changes();
    let after = match last_event_id(&headers)?.or(query.after) {
        Some(after) => after,
        None => reads(&state, auth.client())
            .await
            .last_applied_seq(pool.name())
            .await?
            .unwrap_or(0),
    };
    // A dropped feed frees its place when it next writes: within one keep-alive.
    let place = stream_place(&state, &auth)?;
    let (reader, writer) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        feed(state, pool, after, changes, writer).await;
        drop(place);
    });
    let mut response = Body::from_stream(ReaderStream::new(reader)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies such as nginx would otherwise hold events back in their buffers.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// The `Last-Event-ID` header as a `seq`, if sent.
fn last_event_id(headers: &HeaderMap) -> Result<Option<i64>, Error> {
    let Some(value) = headers.get(LAST_EVENT_ID) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    match text.parse::<i64>() {
        Ok(seq) if seq >= 0 => Ok(Some(seq)),
        _ => Err(not_a_seq("Last-Event-ID", text)),
    }
}

/// Writes the feed into `writer` until the client leaves, the service stops, or the database
/// fails (the client then reconnects with the last id it got).
async fn feed(
    state: AppState,
    pool: std::sync::Arc<crate::pools::Pool>,
    mut after: i64,
    mut changes: tokio::sync::watch::Receiver<u64>,
    mut writer: DuplexStream,
) {
    let closing = state.closing();
    let poll = Duration::from_millis(state.settings.queue.poll_interval_ms);
    // The starting point as the last event id, so that a client which reconnects before any
    // round arrives resumes from there rather than from whatever is new by then.
    let opening = format!("retry: {RETRY_MS}\nid: {after}\n\n");
    if send(&mut writer, &opening, &closing).await.is_err() {
        return;
    }
    let mut quiet = tokio::time::Instant::now();
    loop {
        match send_next(&state, &pool, &mut after, &mut writer, &closing).await {
            Ok(0) => {}
            Ok(_) => {
                quiet = tokio::time::Instant::now();
                continue;
            }
            Err(error) => {
                tracing::debug!(error = %error, pool = pool.name(), "a change feed ended");
                return;
            }
        }
        if quiet.elapsed() >= KEEP_ALIVE {
            if send(&mut writer, ": keep-alive\n\n", &closing)
                .await
                .is_err()
            {
                return;
            }
            quiet = tokio::time::Instant::now();
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(poll) => {}
            () = closing.cancelled() => return,
        }
    }
}

/// Sends the applied rounds after `after` (at most [`BATCH`]), one event at a time, advancing
/// `after`; how many there were.
async fn send_next(
    state: &AppState,
    pool: &crate::pools::Pool,
    after: &mut i64,
    writer: &mut DuplexStream,
    closing: &CancellationToken,
) -> anyhow::Result<usize> {
    // The feed's reads wait for no client's turn: the feeds have bounds of their own.
    let rows = state.reads.applied_ids(pool.name(), *after, BATCH).await?;
    let current = pool.read();
    for row in &rows {
        // Listed as applied, it is stored (a correction may have voided it since: then it is
        // sent as it stands now).
        let record = loop {
            match read_round(
                state,
                None,
                &*state.reads,
                pool,
                &row.id,
                None,
                DEFAULT_RESULTS,
            )
            .await
            {
                // Every build of a large round's order is taken: the feed waits for one.
                Err(Error::Overloaded) => tokio::select! {
                    () = tokio::time::sleep(OVERLOADED_WAIT) => {}
                    () = closing.cancelled() => anyhow::bail!("closing"),
                },
                read => break read.map_err(|error| anyhow::anyhow!("{error:?}"))?,
            }
        };
        if let Some(record) = record {
            let event = RoundEvent {
                seq: row.seq,
                round: RoundResponse::of(record, &current),
            };
            let kind = event.round.kind;
            let data = serde_json::to_string(&event)?;
            let text = format!("id: {}\nevent: {kind}\ndata: {data}\n\n", row.seq);
            send(writer, &text, closing).await?;
        }
        *after = row.seq;
    }
    Ok(rows.len())
}
