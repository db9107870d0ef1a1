//! Bit-identical results whatever the order in which a round's entries are listed and
//! whatever the number of rayon threads (1, 2 and 8, on local pools). Replay and crash
//! recovery rely on both. Rounds here are large enough (thousands of entrants) that every
//! parallel sum is split into several chunks and performances come from interpolants.

use mmr_engine::{
    rate_round, rate_round_owned, EloMmrParams, EloMmrState, Factor, Rated, Round, Standing,
};
use proptest::prelude::*;

use crate::support::{any_params, belief, build_round, prior_spec, round_spec, Lcg, PriorSpec};
use crate::support::{RoundSpec, DAY};

/// A round of `n` players with spread-out priors (800 to 3600, σ 60 to 350, up to 8 logistic
/// factors each), ties about one rank in four, and every seventh player on a team of three.
fn synthetic_round(params: &EloMmrParams, n: usize, seed: u64) -> (Round, Vec<EloMmrState>) {
    let mut rng = Lcg(seed);
    let priors = (0..n)
        .map(|_| {
            let mut state = EloMmrState::new(params);
            state.mu = 800.0 + 2800.0 * rng.unit();
            state.sigma = 60.0 + 290.0 * rng.unit();
            let history = rng.below(9);
            let factor_weight = 0.25 / (state.sigma * state.sigma * history.max(1) as f64);
            state.factors = (0..history)
                .map(|_| Factor {
                    perf: state.mu + 600.0 * (rng.unit() - 0.5),
                    weight: factor_weight,
                    beta: params.beta,
                    log_decay: 0.0,
                })
                .collect();
            state.p0 = state.mu;
            state.w0 = 1.0 / (state.sigma * state.sigma) - factor_weight * history as f64;
            state
        })
        .collect();
    let mut standings: Vec<Standing> = Vec::with_capacity(n);
    let mut rank = 1;
    for i in 0..n {
        let leader = i - i % 7;
        let on_team = leader + 2 < n && i - leader <= 2;
        let team = on_team.then(|| format!("team{leader}"));
        // Team mates share their leader's rank; anyone else ties the previous standing one
        // time in four.
        if !(on_team && i != leader) && rng.unit() > 0.25 {
            rank += 1;
        }
        standings.push(Standing {
            team,
            ..Standing::solo(format!("p{i}"), rank)
        });
    }
    let mut round = Round::new(standings);
    round.time = Some(10 * DAY);
    (round, priors)
}

fn rate_with_threads(
    threads: usize,
    params: &EloMmrParams,
    round: &Round,
    priors: &[EloMmrState],
) -> Vec<Rated<EloMmrState>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a local thread pool");
    let refs: Vec<&EloMmrState> = priors.iter().collect();
    pool.install(|| rate_round(params, round, &refs).expect("a valid round"))
}

fn assert_identical(
    a: &[Rated<EloMmrState>],
    b: &[Rated<EloMmrState>],
    what: &str,
) -> Result<(), TestCaseError> {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        prop_assert_eq!(
            x.performance.to_bits(),
            y.performance.to_bits(),
            "{}: performance of standing {}",
            what,
            i
        );
        prop_assert_eq!(&x.state, &y.state, "{}: state of standing {}", what, i);
        prop_assert_eq!(x.state.mu.to_bits(), y.state.mu.to_bits());
        prop_assert_eq!(x.state.sigma.to_bits(), y.state.sigma.to_bits());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn results_are_bit_identical_on_1_2_and_8_threads(
        params in any_params(),
        n in 2_000..9_000usize,
        seed in any::<u64>(),
    ) {
        let (round, priors) = synthetic_round(&params, n, seed);
        let one = rate_with_threads(1, &params, &round, &priors);
        for threads in [2, 8] {
            let many = rate_with_threads(threads, &params, &round, &priors);
            assert_identical(&one, &many, &format!("{threads} threads"))?;
        }
    }

    #[test]
    fn a_large_round_gives_the_same_results_whatever_order_it_is_listed_in(
        params in any_params(),
        n in 2_000..5_000usize,
        seed in any::<u64>(),
    ) {
        let (round, priors) = synthetic_round(&params, n, seed);
        let refs: Vec<&EloMmrState> = priors.iter().collect();
        let listed = rate_round(&params, &round, &refs).expect("a valid round");
        let order = shuffled_order(n, seed);
        let (shuffled, shuffled_refs) = reorder(&round, &refs, &order);
        let rated = rate_round(&params, &shuffled, &shuffled_refs).expect("a valid round");
        assert_identical(&listed, &back_in_listed_order(rated, &order), "shuffled")?;
    }
}

/// A pool and one round among them, with ties, teams, a weight and a ceiling.
fn listed_round() -> impl Strategy<Value = (EloMmrParams, Vec<PriorSpec>, RoundSpec, u64)> {
    (any_params(), 2..400usize).prop_flat_map(|(params, pool)| {
        (
            Just(params),
            prop::collection::vec(prior_spec(), pool),
            round_spec(pool, true),
            any::<u64>(),
        )
    })
}

fn shuffled_order(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    Lcg(seed).shuffle(&mut order);
    order
}

/// `round` and `priors` listed in `order`: the `i`-th standing of the result is the
/// `order[i]`-th of `round`.
fn reorder<'a>(
    round: &Round,
    priors: &[&'a EloMmrState],
    order: &[usize],
) -> (Round, Vec<&'a EloMmrState>) {
    let shuffled = Round {
        standings: order.iter().map(|&k| round.standings[k].clone()).collect(),
        ..round.clone()
    };
    (shuffled, order.iter().map(|&k| priors[k]).collect())
}

/// Results of a reordered round put back in the original listing order.
fn back_in_listed_order(
    rated: Vec<Rated<EloMmrState>>,
    order: &[usize],
) -> Vec<Rated<EloMmrState>> {
    let mut back: Vec<Option<Rated<EloMmrState>>> = vec![None; order.len()];
    for (&k, r) in order.iter().zip(rated) {
        back[k] = Some(r);
    }
    back.into_iter()
        .map(|r| r.expect("every standing is rated"))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn results_are_bit_identical_whatever_order_the_standings_are_listed_in(
        (params, specs, spec, seed) in listed_round(),
    ) {
        let (round, playing) = build_round(&spec, Some(5 * DAY));
        let states: Vec<EloMmrState> =
            playing.iter().map(|&i| belief(&params, &specs[i])).collect();
        let refs: Vec<&EloMmrState> = states.iter().collect();
        let listed = rate_round(&params, &round, &refs).expect("a valid round");
        let order = shuffled_order(playing.len(), seed);
        let (shuffled, shuffled_refs) = reorder(&round, &refs, &order);
        let rated = rate_round(&params, &shuffled, &shuffled_refs).expect("a valid round");
        assert_identical(&listed, &back_in_listed_order(rated, &order), "shuffled")?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// States given up to the round (diffused in place) are rated exactly as states lent to it
    /// (diffused into copies): what `Population` and `replay` rely on.
    #[test]
    fn states_given_up_are_rated_bit_for_bit_as_states_lent(
        (params, specs, spec, _) in listed_round(),
    ) {
        let (round, playing) = build_round(&spec, Some(5 * DAY));
        let states: Vec<EloMmrState> =
            playing.iter().map(|&i| belief(&params, &specs[i])).collect();
        let refs: Vec<&EloMmrState> = states.iter().collect();
        let lent = rate_round(&params, &round, &refs).expect("a valid round");
        let given = rate_round_owned(&params, &round, states.clone())
            .map_err(|(error, _)| error)
            .expect("a valid round");
        assert_identical(&lent, &given, "given up")?;
    }
}
