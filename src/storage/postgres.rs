//! Postgres, the [`Dialect`] of [`SqlStorage`] for a shared server: the connection pool, the
//! per-pool locks (two transaction-scoped advisory locks, one for the tail of the queue that
//! posts take and one for the worker's writes, and the pool's row for parameter changes),
//! snapshots through `REPEATABLE READ`, and the bulk writes through `UNNEST` arrays. Nothing
//! here knows about SQLite.

use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, PgConnection, Postgres, Transaction};

use super::enqueue::NewLine;
use super::replicas::{PgReplicas, CHANGES_CHANNEL};
use super::rows::{placement_columns, to_i64, StateColumns};
use super::sql_storage::{Applying, Dialect, SqlStorage};
use super::{AppliedEntrant, Error, Recomputed};
use crate::display::Placement;
use crate::engine::{Factor, SystemState};

/// First key of the worker's lock on a pool (the ASCII of "mmr"). The first keys of this
/// service's advisory locks keep them from colliding with another application's on a shared
/// server; the second key is the pool name's hash. Two pools whose names collide only wait for
/// each other.
const APPLY_LOCK_CLASS: i32 = 0x006d_6d72;

/// Longest a statement waits for a connection. While the server is down, sqlx keeps retrying
/// a refused connection until then: the default 30 s would hold a write (and the worker's
/// turn) until the request timeout, instead of answering 503 `database_unavailable` promptly.
/// Load does not come near it: each of the pool's connections is free again within the
/// milliseconds of one transaction (the worker's bulk write holds only one of them).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// The status and comparison hash of the lines of pool `$1` stored under the ids `$2`.
const SELECT_STORED_LINES: &str = "
    SELECT id, status, content_hash FROM rounds WHERE pool = $1 AND id = ANY($2::TEXT[])";

/// Queues lines of pool `$1`: each id of `$2` at its seq, with its body, hash and kind.
const INSERT_LINES: &str = "
    INSERT INTO rounds (pool, id, seq, body, content_hash, kind)
    SELECT $1, u.id, u.seq, u.body, u.content_hash, u.kind
    FROM UNNEST($2::TEXT[], $3::INT8[], $4::TEXT[], $5::BYTEA[], $6::TEXT[])
         AS u (id, seq, body, content_hash, kind)";

/// First key of the lock on a pool's queue tail, which posts take ("mmq"): apart from the
/// worker's, so that neither waits for the other's commit.
const TAIL_LOCK_CLASS: i32 = 0x006d_6d71;

/// First key of the lock audit entries are written under ("mma"), with the empty name's hash
/// for the second: one for the whole database.
const AUDIT_LOCK_CLASS: i32 = 0x006d_6d61;

/// Takes lock class `$1` on pool `$2` until the transaction ends.
const LOCK_POOL: &str = "SELECT pg_advisory_xact_lock($1, hashtext($2))";

