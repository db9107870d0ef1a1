//! Match quality (TrueSkill paper; docs/elo-mmr.md, "Predictions"): the probability of a draw
//! relative to the most even match possible with the same uncertainties, for two sides and
//! for k.
//! It is the same formula in both performance models, and it depends only on each side's
//! [`Performance`]: its summed rating, skill variance and performance noise.

use super::super::system::Performance;
use super::super::{Error, PredictionPath, PredictionProblem};

/// Quality of a match between sides `a` and `b`:
/// `sqrt(N / c²) · exp(−(μ_a − μ_b)² / (2 c²))` with `N` the sides' summed performance noise
/// (`n β²` for `n` players) and `c² = N + Σ σ²`. In `(0, 1]`, 1 only for equal ratings and no
/// uncertainty.
#[must_use]
pub fn match_quality_two(a: &Performance, b: &Performance) -> f64 {
    let noise = a.noise_variance + b.noise_variance;
    let c2 = noise + (a.skill_variance + b.skill_variance);
    let gap = a.mean - b.mean;
    (noise / c2).sqrt() * (-gap * gap / (2.0 * c2)).exp()
}

/// Quality of a match between `k ≥ 2` sides:
/// `sqrt(det(AᵀNA) / det(AᵀNA + AᵀΣA)) · exp(−½ μᵀA (AᵀNA + AᵀΣA)⁻¹ Aᵀμ)`, where
/// column `c` of `A` is side `c` minus side `c + 1` (+1 for the first side's players, −1 for
/// the second's), `N = diag(β²)` is each player's performance noise and `Σ = diag(σ²)`. Any
/// other basis of side differences gives the same value, so the order of the sides does not
/// matter; for two sides it is [`match_quality_two`]. Fewer than two sides is an error naming
/// `entrants`.
pub fn match_quality(sides: &[Performance]) -> Result<f64, Error> {
    if sides.len() < 2 {
        return Err(Error::prediction(
            PredictionPath::Entrants,
            PredictionProblem::TooFewEntrants,
        ));
    }
    // Every player of a side has the same row of A, so AᵀWA for a diagonal W only needs the
    // sum of W over each side: the matrices are (k−1)×(k−1) whatever the team sizes.
    let noise: Vec<f64> = sides.iter().map(|s| s.noise_variance).collect();
    let gaps: Vec<f64> = sides.windows(2).map(|s| s[0].mean - s[1].mean).collect();
    let spread: Vec<f64> = sides
        .iter()
        .map(|s| s.noise_variance + s.skill_variance)
        .collect();
    let (Some(skill), Some(total)) = (
        TridiagonalCholesky::of_difference_gram(&noise),
        TridiagonalCholesky::of_difference_gram(&spread),
    ) else {
        // Both matrices are positive definite when every side has some performance noise
        // (players, and β > 0); a failure means a side had none or an input was not finite.
        return Ok(0.0);
    };
    let quadratic: f64 = total.forward(&gaps).iter().map(|y| y * y).sum();
    Ok((0.5 * (skill.ln_det() - total.ln_det()) - 0.5 * quadratic).exp())
}

/// The Cholesky factor `L` (`L Lᵀ = M`) of `M = AᵀWA`, for the side-difference matrix `A` of
/// [`match_quality`] and a diagonal `W` whose entries over side `s` sum to `w_s`. Column `c`
/// of `A` touches sides `c` and `c + 1` only, so `M` is tridiagonal (`M_cc = w_c + w_{c+1}`,
/// `M_{c,c+1} = −w_{c+1}`) and so is `L`: factoring and solving cost O(k), not O(k³).
struct TridiagonalCholesky {
    /// `L_cc`.
    diagonal: Vec<f64>,
    /// `L_{c+1,c}`.
    below: Vec<f64>,
}

impl TridiagonalCholesky {
    /// `None` when the matrix is not (numerically) positive definite.
    fn of_difference_gram(side_weights: &[f64]) -> Option<Self> {
        let n = side_weights.len() - 1;
        let mut diagonal = Vec::with_capacity(n);
        let mut below = Vec::with_capacity(n.saturating_sub(1));
        for c in 0..n {
            let pivot = side_weights[c] + side_weights[c + 1];
            let rest = pivot - below.last().map_or(0.0, |l: &f64| l * l);
            if !(rest > 0.0 && rest.is_finite()) {
                return None;
            }
            let d = rest.sqrt();
            diagonal.push(d);
            if c + 1 < n {
                below.push(-side_weights[c + 1] / d);
            }
        }
        Some(Self { diagonal, below })
    }

    /// `ln det M = 2 Σ ln L_cc`: products of the pivots could overflow for many sides.
    fn ln_det(&self) -> f64 {
        2.0 * self.diagonal.iter().map(|d| d.ln()).sum::<f64>()
    }

