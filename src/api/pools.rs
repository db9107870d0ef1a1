//! `/v1/pools`: create a pool or change its parameters (admin), list pools, show one, delete one
//! (admin, its name repeated).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde::Serialize;
use utoipa::openapi::schema::{
    AdditionalProperties, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{IntoParams, PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Admin, Authorized, Read};
use super::error::{Error, ErrorResponse, Resource};
use super::json::JsonBody;
use super::query::QueryParams;
use super::reads;
use crate::display::Display;
use crate::engine::{SystemName, SystemParams};
use crate::names;
use crate::params::{ParamsError, ParamsOverrides};
use crate::pools::PoolState;
use crate::state::{AppState, Deletion, PutPoolError};
use crate::storage::{PoolInfo, PoolWrite};

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_pools))
        .routes(routes!(get_pool, put_pool, delete_pool))
}

/// A pool's parameters, as its rating system's own type writes them: the object a PUT takes
/// back, and the export's pool line holds under `params`.
#[derive(Debug)]
pub struct ParamsResponse(SystemParams);

impl Serialize for ParamsResponse {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_own(serializer)
    }
}

impl PartialSchema for ParamsResponse {
    /// One closed object per system, each parameter required, so that a system's parameters
    /// match its own branch only.
    fn schema() -> RefOr<Schema> {
        let mut branches = OneOfBuilder::new().description(Some(
            "The parameters of the pool's rating system (`system`).",
        ));
        for system in SystemName::ALL {
            let (name, _) = system.params_schema();
            branches = branches.item(Ref::from_schema_name(name));
        }
        RefOr::T(Schema::OneOf(branches.build()))
    }
}

impl ToSchema for ParamsResponse {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        for system in SystemName::ALL {
            let (name, mut schema) = system.params_schema();
            if let RefOr::T(Schema::Object(object)) = &mut schema {
                object.required = object.properties.keys().cloned().collect();
            }
            schemas.push((name, schema));
        }
    }
}

impl PartialSchema for ParamsOverrides {
    /// One object per system, told apart by `system`: each takes `system` and that system's
    /// own parameters (as its type describes them, each also `null`), other systems'
    /// parameters only as `null` (which the server reads as left out), and nothing else.
    /// `system` may be left out for Elo-MMR, the default, and only for it, so a body
    /// matches exactly one branch.
    fn schema() -> RefOr<Schema> {
        let systems = SystemName::ALL.map(|system| {
            let (_, schema) = system.params_schema();
            let properties = match schema {
                RefOr::T(Schema::Object(object)) => object.properties,
                _ => Default::default(),
            };
            (system, properties)
        });
        // Every system's parameter names, each once.
        let every: std::collections::BTreeSet<&String> =
            systems.iter().flat_map(|(_, own)| own.keys()).collect();
        let mut tagged = OneOfBuilder::new().description(Some(
            "A pool's rating system and its parameters: one object per system, told apart by \
             `system` (which may be left out for `elo_mmr`, the default). A parameter left out \
             takes its default.",
        ));
        for (system, own) in &systems {
            let default = *system == SystemName::default();
            let tag = ObjectBuilder::new()
                .schema_type(if default {
                    SchemaType::from_iter([Type::String, Type::Null])
                } else {
                    SchemaType::new(Type::String)
                })
                .enum_values(Some(
                    std::iter::once(serde_json::Value::from(system.as_str()))
                        .chain(default.then_some(serde_json::Value::Null)),
                ))
                .description(Some(SYSTEM_DESCRIPTION));
            let mut branch = ObjectBuilder::new()
                .title(Some(system.as_str()))
                .property("system", tag)
                .additional_properties(Some(AdditionalProperties::FreeForm(false)));
            if !default {
                branch = branch.required("system");
            }
            for (key, property) in own {
                branch = branch.property(key, or_null(property.clone()));
            }
            for key in every.iter().filter(|key| !own.contains_key(key.as_str())) {
                let absent = ObjectBuilder::new()
                    .schema_type(Type::Null)
                    .description(Some("Not a parameter of this system: only `null`."));
                branch = branch.property(*key, absent);
            }
            tagged = tagged.item(branch);
        }
        RefOr::T(Schema::OneOf(tagged.build()))
    }
}

impl ToSchema for ParamsOverrides {}

/// What `system` names.
const SYSTEM_DESCRIPTION: &str = "The rating system: `elo_mmr` (Elo-MMR, the default), \
    `weng_lin` (Weng-Lin, OpenSkill's Bradley-Terry full pairing or Plackett-Luce, by \
    `model`), `trueskill` (TrueSkill: Microsoft's trademark and patent, see docs/trueskill.md \
    before a commercial use), `glicko2` (Glicko-2), `codeforces` or `topcoder` (Codeforces' \
    and Topcoder's systems as the Elo-MMR paper evaluates them) or `elo` (Elo for \
    free-for-all rounds).";

