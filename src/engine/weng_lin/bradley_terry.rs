//! Weng-Lin's Bradley-Terry full pairing sums, `Ω_i = σ_i² Σ_q (s_iq − p_iq) / c_iq` and
//! `Δ_i = σ_i³ Σ_q p_iq (1 − p_iq) / c_iq³` over every other entrant `q`, with
//! `c_iq = √(σ_i² + σ_q² + 2β²)` and `p_iq` the logistic of `(μ_i − μ_q) / c_iq`.
//!
//! Each term depends on both entrants' variances, so the sums are functions of two variables
//! per entrant, `x = μ_i` and `t = √(σ_i² + v)` with `v` the field's least `σ_q² + 2β²`. Both
//! are smooth: in `x` the logistic's poles lie `π c` off the real axis, in `t` every branch
//! point of `c` lies on the imaginary axis, away from the entrants' interval. And a pair far
//! apart against `c` is settled: its `p` is 1 or 0 to the last bit. So each entrant's sums are
//! exact over the field within reach of it, plus a running total of `1/c` over the field below,
//! interpolated in `t` (Chebyshev points, per band of `t`); where many entrants share a leaf
//! in `x`, the leaf's sums are fitted in `x` at Chebyshev nodes instead of taken at each of
//! them. Wherever that costs less than half the N² terms (a compact field: O(N · grid); a
//! spread one: O(N · neighbours)), it replaces the pairs. `docs/weng-lin.md` "Cost" gives the
//! grid and the error it leaves.

use std::f64::consts::PI;
use std::ops::Range;

use rayon::prelude::*;

use crate::maths::chebyshev::{self, Chebyshev, Leaves, POINTS};

/// A fitted leaf's window is summed in slices of this many entrants, in parallel.
const SLICE: usize = 4096;

/// Fewer entrants than this are summed directly.
const DIRECT_LIMIT: usize = 64;

/// A leaf in `x` is at most this many of the narrowest scales `c` wide: the logistic's poles
/// `π c` off the axis then give the 32-point fit a Bernstein ellipse of ρ ≥ 3.16, whose
/// `ρ^−32` is 1e-16.
const LEAF_SCALES: f64 = 4.4;

/// Points in `t` are chosen for `ρ^−n` ≤ 1e-14 (with ρ the Bernstein ellipse reaching the
/// nearest branch point), plus this many.
const EXTRA_POINTS: usize = 2;

/// The entrants' `t` are split into bands at most this ratio wide, each interpolated on points
/// of its own: a band this wide needs 32 points in `t`, and a field of any spread of variances
/// no more bands than the decades it spans.
const BAND_RATIO: f64 = 4.0;

/// Past this many scales `c` apart a pair's logistic is settled: `p` is 1 to the last bit on
/// one side (`e^−40` is below half an ulp of 1, so `p (1 − p)` is 0 too) and below `4e-18` on
/// the other. An entrant's sums then need only the field within that reach of it, exactly;
/// the rest is a running total of `1 / c` over the field below.
const SETTLED: f64 = 40.0;

/// Each entrant's `(Ω, Δ)`. `mus` and `variances` are the entrants' ratings and variances,
/// `two_beta2` is `2β²`, and `group_of[i]` orders the entrants (equal groups tie).
pub(super) fn sums(
    two_beta2: f64,
    mus: &[f64],
    variances: &[f64],
    group_of: &[usize],
) -> Vec<(f64, f64)> {
    if mus.len() < DIRECT_LIMIT {
        return direct(two_beta2, mus, variances, group_of);
    }
    let field = Field::new(two_beta2, mus, variances, group_of);
    let bands = field.bands();
    let n = mus.len() as f64;
    let cost: f64 = bands.iter().map(|band| band.cost(n)).sum();
    if 2.0 * cost >= n * n {
        return direct(two_beta2, mus, variances, group_of);
    }
    field.interpolated(&bands)
}

