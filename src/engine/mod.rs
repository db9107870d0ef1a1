//! The rating engine: exact, parallel Elo-MMR (Ebtekar & Liu), its Gaussian variant Elo-MMχ,
//! and beside them Weng-Lin (OpenSkill's models), TrueSkill, Glicko-2, Codeforces' and
//! Topcoder's systems and Elo for free-for-all rounds; predictions, matchmaking and accuracy
//! metrics.
//! Pure and synchronous: no I/O, no async, nothing from the web or storage layers; rayon
//! inside. `docs/elo-mmr.md` and each system's page (`docs/weng-lin.md`, `docs/trueskill.md`,
//! `docs/glicko2.md`, `docs/codeforces.md`, `docs/topcoder.md`, `docs/elo.md`) state every
//! formula used here.
//!
//! Layout, the seam first: [`system`] (the trait a rating system implements, and the
//! performance distribution predictions read), [`any`] (the pool's system, whichever it is,
//! dispatched; the one list of the systems), [`rating`] (what every system shows: a rating and
//! what a round did to it), [`round`] (a round's results and their validation), [`bounds`] (the
//! ranges every system's parameters and rounds are held to), [`population`] (players by id, in
//! memory), [`predict`] (win probabilities, placings and match quality), [`matchmaking`] (who
//! should play whom), [`metrics`] (accuracy of the priors' predictions), [`season`] (a new
//! season's soft reset).
//! Then one module per system. [`elo_mmr`] holds Elo-MMR's internals: [`params`] (its
//! parameters), [`player`] (a player's belief, diffusion and update), `performance` (step 3,
//! the exact O(N)-per-sample performance solver), [`rate`] (one round end to end).
//! [`weng_lin`] holds `bradley_terry`, its full pairing's sums. [`true_skill`], [`glicko2`],
//! [`codeforces`], [`topcoder`] and [`elo`] are a file each.
//! Last, `maths`, what the systems share: [`normal`] (the normal distribution), `lanes` (the
//! `tanh` of the hot loops, on vector instructions), `chebyshev` (interpolation), `solve`
//! (safeguarded root finding), `tanh_sum` (the sum over a round's ratings of Codeforces and
//! Elo), `normal_sum` (Topcoder's sums of Φ).

pub mod any;
pub mod bounds;
pub mod codeforces;
pub mod elo;
pub mod elo_mmr;
pub mod glicko2;
pub mod matchmaking;
mod maths;
pub mod metrics;
pub mod population;
pub mod predict;
pub mod rating;
pub mod round;
pub mod season;
pub mod system;
pub mod topcoder;
pub mod true_skill;
pub mod weng_lin;

pub use elo_mmr::{params, player, rate};
pub use maths::normal;

pub use any::{Applied, SystemName, SystemParams, SystemState};
pub use codeforces::{Codeforces, CodeforcesParams, CodeforcesState};
pub use elo::{Elo, EloParams, EloState};
pub use elo_mmr::EloMmr;
pub use glicko2::{Glicko2, Glicko2Params, Glicko2State};
pub use params::{EloMmrParams, Ties, Variant};
pub use player::{EloMmrState, Factor};
pub use population::{Beliefs, Population};
pub use rate::{rate_round, rate_round_owned};
pub use rating::{Rating, RatingChange};
pub use round::{Round, Standing};
pub use season::SoftReset;
pub use system::{Given, Model, Performance, Rated, RatingSystem};
pub use topcoder::{Topcoder, TopcoderParams, TopcoderState};
pub use true_skill::{TrueSkill, TrueSkillParams, TrueSkillState};
pub use weng_lin::{WengLin, WengLinModel, WengLinParams, WengLinState};

use maths::lanes::tanh;

/// `√3 / π`: a logistic distribution with scale `s̄ = LOGISTIC_SCALE · s` has std `s`.
pub const LOGISTIC_SCALE: f64 = 0.551_328_895_421_792_1;

/// Uniform draws in [0, 1) from a 64-bit LCG started at `seed`: the same on every run, for
/// tests that need many varied inputs.
#[cfg(test)]
pub(crate) fn uniform(mut seed: u64) -> impl FnMut() -> f64 {
    move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How a request names its list of entrants and each entrant's players, for the paths of a
/// [`PredictionPath`]: the list's name, and what follows `list[i]` before the player index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestNames {
    /// The list, e.g. `entrants`.
    pub list: &'static str,
    /// What names an entrant's players after `list[i]`, e.g. `.players`, or nothing when an
    /// entrant is its list of players.
    pub players: &'static str,
}

/// The engine's own names: `entrants[i].players[j]`.
pub const ENTRANTS: RequestNames = RequestNames {
    list: "entrants",
    players: ".players",
};

