//! A pool's rating system, whichever it is: [`SystemParams`] names the system and holds its
//! parameters, [`SystemState`] holds one player's state in it. They dispatch to the systems:
//! everything above the engine (pools, the worker, `replay`, predictions) rates and reads
//! through them. Storage's codec of a player's state is the one place above the engine that
//! knows a system's own fields; parameters are read and written through each system's serde
//! type ([`SystemName::read_params`], [`SystemParams::serialize_own`]).

use serde::{Deserialize, Serialize};

use super::codeforces::{Codeforces, CodeforcesParams, CodeforcesState};
use super::elo::{Elo, EloParams, EloState};
use super::elo_mmr::EloMmr;
use super::glicko2::{Glicko2, Glicko2Params, Glicko2State};
use super::rating::{Rating, RatingChange};
use super::round::Round;
use super::season::SoftReset;
use super::system::{Model, Performance, Rated, RatingSystem};
use super::topcoder::{Topcoder, TopcoderParams, TopcoderState};
use super::true_skill::{TrueSkill, TrueSkillParams, TrueSkillState};
use super::weng_lin::{WengLin, WengLinParams, WengLinState};
use super::Error;
use crate::elo_mmr::params::EloMmrParams;
use crate::elo_mmr::player::EloMmrState;

/// A pool's rating system and its parameters. In text formats:
/// `{"system": NAME, "params": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "system", content = "params", rename_all = "snake_case")]
pub enum SystemParams {
    /// Elo-MMR and Elo-MMχ.
    EloMmr(EloMmrParams),
    /// Weng-Lin (OpenSkill): Bradley-Terry full pairing or Plackett-Luce.
    WengLin(WengLinParams),
    /// TrueSkill.
    #[serde(rename = "trueskill")]
    TrueSkill(TrueSkillParams),
    /// Glicko-2.
    Glicko2(Glicko2Params),
    /// Codeforces' system, as the Elo-MMR paper evaluates it.
    Codeforces(CodeforcesParams),
    /// Topcoder's system, as the Elo-MMR paper evaluates it.
    Topcoder(TopcoderParams),
    /// Elo for free-for-all rounds.
    Elo(EloParams),
}

/// A rating system's name, as requests and responses spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemName {
    /// Elo-MMR and Elo-MMχ.
    #[default]
    EloMmr,
    /// Weng-Lin (OpenSkill): Bradley-Terry full pairing or Plackett-Luce.
    WengLin,
    /// TrueSkill.
    #[serde(rename = "trueskill")]
    TrueSkill,
    /// Glicko-2.
    Glicko2,
    /// Codeforces' system, as the Elo-MMR paper evaluates it.
    Codeforces,
    /// Topcoder's system, as the Elo-MMR paper evaluates it.
    Topcoder,
    /// Elo for free-for-all rounds.
    Elo,
}

/// One player's state in the pool's rating system.
#[derive(Debug, Clone, PartialEq)]
pub enum SystemState {
    /// Elo-MMR's whole posterior.
    EloMmr(EloMmrState),
    /// Weng-Lin's Gaussian belief.
    WengLin(WengLinState),
    /// TrueSkill's Gaussian belief.
    TrueSkill(TrueSkillState),
    /// Glicko-2's rating, deviation and volatility.
    Glicko2(Glicko2State),
    /// Codeforces' rating.
    Codeforces(CodeforcesState),
    /// Topcoder's rating and volatility.
    Topcoder(TopcoderState),
    /// Elo's rating.
    Elo(EloState),
}

/// One participant's outcome of [`SystemParams::apply`].
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The player's state after the round.
    pub state: SystemState,
    /// What the round did to their rating.
    pub change: RatingChange,
}

impl SystemName {
    /// Every system, in the order documents list them.
    pub const ALL: [Self; 7] = [
        Self::EloMmr,
        Self::WengLin,
        Self::TrueSkill,
        Self::Glicko2,
        Self::Codeforces,
        Self::Topcoder,
        Self::Elo,
    ];