/// Upserts the beliefs of the entrants of several rounds, without their factors, in one
/// statement: each row with the round that left it (its id, time and seq). No player is in
/// two rows.
const UPSERT_PLAYERS: &str = "
    INSERT INTO players (pool, player, mu, sigma, rounds, last_round_id, last_round_time,
                         p0, w0, log_decay, last_time, volatility, league, division, points,
                         bonus_spent, factors, last_seq, mu_before, sigma_before)
    SELECT $1, u.player, u.mu, u.sigma, u.rounds, u.last_round_id, u.last_round_time, u.p0,
           u.w0, u.log_decay, u.last_time, u.volatility, u.league, u.division, u.points,
           u.bonus_spent, u.factors, u.last_seq, u.mu_before, u.sigma_before
    FROM UNNEST($2::TEXT[], $3::INT8[], $4::TEXT[], $5::FLOAT8[], $6::FLOAT8[], $7::INT8[],
                $8::FLOAT8[], $9::FLOAT8[], $10::FLOAT8[], $11::INT8[], $12::FLOAT8[],
                $13::TEXT[], $14::INT8[], $15::FLOAT8[], $16::FLOAT8[], $17::INT8[],
                $18::INT8[], $19::FLOAT8[], $20::FLOAT8[])
         AS u (last_round_id, last_round_time, player, mu, sigma, rounds, p0, w0, log_decay,
               last_time, volatility, league, division, points, bonus_spent, factors,
               last_seq, mu_before, sigma_before)
    ON CONFLICT (pool, player) DO UPDATE SET
        mu = EXCLUDED.mu, sigma = EXCLUDED.sigma, rounds = EXCLUDED.rounds,
        last_round_id = EXCLUDED.last_round_id, last_round_time = EXCLUDED.last_round_time,
        p0 = EXCLUDED.p0, w0 = EXCLUDED.w0, log_decay = EXCLUDED.log_decay,
        last_time = EXCLUDED.last_time, volatility = EXCLUDED.volatility,
        league = EXCLUDED.league, division = EXCLUDED.division, points = EXCLUDED.points,
        bonus_spent = EXCLUDED.bonus_spent, factors = EXCLUDED.factors,
        last_seq = EXCLUDED.last_seq, mu_before = EXCLUDED.mu_before,
        sigma_before = EXCLUDED.sigma_before";

/// Marks rounds of pool `$1` applied: each id of `$2` with its time and number of standings.
const MARK_APPLIED: &str = "
    UPDATE rounds r SET status = 'applied', round_time = u.round_time, entrants = u.entrants
    FROM UNNEST($2::TEXT[], $3::INT8[], $4::INT8[]) AS u (id, round_time, entrants)
    WHERE r.pool = $1 AND r.id = u.id";

/// Makes the transaction's queries read one snapshot (the first statement of a transaction).
const REPEATABLE_READ: &str = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";

/// Inserts the history rows of the entrants of several rounds, each with its round's seq, the
/// factor the round added to the entrant's belief and the seq of their row before, in one
/// statement.
const INSERT_HISTORY: &str = "
    INSERT INTO history (pool, seq, player, rank, performance, mu_before, sigma_before,
                         mu_after, sigma_after, league_before, division_before, points_before,
                         league_after, division_after, points_after, expected_rank,
                         factor_perf, factor_weight, factor_beta, factor_log_decay, prev_seq)
    SELECT $1, u.seq, u.player, u.rank, u.performance, u.mu_before, u.sigma_before,
           u.mu_after, u.sigma_after, u.league_before, u.division_before, u.points_before,
           u.league_after, u.division_after, u.points_after, u.expected_rank,
           u.factor_perf, u.factor_weight, u.factor_beta, u.factor_log_decay, u.prev_seq
    FROM UNNEST($2::INT8[], $3::TEXT[], $4::INT8[], $5::FLOAT8[], $6::FLOAT8[], $7::FLOAT8[],
                $8::FLOAT8[], $9::FLOAT8[], $10::TEXT[], $11::INT8[], $12::FLOAT8[],
                $13::TEXT[], $14::INT8[], $15::FLOAT8[], $16::FLOAT8[], $17::FLOAT8[],
                $18::FLOAT8[], $19::FLOAT8[], $20::FLOAT8[], $21::INT8[])
         AS u (seq, player, rank, performance, mu_before, sigma_before, mu_after, sigma_after,
               league_before, division_before, points_before, league_after, division_after,
               points_after, expected_rank, factor_perf, factor_weight, factor_beta,
               factor_log_decay, prev_seq)";

/// Rows written per statement when a pool's leagues are recomputed.
const LEAGUE_ROWS_PER_STATEMENT: usize = 20_000;

/// Puts players in their recomputed leagues, in one statement.
const UPDATE_PLAYER_LEAGUES: &str = "
    UPDATE players p SET league = u.league, division = u.division, points = u.points,
                         bonus_spent = u.bonus_spent
    FROM UNNEST($2::TEXT[], $3::TEXT[], $4::INT8[], $5::FLOAT8[], $6::FLOAT8[])
         AS u (player, league, division, points, bonus_spent)
    WHERE p.pool = $1 AND p.player = u.player";

