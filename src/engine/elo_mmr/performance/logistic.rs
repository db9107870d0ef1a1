//! The logistic model's curves (docs/elo-mmr.md step 3):
//! `Q_g(x) = T(x) + [ties = both] T_g(x) + C_g`, where
//! `T(x) = Σ_j tanh((x − μ_j) / (2 δ̄_j)) / δ_j` over every entrant is shared by all groups,
//! `T_g` is the same sum over group `g` only, and `C_g` is `Σ 1/δ` over the groups above
//! minus that over the groups below. Only `T` costs O(N); it is the one curve interpolated.
//!
//! `tanh` rounds to exactly ±1 once its argument passes [`SATURATION`], so entrants rated far
//! from `x` contribute exactly `±1/δ_j`: those come from prefix sums over entrants sorted by
//! rating, and only the window of entrants near `x` is summed term by term.

use std::ops::Range;

use rayon::prelude::*;

use super::{chunked_lane_sums, interpolated_crossing, inverse_delta_sum, Curves, Term};
use crate::maths::chebyshev::{nodes, Chebyshev, POINTS};
use crate::maths::lanes::{node_sums, point_sum, TermSum, NODE_BLOCK};
use crate::maths::solve::RootSearch;
use crate::params::Ties;
use crate::{tanh, LOGISTIC_SCALE};

/// `tanh(x)` is exactly 1.0 in `f64` for every `x` above this.
const SATURATION: f64 = 20.0;
/// Interpolated intervals are this many `δ̄_min` wide: the nearest complex pole of any term
/// is `π δ̄_min` away, which makes a degree-31 interpolant converge to rounding level.
const LEAF_WIDTH_IN_SCALES: f64 = 5.0;
/// Interpolants whose last coefficients exceed this fraction of `Σ 1/δ` are refined.
const TAIL_TOLERANCE: f64 = 1e-14;
/// Half-width, in `δ̄_max`, of the first bracket tried around the ratings.
const SPAN_IN_SCALES: f64 = 12.0;
/// Tie groups whose roots on a leaf are searched together, one vector lane each: evaluating
/// the interpolant is a serial chain of 31 dependent steps, which one search alone leaves
/// mostly waiting (about a tenth of a ctftime replay's samples; BENCHMARKS.md).
const ROOT_LANES: usize = 4;

#[derive(Debug, Clone, Copy)]
struct Scaled {
    mu: f64,
    inv_delta: f64,
    /// `1 / (2 δ̄)`.
    inv_width: f64,
}

/// The logistic curves of one round.
pub(crate) struct LogisticCurves<'a> {
    /// Entrants in canonical (rank, name) order.
    terms: Vec<Scaled>,
    groups: &'a [Range<usize>],
    count_ties_twice: bool,
    constants: Vec<f64>,
    /// Entrants sorted by rating, for the windowed sum.
    by_mu: Vec<Scaled>,
    /// `prefix[k] = Σ 1/δ` over the first `k` entrants of `by_mu`.
    prefix: Vec<f64>,
    window: f64,
    scale: f64,
    leaf_width: f64,
    span: (f64, f64),
}

impl<'a> LogisticCurves<'a> {
    pub(crate) fn new(entrants: &[Term], groups: &'a [Range<usize>], ties: Ties) -> Self {
        let terms: Vec<Scaled> = entrants
            .iter()
            .map(|t| Scaled {
                mu: t.mu,
                inv_delta: 1.0 / t.delta,
                inv_width: 0.5 / (LOGISTIC_SCALE * t.delta),
            })
            .collect();
        let group_weight: Vec<f64> = groups
            .iter()
            .map(|g| terms[g.clone()].iter().map(|t| t.inv_delta).sum())
            .collect();
        let total: f64 = group_weight.iter().sum();
        let mut above = 0.0;
        let constants = group_weight
            .iter()
            .map(|w| {
                let below = total - above - w;
                let c = above - below;
                above += w;
                c
            })
            .collect();
        let mut by_mu = terms.clone();
        by_mu.sort_by(|x, y| {
            x.mu.total_cmp(&y.mu)
                .then(x.inv_delta.total_cmp(&y.inv_delta))
        });
        let mut prefix = Vec::with_capacity(by_mu.len() + 1);
        prefix.push(0.0);
        let mut running = 0.0;
        for t in &by_mu {
            running += t.inv_delta;
            prefix.push(running);
        }
        let delta_min = entrants
            .iter()
            .map(|t| t.delta)
            .fold(f64::INFINITY, f64::min);
        let delta_max = entrants.iter().map(|t| t.delta).fold(0.0, f64::max);
        let mu_min = by_mu.first().map_or(0.0, |t| t.mu);
        let mu_max = by_mu.last().map_or(0.0, |t| t.mu);
        let reach = SPAN_IN_SCALES * LOGISTIC_SCALE * delta_max;
        Self {
            terms,
            groups,
            count_ties_twice: ties == Ties::Both,
            constants,
            window: 2.0 * SATURATION * LOGISTIC_SCALE * delta_max,
            scale: inverse_delta_sum(entrants),
            leaf_width: LEAF_WIDTH_IN_SCALES * LOGISTIC_SCALE * delta_min,
            span: (mu_min - reach, mu_max + reach),
            by_mu,
            prefix,
        }
    }

