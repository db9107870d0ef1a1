//! `/v1/keys`: the keys kept in the database, which an admin lists, creates and revokes
//! without touching the configuration. A new key is shown once, in the answer that creates it;
//! only its SHA-256 is stored. Keys of the configuration are listed too, and changed only there.
//! Keys are managed with an admin key that reaches every pool: one scoped to some pools could
//! otherwise make itself a key that reaches them all.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Admin, Authorized};
use super::error::{Error, ErrorResponse, Resource};
use super::json::JsonBody;
use super::shown::rfc3339;
use crate::config::Role;
use crate::names;
use crate::scope::Scope;
use crate::state::{AppState, NewKey};

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_keys, create_key))
        .routes(routes!(revoke_key))
}

/// Where a key is kept.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `[[auth.keys]]` of the configuration: changed by editing it.
    Configuration,
    /// The database: created and revoked through `/v1/keys`.
    Database,
}

/// A key, without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyResponse {
    /// Its name, which logs and rate limits know it by.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// Where it is kept.
    pub source: Source,
    /// The pools it reaches (`null`: every pool).
    #[schema(value_type = Option<Vec<String>>)]
    pub pools: Scope,
    /// When it was created (RFC 3339); `null` for a configured key.
    pub created_at: Option<String>,
    /// When it was revoked (RFC 3339); `null` while it works.
    pub revoked_at: Option<String>,
}

/// Every key.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeysResponse {
    /// The configured keys, then the database's (revoked ones included), each by name.
    pub keys: Vec<KeyResponse>,
}

/// A key to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyRequest {
    /// Its name: 1 to 64 of `a-z`, `0-9`, `_` and `-`, used by no other key.
    #[schema(example = "judge")]
    pub name: String,
    /// What it may do: `read`, `write` (post rounds) or `admin` (also pools and settings;
    /// keys only when it reaches every pool).
    pub role: Role,
    /// The pools it reaches: pool names, or starts of names followed by `*` (`chess-*`); every
    /// pool, those created later too, when left out. Another pool's routes answer it 404.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>, example = json!(["chess-*"]))]
    pub pools: Option<Vec<String>>,
}

/// A key just created: the only answer that shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedKeyResponse {
    /// Its name.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The pools it reaches (`null`: every pool).
    #[schema(value_type = Option<Vec<String>>)]
    pub pools: Scope,
    /// The key: send it as `Authorization: Bearer <key>`. It is not stored and cannot be
    /// shown again.
    pub key: String,
}

/// Every key the service accepts or accepted, without secrets.
#[utoipa::path(get, path = "/v1/keys", tag = "keys",
    responses((status = 200, body = KeysResponse)),
    security(("bearer" = [])))]
async fn list_keys(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
) -> Result<Json<KeysResponse>, Error> {
    auth.require_every_pool()?;
    let configured = state.settings.auth.keys.iter().map(|key| KeyResponse {
        name: key.name.clone(),
        role: key.role,
        source: Source::Configuration,
        pools: key.pools.clone(),
        created_at: None,
        revoked_at: None,
    });
    let stored = state.storage.keys().await?;
    let stored = stored.into_iter().map(|key| KeyResponse {
        name: key.name,
        role: key.role,
        source: Source::Database,
        pools: key.pools,
        created_at: rfc3339(Some(key.created_at)),
        revoked_at: rfc3339(key.revoked_at),
    });
    Ok(Json(KeysResponse {
        keys: configured.chain(stored).collect(),
    }))
}

/// Creates a key kept in the database and shows it, once.
#[utoipa::path(post, path = "/v1/keys", tag = "keys",
    request_body = KeyRequest,
    responses((status = 201, body = CreatedKeyResponse),
        (status = 409, body = ErrorResponse),
        (status = 422, body = ErrorResponse)),
    security(("bearer" = [])))]
async fn create_key(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    JsonBody(request): JsonBody<KeyRequest>,
) -> Result<(StatusCode, Json<CreatedKeyResponse>), Error> {
    auth.require_every_pool()?;
    if !names::is_pool_name(&request.name) {
        return Err(Error::invalid(
            "invalid_request",
            "name",
            "must be 1 to 64 of a-z, 0-9, `_` and `-`",
        ));
    }
    let pools = Scope::of(request.pools)
        .map_err(|message| Error::invalid("invalid_request", "pools", message))?;
    match state
        .create_key(&request.name, request.role, pools.clone(), &auth.actor()?)
        .await?
    {
        NewKey::Created(key) => Ok((
            StatusCode::CREATED,
            Json(CreatedKeyResponse {
                name: request.name,
                role: request.role,
                pools,
                key,
            }),
        )),
        NewKey::NameTaken => Err(Error::KeyConflict {
            name: request.name,
            message: "another key has this name (a revoked key keeps its name)".into(),
        }),
    }
}

/// Revokes a key kept in the database: it stops working at once.
#[utoipa::path(delete, path = "/v1/keys/{name}", tag = "keys",
    params(("name" = String, Path, description = "The key's name")),
    responses((status = 204), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse)),
    security(("bearer" = [])))]
async fn revoke_key(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    auth.require_every_pool()?;
    if state.settings.auth.keys.iter().any(|key| key.name == name) {
        return Err(Error::KeyConflict {
            name,
            message: "is a configured key: remove it from the configuration instead".into(),
        });
    }
    if state.revoke_key(&name, &auth.actor()?).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Error::NotFound {
            what: Resource::Key,
            id: name,
        })
    }
}