/// Where in a prediction request a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PredictionPath {
    /// The list of entrants as a whole.
    Entrants,
    /// Entrant `i`'s players.
    Entrant(usize),
    /// Player `j` of entrant `i`.
    Member(usize, usize),
    /// A head-to-head's first player.
    A,
    /// A head-to-head's second player.
    B,
}

impl PredictionPath {
    /// The path in a request that names things `names`.
    #[must_use]
    pub fn render(&self, names: RequestNames) -> String {
        let RequestNames { list, players } = names;
        match self {
            Self::Entrants => list.to_owned(),
            Self::Entrant(i) => format!("{list}[{i}]{players}"),
            Self::Member(i, j) => format!("{list}[{i}]{players}[{j}]"),
            Self::A => "a".to_owned(),
            Self::B => "b".to_owned(),
        }
    }
}

/// What is wrong with a prediction request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PredictionProblem {
    /// Fewer than two entrants.
    TooFewEntrants,
    /// An entrant with no players.
    NoPlayers,
    /// An empty player id.
    EmptyId,
    /// The second player of a head-to-head is the first.
    SamePlayer,
    /// A player listed twice: twice in one entrant (`first` is `None`), or again after
    /// entrant `first`.
    Repeated {
        /// The player.
        player: String,
        /// The entrant that listed them first, when another one.
        first: Option<usize>,
    },
}

impl PredictionProblem {
    /// The reason, in a request that names things `names`.
    #[must_use]
    pub fn render(&self, names: RequestNames) -> String {
        match self {
            Self::TooFewEntrants => format!("needs at least 2 {}", names.list),
            Self::NoPlayers => "has no players".to_owned(),
            Self::EmptyId => "is empty".to_owned(),
            Self::SamePlayer => "is the same player as `a`".to_owned(),
            Self::Repeated {
                player,
                first: None,
            } => format!("lists `{player}` twice"),
            Self::Repeated {
                player,
                first: Some(k),
            } => format!("lists `{player}`, who is already in {}[{k}]", names.list),
        }
    }
}

/// Everything the engine refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A pool parameter is out of range.
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name, as its system's parameters spell it.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A round cannot be rated.
    #[error("invalid round: `{field}` {reason}")]
    InvalidRound {
        /// Path of the offending field, e.g. `standings[3].rank`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A prediction request is not a set of at least two disjoint, non-empty entrants. Both
    /// parts are relative to the request's list of entrants, so that each caller can name
    /// them as its own request does ([`PredictionPath::render`], [`PredictionProblem::render`]).
    #[error("invalid prediction: `{}` {}", at.render(ENTRANTS), problem.render(ENTRANTS))]
    InvalidPrediction {
        /// Where the problem is.
        at: PredictionPath,
        /// What it is.
        problem: PredictionProblem,
    },
    /// The computation was cancelled by its caller (a prediction whose request went away).
    #[error("cancelled")]
    Cancelled,
    /// A state given to a rating system is another system's (a bug of the caller: a pool's
    /// players all have its system's states).
    #[error("state {index} belongs to another rating system")]
    ForeignState {
        /// Its index among the states given.
        index: usize,
    },
    /// The system's arithmetic gave a standing a rating that is not a finite number: the
    /// round is refused rather than kept (parameters at the edge of their range can drive
    /// it there).
    #[error(
        "the rating system's arithmetic gave standings[{index}] a rating that is not a finite \
         number: these parameters cannot rate this round"
    )]
    NotFinite {
        /// The standing's index in the round.
        index: usize,
    },
    /// The caller passed a different number of priors than the round has standings.
    #[error("{priors} priors given for {standings} standings")]
    PriorCount {
        /// Standings in the round.
        standings: usize,
        /// Priors given.
        priors: usize,
    },
}

impl Error {
    /// [`Error::InvalidParameter`]: the parameter `name` refused for `reason`.
    pub fn parameter(name: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidParameter {
            name,
            reason: reason.into(),
        }
    }

    pub(crate) fn round(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidRound {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn prediction(at: PredictionPath, problem: PredictionProblem) -> Self {
        Self::InvalidPrediction { at, problem }
    }

    /// The parameter or field the error is about, if any (a prediction's named as
    /// [`ENTRANTS`] names them).
    #[must_use]
    pub fn field(&self) -> Option<String> {
        match self {
            Self::InvalidParameter { name, .. } => Some((*name).to_owned()),
            Self::InvalidRound { field, .. } => Some(field.clone()),
            Self::InvalidPrediction { at, .. } => Some(at.render(ENTRANTS)),
            Self::PriorCount { .. }
            | Self::ForeignState { .. }
            | Self::NotFinite { .. }
            | Self::Cancelled => None,
        }
    }
}
