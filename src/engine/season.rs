//! A season's soft reset (docs/seasons.md): every player's displayed rating moves part of the
//! way back toward a newcomer's, μ by one fraction, σ by another. Defined on the displayed
//! [`Rating`], so it means the same in every system; each system then builds the state that
//! shows the new rating ([`RatingSystem::with_rating`](super::RatingSystem::with_rating)).

use super::rating::Rating;

/// How far a new season moves every rating toward a newcomer's: each fraction between 0
/// (keep) and 1 (start again).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SoftReset {
    /// The share of the way μ moves toward the newcomer's μ₀.
    pub mu: f64,
    /// The share of the way σ moves toward the newcomer's σ₀.
    pub sigma: f64,
}

impl SoftReset {
    /// Whether it changes nothing: both fractions are 0.
    #[must_use]
    pub fn keeps(&self) -> bool {
        self.mu == 0.0 && self.sigma == 0.0
    }

    /// `rating` after the reset, `newcomer` being a newcomer's rating:
    /// `μ + a(μ₀ − μ)` and `σ + b(σ₀ − σ)`. A system without σ keeps none.
    #[must_use]
    pub fn rating(&self, rating: Rating, newcomer: Rating) -> Rating {
        Rating {
            mu: rating.mu + self.mu * (newcomer.mu - rating.mu),
            sigma: match (rating.sigma, newcomer.sigma) {
                (Some(sigma), Some(initial)) => Some(sigma + self.sigma * (initial - sigma)),
                (sigma, _) => sigma,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{
        CodeforcesParams, EloMmrParams, EloParams, Glicko2Params, SystemParams, TopcoderParams,
        TrueSkillParams, WengLinParams,
    };

    fn systems() -> Vec<SystemParams> {
        vec![
            EloMmrParams::default().into(),
            SystemParams::WengLin(WengLinParams::default()),
            SystemParams::TrueSkill(TrueSkillParams::default()),
            SystemParams::Glicko2(Glicko2Params::default()),
            SystemParams::Codeforces(CodeforcesParams::default()),
            SystemParams::Topcoder(TopcoderParams::default()),
            SystemParams::Elo(EloParams::default()),
        ]
    }

    /// A state of `system` that has played a few rounds against each other.
    fn played(system: &SystemParams, ranks: &[u64]) -> Vec<crate::SystemState> {
        let round = crate::Round {
            time: None,
            weight: 1.0,
            perf_ceiling: None,
            standings: ranks
                .iter()
                .enumerate()
                .map(|(i, &rank)| crate::Standing::solo(format!("p{i}"), rank))
                .collect(),
        };
        let newcomer = system.newcomer();
        let mut states: Vec<_> = ranks.iter().map(|_| newcomer.clone()).collect();
        for _ in 0..3 {
            let priors: Vec<_> = states.iter().collect();
            states = system
                .apply(&round, &priors)
                .expect("a valid round")
                .into_iter()
                .map(|a| a.state)
                .collect();
        }
        states
    }

    proptest! {
        #[test]
        fn every_system_shows_the_reset_rating_and_keeps_its_rounds(
            ranks in proptest::collection::vec(1u64..5, 2..6),
            mu in 0.0f64..=1.0,
            sigma in 0.0f64..=1.0,
        ) {
            let reset = SoftReset { mu, sigma };
            for system in systems() {
                let newcomer = system.newcomer().rating();
                for state in played(&system, &ranks) {
                    let after = system.soft_reset(&state, reset);
                    let want = reset.rating(state.rating(), newcomer);
                    let got = after.rating();
                    prop_assert!((got.mu - want.mu).abs() <= 1e-9 * want.mu.abs().max(1.0));
                    match (got.sigma, want.sigma) {
                        (Some(g), Some(w)) => prop_assert!((g - w).abs() <= 1e-9 * w.max(1.0)),
                        (None, None) => {}
                        other => prop_assert!(false, "σ {:?} in {:?}", other, system.name()),
                    }
                    prop_assert_eq!(after.rounds(), state.rounds());
                }
            }
        }

        #[test]
        fn no_reset_changes_nothing_and_a_full_one_shows_a_newcomer(
            ranks in proptest::collection::vec(1u64..5, 2..6),
        ) {
            for system in systems() {
                let newcomer = system.newcomer().rating();
                for state in played(&system, &ranks) {
                    prop_assert_eq!(&system.soft_reset(&state, SoftReset::default()), &state);
                    let full = system.soft_reset(&state, SoftReset { mu: 1.0, sigma: 1.0 });
                    prop_assert_eq!(full.rating(), newcomer);
                }
            }
        }
    }

    #[test]
    fn a_reset_collapses_an_elo_mmr_belief_into_one_gaussian() {
        let system: SystemParams = EloMmrParams::default().into();
        let state = played(&system, &[1, 2, 3]).remove(0);
        let crate::SystemState::EloMmr(before) = &state else {
            panic!("an Elo-MMR state")
        };
        assert!(!before.factors.is_empty());
        let crate::SystemState::EloMmr(after) = system.soft_reset(
            &state,
            SoftReset {
                mu: 0.5,
                sigma: 0.0,
            },
        ) else {
            panic!("an Elo-MMR state")
        };
        assert!(after.factors.is_empty());
        assert_eq!(after.p0, after.mu);
        assert!((after.w0 - 1.0 / (after.sigma * after.sigma)).abs() < 1e-18);
        assert_eq!(after.sigma, before.sigma);
        assert_eq!(after.mu, before.mu + 0.5 * (1500.0 - before.mu));
    }
}