/// `schema`, which a request may also give as `null` (its default).
fn or_null(schema: RefOr<Schema>) -> RefOr<Schema> {
    match schema {
        RefOr::T(Schema::Object(mut object)) => {
            object.schema_type = match object.schema_type {
                SchemaType::Type(one) => SchemaType::from_iter([one, Type::Null]),
                SchemaType::Array(mut types) => {
                    types.push(Type::Null);
                    SchemaType::Array(types)
                }
                SchemaType::AnyValue => SchemaType::AnyValue,
            };
            if let Some(values) = &mut object.enum_values {
                values.push(serde_json::Value::Null);
            }
            RefOr::T(Schema::Object(object))
        }
        RefOr::T(Schema::OneOf(mut one_of)) => {
            one_of
                .items
                .push(ObjectBuilder::new().schema_type(Type::Null).into());
            RefOr::T(Schema::OneOf(one_of))
        }
        other => other,
    }
}

/// A pool, its parameters and its counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct PoolResponse {
    /// The pool's name.
    pub name: String,
    /// Its rating system.
    #[schema(value_type = String, example = "elo_mmr")]
    pub system: SystemName,
    /// The system's parameters.
    pub params: ParamsResponse,
    /// How it shows ratings (`/v1/pools/{pool}/display`).
    pub display: Display,
    /// Players rated in it, in the ratings this replica serves. Always a number from
    /// `GET /v1/pools/{pool}` and `PUT`; `null` in the list for a pool this replica cannot load
    /// (its own routes then answer 500 `internal`).
    #[schema(required = true)]
    pub players: Option<u64>,
    /// Lines of the pool's stream applied: rounds, season starts and corrections (a round a
    /// correction voided stays counted: the count only grows), in the ratings this replica
    /// serves: a line counts once its ratings are readable here. For a pool this replica cannot
    /// load, the database's count.
    pub rounds_applied: u64,
    /// Rounds waiting in its queue.
    pub rounds_queued: u64,
    /// Rounds the worker could not rate.
    pub rounds_failed: u64,
}

impl PoolResponse {
    /// Pool `info` as stored, with the counts of the ratings this process serves: players and
    /// lines applied from `served`, the snapshot its reads see (so the two agree with every
    /// read), the queue's counts from the database.
    fn new(info: PoolInfo, served: &PoolState) -> Self {
        Self::with_counts(info, Some(served.len() as u64), served.applied())
    }

    /// Pool `info` as stored, for a replica that cannot load it: no players, the lines the
    /// database counts as applied.
    fn unloaded(info: PoolInfo) -> Self {
        let applied = info.applied;
        Self::with_counts(info, None, applied)
    }

    fn with_counts(info: PoolInfo, players: Option<u64>, rounds_applied: u64) -> Self {
        Self {
            system: info.params.name(),
            params: ParamsResponse(info.params),
            display: info.display,
            name: info.name,
            players,
            rounds_applied,
            rounds_queued: info.queued,
            rounds_failed: info.failed,
        }
    }

    /// [`Self::new`] with the snapshot of `info`'s pool, loaded if this process has not yet.
    async fn served(state: &AppState, info: PoolInfo) -> Result<Self, Error> {
        let pool = state
            .pool(&info.name)
            .await?
            .ok_or_else(|| Error::NotFound {
                what: Resource::Pool,
                id: info.name.clone(),
            })?;
        Ok(Self::new(info, &pool.read()))
    }
}

/// Every pool.
#[derive(Debug, Serialize, ToSchema)]
pub struct PoolsResponse {
    /// The pools, by name.
    pub pools: Vec<PoolResponse>,
}

/// What a PUT did and the parameters the pool now has.
#[derive(Debug, Serialize, ToSchema)]
pub struct PutPoolResponse {
    /// The pool's name.
    pub name: String,
    /// `created`, `updated` or `unchanged`.
    #[schema(example = "created")]
    pub outcome: &'static str,
    /// The rating system now in force.
    #[schema(value_type = String, example = "elo_mmr")]
    pub system: SystemName,
    /// The parameters now in force.
    pub params: ParamsResponse,
}

/// Lists every pool the key reaches (every pool for an anonymous read) with its parameters and
/// counts.
#[utoipa::path(get, path = "/v1/pools", tag = "pools",
    responses((status = 200, body = PoolsResponse)),
    security((), ("bearer" = [])))]
