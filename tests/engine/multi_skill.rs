//! Agreement with the paper's own implementation, the crate `multi-skill` 0.1.2, in its exact
//! mode (`fast = false`: every opponent, unbounded history), on the shared datasets beside
//! the repository. Both replay the same rounds with the same parameters and every player's μ
//! and σ must agree within 0.05. Each test prints a line saying it SKIPPED, and passes, when
//! `../shared/data` is absent (a fresh clone).
//!
//! The reference is O(N²) per round in exact mode, so the tests take formula1 whole (small
//! rounds, many ties, long careers) and the first rounds of ctftime (large fields, no ties).
//!
//! Codeforces' system is checked the same way against the crate's `CodeforcesSys`, and on
//! random rounds too, which need no shared data.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mmr_service::engine::params::MAX_HISTORY_LIMIT;
use mmr_service::engine::{
    Beliefs, CodeforcesParams, Params, Population, Round, Standing, SystemParams, Variant,
};
use mmr_service::replay::{input, InputFormat};
use multi_skill::data_processing::Contest;
use multi_skill::systems::{
    simulate_contest, CodeforcesSys, EloMMR, EloMMRVariant, PlayersByName, RatingSystem,
};
use proptest::prelude::*;

/// Largest difference in μ or σ allowed between the engine and the reference.
const AGREEMENT: f64 = 0.05;
/// Rounds of ctftime replayed: about 4.9 million pairs of entrants through the reference.
const CTFTIME_ROUNDS: usize = 100;

/// The first `limit` rounds of `../shared/data/NAME/rounds.jsonl`, or `None` (after saying
/// so) when the shared data is absent.
fn shared_rounds(name: &str, limit: usize) -> Option<Vec<Round>> {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(name)
        .join("rounds.jsonl");
    if !path.exists() {
        println!("SKIPPED: {} is absent", path.display());
        return None;
    }
    let rounds = input::read(&path, InputFormat::Jsonl)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    Some(rounds.into_iter().take(limit).map(|r| r.round).collect())
}

/// The reference's contest: standings in rank order, each with the 0-based range of places
/// its tie group covers.
fn reference_contest(index: usize, round: &Round) -> Contest {
    let mut standings: Vec<_> = round.standings.iter().collect();
    standings.sort_by_key(|s| s.rank);
    let mut contest = Contest::new(index);
    contest.weight = round.weight;
    let mut start = 0;
    while start < standings.len() {
        let tied = standings[start..]
            .iter()
            .take_while(|s| s.rank == standings[start].rank)
            .count();
        for s in &standings[start..start + tied] {
            contest
                .standings
                .push((s.player.clone(), start, start + tied - 1));
        }
        start += tied;
    }
    contest
}

/// The reference's `sig_limit` for our `beta` and `gamma`: it drifts by `s⁴ / (β² − s²)` per
/// round, which equals `γ²` at the positive root of `s⁴ + γ² s² − γ² β² = 0`.
fn reference_sig_limit(params: &Params) -> f64 {
    let (g2, b2) = (params.gamma * params.gamma, params.beta * params.beta);
    ((-g2 + (g2 * g2 + 4.0 * g2 * b2).sqrt()) / 2.0).sqrt()
}

/// Replays `rounds` through the engine and through the reference with `params` and returns
/// the players compared and the largest differences in μ and in σ.
fn largest_differences(params: Params, rounds: &[Round]) -> (usize, f64, f64) {
    let variant = match params.variant {
        Variant::Logistic => EloMMRVariant::Logistic(params.rho),
        Variant::Gaussian => EloMMRVariant::Gaussian,
    };
    let reference = EloMMR::from_limit(
        params.beta,
        reference_sig_limit(&params),
        false,
        false,
        variant,
    );
    let (mu_init, sigma_init) = (params.mu_init, params.sigma_init);
    compare(params.into(), &reference, (mu_init, sigma_init), rounds)
}

/// Replays `rounds` through the engine's `system` and through `reference`, both starting
/// newcomers at `newcomer` (μ, σ), and returns the players compared and the largest
/// differences in μ and in σ.
fn compare(
    system: SystemParams,
    reference: &dyn RatingSystem,
    (mu_init, sigma_init): (f64, f64),
    rounds: &[Round],
) -> (usize, f64, f64) {
    let mut theirs: PlayersByName = HashMap::new();
    let mut ours = Population::new(system).expect("valid parameters");
    for (index, round) in rounds.iter().enumerate() {
        ours.apply(round).expect("dataset rounds are valid");
        simulate_contest(
            &mut theirs,
            &reference_contest(index, round),
            reference,
            mu_init,
            sigma_init,
            index,
        );
    }
    assert_eq!(ours.len(), theirs.len(), "both rated the same players");
    theirs
        .iter()
        .fold((0, 0.0, 0.0), |(count, mu, sigma), (id, player)| {
            let want = player.borrow().approx_posterior;
            let got = ours.belief(id).expect("rated by both").rating();
            (
                count + 1,
                f64::max(mu, (got.mu - want.mu).abs()),
                f64::max(sigma, (got.sigma - want.sig).abs()),
            )
        })
}

