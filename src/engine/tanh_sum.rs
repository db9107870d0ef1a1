//! `F(x) = Σ_j tanh(a (x − μ_j))` over a round's ratings, built once per round and evaluated
//! (and inverted) at every player's rating: the one-variable sum that Codeforces' expected
//! ranks and performances and Elo's expected scores reduce to. Interpolated on Chebyshev
//! leaves to rounding accuracy (docs/codeforces.md "One round"), so a round costs O(N) sums
//! at a few hundred points plus O(1) per player instead of O(N²).

use rayon::prelude::*;

use super::chebyshev::{self, Chebyshev};
use super::solve::increasing_root;
use super::tanh;

/// Rounds of at most this many players sum `F` exactly wherever it is needed: O(N²) work that,
/// this small, costs less than the interpolant's few hundred exact sums.
const DIRECT_LIMIT: usize = 64;

/// `F(x) = Σ_j tanh(a (x − μ_j))`: for a small round the ratings themselves, otherwise
/// Chebyshev leaves `2/a` wide covering every rating and far enough beyond that `F` is within
/// one entrant of `±N` at the ends.
pub(crate) struct TanhSum<'a> {
    ratings: &'a [f64],
    a: f64,
    start: f64,
    end: f64,
    width: f64,
    leaves: Vec<Chebyshev>,
    entrants: f64,
}

impl<'a> TanhSum<'a> {
    /// `F` over `ratings`, with slope parameter `a`.
    pub(crate) fn new(ratings: &'a [f64], a: f64) -> Self {
        let low = ratings.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratings.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // tanh(z) is within 1/(2N) of 1 from z = ln(4N)/2 on.
        let reach = ((4.0 * ratings.len() as f64).ln() / 2.0 + 1.0) / a;
        let width = 2.0 / a;
        let start = low - reach;
        let count = (((high + reach - start) / width).ceil() as usize).max(1);
        let mut sum = Self {
            ratings,
            a,
            start,
            end: start + count as f64 * width,
            width,
            leaves: Vec::new(),
            entrants: ratings.len() as f64,
        };
        // The interpolant costs `count · POINTS` exact sums to build: past N of them (ratings
        // spread over many multiples of `1/a`), summing exactly at each of the N ratings is
        // cheaper, and the leaves' memory stays bounded whatever the parameters.
        if ratings.len() > DIRECT_LIMIT && count.saturating_mul(chebyshev::POINTS) < ratings.len() {
            sum.leaves = (0..count)
                .into_par_iter()
                .map(|k| {
                    let (lo, hi) = (start + k as f64 * width, start + (k + 1) as f64 * width);
                    Chebyshev::fit(lo, hi, &chebyshev::nodes(lo, hi).map(|x| sum.exact(x).0))
                })
                .collect();
        }
        sum
    }

    /// `F(x)` and its slope, summed over every rating.
    fn exact(&self, x: f64) -> (f64, f64) {
        self.ratings.iter().fold((0.0, 0.0), |(value, slope), &mu| {
            let t = tanh(self.a * (x - mu));
            (value + t, slope + self.a * (1.0 - t * t))
        })
    }

    /// The leaf holding `x`, ends included.
    fn leaf(&self, x: f64) -> &Chebyshev {
        let k = ((x - self.start) / self.width).floor().max(0.0) as usize;
        &self.leaves[k.min(self.leaves.len() - 1)]
    }

    /// `F(x)`.
    pub(crate) fn value(&self, x: f64) -> f64 {
        if self.leaves.is_empty() {
            self.exact(x).0
        } else {
            self.leaf(x).eval(x).0
        }
    }

    /// The `x` where `F(x) = target`, for a target in `(−N, N)`, clamped to the leaves.
    pub(crate) fn inverse(&self, target: f64) -> f64 {
        let target = target.clamp(-self.entrants, self.entrants);
        let (mut lo, mut hi) = (self.start, self.end);
        if self.leaves.is_empty() {
            return increasing_root(lo, hi, 0.5 * (lo + hi), |x| {
                let (value, slope) = self.exact(x);
                (value - target, slope)
            });
        }
        // Bisect on leaf boundaries to the leaf holding the root, then solve there.
        let (mut first, mut last) = (0, self.leaves.len());
        while last - first > 1 {
            let mid = (first + last) / 2;
            let edge = self.start + mid as f64 * self.width;
            if self.leaves[mid].eval(edge).0 < target {
                first = mid;
                lo = edge;
            } else {
                last = mid;
                hi = edge;
            }
        }
        let leaf = &self.leaves[first];
        increasing_root(lo, hi, 0.5 * (lo + hi), |x| {
            let (value, slope) = leaf.eval(x);
            (value - target, slope)
        })
    }
}