/// Sets history rows' recomputed leagues, in one statement.
const UPDATE_HISTORY_LEAGUES: &str = "
    UPDATE history h SET league_before = u.league_before, division_before = u.division_before,
                         points_before = u.points_before, league_after = u.league_after,
                         division_after = u.division_after, points_after = u.points_after
    FROM UNNEST($2::TEXT[], $3::INT8[], $4::TEXT[], $5::INT8[], $6::FLOAT8[], $7::TEXT[],
                $8::INT8[], $9::FLOAT8[])
         AS u (player, seq, league_before, division_before, points_before, league_after,
               division_after, points_after)
    WHERE h.pool = $1 AND h.player = u.player AND h.seq = u.seq";

/// Sets players' ratings and belief columns after a soft reset, in one statement.
const UPDATE_PLAYER_STATES: &str = "
    UPDATE players p SET mu = u.mu, sigma = u.sigma, p0 = u.p0, w0 = u.w0,
                         log_decay = u.log_decay, volatility = u.volatility,
                         factors = u.factors
    FROM UNNEST($2::TEXT[], $3::FLOAT8[], $4::FLOAT8[], $5::FLOAT8[], $6::FLOAT8[],
                $7::FLOAT8[], $8::FLOAT8[], $9::INT8[])
         AS u (player, mu, sigma, p0, w0, log_decay, volatility, factors)
    WHERE p.pool = $1 AND p.player = u.player";

/// Placements as one vector per column (league, division, points), for bulk writes.
#[derive(Debug, Default)]
struct PlacementArrays<'a> {
    leagues: Vec<Option<&'a str>>,
    divisions: Vec<Option<i64>>,
    points: Vec<Option<f64>>,
}

impl<'a> PlacementArrays<'a> {
    fn push(&mut self, placement: Option<&'a Placement>) {
        let (league, division, points) = placement_columns(placement);
        self.leagues.push(league);
        self.divisions.push(division);
        self.points.push(points);
    }

    /// Binds the three columns, in order.
    fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        query
            .bind(&self.leagues)
            .bind(&self.divisions)
            .bind(&self.points)
    }
}

/// The factor columns of history rows, one vector per column, for bulk writes.
#[derive(Debug, Default)]
struct FactorColumns {
    perfs: Vec<Option<f64>>,
    weights: Vec<Option<f64>>,
    betas: Vec<Option<f64>>,
    log_decays: Vec<Option<f64>>,
}

impl FactorColumns {
    fn with_capacity(n: usize) -> Self {
        Self {
            perfs: Vec::with_capacity(n),
            weights: Vec::with_capacity(n),
            betas: Vec::with_capacity(n),
            log_decays: Vec::with_capacity(n),
        }
    }

    /// Appends the factor a round added, if any.
    fn push(&mut self, factor: Option<&Factor>) {
        self.perfs.push(factor.map(|f| f.perf));
        self.weights.push(factor.map(|f| f.weight));
        self.betas.push(factor.map(|f| f.beta));
        self.log_decays.push(factor.map(|f| f.log_decay));
    }

    /// Binds the four columns, in order.
    fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        query
            .bind(&self.perfs)
            .bind(&self.weights)
            .bind(&self.betas)
            .bind(&self.log_decays)
    }
}

/// Players' rows as one vector per column of `players`, for the bulk upsert.
#[derive(Debug, Default)]
struct StateArrays<'a> {
    last_round_ids: Vec<&'a str>,
    last_round_times: Vec<Option<i64>>,
    last_seqs: Vec<i64>,
    players: Vec<&'a str>,
    mus: Vec<f64>,
    sigmas: Vec<Option<f64>>,
    rounds: Vec<i64>,
    p0s: Vec<Option<f64>>,
    w0s: Vec<Option<f64>>,
    log_decays: Vec<Option<f64>>,
    last_times: Vec<Option<i64>>,
    volatilities: Vec<Option<f64>>,
    placements: PlacementArrays<'a>,
    bonus_spent: Vec<f64>,
    factors: Vec<i64>,
    mus_before: Vec<f64>,
    sigmas_before: Vec<Option<f64>>,
}

