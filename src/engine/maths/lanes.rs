//! The arithmetic of the hot loops: a `tanh` built on an exponential of our own, and a way to
//! run a loop on the widest vector instructions the processor has.
//!
//! Every performance sum and every posterior update is a sum of `tanh` terms, and most of a
//! round's time is spent there. libm's `exp` is a call the compiler cannot vectorize, and
//! glibc picks its implementation by processor (an FMA variant where the processor has FMA),
//! so its last bit could differ between machines. The exponential here is plain arithmetic:
//! the same operations, so the same bits, in a scalar loop and in every vector lane, on every
//! processor, with a relative error below `5e-16` (docs/elo-mmr.md, "Arithmetic").

pub(crate) use pulp::WithSimd;

/// `1.5 · 2^52`: added to a number below `2^51` in magnitude, it rounds it to the nearest
/// integer and leaves that integer in the low bits of the sum's representation.
const ROUND_SHIFT: f64 = 6_755_399_441_055_744.0;
/// `ln 2` split in two: the high part has enough trailing zero bits that `k · LN2_HIGH` is
/// exact for every `|k| < 2^11`, so the first step of the reduction, `x − k · LN2_HIGH`, is
/// exact and only the small correction `k · LN2_LOW` rounds.
const LN2_HIGH: f64 = 6.931_471_803_691_238e-1;
const LN2_LOW: f64 = 1.908_214_929_270_587_7e-10;
/// `exp(x)` is below `1e-304` from here down: far past where `tanh` rounds to ±1, and still a
/// normal number, so the exponent never needs the subnormal case.
const FLOOR: f64 = -700.0;

/// `e^x` for `x ≤ 0`, to a relative error below `5e-16`: `x = k ln 2 + r` with `|r|` at most
/// `ln 2 / 2` (plus the rounding of `x / ln 2`), `e^r` from its Taylor polynomial of degree 13
/// (the first term left out is below `6e-18` of it), evaluated in Estrin's scheme (short
/// dependency chains, so vector lanes stay busy), then `2^k` placed in the exponent bits. NaN
/// stays NaN.
#[inline(always)]
fn exp_nonpositive(x: f64) -> f64 {
    // Not `x.max(FLOOR)`, which would turn NaN into FLOOR and hide it.
    let x = if x < FLOOR { FLOOR } else { x };
    let shifted = x * std::f64::consts::LOG2_E + ROUND_SHIFT;
    let k = shifted - ROUND_SHIFT;
    let r = (x - k * LN2_HIGH) - k * LN2_LOW;
    let r2 = r * r;
    let r4 = r2 * r2;
    let inv = |factorial: f64| 1.0 / factorial;
    let low = (1.0 + r) + (inv(2.0) + inv(6.0) * r) * r2;
    let mid_low = (inv(24.0) + inv(120.0) * r) + (inv(720.0) + inv(5_040.0) * r) * r2;
    let mid_high =
        (inv(40_320.0) + inv(362_880.0) * r) + (inv(3_628_800.0) + inv(39_916_800.0) * r) * r2;
    let high = inv(479_001_600.0) + inv(6_227_020_800.0) * r;
    let polynomial = (low + mid_low * r4) + (mid_high + high * r4) * (r4 * r4);
    // The low bits of `shifted` hold `k` in two's complement; adding the exponent bias and
    // shifting the sum into the exponent field gives the bits of `2^k`.
    let scale = f64::from_bits(shifted.to_bits().wrapping_add(1_023) << 52);
    polynomial * scale
}

