//! Weng-Lin's Bradley-Terry full pairing sums, `Ω_i = σ_i² Σ_q (s_iq − p_iq) / c_iq` and
//! `Δ_i = σ_i³ Σ_q p_iq (1 − p_iq) / c_iq³` over every other entrant `q`, with
//! `c_iq = √(σ_i² + σ_q² + 2β²)` and `p_iq` the logistic of `(μ_i − μ_q) / c_iq`.
//!
//! Each term depends on both entrants' variances, so the sums are functions of two variables
//! per entrant, `x = μ_i` and `t = √(σ_i² + v)` with `v` the field's least `σ_q² + 2β²`. Both
//! are smooth: in `x` the logistic's poles lie `π c` off the real axis, in `t` every branch
//! point of `c` lies on the imaginary axis, away from the entrants' interval. So wherever it
//! costs less than half the N² terms, the sums are interpolated on a tensor grid (Chebyshev
//! leaves in `x` times Chebyshev points in `t`), each grid value summed exactly over the
//! field: O(N · grid) instead of O(N²). `docs/weng-lin.md` "Cost" gives the grid and the error it leaves.

use std::f64::consts::PI;

use rayon::prelude::*;

use super::chebyshev::{self, Chebyshev, Leaves, POINTS};

/// Fewer entrants than this are summed directly.
const DIRECT_LIMIT: usize = 64;

/// A leaf in `x` is at most this many of the narrowest scales `c` wide: the logistic's poles
/// `π c` off the axis then give the 32-point fit a Bernstein ellipse of ρ ≥ 3.16, whose
/// `ρ^−32` is 1e-16.
const LEAF_SCALES: f64 = 4.4;

/// Points in `t` are chosen for `ρ^−n` ≤ 1e-14 (with ρ the Bernstein ellipse reaching the
/// nearest branch point), plus this many.
const EXTRA_POINTS: usize = 2;

/// More points in `t` than this and the field is summed directly.
const MOST_POINTS: usize = 48;

