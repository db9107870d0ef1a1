//! `/v1/pools/{pool}/players`: a player's rating (from memory, with their peak from the
//! database), their rating history (from the database, paginated), and players found by id
//! prefix (from memory); `/v1/pools/{pool}/player-ratings`: many named players at once, from
//! one snapshot.

use axum::extract::{Path, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Authorized, Read};
use super::boards::board_as_of;
use super::error::{Error, ErrorResponse, Resource};
use super::json::JsonBody;
use super::query::{limit, seq_param, QueryParams};
use super::shown::{rfc3339, LastChangeResponse, PeakResponse, RoundRef, ShownChange};
use super::{pool_of, reads};
use crate::display::{Placement, Ranking};
use crate::names;
use crate::pools::leaderboard::{Filter, Order};
use crate::pools::PlayerRating;
use crate::state::AppState;

/// Entries per page when `limit` is not given.
const DEFAULT_LIMIT: u32 = 50;

/// Most players one `POST …/player-ratings` names.
pub const MOST_PLAYERS_AT_ONCE: usize = 1000;

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_players))
        .routes(routes!(get_player))
        .routes(routes!(get_player_history))
        .routes(routes!(player_ratings))
}

/// A player's current rating.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayerResponse {
    /// The player's id.
    pub player: String,
    /// Rating.
    pub mu: f64,
    /// Uncertainty (a standard deviation); `null` in a system that keeps none (Elo).
    pub sigma: Option<f64>,
    /// μ − kσ, k being the pool's `conservative_k` (default 3).
    pub conservative: f64,
    /// The fixed-range rating, if the pool's display settings give one; `null` otherwise.
    pub display_rating: Option<f64>,
    /// Whether the player is still provisional (the pool's display settings say when).
    pub provisional: bool,
    /// 1-based place on the pool's default leaderboard (`GET …/leaderboard` with no `order` or
    /// `established`); `null` when that leaderboard does not list the player (a provisional
    /// player, when it lists established players only).
    pub position: Option<u64>,
    /// Players on that leaderboard.
    pub total: u64,
    /// `100 · position / total`: the player is in the top this many percent; `null` with
    /// `position`.
    pub top_percent: Option<f64>,
    /// Rounds played.
    pub rounds: u64,
    /// The last round played.
    pub last_round: RoundRef,
    /// What that round did to the rating; `null` before any round, and once a season start
    /// has reset the rating since.
    pub last_change: Option<LastChangeResponse>,
    /// The round after which the player's rating stood highest in the pool's default order
    /// (μ − kσ, or μ with a fixed range or `default_order` `mu`), shown with today's display
    /// settings; the earliest of equals. Read from the player's history (one key lookup per
    /// round played), so only on `GET …/players/{player}` unless `peak=false`, not in lists;
    /// `null` there, and where the database cannot be read (the rest comes from memory).
    pub peak: Option<PeakResponse>,
    /// The player's league and division; `null` if the pool has no leagues or has not placed
    /// them yet.
    pub league: Option<Placement>,
}

impl From<PlayerRating> for PlayerResponse {
    fn from(p: PlayerRating) -> Self {
        let listed = p.listed;
        Self {
            player: p.player.to_string(),
            mu: listed.rating.mu,
            sigma: listed.rating.sigma,
            conservative: listed.shown.conservative,
            display_rating: listed.shown.display_rating,
            provisional: listed.shown.provisional,
            position: p.position.map(|p| p as u64),
            total: p.total as u64,
            top_percent: p
                .position
                .map(|position| 100.0 * position as f64 / p.total as f64),
            rounds: listed.rounds,
            last_round: RoundRef::of(&listed.last_round),
            last_change: listed.last_change.map(LastChangeResponse::from),
            peak: None,
            league: listed.league,
        }
    }
}

/// Players found by prefix.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayersResponse {
    /// Matching players, by id in lowercase, then as written.
    pub players: Vec<PlayerResponse>,
}

/// `?prefix=&limit=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PrefixQuery {
    /// Start of the player ids to find, case ignored (`Ham` finds `hamilton`); empty or absent
    /// lists players from the first id.
    prefix: Option<String>,
    /// Most players returned (1–1000, default 50).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

/// `?as_of=&peak=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PlayerQuery {
    /// The id of an applied round: the player as they stood right after it (from history
    /// rows, O(players); shown with today's display settings).
    as_of: Option<String>,
    /// `false`: leave `peak` out (`null`), so that the answer comes from memory alone, without
    /// the read of the player's history the peak takes. Default `true`.
    peak: Option<bool>,
}

