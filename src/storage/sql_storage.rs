//! [`Storage`] written once for both backends: [`SqlStorage`] runs the statements of `sql.rs`
//! and leaves to its [`Dialect`] only what really differs between Postgres and SQLite: how a
//! write transaction takes its locks, how a read transaction sees one snapshot, and how a
//! round's rows are written in bulk.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{
    ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Transaction, Type,
};
use tracing::instrument;

use super::enqueue::{self, NewLine};
use super::rows::{
    applied_page, audited_key, audited_params, decode_display, display_column, history_page,
    join_players, keeps_factors, params_columns, to_i64, to_u64, AppliedRow, AsOfRow, AuditRow,
    FactorRow, HistoryRow, KeyRow, LeagueHistoryRow, ParamsRow, PeakRow, PlayerRow, PoolRoundsRow,
    PoolRow, ProgressRow, QueueStateRow, ResultRow, RoundRow, SeasonRow,
};
use super::{
    sql, AppliedId, AppliedPage, AppliedRound, AppliedSince, AsOf, AuditPage, AuditQuery,
    EnqueueRequest, EnqueuedAll, Error, HistoryPage, LeagueHistory, LineOutcome, LoadedPool, Peak,
    PoolInfo, PoolProgress, PoolWrite, QueuedRound, RatedAsOf, Recomputed, RecomputedLine,
    Replicas, ResultsPage, Rewrite, RoundOutcome, RoundRecord, RoundResult, RoundStatus,
    SeasonRecord, Storage, StoredKey,
};
use crate::audit::{Action, Actor};
use crate::display::{Display, Leagues};
use crate::engine::{SystemParams, SystemState};
use crate::scope::Scope;

