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

use super::{chunked_sum, interpolated_crossing, inverse_delta_sum, Curves, Term};
use crate::engine::chebyshev::{nodes, Chebyshev, POINTS};
use crate::engine::params::Ties;
use crate::engine::solve::increasing_root;
use crate::engine::{tanh, LOGISTIC_SCALE};

/// `tanh(x)` is exactly 1.0 in `f64` for every `x` above this.
const SATURATION: f64 = 20.0;
/// Interpolated intervals are this many `δ̄_min` wide: the nearest complex pole of any term
/// is `π δ̄_min` away, which makes a degree-31 interpolant converge to rounding level.
const LEAF_WIDTH_IN_SCALES: f64 = 5.0;
/// Interpolants whose last coefficients exceed this fraction of `Σ 1/δ` are refined.
const TAIL_TOLERANCE: f64 = 1e-14;
/// Half-width, in `δ̄_max`, of the first bracket tried around the ratings.
const SPAN_IN_SCALES: f64 = 12.0;

#[derive(Debug, Clone, Copy)]
struct Scaled {
    mu: f64,
    inv_delta: f64,
    /// `1 / (2 δ̄)`.
    inv_width: f64,
}

impl Scaled {
    fn tanh_term(&self, x: f64) -> (f64, f64) {
        let t = tanh((x - self.mu) * self.inv_width);
        (
            t * self.inv_delta,
            (1.0 - t * t) * self.inv_width * self.inv_delta,
        )
    }
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
        let lo = self.by_mu.partition_point(|t| t.mu < x - self.window);
        let hi = self.by_mu.partition_point(|t| t.mu <= x + self.window);
        let below = self.prefix[lo];
        let above = self.prefix[self.by_mu.len()] - self.prefix[hi];
        let (near, slope) = chunked_sum(&self.by_mu[lo..hi], |t| t.tanh_term(x));
        (below - above + near, slope)
    }

    /// `T_g(x)` and its derivative, if ties count twice; zero otherwise.
    fn tie_term(&self, g: usize, x: f64) -> (f64, f64) {
        if self.count_ties_twice {
            chunked_sum(&self.terms[self.groups[g].clone()], |t| t.tanh_term(x))
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
        let mut values = [0.0; POINTS];
        values
            .par_iter_mut()
            .zip(&xs)
            .for_each(|(value, &x)| *value = self.shared(x).0);
        let shared = Chebyshev::fit(a, b, &values);
        if !force && shared.tail() > TAIL_TOLERANCE * self.scale {
            return None;
        }
        let mid = 0.5 * (a + b);
        Some(
            groups
                .into_par_iter()
                .map(|g| {
                    let target = -(self.constants[g] + self.tie_term(g, mid).0);
                    let start = interpolated_crossing(&xs, &values, target);
                    increasing_root(a, b, start, |x| {
                        let (t, dt) = shared.eval(x);
                        let (tie, dtie) = self.tie_term(g, x);
                        (t + tie + self.constants[g], dt + dtie)
                    })
                })
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
