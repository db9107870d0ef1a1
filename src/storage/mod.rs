//! Durable state of the service: pools and their parameters, the ordered queue of accepted
//! rounds, every player's posterior, and rating histories. One trait, [`Storage`], lists every
//! database operation; each method is one transaction. It is implemented once, in
//! `sql_storage.rs`, over a small dialect trait that `postgres.rs` and `sqlite.rs` implement
//! (locking, snapshots, bulk writes); the statements are in `sql.rs`, the rows and encodings in
//! `rows.rs`. [`connect`] picks the dialect from the URL scheme and runs the migrations.
//!
//! This module stores and checks; it never rates (the worker calls the engine and hands the
//! outcome to [`Storage::apply_round`]) and knows nothing of HTTP. Round bodies are opaque
//! text here: the API validates and canonicalizes them, the worker parses them.

mod postgres;
mod replicas;
mod rows;
mod sql;
mod sql_storage;
mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;

pub use replicas::{lock_table_full, Change, Lease, Replicas};

use crate::config::Role;
use crate::display::{Display, LeagueMove, Leagues, Placement};
use crate::engine::{Rating, RatingChange, SystemParams, SystemState};

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

/// What [`Storage::put_pool`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolWrite {
    /// The pool did not exist and now does.
    Created,
    /// The pool's parameters changed.
    Updated,
    /// The pool already had exactly these parameters.
    Unchanged,
}

/// A pool, its parameters and its queue's counts.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolInfo {
    /// The pool's name.
    pub name: String,
    /// Its rating system and parameters.
    pub params: SystemParams,
    /// How it shows ratings.
    pub display: Display,
    /// Lines applied: rounds, season starts and corrections (it only grows).
    pub applied: u64,
    /// Rounds waiting in the queue.
    pub queued: u64,
    /// Rounds the worker gave up on.
    pub failed: u64,
}

/// What the worker checks its memory against: the parameters, the display settings and how
/// many rounds are applied.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolProgress {
    /// The pool's rating system and parameters.
    pub params: SystemParams,
    /// How it shows ratings.
    pub display: Display,
    /// Lines applied (rounds, season starts, corrections).
    pub applied: u64,
}

/// A pool as one snapshot of the database holds it: what memory is rebuilt from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedPool {
    /// Its parameters, display settings and applied lines.
    pub progress: PoolProgress,
    /// Every rated player.
    pub players: Vec<StoredPlayer>,
    /// The seq of its last applied line (0 before the first): where a follower goes on from.
    pub last_seq: i64,
}

/// What a process that does not own a pool reads to catch up with it, in one snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedSince {
    /// The pool's parameters, display settings and applied lines now.
    pub progress: PoolProgress,
    /// The lines applied after the seq asked for, oldest first (perhaps not all of them).
    pub lines: Vec<QueuedRound>,
    /// Whether a correction was applied after that seq, among these lines or later: the lines
    /// are then as the correction left them, not as they were rated.
    pub corrected: bool,
}

/// Where a round is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundStatus {
    /// Accepted, waiting for the worker.
    Queued,
    /// Rated; its results are stored.
    Applied,
    /// The worker could not rate it; it carries an error message.
    Failed,
    /// A correction voided it (docs/corrections.md): it no longer counts.
    Voided,
}

impl RoundStatus {
    /// Every status a line can have.
    pub const ALL: [Self; 4] = [Self::Queued, Self::Applied, Self::Failed, Self::Voided];

    /// The status as stored and as shown on the wire.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Applied => "applied",
            Self::Failed => "failed",
            Self::Voided => "voided",
        }
    }
}

/// What a line of a pool's round stream holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A round's results.
    Round,
    /// The start of a new season (docs/seasons.md).
    Season,
    /// A correction of the rounds before it (docs/corrections.md).
    Correction,
}

impl EntryKind {
    /// Every kind of line.
    pub const ALL: [Self; 3] = [Self::Round, Self::Season, Self::Correction];

    /// The kind as stored and as shown on the wire.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Round => "round",
            Self::Season => "season",
            Self::Correction => "correction",
        }
    }
}

