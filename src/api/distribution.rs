//! `GET /v1/pools/{pool}/distribution`: how the pool's ratings spread, as a histogram of μ
//! (the dashboard draws it), read off the snapshot's leaderboard sorted by μ.

use axum::extract::{Path, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Authorized, Read};
use super::error::{Error, ErrorResponse};
use super::pool_of;
use super::query::QueryParams;
use crate::pools::leaderboard::{Filter, Leaderboard, Order};
use crate::state::AppState;

/// Bins when `bins` is not given.
const DEFAULT_BINS: u32 = 20;
/// The most bins a histogram has.
const MOST_BINS: u32 = 200;

/// `?bins=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DistributionQuery {
    /// Equal-width bins between the lowest and the highest rating (1–200, default 20).
    #[param(minimum = 1, maximum = 200)]
    bins: Option<u32>,
}

/// One bin: the players whose μ is in `[low, high)` (the last bin includes `high`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Bin {
    /// Lower edge.
    pub low: f64,
    /// Upper edge.
    pub high: f64,
    /// Players in the bin.
    pub count: u64,
}

/// The histogram.
#[derive(Debug, Serialize, ToSchema)]
pub struct DistributionResponse {
    /// Rated players.
    pub players: u64,
    /// The bins, lowest first; empty when nobody is rated.
    pub bins: Vec<Bin>,
}

/// The route of this module.
pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(distribution))
}

/// A histogram of the pool's ratings (μ).
#[utoipa::path(get, path = "/v1/pools/{pool}/distribution", tag = "players",
    params(DistributionQuery),
    responses((status = 200, body = DistributionResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn distribution(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(query): QueryParams<DistributionQuery>,
) -> Result<Json<DistributionResponse>, Error> {
    let bins = match query.bins.unwrap_or(DEFAULT_BINS) {
        bins @ 1..=MOST_BINS => bins as usize,
        _ => return Err(Error::query("bins", "must be between 1 and 200")),
    };
    let current = pool_of(&state, auth.client(), &pool).await?.read();
    Ok(Json(histogram(current.leaderboard(), bins)))
}

/// `bins` equal-width bins from the lowest to the highest μ, counted off the leaderboard's μ
/// order (highest first) with one binary search per edge: O(bins · log n), however many
/// players the pool has.
fn histogram(board: &Leaderboard, bins: usize) -> DistributionResponse {
    let (order, all) = (Order::Mu, Filter::All);
    let players = board.len();
    let (Some(top), Some(bottom)) = (
        board.page(order, all, 0, 1).next(),
        board.page(order, all, players.saturating_sub(1), 1).next(),
    ) else {
        return DistributionResponse {
            players: 0,
            bins: Vec::new(),
        };
    };
    let (low, high) = (bottom.key, top.key);
    // All equal: one bin holds everyone.
    let bins = if high > low { bins } else { 1 };
    let width = (high - low) / bins as f64;
    let edge = |i: usize| {
        if i == bins {
            high
        } else {
            low + width * i as f64
        }
    };
    // Players at or above each bin's lower edge: all of them at the first, none past the last
    // (whose upper edge, the highest rating, it holds).
    let from = |i: usize| match i {
        0 => players,
        i if i == bins => 0,
        i => board.count_at_least(order, all, edge(i)),
    };
    DistributionResponse {
        players: players as u64,
        bins: (0..bins)
            .map(|i| Bin {
                low: edge(i),
                high: edge(i + 1),
                count: (from(i) - from(i + 1)) as u64,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Rating;
    use crate::pools::leaderboard::{Kept, Move, Standing};

    fn board(mus: &[f64]) -> Leaderboard {
        let mut board = Leaderboard::new(3.0, Kept::default());
        let moves: Vec<Move> = mus
            .iter()
            .enumerate()
            .map(|(i, &mu)| Move {
                player: format!("p{i}").into(),
                before: None,
                after: Standing {
                    rating: Rating {
                        mu,
                        sigma: Some(1.0),
                    },
                    established: true,
                    league: None,
                    last: i32::MAX,
                },
            })
            .collect();
        board.update(&moves);
        board
    }

    #[test]
    fn every_rating_falls_in_one_bin_the_highest_in_the_last() {
        let h = histogram(&board(&[0.0, 1.0, 2.5, 9.999, 10.0]), 4);
        let counts: Vec<u64> = h.bins.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 1, 0, 2]);
        assert_eq!((h.bins[0].low, h.bins[3].high), (0.0, 10.0));
        assert_eq!(histogram(&board(&[5.0, 5.0]), 7).bins.len(), 1);
        assert!(histogram(&board(&[]), 3).bins.is_empty());
    }
}