/// `tanh` through one exponential, within a few ulps of 1 in absolute terms (all its sums
/// need), and exactly ±1 wherever `tanh` rounds to ±1.
#[must_use]
#[inline(always)]
pub(crate) fn tanh(x: f64) -> f64 {
    let e = exp_nonpositive(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// Runs `work` compiled for the widest vector instructions the processor has (AVX2, with the
/// FMA, BMI and LZCNT that pulp's x86-64-v3 level also asks for, detected at run time; the
/// baseline, SSE2, otherwise), so that its loops over independent lanes vectorize. `work` is
/// a [`WithSimd`] whose `with_simd` is `#[inline(always)]`, with every function it calls
/// `#[inline(always)]` too: only code inlined into the dispatched function is compiled for its
/// instructions (a closure is not inlined there). Rust never fuses a multiply and an add
/// unless the code asks for it, so every lane computes the bits the scalar code would: the
/// loop's result is the same on every processor.
#[inline(always)]
pub(crate) fn vectorized<W: WithSimd>(work: W) -> W::Output {
    pulp::Arch::new().dispatch(work)
}

/// Points summed together in one pass over a sum's terms, one vector lane each: eight
/// accumulators keep AVX2's registers busy without spilling them (four left the division
/// unit idle, sixteen spilled, in a micro-benchmark of this module's `tanh`).
pub(crate) const NODE_BLOCK: usize = 8;
// Interpolants are sampled in whole blocks of nodes.
const _: () = assert!(crate::maths::chebyshev::POINTS % NODE_BLOCK == 0);

/// Lanes one point's sum is split into, whatever the processor's width: the lanes' partial
/// sums are added in one fixed order, so the result is the same on every processor.
pub(crate) const POINT_LANES: usize = 4;

/// A sum of terms, `Σ_j term(j, x)`, to be evaluated at many points.
pub(crate) trait TermSum: Sync {
    type Term: Sync;

    /// One term at `x`. Implementations are `#[inline(always)]`, so that [`node_sums`]
    /// compiles them into its vector loop.
    fn term(&self, term: &Self::Term, x: f64) -> f64;

    /// One term at `x` and its slope; `#[inline(always)]` too, for [`point_sum`].
    fn term_and_slope(&self, term: &Self::Term, x: f64) -> (f64, f64);
}

/// `sum` over `terms` at one point, and its slope: term `j` goes to lane `j % POINT_LANES`,
/// so the loop vectorizes across terms.
pub(crate) fn point_sum<S: TermSum>(sum: &S, terms: &[S::Term], x: f64) -> (f64, f64) {
    let (value, slope) = vectorized(PointSum { sum, terms, x });
    (lane_total(value), lane_total(slope))
}

/// Partial sums of the lanes added in a fixed order.
pub(crate) fn lane_total(lanes: [f64; POINT_LANES]) -> f64 {
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

struct PointSum<'a, S: TermSum> {
    sum: &'a S,
    terms: &'a [S::Term],
    x: f64,
}

impl<S: TermSum> WithSimd for PointSum<'_, S> {
    type Output = ([f64; POINT_LANES], [f64; POINT_LANES]);

    #[inline(always)]
    fn with_simd<V: pulp::Simd>(self, _: V) -> Self::Output {
        let mut value = [0.0; POINT_LANES];
        let mut slope = [0.0; POINT_LANES];
        let blocks = self.terms.chunks_exact(POINT_LANES);
        let rest = blocks.remainder();
        for block in blocks {
            for lane in 0..POINT_LANES {
                let (v, s) = self.sum.term_and_slope(&block[lane], self.x);
                value[lane] += v;
                slope[lane] += s;
            }
        }
        for (lane, term) in rest.iter().enumerate() {
            let (v, s) = self.sum.term_and_slope(term, self.x);
            value[lane] += v;
            slope[lane] += s;
        }
        (value, slope)
    }
}

/// `sum` over `terms` at each of `NODE_BLOCK` points, each point's sum added in the order of
/// `terms`: the loop runs across points, one vector lane each, so every point gets the bits
/// a scalar loop over `terms` would give it.
pub(crate) fn node_sums<S: TermSum>(
    sum: &S,
    terms: &[S::Term],
    points: &[f64],
) -> [f64; NODE_BLOCK] {
    let mut nodes = [0.0; NODE_BLOCK];
    nodes.copy_from_slice(points);
    vectorized(NodeSums { sum, terms, nodes })
}

struct NodeSums<'a, S: TermSum> {
    sum: &'a S,
    terms: &'a [S::Term],
    nodes: [f64; NODE_BLOCK],
}

