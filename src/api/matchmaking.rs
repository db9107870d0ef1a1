//! `POST /v1/pools/{pool}/matchmaking`: from a list of waiting players, the matches of the best
//! total match quality that every player's quality floor allows (docs/matchmaking.md), and who
//! is left waiting; and `GET …/players/{player}/opponents`: a player's best opponents among
//! the recently active. Both run on the compute pool on the pool's current snapshot, like
//! predictions; unknown waiting players are matched as newcomers.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answer::HeldJson;
use super::auth::{Authorized, Read};
use super::error::{Error, ErrorResponse, Resource};
use super::json::{compute_body_limit, ComputeJson};
use super::pool_of;
use super::query::QueryParams;
use super::shown::{rfc3339, RoundRef};
use crate::compute::MAX_ENTRANTS;
use crate::engine::matchmaking::{
    best_opponents, check, matchmake, work_per_player, Relaxation, Waiting, MAX_WORK_PER_PLAYER,
};
use crate::engine::predict::head_to_head;
use crate::engine::{self, Beliefs};
use crate::names;
use crate::state::AppState;

/// Most players one request may list.
pub const MAX_WAITING: usize = 10_000;

/// Most players one match may hold (`team_size × teams`): the search keeps one state per set
/// of matched players among the last `team_size × teams − 1` or more, 2⁹ at this bound.
pub const MAX_MATCH_PLAYERS: usize = 10;

/// The floor schedule when a request gives none: 0.5 for a player who just arrived, 0.005
/// lower per second waited (0.3 per minute), never below 0.1.
pub const DEFAULT_RELAXATION: Relaxation = Relaxation {
    start: 0.5,
    per_second: 0.005,
    min: 0.1,
};

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_matchmaking))
        .routes(routes!(list_opponents))
        .layer(compute_body_limit())
}

/// A player waiting for a match.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitingRequest {
    /// The player's id.
    #[schema(min_length = 1)]
    pub player: String,
    /// Seconds they have waited (0 or more; default 0).
    #[serde(default)]
    #[schema(minimum = 0.0)]
    pub waited: f64,
}

/// The quality a player accepts after waiting `w` seconds: `max(min, start − per_second · w)`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RelaxationRequest {
    /// The floor of a player who has not waited (0–1; default 0.5).
    #[serde(default = "default_start")]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub start: f64,
    /// How much the floor falls per second waited (0 or more; default 0.005).
    #[serde(default = "default_per_second")]
    #[schema(minimum = 0.0)]
    pub per_second: f64,
    /// The lowest the floor falls (0–1; default 0.1).
    #[serde(default = "default_min")]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub min: f64,
}

fn default_start() -> f64 {
    DEFAULT_RELAXATION.start
}

fn default_per_second() -> f64 {
    DEFAULT_RELAXATION.per_second
}

fn default_min() -> f64 {
    DEFAULT_RELAXATION.min
}

/// Who is waiting, and what matches to make of them.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MatchmakingRequest {
    /// 1 to 10,000 distinct players; their number must be a multiple of `team_size`.
    #[schema(min_items = 1, max_items = 10000)]
    pub waiting: Vec<WaitingRequest>,
    /// Players per team (default 1).
    #[serde(default = "one")]
    #[schema(minimum = 1)]
    pub team_size: usize,
    /// Teams per match (default 2); `team_size × teams` is at most 10, and five teams of two
    /// (945 splits of every match to score) are refused.
    #[serde(default = "two")]
    #[schema(minimum = 2)]
    pub teams: usize,
    /// How each player's quality floor falls with waiting; the default schedule if absent.
    #[serde(default)]
    pub relaxation: Option<RelaxationRequest>,
}

fn one() -> usize {
    1
}

fn two() -> usize {
    2
}

/// One match made.
#[derive(Debug, Serialize, ToSchema)]
pub struct MatchResponse {
    /// Its teams, each a list of player ids.
    pub teams: Vec<Vec<String>>,
    /// The teams' match quality (0–1).
    pub quality: f64,
}

