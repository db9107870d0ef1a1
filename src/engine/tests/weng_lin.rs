//! Weng-Lin: Bradley-Terry full pairing against `skillratings`' `weng_lin_multi_team`, an
//! independent implementation; Plackett-Luce against values worked by hand and against the
//! paper's O(N²) loop transcribed here (ours sums by group in O(N)); both by the properties
//! their updates have whatever the inputs.

use mmr_engine::{
    Beliefs, Population, RatingSystem, Round, Standing, SystemParams, SystemState, WengLin,
    WengLinModel, WengLinParams, WengLinState,
};
use proptest::prelude::*;
use skillratings::weng_lin::{weng_lin_multi_team, WengLinConfig, WengLinRating};
use skillratings::MultiTeamOutcome;

/// Agreement with `skillratings` (which orders some sums differently, and fuses multiplies).
const AGREEMENT: f64 = 1e-9;

/// A round of 2 to 8 teams of 1 to 4 players, ranks 1 to 4 (so ties are common), each player
/// with a prior rating in 0..50 and uncertainty in 0.5..9.
fn teams() -> impl Strategy<Value = Vec<(u64, Vec<(f64, f64)>)>> {
    prop::collection::vec(
        (
            1..5u64,
            prop::collection::vec((0.0..50.0f64, 0.5..9.0f64), 1..5),
        ),
        2..9,
    )
}

/// The round and the priors of `teams`, players named `t{team}p{member}`.
fn round_of(teams: &[(u64, Vec<(f64, f64)>)]) -> (Round, Vec<WengLinState>) {
    let mut standings = Vec::new();
    let mut priors = Vec::new();
    for (t, (rank, members)) in teams.iter().enumerate() {
        for (m, &(mu, sigma)) in members.iter().enumerate() {
            standings.push(Standing::member(
                format!("t{t}p{m}"),
                *rank,
                format!("t{t}"),
            ));
            priors.push(WengLinState {
                mu,
                sigma,
                rounds: 3,
            });
        }
    }
    (Round::new(standings), priors)
}

/// Our parameters in `skillratings`' terms: no drift before the round (it has none) and its
/// default smallest variance factor.
fn comparable() -> WengLinParams {
    WengLinParams {
        tau: 0.0,
        kappa: 1e-6,
        ..WengLinParams::default()
    }
}

fn models() -> impl Strategy<Value = WengLinModel> {
    prop_oneof![
        Just(WengLinModel::BradleyTerry),
        Just(WengLinModel::PlackettLuce)
    ]
}

/// Plackett-Luce as Weng & Lin's Algorithm 4 writes it: for each entrant `i`, a sum over every
/// entrant `q` placed no worse, with `S_q` the sum of `exp(μ/c)` over everyone placed no better
/// than `q` and `A_q` the size of `q`'s tie. Returns each standing's `(μ, σ)`.
fn plackett_luce_by_the_paper(
    params: &WengLinParams,
    teams: &[(u64, Vec<(f64, f64)>)],
) -> Vec<(f64, f64)> {
    let beta2 = params.beta * params.beta;
    let tau2 = params.tau * params.tau;
    let entrants: Vec<(u64, f64, f64)> = teams
        .iter()
        .map(|(rank, members)| {
            let mu = members.iter().map(|m| m.0).sum();
            let variance = members.iter().map(|m| m.1 * m.1 + tau2).sum();
            (*rank, mu, variance)
        })
        .collect();
    let c = entrants.iter().map(|e| e.2 + beta2).sum::<f64>().sqrt();
    let s: Vec<f64> = entrants
        .iter()
        .map(|&(rank_q, ..)| {
            entrants
                .iter()
                .filter(|e| e.0 >= rank_q)
                .map(|e| (e.1 / c).exp())
                .sum()
        })
        .collect();
    let a: Vec<f64> = entrants
        .iter()
        .map(|&(rank_q, ..)| entrants.iter().filter(|e| e.0 == rank_q).count() as f64)
        .collect();
    let mut out = Vec::new();
    for (i, &(rank_i, mu_i, variance_i)) in entrants.iter().enumerate() {
        let (mut omega, mut delta) = (0.0, 0.0);
        for (q, &(rank_q, ..)) in entrants.iter().enumerate() {
            if rank_q > rank_i {
                continue;
            }
            let p = (mu_i / c).exp() / s[q];
            delta += p * (1.0 - p) / a[q];
            omega += if q == i { 1.0 - p } else { -p } / a[q];
        }
        omega *= variance_i / c;
        delta *= variance_i / (c * c) * variance_i.sqrt() / c;
        for &(mu, sigma) in &teams[i].1 {
            let variance = sigma * sigma + tau2;
            let share = variance / variance_i;
            out.push((
                mu + share * omega,
                (variance * (1.0 - share * delta).max(params.kappa)).sqrt(),
            ));
        }
    }
    out
}