/// The O(N²) sums, pair by pair.
fn direct(two_beta2: f64, mus: &[f64], variances: &[f64], group_of: &[usize]) -> Vec<(f64, f64)> {
    (0..mus.len())
        .into_par_iter()
        .map(|i| {
            let own = variances[i];
            let (mut omega, mut delta) = (0.0, 0.0);
            for q in 0..mus.len() {
                if q == i {
                    continue;
                }
                let c = (own + variances[q] + two_beta2).sqrt();
                let p = 1.0 / (1.0 + ((mus[q] - mus[i]) / c).exp());
                let score = match group_of[i].cmp(&group_of[q]) {
                    std::cmp::Ordering::Less => 1.0,
                    std::cmp::Ordering::Equal => 0.5,
                    std::cmp::Ordering::Greater => 0.0,
                };
                omega += own / c * (score - p);
                let gamma = own.sqrt() / c;
                delta += gamma * own / (c * c) * p * (1.0 - p);
            }
            (omega, delta)
        })
        .collect()
}

/// The round's field, sorted by rating: what every entrant's sums run over.
struct Field<'a> {
    two_beta2: f64,
    mus: &'a [f64],
    variances: &'a [f64],
    group_of: &'a [usize],
    groups: usize,
    /// Entrants in rating order, with their `μ_q` and `v_q = σ_q² + 2β²`.
    order: Vec<usize>,
    sorted_mus: Vec<f64>,
    sorted_field: Vec<f64>,
    /// The least `v_q`: `u = t² − least` is an entrant's variance.
    least: f64,
    /// How far from an entrant its pairs are still unsettled: [`SETTLED`] times the widest `c`.
    reach: f64,
}

impl<'a> Field<'a> {
    fn new(two_beta2: f64, mus: &'a [f64], variances: &'a [f64], group_of: &'a [usize]) -> Self {
        let mut order: Vec<usize> = (0..mus.len()).collect();
        order.sort_by(|&a, &b| mus[a].total_cmp(&mus[b]));
        let (u_low, u_high) = variances
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        Self {
            two_beta2,
            mus,
            variances,
            group_of,
            groups: group_of.iter().max().map_or(0, |g| g + 1),
            sorted_mus: order.iter().map(|&q| mus[q]).collect(),
            sorted_field: order.iter().map(|&q| variances[q] + two_beta2).collect(),
            order,
            least: u_low + two_beta2,
            reach: SETTLED * (2.0 * u_high + two_beta2).sqrt(),
        }
    }

    /// The sums of every entrant, band by band.
    fn interpolated(&self, bands: &[Band]) -> Vec<(f64, f64)> {
        let mut updates = vec![(0.0, 0.0); self.mus.len()];
        for band in bands {
            for (i, update) in band.sums(self) {
                updates[i] = update;
            }
        }
        updates
    }

    /// Entrant `i`'s `t`.
    fn t(&self, i: usize) -> f64 {
        (self.variances[i] + self.least).sqrt()
    }

    /// The entrants split by `t` into bands [`BAND_RATIO`] wide, each with its leaves.
    fn bands(&self) -> Vec<Band> {
        // The least `t`: the least variance plus `least`.
        let t_low = (2.0 * self.least - self.two_beta2).sqrt();
        let band_of = |i: usize| {
            ((self.t(i) / t_low).ln() / BAND_RATIO.ln())
                .floor()
                .max(0.0)
        };
        let mut members: Vec<Vec<usize>> = Vec::new();
        for &i in &self.order {
            let b = band_of(i) as usize;
            if members.len() <= b {
                members.resize_with(b + 1, Vec::new);
            }
            members[b].push(i);
        }
        members
            .into_iter()
            .filter(|m| !m.is_empty())
            .map(|m| Band::new(self, m))
            .collect()
    }

    /// The sorted field's entrants whose ratings lie within [`Self::reach`] of `[lo, hi]`.
    fn window(&self, lo: f64, hi: f64) -> Range<usize> {
        let start = self.sorted_mus.partition_point(|&m| m < lo - self.reach);
        let end = self.sorted_mus.partition_point(|&m| m <= hi + self.reach);
        start..end
    }

