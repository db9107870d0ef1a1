//! Corrections (admin key; docs/corrections.md): `POST /v1/pools/{pool}/corrections` (void a
//! round, disqualify a player from one, rename a player, merge two players, change the
//! parameters), `DELETE /v1/pools/{pool}/rounds/{id}` (void), and
//! `GET /v1/pools/{pool}/recompute` (how the pool's recomputation is going). A correction is a
//! line of the pool's round stream, queued after every round accepted before it; what it
//! names is checked against the pool before it is stored, so a mistake is a 4xx at once.

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{hash_key, Admin, Authorized, Read};
use super::error::{Error, ErrorResponse, Resource};
use super::json::{from_object, json_bytes};
use super::pool_of;
use super::query::QueryParams;
use super::queueing::{located, Queued, RoundStatusResponse};
use super::round_path::RoundPath;
use super::waiting::{settle, WaitQuery};
use crate::audit::Action;
use crate::engine::Beliefs;
use crate::names;
use crate::params::ParamsOverrides;
use crate::pools::Pool;
use crate::state::AppState;
use crate::storage::{EntryKind, NewEntry, ResultsPage, RoundStatus};
use crate::wire::{Correction, CorrectionRequest, Entry};
use tokio::time::Instant;

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(post_correction))
        .routes(routes!(void_round))
        .routes(routes!(get_recompute))
}

/// The body of `POST …/corrections`.
#[derive(Debug, ToSchema)]
#[expect(
    dead_code,
    reason = "describes the request body in the OpenAPI document only"
)]
pub struct CorrectionBody {
    /// The correction's id, unique among the pool's rounds, season starts and corrections:
    /// 1–256 bytes, no NUL.
    #[schema(min_length = 1, max_length = 256, example = "fix-17")]
    id: String,
    /// `void` (with `round`), `disqualify` (`round`, `player`), `rename` (`player`, `to`),
    /// `merge` (`player`, `into`) or `params` (`params`).
    #[schema(example = "disqualify")]
    action: String,
    /// The round voided, or the player is disqualified from.
    round: Option<String>,
    /// The player disqualified, renamed, or merged into `into`.
    player: Option<String>,
    /// A rename's new id: no player of the pool may have it.
    to: Option<String>,
    /// The player a merge gives `player`'s rounds to.
    into: Option<String>,
    /// New parameters, as `PUT /v1/pools/{pool}` takes them.
    params: Option<ParamsOverrides>,
}

/// How the pool's recomputation is going, in the process that answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecomputeResponse {
    /// `idle` (nothing since this process started), `running`, or how the last one ended:
    /// `applied`, `failed`, `stale` (another process moved the pool on: tried again) or
    /// `interrupted` (the database failed: tried again).
    #[schema(example = "running")]
    pub state: &'static str,
    /// The correction being (or last) applied.
    pub correction: Option<String>,
    /// Rounds and season starts to rate again.
    pub lines: u64,
    /// Of them, rated so far.
    pub done: u64,
    /// Seconds since it started, or that it took.
    pub seconds: f64,
}

/// Queues a correction of the pool's rounds. Once the worker reaches it, the pool is rated
/// again from its stored rounds as the correction leaves them, beside the live state, which
/// keeps answering reads until the result is stored and switched in at once.
#[utoipa::path(post, path = "/v1/pools/{pool}/corrections", tag = "rounds",
    params(WaitQuery),
    request_body = CorrectionBody,
    responses(
        (status = 202, body = RoundStatusResponse, description = "Queued after every round accepted so far",
            headers(("Location" = String, description = "The pool's recomputation"))),
        (status = 200, body = RoundStatusResponse, description = "Posted before with the same content; with `wait=applied`, applied or failed"), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse),
        (status = 503, body = ErrorResponse, description = "Queue full or database unavailable",
            headers(("Retry-After" = u64, description = "Seconds to wait")))),
    security(("bearer" = [])))]