/// Each entrant's `(Ω, Δ)`. `mus` and `variances` are the entrants' ratings and variances,
/// `two_beta2` is `2β²`, and `group_of[i]` orders the entrants (equal groups tie).
pub(super) fn sums(
    two_beta2: f64,
    mus: &[f64],
    variances: &[f64],
    group_of: &[usize],
) -> Vec<(f64, f64)> {
    match Grid::worth_building(two_beta2, mus, variances) {
        Some(grid) => grid.sums(two_beta2, mus, variances, group_of),
        None => direct(two_beta2, mus, variances, group_of),
    }
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

/// The interpolation grid: leaves in `x`, Chebyshev points in `t`.
struct Grid {
    leaves: Leaves,
    /// The least `σ_q² + 2β²`: `u = t² − least` is an entrant's variance.
    least: f64,
    /// `t`'s interval, and its Chebyshev points with their barycentric weights.
    low: f64,
    high: f64,
    points: Vec<f64>,
    weights: Vec<f64>,
}

impl Grid {
    /// The grid for this field, or `None` where summing directly costs less.
    fn worth_building(two_beta2: f64, mus: &[f64], variances: &[f64]) -> Option<Self> {
        if mus.len() < DIRECT_LIMIT {
            return None;
        }
        let grid = Self::new(two_beta2, mus, variances)?;
        let values = grid.leaves.count.saturating_mul(POINTS * grid.points.len());
        (values.saturating_mul(2) < mus.len()).then_some(grid)
    }

    /// The grid for this field, whatever it costs, unless it needs more than [`MOST_POINTS`].
    fn new(two_beta2: f64, mus: &[f64], variances: &[f64]) -> Option<Self> {
        let fold = |values: &[f64]| {
            values
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                })
        };
        let (x_low, x_high) = fold(mus);
        let (u_low, u_high) = fold(variances);
        let least = u_low + two_beta2;
        let (low, high) = ((u_low + least).sqrt(), (u_high + least).sqrt());
        // c's branch points sit at t = ±i √(σ_q² + 2β² − least), the nearest at t = 0.
        let count = if high - low <= 1e-12 * high {
            1
        } else {
            let w = (low + high) / (high - low);
            let rho = w + (w * w - 1.0).sqrt();
            (14.0 * 10f64.ln() / rho.ln()).ceil() as usize + EXTRA_POINTS
        };
        if count > MOST_POINTS {
            return None;
        }
        let leaves = Leaves::covering(x_low, x_high, LEAF_SCALES * low);
        let (mid, half) = (0.5 * (low + high), 0.5 * (high - low));
        let angles = (0..count).map(|j| PI * (j as f64 + 0.5) / count as f64);
        Some(Self {
            leaves,
            least,
            low,
            high,
            points: angles.clone().map(|a| mid + half * a.cos()).collect(),
            weights: angles
                .enumerate()
                .map(|(j, a)| if j % 2 == 0 { a.sin() } else { -a.sin() })
                .collect(),
        })
    }

    fn sums(
        &self,
        two_beta2: f64,
        mus: &[f64],
        variances: &[f64],
        group_of: &[usize],
    ) -> Vec<(f64, f64)> {
        let count = self.points.len();
        // The field's `v_q = σ_q² + 2β²`, and an entrant's variance at point r.
        let field: Vec<f64> = variances.iter().map(|v| v + two_beta2).collect();
        let variance_at = |r: usize| self.points[r] * self.points[r] - self.least;
        // (S1, S2) = (Σ_q p / c, Σ_q p (1 − p) / c³) on every leaf and point, self included.
        let fits: Vec<(Chebyshev, Chebyshev)> = (0..self.leaves.count * count)
            .into_par_iter()
            .map(|cell| {
                let (leaf, r) = (cell / count, cell % count);
                let (lo, hi) = self.leaves.bounds(leaf);
                let nodes = chebyshev::nodes(lo, hi);
                let u = variance_at(r);
                let (mut first, mut second) = ([0.0; POINTS], [0.0; POINTS]);
                for (&mu, &v) in mus.iter().zip(&field) {
                    let inverse = 1.0 / (u + v).sqrt();
                    let cubed = inverse * inverse * inverse;
                    for ((x, s1), s2) in nodes.iter().zip(&mut first).zip(&mut second) {
                        let p = 1.0 / (1.0 + ((mu - x) * inverse).exp());
                        *s1 += p * inverse;
                        *s2 += p * (1.0 - p) * cubed;
                    }
                }
                (
                    Chebyshev::fit(lo, hi, &first),
                    Chebyshev::fit(lo, hi, &second),
                )
            })
            .collect();
        // Σ_q s_iq / c_iq at every point for every group: the groups after it, and half its own
        // (the entrant itself included, as in S1).
        let groups = group_of.iter().max().map_or(0, |g| g + 1);
        let scores: Vec<Vec<f64>> = (0..count)
            .into_par_iter()
            .map(|r| {
                let u = variance_at(r);
                let mut own = vec![0.0; groups];
                for (&g, &v) in group_of.iter().zip(&field) {
                    own[g] += 1.0 / (u + v).sqrt();
                }
                let mut after = 0.0;
                let mut score = vec![0.0; groups];
                for g in (0..groups).rev() {
                    score[g] = after + 0.5 * own[g];
                    after += own[g];
                }
                score
            })
            .collect();
        (0..mus.len())
            .into_par_iter()
            .map(|i| {
                let (x, u) = (mus[i], variances[i]);
                let t = (u + self.least).sqrt().clamp(self.low, self.high);
                let leaf = self.leaves.index(x);
                let cells = &fits[leaf * count..(leaf + 1) * count];
                let s1 = self.interpolate(t, |r| cells[r].0.value(x));
                let s2 = self.interpolate(t, |r| cells[r].1.value(x));
                let score = self.interpolate(t, |r| scores[r][group_of[i]]);
                // The entrant's own term, p = ½, cancels between the score and S1.
                let own = 1.0 / (2.0 * u + two_beta2).sqrt();
                let omega = u * (score - s1);
                let delta = u * u.sqrt() * (s2 - 0.25 * own * own * own);
                (omega, delta)
            })
            .collect()
    }

    /// The interpolant through `value(r)` at the points, at `t` (barycentric, second form).
    fn interpolate(&self, t: f64, value: impl Fn(usize) -> f64) -> f64 {
        let (mut numerator, mut denominator) = (0.0, 0.0);
        for (r, (&point, &weight)) in self.points.iter().zip(&self.weights).enumerate() {
            let gap = t - point;
            if gap == 0.0 {
                return value(r);
            }
            let w = weight / gap;
            numerator += w * value(r);
            denominator += w;
        }
        numerator / denominator
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A field of `n` entrants, variances between `least` and `least · ratio`, in groups of
    /// about four.
    fn field() -> impl Strategy<Value = (f64, Vec<f64>, Vec<f64>, Vec<usize>)> {
        (
            300..2000usize,
            0.1..60.0f64,
            1.0..50.0f64,
            1.0..40.0f64,
            0.05..10.0f64,
        )
            .prop_flat_map(|(n, range, least, ratio, beta)| {
                (
                    Just(2.0 * beta * beta),
                    prop::collection::vec(0.0..range, n),
                    prop::collection::vec(least..least * ratio, n),
                    Just((0..n).map(|i| i / 4).collect()),
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn agrees_with_the_pairwise_sums((two_beta2, mus, variances, groups) in field()) {
            let exact = direct(two_beta2, &mus, &variances, &groups);
            let grid = Grid::new(two_beta2, &mus, &variances);
            prop_assume!(grid.is_some(), "a field needing more than MOST_POINTS is summed directly");
            let grid = grid.expect("assumed");
            let interpolated = grid.sums(two_beta2, &mus, &variances, &groups);
            let n = mus.len() as f64;
            for (i, (a, b)) in interpolated.iter().zip(&exact).enumerate() {
                // Ω and Δ sum N terms of size up to σ_i² / c and σ_i³ / c³.
                let c = (2.0 * variances[i] + two_beta2).sqrt();
                let (omega_scale, delta_scale) = (n * variances[i] / c, n * (variances[i].sqrt() / c).powi(3));
                prop_assert!((a.0 - b.0).abs() <= 1e-11 * omega_scale, "Ω of {}: {} against {}", i, a.0, b.0);
                prop_assert!((a.1 - b.1).abs() <= 1e-11 * delta_scale, "Δ of {}: {} against {}", i, a.1, b.1);
            }
        }
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
        // Elo-MMR's units, as the engine bench: β = 200, σ 60–350 (plus τ = 35).
        let two_beta2 = 2.0 * 200.0 * 200.0;
        for n in [1_000, 10_000] {
            let (mus, variances): (Vec<f64>, Vec<f64>) = (0..n)
                .map(|_| {
                    let sigma: f64 = 60.0 + 290.0 * unit();
                    (800.0 + 2800.0 * unit(), sigma * sigma + 35.0 * 35.0)
                })
                .unzip();
            let groups: Vec<usize> = (0..n).collect();
            let started = Instant::now();
            let exact = direct(two_beta2, &mus, &variances, &groups);
            let direct_time = started.elapsed();
            let grid = Grid::new(two_beta2, &mus, &variances).expect("a grid");
            let started = Instant::now();
            let interpolated = grid.sums(two_beta2, &mus, &variances, &groups);
            let grid_time = started.elapsed();
            let relative = |pick: fn(&(f64, f64)) -> f64| {
                interpolated
                    .iter()
                    .zip(&exact)
                    .map(|(a, b)| (pick(a) - pick(b)).abs() / pick(b).abs())
                    .fold(0.0, f64::max)
            };
            println!(
                "N = {n}: {} leaves x {} points, largest relative difference Ω {:.1e} Δ {:.1e}, \
                 pairwise {direct_time:?}, grid {grid_time:?}",
                grid.leaves.count,
                grid.points.len(),
                relative(|x| x.0),
                relative(|x| x.1),
            );
        }
    }
}
