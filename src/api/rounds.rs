//! `/v1/pools/{pool}/rounds`: post a round's results (write key), read its status and results.
//! A round is validated completely before anything is stored; once the 202 is sent it is in
//! the database, queued.

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::Schema;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Authorized, Read, Write};
use super::error::{Error, ErrorResponse};
use super::json::json_bytes;
use super::query::{limit, QueryParams};
use super::queueing::{
    checked, located, one_of_strings, round_url, status_schema, Checked, Queued,
    RoundStatusResponse, CHECK_TRIES,
};
use super::round_path::RoundPath;
use super::round_results::read_round;
use super::shown::{rfc3339, ShownChange};
use super::waiting::{settle, WaitQuery};
use super::{pool_of, reads};
use crate::display::Placement;
use crate::pools::PoolState;
use crate::state::{AppState, Systems};
use crate::storage::{Enqueued, EntryKind, NewEntry, RoundRecord};
use crate::wire::MAX_RANK;

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_round, super::export::list_rounds))
        .routes(routes!(get_round))
}

/// A line's kind in the OpenAPI document: one of [`EntryKind::ALL`].
fn kind_schema() -> Schema {
    one_of_strings(EntryKind::ALL.map(EntryKind::as_str), "round")
}

/// Results per page of a round when `limit` is not given: the most a page holds.
pub(super) const DEFAULT_RESULTS: u32 = super::query::MAX_LIMIT;

/// A round's status and, once applied, a page of its results.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoundResponse {
    /// The round's id.
    pub id: String,
    /// `round`; `season` for a season start (`POST …/seasons`) and `correction` for a
    /// correction (`POST …/corrections`), which have no results.
    #[schema(schema_with = kind_schema)]
    pub kind: &'static str,
    /// `queued`, `applied`, `failed`, or `voided` (by a correction).
    #[schema(schema_with = status_schema)]
    pub status: &'static str,
    /// Why the worker could not rate it, when failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it took place (RFC 3339), when applied and the round said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Its entrants (standings), when applied: the field's size, whatever page is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrants: Option<u64>,
    /// The page's entrants, best rank first (ties by player), when applied: every entrant
    /// when `next_cursor` is `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<ResultResponse>>,
    /// Pass as `cursor` for the round's next page of results; `null` on the last page (and
    /// absent when the round has no results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Option<String>>,
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

/// One entrant's result in an applied round.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResultResponse {
    /// The player.
    pub player: String,
    /// Their rank in the round.
    pub rank: u64,
    /// The performance the round credited them with.
    pub performance: f64,
    /// Rating before the round.
    pub mu_before: f64,
    /// Rating after the round.
    pub mu_after: f64,
    /// Uncertainty before the round; `null` in a system that keeps none (Elo).
    pub sigma_before: Option<f64>,
    /// Uncertainty after the round; `null` in a system that keeps none (Elo).
    pub sigma_after: Option<f64>,
    /// `mu_after − mu_before`.
    pub delta: f64,
    /// The player's league before the round; `null` when not placed (or no leagues).
    pub league_before: Option<Placement>,
    /// Their league after it: the round may have placed, promoted or demoted them.
    pub league_after: Option<Placement>,
    /// Why the rating moved: what the round's priors expected and what it showed before and
    /// after.
    #[serde(flatten)]
    pub shown: ShownChange,
}

/// The round body, as documented for clients (validation is by hand, see `wire`).
#[derive(Debug, ToSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "describes the request body in the OpenAPI document only"
)]
pub struct RoundBody {
    /// The caller's id for the round, unique in the pool: 1–256 bytes, no NUL.
    #[schema(min_length = 1, max_length = 256)]
    id: String,
    /// When the round took place (RFC 3339).
    #[schema(format = DateTime)]
    time: Option<String>,
    /// Round weight ω in [1e-6, 1e6]; the performance spread is β/√ω. Default 1.
    #[schema(minimum = 1e-6, maximum = 1e6)]
    weight: Option<f64>,
    /// No performance is credited above this.
    perf_ceiling: Option<f64>,
    /// At least two entrants; a player appears once.
    #[schema(min_items = 2)]
    standings: Vec<StandingBody>,
}

/// One player's result in a [`RoundBody`].
#[derive(Debug, ToSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "describes the request body in the OpenAPI document only"
)]
pub struct StandingBody {
    /// The player's id: 1–256 bytes, no NUL.
    #[schema(min_length = 1, max_length = 256)]
    player: String,
    /// Place, 1 is best; equal ranks tie.
    #[schema(minimum = 1)]
    rank: u64,
    /// Team name (1–256 bytes, no NUL); members of a team share its rank and are rated as one
    /// entrant.
    #[schema(min_length = 1, max_length = 256)]
    team: Option<String>,
    /// TrueSkill pools only: the share of the round the player took part in, in (0, 1];
    /// default 1. A pool of another system answers 422 naming the field.
    #[schema(exclusive_minimum = 0.0, maximum = 1.0)]
    partial_play: Option<f64>,
}

