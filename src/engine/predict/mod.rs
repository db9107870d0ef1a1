//! Predictions from current beliefs (MATH.md "Predictions"): each entrant's performance is
//! independent with mean `μ` and variance `δ² = σ² + β²` (teams: sums over members). It reads
//! beliefs and never changes them.
//!
//! Layout: this file has an entrant's performance distribution and the closed-form head-to-head
//! probability; `placing` the exact k-entrant figures (P(first), expected ranks, pairwise
//! matrix) on `quadrature`; `quality` the match quality; `forecast` the calls by player id
//! against any [`Beliefs`](super::Beliefs) that the service's handlers make.

mod forecast;
mod placing;
mod quadrature;
mod quality;

use super::normal;
use super::params::{Params, Variant};
use super::player::PlayerState;
use super::LOGISTIC_SCALE;

pub use forecast::{
    forecast, head_to_head, resolve, EntrantForecast, Figures, Forecast, HeadToHead, Member,
};
pub use placing::{expected_ranks, first_place_probabilities, pairwise_matrix};
pub use quality::{match_quality, match_quality_two};

/// Mean and variance of an entrant's performance in a round of weight 1: the sums over its
/// members of `μ` and of `σ² + β²`.
#[must_use]
pub fn performance_distribution(params: &Params, members: &[&PlayerState]) -> (f64, f64) {
    let beta2 = params.beta * params.beta;
    members.iter().fold((0.0, 0.0), |(mu, var), p| {
        (mu + p.mu, var + p.sigma * p.sigma + beta2)
    })
}

/// P(an entrant with performance `(mu_a, var_a)` beats one with `(mu_b, var_b)`) in closed
/// form: exact in the Gaussian model, and in the logistic model MATH.md's usual approximation
/// (a logistic in the difference of means with `s = sqrt(var_a + var_b)`), cheap enough for
/// every pair of a large round; it is off by up to about 0.01. [`pairwise_matrix`] has the
/// exact logistic value.
#[must_use]
pub fn beats(params: &Params, (mu_a, var_a): (f64, f64), (mu_b, var_b): (f64, f64)) -> f64 {
    let spread = (var_a + var_b).sqrt();
    match params.variant {
        Variant::Logistic => 1.0 / (1.0 + (-(mu_a - mu_b) / (LOGISTIC_SCALE * spread)).exp()),
        Variant::Gaussian => normal::cdf((mu_a - mu_b) / spread),
    }
}

/// P(player `a` beats player `b`) in a head-to-head round.
#[must_use]
pub fn win_probability(params: &Params, a: &PlayerState, b: &PlayerState) -> f64 {
    beats(
        params,
        performance_distribution(params, &[a]),
        performance_distribution(params, &[b]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_players_are_even_and_probabilities_are_complementary() {
        let params = Params::default();
        let mut a = PlayerState::new(&params);
        let b = a.clone();
        assert!((win_probability(&params, &a, &b) - 0.5).abs() < 1e-15);
        a.mu += 300.0;
        let p = win_probability(&params, &a, &b);
        assert!(p > 0.5 && (p + win_probability(&params, &b, &a) - 1.0).abs() < 1e-15);
    }
}
