//! The seam every rating system plugs into: its parameters, its per-player state, how it rates
//! a round, what it shows of a player, and the performance distribution that predictions and
//! metrics are computed from. [`any`](super::any) dispatches over the systems that implement it.

use std::fmt::Debug;

use super::rating::Rating;
use super::round::{Layout, Round};
use super::Error;

/// The family of an entrant's performance distribution, which predictions integrate over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Logistic performances (their std is the spread given).
    Logistic,
    /// Gaussian performances.
    Gaussian,
}

/// An entrant's performance in a round of weight 1, as predictions see it: independent of the
/// other entrants', with this mean and variance. Match quality needs the variance's two parts
/// apart: the uncertainty about the members' skills and the round-to-round noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Performance {
    /// Mean: the sum of the members' ratings.
    pub mean: f64,
    /// Variance: `skill_variance + noise_variance`.
    pub variance: f64,
    /// The sum of the members' `σ²`.
    pub skill_variance: f64,
    /// The sum of the members' performance noise (`β²` each).
    pub noise_variance: f64,
}

/// One participant after a round.
#[derive(Debug, Clone, PartialEq)]
pub struct Rated<S> {
    /// The performance the round credited the player with.
    pub performance: f64,
    /// The player's state after the round.
    pub state: S,
}

/// What rating states given up to a round yields: the rated states, or the error with the
/// states back, unchanged.
pub type Given<S> = Result<Vec<Rated<S>>, (Error, Vec<S>)>;

/// `rated` if every performance and state in it is finite, else [`Error::NotFinite`] naming the
/// first standing that is not: the check between rating a round and keeping its result, so that
/// no arithmetic a system's parameters push past its range is ever stored or shown.
pub fn finite<S: RatingSystem + ?Sized>(
    rated: Vec<Rated<S::State>>,
) -> Result<Vec<Rated<S::State>>, Error> {
    match rated
        .iter()
        .position(|r| !(r.performance.is_finite() && S::is_finite(&r.state)))
    {
        Some(index) => Err(Error::NotFinite { index }),
        None => Ok(rated),
    }
}

/// A rating system: pure functions of its parameters, a round and the players' states.
pub trait RatingSystem {
    /// The pool-wide parameters.
    type Params: Debug + Clone + PartialEq + Send + Sync;
    /// Everything the system keeps about one player: what its next update needs.
    type State: Debug + Clone + PartialEq + Send + Sync;
    /// The parameters worth searching when the system is tuned on data (`evaluate
    /// --tune-fraction`): its main numeric ones, by their names in text formats.
    const TUNED: &'static [&'static str];

    /// Checks every parameter; the error names the first one out of range.
    fn validate(params: &Self::Params) -> Result<(), Error>;

    /// The state of a player who has never played.
    fn newcomer(params: &Self::Params) -> Self::State;

    /// Refuses a round that uses what the system does not have (a round weight, a
    /// performance ceiling), naming the field; [`rate`](Self::rate) checks it too. Every
    /// round is fine by default.
    fn check_round(_params: &Self::Params, _round: &Round) -> Result<(), Error> {
        Ok(())
    }

    /// Rates one round: `priors[i]` is the state of `round.standings[i].player` before it;
    /// the result is aligned with `round.standings`.
    fn rate(
        params: &Self::Params,
        round: &Round,
        priors: &[&Self::State],
    ) -> Result<Vec<Rated<Self::State>>, Error>;

    /// [`rate`](Self::rate) on states the caller gives up, which a system may update in place
    /// instead of copying: the same results bit for bit. On an error the states come back,
    /// [`Error::NotFinite`] included.
    fn rate_owned(
        params: &Self::Params,
        round: &Round,
        priors: Vec<Self::State>,
    ) -> Given<Self::State> {
        let refs: Vec<&Self::State> = priors.iter().collect();
        match Self::rate(params, round, &refs).and_then(finite::<Self>) {
            Ok(rated) => Ok(rated),
            Err(error) => Err((error, priors)),
        }
    }

    /// Whether every number of `state` is finite: by default its rating's. A state that keeps
    /// more numbers checks them too.
    fn is_finite(state: &Self::State) -> bool {
        let rating = Self::rating(state);
        rating.mu.is_finite() && rating.sigma.is_none_or(f64::is_finite)
    }

    /// What reads show of a state.
    fn rating(state: &Self::State) -> Rating;

    /// Rounds the player has played.
    fn rounds(state: &Self::State) -> u64;

    /// A state that shows `rating` and keeps everything else `state` holds (rounds played, a
    /// volatility): what a season's soft reset leaves ([`super::season`]).
    fn with_rating(state: &Self::State, rating: Rating) -> Self::State;

    /// The family of every entrant's performance distribution.
    fn model(params: &Self::Params) -> Model;

    /// The performance distribution of an entrant made of `members`.
    fn performance(params: &Self::Params, members: &[&Self::State]) -> Performance;
}

/// What every system's [`RatingSystem::rate`] checks before rating: the parameters, one prior
/// per standing, the round against what the system has ([`RatingSystem::check_round`]) and
/// the round itself. Returns the round's layout.
pub(crate) fn checked_layout<S: RatingSystem>(
    params: &S::Params,
    round: &Round,
    priors: usize,
) -> Result<Layout, Error> {
    S::validate(params)?;
    if priors != round.standings.len() {
        return Err(Error::PriorCount {
            standings: round.standings.len(),
            priors,
        });
    }
    S::check_round(params, round)?;
    Layout::of(round)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::true_skill::{TrueSkill, TrueSkillState};

    fn rated(performance: f64, mu: f64, sigma: f64) -> Rated<TrueSkillState> {
        Rated {
            performance,
            state: TrueSkillState {
                mu,
                sigma,
                rounds: 1,
            },
        }
    }

    /// No accepted parameter reaches this check any more (tests/finite.rs); it stays the guard
    /// between rating and keeping, and names the first standing it refuses.
    #[test]
    fn a_result_is_kept_only_if_every_performance_mean_and_spread_is_finite() {
        let fine = || rated(25.0, 25.0, 8.0);
        assert!(finite::<TrueSkill>(vec![fine(), fine()]).is_ok());
        for (bad, index) in [
            (rated(f64::NAN, 25.0, 8.0), 1),
            (rated(25.0, f64::INFINITY, 8.0), 1),
            (rated(25.0, 25.0, f64::NAN), 1),
        ] {
            match finite::<TrueSkill>(vec![fine(), bad, rated(f64::NAN, 0.0, 0.0)]) {
                Err(Error::NotFinite { index: at }) => assert_eq!(at, index),
                other => panic!("{other:?}"),
            }
        }
    }
}
