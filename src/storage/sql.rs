//! Statements written the same way in both dialects, so each is stated once. Placeholders are
//! `$N`: SQLite reads `$N` as the N-th argument, as Postgres does. What differs between the
//! backends (locking, bulk writes) stays in their dialects.

/// Every pool with its queue's counts; append a `WHERE` or an `ORDER BY`. Players are not
/// counted here: that scans every player of the pool (110 ms on a million, Postgres), and the
/// API takes the count from the snapshot it serves.
pub(super) const SELECT_POOLS: &str = "
    SELECT p.name, p.system, p.params, p.display, p.applied,
           (SELECT count(*) FROM rounds WHERE pool = p.name AND status = 'queued') AS queued,
           (SELECT count(*) FROM rounds WHERE pool = p.name AND status = 'failed') AS failed
    FROM pools p";

/// Pool `$1`'s system, parameters, display settings and applied rounds: what the worker
/// compares its memory with before each step (one row, where [`SELECT_POOLS`] counts
/// rounds).
pub(super) const SELECT_POOL_PROGRESS: &str = "
    SELECT system, params, display, applied FROM pools WHERE name = $1";

/// Sets the display settings of pool `$1` to `$2` (JSON).
pub(super) const UPDATE_POOL_DISPLAY: &str = "
    UPDATE pools SET display = $2 WHERE name = $1";

/// Every pool's name.
pub(super) const SELECT_POOL_NAMES: &str = "SELECT name FROM pools ORDER BY name";

/// Pool `$1`'s system and parameters.
pub(super) const SELECT_POOL_PARAMS: &str = "SELECT system, params FROM pools WHERE name = $1";

/// Creates pool `$1` with system `$2` and parameters `$3` (JSON) unless it exists; returns its
/// name only if it created it.
pub(super) const INSERT_POOL: &str = "
    INSERT INTO pools (name, system, params, applied) VALUES ($1, $2, $3, 0)
    ON CONFLICT (name) DO NOTHING RETURNING name";

/// Sets the system and parameters of pool `$1` to `$2` and `$3`.
pub(super) const UPDATE_POOL: &str = "
    UPDATE pools SET system = $2, params = $3 WHERE name = $1";

/// Pool `$1`'s applied and queued rounds, for the parameter-change check.
pub(super) const COUNT_POOL_ROUNDS: &str = "
    SELECT applied,
           (SELECT count(*) FROM rounds WHERE pool = $1 AND status = 'queued') AS queued
    FROM pools WHERE name = $1";

/// The corrections queued in pool `$1`, oldest first (along `rounds_by_kind`, as
/// [`COUNT_CORRECTIONS_AFTER`]).
pub(super) const SELECT_QUEUED_CORRECTIONS: &str = "
    SELECT id, seq, body, kind FROM rounds
    WHERE pool = $1 AND kind <> 'round' AND kind = 'correction' AND status = 'queued'
    ORDER BY seq";

/// Pool `$1`'s queue as a transaction of posts finds it, read in one snapshot: its system and
/// parameters, the seq of its newest queued correction (`NULL`: none; along `rounds_by_kind`),
/// the seq of its newest line (0: none) and of its oldest queued one (`NULL`: none queued). The
/// worker settles lines oldest first, so the queued ones are every line from that one on: the
/// queue's length without counting it. The last two are read as the first row of an index in
/// order: as `min(seq)`, Postgres without statistics aggregated every queued row (6.4 ms at
/// 20,000 queued, against 0.18 ms). No row: no pool.
pub(super) const SELECT_QUEUE_STATE: &str = "
    SELECT system, params,
           (SELECT max(seq) FROM rounds
            WHERE pool = $1 AND kind <> 'round' AND kind = 'correction' AND status = 'queued')
           AS correction,
           COALESCE((SELECT seq FROM rounds WHERE pool = $1 ORDER BY seq DESC LIMIT 1), 0)
           AS last_seq,
           (SELECT seq FROM rounds WHERE pool = $1 AND status = 'queued' ORDER BY seq LIMIT 1)
           AS first_queued
    FROM pools WHERE name = $1";

/// The seq of pool `$1`'s newest applied correction (`NULL`: none; along `rounds_by_kind`).
pub(super) const LAST_APPLIED_CORRECTION: &str = "
    SELECT max(seq) FROM rounds
    WHERE pool = $1 AND kind <> 'round' AND kind = 'correction' AND status = 'applied'";

