//! mmr-service: an HTTP service that rates competitors with exact, parallel Elo-MMR.
//!
//! # Layout
//! Read top-down: `main.rs` → [`cli`] → [`startup`] → [`api`] → [`worker`] → [`engine`], with
//! [`storage`] beside them. A module imports from the groups below it, never above.
//!
//! **Starting and running the process.**
//! - [`cli`]: the command line of the `mmr-service` binary (`serve`, `replay`, `evaluate`,
//!   `import`, `hash-key`).
//! - [`config`]: settings, layered from `config/default.toml`, a file, the environment, flags.
//! - [`startup`]: connect, load, start the workers, serve, shut down in order.
//! - [`serve`]: the accept loop, with deadlines on request heads and on writes.
//! - [`telemetry`]: logging, to stderr. [`instruments`]: the Prometheus metrics of `/metrics`.
//!
//! **Answering requests.**
//! - [`api`]: the HTTP routes, their request and response types, auth and the one error type.
//! - [`rate_limit`]: request budgets per key or client address (`[rate_limit]`), each
//!   client's share of what is bounded in all, and its turns at the reads of the database.
//! - [`compute`]: the bounded, cancellable thread pool that compute-heavy requests run on.
//! - [`body_budget`]: the bytes of request bodies read and parsed at once.
//!
//! **What requests and workers share.**
//! - [`state`]: what handlers and workers share, and the operations that span them.
//! - [`pools`]: every pool in memory as an immutable snapshot (beliefs, last rounds,
//!   leaderboards) that readers take without a lock. Ratings and predictions come from here.
//! - [`display`]: how a pool shows ratings: μ − kσ, the fixed-range rating, provisional
//!   players (pure; built on the displayed rating of any system).
//! - [`params`]: a pool's system and parameters as requests, `[pools.NAME]` and `replay`
//!   give them in part, merged onto the system's defaults.
//! - [`wire`]: the JSON form of a round and its conversion into an engine round.
//! - [`names`]: which pool names, round ids and player ids the service accepts.
//! - [`scope`]: which pools a key reaches.
//! - [`audit`]: who did what, as the audit log records admin and key actions.
//!
//! **Storing and applying rounds.**
//! - [`group_commit`]: each pool's writer, storing the posts that wait for it in one
//!   transaction.
//! - [`worker`]: one loop per pool: queued round → engine → one transaction → memory; a
//!   correction → the pool rated again from its stored rounds beside the live one.
//! - [`corrections`]: what a correction (void, disqualify, rename, merge, new parameters)
//!   does to the stored rounds (pure).
//! - [`ownership`]: where replicas share a Postgres database, which pools this process
//!   applies (one lease per pool, spread by rendezvous hashing) and hearing of the others'
//!   commits.
//! - [`storage`]: the database: one `Storage` trait (pools, the ordered round queue, player
//!   states, histories) with a Postgres and a SQLite implementation, chosen by URL scheme.
//!
//! **Rating.**
//! - [`engine`]: the rating math (pure, synchronous, rayon inside; no I/O), a crate of its own
//!   (`mmr-engine`, its files in `src/engine/`) so that the compiler holds it to that.
//!
//! **Offline tools** (the commands beside `serve`).
//! - [`replay`]: a file of rounds in, accuracy and ratings out.
//! - [`evaluate`]: several rating systems compared on one history, their parameters optionally
//!   searched first.
//! - [`import`]: a file of rounds posted to a running service in order, as a platform would.

pub mod api;
pub mod audit;
pub mod body_budget;
pub mod cli;
pub mod compute;
pub mod config;
pub mod corrections;
pub mod display;
pub use mmr_engine as engine;
pub mod evaluate;
pub mod group_commit;
pub mod import;
pub mod instruments;
pub mod names;
pub mod ownership;
pub mod params;
pub mod pools;
pub mod rate_limit;
pub mod replay;
pub mod scope;
pub mod serve;
pub mod startup;
pub mod state;
pub mod storage;
pub mod telemetry;
pub mod wire;
pub mod worker;
