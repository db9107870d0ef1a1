//! `E_i = Σ_j Φ((μ_j − μ_i) / (m √(σ_i² + σ_j²)))` for every player `i` of a round: Topcoder's
//! expected ranks. Each term depends on both players' σ, so the sum is no function of one
//! variable; but `Φ(d / √(u + v))` is the heat flow of a Gaussian of variance `v` for a time
//! `u`, so in Fourier space the target's part and the source's part of each term multiply.
//! One pass over the sources builds the field's Fourier coefficients, one pass over the
//! targets reads each sum from them, and a round costs O(N K) for K modes (a few hundred)
//! instead of O(N²). `docs/topcoder.md` "Expected ranks in O(N K)" derives it and bounds the
//! error.

use std::f64::consts::PI;

use rayon::prelude::*;

use crate::maths::normal;

/// How many standard deviations the Gaussians may reach: the domain extends this far beyond
/// the outermost ratings at the widest deviation, and the modes go as far as the narrowest
/// one's transform `exp(−(s k ω)² / 2)` needs to fall below `exp(−REACH² / 2)` ≈ 2.6e-18.
const REACH: f64 = 9.0;

/// A round smaller than this is summed directly: the spectral passes have a fixed cost.
const DIRECT_LIMIT: usize = 64;

/// Sources per parallel piece of the first pass, at least. Set by the round alone, so the
/// pieces, and the order their sums are added in, do not depend on the thread count: the
/// result is the same on every run.
const SOURCES_PER_PIECE: usize = 2048;

/// The pieces' partial sums together stay under this many bytes: with very many modes the
/// pieces grow larger and fewer.
const PIECES_BYTES: usize = 64 << 20;

/// The recurrences restart from exact values every this many modes, so their rounding stays
/// that of a few hundred steps however many modes a round needs.
const EXACT_EVERY: usize = 256;

/// A mode costs about this many direct terms per player (both passes together; measured
/// 0.06 on 10,000 spread players, a complex multiply-add against a libm `erfc`), rounded up so
/// that the choice errs towards the direct sum.
const MODE_COST: f64 = 0.1;

/// `Σ_j Φ((μ_j − μ_i) / (√(σ_i² + σ_j²) · scale))` for every `i`, `j = i` included.
pub(crate) fn expected_ranks(mus: &[f64], sigmas: &[f64], scale: f64) -> Vec<f64> {
    match Spectrum::worth_building(mus, sigmas, scale) {
        Some(layout) => layout.build(mus, sigmas).sums(mus, sigmas),
        None => direct(mus, sigmas, scale),
    }
}

/// The O(N²) sum, term by term.
fn direct(mus: &[f64], sigmas: &[f64], scale: f64) -> Vec<f64> {
    (0..mus.len())
        .into_par_iter()
        .map(|i| {
            mus.iter()
                .zip(sigmas)
                .map(|(&mu, &sigma)| normal::cdf((mu - mus[i]) / sigmas[i].hypot(sigma) / scale))
                .sum()
        })
        .collect()
}

/// The periodic domain `[start, start + length)` and the modes a round needs.
#[derive(Debug, Clone, Copy)]
struct Layout {
    start: f64,
    length: f64,
    /// `ω = 2π / length`.
    omega: f64,
    modes: usize,
    scale: f64,
    /// The least `σ²`: the narrowest term a source or a target can meet is `√(2 σ_min²)` wide.
    least_variance: f64,
}

/// The Fourier coefficients `b_k = Σ_j exp(−i k ω (μ_j − start)) exp(−(m σ_j k ω)² / 2)`,
/// `k = 1..=modes`, divided by `k ω`, as `(re, im)` pairs.
struct Spectrum {
    layout: Layout,
    coefficients: Vec<(f64, f64)>,
    players: f64,
}

impl Spectrum {
    /// The domain and modes for this round, or `None` when the direct sum costs less (a small
    /// round, or σ so narrow against the ratings' range that the modes outnumber the players).
    fn worth_building(mus: &[f64], sigmas: &[f64], scale: f64) -> Option<Layout> {
        if mus.len() < DIRECT_LIMIT {
            return None;
        }
        let low = mus.iter().copied().fold(f64::INFINITY, f64::min);
        let high = mus.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let least = sigmas.iter().copied().fold(f64::INFINITY, f64::min);
        let most = sigmas.iter().copied().fold(0.0, f64::max);
        let (narrowest, widest) = (scale * least * 2f64.sqrt(), scale * most * 2f64.sqrt());
        let length = (high - low) + 2.0 * REACH * widest;
        let modes = (REACH * length / (2.0 * PI * narrowest)).ceil();
        if !(modes.is_finite() && modes * MODE_COST < mus.len() as f64) {
            return None;
        }
        Some(Layout {
            start: low - REACH * widest,
            length,
            omega: 2.0 * PI / length,
            modes: (modes as usize).max(1),
            scale,
            least_variance: least * least,
        })
    }

