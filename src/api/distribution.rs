//! `GET /v1/pools/{pool}/distribution`: how the pool's ratings spread, as a histogram of μ
//! (the dashboard draws it). One pass over the snapshot's players, off the async runtime.

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
    params(("pool" = String, Path, description = "Pool name", pattern = r"^[a-z0-9_-]{1,64}$"),
        DistributionQuery),
    responses((status = 200, body = DistributionResponse), (status = 400, body = ErrorResponse),
        (status = 401, body = ErrorResponse), (status = 403, body = ErrorResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn distribution(
    _: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(query): QueryParams<DistributionQuery>,
) -> Result<Json<DistributionResponse>, Error> {
    let bins = match query.bins.unwrap_or(DEFAULT_BINS) {
        bins @ 1..=MOST_BINS => bins as usize,
        _ => return Err(Error::query("bins", "must be between 1 and 200")),
    };
    let current = pool_of(&state, &pool).await?.read();
    let histogram = tokio::task::spawn_blocking(move || {
        let mus: Vec<f64> = current
            .beliefs()
            .map(|(_, belief)| belief.rating().mu)
            .filter(|mu| mu.is_finite())
            .collect();
        histogram(&mus, bins)
    })
    .await
    .map_err(|error| {
        tracing::error!(error = %error, "the histogram panicked");
        Error::Internal
    })?;
    Ok(Json(histogram))
}

/// `bins` equal-width bins from the lowest to the highest of `mus` (finite numbers).
fn histogram(mus: &[f64], bins: usize) -> DistributionResponse {
    let low = mus.iter().copied().fold(f64::INFINITY, f64::min);
    let high = mus.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if mus.is_empty() {
        return DistributionResponse {
            players: 0,
            bins: Vec::new(),
        };
    }
    // All equal: one bin holds everyone.
    let bins = if high > low { bins } else { 1 };
    let width = (high - low) / bins as f64;
    let mut counts = vec![0u64; bins];
    for &mu in mus {
        let bin = if width > 0.0 {
            (((mu - low) / width) as usize).min(bins - 1)
        } else {
            0
        };
        counts[bin] += 1;
    }
    DistributionResponse {
        players: mus.len() as u64,
        bins: counts
            .into_iter()
            .enumerate()
            .map(|(i, count)| Bin {
                low: low + width * i as f64,
                high: if i + 1 == bins {
                    high
                } else {
                    low + width * (i + 1) as f64
                },
                count,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rating_falls_in_one_bin_the_highest_in_the_last() {
        let h = histogram(&[0.0, 1.0, 2.5, 9.999, 10.0], 4);
        let counts: Vec<u64> = h.bins.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 1, 0, 2]);
        assert_eq!((h.bins[0].low, h.bins[3].high), (0.0, 10.0));
        assert_eq!(histogram(&[5.0, 5.0], 7).bins.len(), 1);
        assert!(histogram(&[], 3).bins.is_empty());
    }
}
