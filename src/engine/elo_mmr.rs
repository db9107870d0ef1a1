//! Elo-MMR (and its Gaussian variant Elo-MMχ) on the [`RatingSystem`] seam. The algorithm
//! itself lives in [`params`](super::params), [`player`](super::player) and
//! [`rate`](super::rate); this file only says how the seam reads it.

use super::params::{Params, Variant};
use super::player::PlayerState;
use super::rate::{rate_round, rate_round_owned};
use super::rating::Rating;
use super::round::Round;
use super::system::{Given, Model, Performance, Rated, RatingSystem};
use super::Error;

/// Elo-MMR (Ebtekar & Liu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EloMmr;

impl RatingSystem for EloMmr {
    type Params = Params;
    type State = PlayerState;
    const TUNED: &'static [&'static str] = &["beta", "gamma"];

    fn validate(params: &Params) -> Result<(), Error> {
        params.validate()
    }

    fn newcomer(params: &Params) -> PlayerState {
        PlayerState::new(params)
    }

    fn check_round(_: &Params, round: &Round) -> Result<(), Error> {
        round.refuse_partial_play("Elo-MMR")
    }

    fn rate(
        params: &Params,
        round: &Round,
        priors: &[&PlayerState],
    ) -> Result<Vec<Rated<PlayerState>>, Error> {
        Self::check_round(params, round)?;
        rate_round(params, round, priors)
    }

    fn rate_owned(params: &Params, round: &Round, priors: Vec<PlayerState>) -> Given<PlayerState> {
        if let Err(error) = Self::check_round(params, round) {
            return Err((error, priors));
        }
        rate_round_owned(params, round, priors)
    }

    fn rating(state: &PlayerState) -> Rating {
        Rating {
            mu: state.mu,
            sigma: Some(state.sigma),
        }
    }

    fn rounds(state: &PlayerState) -> u64 {
        state.rounds
    }

    /// Of the factors, the newest only: a factor never changes once added, and each was
    /// checked as the round that added it was rated.
    fn is_finite(state: &PlayerState) -> bool {
        let newest = state
            .factors
            .back()
            .map(|f| [f.perf, f.weight, f.beta, f.log_decay]);
        [state.mu, state.sigma, state.p0, state.w0, state.log_decay]
            .into_iter()
            .chain(newest.into_iter().flatten())
            .all(f64::is_finite)
    }

    fn with_rating(state: &PlayerState, rating: Rating) -> PlayerState {
        // One Gaussian term holds the whole belief: its mode is μ and its weight 1/σ².
        let sigma = rating.sigma.unwrap_or(state.sigma);
        PlayerState {
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

    fn model(params: &Params) -> Model {
        match params.variant {
            Variant::Logistic => Model::Logistic,
            Variant::Gaussian => Model::Gaussian,
        }
    }

    /// The sums over the members of `μ` and of `σ² + β²` (paper §3.3: a team performs as the
    /// sum of its members).
    fn performance(params: &Params, members: &[&PlayerState]) -> Performance {
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
