//! The rating engine: exact, parallel Elo-MMR (Ebtekar & Liu), its Gaussian variant Elo-MMχ,
//! predictions and accuracy metrics. Pure and synchronous: no I/O, no async, nothing from the
//! web or storage layers; rayon inside. `../shared/MATH.md` restates every formula used here.
//!
//! Layout: [`params`] (a pool's parameters), [`round`] (a round's results and their
//! validation), [`player`] (a player's belief, diffusion and update), `performance` (step 3,
//! the exact O(N)-per-sample performance solver), [`rate`] (one round end to end),
//! [`population`] (players by id, in memory), [`predict`] (win probabilities),
//! [`metrics`] (accuracy of the priors' predictions), [`normal`] (the normal distribution).

mod chebyshev;
pub mod metrics;
pub mod normal;
pub mod params;
mod performance;
pub mod player;
pub mod population;
pub mod predict;
pub mod rate;
pub mod round;
mod solve;

pub use params::{Params, Ties, Variant};
pub use player::{Factor, PlayerState};
pub use population::{Change, Population};
pub use rate::{rate_round, Rated};
pub use round::{Round, Standing};

/// `√3 / π`: a logistic distribution with scale `s̄ = LOGISTIC_SCALE · s` has std `s`.
pub const LOGISTIC_SCALE: f64 = 0.551_328_895_421_792_1;

/// Everything the engine refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A pool parameter is out of range.
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name, as in [`Params`].
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
    pub(crate) fn parameter(name: &'static str, reason: impl Into<String>) -> Self {
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

    /// The parameter or field the error is about, if any.
    #[must_use]
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidParameter { name, .. } => Some(name),
            Self::InvalidRound { field, .. } => Some(field),
            Self::PriorCount { .. } => None,
        }
    }
}
