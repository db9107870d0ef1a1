//! Weng-Lin (Bradley-Terry full pairing) against `skillratings`' `weng_lin_multi_team`, an
//! independent implementation, and by the properties its update has whatever the inputs.

use mmr_service::engine::{
    Beliefs, Population, RatingSystem, Round, Standing, SystemParams, SystemState, WengLin,
    WengLinParams, WengLinState,
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

proptest! {
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
    ) {
        prop_assume!(teams.iter().any(|(rank, _)| *rank != teams[0].0));
        let params = WengLinParams { tau, ..WengLinParams::default() };
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
    fn the_order_standings_are_listed_in_does_not_matter(teams in teams(), rotate in 0..32usize) {
        let params = WengLinParams::default();
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
        assert_eq!(error.as_ref().and_then(|e| e.field()), Some(field));
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
            error.as_ref().and_then(|e| e.field()),
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
            matches!(
                refused,
                Some(mmr_service::engine::Error::ForeignState { index: 1 })
            ),
            "{refused:?}"
        );
    }
}