    /// The system with its default parameters.
    #[must_use]
    pub fn defaults(self) -> SystemParams {
        match self {
            Self::EloMmr => SystemParams::EloMmr(EloMmrParams::default()),
            Self::WengLin => SystemParams::WengLin(WengLinParams::default()),
            Self::TrueSkill => SystemParams::TrueSkill(TrueSkillParams::default()),
            Self::Glicko2 => SystemParams::Glicko2(Glicko2Params::default()),
            Self::Codeforces => SystemParams::Codeforces(CodeforcesParams::default()),
            Self::Topcoder => SystemParams::Topcoder(TopcoderParams::default()),
            Self::Elo => SystemParams::Elo(EloParams::default()),
        }
    }

    /// This system's parameters read from their text form (the object that `params` holds
    /// in [`SystemParams`]' form), so that a reader's errors can name the parameter at fault.
    pub fn read_params<'de, D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<SystemParams, D::Error> {
        Ok(match self {
            Self::EloMmr => SystemParams::EloMmr(Deserialize::deserialize(deserializer)?),
            Self::WengLin => SystemParams::WengLin(Deserialize::deserialize(deserializer)?),
            Self::TrueSkill => SystemParams::TrueSkill(Deserialize::deserialize(deserializer)?),
            Self::Glicko2 => SystemParams::Glicko2(Deserialize::deserialize(deserializer)?),
            Self::Codeforces => SystemParams::Codeforces(Deserialize::deserialize(deserializer)?),
            Self::Topcoder => SystemParams::Topcoder(Deserialize::deserialize(deserializer)?),
            Self::Elo => SystemParams::Elo(Deserialize::deserialize(deserializer)?),
        })
    }

    /// The parameters worth searching when the system is tuned on data
    /// ([`RatingSystem::TUNED`]).
    #[must_use]
    pub fn tuned(self) -> &'static [&'static str] {
        match self {
            Self::EloMmr => EloMmr::TUNED,
            Self::WengLin => WengLin::TUNED,
            Self::TrueSkill => TrueSkill::TUNED,
            Self::Glicko2 => Glicko2::TUNED,
            Self::Codeforces => Codeforces::TUNED,
            Self::Topcoder => Topcoder::TUNED,
            Self::Elo => Elo::TUNED,
        }
    }

    /// The schema of the system's parameters and its name, for an API document: each
    /// parameter with its range.
    #[cfg(feature = "schema")]
    #[must_use]
    pub fn params_schema(
        self,
    ) -> (
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    ) {
        fn of<T: utoipa::ToSchema>() -> (
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        ) {
            (T::name().into_owned(), T::schema())
        }
        match self {
            Self::EloMmr => of::<EloMmrParams>(),
            Self::WengLin => of::<WengLinParams>(),
            Self::TrueSkill => of::<TrueSkillParams>(),
            Self::Glicko2 => of::<Glicko2Params>(),
            Self::Codeforces => of::<CodeforcesParams>(),
            Self::Topcoder => of::<TopcoderParams>(),
            Self::Elo => of::<EloParams>(),
        }
    }

    /// The name as requests and responses spell it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EloMmr => "elo_mmr",
            Self::WengLin => "weng_lin",
            Self::TrueSkill => "trueskill",
            Self::Glicko2 => "glicko2",
            Self::Codeforces => "codeforces",
            Self::Topcoder => "topcoder",
            Self::Elo => "elo",
        }
    }
}