async fn post_correction(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(wait): QueryParams<WaitQuery>,
    request: Request,
) -> Result<Response, Error> {
    let deadline = wait.deadline(&state)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let body = json_bytes(request, &state).await?;
    let mut value: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| Error::MalformedJson(e.to_string()))?;
    let invalid =
        |field: String, message: String| Error::invalid("invalid_correction", field, message);
    // New parameters come as `PUT /v1/pools/{pool}` takes them, and are stored resolved.
    if value.get("system").is_some() {
        return Err(invalid("system".into(), "unknown field".into()));
    }
    if value["action"] == "params" {
        if let Some(object) = value.as_object_mut() {
            let overrides = match object.remove("params") {
                Some(overrides @ serde_json::Value::Object(_)) => overrides,
                Some(_) => return Err(invalid("params".into(), "must be an object".into())),
                None => return Err(invalid("params".into(), "missing field `params`".into())),
            };
            // Named as `PUT /v1/pools/{pool}` names them, under `params`.
            let overrides: ParamsOverrides = from_object(overrides).map_err(|e| match e {
                Error::Invalid { field, message, .. } if field.is_empty() => {
                    invalid("params".into(), message)
                }
                Error::Invalid { field, message, .. } => {
                    invalid(format!("params.{field}"), message)
                }
                other => other,
            })?;
            let system = overrides.apply(&state.settings.engine).map_err(|e| {
                let field = e
                    .field()
                    .map_or_else(|| "params".into(), |f| format!("params.{f}"));
                invalid(field, e.to_string())
            })?;
            object.insert(
                "system".into(),
                serde_json::to_value(system).map_err(|_| Error::Internal)?,
            );
        }
    }
    let correction =
        CorrectionRequest::from_value(&value, "").map_err(|e| invalid(e.field, e.reason))?;
    // The name a rename gives is written from now on, as a round's ids are.
    if let Correction::Rename { to, .. } = &correction.action {
        if let Some(problem) = crate::names::written_id_problem(to) {
            return Err(invalid("to".into(), problem.into()));
        }
    }
    enqueue(&state, &auth, &pool, correction, deadline).await
}

/// Voids round `id`: once the worker reaches the correction, the pool is rated again without
/// it (`POST …/corrections` with `"action": "void"`, whose id is `void/{id}`, or for an id
/// longer than 251 bytes `void/sha256:{hex SHA-256 of id}`). 409 if a round or correction took
/// that id first.
#[utoipa::path(delete, path = "/v1/pools/{pool}/rounds/{id}", tag = "rounds",
    params(("id" = String, Path, description = "Round id: the rest of the path, `/` included"),
        WaitQuery),
    responses(
        (status = 202, body = RoundStatusResponse, description = "Queued after every round accepted so far",
            headers(("Location" = String, description = "The pool's recomputation"))),
        (status = 200, body = RoundStatusResponse, description = "Voided (or queued) before under this id: a retry; with `wait=applied`, applied or failed"),
        (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse),
        (status = 422, body = ErrorResponse),
        (status = 503, body = ErrorResponse, description = "Queue full or database unavailable",
            headers(("Retry-After" = u64, description = "Seconds to wait")))),
    security(("bearer" = [])))]
pub(super) async fn void_round(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    RoundPath { pool, id }: RoundPath,
    QueryParams(wait): QueryParams<WaitQuery>,
) -> Result<Response, Error> {
    let deadline = wait.deadline(&state)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let correction = CorrectionRequest {
        id: void_id(&id),
        action: Correction::Void { round: id },
    };
    enqueue(&state, &auth, &pool, correction, deadline).await
}

/// What the audit log records queuing `correction` as.
fn audited_as(correction: &Correction) -> Action {
    match correction {
        Correction::Void { .. } => Action::CorrectionVoid,
        Correction::Disqualify { .. } => Action::CorrectionDisqualify,
        Correction::Rename { .. } => Action::CorrectionRename,
        Correction::Merge { .. } => Action::CorrectionMerge,
        Correction::Params { .. } => Action::CorrectionParams,
    }
}

/// The id of the correction `DELETE …/rounds/{round}` queues: `void/{round}`, or where that
/// would be longer than an id may be, `void/sha256:` and the hex SHA-256 of the round's id,
/// so that a retry finds the same correction either way.
fn void_id(round: &str) -> String {
    let id = format!("void/{round}");
    if id.len() <= names::MAX_ID_BYTES {
        id
    } else {
        format!("void/sha256:{}", hash_key(round))
    }
}

