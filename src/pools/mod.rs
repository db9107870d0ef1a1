//! The in-memory side of every pool: each player's belief, their last round, and the
//! [`leaderboard`] orders. Reads of ratings, leaderboards and predictions are served from here;
//! only the worker changes it, and only after the database committed the change. Knows
//! nothing of HTTP and never touches the database itself.
//!
//! A pool's readable state is an immutable [`PoolState`] snapshot (`snapshot.rs`) behind an
//! atomic pointer in its [`Pool`] handle (`pool.rs`): a reader takes the current one (an `Arc`)
//! and computes on it without any lock, however long it takes; the worker derives the next
//! snapshot from the current one and swaps it in. The snapshot shares everything unchanged with
//! the one before: players live in a persistent B-tree (`imbl::OrdMap`: a round's k entrants
//! copy k paths of O(log n) nodes), and the leaderboards in chunks of a few hundred places
//! copied only where a round changes them ([`leaderboard`]). Publishing a round never copies
//! the pool; BENCHMARKS.md has its cost. The pool's display settings are part of the snapshot:
//! what a read shows (μ − kσ, the fixed-range rating, provisional flags, leagues) always
//! matches the leaderboard it came with. A pool as it stood after a past round is an
//! [`AsOfBoard`] (`as_of.rs`), kept by [`past`]; every pool is in the [`Pools`] registry
//! (`registry.rs`).

mod as_of;
pub mod leaderboard;
pub mod loading;
pub mod past;
mod pool;
mod registry;
mod snapshot;

pub use crate::display::Shown;
pub use as_of::AsOfBoard;
pub use pool::{Pool, Recompute, STALLED_AFTER};
pub use registry::Pools;
pub use snapshot::{
    Entered, Entrants, LastChange, LastRound, Listed, LoadError, Played, PlayerRating, PoolState,
    RoundOf,
};