    /// `(Σ_q p / c, Σ_q p (1 − p) / c³)` at each of `xs`, all of variance `u`, over `window`.
    fn window_sums<const L: usize>(
        &self,
        window: Range<usize>,
        xs: &[f64; L],
        u: f64,
    ) -> ([f64; L], [f64; L]) {
        let (mut first, mut second) = ([0.0; L], [0.0; L]);
        for (&mu, &v) in self.sorted_mus[window.clone()]
            .iter()
            .zip(&self.sorted_field[window])
        {
            let inverse = 1.0 / (u + v).sqrt();
            let cubed = inverse * inverse * inverse;
            for ((&x, s1), s2) in xs.iter().zip(&mut first).zip(&mut second) {
                let p = 1.0 / (1.0 + ((mu - x) * inverse).exp());
                *s1 += p * inverse;
                *s2 += p * (1.0 - p) * cubed;
            }
        }
        (first, second)
    }

    /// [`Self::window_sums`] at a leaf's Chebyshev nodes: the window in slices summed in
    /// parallel (all of a compact field is one leaf), then added in order, so that the bits do
    /// not depend on the threads.
    fn node_sums(
        &self,
        window: Range<usize>,
        nodes: &[f64; POINTS],
        u: f64,
    ) -> ([f64; POINTS], [f64; POINTS]) {
        let slices: Vec<Range<usize>> = window
            .clone()
            .step_by(SLICE)
            .map(|start| start..(start + SLICE).min(window.end))
            .collect();
        let parts: Vec<([f64; POINTS], [f64; POINTS])> = slices
            .into_par_iter()
            .map(|slice| self.window_sums(slice, nodes, u))
            .collect();
        parts.into_iter().fold(
            ([0.0; POINTS], [0.0; POINTS]),
            |(mut first, mut second), (a, b)| {
                for (s, v) in first.iter_mut().zip(a) {
                    *s += v;
                }
                for (s, v) in second.iter_mut().zip(b) {
                    *s += v;
                }
                (first, second)
            },
        )
    }
}

/// Entrants of one band of `t`, interpolated on its Chebyshev points in `t`.
struct Band {
    /// The band's entrants in rating order, and the leaves in `x` that hold them.
    members: Vec<usize>,
    leaves: Vec<Leaf>,
    /// The leaf of each of `members`.
    leaf_of: Vec<usize>,
    /// `t`'s Chebyshev points with their barycentric weights.
    points: Vec<f64>,
    weights: Vec<f64>,
}

/// A leaf in `x` holding some of a band's entrants.
struct Leaf {
    lo: f64,
    hi: f64,
    /// Where its entrants are in the band's `members`.
    members: Range<usize>,
    /// The sorted field within reach of the leaf: every pair of its entrants not yet settled.
    window: Range<usize>,
    /// Whether its sums are fitted in `x` (at 32 points per point in `t`) rather than taken at
    /// each of its entrants: whichever sums fewer terms.
    fitted: bool,
}