/// What differs between the SQL backends. Every transaction of [`SqlStorage`] that writes
/// starts with [`begin_write`](Self::begin_write) and reads the rows it checks with the
/// dialect's locking statements, so several service processes may share one database.
#[async_trait]
pub(super) trait Dialect: Send + Sync + 'static {
    /// The sqlx driver.
    type Db: Database;

    /// `db.system` in tracing spans.
    const NAME: &'static str;

    /// Pool `$1`'s `system` and `params`, its row locked for the rest of the transaction as
    /// far as the backend locks rows; no row means no pool. Taken after
    /// [`lock_tail`](Self::lock_tail), never before it.
    const LOCK_POOL_PARAMS: &'static str;

    /// Whether the database lets one transaction write at a time.
    const ONE_WRITER: bool;

    /// [`sql::RESULT_COLUMNS`] (in place of `{columns}`) of the players of the round at seq `$2`
    /// of pool `$1` whom the JSON array of strings bound to `$3` names, one key lookup each.
    const RESULTS_OF: &'static str;

    /// The `FROM` clause of a step along a player's chain of history rows: `chain c` (a row
    /// of theirs, with its `prev_seq`) and `h`, the history row of player `$2` in pool `$1` at
    /// `c.prev_seq`, looked up by key whatever the planner's statistics say (what
    /// `{previous}` stands for in [`sql::SELECT_HISTORY`] and [`sql::SELECT_PEAK`]).
    const PREVIOUS_ROW: &'static str;

    /// Starts a transaction that will write.
    async fn begin_write(pool: &Pool<Self::Db>) -> Result<Transaction<'static, Self::Db>, Error>;

    /// Starts a transaction whose reads all see one snapshot of the database.
    async fn begin_snapshot(pool: &Pool<Self::Db>)
        -> Result<Transaction<'static, Self::Db>, Error>;

    /// Makes the writers of pool `pool`'s queue (the workers of every process) take turns
    /// until the transaction ends.
    async fn lock_queue(
        tx: &mut <Self::Db as Database>::Connection,
        pool: &str,
    ) -> Result<(), Error>;

    /// Makes the writers of the tail of pool `pool`'s queue (every process's posts, a change
    /// of its parameters, its deletion) take turns until the transaction ends. Apart from the
    /// worker's lock ([`lock_queue`](Self::lock_queue)), so that posts and the worker do not wait
    /// for each other's commits; a transaction that takes both takes that one first.
    async fn lock_tail(
        tx: &mut <Self::Db as Database>::Connection,
        pool: &str,
    ) -> Result<(), Error>;

    /// The status and comparison hash of each line of pool `pool` stored under one of `ids`.
    async fn stored_lines(
        tx: &mut <Self::Db as Database>::Connection,
        pool: &str,
        ids: &[&str],
    ) -> Result<Vec<(String, String, Vec<u8>)>, Error>;

    /// Queues `lines` in pool `pool`, at their seqs.
    async fn insert_lines(
        tx: &mut <Self::Db as Database>::Connection,
        pool: &str,
        lines: &[NewLine<'_>],
    ) -> Result<(), Error>;

    /// Writes what applying `rounds` did, in order, and marks each applied: every entrant's
    /// state and history row, each row with the factor its round added and the seq of the
    /// entrant's row before. The state of an entrant marked `superseded` is not written: a
    /// later round of the same transaction writes theirs, so no player's state is written twice
    /// among `rounds`.
    async fn write_applied(
        tx: &mut <Self::Db as Database>::Connection,
        pool: &str,
        rounds: &[Applying<'_>],
    ) -> Result<(), Error>;

    /// Tells the other processes sharing the database, once the transaction commits, that pool
    /// `pool` changed (a no-op where one process owns the database).
    async fn notify(tx: &mut <Self::Db as Database>::Connection, pool: &str) -> Result<(), Error>;

    /// Makes the writers of audit entries take turns until the transaction ends, so that the
    /// entries' ids follow the order their transactions commit in and a reader paging the log
    /// by id misses none (a no-op where the database takes one writer at a time). Taken last,
    /// right before the entry is written and the transaction commits.
    async fn lock_audit(tx: &mut <Self::Db as Database>::Connection) -> Result<(), Error>;

    /// Writes every player's state after a season's soft reset: the rating, the belief's
    /// columns and how many factors it keeps (none, after a reset that drops them).
    async fn write_states(
        tx: &mut <Self::Db as Database>::Connection,
        pool: &str,
        states: &[(String, SystemState)],
    ) -> Result<(), Error>;

    /// Writes the recomputed leagues of every placed player and every history row of pool
    /// `pool`, whose league columns the caller has cleared.
    async fn write_leagues(
        tx: &mut <Self::Db as Database>::Connection,
        pool: &str,
        recomputed: &Recomputed,
    ) -> Result<(), Error>;
}

/// Longest a request's read waits for one of the reads' connections before it is answered
/// 503 `database_unavailable`, on either backend: more reads wait than the connections serve.
const READ_ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// The database, through dialect `D`.
pub(super) struct SqlStorage<D: Dialect> {
    pool: Pool<D::Db>,
    replicas: Option<Arc<dyn Replicas>>,
    /// Whether another process may be listening for changes: true until a heartbeat of
    /// `replicas` finds this process alone (a process that sends none, `import` say, always
    /// tells).
    others: Arc<AtomicBool>,
    /// This process's writers in line, first come first served, where the database lets one
    /// transaction write at a time (SQLite): SQLite's own lock is waited for by retrying after
    /// sleeps that grow, so a writer committing back to back (a worker settling batches while
    /// it rates the next) could keep a post waiting for as long as it went on.
    writers: tokio::sync::Mutex<()>,
}

impl<D: Dialect> SqlStorage<D> {
    /// Storage on `pool`, whose migrations have run, owned by this process alone.
    pub(super) fn new(pool: Pool<D::Db>) -> Self {
        Self {
            pool,
            replicas: None,
            others: Arc::new(AtomicBool::new(true)),
            writers: tokio::sync::Mutex::new(()),
        }
    }

    /// Starts a write transaction, after this process's writers before it where the database
    /// takes one at a time: the turn is held as long as the guard returned beside it.
    async fn begin_write(
        &self,
    ) -> Result<
        (
            Option<tokio::sync::MutexGuard<'_, ()>>,
            Transaction<'static, D::Db>,
        ),
        Error,
    > {
        let turn = if D::ONE_WRITER {
            Some(self.writers.lock().await)
        } else {
            None
        };
        Ok((turn, D::begin_write(&self.pool).await?))
    }

    /// The same storage, shared with other processes that coordinate through `replicas`, whose
    /// heartbeats keep `others` (whether another replica is live).
    pub(super) fn with_replicas(
        self,
        replicas: Arc<dyn Replicas>,
        others: Arc<AtomicBool>,
    ) -> Self {
        Self {
            replicas: Some(replicas),
            others,
            ..self
        }
    }

    /// Tells the other processes, once `tx` commits, that pool `pool` changed, unless this
    /// process is known to be alone: Postgres commits notifying transactions one at a time
    /// (BENCHMARKS.md, "Replicas", measures what that costs one pool's ingest).
    async fn notify(
        &self,
        tx: &mut <D::Db as Database>::Connection,
        pool: &str,
    ) -> Result<(), Error> {
        if self.others.load(Ordering::Acquire) {
            D::notify(tx, pool).await?;
        }
        Ok(())
    }
}

/// A batch's limits, in rounds and in characters of bodies, as the statements bind them.
fn batch_limits(max_rounds: usize, max_bytes: usize) -> Result<(i64, i64), Error> {
    Ok((
        i64::try_from(max_rounds).map_err(|_| Error::OutOfRange { what: "max_rounds" })?,
        i64::try_from(max_bytes).map_err(|_| Error::OutOfRange { what: "max_bytes" })?,
    ))
}

/// Locks `pool`'s queue for the transaction and returns the seqs of `ids`, which must be its
/// oldest queued rounds, in order.
async fn lock_next_rounds<D: Dialect>(
    tx: &mut <D::Db as Database>::Connection,
    pool: &str,
    ids: impl ExactSizeIterator<Item = &str>,
) -> Result<Vec<i64>, Error>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> i64: Encode<'q, D::Db> + Type<D::Db>,
    for<'r> (String, i64): sqlx::FromRow<'r, <D::Db as Database>::Row>,
{
    D::lock_queue(tx, pool).await?;
    let count = i64::try_from(ids.len()).map_err(|_| Error::OutOfRange { what: "rounds" })?;
    let oldest: Vec<(String, i64)> = sqlx::query_as(sql::SELECT_QUEUED_IDS)
        .bind(pool)
        .bind(count)
        .fetch_all(&mut *tx)
        .await?;
    let mut oldest = oldest.into_iter();
    ids.map(|id| match oldest.next() {
        Some((queued, seq)) if queued == id => Ok(seq),
        _ => Err(Error::NotNextRound {
            pool: pool.to_owned(),
            round: id.to_owned(),
        }),
    })
    .collect()
}

/// Pool `name`'s display settings and applied rounds, read in `tx`.
async fn display_and_applied<D: Dialect>(
    tx: &mut <D::Db as Database>::Connection,
    name: &str,
) -> Result<(Display, u64), Error>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'r> (String, i64): sqlx::FromRow<'r, <D::Db as Database>::Row>,
{
    let Some((display, applied)): Option<(String, i64)> =
        sqlx::query_as(sql::SELECT_POOL_DISPLAY_APPLIED)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
    else {
        return Err(Error::PoolNotFound(name.to_owned()));
    };
    Ok((decode_display(&display)?, to_u64(applied, "applied")?))
}

/// Pool `name`'s parameters, display settings and applied lines, read in `tx`; `None` if
/// there is no such pool.
async fn progress_in<D: Dialect>(
    tx: &mut <D::Db as Database>::Connection,
    name: &str,
) -> Result<Option<PoolProgress>, Error>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'r> ProgressRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
{
    let row: Option<ProgressRow> = sqlx::query_as(sql::SELECT_POOL_PROGRESS)
        .bind(name)
        .fetch_optional(&mut *tx)
        .await?;
    row.map(ProgressRow::into_progress).transpose()
}

/// Stores `display` as pool `name`'s settings, in `tx`.
async fn write_display<D: Dialect>(
    tx: &mut <D::Db as Database>::Connection,
    name: &str,
    display: &Display,
) -> Result<(), Error>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> String: Encode<'q, D::Db> + Type<D::Db>,
{
    sqlx::query(sql::UPDATE_POOL_DISPLAY)
        .bind(name)
        .bind(display_column(display)?)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// An audit entry to write: `action` by `actor` on `pool` (none for a key's) and `subject`,
/// with the states before and after as JSON.
struct NewAudit<'a> {
    actor: &'a Actor,
    action: Action,
    pool: Option<&'a str>,
    subject: Option<&'a str>,
    before: Option<String>,
    after: Option<String>,
}

impl<'a> NewAudit<'a> {
    /// `actor`'s change of pool `pool`'s display settings from `before` to `after`.
    fn display(
        actor: &'a Actor,
        pool: &'a str,
        before: &Display,
        after: &Display,
    ) -> Result<Self, Error> {
        Ok(Self {
            actor,
            action: Action::DisplayUpdate,
            pool: Some(pool),
            subject: None,
            before: Some(display_column(before)?),
            after: Some(display_column(after)?),
        })
    }
}

/// Writes `entry` into the audit log, in `tx`, stamped with the clock now.
async fn insert_audit<D: Dialect>(
    tx: &mut <D::Db as Database>::Connection,
    entry: NewAudit<'_>,
) -> Result<(), Error>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> i64: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> Option<String>: Encode<'q, D::Db> + Type<D::Db>,
{
    D::lock_audit(&mut *tx).await?;
    sqlx::query(sql::INSERT_AUDIT)
        .bind(time::OffsetDateTime::now_utc().unix_timestamp())
        .bind(entry.actor.key.as_str())
        .bind(entry.actor.request_id.clone())
        .bind(entry.action.as_str())
        .bind(entry.pool.map(str::to_owned))
        .bind(entry.subject.map(str::to_owned))
        .bind(entry.before)
        .bind(entry.after)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The `WHERE` clause of `query` over the audit log and its text parameters, from `$2` on (`$1`
/// is the page's size, and the cursor, if any, follows the texts): a pool, an action, for a key
/// that does not reach every pool its patterns, each a name (`pool = $n`) or a start of names
/// compared by length (`substr(pool, 1, len) = $n`, which treats no character as a wildcard, as
/// `LIKE` would `_`), and the cursor.
fn audit_filter(query: &AuditQuery) -> (String, Vec<String>) {
    let mut clauses = Vec::new();
    let mut texts = Vec::new();
    let mut next = 2;
    let mut placeholder = || {
        let n = next;
        next += 1;
        format!("${n}")
    };
    if let Some(pool) = &query.pool {
        clauses.push(format!("pool = {}", placeholder()));
        texts.push(pool.clone());
    }
    if let Some(action) = query.action {
        clauses.push(format!("action = {}", placeholder()));
        texts.push(action.as_str().to_owned());
    }
    if let Scope::Pools(patterns) = &query.scope {
        let mut reach = Vec::new();
        for pattern in patterns.iter() {
            match pattern.strip_suffix('*') {
                Some(start) => {
                    reach.push(format!(
                        "substr(pool, 1, {}) = {}",
                        start.chars().count(),
                        placeholder()
                    ));
                    texts.push(start.to_owned());
                }
                None => {
                    reach.push(format!("pool = {}", placeholder()));
                    texts.push(pattern.clone());
                }
            }
        }
        clauses.push(format!("pool IS NOT NULL AND ({})", reach.join(" OR ")));
    }
    if query.before.is_some() {
        clauses.push(format!("id < {}", placeholder()));
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", clauses.join(" AND "))
    };
    (filter, texts)
}

/// [`Error::Stale`] for pool `name`.
fn stale(name: &str) -> Error {
    Error::Stale {
        pool: name.to_owned(),
    }
}

/// Runs `statement` (`sql::INSERT_KEY` or `sql::INSERT_FIRST_KEY`) for `key` in `tx`, and
/// records it as created by `actor` if it stored it; whether it did.
async fn insert_key<D: Dialect>(
    tx: &mut <D::Db as Database>::Connection,
    statement: &str,
    key: &StoredKey,
    actor: &Actor,
) -> Result<bool, Error>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> i64: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> Option<String>: Encode<'q, D::Db> + Type<D::Db>,
    for<'r> (String,): sqlx::FromRow<'r, <D::Db as Database>::Row>,
{
    let stored: Option<(String,)> = sqlx::query_as(statement)
        .bind(key.name.as_str())
        .bind(key.role.as_str())
        .bind(key.sha256.as_str())
        .bind(key.created_at)
        .bind(
            key.pools
                .patterns()
                .map(|patterns| serde_json::to_string(patterns).expect("strings print")),
        )
        .fetch_optional(&mut *tx)
        .await?;
    if stored.is_some() {
        let entry = NewAudit {
            actor,
            action: Action::KeyCreate,
            pool: None,
            subject: Some(&key.name),
            before: None,
            after: Some(audited_key(key)),
        };
        insert_audit::<D>(tx, entry).await?;
    }
    Ok(stored.is_some())
}

/// For each entrant of each applied round, whether a later round of `rounds` has the same
/// player before any season start: only a player's last state in a batch is written to
/// `players`, and the last before each season start, which counts the rounds each player has
/// played from their row.
fn superseded_states(rounds: &[(&str, RoundOutcome<'_>)]) -> Vec<Vec<bool>> {
    let mut later = HashSet::new();
    let mut superseded: Vec<Vec<bool>> = rounds
        .iter()
        .rev()
        .map(|(_, outcome)| match outcome {
            RoundOutcome::Applied(round) => round
                .entrants
                .iter()
                .map(|e| !later.insert(e.player.as_str()))
                .collect(),
            RoundOutcome::Season(_) => {
                later.clear();
                Vec::new()
            }
            RoundOutcome::Failed(_) => Vec::new(),
        })
        .collect();
    superseded.reverse();
    superseded
}

/// A round applied, as [`Dialect::write_applied`] writes it.
pub(super) struct Applying<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its seq.
    pub seq: i64,
    /// What it did.
    pub round: &'a AppliedRound,
    /// Which of its entrants' states a later round of the transaction writes.
    pub superseded: &'a [bool],
}

/// Writes what each of `rounds` (at `seqs`) did, in order, as the worker settles them: every
/// applied round's entrants and history, every season start's reset, every failure; marks
/// each line. The applied rounds between two season starts are written together (Postgres: in
/// three statements, where one round took three). Returns how many lines were applied.
async fn write_outcomes<D: Dialect>(
    tx: &mut <D::Db as Database>::Connection,
    pool: &str,
    rounds: &[(&str, RoundOutcome<'_>)],
    seqs: &[i64],
) -> Result<i64, Error>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> i64: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> Option<i64>: Encode<'q, D::Db> + Type<D::Db>,
{
    let superseded = superseded_states(rounds);
    let mut applied = 0i64;
    let mut run = Vec::new();
    for ((&(id, outcome), &seq), superseded) in rounds.iter().zip(seqs).zip(&superseded) {
        match outcome {
            RoundOutcome::Applied(round) => {
                run.push(Applying {
                    id,
                    seq,
                    round,
                    superseded,
                });
                applied += 1;
            }
            RoundOutcome::Season(start) => {
                // The reset applies to the states the rounds before it left.
                if !run.is_empty() {
                    D::write_applied(&mut *tx, pool, &std::mem::take(&mut run)).await?;
                }
                if !start.states.is_empty() {
                    D::write_states(&mut *tx, pool, &start.states).await?;
                }
                sqlx::query(sql::START_SEASON)
                    .bind(pool)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(sql::MARK_LINE_APPLIED)
                    .bind(pool)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                applied += 1;
            }
            RoundOutcome::Failed(error) => {
                sqlx::query(sql::MARK_FAILED)
                    .bind(pool)
                    .bind(id)
                    .bind(error)
                    .execute(&mut *tx)
                    .await?;
            }
        }
    }
    if !run.is_empty() {
        D::write_applied(&mut *tx, pool, &run).await?;
    }
    Ok(applied)
}

#[async_trait]
impl<D: Dialect> Storage for SqlStorage<D>
where
    for<'c> &'c mut <D::Db as Database>::Connection: Executor<'c, Database = D::Db>,
    for<'c> &'c Pool<D::Db>: Executor<'c, Database = D::Db>,
    for<'q> <D::Db as Database>::Arguments<'q>: IntoArguments<'q, D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> String: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> i64: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> Option<i64>: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> Option<String>: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> Vec<u8>: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> f64: Encode<'q, D::Db> + Type<D::Db>,
    for<'r> String: Decode<'r, D::Db>,
    for<'r> Vec<u8>: Decode<'r, D::Db>,
    for<'r> i64: Decode<'r, D::Db>,
    usize: ColumnIndex<<D::Db as Database>::Row>,
    for<'r> ParamsRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> QueueStateRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> PoolRoundsRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> PoolRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> ProgressRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> QueuedRound: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> (String, i64): sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> RoundRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> ResultRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> PlayerRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> FactorRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> HistoryRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> AsOfRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> PeakRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> LeagueHistoryRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> KeyRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> SeasonRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> AppliedRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> AppliedId: sqlx::FromRow<'r, <D::Db as Database>::Row>,
    for<'r> AuditRow: sqlx::FromRow<'r, <D::Db as Database>::Row>,
{
    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %name))]
    async fn put_pool(
        &self,
        name: &str,
        params: &SystemParams,
        actor: &Actor,
    ) -> Result<PoolWrite, Error> {
        let (system, encoded) = params_columns(params)?;
        let (_turn, mut tx) = self.begin_write().await?;
        let inserted: Option<(String,)> = sqlx::query_as(sql::INSERT_POOL)
            .bind(name)
            .bind(&system)
            .bind(&encoded)
            .fetch_optional(&mut *tx)
            .await?;
        let written = audited_params(&system, &encoded);
        if inserted.is_some() {
            self.notify(&mut tx, name).await?;
            let entry = NewAudit {
                actor,
                action: Action::PoolCreate,
                pool: Some(name),
                subject: None,
                before: None,
                after: Some(written),
            };
            insert_audit::<D>(&mut tx, entry).await?;
            tx.commit().await?;
            return Ok(PoolWrite::Created);
        }
        D::lock_tail(&mut tx, name).await?;
        let stored: ParamsRow = sqlx::query_as(D::LOCK_POOL_PARAMS)
            .bind(name)
            .fetch_one(&mut *tx)
            .await?;
        let before = stored.audited();
        if stored.into_params()? == *params {
            return Ok(PoolWrite::Unchanged);
        }
        let rounds: PoolRoundsRow = sqlx::query_as(sql::COUNT_POOL_ROUNDS)
            .bind(name)
            .fetch_one(&mut *tx)
            .await?;
        rounds.check_unlocked(name)?;
        sqlx::query(sql::UPDATE_POOL)
            .bind(name)
            .bind(system)
            .bind(encoded)
            .execute(&mut *tx)
            .await?;
        self.notify(&mut tx, name).await?;
        let entry = NewAudit {
            actor,
            action: Action::PoolUpdate,
            pool: Some(name),
            subject: None,
            before: Some(before),
            after: Some(written),
        };
        insert_audit::<D>(&mut tx, entry).await?;
        tx.commit().await?;
        Ok(PoolWrite::Updated)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %name))]
    async fn delete_pool(&self, name: &str, actor: &Actor) -> Result<bool, Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        // The lock a commit of the pool's worker takes: one under way ends first, and one
        // after finds no queued round to settle; then the posts' lock, so that none is
        // queued into a pool about to go.
        D::lock_queue(&mut tx, name).await?;
        D::lock_tail(&mut tx, name).await?;
        let stored: Option<ParamsRow> = sqlx::query_as(D::LOCK_POOL_PARAMS)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(stored) = stored else {
            return Ok(false);
        };
        let (display, applied) = display_and_applied::<D>(&mut tx, name).await?;
        let before = format!(
            r#"{{"params":{},"display":{},"applied":{applied}}}"#,
            stored.audited(),
            display_column(&display)?
        );
        for delete in [
            sql::DELETE_POOL_HISTORY,
            sql::DELETE_POOL_PLAYERS,
            sql::DELETE_POOL_ROUNDS,
        ] {
            sqlx::query(delete).bind(name).execute(&mut *tx).await?;
        }
        let deleted: Option<(String,)> = sqlx::query_as(sql::DELETE_POOL)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        if deleted.is_none() {
            return Ok(false);
        }
        self.notify(&mut tx, name).await?;
        let entry = NewAudit {
            actor,
            action: Action::PoolDelete,
            pool: Some(name),
            subject: None,
            before: Some(before),
            after: None,
        };
        insert_audit::<D>(&mut tx, entry).await?;
        tx.commit().await?;
        Ok(true)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %name))]
    async fn put_display(&self, name: &str, display: &Display, actor: &Actor) -> Result<(), Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        D::lock_queue(&mut tx, name).await?;
        let (stored, _) = display_and_applied::<D>(&mut tx, name).await?;
        // Leagues change only with their recomputation (`put_leagues`): settings built on a
        // stale view of them would undo another process's change.
        if stored.leagues != display.leagues {
            return Err(stale(name));
        }
        if stored == *display {
            return Ok(());
        }
        write_display::<D>(&mut tx, name, display).await?;
        self.notify(&mut tx, name).await?;
        insert_audit::<D>(&mut tx, NewAudit::display(actor, name, &stored, display)?).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip_all, fields(db.system = D::NAME))]
    async fn keys(&self) -> Result<Vec<StoredKey>, Error> {
        let rows: Vec<KeyRow> = sqlx::query_as(sql::SELECT_KEYS)
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(KeyRow::into_key).collect()
    }

    #[instrument(skip_all, fields(db.system = D::NAME, key.name = %key.name))]
    async fn create_key(&self, key: &StoredKey, actor: &Actor) -> Result<bool, Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        let stored = insert_key::<D>(&mut tx, sql::INSERT_KEY, key, actor).await?;
        tx.commit().await?;
        Ok(stored)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, key.name = %key.name))]
    async fn create_first_key(&self, key: &StoredKey, actor: &Actor) -> Result<bool, Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        let stored = insert_key::<D>(&mut tx, sql::INSERT_FIRST_KEY, key, actor).await?;
        tx.commit().await?;
        Ok(stored)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, key.name = %name))]
    async fn revoke_key(&self, name: &str, at: i64, actor: &Actor) -> Result<bool, Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        let revoked: Option<(String,)> = sqlx::query_as(sql::REVOKE_KEY)
            .bind(name)
            .bind(at)
            .fetch_optional(&mut *tx)
            .await?;
        if revoked.is_none() {
            let exists: Option<(String,)> = sqlx::query_as(sql::KEY_EXISTS)
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
            return Ok(exists.is_some());
        }
        let entry = NewAudit {
            actor,
            action: Action::KeyRevoke,
            pool: None,
            subject: Some(name),
            before: Some(r#"{"revoked_at":null}"#.to_owned()),
            after: Some(format!(r#"{{"revoked_at":{at}}}"#)),
        };
        insert_audit::<D>(&mut tx, entry).await?;
        tx.commit().await?;
        Ok(true)
    }

    #[instrument(skip_all, fields(db.system = D::NAME))]
    async fn audit(&self, query: &AuditQuery) -> Result<AuditPage, Error> {
        let (filter, texts) = audit_filter(query);
        let statement = format!("{}{filter}{}", sql::SELECT_AUDIT, sql::AUDIT_ORDER);
        let mut select = sqlx::query_as::<_, AuditRow>(&statement).bind(i64::from(query.limit) + 1);
        for text in texts {
            select = select.bind(text);
        }
        if let Some(before) = query.before {
            select = select.bind(before);
        }
        let mut rows = select.fetch_all(&self.pool).await?;
        let more = rows.len() > query.limit as usize;
        rows.truncate(query.limit as usize);
        Ok(AuditPage {
            entries: rows
                .into_iter()
                .map(AuditRow::into_entry)
                .collect::<Result<_, _>>()?,
            more,
        })
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn league_rows(&self, pool: &str) -> Result<LeagueHistory, Error> {
        let mut tx = D::begin_snapshot(&self.pool).await?;
        let (_, applied) = display_and_applied::<D>(&mut tx, pool).await?;
        let rows: Vec<LeagueHistoryRow> = sqlx::query_as(sql::SELECT_LEAGUE_ROWS)
            .bind(pool)
            .fetch_all(&mut *tx)
            .await?;
        let seasons: Vec<i64> = sqlx::query_scalar(sql::SELECT_APPLIED_SEASON_SEQS)
            .bind(pool)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(LeagueHistory {
            applied,
            rows: rows
                .into_iter()
                .map(LeagueHistoryRow::into_row)
                .collect::<Result<_, _>>()?,
            seasons,
        })
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %name, rows = recomputed.rows.len()))]
    async fn put_leagues(
        &self,
        name: &str,
        display: &Display,
        recomputed: &Recomputed,
        actor: &Actor,
    ) -> Result<(), Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        // Taken as the worker takes it: no round is settled until the leagues are written.
        D::lock_queue(&mut tx, name).await?;
        let (stored, applied) = display_and_applied::<D>(&mut tx, name).await?;
        if applied != recomputed.applied {
            return Err(stale(name));
        }
        write_display::<D>(&mut tx, name, display).await?;
        for clear in [sql::CLEAR_PLAYER_LEAGUES, sql::CLEAR_HISTORY_LEAGUES] {
            sqlx::query(clear).bind(name).execute(&mut *tx).await?;
        }
        D::write_leagues(&mut tx, name, recomputed).await?;
        self.notify(&mut tx, name).await?;
        insert_audit::<D>(&mut tx, NewAudit::display(actor, name, &stored, display)?).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %name))]
    async fn pool(&self, name: &str) -> Result<Option<PoolInfo>, Error> {
        let row: Option<PoolRow> =
            sqlx::query_as(&format!("{} WHERE p.name = $1", sql::SELECT_POOLS))
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
        row.map(PoolRow::into_info).transpose()
    }

    #[instrument(skip_all, fields(db.system = D::NAME))]
    async fn pools(&self) -> Result<Vec<PoolInfo>, Error> {
        let rows: Vec<PoolRow> = sqlx::query_as(&format!("{} ORDER BY p.name", sql::SELECT_POOLS))
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(PoolRow::into_info).collect()
    }

    #[instrument(skip_all, fields(db.system = D::NAME))]
    async fn pool_names(&self) -> Result<Vec<String>, Error> {
        Ok(sqlx::query_scalar(sql::SELECT_POOL_NAMES)
            .fetch_all(&self.pool)
            .await?)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %name))]
    async fn pool_progress(&self, name: &str) -> Result<Option<PoolProgress>, Error> {
        let row: Option<ProgressRow> = sqlx::query_as(sql::SELECT_POOL_PROGRESS)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.map(ProgressRow::into_progress).transpose()
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, requests = requests.len()))]
    async fn enqueue_requests(
        &self,
        pool: &str,
        requests: &[EnqueueRequest<'_>],
        max_queued: u64,
    ) -> Result<Vec<EnqueuedAll>, Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        D::lock_tail(&mut tx, pool).await?;
        let state: QueueStateRow = sqlx::query_as(sql::SELECT_QUEUE_STATE)
            .bind(pool)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| Error::PoolNotFound(pool.to_owned()))?;
        let tail = state.tail()?;
        let params_before = requests
            .iter()
            .flat_map(|r| r.entries.iter())
            .any(|e| e.audit.is_some())
            .then(|| state.audited_params());
        // Decoded only when a request was checked: one checked against nothing pays no more.
        let now = if requests.iter().any(|r| r.against.is_some()) {
            Some(state.into_now()?)
        } else {
            None
        };
        let mut ids: Vec<&str> = requests
            .iter()
            .flat_map(|r| r.entries.iter().map(|e| e.id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut stored = HashMap::new();
        for (id, status, hash) in D::stored_lines(&mut tx, pool, &ids).await? {
            // Keyed by the request's own text of the id, which the plan's lines borrow.
            if let Ok(at) = ids.binary_search(&id.as_str()) {
                stored.insert(ids[at], enqueue::stored(&status, hash)?);
            }
        }
        let plan = enqueue::plan(requests, stored, tail, now, max_queued);
        if !plan.lines.is_empty() {
            D::insert_lines(&mut tx, pool, &plan.lines).await?;
            self.notify(&mut tx, pool).await?;
            for line in &plan.lines {
                let Some(audited) = line.audit else { continue };
                let before = (audited.action == Action::CorrectionParams)
                    .then(|| params_before.clone())
                    .flatten();
                let entry = NewAudit {
                    actor: audited.actor,
                    action: audited.action,
                    pool: Some(pool),
                    subject: Some(line.id),
                    before,
                    after: Some(line.body.to_owned()),
                };
                insert_audit::<D>(&mut tx, entry).await?;
            }
            tx.commit().await?;
        }
        Ok(plan.answers)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn queued_corrections(&self, pool: &str) -> Result<Vec<QueuedRound>, Error> {
        Ok(sqlx::query_as(sql::SELECT_QUEUED_CORRECTIONS)
            .bind(pool)
            .fetch_all(&self.pool)
            .await?)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn last_correction(&self, pool: &str) -> Result<Option<i64>, Error> {
        let (seq,): (Option<i64>,) = sqlx::query_as(sql::LAST_APPLIED_CORRECTION)
            .bind(pool)
            .fetch_one(&self.pool)
            .await?;
        Ok(seq)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn queued_rounds(
        &self,
        pool: &str,
        after: i64,
        max_rounds: usize,
        max_bytes: usize,
    ) -> Result<Vec<QueuedRound>, Error> {
        let (max_rounds, max_bytes) = batch_limits(max_rounds, max_bytes)?;
        Ok(sqlx::query_as(sql::SELECT_QUEUED)
            .bind(pool)
            .bind(max_rounds)
            .bind(max_bytes)
            .bind(after)
            .fetch_all(&self.pool)
            .await?)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, rounds = rounds.len()))]
    async fn settle_rounds(
        &self,
        pool: &str,
        rounds: &[(&str, RoundOutcome<'_>)],
        rated_on: u64,
        leagues: Option<&Leagues>,
    ) -> Result<(), Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        let seqs = lock_next_rounds::<D>(&mut tx, pool, rounds.iter().map(|(id, _)| *id)).await?;
        // Under the queue's lock, which every settling and `put_leagues` take too. Rounds
        // applied by another process since these were rated would be overwritten by states
        // that never saw them; leagues changed since would store placements the new leagues
        // do not have.
        let (stored, applied_before) = display_and_applied::<D>(&mut tx, pool).await?;
        if applied_before != rated_on || stored.leagues.as_ref() != leagues {
            return Err(stale(pool));
        }
        let applied = write_outcomes::<D>(&mut tx, pool, rounds, &seqs).await?;
        if applied > 0 {
            sqlx::query(sql::COUNT_APPLIED)
                .bind(pool)
                .bind(applied)
                .execute(&mut *tx)
                .await?;
        }
        self.notify(&mut tx, pool).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, corrections = rewrite.corrections.len()))]
    async fn rewrite_pool(
        &self,
        pool: &str,
        rewrite: &Rewrite<'_>,
        lines: &mut tokio::sync::mpsc::Receiver<Result<Vec<RecomputedLine>, String>>,
    ) -> Result<(), Error> {
        let (_turn, mut tx) = self.begin_write().await?;
        lock_next_rounds::<D>(&mut tx, pool, rewrite.corrections.iter().copied()).await?;
        let (stored, applied_before) = display_and_applied::<D>(&mut tx, pool).await?;
        if applied_before != rewrite.rated_on || stored.leagues.as_ref() != rewrite.leagues {
            return Err(stale(pool));
        }
        for statement in [sql::DELETE_POOL_HISTORY, sql::DELETE_POOL_PLAYERS] {
            sqlx::query(statement).bind(pool).execute(&mut *tx).await?;
        }
        let mut written = 0;
        while let Some(batch) = lines.recv().await {
            let batch = batch.map_err(Error::Recompute)?;
            let outcomes: Vec<(&str, RoundOutcome<'_>)> = batch
                .iter()
                .map(|line| {
                    let outcome = match &line.outcome {
                        LineOutcome::Round(round) => RoundOutcome::Applied(round),
                        LineOutcome::Season(start) => RoundOutcome::Season(start),
                    };
                    (line.id.as_str(), outcome)
                })
                .collect();
            let seqs: Vec<i64> = batch.iter().map(|line| line.seq).collect();
            write_outcomes::<D>(&mut tx, pool, &outcomes, &seqs).await?;
            written += batch.len();
        }
        if written != rewrite.lines {
            return Err(Error::Recompute(format!(
                "{written} of {} lines were rated",
                rewrite.lines
            )));
        }
        for (id, body) in rewrite.changed {
            sqlx::query(sql::UPDATE_ROUND_BODY)
                .bind(pool)
                .bind(id.as_str())
                .bind(body.as_str())
                .execute(&mut *tx)
                .await?;
        }
        for id in rewrite.voided {
            sqlx::query(sql::MARK_VOIDED)
                .bind(pool)
                .bind(id.as_str())
                .execute(&mut *tx)
                .await?;
        }
        let (system, encoded) = params_columns(rewrite.params)?;
        sqlx::query(sql::UPDATE_POOL)
            .bind(pool)
            .bind(system)
            .bind(encoded)
            .execute(&mut *tx)
            .await?;
        for correction in rewrite.corrections {
            sqlx::query(sql::MARK_LINE_APPLIED)
                .bind(pool)
                .bind(*correction)
                .execute(&mut *tx)
                .await?;
        }
        // The count only grows, a voided round's line included: every process compares it with
        // its memory's to find that the pool changed under it.
        sqlx::query(sql::COUNT_APPLIED)
            .bind(pool)
            .bind(to_i64(rewrite.corrections.len() as u64, "corrections")?)
            .execute(&mut *tx)
            .await?;
        self.notify(&mut tx, pool).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn load_pool(&self, pool: &str) -> Result<Option<LoadedPool>, Error> {
        // One snapshot for every query: a round applied between them would mismatch.
        let mut tx = D::begin_snapshot(&self.pool).await?;
        let Some(progress) = progress_in::<D>(&mut tx, pool).await? else {
            return Ok(None);
        };
        let players: Vec<PlayerRow> = sqlx::query_as(sql::SELECT_PLAYERS)
            .bind(pool)
            .fetch_all(&mut *tx)
            .await?;
        let factors: Vec<FactorRow> = if keeps_factors(&progress.params) {
            sqlx::query_as(sql::SELECT_FACTORS)
                .bind(pool)
                .fetch_all(&mut *tx)
                .await?
        } else {
            Vec::new()
        };
        let last_seq: Option<i64> = sqlx::query_scalar(sql::SELECT_LAST_APPLIED_SEQ)
            .bind(pool)
            .fetch_optional(&mut *tx)
            .await?;
        tx.commit().await?;
        let players = join_players(&progress.params, players, factors)?;
        Ok(Some(LoadedPool {
            progress,
            players,
            last_seq: last_seq.unwrap_or(0),
        }))
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, after))]
    async fn applied_since(
        &self,
        pool: &str,
        after: i64,
        max_rounds: usize,
        max_bytes: usize,
    ) -> Result<Option<AppliedSince>, Error> {
        let (max_rounds, max_bytes) = batch_limits(max_rounds, max_bytes)?;
        let mut tx = D::begin_snapshot(&self.pool).await?;
        let Some(progress) = progress_in::<D>(&mut tx, pool).await? else {
            return Ok(None);
        };
        let lines: Vec<QueuedRound> = sqlx::query_as(sql::SELECT_APPLIED_LINES)
            .bind(pool)
            .bind(after)
            .bind(max_rounds)
            .bind(max_bytes)
            .fetch_all(&mut *tx)
            .await?;
        let (corrections,): (i64,) = sqlx::query_as(sql::COUNT_CORRECTIONS_AFTER)
            .bind(pool)
            .bind(after)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(AppliedSince {
            progress,
            lines,
            corrected: corrections > 0,
        }))
    }

    fn replicas(&self) -> Option<Arc<dyn Replicas>> {
        self.replicas.clone()
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, round.id = ?id))]
    async fn round(
        &self,
        pool: &str,
        id: &str,
        page: &ResultsPage,
    ) -> Result<Option<RoundRecord>, Error> {
        let mut tx = D::begin_snapshot(&self.pool).await?;
        let Some(row): Option<RoundRow> = sqlx::query_as(sql::SELECT_ROUND)
            .bind(pool)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let (results, more) = if page.limit > 0
            && row.status()? == RoundStatus::Applied
            && row.is_round()
            && row.entrants().is_some_and(|n| n <= page.sorted_up_to)
        {
            let (rank, player) = match &page.after {
                Some((rank, player)) => (to_i64(*rank, "rank")?, player.as_str()),
                None => (i64::MIN, ""),
            };
            // One row past the page says whether another follows.
            let mut rows: Vec<ResultRow> = sqlx::query_as(sql::SELECT_RESULTS)
                .bind(pool)
                .bind(row.seq)
                .bind(rank)
                .bind(player)
                .bind(i64::from(page.limit) + 1)
                .fetch_all(&mut *tx)
                .await?;
            let more = rows.len() > page.limit as usize;
            rows.truncate(page.limit as usize);
            let results = rows
                .into_iter()
                .map(ResultRow::into_result)
                .collect::<Result<_, _>>()?;
            (Some(results), more)
        } else {
            (None, false)
        };
        tx.commit().await?;
        row.into_record(results, more).map(Some)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, round.seq = seq))]
    async fn round_entrants(&self, pool: &str, seq: i64) -> Result<Vec<(u64, String)>, Error> {
        let rows: Vec<(i64, String)> = sqlx::query_as(sql::SELECT_ROUND_ENTRANTS)
            .bind(pool)
            .bind(seq)
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter()
            .map(|(rank, player)| Ok((to_u64(rank, "rank")?, player)))
            .collect()
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, round.seq = seq))]
    async fn results_of(
        &self,
        pool: &str,
        seq: i64,
        players: &[&str],
    ) -> Result<Vec<RoundResult>, Error> {
        let query = D::RESULTS_OF.replace("{columns}", sql::RESULT_COLUMNS);
        let players = serde_json::Value::from(players.to_vec()).to_string();
        let rows: Vec<ResultRow> = sqlx::query_as(&query)
            .bind(pool)
            .bind(seq)
            .bind(players)
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(ResultRow::into_result).collect()
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, round.seq = seq))]
    async fn played(&self, pool: &str, seq: i64, player: &str) -> Result<bool, Error> {
        let found: Option<(i64,)> = sqlx::query_as(sql::SELECT_PLAYED)
            .bind(pool)
            .bind(seq)
            .bind(player)
            .fetch_optional(&self.pool)
            .await?;
        Ok(found.is_some())
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn applied_rounds(
        &self,
        pool: &str,
        after: i64,
        limit: u32,
        bytes: u64,
    ) -> Result<AppliedPage, Error> {
        let rows = sqlx::query_as(sql::SELECT_APPLIED_ROUNDS)
            .bind(pool)
            .bind(after)
            .bind(i64::from(limit))
            .bind(i64::try_from(bytes).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await?;
        Ok(applied_page(rows))
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn applied_ids(
        &self,
        pool: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<AppliedId>, Error> {
        Ok(sqlx::query_as(sql::SELECT_APPLIED_IDS)
            .bind(pool)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn last_applied_seq(&self, pool: &str) -> Result<Option<i64>, Error> {
        Ok(sqlx::query_scalar(sql::SELECT_LAST_APPLIED_SEQ)
            .bind(pool)
            .fetch_optional(&self.pool)
            .await?)
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, round.id = %round))]
    async fn round_applied(&self, pool: &str, round: &str) -> Result<AsOf, Error> {
        let row: Option<RoundRow> = sqlx::query_as(sql::SELECT_ROUND)
            .bind(pool)
            .bind(round)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else {
            return Ok(AsOf::NoSuchRound);
        };
        Ok(match row.status()? {
            RoundStatus::Applied => AsOf::Applied(row.seq),
            status => AsOf::NotApplied(status),
        })
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn ratings_as_of(&self, pool: &str, seq: i64) -> Result<Vec<RatedAsOf>, Error> {
        let rows: Vec<AsOfRow> = sqlx::query_as(sql::SELECT_RATINGS_AS_OF)
            .bind(pool)
            .bind(seq)
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(AsOfRow::into_rated).collect()
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn corrections_applied(&self, pool: &str, through: i64) -> Result<u64, Error> {
        let (corrections,): (i64,) = sqlx::query_as(sql::COUNT_CORRECTIONS_THROUGH)
            .bind(pool)
            .bind(through)
            .fetch_one(&self.pool)
            .await?;
        to_u64(corrections, "corrections")
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn seasons(&self, pool: &str) -> Result<Vec<SeasonRecord>, Error> {
        let rows: Vec<SeasonRow> = sqlx::query_as(sql::SELECT_SEASONS)
            .bind(pool)
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(SeasonRow::into_record).collect()
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn standings_between(
        &self,
        pool: &str,
        after: i64,
        before: Option<i64>,
    ) -> Result<Vec<RatedAsOf>, Error> {
        let rows: Vec<AsOfRow> = sqlx::query_as(sql::SELECT_STANDINGS_BETWEEN)
            .bind(pool)
            .bind(after)
            .bind(before.unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(AsOfRow::into_rated).collect()
    }

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool, player.id = %player))]
    async fn player_history(
        &self,
        pool: &str,
        player: &str,
        limit: u32,
        before: Option<i64>,
    ) -> Result<HistoryPage, Error> {
        // One row more than asked tells whether an older page exists.
        let query = sql::chained(sql::SELECT_HISTORY, D::PREVIOUS_ROW);
        let rows: Vec<HistoryRow> = sqlx::query_as(&query)
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

    #[instrument(skip_all, fields(db.system = D::NAME, pool.name = %pool))]
    async fn peak(
        &self,
        pool: &str,
        player: &str,
        through: i64,
        k: f64,
    ) -> Result<Option<Peak>, Error> {
        let query = sql::chained(sql::SELECT_PEAK, D::PREVIOUS_ROW);
        let row: Option<PeakRow> = sqlx::query_as(&query)
            .bind(pool)
            .bind(player)
            .bind(through)
            .bind(k)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(PeakRow::into_peak))
    }

    #[instrument(skip_all, fields(db.system = D::NAME))]
    async fn queue_depth(&self) -> Result<u64, Error> {
        let (queued,): (i64,) = sqlx::query_as(sql::COUNT_QUEUED)
            .fetch_one(&self.pool)
            .await?;
        to_u64(queued, "queued")
    }

    #[instrument(skip_all, fields(db.system = D::NAME))]
    async fn ping(&self) -> Result<(), Error> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    fn connections(&self) -> (u32, usize) {
        (self.pool.size(), self.pool.num_idle())
    }

    fn for_reads(&self, connections: u32) -> Arc<dyn Storage> {
        let options = (*self.pool.connect_options()).clone();
        let pool = self
            .pool
            .options()
            .clone()
            .min_connections(0)
            .max_connections(connections)
            .acquire_timeout(READ_ACQUIRE_TIMEOUT)
            .connect_lazy_with(options);
        Arc::new(Self::new(pool))
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}