impl From<EloMmrParams> for SystemParams {
    fn from(params: EloMmrParams) -> Self {
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
            Self::TrueSkill(_) => SystemName::TrueSkill,
            Self::Glicko2(_) => SystemName::Glicko2,
            Self::Codeforces(_) => SystemName::Codeforces,
            Self::Topcoder(_) => SystemName::Topcoder,
            Self::Elo(_) => SystemName::Elo,
        }
    }

    /// The parameters alone in their text form, without the system's name: the object
    /// `params` holds.
    pub fn serialize_own<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::EloMmr(p) => p.serialize(serializer),
            Self::WengLin(p) => p.serialize(serializer),
            Self::TrueSkill(p) => p.serialize(serializer),
            Self::Glicko2(p) => p.serialize(serializer),
            Self::Codeforces(p) => p.serialize(serializer),
            Self::Topcoder(p) => p.serialize(serializer),
            Self::Elo(p) => p.serialize(serializer),
        }
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            Self::EloMmr(p) => EloMmr::validate(p),
            Self::WengLin(p) => WengLin::validate(p),
            Self::TrueSkill(p) => TrueSkill::validate(p),
            Self::Glicko2(p) => Glicko2::validate(p),
            Self::Codeforces(p) => Codeforces::validate(p),
            Self::Topcoder(p) => Topcoder::validate(p),
            Self::Elo(p) => Elo::validate(p),
        }
    }

    /// The state of a player who has never played.
    #[must_use]
    pub fn newcomer(&self) -> SystemState {
        match self {
            Self::EloMmr(p) => SystemState::EloMmr(EloMmr::newcomer(p)),
            Self::WengLin(p) => SystemState::WengLin(WengLin::newcomer(p)),
            Self::TrueSkill(p) => SystemState::TrueSkill(TrueSkill::newcomer(p)),
            Self::Glicko2(p) => SystemState::Glicko2(Glicko2::newcomer(p)),
            Self::Codeforces(p) => SystemState::Codeforces(Codeforces::newcomer(p)),
            Self::Topcoder(p) => SystemState::Topcoder(Topcoder::newcomer(p)),
            Self::Elo(p) => SystemState::Elo(Elo::newcomer(p)),
        }
    }

    /// Refuses a round that uses what the system does not have, naming the field.
    pub fn check_round(&self, round: &Round) -> Result<(), Error> {
        match self {
            Self::EloMmr(p) => EloMmr::check_round(p, round),
            Self::WengLin(p) => WengLin::check_round(p, round),
            Self::TrueSkill(p) => TrueSkill::check_round(p, round),
            Self::Glicko2(p) => Glicko2::check_round(p, round),
            Self::Codeforces(p) => Codeforces::check_round(p, round),
            Self::Topcoder(p) => Topcoder::check_round(p, round),
            Self::Elo(p) => Elo::check_round(p, round),
        }
    }

    /// Rates one round: `priors[i]` is the state of `round.standings[i].player` before it (a
    /// [`newcomer`](Self::newcomer) for a first round). The result is aligned with
    /// `round.standings`. A prior of another system is [`Error::ForeignState`].
    ///
    /// The whole round runs on one of rayon's threads (`rayon::scope` moves it there when
    /// called from outside the pool): each of its parallel steps then shares its work from
    /// inside the pool, instead of handing it to the pool and waiting to be woken, five or more
    /// times a round. While one of its steps waits, that thread may take up other work of the
    /// pool, another pool's whole round included, and finishes it first.
    pub fn apply(&self, round: &Round, priors: &[&SystemState]) -> Result<Vec<Applied>, Error> {
        rayon::scope(|_| match self {
            Self::EloMmr(p) => applied::<EloMmr>(p, round, priors, SystemState::EloMmr),
            Self::WengLin(p) => applied::<WengLin>(p, round, priors, SystemState::WengLin),
            Self::TrueSkill(p) => applied::<TrueSkill>(p, round, priors, SystemState::TrueSkill),
            Self::Glicko2(p) => applied::<Glicko2>(p, round, priors, SystemState::Glicko2),
            Self::Codeforces(p) => applied::<Codeforces>(p, round, priors, SystemState::Codeforces),
            Self::Topcoder(p) => applied::<Topcoder>(p, round, priors, SystemState::Topcoder),
            Self::Elo(p) => applied::<Elo>(p, round, priors, SystemState::Elo),
        })
    }

    /// [`Self::apply`] on states the caller gives up, which a system may update in place
    /// instead of copying (Elo-MMR's beliefs hold up to `history_limit` factors): the same
    /// results bit for bit. On an error the states come back unchanged, in order, but for an
    /// [`Error::NotFinite`] of a system that rated them in place, where none come back (no
    /// parameters Elo-MMR accepts are known to lead there).
    pub fn apply_owned(
        &self,
        round: &Round,
        priors: Vec<SystemState>,
    ) -> Result<Vec<Applied>, (Error, Vec<SystemState>)> {
        rayon::scope(|_| match self {
            Self::EloMmr(p) => applied_owned::<EloMmr>(p, round, priors, SystemState::EloMmr),
            Self::WengLin(p) => applied_owned::<WengLin>(p, round, priors, SystemState::WengLin),
            Self::TrueSkill(p) => {
                applied_owned::<TrueSkill>(p, round, priors, SystemState::TrueSkill)
            }
            Self::Glicko2(p) => applied_owned::<Glicko2>(p, round, priors, SystemState::Glicko2),
            Self::Codeforces(p) => {
                applied_owned::<Codeforces>(p, round, priors, SystemState::Codeforces)
            }
            Self::Topcoder(p) => applied_owned::<Topcoder>(p, round, priors, SystemState::Topcoder),
            Self::Elo(p) => applied_owned::<Elo>(p, round, priors, SystemState::Elo),
        })
    }

    /// The family of every entrant's performance distribution.
    #[must_use]
    pub fn model(&self) -> Model {
        match self {
            Self::EloMmr(p) => EloMmr::model(p),
            Self::WengLin(p) => WengLin::model(p),
            Self::TrueSkill(p) => TrueSkill::model(p),
            Self::Glicko2(p) => Glicko2::model(p),
            Self::Codeforces(p) => Codeforces::model(p),
            Self::Topcoder(p) => Topcoder::model(p),
            Self::Elo(p) => Elo::model(p),
        }
    }

    /// The performance distribution of an entrant made of `members`; a state of another
    /// system is [`Error::ForeignState`].
    pub fn performance(&self, members: &[&SystemState]) -> Result<Performance, Error> {
        match self {
            Self::EloMmr(p) => Ok(EloMmr::performance(p, &own(members)?)),
            Self::WengLin(p) => Ok(WengLin::performance(p, &own(members)?)),
            Self::TrueSkill(p) => Ok(TrueSkill::performance(p, &own(members)?)),
            Self::Glicko2(p) => Ok(Glicko2::performance(p, &own(members)?)),
            Self::Codeforces(p) => Ok(Codeforces::performance(p, &own(members)?)),
            Self::Topcoder(p) => Ok(Topcoder::performance(p, &own(members)?)),
            Self::Elo(p) => Ok(Elo::performance(p, &own(members)?)),
        }
    }
}

