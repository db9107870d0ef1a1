//! Predictions from current beliefs (docs/elo-mmr.md "Predictions"): each entrant's performance is
//! independent, with the mean and variance its rating system gives it (Elo-MMR: `μ` and
//! `δ² = σ² + β²`, teams summing over members), logistic or Gaussian. It reads beliefs and
//! never changes them.
//!
//! Layout: this file has an entrant's performance distribution and the closed-form head-to-head
//! probability; `placing` the exact k-entrant figures (P(first), expected ranks, pairwise
//! matrix) on `quadrature`; `quality` the match quality; `forecast` the calls by player id
//! against any [`Beliefs`](super::Beliefs) that the service's handlers make.

mod forecast;
mod placing;
mod quadrature;
mod quality;

use super::system::Model;
use super::LOGISTIC_SCALE;
use crate::maths::normal;

pub use forecast::{
    expected_places, forecast, head_to_head, resolve, EntrantForecast, Figures, Forecast,
    HeadToHead, Member,
};
pub use placing::{expected_ranks, first_place_probabilities, pairwise_matrix};
pub use quality::{match_quality, match_quality_two};

/// P(an entrant with performance `(mu_a, var_a)` beats one with `(mu_b, var_b)`) in closed
/// form: exact in the Gaussian model, and in the logistic model the usual approximation
/// (docs/elo-mmr.md, "Predictions": a logistic in the difference of means with
/// `s = sqrt(var_a + var_b)`), cheap enough for
/// every pair of a large round; it is off by up to about 0.01. [`pairwise_matrix`] has the
/// exact logistic value.
#[must_use]
pub fn beats(model: Model, (mu_a, var_a): (f64, f64), (mu_b, var_b): (f64, f64)) -> f64 {
    let spread = (var_a + var_b).sqrt();
    match model {
        Model::Logistic => 1.0 / (1.0 + (-(mu_a - mu_b) / (LOGISTIC_SCALE * spread)).exp()),
        Model::Gaussian => normal::cdf((mu_a - mu_b) / spread),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn equal_entrants_are_even_and_probabilities_are_complementary(
            gaussian in any::<bool>(),
            a in (-3000.0..3000.0f64, 1.0..1e6f64),
            b in (-3000.0..3000.0f64, 1.0..1e6f64),
        ) {
            let model = if gaussian { Model::Gaussian } else { Model::Logistic };
            prop_assert!((beats(model, a, a) - 0.5).abs() < 1e-15);
            let p = beats(model, a, b);
            prop_assert!((p + beats(model, b, a) - 1.0).abs() < 1e-12);
            prop_assert_eq!(p > 0.5, a.0 > b.0);
        }
    }
}
