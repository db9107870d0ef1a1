//! Where k independent entrants finish, in the pool's performance model (MATH.md
//! "Predictions"): P(each finishes first) as the integral `∫ f_i(x) Π_{j≠i} F_j(x) dx`, the
//! pairwise matrix, and expected ranks. An entrant's performance has mean `μ` and variance
//! `δ²`; it is logistic with scale `s̄ = (√3/π)·δ` or Gaussian with std `δ`.
//!
//! The integrands are evaluated in log space (a product of many tiny cdfs underflows long
//! before the probability it stands for is negligible) and integrated by adaptive
//! Gauss–Kronrod over a range that holds every entrant's mass, with a breakpoint wherever an
//! entrant's density or cdf changes shape, so that no feature hides between the first nodes
//! however far apart the means are.

use std::f64::consts::FRAC_1_SQRT_2;

use super::super::normal;
use super::super::params::{Params, Variant};
use super::super::LOGISTIC_SCALE;
use super::{beats, quadrature};

/// Reach of the integration range past an entrant's mean, in Gaussian stds: `Φ(−9) < 1e-18`.
const GAUSSIAN_REACH: f64 = 9.0;
/// Reach past an entrant's mean in logistic scales: `e^(−40) < 1e-17`.
const LOGISTIC_REACH: f64 = 40.0;
/// Breakpoints placed around every entrant's mean, in units of its own scale: each density
/// bump and cdf step is then cut into panels no wider than its features.
const FEATURE_OFFSETS: [f64; 13] = [
    -32.0, -16.0, -8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0,
];
/// Summed error estimate allowed over all probabilities: far below the 1e-9 promised, since
/// probabilities near rounding level must still sum to 1.
const TOLERANCE: f64 = 1e-13;
/// `ln √(2π)`.
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// One entrant's performance distribution, in the pool's model.
#[derive(Debug, Clone, Copy)]
struct Curve {
    variant: Variant,
    mean: f64,
    /// Gaussian std `δ`, or logistic scale `s̄`.
    scale: f64,
    ln_scale: f64,
}

impl Curve {
    fn new(variant: Variant, (mean, variance): (f64, f64)) -> Self {
        let std = variance.sqrt();
        let scale = match variant {
            Variant::Logistic => LOGISTIC_SCALE * std,
            Variant::Gaussian => std,
        };
        Self {
            variant,
            mean,
            scale,
            ln_scale: scale.ln(),
        }
    }

    fn reach(&self) -> f64 {
        match self.variant {
            Variant::Logistic => LOGISTIC_REACH,
            Variant::Gaussian => GAUSSIAN_REACH,
        }
    }

    fn ln_pdf(&self, x: f64) -> f64 {
        let z = (x - self.mean) / self.scale;
        match self.variant {
            Variant::Logistic => -z.abs() - 2.0 * (-z.abs()).exp().ln_1p() - self.ln_scale,
            Variant::Gaussian => -0.5 * z * z - LN_SQRT_2PI - self.ln_scale,
        }
    }

    fn ln_cdf(&self, x: f64) -> f64 {
        let z = (x - self.mean) / self.scale;
        match self.variant {
            Variant::Logistic if z >= 0.0 => -(-z).exp().ln_1p(),
            Variant::Logistic => z - z.exp().ln_1p(),
            Variant::Gaussian if z >= 0.0 => (-0.5 * libm::erfc(z * FRAC_1_SQRT_2)).ln_1p(),
            // Φ(z) = ½ erfcx(−z/√2) e^(−z²/2): no underflow however far down the tail.
            Variant::Gaussian => (0.5 * normal::erfcx(-z * FRAC_1_SQRT_2)).ln() - 0.5 * z * z,
        }
    }
}

