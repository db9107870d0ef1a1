//! [`Storage`] on Postgres. Owns the Postgres-only parts: the connection pool, the per-pool
//! locks (a row lock on the pool for enqueues and parameter changes, a transaction-scoped
//! advisory lock for the worker's writes) and the bulk writes through `UNNEST` arrays. The
//! statements both backends share live in `sql.rs`; nothing here knows about SQLite.

use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgPool, PgPoolOptions};
use tracing::instrument;

use super::rows::{
    bind_pool, content_hash, elo_mmr, history_page, join_players, repost_outcome, to_i64, to_u64,
    FactorRow, FactorWrites, HistoryRow, ParamsRow, PlayerRow, PoolRoundsRow, PoolRow, ProgressRow,
    ResultRow, RoundRow,
};
use super::{
    sql, AppliedRound, Enqueued, Error, HistoryPage, PoolInfo, PoolProgress, PoolWrite,
    QueuedRound, RoundRecord, RoundStatus, Storage, StoredPlayer,
};
use crate::engine::{Factor, SystemParams};

/// First key of every advisory lock this service takes (the ASCII of "mmr"), so that its
/// locks cannot collide with another application's on a shared server; the second key is the
/// pool name's hash. Two pools whose names collide only wait for each other.
const APPLY_LOCK_CLASS: i32 = 0x006d_6d72;

/// Locks pool `$1`'s row for the transaction; no row means no pool.
const LOCK_POOL: &str = "SELECT name FROM pools WHERE name = $1 FOR UPDATE";

/// The parameters of pool `$1`, its row locked for the transaction.
const LOCK_POOL_PARAMS: &str = "SELECT system, params FROM pools WHERE name = $1 FOR UPDATE";

/// Longest a statement waits for a connection. While the server is down, sqlx keeps retrying
/// a refused connection until then: the default 30 s would hold a write (and the worker's
/// turn) until the request timeout, instead of answering 503 `database_unavailable` promptly.
/// Load does not come near it: each of the pool's connections is free again within the
/// milliseconds of one transaction (the worker's bulk write holds only one of them).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// Takes the worker's lock on pool `$2` until the transaction ends.
const LOCK_APPLY: &str = "SELECT pg_advisory_xact_lock($1, hashtext($2))";

/// Upserts the beliefs of every entrant of a round, without their factors, in one statement.
const UPSERT_PLAYERS: &str = "
    INSERT INTO players (pool, player, mu, sigma, rounds, last_round_id, last_round_time,
                         p0, w0, log_decay, last_time)
    SELECT $1, u.player, u.mu, u.sigma, u.rounds, $2, $3, u.p0, u.w0, u.log_decay, u.last_time
    FROM UNNEST($4::TEXT[], $5::FLOAT8[], $6::FLOAT8[], $7::INT8[], $8::FLOAT8[], $9::FLOAT8[],
                $10::FLOAT8[], $11::INT8[])
         AS u (player, mu, sigma, rounds, p0, w0, log_decay, last_time)
    ON CONFLICT (pool, player) DO UPDATE SET
        mu = EXCLUDED.mu, sigma = EXCLUDED.sigma, rounds = EXCLUDED.rounds,
        last_round_id = EXCLUDED.last_round_id, last_round_time = EXCLUDED.last_round_time,
        p0 = EXCLUDED.p0, w0 = EXCLUDED.w0, log_decay = EXCLUDED.log_decay,
        last_time = EXCLUDED.last_time";

/// Inserts the factors a round added, in one statement.
const INSERT_FACTORS: &str = "
    INSERT INTO factors (pool, player, n, perf, weight, beta, log_decay)
    SELECT $1, u.player, u.n, u.perf, u.weight, u.beta, u.log_decay
    FROM UNNEST($2::TEXT[], $3::INT8[], $4::FLOAT8[], $5::FLOAT8[], $6::FLOAT8[], $7::FLOAT8[])
         AS u (player, n, perf, weight, beta, log_decay)";

/// Deletes the factors that fell out of the entrants' beliefs, in one statement.
const DELETE_FACTORS: &str = "
    DELETE FROM factors f
    USING UNNEST($2::TEXT[], $3::INT8[]) AS u (player, keep_from)
    WHERE f.pool = $1 AND f.player = u.player AND f.n < u.keep_from";

/// Makes the transaction's queries read one snapshot (the first statement of a transaction).
const REPEATABLE_READ: &str = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";

