//! Criterion benchmarks of the engine: single rounds with spread-out priors (fresh players all
//! share one prior, which flatters any implementation), long histories, and full replays of the
//! shared datasets side by side with the reference implementation's fast mode.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use mmr_service::engine::{rate_round, Factor, Params, PlayerState, Round, Standing};

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
fn spread_round(n: usize, history: usize) -> (Round, Vec<PlayerState>) {
    let params = Params::default();
    let mut rng = Lcg(n as u64 ^ 0x5eed);
    let priors = (0..n)
        .map(|_| {
            let mu = 800.0 + 2800.0 * rng.unit();
            let sigma = 60.0 + 290.0 * rng.unit();
            let mut state = PlayerState::new(&params);
            state.mu = mu;
            state.p0 = mu;
            state.sigma = sigma;
            let factor_weight = 1.0 / (params.beta * params.beta * history.max(1) as f64 * 4.0);
            state.factors = (0..history)
                .map(|_| Factor {
                    perf: mu + 400.0 * (rng.unit() - 0.5),
                    weight: factor_weight,
                    beta: params.beta,
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
    let params = Params::default();
    let mut group = c.benchmark_group("round");
    group.sample_size(10);
    for (name, n, history) in [
        ("10k_spread", 10_000, 0),
        ("100k_spread", 100_000, 0),
        ("10k_history200", 10_000, 200),
    ] {
        let (round, priors) = spread_round(n, history);
        let refs: Vec<&PlayerState> = priors.iter().collect();
        group.bench_function(name, |b| {
            b.iter_batched(
                || (),
                |()| black_box(rate_round(&params, &round, &refs)),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, single_rounds);
criterion_main!(benches);
