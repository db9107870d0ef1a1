//! Match quality (TrueSkill paper; MATH.md "Predictions"): the probability of a draw relative
//! to the most even match possible with the same uncertainties, for two sides and for k.
//! It is the same formula in both performance models, and it depends only on the players'
//! `μ`, `σ` and the pool's `β`.

use super::super::params::Params;
use super::super::player::PlayerState;
use super::super::Error;

/// Quality of a match between sides `a` and `b`:
/// `sqrt(n β² / c²) · exp(−(Σ_a μ − Σ_b μ)² / (2 c²))` with `n` the players in the match and
/// `c² = n β² + Σ σ²`. In `(0, 1]`, 1 only for equal sums of ratings and no uncertainty.
/// An empty side is an error naming `entrants[0].players` or `entrants[1].players`.
pub fn match_quality_two(
    params: &Params,
    a: &[&PlayerState],
    b: &[&PlayerState],
) -> Result<f64, Error> {
    check_sides(&[a.len(), b.len()])?;
    let beta2 = params.beta * params.beta;
    let players = (a.len() + b.len()) as f64;
    let sigma2: f64 = a.iter().chain(b).map(|p| p.sigma * p.sigma).sum();
    let c2 = players * beta2 + sigma2;
    let gap = a.iter().map(|p| p.mu).sum::<f64>() - b.iter().map(|p| p.mu).sum::<f64>();
    Ok((players * beta2 / c2).sqrt() * (-gap * gap / (2.0 * c2)).exp())
}

/// Quality of a match between `k ≥ 2` sides:
/// `sqrt(det(β² AᵀA) / det(β² AᵀA + AᵀΣA)) · exp(−½ μᵀA (β² AᵀA + AᵀΣA)⁻¹ Aᵀμ)`, where
/// column `c` of `A` is side `c` minus side `c + 1` (+1 for the first side's players, −1 for
/// the second's) and `Σ = diag(σ²)`. Any other basis of side differences gives the same
/// value, so the order of the sides does not matter; for two sides it is
/// [`match_quality_two`]. Fewer than two sides is an error naming `entrants`, an empty one
/// names `entrants[i].players`.
pub fn match_quality<'a, S: AsRef<[&'a PlayerState]>>(
    params: &Params,
    sides: &[S],
) -> Result<f64, Error> {
    let sizes: Vec<usize> = sides.iter().map(|s| s.as_ref().len()).collect();
    check_sides(&sizes)?;
    let beta2 = params.beta * params.beta;
    // Every player of a side has the same row of A, so AᵀWA for a diagonal W only needs the
    // sum of W over each side: the matrices are (k−1)×(k−1) whatever the team sizes.
    let players: Vec<f64> = sizes.iter().map(|&n| beta2 * n as f64).collect();
    let variances: Vec<f64> = sides
        .iter()
        .map(|s| s.as_ref().iter().map(|p| p.sigma * p.sigma).sum())
        .collect();
    let means: Vec<f64> = sides
        .iter()
        .map(|s| s.as_ref().iter().map(|p| p.mu).sum())
        .collect();
    let gaps: Vec<f64> = means.windows(2).map(|m| m[0] - m[1]).collect();
    let spread: Vec<f64> = players.iter().zip(&variances).map(|(p, v)| p + v).collect();
    let (Some(skill), Some(total)) = (
        TridiagonalCholesky::of_difference_gram(&players),
        TridiagonalCholesky::of_difference_gram(&spread),
    ) else {
        // Both matrices are positive definite for non-empty sides and β > 0; a failure means
        // the inputs were not finite.
        return Ok(0.0);
    };
    let quadratic: f64 = total.forward(&gaps).iter().map(|y| y * y).sum();
    Ok((0.5 * (skill.ln_det() - total.ln_det()) - 0.5 * quadratic).exp())
}