proptest! {
    #[test]
    fn plackett_luce_sums_by_group_as_the_paper_sums_by_pair(
        teams in teams(),
        tau in 0.0..1.0f64,
    ) {
        let params = WengLinParams { tau, model: WengLinModel::PlackettLuce, ..WengLinParams::default() };
        let (round, priors) = round_of(&teams);
        let refs: Vec<&WengLinState> = priors.iter().collect();
        let ours = WengLin::rate(&params, &round, &refs).expect("a valid round");
        let want = plackett_luce_by_the_paper(&params, &teams);
        for (i, (got, &(mu, sigma))) in ours.iter().zip(&want).enumerate() {
            prop_assert!((got.state.mu - mu).abs() < AGREEMENT, "player {}: mu {} vs {}", i, got.state.mu, mu);
            prop_assert!((got.state.sigma - sigma).abs() < AGREEMENT,
                "player {}: sigma {} vs {}", i, got.state.sigma, sigma);
        }
    }

    #[test]
    fn agrees_with_skillratings_on_teams_with_ties(teams in teams()) {
        let params = comparable();
        let (round, priors) = round_of(&teams);
        let refs: Vec<&WengLinState> = priors.iter().collect();
        let ours = WengLin::rate(&params, &round, &refs).expect("a valid round");

        let config = WengLinConfig {
            beta: params.beta,
            uncertainty_tolerance: params.kappa,
        };
        let ratings: Vec<Vec<WengLinRating>> = teams
            .iter()
            .map(|(_, members)| {
                members
                    .iter()
                    .map(|&(rating, uncertainty)| WengLinRating { rating, uncertainty })
                    .collect()
            })
            .collect();
        let input: Vec<(&[WengLinRating], MultiTeamOutcome)> = ratings
            .iter()
            .zip(&teams)
            .map(|(team, (rank, _))| (team.as_slice(), MultiTeamOutcome::new(*rank as usize)))
            .collect();
        let theirs: Vec<WengLinRating> = weng_lin_multi_team(&input, &config)
            .into_iter()
            .flatten()
            .collect();

        prop_assert_eq!(ours.len(), theirs.len());
        for (i, (got, want)) in ours.iter().zip(&theirs).enumerate() {
            prop_assert!((got.state.mu - want.rating).abs() < AGREEMENT,
                "player {}: mu {} vs {}", i, got.state.mu, want.rating);
            prop_assert!((got.state.sigma - want.uncertainty).abs() < AGREEMENT,
                "player {}: sigma {} vs {}", i, got.state.sigma, want.uncertainty);
            prop_assert_eq!(got.state.rounds, 4);
        }
    }

    #[test]
    fn lone_winners_rise_lone_losers_fall_and_variance_shrinks_at_most_to_kappa(
        teams in teams(),
        tau in 0.0..1.0f64,
        model in models(),
    ) {
        prop_assume!(teams.iter().any(|(rank, _)| *rank != teams[0].0));
        let params = WengLinParams { tau, model, ..WengLinParams::default() };
        let (round, priors) = round_of(&teams);
        let refs: Vec<&WengLinState> = priors.iter().collect();
        let rated = WengLin::rate(&params, &round, &refs).expect("a valid round");
        // A tie is half a win, so only an entrant alone at the top (bottom) surely rises (falls).
        let alone = |rank: u64| teams.iter().filter(|(r, _)| *r == rank).count() == 1;
        let best = teams.iter().map(|(rank, _)| *rank).min().unwrap_or(1);
        let worst = teams.iter().map(|(rank, _)| *rank).max().unwrap_or(1);
        for ((standing, prior), after) in round.standings.iter().zip(&priors).zip(&rated) {
            let drifted = (prior.sigma * prior.sigma + tau * tau).sqrt();
            prop_assert!(after.state.sigma <= drifted + 1e-12, "{}", standing.player);
            prop_assert!(after.state.sigma >= drifted * params.kappa.sqrt() - 1e-12);
            if standing.rank == best && alone(best) {
                prop_assert!(after.state.mu > prior.mu, "{} won", standing.player);
            }
            if standing.rank == worst && alone(worst) {
                prop_assert!(after.state.mu < prior.mu, "{} lost", standing.player);
            }
        }
    }

    #[test]
    fn the_order_standings_are_listed_in_does_not_matter(
        teams in teams(),
        rotate in 0..32usize,
        model in models(),
    ) {
        let params = WengLinParams { model, ..WengLinParams::default() };
        let (round, priors) = round_of(&teams);
        let refs: Vec<&WengLinState> = priors.iter().collect();
        let rated = WengLin::rate(&params, &round, &refs).expect("a valid round");
        let n = round.standings.len();
        let order: Vec<usize> = (0..n).map(|i| (i + rotate) % n).collect();
        let shuffled = Round::new(order.iter().map(|&i| round.standings[i].clone()).collect());
        let refs: Vec<&WengLinState> = order.iter().map(|&i| &priors[i]).collect();
        let again = WengLin::rate(&params, &shuffled, &refs).expect("a valid round");
        for (j, &i) in order.iter().enumerate() {
            prop_assert_eq!(again[j].state.mu.to_bits(), rated[i].state.mu.to_bits());
            prop_assert_eq!(again[j].state.sigma.to_bits(), rated[i].state.sigma.to_bits());
        }
    }
}

