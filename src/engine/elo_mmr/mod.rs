//! Elo-MMR (and its Gaussian variant Elo-MMχ) on the [`RatingSystem`] seam. The algorithm
//! itself lives in [`params`](crate::elo_mmr::params), [`player`](crate::elo_mmr::player) and
//! [`rate`](crate::elo_mmr::rate); this file only says how the seam reads it.

pub mod params;
mod performance;
pub mod player;
pub mod rate;

use super::rating::Rating;
use super::round::Round;
use super::system::{Given, Model, Performance, Rated, RatingSystem};
use super::Error;
use params::{EloMmrParams, Variant};
use player::EloMmrState;
use rate::{rate_round, rate_round_owned};

/// Elo-MMR (Ebtekar & Liu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EloMmr;

impl RatingSystem for EloMmr {
    type Params = EloMmrParams;
    type State = EloMmrState;
    const TUNED: &'static [&'static str] = &["beta", "gamma"];

    fn validate(params: &EloMmrParams) -> Result<(), Error> {
        params.validate()
    }

    fn newcomer(params: &EloMmrParams) -> EloMmrState {
        EloMmrState::new(params)
    }

    fn check_round(_: &EloMmrParams, round: &Round) -> Result<(), Error> {
        round.refuse_partial_play("Elo-MMR")
    }

    fn rate(
        params: &EloMmrParams,
        round: &Round,
        priors: &[&EloMmrState],
    ) -> Result<Vec<Rated<EloMmrState>>, Error> {
        Self::check_round(params, round)?;
        rate_round(params, round, priors)
    }

    fn rate_owned(
        params: &EloMmrParams,
        round: &Round,
        priors: Vec<EloMmrState>,
    ) -> Given<EloMmrState> {
        if let Err(error) = Self::check_round(params, round) {
            return Err((error, priors));
        }
        rate_round_owned(params, round, priors)
    }

    fn rating(state: &EloMmrState) -> Rating {
        Rating {
            mu: state.mu,
            sigma: Some(state.sigma),
        }
    }

    fn rounds(state: &EloMmrState) -> u64 {
        state.rounds
    }

    /// Of the factors, the newest only: a factor never changes once added, and each was
    /// checked as the round that added it was rated.
    fn is_finite(state: &EloMmrState) -> bool {
        let newest = state
            .factors
            .back()
            .map(|f| [f.perf, f.weight, f.beta, f.log_decay]);
        [state.mu, state.sigma, state.p0, state.w0, state.log_decay]
            .into_iter()
            .chain(newest.into_iter().flatten())
            .all(f64::is_finite)
    }

    fn with_rating(state: &EloMmrState, rating: Rating) -> EloMmrState {
        // One Gaussian term holds the whole belief: its mode is μ and its weight 1/σ².
        let sigma = rating.sigma.unwrap_or(state.sigma);
        EloMmrState {
            mu: rating.mu,
            sigma,
            p0: rating.mu,
            w0: 1.0 / (sigma * sigma),
            factors: std::collections::VecDeque::new(),
            log_decay: state.log_decay,
            last_time: state.last_time,
            rounds: state.rounds,
        }
    }

    fn model(params: &EloMmrParams) -> Model {
        match params.variant {
            Variant::Logistic => Model::Logistic,
            Variant::Gaussian => Model::Gaussian,
        }
    }

    /// The sums over the members of `μ` and of `σ² + β²` (paper §3.3: a team performs as the
    /// sum of its members).
    fn performance(params: &EloMmrParams, members: &[&EloMmrState]) -> Performance {
        let beta2 = params.beta * params.beta;
        let (mean, variance) = members.iter().fold((0.0, 0.0), |(mu, var), p| {
            (mu + p.mu, var + p.sigma * p.sigma + beta2)
        });
        Performance {
            mean,
            variance,
            skill_variance: members.iter().map(|p| p.sigma * p.sigma).sum(),
            noise_variance: beta2 * members.len() as f64,
        }
    }
}
