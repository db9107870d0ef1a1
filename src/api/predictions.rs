//! Predictions from current ratings (memory only): the win probability of one player against
//! another, the forecast for a set of entrants (P(first), expected rank, match quality, and
//! the pairwise matrix on request) and the match quality of sides, or of up to 1,000 candidate
//! matches at once. Unknown players are
//! predicted as newcomers and marked `"known": false`. Forecasts run on the compute pool
//! ([`crate::compute`]) on the pool's current snapshot, holding no lock, within a budget of
//! `server.max_concurrent_computations` × [`MAX_ENTRANTS`] entrants computing at once (503
//! `overloaded` beyond), and a request that
//! times out or is dropped stops its computation.

use axum::extract::{Path, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answer::HeldJson;
use super::auth::{Authorized, Read};
use super::error::{Error, ErrorResponse};
use super::json::{compute_body_limit, ComputeJson};
use super::pool_of;
use super::query::QueryParams;
use crate::compute::Held;
use crate::engine;
use crate::engine::predict::{self, Figures, Forecast};
use crate::engine::{PredictionPath, RequestNames};
use crate::names;
use crate::state::AppState;

use crate::compute::MAX_ENTRANTS;

/// Most players one prediction may name, over all its entrants (or sides); and one request of
/// candidate matches, over all of them.
pub const MAX_PLAYERS: usize = 10_000;

/// Most candidate matches one `POST …/match-qualities` judges.
pub const MAX_GROUPS: usize = 1000;

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_win_probability))
        .routes(routes!(create_prediction))
        .routes(routes!(create_match_quality))
        .routes(routes!(create_match_qualities))
        .layer(compute_body_limit())
}

/// `?a=&b=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WinProbabilityQuery {
    /// One player.
    #[param(min_length = 1)]
    a: String,
    /// The other, not `a`.
    #[param(min_length = 1)]
    b: String,
}

/// P(a beats b) head to head.
#[derive(Debug, Serialize, ToSchema)]
pub struct WinProbabilityResponse {
    /// Player a.
    pub a: String,
    /// Player b.
    pub b: String,
    /// P(a finishes ahead of b).
    pub p_a: f64,
    /// P(b finishes ahead of a) = 1 − p_a.
    pub p_b: f64,
    /// Whether a has played in the pool.
    pub a_known: bool,
    /// Whether b has played in the pool.
    pub b_known: bool,
}

/// One entrant of a prediction: a player or a team.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntrantRequest {
    /// The entrant's players (one for a solo player).
    #[schema(min_items = 1)]
    pub players: Vec<String>,
}

/// The entrants of a round to predict.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PredictionRequest {
    /// At least two, at most 1000, disjoint entrants, with at most 10,000 players in all.
    #[schema(min_items = 2, max_items = 1000)]
    pub entrants: Vec<EntrantRequest>,
    /// Whether to include the pairwise matrix (k² numbers; default false).
    #[serde(default)]
    pub pairwise: bool,
}

/// A player in a prediction.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemberResponse {
    /// The player's id.
    pub player: String,
    /// Whether they have played in the pool (if not, they are predicted as a newcomer).
    pub known: bool,
}

/// What is predicted for one entrant.
#[derive(Debug, Serialize, ToSchema)]
pub struct EntrantPrediction {
    /// The entrant's players.
    pub players: Vec<MemberResponse>,
    /// P(the entrant finishes first).
    pub p_first: f64,
    /// Expected rank, 1 being first.
    pub expected_rank: f64,
}

/// Everything predicted for a set of entrants.
#[derive(Debug, Serialize, ToSchema)]
pub struct PredictionResponse {
    /// In the order given.
    pub entrants: Vec<EntrantPrediction>,
    /// `pairwise[i][j]` = P(entrant i finishes ahead of entrant j); the diagonal is ½. Only
    /// when the request asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<Vec<Vec<f64>>>,
    /// Match quality of the entrants as sides, in [0, 1]: higher is a closer match.
    pub quality: f64,
}

/// Sides of a match to judge.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MatchQualityRequest {
    /// At least two, at most 1000, disjoint sides, each a list of player ids, with at most
    /// 10,000 players in all.
    #[schema(min_items = 2, max_items = 1000)]
    pub sides: Vec<Vec<String>>,
}

/// Candidate matches to judge at once (a matchmaker's shortlist).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MatchQualitiesRequest {
    /// 1 to 1000 candidate matches, each as `POST …/match-quality` takes one, with at most
    /// 10,000 players in all of them together.
    #[schema(min_items = 1, max_items = 1000)]
    pub groups: Vec<MatchQualityRequest>,
}

/// How even each candidate match is.
#[derive(Debug, Serialize, ToSchema)]
pub struct MatchQualitiesResponse {
    /// Each candidate's answer, as `POST …/match-quality` gives it, in the order given.
    pub groups: Vec<MatchQualityResponse>,
}

/// One side's chances.
#[derive(Debug, Serialize, ToSchema)]
pub struct SideResponse {
    /// The side's players.
    pub players: Vec<MemberResponse>,
    /// P(this side beats every other side).
    pub p_win: f64,
}

