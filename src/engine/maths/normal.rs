//! The standard normal distribution, with the ratios the Gaussian model needs evaluated
//! stably in the tails (through the scaled complementary error function, never as a quotient
//! of two numbers that underflow).

use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// `sqrt(2 / π)`.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// From here on `erfcx` uses its asymptotic series; below it `exp(x²) erfc(x)` is accurate
/// (no overflow, and libm's `erfc` keeps full relative precision).
const ERFCX_ASYMPTOTIC_FROM: f64 = 12.0;
/// Terms of the asymptotic series: past 12 their size is below 1e-16 relative at x = 12.
const ERFCX_SERIES_TERMS: usize = 12;

/// Density of N(0, 1).
#[must_use]
pub fn pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
}

/// Distribution function of N(0, 1).
#[must_use]
pub fn cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z * FRAC_1_SQRT_2)
}

/// `exp(x²) · erfc(x)`, finite for every `x` above about -26.6 (and +∞ below).
#[must_use]
pub fn erfcx(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 * (x * x).exp() - erfcx(-x);
    }
    if x < ERFCX_ASYMPTOTIC_FROM {
        return (x * x).exp() * libm::erfc(x);
    }
    // erfcx(x) ~ 1/(x√π) · Σ_k (-1)^k (2k-1)!! / (2x²)^k
    let inv = 1.0 / (2.0 * x * x);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..ERFCX_SERIES_TERMS {
        term *= -((2 * k - 1) as f64) * inv;
        sum += term;
    }
    sum / (x * PI.sqrt())
}

/// The `p`-quantile of N(0, 1), for `p` in (0, 1): Newton's method on [`cdf`] from the rational
/// first guess of Abramowitz & Stegun 26.2.23 (within 4.5e-4), so it is as exact as `cdf`. It
/// works in the lower tail, where `cdf` keeps its relative precision: for an upper quantile
/// near 1, pass the complement and negate.
#[must_use]
pub fn quantile(p: f64) -> f64 {
    if p > 0.5 {
        return -quantile(1.0 - p);
    }
    let t = (-2.0 * p.ln()).sqrt();
    let mut x = -(t
        - (2.515_517 + t * (0.802_853 + t * 0.010_328))
            / (1.0 + t * (1.432_788 + t * (0.189_269 + t * 0.001_308))));
    for _ in 0..8 {
        let step = (cdf(x) - p) / pdf(x);
        x -= step;
        if step.abs() <= 4.0 * f64::EPSILON * x.abs().max(1.0) {
            break;
        }
    }
    x
}

/// The hazard `φ(z) / (1 − Φ(z))`.
#[must_use]
pub fn upper_ratio(z: f64) -> f64 {
    SQRT_2_OVER_PI / erfcx(z * FRAC_1_SQRT_2)
}

/// `φ(z) / Φ(z)`.
#[must_use]
pub fn lower_ratio(z: f64) -> f64 {
    SQRT_2_OVER_PI / erfcx(-z * FRAC_1_SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfcx_is_continuous_where_its_formula_changes() {
        let x = ERFCX_ASYMPTOTIC_FROM;
        let below = (x * x).exp() * libm::erfc(x);
        let above = erfcx(x);
        assert!((below / above - 1.0).abs() < 1e-12, "{below} {above}");
    }

    #[test]
    fn ratios_match_the_direct_quotient_where_that_is_safe() {
        for i in -80..=80 {
            let z = f64::from(i) / 10.0;
            let direct_upper = pdf(z) / cdf(-z);
            let direct_lower = pdf(z) / cdf(z);
            assert!(
                (upper_ratio(z) / direct_upper - 1.0).abs() < 1e-9,
                "upper at {z}"
            );
            assert!(
                (lower_ratio(z) / direct_lower - 1.0).abs() < 1e-9,
                "lower at {z}"
            );
        }
    }

    #[test]
    fn quantile_inverts_cdf_from_the_deep_tail_to_the_centre() {
        for p in [
            1e-300, 1e-100, 1e-20, 1e-6, 0.001, 0.025, 0.3, 0.5, 0.55, 0.975, 0.999,
        ] {
            let x = quantile(p);
            // Φ's relative slope is about |x| in the tail: one ulp of x is |x| ulps of Φ.
            let tolerance = 1e-13 * x.abs().max(1.0);
            assert!((cdf(x) / p - 1.0).abs() < tolerance, "p = {p}: x = {x}");
        }
        assert!((quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-14);
        assert!(quantile(0.5).abs() < 1e-15);
    }

    #[test]
    fn ratios_stay_finite_far_in_the_tails() {
        for z in [-1e6, -500.0, -40.0, 40.0, 500.0, 1e6] {
            let (u, l) = (upper_ratio(z), lower_ratio(z));
            assert!(u.is_finite() && u >= 0.0, "upper at {z}: {u}");
            assert!(l.is_finite() && l >= 0.0, "lower at {z}: {l}");
        }
        // The hazard grows like z; φ/Φ like -z.
        assert!((upper_ratio(1e3) / 1e3 - 1.0).abs() < 1e-5);
        assert!((lower_ratio(-1e3) / 1e3 - 1.0).abs() < 1e-5);
    }
}