/// The oldest queued rounds of pool `$1` after seq `$4`: at most `$2`, and those whose
/// predecessors' bodies add up to fewer than `$3` characters.
pub(super) const SELECT_QUEUED: &str = "
    SELECT id, seq, body, kind FROM (
        SELECT id, seq, body, kind,
               SUM(length(body)) OVER (ORDER BY seq) - length(body) AS before
        FROM rounds WHERE pool = $1 AND status = 'queued' AND seq > $4
        ORDER BY seq LIMIT $2) q
    WHERE before < $3 OR before = 0
    ORDER BY seq";

/// The lines of pool `$1` applied after seq `$2` (rounds, season starts and corrections),
/// oldest first: at most `$3`, and only as many as it takes for their bodies to reach `$4`
/// characters (the first is always included).
pub(super) const SELECT_APPLIED_LINES: &str = "
    SELECT id, seq, body, kind FROM (
        SELECT id, seq, body, kind,
               SUM(length(body)) OVER (ORDER BY seq) - length(body) AS before
        FROM rounds WHERE pool = $1 AND status = 'applied' AND seq > $2
        ORDER BY seq LIMIT $3) q
    WHERE before < $4 OR before = 0
    ORDER BY seq";

/// How many corrections pool `$1` applied after seq `$2`. (`kind <> 'round'` lets SQLite use
/// the partial index `rounds_by_kind`; without it SQLite read every round after `$2`: 88 ms
/// on ctftime's pool.)
pub(super) const COUNT_CORRECTIONS_AFTER: &str = "
    SELECT COUNT(*) FROM rounds
    WHERE pool = $1 AND kind <> 'round' AND kind = 'correction' AND status = 'applied'
      AND seq > $2";

/// How many corrections pool `$1` applied up to seq `$2` (along `rounds_by_kind`, as
/// [`COUNT_CORRECTIONS_AFTER`]).
pub(super) const COUNT_CORRECTIONS_THROUGH: &str = "
    SELECT COUNT(*) FROM rounds
    WHERE pool = $1 AND kind <> 'round' AND kind = 'correction' AND status = 'applied'
      AND seq <= $2";

/// The ids and seqs of the `$2` oldest queued rounds of pool `$1`.
pub(super) const SELECT_QUEUED_IDS: &str = "
    SELECT id, seq FROM rounds
    WHERE pool = $1 AND status = 'queued'
    ORDER BY seq LIMIT $2";

/// Marks line `$2` of pool `$1` (a season start or a correction) applied.
pub(super) const MARK_LINE_APPLIED: &str = "
    UPDATE rounds SET status = 'applied' WHERE pool = $1 AND id = $2";

/// Marks round `$2` of pool `$1` voided.
pub(super) const MARK_VOIDED: &str = "
    UPDATE rounds SET status = 'voided', entrants = NULL WHERE pool = $1 AND id = $2";

/// Stores `$3` as the body of round `$2` of pool `$1`, which a correction changed. The hash
/// stays the posted body's: a platform's retry of what it posted is recognized (200 with the
/// round's status), not taken for other content.
pub(super) const UPDATE_ROUND_BODY: &str = "
    UPDATE rounds SET body = $3 WHERE pool = $1 AND id = $2";

/// Every round of pool `$1`, for its deletion.
pub(super) const DELETE_POOL_ROUNDS: &str = "DELETE FROM rounds WHERE pool = $1";

/// Pool `$1` itself, for its deletion; returns its name if it was there.
pub(super) const DELETE_POOL: &str = "DELETE FROM pools WHERE name = $1 RETURNING name";

/// Every history row of pool `$1`, for its recomputation or its deletion.
pub(super) const DELETE_POOL_HISTORY: &str = "DELETE FROM history WHERE pool = $1";

/// Every player of pool `$1`, for its recomputation or its deletion.
pub(super) const DELETE_POOL_PLAYERS: &str = "DELETE FROM players WHERE pool = $1";

/// Takes every player of pool `$1` out of the leagues for a new season (their bonus points
/// spent stay), records how many rounds each had played when it started, and forgets their
/// last round's change, which no longer made their rating.
pub(super) const START_SEASON: &str = "
    UPDATE players SET league = NULL, division = NULL, points = NULL, season_base = rounds,
                       mu_before = NULL, sigma_before = NULL
    WHERE pool = $1";

