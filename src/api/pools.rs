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
use utoipa::openapi::RefOr;
use utoipa::IntoParams;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Admin, Authorized, Read};
use super::error::{Error, ErrorResponse};
use super::json::JsonBody;
use super::query::QueryParams;
use super::reads;
use crate::config::{own_parameters, ParamsOverrides};
use crate::display::Display;
use crate::engine::{Params, SystemName, SystemParams, Ties, Variant, WengLinModel};
use crate::names;
use crate::pools::PoolState;
use crate::state::{AppState, Deletion, PutPoolError};
use crate::storage::{PoolInfo, PoolWrite};

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_pools))
        .routes(routes!(get_pool, put_pool, delete_pool))
}

/// A pool's parameters: those of its rating system.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ParamsResponse {
    /// Elo-MMR's.
    EloMmr(EloMmrParamsResponse),
    /// Weng-Lin's.
    WengLin(WengLinParamsResponse),
    /// TrueSkill's.
    TrueSkill(TrueSkillParamsResponse),
    /// Glicko-2's.
    Glicko2(Glicko2ParamsResponse),
    /// Codeforces'.
    Codeforces(CodeforcesParamsResponse),
    /// Topcoder's.
    Topcoder(TopcoderParamsResponse),
    /// Elo's.
    Elo(EloParamsResponse),
}

/// Elo's parameters.
#[derive(Debug, Serialize, ToSchema)]
// additionalProperties: false, so that the untagged `oneOf` of systems matches one branch only.
#[serde(deny_unknown_fields)]
pub struct EloParamsResponse {
    /// The temperature T of the expected score.
    pub temperature: f64,
    /// The most one round of weight 1 can move a rating.
    pub k: f64,
    /// A new player's rating.
    pub mu_init: f64,
}

/// Topcoder's parameters.
#[derive(Debug, Serialize, ToSchema)]
// additionalProperties: false, so that the untagged `oneOf` of systems matches one branch only.
#[serde(deny_unknown_fields)]
pub struct TopcoderParamsResponse {
    /// Scales every round's weight and how far one round may move a rating.
    pub weight_multiplier: f64,
    /// A new player's rating.
    pub mu_init: f64,
    /// A new player's volatility.
    pub sigma_init: f64,
}

/// Codeforces' parameters.
#[derive(Debug, Serialize, ToSchema)]
// additionalProperties: false, so that the untagged `oneOf` of systems matches one branch only.
#[serde(deny_unknown_fields)]
pub struct CodeforcesParamsResponse {
    /// Performance spread β in a round of weight 1.
    pub beta: f64,
    /// How much a round's performance weighs against the old rating.
    pub weight_multiplier: f64,
    /// A new player's rating.
    pub mu_init: f64,
    /// The σ shown for every player.
    pub sigma_init: f64,
}

/// Glicko-2's parameters.
#[derive(Debug, Serialize, ToSchema)]
// additionalProperties: false, so that the untagged `oneOf` of systems matches one branch only.
#[serde(deny_unknown_fields)]
pub struct Glicko2ParamsResponse {
    /// The system constant τ: how far one round may move a volatility.
    pub tau: f64,
    /// A new player's rating.
    pub mu_init: f64,
    /// A new player's rating deviation.
    pub sigma_init: f64,
    /// A new player's volatility.
    pub volatility_init: f64,
}

/// TrueSkill's parameters.
#[derive(Debug, Serialize, ToSchema)]
// additionalProperties: false, so that the untagged `oneOf` of systems matches one branch only.
#[serde(deny_unknown_fields)]
pub struct TrueSkillParamsResponse {
    /// Performance spread β.
    pub beta: f64,
    /// Dynamics: skill drift added to every participant before each round.
    pub tau: f64,
    /// Probability that two evenly matched lone players draw.
    pub draw_probability: f64,
    /// Mean of a new player's prior.
    pub mu_init: f64,
    /// Std of a new player's prior.
    pub sigma_init: f64,
}

/// Weng-Lin's parameters.
#[derive(Debug, Serialize, ToSchema)]
// additionalProperties: false, so that the untagged `oneOf` of systems matches one branch only.
#[serde(deny_unknown_fields)]
pub struct WengLinParamsResponse {
    /// Performance spread β.
    pub beta: f64,
    /// Smallest factor one round may shrink a variance by.
    pub kappa: f64,
    /// Skill drift added to every participant before each round.
    pub tau: f64,
    /// Mean of a new player's prior.
    pub mu_init: f64,
    /// Std of a new player's prior.
    pub sigma_init: f64,
    /// `bradley_terry` (full pairing) or `plackett_luce`.
    #[schema(value_type = String, pattern = "^(bradley_terry|plackett_luce)$", example = "bradley_terry")]
    pub model: WengLinModel,
}

