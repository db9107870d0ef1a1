//! mmr-service: an HTTP service that rates competitors with exact, parallel Elo-MMR.
//!
//! # Layout
//! - [`engine`]: the rating math (pure, synchronous, rayon inside; no I/O).
//! - [`storage`]: the database: one `Storage` trait (pools, the ordered round queue, player
//!   states, histories) with a Postgres and a SQLite implementation, chosen by URL scheme.

pub mod engine;
pub mod storage;
