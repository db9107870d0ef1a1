//! The properties the paper proves (`MATH.md`, "Properties the paper proves"), as proptest
//! properties over random rounds and random multi-round histories: performance is monotone
//! in rank (Theorem 5.2) and in a player's own prior rating and rank (Lemma 5.3), incentive
//! compatibility (Theorem 5.5), memoryless monotonicity of Elo-MMχ and Elo-MMR(∞)
//! (Theorem 5.6), the robustness bounds (Theorem 5.7) and translation invariance.

use mmr_engine::{rate_round, EloMmrParams, EloMmrState, Round, Variant};
use proptest::prelude::*;

use crate::support::{
    any_params, belief, build_round, inverse_logistic_scale, params_of, prior_spec, round_spec,
    shifted, PriorSpec, RoundSpec, DAY,
};

/// How far the engine's performances may stray from the exact zeros (rounds of more than 64
/// entrants are solved on interpolants accurate to this), and so how much slack a
/// comparison of two rated rounds needs.
const SOLVER_TOLERANCE: f64 = 1e-6;
/// Slack for comparisons that only rounding can upset: small rounds (solved on the exact sums)
/// and single posterior updates.
const ROUNDING: f64 = 1e-9;
/// A performance this far from the rating saturates its tanh exactly: the limit p → ±∞ of
/// Theorem 5.7.
const EXTREME: f64 = 1e7;

/// A pool of players with their priors and one round among them, played alone (the theorems
/// are about individual players) and without a performance ceiling (which clamps equal
/// players together).
fn solo_round(max_pool: usize) -> impl Strategy<Value = (EloMmrParams, Vec<PriorSpec>, RoundSpec)> {
    (any_params(), 2..max_pool).prop_flat_map(|(params, pool)| {
        (
            Just(params),
            prop::collection::vec(prior_spec(), pool),
            round_spec(pool, false).prop_map(|mut spec| {
                spec.ceiling = None;
                spec
            }),
        )
    })
}

/// Rates `round`, whose standings are the pool players `playing`, from their beliefs in
/// `states`; returns each standing's performance and new belief.
fn rate_pool(
    params: &EloMmrParams,
    round: &Round,
    playing: &[usize],
    states: &[EloMmrState],
) -> Vec<(f64, EloMmrState)> {
    let priors: Vec<&EloMmrState> = playing.iter().map(|&i| &states[i]).collect();
    rate_round(params, round, &priors)
        .expect("a valid round")
        .into_iter()
        .map(|rated| (rated.performance, rated.state))
        .collect()
}