/// P(each entrant finishes first) for entrants given as performance `(mean, variance)`
/// (see [`performance_distribution`](super::performance_distribution)); variances must be
/// positive. Accurate to 1e-9 each, and the result sums to 1 to rounding.
#[must_use]
pub fn first_place_probabilities(params: &Params, entrants: &[(f64, f64)]) -> Vec<f64> {
    if entrants.len() < 2 {
        return vec![1.0; entrants.len()];
    }
    let curves: Vec<Curve> = entrants
        .iter()
        .map(|&e| Curve::new(params.variant, e))
        .collect();
    let lo = curves
        .iter()
        .map(|c| c.mean - c.reach() * c.scale)
        .fold(f64::INFINITY, f64::min);
    let hi = curves
        .iter()
        .map(|c| c.mean + c.reach() * c.scale)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut breakpoints = vec![lo, hi];
    for curve in &curves {
        breakpoints.extend(
            FEATURE_OFFSETS
                .iter()
                .map(|offset| curve.mean + offset * curve.scale)
                .filter(|&x| lo < x && x < hi),
        );
    }
    breakpoints.sort_by(f64::total_cmp);
    breakpoints.dedup();

    let k = curves.len();
    let mut ln_cdfs = vec![0.0; k];
    // suffix[i] = Σ_{j ≥ i} ln F_j: with a running prefix, Σ_{j ≠ i} ln F_j without the
    // cancellation of subtracting ln F_i from the full sum.
    let mut suffix = vec![0.0; k + 1];
    let raw = quadrature::integrate(&breakpoints, k, TOLERANCE, |x, out| {
        for (ln_cdf, curve) in ln_cdfs.iter_mut().zip(&curves) {
            *ln_cdf = curve.ln_cdf(x);
        }
        for i in (0..k).rev() {
            suffix[i] = suffix[i + 1] + ln_cdfs[i];
        }
        let mut prefix = 0.0;
        for (i, curve) in curves.iter().enumerate() {
            out[i] = (curve.ln_pdf(x) + prefix + suffix[i + 1]).exp();
            prefix += ln_cdfs[i];
        }
    });
    // Ties have probability zero, so the exact values sum to 1; dividing by the computed sum
    // moves each by no more than the quadrature error.
    let total: f64 = raw.iter().sum();
    raw.iter().map(|p| (p / total).clamp(0.0, 1.0)).collect()
}

/// The k×k matrix whose entry `[i][j]` is P(entrant `i` finishes ahead of entrant `j`),
/// exact in the pool's model (`[i][j] + [j][i] = 1`; the diagonal, an entrant against an
/// independent copy of itself, is ½). In the Gaussian model an entry equals [`beats`]; in
/// the logistic model it is the integral of which [`beats`] is the closed-form approximation,
/// and for two entrants it equals their [`first_place_probabilities`].
#[must_use]
pub fn pairwise_matrix(params: &Params, entrants: &[(f64, f64)]) -> Vec<Vec<f64>> {
    let k = entrants.len();
    let mut matrix = vec![vec![0.5; k]; k];
    for i in 0..k {
        for j in i + 1..k {
            let (ahead, behind) = match params.variant {
                Variant::Gaussian => (
                    beats(params, entrants[i], entrants[j]),
                    beats(params, entrants[j], entrants[i]),
                ),
                Variant::Logistic => {
                    let p = first_place_probabilities(params, &[entrants[i], entrants[j]]);
                    (p[0], p[1])
                }
            };
            matrix[i][j] = ahead;
            matrix[j][i] = behind;
        }
    }
    matrix
}