    /// `y` with `L y = b`, so that `bᵀ M⁻¹ b = yᵀ y`.
    fn forward(&self, b: &[f64]) -> Vec<f64> {
        let mut y: Vec<f64> = Vec::with_capacity(b.len());
        for (c, (&bc, &d)) in b.iter().zip(&self.diagonal).enumerate() {
            let carried = if c == 0 {
                0.0
            } else {
                self.below[c - 1] * y[c - 1]
            };
            y.push((bc - carried) / d);
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{EloMmr, EloMmrParams, EloMmrState, RatingSystem};

    /// Agreement expected between two evaluations of the same quality.
    const AGREEMENT: f64 = 1e-12;

    fn player(mu: f64, sigma: f64) -> EloMmrState {
        let mut state = EloMmrState::new(&EloMmrParams::default());
        state.mu = mu;
        state.sigma = sigma;
        state
    }

    /// Sides of one to four players with ratings near each other and realistic uncertainties.
    fn sides(counts: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Vec<EloMmrState>>> {
        prop::collection::vec(
            prop::collection::vec((1_000.0..2_000.0f64, 30.0..400.0f64), 1..5),
            counts,
        )
        .prop_map(|sides| {
            sides
                .into_iter()
                .map(|side| side.into_iter().map(|(m, s)| player(m, s)).collect())
                .collect()
        })
    }

    /// Each side's performance in a pool with the default parameters.
    fn performances(sides: &[Vec<EloMmrState>]) -> Vec<Performance> {
        sides
            .iter()
            .map(|side| {
                let members: Vec<&EloMmrState> = side.iter().collect();
                EloMmr::performance(&EloMmrParams::default(), &members)
            })
            .collect()
    }

    fn quality(sides: &[Vec<EloMmrState>]) -> f64 {
        match match_quality(&performances(sides)) {
            Ok(q) => q,
            Err(e) => panic!("valid sides refused: {e}"),
        }
    }

    #[test]
    fn two_equal_newcomers_have_the_quality_of_the_formula_worked_by_hand() {
        // c² = 2·200² + 2·350² = 325 000, and equal ratings leave only sqrt(2·200² / c²).
        const BY_HAND: f64 = 0.496_138_938_356_833_8;
        let newcomer = EloMmrState::new(&EloMmrParams::default());
        let sides = performances(&[vec![newcomer.clone()], vec![newcomer]]);
        let two = match_quality_two(&sides[0], &sides[1]);
        assert!((two - BY_HAND).abs() < AGREEMENT, "{two}");
        let k = match_quality(&sides);
        assert!(
            matches!(k, Ok(q) if (q - BY_HAND).abs() < AGREEMENT),
            "{k:?}"
        );
    }

    #[test]
    fn fewer_than_two_sides_are_refused() {
        let one = performances(&[vec![EloMmrState::new(&EloMmrParams::default())]]);
        for sides in [&[][..], &one] {
            let error = match_quality(sides).err();
            assert_eq!(
                error.as_ref().and_then(Error::field).as_deref(),
                Some("entrants")
            );
        }
    }

    proptest! {
        #[test]
        fn the_k_side_formula_with_two_sides_is_the_two_side_formula(sides in sides(2..3)) {
            let p = performances(&sides);
            let two = match_quality_two(&p[0], &p[1]);
            let k = match_quality(&p);
            prop_assert!(matches!(k, Ok(k) if (two - k).abs() < AGREEMENT), "{} {:?}", two, k);
        }

        #[test]
        fn quality_lies_in_0_1(sides in sides(2..7)) {
            let q = quality(&sides);
            prop_assert!(q > 0.0 && q <= 1.0, "{}", q);
        }

        #[test]
        fn quality_is_highest_when_sides_are_equal_and_falls_as_one_moves_away(
            sides in sides(2..6),
            near in 1.0..500.0f64,
            further in 1.0..500.0f64,
            moved in 0..6usize,
        ) {
            let mut level = sides.clone();
            for side in &mut level {
                let n = side.len() as f64;
                for p in side.iter_mut() {
                    p.mu = 1_500.0 * 4.0 / n;
                }
            }
            let best = quality(&level);
            prop_assert!(quality(&sides) <= best + AGREEMENT);
            let moved = moved % sides.len();
            let step = |by: f64| {
                let mut shifted = level.clone();
                shifted[moved][0].mu += by;
                quality(&shifted)
            };
            let (q_near, q_far) = (step(near), step(near + further));
            prop_assert!(q_near < best && q_far < q_near, "{} {} {}", best, q_near, q_far);
        }

        #[test]
        fn the_order_of_the_sides_does_not_change_quality(sides in sides(2..7)) {
            let reversed: Vec<Vec<EloMmrState>> = sides.iter().rev().cloned().collect();
            let (q, r) = (quality(&sides), quality(&reversed));
            prop_assert!((q - r).abs() <= AGREEMENT * q.max(r), "{} vs {}", q, r);
        }

        #[test]
        fn shifting_every_rating_does_not_change_quality_between_sides_of_one_size(
            sides in sides(2..6),
            shift in -1e4..1e4f64,
        ) {
            let solo: Vec<Vec<EloMmrState>> = sides.iter().map(|s| vec![s[0].clone()]).collect();
            let mut shifted = solo.clone();
            for p in shifted.iter_mut().flatten() {
                p.mu += shift;
            }
            let (q, r) = (quality(&solo), quality(&shifted));
            prop_assert!((q - r).abs() < 1e-9, "{} vs {}", q, r);
        }
    }
}
