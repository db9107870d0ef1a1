//! Everything the storage layer can fail with, and which failures are the database being away.

/// Everything the storage layer can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pool does not exist.
    #[error("pool `{0}` does not exist")]
    PoolNotFound(String),
    /// The pool's parameters can no longer change: ratings were (or are about to be) computed
    /// with the current ones.
    #[error("pool `{pool}` has {applied} applied and {queued} queued rounds: its parameters cannot change")]
    ParamsLocked {
        /// The pool.
        pool: String,
        /// Rounds already applied.
        applied: u64,
        /// Rounds waiting in the queue.
        queued: u64,
    },
    /// `apply_round` or `fail_round` named a round that is not the pool's oldest queued one
    /// (already applied by another worker, failed, unknown, or not yet its turn).
    #[error("round `{round}` is not the oldest queued round of pool `{pool}`")]
    NotNextRound {
        /// The pool.
        pool: String,
        /// The round named by the caller.
        round: String,
    },
    /// Pool `pool` applied rounds after the caller read what it computed from (another
    /// process's worker, say); nothing changed. Worth computing again.
    #[error("pool `{pool}` changed meanwhile")]
    Stale {
        /// The pool.
        pool: String,
    },
    /// A correction's recomputation failed, for this reason; nothing changed.
    #[error("the recomputation failed: {0}")]
    Recompute(String),
    /// A number does not fit the database's signed 64-bit integers.
    #[error("{what} is too large to store")]
    OutOfRange {
        /// Which number.
        what: &'static str,
    },
    /// A stored value could not be decoded (an unknown status, a player who keeps more factors
    /// than their history rows hold, …).
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    /// Another live process on the database holds this replica id (`replicas.id`).
    #[error(
        "replicas.id `{0}` is held by another live process on this database: give each replica \
         its own id, or none for a random one"
    )]
    ReplicaIdTaken(String),
    /// The database URL has a scheme other than `postgres://`, `postgresql://` or `sqlite:`.
    #[error("unsupported database URL scheme `{0}`: expected postgres:// or sqlite://")]
    UnsupportedScheme(String),
    /// The directory for a SQLite file could not be created.
    #[error("cannot create the database directory")]
    CreateDir(#[source] std::io::Error),
    /// A migration failed.
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database refused or failed a statement, or could not be reached.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

impl Error {
    /// Whether the database could not be reached or answered too slowly (a lost or refused
    /// connection, an exhausted connection pool, an I/O error, a lock wait that ran out, a
    /// server shutting down): worth retrying later. Anything else (a constraint violation, an
    /// SQL error, a row that does not decode) is a bug or corrupt data, not an outage.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        if matches!(self, Self::Stale { .. }) {
            return true;
        }
        let Self::Database(cause) = self else {
            return false;
        };
        match cause {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(db) => {
                let Some(code) = db.code() else {
                    return false;
                };
                let code = code.as_ref();
                if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                    // SQLITE_BUSY and SQLITE_LOCKED (5, 6) and their extended codes (low byte).
                    code.parse::<u32>().is_ok_and(|c| matches!(c & 0xff, 5 | 6))
                } else {
                    // SQLSTATE class 08 (connection exception), 57P (shutdown, crash, not yet
                    // accepting connections), 55P03 (a lock wait timed out) and 57014 (a
                    // statement timed out).
                    code.starts_with("08")
                        || code.starts_with("57P")
                        || code == "55P03"
                        || code == "57014"
                }
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use sqlx::sqlite::SqlitePoolOptions;

    use super::Error;

    /// Runs `sql` on a fresh in-memory SQLite database holding one table with a unique key.
    async fn failure(sql: &str) -> Error {
        let pool = SqlitePoolOptions::new()
            .connect("sqlite::memory:")
            .await
            .expect("an in-memory database");
        sqlx::query("CREATE TABLE t (k INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)")
            .execute(&pool)
            .await
            .expect("the table");
        let error = sqlx::query(sql).execute(&pool).await.err();
        Error::Database(error.expect("the statement fails"))
    }

    #[tokio::test]
    async fn bugs_are_not_outages_but_lost_connections_are() {
        for (sql, case) in [
            ("INSERT INTO t VALUES (1)", "a constraint violation"),
            ("SELECT * FROM nowhere", "a missing table"),
            ("SELEC 1", "a syntax error"),
        ] {
            assert!(!failure(sql).await.is_unavailable(), "{case}");
        }
        for (error, case) in [
            (sqlx::Error::PoolTimedOut, "no connection in time"),
            (sqlx::Error::PoolClosed, "a closed pool"),
            (
                sqlx::Error::Io(std::io::ErrorKind::ConnectionReset.into()),
                "a dropped connection",
            ),
        ] {
            assert!(Error::Database(error).is_unavailable(), "{case}");
        }
        assert!(!Error::Database(sqlx::Error::RowNotFound).is_unavailable());
        assert!(!Error::Corrupt("x".into()).is_unavailable());
    }
}
