//! Step 3 of a round (first half of Algorithm 3): every entrant's performance, counting every
//! opponent, without the O(N²) cost of solving each entrant's equation against all others.
//!
//! Each tie group `g` (entrants sharing a rank, best first) has an increasing function `Q_g`
//! whose zero is its performance, and those zeros fall as the rank worsens (Theorem 5.2). So
//! the zeros are found together: an interval known to hold the zeros of groups `lo..hi` is
//! split at its midpoint by the sign of each `Q_g` there, until it is narrow enough that the
//! sum over all entrants is replaced by a Chebyshev interpolant accurate to rounding level,
//! after which each group's zero costs O(interpolant degree) per Newton step. The work is
//! O(N) per sampled point times a number of points that grows with the spread of ratings
//! measured in performance spreads, not with N. See `logistic` and `gaussian` for the curves.

mod gaussian;
mod logistic;

use std::ops::Range;

use rayon::prelude::*;

use crate::maths::solve::increasing_root;

pub(crate) use gaussian::GaussianCurves;
pub(crate) use logistic::LogisticCurves;

/// Entrants summed per rayon task. A fixed size (not one derived from the thread count) keeps
/// every sum's association, and so every result, identical for any number of threads.
const CHUNK: usize = 2_048;
/// Rounds of at most this many entrants solve each group's equation directly on the exact
/// sums: O(N²) work that, this small, costs less than the interpolation's fixed few hundred
/// samples and its parallel bookkeeping.
const DIRECT_LIMIT: usize = 64;
/// Most times the initial bracket is doubled before the solver gives up widening it.
const MAX_WIDENINGS: usize = 64;
/// An interval this many times narrower than the leaf width is interpolated whatever its
/// tail. On an interval that narrow every curve's nearest complex pole is far enough away
/// to put the 32nd Chebyshev coefficient below 1e-22 of the curve's size (logistic: poles
/// `π δ̄` away, interval `2.5 δ̄` wide; Gaussian: about `2.8 δ` away, interval `1.5 δ`), so a
/// tail above the tolerance there is the rounding noise of the O(N) sums, which further
/// splitting cannot remove. Such noise is largest when many entrants share one prior (a
/// round of newcomers: identical terms round alike and do not average out); splitting on
/// down to a million times narrower made a round of 100,000 newcomers thirty times slower.
const FORCED_LEAF_RATIO: f64 = 0.5;

/// One entrant's prior performance distribution: mean and spread (docs/elo-mmr.md step 2).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Term {
    pub mu: f64,
    pub delta: f64,
}

/// The family of increasing functions `Q_g`, one per tie group, whose zeros are wanted.
pub(crate) trait Curves: Sync {
    /// Number of tie groups.
    fn groups(&self) -> usize;
    /// Number of entrants.
    fn entrants(&self) -> usize;
    /// `Q_g(x)` and its slope, counting every entrant.
    fn exact(&self, g: usize, x: f64) -> (f64, f64);
    /// `Q_g(x)` for every `g` in `groups`, counting every entrant.
    fn values(&self, x: f64, groups: Range<usize>) -> Vec<f64>;
    /// The zeros of the groups in `groups`, known to lie in `[a, b]`, found on interpolants;
    /// `None` when the interpolant is not accurate enough there (unless `force`).
    fn leaf_roots(&self, a: f64, b: f64, groups: Range<usize>, force: bool) -> Option<Vec<f64>>;
    /// Widest interval worth interpolating.
    fn leaf_width(&self) -> f64;
    /// An interval likely to hold every zero; it is widened if it does not.
    fn span(&self) -> (f64, f64);
}

/// Every group's zero, best group first.
pub(crate) fn group_roots(curves: &impl Curves) -> Vec<f64> {
    let all = 0..curves.groups();
    let (mut lo, mut hi) = curves.span();
    let mut reach = (hi - lo).max(1.0);
    for _ in 0..MAX_WIDENINGS {
        if curves.values(lo, all.clone()).iter().all(|v| *v <= 0.0) {
            break;
        }
        lo -= reach;
        reach *= 2.0;
    }
    let mut reach = (hi - lo).max(1.0);
    for _ in 0..MAX_WIDENINGS {
        if curves.values(hi, all.clone()).iter().all(|v| *v >= 0.0) {
            break;
        }
        hi += reach;
        reach *= 2.0;
    }
    if curves.entrants() <= DIRECT_LIMIT {
        // Zeros fall as the rank worsens, so each group's zero lies below the previous one,
        // which is also a close first guess.
        let mut upper = hi;
        return all
            .map(|g| {
                upper = increasing_root(lo, upper, upper, |x| curves.exact(g, x));
                upper
            })
            .collect();
    }
    let mut roots = vec![0.0; all.len()];
    solve_interval(curves, lo, hi, all, &mut roots);
    roots
}

fn solve_interval(curves: &impl Curves, a: f64, b: f64, groups: Range<usize>, out: &mut [f64]) {
    if groups.is_empty() {
        return;
    }
    let mid = 0.5 * (a + b);
    let unsplittable = mid <= a || mid >= b;
    let width = b - a;
    if width <= curves.leaf_width() || unsplittable {
        let force = unsplittable || width <= FORCED_LEAF_RATIO * curves.leaf_width();
        if let Some(roots) = curves.leaf_roots(a, b, groups.clone(), force) {
            out.copy_from_slice(&roots);
            return;
        }
    }
    // Groups whose curve is still negative at `mid` have their zero above it; by the
    // monotonicity of performance in rank they are a prefix of `groups`.
    let values = curves.values(mid, groups.clone());
    let split = values
        .iter()
        .position(|v| *v >= 0.0)
        .unwrap_or(values.len());
    let (upper, lower) = out.split_at_mut(split);
    let boundary = groups.start + split;
    rayon::join(
        || solve_interval(curves, mid, b, groups.start..boundary, upper),
        || solve_interval(curves, a, mid, boundary..groups.end, lower),
    );
}