impl<'a> StateArrays<'a> {
    fn with_capacity(n: usize) -> Self {
        Self {
            last_round_ids: Vec::with_capacity(n),
            last_round_times: Vec::with_capacity(n),
            last_seqs: Vec::with_capacity(n),
            players: Vec::with_capacity(n),
            mus: Vec::with_capacity(n),
            sigmas: Vec::with_capacity(n),
            rounds: Vec::with_capacity(n),
            p0s: Vec::with_capacity(n),
            w0s: Vec::with_capacity(n),
            log_decays: Vec::with_capacity(n),
            last_times: Vec::with_capacity(n),
            volatilities: Vec::with_capacity(n),
            placements: PlacementArrays::default(),
            bonus_spent: Vec::with_capacity(n),
            factors: Vec::with_capacity(n),
            mus_before: Vec::with_capacity(n),
            sigmas_before: Vec::with_capacity(n),
        }
    }

    /// Appends `entrant`'s state after `round`, whose other columns are `columns`.
    fn push(
        &mut self,
        entrant: &'a AppliedEntrant,
        columns: &StateColumns<'_>,
        round: &Applying<'a>,
    ) {
        self.last_round_ids.push(round.id);
        self.last_round_times.push(round.round.time);
        self.last_seqs.push(round.seq);
        self.players.push(&entrant.player);
        self.mus.push(entrant.change.after.mu);
        self.sigmas.push(entrant.change.after.sigma);
        self.mus_before.push(entrant.change.before.mu);
        self.sigmas_before.push(entrant.change.before.sigma);
        self.rounds.push(columns.rounds);
        self.p0s.push(columns.p0);
        self.w0s.push(columns.w0);
        self.log_decays.push(columns.log_decay);
        self.last_times.push(columns.last_time);
        self.volatilities.push(columns.volatility);
        self.placements.push(entrant.league.after.as_ref());
        self.bonus_spent.push(entrant.bonus_spent);
        self.factors.push(columns.factors);
    }

    /// Binds every column, in [`UPSERT_PLAYERS`]'s order from `$2`.
    fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        let query = query
            .bind(&self.last_round_ids)
            .bind(&self.last_round_times)
            .bind(&self.players)
            .bind(&self.mus)
            .bind(&self.sigmas)
            .bind(&self.rounds)
            .bind(&self.p0s)
            .bind(&self.w0s)
            .bind(&self.log_decays)
            .bind(&self.last_times)
            .bind(&self.volatilities);
        self.placements
            .bind(query)
            .bind(&self.bonus_spent)
            .bind(&self.factors)
            .bind(&self.last_seqs)
            .bind(&self.mus_before)
            .bind(&self.sigmas_before)
    }
}

/// History rows as one vector per column of `history`, for the bulk insert.
#[derive(Debug, Default)]
struct HistoryArrays<'a> {
    seqs: Vec<i64>,
    players: Vec<&'a str>,
    ranks: Vec<i64>,
    performances: Vec<f64>,
    mus_before: Vec<f64>,
    sigmas_before: Vec<Option<f64>>,
    mus_after: Vec<f64>,
    sigmas_after: Vec<Option<f64>>,
    before: PlacementArrays<'a>,
    after: PlacementArrays<'a>,
    expected_ranks: Vec<Option<f64>>,
    added: FactorColumns,
    previous: Vec<Option<i64>>,
}

