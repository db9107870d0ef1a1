//! [`Storage`] on an embedded SQLite file. Owns the SQLite-only parts: opening the file (its
//! directory created if missing, WAL, foreign keys on), the locking (every write transaction
//! starts with `BEGIN IMMEDIATE`, which takes the database's single write lock up front) and
//! the bulk writes as multi-row statements chunked under SQLite's bound-parameter limit. The
//! statements both backends share live in `sql.rs`; nothing here knows about Postgres.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection, Transaction};
use tracing::instrument;

use super::rows::{
    bind_pool, content_hash, elo_mmr, history_page, join_players, repost_outcome, to_i64, to_u64,
    FactorRow, FactorWrites, HistoryRow, ParamsRow, PlayerRow, PoolRoundsRow, PoolRow, ProgressRow,
    ResultRow, RoundRow,
};
use super::{
    sql, AppliedEntrant, AppliedRound, Enqueued, Error, HistoryPage, PoolInfo, PoolProgress,
    PoolWrite, QueuedRound, RoundRecord, RoundStatus, Storage, StoredPlayer,
};
use crate::engine::SystemParams;

/// Most parameters one statement may bind (SQLite's `SQLITE_MAX_VARIABLE_NUMBER` since 3.32).
const MAX_BOUND_PARAMETERS: usize = 32_766;

/// Columns bound per row of `players`.
const PLAYER_COLUMNS: usize = 11;

/// Columns bound per row of `factors`.
const FACTOR_COLUMNS: usize = 7;

/// Columns bound per row of `history`.
const HISTORY_COLUMNS: usize = 9;

/// How long a write waits for another connection's write lock before giving up: longer than
/// the largest round takes to commit.
const WRITE_LOCK_WAIT: Duration = Duration::from_secs(30);

/// Starts a write transaction holding the database's write lock, so that the checks it makes
/// cannot be invalidated before it commits (a deferred `BEGIN` would take the lock only at its
/// first write, and fail rather than wait if another write came first).
const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";

/// The parameters of pool `$1`.
const SELECT_POOL_PARAMS: &str = "SELECT system, params FROM pools WHERE name = $1";

/// Upserts entrants' beliefs; the `VALUES` rows go between this and [`UPSERT_PLAYERS_TAIL`].
const UPSERT_PLAYERS_HEAD: &str = "INSERT INTO players
    (pool, player, mu, sigma, rounds, last_round_id, last_round_time, p0, w0, log_decay,
     last_time) ";

/// See [`UPSERT_PLAYERS_HEAD`].
const UPSERT_PLAYERS_TAIL: &str = " ON CONFLICT (pool, player) DO UPDATE SET
    mu = excluded.mu, sigma = excluded.sigma, rounds = excluded.rounds,
    last_round_id = excluded.last_round_id, last_round_time = excluded.last_round_time,
    p0 = excluded.p0, w0 = excluded.w0, log_decay = excluded.log_decay,
    last_time = excluded.last_time";

/// Inserts factors; the `VALUES` rows follow.
const INSERT_FACTORS_HEAD: &str = "INSERT INTO factors
    (pool, player, n, perf, weight, beta, log_decay) ";

/// Deletes factors: the pool is bound after this, then [`DELETE_FACTORS_VALUES`], then
/// `(player, keep_from)` rows, then [`DELETE_FACTORS_TAIL`]; every factor of `player`
/// numbered below `keep_from` goes.
const DELETE_FACTORS_HEAD: &str = "WITH this (pool) AS (SELECT ";

/// See [`DELETE_FACTORS_HEAD`].
const DELETE_FACTORS_VALUES: &str = "), kept (player, keep_from) AS (";

/// See [`DELETE_FACTORS_HEAD`].
const DELETE_FACTORS_TAIL: &str = ")
    DELETE FROM factors WHERE (pool, player, n) IN (
        SELECT f.pool, f.player, f.n FROM this t, kept k
        JOIN factors f ON f.pool = t.pool AND f.player = k.player AND f.n < k.keep_from)";

/// Inserts entrants' history rows; the `VALUES` rows follow.
const INSERT_HISTORY_HEAD: &str = "INSERT INTO history
    (pool, player, seq, rank, performance, mu_before, sigma_before, mu_after, sigma_after) ";

/// Storage in a SQLite file.
pub(super) struct SqliteStorage {
    pool: SqlitePool,
}

