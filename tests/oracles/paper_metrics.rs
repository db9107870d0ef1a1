//! Pair inversion and rank deviation counted as the paper counts them: against `multi-skill`
//! 0.1.2's own `pairwise_metric` and `percentile_distance_metric`, on random rounds (with
//! random players cut from the judging, as `--min-history` cuts them) and on the shared
//! formula1 history replayed with the paper's protocol (`get_participant_ratings(.., 5)`) and
//! with the reference's "everyone" (1: it never judges a player's first round).

use std::collections::HashMap;

use mmr_service::engine::metrics::{round_metrics, Opponents};
use mmr_service::engine::{EloMmrParams, EloMmrState, Round, Standing, SystemParams, SystemState};
use mmr_service::replay::{self, InputFormat};
use multi_skill::metrics::{pairwise_metric, percentile_distance_metric};
use multi_skill::systems::{
    get_participant_ratings, simulate_contest, EloMMR, EloMMRVariant, PlayersByName, Rating,
};
use proptest::prelude::*;

use super::multi_skill::{exact, reference_contest, reference_sig_limit, shared_rounds};

/// The reference's metrics are percentages averaged with a weight per round.
fn reference_mean((weight, sum): (f64, f64)) -> Option<f64> {
    (weight > 0.0).then(|| sum / weight / 100.0)
}

/// The mean of one metric over the participations `round_metrics` judged.
fn our_mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let judged: Vec<f64> = values.flatten().collect();
    (!judged.is_empty()).then(|| judged.iter().sum::<f64>() / judged.len() as f64)
}

/// Whether two means agree: both absent, or within rounding.
fn agree(ours: Option<f64>, theirs: Option<f64>) -> bool {
    match (ours, theirs) {
        (None, None) => true,
        (Some(a), Some(b)) => (a - b).abs() < 1e-12,
        _ => false,
    }
}

proptest! {
    #[test]
    fn both_metrics_agree_with_the_reference_on_random_rounds(
        entries in prop::collection::vec(
            (1u64..6, (0i32..8).prop_map(|r| 1200.0 + 100.0 * f64::from(r)), any::<bool>()),
            2..40,
        ),
    ) {
        // (rank, prior μ, counted) each; ratings from a small set so that equal ones happen.
        let params = EloMmrParams::default();
        let round = Round::new(
            entries
                .iter()
                .enumerate()
                .map(|(i, &(rank, _, _))| Standing::solo(format!("p{i}"), rank))
                .collect(),
        );
        let states: Vec<SystemState> = entries
            .iter()
            .map(|&(_, mu, _)| SystemState::EloMmr(EloMmrState { mu, ..EloMmrState::new(&params) }))
            .collect();
        let priors: Vec<&SystemState> = states.iter().collect();
        let ours = round_metrics(
            &SystemParams::EloMmr(params), &round, &priors, |i| entries[i].2, Opponents::All,
        ).expect("valid round");

        // The reference's standings: the counted players in finishing order, each with the
        // 0-based range of places its tie group covers among them.
        let mut kept: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].2).collect();
        kept.sort_by_key(|&i| entries[i].0);
        let standings: Vec<(Rating, usize, usize)> = kept
            .iter()
            .map(|&i| {
                let rank = entries[i].0;
                let lo = kept.iter().filter(|&&j| entries[j].0 < rank).count();
                let hi = kept.iter().filter(|&&j| entries[j].0 <= rank).count() - 1;
                (Rating { mu: entries[i].1, sig: params.sigma_init }, lo, hi)
            })
            .collect();

        let pair = our_mean(ours.iter().map(|m| m.map(|m| m.pair_inversion)));
        let deviation = our_mean(ours.iter().map(|m| m.map(|m| m.rank_deviation)));
        let want_pair = reference_mean(pairwise_metric(&standings));
        let want_deviation = reference_mean(percentile_distance_metric(&standings));
        prop_assert!(agree(pair, want_pair), "pair inversion {:?} against {:?}", pair, want_pair);
        prop_assert!(
            agree(deviation, want_deviation),
            "rank deviation {:?} against {:?}", deviation, want_deviation
        );
    }
}

/// Earlier rounds a player needs to be judged: 5 as in the paper, and 1, the reference's
/// "everyone" (it never judges a player in their first round).
const MIN_HISTORIES: [usize; 2] = [5, 1];

#[test]
fn a_formula1_replay_scores_as_the_reference_scores_its_own_ratings() {
    let Some(rounds) = shared_rounds("formula1", usize::MAX) else {
        return;
    };
    for min_history in MIN_HISTORIES {
        scores_as_the_reference(&rounds, min_history);
    }
}

/// A formula1 replay judged among players of `min_history` earlier rounds scores as the
/// reference scores its own ratings.
fn scores_as_the_reference(rounds: &[Round], min_history: usize) {
    let params = exact(mmr_service::engine::Variant::Logistic, 1.0);
    let reference = EloMMR::from_limit(
        params.beta,
        reference_sig_limit(&params),
        false,
        false,
        EloMMRVariant::Logistic(params.rho),
    );
    let mut players: PlayersByName = HashMap::new();
    let (mut pair, mut deviation) = ((0.0, 0.0), (0.0, 0.0));
    for (index, round) in rounds.iter().enumerate() {
        let contest = reference_contest(index, round);
        let judged = get_participant_ratings(&mut players, &contest.standings, min_history);
        let add = |total: &mut (f64, f64), (weight, sum): (f64, f64)| {
            total.0 += weight;
            total.1 += sum;
        };
        add(&mut pair, pairwise_metric(&judged));
        add(&mut deviation, percentile_distance_metric(&judged));
        simulate_contest(
            &mut players,
            &contest,
            &reference,
            params.mu_init,
            params.sigma_init,
            index,
        );
    }

    let input = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/formula1/rounds.jsonl");
    let ours = replay::run(&replay::Options {
        display: None,
        input,
        format: InputFormat::Jsonl,
        params: SystemParams::EloMmr(params),
        min_history: min_history as u64,
        opponents: Opponents::All,
        progress: false,
    })
    .expect("formula1 replays")
    .summary;
    let (want_pair, want_deviation) = (reference_mean(pair), reference_mean(deviation));
    println!(
        "formula1, min history {min_history}: pair inversion {:?} (reference {want_pair:?}), \
         rank deviation {:?} (reference {want_deviation:?})",
        ours.pair_inversion, ours.rank_deviation
    );
    let close = |a: Option<f64>, b: Option<f64>| matches!((a, b), (Some(a), Some(b)) if (a - b).abs() < 1e-9);
    assert!(close(ours.pair_inversion, want_pair));
    assert!(close(ours.rank_deviation, want_deviation));
}
