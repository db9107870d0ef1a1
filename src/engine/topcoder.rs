//! Topcoder's rating system as the Elo-MMR paper evaluates it (§6.2; the reference crate
//! `multi-skill` calls it `TopcoderSys`): a player's expected rank comes from Gaussian win
//! probabilities against every entrant, actual and expected rank are turned into
//! performances through the normal quantile, and the new rating is a capped weighted average
//! of the old one and the performance, with a volatility that grows when the rating moves.
//! `docs/topcoder.md` states every formula this file computes.
//!
//! The expected rank sums `Φ((μ_j − μ_i) / √(σ_i² + σ_j²))` over the field: the pair's two
//! volatilities make each term depend on both players, so there is no one-variable function
//! to interpolate as for Codeforces; `normal_sum` evaluates it in Fourier space instead, where
//! the two players' parts multiply, in O(N) per round for a fixed number of modes.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::rating::Rating;
use super::round::Round;
use super::system::{checked_layout, Model, Performance, Rated, RatingSystem};
use super::Error;
use crate::bounds::{within, MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};
use crate::maths::{normal, normal_sum};

/// Topcoder's parameters, with the defaults the paper evaluated it with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct TopcoderParams {
    /// Scales every round's weight: how much a performance counts against the old rating,
    /// and how far one round may move it.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub weight_multiplier: f64,
    /// A new player's rating.
    #[cfg_attr(feature = "schema", schema(minimum = -1e9, maximum = 1e9))]
    pub mu_init: f64,
    /// A new player's volatility.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub sigma_init: f64,
}

impl Default for TopcoderParams {
    fn default() -> Self {
        Self {
            weight_multiplier: 1.0,
            mu_init: 1500.0,
            sigma_init: 350.0,
        }
    }
}

/// A player: rating, volatility and a round count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TopcoderState {
    /// Rating.
    pub mu: f64,
    /// Volatility: how far the rating is expected to be from the next performance.
    pub sigma: f64,
    /// Rounds played.
    pub rounds: u64,
}

/// Topcoder's system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topcoder;

/// A round moves a player's rating by at most `(CAP_BASE + CAP_FIRST / (rounds + 1))` times
/// the weight's cap multiplier, `rounds` counting this one.
const CAP_BASE: f64 = 150.0;
/// See [`CAP_BASE`].
const CAP_FIRST: f64 = 1500.0;
/// The weight of a player's `n`-th round is `1 / (WEIGHT_LIMIT − WEIGHT_DECAY / n) − 1`:
/// 1.5 for a first round, falling towards `1 / 0.82 − 1` ≈ 0.22.
const WEIGHT_LIMIT: f64 = 0.82;
/// See [`WEIGHT_LIMIT`].
const WEIGHT_DECAY: f64 = 0.42;
/// Ratings from these thresholds up move less: their weight is multiplied by the factor.
const HIGH_RATINGS: [(f64, f64); 2] = [(2500.0, 0.8), (2000.0, 0.9)];