impl SqliteStorage {
    /// Opens (creating if missing) the file named by `url` and runs `migrations/sqlite`.
    pub(super) async fn connect(url: &str) -> Result<Self, Error> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a commit is on disk before the caller hears of it, even across power loss.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(WRITE_LOCK_WAIT);
        if let Some(dir) = options.get_filename().parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(Error::CreateDir)?;
            }
        }
        let pool = SqlitePoolOptions::new().connect_with(options).await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(Self { pool })
    }

    async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>, Error> {
        Ok(self.pool.begin_with(BEGIN_WRITE).await?)
    }

    /// Returns the seq of `pool`'s oldest queued round, which must be `id`. The caller holds
    /// the write lock.
    async fn next_round_seq(tx: &mut SqliteConnection, pool: &str, id: &str) -> Result<i64, Error> {
        let oldest: Option<QueuedRound> = sqlx::query_as(sql::SELECT_OLDEST_QUEUED)
            .bind(pool)
            .fetch_optional(&mut *tx)
            .await?;
        match oldest {
            Some(round) if round.id == id => Ok(round.seq),
            _ => Err(Error::NotNextRound {
                pool: pool.to_owned(),
                round: id.to_owned(),
            }),
        }
    }

    /// Upserts the entrants' beliefs without their factors, one statement per chunk of rows.
    async fn upsert_players(
        tx: &mut SqliteConnection,
        pool: &str,
        id: &str,
        time: Option<i64>,
        entrants: &[AppliedEntrant],
    ) -> Result<(), Error> {
        for chunk in entrants.chunks(MAX_BOUND_PARAMETERS / PLAYER_COLUMNS) {
            let rows = chunk
                .iter()
                .map(|e| {
                    let state = elo_mmr(&e.state);
                    Ok((e.player.as_str(), state, to_i64(state.rounds, "rounds")?))
                })
                .collect::<Result<Vec<_>, Error>>()?;
            let mut query = QueryBuilder::<Sqlite>::new(UPSERT_PLAYERS_HEAD);
            query.push_values(&rows, |mut row, &(player, state, rounds)| {
                row.push_bind(pool)
                    .push_bind(player)
                    .push_bind(state.mu)
                    .push_bind(state.sigma)
                    .push_bind(rounds)
                    .push_bind(id)
                    .push_bind(time)
                    .push_bind(state.p0)
                    .push_bind(state.w0)
                    .push_bind(state.log_decay)
                    .push_bind(state.last_time);
            });
            query.push(UPSERT_PLAYERS_TAIL);
            query.build().execute(&mut *tx).await?;
        }
        Ok(())
    }

    /// Inserts the factors the round added and deletes those that fell out of the entrants'
    /// beliefs, one statement per chunk of rows.
    async fn write_factors(
        tx: &mut SqliteConnection,
        pool: &str,
        entrants: &[AppliedEntrant],
    ) -> Result<(), Error> {
        let writes = entrants
            .iter()
            .map(|e| Ok((e.player.as_str(), FactorWrites::of(elo_mmr(&e.state))?)))
            .collect::<Result<Vec<_>, Error>>()?;
        let added: Vec<_> = writes
            .iter()
            .filter_map(|(player, w)| w.added.map(|(n, factor)| (*player, n, factor)))
            .collect();
        for chunk in added.chunks(MAX_BOUND_PARAMETERS / FACTOR_COLUMNS) {
            let mut query = QueryBuilder::<Sqlite>::new(INSERT_FACTORS_HEAD);
            query.push_values(chunk, |mut row, &(player, n, factor)| {
                row.push_bind(pool)
                    .push_bind(player)
                    .push_bind(n)
                    .push_bind(factor.perf)
                    .push_bind(factor.weight)
                    .push_bind(factor.beta)
                    .push_bind(factor.log_decay);
            });
            query.build().execute(&mut *tx).await?;
        }
        let pruned: Vec<_> = writes
            .iter()
            .filter_map(|(player, w)| w.keep_from.map(|first| (*player, first)))
            .collect();
        // Two parameters per row, and one for the pool.
        for chunk in pruned.chunks((MAX_BOUND_PARAMETERS - 1) / 2) {
            let mut query = QueryBuilder::<Sqlite>::new(DELETE_FACTORS_HEAD);
            query.push_bind(pool);
            query.push(DELETE_FACTORS_VALUES);
            query.push_values(chunk, |mut row, &(player, first)| {
                row.push_bind(player).push_bind(first);
            });
            query.push(DELETE_FACTORS_TAIL);
            query.build().execute(&mut *tx).await?;
        }
        Ok(())
    }

    /// Inserts the entrants' history rows, one statement per chunk of rows.
    async fn insert_history(
        tx: &mut SqliteConnection,
        pool: &str,
        seq: i64,
        entrants: &[AppliedEntrant],
    ) -> Result<(), Error> {
        for chunk in entrants.chunks(MAX_BOUND_PARAMETERS / HISTORY_COLUMNS) {
            let rows = chunk
                .iter()
                .map(|e| Ok((e, to_i64(e.rank, "rank")?)))
                .collect::<Result<Vec<_>, Error>>()?;
            let mut query = QueryBuilder::<Sqlite>::new(INSERT_HISTORY_HEAD);
            query.push_values(&rows, |mut row, (e, rank)| {
                row.push_bind(pool)
                    .push_bind(e.player.as_str())
                    .push_bind(seq)
                    .push_bind(*rank)
                    .push_bind(e.change.performance)
                    .push_bind(e.change.before.mu)
                    .push_bind(e.change.before.sigma)
                    .push_bind(e.change.after.mu)
                    .push_bind(e.change.after.sigma);
            });
            query.build().execute(&mut *tx).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl Storage for SqliteStorage {
    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %name))]
    async fn put_pool(&self, name: &str, params: &SystemParams) -> Result<PoolWrite, Error> {
        let mut tx = self.begin_write().await?;
        let inserted = bind_pool(sqlx::query(sql::INSERT_POOL), name, params)?
            .execute(&mut *tx)
            .await?;
        if inserted.rows_affected() == 1 {
            tx.commit().await?;
            return Ok(PoolWrite::Created);
        }
        let stored: ParamsRow = sqlx::query_as(SELECT_POOL_PARAMS)
            .bind(name)
            .fetch_one(&mut *tx)
            .await?;
        if stored.into_params()? == *params {
            return Ok(PoolWrite::Unchanged);
        }
        let rounds: PoolRoundsRow = sqlx::query_as(sql::COUNT_POOL_ROUNDS)
            .bind(name)
            .fetch_one(&mut *tx)
            .await?;
        rounds.check_unlocked(name)?;
        bind_pool(sqlx::query(sql::UPDATE_POOL), name, params)?
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(PoolWrite::Updated)
    }

    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %name))]
    async fn pool(&self, name: &str) -> Result<Option<PoolInfo>, Error> {
        let row: Option<PoolRow> =
            sqlx::query_as(&format!("{} WHERE p.name = $1", sql::SELECT_POOLS))
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
        row.map(PoolRow::into_info).transpose()
    }

    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %name))]
    async fn pool_progress(&self, name: &str) -> Result<Option<PoolProgress>, Error> {
        let row: Option<ProgressRow> = sqlx::query_as(sql::SELECT_POOL_PROGRESS)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.map(ProgressRow::into_progress).transpose()
    }

    #[instrument(skip_all, fields(db.system = "sqlite"))]
    async fn pools(&self) -> Result<Vec<PoolInfo>, Error> {
        let rows: Vec<PoolRow> = sqlx::query_as(&format!("{} ORDER BY p.name", sql::SELECT_POOLS))
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(PoolRow::into_info).collect()
    }

    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %pool, round.id = ?id))]
    async fn enqueue_round(
        &self,
        pool: &str,
        id: &str,
        body: &str,
        max_queued: u64,
    ) -> Result<Enqueued, Error> {
        let hash = content_hash(body);
        let mut tx = self.begin_write().await?;
        let exists: Option<(String,)> = sqlx::query_as("SELECT name FROM pools WHERE name = $1")
            .bind(pool)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(Error::PoolNotFound(pool.to_owned()));
        }
        let stored: Option<(String, Vec<u8>)> = sqlx::query_as(sql::SELECT_ROUND_HASH)
            .bind(pool)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some((status, stored_hash)) = stored {
            return repost_outcome(&status, &stored_hash, &hash);
        }
        let (queued,): (i64,) = sqlx::query_as(sql::COUNT_POOL_QUEUED)
            .bind(pool)
            .fetch_one(&mut *tx)
            .await?;
        let queued = to_u64(queued, "queued")?;
        if queued >= max_queued {
            return Ok(Enqueued::QueueFull { queued });
        }
        sqlx::query(sql::INSERT_ROUND)
            .bind(pool)
            .bind(id)
            .bind(body)
            .bind(hash)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Enqueued::Accepted {
            position: queued + 1,
        })
    }

    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %pool))]
    async fn oldest_queued(&self, pool: &str) -> Result<Option<QueuedRound>, Error> {
        Ok(sqlx::query_as(sql::SELECT_OLDEST_QUEUED)
            .bind(pool)
            .fetch_optional(&self.pool)
            .await?)
    }

    #[instrument(skip_all, fields(
        db.system = "sqlite", pool.name = %pool, round.id = ?id,
        round.entrants = round.entrants.len(),
    ))]
    async fn apply_round(&self, pool: &str, id: &str, round: &AppliedRound) -> Result<(), Error> {
        let entrants = i64::try_from(round.entrants.len())
            .map_err(|_| Error::OutOfRange { what: "entrants" })?;
        let mut tx = self.begin_write().await?;
        let seq = Self::next_round_seq(&mut tx, pool, id).await?;
        Self::upsert_players(&mut tx, pool, id, round.time, &round.entrants).await?;
        Self::write_factors(&mut tx, pool, &round.entrants).await?;
        Self::insert_history(&mut tx, pool, seq, &round.entrants).await?;
        sqlx::query(sql::MARK_APPLIED)
            .bind(pool)
            .bind(id)
            .bind(round.time)
            .bind(entrants)
            .execute(&mut *tx)
            .await?;
        sqlx::query(sql::COUNT_APPLIED)
            .bind(pool)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %pool, round.id = ?id))]
    async fn fail_round(&self, pool: &str, id: &str, error: &str) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        Self::next_round_seq(&mut tx, pool, id).await?;
        sqlx::query(sql::MARK_FAILED)
            .bind(pool)
            .bind(id)
            .bind(error)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %pool))]
    async fn load_players(&self, pool: &str) -> Result<Vec<StoredPlayer>, Error> {
        // One read transaction is one snapshot: a round applied between the two queries
        // would mismatch them.
        let mut tx = self.pool.begin().await?;
        let players: Vec<PlayerRow> = sqlx::query_as(sql::SELECT_PLAYERS)
            .bind(pool)
            .fetch_all(&mut *tx)
            .await?;
        let factors: Vec<FactorRow> = sqlx::query_as(sql::SELECT_FACTORS)
            .bind(pool)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        join_players(players, factors)
    }

    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %pool, round.id = ?id))]
    async fn round(&self, pool: &str, id: &str) -> Result<Option<RoundRecord>, Error> {
        let mut tx = self.pool.begin().await?;
        let Some(row): Option<RoundRow> = sqlx::query_as(sql::SELECT_ROUND)
            .bind(pool)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let results = if row.status()? == RoundStatus::Applied {
            let rows: Vec<ResultRow> = sqlx::query_as(sql::SELECT_RESULTS)
                .bind(pool)
                .bind(row.seq)
                .fetch_all(&mut *tx)
                .await?;
            Some(
                rows.into_iter()
                    .map(ResultRow::into_result)
                    .collect::<Result<_, _>>()?,
            )
        } else {
            None
        };
        tx.commit().await?;
        row.into_record(results).map(Some)
    }

    #[instrument(skip_all, fields(db.system = "sqlite", pool.name = %pool, player.id = %player))]
    async fn player_history(
        &self,
        pool: &str,
        player: &str,
        limit: u32,
        before: Option<i64>,
    ) -> Result<HistoryPage, Error> {
        // One row more than asked tells whether an older page exists.
        let rows: Vec<HistoryRow> = sqlx::query_as(sql::SELECT_HISTORY)
            .bind(pool)
            .bind(player)
            .bind(before.unwrap_or(i64::MAX))
            .bind(i64::from(limit) + 1)
            .fetch_all(&self.pool)
            .await?;
        let entries = rows
            .into_iter()
            .map(HistoryRow::into_entry)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(history_page(entries, limit))
    }

    #[instrument(skip_all, fields(db.system = "sqlite"))]
    async fn queue_depth(&self) -> Result<u64, Error> {
        let (queued,): (i64,) = sqlx::query_as(sql::COUNT_QUEUED)
            .fetch_one(&self.pool)
            .await?;
        to_u64(queued, "queued")
    }

    #[instrument(skip_all, fields(db.system = "sqlite"))]
    async fn ping(&self) -> Result<(), Error> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}
