//! The maths the rating systems share: the normal distribution, the vectorised `tanh` of the
//! hot loops, Chebyshev interpolation, safeguarded root finding, and the two sums over a
//! round's ratings that interpolation makes O(N).

pub(crate) mod chebyshev;
pub(crate) mod lanes;
pub mod normal;
pub(crate) mod normal_sum;
pub(crate) mod solve;
pub(crate) mod tanh_sum;
