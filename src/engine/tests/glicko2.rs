//! Glicko-2 against Glickman's worked example, against `skillratings`' `glicko2_rating_period`
//! (an independent implementation) with every other entrant of a round as one game, and by
//! the properties its update has whatever the inputs.

use mmr_engine::{Error, Glicko2, Glicko2Params, Glicko2State, RatingSystem, Round, Standing};
use proptest::prelude::*;
use skillratings::glicko2::{glicko2_rating_period, Glicko2Config, Glicko2Rating};
use skillratings::Outcomes;

/// Agreement with `skillratings`: the same formulas, summed in another order.
const AGREEMENT: f64 = 1e-9;
/// Agreement past 64 players, where the period's sums are interpolated (docs/glicko2.md) and
/// differ from skillratings' by more than rounding.
const LARGE_ROUND_AGREEMENT: f64 = 1e-6;
/// Glickman's tolerance on x = ln σ'², where both implementations stop the volatility's
/// iteration. Sums that differ in their last bits can stop it a step earlier or later: each
/// result lies within this of the root, so the two lie within twice this of each other.
const VOLATILITY_STOP: f64 = 1e-6;
/// Glickman's scale: a rating of 1500 + 173.7178·μ shows his internal μ.
const SCALE: f64 = 173.7178;

fn rate(params: &Glicko2Params, round: &Round, priors: &[Glicko2State]) -> Vec<Glicko2State> {
    let refs: Vec<&Glicko2State> = priors.iter().collect();
    Glicko2::rate(params, round, &refs)
        .expect("a valid round")
        .into_iter()
        .map(|rated| rated.state)
        .collect()
}

/// 2 to 10 players, ranks 1 to 5 (ties are common), ratings 1000..2000, deviations 30..350,
/// volatilities 0.03..0.1.
fn players() -> impl Strategy<Value = Vec<(u64, f64, f64, f64)>> {
    players_in(2..11)
}