/// Expected rank (1 is first) of each entrant: `1 + Σ_{j≠i} P(j finishes ahead of i)`, from
/// a [`pairwise_matrix`]. The ranks sum to `k(k+1)/2`.
#[must_use]
pub fn expected_ranks(pairwise: &[Vec<f64>]) -> Vec<f64> {
    (0..pairwise.len())
        .map(|i| {
            1.0 + pairwise
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, row)| row[i])
                .sum::<f64>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Accuracy promised for every probability.
    const ACCURACY: f64 = 1e-9;

    fn params(variant: Variant) -> Params {
        Params {
            variant,
            ..Params::default()
        }
    }

    fn variant() -> impl Strategy<Value = Variant> {
        prop_oneof![Just(Variant::Logistic), Just(Variant::Gaussian)]
    }

    /// Entrants as `(mean, variance)`: means close together or up to 1.5e5 apart, stds from
    /// a lone certain player's to a large team's.
    fn entrants(counts: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(f64, f64)>> {
        (
            prop::collection::vec((-3_000.0..3_000.0f64, 50.0..800.0f64), counts),
            prop_oneof![Just(1.0), Just(50.0)],
        )
            .prop_map(|(raw, spread)| {
                raw.into_iter()
                    .map(|(mean, std)| (mean * spread, std * std))
                    .collect()
            })
    }

    /// `∫ f_i Π_{j≠i} F_j` by the midpoint rule on a fine grid, with the plain pdf and cdf.
    fn riemann_first_place(entrants: &[(f64, f64)]) -> Vec<f64> {
        const REACH: f64 = 12.0;
        const STEPS_PER_STD: f64 = 40.0;
        let stds: Vec<f64> = entrants.iter().map(|e| e.1.sqrt()).collect();
        let lo = entrants
            .iter()
            .zip(&stds)
            .map(|(e, s)| e.0 - REACH * s)
            .fold(f64::INFINITY, f64::min);
        let hi = entrants
            .iter()
            .zip(&stds)
            .map(|(e, s)| e.0 + REACH * s)
            .fold(f64::NEG_INFINITY, f64::max);
        let h = stds.iter().copied().fold(f64::INFINITY, f64::min) / STEPS_PER_STD;
        let steps = ((hi - lo) / h).ceil() as usize;
        let mut sums = vec![0.0; entrants.len()];
        for step in 0..steps {
            let x = lo + (step as f64 + 0.5) * h;
            for (i, sum) in sums.iter_mut().enumerate() {
                let mut value = normal::pdf((x - entrants[i].0) / stds[i]) / stds[i];
                for (j, other) in entrants.iter().enumerate() {
                    if j != i {
                        value *= normal::cdf((x - other.0) / stds[j]);
                    }
                }
                *sum += value * h;
            }
        }
        sums
    }

    #[test]
    fn means_1e5_apart_give_certainty_and_never_nan() {
        for variant in [Variant::Logistic, Variant::Gaussian] {
            let entrants = [
                (0.0, 250.0 * 250.0),
                (1e5, 400.0 * 400.0),
                (-1e5, 210.0 * 210.0),
            ];
            let p = first_place_probabilities(&params(variant), &entrants);
            assert!(
                (p[1] - 1.0).abs() < ACCURACY && p[0] < ACCURACY && p[2] < ACCURACY,
                "{variant:?}: {p:?}"
            );
            let ranks = expected_ranks(&pairwise_matrix(&params(variant), &entrants));
            for (rank, want) in ranks.iter().zip([2.0, 1.0, 3.0]) {
                assert!((rank - want).abs() < ACCURACY, "{variant:?}: {ranks:?}");
            }
        }
    }

    #[test]
    fn sixty_four_identical_entrants_each_win_one_time_in_sixty_four() {
        const COUNT: usize = 64;
        for variant in [Variant::Logistic, Variant::Gaussian] {
            let p = first_place_probabilities(&params(variant), &[(1500.0, 9e4); COUNT]);
            for pi in p {
                assert!(
                    (pi - 1.0 / COUNT as f64).abs() < ACCURACY,
                    "{variant:?}: {pi}"
                );
            }
        }
    }

    #[test]
    fn the_logistic_closed_form_stays_within_a_point_and_a_half_of_the_exact_value() {
        // The largest gap seen on this grid is 0.0102 (equal variances, means one std apart).
        const APPROXIMATION_GAP: f64 = 0.015;
        let params = params(Variant::Logistic);
        for gap in [0.0, 50.0, 150.0, 300.0, 600.0, 1_200.0, 3_000.0] {
            for (var_a, var_b) in [(9e4, 9e4), (4.5e4, 3e5), (4e4, 1e6)] {
                let (a, b) = ((gap, var_a), (0.0, var_b));
                let exact = pairwise_matrix(&params, &[a, b])[0][1];
                let closed = beats(&params, a, b);
                assert!(
                    (exact - closed).abs() < APPROXIMATION_GAP,
                    "gap {gap}, variances {var_a} {var_b}: {exact} vs {closed}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn first_place_probabilities_lie_in_0_1_and_sum_to_1(
            variant in variant(),
            entrants in entrants(2..9),
        ) {
            let p = first_place_probabilities(&params(variant), &entrants);
            prop_assert!(p.iter().all(|pi| (0.0..=1.0).contains(pi)), "{:?}", p);
            prop_assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{:?}", p);
        }

        #[test]
        fn the_pairwise_matrix_holds_complementary_probabilities(
            variant in variant(),
            entrants in entrants(2..7),
        ) {
            let m = pairwise_matrix(&params(variant), &entrants);
            for (i, row) in m.iter().enumerate() {
                for (j, &p) in row.iter().enumerate() {
                    prop_assert!((0.0..=1.0).contains(&p), "[{}][{}] = {}", i, j, p);
                    prop_assert!((p + m[j][i] - 1.0).abs() < 1e-12, "[{}][{}] = {}", i, j, p);
                }
            }
        }

        #[test]
        fn for_two_entrants_p_first_is_the_probability_of_beating_the_other(
            variant in variant(),
            entrants in entrants(2..3),
        ) {
            let params = params(variant);
            let p = first_place_probabilities(&params, &entrants);
            let m = pairwise_matrix(&params, &entrants);
            prop_assert!((p[0] - m[0][1]).abs() < ACCURACY, "{} vs {}", p[0], m[0][1]);
            prop_assert!((p[1] - m[1][0]).abs() < ACCURACY, "{} vs {}", p[1], m[1][0]);
            if variant == Variant::Gaussian {
                let closed = beats(&params, entrants[0], entrants[1]);
                prop_assert!((p[0] - closed).abs() < ACCURACY, "{} vs {}", p[0], closed);
            }
        }

        #[test]
        fn expected_ranks_sum_to_k_times_k_plus_1_over_2(
            variant in variant(),
            entrants in entrants(2..7),
        ) {
            let ranks = expected_ranks(&pairwise_matrix(&params(variant), &entrants));
            let k = entrants.len() as f64;
            prop_assert!((ranks.iter().sum::<f64>() - k * (k + 1.0) / 2.0).abs() < 1e-9);
            prop_assert!(ranks.iter().all(|r| (1.0..=k).contains(r)), "{:?}", ranks);
        }

        #[test]
        fn equal_entrants_have_equal_chances(
            variant in variant(),
            count in 2..12usize,
            mean in -1e5..1e5f64,
            std in 50.0..2_000.0f64,
        ) {
            let entrants = vec![(mean, std * std); count];
            let p = first_place_probabilities(&params(variant), &entrants);
            let ranks = expected_ranks(&pairwise_matrix(&params(variant), &entrants));
            for (pi, rank) in p.iter().zip(&ranks) {
                prop_assert!((pi - 1.0 / count as f64).abs() < 1e-12, "{:?}", p);
                prop_assert!((rank - (count as f64 + 1.0) / 2.0).abs() < 1e-12, "{:?}", ranks);
            }
        }

        #[test]
        fn shifting_every_mean_changes_no_probability(
            variant in variant(),
            entrants in entrants(2..6),
            shift in -1e4..1e4f64,
        ) {
            let params = params(variant);
            let shifted: Vec<(f64, f64)> = entrants.iter().map(|&(m, v)| (m + shift, v)).collect();
            let (p, q) = (
                first_place_probabilities(&params, &entrants),
                first_place_probabilities(&params, &shifted),
            );
            for (a, b) in p.iter().zip(&q) {
                prop_assert!((a - b).abs() < ACCURACY, "{:?} vs {:?}", p, q);
            }
            let (m, n) = (pairwise_matrix(&params, &entrants), pairwise_matrix(&params, &shifted));
            for (a, b) in m.iter().flatten().zip(n.iter().flatten()) {
                prop_assert!((a - b).abs() < ACCURACY, "{:?} vs {:?}", m, n);
            }
        }

        #[test]
        fn listing_entrants_in_another_order_permutes_their_probabilities(
            variant in variant(),
            entrants in entrants(2..7),
        ) {
            let params = params(variant);
            let reversed: Vec<(f64, f64)> = entrants.iter().rev().copied().collect();
            let p = first_place_probabilities(&params, &entrants);
            let q = first_place_probabilities(&params, &reversed);
            for (a, b) in p.iter().zip(q.iter().rev()) {
                prop_assert!((a - b).abs() < ACCURACY, "{:?} vs {:?}", p, q);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        #[test]
        fn three_gaussian_entrants_match_a_fine_riemann_sum(
            raw in prop::collection::vec((-1_500.0..1_500.0f64, 50.0..800.0f64), 3..4),
        ) {
            let entrants: Vec<(f64, f64)> = raw.iter().map(|&(m, s)| (m, s * s)).collect();
            let p = first_place_probabilities(&params(Variant::Gaussian), &entrants);
            let brute = riemann_first_place(&entrants);
            for (a, b) in p.iter().zip(&brute) {
                prop_assert!((a - b).abs() < ACCURACY, "{:?} vs {:?}", p, brute);
            }
        }
    }
}