impl<'a> HistoryArrays<'a> {
    fn with_capacity(n: usize) -> Self {
        Self {
            seqs: Vec::with_capacity(n),
            players: Vec::with_capacity(n),
            ranks: Vec::with_capacity(n),
            performances: Vec::with_capacity(n),
            mus_before: Vec::with_capacity(n),
            sigmas_before: Vec::with_capacity(n),
            mus_after: Vec::with_capacity(n),
            sigmas_after: Vec::with_capacity(n),
            before: PlacementArrays::default(),
            after: PlacementArrays::default(),
            expected_ranks: Vec::with_capacity(n),
            added: FactorColumns::with_capacity(n),
            previous: Vec::with_capacity(n),
        }
    }

    /// Appends `entrant`'s row of the round at `seq`, whose state's columns are `columns`.
    fn push(
        &mut self,
        seq: i64,
        entrant: &'a AppliedEntrant,
        columns: &StateColumns<'_>,
    ) -> Result<(), Error> {
        let change = &entrant.change;
        self.seqs.push(seq);
        self.players.push(&entrant.player);
        self.ranks.push(to_i64(entrant.rank, "rank")?);
        self.performances.push(change.performance);
        self.mus_before.push(change.before.mu);
        self.sigmas_before.push(change.before.sigma);
        self.mus_after.push(change.after.mu);
        self.sigmas_after.push(change.after.sigma);
        self.before.push(entrant.league.before.as_ref());
        self.after.push(entrant.league.after.as_ref());
        self.expected_ranks.push(entrant.expected_rank);
        self.added.push(columns.added);
        self.previous.push(entrant.previous);
        Ok(())
    }

    /// Binds every column, in [`INSERT_HISTORY`]'s order from `$2`.
    fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        let query = query
            .bind(&self.seqs)
            .bind(&self.players)
            .bind(&self.ranks)
            .bind(&self.performances)
            .bind(&self.mus_before)
            .bind(&self.sigmas_before)
            .bind(&self.mus_after)
            .bind(&self.sigmas_after);
        let query = self.after.bind(self.before.bind(query));
        self.added
            .bind(query.bind(&self.expected_ranks))
            .bind(&self.previous)
    }
}

/// The Postgres dialect.
pub(super) struct Pg;

/// Connects to the server at `url` and runs `migrations/postgres`.
pub(super) async fn connect(url: &str) -> Result<SqlStorage<Pg>, Error> {
    // Every statement planned for its values and the tables as they are now. sqlx prepares a
    // statement once per connection, and Postgres then keeps a generic plan costed when the
    // tables were small: without fresh statistics (autovacuum off, or behind an import) a
    // lookup of one round by its key stayed a scan of all of them. The game-load bench on
    // Postgres applied 490-660 matches a second with the cached plans, 1,689 without, where
    // the change feed's lookups had taken the database's whole CPU (BENCHMARKS.md).
    let options =
        PgConnectOptions::from_str(url)?.options([("plan_cache_mode", "force_custom_plan")]);
    // One connection first: a pool that cannot connect reports only that it timed out, where
    // this says why (refused, unknown host, no such database, bad password).
    PgConnection::connect_with(&options).await?.close().await?;
    let pool = PgPoolOptions::new()
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await?;
    sqlx::migrate!("./migrations/postgres").run(&pool).await?;
    let others = Arc::new(AtomicBool::new(true));
    let replicas = Arc::new(PgReplicas::new(pool.clone(), Arc::clone(&others)));
    Ok(SqlStorage::new(pool).with_replicas(replicas, others))
}

#[async_trait]
impl Dialect for Pg {
    type Db = Postgres;

    const NAME: &'static str = "postgresql";

    const LOCK_POOL_PARAMS: &'static str =
        "SELECT system, params FROM pools WHERE name = $1 FOR UPDATE";

    const ONE_WRITER: bool = false;

