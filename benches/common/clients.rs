//! What the benches that play clients against the service share: a seeded stream of numbers
//! and the latency percentiles they report.

/// The 50th and 99th percentiles of `latencies` (NaN for none).
pub fn percentiles(latencies: &[f64]) -> (f64, f64) {
    if latencies.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut sorted = latencies.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99))
}

/// xorshift64: a seeded, dependency-free stream for reproducible runs.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