/// Sets player `$2` of pool `$1`'s rating (`$3`, `$4`), belief columns (`$5` p0, `$6` w0,
/// `$7` log decay, `$8` volatility) and count of factors kept (`$9`: none, where the reset
/// leaves a belief one Gaussian term) to their values after a soft reset.
pub(super) const UPDATE_PLAYER_STATE: &str = "
    UPDATE players SET mu = $3, sigma = $4, p0 = $5, w0 = $6, log_decay = $7, volatility = $8,
                       factors = $9
    WHERE pool = $1 AND player = $2";

/// Every season start of pool `$1`, in order. (`kind <> 'round'` lets SQLite use the partial
/// index on the lines that are not rounds.)
pub(super) const SELECT_SEASONS: &str = "
    SELECT id, seq, status, body FROM rounds
    WHERE pool = $1 AND kind <> 'round' AND kind = 'season' ORDER BY seq";

/// The seqs of pool `$1`'s applied season starts, in order.
pub(super) const SELECT_APPLIED_SEASON_SEQS: &str = "
    SELECT seq FROM rounds
    WHERE pool = $1 AND kind <> 'round' AND kind = 'season' AND status = 'applied'
    ORDER BY seq";

/// Every player of pool `$1` who played a round after seq `$2` and before seq `$3`, as they
/// stood after the last of them, with every round they had played by then. One pass over the
/// pool's history before `$3` along its key `(pool, seq, player)`: a player's last round
/// before `$3` is their last of the span when it comes after `$2`. The joins are as in
/// [`SELECT_RATINGS_AS_OF`].
pub(super) const SELECT_STANDINGS_BETWEEN: &str = "
    SELECT h.player, h.seq, h.mu_before, h.sigma_before, h.mu_after, h.sigma_after, l.rounds,
           r.id AS round_id, r.round_time,
           h.league_after AS league, h.division_after AS division, h.points_after AS points
    FROM (SELECT player, MAX(seq) AS seq, COUNT(*) AS rounds FROM history
          WHERE pool = $1 AND seq < $3 GROUP BY player HAVING MAX(seq) > $2) l
    CROSS JOIN history h CROSS JOIN rounds r
    WHERE h.pool = $1 AND h.seq = l.seq AND h.player = l.player AND r.pool = $1 AND r.seq = l.seq
    ORDER BY h.player";

/// Counts `$2` more applied rounds in pool `$1`, in the transaction that applies them.
pub(super) const COUNT_APPLIED: &str = "
    UPDATE pools SET applied = applied + $2 WHERE name = $1";

/// Marks round `$2` of pool `$1` failed with message `$3`.
pub(super) const MARK_FAILED: &str = "
    UPDATE rounds SET status = 'failed', error = $3 WHERE pool = $1 AND id = $2";

/// Round `$2` of pool `$1`.
pub(super) const SELECT_ROUND: &str = "
    SELECT id, seq, status, kind, error, round_time, entrants FROM rounds
    WHERE pool = $1 AND id = $2";

/// Up to `$5` results of the round at seq `$2` of pool `$1` after rank `$3` and player `$4`,
/// best rank first. The key finds the round's rows; they are sorted on rank, which no index
/// holds (one more index would cost every participation's write).
pub(super) const SELECT_RESULTS: &str = "
    SELECT player, rank, performance, mu_before, sigma_before, mu_after, sigma_after,
           league_before, division_before, league_after, division_after, expected_rank,
           points_before, points_after
    FROM history WHERE pool = $1 AND seq = $2 AND (rank, player) > ($3, $4)
    ORDER BY rank, player
    LIMIT $5";

/// The rank and player of every entrant of the round at seq `$2` of pool `$1`, along the key.
pub(super) const SELECT_ROUND_ENTRANTS: &str = "
    SELECT rank, player FROM history WHERE pool = $1 AND seq = $2";

/// The columns of a round's result, from `history` as `h`: what a dialect's
/// `RESULTS_OF` selects.
pub(super) const RESULT_COLUMNS: &str = "
    h.player, h.rank, h.performance, h.mu_before, h.sigma_before, h.mu_after, h.sigma_after,
    h.league_before, h.division_before, h.league_after, h.division_after, h.expected_rank,
    h.points_before, h.points_after";