    /// A lookup per player the planner cannot turn into a join: right after a large round is
    /// written its statistics still say the round is small, and a join then hashed all of it
    /// (200,000 rows: 118 ms for a page, against 5.7 ms for its 1,000 lookups).
    const RESULTS_OF: &'static str = "
        SELECT {columns} FROM jsonb_array_elements_text($3::jsonb) AS j(value)
        CROSS JOIN LATERAL (SELECT * FROM history h
                            WHERE h.pool = $1 AND h.seq = $2 AND h.player = j.value LIMIT 1) h";

    /// A lateral lookup: without statistics (a database never analyzed, as right after an
    /// import where autovacuum is off) a join here scanned the pool's index for every row of
    /// the chain, 592 ms for a player of 420 rounds where the lookups take 2 ms.
    const PREVIOUS_ROW: &'static str = "
        chain c CROSS JOIN LATERAL (SELECT * FROM history
                                    WHERE pool = $1 AND seq = c.prev_seq AND player = $2
                                    LIMIT 1) h";

    async fn begin_write(pool: &PgPool) -> Result<Transaction<'static, Postgres>, Error> {
        Ok(pool.begin().await?)
    }

    async fn begin_snapshot(pool: &PgPool) -> Result<Transaction<'static, Postgres>, Error> {
        let mut tx = pool.begin().await?;
        sqlx::query(REPEATABLE_READ).execute(&mut *tx).await?;
        Ok(tx)
    }

    async fn lock_queue(tx: &mut PgConnection, pool: &str) -> Result<(), Error> {
        sqlx::query(LOCK_POOL)
            .bind(APPLY_LOCK_CLASS)
            .bind(pool)
            .execute(&mut *tx)
            .await?;
        Ok(())
    }

    async fn lock_tail(tx: &mut PgConnection, pool: &str) -> Result<(), Error> {
        sqlx::query(LOCK_POOL)
            .bind(TAIL_LOCK_CLASS)
            .bind(pool)
            .execute(&mut *tx)
            .await?;
        Ok(())
    }

    async fn lock_audit(tx: &mut PgConnection) -> Result<(), Error> {
        sqlx::query(LOCK_POOL)
            .bind(AUDIT_LOCK_CLASS)
            .bind("")
            .execute(&mut *tx)
            .await?;
        Ok(())
    }

    async fn notify(tx: &mut PgConnection, pool: &str) -> Result<(), Error> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANGES_CHANNEL)
            .bind(pool)
            .execute(&mut *tx)
            .await?;
        Ok(())
    }

    async fn write_leagues(
        tx: &mut PgConnection,
        pool: &str,
        recomputed: &Recomputed,
    ) -> Result<(), Error> {
        for chunk in recomputed.players.chunks(LEAGUE_ROWS_PER_STATEMENT) {
            let mut players = Vec::with_capacity(chunk.len());
            let mut placements = PlacementArrays::default();
            let mut spent = Vec::with_capacity(chunk.len());
            for (player, placement, bonus_spent) in chunk {
                players.push(player.as_str());
                placements.push(placement.as_ref());
                spent.push(*bonus_spent);
            }
            let query = sqlx::query(UPDATE_PLAYER_LEAGUES).bind(pool).bind(&players);
            placements
                .bind(query)
                .bind(&spent)
                .execute(&mut *tx)
                .await?;
        }
        for chunk in recomputed.rows.chunks(LEAGUE_ROWS_PER_STATEMENT) {
            let mut players = Vec::with_capacity(chunk.len());
            let mut seqs = Vec::with_capacity(chunk.len());
            let (mut before, mut after) = (PlacementArrays::default(), PlacementArrays::default());
            for (player, seq, moved) in chunk {
                players.push(player.as_str());
                seqs.push(*seq);
                before.push(moved.before.as_ref());
                after.push(moved.after.as_ref());
            }
            let query = sqlx::query(UPDATE_HISTORY_LEAGUES)
                .bind(pool)
                .bind(&players)
                .bind(&seqs);
            after.bind(before.bind(query)).execute(&mut *tx).await?;
        }
        Ok(())
    }

    async fn write_states(
        tx: &mut PgConnection,
        pool: &str,
        states: &[(String, SystemState)],
    ) -> Result<(), Error> {
        for chunk in states.chunks(LEAGUE_ROWS_PER_STATEMENT) {
            let n = chunk.len();
            let (mut players, mut mus, mut sigmas) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            let (mut p0s, mut w0s, mut log_decays, mut volatilities, mut factors) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            for (player, state) in chunk {
                let columns = StateColumns::of(state)?;
                let rating = state.rating();
                players.push(player.as_str());
                mus.push(rating.mu);
                sigmas.push(rating.sigma);
                p0s.push(columns.p0);
                w0s.push(columns.w0);
                log_decays.push(columns.log_decay);
                volatilities.push(columns.volatility);
                factors.push(columns.factors);
            }
            sqlx::query(UPDATE_PLAYER_STATES)
                .bind(pool)
                .bind(&players)
                .bind(&mus)
                .bind(&sigmas)
                .bind(&p0s)
                .bind(&w0s)
                .bind(&log_decays)
                .bind(&volatilities)
                .bind(&factors)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    }

    async fn stored_lines(
        tx: &mut PgConnection,
        pool: &str,
        ids: &[&str],
    ) -> Result<Vec<(String, String, Vec<u8>)>, Error> {
        Ok(sqlx::query_as(SELECT_STORED_LINES)
            .bind(pool)
            .bind(ids)
            .fetch_all(&mut *tx)
            .await?)
    }

    /// In one statement whatever their number.
    async fn insert_lines(
        tx: &mut PgConnection,
        pool: &str,
        lines: &[NewLine<'_>],
    ) -> Result<(), Error> {
        let ids: Vec<&str> = lines.iter().map(|l| l.id).collect();
        let seqs: Vec<i64> = lines.iter().map(|l| l.seq).collect();
        let bodies: Vec<&str> = lines.iter().map(|l| l.body).collect();
        let hashes: Vec<&[u8]> = lines.iter().map(|l| l.hash.as_slice()).collect();
        let kinds: Vec<&str> = lines.iter().map(|l| l.kind.as_str()).collect();
        sqlx::query(INSERT_LINES)
            .bind(pool)
            .bind(&ids)
            .bind(&seqs)
            .bind(&bodies)
            .bind(&hashes)
            .bind(&kinds)
            .execute(&mut *tx)
            .await?;
        Ok(())
    }

    /// In three statements whatever their number: the history rows, the players' states and
    /// the rounds' marks, each as arrays (one round trip where a round took three).
    async fn write_applied(
        tx: &mut PgConnection,
        pool: &str,
        rounds: &[Applying<'_>],
    ) -> Result<(), Error> {
        let n = rounds.iter().map(|r| r.round.entrants.len()).sum();
        let mut history = HistoryArrays::with_capacity(n);
        let mut states = StateArrays::with_capacity(n);
        let mut marks = (Vec::new(), Vec::new(), Vec::new());
        for applying in rounds {
            let round = applying.round;
            for (entrant, &superseded) in round.entrants.iter().zip(applying.superseded) {
                let columns = StateColumns::of(&entrant.state)?;
                history.push(applying.seq, entrant, &columns)?;
                if !superseded {
                    states.push(entrant, &columns, applying);
                }
            }
            marks.0.push(applying.id);
            marks.1.push(round.time);
            marks
                .2
                .push(to_i64(round.entrants.len() as u64, "entrants")?);
        }
        history
            .bind(sqlx::query(INSERT_HISTORY).bind(pool))
            .execute(&mut *tx)
            .await?;
        states
            .bind(sqlx::query(UPSERT_PLAYERS).bind(pool))
            .execute(&mut *tx)
            .await?;
        sqlx::query(MARK_APPLIED)
            .bind(pool)
            .bind(&marks.0)
            .bind(&marks.1)
            .bind(&marks.2)
            .execute(&mut *tx)
            .await?;
        Ok(())
    }
}