/// Elo-MMR's parameters.
#[derive(Debug, Serialize, ToSchema)]
// additionalProperties: false, so that the untagged `oneOf` of systems matches one branch only.
#[serde(deny_unknown_fields)]
pub struct EloMmrParamsResponse {
    /// `logistic` (Elo-MMR) or `gaussian` (Elo-MMχ).
    #[schema(value_type = String, pattern = "^(logistic|gaussian)$", example = "logistic")]
    pub variant: &'static str,
    /// Spread of a performance around skill in a round of weight 1.
    pub beta: f64,
    /// Skill drift added each time a player takes part.
    pub gamma: f64,
    /// Pseudodiffusion transfer rate: a number, or the string `"inf"` for Elo-MMR(∞).
    #[schema(schema_with = rho_schema)]
    pub rho: serde_json::Value,
    /// Mean of a new player's prior.
    pub mu_init: f64,
    /// Std of a new player's prior.
    pub sigma_init: f64,
    /// Extra drift variance per day between a player's rounds.
    pub drift_per_day: f64,
    /// Most logistic factors kept per player.
    pub history_limit: u64,
    /// `both` or `split`.
    #[schema(value_type = String, pattern = "^(both|split)$", example = "both")]
    pub ties: &'static str,
}

/// ρ as answered: a number >= 0, or `"inf"`.
fn rho_schema() -> Schema {
    crate::config::rho_schema_of(&["inf"], false)
}

impl From<&SystemParams> for ParamsResponse {
    fn from(system: &SystemParams) -> Self {
        match system {
            SystemParams::EloMmr(p) => Self::EloMmr(EloMmrParamsResponse::from(p)),
            SystemParams::WengLin(p) => Self::WengLin(WengLinParamsResponse {
                beta: p.beta,
                kappa: p.kappa,
                tau: p.tau,
                mu_init: p.mu_init,
                sigma_init: p.sigma_init,
                model: p.model,
            }),
            SystemParams::TrueSkill(p) => Self::TrueSkill(TrueSkillParamsResponse {
                beta: p.beta,
                tau: p.tau,
                draw_probability: p.draw_probability,
                mu_init: p.mu_init,
                sigma_init: p.sigma_init,
            }),
            SystemParams::Glicko2(p) => Self::Glicko2(Glicko2ParamsResponse {
                tau: p.tau,
                mu_init: p.mu_init,
                sigma_init: p.sigma_init,
                volatility_init: p.volatility_init,
            }),
            SystemParams::Codeforces(p) => Self::Codeforces(CodeforcesParamsResponse {
                beta: p.beta,
                weight_multiplier: p.weight_multiplier,
                mu_init: p.mu_init,
                sigma_init: p.sigma_init,
            }),
            SystemParams::Elo(p) => Self::Elo(EloParamsResponse {
                temperature: p.temperature,
                k: p.k,
                mu_init: p.mu_init,
            }),
            SystemParams::Topcoder(p) => Self::Topcoder(TopcoderParamsResponse {
                weight_multiplier: p.weight_multiplier,
                mu_init: p.mu_init,
                sigma_init: p.sigma_init,
            }),
        }
    }
}

