//! Criterion benchmarks of the engine: single rounds with spread-out priors (fresh players all
//! share one prior, which flatters any implementation), long histories, and full replays of the
//! shared datasets side by side with the reference implementation's fast mode; the other
//! rating systems on the same rounds and replays (`systems`), TrueSkill, Codeforces and
//! Topcoder beside the reference crate's.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion};
use mmr_service::engine::predict::expected_places;
use mmr_service::engine::Beliefs;
use mmr_service::engine::{
    rate_round, CodeforcesParams, CodeforcesState, EloMmrParams, EloMmrState, EloParams, EloState,
    Factor, Glicko2Params, Glicko2State, Population, Round, Standing, SystemParams, SystemState,
    TopcoderParams, TopcoderState, TrueSkillParams, TrueSkillState, WengLinModel, WengLinParams,
    WengLinState,
};
use mmr_service::replay::{input, InputFormat};
use multi_skill::data_processing::Contest;
use multi_skill::systems::{
    simulate_contest, CodeforcesSys, EloMMR, EloMMRVariant, RatingSystem, TopcoderSys, TrueSkillSPb,
};

/// A deterministic generator, so every run rates the same round.
struct Lcg(u64);

impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` players whose priors spread over 800..3600 with σ from 60 to 350, each with `history`
/// logistic factors, and a round where they finish in a random order.
fn spread_round(n: usize, history: usize) -> (Round, Vec<EloMmrState>) {
    let params = EloMmrParams::default();
    let mut rng = Lcg(n as u64 ^ 0x5eed);
    let priors = (0..n)
        .map(|_| {
            let mu = 800.0 + 2800.0 * rng.unit();
            let sigma = 60.0 + 290.0 * rng.unit();
            let mut state = EloMmrState::new(&params);
            state.mu = mu;
            state.p0 = mu;
            state.sigma = sigma;
            let factor_weight = 1.0 / (params.beta * params.beta * history.max(1) as f64 * 4.0);
            state.factors = (0..history)
                .map(|_| Factor {
                    perf: mu + 400.0 * (rng.unit() - 0.5),
                    weight: factor_weight,
                    beta: params.beta,
                    log_decay: 0.0,
                })
                .collect();
            state.w0 = 1.0 / (sigma * sigma) - factor_weight * history as f64;
            state.rounds = history as u64;
            state
        })
        .collect::<Vec<_>>();
    let mut order: Vec<usize> = (0..n).collect();
    // Better players tend to finish higher: sort by a noisy performance.
    let noisy: Vec<f64> = priors
        .iter()
        .map(|p| p.mu + 400.0 * (rng.unit() - 0.5))
        .collect();
    order.sort_by(|&a, &b| noisy[b].total_cmp(&noisy[a]));
    let mut rank = vec![0u64; n];
    for (place, &i) in order.iter().enumerate() {
        rank[i] = place as u64 + 1;
    }
    let standings = (0..n)
        .map(|i| Standing::solo(format!("p{i}"), rank[i]))
        .collect();
    (Round::new(standings), priors)
}

fn single_rounds(c: &mut Criterion) {
    let params = EloMmrParams::default();
    let mut group = c.benchmark_group("round");
    group.sample_size(10);
    for (name, n, history) in [
        ("10k_spread", 10_000, 0),
        ("100k_spread", 100_000, 0),
        ("1m_spread", 1_000_000, 0),
        ("10k_history200", 10_000, 200),
    ] {
        let (round, priors) = spread_round(n, history);
        let refs: Vec<&EloMmrState> = priors.iter().collect();
        group.bench_function(name, |b| {
            b.iter_batched(
                || (),
                |()| black_box(rate_round(&params, &round, &refs)),
                BatchSize::PerIteration,
            )
        });
        if history == 0 && n <= 100_000 {
            // What the worker adds to each round so a result can say where it was expected.
            let system = SystemParams::EloMmr(params);
            let states: Vec<SystemState> =
                priors.iter().cloned().map(SystemState::EloMmr).collect();
            let refs: Vec<&SystemState> = states.iter().collect();
            group.bench_function(format!("{name}/expected_places"), |b| {
                b.iter(|| black_box(expected_places(&system, &round, &refs)));
            });
        }
    }
    group.finish();
}

/// The rounds of `../shared/data/NAME/rounds.jsonl` and their reference contests, when this
/// checkout sits beside the shared data; otherwise says that `group`'s replays of it skipped.
fn shared_dataset(group: &str, name: &str) -> Option<(Vec<Round>, Vec<Contest>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(name)
        .join("rounds.jsonl");
    if !path.exists() {
        eprintln!("SKIPPED {group}/{name}: ../shared/data/{name} is absent");
        return None;
    }
    let rounds: Vec<Round> = match input::read(&path, InputFormat::Jsonl) {
        Ok(rounds) => rounds
            .into_iter()
            .filter_map(|r| r.line.into_round())
            .collect(),
        Err(error) => panic!("{}: {error}", path.display()),
    };
    let contests = rounds
        .iter()
        .enumerate()
        .map(|(i, round)| as_reference_contest(i, round))
        .collect();
    Some((rounds, contests))
}

/// Replays `rounds` in a fresh population of `system`, each round's expected places first
/// when `explained` (as the service's worker does); returns the players rated.
fn replay(system: &SystemParams, rounds: &[Round], explained: bool) -> usize {
    // On one of rayon's threads, as the `replay` command rates.
    rayon::scope(|_| {
        let mut population = Population::new(system.clone()).expect("valid parameters");
        for round in rounds {
            if explained {
                let priors: Vec<&SystemState> = round
                    .standings
                    .iter()
                    .map(|s| population.belief_or_newcomer(&s.player))
                    .collect();
                black_box(expected_places(system, round, &priors).expect("valid rounds"));
            }
            black_box(population.apply(round).expect("dataset rounds are valid"));
        }
        population.len()
    })
}

/// Replays `contests` through the reference crate's `system`, newcomers at Elo-MMR's default
/// prior; returns the players rated.
fn reference_replay(contests: &[Contest], system: &dyn RatingSystem) -> usize {
    let params = EloMmrParams::default();
    let mut players = HashMap::new();
    for (i, contest) in contests.iter().enumerate() {
        simulate_contest(
            &mut players,
            contest,
            system,
            params.mu_init,
            params.sigma_init,
            i,
        );
    }
    players.len()
}

/// The reference's contest format: standings in rank order with 0-based tie ranges.
fn as_reference_contest(index: usize, round: &Round) -> Contest {
    let mut standings: Vec<&Standing> = round.standings.iter().collect();
    standings.sort_by_key(|s| s.rank);
    let mut contest = Contest::new(index);
    let mut start = 0;
    while start < standings.len() {
        let end = start
            + standings[start..]
                .iter()
                .take_while(|s| s.rank == standings[start].rank)
                .count();
        for s in &standings[start..end] {
            contest.standings.push((s.player.clone(), start, end - 1));
        }
        start = end;
    }
    contest
}

/// The reference's `sig_limit` for our `beta` and `gamma`: it drifts by `s⁴ / (β² − s²)` per
/// round, which equals `gamma²` at the root of `s⁴ + γ² s² − γ² β² = 0`.
fn reference_sig_limit(params: &EloMmrParams) -> f64 {
    let (g2, b2) = (params.gamma * params.gamma, params.beta * params.beta);
    ((-g2 + (g2 * g2 + 4.0 * g2 * b2).sqrt()) / 2.0).sqrt()
}

fn replays(c: &mut Criterion) {
    let params = EloMmrParams::default();
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    for name in ["formula1", "ctftime"] {
        let Some((rounds, contests)) = shared_dataset("replay", name) else {
            continue;
        };
        let system = SystemParams::from(params);
        group.bench_function(format!("{name}/exact"), |b| {
            b.iter(|| replay(&system, &rounds, false))
        });
        group.bench_function(format!("{name}/exact_with_expected_places"), |b| {
            b.iter(|| replay(&system, &rounds, true))
        });
        let reference = EloMMR::from_limit(
            params.beta,
            reference_sig_limit(&params),
            false,
            true,
            EloMMRVariant::Logistic(params.rho),
        );
        group.bench_function(format!("{name}/reference_fast"), |b| {
            b.iter(|| reference_replay(&contests, &reference))
        });
    }
    group.finish();
}

/// The size of each system's single-round bench: issue 11 asks every system to rate it in
/// under a second.
const SYSTEM_ROUND: usize = 100_000;

/// The other systems in Elo-MMR's units (μ₀ = 1500, σ₀ = 350, β = 200), so that the same
/// spread priors and datasets suit them; each rates a round of [`SYSTEM_ROUND`] entrants.
fn other_systems() -> [(&'static str, SystemParams); 7] {
    let defaults = EloMmrParams::default();
    let weng_lin = WengLinParams {
        beta: defaults.beta,
        tau: defaults.gamma,
        mu_init: defaults.mu_init,
        sigma_init: defaults.sigma_init,
        ..WengLinParams::default()
    };
    [
        ("weng_lin", SystemParams::WengLin(weng_lin)),
        (
            "weng_lin_pl",
            SystemParams::WengLin(WengLinParams {
                model: WengLinModel::PlackettLuce,
                ..weng_lin
            }),
        ),
        (
            "trueskill",
            SystemParams::TrueSkill(TrueSkillParams {
                beta: defaults.beta,
                tau: defaults.gamma,
                mu_init: defaults.mu_init,
                sigma_init: defaults.sigma_init,
                ..TrueSkillParams::default()
            }),
        ),
        ("glicko2", SystemParams::Glicko2(Glicko2Params::default())),
        (
            "codeforces",
            SystemParams::Codeforces(CodeforcesParams::default()),
        ),
        (
            "topcoder",
            SystemParams::Topcoder(TopcoderParams::default()),
        ),
        ("elo", SystemParams::Elo(EloParams::default())),
    ]
}

/// The state of `system` with the rating and uncertainty of `prior`.
fn as_state(system: &SystemParams, prior: &EloMmrState) -> SystemState {
    let (mu, sigma, rounds) = (prior.mu, prior.sigma, prior.rounds);
    match system {
        SystemParams::WengLin(_) => SystemState::WengLin(WengLinState { mu, sigma, rounds }),
        SystemParams::TrueSkill(_) => SystemState::TrueSkill(TrueSkillState { mu, sigma, rounds }),
        SystemParams::Codeforces(_) => {
            SystemState::Codeforces(CodeforcesState { mu, sigma, rounds })
        }
        SystemParams::Topcoder(_) => SystemState::Topcoder(TopcoderState { mu, sigma, rounds }),
        SystemParams::Elo(_) => SystemState::Elo(EloState { mu, rounds }),
        SystemParams::Glicko2(p) => SystemState::Glicko2(Glicko2State {
            mu,
            sigma,
            volatility: p.volatility_init,
            rounds,
        }),
        SystemParams::EloMmr(_) => SystemState::EloMmr(prior.clone()),
    }
}

/// The round `round`'s entrants play next: the same players, finishing in an order drawn
/// around their ratings in `states` as [`spread_round`] draws it.
fn next_round(round: &Round, states: &[SystemState]) -> Round {
    let mut rng = Lcg(states.len() as u64 ^ 0x4e57);
    let noisy: Vec<f64> = states
        .iter()
        .map(|s| s.rating().mu + 400.0 * (rng.unit() - 0.5))
        .collect();
    let mut order: Vec<usize> = (0..states.len()).collect();
    order.sort_by(|&a, &b| noisy[b].total_cmp(&noisy[a]));
    let mut standings: Vec<Standing> = round.standings.clone();
    for (place, &i) in order.iter().enumerate() {
        standings[i].rank = place as u64 + 1;
    }
    Round::new(standings)
}

/// Benches `system` rating a round after `round`, on the ratings `round` left `states` with:
/// a second large round must cost no more than the first.
fn after_one_round(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    system: &SystemParams,
    round: &Round,
    states: &[SystemState],
) {
    let refs: Vec<&SystemState> = states.iter().collect();
    let after: Vec<SystemState> = system
        .apply(round, &refs)
        .expect("a valid round")
        .into_iter()
        .map(|applied| applied.state)
        .collect();
    let next = next_round(round, &after);
    let refs: Vec<&SystemState> = after.iter().collect();
    group.bench_function(
        format!("{name}/round/{}k_after_one", SYSTEM_ROUND / 1000),
        |b| b.iter(|| black_box(system.apply(&next, &refs).expect("a valid round"))),
    );
}

fn systems(c: &mut Criterion) {
    let mut group = c.benchmark_group("systems");
    group.sample_size(10);
    let (round, priors) = spread_round(SYSTEM_ROUND, 0);
    let elo_mmr = ("elo_mmr", SystemParams::EloMmr(EloMmrParams::default()));
    for (name, system) in std::iter::once(elo_mmr).chain(other_systems()) {
        // TrueSkill's default draw margin refuses a round this large as not finite
        // (docs/trueskill.md, "Large free-for-alls"): it runs with the margin those docs
        // advise for large rounds.
        let system = match system {
            SystemParams::TrueSkill(params) => SystemParams::TrueSkill(TrueSkillParams {
                draw_probability: 1e-9,
                ..params
            }),
            system => system,
        };
        let states: Vec<SystemState> = priors.iter().map(|p| as_state(&system, p)).collect();
        let refs: Vec<&SystemState> = states.iter().collect();
        if name != "elo_mmr" {
            group.bench_function(
                format!("{name}/round/{}k_spread", SYSTEM_ROUND / 1000),
                |b| b.iter(|| black_box(system.apply(&round, &refs).expect("a valid round"))),
            );
        }
        after_one_round(&mut group, name, &system, &round, &states);
    }
    // The case that was quadratic: Weng-Lin at its own defaults, where one round of
    // newcomers leaves ratings spread over many thousands of its scales.
    for (name, model) in [
        ("weng_lin", WengLinModel::BradleyTerry),
        ("weng_lin_pl", WengLinModel::PlackettLuce),
    ] {
        let system = SystemParams::WengLin(WengLinParams {
            model,
            ..WengLinParams::default()
        });
        let newcomers = vec![system.newcomer(); SYSTEM_ROUND];
        let name = format!("{name}/defaults");
        after_one_round(&mut group, &name, &system, &round, &newcomers);
    }
    let params = EloMmrParams::default();
    for name in ["formula1", "ctftime"] {
        let Some((rounds, contests)) = shared_dataset("systems/replay", name) else {
            continue;
        };
        for (system_name, system) in other_systems() {
            group.bench_function(format!("{system_name}/replay/{name}"), |b| {
                b.iter(|| replay(&system, &rounds, false))
            });
        }
        let reference = TrueSkillSPb {
            beta: params.beta,
            sig_drift: params.gamma,
            ..TrueSkillSPb::default()
        };
        let codeforces = CodeforcesSys::default();
        group.bench_function(format!("codeforces/replay/{name}/reference"), |b| {
            b.iter(|| reference_replay(&contests, &codeforces))
        });
        let topcoder = TopcoderSys::default();
        group.bench_function(format!("topcoder/replay/{name}/reference"), |b| {
            b.iter(|| reference_replay(&contests, &topcoder))
        });
        group.bench_function(format!("trueskill/replay/{name}/reference"), |b| {
            b.iter(|| reference_replay(&contests, &reference))
        });
    }
    group.finish();
}

criterion_group!(benches, single_rounds, replays, systems);
criterion_main!(benches);