/// As [`players`], with `count` players.
fn players_in(count: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(u64, f64, f64, f64)>> {
    prop::collection::vec(
        (1..6u64, 1000.0..2000.0f64, 30.0..350.0f64, 0.03..0.1f64),
        count,
    )
}

fn round_of(players: &[(u64, f64, f64, f64)]) -> (Round, Vec<Glicko2State>) {
    let round = Round::new(
        players
            .iter()
            .enumerate()
            .map(|(i, p)| Standing::solo(format!("p{i}"), p.0))
            .collect(),
    );
    let priors = players
        .iter()
        .map(|&(_, mu, sigma, volatility)| Glicko2State {
            mu,
            sigma,
            volatility,
            rounds: 2,
        })
        .collect();
    (round, priors)
}

#[test]
fn glickmans_worked_example() {
    // His player (1500, RD 200, σ 0.06) beats 1400/30 and loses to 1550/100 and 1700/300 in
    // one period, τ = 0.5: 1464.06, RD 151.52, σ 0.05999 (his figures carry rounded
    // intermediate values: unrounded, the rating is 1464.051). As one round: the 1700 first,
    // the 1550 second, his player third, the 1400 last.
    let state = |mu, sigma| Glicko2State {
        mu,
        sigma,
        volatility: 0.06,
        rounds: 1,
    };
    let round = Round::new(vec![
        Standing::solo("top", 1),
        Standing::solo("second", 2),
        Standing::solo("player", 3),
        Standing::solo("last", 4),
    ]);
    let priors = [
        state(1700.0, 300.0),
        state(1550.0, 100.0),
        state(1500.0, 200.0),
        state(1400.0, 30.0),
    ];
    let params = Glicko2Params::default();
    let player = rate(&params, &round, &priors)[2];
    assert!((player.mu - 1464.06).abs() < 0.01, "{player:?}");
    assert!((player.sigma - 151.52).abs() < 0.005, "{player:?}");
    assert!((player.volatility - 0.05999).abs() < 0.000_01, "{player:?}");
    assert_eq!(player.rounds, 2);
}

/// Every player's period against `skillratings`' `glicko2_rating_period`, each other entrant
/// one game, within `agreement` of each move (rating and deviation; absolutely for moves of
/// less than a point) and of the volatility.
fn agrees_with_skillratings(
    players: &[(u64, f64, f64, f64)],
    tau: f64,
    agreement: f64,
) -> Result<(), TestCaseError> {
    let params = Glicko2Params {
        tau,
        ..Glicko2Params::default()
    };
    let (round, priors) = round_of(players);
    let ours = rate(&params, &round, &priors);
    let config = Glicko2Config {
        tau,
        ..Glicko2Config::default()
    };
    let theirs = |i: usize| {
        let results: Vec<(Glicko2Rating, Outcomes)> = players
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, q)| {
                let outcome = match players[i].0.cmp(&q.0) {
                    std::cmp::Ordering::Less => Outcomes::WIN,
                    std::cmp::Ordering::Equal => Outcomes::DRAW,
                    std::cmp::Ordering::Greater => Outcomes::LOSS,
                };
                (
                    Glicko2Rating {
                        rating: q.1,
                        deviation: q.2,
                        volatility: q.3,
                    },
                    outcome,
                )
            })
            .collect();
        let me = Glicko2Rating {
            rating: players[i].1,
            deviation: players[i].2,
            volatility: players[i].3,
        };
        glicko2_rating_period(&me, &results, &config)
    };
    for (i, got) in ours.iter().enumerate() {
        let want = theirs(i);
        // Within `agreement` of each move (absolutely for moves under one point), plus what a
        // volatility iteration stopped elsewhere explains: x = ln σ'² differs by up to
        // 2·VOLATILITY_STOP, so σ' by a share VOLATILITY_STOP of itself and φ*² = φ² + σ'² by
        // a share `stop` of itself; the move μ' − μ = φ'²·Σ and φ'² = 1/(1/φ*² + 1/v) change
        // by at most that share, and φ' by half of it.
        let (prior_mu, prior_rd) = (players[i].1, players[i].2);
        let (phi, volatility) = (prior_rd / SCALE, want.volatility);
        let stop = 2.0 * VOLATILITY_STOP * volatility.powi(2) / (phi.powi(2) + volatility.powi(2));
        let mu_move = (want.rating - prior_mu).abs();
        let mu_tolerance = agreement * mu_move.max(1.0) + stop * mu_move;
        let rd_tolerance =
            agreement * (want.deviation - prior_rd).abs().max(1.0) + stop / 2.0 * want.deviation;
        let volatility_tolerance = agreement + VOLATILITY_STOP * volatility;
        prop_assert!(
            (got.mu - want.rating).abs() < mu_tolerance,
            "player {}: {} vs {}",
            i,
            got.mu,
            want.rating
        );
        prop_assert!(
            (got.sigma - want.deviation).abs() < rd_tolerance,
            "player {}: RD {} vs {}",
            i,
            got.sigma,
            want.deviation
        );
        prop_assert!(
            (got.volatility - want.volatility).abs() < volatility_tolerance,
            "player {}: σ {} vs {}",
            i,
            got.volatility,
            want.volatility
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn agrees_with_skillratings_game_by_game(players in players(), tau in 0.3..1.2f64) {
        agrees_with_skillratings(&players, tau, AGREEMENT)?;
    }

    #[test]
    fn interpolated_sums_of_large_rounds_agree_with_skillratings(
        players in players_in(65..400),
        tau in 0.3..1.2f64,
    ) {
        // Past 64 players the period's two sums are interpolated (docs/glicko2.md).
        agrees_with_skillratings(&players, tau, LARGE_ROUND_AGREEMENT)?;
    }
    #[test]
    fn a_lone_winner_rises_a_lone_loser_falls_and_the_order_listed_does_not_matter(
        players in players(),
        rotate in 0..16usize,
    ) {
        let params = Glicko2Params::default();
        let (round, priors) = round_of(&players);
        let rated = rate(&params, &round, &priors);
        let alone = |rank: u64| players.iter().filter(|p| p.0 == rank).count() == 1;
        let best = players.iter().map(|p| p.0).min().unwrap_or(1);
        let worst = players.iter().map(|p| p.0).max().unwrap_or(1);
        for (i, (prior, after)) in priors.iter().zip(&rated).enumerate() {
            if players[i].0 == best && alone(best) && best != worst {
                prop_assert!(after.mu > prior.mu, "p{} won", i);
            }
            if players[i].0 == worst && alone(worst) && best != worst {
                prop_assert!(after.mu < prior.mu, "p{} lost", i);
            }
        }
        let n = players.len();
        let order: Vec<usize> = (0..n).map(|i| (i + rotate) % n).collect();
        let shuffled = Round::new(order.iter().map(|&i| round.standings[i].clone()).collect());
        let again = rate(&params, &shuffled, &order.iter().map(|&i| priors[i]).collect::<Vec<_>>());
        for (j, &i) in order.iter().enumerate() {
            prop_assert_eq!(again[j], rated[i]);
        }
    }
}

#[test]
fn teams_and_what_glicko2_does_not_have_are_refused_by_name() {
    let params = Glicko2Params::default();
    let newcomer = Glicko2::newcomer(&params);
    let mut teams = Round::new(vec![
        Standing::solo("a", 1),
        Standing::member("b", 2, "red"),
        Standing::member("c", 2, "red"),
    ]);
    let mut partial = Round::new(vec![Standing::solo("a", 1), Standing::solo("b", 2)]);
    partial.standings[1].partial_play = Some(0.5);
    let mut weighted = Round::new(vec![Standing::solo("a", 1), Standing::solo("b", 2)]);
    weighted.weight = 2.0;
    for (round, field) in [
        (&mut teams, "standings[1].team"),
        (&mut partial, "standings[1].partial_play"),
        (&mut weighted, "weight"),
    ] {
        let priors = vec![&newcomer; round.standings.len()];
        match Glicko2::rate(&params, round, &priors) {
            Err(Error::InvalidRound { field: got, .. }) => assert_eq!(got, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    let bad = Glicko2Params {
        volatility_init: 0.0,
        ..params
    };
    assert_eq!(
        Glicko2::validate(&bad)
            .err()
            .as_ref()
            .and_then(Error::field)
            .as_deref(),
        Some("volatility_init")
    );
}