/// Our parameters for a comparison: the defaults with the reference's unbounded history (the
/// largest limit, more rounds than any player of the datasets has played).
fn exact(variant: Variant, rho: f64) -> Params {
    Params {
        variant,
        rho,
        history_limit: MAX_HISTORY_LIMIT,
        ..Params::default()
    }
}

fn check(name: &str, limit: usize, params: Params) {
    let Some(rounds) = shared_rounds(name, limit) else {
        return;
    };
    let (players, mu, sigma) = largest_differences(params, &rounds);
    println!(
        "{name}: {} rounds, {players} players, largest differences μ {mu:.2e}, σ {sigma:.2e}",
        rounds.len()
    );
    assert!(
        mu <= AGREEMENT && sigma <= AGREEMENT,
        "{name}: μ differs by up to {mu}, σ by up to {sigma}"
    );
}

#[test]
fn every_formula1_rating_agrees_with_the_reference_elo_mmr_in_exact_mode() {
    check("formula1", usize::MAX, exact(Variant::Logistic, 1.0));
}

#[test]
fn every_formula1_rating_agrees_with_the_reference_elo_mmr_infinity() {
    check(
        "formula1",
        usize::MAX,
        exact(Variant::Logistic, f64::INFINITY),
    );
}

#[test]
fn every_formula1_rating_agrees_with_the_reference_elo_mmchi() {
    check("formula1", usize::MAX, exact(Variant::Gaussian, 1.0));
}

#[test]
fn early_ctftime_ratings_agree_with_the_reference_elo_mmr_in_exact_mode() {
    check("ctftime", CTFTIME_ROUNDS, exact(Variant::Logistic, 1.0));
}

/// Compares Codeforces' system on the first `limit` rounds of a shared dataset.
fn check_codeforces(name: &str, limit: usize) {
    let Some(rounds) = shared_rounds(name, limit) else {
        return;
    };
    let params = CodeforcesParams::default();
    let reference = CodeforcesSys::default();
    let newcomer = (params.mu_init, params.sigma_init);
    let (players, mu, sigma) = compare(
        SystemParams::Codeforces(params),
        &reference,
        newcomer,
        &rounds,
    );
    println!(
        "{name}, Codeforces: {} rounds, {players} players, largest differences μ {mu:.2e}, σ {sigma:.2e}",
        rounds.len()
    );
    assert!(
        mu <= AGREEMENT && sigma == 0.0,
        "{name}: μ differs by up to {mu}, σ by {sigma}"
    );
}

#[test]
fn every_formula1_rating_agrees_with_the_reference_codeforces() {
    check_codeforces("formula1", usize::MAX);
}

#[test]
fn early_ctftime_ratings_agree_with_the_reference_codeforces() {
    check_codeforces("ctftime", CTFTIME_ROUNDS);
}

proptest! {
    #[test]
    fn codeforces_agrees_with_the_reference_on_random_rounds(
        rounds in prop::collection::vec(prop::collection::vec(1..6u64, 2..160), 1..6),
    ) {
        // Players `p0…` take part in every round with a random rank each (some rounds leave
        // a few out): histories build up over the rounds. Rounds above 64 players take the
        // interpolated path, smaller ones the exact sums.
        let rounds: Vec<Round> = rounds
            .iter()
            .map(|ranks| {
                Round::new(
                    ranks
                        .iter()
                        .enumerate()
                        .map(|(i, &rank)| Standing::solo(format!("p{i}"), rank))
                        .collect(),
                )
            })
            .filter(|round| round.standings.iter().any(|s| s.rank != round.standings[0].rank))
            .collect();
        let params = CodeforcesParams::default();
        let newcomer = (params.mu_init, params.sigma_init);
        let (_, mu, sigma) = compare(SystemParams::Codeforces(params), &CodeforcesSys::default(), newcomer, &rounds);
        prop_assert!(mu <= 1e-6 && sigma == 0.0, "μ differs by up to {}", mu);
    }
}