/// Whether player `$3` played the round at seq `$2` of pool `$1`.
pub(super) const SELECT_PLAYED: &str = "
    SELECT seq FROM history WHERE pool = $1 AND seq = $2 AND player = $3";

/// Every player of pool `$1`, their belief without its factors, how many factors it keeps,
/// and their rating before their last round.
pub(super) const SELECT_PLAYERS: &str = "
    SELECT player, mu, sigma, rounds, p0, w0, log_decay, last_time, volatility, last_round_id,
           last_round_time, last_seq, league, division, points, bonus_spent, season_base,
           factors, mu_before, sigma_before
    FROM players WHERE pool = $1 ORDER BY player";

/// The factor columns of every history row of pool `$1`: each player's last `players.factors`
/// rows by `seq` hold the factors their belief keeps. Unordered: the service sorts them in
/// memory, where the server would sort them on disk (BENCHMARKS.md, "What was
/// learned").
pub(super) const SELECT_FACTORS: &str = "
    SELECT player, seq, factor_perf AS perf, factor_weight AS weight, factor_beta AS beta,
           factor_log_decay AS log_decay
    FROM history WHERE pool = $1";

/// Up to `$4` rounds of player `$2` in pool `$1` older than seq `$3`, newest first, read along
/// the player's chain of rows (each holds the seq of the one before, `prev_seq`): from the
/// row before the cursor `$3` when it is one of the player's, otherwise from their newest row
/// (`players.last_seq`), passing over rows at `$3` or later. One key lookup per row read
/// (`{previous}`, a dialect's `PREVIOUS_ROW`), and one of each row's round: the chain carries
/// the rows' columns, so that nothing joins them again. `CROSS JOIN` makes SQLite read the
/// chain first.
pub(super) const SELECT_HISTORY: &str = "
    WITH RECURSIVE
        after_cursor (seq) AS (
            SELECT prev_seq FROM history WHERE pool = $1 AND seq = $3 AND player = $2),
        start (seq) AS (
            SELECT seq FROM after_cursor
            UNION ALL
            SELECT last_seq FROM players
            WHERE pool = $1 AND player = $2 AND NOT EXISTS (SELECT 1 FROM after_cursor)),
        chain (seq, prev_seq, kept, rank, performance, mu_before, sigma_before, mu_after,
               sigma_after, league_before, division_before, league_after, division_after,
               expected_rank, points_before, points_after) AS (
            SELECT h.seq, h.prev_seq, CASE WHEN h.seq < $3 THEN 1 ELSE 0 END, {row}
            FROM start s CROSS JOIN history h
            WHERE h.pool = $1 AND h.seq = s.seq AND h.player = $2
            UNION ALL
            SELECT h.seq, h.prev_seq, c.kept + CASE WHEN h.seq < $3 THEN 1 ELSE 0 END, {row}
            FROM {previous} WHERE c.kept < $4)
    SELECT c.seq, r.id AS round_id, r.round_time, c.rank, r.entrants, c.performance,
           c.mu_before, c.sigma_before, c.mu_after, c.sigma_after,
           c.league_before, c.division_before, c.league_after, c.division_after,
           c.expected_rank, c.points_before, c.points_after
    FROM chain c CROSS JOIN rounds r
    WHERE r.pool = $1 AND r.seq = c.seq AND c.seq < $3
    ORDER BY c.seq DESC LIMIT $4";

/// The columns of a history row `h` that [`SELECT_HISTORY`]'s chain carries, in place of its
/// `{row}`.
const HISTORY_ROW: &str = "
    h.rank, h.performance, h.mu_before, h.sigma_before, h.mu_after, h.sigma_after,
    h.league_before, h.division_before, h.league_after, h.division_after, h.expected_rank,
    h.points_before, h.points_after";

/// `statement` ([`SELECT_HISTORY`] or [`SELECT_PEAK`]) with a dialect's step along a
/// player's chain, `previous`, in place of its `{previous}`.
pub(super) fn chained(statement: &str, previous: &str) -> String {
    statement
        .replace("{previous}", previous)
        .replace("{row}", HISTORY_ROW)
}