/// Inserts the history rows of every entrant of a round in one statement.
const INSERT_HISTORY: &str = "
    INSERT INTO history (pool, player, seq, rank, performance, mu_before, sigma_before,
                         mu_after, sigma_after)
    SELECT $1, u.player, $2, u.rank, u.performance, u.mu_before, u.sigma_before,
           u.mu_after, u.sigma_after
    FROM UNNEST($3::TEXT[], $4::INT8[], $5::FLOAT8[], $6::FLOAT8[], $7::FLOAT8[],
                $8::FLOAT8[], $9::FLOAT8[])
         AS u (player, rank, performance, mu_before, sigma_before, mu_after, sigma_after)";

/// Factors as one vector per column, for bulk writes.
#[derive(Debug, Default)]
struct FactorColumns<'a> {
    players: Vec<&'a str>,
    numbers: Vec<i64>,
    perfs: Vec<f64>,
    weights: Vec<f64>,
    betas: Vec<f64>,
    log_decays: Vec<f64>,
}

impl<'a> FactorColumns<'a> {
    fn with_capacity(n: usize) -> Self {
        Self {
            players: Vec::with_capacity(n),
            numbers: Vec::with_capacity(n),
            perfs: Vec::with_capacity(n),
            weights: Vec::with_capacity(n),
            betas: Vec::with_capacity(n),
            log_decays: Vec::with_capacity(n),
        }
    }

    /// Appends `player`'s factor number `n`.
    fn push(&mut self, player: &'a str, n: i64, factor: &Factor) {
        self.players.push(player);
        self.numbers.push(n);
        self.perfs.push(factor.perf);
        self.weights.push(factor.weight);
        self.betas.push(factor.beta);
        self.log_decays.push(factor.log_decay);
    }
}

/// Storage on a Postgres server.
pub(super) struct PgStorage {
    pool: PgPool,
}

impl PgStorage {
    /// Connects and runs `migrations/postgres`.
    pub(super) async fn connect(url: &str) -> Result<Self, Error> {
        let pool = PgPoolOptions::new()
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect(url)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(Self { pool })
    }

