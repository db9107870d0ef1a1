//! The reference the fast placing figures are checked against: the first implementation,
//! slow and simple. P(each finishes first) is the integral `∫ f_i(x) Π_{j≠i} F_j(x) dx`, the
//! pairwise matrix is k² separate two-entrant integrals, and expected ranks are sums over the
//! matrix.
//!
//! The integrands are evaluated in log space (a product of many tiny cdfs underflows long
//! before the probability it stands for is negligible) and integrated by adaptive
//! Gauss–Kronrod over a range that holds every entrant's mass, with a breakpoint wherever an
//! entrant's density or cdf changes shape, so that no feature hides between the first nodes
//! however far apart the means are.

use std::f64::consts::FRAC_1_SQRT_2;

use super::super::super::system::Model;
use super::super::super::LOGISTIC_SCALE;
use super::super::{beats, quadrature};
use crate::maths::normal;

/// Reach of the integration range past an entrant's mean, in Gaussian stds: `Φ(−9) < 1e-18`.
const GAUSSIAN_REACH: f64 = 9.0;
/// Reach past an entrant's mean in logistic scales: `e^(−40) < 1e-17`.
const LOGISTIC_REACH: f64 = 40.0;
/// Breakpoints placed around every entrant's mean, in units of its own scale: each density
/// bump and cdf step is then cut into panels no wider than its features.
const FEATURE_OFFSETS: [f64; 13] = [
    -32.0, -16.0, -8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0,
];
/// Summed error estimate allowed over all probabilities: far below the 1e-9 promised, since
/// probabilities near rounding level must still sum to 1.
const TOLERANCE: f64 = 1e-13;
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

    fn reach(&self) -> f64 {
        match self.model {
            Model::Logistic => LOGISTIC_REACH,
            Model::Gaussian => GAUSSIAN_REACH,
        }
    }

    fn ln_pdf(&self, x: f64) -> f64 {
        let z = (x - self.mean) / self.scale;
        match self.model {
            Model::Logistic => -z.abs() - 2.0 * (-z.abs()).exp().ln_1p() - self.ln_scale,
            Model::Gaussian => -0.5 * z * z - LN_SQRT_2PI - self.ln_scale,
        }
    }

    fn ln_cdf(&self, x: f64) -> f64 {
        let z = (x - self.mean) / self.scale;
        match self.model {
            Model::Logistic if z >= 0.0 => -(-z).exp().ln_1p(),
            Model::Logistic => z - z.exp().ln_1p(),
            Model::Gaussian if z >= 0.0 => (-0.5 * libm::erfc(z * FRAC_1_SQRT_2)).ln_1p(),
            // Φ(z) = ½ erfcx(−z/√2) e^(−z²/2): no underflow however far down the tail.
            Model::Gaussian => (0.5 * normal::erfcx(-z * FRAC_1_SQRT_2)).ln() - 0.5 * z * z,
        }
    }
}

/// P(each entrant finishes first) for entrants given as performance `(mean, variance)`
/// (its rating system's [`Performance`](crate::Performance)); variances must be
/// positive. Accurate to 1e-9 each, and the result sums to 1 to rounding.
#[must_use]
pub(super) fn first_place_probabilities(model: Model, entrants: &[(f64, f64)]) -> Vec<f64> {
    if entrants.len() < 2 {
        return vec![1.0; entrants.len()];
    }
    let curves: Vec<Curve> = entrants.iter().map(|&e| Curve::new(model, e)).collect();
    let lo = curves
        .iter()
        .map(|c| c.mean - c.reach() * c.scale)
        .fold(f64::INFINITY, f64::min);
    let hi = curves
        .iter()
        .map(|c| c.mean + c.reach() * c.scale)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut breakpoints = vec![lo, hi];
    for curve in &curves {
        breakpoints.extend(
            FEATURE_OFFSETS
                .iter()
                .map(|offset| curve.mean + offset * curve.scale)
                .filter(|&x| lo < x && x < hi),
        );
    }
    breakpoints.sort_by(f64::total_cmp);
    breakpoints.dedup();

    let k = curves.len();
    let mut ln_cdfs = vec![0.0; k];
    // suffix[i] = Σ_{j ≥ i} ln F_j: with a running prefix, Σ_{j ≠ i} ln F_j without the
    // cancellation of subtracting ln F_i from the full sum.
    let mut suffix = vec![0.0; k + 1];
    let raw = quadrature::integrate(&breakpoints, k, TOLERANCE, |x, out| {
        for (ln_cdf, curve) in ln_cdfs.iter_mut().zip(&curves) {
            *ln_cdf = curve.ln_cdf(x);
        }
        for i in (0..k).rev() {
            suffix[i] = suffix[i + 1] + ln_cdfs[i];
        }
        let mut prefix = 0.0;
        for (i, curve) in curves.iter().enumerate() {
            out[i] = (curve.ln_pdf(x) + prefix + suffix[i + 1]).exp();
            prefix += ln_cdfs[i];
        }
    });
    // Ties have probability zero, so the exact values sum to 1; dividing by the computed sum
    // moves each by no more than the quadrature error.
    let total: f64 = raw.iter().sum();
    raw.iter().map(|p| (p / total).clamp(0.0, 1.0)).collect()
}

/// The k×k matrix whose entry `[i][j]` is P(entrant `i` finishes ahead of entrant `j`),
/// exact in the pool's model (`[i][j] + [j][i] = 1`; the diagonal, an entrant against an
/// independent copy of itself, is ½). In the Gaussian model an entry equals [`beats`]; in
/// the logistic model it is the integral of which [`beats`] is the closed-form approximation,
/// and for two entrants it equals their [`first_place_probabilities`].
#[must_use]
pub(super) fn pairwise_matrix(model: Model, entrants: &[(f64, f64)]) -> Vec<Vec<f64>> {
    let k = entrants.len();
    let mut matrix = vec![vec![0.5; k]; k];
    for i in 0..k {
        for j in i + 1..k {
            let (ahead, behind) = match model {
                Model::Gaussian => (
                    beats(model, entrants[i], entrants[j]),
                    beats(model, entrants[j], entrants[i]),
                ),
                Model::Logistic => {
                    let p = first_place_probabilities(model, &[entrants[i], entrants[j]]);
                    (p[0], p[1])
                }
            };
            matrix[i][j] = ahead;
            matrix[j][i] = behind;
        }
    }
    matrix
}

/// Expected rank (1 is first) of each entrant: `1 + Σ_{j≠i} P(j finishes ahead of i)`, from
/// a [`pairwise_matrix`]. The ranks sum to `k(k+1)/2`.
#[must_use]
pub(super) fn expected_ranks(pairwise: &[Vec<f64>]) -> Vec<f64> {
    (0..pairwise.len())
        .map(|i| {
            1.0 + pairwise
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, row)| row[i])
                .sum::<f64>()
        })
        .collect()
}
