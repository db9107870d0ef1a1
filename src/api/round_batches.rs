//! `/v1/pools/{pool}/round-batches`: many rounds in one request (write key), stored in one
//! transaction, all or none: a platform backfilling its past contests, or posting the rounds
//! of a whole event at once, pays for one request and one durable commit instead of one per
//! round. Each round is checked as `POST …/rounds` checks it; the worker applies them in the
//! order given, after every round accepted before.

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Authorized, Write};
use super::error::{Error, ErrorResponse};
use super::json::json_bytes;
use super::pool_of;
use super::query::QueryParams;
use super::queueing::{checked, Checked, Queued, RoundStatusResponse, CHECK_TRIES};
use super::waiting::{settle, WaitQuery};
use crate::state::{AppState, Systems};
use crate::storage::{EnqueuedAll, EntryKind, NewEntry};
use crate::wire::RoundRequest;

/// Most rounds one batch may hold (422 naming `rounds` beyond).
pub const MAX_BATCH_ROUNDS: usize = 1000;

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create_round_batch))
}

/// A batch of rounds, as documented for clients (validation is by hand).
#[derive(Debug, ToSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "describes the request body in the OpenAPI document only"
)]
pub struct RoundBatchBody {
    /// 1 to 1000 rounds, each as `POST …/rounds` takes it, with ids that differ; applied in
    /// this order.
    #[schema(min_items = 1, max_items = 1000)]
    rounds: Vec<RoundRequest>,
}

/// What became of each round of a batch, in the order posted.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoundBatchResponse {
    /// One per round: `queued` with its `position` if it was accepted now, otherwise the status
    /// of the same round posted before.
    pub rounds: Vec<RoundStatusResponse>,
}

/// Posts the results of many rounds at once. Every round is validated first; then all are
/// stored durably and queued in one transaction, in the order given, or none is: a round that
/// fails validation (422 naming it, e.g. `rounds[3].standings[2].rank`), a round whose id was
/// posted before with other content (409), or a queue without room for the new rounds (503;
/// 422 naming `rounds` when they are more than the queue ever holds) stores nothing. A round
/// posted before with the same content is left as it is, so that a batch can be re-posted after
/// a lost answer. 202 if any round was accepted now, else 200.
/// A batch counts as one request against the key's write budget.
#[utoipa::path(post, path = "/v1/pools/{pool}/round-batches", tag = "rounds",
    params(WaitQuery),
    request_body = RoundBatchBody,
    responses(
        (status = 202, body = RoundBatchResponse, description = "Accepted and queued"),
        (status = 200, body = RoundBatchResponse, description = "Every round was posted before with the same content; with `wait=applied`, every round is applied or failed"), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse),
        (status = 503, body = ErrorResponse, description = "Queue full or database unavailable",
            headers(("Retry-After" = u64, description = "Seconds to wait")))),
    security(("bearer" = [])))]
async fn create_round_batch(
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
    let (rounds, outcome) = loop {
        let (body, against) = (posted.clone(), systems.clone());
        let rounds = tokio::task::spawn_blocking(move || validate_batch(&body, &against))
            .await
            .map_err(|join| {
                tracing::error!(error = %join, "batch validation panicked");
                Error::Internal
            })??;
        let entries: Vec<NewEntry<'_>> = rounds
            .iter()
            .map(|round| NewEntry {
                id: &round.id,
                kind: EntryKind::Round,
                body: &round.body,
                key: &round.key,
                audit: None,
            })
            .collect();
        tries += 1;
        let outcome = state
            .enqueue_all(&pool, &entries, Some(systems.against()))
            .await?;
        drop(entries);
        match outcome {
            EnqueuedAll::Changed if tries < CHECK_TRIES => {
                systems = state.systems_stored(&pool).await?;
            }
            outcome => break (rounds, outcome),
        }
    };
    let outcomes = match outcome {
        // The pool changed under each try: the client tries again.
        EnqueuedAll::Changed => return Err(Error::Unavailable),
        EnqueuedAll::Stored(outcomes) => outcomes,
        EnqueuedAll::Conflict(index) => {
            return Err(Error::RoundConflict {
                id: rounds[index].id.clone(),
                field: format!("rounds[{index}].id"),
            });
        }
        EnqueuedAll::QueueFull { new, .. } => {
            let most = state.settings.queue.max_queued_per_pool;
            // Waiting would not help a batch that no queue of this size can hold.
            return Err(if new > most {
                Error::invalid(
                    "invalid_request",
                    "rounds",
                    format!(
                        "holds {new} rounds new to the pool; its queue holds at most {most} \
                         (queue.max_queued_per_pool): post them in smaller batches"
                    ),
                )
            } else {
                Error::QueueFull
            });
        }
    };
    let mut status = StatusCode::OK;
    let mut answers = Vec::with_capacity(outcomes.len());
    for (outcome, Checked { id, .. }) in outcomes.into_iter().zip(rounds) {
        let queued = Queued::of(outcome, &id)?;
        if queued.status == StatusCode::ACCEPTED {
            status = StatusCode::ACCEPTED;
        }
        answers.push(RoundStatusResponse {
            id,
            status: queued.stored.as_str(),
            position: queued.position,
            error: None,
        });
    }
    tracing::info!(rounds = answers.len(), "round batch posted");
    if let Some(deadline) = deadline {
        if settle(&state, auth.client(), &pool, &mut answers, deadline).await? {
            status = StatusCode::OK;
        }
    }
    Ok((status, Json(RoundBatchResponse { rounds: answers })).into_response())
}

/// Checks a batch body completely, each round for the pool's rating `system` too, and returns
/// the rounds ready to queue, in order.
fn validate_batch(body: &[u8], systems: &Systems) -> Result<Vec<Checked>, Error> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| Error::MalformedJson(e.to_string()))?;
    let invalid = |field: &str, message: String| Error::invalid("invalid_request", field, message);
    let Value::Object(object) = &value else {
        return Err(invalid("", "the body must be an object".to_owned()));
    };
    if let Some(unknown) = object.keys().find(|key| *key != "rounds") {
        return Err(invalid(unknown, "is not a field of a batch".to_owned()));
    }
    let rounds = match object.get("rounds") {
        Some(Value::Array(rounds)) => rounds,
        Some(_) => return Err(invalid("rounds", "must be an array".to_owned())),
        None => return Err(invalid("rounds", "is missing".to_owned())),
    };
    if rounds.is_empty() || rounds.len() > MAX_BATCH_ROUNDS {
        return Err(invalid(
            "rounds",
            format!(
                "holds {} rounds: a batch holds 1 to {MAX_BATCH_ROUNDS}",
                rounds.len()
            ),
        ));
    }
    let mut seen = std::collections::HashMap::with_capacity(rounds.len());
    let mut checked_rounds = Vec::with_capacity(rounds.len());
    for (i, round) in rounds.iter().enumerate() {
        let path = format!("rounds[{i}]");
        let round = checked(round, systems, &path)?;
        if let Some(first) = seen.insert(round.id.clone(), i) {
            return Err(Error::invalid(
                "invalid_round",
                format!("{path}.id"),
                format!("repeats the id of rounds[{first}]"),
            ));
        }
        checked_rounds.push(round);
    }
    Ok(checked_rounds)
}
