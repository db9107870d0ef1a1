//! SQLite, the [`Dialect`] of [`SqlStorage`] for an embedded file: opening the file (its
//! directory created if missing, WAL, foreign keys on), the locking (every write transaction
//! starts with `BEGIN IMMEDIATE`, which takes the database's single write lock up front, so
//! rows need no locks of their own) and the bulk writes as multi-row statements chunked under
//! SQLite's bound-parameter limit. Nothing here knows about Postgres.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection, Transaction};

use super::enqueue::NewLine;
use super::rows::{placement_columns, to_i64, StateColumns};
use super::sql_storage::{Applying, Dialect, SqlStorage};
use super::{sql, AppliedEntrant, Error, Recomputed};
use crate::engine::SystemState;

/// Rows one multi-row statement writes at most. Rows go in chunks of this many, then the rest
/// in pieces of a power of two, so each table's writes take at most 9 statements' texts, which
/// the connection prepares once and keeps (sqlx's statement cache): a statement of any row
/// count was parsed and planned anew for each round.
const CHUNK_ROWS: usize = 256;

/// Most parameters one statement may bind (SQLite's `SQLITE_MAX_VARIABLE_NUMBER` since 3.32).
const MAX_BOUND_PARAMETERS: usize = 32_766;

const _: () = assert!(
    CHUNK_ROWS.is_power_of_two()
        && CHUNK_ROWS * PLAYER_COLUMNS <= MAX_BOUND_PARAMETERS
        && CHUNK_ROWS * HISTORY_COLUMNS <= MAX_BOUND_PARAMETERS
);

/// Status and content hash of round `$2` of pool `$1`.
const SELECT_ROUND_HASH: &str = "
    SELECT status, content_hash FROM rounds WHERE pool = $1 AND id = $2";

/// Queues line `$2` of pool `$1` at seq `$3` with body `$4`, hash `$5` and kind `$6`.
const INSERT_LINE: &str = "
    INSERT INTO rounds (pool, id, seq, body, content_hash, kind) VALUES ($1, $2, $3, $4, $5, $6)";

/// Marks round `$2` of pool `$1` applied, with its time `$3` and number of standings `$4`.
const MARK_APPLIED: &str = "
    UPDATE rounds SET status = 'applied', round_time = $3, entrants = $4
    WHERE pool = $1 AND id = $2";

/// Columns bound per row of `players`.
const PLAYER_COLUMNS: usize = 20;

/// Columns bound per row of `history`.
const HISTORY_COLUMNS: usize = 21;

/// How long a write waits for another connection's write lock before giving up: longer than
/// the largest round takes to commit.
const WRITE_LOCK_WAIT: Duration = Duration::from_secs(30);

/// Starts a write transaction holding the database's write lock, so that the checks it makes
/// cannot be invalidated before it commits (a deferred `BEGIN` would take the lock only at its
/// first write, and fail rather than wait if another write came first).
const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";

/// Upserts entrants' beliefs; the `VALUES` rows go between this and [`UPSERT_PLAYERS_TAIL`].
const UPSERT_PLAYERS_HEAD: &str = "INSERT INTO players
    (pool, player, mu, sigma, rounds, last_round_id, last_round_time, p0, w0, log_decay,
     last_time, volatility, league, division, points, bonus_spent, factors, last_seq,
     mu_before, sigma_before) ";

/// See [`UPSERT_PLAYERS_HEAD`].
const UPSERT_PLAYERS_TAIL: &str = " ON CONFLICT (pool, player) DO UPDATE SET
    mu = excluded.mu, sigma = excluded.sigma, rounds = excluded.rounds,
    last_round_id = excluded.last_round_id, last_round_time = excluded.last_round_time,
    p0 = excluded.p0, w0 = excluded.w0, log_decay = excluded.log_decay,
    last_time = excluded.last_time, volatility = excluded.volatility,
    league = excluded.league, division = excluded.division, points = excluded.points,
    bonus_spent = excluded.bonus_spent, factors = excluded.factors,
    last_seq = excluded.last_seq, mu_before = excluded.mu_before,
    sigma_before = excluded.sigma_before";

/// Inserts entrants' history rows; the `VALUES` rows follow.
const INSERT_HISTORY_HEAD: &str = "INSERT INTO history
    (pool, player, seq, rank, performance, mu_before, sigma_before, mu_after, sigma_after,
     league_before, division_before, league_after, division_after, expected_rank,
     points_before, points_after, factor_perf, factor_weight, factor_beta, factor_log_decay,
     prev_seq) ";

/// The SQLite dialect.
pub(super) struct Lite;

