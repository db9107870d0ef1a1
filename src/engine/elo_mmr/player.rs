//! A player's belief about their own skill (docs/elo-mmr.md, "A player's belief"), and the two
//! things that change it: diffusion between rounds (Algorithm 2) and the posterior update after
//! a round's performance is known (second half of Algorithm 3).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::elo_mmr::params::{EloMmrParams, Variant};
use crate::maths::lanes::tanh;
use crate::maths::lanes::{lane_total, vectorized, WithSimd, POINT_LANES as LANES};
use crate::maths::solve::increasing_root;
use crate::LOGISTIC_SCALE;

/// Seconds in a day, for `drift_per_day`.
const SECONDS_PER_DAY: f64 = 86_400.0;

/// One remembered round: a logistic factor of the posterior. A factor never changes once
/// added: diffusion shrinks every factor's weight by the same ratio, which the belief keeps
/// as one number ([`EloMmrState::log_decay`]). Diffusion is then O(1), and storage appends
/// one factor per round instead of rewriting the whole belief.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Factor {
    /// The round's performance `p_k`.
    pub perf: f64,
    /// The factor's weight `w_k` when it was added (`1 / beta_k²`).
    pub weight: f64,
    /// The performance spread `beta_k` of that round.
    pub beta: f64,
    /// The belief's [`EloMmrState::log_decay`] when the factor was added.
    pub log_decay: f64,
}

/// Everything the engine knows about one player: the whole posterior, not just `mu` and `sigma`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EloMmrState {
    /// Rating: the posterior's mode.
    pub mu: f64,
    /// Uncertainty: `1/sigma² = w0 + Σ w_k`.
    pub sigma: f64,
    /// Center of the Gaussian term.
    pub p0: f64,
    /// Weight (inverse variance) of the Gaussian term.
    pub w0: f64,
    /// Logistic factors, oldest first.
    pub factors: VecDeque<Factor>,
    /// Natural log of the product of every diffusion's weight decay so far: factor `k`
    /// weighs `w_k · exp(log_decay − log_decay_k)` now.
    pub log_decay: f64,
    /// Time (seconds since the Unix epoch) of the last round played, if it had one.
    pub last_time: Option<i64>,
    /// Number of rounds played.
    pub rounds: u64,
}

impl EloMmrState {
    /// The prior of a player who has never played.
    #[must_use]
    pub fn new(params: &EloMmrParams) -> Self {
        Self {
            mu: params.mu_init,
            sigma: params.sigma_init,
            p0: params.mu_init,
            w0: 1.0 / (params.sigma_init * params.sigma_init),
            factors: VecDeque::new(),
            log_decay: 0.0,
            last_time: None,
            rounds: 0,
        }
    }

    /// Drift variance `g²` to add before a round at `time`: `gamma²` plus `drift_per_day` for
    /// each day since the last round (a round dated before it adds no time drift).
    #[must_use]
    pub fn drift_variance(&self, params: &EloMmrParams, time: Option<i64>) -> f64 {
        let days = match (self.last_time, time) {
            (Some(last), Some(now)) if now > last => (now - last) as f64 / SECONDS_PER_DAY,
            _ => 0.0,
        };
        params.gamma * params.gamma + params.drift_per_day * days
    }

    /// Algorithm 2 (pseudodiffusion): adds `g2` to the variance, keeps `mu`, and moves weight
    /// from the logistic factors to the Gaussian term at rate `rho`. `rho = ∞`, and the
    /// Gaussian variant, collapse the belief into one Gaussian.
    #[must_use]
    pub fn diffused(&self, g2: f64, rho: f64, variant: Variant) -> Self {
        // Room for the factor the round's update adds next: a plain clone has none, and
        // growing a deque copies it (8% of a ctftime replay's profile went there).
        let mut factors = VecDeque::with_capacity(self.factors.len() + 1);
        factors.extend(self.factors.iter().copied());
        let mut next = Self { factors, ..*self };
        next.diffuse(g2, rho, variant);
        next
    }

