//! The rating engine: exact, parallel Elo-MMR (Ebtekar & Liu), its Gaussian variant Elo-MMχ,
//! Weng-Lin (OpenSkill's models), TrueSkill, Glicko-2 and Codeforces' system beside them,
//! predictions and accuracy metrics.
//! Pure and synchronous: no I/O, no async, nothing from the web or storage layers; rayon
//! inside. `docs/elo-mmr.md`, `docs/weng-lin.md`, `docs/trueskill.md`, `docs/glicko2.md` and
//! `docs/codeforces.md` state every formula used here.
//!
//! Layout, the seam first: [`system`] (the trait a rating system implements, and the
//! performance distribution predictions read), [`any`] (the pool's system, whichever it is,
//! dispatched), [`rating`] (what every system shows: a rating and what a round did to it),
//! [`round`] (a round's results and their validation), [`population`] (players by id, in
//! memory), [`predict`] (win probabilities, placings and match quality), [`metrics`] (accuracy
//! of the priors' predictions), [`normal`] (the normal distribution). Weng-Lin: [`weng_lin`].
//! TrueSkill: [`true_skill`]. Glicko-2: [`glicko2`]. Codeforces:
//! [`codeforces`].
//! Elo-MMR: [`elo_mmr`] (its place on the seam), [`params`] (its parameters), [`player`] (a
//! player's belief, diffusion and update), `performance` (step 3, the exact O(N)-per-sample
//! performance solver), [`rate`] (one round end to end).

pub mod any;
mod chebyshev;
pub mod codeforces;
pub mod elo_mmr;
pub mod glicko2;
pub mod metrics;
pub mod normal;
pub mod params;
mod performance;
pub mod player;
pub mod population;
pub mod predict;
pub mod rate;
pub mod rating;
pub mod round;
mod solve;
pub mod system;
pub mod true_skill;
pub mod weng_lin;

pub use any::{Applied, SystemName, SystemParams, SystemState};
pub use codeforces::{Codeforces, CodeforcesParams, CodeforcesState};
pub use elo_mmr::EloMmr;
pub use glicko2::{Glicko2, Glicko2Params, Glicko2State};
pub use params::{Params, Ties, Variant};
pub use player::{Factor, PlayerState};
pub use population::{Beliefs, Population};
pub use rate::rate_round;
pub use rating::{Rating, RatingChange};
pub use round::{Round, Standing};
pub use system::{Model, Performance, Rated, RatingSystem};
pub use true_skill::{TrueSkill, TrueSkillParams, TrueSkillState};
pub use weng_lin::{WengLin, WengLinModel, WengLinParams, WengLinState};

/// `√3 / π`: a logistic distribution with scale `s̄ = LOGISTIC_SCALE · s` has std `s`.
pub const LOGISTIC_SCALE: f64 = 0.551_328_895_421_792_1;

/// `tanh` through one `exp`: twice as fast as libm's `tanh` on the hot paths (every
/// performance sum and every posterior update), within a few ulps of 1 in absolute terms
/// (all those sums need), and exactly ±1 wherever `tanh` rounds to ±1.
#[must_use]
pub(crate) fn tanh(x: f64) -> f64 {
    let e = (-2.0 * x.abs()).exp();
    ((1.0 - e) / (1.0 + e)).copysign(x)
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
    /// A prediction request is not a set of at least two disjoint, non-empty entrants.
    #[error("invalid prediction: `{field}` {reason}")]
    InvalidPrediction {
        /// Path of the offending field, e.g. `entrants[2].players`.
        field: String,
        /// What is wrong with it.
        reason: String,
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

    pub(crate) fn prediction(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidPrediction {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The parameter or field the error is about, if any.
    #[must_use]
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidParameter { name, .. } => Some(name),
            Self::InvalidRound { field, .. } | Self::InvalidPrediction { field, .. } => Some(field),
            Self::PriorCount { .. } | Self::ForeignState { .. } | Self::Cancelled => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fast_tanh_agrees_with_libm(x in -40.0..40.0f64) {
            let (fast, libm) = (super::tanh(x), x.tanh());
            prop_assert!((fast - libm).abs() <= 4.0 * f64::EPSILON, "{} vs {}", fast, libm);
        }
    }

    #[test]
    fn fast_tanh_saturates_exactly() {
        assert_eq!(super::tanh(20.0), 1.0);
        assert_eq!(super::tanh(-25.0), -1.0);
        assert_eq!(super::tanh(0.0), 0.0);
    }
}