/// What [`Storage::enqueue_entry`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// Stored and queued; `position` is 1 for the next round the worker will apply.
    Accepted {
        /// 1-based place in the pool's queue.
        position: u64,
    },
    /// A round with this id and this exact body was stored before; nothing changed.
    AlreadyStored {
        /// Its current status.
        status: RoundStatus,
    },
    /// A round with this id but a different body was stored before; nothing changed.
    Conflict,
    /// The pool already has `queued` rounds waiting, the bound; nothing changed.
    QueueFull {
        /// Rounds waiting.
        queued: u64,
    },
    /// The pool is no longer as the line was checked against ([`EnqueuedAll::Changed`]);
    /// nothing changed.
    Changed,
}

/// A line to queue ([`Storage::enqueue_entries`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewEntry<'a> {
    /// Its id, unique in the pool.
    pub id: &'a str,
    /// What it is.
    pub kind: EntryKind,
    /// Its canonical JSON, as stored.
    pub body: &'a str,
    /// What a re-post of it is compared by: its canonical JSON with what does not change its
    /// meaning evened out ([`crate::wire::RoundRequest::comparison_key`]); `body` itself for a
    /// line with nothing to even out.
    pub key: &'a str,
}

impl<'a> NewEntry<'a> {
    /// A line compared by its canonical JSON `body` itself: a season start, a correction, or
    /// a round written as its own comparison key.
    #[must_use]
    pub fn by_body(id: &'a str, kind: EntryKind, body: &'a str) -> Self {
        Self {
            id,
            kind,
            body,
            key: body,
        }
    }
}

/// What [`Storage::enqueue_entries`] did: all of it, or nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueuedAll {
    /// Every line is stored, one outcome each in the order given: [`Enqueued::Accepted`] for
    /// a new one, [`Enqueued::AlreadyStored`] for one posted before with the same body.
    Stored(Vec<Enqueued>),
    /// The line at this index was stored before with another body; nothing changed.
    Conflict(usize),
    /// The `new` lines do not fit beside the `queued` rounds waiting; nothing changed.
    QueueFull {
        /// Rounds waiting.
        queued: u64,
        /// Lines of the request that were not stored before.
        new: u64,
    },
    /// The pool's parameters, or its queued corrections, are no longer those the lines were
    /// checked against ([`Against`]); nothing changed.
    Changed,
}

/// What lines about to be queued were checked against: the pool's parameters, and the seq of
/// its newest queued correction (`None`: none queued), whose parameters, if it sets any, rate
/// the rounds queued after it. [`Storage::enqueue_entries`] queues them only if both are still
/// so, under the pool's lock: a round acknowledged is one its pool's system can rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Against<'a> {
    /// The pool's parameters.
    pub params: &'a SystemParams,
    /// Its newest queued correction's seq.
    pub correction: Option<i64>,
}

/// The round the worker should apply next.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct QueuedRound {
    /// The round's id.
    pub id: String,
    /// Its place in the pool's acceptance order.
    pub seq: i64,
    /// The canonical JSON body it was accepted with.
    pub body: String,
    /// `round`, `season` or `correction` ([`EntryKind::as_str`]).
    pub kind: String,
}

/// What the worker made of one queued round, to store with [`Storage::settle_rounds`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoundOutcome<'a> {
    /// Rated: every entrant's new state and history row.
    Applied(&'a AppliedRound),
    /// Not rateable, for this reason.
    Failed(&'a str),
    /// A season started.
    Season(&'a SeasonStart),
}

/// What starting a season did to a pool: every player's state after the soft reset (none when
/// the reset keeps every state). Every player leaves their league, to be placed again.
#[derive(Debug, Clone, PartialEq)]
pub struct SeasonStart {
    /// Each player and their state after the reset.
    pub states: Vec<(String, SystemState)>,
}

/// The outcome of rating one round.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedRound {
    /// The round's time (seconds since the Unix epoch), if it has one.
    pub time: Option<i64>,
    /// One entry per standing of the round.
    pub entrants: Vec<AppliedEntrant>,
}

/// One player's part in an applied round.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedEntrant {
    /// The player's id.
    pub player: String,
    /// The rank the round gave them.
    pub rank: u64,
    /// What the round did to their rating.
    pub change: RatingChange,
    /// What it did to their league.
    pub league: LeagueMove,
    /// The ladder bonus points they have spent, this round included.
    pub bonus_spent: f64,
    /// The place they were expected to take, before the round (`None` if it could not be
    /// computed).
    pub expected_rank: Option<f64>,
    /// Their whole state after the round.
    pub state: SystemState,
    /// The seq of the round they played before this one, which their history row names so
    /// that a player's rows chain from the newest (none for their first round).
    pub previous: Option<i64>,
}

