//! Where k independent entrants finish, in the pool's performance model (docs/elo-mmr.md
//! "Predictions"; docs/predictions.md has the derivations): P(each finishes first), expected
//! ranks and the pairwise matrix. An entrant's performance has mean `μ` and variance `δ²`; it
//! is logistic with scale `s̄ = (√3/π)·δ` or Gaussian with std `δ`.
//!
//! Every figure is an integral over the performance axis of a sum or product shared by all
//! entrants, so one evaluation of every entrant's density and distribution at a node serves
//! all k integrals at once:
//! - P(i first) `= ∫ f_i Π_{j≠i} F_j`: the product is `exp(Σ_j ln F_j − ln F_i)`, O(k) per
//!   node instead of O(k²). Only `[L, U]` matters, with `L = max_i (μ_i − R s_i)`: below `L`
//!   the maximum of all performances has probability at most `F(−R)`.
//! - expected rank of i `= 1 + Σ_{j≠i} P(j ahead of i) = 1 + ∫ f_i Σ_{j≠i} (1 − F_j)`: one
//!   shared sum per node, no matrix.
//! - the matrix `P(i ahead of j) = ∫ f_i F_j` (logistic; the Gaussian one is closed form) is
//!   a product of two k × N tables of node values, each row restricted to the nodes where
//!   `f_i` has mass; O(k² N) multiply-adds, only when asked for.
//!
//! The nodes are a composite 15-point Kronrod rule on panels a few scales wide of the
//! narrowest entrant whose mass lies there (plus one panel across any gap where none has):
//! every integrand is analytic in a strip of half-width π scales (logistic) or entire
//! (Gaussian), so each panel's relative error is far below 1e-9. `reference` holds the first, adaptive
//! implementation, kept as the oracle the tests compare with.

#[cfg(test)]
mod reference;

use std::f64::consts::FRAC_1_SQRT_2;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::super::system::Model;
use super::super::{Error, LOGISTIC_SCALE};
use super::{beats, quadrature};
use crate::maths::normal;

/// Reach of an entrant's mass past its mean, in logistic scales: `e^(−32) < 1.3e-14`.
const LOGISTIC_REACH: f64 = 32.0;
/// Reach in Gaussian stds: `Φ(−9) < 1.2e-19`.
const GAUSSIAN_REACH: f64 = 9.0;
/// Panel width, in logistic scales of the narrowest entrant whose mass lies there (thinning
/// may stretch a panel to 1.5 times this): the integrands' poles lie π scales off the real
/// axis, so the 15-point Kronrod rule's error on such a panel is below 1e-11 of its value.
const LOGISTIC_PANEL: f64 = 3.0;
/// Panel width in Gaussian stds (up to 1.5 times this after thinning): the integrands are
/// entire but grow off the axis like `exp(y²/2)`, so panels stay narrower than logistic ones.
const GAUSSIAN_PANEL: f64 = 1.5;
/// Nodes evaluated per parallel task (and between checks of the cancel flag).
const NODES_PER_TASK: usize = 60;
/// Below this many entrant-node evaluations an integral runs on the calling thread: a small
/// prediction (a head-to-head runs inline on a request thread) must not queue on rayon's
/// global pool behind a round being rated.
const SEQUENTIAL_WORK: usize = 200_000;
/// Rows of the pairwise matrix per parallel task (and between checks of the cancel flag).
const ROWS_PER_TASK: usize = 8;
/// `ln √(2π)`.
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// One entrant's performance distribution, in the pool's model.
#[derive(Debug, Clone, Copy)]
struct Curve {
    model: Model,
    mean: f64,
    /// Gaussian std `δ`, or logistic scale `s̄`.
    scale: f64,
    ln_scale: f64,
}

impl Curve {
    fn new(model: Model, (mean, variance): (f64, f64)) -> Self {
        let std = variance.sqrt();
        let scale = match model {
            Model::Logistic => LOGISTIC_SCALE * std,
            Model::Gaussian => std,
        };
        Self {
            model,
            mean,
            scale,
            ln_scale: scale.ln(),
        }
    }

    /// Width of a panel where this curve's mass lies.
    fn panel(&self) -> f64 {
        let scales = match self.model {
            Model::Logistic => LOGISTIC_PANEL,
            Model::Gaussian => GAUSSIAN_PANEL,
        };
        scales * self.scale
    }

