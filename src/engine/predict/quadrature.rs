//! Gauss–Kronrod quadrature (the 7-point Gauss rule and its 15-point Kronrod extension). It
//! owns only the numerics: what is integrated, and where the breakpoints go, is the caller's
//! business. [`kronrod`] gives one panel's nodes and weights for the composite rule the
//! placing figures use. The adaptive integrator of a vector-valued integrand (the panel whose
//! error estimate is largest is halved until the estimates sum to the tolerance) serves the
//! tests only: the reference implementation the composite rule is checked against runs on it.

#[cfg(test)]
use std::cmp::Ordering;
#[cfg(test)]
use std::collections::BinaryHeap;

/// Abscissae of the 15-point Kronrod rule on `[-1, 1]`, largest first; the rule uses each
/// with both signs. Those at odd indices are the nodes of the 7-point Gauss rule.
const KRONROD_NODES: [f64; 8] = [
    0.991_455_371_120_812_6,
    0.949_107_912_342_758_5,
    0.864_864_423_359_769_1,
    0.741_531_185_599_394_4,
    0.586_087_235_467_691_1,
    0.405_845_151_377_397_2,
    0.207_784_955_007_898_5,
    0.0,
];
/// Kronrod weights, aligned with [`KRONROD_NODES`].
const KRONROD_WEIGHTS: [f64; 8] = [
    0.022_935_322_010_529_225,
    0.063_092_092_629_978_56,
    0.104_790_010_322_250_18,
    0.140_653_259_715_525_92,
    0.169_004_726_639_267_9,
    0.190_350_578_064_785_41,
    0.204_432_940_075_298_89,
    0.209_482_141_084_727_83,
];
/// Nodes of one panel's Kronrod rule.
pub(super) const KRONROD_POINTS: usize = 15;

/// Calls `node(x, w)` for each of the 15 Kronrod nodes `x` of `[lo, hi]`, in increasing
/// order, with its weight `w` (the rule's weights scaled to the panel).
pub(super) fn kronrod(lo: f64, hi: f64, mut node: impl FnMut(f64, f64)) {
    let center = 0.5 * (lo + hi);
    let half = 0.5 * (hi - lo);
    for (&x, &w) in KRONROD_NODES.iter().zip(&KRONROD_WEIGHTS) {
        node(center - half * x, half * w);
    }
    for (&x, &w) in KRONROD_NODES.iter().zip(&KRONROD_WEIGHTS).rev().skip(1) {
        node(center + half * x, half * w);
    }
}

#[cfg(test)]
/// Gauss weights at `KRONROD_NODES[1]`, `[3]`, `[5]` and `[7]`.
const GAUSS_WEIGHTS: [f64; 4] = [
    0.129_484_966_168_869_7,
    0.279_705_391_489_276_67,
    0.381_830_050_505_118_9,
    0.417_959_183_673_469_4,
];
#[cfg(test)]
/// Most panels ever held: a bound on the work for an integrand whose error estimate cannot
/// be met (the smooth, bounded prediction integrands meet theirs with a few hundred).
const MAX_PANELS: usize = 16_384;

#[cfg(test)]
/// One piece of the interval with its rule estimate.
struct Panel {
    lo: f64,
    hi: f64,
    values: Vec<f64>,
    /// Largest `|Kronrod − Gauss|` over the components: a pessimistic bound on the error of
    /// the Kronrod estimate.
    error: f64,
}

