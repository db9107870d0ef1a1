//! mmr-service: an HTTP service that rates competitors with exact, parallel Elo-MMR.
//!
//! # Layout
//! - [`engine`]: the rating math (pure, synchronous, rayon inside; no I/O).
//! - [`wire`]: the JSON form of a round and its conversion into an engine round.
//! - [`replay`]: the offline `replay` command: a file of rounds in, accuracy and ratings out.
//! - [`storage`]: the database: one `Storage` trait (pools, the ordered round queue, player
//!   states, histories) with a Postgres and a SQLite implementation, chosen by URL scheme.
//! - [`cli`]: the command line of the `mmr-service` binary.

pub mod cli;
pub mod engine;
pub mod replay;
pub mod storage;
pub mod wire;
