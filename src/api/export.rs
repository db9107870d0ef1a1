//! `GET /v1/pools/{pool}/rounds`: the applied rounds in the order they were applied, as they
//! were accepted, so that a pool can be replayed or moved elsewhere. A page at a time as JSON,
//! or with `Accept: application/x-ndjson` every one of them as JSON Lines (the round format
//! `replay` reads and `POST …/rounds` takes), streamed as they are read.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::io::AsyncWriteExt;
use tokio_util::io::ReaderStream;
use tokio_util::sync::CancellationToken;
use utoipa::{IntoParams, ToSchema};

use super::auth::{Authorized, Read};
use super::error::{Error, ErrorResponse};
use super::events::{send, stream_place, StreamPlace};
use super::players::limit;
use super::query::{seq_param, QueryParams};
use super::{pool_of, reads};
use crate::state::AppState;
use crate::storage::{AppliedPage, Storage};

/// Rounds per page when `limit` is not given.
const DEFAULT_LIMIT: u32 = 100;

/// Bytes of round bodies a page holds at most, unless its first round alone is larger: a page
/// of 1,000 of the largest rounds would otherwise be gigabytes.
const PAGE_BYTES: u64 = 4 << 20;

/// Rounds read from the database at a time while streaming.
const STREAM_BATCH: u32 = 500;

/// Bytes of round bodies read at a time while streaming (or one round, if larger): bodies of the
/// largest rounds would otherwise make a batch gigabytes.
const BATCH_BYTES: u64 = 1 << 20;

/// The media type of the streamed form.
pub const NDJSON: &str = "application/x-ndjson";

/// `?after=&limit=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// Only rounds applied after this one (a `seq`; a previous page's `next_after`).
    #[param(minimum = 0)]
    after: Option<i64>,
    /// Most rounds per page (1–1000, default 100); a page also ends once its rounds' bodies
    /// pass 4 MiB. The streamed form ignores it.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

/// One applied round.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportedRound {
    /// Its place in the pool's order.
    pub seq: i64,
    /// The round as accepted (canonical form of the posted body), as stored.
    #[schema(value_type = Object)]
    pub round: Box<RawValue>,
}

/// A page of applied rounds.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportResponse {
    /// The rounds, in the order they were applied.
    pub rounds: Vec<ExportedRound>,
    /// Pass as `after` for the next page; `null` on the last page.
    pub next_after: Option<i64>,
}

/// Whether the client asked for the JSON Lines form: named in `Accept` with a weight (`q`)
/// above 0 and no lower than that of the JSON page (`application/json`, or else the most
/// specific wildcard that covers it). Only a client that names it gets it.
fn wants_ndjson(headers: &HeaderMap) -> bool {
    let mut ndjson: f32 = 0.0;
    // The JSON page's weight, and how specific the range that gave it was.
    let mut json: Option<(u8, f32)> = None;
    let ranges = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','));
    for range in ranges {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let specific = match media.as_str() {
            NDJSON => {
                ndjson = ndjson.max(q);
                continue;
            }
            "application/json" => 2,
            "application/*" => 1,
            "*/*" => 0,
            _ => continue,
        };
        if json.is_none_or(|(best, _)| specific > best) {
            json = Some((specific, q));
        }
    }
    ndjson > 0.0 && json.is_none_or(|(_, q)| ndjson >= q)
}

/// The pool's applied rounds in order, a page at a time, or all of them as JSON Lines with
/// `Accept: application/x-ndjson`.
#[utoipa::path(get, path = "/v1/pools/{pool}/rounds", tag = "rounds",
    params(("pool" = String, Path, description = "Pool name", pattern = r"^[a-z0-9_-]{1,64}$"),
        ExportQuery),
    responses((status = 200, body = ExportResponse,
            description = "A page; with `Accept: application/x-ndjson`, every round as one JSON line"),
        (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse),
        (status = 403, body = ErrorResponse), (status = 404, body = ErrorResponse),
        (status = 429, body = ErrorResponse,
            description = "Streamed form: this client has 16 streams (feeds or exports) open",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, body = ErrorResponse)),
    security((), ("bearer" = [])))]
pub(super) async fn list_rounds(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(query): QueryParams<ExportQuery>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    let limit = limit(query.limit, DEFAULT_LIMIT)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let after = seq_param("after", query.after)?.unwrap_or(0);
    if wants_ndjson(&headers) {
        let place = stream_place(&state, &auth)?;
        // Read the first batch before answering, so that a database error is a proper status.
        // A stream's reads wait for no client's turn: the streams have bounds of their own.
        let first = state
            .reads
            .applied_rounds(pool.name(), after, STREAM_BATCH, BATCH_BYTES)
            .await?;
        let body = stream(
            std::sync::Arc::clone(&state.reads),
            pool.name().to_owned(),
            first,
            place,
            state.closing(),
        );
        let mut response = body.into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(NDJSON));
        return Ok(response);
    }
    let page = reads(&state, auth.client())
        .await
        .applied_rounds(pool.name(), after, limit, PAGE_BYTES)
        .await?;
    let next_after = page.rounds.last().filter(|_| page.more).map(|row| row.seq);
    let rounds = page
        .rounds
        .into_iter()
        .map(|row| {
            let round = RawValue::from_string(row.body).map_err(|error| {
                tracing::error!(error = %error, round.id = row.id, "a stored round does not parse");
                Error::Internal
            })?;
            Ok(ExportedRound {
                seq: row.seq,
                round,
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(Json(ExportResponse { rounds, next_after }).into_response())
}

/// Every applied round from `first` on, one per line, written into a pipe by a task that
/// reads the database a batch at a time; the body reads the other end. A database error
/// midway ends the body early (the client sees a truncated stream, and may resume with
/// `after` set to the last `seq` it received), and so does the service stopping. The task
/// holds the stream's `place` until it ends.
fn stream(
    storage: std::sync::Arc<dyn Storage>,
    pool: String,
    first: AppliedPage,
    place: StreamPlace,
    closing: CancellationToken,
) -> Body {
    let (reader, mut writer) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut batch = first;
        while let Some(last) = batch.rounds.last().map(|row| row.seq) {
            for row in &batch.rounds {
                let line = format!("{}\n", row.body);
                if send(&mut writer, &line, &closing).await.is_err() {
                    // The client went away, or the service is stopping.
                    return;
                }
            }
            if !batch.more {
                break;
            }
            match storage
                .applied_rounds(&pool, last, STREAM_BATCH, BATCH_BYTES)
                .await
            {
                Ok(next) => batch = next,
                Err(error) => {
                    tracing::error!(error = %error, "the round export stopped");
                    return;
                }
            }
        }
        let _ = writer.shutdown().await;
        drop(place);
    });
    Body::from_stream(ReaderStream::new(reader))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_go_to_a_client_that_prefers_them() {
        for (accept, ndjson) in [
            ("application/x-ndjson", true),
            ("application/x-ndjson, */*", true),
            ("application/json;q=0.5, application/x-ndjson", true),
            ("Application/X-NDJSON; q=0.8, text/html", true),
            ("application/x-ndjson;q=0.1, application/json", false),
            ("application/x-ndjson;q=0.1, */*;q=0.2", false),
            ("application/x-ndjson;q=0", false),
            ("application/json, application/x-ndjson;q=0.9", false),
            ("*/*", false),
            ("application/*", false),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_static(accept));
            assert_eq!(wants_ndjson(&headers), ndjson, "{accept}");
        }
        assert!(!wants_ndjson(&HeaderMap::new()));
    }
}
