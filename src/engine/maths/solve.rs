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
    lo: f64,
    hi: f64,
    start: f64,
    mut f: impl FnMut(f64) -> (f64, f64),
) -> f64 {
    let mut search = RootSearch::new(lo, hi, start);
    while let Some(x) = search.point() {
        let (value, slope) = f(x);
        search.take(value, slope);
    }
    search.root()
}

/// [`increasing_root`] one evaluation at a time, so that several searches can share each
/// evaluation of their curves (four roots on one interpolant, in vector lanes): every search
/// takes exactly the steps `increasing_root` would.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RootSearch {
    lo: f64,
    hi: f64,
    x: f64,
    step: f64,
    previous_step: f64,
    iterations: usize,
    found: Option<f64>,
}

impl RootSearch {
    pub(crate) fn new(lo: f64, hi: f64, start: f64) -> Self {
        debug_assert!(lo <= hi, "bracket [{lo}, {hi}] is reversed");
        let x = if start.is_finite() {
            start.clamp(lo, hi)
        } else {
            0.5 * (lo + hi)
        };
        Self {
            lo,
            hi,
            x,
            step: hi - lo,
            previous_step: hi - lo,
            iterations: 0,
            found: None,
        }
    }

    /// Where the curve is wanted next; `None` once the root is found.
    pub(crate) fn point(&self) -> Option<f64> {
        match self.found {
            Some(_) => None,
            None => Some(self.x),
        }
    }

    /// The curve's value and slope at [`RootSearch::point`].
    pub(crate) fn take(&mut self, value: f64, slope: f64) {
        let x = self.x;
        self.iterations += 1;
        if value == 0.0 || value.is_nan() {
            self.found = Some(x);
            return;
        }
        if value < 0.0 {
            self.lo = x;
        } else {
            self.hi = x;
        }
        // Newton is taken only when it stays inside the bracket and the step shrinks fast
        // enough (at least halves every two iterations); otherwise bisect. The bracket's ends
        // count as inside: once `x` is the root to rounding, `x` has just become an end and
        // Newton's step rounds to zero onto it, which must end the search, not restart it by
        // bisection.
        let newton = x - value / slope;
        let converging = (2.0 * value).abs() <= (self.previous_step * slope).abs();
        self.previous_step = self.step;
        let next = if newton >= self.lo && newton <= self.hi && converging {
            newton
        } else {
            0.5 * (self.lo + self.hi)
        };
        self.step = x - next;
        if self.step.abs() <= ABSOLUTE_TOLERANCE.max(RELATIVE_TOLERANCE * next.abs()) || next == x {
            self.found = Some(next);
            return;
        }
        self.x = next;
        if self.iterations == MAX_ITERATIONS {
            self.found = Some(next);
        }
    }

    /// The root: the last point once the iterations run out.
    pub(crate) fn root(&self) -> f64 {
        self.found.unwrap_or(self.x)
    }
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
        let mut unit = crate::uniform(1);
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
