//! Fresh databases for the storage tests, and the fixtures they share (parameters, round
//! bodies, rated rounds). Owns the creation and removal of test databases; asserts nothing.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mmr_service::engine::{Params, Population, Round, Standing};
use mmr_service::storage::{self, AppliedEntrant, AppliedRound, Storage};
use sqlx::Connection;
use tempfile::TempDir;

/// The Postgres server used when `MMR_TEST_DATABASE_URL` is not set.
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// How long to wait for the Postgres server before calling it unreachable.
const POSTGRES_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A queue bound no test reaches unless it means to.
pub const ROOMY_QUEUE: u64 = 1_000;

/// The pool most tests use.
pub const POOL: &str = "main";

/// Test databases created by this process, to name each one uniquely.
static DATABASES: AtomicU32 = AtomicU32::new(0);

/// Which backend a test runs on.
#[derive(Debug, Clone, Copy)]
pub enum Backend {
    /// A SQLite file in a temporary directory.
    Sqlite,
    /// A new database on the Postgres test server.
    Postgres,
}

/// What a test gets: the storage and the URL it was opened with (to open it again, as a
/// second process or after a restart would).
#[derive(Clone)]
pub struct Db {
    /// The storage under test.
    pub storage: Arc<dyn Storage>,
    /// Its database URL.
    pub url: String,
}

/// What must be removed once the test is over.
enum Cleanup {
    Directory(TempDir),
    Postgres { admin_url: String, database: String },
}

/// Opens a fresh database on `backend`, runs `test` on it, removes the database (even when the
/// test panicked) and passes the test's panic on. A Postgres test with no server passes after
/// printing `SKIPPED`, unless `CI` is set.
pub async fn run<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(Db) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some((db, cleanup)) = open(backend).await else {
        return;
    };
    let outcome = tokio::spawn(test(db.clone())).await;
    db.storage.close().await;
    drop(db);
    match cleanup {
        Cleanup::Directory(dir) => drop(dir),
        Cleanup::Postgres {
            admin_url,
            database,
        } => {
            let mut admin = sqlx::PgConnection::connect(&admin_url)
                .await
                .expect("reconnect to drop the test database");
            sqlx::query(&format!(
                "DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"
            ))
            .execute(&mut admin)
            .await
            .expect("drop the test database");
        }
    }
    if let Err(error) = outcome {
        std::panic::resume_unwind(error.into_panic());
    }
}

async fn open(backend: Backend) -> Option<(Db, Cleanup)> {
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("temporary directory");
            let url = format!("sqlite://{}", dir.path().join("mmr.sqlite3").display());
            let storage = storage::connect(&url).await.expect("open SQLite");
            Some((Db { storage, url }, Cleanup::Directory(dir)))
        }
        Backend::Postgres => {
            let admin_url = std::env::var("MMR_TEST_DATABASE_URL")
                .unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned());
            let mut admin = match tokio::time::timeout(
                POSTGRES_CONNECT_TIMEOUT,
                sqlx::PgConnection::connect(&admin_url),
            )
            .await
            {
                Ok(Ok(admin)) => admin,
                Ok(Err(error)) => return unreachable_postgres(&error.to_string()),
                Err(_) => return unreachable_postgres("connection timed out"),
            };
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.subsec_nanos());
            let database = format!(
                "mmr_test_{}_{}_{nanos}",
                std::process::id(),
                DATABASES.fetch_add(1, Ordering::Relaxed)
            );
            sqlx::query(&format!("CREATE DATABASE \"{database}\""))
                .execute(&mut admin)
                .await
                .expect("create the test database");
            let url = with_database(&admin_url, &database);
            let storage = storage::connect(&url).await.expect("open Postgres");
            Some((
                Db { storage, url },
                Cleanup::Postgres {
                    admin_url,
                    database,
                },
            ))
        }
    }
}

fn unreachable_postgres(reason: &str) -> Option<(Db, Cleanup)> {
    assert!(
        std::env::var_os("CI").is_none(),
        "Postgres is unreachable and CI is set: {reason}"
    );
    eprintln!("SKIPPED: Postgres is unreachable ({reason}); set MMR_TEST_DATABASE_URL");
    None
}

/// `url` with its database name replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(base, query)| (base, Some(query)));
    let authority = base.find("://").map_or(0, |at| at + "://".len());
    let root = base[authority..]
        .find('/')
        .map_or(base, |at| &base[..authority + at]);
    match query {
        Some(query) => format!("{root}/{database}?{query}"),
        None => format!("{root}/{database}"),
    }
}

/// The default parameters, with which the fixtures' pools are created.
pub fn params() -> Params {
    Params::default()
}

/// Creates the test pool with default parameters.
pub async fn create_pool(db: &Db) {
    db.storage
        .put_pool(POOL, &params())
        .await
        .expect("create the pool");
}

/// A canonical body for round `id` (its content is opaque to storage).
pub fn body(id: &str, players: &[&str]) -> String {
    let standings: Vec<String> = players
        .iter()
        .enumerate()
        .map(|(i, p)| format!(r#"{{"player":"{p}","rank":{}}}"#, i + 1))
        .collect();
    format!(r#"{{"id":"{id}","standings":[{}]}}"#, standings.join(","))
}

/// Queues round `id` with `players` finishing in that order; panics unless accepted.
pub async fn enqueue(db: &Db, id: &str, players: &[&str]) {
    let outcome = db
        .storage
        .enqueue_round(POOL, id, &body(id, players), ROOMY_QUEUE)
        .await
        .expect("enqueue");
    assert!(
        matches!(outcome, storage::Enqueued::Accepted { .. }),
        "{id}: {outcome:?}"
    );
}

/// Rates a round of `players` finishing in that order at `time` on `population`, as the
/// worker would, and returns what it stores.
pub fn rate(population: &mut Population, players: &[&str], time: Option<i64>) -> AppliedRound {
    let standings: Vec<Standing> = players
        .iter()
        .enumerate()
        .map(|(i, p)| Standing::solo(*p, i as u64 + 1))
        .collect();
    let round = Round {
        time,
        ..Round::new(standings)
    };
    let changes = population.apply(&round).expect("rate the round");
    let entrants = round
        .standings
        .iter()
        .zip(changes)
        .map(|(standing, change)| AppliedEntrant {
            player: standing.player.clone(),
            rank: standing.rank,
            performance: change.performance,
            mu_before: change.mu_before,
            sigma_before: change.sigma_before,
            state: population
                .player(&standing.player)
                .expect("a rated player has a state")
                .clone(),
        })
        .collect();
    AppliedRound { time, entrants }
}

/// A population with the fixtures' parameters.
pub fn population() -> Population {
    Population::new(params()).expect("valid parameters")
}

/// Queues and applies round `id`, rated on `population`.
pub async fn enqueue_and_apply(
    db: &Db,
    population: &mut Population,
    id: &str,
    players: &[&str],
    time: Option<i64>,
) -> AppliedRound {
    enqueue(db, id, players).await;
    let applied = rate(population, players, time);
    db.storage
        .apply_round(POOL, id, &applied)
        .await
        .expect("apply the round");
    applied
}
