//! `/healthz` (the process answers), `/readyz` (the database answers and every worker runs;
//! which pools this process applies),
//! `/metrics` (Prometheus) and `/openapi.json`. Only `/metrics` may need a key (a read key, when
//! reads need one).

use std::future::Future;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Authorized, Read};
use super::error::Error;
use super::reads;
use crate::instruments;
use crate::state::{AppState, DatabaseSeen};

/// Longest `/readyz` waits for each database check: a probe that hangs for as long as the
/// storage's own connection timeout would be given up on by its caller, with no answer saying
/// why. A database that answers no faster is as good as away.
const DATABASE_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// How long one look at the database answers `/readyz`: any client may ask it, and however
/// often they do, it takes the connections the worker and the writes use once in this time.
const DATABASE_SEEN_FOR: Duration = Duration::from_secs(1);

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_health))
        .routes(routes!(get_readiness))
        .routes(routes!(get_metrics))
}

/// Every metric in the Prometheus text format (docs/monitoring.md, "Metrics"); a key when reads need one.
/// The gauges are read now: each pool's queue from the database, its players from memory.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses((status = 200, description = "Prometheus text exposition format 0.0.4",
        content_type = "text/plain; version=0.0.4", body = String)),
    security((), ("bearer" = [])))]
async fn get_metrics(
    auth: Authorized<Read>,
    State(state): State<AppState>,
) -> Result<impl IntoResponse, Error> {
    // The rest of the document matters most when the database is down: serve it anyway.
    match reads(&state, auth.client()).await.pools().await {
        Ok(stored) => {
            instruments::gauge(instruments::DATABASE_UP, 1.0);
            for info in stored {
                instruments::pool_gauge(instruments::QUEUE_DEPTH, &info.name, info.queued as f64);
            }
        }
        Err(error) => {
            tracing::warn!(%error, "metrics: the queues could not be read");
            instruments::gauge(instruments::DATABASE_UP, 0.0);
        }
    }
    for pool in state.pools.all() {
        instruments::pool_gauge(instruments::PLAYERS, pool.name(), pool.read().len() as f64);
        instruments::pool_gauge(
            instruments::WORKER_FAILING_STEPS,
            pool.name(),
            pool.failing_steps() as f64,
        );
    }
    instruments::gauge(
        instruments::HTTP_CONNECTIONS,
        state.limits.connections.open() as f64,
    );
    let (open, idle) = state.storage.connections();
    instruments::gauge(instruments::DB_CONNECTIONS, f64::from(open));
    instruments::gauge(instruments::DB_CONNECTIONS_IDLE, idle as f64);
    let (open, idle) = state.reads.connections();
    instruments::gauge(instruments::DB_READ_CONNECTIONS, f64::from(open));
    instruments::gauge(instruments::DB_READ_CONNECTIONS_IDLE, idle as f64);
    Ok((
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        instruments::render(),
    ))
}

/// The process is alive.
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthResponse {
    /// Always `ok`.
    #[schema(example = "ok")]
    pub status: &'static str,
}

/// Whether the service can take rounds.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadinessResponse {
    /// `ready` or `not_ready`.
    #[schema(example = "ready")]
    pub status: &'static str,
    /// Whether the database answered.
    pub database: bool,
    /// Whether every pool's worker is running and none has stalled.
    pub workers: bool,
    /// Pools whose worker's last 3 steps or more all failed (the same failure repeating: see
    /// `mmr_worker_failing_steps` in `/metrics` for which, and the log for why).
    pub stalled_pools: u64,
    /// Rounds waiting in every pool's queue; `null` when the database did not answer.
    pub queue_depth: Option<u64>,
    /// This process's name among the replicas sharing a Postgres database; `null` where it
    /// owns its database alone (SQLite, docs/replicas.md).
    pub replica: Option<String>,
    /// The pools whose rounds this process applies (all of them where it owns its database
    /// alone); it follows the others' owners. Empty for a client that may not read them
    /// (`auth.read_key_required` and no read key).
    pub owned_pools: Vec<String>,
}

/// The process answers.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, body = HealthResponse)))]
async fn get_health() -> Json<HealthResponse> {
    Json(HealthResponse { status: "ok" })
}

/// The database answers and every pool's worker runs without stalling (503 otherwise). Open
/// to every client; the pools' names only to one that may read them.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, body = ReadinessResponse),
        (status = 503, body = ReadinessResponse)),
    security((), ("bearer" = [])))]
async fn get_readiness(
    reader: Result<Authorized<Read>, Error>,
    State(state): State<AppState>,
) -> (StatusCode, Json<ReadinessResponse>) {
    let (database, queue_depth) = database_seen(&state).await;
    let pools = state.pools.all();
    let stalled_pools = pools.iter().filter(|pool| pool.stalled()).count() as u64;
    let workers = stalled_pools == 0 && pools.iter().all(|pool| pool.worker_running());
    let owned_pools = match reader {
        Ok(_) => pools
            .iter()
            .filter(|pool| pool.owned())
            .map(|pool| pool.name().to_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    let ready = database && workers && queue_depth.is_some();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(ReadinessResponse {
            status: if ready { "ready" } else { "not_ready" },
            database,
            workers,
            stalled_pools,
            queue_depth,
            replica: state.coordinated().then(|| state.replica_id().to_owned()),
            owned_pools,
        }),
    )
}

/// Whether the database answers, and its queue depth: looked at again once the last look is
/// [`DATABASE_SEEN_FOR`] old, by one request while the others wait for its answer.
async fn database_seen(state: &AppState) -> (bool, Option<u64>) {
    let mut seen = state.database_seen.lock().await;
    if let Some(last) = *seen {
        if last.at.elapsed() < DATABASE_SEEN_FOR {
            return (last.answered, last.queue_depth);
        }
    }
    let answered = checked(state.storage.ping()).await.is_some();
    let queue_depth = if answered {
        checked(state.storage.queue_depth()).await
    } else {
        None
    };
    *seen = Some(DatabaseSeen {
        at: Instant::now(),
        answered,
        queue_depth,
    });
    (answered, queue_depth)
}

/// What a database check found, or `None` when it failed or took longer than
/// [`DATABASE_CHECK_TIMEOUT`].
async fn checked<T, E>(check: impl Future<Output = Result<T, E>>) -> Option<T> {
    tokio::time::timeout(DATABASE_CHECK_TIMEOUT, check)
        .await
        .ok()?
        .ok()
}