/// How even a match is.
#[derive(Debug, Serialize, ToSchema)]
pub struct MatchQualityResponse {
    /// Match quality in [0, 1] (TrueSkill's draw-probability form): higher is a closer match.
    pub quality: f64,
    /// Each side's chances, in the order given.
    pub sides: Vec<SideResponse>,
}

/// The answer to an engine error about a request that names its entrants `names`.
fn invalid_prediction(error: &engine::Error, names: RequestNames) -> Error {
    match error {
        engine::Error::InvalidPrediction { at, problem } => Error::invalid(
            "invalid_prediction",
            at.render(names),
            problem.render(names),
        ),
        other => Error::invalid(
            "invalid_prediction",
            other.field().unwrap_or_default(),
            other.to_string(),
        ),
    }
}

/// `POST /predictions` names its list `entrants`, each entrant an object with `players`.
const PREDICTION_NAMES: RequestNames = engine::ENTRANTS;

/// `POST /match-quality` names its list `sides`, each side a list of players.
const MATCH_QUALITY_NAMES: RequestNames = RequestNames {
    list: "sides",
    players: "",
};

/// The answer to an engine error about candidate match `group` of a request of many.
fn invalid_group(error: &engine::Error, group: usize) -> Error {
    match invalid_prediction(error, MATCH_QUALITY_NAMES) {
        Error::Invalid {
            code,
            field,
            message,
        } => Error::Invalid {
            code,
            field: format!("groups[{group}].{field}"),
            message,
        },
        other => other,
    }
}