    /// Locks `pool`'s queue for the transaction and returns its oldest queued round, which
    /// must be `id`.
    async fn lock_next_round(
        tx: &mut sqlx::PgConnection,
        pool: &str,
        id: &str,
    ) -> Result<i64, Error> {
        sqlx::query(LOCK_APPLY)
            .bind(APPLY_LOCK_CLASS)
            .bind(pool)
            .execute(&mut *tx)
            .await?;
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
}

#[async_trait]
impl Storage for PgStorage {
    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %name))]
    async fn put_pool(&self, name: &str, params: &SystemParams) -> Result<PoolWrite, Error> {
        let mut tx = self.pool.begin().await?;
        let inserted = bind_pool(sqlx::query(sql::INSERT_POOL), name, params)?
            .execute(&mut *tx)
            .await?;
        if inserted.rows_affected() == 1 {
            tx.commit().await?;
            return Ok(PoolWrite::Created);
        }
        let stored: ParamsRow = sqlx::query_as(LOCK_POOL_PARAMS)
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

    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %name))]
    async fn pool(&self, name: &str) -> Result<Option<PoolInfo>, Error> {
        let row: Option<PoolRow> =
            sqlx::query_as(&format!("{} WHERE p.name = $1", sql::SELECT_POOLS))
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
        row.map(PoolRow::into_info).transpose()
    }

    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %name))]
    async fn pool_progress(&self, name: &str) -> Result<Option<PoolProgress>, Error> {
        let row: Option<ProgressRow> = sqlx::query_as(sql::SELECT_POOL_PROGRESS)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.map(ProgressRow::into_progress).transpose()
    }

    #[instrument(skip_all, fields(db.system = "postgresql"))]
    async fn pools(&self) -> Result<Vec<PoolInfo>, Error> {
        let rows: Vec<PoolRow> = sqlx::query_as(&format!("{} ORDER BY p.name", sql::SELECT_POOLS))
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(PoolRow::into_info).collect()
    }

    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %pool, round.id = ?id))]
    async fn enqueue_round(
        &self,
        pool: &str,
        id: &str,
        body: &str,
        max_queued: u64,
    ) -> Result<Enqueued, Error> {
        let hash = content_hash(body);
        let mut tx = self.pool.begin().await?;
        let locked: Option<(String,)> = sqlx::query_as(LOCK_POOL)
            .bind(pool)
            .fetch_optional(&mut *tx)
            .await?;
        if locked.is_none() {
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

    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %pool))]
    async fn oldest_queued(&self, pool: &str) -> Result<Option<QueuedRound>, Error> {
        Ok(sqlx::query_as(sql::SELECT_OLDEST_QUEUED)
            .bind(pool)
            .fetch_optional(&self.pool)
            .await?)
    }

    #[instrument(skip_all, fields(
        db.system = "postgresql", pool.name = %pool, round.id = ?id,
        round.entrants = round.entrants.len(),
    ))]
    async fn apply_round(&self, pool: &str, id: &str, round: &AppliedRound) -> Result<(), Error> {
        let n = round.entrants.len();
        let mut players = Vec::with_capacity(n);
        let mut ranks = Vec::with_capacity(n);
        let mut performances = Vec::with_capacity(n);
        let mut mus_before = Vec::with_capacity(n);
        let mut sigmas_before = Vec::with_capacity(n);
        let mut mus = Vec::with_capacity(n);
        let mut sigmas = Vec::with_capacity(n);
        let mut rounds_played = Vec::with_capacity(n);
        let mut p0s = Vec::with_capacity(n);
        let mut w0s = Vec::with_capacity(n);
        let mut log_decays = Vec::with_capacity(n);
        let mut last_times = Vec::with_capacity(n);
        let mut added = FactorColumns::with_capacity(n);
        let mut pruned_players = Vec::new();
        let mut keep_from = Vec::new();
        for entrant in &round.entrants {
            let state = elo_mmr(&entrant.state);
            let change = &entrant.change;
            players.push(entrant.player.as_str());
            ranks.push(to_i64(entrant.rank, "rank")?);
            performances.push(change.performance);
            mus_before.push(change.before.mu);
            sigmas_before.push(change.before.sigma);
            mus.push(change.after.mu);
            sigmas.push(change.after.sigma);
            rounds_played.push(to_i64(state.rounds, "rounds")?);
            p0s.push(state.p0);
            w0s.push(state.w0);
            log_decays.push(state.log_decay);
            last_times.push(state.last_time);
            let writes = FactorWrites::of(state)?;
            if let Some((number, factor)) = writes.added {
                added.push(&entrant.player, number, factor);
            }
            if let Some(first_kept) = writes.keep_from {
                pruned_players.push(entrant.player.as_str());
                keep_from.push(first_kept);
            }
        }
        let entrants = i64::try_from(n).map_err(|_| Error::OutOfRange { what: "entrants" })?;

        let mut tx = self.pool.begin().await?;
        let seq = Self::lock_next_round(&mut tx, pool, id).await?;
        sqlx::query(UPSERT_PLAYERS)
            .bind(pool)
            .bind(id)
            .bind(round.time)
            .bind(&players)
            .bind(&mus)
            .bind(&sigmas)
            .bind(&rounds_played)
            .bind(&p0s)
            .bind(&w0s)
            .bind(&log_decays)
            .bind(&last_times)
            .execute(&mut *tx)
            .await?;
        if !added.players.is_empty() {
            sqlx::query(INSERT_FACTORS)
                .bind(pool)
                .bind(&added.players)
                .bind(&added.numbers)
                .bind(&added.perfs)
                .bind(&added.weights)
                .bind(&added.betas)
                .bind(&added.log_decays)
                .execute(&mut *tx)
                .await?;
        }
        if !pruned_players.is_empty() {
            sqlx::query(DELETE_FACTORS)
                .bind(pool)
                .bind(&pruned_players)
                .bind(&keep_from)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(INSERT_HISTORY)
            .bind(pool)
            .bind(seq)
            .bind(&players)
            .bind(&ranks)
            .bind(&performances)
            .bind(&mus_before)
            .bind(&sigmas_before)
            .bind(&mus)
            .bind(&sigmas)
            .execute(&mut *tx)
            .await?;
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

    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %pool, round.id = ?id))]
    async fn fail_round(&self, pool: &str, id: &str, error: &str) -> Result<(), Error> {
        let mut tx = self.pool.begin().await?;
        Self::lock_next_round(&mut tx, pool, id).await?;
        sqlx::query(sql::MARK_FAILED)
            .bind(pool)
            .bind(id)
            .bind(error)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %pool))]
    async fn load_players(&self, pool: &str) -> Result<Vec<StoredPlayer>, Error> {
        // One snapshot for both queries: a round applied between them would mismatch.
        let mut tx = self.pool.begin().await?;
        sqlx::query(REPEATABLE_READ).execute(&mut *tx).await?;
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

    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %pool, round.id = ?id))]
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

    #[instrument(skip_all, fields(db.system = "postgresql", pool.name = %pool, player.id = %player))]
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

    #[instrument(skip_all, fields(db.system = "postgresql"))]
    async fn queue_depth(&self) -> Result<u64, Error> {
        let (queued,): (i64,) = sqlx::query_as(sql::COUNT_QUEUED)
            .fetch_one(&self.pool)
            .await?;
        to_u64(queued, "queued")
    }

    #[instrument(skip_all, fields(db.system = "postgresql"))]
    async fn ping(&self) -> Result<(), Error> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}
