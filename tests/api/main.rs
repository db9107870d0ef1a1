//! API tests: every route, status code and error of the HTTP API, called in process through
//! `api::app(state)` with `tower::ServiceExt::oneshot` ([`support::TestApp`]). Each test gets
//! its own SQLite database in a temporary directory; the tests in [`backends`], [`bounds`],
//! [`display`], [`as_of`] and [`export`] run on Postgres too (`backend_tests!`; SKIPPED when the server is unreachable,
//! unless `CI` is set). No background worker runs: tests apply queued rounds by stepping
//! `worker::process_next`.
//!
//! One module per resource ([`pools`], [`display`], [`rounds`], [`players`], [`leaderboard`],
//! [`predictions`], [`matchmaking`], [`health`], [`audit`]), then [`auth`] (keys and roles across routes) and [`errors`]
//! (what no single resource owns: unknown routes, methods, the database going away, timeouts),
//! [`hostile`] (a table of bad requests, each of which must change nothing) and [`security`]
//! (every keyed route against every bad credential, keys kept out of the log, rate limits,
//! CORS), and [`bounds`] (a long stream keeps every belief within `history_limit`).

// Declared first: its `backend_tests!` macro is used by the modules below.
#[macro_use]
#[path = "../common/db.rs"]
mod db;
#[path = "../common/storage_ext.rs"]
mod storage_ext;

mod acknowledged;
mod as_of;
mod audit;
mod auth;
mod backends;
mod bounds;
mod corrections;
mod deletion;
mod display;
mod docs;
mod errors;
mod events;
mod export;
mod finite;
mod health;
mod hostile;
mod keys;
mod leaderboard;
mod leagues;
mod matchmaking;
mod metrics;
mod players;
mod pools;
mod predictions;
mod round_batches;
mod rounds;
mod seasons;
mod security;
mod support;
mod waiting;
