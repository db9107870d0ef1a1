//! Elo for free-for-all rounds, as "Rising from the Ranks" (docs/elo.md) adapts it: every pair
//! of entrants of a round is a game scored 1, ½ or 0 against the logistic expectation
//! `1 / (1 + exp(−(μ_i − μ_j) / T))` with the article's temperature `T`, and a player's
//! change is `K` times their average surplus over their `N − 1` games, so one round moves a
//! rating by at most `K` (times the round's weight). No uncertainty is kept.
//!
//! The expected scores are one function of one variable, `Σ_j σ((x − μ_j)/T) =
//! (N + Σ_j tanh((x − μ_j) / 2T)) / 2`, built once per round ([`TanhSum`]): O(N) per round,
//! not O(N²); the actual scores are counts from the ranks.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::rating::Rating;
use super::round::Round;
use super::system::{checked_layout, Model, Performance, Rated, RatingSystem};
use super::{Error, LOGISTIC_SCALE};
use crate::bounds::{within, MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};
use crate::maths::tanh_sum::TanhSum;

/// Elo's parameters, in chess's units by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct EloParams {
    /// The temperature `T`: a rating difference of `T` makes the stronger player's expected
    /// score `1 / (1 + e⁻¹)` ≈ 0.73.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub temperature: f64,
    /// The most one round of weight 1 can move a rating (the article's `max_gain`).
    #[cfg_attr(feature = "schema", schema(minimum = 0.0, maximum = 1e6))]
    pub k: f64,
    /// A new player's rating.
    #[cfg_attr(feature = "schema", schema(minimum = -1e9, maximum = 1e9))]
    pub mu_init: f64,
}

impl Default for EloParams {
    fn default() -> Self {
        Self {
            // Chess's scale: a 400-point gap is odds of 10 to 1.
            temperature: 400.0 / std::f64::consts::LN_10,
            k: 32.0,
            mu_init: 1500.0,
        }
    }
}

/// A player: a rating and a round count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EloState {
    /// Rating.
    pub mu: f64,
    /// Rounds played.
    pub rounds: u64,
}

/// Elo for free-for-all rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elo;

impl RatingSystem for Elo {
    type Params = EloParams;
    type State = EloState;
    const TUNED: &'static [&'static str] = &["temperature", "k"];

    fn validate(params: &EloParams) -> Result<(), Error> {
        within("temperature", params.temperature, MIN_SPREAD, MAX_SPREAD)?;
        within("k", params.k, 0.0, MAX_SPREAD)?;
        within("mu_init", params.mu_init, -MAX_ABS_RATING, MAX_ABS_RATING)
    }

    fn newcomer(params: &EloParams) -> EloState {
        EloState {
            mu: params.mu_init,
            rounds: 0,
        }
    }

    fn check_round(_: &EloParams, round: &Round) -> Result<(), Error> {
        round.refuse_all_but_ranks("Elo")
    }

    fn rate(
        params: &EloParams,
        round: &Round,
        priors: &[&EloState],
    ) -> Result<Vec<Rated<EloState>>, Error> {
        let layout = checked_layout::<Self>(params, round, priors.len())?;
        let n = priors.len() as f64;
        let games = n - 1.0;
        let gain = params.k * round.weight;
        let ratings: Vec<f64> = priors.iter().map(|p| p.mu).collect();
        let sum = TanhSum::new(&ratings, 0.5 / params.temperature);
        // Each player's score: a win per player behind, half a win per other player tied.
        let score: Vec<f64> = layout
            .placings()
            .into_iter()
            .map(|(ahead, tied)| (priors.len() - ahead - tied) as f64 + 0.5 * (tied - 1) as f64)
            .collect();
        Ok((0..priors.len())
            .into_par_iter()
            .map(|i| {
                // Σ_{j≠i} σ((μ_i − μ_j)/T): every player's term, less the player's own ½.
                let expected = (n + sum.value(ratings[i])) / 2.0 - 0.5;
                let mu = priors[i].mu + gain * (score[i] - expected) / games;
                Rated {
                    // Elo estimates no performance: the new rating stands for it.
                    performance: mu,
                    state: EloState {
                        mu,
                        rounds: priors[i].rounds + 1,
                    },
                }
            })
            .collect())
    }

    fn rating(state: &EloState) -> Rating {
        Rating {
            mu: state.mu,
            sigma: None,
        }
    }

    fn rounds(state: &EloState) -> u64 {
        state.rounds
    }

    fn with_rating(state: &EloState, rating: Rating) -> EloState {
        EloState {
            mu: rating.mu,
            ..*state
        }
    }

    fn model(_: &EloParams) -> Model {
        Model::Logistic
    }

    /// The system's own win probability is the logistic of `(μ_a − μ_b) / T`: each player
    /// performs with variance `s²/2` around their rating, `s = T / LOGISTIC_SCALE` the
    /// logistic's standard deviation, and no uncertainty about it.
    fn performance(params: &EloParams, members: &[&EloState]) -> Performance {
        let spread = params.temperature / LOGISTIC_SCALE;
        let noise_variance = spread * spread / 2.0 * members.len() as f64;
        Performance {
            mean: members.iter().map(|p| p.mu).sum(),
            variance: noise_variance,
            skill_variance: 0.0,
            noise_variance,
        }
    }
}