/// How the pool's recomputation is going, in the process that answers (each process knows
/// the corrections its own worker applies).
#[utoipa::path(get, path = "/v1/pools/{pool}/recompute", tag = "rounds",
    responses((status = 200, body = RecomputeResponse), (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn get_recompute(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
) -> Result<Json<RecomputeResponse>, Error> {
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let answer = match pool.recompute() {
        None => RecomputeResponse {
            state: "idle",
            correction: None,
            lines: 0,
            done: 0,
            seconds: 0.0,
        },
        Some(recompute) => {
            let (seconds, state) = match recompute.finished {
                Some((took, outcome)) => (took, outcome),
                None => (recompute.started.elapsed().unwrap_or_default(), "running"),
            };
            RecomputeResponse {
                state,
                correction: Some(recompute.correction),
                lines: recompute.lines,
                done: recompute.done.load(std::sync::atomic::Ordering::Relaxed),
                seconds: seconds.as_secs_f64(),
            }
        }
    };
    Ok(Json(answer))
}

/// Checks `correction` against the pool as it stands, then queues it. A correction stored
/// before under its id is not checked again (it may have changed what it names): the queue
/// answers with its status, or 409 if the content differs.
async fn enqueue(
    state: &AppState,
    auth: &Authorized<Admin>,
    pool: &Pool,
    correction: CorrectionRequest,
    deadline: Option<Instant>,
) -> Result<Response, Error> {
    let (client, actor) = (auth.client(), auth.actor()?);
    if state
        .storage
        .round(pool.name(), &correction.id, &ResultsPage::NONE)
        .await?
        .is_none()
    {
        check(state, pool, &correction.action).await?;
    }
    let canonical = Entry::Correction(correction.clone())
        .canonical()
        .map_err(|_| Error::Internal)?;
    let entry = NewEntry::by_body(&correction.id, EntryKind::Correction, &canonical)
        .audited(&actor, audited_as(&correction.action));
    let outcome = state.enqueue(pool, entry, None).await?;
    let queued = Queued::of(outcome, &correction.id)?;
    let mut answer = [RoundStatusResponse {
        id: correction.id,
        status: queued.stored.as_str(),
        position: queued.position,
        error: None,
    }];
    let mut status = queued.status;
    if let Some(deadline) = deadline {
        if settle(state, client, pool, &mut answer, deadline).await? {
            status = StatusCode::OK;
        }
    }
    let headers = located(&format!("/v1/pools/{}/recompute", pool.name()));
    let [body] = answer;
    Ok((status, headers, Json(body)).into_response())
}

/// Refuses a correction that names what the pool does not have: a round that is not one of
/// its rounds (or was voided or failed), a player who did not play it, a player to rename or
/// merge who has no rating, a new name that is taken. What only the worker can check (a
/// round still queued, what a disqualification leaves) fails the correction there.
async fn check(state: &AppState, pool: &Pool, correction: &Correction) -> Result<(), Error> {
    let invalid =
        |field: &str, message: String| Error::invalid("invalid_correction", field, message);
    let current = pool.read();
    let known = |player: &str| current.belief(player).is_some();
    match correction {
        Correction::Void { round } | Correction::Disqualify { round, .. } => {
            let record = state
                .storage
                .round(pool.name(), round, &ResultsPage::NONE)
                .await?
                .ok_or_else(|| Error::NotFound {
                    what: Resource::Round,
                    id: round.clone(),
                })?;
            if record.kind != EntryKind::Round {
                return Err(invalid(
                    "round",
                    format!("`{round}` is a {}", record.kind.as_str()),
                ));
            }
            if matches!(record.status, RoundStatus::Failed | RoundStatus::Voided) {
                return Err(invalid(
                    "round",
                    format!("round `{round}` is {}", record.status.as_str()),
                ));
            }
            // A queued round's entrants have no rows yet: the worker checks them.
            if let (Correction::Disqualify { player, .. }, RoundStatus::Applied) =
                (correction, record.status)
            {
                if !state
                    .storage
                    .played(pool.name(), record.seq, player)
                    .await?
                {
                    return Err(invalid(
                        "player",
                        format!("`{player}` did not play round `{round}`"),
                    ));
                }
            }
        }
        Correction::Rename { player, to } => {
            if !known(player) {
                return Err(Error::NotFound {
                    what: Resource::Player,
                    id: player.clone(),
                });
            }
            if known(to) {
                return Err(invalid(
                    "to",
                    format!("`{to}` is a player of this pool: merge instead"),
                ));
            }
        }
        Correction::Merge { player, into } => {
            for who in [player, into] {
                if !known(who) {
                    return Err(Error::NotFound {
                        what: Resource::Player,
                        id: who.clone(),
                    });
                }
            }
        }
        Correction::Params { .. } => {}
    }
    Ok(())
}