    /// [`Self::diffused`] in place: the belief's factors stay where they are.
    pub fn diffuse(&mut self, g2: f64, rho: f64, variant: Variant) {
        let variance = self.sigma * self.sigma;
        let new_variance = variance + g2;
        self.sigma = new_variance.sqrt();
        if rho == f64::INFINITY || variant == Variant::Gaussian {
            self.p0 = self.mu;
            self.w0 = 1.0 / new_variance;
            self.factors.clear();
            return;
        }
        let kappa = variance / new_variance;
        let transfer = kappa.powf(rho);
        // The belief's total weight: `w0 + Σ w_k = 1/σ²`, kept by every update.
        let total = 1.0 / variance;
        let w_gauss = transfer * self.w0;
        let w_logistic = (1.0 - transfer) * total;
        if w_logistic > 0.0 {
            self.p0 = (w_gauss * self.p0 + w_logistic * self.mu) / (w_gauss + w_logistic);
        }
        self.w0 = kappa * (w_gauss + w_logistic);
        let decay = kappa * transfer;
        if decay > 0.0 {
            self.log_decay += decay.ln();
        } else {
            // The factors' weights underflowed to nothing: they no longer shape the belief.
            self.factors.clear();
        }
    }

    /// Second half of Algorithm 3: adds the observation `perf` with spread `beta` and recomputes
    /// `mu` and `sigma`. `history_limit` bounds the logistic factors kept.
    #[must_use]
    pub fn observed(
        mut self,
        perf: f64,
        beta: f64,
        params: &EloMmrParams,
        time: Option<i64>,
    ) -> Self {
        let weight = 1.0 / (beta * beta);
        let total = match params.variant {
            Variant::Gaussian => {
                // The conjugate Gaussian update of Elo-MMχ; the belief has no factors.
                let w = self.w0 + weight;
                self.p0 = (self.w0 * self.p0 + weight * perf) / w;
                self.w0 = w;
                self.mu = self.p0;
                w
            }
            Variant::Logistic => {
                self.factors.push_back(Factor {
                    perf,
                    weight,
                    beta,
                    log_decay: self.log_decay,
                });
                while self.factors.len() > params.history_limit {
                    if let Some(old) = self.factors.pop_front() {
                        let old_weight = self.weight(&old);
                        let w = self.w0 + old_weight;
                        self.p0 = (self.w0 * self.p0 + old_weight * old.perf) / w;
                        self.w0 = w;
                    }
                }
                let (mode, factor_weight) = self.posterior_mode();
                self.mu = mode;
                self.w0 + factor_weight
            }
        };
        self.sigma = 1.0 / total.sqrt();
        if time.is_some() {
            self.last_time = time;
        }
        self.rounds += 1;
        self
    }

    /// The current weight of `factor`, one of this belief's factors.
    #[must_use]
    pub fn weight(&self, factor: &Factor) -> f64 {
        factor.weight * (self.log_decay - factor.log_decay).exp()
    }

    /// The zero of `L'(x) = w0 (x − p0) + Σ_k (w_k β_k² / β̄_k) tanh((x − p_k) / (2 β̄_k))`
    /// (docs/elo-mmr.md, step 4). Every term is increasing and vanishes at its own center, so
    /// the zero lies between the smallest and the largest center. Also returns `Σ w_k`, from
    /// the same pass over the factors.
    fn posterior_mode(&self) -> (f64, f64) {
        let (lo, hi) = self.factors.iter().fold((self.p0, self.p0), |(lo, hi), f| {
            (lo.min(f.perf), hi.max(f.perf))
        });
        let mut factor_weight = 0.0;
        // Most beliefs hold few factors: their blocks live on the stack, not in an allocation
        // per update (malloc and free were a tenth of a replay's profile).
        let count = self.factors.len().div_ceil(LANES);
        let mut on_stack = [FactorBlock::default(); STACK_BLOCKS];
        let mut on_heap = Vec::new();
        let blocks: &mut [FactorBlock] = if count <= STACK_BLOCKS {
            &mut on_stack[..count]
        } else {
            on_heap.resize(count, FactorBlock::default());
            &mut on_heap
        };
        for (i, f) in self.factors.iter().enumerate() {
            let weight = self.weight(f);
            factor_weight += weight;
            let beta_bar = LOGISTIC_SCALE * f.beta;
            let (block, lane) = (&mut blocks[i / LANES], i % LANES);
            block.center[lane] = f.perf;
            block.amplitude[lane] = weight * f.beta * f.beta / beta_bar;
            block.inv_width[lane] = 0.5 / beta_bar;
        }
        let mode = increasing_root(lo, hi, self.mu.clamp(lo, hi), |x| {
            let (value, slope) = vectorized(FactorSums { blocks, x });
            (
                self.w0 * (x - self.p0) + lane_total(value),
                self.w0 + lane_total(slope),
            )
        });
        (mode, factor_weight)
    }
}

