//! Chebyshev interpolation on an interval: fit from values at the Chebyshev points, evaluate
//! value and derivative with Clenshaw's recurrence. The performance solvers use it to replace
//! a sum over every entrant by a polynomial that agrees with it to rounding level, so that
//! finding each entrant's root costs O(degree) per step instead of O(entrants).

use std::f64::consts::PI;
use std::sync::LazyLock;

use crate::maths::lanes::{vectorized, WithSimd};

/// Chebyshev points per interpolated interval.
pub(crate) const POINTS: usize = 32;

/// `cos(π (m + ½) / n)`: the points on `[-1, 1]`, highest first.
static POINT_COSINES: LazyLock<[f64; POINTS]> =
    LazyLock::new(|| std::array::from_fn(|m| (PI * (m as f64 + 0.5) / POINTS as f64).cos()));

/// `cos(π k (m + ½) / n)`: `T_k` at point `m`. Every fit needs all of them, and computing
/// them took a few percent of a replay's time.
static FIT_COSINES: LazyLock<[[f64; POINTS]; POINTS]> = LazyLock::new(|| {
    std::array::from_fn(|k| {
        std::array::from_fn(|m| (PI * k as f64 * (m as f64 + 0.5) / POINTS as f64).cos())
    })
});

/// An interpolant `Σ c_k T_k(t)` with `t` the point mapped from `[a, b]` to `[-1, 1]`.
#[derive(Debug, Clone)]
pub(crate) struct Chebyshev {
    a: f64,
    b: f64,
    coeffs: Vec<f64>,
    /// Coefficients of the derivative with respect to `t`.
    derivative: Vec<f64>,
}

/// A sum over at most this many terms is taken exactly wherever it is needed: O(N²) work
/// that, this small, costs less than an interpolant's few hundred exact sums.
const DIRECT_LIMIT: usize = 64;

/// Equal leaves to interpolate a one-variable sum on: `count` of them, `width` wide, from
/// `start`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Leaves {
    pub(crate) start: f64,
    pub(crate) width: f64,
    pub(crate) count: usize,
}

impl Leaves {
    /// The fewest leaves `width` wide from `start` that reach `end` (at least one).
    pub(crate) fn covering(start: f64, end: f64, width: f64) -> Self {
        Self {
            start,
            width,
            count: (((end - start) / width).ceil() as usize).max(1),
        }
    }

    /// Whether interpolating a sum of `terms` terms on these leaves costs less than summing it
    /// exactly at `terms` points: not for a small sum, nor for so many leaves (points spread
    /// over many multiples of the width) that fitting them costs more than `terms` exact sums.
    /// Either way the leaves' memory stays bounded, whatever the parameters.
    pub(crate) fn worth_fitting(&self, terms: usize) -> bool {
        terms > DIRECT_LIMIT && self.count.saturating_mul(POINTS) < terms
    }

    /// Leaf `k`'s ends.
    pub(crate) fn bounds(&self, k: usize) -> (f64, f64) {
        (
            self.start + k as f64 * self.width,
            self.start + (k + 1) as f64 * self.width,
        )
    }

    /// The end of the last leaf.
    pub(crate) fn end(&self) -> f64 {
        self.start + self.count as f64 * self.width
    }

    /// The leaf holding `x`, ends included (clamped to the first and the last).
    pub(crate) fn index(&self, x: f64) -> usize {
        let k = ((x - self.start) / self.width).floor().max(0.0) as usize;
        k.min(self.count - 1)
    }
}

/// The Chebyshev points of the first kind on `[a, b]`, in the order [`Chebyshev::fit`]
/// expects their values.
pub(crate) fn nodes(a: f64, b: f64) -> [f64; POINTS] {
    let (mid, half) = (0.5 * (a + b), 0.5 * (b - a));
    POINT_COSINES.map(|cosine| mid + half * cosine)
}

impl Chebyshev {
    /// Fits the interpolant through `values` taken at `nodes(a, b)`.
    pub(crate) fn fit(a: f64, b: f64, values: &[f64; POINTS]) -> Self {
        let n = POINTS;
        let scale = 2.0 / n as f64;
        let mut coeffs: Vec<f64> = FIT_COSINES
            .iter()
            .map(|cosines| {
                let sum: f64 = values.iter().zip(cosines).map(|(v, c)| v * c).sum();
                scale * sum
            })
            .collect();
        if let Some(c0) = coeffs.first_mut() {
            *c0 *= 0.5;
        }
        let mut derivative = vec![0.0; n];
        // d_{k-1} = d_{k+1} + 2k c_k, then halve d_0 (standard derivative recurrence).
        for k in (1..n).rev() {
            let above = if k + 1 < n { derivative[k + 1] } else { 0.0 };
            derivative[k - 1] = above + 2.0 * k as f64 * coeffs[k];
        }
        if let Some(d0) = derivative.first_mut() {
            *d0 *= 0.5;
        }
        Self {
            a,
            b,
            coeffs,
            derivative,
        }
    }

    /// Size of the last three coefficients: how far the series is from having converged.
    pub(crate) fn tail(&self) -> f64 {
        self.coeffs.iter().rev().take(3).map(|c| c.abs()).sum()
    }