impl SystemParams {
    /// `state` after a new season's soft `reset` (docs/seasons.md): a state of this system
    /// showing the reset rating, or `state` itself when the reset keeps everything.
    #[must_use]
    pub fn soft_reset(&self, state: &SystemState, reset: SoftReset) -> SystemState {
        if reset.keeps() {
            return state.clone();
        }
        let rating = reset.rating(state.rating(), self.newcomer().rating());
        match state {
            SystemState::EloMmr(s) => SystemState::EloMmr(EloMmr::with_rating(s, rating)),
            SystemState::WengLin(s) => SystemState::WengLin(WengLin::with_rating(s, rating)),
            SystemState::TrueSkill(s) => SystemState::TrueSkill(TrueSkill::with_rating(s, rating)),
            SystemState::Glicko2(s) => SystemState::Glicko2(Glicko2::with_rating(s, rating)),
            SystemState::Codeforces(s) => {
                SystemState::Codeforces(Codeforces::with_rating(s, rating))
            }
            SystemState::Topcoder(s) => SystemState::Topcoder(Topcoder::with_rating(s, rating)),
            SystemState::Elo(s) => SystemState::Elo(Elo::with_rating(s, rating)),
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
            Self::TrueSkill(s) => TrueSkill::rating(s),
            Self::Glicko2(s) => Glicko2::rating(s),
            Self::Codeforces(s) => Codeforces::rating(s),
            Self::Topcoder(s) => Topcoder::rating(s),
            Self::Elo(s) => Elo::rating(s),
        }
    }