impl From<&Params> for EloMmrParamsResponse {
    fn from(p: &Params) -> Self {
        Self {
            variant: match p.variant {
                Variant::Logistic => "logistic",
                Variant::Gaussian => "gaussian",
            },
            beta: p.beta,
            gamma: p.gamma,
            rho: if p.rho.is_finite() {
                serde_json::Value::from(p.rho)
            } else {
                serde_json::Value::from("inf")
            },
            mu_init: p.mu_init,
            sigma_init: p.sigma_init,
            drift_per_day: p.drift_per_day,
            history_limit: p.history_limit as u64,
            ties: match p.ties {
                Ties::Both => "both",
                Ties::Split => "split",
            },
        }
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
            params: ParamsResponse::from(&info.params),
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
                what: "pool",
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

/// Replaces the flat schema of `PUT /v1/pools/{pool}`'s body (every parameter of every
/// system) with one object per system, told apart by `system`: each takes `system` and that
/// system's own parameters (as [`own_parameters`] lists them, described as in the flat
/// schema), other systems' parameters only as `null` (which the server reads as left out),
/// and nothing else. `system` may be left out for Elo-MMR, the default, and only for
/// it, so a body matches exactly one branch.
pub(super) fn tag_params_schema(doc: &mut utoipa::openapi::OpenApi) {
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    let name = <ParamsOverrides as utoipa::ToSchema>::name();
    let Some(RefOr::T(Schema::Object(flat))) = components.schemas.get(name.as_ref()) else {
        return;
    };
    let mut tagged = OneOfBuilder::new().description(Some(
        "A pool's rating system and its parameters: one object per system, told apart by \
         `system` (which may be left out for `elo_mmr`, the default). A parameter left out \
         takes its default.",
    ));
    for system in SystemName::ALL {
        let default = system == SystemName::default();
        let tag = ObjectBuilder::new()
            .schema_type(if default {
                SchemaType::from_iter([Type::String, Type::Null])
            } else {
                SchemaType::new(Type::String)
            })
            .enum_values(Some(
                std::iter::once(serde_json::Value::from(system.as_str()))
                    .chain(default.then_some(serde_json::Value::Null)),
            ));
        let mut branch = ObjectBuilder::new()
            .title(Some(system.as_str()))
            .property("system", tag)
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        if !default {
            branch = branch.required("system");
        }
        for (key, property) in &flat.properties {
            if own_parameters(system).contains(&key.as_str()) {
                let mut property = property.clone();
                // The one parameter whose range depends on the system: Glicko-2's τ.
                if let (SystemName::Glicko2, "tau", RefOr::T(Schema::Object(tau))) =
                    (system, key.as_str(), &mut property)
                {
                    tau.minimum = Some(utoipa::Number::Float(1e-6));
                    tau.maximum = Some(utoipa::Number::Float(100.0));
                }
                branch = branch.property(key, property);
            } else if key != "system" {
                // Another system's parameter: the server takes `null` as leaving it out.
                let absent = ObjectBuilder::new()
                    .schema_type(Type::Null)
                    .description(Some("Not a parameter of this system: only `null`."));
                branch = branch.property(key, absent);
            }
        }
        tagged = tagged.item(branch);
    }
    components
        .schemas
        .insert(name.into_owned(), RefOr::T(Schema::OneOf(tagged.build())));
}

/// Lists every pool with its parameters and counts.
#[utoipa::path(get, path = "/v1/pools", tag = "pools",
    responses((status = 200, body = PoolsResponse), (status = 401, body = ErrorResponse),
        (status = 403, body = ErrorResponse), (status = 503, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn list_pools(
    auth: Authorized<Read>,
    State(state): State<AppState>,
) -> Result<Json<PoolsResponse>, Error> {
    let mut pools = Vec::new();
    let stored = reads(&state, auth.client()).await.pools().await?;
    for info in stored {
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
    params(("pool" = String, Path, description = "Pool name", pattern = r"^[a-z0-9_-]{1,64}$")),
    responses((status = 200, body = PoolResponse), (status = 401, body = ErrorResponse),
        (status = 403, body = ErrorResponse), (status = 404, body = ErrorResponse),
        (status = 503, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn get_pool(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
) -> Result<Json<PoolResponse>, Error> {
    let info = reads(&state, auth.client()).await.pool(&pool).await?;
    let info = info.ok_or(Error::NotFound {
        what: "pool",
        id: pool,
    })?;
    Ok(Json(PoolResponse::served(&state, info).await?))
}

/// Creates a pool, or changes its parameters while it has no rounds (409 once it has).
/// `system` is `elo_mmr` unless given, or any of the seven systems (the examples give each
/// with its defaults); parameters left out take the service's configured defaults
/// (`[engine]`) for Elo-MMR and the system's own for the others.
#[utoipa::path(put, path = "/v1/pools/{pool}", tag = "pools",
    params(("pool" = String, Path, description = "Pool name", pattern = r"^[a-z0-9_-]{1,64}$")),
    request_body = ParamsOverrides,
    responses((status = 201, body = PutPoolResponse, description = "Created"),
        (status = 200, body = PutPoolResponse, description = "Updated or unchanged"),
        (status = 400, body = ErrorResponse), (status = 401, body = ErrorResponse),
        (status = 403, body = ErrorResponse), (status = 409, body = ErrorResponse),
        (status = 413, body = ErrorResponse), (status = 415, body = ErrorResponse),
        (status = 422, body = ErrorResponse), (status = 503, body = ErrorResponse)),
    security(("bearer" = [])))]
async fn put_pool(
    _: Authorized<Admin>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    JsonBody(overrides): JsonBody<ParamsOverrides>,
) -> Result<(StatusCode, Json<PutPoolResponse>), Error> {
    if !names::is_pool_name(&pool) {
        return Err(Error::invalid(
            "invalid_pool_name",
            "pool",
            "pool names are 1 to 64 characters of a-z, 0-9, `_` and `-`",
        ));
    }
    let (outcome, params) =
        state
            .put_pool(&pool, &overrides)
            .await
            .map_err(|error| match error {
                PutPoolError::Invalid(error) => Error::invalid(
                    "invalid_parameter",
                    error.field().unwrap_or_default(),
                    error.to_string(),
                ),
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
            params: ParamsResponse::from(&params),
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
    params(("pool" = String, Path, description = "Pool name", pattern = r"^[a-z0-9_-]{1,64}$"),
        DeleteQuery),
    responses((status = 200, body = DeletedResponse, description = "Deleted"),
        (status = 400, body = ErrorResponse, description = "`confirm` does not repeat the name"),
        (status = 401, body = ErrorResponse), (status = 403, body = ErrorResponse),
        (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse, description = "A recomputation is under way"),
        (status = 503, body = ErrorResponse)),
    security(("bearer" = [])))]
async fn delete_pool(
    _: Authorized<Admin>,
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
    match state.delete_pool(&pool).await? {
        Deletion::Deleted => Ok(Json(DeletedResponse {
            name: pool,
            outcome: "deleted",
        })),
        Deletion::NotFound => Err(Error::NotFound {
            what: "pool",
            id: pool,
        }),
        Deletion::Recomputing => Err(Error::Recomputing(pool)),
    }
}