/// `?limit=&before=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// Most entries returned (1–1000, default 50).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Only rounds older than this cursor (a previous page's `next_before`). Any other value
    /// is read by passing over the player's newer rounds first.
    #[param(minimum = 0)]
    before: Option<i64>,
}

/// One round in a player's history.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryEntryResponse {
    /// The round's id.
    pub round_id: String,
    /// When it took place (RFC 3339), if it said.
    pub time: Option<String>,
    /// The player's rank.
    pub rank: u64,
    /// Standings in the round.
    pub entrants: u64,
    /// The performance credited to the player.
    pub performance: f64,
    /// Rating before the round.
    pub mu_before: f64,
    /// Uncertainty before the round; `null` in a system that keeps none (Elo).
    pub sigma_before: Option<f64>,
    /// Rating after the round.
    pub mu: f64,
    /// Uncertainty after the round; `null` in a system that keeps none (Elo).
    pub sigma: Option<f64>,
    /// `mu − mu_before`.
    pub delta: f64,
    /// The player's league before the round; `null` when not placed (or no leagues).
    pub league_before: Option<Placement>,
    /// Their league after it.
    pub league_after: Option<Placement>,
    /// Why the rating moved: what the round's priors expected and what it showed before and
    /// after.
    #[serde(flatten)]
    pub shown: ShownChange,
}

/// A page of a player's history, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryResponse {
    /// The player.
    pub player: String,
    /// At most `limit` rounds, newest first.
    pub entries: Vec<HistoryEntryResponse>,
    /// Pass as `before` for the next page; `null` on the last page.
    pub next_before: Option<i64>,
}

/// Players whose id starts with `prefix`, case ignored, by id in lowercase.
#[utoipa::path(get, path = "/v1/pools/{pool}/players", tag = "players",
    params(PrefixQuery),
    responses((status = 200, body = PlayersResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn list_players(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(query): QueryParams<PrefixQuery>,
) -> Result<Json<PlayersResponse>, Error> {
    let limit = limit(query.limit, DEFAULT_LIMIT)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let found = pool
        .read()
        .with_prefix(query.prefix.as_deref().unwrap_or_default(), limit as usize);
    Ok(Json(PlayersResponse {
        players: found.into_iter().map(PlayerResponse::from).collect(),
    }))
}

/// Players to look up at once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayerRatingsRequest {
    /// 1 to 1000 player ids; each is answered once, in this order (a repeated id is answered
    /// again).
    #[schema(min_items = 1, max_items = 1000, example = json!(["hamilton", "verstappen"]))]
    pub players: Vec<String>,
    /// The order `position` counts in: `conservative`, `display_rating` or `mu`; default the
    /// pool's `default_order`, as on `GET …/leaderboard`.
    #[schema(inline)]
    pub order: Option<Ranking>,
    /// `true`: positions among established players only; `false`: provisional players too.
    /// Default: the pool's `list_provisional`, as on `GET …/leaderboard`.
    pub established: Option<bool>,
}

/// Many players' ratings at once.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayerRatingsResponse {
    /// The rated players among those asked for, in the order asked, each placed in the order
    /// asked for (`peak` is `null` here).
    pub players: Vec<PlayerResponse>,
    /// The ids asked for that the pool has not rated, in the order asked.
    pub unknown: Vec<String>,
}