    /// Rounds the player has played.
    #[must_use]
    pub fn rounds(&self) -> u64 {
        match self {
            Self::EloMmr(s) => EloMmr::rounds(s),
            Self::WengLin(s) => WengLin::rounds(s),
            Self::TrueSkill(s) => TrueSkill::rounds(s),
            Self::Glicko2(s) => Glicko2::rounds(s),
            Self::Codeforces(s) => Codeforces::rounds(s),
            Self::Topcoder(s) => Topcoder::rounds(s),
            Self::Elo(s) => Elo::rounds(s),
        }
    }
}

/// A [`SystemState`] that may hold system `S`'s state.
trait StateOf<S>: Sized {
    fn state_of(&self) -> Option<&S>;
    fn into_state(self) -> Result<S, Self>;
}

/// `StateOf<S>` for the variant that holds `S`.
macro_rules! state_of {
    ($variant:ident, $state:ty) => {
        impl StateOf<$state> for SystemState {
            fn state_of(&self) -> Option<&$state> {
                match self {
                    Self::$variant(s) => Some(s),
                    _ => None,
                }
            }

            fn into_state(self) -> Result<$state, Self> {
                match self {
                    Self::$variant(s) => Ok(s),
                    other => Err(other),
                }
            }
        }
    };
}

state_of!(EloMmr, EloMmrState);
state_of!(WengLin, WengLinState);
state_of!(TrueSkill, TrueSkillState);
state_of!(Glicko2, Glicko2State);
state_of!(Codeforces, CodeforcesState);
state_of!(Topcoder, TopcoderState);
state_of!(Elo, EloState);

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

/// [`SystemParams::apply_owned`] for system `S`; `wrap` turns `S`'s state into a
/// [`SystemState`].
fn applied_owned<S: RatingSystem>(
    params: &S::Params,
    round: &Round,
    priors: Vec<SystemState>,
    wrap: fn(S::State) -> SystemState,
) -> Result<Vec<Applied>, (Error, Vec<SystemState>)>
where
    SystemState: StateOf<S::State>,
{
    if let Some(index) = priors.iter().position(|s| s.state_of().is_none()) {
        return Err((Error::ForeignState { index }, priors));
    }
    let states: Vec<S::State> = priors
        .into_iter()
        .filter_map(|s| s.into_state().ok())
        .collect();
    let before: Vec<Rating> = states.iter().map(S::rating).collect();
    match S::rate_owned(params, round, states) {
        // A system that rates in place (Elo-MMR) cannot give back what a result that is not
        // finite replaced: as after a panic, those states are lost to the caller.
        Ok(rated) => match super::system::finite::<S>(rated) {
            Ok(rated) => Ok(changes::<S>(before, rated, wrap)),
            Err(error) => Err((error, Vec::new())),
        },
        Err((error, states)) => Err((error, states.into_iter().map(wrap).collect())),
    }
}

/// Each entrant's new state and what the round did to their rating, from their ratings
/// `before` it and their rated states.
fn changes<S: RatingSystem>(
    before: Vec<Rating>,
    rated: Vec<Rated<S::State>>,
    wrap: fn(S::State) -> SystemState,
) -> Vec<Applied> {
    before
        .into_iter()
        .zip(rated)
        .map(|(before, Rated { performance, state })| Applied {
            change: RatingChange {
                performance,
                before,
                after: S::rating(&state),
            },
            state: wrap(state),
        })
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
    let rated = super::system::finite::<S>(S::rate(params, round, &states)?)?;
    let before = states.iter().map(|&prior| S::rating(prior)).collect();
    Ok(changes::<S>(before, rated, wrap))
}