    fn reach(&self) -> f64 {
        let scales = match self.model {
            Model::Logistic => LOGISTIC_REACH,
            Model::Gaussian => GAUSSIAN_REACH,
        };
        scales * self.scale
    }

    fn lowest(&self) -> f64 {
        self.mean - self.reach()
    }

    fn highest(&self) -> f64 {
        self.mean + self.reach()
    }

    /// `(ln f(x), ln F(x))`, finite however far into the tails.
    fn ln_pdf_cdf(&self, x: f64) -> (f64, f64) {
        let z = (x - self.mean) / self.scale;
        match self.model {
            Model::Logistic => {
                let a = z.abs();
                let l = (-a).exp().ln_1p();
                (-a - 2.0 * l - self.ln_scale, z.min(0.0) - l)
            }
            Model::Gaussian => {
                let ln_cdf = if z >= 0.0 {
                    (-0.5 * libm::erfc(z * FRAC_1_SQRT_2)).ln_1p()
                } else {
                    // Φ(z) = ½ erfcx(−z/√2) e^(−z²/2): no underflow however far down.
                    (0.5 * normal::erfcx(-z * FRAC_1_SQRT_2)).ln() - 0.5 * z * z
                };
                (-0.5 * z * z - LN_SQRT_2PI - self.ln_scale, ln_cdf)
            }
        }
    }

    /// `(f(x), F(x), 1 − F(x))`, each to full relative precision.
    fn pdf_cdf_sf(&self, x: f64) -> (f64, f64, f64) {
        let z = (x - self.mean) / self.scale;
        match self.model {
            Model::Logistic => {
                let t = (-z.abs()).exp();
                let (near, far) = (1.0 / (1.0 + t), t / (1.0 + t));
                let pdf = near * far / self.scale;
                if z >= 0.0 {
                    (pdf, near, far)
                } else {
                    (pdf, far, near)
                }
            }
            Model::Gaussian => (
                (-0.5 * z * z - LN_SQRT_2PI - self.ln_scale).exp(),
                0.5 * libm::erfc(-z * FRAC_1_SQRT_2),
                0.5 * libm::erfc(z * FRAC_1_SQRT_2),
            ),
        }
    }
}

/// Quadrature nodes and weights, sorted by node.
struct Grid {
    nodes: Vec<f64>,
    weights: Vec<f64>,
}

impl Grid {
    /// The composite rule over `[lo, hi]`: breakpoints a [`Curve::panel`] apart for each
    /// curve across its reach, thinned so that two stay apart by at least half a panel of the
    /// curve that placed the later one, then 15 Kronrod nodes per panel.
    fn new(curves: &[Curve], lo: f64, hi: f64) -> Self {
        let mut candidates: Vec<(f64, f64)> = Vec::new();
        for curve in curves {
            let step = curve.panel();
            let from = curve.lowest().max(lo);
            let to = curve.highest().min(hi);
            if from > to {
                continue;
            }
            let first = ((from - curve.mean) / step).ceil() as i64;
            let last = ((to - curve.mean) / step).floor() as i64;
            candidates.extend((first..=last).map(|n| (curve.mean + n as f64 * step, step)));
        }
        candidates.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut breakpoints = vec![lo];
        for (x, step) in candidates {
            let last = breakpoints[breakpoints.len() - 1];
            if x - last >= 0.5 * step && x < hi {
                breakpoints.push(x);
            }
        }
        breakpoints.push(hi);
        let mut grid = Self {
            nodes: Vec::with_capacity(breakpoints.len() * quadrature::KRONROD_POINTS),
            weights: Vec::with_capacity(breakpoints.len() * quadrature::KRONROD_POINTS),
        };
        for panel in breakpoints.windows(2) {
            if panel[0] < panel[1] {
                quadrature::kronrod(panel[0], panel[1], |x, w| {
                    grid.nodes.push(x);
                    grid.weights.push(w);
                });
            }
        }
        grid
    }