    /// The modes a term of total variance `(m s)²`, `s² ≥ least`, still needs.
    fn modes_for(layout: &Layout, variance: f64) -> usize {
        let width = layout.scale * variance.sqrt();
        ((REACH / (width * layout.omega)).ceil() as usize).min(layout.modes)
    }
}

impl Layout {
    /// The first pass: every source's modes, in fixed pieces summed in order.
    fn build(self, mus: &[f64], sigmas: &[f64]) -> Spectrum {
        let most_pieces = (PIECES_BYTES / (self.modes * 16)).max(1);
        let size = SOURCES_PER_PIECE.max(mus.len().div_ceil(most_pieces));
        let pieces: Vec<Vec<(f64, f64)>> = mus
            .par_chunks(size)
            .zip(sigmas.par_chunks(size))
            .map(|(mus, sigmas)| {
                let mut sums = vec![(0.0, 0.0); self.modes];
                for (&mu, &sigma) in mus.iter().zip(sigmas) {
                    let variance = sigma * sigma;
                    let modes = Spectrum::modes_for(&self, variance + self.least_variance);
                    let mut terms = Modes::new(&self, mu - self.start, -1.0, variance);
                    for sum in &mut sums[..modes] {
                        let (re, im) = terms.next_term();
                        sum.0 += re;
                        sum.1 += im;
                    }
                }
                sums
            })
            .collect();
        let mut coefficients = vec![(0.0, 0.0); self.modes];
        for piece in pieces {
            for (total, (re, im)) in coefficients.iter_mut().zip(piece) {
                total.0 += re;
                total.1 += im;
            }
        }
        // Divided by k ω once here rather than at every target.
        for (k, total) in coefficients.iter_mut().enumerate() {
            let frequency = (k + 1) as f64 * self.omega;
            *total = (total.0 / frequency, total.1 / frequency);
        }
        Spectrum {
            layout: self,
            coefficients,
            players: mus.len() as f64,
        }
    }
}

impl Spectrum {
    /// The second pass: `E(y) = N (L − y) / L + (2 / L) Σ_k Im(b_k g_k (1 − e^{i k ω y})) / (k ω)`
    /// at each target, `y` its rating from the domain's start and `g_k` its own Gaussian factor.
    fn sums(&self, mus: &[f64], sigmas: &[f64]) -> Vec<f64> {
        let layout = &self.layout;
        mus.par_iter()
            .zip(sigmas)
            .map(|(&mu, &sigma)| {
                let y = mu - layout.start;
                let variance = sigma * sigma;
                let modes = Spectrum::modes_for(layout, variance + layout.least_variance);
                let mut terms = Modes::new(layout, y, 1.0, variance);
                let mut total = 0.0;
                for &(b_re, b_im) in &self.coefficients[..modes] {
                    let (z_re, z_im) = terms.next_term();
                    // Im(b g (1 − z)), with z already carrying g.
                    total += terms.last_gauss * b_im - (b_re * z_im + b_im * z_re);
                }
                self.players * (layout.length - y) / layout.length + 2.0 * total / layout.length
            })
            .collect()
    }
}

/// `exp(sign · i k ω y) · exp(−(m σ k ω)² / 2)` for `k = 1, 2, …`, by recurrences: one
/// complex rotation and two products a mode, restarted from exact values every
/// [`EXACT_EVERY`] modes.
struct Modes {
    /// `sign · ω y`.
    angle: f64,
    /// `c = (m σ ω)² / 2`.
    c: f64,
    /// The mode last returned.
    k: usize,
    rotation: (f64, f64),
    phase: (f64, f64),
    /// `exp(−c (2k + 1))`: the ratio of the next mode's factor to mode `k`'s.
    ratio: f64,
    step: f64,
    last_gauss: f64,
}

impl Modes {
    fn new(layout: &Layout, y: f64, sign: f64, variance: f64) -> Self {
        let angle = sign * layout.omega * y;
        let c = 0.5 * layout.scale * layout.scale * variance * layout.omega * layout.omega;
        let (sin, cos) = angle.sin_cos();
        Self {
            angle,
            c,
            k: 0,
            rotation: (cos, sin),
            phase: (1.0, 0.0),
            ratio: (-c).exp(),
            step: (-2.0 * c).exp(),
            last_gauss: 1.0,
        }
    }