/// A stored round and, once applied, its results.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRecord {
    /// The round's id.
    pub id: String,
    /// Its place in the pool's acceptance order.
    pub seq: i64,
    /// Its status.
    pub status: RoundStatus,
    /// A round, or a season start.
    pub kind: EntryKind,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// When an applied round took place (seconds since the Unix epoch), if it said.
    pub time: Option<i64>,
    /// An applied round's entrants.
    pub entrants: Option<u64>,
    /// The page of results asked for ([`ResultsPage`]), best rank first, when applied and
    /// asked for.
    pub results: Option<Vec<RoundResult>>,
    /// Whether results follow the page's last.
    pub more_results: bool,
}

/// Which of an applied round's results a read of it returns: best rank first (then by player),
/// those after `after`, at most `limit`. A round may have a million entrants: a read never
/// holds more of them than it asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultsPage {
    /// The rank and player of the last result already read.
    pub after: Option<(u64, String)>,
    /// Most results returned; 0 reads none (the round's status only).
    pub limit: u32,
    /// The most entrants of a round whose results the database sorts for the page: each page
    /// of a larger round would sort all of it again, so none is read (`results` is `None`),
    /// and its reader sorts [`Storage::round_entrants`] once and reads each page with
    /// [`Storage::results_of`].
    pub sorted_up_to: u64,
}

impl ResultsPage {
    /// No results: the round's status only.
    pub const NONE: Self = Self {
        after: None,
        limit: 0,
        sorted_up_to: 0,
    };

    /// The first `limit` results, the database sorting them however many there are.
    #[must_use]
    pub fn first(limit: u32) -> Self {
        Self {
            after: None,
            limit,
            sorted_up_to: u64::MAX,
        }
    }
}

/// One entrant's result in an applied round.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundResult {
    /// The player's id.
    pub player: String,
    /// Their rank in the round.
    pub rank: u64,
    /// What the round did to their rating.
    pub change: RatingChange,
    /// What it did to their league.
    pub league: LeagueMove,
    /// The place they were expected to take, before the round; `None` for rounds applied
    /// before it was recorded.
    pub expected_rank: Option<f64>,
}

/// An applied round as it was accepted ([`Storage::applied_rounds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedRecord {
    /// Its place in the pool's order.
    pub seq: i64,
    /// Its id.
    pub id: String,
    /// Its canonical JSON body: one line of the JSON Lines round format.
    pub body: String,
}

/// Applied rounds, a bounded page of them ([`Storage::applied_rounds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedPage {
    /// The rounds, in the order they were applied.
    pub rounds: Vec<AppliedRecord>,
    /// Whether a round follows the last of them.
    pub more: bool,
}

/// An applied round's place and id ([`Storage::applied_ids`]).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AppliedId {
    /// Its place in the pool's order.
    pub seq: i64,
    /// Its id.
    pub id: String,
}

/// A player as they stood right after some round ([`Storage::ratings_as_of`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RatedAsOf {
    /// The player's id.
    pub player: String,
    /// The seq of the last round they had played.
    pub seq: i64,
    /// Their rating then.
    pub rating: crate::engine::Rating,
    /// Their rating before that round.
    pub before: crate::engine::Rating,
    /// Rounds they had played.
    pub rounds: u64,
    /// The last of those rounds.
    pub last_round_id: String,
    /// Its time, if it had one.
    pub last_round_time: Option<i64>,
    /// Their league then.
    pub league: Option<Placement>,
}

/// What [`Storage::round_applied`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOf {
    /// The pool has no round of that id.
    NoSuchRound,
    /// The round exists but was not applied (queued or failed): it has no "after".
    NotApplied(RoundStatus),
    /// The round was applied, at this place in the pool's order.
    Applied(i64),
}