fn beliefs(params: &EloMmrParams, specs: &[PriorSpec]) -> Vec<EloMmrState> {
    specs.iter().map(|spec| belief(params, spec)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Theorem 5.2: whoever finishes higher gets the higher performance; tied players get the
    /// same one.
    #[test]
    fn a_better_rank_always_gets_a_higher_performance((params, specs, spec) in solo_round(300)) {
        let (round, playing) = build_round(&spec, Some(5 * DAY));
        let rated = rate_pool(&params, &round, &playing, &beliefs(&params, &specs));
        let mut by_rank: Vec<(u64, f64)> = round
            .standings
            .iter()
            .zip(&rated)
            .map(|(standing, (performance, _))| (standing.rank, *performance))
            .collect();
        by_rank.sort_by_key(|&(rank, _)| rank);
        for pair in by_rank.windows(2) {
            let ((rank_a, perf_a), (rank_b, perf_b)) = (pair[0], pair[1]);
            if rank_a == rank_b {
                prop_assert_eq!(perf_a, perf_b, "tied at rank {}", rank_a);
            } else {
                prop_assert!(
                    perf_a > perf_b,
                    "rank {} got {}, rank {} got {}", rank_a, perf_a, rank_b, perf_b
                );
            }
        }
    }

    /// Lemma 5.3, first half: with everything else fixed, a higher prior rating never gives a
    /// lower performance.
    #[test]
    fn a_higher_prior_rating_never_lowers_ones_own_performance(
        (params, specs, spec) in solo_round(150),
        who in any::<prop::sample::Index>(),
        raise in 1.0..600.0f64,
    ) {
        let (round, playing) = build_round(&spec, Some(5 * DAY));
        let mut states = beliefs(&params, &specs);
        let k = who.index(playing.len());
        let before = rate_pool(&params, &round, &playing, &states)[k].0;
        states[playing[k]] = shifted(&states[playing[k]], raise);
        let after = rate_pool(&params, &round, &playing, &states)[k].0;
        prop_assert!(
            after >= before - SOLVER_TOLERANCE,
            "raised by {}: {} then {}", raise, before, after
        );
    }

    /// Lemma 5.3, second half: with the other players' order fixed, finishing higher never
    /// gives a lower performance.
    #[test]
    fn finishing_higher_never_lowers_ones_own_performance(
        (params, specs, spec) in solo_round(150),
        who in any::<prop::sample::Index>(),
        climb in 1..40u64,
    ) {
        let (round, playing) = build_round(&spec, Some(5 * DAY));
        let states = beliefs(&params, &specs);
        let k = who.index(playing.len());
        let before = rate_pool(&params, &round, &playing, &states)[k].0;
        let mut better = round.clone();
        better.standings[k].rank = round.standings[k].rank.saturating_sub(climb).max(1);
        let after = rate_pool(&params, &better, &playing, &states)[k].0;
        prop_assert!(after >= before - SOLVER_TOLERANCE, "rank {} got {}, rank {} got {}",
            round.standings[k].rank, before, better.standings[k].rank, after);
    }
}

/// A history for incentive compatibility: pool player 0 takes part in every round; the
/// others' ranks, the weights, ceilings and dates vary; one round is picked to improve player
/// 0's rank in, and by how many places.
fn incentive_history() -> impl Strategy<
    Value = (
        EloMmrParams,
        Vec<PriorSpec>,
        Vec<RoundSpec>,
        prop::sample::Index,
        u64,
    ),
> {
    (any_params(), 2..12usize).prop_flat_map(|(params, pool)| {
        (
            Just(params),
            prop::collection::vec(prior_spec(), pool),
            prop::collection::vec(
                round_spec(pool, false).prop_map(|mut spec| {
                    spec.slots[0].plays = true;
                    spec.slots[0].rank = spec.slots[0].rank.max(2);
                    spec
                }),
                1..9,
            ),
            any::<prop::sample::Index>(),
            1..14u64,
        )
    })
}

/// Player 0's performances and beliefs through `rounds` when everyone else's priors are the
/// recorded `others` (the theorem holds other players' ratings fixed) and player 0 starts from
/// `me`.
fn my_path(
    params: &EloMmrParams,
    rounds: &[(Round, Vec<usize>, Vec<EloMmrState>)],
    mut me: EloMmrState,
) -> Vec<(f64, EloMmrState)> {
    rounds
        .iter()
        .map(|(round, _, others)| {
            let mut priors: Vec<&EloMmrState> = others.iter().collect();
            // Player 0 is the lowest index, so always the first standing.
            priors[0] = &me;
            let rated = rate_round(params, round, &priors).expect("a valid round");
            let (performance, state) = (rated[0].performance, rated[0].state.clone());
            me = state.clone();
            (performance, state)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Theorem 5.5: holding the rounds, the other players' ratings and their relative ranks
    /// fixed, finishing higher in any past round never leaves a player's performance in that or
    /// any later round, nor their rating after it, lower.
    #[test]
    fn finishing_higher_in_any_past_round_never_lowers_the_current_rating(
        (params, specs, specs_of_rounds, which, climb) in incentive_history(),
    ) {
        let mut states = beliefs(&params, &specs);
        let mut rounds = Vec::new();
        let mut day = 3;
        for spec in &specs_of_rounds {
            day += spec.days;
            let (round, playing) = build_round(spec, Some(day * DAY));
            let priors: Vec<EloMmrState> = playing.iter().map(|&i| states[i].clone()).collect();
            let rated = rate_pool(&params, &round, &playing, &states);
            for (&i, (_, state)) in playing.iter().zip(rated) {
                states[i] = state;
            }
            rounds.push((round, playing, priors));
        }
        let me = belief(&params, &specs[0]);
        let honest = my_path(&params, &rounds, me.clone());
        prop_assert_eq!(
            &honest[honest.len() - 1].1,
            &states[0],
            "the replay of player 0 alone matches the full history"
        );

        let altered = which.index(rounds.len());
        let rank = &mut rounds[altered].0.standings[0].rank;
        *rank = rank.saturating_sub(climb).max(1);
        let better = my_path(&params, &rounds, me);
        let paths = honest.iter().zip(&better).enumerate().skip(altered);
        for (t, ((perf_h, state_h), (perf_b, state_b))) in paths {
            prop_assert!(
                *perf_b >= perf_h - ROUNDING,
                "round {}: performance {} honest, {} finishing higher", t, perf_h, perf_b
            );
            prop_assert!(
                state_b.mu >= state_h.mu - ROUNDING,
                "round {}: rating {} honest, {} finishing higher", t, state_h.mu, state_b.mu
            );
        }
    }
}

/// Parameters of a memoryless system: Elo-MMχ or Elo-MMR(∞).
fn memoryless_params() -> impl Strategy<Value = EloMmrParams> {
    prop_oneof![
        params_of(Variant::Gaussian),
        params_of(Variant::Logistic).prop_map(|params| EloMmrParams {
            rho: f64::INFINITY,
            ..params
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Theorem 5.6: two players with equal σ, `i` rated at least as high as `j`, stay with
    /// equal σ; if `i` beats `j`, `i` stays ahead; if `j` beats `i`, `j` gains more.
    #[test]
    fn memoryless_systems_keep_the_better_player_ahead_and_reward_the_upset(
        params in memoryless_params(),
        (_, specs, spec) in solo_round(100),
        pick in any::<(prop::sample::Index, prop::sample::Index)>(),
        gap in 0.0..600.0f64,
    ) {
        let (round, playing) = build_round(&spec, Some(5 * DAY));
        let (a, b) = (pick.0.index(playing.len()), pick.1.index(playing.len()));
        prop_assume!(round.standings[a].rank != round.standings[b].rank);
        let mut states = beliefs(&params, &specs);
        // i = a, j = b: j's belief is i's moved down by `gap`, so σ_i = σ_j and μ_i ≥ μ_j.
        states[playing[b]] = shifted(&states[playing[a]], -gap);
        let (mu_i, mu_j) = (states[playing[a]].mu, states[playing[b]].mu);
        let rated = rate_pool(&params, &round, &playing, &states);
        let (after_i, after_j) = (&rated[a].1, &rated[b].1);
        prop_assert!((after_i.sigma - after_j.sigma).abs() <= 1e-12 * after_i.sigma);
        if round.standings[a].rank < round.standings[b].rank {
            prop_assert!(
                after_i.mu >= after_j.mu - SOLVER_TOLERANCE,
                "i won: {} vs {}", after_i.mu, after_j.mu
            );
        } else {
            let (gain_i, gain_j) = (after_i.mu - mu_i, after_j.mu - mu_j);
            prop_assert!(
                gain_j >= gain_i - SOLVER_TOLERANCE,
                "j won: gained {} vs {}", gain_j, gain_i
            );
        }
    }

    /// Theorem 5.7: after diffusion, with weights `w0` and `w_k`, an arbitrarily extreme
    /// performance moves μ by at least `(π/(β√3)) / (w0 + π²/6 Σ w_k)` and at most
    /// `(π/(β√3)) / w0`, and no performance moves it further than that.
    #[test]
    fn an_extreme_performance_moves_the_rating_within_the_robustness_bounds(
        params in params_of(Variant::Logistic)
            .prop_filter("Elo-MMR(ρ), ρ finite", |p| p.rho.is_finite()),
        spec in prior_spec(),
        g2 in 0.0..10_000.0f64,
        beta in 50.0..500.0f64,
        ordinary in -4000.0..4000.0f64,
        up in any::<bool>(),
    ) {
        let params = EloMmrParams { history_limit: 500, ..params };
        let before = belief(&params, &spec).diffused(g2, params.rho, params.variant);
        let factor_weight: f64 = before.factors.iter().map(|f| f.weight).sum();
        let unit = inverse_logistic_scale() / beta;
        let most = unit / before.w0;
        let least = unit / (before.w0 + std::f64::consts::PI.powi(2) / 6.0 * factor_weight);

        let extreme = if up { before.mu + EXTREME } else { before.mu - EXTREME };
        let moved = (before.clone().observed(extreme, beta, &params, None).mu - before.mu).abs();
        prop_assert!(
            moved <= most * (1.0 + ROUNDING) + ROUNDING,
            "moved {} > upper bound {}", moved, most
        );
        prop_assert!(
            moved >= least * (1.0 - ROUNDING) - ROUNDING,
            "moved {} < lower bound {}", moved, least
        );

        let after = before.clone().observed(before.mu + ordinary, beta, &params, None);
        let any = (after.mu - before.mu).abs();
        prop_assert!(
            any <= most * (1.0 + ROUNDING) + ROUNDING,
            "performance {} moved {} > {}", ordinary, any, most
        );
    }
}

/// A pool, some of whom are newcomers, and a few rounds among them. Players play alone:
/// a team is rated on the sum of its members' ratings (paper §3.3), so shifting every rating
/// by `c` shifts a team of `k` by `k·c`, and mixed team sizes are not translation invariant.
fn translation_history(
) -> impl Strategy<Value = (EloMmrParams, Vec<PriorSpec>, Vec<RoundSpec>, f64)> {
    (any_params(), 2..100usize).prop_flat_map(|(params, pool)| {
        (
            Just(params),
            prop::collection::vec(prior_spec(), pool),
            prop::collection::vec(round_spec(pool, false), 1..4),
            -5000.0..5000.0f64,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Shifting every rating, `mu_init`, every past performance and the ceilings by `c`
    /// shifts every performance and rating by `c` and changes no uncertainty.
    #[test]
    fn shifting_every_rating_and_performance_by_c_shifts_every_result_by_c(
        (params, specs, specs_of_rounds, c) in translation_history(),
    ) {
        let moved_params = EloMmrParams { mu_init: params.mu_init + c, ..params };
        // Every third player is a newcomer, to shift through `mu_init` too.
        let start = |p: &EloMmrParams, shift: f64| -> Vec<EloMmrState> {
            specs
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    if i % 3 == 2 {
                        EloMmrState::new(p)
                    } else {
                        shifted(&belief(&params, spec), shift)
                    }
                })
                .collect()
        };
        let mut plain = start(&params, 0.0);
        let mut moved = start(&moved_params, c);
        let mut day = 3;
        for (number, spec) in specs_of_rounds.iter().enumerate() {
            day += spec.days;
            let (round, playing) = build_round(spec, Some(day * DAY));
            let moved_round = Round {
                perf_ceiling: round.perf_ceiling.map(|x| x + c),
                ..round.clone()
            };
            let a = rate_pool(&params, &round, &playing, &plain);
            let b = rate_pool(&moved_params, &moved_round, &playing, &moved);
            let pairs = playing.iter().zip(a.iter().zip(&b));
            for (&i, ((perf_a, state_a), (perf_b, state_b))) in pairs {
                // Each run is within the solver's tolerance of the exact zeros, which move by c.
                let slack = 2.0 * SOLVER_TOLERANCE;
                prop_assert!(
                    (perf_b - c - perf_a).abs() <= slack,
                    "round {}, p{}: performance {} vs {}", number, i, perf_a, perf_b - c
                );
                prop_assert!(
                    (state_b.mu - c - state_a.mu).abs() <= slack,
                    "round {}, p{}: rating {} vs {}", number, i, state_a.mu, state_b.mu - c
                );
                prop_assert!(
                    (state_b.sigma - state_a.sigma).abs() <= ROUNDING * state_a.sigma,
                    "round {}, p{}: σ", number, i
                );
            }
            for (&i, ((_, state_a), (_, state_b))) in playing.iter().zip(a.into_iter().zip(b)) {
                plain[i] = state_a;
                moved[i] = state_b;
            }
        }
    }
}