impl Band {
    fn new(field: &Field<'_>, members: Vec<usize>) -> Self {
        let (low, high) = members
            .iter()
            .map(|&i| field.t(i))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
                (lo.min(t), hi.max(t))
            });
        // c's branch points sit at t = ±i √(v_q − least), the nearest at t = 0.
        let count = if high - low <= 1e-12 * high {
            1
        } else {
            let w = (low + high) / (high - low);
            let rho = w + (w * w - 1.0).sqrt();
            (14.0 * 10f64.ln() / rho.ln()).ceil() as usize + EXTRA_POINTS
        };
        let (mid, half) = (0.5 * (low + high), 0.5 * (high - low));
        let angles = (0..count).map(|j| PI * (j as f64 + 0.5) / count as f64);
        let points: Vec<f64> = angles.clone().map(|a| mid + half * a.cos()).collect();
        let weights = angles
            .enumerate()
            .map(|(j, a)| if j % 2 == 0 { a.sin() } else { -a.sin() })
            .collect();
        let x_low = field.mus[members[0]];
        let x_high = field.mus[members[members.len() - 1]];
        let grid = Leaves::covering(x_low, x_high, LEAF_SCALES * low);
        let mut leaves: Vec<Leaf> = Vec::new();
        let mut leaf_of = Vec::with_capacity(members.len());
        let mut last_index = None;
        for (position, &i) in members.iter().enumerate() {
            let index = grid.index(field.mus[i]);
            match leaves.last_mut() {
                Some(last) if last_index == Some(index) => last.members.end = position + 1,
                _ => {
                    last_index = Some(index);
                    let (lo, hi) = grid.bounds(index);
                    leaves.push(Leaf {
                        lo,
                        hi,
                        members: position..position + 1,
                        window: 0..0,
                        fitted: false,
                    });
                }
            }
            leaf_of.push(leaves.len() - 1);
        }
        for leaf in &mut leaves {
            leaf.window = field.window(leaf.lo, leaf.hi);
            leaf.fitted = leaf.members.len() > count * POINTS;
        }
        Self {
            members,
            leaves,
            leaf_of,
            points,
            weights,
        }
    }

    /// Terms summed in a field of `n`: 32 per point in `t` over a fitted leaf's window, one per
    /// entrant over another's, and two passes over the field per point in `t`.
    fn cost(&self, n: f64) -> f64 {
        let points = self.points.len() as f64;
        let windows: f64 = self
            .leaves
            .iter()
            .map(|leaf| {
                let per_term = if leaf.fitted {
                    points * POINTS as f64
                } else {
                    leaf.members.len() as f64
                };
                per_term * leaf.window.len() as f64
            })
            .sum();
        windows + 2.0 * points * n
    }

    /// `(entrant, (Ω, Δ))` for each of the band's entrants.
    fn sums(&self, field: &Field<'_>) -> Vec<(usize, (f64, f64))> {
        // Per entrant: the interpolated Σ s/c, Σ p/c and Σ p(1 − p)/c³ (the last two only
        // their settled part on a leaf taken entrant by entrant).
        let mut sums = vec![[0.0; 3]; self.members.len()];
        // What each pass reads of an entrant, in the band's order: read through `members`
        // instead, every pass would miss the cache on most entrants.
        let entrants: Vec<(f64, f64, f64, usize)> = self
            .members
            .iter()
            .map(|&i| {
                let t = field.t(i);
                (field.mus[i], t, self.scale(t), field.group_of[i])
            })
            .collect();
        let mut below = vec![0.0; field.order.len() + 1];
        for r in 0..self.points.len() {
            let u = self.points[r] * self.points[r] - field.least;
            for (k, &v) in field.sorted_field.iter().enumerate() {
                below[k + 1] = below[k] + 1.0 / (u + v).sqrt();
            }
            let scores = Self::scores(field, u);
            let fits: Vec<Option<(Chebyshev, Chebyshev)>> = self
                .leaves
                .par_iter()
                .map(|leaf| {
                    leaf.fitted.then(|| {
                        let nodes = chebyshev::nodes(leaf.lo, leaf.hi);
                        let (mut first, second) = field.node_sums(leaf.window.clone(), &nodes, u);
                        for s1 in &mut first {
                            *s1 += below[leaf.window.start];
                        }
                        (
                            Chebyshev::fit(leaf.lo, leaf.hi, &first),
                            Chebyshev::fit(leaf.lo, leaf.hi, &second),
                        )
                    })
                })
                .collect();
            sums.par_iter_mut()
                .zip(&entrants)
                .zip(&self.leaf_of)
                .for_each(|((sum, &(x, t, scale, group)), &leaf)| {
                    let share = self.share(r, t, scale);
                    let (s1, s2) = match &fits[leaf] {
                        Some((first, second)) => (first.value(x), second.value(x)),
                        None => (below[self.leaves[leaf].window.start], 0.0),
                    };
                    sum[0] += share * scores[group];
                    sum[1] += share * s1;
                    sum[2] += share * s2;
                });
        }
        (0..self.members.len())
            .into_par_iter()
            .map(|position| {
                let i = self.members[position];
                let leaf = &self.leaves[self.leaf_of[position]];
                let u = field.variances[i];
                let [score, mut s1, mut s2] = sums[position];
                if !leaf.fitted {
                    let ([a], [b]) = field.window_sums(leaf.window.clone(), &[field.mus[i]], u);
                    s1 += a;
                    s2 += b;
                }
                // The entrant's own term, p = ½, cancels between the score and S1.
                let own = 1.0 / (2.0 * u + field.two_beta2).sqrt();
                (
                    i,
                    (
                        u * (score - s1),
                        u * u.sqrt() * (s2 - 0.25 * own * own * own),
                    ),
                )
            })
            .collect()
    }

    /// `Σ_q s_iq / c_iq` at variance `u` for an entrant of each group: the groups after it, and
    /// half its own (the entrant itself included, as in `Σ p/c`).
    fn scores(field: &Field<'_>, u: f64) -> Vec<f64> {
        let mut own = vec![0.0; field.groups];
        for (&g, &v) in field.group_of.iter().zip(field.variances) {
            own[g] += 1.0 / (u + v + field.two_beta2).sqrt();
        }
        let mut after = 0.0;
        let mut score = vec![0.0; field.groups];
        for g in (0..field.groups).rev() {
            score[g] = after + 0.5 * own[g];
            after += own[g];
        }
        score
    }

    /// One over the barycentric interpolant's denominator at `t`, or NaN where `t` is one of
    /// the points.
    fn scale(&self, t: f64) -> f64 {
        let mut denominator = 0.0;
        for (&point, &weight) in self.points.iter().zip(&self.weights) {
            if t == point {
                return f64::NAN;
            }
            denominator += weight / (t - point);
        }
        denominator.recip()
    }

    /// What point `r`'s value counts for in the interpolant at `t` (barycentric, second
    /// form), given [`Self::scale`] at `t`: the interpolant is linear in the values, so each
    /// point's is added as it is summed and no point's values need to be kept.
    fn share(&self, r: usize, t: f64, scale: f64) -> f64 {
        if scale.is_nan() {
            return if t == self.points[r] { 1.0 } else { 0.0 };
        }
        self.weights[r] / (t - self.points[r]) * scale
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A field of `n` entrants, ratings over `range` (up to 10⁵, many thousands of scales `c`
    /// for the smallest), variances between `least` and `least · ratio` (up to 10⁴, several
    /// bands of `t`), in groups of about four.
    fn field() -> impl Strategy<Value = (f64, Vec<f64>, Vec<f64>, Vec<usize>)> {
        (
            300..2000usize,
            -1.0..5.0f64,
            1.0..50.0f64,
            0.0..4.0f64,
            0.05..10.0f64,
        )
            .prop_flat_map(|(n, range, least, ratio, beta)| {
                let (range, ratio) = (10f64.powf(range), 10f64.powf(ratio));
                (
                    Just(2.0 * beta * beta),
                    prop::collection::vec(0.0..range, n),
                    prop::collection::vec(least..least * ratio, n),
                    Just((0..n).map(|i| i / 4).collect()),
                )
            })
    }

    /// The largest difference between `sums` and `exact` in each entrant's scale: Ω and Δ sum
    /// N terms of size up to `σ_i² / c` and `σ_i³ / c³`.
    pub(super) fn largest_difference(
        two_beta2: f64,
        variances: &[f64],
        sums: &[(f64, f64)],
        exact: &[(f64, f64)],
    ) -> (f64, f64) {
        let n = variances.len() as f64;
        sums.iter()
            .zip(exact)
            .zip(variances)
            .fold((0.0, 0.0), |(omega, delta), ((a, b), &u)| {
                let c = (2.0 * u + two_beta2).sqrt();
                let (omega_scale, delta_scale) = (n * u / c, n * (u.sqrt() / c).powi(3));
                (
                    f64::max(omega, (a.0 - b.0).abs() / omega_scale),
                    f64::max(delta, (a.1 - b.1).abs() / delta_scale),
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn agrees_with_the_pairwise_sums((two_beta2, mus, variances, groups) in field()) {
            let exact = direct(two_beta2, &mus, &variances, &groups);
            let field = Field::new(two_beta2, &mus, &variances, &groups);
            let interpolated = field.interpolated(&field.bands());
            let (omega, delta) = largest_difference(two_beta2, &variances, &interpolated, &exact);
            prop_assert!(omega <= 1e-11, "Ω differs by {:e} of its scale", omega);
            prop_assert!(delta <= 1e-11, "Δ differs by {:e} of its scale", delta);
        }
    }

    /// Ratings spread over many thousands of `c`, as one large round leaves them: each entrant
    /// meets only its neighbours, far fewer terms than the pairs.
    #[test]
    fn a_field_spread_over_thousands_of_scales_costs_far_less_than_its_pairs() {
        let n = 100_000;
        let mut unit = crate::uniform(7);
        let mus: Vec<f64> = (0..n).map(|_| 4e5 * (unit() - 0.5)).collect();
        let variances: Vec<f64> = (0..n).map(|_| 6e-4 + 7e-3 * unit()).collect();
        let groups: Vec<usize> = (0..n).collect();
        let field = Field::new(2.0 * 4.17 * 4.17, &mus, &variances, &groups);
        let cost: f64 = field.bands().iter().map(|band| band.cost(n as f64)).sum();
        assert!(cost < 2e-3 * (n * n) as f64, "{cost} terms");
    }
}

/// The figures docs/weng-lin.md and BENCHMARKS.md quote: error and time of the grid against
/// the pairwise sums on spread fields. `cargo test --lib bradley_terry::figures -- --ignored
/// --nocapture`.
#[cfg(test)]
mod figures {
    use std::time::Instant;

    use super::*;

    #[test]
    #[ignore = "prints figures; seconds of pairwise sums"]
    fn error_and_time_against_the_pairwise_sums() {
        let mut unit = crate::uniform(12_345);
        for n in [1_000, 10_000] {
            // Elo-MMR's units, as the engine bench: β = 200, σ 60–350 (plus τ = 35).
            let spread: (Vec<f64>, Vec<f64>) = (0..n)
                .map(|_| {
                    let sigma: f64 = 60.0 + 290.0 * unit();
                    (800.0 + 2800.0 * unit(), sigma * sigma + 35.0 * 35.0)
                })
                .unzip();
            // OpenSkill's units after a round of 100,000: ratings over ±2·10⁵, σ 0.025–0.083.
            let after: (Vec<f64>, Vec<f64>) = (0..n)
                .map(|_| {
                    let sigma: f64 = 0.025 + 0.058 * unit();
                    (
                        4e5 * (unit() - 0.5),
                        sigma * sigma + (25.0f64 / 300.0).powi(2),
                    )
                })
                .unzip();
            for (name, two_beta2, (mus, variances)) in [
                ("spread", 2.0 * 200.0 * 200.0, spread),
                ("after a large round", 2.0 * (25.0f64 / 6.0).powi(2), after),
            ] {
                let groups: Vec<usize> = (0..n).collect();
                let started = Instant::now();
                let exact = direct(two_beta2, &mus, &variances, &groups);
                let direct_time = started.elapsed();
                let started = Instant::now();
                let field = Field::new(two_beta2, &mus, &variances, &groups);
                let bands = field.bands();
                let interpolated = field.interpolated(&bands);
                let time = started.elapsed();
                let (omega, delta) =
                    tests::largest_difference(two_beta2, &variances, &interpolated, &exact);
                let leaves: usize = bands.iter().map(|band| band.leaves.len()).sum();
                let points: Vec<usize> = bands.iter().map(|band| band.points.len()).collect();
                println!(
                    "N = {n}, {name}: {leaves} leaves, points {points:?}, largest difference \
                     Ω {omega:.1e} Δ {delta:.1e} of their scales, pairwise {direct_time:?}, \
                     interpolated {time:?}",
                );
            }
        }
    }
}