#[test]
fn plackett_luce_moves_as_worked_by_hand() {
    // Weng & Lin's Algorithm 4 worked by hand (a short script, not this crate) with OpenSkill's
    // defaults and τ = 0: three newcomers finishing 1, 2, 3; and (30, 4²) ahead of (20, 7²)
    // and (25, 2²), who tie.
    let params = WengLinParams {
        tau: 0.0,
        model: WengLinModel::PlackettLuce,
        ..WengLinParams::default()
    };
    let cases = [
        (
            vec![
                (1, 25.0, 25.0 / 3.0),
                (2, 25.0, 25.0 / 3.0),
                (3, 25.0, 25.0 / 3.0),
            ],
            [
                (27.868_876_552_746_237, 8.204_837_030_780_652),
                (25.717_219_138_186_557, 8.057_829_747_583_876),
                (21.413_904_309_067_206, 8.057_829_747_583_876),
            ],
        ),
        (
            vec![(1, 30.0, 4.0), (2, 20.0, 7.0), (2, 25.0, 2.0)],
            [
                (30.740_526_511_397_945, 3.975_918_538_523_419),
                (19.616_671_211_173_966, 6.633_433_891_944_482),
                (24.846_160_518_177_13, 1.997_284_187_247_358_6),
            ],
        ),
    ];
    for (players, want) in cases {
        let round = Round::new(
            players
                .iter()
                .enumerate()
                .map(|(i, &(rank, ..))| Standing::solo(format!("p{i}"), rank))
                .collect(),
        );
        let priors: Vec<WengLinState> = players
            .iter()
            .map(|&(_, mu, sigma)| WengLinState {
                mu,
                sigma,
                rounds: 0,
            })
            .collect();
        let refs: Vec<&WengLinState> = priors.iter().collect();
        let rated = WengLin::rate(&params, &round, &refs).expect("a valid round");
        for (got, (mu, sigma)) in rated.iter().zip(want) {
            assert!((got.state.mu - mu).abs() < 1e-12, "{got:?} vs {mu}");
            assert!(
                (got.state.sigma - sigma).abs() < 1e-12,
                "{got:?} vs {sigma}"
            );
        }
    }
}

