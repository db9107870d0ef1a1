//! `/v1/pools/{pool}/rounds`: post a round's results (write key), read its status and results.
//! A round is validated completely before anything is stored; once the 202 is sent it is in
//! the database, queued.

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Authorized, Read, Write};
use super::error::{Error, ErrorResponse, Resource};
use super::json::json_bytes;
use super::query::{limit, QueryParams};
use super::queueing::{
    checked, located, round_url, Checked, Queued, RoundStatusResponse, CHECK_TRIES,
};
use super::round_path::RoundPath;
use super::round_results::{self, read_round, RoundResponse, DEFAULT_RESULTS};
use super::waiting::{settle, WaitQuery};
use super::{pool_of, reads};
use crate::state::{AppState, Systems};
use crate::storage::{Enqueued, EntryKind, NewEntry};
use crate::wire::RoundRequest;

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_round, super::export::list_rounds))
        .routes(routes!(get_round))
}

/// `?limit=&cursor=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RoundQuery {
    /// Results per page (1–1000, default 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Start after the result this cursor names (a previous page's `next_cursor`).
    cursor: Option<String>,
}

/// Posts the results of a round. The round is validated, stored durably and queued; the
/// worker applies the pool's rounds one at a time in the order they were accepted. Posting
/// the same id again with the same content returns its status (200); with other content, 409.
#[utoipa::path(post, path = "/v1/pools/{pool}/rounds", tag = "rounds",
    params(WaitQuery),
    request_body = RoundRequest,
    responses(
        (status = 202, body = RoundStatusResponse, description = "Accepted and queued",
            headers(("Location" = String, description = "The round's URL"))),
        (status = 200, body = RoundStatusResponse, description = "Posted before with the same content; with `wait=applied`, applied or failed"), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse),
        (status = 503, body = ErrorResponse, description = "Queue full or database unavailable",
            headers(("Retry-After" = u64, description = "Seconds to wait")))),
    security(("bearer" = [])))]
async fn create_round(
    auth: Authorized<Write>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(wait): QueryParams<WaitQuery>,
    request: Request,
) -> Result<Response, Error> {
    let deadline = wait.deadline(&state)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let posted = json_bytes(request, &state).await?;
    let mut systems = Systems::now(&pool);
    let mut tries = 0;
    let (id, outcome) = loop {
        // Parsing a large round is CPU work: keep it off the async runtime's threads.
        let (body, against) = (posted.clone(), systems.clone());
        let Checked { id, body, key } =
            tokio::task::spawn_blocking(move || validate(&body, &against))
                .await
                .map_err(|join| {
                    tracing::error!(error = %join, "round validation panicked");
                    Error::Internal
                })??;
        let entry = NewEntry {
            id: &id,
            kind: EntryKind::Round,
            body: &body,
            key: &key,
            audit: None,
        };
        tries += 1;
        match state.enqueue(&pool, entry, Some(systems.against())).await? {
            Enqueued::Changed if tries < CHECK_TRIES => {
                systems = state.systems_stored(&pool).await?
            }
            outcome => break (id, outcome),
        }
    };
    let queued = Queued::of(outcome, &id)?;
    let headers = match queued.position {
        Some(position) => {
            tracing::info!(round.id = ?id, position, "round accepted");
            located(&round_url(pool.name(), &id))
        }
        None => HeaderMap::new(),
    };
    let mut answer = [RoundStatusResponse {
        id,
        status: queued.stored.as_str(),
        position: queued.position,
        error: None,
    }];
    let mut status = queued.status;
    if let Some(deadline) = deadline {
        if settle(&state, auth.client(), &pool, &mut answer, deadline).await? {
            status = StatusCode::OK;
        }
    }
    let [body] = answer;
    Ok((status, headers, Json(body)).into_response())
}

/// Checks a round body completely, for each of the pool's rating `systems` too, and returns it
/// ready to queue: its id, its canonical JSON (what is stored) and what a re-post is compared
/// by.
fn validate(body: &[u8], systems: &Systems) -> Result<Checked, Error> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| Error::MalformedJson(e.to_string()))?;
    checked(&value, systems, "")
}

/// A round's status and, once applied, a page of its results (best rank first).
#[utoipa::path(get, path = "/v1/pools/{pool}/rounds/{id}", tag = "rounds",
    params(("id" = String, Path, description = "Round id: the rest of the path, `/` included"), RoundQuery),
    responses((status = 200, body = RoundResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
pub(super) async fn get_round(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    RoundPath { pool, id }: RoundPath,
    QueryParams(query): QueryParams<RoundQuery>,
) -> Result<Json<RoundResponse>, Error> {
    let after = query
        .cursor
        .as_deref()
        .map(round_results::decode_cursor)
        .transpose()?;
    let limit = limit(query.limit, DEFAULT_RESULTS)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let reads = reads(&state, auth.client()).await;
    let record = read_round(&state, auth.client(), &*reads, &pool, &id, after, limit)
        .await?
        .ok_or(Error::NotFound {
            what: Resource::Round,
            id,
        })?;
    Ok(Json(RoundResponse::of(record, &pool.read())))
}