    /// `Σ_n w_n g(x_n)` for a vector-valued `g` that adds `w · g(x)` into its first slice (the
    /// second is scratch space of the same length); run in parallel, summed in a fixed order
    /// so that the result does not depend on the threads.
    fn integrate(
        &self,
        dimension: usize,
        cancel: &AtomicBool,
        add: impl Fn(f64, f64, &mut [f64], &mut [(f64, f64)]) + Sync,
    ) -> Result<Vec<f64>, Error> {
        let task = |(nodes, weights): (&[f64], &[f64])| {
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            let mut sum = vec![0.0; dimension];
            let mut scratch = vec![(0.0, 0.0); dimension];
            for (&x, &w) in nodes.iter().zip(weights) {
                add(x, w, &mut sum, &mut scratch);
            }
            Some(sum)
        };
        // The same tasks summed in the same order either way: the result does not change.
        let partials: Vec<Option<Vec<f64>>> = if dimension * self.nodes.len() < SEQUENTIAL_WORK {
            self.nodes
                .chunks(NODES_PER_TASK)
                .zip(self.weights.chunks(NODES_PER_TASK))
                .map(task)
                .collect()
        } else {
            self.nodes
                .par_chunks(NODES_PER_TASK)
                .zip(self.weights.par_chunks(NODES_PER_TASK))
                .map(task)
                .collect()
        };
        let mut total = vec![0.0; dimension];
        for partial in partials {
            let partial = partial.ok_or(Error::Cancelled)?;
            for (t, p) in total.iter_mut().zip(partial) {
                *t += p;
            }
        }
        Ok(total)
    }
}

fn curves(model: Model, entrants: &[(f64, f64)]) -> Vec<Curve> {
    entrants.iter().map(|&e| Curve::new(model, e)).collect()
}

