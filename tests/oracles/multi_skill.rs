//! Agreement with the paper's own implementation, the crate `multi-skill` 0.1.2, in its exact
//! mode (`fast = false`: every opponent, unbounded history), on the shared datasets beside
//! the repository. Both replay the same rounds with the same parameters and every player's μ
//! and σ must agree within 0.05. Each test prints a line saying it SKIPPED, and passes, when
//! `../shared/data` is absent (a fresh clone).
//!
//! The reference is O(N²) per round in exact mode, so the tests take formula1 whole (small
//! rounds, many ties, long careers) and the first rounds of ctftime (large fields, no ties).
//!
//! Codeforces' and Topcoder's systems are checked the same way against the crate's
//! `CodeforcesSys` and `TopcoderSys`, and on random rounds too, which need no shared data.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mmr_service::engine::params::MAX_HISTORY_LIMIT;
use mmr_service::engine::{
    Beliefs, CodeforcesParams, EloMmrParams, Population, Round, Standing, SystemParams,
    TopcoderParams, Variant,
};
use mmr_service::replay::{input, InputFormat};
use multi_skill::data_processing::Contest;
use multi_skill::systems::{
    simulate_contest, CodeforcesSys, EloMMR, EloMMRVariant, PlayersByName, RatingSystem,
    TopcoderSys,
};
use proptest::prelude::*;

/// Largest difference in μ or σ allowed between the engine and the reference.
const AGREEMENT: f64 = 0.05;
/// Rounds of ctftime replayed: about 4.9 million pairs of entrants through the reference.
const CTFTIME_ROUNDS: usize = 100;

/// The first `limit` rounds of `../shared/data/NAME/rounds.jsonl`, or `None` (after saying
/// so) when the shared data is absent.
pub(crate) fn shared_rounds(name: &str, limit: usize) -> Option<Vec<Round>> {
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
    let rounds = rounds.into_iter().filter_map(|r| r.line.into_round());
    Some(rounds.take(limit).collect())
}

/// The reference's contest: standings in rank order, each with the 0-based range of places
/// its tie group covers.
pub(crate) fn reference_contest(index: usize, round: &Round) -> Contest {
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
pub(crate) fn reference_sig_limit(params: &EloMmrParams) -> f64 {
    let (g2, b2) = (params.gamma * params.gamma, params.beta * params.beta);
    ((-g2 + (g2 * g2 + 4.0 * g2 * b2).sqrt()) / 2.0).sqrt()
}

/// Replays `rounds` through the engine and through the reference with `params` and returns
/// the players compared and the largest differences in μ and in σ.
fn largest_differences(params: EloMmrParams, rounds: &[Round]) -> (usize, f64, f64) {
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
                f64::max(sigma, (got.sigma.unwrap_or(f64::NAN) - want.sig).abs()),
            )
        })
}

/// Our parameters for a comparison: the defaults with the reference's unbounded history (the
/// largest limit, more rounds than any player of the datasets has played).
pub(crate) fn exact(variant: Variant, rho: f64) -> EloMmrParams {
    EloMmrParams {
        variant,
        rho,
        history_limit: MAX_HISTORY_LIMIT,
        ..EloMmrParams::default()
    }
}

fn check(name: &str, limit: usize, params: EloMmrParams) {
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

/// Compares one of the paper's baselines, `system` against the reference's `reference`, on
/// the first `limit` rounds of a shared dataset.
fn check_baseline(name: &str, limit: usize, system: SystemParams, reference: &dyn RatingSystem) {
    let Some(rounds) = shared_rounds(name, limit) else {
        return;
    };
    let newcomer = system.newcomer().rating();
    let label = system.name().as_str();
    let sigma_init = newcomer.sigma.unwrap_or_default();
    let (players, mu, sigma) = compare(system, reference, (newcomer.mu, sigma_init), &rounds);
    println!(
        "{name}, {label}: {} rounds, {players} players, largest differences μ {mu:.2e}, σ {sigma:.2e}",
        rounds.len()
    );
    assert!(
        mu <= AGREEMENT && sigma <= AGREEMENT,
        "{name}: μ differs by up to {mu}, σ by {sigma}"
    );
}

fn codeforces() -> SystemParams {
    SystemParams::Codeforces(CodeforcesParams::default())
}

fn topcoder() -> SystemParams {
    SystemParams::Topcoder(TopcoderParams::default())
}

#[test]
fn every_formula1_rating_agrees_with_the_reference_codeforces() {
    check_baseline(
        "formula1",
        usize::MAX,
        codeforces(),
        &CodeforcesSys::default(),
    );
}

#[test]
fn early_ctftime_ratings_agree_with_the_reference_codeforces() {
    check_baseline(
        "ctftime",
        CTFTIME_ROUNDS,
        codeforces(),
        &CodeforcesSys::default(),
    );
}

#[test]
fn every_formula1_rating_agrees_with_the_reference_topcoder() {
    check_baseline("formula1", usize::MAX, topcoder(), &TopcoderSys::default());
}

#[test]
fn early_ctftime_ratings_agree_with_the_reference_topcoder() {
    check_baseline(
        "ctftime",
        CTFTIME_ROUNDS,
        topcoder(),
        &TopcoderSys::default(),
    );
}

/// Rounds of players `p0…` with the given ranks, all-tie rounds left out (the reference skips
/// them): histories build up over the rounds.
fn random_rounds(ranks: &[Vec<u64>]) -> Vec<Round> {
    ranks
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
        .filter(|round| {
            round
                .standings
                .iter()
                .any(|s| s.rank != round.standings[0].rank)
        })
        .collect()
}

proptest! {
    #[test]
    fn codeforces_agrees_with_the_reference_on_random_rounds(
        ranks in prop::collection::vec(prop::collection::vec(1..6u64, 2..160), 1..6),
    ) {
        // Rounds above 64 players take the interpolated path, smaller ones the exact sums.
        let rounds = random_rounds(&ranks);
        let newcomer = (1500.0, 350.0);
        let (_, mu, sigma) = compare(codeforces(), &CodeforcesSys::default(), newcomer, &rounds);
        prop_assert!(mu <= 1e-6 && sigma == 0.0, "μ differs by up to {}", mu);
    }

    #[test]
    fn topcoder_agrees_with_the_reference_on_random_rounds(
        ranks in prop::collection::vec(prop::collection::vec(1..6u64, 2..60), 1..8),
    ) {
        let rounds = random_rounds(&ranks);
        let (_, mu, sigma) = compare(topcoder(), &TopcoderSys::default(), (1500.0, 350.0), &rounds);
        prop_assert!(mu <= 1e-6 && sigma <= 1e-6, "μ differs by up to {}, σ by {}", mu, sigma);
    }
}
