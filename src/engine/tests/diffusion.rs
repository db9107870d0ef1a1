//! The four properties of diffusion (Algorithm 2) that `MATH.md` lists, on random beliefs with
//! logistic factors, for every ρ from 0 to ∞ and both variants: it keeps μ, adds exactly `g²`
//! to σ², two diffusions equal one of the summed variance, and no drift changes nothing.

use mmr_engine::{EloMmrParams, EloMmrState, Variant};
use proptest::prelude::*;

use crate::support::{any_params, belief, prior_spec, PriorSpec};

/// Relative error allowed where the same quantity is reached by different roundings.
const RELATIVE: f64 = 1e-10;

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= RELATIVE * scale.abs().max(a.abs()).max(b.abs())
}

fn total_weight(state: &EloMmrState) -> f64 {
    state.w0 + state.factors.iter().map(|f| state.weight(f)).sum::<f64>()
}

fn diffuse(state: &EloMmrState, params: &EloMmrParams, g2: f64) -> EloMmrState {
    state.diffused(g2, params.rho, params.variant)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn diffusion_keeps_mu_and_raises_the_variance_by_exactly_g_squared(
        params in any_params(),
        spec in prior_spec(),
        g2 in 0.0..50_000.0f64,
    ) {
        let before = belief(&params, &spec);
        let after = diffuse(&before, &params, g2);
        prop_assert_eq!(after.mu, before.mu);
        let variance = before.sigma * before.sigma + g2;
        prop_assert!(
            close(after.sigma * after.sigma, variance, variance),
            "σ² {} after adding {} to {}",
            after.sigma * after.sigma,
            g2,
            before.sigma * before.sigma
        );
        // The belief's weights must still add up to 1/σ².
        prop_assert!(close(total_weight(&after), 1.0 / variance, 1.0 / variance));
    }

    #[test]
    fn two_diffusions_equal_one_diffusion_of_their_summed_variance(
        params in any_params(),
        spec in prior_spec(),
        g1 in 0.0..20_000.0f64,
        g2 in 0.0..20_000.0f64,
    ) {
        let start = belief(&params, &spec);
        let twice = diffuse(&diffuse(&start, &params, g1), &params, g2);
        let once = diffuse(&start, &params, g1 + g2);
        prop_assert_eq!(twice.mu, once.mu);
        let weight = total_weight(&once);
        let (sigma, mu) = (once.sigma, once.mu);
        prop_assert!(close(twice.sigma, sigma, sigma), "σ {} vs {}", twice.sigma, sigma);
        prop_assert!(close(twice.w0, once.w0, weight), "w0 {} vs {}", twice.w0, once.w0);
        prop_assert!(close(twice.p0, once.p0, mu.abs() + 1.0), "p0 {} vs {}", twice.p0, once.p0);
        prop_assert_eq!(twice.factors.len(), once.factors.len());
        for (a, b) in twice.factors.iter().zip(&once.factors) {
            prop_assert_eq!(a.perf, b.perf);
            let (wa, wb) = (twice.weight(a), once.weight(b));
            prop_assert!(close(wa, wb, weight), "w_k {} vs {}", wa, wb);
        }
    }

    #[test]
    fn diffusion_without_drift_changes_nothing_and_a_tiny_drift_changes_almost_nothing(
        params in any_params().prop_filter("ρ finite, logistic", |p| {
            p.rho.is_finite() && p.variant == Variant::Logistic
        }),
        spec in prior_spec(),
    ) {
        let start = belief(&params, &spec);
        prop_assert_eq!(&diffuse(&start, &params, 0.0), &start);
        // g → 0: the result tends to the belief itself. Every change is about g²/σ² times ρ
        // times the belief's own scale (its weights, the distance from p0 to μ).
        let tiny = diffuse(&start, &params, 1e-12 * start.sigma * start.sigma);
        let weight = total_weight(&start);
        prop_assert_eq!(tiny.mu, start.mu);
        prop_assert!((tiny.sigma - start.sigma).abs() <= 1e-9 * start.sigma);
        prop_assert!((tiny.w0 - start.w0).abs() <= 1e-9 * weight, "w0 {} vs {}", tiny.w0, start.w0);
        let room = (start.mu - start.p0).abs();
        let rounding = 1e-12 * (start.p0.abs() + 1.0);
        prop_assert!(
            (tiny.p0 - start.p0).abs() <= 1e-6 * room + rounding,
            "p0 {} vs {}", tiny.p0, start.p0
        );
        for (a, b) in tiny.factors.iter().zip(&start.factors) {
            prop_assert!((tiny.weight(a) - start.weight(b)).abs() <= 1e-9 * weight);
        }
    }

    #[test]
    fn diffusion_keeps_mu_the_mode_of_the_belief(
        params in any_params().prop_filter("logistic", |p| p.variant == Variant::Logistic),
        spec in prior_spec(),
        g2 in 0.0..50_000.0f64,
    ) {
        // Every weight of L' is scaled by the same κ^(1+ρ) around μ, so L'(μ) stays 0: an
        // update after diffusion starts from the same mode.
        let after = diffuse(&belief(&params, &spec), &params, g2);
        let slope = posterior_slope(&after, after.mu);
        // Zero up to the root finder's tolerance, measured against the belief's total weight.
        prop_assert!(slope.abs() / total_weight(&after) <= 1e-7, "L'(μ) = {}", slope);
    }
}

/// `L'(x)` of `MATH.md` step 4 for the belief `state`.
fn posterior_slope(state: &EloMmrState, x: f64) -> f64 {
    let scale = 3f64.sqrt() / std::f64::consts::PI;
    state.w0 * (x - state.p0)
        + state
            .factors
            .iter()
            .map(|f| {
                let beta_bar = scale * f.beta;
                state.weight(f) * f.beta * f.beta / beta_bar
                    * ((x - f.perf) / (2.0 * beta_bar)).tanh()
            })
            .sum::<f64>()
}

#[test]
fn a_newcomer_diffused_by_gamma_squared_has_the_textbook_uncertainty() {
    let params = EloMmrParams::default();
    let newcomer = belief(
        &params,
        &PriorSpec {
            mu: params.mu_init,
            sigma: params.sigma_init,
            history: Vec::new(),
            last_day: None,
        },
    );
    let after = diffuse(&newcomer, &params, params.gamma * params.gamma);
    assert!((after.sigma - (350f64.powi(2) + 35f64.powi(2)).sqrt()).abs() < 1e-9);
    assert_eq!(after.mu, 1500.0);
}