/// Sums over `items` for several lanes at once: `lanes` of each fixed-size chunk, computed on
/// rayon, added lane by lane in chunk order, so every lane's sum is the same for any number
/// of threads.
pub(crate) fn chunked_lane_sums<T: Sync, const L: usize>(
    items: &[T],
    lanes: impl Fn(&[T]) -> [f64; L] + Sync,
) -> [f64; L] {
    if items.len() <= CHUNK {
        return lanes(items);
    }
    let partial: Vec<[f64; L]> = items.par_chunks(CHUNK).map(&lanes).collect();
    partial.into_iter().fold([0.0; L], |mut acc, chunk| {
        for (sum, x) in acc.iter_mut().zip(chunk) {
            *sum += x;
        }
        acc
    })
}

/// Where an increasing curve sampled at `xs` (the Chebyshev points, descending) with values
/// `ys` reaches `target`, by linear interpolation between the samples around it: a start for
/// Newton close enough that it converges in a few steps.
pub(crate) fn interpolated_crossing(xs: &[f64], ys: &[f64], target: f64) -> f64 {
    // Samples run from high x to low x; find the first one at or below the target.
    let k = ys.partition_point(|&y| y > target);
    match (k.checked_sub(1), xs.get(k)) {
        (Some(above), Some(&x_below)) => {
            let (x_above, y_above, y_below) = (xs[above], ys[above], ys[k]);
            let span = y_above - y_below;
            if span > 0.0 {
                x_below + (x_above - x_below) * (target - y_below) / span
            } else {
                0.5 * (x_above + x_below)
            }
        }
        (None, _) => xs.first().copied().unwrap_or(0.0),
        (Some(_), None) => xs.last().copied().unwrap_or(0.0),
    }
}

/// Sum of `1/δ` over all entrants: the natural size of every `Q_g`, against which
/// interpolation error is measured.
pub(crate) fn inverse_delta_sum(terms: &[Term]) -> f64 {
    let [sum] = chunked_lane_sums(terms, |chunk| [chunk.iter().map(|t| 1.0 / t.delta).sum()]);
    sum
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::maths::normal::{lower_ratio, upper_ratio};
    use crate::params::Ties;
    use crate::LOGISTIC_SCALE;

    /// Bisection on a curve summed term by term: slow, and obviously right.
    fn bisect(f: impl Fn(f64) -> f64) -> f64 {
        let (mut lo, mut hi) = (-1e5, 1e5);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if f(mid) < 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }

    fn direct_logistic(terms: &[Term], groups: &[Range<usize>], g: usize, ties: Ties) -> f64 {
        let mine = &groups[g];
        bisect(|x| {
            terms
                .iter()
                .enumerate()
                .map(|(j, t)| {
                    let tanh = ((x - t.mu) / (2.0 * LOGISTIC_SCALE * t.delta)).tanh();
                    let v = if j < mine.start {
                        tanh + 1.0
                    } else if j >= mine.end {
                        tanh - 1.0
                    } else if ties == Ties::Both {
                        2.0 * tanh
                    } else {
                        tanh
                    };
                    v / t.delta
                })
                .sum()
        })
    }

    fn direct_gaussian(terms: &[Term], groups: &[Range<usize>], g: usize, ties: Ties) -> f64 {
        let mine = &groups[g];
        bisect(|x| {
            terms
                .iter()
                .enumerate()
                .map(|(j, t)| {
                    let z = (x - t.mu) / t.delta;
                    let v = if j < mine.start {
                        upper_ratio(z)
                    } else if j >= mine.end {
                        -lower_ratio(z)
                    } else if ties == Ties::Both {
                        z
                    } else {
                        0.5 * (upper_ratio(z) - lower_ratio(z))
                    };
                    v / t.delta
                })
                .sum()
        })
    }

    fn round_strategy() -> impl Strategy<Value = (Vec<Term>, Vec<Range<usize>>)> {
        prop::collection::vec((-3000.0..6000.0f64, 150.0..700.0f64, 0..4usize), 2..120).prop_map(
            |raw| {
                let terms = raw
                    .iter()
                    .map(|&(mu, delta, _)| Term { mu, delta })
                    .collect();
                let mut groups: Vec<Range<usize>> = Vec::new();
                for (i, &(_, _, tie_with_previous)) in raw.iter().enumerate() {
                    match groups.last_mut() {
                        Some(g) if tie_with_previous == 0 => g.end = i + 1,
                        _ => groups.push(i..i + 1),
                    }
                }
                (terms, groups)
            },
        )
    }

    proptest! {
        #[test]
        fn logistic_roots_match_direct_summation((terms, groups) in round_strategy(), split in any::<bool>()) {
            let ties = if split { Ties::Split } else { Ties::Both };
            let fast = group_roots(&LogisticCurves::new(&terms, &groups, ties));
            for (g, root) in fast.iter().enumerate() {
                let direct = direct_logistic(&terms, &groups, g, ties);
                prop_assert!((root - direct).abs() < 1e-6, "group {}: {} vs {}", g, root, direct);
            }
        }

        #[test]
        fn gaussian_roots_match_direct_summation((terms, groups) in round_strategy(), split in any::<bool>()) {
            let ties = if split { Ties::Split } else { Ties::Both };
            let fast = group_roots(&GaussianCurves::new(&terms, &groups, ties));
            for (g, root) in fast.iter().enumerate() {
                let direct = direct_gaussian(&terms, &groups, g, ties);
                prop_assert!((root - direct).abs() < 1e-6, "group {}: {} vs {}", g, root, direct);
            }
        }
    }
}
