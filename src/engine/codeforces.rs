//! Codeforces' rating system as the Elo-MMR paper evaluates it (§6.2; the reference crate
//! `multi-skill` calls it `CodeforcesSys`): each player's performance is the rating at which
//! their expected rank would be the geometric mean of their actual and expected ranks, and the
//! new rating is a weighted average of the old one and that performance. `docs/codeforces.md`
//! states every formula this file computes.
//!
//! Every sum it needs is one function of a single variable, `F(x) = Σ_j tanh(a (x − μ_j))`,
//! evaluated at each player's rating and inverted at each player's target. `F` is interpolated
//! once per round on Chebyshev leaves, to rounding accuracy, so a round costs O(N) sums at a
//! few hundred points plus O(1) per player, not O(N²); rounds of at most 64 players sum it
//! exactly instead, which is cheaper at that size.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::rating::Rating;
use super::round::Round;
use super::system::{checked_layout, Model, Performance, Rated, RatingSystem};
use super::{Error, LOGISTIC_SCALE};
use crate::bounds::{within, MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};
use crate::maths::tanh_sum::TanhSum;

/// The Codeforces system's parameters, with the paper's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct CodeforcesParams {
    /// Performance spread β (the std of a logistic performance) in a round of weight 1.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub beta: f64,
    /// How much a round's performance weighs against the old rating (times the round weight).
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub weight_multiplier: f64,
    /// A new player's rating.
    #[cfg_attr(feature = "schema", schema(minimum = -1e9, maximum = 1e9))]
    pub mu_init: f64,
    /// The σ shown for every player: the system keeps no uncertainty.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub sigma_init: f64,
}

impl Default for CodeforcesParams {
    fn default() -> Self {
        Self {
            // Codeforces' 400-point logistic (base 10) as a standard deviation.
            beta: 400.0 / (LOGISTIC_SCALE * std::f64::consts::LN_10),
            weight_multiplier: 1.0,
            mu_init: 1500.0,
            sigma_init: 350.0,
        }
    }
}

/// A player: a rating, the σ shown, and a round count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CodeforcesState {
    /// Rating.
    pub mu: f64,
    /// The σ shown (always the pool's `sigma_init`).
    pub sigma: f64,
    /// Rounds played.
    pub rounds: u64,
}

/// Codeforces' system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codeforces;

impl RatingSystem for Codeforces {
    type Params = CodeforcesParams;
    type State = CodeforcesState;
    const TUNED: &'static [&'static str] = &["beta", "weight_multiplier"];

    fn validate(params: &CodeforcesParams) -> Result<(), Error> {
        within("beta", params.beta, MIN_SPREAD, MAX_SPREAD)?;
        within(
            "weight_multiplier",
            params.weight_multiplier,
            MIN_SPREAD,
            1e6,
        )?;
        within("mu_init", params.mu_init, -MAX_ABS_RATING, MAX_ABS_RATING)?;
        within("sigma_init", params.sigma_init, MIN_SPREAD, MAX_SPREAD)
    }

    fn newcomer(params: &CodeforcesParams) -> CodeforcesState {
        CodeforcesState {
            mu: params.mu_init,
            sigma: params.sigma_init,
            rounds: 0,
        }
    }

    fn check_round(_: &CodeforcesParams, round: &Round) -> Result<(), Error> {
        round.refuse_all_but_ranks("Codeforces")
    }

    fn rate(
        params: &CodeforcesParams,
        round: &Round,
        priors: &[&CodeforcesState],
    ) -> Result<Vec<Rated<CodeforcesState>>, Error> {
        let layout = checked_layout::<Self>(params, round, priors.len())?;
        let n = priors.len() as f64;
        let spread = params.beta / round.weight.sqrt();
        let weight = round.weight * params.weight_multiplier;
        let ratings: Vec<f64> = priors.iter().map(|p| p.mu).collect();
        let sum = TanhSum::new(&ratings, 1.0 / (2.0 * LOGISTIC_SCALE * spread));
        // Each player's place: 1-based, the middle of their tie.
        let place: Vec<f64> = layout
            .placings()
            .into_iter()
            .map(|(ahead, tied)| ahead as f64 + (tied as f64 + 1.0) / 2.0)
            .collect();
        Ok((0..priors.len())
            .into_par_iter()
            .map(|i| {
                let expected = (n + 1.0 - sum.value(ratings[i])) / 2.0;
                let rank = (place[i] * expected).sqrt();
                let performance = sum.inverse(n + 1.0 - 2.0 * rank);
                Rated {
                    performance,
                    state: CodeforcesState {
                        mu: (priors[i].mu + weight * performance) / (1.0 + weight),
                        rounds: priors[i].rounds + 1,
                        ..*priors[i]
                    },
                }
            })
            .collect())
    }

    fn rating(state: &CodeforcesState) -> Rating {
        Rating {
            mu: state.mu,
            sigma: Some(state.sigma),
        }
    }

    fn rounds(state: &CodeforcesState) -> u64 {
        state.rounds
    }

    fn with_rating(state: &CodeforcesState, rating: Rating) -> CodeforcesState {
        // The σ shown is always the pool's `sigma_init`: only μ moves.
        CodeforcesState {
            mu: rating.mu,
            ..*state
        }
    }

    fn model(_: &CodeforcesParams) -> Model {
        Model::Logistic
    }

    /// The system's own win probability is a logistic in `μ_a − μ_b` with std β: each player
    /// performs with variance `β²/2` around their rating, and no uncertainty about it.
    fn performance(params: &CodeforcesParams, members: &[&CodeforcesState]) -> Performance {
        let noise_variance = params.beta * params.beta / 2.0 * members.len() as f64;
        Performance {
            mean: members.iter().map(|p| p.mu).sum(),
            variance: noise_variance,
            skill_variance: 0.0,
            noise_variance,
        }
    }
}