/// The round of player `$2` in pool `$1`, among theirs up to seq `$3` (one of theirs), after
/// which `mu − $4 · sigma` was highest (sigma 0 where NULL), the earliest of equals: their
/// rows read along their chain from `$3` (one key lookup each), the round's looked up once.
pub(super) const SELECT_PEAK: &str = "
    WITH RECURSIVE chain (seq, prev_seq, mu, sigma) AS (
        SELECT seq, prev_seq, mu_after, sigma_after FROM history
        WHERE pool = $1 AND seq = $3 AND player = $2
        UNION ALL
        SELECT h.seq, h.prev_seq, h.mu_after, h.sigma_after FROM {previous})
    SELECT r.id AS round_id, r.round_time, p.mu, p.sigma
    FROM (SELECT seq, mu, sigma FROM chain
          ORDER BY mu - $4 * COALESCE(sigma, 0) DESC, seq LIMIT 1) p
    CROSS JOIN rounds r
    WHERE r.pool = $1 AND r.seq = p.seq";

/// Every player of pool `$1` as they stood right after the round at seq `$2`: their latest
/// history row up to it, how many rounds they had played, and that row's round. `CROSS JOIN`
/// makes SQLite join in the order written (Postgres still plans the order itself): the
/// grouped players first, then a key lookup of each one's row and round. Left to itself,
/// SQLite 3.46 scanned the pool's history and, for each row, every round of the pool: over
/// 30 s on a pool of 350,000 history rows, where this order takes under 2 s.
pub(super) const SELECT_RATINGS_AS_OF: &str = "
    SELECT h.player, h.seq, h.mu_before, h.sigma_before, h.mu_after, h.sigma_after, l.rounds,
           r.id AS round_id, r.round_time,
           h.league_after AS league, h.division_after AS division, h.points_after AS points
    FROM (SELECT player, MAX(seq) AS seq, COUNT(*) AS rounds FROM history
          WHERE pool = $1 AND seq <= $2 GROUP BY player) l
    CROSS JOIN history h CROSS JOIN rounds r
    WHERE h.pool = $1 AND h.seq = l.seq AND h.player = l.player AND r.pool = $1 AND r.seq = l.seq
    ORDER BY h.player";

/// Up to `$3` applied rounds and season starts of pool `$1` after seq `$2`, in order (the
/// corrections' effects are in the rounds' bodies), with their bodies: the first always, then
/// each whose body ends within `$4` bytes of the first's start. Then the next round, if any,
/// with a NULL body, which tells the caller that more follow without reading it (it may be
/// 32 MiB). The sizes come from `octet_length`, which neither database needs the body itself
/// for (Postgres reads a stored value's size from its header, SQLite from the row's), and only
/// the bodies answered are read whole, by key.
pub(super) const SELECT_APPLIED_ROUNDS: &str = "
    SELECT q.seq, r.id,
           CASE WHEN q.n <= $3 AND (q.n = 1 OR q.before + q.length <= $4) THEN r.body END AS body
    FROM (
        SELECT seq, octet_length(body) AS length,
               SUM(octet_length(body)) OVER (ORDER BY seq) - octet_length(body) AS before,
               ROW_NUMBER() OVER (ORDER BY seq) AS n
        FROM rounds
        WHERE pool = $1 AND status = 'applied' AND kind <> 'correction' AND seq > $2
        ORDER BY seq LIMIT $3 + 1) q
    CROSS JOIN rounds r
    WHERE (q.before <= $4 OR q.n <= 2) AND r.pool = $1 AND r.seq = q.seq
    ORDER BY r.seq";

/// The seqs and ids of up to `$3` applied lines (rounds, season starts, corrections) of pool
/// `$1` after seq `$2`, in order, along `(pool, seq)`.
pub(super) const SELECT_APPLIED_IDS: &str = "
    SELECT seq, id FROM rounds
    WHERE pool = $1 AND status = 'applied' AND seq > $2
    ORDER BY seq LIMIT $3";

/// The seq of pool `$1`'s last applied round: read backwards along `(pool, seq)`, so it stops
/// at the first applied round rather than visiting every one.
pub(super) const SELECT_LAST_APPLIED_SEQ: &str = "
    SELECT seq FROM rounds WHERE pool = $1 AND status = 'applied' ORDER BY seq DESC LIMIT 1";