/// A player as stored: the belief to rebuild memory from, and their last round.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPlayer {
    /// The player's id.
    pub player: String,
    /// Their whole state.
    pub state: SystemState,
    /// The id of the last round they played.
    pub last_round_id: String,
    /// That round's time, if it had one.
    pub last_round_time: Option<i64>,
    /// That round's seq (0 for a player stored without any history row, which only a database
    /// written before history rows were chained can hold).
    pub last_seq: i64,
    /// Their league and division, if placed.
    pub league: Option<Placement>,
    /// Ladder bonus points they have spent.
    pub bonus_spent: f64,
    /// Rounds they had played when the current season started.
    pub season_base: u64,
    /// Their rating before their last round: `None` before any round, and once a season
    /// start has reset the rating since.
    pub before: Option<crate::engine::Rating>,
}

/// One round in a player's history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// The round's place in the pool's order; pass it as `before` to page on.
    pub seq: i64,
    /// The round's id.
    pub round_id: String,
    /// The round's time, if it had one.
    pub time: Option<i64>,
    /// The player's rank.
    pub rank: u64,
    /// Standings in the round.
    pub entrants: u64,
    /// What the round did to the player's rating.
    pub change: RatingChange,
    /// What it did to their league.
    pub league: LeagueMove,
    /// The place they were expected to take, before the round; `None` for rounds applied
    /// before it was recorded.
    pub expected_rank: Option<f64>,
}

/// A key kept in the database (`/v1/keys`): only its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// Its name, unique among the database's keys.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The hex SHA-256 of the key.
    pub sha256: String,
    /// When it was created (seconds since the Unix epoch).
    pub created_at: i64,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

/// One history row as leagues are recomputed from it ([`Storage::league_rows`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LeagueRow {
    /// The round's place in the pool's order.
    pub seq: i64,
    /// The player.
    pub player: String,
    /// Their rank in the round.
    pub rank: u64,
    /// Their rating after it.
    pub rating: Rating,
    /// Their μ before it.
    pub prior: f64,
    /// The round's time, if it had one.
    pub time: Option<i64>,
}

/// A pool's history as leagues see it, read in one snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct LeagueHistory {
    /// Rounds applied when it was read.
    pub applied: u64,
    /// Every history row, in the order rounds were applied, each round's by rank and player.
    pub rows: Vec<LeagueRow>,
    /// The seqs of the applied season starts, in order: leagues restart at each.
    pub seasons: Vec<i64>,
}

/// What a correction's recomputation stores ([`Storage::rewrite_pool`]), besides the
/// recomputed lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite<'a> {
    /// The corrections, applied together: they must be the pool's oldest queued lines, in order.
    pub corrections: &'a [&'a str],
    /// Lines the pool had applied when the recomputation read them.
    pub rated_on: u64,
    /// The pool's leagues then.
    pub leagues: Option<&'a Leagues>,
    /// Rounds whose bodies the correction changed, with their new canonical bodies.
    pub changed: &'a [(String, String)],
    /// Rounds it voided.
    pub voided: &'a [String],
    /// The pool's parameters from now on.
    pub params: &'a SystemParams,
    /// How many lines the recomputation rates: fewer received means it stopped short.
    pub lines: usize,
}

/// One recomputed line, in the pool's order.
#[derive(Debug, Clone, PartialEq)]
pub struct RecomputedLine {
    /// Its place in the pool's order.
    pub seq: i64,
    /// Its id.
    pub id: String,
    /// The round rated again, or the season started again.
    pub outcome: LineOutcome,
}

/// What rating a line again gave.
#[derive(Debug, Clone, PartialEq)]
pub enum LineOutcome {
    /// A round's outcome.
    Round(AppliedRound),
    /// A season start's.
    Season(SeasonStart),
}

/// A season start as stored ([`Storage::seasons`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeasonRecord {
    /// Its id.
    pub id: String,
    /// Its place in the pool's order.
    pub seq: i64,
    /// Queued until the worker reaches it, then applied.
    pub status: RoundStatus,
    /// Its canonical body: `{"season": {…}}`.
    pub body: String,
}

/// Leagues recomputed for new settings ([`Storage::put_leagues`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Recomputed {
    /// Rounds applied when the history they come from was read.
    pub applied: u64,
    /// Each history row's leagues before and after, by `(player, seq)`; rows left out are
    /// outside every league.
    pub rows: Vec<(String, i64, LeagueMove)>,
    /// Every player placed now or with bonus points spent: their league (`None` for one
    /// waiting for placement in a new season) and the bonus points they spent.
    pub players: Vec<(String, Option<Placement>, f64)>,
}