/// P(player a beats player b) head to head.
#[utoipa::path(get, path = "/v1/pools/{pool}/win-probability", tag = "predictions",
    params(WinProbabilityQuery),
    responses((status = 200, body = WinProbabilityResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn get_win_probability(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(query): QueryParams<WinProbabilityQuery>,
) -> Result<Json<WinProbabilityResponse>, Error> {
    for (field, id) in [("a", &query.a), ("b", &query.b)] {
        if let Some(problem) = names::id_problem(id) {
            return Err(Error::query(field, problem));
        }
    }
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let outcome = predict::head_to_head(&*pool.read(), &query.a, &query.b);
    let h2h = outcome.map_err(|e| match &e {
        engine::Error::InvalidPrediction { at, problem } => Error::query(
            at.render(engine::ENTRANTS),
            problem.render(engine::ENTRANTS),
        ),
        other => Error::query(other.field().unwrap_or_default(), other.to_string()),
    })?;
    Ok(Json(WinProbabilityResponse {
        a: query.a,
        b: query.b,
        p_a: h2h.probability,
        p_b: 1.0 - h2h.probability,
        a_known: h2h.a_known,
        b_known: h2h.b_known,
    }))
}

/// Refuses `entrants` beyond what one request may hold: more than [`MAX_ENTRANTS`], an id the
/// service does not accept, or a player past [`MAX_PLAYERS`] counting the `players` a request
/// named before them (to which theirs are added). Fields are `names`' paths after `prefix`;
/// `whole` names what the players are counted over.
fn check_bounds(
    entrants: &[Vec<String>],
    players: &mut usize,
    names: RequestNames,
    prefix: &str,
    whole: &str,
) -> Result<(), Error> {
    let refused = |path: PredictionPath, problem: String| {
        Error::invalid(
            "invalid_prediction",
            format!("{prefix}{}", path.render(names)),
            problem,
        )
    };
    if entrants.len() > MAX_ENTRANTS {
        let list = names.list;
        return Err(refused(
            PredictionPath::Entrants,
            format!("at most {MAX_ENTRANTS} {list}"),
        ));
    }
    for (i, ids) in entrants.iter().enumerate() {
        *players += ids.len();
        if *players > MAX_PLAYERS {
            return Err(refused(
                PredictionPath::Entrant(i),
                format!("at most {MAX_PLAYERS} players in all {whole} together"),
            ));
        }
        for (j, id) in ids.iter().enumerate() {
            if let Some(problem) = names::id_problem(id) {
                return Err(refused(PredictionPath::Member(i, j), problem.to_owned()));
            }
        }
    }
    Ok(())
}

/// Checks the request's size, then runs a forecast on the compute pool for the client of
/// `auth`, on the pool's current snapshot.
async fn forecast(
    state: &AppState,
    auth: &Authorized<Read>,
    pool: &str,
    entrants: Vec<Vec<String>>,
    figures: Figures,
    names: RequestNames,
) -> Result<(Forecast, Vec<Vec<String>>, Held), Error> {
    let snapshot = pool_of(state, auth.client(), pool).await?.read();
    check_bounds(&entrants, &mut 0, names, "", names.list)?;
    let cost = entrants.len();
    let outcome = state
        .limits
        .compute
        .run_held(auth.client(), cost, move |cancel| {
            predict::forecast(&*snapshot, &entrants, figures, cancel).map(|f| (f, entrants))
        })
        .await;
    let (outcome, held) = outcome?;
    match outcome {
        Ok((forecast, entrants)) => Ok((forecast, entrants, held)),
        // Only a request that went away is cancelled: nobody reads this answer.
        Err(engine::Error::Cancelled) => Err(Error::Timeout),
        Err(error) => Err(invalid_prediction(&error, names)),
    }
}

fn members(ids: Vec<String>, known: &[bool]) -> Vec<MemberResponse> {
    ids.into_iter()
        .zip(known)
        .map(|(player, &known)| MemberResponse { player, known })
        .collect()
}

/// The answer about `sides`, from their forecast.
fn match_quality(forecast: Forecast, sides: Vec<Vec<String>>) -> MatchQualityResponse {
    MatchQualityResponse {
        quality: forecast.quality,
        sides: sides
            .into_iter()
            .zip(forecast.entrants)
            .map(|(ids, e)| SideResponse {
                players: members(ids, &e.known),
                p_win: e.p_first,
            })
            .collect(),
    }
}

/// For a set of players or teams: each one's P(first) and expected rank, the pairwise win
/// probabilities, and the match quality.
#[utoipa::path(post, path = "/v1/pools/{pool}/predictions", tag = "predictions",
    request_body = PredictionRequest,
    responses((status = 200, body = PredictionResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn create_prediction(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    ComputeJson(request): ComputeJson<PredictionRequest>,
) -> Result<HeldJson<PredictionResponse>, Error> {
    let entrants = request.entrants.into_iter().map(|e| e.players).collect();
    let figures = Figures {
        expected_ranks: true,
        pairwise: request.pairwise,
    };
    let (forecast, entrants, held) =
        forecast(&state, &auth, &pool, entrants, figures, PREDICTION_NAMES).await?;
    let answer = PredictionResponse {
        entrants: entrants
            .into_iter()
            .zip(forecast.entrants)
            .map(|(ids, e)| EntrantPrediction {
                players: members(ids, &e.known),
                p_first: e.p_first,
                expected_rank: e.expected_rank.unwrap_or_default(),
            })
            .collect(),
        pairwise: forecast.pairwise,
        quality: forecast.quality,
    };
    Ok(HeldJson(answer, held))
}

/// How even each of up to 1000 candidate matches would be, and each side's chance to win it,
/// all on one snapshot of the pool, in one computation: a matchmaker's shortlist judged in one
/// request rather than one per candidate.
#[utoipa::path(post, path = "/v1/pools/{pool}/match-qualities", tag = "predictions",
    request_body = MatchQualitiesRequest,
    responses((status = 200, body = MatchQualitiesResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn create_match_qualities(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    ComputeJson(request): ComputeJson<MatchQualitiesRequest>,
) -> Result<HeldJson<MatchQualitiesResponse>, Error> {
    let groups: Vec<Vec<Vec<String>>> = request.groups.into_iter().map(|g| g.sides).collect();
    if !(1..=MAX_GROUPS).contains(&groups.len()) {
        return Err(Error::invalid(
            "invalid_prediction",
            "groups",
            format!("must list 1 to {MAX_GROUPS} candidate matches"),
        ));
    }
    let mut players = 0;
    for (g, group) in groups.iter().enumerate() {
        let prefix = format!("groups[{g}].");
        check_bounds(group, &mut players, MATCH_QUALITY_NAMES, &prefix, "groups")?;
    }
    let sides = groups.iter().map(Vec::len).sum();
    let snapshot = pool_of(&state, auth.client(), &pool).await?.read();
    // Every side of every candidate is an entrant computed, as in one large prediction.
    let (outcome, held) = state
        .limits
        .compute
        .run_held(auth.client(), sides, move |cancel| {
            let forecasts = groups
                .iter()
                .enumerate()
                .map(|(g, sides)| {
                    predict::forecast(&*snapshot, sides, Figures::default(), cancel)
                        .map_err(|error| (g, error))
                })
                .collect::<Result<Vec<Forecast>, _>>();
            forecasts.map(|forecasts| (forecasts, groups))
        })
        .await?;
    let (forecasts, groups) = match outcome {
        Ok(answer) => answer,
        Err((_, engine::Error::Cancelled)) => return Err(Error::Timeout),
        Err((g, error)) => return Err(invalid_group(&error, g)),
    };
    let answer = MatchQualitiesResponse {
        groups: forecasts
            .into_iter()
            .zip(groups)
            .map(|(forecast, sides)| match_quality(forecast, sides))
            .collect(),
    };
    Ok(HeldJson(answer, held))
}

/// How even a match between these sides would be, and each side's chance to win it.
#[utoipa::path(post, path = "/v1/pools/{pool}/match-quality", tag = "predictions",
    request_body = MatchQualityRequest,
    responses((status = 200, body = MatchQualityResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn create_match_quality(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    ComputeJson(request): ComputeJson<MatchQualityRequest>,
) -> Result<HeldJson<MatchQualityResponse>, Error> {
    let (forecast, sides, held) = forecast(
        &state,
        &auth,
        &pool,
        request.sides,
        Figures::default(),
        MATCH_QUALITY_NAMES,
    )
    .await?;
    let answer = match_quality(forecast, sides);
    Ok(HeldJson(answer, held))
}