/// The range holding every entrant's mass.
fn full_range(curves: &[Curve]) -> (f64, f64) {
    let lo = curves
        .iter()
        .map(Curve::lowest)
        .fold(f64::INFINITY, f64::min);
    let hi = curves
        .iter()
        .map(Curve::highest)
        .fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// P(each entrant finishes first) for entrants given as performance `(mean, variance)`
/// (its rating system's [`Performance`](crate::Performance)); variances must be
/// positive. Accurate to 1e-9 each, and the result sums to 1 to rounding. Stops with
/// [`Error::Cancelled`] soon after `cancel` is set.
pub fn first_place_probabilities(
    model: Model,
    entrants: &[(f64, f64)],
    cancel: &AtomicBool,
) -> Result<Vec<f64>, Error> {
    let k = entrants.len();
    if k < 2 {
        return Ok(vec![1.0; k]);
    }
    let curves = curves(model, entrants);
    // Below the highest of the entrants' lowest points, the best performance lies with
    // probability at most F(−reach): nothing of any P(first) is there.
    let lo = curves
        .iter()
        .map(Curve::lowest)
        .fold(f64::NEG_INFINITY, f64::max);
    let (_, hi) = full_range(&curves);
    let grid = Grid::new(&curves, lo, hi);
    let raw = grid.integrate(k, cancel, |x, w, sum, logs| {
        for (log, curve) in logs.iter_mut().zip(&curves) {
            *log = curve.ln_pdf_cdf(x);
        }
        let all: f64 = logs.iter().map(|&(_, ln_cdf)| ln_cdf).sum();
        for (s, &(ln_pdf, ln_cdf)) in sum.iter_mut().zip(logs.iter()) {
            *s += w * (ln_pdf + (all - ln_cdf)).exp();
        }
    })?;
    // Ties have probability zero, so the exact values sum to 1; dividing by the computed sum
    // moves each by no more than the quadrature error.
    let total: f64 = raw.iter().sum();
    Ok(raw.iter().map(|p| (p / total).clamp(0.0, 1.0)).collect())
}

/// Expected rank (1 is first) of each entrant: `1 + Σ_{j≠i} P(j finishes ahead of i)`,
/// accurate to 1e-9; the ranks sum to `k(k+1)/2`. Stops with [`Error::Cancelled`] soon after
/// `cancel` is set.
pub fn expected_ranks(
    model: Model,
    entrants: &[(f64, f64)],
    cancel: &AtomicBool,
) -> Result<Vec<f64>, Error> {
    let k = entrants.len();
    if k < 2 {
        return Ok(vec![1.0; k]);
    }
    let curves = curves(model, entrants);
    let (lo, hi) = full_range(&curves);
    let grid = Grid::new(&curves, lo, hi);
    let ahead = grid.integrate(k, cancel, |x, w, sum, values| {
        for (value, curve) in values.iter_mut().zip(&curves) {
            let (pdf, _, sf) = curve.pdf_cdf_sf(x);
            *value = (pdf, sf);
        }
        let ahead: f64 = values.iter().map(|&(_, sf)| sf).sum();
        for (s, &(pdf, sf)) in sum.iter_mut().zip(values.iter()) {
            *s += w * pdf * (ahead - sf);
        }
    })?;
    let last = k as f64;
    Ok(ahead
        .into_iter()
        .map(|b| (1.0 + b).clamp(1.0, last))
        .collect())
}

/// The k×k matrix whose entry `[i][j]` is P(entrant `i` finishes ahead of entrant `j`),
/// exact in the pool's model (`[i][j] + [j][i] = 1`; the diagonal, an entrant against an
/// independent copy of itself, is ½). In the Gaussian model an entry equals [`beats`]; in
/// the logistic model it is the integral of which [`beats`] is the closed-form approximation,
/// and for two entrants it equals their [`first_place_probabilities`]. O(k²): computed only
/// when asked for. Stops with [`Error::Cancelled`] soon after `cancel` is set.
pub fn pairwise_matrix(
    model: Model,
    entrants: &[(f64, f64)],
    cancel: &AtomicBool,
) -> Result<Vec<Vec<f64>>, Error> {
    let k = entrants.len();
    let upper: Vec<Option<Vec<f64>>> = match model {
        Model::Gaussian => (0..k)
            .into_par_iter()
            .with_min_len(ROWS_PER_TASK)
            .map(|i| {
                (!cancel.load(Ordering::Relaxed)).then(|| {
                    entrants[i + 1..]
                        .iter()
                        .map(|&b| beats(model, entrants[i], b))
                        .collect()
                })
            })
            .collect(),
        Model::Logistic => logistic_upper_triangle(model, entrants, cancel),
    };
    let mut matrix = vec![vec![0.5; k]; k];
    for (i, row) in upper.into_iter().enumerate() {
        for (offset, p) in row.ok_or(Error::Cancelled)?.into_iter().enumerate() {
            let j = i + 1 + offset;
            matrix[i][j] = p;
            matrix[j][i] = 1.0 - p;
        }
    }
    Ok(matrix)
}

/// Row `i` holds `P(i ahead of j) = ∫ f_i F_j` for every `j > i`: dot products of the
/// weighted densities of `i` with the distributions of `j` over the nodes where `i` has mass.
fn logistic_upper_triangle(
    model: Model,
    entrants: &[(f64, f64)],
    cancel: &AtomicBool,
) -> Vec<Option<Vec<f64>>> {
    let curves = curves(model, entrants);
    let (lo, hi) = full_range(&curves);
    let grid = Grid::new(&curves, lo, hi);
    let n = grid.nodes.len();
    let mut densities = vec![0.0; curves.len() * n];
    let mut cdfs = vec![0.0; curves.len() * n];
    densities
        .par_chunks_mut(n)
        .zip(cdfs.par_chunks_mut(n))
        .zip(&curves)
        .for_each(|((density, cdf), curve)| {
            for (m, (&x, &w)) in grid.nodes.iter().zip(&grid.weights).enumerate() {
                let (pdf, f, _) = curve.pdf_cdf_sf(x);
                density[m] = w * pdf;
                cdf[m] = f;
            }
        });
    (0..curves.len())
        .into_par_iter()
        .with_min_len(ROWS_PER_TASK)
        .map(|i| {
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            let curve = &curves[i];
            let from = grid.nodes.partition_point(|&x| x < curve.lowest());
            let to = grid.nodes.partition_point(|&x| x <= curve.highest());
            let density = &densities[i * n + from..i * n + to];
            Some(
                (i + 1..curves.len())
                    .map(|j| dot(density, &cdfs[j * n + from..j * n + to]).clamp(0.0, 1.0))
                    .collect(),
            )
        })
        .collect()
}

/// `Σ a_m b_m` with four running sums, which the compiler turns into vector instructions.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sums = [0.0; 4];
    let (a_chunks, b_chunks) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..4 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A cancel flag nobody sets.
    static GO: AtomicBool = AtomicBool::new(false);

    fn p_first(model: Model, entrants: &[(f64, f64)]) -> Vec<f64> {
        first_place_probabilities(model, entrants, &GO).expect("never cancelled")
    }

    fn ranks(model: Model, entrants: &[(f64, f64)]) -> Vec<f64> {
        expected_ranks(model, entrants, &GO).expect("never cancelled")
    }

    fn matrix(model: Model, entrants: &[(f64, f64)]) -> Vec<Vec<f64>> {
        pairwise_matrix(model, entrants, &GO).expect("never cancelled")
    }

    fn assert_close(what: &str, fast: &[f64], slow: &[f64]) {
        for (i, (a, b)) in fast.iter().zip(slow).enumerate() {
            assert!(
                (a - b).abs() < ACCURACY,
                "{what}[{i}]: {a} vs the reference's {b}"
            );
        }
    }

    /// Accuracy promised for every probability.
    const ACCURACY: f64 = 1e-9;

    fn variant() -> impl Strategy<Value = Model> {
        prop_oneof![Just(Model::Logistic), Just(Model::Gaussian)]
    }

    /// Entrants as `(mean, variance)`: means close together or up to 1.5e5 apart, stds from
    /// a lone certain player's to a large team's.
    fn entrants(counts: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(f64, f64)>> {
        (
            prop::collection::vec((-3_000.0..3_000.0f64, 50.0..800.0f64), counts),
            prop_oneof![Just(1.0), Just(50.0)],
        )
            .prop_map(|(raw, spread)| {
                raw.into_iter()
                    .map(|(mean, std)| (mean * spread, std * std))
                    .collect()
            })
    }

    /// `∫ f_i Π_{j≠i} F_j` by the midpoint rule on a fine grid, with the plain pdf and cdf.
    fn riemann_first_place(entrants: &[(f64, f64)]) -> Vec<f64> {
        const REACH: f64 = 12.0;
        const STEPS_PER_STD: f64 = 40.0;
        let stds: Vec<f64> = entrants.iter().map(|e| e.1.sqrt()).collect();
        let lo = entrants
            .iter()
            .zip(&stds)
            .map(|(e, s)| e.0 - REACH * s)
            .fold(f64::INFINITY, f64::min);
        let hi = entrants
            .iter()
            .zip(&stds)
            .map(|(e, s)| e.0 + REACH * s)
            .fold(f64::NEG_INFINITY, f64::max);
        let h = stds.iter().copied().fold(f64::INFINITY, f64::min) / STEPS_PER_STD;
        let steps = ((hi - lo) / h).ceil() as usize;
        let mut sums = vec![0.0; entrants.len()];
        for step in 0..steps {
            let x = lo + (step as f64 + 0.5) * h;
            for (i, sum) in sums.iter_mut().enumerate() {
                let mut value = normal::pdf((x - entrants[i].0) / stds[i]) / stds[i];
                for (j, other) in entrants.iter().enumerate() {
                    if j != i {
                        value *= normal::cdf((x - other.0) / stds[j]);
                    }
                }
                *sum += value * h;
            }
        }
        sums
    }

    #[test]
    fn means_1e5_apart_give_certainty_and_never_nan() {
        for variant in [Model::Logistic, Model::Gaussian] {
            let entrants = [
                (0.0, 250.0 * 250.0),
                (1e5, 400.0 * 400.0),
                (-1e5, 210.0 * 210.0),
            ];
            let p = p_first(variant, &entrants);
            assert!(
                (p[1] - 1.0).abs() < ACCURACY && p[0] < ACCURACY && p[2] < ACCURACY,
                "{variant:?}: {p:?}"
            );
            let ranks = ranks(variant, &entrants);
            for (rank, want) in ranks.iter().zip([2.0, 1.0, 3.0]) {
                assert!((rank - want).abs() < ACCURACY, "{variant:?}: {ranks:?}");
            }
        }
    }

    #[test]
    fn sixty_four_identical_entrants_each_win_one_time_in_sixty_four() {
        const COUNT: usize = 64;
        for variant in [Model::Logistic, Model::Gaussian] {
            let p = p_first(variant, &[(1500.0, 9e4); COUNT]);
            for pi in p {
                assert!(
                    (pi - 1.0 / COUNT as f64).abs() < ACCURACY,
                    "{variant:?}: {pi}"
                );
            }
        }
    }

    #[test]
    fn the_logistic_closed_form_stays_within_a_point_and_a_half_of_the_exact_value() {
        // The largest gap seen on this grid is 0.0102 (equal variances, means one std apart).
        const APPROXIMATION_GAP: f64 = 0.015;
        let model = Model::Logistic;
        for gap in [0.0, 50.0, 150.0, 300.0, 600.0, 1_200.0, 3_000.0] {
            for (var_a, var_b) in [(9e4, 9e4), (4.5e4, 3e5), (4e4, 1e6)] {
                let (a, b) = ((gap, var_a), (0.0, var_b));
                let exact = matrix(model, &[a, b])[0][1];
                let closed = beats(model, a, b);
                assert!(
                    (exact - closed).abs() < APPROXIMATION_GAP,
                    "gap {gap}, variances {var_a} {var_b}: {exact} vs {closed}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn first_place_probabilities_lie_in_0_1_and_sum_to_1(
            variant in variant(),
            entrants in entrants(2..9),
        ) {
            let p = p_first(variant, &entrants);
            prop_assert!(p.iter().all(|pi| (0.0..=1.0).contains(pi)), "{:?}", p);
            prop_assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{:?}", p);
        }

        #[test]
        fn the_pairwise_matrix_holds_complementary_probabilities(
            variant in variant(),
            entrants in entrants(2..7),
        ) {
            let m = matrix(variant, &entrants);
            for (i, row) in m.iter().enumerate() {
                for (j, &p) in row.iter().enumerate() {
                    prop_assert!((0.0..=1.0).contains(&p), "[{}][{}] = {}", i, j, p);
                    prop_assert!((p + m[j][i] - 1.0).abs() < 1e-12, "[{}][{}] = {}", i, j, p);
                }
            }
        }

        #[test]
        fn for_two_entrants_p_first_is_the_probability_of_beating_the_other(
            variant in variant(),
            entrants in entrants(2..3),
        ) {
            let model = variant;
            let p = p_first(model, &entrants);
            let m = matrix(model, &entrants);
            prop_assert!((p[0] - m[0][1]).abs() < ACCURACY, "{} vs {}", p[0], m[0][1]);
            prop_assert!((p[1] - m[1][0]).abs() < ACCURACY, "{} vs {}", p[1], m[1][0]);
            if variant == Model::Gaussian {
                let closed = beats(model, entrants[0], entrants[1]);
                prop_assert!((p[0] - closed).abs() < ACCURACY, "{} vs {}", p[0], closed);
            }
        }

        #[test]
        fn expected_ranks_sum_to_k_times_k_plus_1_over_2(
            variant in variant(),
            entrants in entrants(2..7),
        ) {
            let ranks = ranks(variant, &entrants);
            let k = entrants.len() as f64;
            prop_assert!((ranks.iter().sum::<f64>() - k * (k + 1.0) / 2.0).abs() < 1e-9);
            prop_assert!(ranks.iter().all(|r| (1.0..=k).contains(r)), "{:?}", ranks);
        }

        #[test]
        fn equal_entrants_have_equal_chances(
            variant in variant(),
            count in 2..12usize,
            mean in -1e5..1e5f64,
            std in 50.0..2_000.0f64,
        ) {
            let entrants = vec![(mean, std * std); count];
            let p = p_first(variant, &entrants);
            let ranks = ranks(variant, &entrants);
            for (pi, rank) in p.iter().zip(&ranks) {
                prop_assert!((pi - 1.0 / count as f64).abs() < 1e-12, "{:?}", p);
                prop_assert!((rank - (count as f64 + 1.0) / 2.0).abs() < 1e-12, "{:?}", ranks);
            }
        }

        #[test]
        fn shifting_every_mean_changes_no_probability(
            variant in variant(),
            entrants in entrants(2..6),
            shift in -1e4..1e4f64,
        ) {
            let model = variant;
            let shifted: Vec<(f64, f64)> = entrants.iter().map(|&(m, v)| (m + shift, v)).collect();
            let (p, q) = (
                p_first(model, &entrants),
                p_first(model, &shifted),
            );
            for (a, b) in p.iter().zip(&q) {
                prop_assert!((a - b).abs() < ACCURACY, "{:?} vs {:?}", p, q);
            }
            let (m, n) = (matrix(model, &entrants), matrix(model, &shifted));
            for (a, b) in m.iter().flatten().zip(n.iter().flatten()) {
                prop_assert!((a - b).abs() < ACCURACY, "{:?} vs {:?}", m, n);
            }
        }

        #[test]
        fn listing_entrants_in_another_order_permutes_their_probabilities(
            variant in variant(),
            entrants in entrants(2..7),
        ) {
            let model = variant;
            let reversed: Vec<(f64, f64)> = entrants.iter().rev().copied().collect();
            let p = p_first(model, &entrants);
            let q = p_first(model, &reversed);
            for (a, b) in p.iter().zip(q.iter().rev()) {
                prop_assert!((a - b).abs() < ACCURACY, "{:?} vs {:?}", p, q);
            }
        }
    }

    #[test]
    fn a_set_cancel_flag_stops_every_figure() {
        let stop = AtomicBool::new(true);
        let entrants = [(1500.0, 9e4); 200];
        for variant in [Model::Logistic, Model::Gaussian] {
            let model = variant;
            assert_eq!(
                first_place_probabilities(model, &entrants, &stop),
                Err(Error::Cancelled)
            );
            assert_eq!(
                expected_ranks(model, &entrants, &stop),
                Err(Error::Cancelled)
            );
            assert_eq!(
                pairwise_matrix(model, &entrants, &stop),
                Err(Error::Cancelled)
            );
        }
    }

    #[test]
    fn sixty_spread_entrants_agree_with_the_reference_quadrature() {
        // Ratings spread as in a real pool, with newcomers' and veterans' uncertainties.
        let entrants: Vec<(f64, f64)> = (0..60)
            .map(|i| {
                let i = f64::from(i);
                let mean = 1500.0 + 900.0 * (i * 0.37).sin() + 15.0 * i;
                let std = 210.0 + 150.0 * (i * 0.11).cos().abs();
                (mean, std * std)
            })
            .collect();
        for variant in [Model::Logistic, Model::Gaussian] {
            let model = variant;
            let slow_matrix = reference::pairwise_matrix(model, &entrants);
            assert_close(
                "P(first)",
                &p_first(model, &entrants),
                &reference::first_place_probabilities(model, &entrants),
            );
            assert_close(
                "expected rank",
                &ranks(model, &entrants),
                &reference::expected_ranks(&slow_matrix),
            );
            let fast_matrix = matrix(model, &entrants);
            for (fast, slow) in fast_matrix.iter().zip(&slow_matrix) {
                assert_close("pairwise", fast, slow);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn every_figure_agrees_with_the_reference_quadrature(
            variant in variant(),
            entrants in entrants(2..9),
        ) {
            let model = variant;
            let slow_matrix = reference::pairwise_matrix(model, &entrants);
            assert_close(
                "P(first)",
                &p_first(model, &entrants),
                &reference::first_place_probabilities(model, &entrants),
            );
            assert_close("expected rank", &ranks(model, &entrants), &reference::expected_ranks(&slow_matrix));
            for (fast, slow) in matrix(model, &entrants).iter().zip(&slow_matrix) {
                assert_close("pairwise", fast, slow);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        #[test]
        fn three_gaussian_entrants_match_a_fine_riemann_sum(
            raw in prop::collection::vec((-1_500.0..1_500.0f64, 50.0..800.0f64), 3..4),
        ) {
            let entrants: Vec<(f64, f64)> = raw.iter().map(|&(m, s)| (m, s * s)).collect();
            let p = p_first(Model::Gaussian, &entrants);
            let brute = riemann_first_place(&entrants);
            for (a, b) in p.iter().zip(&brute) {
                prop_assert!((a - b).abs() < ACCURACY, "{:?} vs {:?}", p, brute);
            }
        }
    }
}