    /// `T(x)` and its slope: saturated entrants from the prefix sums (their slope is exactly
    /// zero), the window term by term.
    fn shared(&self, x: f64) -> (f64, f64) {
        let (near, saturated) = self.window(x, x);
        let (near, slope) = shared_sum(near, x);
        (saturated + near, slope)
    }

    /// `T` at every node of a leaf, `NODE_BLOCK` nodes (one per vector lane) per pass over the
    /// entrants near the leaf: those within the window of its lowest or highest node. An
    /// entrant inside that window but outside one node's own window is saturated at that
    /// node, so it adds exactly `±1/δ_j`, as the prefix sums would.
    fn shared_at_nodes(&self, xs: &[f64; POINTS]) -> [f64; POINTS] {
        let low = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let high = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (near, saturated) = self.window(low, high);
        let mut values = [0.0; POINTS];
        values
            .par_chunks_mut(NODE_BLOCK)
            .zip(xs.par_chunks(NODE_BLOCK))
            .for_each(|(out, block)| {
                let sums = chunked_lane_sums(near, |terms| node_sums(&SharedTerms, terms, block));
                for (value, sum) in out.iter_mut().zip(sums) {
                    *value = saturated + sum;
                }
            });
        values
    }

    /// The entrants within the window of some point of `[low, high]`, by rating, and what
    /// the others add to `T` anywhere in `[low, high]`: `+1/δ` for those far below, `−1/δ`
    /// for those far above, from the prefix sums.
    fn window(&self, low: f64, high: f64) -> (&[Scaled], f64) {
        let lo = self.by_mu.partition_point(|t| t.mu < low - self.window);
        let hi = self.by_mu.partition_point(|t| t.mu <= high + self.window);
        let below = self.prefix[lo];
        let above = self.prefix[self.by_mu.len()] - self.prefix[hi];
        (&self.by_mu[lo..hi], below - above)
    }

    /// The zeros of up to `ROOT_LANES` groups' curves on the leaf `[a, b]`, where `shared`
    /// interpolates `T` through `values` at the nodes `xs`: each group's [`RootSearch`] starts
    /// from a point read off the samples, and their interpolant evaluations share vector lanes.
    fn roots_on_leaf(
        &self,
        (a, b): (f64, f64),
        shared: &Chebyshev,
        (xs, values): (&[f64; POINTS], &[f64; POINTS]),
        chunk: &[usize],
    ) -> Vec<f64> {
        let mid = 0.5 * (a + b);
        let mut searches = [RootSearch::new(a, b, mid); ROOT_LANES];
        for (search, &g) in searches.iter_mut().zip(chunk) {
            let target = -(self.constants[g] + self.tie_term(g, mid).0);
            let start = interpolated_crossing(xs, values, target);
            *search = RootSearch::new(a, b, start);
        }
        let searches = &mut searches[..chunk.len()];
        loop {
            let mut points = [None; ROOT_LANES];
            for (point, search) in points.iter_mut().zip(searches.iter()) {
                *point = search.point();
            }
            if points.iter().all(Option::is_none) {
                break;
            }
            let at = shared.eval_lanes(points.map(|p| p.unwrap_or(mid)));
            for (lane, (search, &g)) in searches.iter_mut().zip(chunk).enumerate() {
                if let Some(x) = points[lane] {
                    let (t, dt) = at[lane];
                    let (tie, dtie) = self.tie_term(g, x);
                    search.take(t + tie + self.constants[g], dt + dtie);
                }
            }
        }
        searches.iter().map(RootSearch::root).collect()
    }

