//! `/v1/audit`: the audit log, newest first. Every admin and key action that changed something
//! is recorded in the transaction that did it (`storage::Storage`): who (the key's name), when,
//! what, the request's id, and the state before and after where it has one. An admin key
//! scoped to some pools reads only their entries, and another pool's filter answers it as a
//! missing pool would; the keys' own entries, which span pools, only a key of every pool reads.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Admin, Authorized};
use super::error::{Error, ErrorResponse, Resource};
use super::query::{limit, QueryParams};
use super::reads;
use super::shown::rfc3339;
use crate::audit::Action;
use crate::names;
use crate::state::AppState;
use crate::storage::{AuditEntry, AuditQuery};

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(audit_log))
}

/// `?pool=&action=&limit=&before=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Only this pool's entries (a deleted pool's too).
    pool: Option<String>,
    /// Only this action's entries: `pool.create`, `pool.update`, `pool.delete`,
    /// `display.update`, `correction.void`, `correction.disqualify`, `correction.rename`,
    /// `correction.merge`, `correction.params`, `season.start`, `key.create`, `key.revoke`.
    action: Option<String>,
    /// Entries per page: 1 to 1000, default 100.
    limit: Option<u32>,
    /// The cursor: only entries older than this id (a page's `next_before`).
    before: Option<i64>,
}

/// One recorded action.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEntryResponse {
    /// Its place in the log: a later entry has a larger id.
    pub id: i64,
    /// When (RFC 3339, to the second).
    pub at: Option<String>,
    /// The key that acted, by name; `@config` for a pool the configuration's `[pools]`
    /// created at startup, `@bootstrap` for the first start's admin key.
    pub key: String,
    /// The request's `x-request-id`, as its answer and log lines carry it.
    pub request_id: Option<String>,
    /// What was done.
    pub action: Action,
    /// The pool it was done to; `null` for a key's.
    pub pool: Option<String>,
    /// The correction's or season start's id (its status at `GET …/rounds/{id}`), or the key's
    /// name.
    pub subject: Option<String>,
    /// What the action changed, before it: the pool's `{"system", "params"}` (a parameter
    /// change, a `params` correction), its display settings, or a key's revocation time;
    /// `null` where there was nothing (a new pool, a new key, a correction of the rounds).
    #[schema(value_type = Option<Object>)]
    pub before: Option<Box<RawValue>>,
    /// The same after it: the new parameters or settings, the correction or season start as
    /// queued, a key's name, role and pools (never its secret or hash); `null` for a deletion.
    #[schema(value_type = Option<Object>)]
    pub after: Option<Box<RawValue>>,
}

/// A page of the audit log.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditResponse {
    /// The entries, newest first.
    pub entries: Vec<AuditEntryResponse>,
    /// The `before` of the next (older) page; `null` at the end.
    pub next_before: Option<i64>,
}

/// The audit log, newest first, a page at a time.
#[utoipa::path(get, path = "/v1/audit", tag = "keys",
    params(AuditParams),
    responses((status = 200, body = AuditResponse),
        (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse)),
    security(("bearer" = [])))]
async fn audit_log(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    QueryParams(params): QueryParams<AuditParams>,
) -> Result<Json<AuditResponse>, Error> {
    let limit = limit(params.limit, 100)?;
    let action = match params.action.as_deref() {
        None => None,
        Some(name) => Some(Action::named(name).ok_or_else(|| {
            Error::query(
                "action",
                format!("`{name}` is not an action the log records"),
            )
        })?),
    };
    if let Some(pool) = &params.pool {
        if !names::is_pool_name(pool) {
            return Err(Error::query("pool", names::POOL_NAME_RULE));
        }
        if !auth.scope().allows(pool) {
            return Err(Error::NotFound {
                what: Resource::Pool,
                id: pool.clone(),
            });
        }
    }
    if params.before.is_some_and(|before| before < 0) {
        return Err(Error::query("before", "must be an entry's id, 0 or more"));
    }
    let query = AuditQuery {
        pool: params.pool,
        action,
        before: params.before,
        limit,
        scope: auth.scope().clone(),
    };
    let page = reads(&state, auth.client()).await.audit(&query).await?;
    let next_before = if page.more {
        page.entries.last().map(|entry| entry.id)
    } else {
        None
    };
    Ok(Json(AuditResponse {
        entries: page
            .entries
            .into_iter()
            .map(shown)
            .collect::<Result<_, _>>()?,
        next_before,
    }))
}

/// `entry` as the route shows it.
fn shown(entry: AuditEntry) -> Result<AuditEntryResponse, Error> {
    let json = |text: Option<String>| {
        text.map(RawValue::from_string)
            .transpose()
            .map_err(|_| Error::Internal)
    };
    Ok(AuditEntryResponse {
        id: entry.id,
        at: rfc3339(Some(entry.at)),
        key: entry.actor,
        request_id: entry.request_id,
        action: entry.action,
        pool: entry.pool,
        subject: entry.subject,
        before: json(entry.before)?,
        after: json(entry.after)?,
    })
}
