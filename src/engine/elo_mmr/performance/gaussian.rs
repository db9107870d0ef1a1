//! The Gaussian model's curves (Elo-MMχ, docs/elo-mmr.md, "Gaussian variant"), negated so
//! that they increase: for group `g`,
//! `−Q_g(x) = Σ_{j above} φ/(1−Φ)(z_j)/δ_j − Σ_{j below} φ/Φ(z_j)/δ_j + tie terms`,
//! `z_j = (x − μ_j)/δ_j`. Which side an entrant is on depends on the group, so no single curve
//! is shared: at each sampled point one O(N) pass gives every group's value through running
//! sums in rank order, and each group gets its own interpolant.

use std::ops::Range;

use rayon::prelude::*;

use super::{interpolated_crossing, inverse_delta_sum, Curves, Term};
use crate::maths::chebyshev::{nodes, Chebyshev, POINTS};
use crate::maths::normal::{lower_ratio, upper_ratio};
use crate::maths::solve::increasing_root;
use crate::params::Ties;

/// Interpolated intervals are this many `δ_min` wide; the ratios' nearest complex poles are
/// about 2.8 `δ` from the real axis, so a degree-31 interpolant converges to rounding level.
const LEAF_WIDTH_IN_DELTAS: f64 = 3.0;
/// Interpolants whose last coefficients exceed this fraction of the curve's size are refined.
const TAIL_TOLERANCE: f64 = 1e-13;
/// Half-width, in `δ_max`, of the first bracket tried around the ratings.
const SPAN_IN_DELTAS: f64 = 12.0;

/// The Gaussian curves of one round.
pub(crate) struct GaussianCurves<'a> {
    terms: &'a [Term],
    groups: &'a [Range<usize>],
    split_ties: bool,
    scale: f64,
    leaf_width: f64,
    span: (f64, f64),
}

impl<'a> GaussianCurves<'a> {
    pub(crate) fn new(terms: &'a [Term], groups: &'a [Range<usize>], ties: Ties) -> Self {
        let delta_min = terms.iter().map(|t| t.delta).fold(f64::INFINITY, f64::min);
        let delta_max = terms.iter().map(|t| t.delta).fold(0.0, f64::max);
        let mu_min = terms.iter().map(|t| t.mu).fold(f64::INFINITY, f64::min);
        let mu_max = terms.iter().map(|t| t.mu).fold(f64::NEG_INFINITY, f64::max);
        let reach = SPAN_IN_DELTAS * delta_max;
        Self {
            terms,
            groups,
            split_ties: ties == Ties::Split,
            scale: inverse_delta_sum(terms),
            leaf_width: LEAF_WIDTH_IN_DELTAS * delta_min,
            span: (mu_min - reach, mu_max + reach),
        }
    }

    /// One O(N) pass: the value at `x` of every group's curve in `range`.
    fn group_values(&self, x: f64, range: Range<usize>) -> Vec<f64> {
        let ratios: Vec<(f64, f64)> = self
            .terms
            .par_iter()
            .map(|t| {
                let z = (x - t.mu) / t.delta;
                (upper_ratio(z) / t.delta, lower_ratio(z) / t.delta)
            })
            .collect();
        let first = self.groups[range.start].start;
        let last = self.groups[range.end - 1].end;
        let mut above: f64 = ratios[..first].iter().map(|r| r.0).sum();
        let mut below_after = vec![0.0; range.len()];
        let mut below: f64 = ratios[last..].iter().map(|r| r.1).sum();
        for (slot, g) in below_after.iter_mut().zip(range.clone()).rev() {
            *slot = below;
            below += ratios[self.groups[g].clone()]
                .iter()
                .map(|r| r.1)
                .sum::<f64>();
        }
        range
            .zip(below_after)
            .map(|(g, below)| {
                let members = self.groups[g].clone();
                let tie: f64 = if self.split_ties {
                    ratios[members.clone()]
                        .iter()
                        .map(|r| 0.5 * (r.0 - r.1))
                        .sum()
                } else {
                    self.terms[members.clone()]
                        .iter()
                        .map(|t| (x - t.mu) / (t.delta * t.delta))
                        .sum()
                };
                let value = above + tie - below;
                above += ratios[members].iter().map(|r| r.0).sum::<f64>();
                value
            })
            .collect()
    }
}

impl Curves for GaussianCurves<'_> {
    fn groups(&self) -> usize {
        self.groups.len()
    }

    fn entrants(&self) -> usize {
        self.terms.len()
    }

    fn exact(&self, g: usize, x: f64) -> (f64, f64) {
        // d/dz of the hazard h is h(h − z); of r = φ/Φ it is −r(r + z).
        let mine = self.groups[g].clone();
        self.terms
            .iter()
            .enumerate()
            .fold((0.0, 0.0), |(value, slope), (j, t)| {
                let z = (x - t.mu) / t.delta;
                let (v, dv) = if j < mine.start {
                    let h = upper_ratio(z);
                    (h, h * (h - z))
                } else if j >= mine.end {
                    let r = lower_ratio(z);
                    (-r, r * (r + z))
                } else if self.split_ties {
                    let (h, r) = (upper_ratio(z), lower_ratio(z));
                    (0.5 * (h - r), 0.5 * (h * (h - z) + r * (r + z)))
                } else {
                    (z, 1.0)
                };
                (value + v / t.delta, slope + dv / (t.delta * t.delta))
            })
    }

    fn values(&self, x: f64, groups: Range<usize>) -> Vec<f64> {
        self.group_values(x, groups)
    }

    fn leaf_roots(&self, a: f64, b: f64, groups: Range<usize>, force: bool) -> Option<Vec<f64>> {
        let xs = nodes(a, b);
        let samples: Vec<Vec<f64>> = xs
            .par_iter()
            .map(|&x| self.group_values(x, groups.clone()))
            .collect();
        let roots: Vec<Option<f64>> = (0..groups.len())
            .into_par_iter()
            .map(|k| {
                let values: [f64; POINTS] = std::array::from_fn(|m| samples[m][k]);
                let size = values.iter().fold(self.scale, |m, v| m.max(v.abs()));
                let curve = Chebyshev::fit(a, b, &values);
                if !force && curve.tail() > TAIL_TOLERANCE * size {
                    return None;
                }
                let start = interpolated_crossing(&xs, &values, 0.0);
                Some(increasing_root(a, b, start, |x| curve.eval(x)))
            })
            .collect();
        roots.into_iter().collect()
    }

    fn leaf_width(&self) -> f64 {
        self.leaf_width
    }

    fn span(&self) -> (f64, f64) {
        self.span
    }
}