    /// The next mode's term, and its Gaussian factor in `last_gauss`.
    fn next_term(&mut self) -> (f64, f64) {
        self.k += 1;
        if self.k % EXACT_EVERY == 0 {
            let k = self.k as f64;
            let (sin, cos) = (k * self.angle).sin_cos();
            self.phase = (cos, sin);
            self.last_gauss = (-self.c * k * k).exp();
            self.ratio = (-self.c * (2.0 * k + 1.0)).exp();
        } else {
            let (re, im) = self.phase;
            let (c, s) = self.rotation;
            self.phase = (re * c - im * s, re * s + im * c);
            self.last_gauss *= self.ratio;
            self.ratio *= self.step;
        }
        (
            self.phase.0 * self.last_gauss,
            self.phase.1 * self.last_gauss,
        )
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn round() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, f64)> {
        (
            DIRECT_LIMIT..1500usize,
            0.0..4000.0f64,
            1.0..300.0f64,
            1.0..4.0f64,
            0.3..3.0f64,
        )
            .prop_flat_map(|(n, range, least, ratio, scale)| {
                (
                    prop::collection::vec(0.0..range, n),
                    prop::collection::vec(least..least * ratio, n),
                    Just(scale),
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn agrees_with_the_direct_sum((mus, sigmas, scale) in round()) {
            let exact = direct(&mus, &sigmas, scale);
            let layout = Spectrum::worth_building(&mus, &sigmas, scale);
            // Build the spectrum even where the direct sum would be chosen.
            let layout = layout.unwrap_or_else(|| {
                let mut forced = mus.clone();
                forced.resize(mus.len().max(100_000), mus[0]);
                let mut wide = sigmas.clone();
                wide.resize(forced.len(), sigmas[0]);
                Spectrum::worth_building(&forced, &wide, scale).expect("enough players")
            });
            let spectral = layout.build(&mus, &sigmas).sums(&mus, &sigmas);
            let n = mus.len() as f64;
            for (i, (s, e)) in spectral.iter().zip(&exact).enumerate() {
                prop_assert!((s - e).abs() <= 1e-11 * n, "player {}: {} against {}", i, s, e);
            }
        }
    }

    #[test]
    fn the_sums_are_bit_identical_on_any_number_of_threads() {
        let n = 5 * SOURCES_PER_PIECE + 17;
        let mus: Vec<f64> = (0..n).map(|i| 800.0 + (i * 7919 % 2800) as f64).collect();
        let sigmas: Vec<f64> = (0..n).map(|i| 60.0 + (i * 104_729 % 290) as f64).collect();
        let on = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a local thread pool")
                .install(|| expected_ranks(&mus, &sigmas, 1.0))
        };
        let one = on(1);
        assert!(Spectrum::worth_building(&mus, &sigmas, 1.0).is_some());
        for threads in [2, 7] {
            let many = on(threads);
            assert!(one
                .iter()
                .zip(&many)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    #[test]
    fn small_or_narrow_rounds_are_summed_directly() {
        let mus: Vec<f64> = (0..DIRECT_LIMIT - 1).map(|i| i as f64 * 10.0).collect();
        let sigmas = vec![50.0; mus.len()];
        assert!(Spectrum::worth_building(&mus, &sigmas, 1.0).is_none());
        let mus: Vec<f64> = (0..1000).map(|i| i as f64 * 1e6).collect();
        let sigmas = vec![1.0; mus.len()];
        assert!(Spectrum::worth_building(&mus, &sigmas, 1.0).is_none());
    }
}

/// The figures docs/topcoder.md and BENCHMARKS.md quote: error and time of the Fourier sum
/// against the direct one on spread rounds. `cargo test --lib normal_sum::figures -- --ignored
/// --nocapture`.
#[cfg(test)]
mod figures {
    use std::time::Instant;

    use super::*;

    #[test]
    #[ignore = "prints figures; seconds of direct sums"]
    fn error_and_time_against_the_direct_sum() {
        let mut unit = crate::uniform(12_345);
        for n in [1_000, 10_000] {
            let mus: Vec<f64> = (0..n).map(|_| 800.0 + 2800.0 * unit()).collect();
            let sigmas: Vec<f64> = (0..n).map(|_| 60.0 + 290.0 * unit()).collect();
            let started = Instant::now();
            let exact = direct(&mus, &sigmas, 1.0);
            let direct_time = started.elapsed();
            let started = Instant::now();
            let layout = Spectrum::worth_building(&mus, &sigmas, 1.0).expect("spectral");
            let spectral = layout.build(&mus, &sigmas).sums(&mus, &sigmas);
            let spectral_time = started.elapsed();
            let error = spectral
                .iter()
                .zip(&exact)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            println!(
                "N = {n}: {} modes, largest difference {error:.1e}, direct {direct_time:?}, \
                 Fourier {spectral_time:?}",
                layout.modes
            );
        }
    }
}