/// Opens (creating if missing) the file named by `url` and runs `migrations/sqlite`.
pub(super) async fn connect(url: &str) -> Result<SqlStorage<Lite>, Error> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // FULL: a commit is on disk before the caller hears of it, even across power loss.
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(WRITE_LOCK_WAIT)
        // SQLite's default page cache is 2 MB per connection: settling a batch of rounds then
        // reads most index pages back through a system call each. 64 MB (a negative size is in
        // KiB) took ctftime's ingest from 25 s to 18-22 s (BENCHMARKS.md, issue 10 item 7).
        .pragma("cache_size", "-65536");
    if let Some(dir) = options.get_filename().parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(Error::CreateDir)?;
        }
    }
    let pool = SqlitePoolOptions::new().connect_with(options).await?;
    sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
    Ok(SqlStorage::new(pool))
}

#[async_trait]
impl Dialect for Lite {
    type Db = Sqlite;

    const NAME: &'static str = "sqlite";

    const LOCK_POOL_PARAMS: &'static str = sql::SELECT_POOL_PARAMS;

    const ONE_WRITER: bool = true;

    /// `CROSS JOIN` keeps the array outside, so that each of its ids is a key lookup.
    const RESULTS_OF: &'static str = "
        SELECT {columns} FROM json_each($3) AS j CROSS JOIN history h
        WHERE h.pool = $1 AND h.seq = $2 AND h.player = j.value";

    /// `CROSS JOIN` keeps the chain outside, so that each step is one key lookup.
    const PREVIOUS_ROW: &'static str = "
        chain c CROSS JOIN history h
        ON h.pool = $1 AND h.seq = c.prev_seq AND h.player = $2";

