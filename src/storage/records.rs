//! What the [`Storage`](super::Storage) methods take and give back: pools and their progress,
//! queued and applied rounds, players, histories, keys, leagues, recomputed lines and the
//! audit log.

use crate::audit::{Action, Actor};
use crate::config::Role;
use crate::display::{Display, LeagueMove, Leagues, Placement};
use crate::engine::{Rating, RatingChange, SystemParams, SystemState};
use crate::scope::Scope;

/// What [`super::Storage::put_pool`] did.
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

/// What [`super::Storage::enqueue_entries`] did with one line.
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

/// A line to queue ([`super::Storage::enqueue_entries`]).
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
    /// The admin action it is, recorded in the audit log in the transaction that queues it (a
    /// correction, a season start); `None` for a round.
    pub audit: Option<Audited<'a>>,
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
            audit: None,
        }
    }

    /// The same line, recorded as `action` by `actor` once it is queued (a re-post that stores
    /// nothing records nothing).
    #[must_use]
    pub fn audited(self, actor: &'a Actor, action: Action) -> Self {
        Self {
            audit: Some(Audited { actor, action }),
            ..self
        }
    }
}

/// Who queued a line and as what, for the audit log ([`NewEntry::audit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Audited<'a> {
    /// Who.
    pub actor: &'a Actor,
    /// What.
    pub action: Action,
}

/// Which audit entries to read ([`super::Storage::audit`]), newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only this pool's.
    pub pool: Option<String>,
    /// Only this action's.
    pub action: Option<Action>,
    /// Only entries older than this id (the cursor).
    pub before: Option<i64>,
    /// At most this many.
    pub limit: u32,
    /// Only the entries of pools these reach; entries of no pool (the keys') only for
    /// [`Scope::All`].
    pub scope: Scope,
}

/// One action the audit log recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// Its place in the log: later entries have larger ids.
    pub id: i64,
    /// When (seconds since the Unix epoch).
    pub at: i64,
    /// The key's name (or `@config`, `@bootstrap`).
    pub actor: String,
    /// The request's id, if it came over HTTP.
    pub request_id: Option<String>,
    /// What was done.
    pub action: Action,
    /// The pool it was done to; `None` for a key's.
    pub pool: Option<String>,
    /// The correction's or season's id, or the key's name.
    pub subject: Option<String>,
    /// What it changed, as JSON, before; `None` where nothing was there or nothing is kept.
    pub before: Option<String>,
    /// The same after.
    pub after: Option<String>,
}

/// A page of the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    /// The entries, newest first.
    pub entries: Vec<AuditEntry>,
    /// Whether older entries match too.
    pub more: bool,
}

/// What [`super::Storage::enqueue_entries`] did: all of it, or nothing.
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

impl EnqueuedAll {
    /// The outcome of a request of one line.
    pub fn into_one(self) -> Result<Enqueued, super::Error> {
        Ok(match self {
            Self::Stored(outcomes) => {
                outcomes
                    .into_iter()
                    .next()
                    .ok_or(super::Error::OutOfRange {
                        what: "outcomes of one line",
                    })?
            }
            Self::Conflict(_) => Enqueued::Conflict,
            Self::QueueFull { queued, .. } => Enqueued::QueueFull { queued },
            Self::Changed => Enqueued::Changed,
        })
    }
}

/// What lines about to be queued were checked against: the pool's parameters, and the seq of
/// its newest queued correction (`None`: none queued), whose parameters, if it sets any, rate
/// the rounds queued after it. [`super::Storage::enqueue_entries`] queues them only if both are still
/// so, under the lock on the pool's queue tail: a round acknowledged is one its pool's system can rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Against<'a> {
    /// The pool's parameters.
    pub params: &'a SystemParams,
    /// Its newest queued correction's seq.
    pub correction: Option<i64>,
}

/// One request's lines to queue, all or none, and what they were checked against
/// ([`super::Storage::enqueue_requests`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnqueueRequest<'a> {
    /// The lines, in order; their ids differ from each other.
    pub entries: &'a [NewEntry<'a>],
    /// With it, nothing of the request is queued unless the pool is still so
    /// ([`EnqueuedAll::Changed`]).
    pub against: Option<Against<'a>>,
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

/// What the worker made of one queued round, to store with [`super::Storage::settle_rounds`].
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
    /// and its reader sorts [`super::Storage::round_entrants`] once and reads each page with
    /// [`super::Storage::results_of`].
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

/// An applied round as it was accepted ([`super::Storage::applied_rounds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedRecord {
    /// Its place in the pool's order.
    pub seq: i64,
    /// Its id.
    pub id: String,
    /// Its canonical JSON body: one line of the JSON Lines round format.
    pub body: String,
}

/// Applied rounds, a bounded page of them ([`super::Storage::applied_rounds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedPage {
    /// The rounds, in the order they were applied.
    pub rounds: Vec<AppliedRecord>,
    /// Whether a round follows the last of them.
    pub more: bool,
}

/// An applied round's place and id ([`super::Storage::applied_ids`]).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AppliedId {
    /// Its place in the pool's order.
    pub seq: i64,
    /// Its id.
    pub id: String,
}

/// A player as they stood right after some round ([`super::Storage::ratings_as_of`]).
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

/// What [`super::Storage::round_applied`] found.
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
    /// The pools it reaches.
    pub pools: Scope,
}

/// One history row as leagues are recomputed from it ([`super::Storage::league_rows`]).
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

/// What a correction's recomputation stores ([`super::Storage::rewrite_pool`]), besides the
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

/// A season start as stored ([`super::Storage::seasons`]).
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

/// Leagues recomputed for new settings ([`super::Storage::put_leagues`]).
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

/// The round after which a player's rating stood highest ([`super::Storage::peak`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// The round's id.
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