    /// `T_g(x)` and its derivative, if ties count twice; zero otherwise.
    fn tie_term(&self, g: usize, x: f64) -> (f64, f64) {
        if self.count_ties_twice {
            shared_sum(&self.terms[self.groups[g].clone()], x)
        } else {
            (0.0, 0.0)
        }
    }
}

impl Curves for LogisticCurves<'_> {
    fn groups(&self) -> usize {
        self.groups.len()
    }

    fn entrants(&self) -> usize {
        self.terms.len()
    }

    fn exact(&self, g: usize, x: f64) -> (f64, f64) {
        let (shared, slope) = self.shared(x);
        let (tie, tie_slope) = self.tie_term(g, x);
        (shared + tie + self.constants[g], slope + tie_slope)
    }

    fn values(&self, x: f64, groups: Range<usize>) -> Vec<f64> {
        let (shared, _) = self.shared(x);
        groups
            .map(|g| shared + self.tie_term(g, x).0 + self.constants[g])
            .collect()
    }

    fn leaf_roots(&self, a: f64, b: f64, groups: Range<usize>, force: bool) -> Option<Vec<f64>> {
        let xs = nodes(a, b);
        let values = self.shared_at_nodes(&xs);
        let shared = Chebyshev::fit(a, b, &values);
        if !force && shared.tail() > TAIL_TOLERANCE * self.scale {
            return None;
        }
        let groups: Vec<usize> = groups.collect();
        Some(
            groups
                .par_chunks(ROOT_LANES)
                .flat_map_iter(|chunk| self.roots_on_leaf((a, b), &shared, (&xs, &values), chunk))
                .collect(),
        )
    }

    fn leaf_width(&self) -> f64 {
        self.leaf_width
    }

    fn span(&self) -> (f64, f64) {
        self.span
    }
}

/// The terms of `T`.
struct SharedTerms;

impl TermSum for SharedTerms {
    type Term = Scaled;

    #[inline(always)]
    fn term(&self, term: &Scaled, x: f64) -> f64 {
        tanh((x - term.mu) * term.inv_width) * term.inv_delta
    }

    #[inline(always)]
    fn term_and_slope(&self, term: &Scaled, x: f64) -> (f64, f64) {
        let t = tanh((x - term.mu) * term.inv_width);
        (
            t * term.inv_delta,
            (1.0 - t * t) * term.inv_width * term.inv_delta,
        )
    }
}

/// `Σ_j tanh((x − μ_j) / (2 δ̄_j)) / δ_j` over `terms`, and its slope.
fn shared_sum(terms: &[Scaled], x: f64) -> (f64, f64) {
    let [value, slope] = chunked_lane_sums(terms, |chunk| {
        let (value, slope) = point_sum(&SharedTerms, chunk, x);
        [value, slope]
    });
    (value, slope)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Large rounds take the chunked path (more than `CHUNK` entrants near the leaf).
        #[test]
        fn a_leaf_sums_at_every_node_what_one_point_sums(
            // Narrow spreads over a wide range: entrants fall below, inside and above the
            // window (`2 · SATURATION · LOGISTIC_SCALE · δ_max`, under 2,300 here).
            raw in prop::collection::vec((-20_000.0..20_000.0f64, 20.0..100.0f64), 1..5000),
            start in -3000.0..6000.0f64,
            width in 1.0..2000.0f64,
        ) {
            let terms: Vec<Term> = raw.iter().map(|&(mu, delta)| Term { mu, delta }).collect();
            // One tie group of every entrant: only the shared curve is tested here.
            let groups: Vec<Range<usize>> = std::iter::once(0..terms.len()).collect();
            let curves = LogisticCurves::new(&terms, &groups, Ties::Split);
            let xs = nodes(start, start + width);
            let at_nodes = curves.shared_at_nodes(&xs);
            for (x, value) in xs.into_iter().zip(at_nodes) {
                let one = curves.shared(x).0;
                prop_assert!((value - one).abs() <= 1e-13 * curves.scale, "{x}: {value} vs {one}");
            }
        }
    }
}
