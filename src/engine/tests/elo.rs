//! Elo for free-for-all rounds against `skillratings`' Elo for two entrants, against a plain
//! O(N²) transcription of docs/elo.md for more (which the engine computes through one
//! interpolated sum), and by the properties its update has whatever the inputs.

use mmr_engine::{Elo, EloParams, EloState, RatingSystem, Round, Standing};
use proptest::prelude::*;
use skillratings::elo::{elo, EloConfig, EloRating};
use skillratings::Outcomes;

/// A solo round of `entries` (rank, prior rating), players `p0…`, and their states.
fn round_of(entries: &[(u64, f64)]) -> (Round, Vec<EloState>) {
    let round = Round::new(
        entries
            .iter()
            .enumerate()
            .map(|(i, &(rank, _))| Standing::solo(format!("p{i}"), rank))
            .collect(),
    );
    let states = entries
        .iter()
        .map(|&(_, mu)| EloState { mu, rounds: 3 })
        .collect();
    (round, states)
}

/// The new ratings of `entries`, in a round of `weight`.
fn rate(params: &EloParams, entries: &[(u64, f64)], weight: f64) -> Vec<f64> {
    let (round, states) = round_of(entries);
    let round = Round { weight, ..round };
    let priors: Vec<&EloState> = states.iter().collect();
    Elo::rate(params, &round, &priors)
        .expect("a valid round")
        .into_iter()
        .map(|rated| rated.state.mu)
        .collect()
}

/// docs/elo.md "One round", one pair at a time.
fn transcription(params: &EloParams, entries: &[(u64, f64)], weight: f64) -> Vec<f64> {
    let games = (entries.len() - 1) as f64;
    entries
        .iter()
        .enumerate()
        .map(|(i, &(rank_i, mu_i))| {
            let surplus: f64 = entries
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &(rank_j, mu_j))| {
                    let score = match rank_i.cmp(&rank_j) {
                        std::cmp::Ordering::Less => 1.0,
                        std::cmp::Ordering::Equal => 0.5,
                        std::cmp::Ordering::Greater => 0.0,
                    };
                    score - 1.0 / (1.0 + (-(mu_i - mu_j) / params.temperature).exp())
                })
                .sum();
            mu_i + params.k * weight * surplus / games
        })
        .collect()
}

fn entries() -> impl Strategy<Value = Vec<(u64, f64)>> {
    prop::collection::vec((1u64..8, 500.0..2500.0f64), 2..200)
}

proptest! {
    #[test]
    fn two_entrants_agree_with_skillratings(
        a in 0.0..3000.0f64,
        b in 0.0..3000.0f64,
        outcome in 0usize..3,
        k in 1.0..64.0f64,
    ) {
        let params = EloParams { k, ..EloParams::default() };
        let (ranks, expected) = match outcome {
            0 => ((1, 2), Outcomes::WIN),
            1 => ((2, 1), Outcomes::LOSS),
            _ => ((1, 1), Outcomes::DRAW),
        };
        let ours = rate(&params, &[(ranks.0, a), (ranks.1, b)], 1.0);
        let (one, two) = elo(
            &EloRating { rating: a },
            &EloRating { rating: b },
            &expected,
            &EloConfig { k },
        );
        prop_assert!((ours[0] - one.rating).abs() < 1e-9, "{} against {}", ours[0], one.rating);
        prop_assert!((ours[1] - two.rating).abs() < 1e-9, "{} against {}", ours[1], two.rating);
    }

    #[test]
    fn any_round_agrees_with_the_pairwise_transcription(
        entries in entries(),
        weight in 0.1..4.0f64,
        temperature in 50.0..500.0f64,
    ) {
        // Rounds above 64 players take the interpolated sum, smaller ones the exact one.
        let params = EloParams { temperature, ..EloParams::default() };
        let ours = rate(&params, &entries, weight);
        for (got, want) in ours.iter().zip(transcription(&params, &entries, weight)) {
            prop_assert!((got - want).abs() < 1e-9, "{} against {}", got, want);
        }
    }

    #[test]
    fn a_round_moves_nobody_by_more_than_k_and_adds_no_points(
        entries in entries(),
        weight in 0.1..4.0f64,
    ) {
        let params = EloParams::default();
        let after = rate(&params, &entries, weight);
        let mut total = 0.0;
        for (&(_, before), after) in entries.iter().zip(&after) {
            let change = after - before;
            prop_assert!(change.abs() <= params.k * weight + 1e-9, "{}", change);
            total += change;
        }
        prop_assert!(total.abs() < 1e-9 * entries.len() as f64, "{}", total);
    }

    #[test]
    fn a_lone_winner_never_falls_and_a_lone_loser_never_rises(
        entries in entries(),
    ) {
        let params = EloParams::default();
        let after = rate(&params, &entries, 1.0);
        let best = entries.iter().map(|e| e.0).min().unwrap_or_default();
        let worst = entries.iter().map(|e| e.0).max().unwrap_or_default();
        let alone = |rank| entries.iter().filter(|e| e.0 == rank).count() == 1;
        for (&(rank, before), after) in entries.iter().zip(&after) {
            if rank == best && alone(best) {
                prop_assert!(*after >= before);
            }
            if rank == worst && alone(worst) {
                prop_assert!(*after <= before);
            }
        }
    }
}

#[test]
fn elo_keeps_no_uncertainty_and_refuses_what_it_has_not() {
    let params = EloParams::default();
    let newcomer = Elo::newcomer(&params);
    assert_eq!(Elo::rating(&newcomer).sigma, None);
    let mut team = Round::new(vec![
        Standing::member("a", 1, "duo"),
        Standing::solo("b", 2),
    ]);
    let error = Elo::rate(&params, &team, &[&newcomer, &newcomer]).err();
    assert_eq!(
        error.and_then(|e| e.field()).as_deref(),
        Some("standings[0].team")
    );
    team.standings[0] = Standing::solo("a", 1);
    team.perf_ceiling = Some(2000.0);
    let error = Elo::rate(&params, &team, &[&newcomer, &newcomer]).err();
    assert_eq!(
        error.and_then(|e| e.field()).as_deref(),
        Some("perf_ceiling")
    );
}

#[test]
fn a_tiny_temperature_on_a_spread_round_sums_exactly_instead_of_interpolating() {
    // 200 players 10 points apart at T = 1e-6: an interpolant would need about 10⁸ leaves;
    // the exact sums answer at once, and every game is a foregone conclusion.
    let params = EloParams {
        temperature: 1e-6,
        ..EloParams::default()
    };
    let entries: Vec<(u64, f64)> = (0..200)
        .map(|i| (i + 1, 3000.0 - 10.0 * i as f64))
        .collect();
    let ours = rate(&params, &entries, 1.0);
    for (got, want) in ours.iter().zip(transcription(&params, &entries, 1.0)) {
        assert!((got - want).abs() < 1e-9, "{got} against {want}");
    }
    assert_eq!(ours[0], 3000.0, "the expected winner won: no change");
}
