//! Safeguarded root finding for increasing functions: Newton steps inside a bracket that
//! shrinks every iteration, with bisection whenever a Newton step would leave the bracket or
//! fails to halve it. It always returns a finite point of the bracket.

/// Iterations after which the bracket's midpoint is returned; bisection alone narrows any
/// finite `f64` bracket to one ulp in fewer.
const MAX_ITERATIONS: usize = 2_100;
/// Relative width of the bracket at which the root counts as found.
const RELATIVE_TOLERANCE: f64 = 1e-15;
/// Absolute width below which the root counts as found (ratings are O(1e3)).
const ABSOLUTE_TOLERANCE: f64 = 1e-10;

/// Finds `x` in `[lo, hi]` with `f(x) = 0` for an increasing `f`, starting from `start`.
/// `f` returns the value and the derivative. If `f(lo) > 0` the result is `lo`, if
/// `f(hi) < 0` it is `hi`: the caller's bracket decides, the result is never NaN or infinite
/// as long as `lo` and `hi` are finite.
pub(crate) fn increasing_root(
    mut lo: f64,
    mut hi: f64,
    start: f64,
    mut f: impl FnMut(f64) -> (f64, f64),
) -> f64 {
    debug_assert!(lo <= hi, "bracket [{lo}, {hi}] is reversed");
    let mut x = if start.is_finite() {
        start.clamp(lo, hi)
    } else {
        0.5 * (lo + hi)
    };
    let mut step = hi - lo;
    let mut previous_step = step;
    for _ in 0..MAX_ITERATIONS {
        let (value, slope) = f(x);
        if value == 0.0 || value.is_nan() {
            return x;
        }
        if value < 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        // Newton is taken only when it stays inside the bracket and the step shrinks fast
        // enough (at least halves every two iterations); otherwise bisect. The bracket's ends
        // count as inside: once `x` is the root to rounding, `x` has just become an end and
        // Newton's step rounds to zero onto it, which must end the search, not restart it by
        // bisection.
        let newton = x - value / slope;
        let converging = (2.0 * value).abs() <= (previous_step * slope).abs();
        previous_step = step;
        let next = if newton >= lo && newton <= hi && converging {
            newton
        } else {
            0.5 * (lo + hi)
        };
        step = x - next;
        if step.abs() <= ABSOLUTE_TOLERANCE.max(RELATIVE_TOLERANCE * next.abs()) || next == x {
            return next;
        }
        x = next;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_root_of_a_cubic() {
        let root = increasing_root(-10.0, 10.0, 9.0, |x| (x * x * x - 2.0, 3.0 * x * x));
        assert!((root - 2f64.cbrt()).abs() < 1e-12);
    }

    #[test]
    fn survives_a_flat_derivative() {
        // tanh is flat far from 0: Newton would jump out, bisection must take over.
        let root = increasing_root(-1e6, 1e6, 1e6, |x| {
            let t = (x - 3.0).tanh();
            (t, 1.0 - t * t)
        });
        assert!((root - 3.0).abs() < 1e-9, "{root}");
    }

    #[test]
    fn stops_once_newton_lands_on_the_root() {
        // Posterior-like curves (a weak linear term plus fifty tanh terms, as in a belief's
        // L'): Newton reaches the root in a few steps, often from above with a residual whose
        // step rounds to zero; that must end the search, not start a bisection of the
        // bracket down to the tolerance (which took up to 46 evaluations).
        let mut unit = crate::engine::uniform(1);
        for case in 0..200 {
            let centers: Vec<f64> = (0..50).map(|_| 1000.0 + 800.0 * unit()).collect();
            let p0 = 1000.0 + 800.0 * unit();
            let (lo, hi) = centers
                .iter()
                .fold((p0, p0), |(lo, hi), &c| (lo.min(c), hi.max(c)));
            let mut evaluations = 0;
            increasing_root(lo, hi, 1000.0 + 800.0 * unit(), |x| {
                evaluations += 1;
                centers.iter().fold((1e-6 * (x - p0), 1e-6), |(v, s), c| {
                    let t = ((x - c) / 220.0).tanh();
                    (v + 1e-4 * t, s + 1e-4 / 220.0 * (1.0 - t * t))
                })
            });
            assert!(evaluations <= 10, "case {case}: {evaluations} evaluations");
        }
    }

    #[test]
    fn returns_the_bracket_end_when_there_is_no_sign_change() {
        assert!((increasing_root(1.0, 2.0, 1.5, |x| (x, 1.0)) - 1.0).abs() < 1e-9);
        assert!((increasing_root(1.0, 2.0, 1.5, |x| (x - 5.0, 1.0)) - 2.0).abs() < 1e-9);
    }
}
