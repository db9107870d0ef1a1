//! A pool's rating system, whichever it is: [`SystemParams`] names the system and holds its
//! parameters, [`SystemState`] holds one player's state in it. They dispatch to the systems:
//! everything above the engine (pools, the worker, `replay`, predictions) rates and reads
//! through them. What must know a system's own fields lists the systems too: storage's codec
//! of a player's state, and the parameters the API and the command line take and show.

use serde::{Deserialize, Serialize};

use super::elo_mmr::EloMmr;
use super::params::Params;
use super::player::PlayerState;
use super::rating::{Rating, RatingChange};
use super::round::Round;
use super::system::{Model, Performance, Rated, RatingSystem};
use super::weng_lin::{WengLin, WengLinParams, WengLinState};
use super::Error;

/// A pool's rating system and its parameters. In text formats:
/// `{"system": NAME, "params": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "system", content = "params", rename_all = "snake_case")]
pub enum SystemParams {
    /// Elo-MMR and Elo-MMχ.
    EloMmr(Params),
    /// Weng-Lin (OpenSkill), Bradley-Terry full pairing.
    WengLin(WengLinParams),
}

/// A rating system's name, as requests and responses spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemName {
    /// Elo-MMR and Elo-MMχ.
    #[default]
    EloMmr,
    /// Weng-Lin (OpenSkill), Bradley-Terry full pairing.
    WengLin,
}

/// One player's state in the pool's rating system.
#[derive(Debug, Clone, PartialEq)]
pub enum SystemState {
    /// Elo-MMR's whole posterior.
    EloMmr(PlayerState),
    /// Weng-Lin's Gaussian belief.
    WengLin(WengLinState),
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
            Self::WengLin(_) => SystemName::WengLin,
        }
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            Self::EloMmr(p) => EloMmr::validate(p),
            Self::WengLin(p) => WengLin::validate(p),
        }
    }

    /// The state of a player who has never played.
    #[must_use]
    pub fn newcomer(&self) -> SystemState {
        match self {
            Self::EloMmr(p) => SystemState::EloMmr(EloMmr::newcomer(p)),
            Self::WengLin(p) => SystemState::WengLin(WengLin::newcomer(p)),
        }
    }

    /// Refuses a round that uses what the system does not have, naming the field.
    pub fn check_round(&self, round: &Round) -> Result<(), Error> {
        match self {
            Self::EloMmr(p) => EloMmr::check_round(p, round),
            Self::WengLin(p) => WengLin::check_round(p, round),
        }
    }

    /// Rates one round: `priors[i]` is the state of `round.standings[i].player` before it (a
    /// [`newcomer`](Self::newcomer) for a first round). The result is aligned with
    /// `round.standings`. A prior of another system is [`Error::ForeignState`].
    pub fn apply(&self, round: &Round, priors: &[&SystemState]) -> Result<Vec<Applied>, Error> {
        match self {
            Self::EloMmr(p) => applied::<EloMmr>(p, round, priors, SystemState::EloMmr),
            Self::WengLin(p) => applied::<WengLin>(p, round, priors, SystemState::WengLin),
        }
    }

    /// The family of every entrant's performance distribution.
    #[must_use]
    pub fn model(&self) -> Model {
        match self {
            Self::EloMmr(p) => EloMmr::model(p),
            Self::WengLin(p) => WengLin::model(p),
        }
    }

    /// The performance distribution of an entrant made of `members`; a state of another
    /// system is [`Error::ForeignState`].
    pub fn performance(&self, members: &[&SystemState]) -> Result<Performance, Error> {
        match self {
            Self::EloMmr(p) => Ok(EloMmr::performance(p, &own(members)?)),
            Self::WengLin(p) => Ok(WengLin::performance(p, &own(members)?)),
        }
    }
}

impl SystemState {
    /// What reads show.
    #[must_use]
    pub fn rating(&self) -> Rating {
        match self {
            Self::EloMmr(s) => EloMmr::rating(s),
            Self::WengLin(s) => WengLin::rating(s),
        }
    }

    /// Rounds the player has played.
    #[must_use]
    pub fn rounds(&self) -> u64 {
        match self {
            Self::EloMmr(s) => EloMmr::rounds(s),
            Self::WengLin(s) => WengLin::rounds(s),
        }
    }
}

/// A [`SystemState`] that may hold system `S`'s state.
trait StateOf<S> {
    fn state_of(&self) -> Option<&S>;
}

impl StateOf<PlayerState> for SystemState {
    fn state_of(&self) -> Option<&PlayerState> {
        match self {
            Self::EloMmr(s) => Some(s),
            Self::WengLin(_) => None,
        }
    }
}

impl StateOf<WengLinState> for SystemState {
    fn state_of(&self) -> Option<&WengLinState> {
        match self {
            Self::WengLin(s) => Some(s),
            Self::EloMmr(_) => None,
        }
    }
}

/// Each of `states` as system `S`'s state; the first of another system is an error.
fn own<'a, S>(states: &[&'a SystemState]) -> Result<Vec<&'a S>, Error>
where
    SystemState: StateOf<S>,
{
    states
        .iter()
        .enumerate()
        .map(|(index, s)| s.state_of().ok_or(Error::ForeignState { index }))
        .collect()
}

/// [`SystemParams::apply`] for system `S`; `wrap` turns `S`'s state into a [`SystemState`].
fn applied<S: RatingSystem>(
    params: &S::Params,
    round: &Round,
    priors: &[&SystemState],
    wrap: fn(S::State) -> SystemState,
) -> Result<Vec<Applied>, Error>
where
    SystemState: StateOf<S::State>,
{
    let states = own::<S::State>(priors)?;
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
