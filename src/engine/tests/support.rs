//! What the engine tests share: beliefs built through the public API, random pool parameters,
//! random rounds (ties, teams, weights, ceilings, dates) over a pool of named players, and a
//! small deterministic generator for shuffles and synthetic rounds.

use std::f64::consts::PI;

use mmr_engine::{EloMmrParams, EloMmrState, Round, Standing, Ties, Variant};
use proptest::prelude::*;

/// Seconds in a day: rounds of a random history are this far apart per step of `day`.
pub const DAY: i64 = 86_400;

/// How a prior belief is made: a newcomer rated `mu` with uncertainty `sigma` who then
/// performed at `mu + offset` for each of `history`, with a drift of `gamma` before each.
#[derive(Debug, Clone)]
pub struct PriorSpec {
    pub mu: f64,
    pub sigma: f64,
    pub history: Vec<f64>,
    /// Day of the last round played, if the belief carries a date.
    pub last_day: Option<i64>,
}

/// Priors rated 0 to 3000 with σ from 30 to 400 and up to five past rounds.
pub fn prior_spec() -> impl Strategy<Value = PriorSpec> {
    (
        0.0..3000.0f64,
        30.0..400.0f64,
        prop::collection::vec(-900.0..900.0f64, 0..6),
        prop::option::of(0..3i64),
    )
        .prop_map(|(mu, sigma, history, last_day)| PriorSpec {
            mu,
            sigma,
            history,
            last_day,
        })
}

/// The belief `spec` describes, built with the engine's own diffusion and update.
pub fn belief(params: &EloMmrParams, spec: &PriorSpec) -> EloMmrState {
    let mut state = EloMmrState::new(params);
    state.mu = spec.mu;
    state.p0 = spec.mu;
    state.sigma = spec.sigma;
    state.w0 = 1.0 / (spec.sigma * spec.sigma);
    for offset in &spec.history {
        state = state
            .diffused(params.gamma * params.gamma, params.rho, params.variant)
            .observed(spec.mu + offset, params.beta, params, None);
    }
    state.last_time = spec.last_day.map(|day| day * DAY);
    state
}

/// `state` moved by `shift` rating points: every center moves, every weight stays.
pub fn shifted(state: &EloMmrState, shift: f64) -> EloMmrState {
    let mut moved = state.clone();
    moved.mu += shift;
    moved.p0 += shift;
    for factor in &mut moved.factors {
        factor.perf += shift;
    }
    moved
}

/// ρ from the whole range: 0, finite values, and ∞.
pub fn any_rho() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => Just(0.0),
        4 => 0.05..4.0f64,
        1 => Just(f64::INFINITY),
    ]
}

/// Pool parameters of the given variant with every knob varied, including a short history
/// limit (so factors get folded) and time drift.
pub fn params_of(variant: Variant) -> impl Strategy<Value = EloMmrParams> {
    (
        100.0..400.0f64,
        0.0..80.0f64,
        any_rho(),
        prop_oneof![Just(Ties::Both), Just(Ties::Split)],
        prop_oneof![1..6usize, Just(500usize)],
        prop_oneof![Just(0.0), 0.0..40.0f64],
    )
        .prop_map(
            move |(beta, gamma, rho, ties, history_limit, drift_per_day)| EloMmrParams {
                variant,
                beta,
                gamma,
                rho,
                ties,
                history_limit,
                drift_per_day,
                ..EloMmrParams::default()
            },
        )
}

/// Parameters of either variant.
pub fn any_params() -> impl Strategy<Value = EloMmrParams> {
    prop_oneof![params_of(Variant::Logistic), params_of(Variant::Gaussian)]
}

/// One pool player's part in a random round.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub plays: bool,
    pub rank: u64,
    /// 0: plays alone; otherwise plays for team `team` of their rank.
    pub team: u8,
}

/// How one round of a random history goes, for a pool of `pool` players.
#[derive(Debug, Clone)]
pub struct RoundSpec {
    pub slots: Vec<Slot>,
    pub weight: f64,
    pub ceiling: Option<f64>,
    /// Days since the previous round of the history.
    pub days: i64,
}

/// A round over a pool of `pool` players: most play, ranks collide often enough to tie,
/// some players form teams when `teams`, and the weight, ceiling and date vary.
pub fn round_spec(pool: usize, teams: bool) -> impl Strategy<Value = RoundSpec> {
    let max_team = if teams { 3u8 } else { 0 };
    let slot = (
        prop::bool::weighted(0.9),
        1..(pool as u64 + 2),
        prop_oneof![3 => Just(0u8), 1 => 0..=max_team],
    )
        .prop_map(|(plays, rank, team)| Slot { plays, rank, team });
    (
        prop::collection::vec(slot, pool),
        prop_oneof![Just(1.0), 0.25..4.0f64],
        prop::option::weighted(0.2, 1500.0..3500.0f64),
        0..40i64,
    )
        .prop_map(|(slots, weight, ceiling, days)| RoundSpec {
            slots,
            weight,
            ceiling,
            days,
        })
}

/// Name of pool player `i`.
pub fn name(i: usize) -> String {
    format!("p{i}")
}

/// The round `spec` describes, dated `time`, and the pool indices of its standings. The first
/// and the last player who play always play alone, so the round has at least two entrants
/// whenever at least two players play (if fewer do, the first two play anyway).
pub fn build_round(spec: &RoundSpec, time: Option<i64>) -> (Round, Vec<usize>) {
    let mut playing: Vec<usize> = (0..spec.slots.len())
        .filter(|&i| spec.slots[i].plays)
        .collect();
    if playing.len() < 2 {
        playing = vec![0, 1];
    }
    let first = playing[0];
    let last = playing[playing.len() - 1];
    let standings = playing
        .iter()
        .map(|&i| {
            let slot = spec.slots[i];
            let alone = slot.team == 0 || i == first || i == last;
            Standing {
                team: (!alone).then(|| format!("t{}r{}", slot.team, slot.rank)),
                ..Standing::solo(name(i), slot.rank)
            }
        })
        .collect();
    let round = Round {
        time,
        weight: spec.weight,
        perf_ceiling: spec.ceiling,
        standings,
    };
    (round, playing)
}

/// A deterministic generator (Knuth's MMIX LCG), for shuffles and synthetic rounds.
pub struct Lcg(pub u64);

impl Lcg {
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n - 1)
    }

    /// `items` in a uniformly random order (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// `π / √3`: one over the logistic scale of a unit standard deviation.
pub fn inverse_logistic_scale() -> f64 {
    PI / 3f64.sqrt()
}