impl<S: TermSum> WithSimd for NodeSums<'_, S> {
    type Output = [f64; NODE_BLOCK];

    #[inline(always)]
    fn with_simd<V: pulp::Simd>(self, _: V) -> Self::Output {
        let mut sums = [0.0; NODE_BLOCK];
        for term in self.terms {
            for (total, &x) in sums.iter_mut().zip(&self.nodes) {
                *total += self.sum.term(term, x);
            }
        }
        sums
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use pulp::Simd;

    use super::*;

    /// `Σ_j tanh(a (x − μ_j))`, as Codeforces' curve.
    struct Slope(f64);

    impl TermSum for Slope {
        type Term = f64;

        #[inline(always)]
        fn term(&self, mu: &f64, x: f64) -> f64 {
            tanh(self.0 * (x - mu))
        }

        #[inline(always)]
        fn term_and_slope(&self, mu: &f64, x: f64) -> (f64, f64) {
            let t = tanh(self.0 * (x - mu));
            (t, self.0 * (1.0 - t * t))
        }
    }

    proptest! {
        #[test]
        fn exp_is_within_5e_16_of_libm_relatively(x in -700.0f64..=0.0) {
            let exact = x.exp();
            prop_assert!((exp_nonpositive(x) - exact).abs() <= 5e-16 * exact, "{x}");
        }

        #[test]
        fn tanh_is_within_a_few_ulps_of_one_and_odd(x in -50.0f64..50.0) {
            prop_assert!((tanh(x) - x.tanh()).abs() <= 4.5e-16, "{x}");
            prop_assert_eq!(tanh(-x), -tanh(x));
        }

        #[test]
        fn tanh_is_exactly_one_where_it_saturates(x in 19.07f64..40.0) {
            prop_assert_eq!(tanh(x), 1.0);
            prop_assert_eq!(tanh(-x), -1.0);
        }

        /// What [`vectorized`] picked on this processor (AVX2 on CI's) against pulp's scalar
        /// backend, compiled for the baseline x86-64: the same bits.
        #[test]
        fn dispatched_and_scalar_sums_give_the_same_bits(
            mus in prop::collection::vec(-3000.0f64..6000.0, 0..300),
            points in prop::collection::vec(-4000.0f64..7000.0, NODE_BLOCK),
            a in 1e-4f64..0.1,
        ) {
            let sum = Slope(a);
            let scalar = pulp::Scalar::new();
            let widest = node_sums(&sum, &mus, &points);
            let mut nodes = [0.0; NODE_BLOCK];
            nodes.copy_from_slice(&points);
            let baseline = scalar.vectorize(NodeSums { sum: &sum, terms: &mus, nodes });
            prop_assert_eq!(widest.map(f64::to_bits), baseline.map(f64::to_bits));
            for &x in &points {
                let (value, slope) = point_sum(&sum, &mus, x);
                let (lanes, slopes) = scalar.vectorize(PointSum { sum: &sum, terms: &mus, x });
                prop_assert_eq!(value.to_bits(), lane_total(lanes).to_bits());
                prop_assert_eq!(slope.to_bits(), lane_total(slopes).to_bits());
            }
        }
    }

    #[test]
    fn zero_maps_exactly_and_the_floor_stays_positive() {
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(tanh(0.0), 0.0);
        assert!(tanh(f64::NAN).is_nan());
        // Where the curves' windows stop summing term by term (logistic.rs, SATURATION).
        assert_eq!(tanh(20.0), 1.0);
        assert_eq!(tanh(-20.0 * (1.0 - 4.0 * f64::EPSILON)), -1.0);
        assert_eq!(tanh(1e300), 1.0);
        assert!(exp_nonpositive(-1e6) > 0.0 && exp_nonpositive(-1e6) < 1e-303);
    }
}
