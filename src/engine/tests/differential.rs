//! The engine against the plain O(N²) transcription in `reference`: short random histories
//! over a pool of up to 130 players (so rounds go past the size at which the engine stops
//! solving each group directly and starts interpolating), with ties, teams, round weights,
//! performance ceilings, dates and drift, folded histories, both tie rules and the whole range
//! of ρ. Every performance, rating and uncertainty must agree to 1e-6.

use std::collections::HashMap;

use mmr_engine::{rate_round, EloMmrParams, EloMmrState, Variant};
use proptest::prelude::*;

use crate::reference::{self, Belief};
use crate::support::{belief, build_round, name, params_of, prior_spec, round_spec, PriorSpec};
use crate::support::{RoundSpec, DAY};

/// Agreement demanded between the engine and the transcription, in rating points.
const TOLERANCE: f64 = 1e-6;

/// A pool of players and a few rounds among them.
fn history(
    variant: Variant,
) -> impl Strategy<Value = (EloMmrParams, Vec<PriorSpec>, Vec<RoundSpec>)> {
    (params_of(variant), 2..130usize).prop_flat_map(|(params, pool)| {
        (
            Just(params),
            prop::collection::vec(prior_spec(), pool),
            prop::collection::vec(round_spec(pool, true), 1..4),
        )
    })
}

/// Plays `rounds` through the engine and through the transcription side by side and checks
/// every participant of every round.
fn agree(
    params: &EloMmrParams,
    priors: &[PriorSpec],
    rounds: &[RoundSpec],
) -> Result<(), TestCaseError> {
    let mut engine: HashMap<String, EloMmrState> = priors
        .iter()
        .enumerate()
        .map(|(i, spec)| (name(i), belief(params, spec)))
        .collect();
    let mut plain: HashMap<String, Belief> = engine
        .iter()
        .map(|(id, state)| (id.clone(), Belief::from(state)))
        .collect();
    let mut day = 3;
    for (number, spec) in rounds.iter().enumerate() {
        day += spec.days;
        let (round, _) = build_round(spec, Some(day * DAY));
        let ids: Vec<&String> = round.standings.iter().map(|s| &s.player).collect();
        let engine_priors: Vec<&EloMmrState> = ids.iter().map(|id| &engine[*id]).collect();
        let plain_priors: Vec<Belief> = ids.iter().map(|id| plain[*id].clone()).collect();
        let rated = rate_round(params, &round, &engine_priors).expect("a valid round");
        let expected = reference::rate(params, &round, &plain_priors);
        for ((id, got), want) in ids.iter().zip(&rated).zip(&expected) {
            let pairs = [
                ("performance", got.performance, want.performance),
                ("mu", got.state.mu, want.belief.mu),
                ("sigma", got.state.sigma, want.belief.sigma),
            ];
            for (what, got, want) in pairs {
                prop_assert!(
                    (got - want).abs() <= TOLERANCE,
                    "round {number}, {id}: {what} {got} from the engine, \
                     {want} from the transcription"
                );
            }
        }
        for ((id, got), want) in ids.into_iter().zip(rated).zip(expected) {
            engine.insert(id.clone(), got.state);
            plain.insert(id.clone(), want.belief);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn logistic_rounds_agree_with_the_plain_transcription_of_algorithms_1_to_3(
        (params, priors, rounds) in history(Variant::Logistic),
    ) {
        agree(&params, &priors, &rounds)?;
    }

    #[test]
    fn gaussian_rounds_agree_with_the_plain_transcription_of_algorithms_1_to_3(
        (params, priors, rounds) in history(Variant::Gaussian),
    ) {
        agree(&params, &priors, &rounds)?;
    }
}