/// The ratings and positions of up to 1000 named players at once, all from one snapshot of
/// the pool: what a lobby, a friend list or a matchmaker reads in one request rather than one
/// per player. Players the pool has not rated are listed under `unknown`, not an error.
#[utoipa::path(post, path = "/v1/pools/{pool}/player-ratings", tag = "players",
    request_body = PlayerRatingsRequest,
    responses((status = 200, body = PlayerRatingsResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn player_ratings(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    JsonBody(request): JsonBody<PlayerRatingsRequest>,
) -> Result<Json<PlayerRatingsResponse>, Error> {
    if !(1..=MOST_PLAYERS_AT_ONCE).contains(&request.players.len()) {
        return Err(Error::invalid(
            "invalid_request",
            "players",
            "must list 1 to 1000 player ids",
        ));
    }
    if let Some((i, problem)) = request
        .players
        .iter()
        .enumerate()
        .find_map(|(i, id)| names::id_problem(id).map(|problem| (i, problem)))
    {
        return Err(Error::invalid(
            "invalid_request",
            format!("players[{i}]"),
            problem,
        ));
    }
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let current = pool.read();
    let display = current.display();
    let ranking = display
        .ranking(request.order)
        .map_err(|problem| Error::invalid("invalid_request", "order", problem))?;
    let filter = if display.established_only(request.established) {
        Filter::Established
    } else {
        Filter::All
    };
    let mut answer = PlayerRatingsResponse {
        players: Vec::new(),
        unknown: Vec::new(),
    };
    for id in request.players {
        match current.player_on(&id, Order::of(ranking), filter) {
            Some(rating) => answer.players.push(rating.into()),
            None => answer.unknown.push(id),
        }
    }
    Ok(Json(answer))
}

/// A player's current rating and leaderboard position, or with `as_of` those right after an
/// applied round.
#[utoipa::path(get, path = "/v1/pools/{pool}/players/{player}", tag = "players",
    params(("player" = String, Path, description = "Player id"), PlayerQuery),
    responses((status = 200, body = PlayerResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn get_player(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path((pool, player)): Path<(String, String)>,
    QueryParams(query): QueryParams<PlayerQuery>,
) -> Result<Json<PlayerResponse>, Error> {
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let not_found = || Error::NotFound {
        what: Resource::Player,
        id: player.clone(),
    };
    let current = pool.read();
    let (rating, range) = match &query.as_of {
        None => (
            current.player(&player).ok_or_else(not_found)?,
            current.fixed_range(),
        ),
        Some(round) => {
            let past = board_as_of(&state, auth.client(), &pool, round).await?;
            let listed = past.listed(&player).ok_or_else(not_found)?;
            // Shown with today's display settings, as the past leaderboard is.
            let (order, filter) = Order::default_board(current.display());
            let rating = PlayerRating {
                player: player.as_str().into(),
                position: past.index_of(order, filter, &player).map(|index| index + 1),
                total: past.leaderboard().count(filter),
                listed,
            };
            (rating, past.fixed_range())
        }
    };
    let display = current.display();
    // Highest in the pool's default order (the fixed-range rating's is μ's).
    let (order, _) = Order::default_board(display);
    let peak = match query.peak {
        Some(false) => None,
        // The rest of the page is memory's: a database away costs the page its peak only.
        _ => match reads(&state, auth.client())
            .await
            .peak(
                pool.name(),
                &player,
                rating.listed.last_round.seq,
                order.k(display.conservative_k),
            )
            .await
        {
            Ok(peak) => peak.map(|peak| PeakResponse::of(peak, display, range)),
            Err(error) => {
                tracing::warn!(%error, "a player's peak could not be read: shown without it");
                None
            }
        },
    };
    Ok(Json(PlayerResponse {
        peak,
        ..rating.into()
    }))
}

/// The rounds a player played, newest first, with their rating after each.
#[utoipa::path(get, path = "/v1/pools/{pool}/players/{player}/history", tag = "players",
    params(("player" = String, Path, description = "Player id"), HistoryQuery),
    responses((status = 200, body = HistoryResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn get_player_history(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path((pool, player)): Path<(String, String)>,
    QueryParams(query): QueryParams<HistoryQuery>,
) -> Result<Json<HistoryResponse>, Error> {
    let limit = limit(query.limit, DEFAULT_LIMIT)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let before = seq_param("before", query.before)?;
    if pool.read().player(&player).is_none() {
        return Err(Error::NotFound {
            what: Resource::Player,
            id: player,
        });
    }
    let page = reads(&state, auth.client())
        .await
        .player_history(pool.name(), &player, limit, before)
        .await?;
    let current = pool.read();
    Ok(Json(HistoryResponse {
        player,
        entries: page
            .entries
            .into_iter()
            .map(|e| HistoryEntryResponse {
                shown: ShownChange::of(&current, &e.change, e.expected_rank),
                round_id: e.round_id,
                time: rfc3339(e.time),
                rank: e.rank,
                entrants: e.entrants,
                performance: e.change.performance,
                mu_before: e.change.before.mu,
                sigma_before: e.change.before.sigma,
                mu: e.change.after.mu,
                sigma: e.change.after.sigma,
                delta: e.change.delta(),
                league_before: e.league.before,
                league_after: e.league.after,
            })
            .collect(),
        next_before: page.next_before,
    }))
}
