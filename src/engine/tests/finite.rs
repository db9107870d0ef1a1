//! No rating system hands back a number that is not finite: TrueSkill's and Weng-Lin's
//! arithmetic, the two an adversarial search drove to NaN at parameters their ranges accept,
//! either rate a round finitely or refuse it with `Error::NotFinite` (which the service marks the
//! round failed for), over the whole box of accepted parameters and every shape of round.
//! Plackett-Luce, computed in log space, always rates finitely, and so do the corners that
//! search found, TrueSkill's since its draws integrate across a margin far below the spread by
//! its series and its means are measured from the round's origin; what is left to refuse is a
//! round between teams of other sizes whose sums stand beyond the digits of double precision.

use mmr_engine::bounds::{MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};
use mmr_engine::{
    Error, Population, Round, Standing, SystemParams, TrueSkillParams, WengLinModel, WengLinParams,
};
use proptest::prelude::*;

use crate::support::{build_round, round_spec};

/// What applying `rounds` in order gave: each round's changes all finite, or `NotFinite`; any
/// other error fails the test. Returns how many were refused as not finite.
fn apply_all(system: &SystemParams, rounds: &[Round]) -> usize {
    let mut population = Population::new(system.clone()).expect("valid parameters");
    let mut refused = 0;
    for round in rounds {
        match population.apply(round) {
            Ok(changes) => {
                for change in changes {
                    let numbers = [change.performance, change.before.mu, change.after.mu];
                    let sigmas = [change.before.sigma, change.after.sigma];
                    assert!(
                        numbers.iter().all(|x| x.is_finite())
                            && sigmas.iter().flatten().all(|s| s.is_finite()),
                        "{system:?}: {change:?}"
                    );
                }
            }
            Err(Error::NotFinite { .. }) => refused += 1,
            Err(other) => panic!("{system:?}: {round:?}: {other}"),
        }
    }
    refused
}

fn solo(players: &[(&str, u64)]) -> Round {
    Round::new(players.iter().map(|&(p, r)| Standing::solo(p, r)).collect())
}

fn team(members: &[&str], name: &str, rank: u64) -> Vec<Standing> {
    members
        .iter()
        .map(|&p| Standing {
            team: Some(name.to_owned()),
            ..Standing::solo(p, rank)
        })
        .collect()
}

#[test]
fn plackett_luce_rates_an_entrant_far_below_the_rest_finitely() {
    // exp((μ − top)/c) underflowed to 0 for `c`, 100,000 below team `t`: its group's sum was 0
    // and 0·∞ followed.
    let system = SystemParams::WengLin(WengLinParams {
        model: WengLinModel::PlackettLuce,
        mu_init: 100_000.0,
        ..WengLinParams::default()
    });
    let mut standings = team(&["a", "b"], "t", 1);
    standings.push(Standing::solo("c", 2));
    let round = Round::new(standings);
    assert_eq!(apply_all(&system, &[round.clone(), round]), 0);
}

#[test]
fn the_trueskill_corners_an_adversarial_search_found_rate_finitely() {
    let mut nine = team(&["a", "b", "c", "d", "e", "f", "g", "h", "i"], "nine", 1);
    nine.push(Standing::solo("z", 2));
    let mut refused = 0;
    let shapes = [
        Round::new(nine),
        solo(&[("a", 1), ("b", 2)]),
        solo(&[("a", 1), ("b", 1)]),
        solo(&[("a", 1), ("b", 2), ("c", 2)]),
        solo(&[("a", 1), ("b", 1), ("c", 2)]),
    ];
    for params in [
        TrueSkillParams {
            mu_init: -1e9,
            ..TrueSkillParams::default()
        },
        TrueSkillParams {
            beta: 1e-6,
            draw_probability: 1e-9,
            ..TrueSkillParams::default()
        },
        TrueSkillParams {
            tau: 1e6,
            draw_probability: 1e-9,
            ..TrueSkillParams::default()
        },
        TrueSkillParams {
            beta: 1e-6,
            tau: 1e6,
            draw_probability: 1e-9,
            ..TrueSkillParams::default()
        },
    ] {
        let system = SystemParams::TrueSkill(params);
        refused += apply_all(&system, &shapes);
        refused += apply_all(&system, &[shapes[0].clone(), shapes[0].clone()]);
    }
    // The draw's truncation integrates across a margin this far below the spread by its series.
    assert_eq!(refused, 0, "every corner rates finitely");
}

