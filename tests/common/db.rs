//! Fresh, empty databases for integration tests: a SQLite file in its own temporary directory,
//! or a database of its own on the Postgres test server (`MMR_TEST_DATABASE_URL`, by default
//! `postgres://postgres@127.0.0.1:5432/postgres`). Shared by the test binaries through
//! `#[macro_use] #[path = "../common/db.rs"] mod db;` (declared before the modules that use
//! [`backend_tests!`]). Owns the creation and removal of test databases;
//! opens no storage and asserts nothing about the service.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::Connection;
use tempfile::TempDir;

/// Runs each named test against SQLite and against Postgres: for every `$test`, an
/// `async fn $test(x)` in the invoking module, a `sqlite::$test` and a `postgres::$test` that
/// pass it to `crate::support::run` with a fresh database of their backend.
macro_rules! backend_tests {
    ($($test:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    crate::support::run(crate::db::Backend::Sqlite, super::$test).await;
                }
            )+
        }

        mod postgres {
            $(
                #[tokio::test]
                async fn $test() {
                    crate::support::run(crate::db::Backend::Postgres, super::$test).await;
                }
            )+
        }
    };
}

/// The Postgres server used when `MMR_TEST_DATABASE_URL` is not set.
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// How long to wait for the Postgres server before calling it unreachable.
const POSTGRES_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Runs `test` with the URL of a fresh database on `backend`, then removes the database (even
/// when the test panicked) and passes the test's panic on. A Postgres test with no server passes
/// after printing `SKIPPED`, unless `CI` is set.
pub async fn with_database<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let outcome = tokio::spawn(test(database.url.clone())).await;
    database.remove().await;
    if let Err(error) = outcome {
        std::panic::resume_unwind(error.into_panic());
    }
}

/// A database made for one test; [`TestDatabase::remove`] deletes it.
pub struct TestDatabase {
    /// Its URL, for `storage::connect`.
    pub url: String,
    cleanup: Cleanup,
}

/// What must be removed once the test is over.
enum Cleanup {
    Directory(TempDir),
    Postgres { admin_url: String, database: String },
}

impl TestDatabase {
    /// A new empty database on `backend`, or `None` when Postgres is unreachable: the test
    /// should then pass after the `SKIPPED` line printed here, unless `CI` is set, in which
    /// case this panics.
    pub async fn create(backend: Backend) -> Option<Self> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temporary directory");
                let url = format!("sqlite://{}", dir.path().join("mmr.sqlite3").display());
                Some(Self {
                    url,
                    cleanup: Cleanup::Directory(dir),
                })
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
                Some(Self {
                    url: url_of_database(&admin_url, &database),
                    cleanup: Cleanup::Postgres {
                        admin_url,
                        database,
                    },
                })
            }
        }
    }

    /// Deletes the database; connections still open to it are closed.
    async fn remove(self) {
        match self.cleanup {
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
    }
}

fn unreachable_postgres(reason: &str) -> Option<TestDatabase> {
    assert!(
        std::env::var_os("CI").is_none(),
        "Postgres is unreachable and CI is set: {reason}"
    );
    eprintln!("SKIPPED: Postgres is unreachable ({reason}); set MMR_TEST_DATABASE_URL");
    None
}

/// `url` with its database name replaced by `database`.
fn url_of_database(url: &str, database: &str) -> String {
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