    /// Value at `x` (in `[a, b]`), by Clenshaw's recurrence.
    pub(crate) fn value(&self, x: f64) -> f64 {
        let two_t = 2.0 * (2.0 * x - self.a - self.b) / (self.b - self.a);
        let (mut v1, mut v2) = (0.0, 0.0);
        for &c in self.coeffs.iter().skip(1).rev() {
            let v0 = two_t * v1 - v2 + c;
            v2 = v1;
            v1 = v0;
        }
        self.coeffs.first().copied().unwrap_or(0.0) + 0.5 * two_t * v1 - v2
    }

    /// Value and derivative at `x` (in `[a, b]`), by two Clenshaw recurrences run side by
    /// side: each is a serial chain of dependent operations, so interleaving them lets the
    /// processor overlap the two.
    pub(crate) fn eval(&self, x: f64) -> (f64, f64) {
        let t = (2.0 * x - self.a - self.b) / (self.b - self.a);
        let two_t = 2.0 * t;
        let (mut v1, mut v2) = (0.0, 0.0);
        let (mut d1, mut d2) = (0.0, 0.0);
        for (&c, &d) in self.coeffs.iter().zip(&self.derivative).skip(1).rev() {
            let v0 = two_t * v1 - v2 + c;
            let d0 = two_t * d1 - d2 + d;
            v2 = v1;
            v1 = v0;
            d2 = d1;
            d1 = d0;
        }
        let value = self.coeffs.first().copied().unwrap_or(0.0) + t * v1 - v2;
        let slope = self.derivative.first().copied().unwrap_or(0.0) + t * d1 - d2;
        (value, slope * 2.0 / (self.b - self.a))
    }

    /// [`Chebyshev::eval`] at `L` points at once, one per vector lane: the same operations,
    /// so the same bits, as `L` calls of `eval`, but the lanes' recurrences overlap where one
    /// call's is a serial chain of dependent steps.
    pub(crate) fn eval_lanes<const L: usize>(&self, xs: [f64; L]) -> [(f64, f64); L] {
        vectorized(EvalLanes {
            chebyshev: self,
            xs,
        })
    }
}

struct EvalLanes<'a, const L: usize> {
    chebyshev: &'a Chebyshev,
    xs: [f64; L],
}

impl<const L: usize> WithSimd for EvalLanes<'_, L> {
    type Output = [(f64, f64); L];

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) -> Self::Output {
        let c = self.chebyshev;
        let mut t = [0.0; L];
        let mut two_t = [0.0; L];
        for lane in 0..L {
            t[lane] = (2.0 * self.xs[lane] - c.a - c.b) / (c.b - c.a);
            two_t[lane] = 2.0 * t[lane];
        }
        let (mut v1, mut v2) = ([0.0; L], [0.0; L]);
        let (mut d1, mut d2) = ([0.0; L], [0.0; L]);
        for (&coeff, &d) in c.coeffs.iter().zip(&c.derivative).skip(1).rev() {
            for lane in 0..L {
                let v0 = two_t[lane] * v1[lane] - v2[lane] + coeff;
                let d0 = two_t[lane] * d1[lane] - d2[lane] + d;
                v2[lane] = v1[lane];
                v1[lane] = v0;
                d2[lane] = d1[lane];
                d1[lane] = d0;
            }
        }
        let first = c.coeffs.first().copied().unwrap_or(0.0);
        let first_slope = c.derivative.first().copied().unwrap_or(0.0);
        let mut out = [(0.0, 0.0); L];
        for lane in 0..L {
            let value = first + t[lane] * v1[lane] - v2[lane];
            let slope = first_slope + t[lane] * d1[lane] - d2[lane];
            out[lane] = (value, slope * 2.0 / (c.b - c.a));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn lanes_evaluate_the_bits_one_call_does(
            values in prop::collection::vec(-1e4f64..1e4, POINTS),
            (a, width) in (-5000.0f64..5000.0, 1.0f64..3000.0),
            at in prop::collection::vec(0.0f64..=1.0, 4),
        ) {
            let b = a + width;
            let cheb = Chebyshev::fit(a, b, &values.try_into().expect("POINTS values"));
            let xs: [f64; 4] = std::array::from_fn(|lane| a + width * at[lane]);
            for (lane, (value, slope)) in cheb.eval_lanes(xs).into_iter().enumerate() {
                let (one_value, one_slope) = cheb.eval(xs[lane]);
                prop_assert_eq!(value.to_bits(), one_value.to_bits());
                prop_assert_eq!(slope.to_bits(), one_slope.to_bits());
            }
        }
    }

    #[test]
    fn reproduces_a_smooth_function_and_its_derivative() {
        let (a, b) = (-300.0, 300.0);
        let f = |x: f64| (x / 250.0).tanh() + 0.001 * x;
        let values = nodes(a, b).map(f);
        let cheb = Chebyshev::fit(a, b, &values);
        for i in 0..=100 {
            let x = a + (b - a) * i as f64 / 100.0;
            let (v, d) = cheb.eval(x);
            let exact_d = (1.0 - (x / 250.0).tanh().powi(2)) / 250.0 + 0.001;
            assert!((v - f(x)).abs() < 1e-13, "value at {x}");
            assert!((d - exact_d).abs() < 1e-12, "slope at {x}");
        }
        assert!(cheb.tail() < 1e-13);
    }
}