#[test]
fn a_round_between_teams_of_other_sizes_beyond_the_digits_of_precision_is_refused_not_kept() {
    // Members rated 5e8 and known to 1e-4: a pair's sum stands 5e8 (5e12 spreads) above a
    // single player's, and the pair tying with single players moves every belief by more digits
    // than double precision holds. Entrants of one size are measured from the round's origin and
    // rate finitely however far from 0 (src/engine/true_skill.rs); these cannot.
    let system = SystemParams::TrueSkill(beyond_precision());
    assert_eq!(apply_all(&system, &[teams_of_other_sizes()]), 1);
}

/// TrueSkill at μ₀ 5e8 known to σ₀ 1e-4, the performance spread 1e-6.
fn beyond_precision() -> TrueSkillParams {
    TrueSkillParams {
        beta: 1e-6,
        tau: 0.0,
        draw_probability: 0.5,
        mu_init: 5e8,
        sigma_init: 1e-4,
    }
}

/// A round of single players and two pairs, one pair tied with two single players.
fn teams_of_other_sizes() -> Round {
    let standings = [
        ("p0", 1, None),
        ("p1", 2, Some("t2")),
        ("p2", 4, None),
        ("p3", 3, None),
        ("p4", 4, Some("t4")),
        ("p5", 4, Some("t4")),
        ("p6", 1, None),
        ("p7", 4, None),
    ]
    .map(|(player, rank, team)| Standing {
        team: team.map(str::to_owned),
        ..Standing::solo(player, rank)
    });
    Round::new(standings.to_vec())
}

/// A value of a parameter's range `[low, high]`: either end, or anywhere between, spread evenly
/// over orders of magnitude where the range spans many.
fn ranged(low: f64, high: f64) -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(low),
        Just(high),
        low..=high,
        (0.0..=1.0f64).prop_map(move |t| {
            let (l, h) = (low.max(MIN_SPREAD), high);
            (l.ln() + t * (h.ln() - l.ln())).exp()
        }),
    ]
}

fn rating() -> impl Strategy<Value = f64> {
    prop_oneof![
        ranged(-MAX_ABS_RATING, MAX_ABS_RATING),
        ranged(MIN_SPREAD, MAX_ABS_RATING).prop_map(|x| -x),
        ranged(MIN_SPREAD, MAX_ABS_RATING),
    ]
}

fn any_weng_lin_or_trueskill() -> impl Strategy<Value = SystemParams> {
    let weng_lin = (
        ranged(MIN_SPREAD, MAX_SPREAD),
        ranged(1e-9, 1.0),
        ranged(0.0, MAX_SPREAD),
        rating(),
        ranged(MIN_SPREAD, MAX_SPREAD),
        prop::bool::ANY,
    )
        .prop_map(|(beta, kappa, tau, mu_init, sigma_init, plackett)| {
            SystemParams::WengLin(WengLinParams {
                beta,
                kappa,
                tau,
                mu_init,
                sigma_init,
                model: if plackett {
                    WengLinModel::PlackettLuce
                } else {
                    WengLinModel::BradleyTerry
                },
            })
        });
    let true_skill = (
        ranged(MIN_SPREAD, MAX_SPREAD),
        ranged(0.0, MAX_SPREAD),
        ranged(1e-9, 1.0 - 1e-9),
        rating(),
        ranged(MIN_SPREAD, MAX_SPREAD),
    )
        .prop_map(|(beta, tau, draw_probability, mu_init, sigma_init)| {
            SystemParams::TrueSkill(TrueSkillParams {
                beta,
                tau,
                draw_probability,
                mu_init,
                sigma_init,
            })
        });
    prop_oneof![weng_lin, true_skill]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Three rounds among the same eight players, with ties and teams: every result finite or
    /// refused as not finite, and Plackett-Luce never refused.
    #[test]
    fn every_accepted_parameter_rates_finitely_or_refuses(
        system in any_weng_lin_or_trueskill(),
        specs in prop::collection::vec(round_spec(8, true), 3),
    ) {
        let rounds: Vec<Round> = specs
            .iter()
            .map(|spec| Round { weight: 1.0, perf_ceiling: None, ..build_round(spec, None).0 })
            .collect();
        let refused = apply_all(&system, &rounds);
        let plackett_luce = matches!(
            system,
            SystemParams::WengLin(WengLinParams { model: WengLinModel::PlackettLuce, .. })
        );
        prop_assert!(!plackett_luce || refused == 0, "{system:?} refused {refused}");
    }
}