/// Blocks of factors held on the stack in a posterior update: 32 factors.
const STACK_BLOCKS: usize = 8;

/// `LANES` factors' terms of `L'`, laid out lane by lane so the sum vectorizes. A lane with no
/// factor has zero amplitude and width, and adds exactly zero. Not `lanes::point_sum`'s
/// interleaved terms: on histories of 200 factors that layout was 8% slower (the bench's
/// round/10k_history200, 29.1 / 29.7 ms against 31.5 / 32.0 ms; same bits).
#[derive(Clone, Copy, Default)]
struct FactorBlock {
    center: [f64; LANES],
    amplitude: [f64; LANES],
    inv_width: [f64; LANES],
}

/// The factors' terms of `L'(x)` and of its slope, lane by lane.
struct FactorSums<'a> {
    blocks: &'a [FactorBlock],
    x: f64,
}

impl WithSimd for FactorSums<'_> {
    type Output = ([f64; LANES], [f64; LANES]);

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) -> Self::Output {
        let mut value = [0.0; LANES];
        let mut slope = [0.0; LANES];
        for block in self.blocks {
            for lane in 0..LANES {
                let inv_width = block.inv_width[lane];
                let t = tanh((self.x - block.center[lane]) * inv_width);
                value[lane] += block.amplitude[lane] * t;
                slope[lane] += block.amplitude[lane] * inv_width * (1.0 - t * t);
            }
        }
        (value, slope)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use pulp::Simd;

    use super::*;

    proptest! {
        /// The posterior's lanes on what [`vectorized`] picked here (AVX2 on CI's) and on
        /// pulp's scalar backend: the same bits.
        #[test]
        fn dispatched_and_scalar_factor_sums_give_the_same_bits(
            factors in prop::collection::vec((0.0f64..3000.0, 1e-6f64..1e-3, 1e-3f64..1e-2), 0..40),
            x in 0.0f64..3000.0,
        ) {
            let blocks: Vec<FactorBlock> = factors
                .chunks(LANES)
                .map(|chunk| {
                    let mut block = FactorBlock::default();
                    for (lane, &(center, amplitude, inv_width)) in chunk.iter().enumerate() {
                        block.center[lane] = center;
                        block.amplitude[lane] = amplitude;
                        block.inv_width[lane] = inv_width;
                    }
                    block
                })
                .collect();
            let widest = vectorized(FactorSums { blocks: &blocks, x });
            let baseline = pulp::Scalar::new().vectorize(FactorSums { blocks: &blocks, x });
            prop_assert_eq!(widest.0.map(f64::to_bits), baseline.0.map(f64::to_bits));
            prop_assert_eq!(widest.1.map(f64::to_bits), baseline.1.map(f64::to_bits));
        }
    }

    fn seasoned(params: &EloMmrParams) -> EloMmrState {
        let mut state = EloMmrState::new(params);
        for (i, perf) in [1400.0, 1710.0, 1620.0, 1900.0].into_iter().enumerate() {
            state = state
                .diffused(params.gamma * params.gamma, params.rho, params.variant)
                .observed(perf, params.beta, params, Some(i as i64));
        }
        state
    }

    #[test]
    fn diffusion_keeps_the_weight_identity() {
        let params = EloMmrParams::default();
        let state = seasoned(&params).diffused(900.0, 0.7, Variant::Logistic);
        let total = state.w0 + state.factors.iter().map(|f| state.weight(f)).sum::<f64>();
        assert!((total * state.sigma * state.sigma - 1.0).abs() < 1e-12);
    }

    #[test]
    fn history_limit_folds_old_factors_into_the_gaussian_term() {
        let params = EloMmrParams {
            history_limit: 2,
            ..EloMmrParams::default()
        };
        let state = seasoned(&params);
        assert_eq!(state.factors.len(), 2);
        assert!(state.w0 > 1.0 / (params.sigma_init * params.sigma_init));
    }

    #[test]
    fn infinite_rho_collapses_the_belief() {
        let params = EloMmrParams::default();
        let state = seasoned(&params).diffused(100.0, f64::INFINITY, Variant::Logistic);
        assert!(state.factors.is_empty());
        assert_eq!(state.p0, state.mu);
    }
}