#[test]
fn kappa_bounds_how_far_one_round_shrinks_a_variance() {
    // A tiny β and a wide prior make every pair decisive: unbounded, Δ would drive the
    // variance below zero.
    let params = WengLinParams {
        beta: 0.01,
        kappa: 0.25,
        tau: 0.0,
        ..WengLinParams::default()
    };
    let priors: Vec<WengLinState> = (0..40)
        .map(|i| WengLinState {
            mu: f64::from(i),
            sigma: 30.0,
            rounds: 0,
        })
        .collect();
    let round = Round::new(
        (0..40)
            .map(|i| Standing::solo(format!("p{i}"), 1 + (i * 7 % 40) as u64))
            .collect(),
    );
    let refs: Vec<&WengLinState> = priors.iter().collect();
    let rated = WengLin::rate(&params, &round, &refs).expect("a valid round");
    for r in &rated {
        assert_eq!(
            r.state.sigma,
            30.0 * 0.5,
            "σ² shrinks by exactly κ = 1/4, no further"
        );
    }
}

#[test]
fn elo_mmr_only_round_fields_and_out_of_range_parameters_are_refused_by_name() {
    let params = WengLinParams::default();
    let newcomer = WengLin::newcomer(&params);
    let duel = |weight, perf_ceiling| Round {
        weight,
        perf_ceiling,
        ..Round::new(vec![Standing::solo("a", 1), Standing::solo("b", 2)])
    };
    for (round, field) in [
        (duel(2.0, None), "weight"),
        (duel(1.0, Some(30.0)), "perf_ceiling"),
    ] {
        let error = WengLin::rate(&params, &round, &[&newcomer, &newcomer]).err();
        assert_eq!(
            error.as_ref().and_then(|e| e.field()).as_deref(),
            Some(field)
        );
    }
    for (bad, field) in [
        (
            WengLinParams {
                beta: 0.0,
                ..params
            },
            "beta",
        ),
        (
            WengLinParams {
                kappa: 0.0,
                ..params
            },
            "kappa",
        ),
        (
            WengLinParams {
                kappa: 1.5,
                ..params
            },
            "kappa",
        ),
        (
            WengLinParams {
                tau: -1.0,
                ..params
            },
            "tau",
        ),
        (
            WengLinParams {
                sigma_init: f64::NAN,
                ..params
            },
            "sigma_init",
        ),
        (
            WengLinParams {
                mu_init: f64::INFINITY,
                ..params
            },
            "mu_init",
        ),
    ] {
        let error = WengLin::validate(&bad).err();
        assert_eq!(
            error.as_ref().and_then(|e| e.field()).as_deref(),
            Some(field),
            "{bad:?}"
        );
    }
}

#[test]
fn a_population_of_either_system_rates_through_the_same_seam() {
    let round = Round::new(vec![
        Standing::solo("ann", 1),
        Standing::solo("bob", 2),
        Standing::solo("cat", 2),
    ]);
    for system in [
        SystemParams::EloMmr(Default::default()),
        SystemParams::WengLin(WengLinParams::default()),
    ] {
        let mut population = Population::new(system.clone()).expect("default parameters");
        let changes = population.apply(&round).expect("a valid round");
        assert!(
            changes[0].delta() > 0.0 && changes[1].delta() < 0.0,
            "{system:?}"
        );
        assert_eq!(
            changes[1].after, changes[2].after,
            "{system:?}: a tie moves both alike"
        );
        let ann = population.belief("ann").expect("rated");
        assert_eq!(ann.rating(), changes[0].after);
        assert_eq!(ann.rounds(), 1);
        assert_eq!(
            std::mem::discriminant(ann),
            std::mem::discriminant(&system.newcomer()),
            "states of the pool's own system"
        );
        let foreign = match system {
            SystemParams::EloMmr(_) => SystemParams::WengLin(WengLinParams::default()),
            _ => SystemParams::EloMmr(Default::default()),
        };
        let stranger: SystemState = foreign.newcomer();
        let refused = system.apply(&round, &[ann, &stranger, ann]).err();
        assert!(
            matches!(refused, Some(mmr_engine::Error::ForeignState { index: 1 })),
            "{refused:?}"
        );
    }
}
