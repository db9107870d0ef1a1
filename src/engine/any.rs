//! A pool's rating system, whichever it is: [`SystemParams`] names the system and holds its
//! parameters, [`SystemState`] holds one player's state in it. These two enums are the only
//! place that lists the systems; everything above the engine (pools, storage, the API,
//! `replay`) works through them and never names one system's types for rating or reading.

use serde::{Deserialize, Serialize};

use super::elo_mmr::EloMmr;
use super::params::Params;
use super::player::PlayerState;
use super::rating::{Rating, RatingChange};
use super::round::Round;
use super::system::{Model, Performance, Rated, RatingSystem};
use super::Error;

/// A pool's rating system and its parameters. In text formats:
/// `{"system": NAME, "params": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "system", content = "params", rename_all = "snake_case")]
pub enum SystemParams {
    /// Elo-MMR and Elo-MMχ.
    EloMmr(Params),
}

/// A rating system's name, as requests and responses spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemName {
    /// Elo-MMR and Elo-MMχ.
    #[default]
    EloMmr,
}

/// One player's state in the pool's rating system.
#[derive(Debug, Clone, PartialEq)]
pub enum SystemState {
    /// Elo-MMR's whole posterior.
    EloMmr(PlayerState),
}

/// One participant's outcome of [`SystemParams::apply`].
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The player's state after the round.
    pub state: SystemState,
    /// What the round did to their rating.
    pub change: RatingChange,
}

impl From<Params> for SystemParams {
    fn from(params: Params) -> Self {
        Self::EloMmr(params)
    }
}

impl SystemParams {
    /// The system's name.
    #[must_use]
    pub fn name(&self) -> SystemName {
        match self {
            Self::EloMmr(_) => SystemName::EloMmr,
        }
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            Self::EloMmr(p) => EloMmr::validate(p),
        }
    }

    /// The state of a player who has never played.
    #[must_use]
    pub fn newcomer(&self) -> SystemState {
        match self {
            Self::EloMmr(p) => SystemState::EloMmr(EloMmr::newcomer(p)),
        }
    }

    /// Rates one round: `priors[i]` is the state of `round.standings[i].player` before it (a
    /// [`newcomer`](Self::newcomer) for a first round). The result is aligned with
    /// `round.standings`.
    pub fn apply(&self, round: &Round, priors: &[&SystemState]) -> Result<Vec<Applied>, Error> {
        match self {
            Self::EloMmr(p) => applied::<EloMmr>(p, round, priors, SystemState::EloMmr, |s| {
                let SystemState::EloMmr(s) = s;
                s
            }),
        }
    }

    /// The family of every entrant's performance distribution.
    #[must_use]
    pub fn model(&self) -> Model {
        match self {
            Self::EloMmr(p) => EloMmr::model(p),
        }
    }

    /// The performance distribution of an entrant made of `members`.
    #[must_use]
    pub fn performance(&self, members: &[&SystemState]) -> Performance {
        match self {
            Self::EloMmr(p) => {
                let states: Vec<&PlayerState> = members
                    .iter()
                    .map(|s| {
                        let SystemState::EloMmr(s) = s;
                        s
                    })
                    .collect();
                EloMmr::performance(p, &states)
            }
        }
    }
}

impl SystemState {
    /// What reads show.
    #[must_use]
    pub fn rating(&self) -> Rating {
        match self {
            Self::EloMmr(s) => EloMmr::rating(s),
        }
    }

    /// Rounds the player has played.
    #[must_use]
    pub fn rounds(&self) -> u64 {
        match self {
            Self::EloMmr(s) => EloMmr::rounds(s),
        }
    }
}

/// [`SystemParams::apply`] for system `S`: `unwrap` reads a prior as `S`'s state, `wrap` turns
/// `S`'s state back into a [`SystemState`].
fn applied<S: RatingSystem>(
    params: &S::Params,
    round: &Round,
    priors: &[&SystemState],
    wrap: fn(S::State) -> SystemState,
    unwrap: fn(&SystemState) -> &S::State,
) -> Result<Vec<Applied>, Error> {
    let states: Vec<&S::State> = priors.iter().map(|p| unwrap(p)).collect();
    let rated = S::rate(params, round, &states)?;
    Ok(states
        .iter()
        .zip(rated)
        .map(|(prior, Rated { performance, state })| Applied {
            change: RatingChange {
                performance,
                before: S::rating(prior),
                after: S::rating(&state),
            },
            state: wrap(state),
        })
        .collect())
}