impl RatingSystem for Topcoder {
    type Params = TopcoderParams;
    type State = TopcoderState;
    const TUNED: &'static [&'static str] = &["weight_multiplier", "sigma_init"];

    fn validate(params: &TopcoderParams) -> Result<(), Error> {
        within(
            "weight_multiplier",
            params.weight_multiplier,
            MIN_SPREAD,
            1e6,
        )?;
        within("mu_init", params.mu_init, -MAX_ABS_RATING, MAX_ABS_RATING)?;
        within("sigma_init", params.sigma_init, MIN_SPREAD, MAX_SPREAD)
    }

    fn newcomer(params: &TopcoderParams) -> TopcoderState {
        TopcoderState {
            mu: params.mu_init,
            sigma: params.sigma_init,
            rounds: 0,
        }
    }

    fn check_round(_: &TopcoderParams, round: &Round) -> Result<(), Error> {
        round.refuse_all_but_ranks("Topcoder")
    }

    fn rate(
        params: &TopcoderParams,
        round: &Round,
        priors: &[&TopcoderState],
    ) -> Result<Vec<Rated<TopcoderState>>, Error> {
        let layout = checked_layout::<Self>(params, round, priors.len())?;
        let n = priors.len() as f64;
        let mean = priors.iter().map(|p| p.mu).sum::<f64>() / n;
        // The field's spread: its mean volatility² plus the sample variance of its ratings.
        let mut spread2 = priors.iter().map(|p| p.sigma * p.sigma).sum::<f64>() / n;
        if priors.len() > 1 {
            spread2 += priors.iter().map(|p| (p.mu - mean).powi(2)).sum::<f64>() / (n - 1.0);
        }
        let spread = spread2.sqrt();
        let weight = round.weight * params.weight_multiplier;
        let limit = 1.0 / WEIGHT_LIMIT - 1.0;
        let cap_multiplier =
            params.weight_multiplier * (1.0 + limit) / (1.0 + limit * params.weight_multiplier);
        // Each player's place: those ahead plus half their tie, i.e. the 1-based middle of
        // the tie less ½, as the expected rank counts the player itself as ½.
        let place: Vec<f64> = layout
            .placings()
            .into_iter()
            .map(|(ahead, tied)| ahead as f64 + tied as f64 / 2.0)
            .collect();
        let mus: Vec<f64> = priors.iter().map(|p| p.mu).collect();
        let sigmas: Vec<f64> = priors.iter().map(|p| p.sigma).collect();
        // Includes the player itself, which counts 1/2.
        let expected = normal_sum::expected_ranks(&mus, &sigmas, weight);
        Ok((0..priors.len())
            .into_par_iter()
            .map(|i| {
                let own = priors[i];
                let expected = expected[i];
                let performance = own.mu
                    + spread * (normal::quantile(expected / n) - normal::quantile(place[i] / n));
                let rounds = own.rounds + 1;
                let mut w = weight * (1.0 / (WEIGHT_LIMIT - WEIGHT_DECAY / rounds as f64) - 1.0);
                if let Some(&(_, factor)) = HIGH_RATINGS.iter().find(|&&(from, _)| own.mu >= from) {
                    w *= factor;
                }
                let cap = (CAP_BASE + CAP_FIRST / (rounds as f64 + 1.0)) * cap_multiplier;
                let target = (own.mu + w * performance) / (1.0 + w);
                let mu = target.clamp(own.mu - cap, own.mu + cap);
                let sigma =
                    ((target - own.mu).powi(2) / w + own.sigma * own.sigma / (1.0 + w)).sqrt();
                Rated {
                    performance,
                    state: TopcoderState { mu, sigma, rounds },
                }
            })
            .collect())
    }

    fn rating(state: &TopcoderState) -> Rating {
        Rating {
            mu: state.mu,
            sigma: Some(state.sigma),
        }
    }

    fn rounds(state: &TopcoderState) -> u64 {
        state.rounds
    }

    fn with_rating(state: &TopcoderState, rating: Rating) -> TopcoderState {
        TopcoderState {
            mu: rating.mu,
            sigma: rating.sigma.unwrap_or(state.sigma),
            ..*state
        }
    }

    fn model(_: &TopcoderParams) -> Model {
        Model::Gaussian
    }

    /// The system's own win probability in a round of weight 1 is
    /// `Φ((μ_a − μ_b) / (√(σ_a² + σ_b²) · m))`, `m` the weight multiplier: each player
    /// performs as a Gaussian around their rating with std `m σ`. The volatility is how far a
    /// performance strays from the rating, so it counts as performance noise, not as
    /// uncertainty about the skill.
    fn performance(params: &TopcoderParams, members: &[&TopcoderState]) -> Performance {
        let m2 = params.weight_multiplier * params.weight_multiplier;
        let variance = m2 * members.iter().map(|p| p.sigma * p.sigma).sum::<f64>();
        Performance {
            mean: members.iter().map(|p| p.mu).sum(),
            variance,
            skill_variance: 0.0,
            noise_variance: variance,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::predict::beats;

    proptest! {
        #[test]
        fn predictions_use_the_system_s_own_win_probability(
            (mu_a, sigma_a) in (0.0..3000.0f64, 1.0..600.0f64),
            (mu_b, sigma_b) in (0.0..3000.0f64, 1.0..600.0f64),
            weight_multiplier in 0.1..4.0f64,
        ) {
            let params = TopcoderParams { weight_multiplier, ..TopcoderParams::default() };
            let a = TopcoderState { mu: mu_a, sigma: sigma_a, rounds: 1 };
            let b = TopcoderState { mu: mu_b, sigma: sigma_b, rounds: 1 };
            let (pa, pb) = (Topcoder::performance(&params, &[&a]), Topcoder::performance(&params, &[&b]));
            prop_assert_eq!(pa.skill_variance, 0.0);
            let ours = beats(Model::Gaussian, (pa.mean, pa.variance), (pb.mean, pb.variance));
            let own = normal::cdf((mu_a - mu_b) / sigma_a.hypot(sigma_b) / weight_multiplier);
            prop_assert!((ours - own).abs() < 1e-12, "{} against {}", ours, own);
        }
    }
}