/// Posts the results of a round. The round is validated, stored durably and queued; the
/// worker applies the pool's rounds one at a time in the order they were accepted. Posting
/// the same id again with the same content returns its status (200); with other content, 409.
#[utoipa::path(post, path = "/v1/pools/{pool}/rounds", tag = "rounds",
    params(("pool" = String, Path, description = "Pool name", pattern = r"^[a-z0-9_-]{1,64}$"),
        WaitQuery),
    request_body = RoundBody,
    responses(
        (status = 202, body = RoundStatusResponse, description = "Accepted and queued",
            headers(("Location" = String, description = "The round's URL"))),
        (status = 200, body = RoundStatusResponse, description = "Posted before with the same content; with `wait=applied`, applied or failed"),
        (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse),
        (status = 403, body = ErrorResponse), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 413, body = ErrorResponse),
        (status = 415, body = ErrorResponse), (status = 422, body = ErrorResponse),
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
    params(("pool" = String, Path, description = "Pool name", pattern = r"^[a-z0-9_-]{1,64}$"),
        ("id" = String, Path, description = "Round id: the rest of the path, `/` included"), RoundQuery),
    responses((status = 200, body = RoundResponse), (status = 400, body = ErrorResponse),
        (status = 401, body = ErrorResponse), (status = 403, body = ErrorResponse),
        (status = 404, body = ErrorResponse), (status = 503, body = ErrorResponse)),
    security((), ("bearer" = [])))]
pub(super) async fn get_round(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    RoundPath { pool, id }: RoundPath,
    QueryParams(query): QueryParams<RoundQuery>,
) -> Result<Json<RoundResponse>, Error> {
    let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let limit = limit(query.limit, DEFAULT_RESULTS)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let reads = reads(&state, auth.client()).await;
    let record = read_round(&state, auth.client(), &*reads, &pool, &id, after, limit)
        .await?
        .ok_or(Error::NotFound { what: "round", id })?;
    Ok(Json(RoundResponse::of(record, &pool.read())))
}

/// `base64url("r{rank as 16 hex digits}{player}")`: the result a page ended on.
fn encode_cursor(rank: u64, player: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("r{rank:016x}{player}"))
}

/// The rank and player an [`encode_cursor`] cursor names; 400 naming `cursor` for anything
/// else, a rank no round can hold included.
fn decode_cursor(cursor: &str) -> Result<(u64, String), Error> {
    let bad = || Error::query("cursor", "not a cursor of a round's results");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let rest = text.strip_prefix('r').ok_or_else(bad)?;
    let rank = rest.get(..16).ok_or_else(bad)?;
    if !rank.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(bad());
    }
    let rank = u64::from_str_radix(rank, 16).map_err(|_| bad())?;
    if rank > MAX_RANK {
        return Err(bad());
    }
    Ok((rank, rest[16..].to_owned()))
}

impl RoundResponse {
    /// What `GET …/rounds/{id}` shows of `record`, in `current`'s display settings.
    pub(super) fn of(record: RoundRecord, current: &PoolState) -> Self {
        let next_cursor = record.results.as_ref().map(|results| {
            results
                .last()
                .filter(|_| record.more_results)
                .map(|last| encode_cursor(last.rank, &last.player))
        });
        Self {
            next_cursor,
            id: record.id,
            kind: record.kind.as_str(),
            status: record.status.as_str(),
            error: record.error,
            time: rfc3339(record.time),
            entrants: record.entrants,
            results: record.results.map(|results| {
                results
                    .into_iter()
                    .map(|r| ResultResponse {
                        shown: ShownChange::of(current, &r.change, r.expected_rank),
                        delta: r.change.delta(),
                        player: r.player,
                        rank: r.rank,
                        performance: r.change.performance,
                        mu_before: r.change.before.mu,
                        mu_after: r.change.after.mu,
                        sigma_before: r.change.before.sigma,
                        sigma_after: r.change.after.sigma,
                        league_before: r.league.before,
                        league_after: r.league.after,
                    })
                    .collect()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_decodes_to_the_result_it_was_made_from() {
        for (rank, player) in [(1, "ann"), (MAX_RANK, ""), (7, "r0000000000000001ü:x")] {
            let cursor = encode_cursor(rank, player);
            assert_eq!(
                decode_cursor(&cursor).expect("a cursor"),
                (rank, player.to_owned())
            );
        }
        for bad in [
            "!!".to_owned(),
            URL_SAFE_NO_PAD.encode("r12"),
            URL_SAFE_NO_PAD.encode("m0000000000000001ann"),
            URL_SAFE_NO_PAD.encode("r000000000000000gann"),
            URL_SAFE_NO_PAD.encode("r000000000000000Aann"),
            URL_SAFE_NO_PAD.encode("r+00000000000001ann"),
            encode_cursor(MAX_RANK + 1, "ann"),
            URL_SAFE_NO_PAD.encode([b'r', 0xff, 0xfe]),
        ] {
            assert!(decode_cursor(&bad).is_err(), "{bad}");
        }
    }
}
