//! `F(x) = Σ_j tanh(a (x − μ_j))` over a round's ratings, built once per round and evaluated
//! (and inverted) at every player's rating: the one-variable sum that Codeforces' expected
//! ranks and performances and Elo's expected scores reduce to. Interpolated on Chebyshev
//! leaves to rounding accuracy (docs/codeforces.md "One round"), so a round costs O(N) sums
//! at a few hundred points plus O(1) per player instead of O(N²).

use rayon::prelude::*;

use crate::maths::chebyshev::{self, Chebyshev, Leaves};
use crate::maths::lanes::tanh;
use crate::maths::lanes::{node_sums, point_sum, TermSum, NODE_BLOCK};
use crate::maths::solve::increasing_root;

/// `F(x) = Σ_j tanh(a (x − μ_j))`: for a small round the ratings themselves, otherwise
/// Chebyshev leaves `2/a` wide covering every rating and far enough beyond that `F` is within
/// one entrant of `±N` at the ends.
pub(crate) struct TanhSum<'a> {
    ratings: &'a [f64],
    a: f64,
    grid: Leaves,
    leaves: Vec<Chebyshev>,
    entrants: f64,
}

impl TermSum for TanhSum<'_> {
    type Term = f64;

    #[inline(always)]
    fn term(&self, mu: &f64, x: f64) -> f64 {
        tanh(self.a * (x - mu))
    }

    #[inline(always)]
    fn term_and_slope(&self, mu: &f64, x: f64) -> (f64, f64) {
        let t = tanh(self.a * (x - mu));
        (t, self.a * (1.0 - t * t))
    }
}

impl<'a> TanhSum<'a> {
    /// `F` over `ratings`, with slope parameter `a`.
    pub(crate) fn new(ratings: &'a [f64], a: f64) -> Self {
        let low = ratings.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratings.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // tanh(z) is within 1/(2N) of 1 from z = ln(4N)/2 on.
        let reach = ((4.0 * ratings.len() as f64).ln() / 2.0 + 1.0) / a;
        let grid = Leaves::covering(low - reach, high + reach, 2.0 / a);
        let mut sum = Self {
            ratings,
            a,
            grid,
            leaves: Vec::new(),
            entrants: ratings.len() as f64,
        };
        if grid.worth_fitting(ratings.len()) {
            sum.leaves = (0..grid.count)
                .into_par_iter()
                .map(|k| {
                    let (lo, hi) = grid.bounds(k);
                    let nodes = chebyshev::nodes(lo, hi);
                    let mut values = [0.0; chebyshev::POINTS];
                    for (out, block) in values.chunks_mut(NODE_BLOCK).zip(nodes.chunks(NODE_BLOCK))
                    {
                        out.copy_from_slice(&node_sums(&sum, ratings, block));
                    }
                    Chebyshev::fit(lo, hi, &values)
                })
                .collect();
        }
        sum
    }

    /// `F(x)` and its slope, summed over every rating.
    fn exact(&self, x: f64) -> (f64, f64) {
        point_sum(self, self.ratings, x)
    }

    /// The leaf holding `x`, ends included.
    fn leaf(&self, x: f64) -> &Chebyshev {
        &self.leaves[self.grid.index(x)]
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
        let (mut lo, mut hi) = (self.grid.start, self.grid.end());
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
            let edge = self.grid.bounds(mid).0;
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
