//! mmr-service: an HTTP service that rates competitors with exact, parallel Elo-MMR.
//!
//! # Layout
//! - [`engine`]: the rating math (pure, synchronous, rayon inside; no I/O).

pub mod engine;
