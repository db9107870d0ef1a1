//! The ranges every rating system's parameters and every round are held to, so that the
//! arithmetic stays finite and normal: spreads, ratings and round weights, and the check that
//! a parameter lies in its range.

use super::Error;

/// Smallest and largest round weight accepted: beyond these, `beta / sqrt(weight)` squared
/// leaves the range where `1 / beta_t²` is a finite, normal number for any sane `beta`.
pub const MIN_ROUND_WEIGHT: f64 = 1e-6;
/// See [`MIN_ROUND_WEIGHT`].
pub const MAX_ROUND_WEIGHT: f64 = 1e6;

/// Smallest `beta` and `sigma_init`: their squares and inverse squares (`1/beta²` is a new
/// factor's weight, `1/sigma_init²` a newcomer's) then lie within [1e-12, 1e12], and with round
/// weights in [[`MIN_ROUND_WEIGHT`], [`MAX_ROUND_WEIGHT`]] every `beta_t²` within [1e-18, 1e18]:
/// finite and normal, with room for the sums and products the engine builds from them. At
/// 1e308, `beta²` is already infinite.
pub const MIN_SPREAD: f64 = 1e-6;
/// Largest `beta`, `gamma` and `sigma_init`; see [`MIN_SPREAD`].
pub const MAX_SPREAD: f64 = 1e6;
/// Largest `|mu_init|` (and `|perf_ceiling|` of a round). A rating is a weighted mean (Gaussian)
/// or mode (logistic) of the prior mean and past performances, which fall near the ratings or at
/// a ceiling, so ratings stay of this order too: differences scaled by `1/beta_t` stay near 1e18
/// and their squares near 1e36, far from overflow. At 1e300 forecasts come out NaN.
pub const MAX_ABS_RATING: f64 = 1e9;
/// Checks that `value` is a number in `[min, max]` (which rules out NaN and infinities).
pub(crate) fn within(name: &'static str, value: f64, min: f64, max: f64) -> Result<(), Error> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        let show = |bound: f64| {
            if bound == 0.0 {
                "0".to_owned()
            } else {
                format!("{bound:e}")
            }
        };
        Err(Error::parameter(
            name,
            format!("must be a number from {} to {}", show(min), show(max)),
        ))
    }
}