#[cfg(test)]
impl PartialEq for Panel {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

#[cfg(test)]
impl Eq for Panel {}

#[cfg(test)]
impl PartialOrd for Panel {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
impl Ord for Panel {
    fn cmp(&self, other: &Self) -> Ordering {
        self.error
            .total_cmp(&other.error)
            .then(other.lo.total_cmp(&self.lo))
    }
}

#[cfg(test)]
/// Integrates `integrand` (which writes its `dimension` values at `x` into the slice) from
/// the first to the last of the sorted `breakpoints`, starting with one panel between each
/// consecutive pair, until the summed error estimates are at most `tolerance`.
pub(super) fn integrate(
    breakpoints: &[f64],
    dimension: usize,
    tolerance: f64,
    mut integrand: impl FnMut(f64, &mut [f64]),
) -> Vec<f64> {
    let mut scratch = vec![0.0; dimension];
    let mut heap = BinaryHeap::new();
    let mut total_error = 0.0;
    for pair in breakpoints.windows(2) {
        if pair[0] < pair[1] {
            let panel = estimate(pair[0], pair[1], &mut scratch, &mut integrand);
            total_error += panel.error;
            heap.push(panel);
        }
    }
    while total_error > tolerance && heap.len() < MAX_PANELS {
        let Some(mut worst) = heap.pop() else {
            break;
        };
        if worst.error <= 0.0 {
            heap.push(worst);
            break;
        }
        let mid = 0.5 * (worst.lo + worst.hi);
        total_error -= worst.error;
        if worst.lo < mid && mid < worst.hi {
            let left = estimate(worst.lo, mid, &mut scratch, &mut integrand);
            let right = estimate(mid, worst.hi, &mut scratch, &mut integrand);
            total_error += left.error + right.error;
            heap.push(left);
            heap.push(right);
        } else {
            // Two ulps wide: nothing finer exists, so its estimate is final.
            worst.error = 0.0;
            heap.push(worst);
        }
    }
    let mut panels = heap.into_vec();
    panels.sort_by(|a, b| a.lo.total_cmp(&b.lo));
    let mut sum = vec![0.0; dimension];
    for panel in &panels {
        for (s, v) in sum.iter_mut().zip(&panel.values) {
            *s += v;
        }
    }
    sum
}

#[cfg(test)]
/// Both rules on `[lo, hi]`.
fn estimate(
    lo: f64,
    hi: f64,
    scratch: &mut [f64],
    integrand: &mut impl FnMut(f64, &mut [f64]),
) -> Panel {
    let center = 0.5 * (lo + hi);
    let half = 0.5 * (hi - lo);
    let mut kronrod = vec![0.0; scratch.len()];
    let mut gauss = vec![0.0; scratch.len()];
    for (k, (&node, &weight)) in KRONROD_NODES.iter().zip(&KRONROD_WEIGHTS).enumerate() {
        let points: &[f64] = if node == 0.0 {
            &[center]
        } else {
            &[center - half * node, center + half * node]
        };
        for &x in points {
            integrand(x, scratch);
            for (sum, &v) in kronrod.iter_mut().zip(scratch.iter()) {
                *sum += weight * v;
            }
            if k % 2 == 1 {
                let gauss_weight = GAUSS_WEIGHTS[k / 2];
                for (sum, &v) in gauss.iter_mut().zip(scratch.iter()) {
                    *sum += gauss_weight * v;
                }
            }
        }
    }
    let mut error: f64 = 0.0;
    for (k, g) in kronrod.iter_mut().zip(&gauss) {
        *k *= half;
        error = error.max((*k - g * half).abs());
    }
    Panel {
        lo,
        hi,
        values: kronrod,
        error,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Highest polynomial degree the 15-point Kronrod rule integrates exactly.
    const KRONROD_DEGREE: i32 = 22;
    /// Highest polynomial degree the 7-point Gauss rule integrates exactly.
    const GAUSS_DEGREE: i32 = 13;

    #[test]
    fn both_rules_integrate_every_monomial_of_their_degree_exactly() {
        for degree in 0..=KRONROD_DEGREE {
            let exact = if degree % 2 == 0 {
                2.0 / f64::from(degree + 1)
            } else {
                0.0
            };
            let mut scratch = [0.0];
            let panel = estimate(-1.0, 1.0, &mut scratch, &mut |x: f64, out: &mut [f64]| {
                out[0] = x.powi(degree);
            });
            assert!(
                (panel.values[0] - exact).abs() < 1e-15,
                "Kronrod, degree {degree}: {} vs {exact}",
                panel.values[0]
            );
            if degree <= GAUSS_DEGREE {
                assert!(
                    panel.error < 1e-15,
                    "Gauss, degree {degree}: error {}",
                    panel.error
                );
            }
        }
    }

    #[test]
    fn a_sharp_step_between_breakpoints_is_resolved() {
        let step = 0.123_456_789;
        let result = integrate(&[-10.0, 10.0], 1, 1e-13, |x, out| {
            out[0] = if x > step { 1.0 } else { 0.0 };
        });
        assert!((result[0] - (10.0 - step)).abs() < 1e-9, "{}", result[0]);
    }

    proptest! {
        #[test]
        fn gaussian_bumps_integrate_to_their_mass(
            center in -1e4..1e4f64,
            width in 1e-3..1e3f64,
            mass in 0.0..10.0f64,
        ) {
            let reach = 12.0 * width;
            let result = integrate(&[center - reach, center, center + reach], 1, 1e-13, |x, out| {
                let z = (x - center) / width;
                out[0] = mass * (-0.5 * z * z).exp() / (width * (2.0 * std::f64::consts::PI).sqrt());
            });
            // Near a center far from 0, `x - center` is known to an ulp of the center only,
            // which a narrow width magnifies: the integrand itself is off by that much.
            let resolution = 10.0 * f64::EPSILON * center.abs() / width;
            prop_assert!(
                (result[0] - mass).abs() < 1e-11 + mass * resolution,
                "{} vs {}", result[0], mass
            );
        }
    }
}
