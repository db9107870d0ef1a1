//! Durable state of the service: pools and their parameters, the ordered queue of accepted
//! rounds, every player's posterior, and rating histories. One trait, [`Storage`], lists every
//! database operation; each method is one transaction. It is implemented once, in
//! `sql_storage.rs`, over a small dialect trait that `postgres.rs` and `sqlite.rs` implement
//! (locking, snapshots, bulk writes); the statements are in `sql.rs`, the rows and encodings in
//! `rows.rs`; what the methods take and give back in `records.rs`, the error in `error.rs`.
//! [`connect`] picks the dialect from the URL scheme and runs the migrations.
//!
//! This module stores and checks; it never rates (the worker calls the engine and hands the
//! outcomes to [`Storage::settle_rounds`]) and knows nothing of HTTP. Round bodies are opaque
//! text here: the API validates and canonicalizes them, the worker parses them.

mod enqueue;
mod error;
mod postgres;
mod records;
mod replicas;
mod rows;
mod sql;
mod sql_storage;
mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;

pub use error::Error;
pub use records::{
    Against, AppliedEntrant, AppliedId, AppliedPage, AppliedRecord, AppliedRound, AppliedSince,
    AsOf, AuditEntry, AuditPage, AuditQuery, Audited, EnqueueRequest, Enqueued, EnqueuedAll,
    EntryKind, HistoryEntry, HistoryPage, LeagueHistory, LeagueRow, LineOutcome, LoadedPool,
    NewEntry, Peak, PoolInfo, PoolProgress, PoolWrite, QueuedRound, RatedAsOf, Recomputed,
    RecomputedLine, ResultsPage, Rewrite, RoundOutcome, RoundRecord, RoundResult, RoundStatus,
    SeasonRecord, SeasonStart, StoredKey, StoredPlayer,
};
pub use replicas::{lock_table_full, Change, Lease, Replicas};

use crate::audit::Actor;
use crate::display::{Display, Leagues};
use crate::engine::SystemParams;

/// Every database operation the service performs. Each method is one transaction; writes that
/// depend on a pool's queue take one of that pool's locks (its queue's tail for posts, its
/// worker's for settling) for the whole transaction, so several service processes may share one
/// database. Each admin or key action that changes something (the methods given an [`Actor`],
/// and lines queued [`NewEntry::audited`]) writes its audit entry in its own transaction, with
/// the state before and after where it has one; one that changes nothing records nothing.
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Creates pool `name`, or changes its parameters. A change is refused with
    /// [`Error::ParamsLocked`] once the pool has applied or queued rounds: the worker may be
    /// rating the oldest queued round with the current parameters at this moment.
    async fn put_pool(
        &self,
        name: &str,
        params: &SystemParams,
        actor: &Actor,
    ) -> Result<PoolWrite, Error>;

    /// Deletes pool `name` and everything it holds (its rounds queued, applied and failed, its
    /// players and their history) in one transaction under the pool's lock, so that no commit
    /// of its worker lands after it; whether there was such a pool.
    async fn delete_pool(&self, name: &str, actor: &Actor) -> Result<bool, Error>;

    /// Sets pool `name`'s display settings; [`Error::PoolNotFound`] if there is no such pool.
    /// They may change at any time: what they show is derived from the stored ratings. Their
    /// leagues must be the stored ones ([`Error::Stale`] otherwise): leagues change only with
    /// their recomputation, [`Self::put_leagues`].
    async fn put_display(&self, name: &str, display: &Display, actor: &Actor) -> Result<(), Error>;

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
        actor: &Actor,
    ) -> Result<(), Error>;

    /// Every key kept in the database, revoked ones included, by name.
    async fn keys(&self) -> Result<Vec<StoredKey>, Error>;

    /// Stores `key`; `false` (and nothing stored) if a key of its name exists, revoked or not.
    async fn create_key(&self, key: &StoredKey, actor: &Actor) -> Result<bool, Error>;

    /// Stores `key` only if the database holds no key at all, revoked ones included: the first
    /// start's admin key. Whether it was stored (another process may have been first).
    async fn create_first_key(&self, key: &StoredKey, actor: &Actor) -> Result<bool, Error>;

    /// Marks key `name` revoked at `at`, unless it was revoked before (it keeps that time, and
    /// nothing is recorded); `false` if there is no such key.
    async fn revoke_key(&self, name: &str, at: i64, actor: &Actor) -> Result<bool, Error>;

    /// A page of the audit log, newest first.
    async fn audit(&self, query: &AuditQuery) -> Result<AuditPage, Error>;

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

    /// One pool's parameters and applied rounds, without the costlier counts of [`Self::pool`].
    async fn pool_progress(&self, name: &str) -> Result<Option<PoolProgress>, Error>;

    /// Stores validated lines (rounds, season starts, corrections) durably at the end of
    /// `pool`'s queue, request by request in the order given, in one transaction: each
    /// request's lines all or none, its outcome its own (one request's conflict, full queue or
    /// change leaves the others be, and a later request sees what an earlier one stored). A
    /// line's `body` is its canonical JSON, stored; the SHA-256 of its `key` is stored beside
    /// it, and a re-post whose key hashes the same, or whose body does (a line stored before
    /// keys existed: its hash is its body's), is recognized and leaves the line stored before
    /// as it is. At most `max_queued` rounds wait per pool. With `against`, nothing of a
    /// request is queued unless the pool is still as its lines were checked against
    /// ([`EnqueuedAll::Changed`]). One error (the database's) fails them all.
    async fn enqueue_requests(
        &self,
        pool: &str,
        requests: &[EnqueueRequest<'_>],
        max_queued: u64,
    ) -> Result<Vec<EnqueuedAll>, Error>;

    /// [`Self::enqueue_requests`] for one request.
    async fn enqueue_entries(
        &self,
        pool: &str,
        entries: &[NewEntry<'_>],
        max_queued: u64,
        against: Option<Against<'_>>,
    ) -> Result<EnqueuedAll, Error> {
        self.enqueue_requests(pool, &[EnqueueRequest { entries, against }], max_queued)
            .await?
            .pop()
            .ok_or(Error::OutOfRange {
                what: "outcomes of one request",
            })
    }

    /// The corrections queued in `pool`, oldest first.
    async fn queued_corrections(&self, pool: &str) -> Result<Vec<QueuedRound>, Error>;

    /// The seq of `pool`'s newest applied correction (`None`: none applied): what a reader of
    /// many batches compares to tell that none changed the rounds it read meanwhile.
    async fn last_correction(&self, pool: &str) -> Result<Option<i64>, Error>;

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