/// The round after which a player's rating stood highest ([`Storage::peak`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// The round's seq.
    pub seq: i64,
    /// Its id.
    pub round_id: String,
    /// Its time, if it had one.
    pub time: Option<i64>,
    /// The rating after it.
    pub rating: crate::engine::Rating,
}

/// A page of a player's history, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage {
    /// At most `limit` entries.
    pub entries: Vec<HistoryEntry>,
    /// The `before` cursor of the next page, if there are older entries.
    pub next_before: Option<i64>,
}

/// Every database operation the service performs. Each method is one transaction; writes that
/// depend on a pool's queue take that pool's lock for the whole transaction, so several service
/// processes may share one database.
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Creates pool `name`, or changes its parameters. A change is refused with
    /// [`Error::ParamsLocked`] once the pool has applied or queued rounds: the worker may be
    /// rating the oldest queued round with the current parameters at this moment.
    async fn put_pool(&self, name: &str, params: &SystemParams) -> Result<PoolWrite, Error>;

    /// Deletes pool `name` and everything it holds (its rounds queued, applied and failed, its
    /// players and their history) in one transaction under the pool's lock, so that no commit
    /// of its worker lands after it; whether there was such a pool.
    async fn delete_pool(&self, name: &str) -> Result<bool, Error>;

    /// Sets pool `name`'s display settings; [`Error::PoolNotFound`] if there is no such pool.
    /// They may change at any time: what they show is derived from the stored ratings. Their
    /// leagues must be the stored ones ([`Error::Stale`] otherwise): leagues change only with
    /// their recomputation, [`Self::put_leagues`].
    async fn put_display(&self, name: &str, display: &Display) -> Result<(), Error>;

    /// Every history row of `pool` with the applied count, in one snapshot: what leagues are
    /// recomputed from.
    async fn league_rows(&self, pool: &str) -> Result<LeagueHistory, Error>;

    /// Sets pool `name`'s display settings and, in the same transaction, every player's and
    /// history row's league to `recomputed` (for the settings' leagues). Refused with
    /// [`Error::Stale`] if the pool applied rounds since `recomputed.applied`.
    async fn put_leagues(
        &self,
        name: &str,
        display: &Display,
        recomputed: &Recomputed,
    ) -> Result<(), Error>;

    /// Every key kept in the database, revoked ones included, by name.
    async fn keys(&self) -> Result<Vec<StoredKey>, Error>;

    /// Stores `key`; `false` (and nothing stored) if a key of its name exists, revoked or not.
    async fn create_key(&self, key: &StoredKey) -> Result<bool, Error>;

    /// Stores `key` only if the database holds no key at all, revoked ones included: the first
    /// start's admin key. Whether it was stored (another process may have been first).
    async fn create_first_key(&self, key: &StoredKey) -> Result<bool, Error>;

    /// Marks key `name` revoked at `at`, unless it was revoked before (it keeps that time);
    /// `false` if there is no such key.
    async fn revoke_key(&self, name: &str, at: i64) -> Result<bool, Error>;

    /// Up to `limit` applied rounds of `pool` after seq `after`, in the order they were applied:
    /// the first always, whatever its size, then each whose body ends within `bytes` of the
    /// first's start. [`AppliedPage::more`] tells whether a later round exists; its body is not
    /// read.
    async fn applied_rounds(
        &self,
        pool: &str,
        after: i64,
        limit: u32,
        bytes: u64,
    ) -> Result<AppliedPage, Error>;

    /// The seqs and ids of up to `limit` applied lines of `pool` after seq `after`, in the
    /// order they were applied: [`Storage::applied_rounds`] without the bodies, and with the
    /// corrections, which the change feed sends too.
    async fn applied_ids(
        &self,
        pool: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<AppliedId>, Error>;

    /// The seq of `pool`'s last applied round, if it has one.
    async fn last_applied_seq(&self, pool: &str) -> Result<Option<i64>, Error>;

    /// Whether round `round` of `pool` was applied, and where: an as-of read starts here.
    async fn round_applied(&self, pool: &str, round: &str) -> Result<AsOf, Error>;

    /// Every player of `pool` as they stood right after its round at seq `seq`, from the
    /// history rows: O(history rows up to that round).
    async fn ratings_as_of(&self, pool: &str, seq: i64) -> Result<Vec<RatedAsOf>, Error>;

    /// How many corrections `pool` applied up to seq `through`. Its history rows change only
    /// with one, and with its leagues (which its display settings hold): what a past board
    /// built from them is kept by.
    async fn corrections_applied(&self, pool: &str, through: i64) -> Result<u64, Error>;

    /// One pool with its counts.
    async fn pool(&self, name: &str) -> Result<Option<PoolInfo>, Error>;

    /// Every pool with its counts, by name.
    async fn pools(&self) -> Result<Vec<PoolInfo>, Error>;

    /// Every pool's name, sorted: without [`Self::pools`]'s counts, cheap enough to ask often.
    async fn pool_names(&self) -> Result<Vec<String>, Error>;

    /// Pool `name` as one snapshot holds it: its progress, every player and the seq of its last
    /// applied line; `None` if there is no such pool.
    async fn load_pool(&self, name: &str) -> Result<Option<LoadedPool>, Error>;

    /// Pool `pool`'s progress and its lines applied after seq `after`, oldest first, in one
    /// snapshot: at most `max_rounds`, and only as many as it takes for their bodies to reach
    /// `max_bytes` characters (the first is always included). `None` if there is no such pool.
    async fn applied_since(
        &self,
        pool: &str,
        after: i64,
        max_rounds: usize,
        max_bytes: usize,
    ) -> Result<Option<AppliedSince>, Error>;

    /// How processes sharing this database coordinate (Postgres), or `None` where one process
    /// owns it (SQLite).
    fn replicas(&self) -> Option<Arc<dyn Replicas>>;

    /// Whether the database lets one transaction write at a time (SQLite). A worker then does
    /// not rate its next rounds while a batch commits: the writer is the bottleneck anyway, and
    /// commits back to back would leave a `POST /rounds` waiting for the write lock.
    fn one_writer(&self) -> bool;

    /// One pool's parameters and applied rounds, without the costlier counts of [`Self::pool`].
    async fn pool_progress(&self, name: &str) -> Result<Option<PoolProgress>, Error>;

    /// Stores validated lines (rounds, season starts, corrections) durably at the end of
    /// `pool`'s queue, in the order given, in one transaction: all of them or none. A line's
    /// `body` is its canonical JSON, stored; the SHA-256 of its `key` is stored beside it, and
    /// a re-post whose key hashes the same, or whose body does (a line stored before keys
    /// existed: its hash is its body's), is recognized and leaves the line stored before as it
    /// is. At most `max_queued` rounds wait per pool. The ids must differ from each other.
    /// With `against`, nothing is queued unless the pool is still as the lines were checked
    /// against ([`EnqueuedAll::Changed`]).
    async fn enqueue_entries(
        &self,
        pool: &str,
        entries: &[NewEntry<'_>],
        max_queued: u64,
        against: Option<Against<'_>>,
    ) -> Result<EnqueuedAll, Error>;

    /// [`Self::enqueue_entries`] for one line.
    async fn enqueue_entry(
        &self,
        pool: &str,
        entry: NewEntry<'_>,
        max_queued: u64,
        against: Option<Against<'_>>,
    ) -> Result<Enqueued, Error> {
        Ok(
            match self
                .enqueue_entries(pool, &[entry], max_queued, against)
                .await?
            {
                EnqueuedAll::Stored(outcomes) => {
                    outcomes.into_iter().next().ok_or(Error::OutOfRange {
                        what: "outcomes of one line",
                    })?
                }
                EnqueuedAll::Conflict(_) => Enqueued::Conflict,
                EnqueuedAll::QueueFull { queued, .. } => Enqueued::QueueFull { queued },
                EnqueuedAll::Changed => Enqueued::Changed,
            },
        )
    }

    /// The corrections queued in `pool`, oldest first.
    async fn queued_corrections(&self, pool: &str) -> Result<Vec<QueuedRound>, Error>;

    /// The seq of `pool`'s newest applied correction (`None`: none applied): what a reader of
    /// many batches compares to tell that none changed the rounds it read meanwhile.
    async fn last_correction(&self, pool: &str) -> Result<Option<i64>, Error>;

    /// [`Self::enqueue_entry`] for a round, compared by its body as it is.
    async fn enqueue_round(
        &self,
        pool: &str,
        id: &str,
        body: &str,
        max_queued: u64,
    ) -> Result<Enqueued, Error> {
        self.enqueue_entry(
            pool,
            NewEntry::by_body(id, EntryKind::Round, body),
            max_queued,
            None,
        )
        .await
    }

    /// Every season start of `pool` (queued, applied or failed), in the pool's order.
    async fn seasons(&self, pool: &str) -> Result<Vec<SeasonRecord>, Error>;

    /// Every player who played a round of `pool` between seqs `after` and `before`
    /// (exclusive; `None`: up to now), as they stood after the last of those rounds, by id:
    /// a season's standings.
    async fn standings_between(
        &self,
        pool: &str,
        after: i64,
        before: Option<i64>,
    ) -> Result<Vec<RatedAsOf>, Error>;

    /// The pool's oldest queued rounds after seq `after` (0: from the oldest), oldest first:
    /// at most `max_rounds`, and only as many as it takes for their bodies to reach
    /// `max_bytes` characters (the first is always included). A worker reads on past the
    /// rounds it is still committing.
    async fn queued_rounds(
        &self,
        pool: &str,
        after: i64,
        max_rounds: usize,
        max_bytes: usize,
    ) -> Result<Vec<QueuedRound>, Error>;

    /// Stores the outcomes of the pool's oldest queued rounds in one transaction. Under the
    /// pool's lock, checks that `rounds` are the oldest queued ones, in order
    /// ([`Error::NotNextRound`] otherwise, and nothing changes); for each applied round,
    /// upserts every entrant's state, inserts their history rows and marks it applied; marks
    /// each failed one failed with its reason; for each season start, writes every player's
    /// reset state, takes every player out of their league and marks it applied. Each entrant's
    /// state must be their belief right after that round: of its factors only the newest (that
    /// round's) is written, in the entrant's history row; older ones were written with their
    /// own rounds, and the player's row counts how many of them the belief still holds.
    /// Each entrant's `previous` must be the seq of their newest history row before that
    /// round (stored, or of an earlier round of the same call): their row names it, and their
    /// history is read along those names, so a wrong one is not an error here but a history
    /// that stops or skips rounds.
    /// The rounds must have been rated on the pool as it stood after `rated_on` applied
    /// rounds, and their leagues worked out under `leagues`: if the pool has applied more
    /// since, or stores other leagues (another process moved it on meanwhile, and the rounds'
    /// priors miss those updates), [`Error::Stale`] and nothing changes.
    async fn settle_rounds(
        &self,
        pool: &str,
        rounds: &[(&str, RoundOutcome<'_>)],
        rated_on: u64,
        leagues: Option<&Leagues>,
    ) -> Result<(), Error>;

    /// Replaces pool `pool`'s ratings by those recomputed for a correction, in one
    /// transaction. Under the pool's lock, checks that the correction is the oldest queued
    /// line ([`Error::NotNextRound`]) and that the pool has applied nothing since the
    /// recomputation read it ([`Error::Stale`]); deletes every player, history row and factor
    /// of the pool; writes the recomputed lines `lines` yields, in order, as settling them
    /// would; stores the changed bodies, the voided rounds and the parameters; marks the
    /// correction applied and counts it as one more applied line. If `lines` yields an error, or
    /// fewer lines than `rewrite.lines`, nothing changes ([`Error::Recompute`]).
    async fn rewrite_pool(
        &self,
        pool: &str,
        rewrite: &Rewrite<'_>,
        lines: &mut tokio::sync::mpsc::Receiver<Result<Vec<RecomputedLine>, String>>,
    ) -> Result<(), Error>;

    /// The pool's oldest queued round, if any.
    async fn oldest_queued(&self, pool: &str) -> Result<Option<QueuedRound>, Error> {
        Ok(self.queued_rounds(pool, 0, 1, 0).await?.pop())
    }

    /// [`Self::settle_rounds`] for the one round `id`, applied, in a pool without leagues,
    /// rated on the pool as it stands now.
    async fn apply_round(&self, pool: &str, id: &str, round: &AppliedRound) -> Result<(), Error> {
        let now = self.applied_now(pool).await?;
        self.settle_rounds(pool, &[(id, RoundOutcome::Applied(round))], now, None)
            .await
    }

    /// [`Self::settle_rounds`] for the one round `id`, failed with `error`, in a pool without
    /// leagues.
    async fn fail_round(&self, pool: &str, id: &str, error: &str) -> Result<(), Error> {
        let now = self.applied_now(pool).await?;
        self.settle_rounds(pool, &[(id, RoundOutcome::Failed(error))], now, None)
            .await
    }

    /// How many rounds `pool` has applied (0 for an unknown pool, which settling refuses).
    async fn applied_now(&self, pool: &str) -> Result<u64, Error> {
        Ok(self.pool_progress(pool).await?.map_or(0, |p| p.applied))
    }

    /// Every player of `pool` with their belief, by player id.
    async fn load_players(&self, pool: &str) -> Result<Vec<StoredPlayer>, Error> {
        Ok(self
            .load_pool(pool)
            .await?
            .map_or_else(Vec::new, |loaded| loaded.players))
    }

    /// A round's status and, once applied, the page of its results asked for: one key lookup
    /// of the round, plus, for a round of at most [`ResultsPage::sorted_up_to`] entrants, a
    /// read of its `history` rows by their key, sorted by rank (O(entrants) in the database,
    /// O(page) in memory).
    async fn round(
        &self,
        pool: &str,
        id: &str,
        page: &ResultsPage,
    ) -> Result<Option<RoundRecord>, Error>;

    /// The rank and player of every entrant of the round at seq `seq` of `pool`, in no order:
    /// a read of its `history` rows along their key.
    async fn round_entrants(&self, pool: &str, seq: i64) -> Result<Vec<(u64, String)>, Error>;

    /// The results of `players` in the round at seq `seq` of `pool`, in no order, without those
    /// who did not play it: one key lookup each.
    async fn results_of(
        &self,
        pool: &str,
        seq: i64,
        players: &[&str],
    ) -> Result<Vec<RoundResult>, Error>;

    /// Whether `player` played the round at seq `seq` of `pool`: one key lookup.
    async fn played(&self, pool: &str, seq: i64, player: &str) -> Result<bool, Error>;

    /// Up to `limit` rounds `player` played in `pool`, newest first, older than the round at
    /// `before` (a [`HistoryEntry::seq`]) when given.
    async fn player_history(
        &self,
        pool: &str,
        player: &str,
        limit: u32,
        before: Option<i64>,
    ) -> Result<HistoryPage, Error>;

    /// The round, among those `player` played in `pool` up to the one at seq `through` (their
    /// last one then), after which `μ − k·σ` was highest (σ taken as 0 in a system that keeps
    /// none), the earliest of equals; `None` if they played no round by then. Reads the
    /// player's rows along their chain: one key lookup per round played.
    async fn peak(
        &self,
        pool: &str,
        player: &str,
        through: i64,
        k: f64,
    ) -> Result<Option<Peak>, Error>;

    /// Rounds waiting in every pool's queue.
    async fn queue_depth(&self) -> Result<u64, Error>;

    /// Checks that the database answers.
    async fn ping(&self) -> Result<(), Error>;

    /// Connections open to the database, and of them those idle.
    fn connections(&self) -> (u32, usize);

    /// The same database through at most `connections` connections of its own, opened when
    /// first needed: the requests' reads go through it, so that however many of them wait,
    /// the worker and the writes never wait behind them for a connection.
    fn for_reads(&self, connections: u32) -> Arc<dyn Storage>;

    /// Waits for open connections to finish and closes them.
    async fn close(&self);
}

/// Connects to the database at `url` (`postgres://…` or `sqlite://PATH`), creating a SQLite
/// file and its directory when missing, and runs the migrations.
pub async fn connect(url: &str) -> Result<Arc<dyn Storage>, Error> {
    let scheme = url.split_once(':').map_or(url, |(scheme, _)| scheme);
    match scheme {
        "postgres" | "postgresql" => Ok(Arc::new(postgres::connect(url).await?)),
        "sqlite" => Ok(Arc::new(sqlite::connect(url).await?)),
        // Only the scheme: the rest of the URL may hold a password.
        other => Err(Error::UnsupportedScheme(other.to_owned())),
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