/// The matches made and who is left waiting.
#[derive(Debug, Serialize, ToSchema)]
pub struct MatchmakingResponse {
    /// The matches, weakest first.
    pub matches: Vec<MatchResponse>,
    /// Players left waiting, in the order given.
    pub waiting: Vec<String>,
    /// The sum of the matches' qualities: what the matching maximises.
    pub total_quality: f64,
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> Error {
    Error::invalid("invalid_matchmaking", field, message)
}

/// Checks the request's shape and bounds; returns the floor schedule.
fn validate(request: &MatchmakingRequest) -> Result<Relaxation, Error> {
    let waiting = &request.waiting;
    if waiting.is_empty() || waiting.len() > MAX_WAITING {
        return Err(invalid(
            "waiting",
            format!("1 to {MAX_WAITING} players may wait"),
        ));
    }
    let mut seen = HashSet::with_capacity(waiting.len());
    for (i, w) in waiting.iter().enumerate() {
        if let Some(problem) = names::id_problem(&w.player) {
            return Err(invalid(format!("waiting[{i}].player"), problem));
        }
        if !seen.insert(w.player.as_str()) {
            return Err(invalid(
                format!("waiting[{i}].player"),
                format!("player `{}` is listed twice", w.player),
            ));
        }
        if w.waited < 0.0 {
            return Err(invalid(
                format!("waiting[{i}].waited"),
                "seconds waited cannot be negative",
            ));
        }
    }
    if request.team_size == 0 {
        return Err(invalid("team_size", "a team has at least one player"));
    }
    if request.teams < 2 {
        return Err(invalid("teams", "a match has at least two teams"));
    }
    if request.team_size.saturating_mul(request.teams) > MAX_MATCH_PLAYERS {
        return Err(invalid(
            "teams",
            format!("team_size × teams is at most {MAX_MATCH_PLAYERS}"),
        ));
    }
    let work = work_per_player(request.team_size, request.teams);
    if work > MAX_WORK_PER_PLAYER {
        return Err(invalid(
            "teams",
            format!(
                "this format scores {work} team splits per waiting player; at most {MAX_WORK_PER_PLAYER}"
            ),
        ));
    }
    if waiting.len() % request.team_size != 0 {
        return Err(invalid(
            "team_size",
            format!(
                "{} waiting players do not make whole teams of {}",
                waiting.len(),
                request.team_size
            ),
        ));
    }
    let Some(r) = &request.relaxation else {
        return Ok(DEFAULT_RELAXATION);
    };
    for (field, value, range, message) in [
        (
            "relaxation.start",
            r.start,
            0.0..=1.0,
            "must be between 0 and 1",
        ),
        (
            "relaxation.per_second",
            r.per_second,
            0.0..=f64::MAX,
            "cannot be negative",
        ),
        (
            "relaxation.min",
            r.min,
            0.0..=1.0,
            "must be between 0 and 1",
        ),
    ] {
        if !range.contains(&value) {
            return Err(invalid(field, message));
        }
    }
    Ok(Relaxation {
        start: r.start,
        per_second: r.per_second,
        min: r.min,
    })
}

/// Matches of `teams` teams of `team_size` among the waiting players that maximise the sum of
/// their match qualities, each reaching the quality floor of every player in it; the floor falls
/// the longer a player has waited. Deterministic: the same request on the same ratings gives
/// the same answer.
#[utoipa::path(post, path = "/v1/pools/{pool}/matchmaking", tag = "predictions",
    request_body = MatchmakingRequest,
    responses((status = 200, body = MatchmakingResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn create_matchmaking(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    ComputeJson(request): ComputeJson<MatchmakingRequest>,
) -> Result<HeldJson<MatchmakingResponse>, Error> {
    let relaxation = validate(&request)?;
    let snapshot = pool_of(&state, auth.client(), &pool).await?.read();
    let (team_size, teams) = (request.team_size, request.teams);
    let ids: Vec<String> = request.waiting.iter().map(|w| w.player.clone()).collect();
    let waited: Vec<f64> = request.waiting.iter().map(|w| w.waited).collect();
    let outcome = state
        .limits
        .compute
        .run_held(auth.client(), ids.len().min(MAX_ENTRANTS), move |cancel| {
            let system = snapshot.system();
            let players = ids
                .iter()
                .zip(&waited)
                .map(|(id, &waited)| {
                    let state = snapshot.belief_or_newcomer(id);
                    Ok(Waiting {
                        performance: system.performance(&[state])?,
                        waited,
                    })
                })
                .collect::<Result<Vec<_>, engine::Error>>()?;
            matchmake(&players, team_size, teams, &relaxation, cancel).map(|m| (m, ids))
        })
        .await;
    let (outcome, held) = outcome?;
    let (matching, ids) = match outcome {
        Ok(done) => done,
        Err(engine::Error::Cancelled) => return Err(Error::Timeout),
        Err(error) => {
            tracing::error!(error = %error, "matchmaking failed");
            return Err(Error::Internal);
        }
    };
    // Folded from +0: `Sum` starts at -0 (IEEE's identity for addition), which a list of no
    // matches would show as `-0.0`.
    let total_quality = matching
        .matches
        .iter()
        .fold(0.0, |total, m| total + m.quality);
    Ok(HeldJson(
        MatchmakingResponse {
            matches: matching
                .matches
                .into_iter()
                .map(|m| MatchResponse {
                    teams: m
                        .teams
                        .into_iter()
                        .map(|team| team.into_iter().map(|i| ids[i].clone()).collect())
                        .collect(),
                    quality: m.quality,
                })
                .collect(),
            waiting: matching
                .waiting
                .into_iter()
                .map(|i| ids[i].clone())
                .collect(),
            total_quality,
        },
        held,
    ))
}

/// Opponents listed when `limit` is not given.
const DEFAULT_OPPONENTS: u32 = 10;

/// Most opponents one request lists.
const MAX_OPPONENTS: u32 = 100;

/// `active_days` when not given.
const DEFAULT_ACTIVE_DAYS: f64 = 30.0;

/// `?limit=&active_days=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OpponentsQuery {
    /// Opponents listed (1–100, default 10).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// Only players whose last round is at most this many days older than the pool's newest
    /// round (default 30).
    #[param(exclusive_minimum = 0.0)]
    active_days: Option<f64>,
}

/// One possible opponent.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpponentResponse {
    /// The opponent's id.
    pub player: String,
    /// Their rating.
    pub mu: f64,
    /// Their uncertainty; `null` in a system that keeps none (Elo).
    pub sigma: Option<f64>,
    /// The match quality of the two, one against one.
    pub quality: f64,
    /// P(the player asked about beats this opponent).
    pub p_win: f64,
    /// The opponent's last round.
    pub last_round: RoundRef,
}

/// A player's best opponents.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpponentsResponse {
    /// The player asked about.
    pub player: String,
    /// At most `limit` opponents, best match first (ties by id).
    pub opponents: Vec<OpponentResponse>,
    /// Players who were active within the window, the player excepted: those ranked.
    pub active: u64,
}

