//! `/v1/pools/{pool}/leaderboard`: players by μ, μ − kσ or the display rating, every rated
//! player or the established ones only (by default as the pool's display settings say), a page
//! at a time, from memory ([`super::boards`]).

use axum::extract::{Path, State};
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Authorized, Read};
use super::boards::{answered, board_as_of, LeaderboardQuery, LeaderboardResponse};
use super::error::{Error, ErrorResponse};
use super::pool_of;
use super::query::QueryParams;
use crate::state::AppState;

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_leaderboard))
}

/// The leaderboard, a page at a time: from the top, after a `cursor`, or `around` a player.
#[utoipa::path(get, path = "/v1/pools/{pool}/leaderboard", tag = "players",
    params(LeaderboardQuery),
    responses((status = 200, body = LeaderboardResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn list_leaderboard(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(query): QueryParams<LeaderboardQuery>,
) -> Result<Json<LeaderboardResponse>, Error> {
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let past = match &query.as_of {
        Some(round) => Some(board_as_of(&state, auth.client(), &pool, round).await?),
        None => None,
    };
    answered(&state, auth.client(), pool.read(), past, query).await
}