    async fn begin_write(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>, Error> {
        Ok(pool.begin_with(BEGIN_WRITE).await?)
    }

    /// A read transaction is one snapshot in SQLite.
    async fn begin_snapshot(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>, Error> {
        Ok(pool.begin().await?)
    }

    /// The write lock [`begin_write`](Self::begin_write) took already serializes every writer.
    async fn lock_queue(_: &mut SqliteConnection, _: &str) -> Result<(), Error> {
        Ok(())
    }

    /// As [`lock_queue`](Self::lock_queue): the write lock serializes every writer.
    async fn lock_tail(_: &mut SqliteConnection, _: &str) -> Result<(), Error> {
        Ok(())
    }

    /// One process owns a SQLite file: nobody to tell.
    async fn notify(_: &mut SqliteConnection, _: &str) -> Result<(), Error> {
        Ok(())
    }

    /// Nothing to take: the database's one writer at a time already orders the entries.
    async fn lock_audit(_: &mut SqliteConnection) -> Result<(), Error> {
        Ok(())
    }

    /// Line by line: SQLite runs the statements in-process, without round trips.
    async fn stored_lines(
        tx: &mut SqliteConnection,
        pool: &str,
        ids: &[&str],
    ) -> Result<Vec<(String, String, Vec<u8>)>, Error> {
        let mut stored = Vec::new();
        for &id in ids {
            let line: Option<(String, Vec<u8>)> = sqlx::query_as(SELECT_ROUND_HASH)
                .bind(pool)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some((status, hash)) = line {
                stored.push((id.to_owned(), status, hash));
            }
        }
        Ok(stored)
    }

    /// Line by line, as [`stored_lines`](Self::stored_lines).
    async fn insert_lines(
        tx: &mut SqliteConnection,
        pool: &str,
        lines: &[NewLine<'_>],
    ) -> Result<(), Error> {
        for line in lines {
            sqlx::query(INSERT_LINE)
                .bind(pool)
                .bind(line.id)
                .bind(line.seq)
                .bind(line.body)
                .bind(line.hash.as_slice())
                .bind(line.kind.as_str())
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    }

    /// Round by round: SQLite runs the statements in-process, without round trips.
    async fn write_applied(
        tx: &mut SqliteConnection,
        pool: &str,
        rounds: &[Applying<'_>],
    ) -> Result<(), Error> {
        for applying in rounds {
            let Applying {
                id,
                seq,
                round,
                superseded,
            } = *applying;
            let states = round
                .entrants
                .iter()
                .map(|e| Ok((e, StateColumns::of(&e.state)?)))
                .collect::<Result<Vec<_>, Error>>()?;
            let latest: Vec<_> = states
                .iter()
                .zip(superseded)
                .filter(|(_, &superseded)| !superseded)
                .map(|(state, _)| state)
                .collect();
            upsert_players(tx, pool, id, seq, round.time, &latest).await?;
            insert_history(tx, pool, seq, &states).await?;
            sqlx::query(MARK_APPLIED)
                .bind(pool)
                .bind(id)
                .bind(round.time)
                .bind(to_i64(round.entrants.len() as u64, "entrants")?)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    }

    async fn write_states(
        tx: &mut SqliteConnection,
        pool: &str,
        states: &[(String, SystemState)],
    ) -> Result<(), Error> {
        // One prepared statement per row: SQLite runs them in-process, without round trips.
        for (player, state) in states {
            let columns = StateColumns::of(state)?;
            let rating = state.rating();
            sqlx::query(sql::UPDATE_PLAYER_STATE)
                .bind(pool)
                .bind(player)
                .bind(rating.mu)
                .bind(rating.sigma)
                .bind(columns.p0)
                .bind(columns.w0)
                .bind(columns.log_decay)
                .bind(columns.volatility)
                .bind(columns.factors)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    }

    async fn write_leagues(
        tx: &mut SqliteConnection,
        pool: &str,
        recomputed: &Recomputed,
    ) -> Result<(), Error> {
        // One prepared statement per row: SQLite runs them in-process, without round trips.
        for (player, placement, spent) in &recomputed.players {
            let (league, division, points) = placement_columns(placement.as_ref());
            sqlx::query(sql::UPDATE_PLAYER_LEAGUE)
                .bind(pool)
                .bind(player)
                .bind(league)
                .bind(division)
                .bind(points)
                .bind(spent)
                .execute(&mut *tx)
                .await?;
        }
        for (player, seq, moved) in &recomputed.rows {
            let (league_before, division_before, points_before) =
                placement_columns(moved.before.as_ref());
            let (league_after, division_after, points_after) =
                placement_columns(moved.after.as_ref());
            sqlx::query(sql::UPDATE_HISTORY_LEAGUE)
                .bind(pool)
                .bind(player)
                .bind(seq)
                .bind(league_before)
                .bind(division_before)
                .bind(league_after)
                .bind(division_after)
                .bind(points_before)
                .bind(points_after)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    }
}

/// `rows` in the pieces [`CHUNK_ROWS`] describes.
fn chunks<T>(rows: &[T]) -> impl Iterator<Item = &[T]> {
    let mut rest = rows;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let take = rest.len().min(CHUNK_ROWS);
        let (chunk, tail) = rest.split_at(1 << take.ilog2());
        rest = tail;
        Some(chunk)
    })
}

/// Upserts the entrants' beliefs without their factors, one statement per chunk of rows.
async fn upsert_players(
    tx: &mut SqliteConnection,
    pool: &str,
    id: &str,
    seq: i64,
    time: Option<i64>,
    states: &[&(&AppliedEntrant, StateColumns<'_>)],
) -> Result<(), Error> {
    for chunk in chunks(states) {
        let mut query = QueryBuilder::<Sqlite>::new(UPSERT_PLAYERS_HEAD);
        query.push_values(chunk, |mut row, &(e, columns)| {
            let (league, division, points) = placement_columns(e.league.after.as_ref());
            row.push_bind(pool)
                .push_bind(e.player.as_str())
                .push_bind(e.change.after.mu)
                .push_bind(e.change.after.sigma)
                .push_bind(columns.rounds)
                .push_bind(id)
                .push_bind(time)
                .push_bind(columns.p0)
                .push_bind(columns.w0)
                .push_bind(columns.log_decay)
                .push_bind(columns.last_time)
                .push_bind(columns.volatility)
                .push_bind(league)
                .push_bind(division)
                .push_bind(points)
                .push_bind(e.bonus_spent)
                .push_bind(columns.factors)
                .push_bind(seq)
                .push_bind(e.change.before.mu)
                .push_bind(e.change.before.sigma);
        });
        query.push(UPSERT_PLAYERS_TAIL);
        query.build().execute(&mut *tx).await?;
    }
    Ok(())
}

/// Inserts the entrants' history rows, each with the factor the round added to the entrant's
/// belief, one statement per chunk of rows.
async fn insert_history(
    tx: &mut SqliteConnection,
    pool: &str,
    seq: i64,
    states: &[(&AppliedEntrant, StateColumns<'_>)],
) -> Result<(), Error> {
    for chunk in chunks(states) {
        let rows = chunk
            .iter()
            .map(|(e, columns)| Ok((e, to_i64(e.rank, "rank")?, columns.added)))
            .collect::<Result<Vec<_>, Error>>()?;
        let mut query = QueryBuilder::<Sqlite>::new(INSERT_HISTORY_HEAD);
        query.push_values(&rows, |mut row, (e, rank, added)| {
            let (league_before, division_before, points_before) =
                placement_columns(e.league.before.as_ref());
            let (league_after, division_after, points_after) =
                placement_columns(e.league.after.as_ref());
            row.push_bind(pool)
                .push_bind(e.player.as_str())
                .push_bind(seq)
                .push_bind(*rank)
                .push_bind(e.change.performance)
                .push_bind(e.change.before.mu)
                .push_bind(e.change.before.sigma)
                .push_bind(e.change.after.mu)
                .push_bind(e.change.after.sigma)
                .push_bind(league_before)
                .push_bind(division_before)
                .push_bind(league_after)
                .push_bind(division_after)
                .push_bind(e.expected_rank)
                .push_bind(points_before)
                .push_bind(points_after)
                .push_bind(added.map(|f| f.perf))
                .push_bind(added.map(|f| f.weight))
                .push_bind(added.map(|f| f.beta))
                .push_bind(added.map(|f| f.log_decay))
                .push_bind(e.previous);
        });
        query.build().execute(&mut *tx).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sqlx::sqlite::SqlitePoolOptions;
    use sqlx::Row;

    use super::{chunks, sql, Lite, CHUNK_ROWS};
    use crate::storage::sql_storage::Dialect;

    #[test]
    fn rows_go_in_full_chunks_then_powers_of_two_in_order() {
        let sizes = |n: usize| {
            let rows: Vec<usize> = (0..n).collect();
            let pieces: Vec<&[usize]> = chunks(&rows).collect();
            assert_eq!(pieces.concat(), rows, "every row once, in order");
            pieces.iter().map(|p| p.len()).collect::<Vec<_>>()
        };
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(1), [1]);
        assert_eq!(sizes(7), [4, 2, 1]);
        assert_eq!(sizes(CHUNK_ROWS), [CHUNK_ROWS]);
        assert_eq!(
            sizes(2 * CHUNK_ROWS + 100),
            [CHUNK_ROWS, CHUNK_ROWS, 64, 32, 4]
        );
        let lengths: std::collections::BTreeSet<usize> =
            (0..=4 * CHUNK_ROWS).flat_map(sizes).collect();
        assert_eq!(
            lengths.len(),
            9,
            "at most 9 statement texts per table: {lengths:?}"
        );
    }

    /// SQLite's plan of `statement`, one step a line.
    async fn plan(statement: &str) -> Vec<String> {
        let pool = SqlitePoolOptions::new()
            .connect("sqlite::memory:")
            .await
            .expect("an in-memory database");
        sqlx::migrate!("./migrations/sqlite")
            .run(&pool)
            .await
            .expect("migrated");
        sqlx::query(&format!("EXPLAIN QUERY PLAN {statement}"))
            .fetch_all(&pool)
            .await
            .expect("a plan")
            .iter()
            .map(|row| row.get("detail"))
            .collect()
    }

    #[tokio::test]
    async fn corrections_are_counted_along_the_index_of_lines_that_are_not_rounds() {
        for statement in [sql::COUNT_CORRECTIONS_AFTER, sql::COUNT_CORRECTIONS_THROUGH] {
            let plan = plan(statement).await;
            assert!(
                plan.iter().any(|line| line.contains("rounds_by_kind")),
                "{plan:#?}"
            );
        }
    }

    #[tokio::test]
    async fn past_boards_look_each_players_row_and_round_up_by_key() {
        for statement in [sql::SELECT_RATINGS_AS_OF, sql::SELECT_STANDINGS_BETWEEN] {
            let plan = plan(statement).await;
            let step = |table: &str| {
                plan.iter()
                    .find(|line| line.contains(&format!(" {table} ")))
                    .unwrap_or_else(|| panic!("no step reads {table}: {plan:#?}"))
                    .clone()
            };
            assert!(
                step("h").starts_with("SEARCH") && step("h").contains("seq=? AND player=?"),
                "{plan:#?}"
            );
            assert!(
                step("r").starts_with("SEARCH") && step("r").contains("(pool=? AND seq=?)"),
                "{plan:#?}"
            );
        }
    }

    #[tokio::test]
    async fn a_players_chain_is_read_one_key_lookup_a_row() {
        for statement in [sql::SELECT_HISTORY, sql::SELECT_PEAK] {
            let plan = plan(&sql::chained(statement, Lite::PREVIOUS_ROW)).await;
            let reads: Vec<&String> = plan
                .iter()
                .filter(|line| line.contains(" h ") || line.contains(" history "))
                .collect();
            assert!(!reads.is_empty(), "{plan:#?}");
            for read in reads {
                assert!(
                    read.starts_with("SEARCH") && read.contains("seq=? AND player=?"),
                    "{plan:#?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn exported_rounds_are_read_whole_by_key_after_their_sizes() {
        let plan = plan(sql::SELECT_APPLIED_ROUNDS).await;
        let outer = plan
            .iter()
            .find(|line| line.contains(" r "))
            .unwrap_or_else(|| panic!("no step reads r: {plan:#?}"));
        assert!(
            outer.starts_with("SEARCH") && outer.contains("(pool=? AND seq=?)"),
            "{plan:#?}"
        );
    }
}
