//! No rating system hands back a number that is not finite: every system rates every shape of
//! round finitely over the whole box of parameters it accepts. TrueSkill's and Weng-Lin's
//! arithmetic, the two an adversarial search drove to NaN there, were made robust rather than
//! bounded: Plackett-Luce is computed in log space, TrueSkill's draws integrate across a margin
//! far below the spread by its series, its means are measured from the round's origin, and its
//! chain sends each factor the product of the other messages instead of dividing a message back
//! out of a marginal. `Error::NotFinite` (the check between rating and keeping, which the service
//! fails a round for) stays as the guard behind them; no round here reaches it.

use mmr_engine::bounds::{
    MAX_ABS_RATING, MAX_ROUND_WEIGHT, MAX_SPREAD, MIN_ROUND_WEIGHT, MIN_SPREAD,
};
use mmr_engine::params::{MAX_DRIFT_PER_DAY, MAX_HISTORY_LIMIT};
use mmr_engine::{
    CodeforcesParams, EloMmrParams, EloParams, Error, Glicko2Params, Population, Round, Standing,
    SystemParams, Ties, TopcoderParams, TrueSkillParams, Variant, WengLinModel, WengLinParams,
};
use proptest::prelude::*;

use crate::support::{build_round, round_spec, RoundSpec, DAY};

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
fn a_round_between_teams_of_other_sizes_far_beyond_their_spread_rates_finitely() {
    // Members rated 5e8 and known to 1e-4: a pair's sum stands 5e8 (5e12 spreads) above a
    // single player's. The pair tying with single players sends a truncation's precision some
    // 1e25 times the others'; dividing it back out of the team's marginal had left a precision
    // of 0 and the round refused. The tie says the pairs did no better than the singles: their
    // members come down, and the single players tied with them go up.
    let system = SystemParams::TrueSkill(beyond_precision());
    let mut population = Population::new(system).expect("valid parameters");
    let round = teams_of_other_sizes();
    let changes = population.apply(&round).expect("rated finitely");
    let moved = |player: &str| {
        let at = round
            .standings
            .iter()
            .position(|s| s.player == player)
            .expect("in the round");
        changes[at].after.mu - changes[at].before.mu
    };
    assert!(moved("p4") < 0.0 && moved("p5") < 0.0, "{changes:?}");
    assert!(moved("p2") > 0.0 && moved("p7") > 0.0, "{changes:?}");
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

/// Elo-MMR (either variant), Glicko-2, Codeforces, Topcoder or Elo, anywhere in the box of
/// parameters each accepts (`validate`), ρ = ∞ included.
fn any_other_system() -> impl Strategy<Value = SystemParams> {
    let elo_mmr = (
        (prop::bool::ANY, prop::bool::ANY),
        ranged(MIN_SPREAD, MAX_SPREAD),
        ranged(0.0, MAX_SPREAD),
        prop_oneof![ranged(0.0, MAX_SPREAD), Just(f64::INFINITY)],
        rating(),
        ranged(MIN_SPREAD, MAX_SPREAD),
        ranged(0.0, MAX_DRIFT_PER_DAY),
        prop_oneof![1..=3usize, Just(MAX_HISTORY_LIMIT)],
    )
        .prop_map(
            |((gaussian, split), beta, gamma, rho, mu_init, sigma_init, drift, history_limit)| {
                SystemParams::EloMmr(EloMmrParams {
                    variant: if gaussian {
                        Variant::Gaussian
                    } else {
                        Variant::Logistic
                    },
                    beta,
                    gamma,
                    rho,
                    mu_init,
                    sigma_init,
                    drift_per_day: drift,
                    history_limit,
                    ties: if split { Ties::Split } else { Ties::Both },
                })
            },
        );
    let glicko2 = (
        ranged(MIN_SPREAD, 100.0),
        rating(),
        ranged(MIN_SPREAD, MAX_SPREAD),
        ranged(MIN_SPREAD, 10.0),
    )
        .prop_map(|(tau, mu_init, sigma_init, volatility_init)| {
            SystemParams::Glicko2(Glicko2Params {
                tau,
                mu_init,
                sigma_init,
                volatility_init,
            })
        });
    let codeforces = (
        ranged(MIN_SPREAD, MAX_SPREAD),
        ranged(MIN_SPREAD, 1e6),
        rating(),
        ranged(MIN_SPREAD, MAX_SPREAD),
    )
        .prop_map(|(beta, weight_multiplier, mu_init, sigma_init)| {
            SystemParams::Codeforces(CodeforcesParams {
                beta,
                weight_multiplier,
                mu_init,
                sigma_init,
            })
        });
    let topcoder = (
        ranged(MIN_SPREAD, 1e6),
        rating(),
        ranged(MIN_SPREAD, MAX_SPREAD),
    )
        .prop_map(|(weight_multiplier, mu_init, sigma_init)| {
            SystemParams::Topcoder(TopcoderParams {
                weight_multiplier,
                mu_init,
                sigma_init,
            })
        });
    let elo = (
        ranged(MIN_SPREAD, MAX_SPREAD),
        ranged(0.0, MAX_SPREAD),
        rating(),
    )
        .prop_map(|(temperature, k, mu_init)| {
            SystemParams::Elo(EloParams {
                temperature,
                k,
                mu_init,
            })
        });
    prop_oneof![elo_mmr, glicko2, codeforces, topcoder, elo]
}

/// The rounds `specs` describe, a day apart per step of their `days`, each with a weight
/// anywhere in the accepted range and a ceiling where `weights` says so, those the system does
/// not take (weights, ceilings, teams) left out as it would refuse them.
fn rounds_for(
    system: &SystemParams,
    specs: &[RoundSpec],
    weights: &[(f64, Option<f64>)],
) -> Vec<Round> {
    let mut day = 0;
    let mut rounds = Vec::new();
    for (spec, &(weight, ceiling)) in specs.iter().zip(weights) {
        day += spec.days;
        let round = Round {
            weight,
            perf_ceiling: ceiling,
            ..build_round(spec, Some(day * DAY)).0
        };
        let plain = Round {
            weight: 1.0,
            perf_ceiling: None,
            ..round.clone()
        };
        rounds.extend(
            [round, plain]
                .into_iter()
                .find(|r| system.check_round(r).is_ok()),
        );
    }
    rounds
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Three rounds among the same eight players, with ties and teams, at any parameters
    /// Weng-Lin (either model) or TrueSkill accepts: every result finite.
    #[test]
    fn every_accepted_parameter_of_weng_lin_and_trueskill_rates_finitely(
        system in any_weng_lin_or_trueskill(),
        specs in prop::collection::vec(round_spec(8, true), 3),
    ) {
        let rounds: Vec<Round> = specs
            .iter()
            .map(|spec| Round { weight: 1.0, perf_ceiling: None, ..build_round(spec, None).0 })
            .collect();
        prop_assert_eq!(apply_all(&system, &rounds), 0, "{:?}: {:?}", system, rounds);
    }

    /// The same for every other system, with dates, round weights over their whole range and
    /// performance ceilings where the system takes them.
    #[test]
    fn every_accepted_parameter_of_the_other_systems_rates_finitely(
        system in any_other_system(),
        specs in prop::collection::vec(round_spec(8, true), 3),
        weights in prop::collection::vec(
            (ranged(MIN_ROUND_WEIGHT, MAX_ROUND_WEIGHT), prop::option::weighted(0.3, rating())),
            3,
        ),
    ) {
        let rounds = rounds_for(&system, &specs, &weights);
        prop_assert_eq!(apply_all(&system, &rounds), 0, "{:?}: {:?}", system, rounds);
    }
}