async fn list_pools(
    auth: Authorized<Read>,
    State(state): State<AppState>,
) -> Result<Json<PoolsResponse>, Error> {
    let mut pools = Vec::new();
    let stored = reads(&state, auth.client()).await.pools().await?;
    for info in stored
        .into_iter()
        .filter(|info| auth.scope().allows(&info.name))
    {
        match state.pool(&info.name).await {
            Ok(Some(pool)) => pools.push(PoolResponse::new(info, &pool.read())),
            Ok(None) => {}
            Err(error) if error.is_unavailable() => return Err(error.into()),
            // A pool this replica cannot load (its own routes answer 500; the failure is
            // logged where the load is tried) hides no other.
            Err(_) => pools.push(PoolResponse::unloaded(info)),
        }
    }
    Ok(Json(PoolsResponse { pools }))
}

/// One pool with its parameters and counts.
#[utoipa::path(get, path = "/v1/pools/{pool}", tag = "pools",
    responses((status = 200, body = PoolResponse), (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn get_pool(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
) -> Result<Json<PoolResponse>, Error> {
    let info = reads(&state, auth.client()).await.pool(&pool).await?;
    let info = info.ok_or(Error::NotFound {
        what: Resource::Pool,
        id: pool,
    })?;
    Ok(Json(PoolResponse::served(&state, info).await?))
}

/// Creates a pool, or changes its parameters while it has no rounds (409 once it has).
/// `system` is `elo_mmr` unless given, or any of the seven systems (the examples give each
/// with its defaults); parameters left out take the service's configured defaults
/// (`[engine]`) for Elo-MMR and the system's own for the others.
#[utoipa::path(put, path = "/v1/pools/{pool}", tag = "pools",
    request_body = ParamsOverrides,
    responses((status = 201, body = PutPoolResponse, description = "Created"),
        (status = 200, body = PutPoolResponse, description = "Updated or unchanged"), (status = 409, body = ErrorResponse),
        (status = 422, body = ErrorResponse)),
    security(("bearer" = [])))]
async fn put_pool(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    JsonBody(overrides): JsonBody<ParamsOverrides>,
) -> Result<(StatusCode, Json<PutPoolResponse>), Error> {
    if !names::is_pool_name(&pool) {
        return Err(Error::invalid(
            "invalid_pool_name",
            "pool",
            names::POOL_NAME_RULE,
        ));
    }
    let (outcome, params) = state
        .put_pool(&pool, &overrides, &auth.actor()?)
        .await
        .map_err(|error| match error {
            PutPoolError::Invalid(error) => {
                let field = error.field().unwrap_or_default();
                match error {
                    ParamsError::Malformed { message, .. } => {
                        Error::invalid("invalid_request", field, message)
                    }
                    other => Error::invalid("invalid_parameter", field, other.to_string()),
                }
            }
            PutPoolError::Storage(error) => error.into(),
        })?;
    let (status, outcome) = match outcome {
        PoolWrite::Created => (StatusCode::CREATED, "created"),
        PoolWrite::Updated => (StatusCode::OK, "updated"),
        PoolWrite::Unchanged => (StatusCode::OK, "unchanged"),
    };
    Ok((
        status,
        Json(PutPoolResponse {
            name: pool,
            outcome,
            system: params.name(),
            params: ParamsResponse(params),
        }),
    ))
}

/// `?confirm=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteQuery {
    /// The pool's name again: a deletion cannot be undone.
    confirm: Option<String>,
}

/// What a deletion did.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeletedResponse {
    /// The pool's name.
    pub name: String,
    /// `deleted`.
    pub outcome: &'static str,
}

/// Deletes a pool and everything it holds: its rounds (queued ones too), players and history,
/// in one transaction. `confirm` must repeat its name. Refused (409) while this replica rates
/// the pool again for a correction; other replicas drop it at their next refresh (each second).
#[utoipa::path(delete, path = "/v1/pools/{pool}", tag = "pools",
    params(DeleteQuery),
    responses((status = 200, body = DeletedResponse, description = "Deleted"),
        (status = 400, body = ErrorResponse, description = "`confirm` does not repeat the name"),
        (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse, description = "A recomputation is under way")),
    security(("bearer" = [])))]
async fn delete_pool(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(query): QueryParams<DeleteQuery>,
) -> Result<Json<DeletedResponse>, Error> {
    if query.confirm.as_deref() != Some(pool.as_str()) {
        return Err(Error::query(
            "confirm",
            format!("must repeat the pool's name (`?confirm={pool}`): a deletion cannot be undone"),
        ));
    }
    match state.delete_pool(&pool, &auth.actor()?).await? {
        Deletion::Deleted => Ok(Json(DeletedResponse {
            name: pool,
            outcome: "deleted",
        })),
        Deletion::NotFound => Err(Error::NotFound {
            what: Resource::Pool,
            id: pool,
        }),
        Deletion::Recomputing => Err(Error::Recomputing(pool)),
    }
}