/// A player's best opponents by match quality among the players active in the last
/// `active_days` days of the pool's round clock (the time of its newest round). A player whose
/// last round carried no time counts as active.
#[utoipa::path(get, path = "/v1/pools/{pool}/players/{player}/opponents", tag = "predictions",
    params(("player" = String, Path, description = "Player id"), OpponentsQuery),
    responses((status = 200, body = OpponentsResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn list_opponents(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path((pool, player)): Path<(String, String)>,
    QueryParams(query): QueryParams<OpponentsQuery>,
) -> Result<HeldJson<OpponentsResponse>, Error> {
    let limit = match query.limit.unwrap_or(DEFAULT_OPPONENTS) {
        limit @ 1..=MAX_OPPONENTS => limit as usize,
        _ => return Err(Error::query("limit", "must be between 1 and 100")),
    };
    let days = query.active_days.unwrap_or(DEFAULT_ACTIVE_DAYS);
    if !(days.is_finite() && days > 0.0) {
        return Err(Error::query(
            "active_days",
            "must be a finite number above 0",
        ));
    }
    let snapshot = pool_of(&state, auth.client(), &pool).await?.read();
    let cost = snapshot.len().min(MAX_ENTRANTS);
    let asked = player.clone();
    let outcome = state
        .limits
        .compute
        .run_held(auth.client(), cost, move |cancel| {
            opponents(&snapshot, asked, limit, days, cancel)
        })
        .await;
    let (outcome, held) = outcome?;
    match outcome {
        Ok(Some(found)) => Ok(HeldJson(found, held)),
        Ok(None) => Err(Error::NotFound {
            what: Resource::Player,
            id: player,
        }),
        Err(engine::Error::Cancelled) => Err(Error::Timeout),
        Err(error) => {
            tracing::error!(error = %error, "finding opponents failed");
            Err(Error::Internal)
        }
    }
}

/// How many players [`opponents`] looks at between two looks at its cancel flag: a few
/// milliseconds of work at most.
const PLAYERS_BETWEEN_CHECKS: usize = 4096;

/// [`list_opponents`]' computation: O(n) over the snapshot's players; `None` if `player` is
/// not rated, [`engine::Error::Cancelled`] soon after `cancel` is set.
fn opponents(
    snapshot: &crate::pools::PoolState,
    player: String,
    limit: usize,
    days: f64,
    cancel: &AtomicBool,
) -> Result<Option<OpponentsResponse>, engine::Error> {
    let system = snapshot.system();
    let Some(state) = snapshot.belief(&player) else {
        return Ok(None);
    };
    let me = system.performance(&[state])?;
    let newest = snapshot.rated().filter_map(|(_, _, last)| last.time).max();
    // Days as seconds, rounded down; a window past the clock's range covers everything.
    let since = newest.map(|t| t.saturating_sub((days * 86_400.0) as i64));
    let mut candidates = Vec::new();
    let mut performances = Vec::new();
    for (seen, (id, state, last)) in snapshot.rated().enumerate() {
        if seen % PLAYERS_BETWEEN_CHECKS == 0 {
            check(cancel)?;
        }
        let active = match (since, last.time) {
            (Some(since), Some(time)) => time >= since,
            _ => true,
        };
        if active && id != player {
            performances.push(system.performance(&[state])?);
            candidates.push((id, state, last));
        }
    }
    check(cancel)?;
    let best = best_opponents(&me, &performances, limit);
    let mut listed = Vec::with_capacity(best.len());
    for (i, quality) in best {
        let (id, state, last) = candidates[i];
        let rating = state.rating();
        listed.push(OpponentResponse {
            player: id.to_owned(),
            mu: rating.mu,
            sigma: rating.sigma,
            quality,
            p_win: head_to_head(snapshot, &player, id)?.probability,
            last_round: RoundRef {
                id: last.id.to_string(),
                time: rfc3339(last.time),
            },
        });
    }
    Ok(Some(OpponentsResponse {
        player,
        opponents: listed,
        active: candidates.len() as u64,
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::opponents;
    use crate::display::Display;
    use crate::engine::{self, EloMmrParams, EloMmrState, SystemState};
    use crate::pools::{LastRound, Played, PoolState};

    /// A pool of `n` players, each rated in one round of their own, `p0` the strongest.
    fn pool(n: usize) -> PoolState {
        let params = EloMmrParams::default();
        let mut state = PoolState::new(params.into(), Display::default()).expect("valid");
        for i in 0..n {
            let mut belief = EloMmrState::new(&params);
            belief.mu = 2000.0 - i as f64;
            let round = Played {
                player: format!("p{i}"),
                rank: 1,
                before: engine::Rating {
                    mu: 1500.0,
                    sigma: Some(350.0),
                },
                state: SystemState::EloMmr(belief),
                last_round: LastRound::new(Arc::from(format!("r{i}")), None, i as i64 + 1),
            };
            state.apply(i as i64 + 1, vec![round]);
        }
        state
    }

    #[test]
    fn opponents_stop_once_their_request_is_cancelled() {
        let state = pool(10_000);
        let cancelled = AtomicBool::new(true);
        assert!(matches!(
            opponents(&state, "p0".to_owned(), 5, 30.0, &cancelled),
            Err(engine::Error::Cancelled)
        ));
        let found = opponents(&state, "p0".to_owned(), 5, 30.0, &AtomicBool::new(false))
            .expect("not cancelled")
            .expect("p0 is rated");
        let names: Vec<_> = found.opponents.iter().map(|o| o.player.as_str()).collect();
        assert_eq!(names, ["p1", "p2", "p3", "p4", "p5"]);
        assert_eq!(found.active, 9_999);
    }
}