/// Every history row of pool `$1` as leagues are recomputed from it: in the order the rounds
/// were applied, each round's by rank and player.
pub(super) const SELECT_LEAGUE_ROWS: &str = "
    SELECT h.seq, h.player, h.rank, h.mu_before, h.mu_after, h.sigma_after, r.round_time
    FROM history h JOIN rounds r ON r.pool = h.pool AND r.seq = h.seq
    WHERE h.pool = $1 ORDER BY h.seq, h.rank, h.player";

/// Pool `$1`'s display settings (which hold its leagues) and applied rounds: what a league
/// change and a settle check under the queue's lock.
pub(super) const SELECT_POOL_DISPLAY_APPLIED: &str = "
    SELECT display, applied FROM pools WHERE name = $1";

/// Takes every player of pool `$1` out of the leagues.
pub(super) const CLEAR_PLAYER_LEAGUES: &str = "
    UPDATE players SET league = NULL, division = NULL, points = NULL, bonus_spent = 0
    WHERE pool = $1 AND (league IS NOT NULL OR bonus_spent <> 0)";

/// Takes every history row of pool `$1` out of the leagues.
pub(super) const CLEAR_HISTORY_LEAGUES: &str = "
    UPDATE history SET league_before = NULL, division_before = NULL, league_after = NULL,
                       division_after = NULL, points_before = NULL, points_after = NULL
    WHERE pool = $1 AND (league_before IS NOT NULL OR league_after IS NOT NULL)";

/// Puts player `$2` of pool `$1` in league `$3`, division `$4`, with points `$5` and bonus
/// spent `$6`.
pub(super) const UPDATE_PLAYER_LEAGUE: &str = "
    UPDATE players SET league = $3, division = $4, points = $5, bonus_spent = $6
    WHERE pool = $1 AND player = $2";

/// Sets the leagues (and points) before and after of player `$2`'s history row at seq `$3` of
/// pool `$1`.
pub(super) const UPDATE_HISTORY_LEAGUE: &str = "
    UPDATE history SET league_before = $4, division_before = $5, league_after = $6,
                       division_after = $7, points_before = $8, points_after = $9
    WHERE pool = $1 AND player = $2 AND seq = $3";

/// Every key kept in the database, by name.
pub(super) const SELECT_KEYS: &str = "
    SELECT name, role, sha256, created_at, revoked_at, pools FROM api_keys ORDER BY name";

/// Stores key `$1` (role `$2`, hash `$3`, created at `$4`, pools `$5`) unless its name is
/// taken; returns the name only if it stored it.
pub(super) const INSERT_KEY: &str = "
    INSERT INTO api_keys (name, role, sha256, created_at, pools) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (name) DO NOTHING RETURNING name";

/// Like [`INSERT_KEY`], only into an empty table.
pub(super) const INSERT_FIRST_KEY: &str = "
    INSERT INTO api_keys (name, role, sha256, created_at, pools)
    SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM api_keys)
    ON CONFLICT (name) DO NOTHING RETURNING name";

/// Revokes key `$1` at `$2` unless it is revoked already (it keeps that time); returns its
/// name only if it revoked it now.
pub(super) const REVOKE_KEY: &str = "
    UPDATE api_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL RETURNING name";

/// Whether key `$1` exists (revoked or not).
pub(super) const KEY_EXISTS: &str = "SELECT name FROM api_keys WHERE name = $1";

/// Records an audit entry: at `$1` (Unix seconds), by `$2` in request `$3`, action `$4` on pool
/// `$5` and subject `$6`, with the states `$7` before and `$8` after.
pub(super) const INSERT_AUDIT: &str = "
    INSERT INTO audit_log (at, actor, request_id, action, pool, subject, state_before,
                           state_after)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// The audit log's columns, newest first once a `WHERE` (built for the query, see
/// `SqlStorage::audit`) and `AUDIT_ORDER` follow.
pub(super) const SELECT_AUDIT: &str = "
    SELECT id, at, actor, request_id, action, pool, subject, state_before, state_after
    FROM audit_log";

/// The audit log's order, newest first, and the page's bound `$1`.
pub(super) const AUDIT_ORDER: &str = " ORDER BY id DESC LIMIT $1";

/// Rounds queued in every pool.
pub(super) const COUNT_QUEUED: &str = "SELECT count(*) FROM rounds WHERE status = 'queued'";
