//! Storage behaviour tests: one suite, run against both backends. Each test is an `async fn`
//! taking a fresh database ([`support::Db`]); `backend_tests!` turns it into a `sqlite::` and a
//! `postgres::` test. Fresh databases come from `tests/common/db.rs`, shared with the API tests:
//! SQLite files in a temporary directory, Postgres databases created on
//! `MMR_TEST_DATABASE_URL` and dropped afterwards. These tests touch nothing but the
//! storage layer's public interface.

// Declared first: its `backend_tests!` macro is used by the modules below.
#[macro_use]
#[path = "../common/db.rs"]
mod db;
#[path = "../common/storage_ext.rs"]
mod storage_ext;

mod apply;
mod connect;
mod keys;
mod leases;
mod migrations;
mod pools;
mod queue;
mod reads;
mod support;
