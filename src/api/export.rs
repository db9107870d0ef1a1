//! `GET /v1/pools/{pool}/rounds`: the applied rounds in the order they were applied, as they
//! were accepted, so that a pool can be replayed or moved elsewhere. A page at a time as JSON,
//! or with `Accept: application/x-ndjson` every one of them as JSON Lines (the round format
//! `replay` reads and `POST …/rounds` takes) after a line with the pool's system, parameters
//! and display settings, streamed as they are read, of one state of the pool: a correction
//! applied meanwhile ends the stream with an error.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http_body::Frame;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWriteExt, DuplexStream, ReadBuf};
use tokio_util::sync::CancellationToken;
use utoipa::{IntoParams, ToSchema};

use super::auth::{Authorized, Read};
use super::error::{Error, ErrorResponse, Resource};
use super::query::{limit, seq_param, QueryParams};
use super::streams::{send, stream_place, StreamPlace};
use super::{pool_of, reads};
use crate::state::AppState;
use crate::storage::{AppliedPage, Storage};
use crate::wire::PoolLine;

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
    params(ExportQuery),
    responses((status = 200, body = ExportResponse,
            description = "A page; with `Accept: application/x-ndjson`, every round as one JSON line, after the pool's line `{\"pool\": {name, system, params, display}}` when `after` is not given (a correction applied meanwhile ends the stream with an `export_outdated` error line and an incomplete body)"), (status = 404, body = ErrorResponse),
        (status = 429, body = ErrorResponse,
            description = "Streamed form: this client has 16 streams (feeds or exports) open",
            headers(("Retry-After" = u64, description = "Seconds to wait")))),
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
        let corrected = state.reads.last_correction(pool.name()).await?;
        // Read after the correction count, so that a correction that changes them outdates the
        // export. Only an export from the start opens with the pool's line.
        let opening = if after == 0 {
            Some(pool_line(&state, pool.name()).await?)
        } else {
            None
        };
        let first = state
            .reads
            .applied_rounds(pool.name(), after, STREAM_BATCH, BATCH_BYTES)
            .await?;
        let body = stream(
            Arc::clone(&state.reads),
            Export {
                pool: pool.name().to_owned(),
                corrected,
            },
            opening,
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

/// The line an export from the start opens with: the pool's name, system, parameters and
/// display settings as stored.
async fn pool_line(state: &AppState, pool: &str) -> Result<String, Error> {
    let info = state
        .reads
        .pool(pool)
        .await?
        .ok_or_else(|| Error::NotFound {
            what: Resource::Pool,
            id: pool.to_owned(),
        })?;
    let line = PoolLine {
        name: info.name,
        system: info.params,
        display: info.display,
    };
    line.to_line().map(|line| line + "\n").map_err(|error| {
        tracing::error!(error = %error, "a pool's line does not serialize");
        Error::Internal
    })
}

/// What a streamed export reads: the pool, and its newest applied correction when the export
/// began, which must still be the newest once each batch is read.
struct Export {
    pool: String,
    corrected: Option<i64>,
}

/// The line that ends an export a correction made stale, before the connection is cut.
const STALE_EXPORT: &str = concat!(
    r#"{"error": {"code": "export_outdated", "message": "a correction was applied to the pool "#,
    r#"while it was exported: the lines sent would mix two states of it; export it again"}}"#,
    "\n"
);

/// The `opening` line, then every applied round from `first` on, one per line, written into a
/// pipe by a task that reads the database a batch at a time; the body reads the other end. The export is of one
/// state of the pool: rounds applied meanwhile are appended as in the pool, and a correction
/// applied meanwhile (which rewrites or voids rounds already sent) ends it with an
/// `export_outdated` error line. That, a database error midway and the service stopping end
/// the body without the last chunk of its chunked encoding, so the client sees an incomplete
/// answer, never one that looks whole (it may resume with `after` set to the last `seq` it
/// received). The task holds the stream's `place` until it ends.
fn stream(
    storage: std::sync::Arc<dyn Storage>,
    export: Export,
    opening: Option<String>,
    first: AppliedPage,
    place: StreamPlace,
    closing: CancellationToken,
) -> Body {
    let (reader, mut writer) = tokio::io::duplex(64 * 1024);
    let failed = Arc::new(AtomicBool::new(false));
    let failing = Arc::clone(&failed);
    tokio::spawn(async move {
        let ended = async {
            if let Some(line) = &opening {
                send(&mut writer, line, &closing).await?;
            }
            let mut batch = first;
            loop {
                // After the batch was read: a correction applied before any of its rows were
                // read shows here.
                if storage.last_correction(&export.pool).await? != export.corrected {
                    tracing::info!(pool = export.pool, "an export outdated by a correction");
                    send(&mut writer, STALE_EXPORT, &closing).await?;
                    return Err(ExportEnded::Outdated);
                }
                let Some(last) = batch.rounds.last().map(|row| row.seq) else {
                    return Ok(());
                };
                for row in &batch.rounds {
                    // The client went away, or the service is stopping.
                    send(&mut writer, &format!("{}\n", row.body), &closing).await?;
                }
                if !batch.more {
                    return Ok(());
                }
                batch = storage
                    .applied_rounds(&export.pool, last, STREAM_BATCH, BATCH_BYTES)
                    .await?;
            }
        }
        .await;
        match ended {
            Ok(()) => {
                let _ = writer.shutdown().await;
            }
            Err(ended) => {
                if let ExportEnded::Database(error) = &ended {
                    tracing::error!(error = %error, "the round export stopped");
                }
                failing.store(true, Ordering::Release);
            }
        }
        drop((writer, place));
    });
    Body::new(PipeBody {
        reader,
        failed,
        done: false,
    })
}

/// Why an export ended before its last round.
#[derive(Debug)]
enum ExportEnded {
    /// A correction was applied meanwhile.
    Outdated,
    /// The database failed.
    Database(crate::storage::Error),
    /// The client went away, or the service is stopping.
    Gone,
}

impl From<crate::storage::Error> for ExportEnded {
    fn from(error: crate::storage::Error) -> Self {
        Self::Database(error)
    }
}

impl From<std::io::Error> for ExportEnded {
    fn from(_: std::io::Error) -> Self {
        Self::Gone
    }
}

/// The body of a streamed export: what its task writes into the pipe and then, if the task
/// ended before the export's end, an error, on which the connection ends without the chunked
/// body's last chunk.
struct PipeBody {
    reader: DuplexStream,
    failed: Arc<AtomicBool>,
    done: bool,
}

/// Bytes read from the pipe at a time.
const PIPE_READ: usize = 16 << 10;

impl http_body::Body for PipeBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let mut buffer = [0u8; PIPE_READ];
        let mut read = ReadBuf::new(&mut buffer);
        match Pin::new(&mut self.reader).poll_read(cx, &mut read) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(error)) => Poll::Ready(Some(Err(error))),
            Poll::Ready(Ok(())) if read.filled().is_empty() => {
                self.done = true;
                if self.failed.load(Ordering::Acquire) {
                    Poll::Ready(Some(Err(std::io::Error::other(
                        "the export ended before its last round",
                    ))))
                } else {
                    Poll::Ready(None)
                }
            }
            Poll::Ready(Ok(())) => {
                Poll::Ready(Some(Ok(Frame::data(Bytes::copy_from_slice(read.filled())))))
            }
        }
    }
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