/// Refuses fewer than two sides and empty sides.
fn check_sides(sizes: &[usize]) -> Result<(), Error> {
    if sizes.len() < 2 {
        return Err(Error::prediction("entrants", "needs at least 2 entrants"));
    }
    match sizes.iter().position(|&n| n == 0) {
        Some(i) => Err(Error::prediction(
            format!("entrants[{i}].players"),
            "has no players",
        )),
        None => Ok(()),
    }
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

    /// Agreement expected between two evaluations of the same quality.
    const AGREEMENT: f64 = 1e-12;

    fn player(mu: f64, sigma: f64) -> PlayerState {
        let mut state = PlayerState::new(&Params::default());
        state.mu = mu;
        state.sigma = sigma;
        state
    }

    /// Sides of one to four players with ratings near each other and realistic uncertainties.
    fn sides(counts: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Vec<PlayerState>>> {
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

    fn refs(sides: &[Vec<PlayerState>]) -> Vec<Vec<&PlayerState>> {
        sides.iter().map(|side| side.iter().collect()).collect()
    }

    fn quality(sides: &[Vec<PlayerState>]) -> f64 {
        match match_quality(&Params::default(), &refs(sides)) {
            Ok(q) => q,
            Err(e) => panic!("valid sides refused: {e}"),
        }
    }

    #[test]
    fn two_equal_newcomers_have_the_quality_of_the_formula_worked_by_hand() {
        // c² = 2·200² + 2·350² = 325 000, and equal ratings leave only sqrt(2·200² / c²).
        const BY_HAND: f64 = 0.496_138_938_356_833_8;
        let params = Params::default();
        let (a, b) = (PlayerState::new(&params), PlayerState::new(&params));
        let two = match_quality_two(&params, &[&a], &[&b]);
        let k = match_quality(&params, &[[&a], [&b]]);
        for q in [two, k] {
            assert!(
                matches!(q, Ok(q) if (q - BY_HAND).abs() < AGREEMENT),
                "{q:?}"
            );
        }
    }

    #[test]
    fn fewer_than_two_sides_or_an_empty_side_are_refused() {
        let params = Params::default();
        let a = PlayerState::new(&params);
        let cases: [(&[Vec<&PlayerState>], &str); 4] = [
            (&[], "entrants"),
            (&[vec![&a]], "entrants"),
            (&[vec![&a], vec![]], "entrants[1].players"),
            (&[vec![], vec![&a], vec![&a]], "entrants[0].players"),
        ];
        for (sides, field) in cases {
            let error = match_quality(&params, sides).err();
            assert_eq!(
                error.as_ref().and_then(Error::field),
                Some(field),
                "{} sides: {error:?}",
                sides.len()
            );
        }
        let error = match_quality_two(&params, &[], &[&a]).err();
        assert_eq!(
            error.as_ref().and_then(Error::field),
            Some("entrants[0].players")
        );
    }

    proptest! {
        #[test]
        fn the_k_side_formula_with_two_sides_is_the_two_side_formula(sides in sides(2..3)) {
            let params = Params::default();
            let r = refs(&sides);
            let two = match_quality_two(&params, &r[0], &r[1]);
            let k = match_quality(&params, &r);
            prop_assert!(matches!((two, k), (Ok(a), Ok(b)) if (a - b).abs() < AGREEMENT));
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
            let reversed: Vec<Vec<PlayerState>> = sides.iter().rev().cloned().collect();
            let (q, r) = (quality(&sides), quality(&reversed));
            prop_assert!((q - r).abs() <= AGREEMENT * q.max(r), "{} vs {}", q, r);
        }

        #[test]
        fn shifting_every_rating_does_not_change_quality_between_sides_of_one_size(
            sides in sides(2..6),
            shift in -1e4..1e4f64,
        ) {
            let solo: Vec<Vec<PlayerState>> = sides.iter().map(|s| vec![s[0].clone()]).collect();
            let mut shifted = solo.clone();
            for p in shifted.iter_mut().flatten() {
                p.mu += shift;
            }
            let (q, r) = (quality(&solo), quality(&shifted));
            prop_assert!((q - r).abs() < 1e-9, "{} vs {}", q, r);
        }
    }
}
