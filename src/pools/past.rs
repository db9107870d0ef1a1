//! What reads of the past build once and share: past leaderboards (a pool as of one of its
//! rounds, a season's standings) and the order of a large round's results.
//!
//! A past board is rebuilt from every player's latest history row up to some round (a query
//! over the pool's history), or for a season still open from the snapshot's players, and an
//! O(n log n) rebuild; a large round's results are sorted by rank, which no index of the
//! database holds. Both are far too much to repeat for every page a client reads. So each is
//! built once, by a task of its own that finishes even if the request that started it goes
//! away, shared with every request that asks for it meanwhile, and kept afterwards while those
//! kept weigh little enough. A fixed number are built at once; beyond that a request is
//! refused at once rather than queued, so that no client can pile work on the database. One
//! client may be building only a share of them: a client cycling through rounds waits for its
//! own builds, and leaves room for everyone else's.
//!
//! What is built rests on history rows, which change only when a correction rewrites the pool:
//! each is looked up by what it is (its key) and by a basis that changes when its rows may
//! have (the pool's count of applied corrections; for a board, also the display settings it
//! was built with and, for a season still open, the last line it takes in). A changed basis
//! builds it again.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{watch, Semaphore};

use super::AsOfBoard;
use crate::display::Display;
use crate::rate_limit::{Client, Shares};

/// Which past board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PastKey {
    /// The pool right after the round at this seq.
    AsOf(i64),
    /// The standings of the season of the rounds after seq `after` and before seq `before`
    /// (none: up to now).
    Season {
        /// The seq of the season's start (0 for the first season).
        after: i64,
        /// The seq of the next season's start.
        before: Option<i64>,
    },
}

/// What a board's rows rest on besides its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Basis {
    /// How many corrections the pool had applied: each rewrites its history.
    pub corrections: u64,
    /// For a season still open, the seq of the last line it takes in; 0 otherwise.
    pub through: i64,
}

/// Why no board was answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PastError<E> {
    /// As many boards as allowed are being built already.
    #[error("too many past boards are being built")]
    Overloaded,
    /// As many boards as one client may have built are being built for this one.
    #[error("this client's past boards are being built")]
    OverShare,
    /// The build failed.
    #[error("building the board failed")]
    Failed(E),
    /// The build panicked (the panic is in the log).
    #[error("building the board panicked")]
    Panicked,
}

/// Why a board's build failed, as each request that waited for it is told: what a read of the
/// database a build makes can end in (the cause is logged where it happened).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildFailed {
    /// The pool is gone (deleted while its board was built).
    #[error("no pool `{0}`")]
    PoolNotFound(String),
    /// The database could not be reached.
    #[error("the database is unavailable")]
    Unavailable,
    /// Anything else.
    #[error("the board could not be built")]
    Internal,
}

/// What one built value weighs against the bound on those kept, in the unit of its cache
/// (players, entrants).
pub trait Weighed {
    /// Its weight: its rows and [`OVERHEAD`].
    fn weight(&self) -> usize;
}

/// What a kept value costs beside its rows, counted as this many rows: a board's display
/// settings (twice), its map's and leaderboard's own allocations, an entry here. The earliest
/// rounds of a long pool make boards of a few players each; this also bounds how many are kept
/// (the bound / 1,000), and so the list each request scans.
pub const OVERHEAD: usize = 1_000;

impl Weighed for AsOfBoard {
    fn weight(&self) -> usize {
        self.players() + OVERHEAD
    }
}

/// A board kept for the past reads of leaderboards: each by its [`PastKey`], on its [`Basis`]
/// and the display settings it was built with.
pub type PastBoards<E> = Builds<PastKey, (Basis, Display), AsOfBoard, E>;

/// The order of large rounds' results, each by the round's seq, on the pool's count of
/// applied corrections.
pub type RoundOrders<E> = Builds<i64, u64, RoundOrder, E>;

/// A round's entrants sorted as its results are read: by rank, then by player.
#[derive(Debug)]
pub struct RoundOrder(Vec<(u64, Box<str>)>);

impl RoundOrder {
    /// The order of `entrants` (each a rank and a player), sorted here.
    #[must_use]
    pub fn new(entrants: Vec<(u64, String)>) -> Self {
        let mut entrants: Vec<(u64, Box<str>)> = entrants
            .into_iter()
            .map(|(rank, player)| (rank, player.into_boxed_str()))
            .collect();
        entrants.sort_unstable();
        Self(entrants)
    }

    /// Up to `limit` entrants after `after` (a rank and a player, not necessarily an entrant),
    /// and whether more follow them.
    #[must_use]
    pub fn page(&self, after: Option<(u64, &str)>, limit: usize) -> (&[(u64, Box<str>)], bool) {
        let start = after.map_or(0, |after| {
            self.0
                .partition_point(|(rank, player)| (*rank, &**player) <= after)
        });
        let rest = &self.0[start..];
        let page = &rest[..limit.min(rest.len())];
        (page, page.len() < rest.len())
    }
}

impl Weighed for RoundOrder {
    fn weight(&self) -> usize {
        self.0.len() + OVERHEAD
    }
}

/// What a build ends with, once it has.
type Outcome<V, E> = Option<Result<Arc<V>, E>>;

/// One value, built or being built.
struct Kept<K, B, V, E> {
    pool: String,
    key: K,
    basis: B,
    outcome: watch::Receiver<Outcome<V, E>>,
}

impl<K, B, V: Weighed, E> Kept<K, B, V, E> {
    /// What the value weighs against the bound, once built.
    fn weight(&self) -> Option<usize> {
        match &*self.outcome.borrow() {
            Some(Ok(value)) => Some(value.weight()),
            _ => None,
        }
    }

    /// Whether the build ended without a value (failed or panicked): nothing to keep.
    fn failed(&self) -> bool {
        match &*self.outcome.borrow() {
            Some(result) => result.is_err(),
            None => self.outcome.has_changed().is_err(),
        }
    }
}

/// Values of type `V` built from the pools of the process, each by a key `K` on a basis `B`,
/// the builds failing with `E`.
pub struct Builds<K, B, V, E> {
    /// Least recently asked for first.
    kept: Mutex<Vec<Kept<K, B, V, E>>>,
    building: Arc<Semaphore>,
    /// The builds each client started.
    shares: Arc<Shares>,
    max_weight: usize,
}

impl<K, B, V, E> std::fmt::Debug for Builds<K, B, V, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builds")
            .field("building", &self.building)
            .field("max_weight", &self.max_weight)
            .finish_non_exhaustive()
    }
}

impl<K, B, V, E> Builds<K, B, V, E>
where
    K: PartialEq,
    B: PartialEq,
    V: Weighed + Send + Sync + 'static,
    E: Clone + Send + Sync + 'static,
{
    /// Values of which at most `max_building` are built at once (`client_share` of them for
    /// one client), and those built kept while they weigh at most `max_weight` together (a
    /// value heavier than that is answered to the requests that waited for it, then dropped).
    #[must_use]
    pub fn new(max_building: usize, client_share: usize, max_weight: usize) -> Self {
        Self {
            kept: Mutex::new(Vec::new()),
            building: Arc::new(Semaphore::new(max_building)),
            shares: Arc::new(Shares::new(client_share)),
            max_weight,
        }
    }

    /// Drops every value of `pool` kept (a pool deleted: one created under its name later
    /// starts its seqs and corrections again). A build under way answers the requests that
    /// wait for it, and is not kept.
    pub fn forget(&self, pool: &str) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|k| k.pool != pool);
    }

    /// Value `key` of `pool` on `basis`: the one kept or being built, or else the one `build`
    /// makes in a task of its own for `client` (none: a caller in process, counted in no
    /// share), refused at once if as many as allowed are being built, in all or for that
    /// client.
    pub async fn get(
        &self,
        client: Option<&Client>,
        pool: &str,
        key: K,
        basis: B,
        build: impl Future<Output = Result<V, E>> + Send + 'static,
    ) -> Result<Arc<V>, PastError<E>> {
        let mut outcome = self.find_or_start(client, pool, key, basis, build)?;
        let answer = match outcome.wait_for(Option::is_some).await.as_deref() {
            Ok(Some(Ok(value))) => Ok(Arc::clone(value)),
            Ok(Some(Err(error))) => Err(PastError::Failed(error.clone())),
            Ok(None) | Err(_) => Err(PastError::Panicked),
        };
        self.tidy();
        answer
    }

    fn find_or_start(
        &self,
        client: Option<&Client>,
        pool: &str,
        key: K,
        basis: B,
        build: impl Future<Output = Result<V, E>> + Send + 'static,
    ) -> Result<watch::Receiver<Outcome<V, E>>, PastError<E>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|k| !k.failed());
        let same = |k: &Kept<K, B, V, E>| k.pool == pool && k.key == key;
        if let Some(at) = kept.iter().position(|k| same(k) && k.basis == basis) {
            let found = kept.remove(at);
            let outcome = found.outcome.clone();
            kept.push(found);
            return Ok(outcome);
        }
        let share = match client {
            Some(client) => Some(self.shares.take(client, 1).ok_or(PastError::OverShare)?),
            None => None,
        };
        let permit = Arc::clone(&self.building)
            .try_acquire_owned()
            .map_err(|_| PastError::Overloaded)?;
        let (send, outcome) = watch::channel(None);
        let span = tracing::Span::current();
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                let built = build.await.map(Arc::new);
                // Given back before the value is answered: whoever it is answered to may ask
                // for the next one at once.
                drop((permit, share));
                send.send_replace(Some(built));
            },
            span,
        ));
        // The same value on an older basis is not asked for again.
        kept.retain(|k| !same(k));
        kept.push(Kept {
            pool: pool.to_owned(),
            key,
            basis,
            outcome: outcome.clone(),
        });
        self.evict(&mut kept);
        Ok(outcome)
    }

    /// Drops the built values that cannot fit at all, then the least recently asked for until
    /// the rest fit in `max_weight`.
    fn evict(&self, kept: &mut Vec<Kept<K, B, V, E>>) {
        kept.retain(|k| k.weight().is_none_or(|w| w <= self.max_weight));
        let mut weight: usize = kept.iter().filter_map(Kept::weight).sum();
        let mut at = 0;
        while weight > self.max_weight && at < kept.len() {
            match kept[at].weight() {
                Some(w) => {
                    weight -= w;
                    kept.remove(at);
                }
                None => at += 1,
            }
        }
    }

    /// Drops the failed builds, and the values that no longer fit now that one has ended.
    fn tidy(&self) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|k| !k.failed());
        self.evict(&mut kept);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::engine::{EloMmrParams, Rating};
    use crate::pools::PoolState;
    use crate::storage::RatedAsOf;

    /// A bound on players that keeps every board of these tests.
    const ROOMY: usize = 1_000_000;

    /// A board of `n` players.
    fn board(n: usize) -> AsOfBoard {
        let state =
            PoolState::new(EloMmrParams::default().into(), Display::default()).expect("valid");
        let rated = (0..n)
            .map(|i| RatedAsOf {
                player: format!("p{i}"),
                rating: Rating {
                    mu: 1500.0 + i as f64,
                    sigma: Some(100.0),
                },
                before: Rating {
                    mu: 1500.0,
                    sigma: Some(350.0),
                },
                rounds: 1,
                seq: 1,
                last_round_id: "r".to_owned(),
                last_round_time: None,
                league: None,
            })
            .collect();
        state.as_of(rated, &[])
    }

    /// A build of a board of `n` players that counts itself in `builds`.
    fn counted(
        builds: &Arc<AtomicUsize>,
        n: usize,
    ) -> impl Future<Output = Result<AsOfBoard, String>> + Send + 'static {
        let builds = Arc::clone(builds);
        async move {
            builds.fetch_add(1, Ordering::SeqCst);
            Ok(board(n))
        }
    }

    /// Board `key` of pool `p`, asked for in process (by no client).
    async fn ask<E: Clone + Send + Sync + 'static>(
        boards: &PastBoards<E>,
        key: PastKey,
        basis: Basis,
        display: &Display,
        build: impl Future<Output = Result<AsOfBoard, E>> + Send + 'static,
    ) -> Result<Arc<AsOfBoard>, PastError<E>> {
        let basis = (basis, display.clone());
        boards.get(None, "p", key, basis, build).await
    }

    /// Board `round` of pool `p` with no correction and the default display settings, asked
    /// for in process: one of `players` players, counted in `builds` if built.
    async fn as_of(
        boards: &PastBoards<String>,
        builds: &Arc<AtomicUsize>,
        round: i64,
        players: usize,
    ) -> Result<Arc<AsOfBoard>, PastError<String>> {
        let (key, shown) = (PastKey::AsOf(round), Display::default());
        ask(boards, key, after(0), &shown, counted(builds, players)).await
    }

    /// The basis of a board after `corrections` corrections.
    fn after(corrections: u64) -> Basis {
        Basis {
            corrections,
            through: 0,
        }
    }

    #[test]
    fn a_rounds_order_pages_by_rank_then_player_from_any_key() {
        let order = RoundOrder::new(
            [(2, "b"), (1, "z"), (2, "a"), (3, "c"), (1, "é")]
                .map(|(rank, player)| (rank, player.to_owned()))
                .into(),
        );
        fn players((page, more): (&[(u64, Box<str>)], bool)) -> (Vec<&str>, bool) {
            (page.iter().map(|(_, player)| &**player).collect(), more)
        }
        assert_eq!(players(order.page(None, 2)), (vec!["z", "é"], true));
        assert_eq!(
            players(order.page(Some((1, "é")), 2)),
            (vec!["a", "b"], true)
        );
        assert_eq!(players(order.page(Some((2, "b")), 2)), (vec!["c"], false));
        assert_eq!(
            players(order.page(Some((1, "zz")), 10)),
            (vec!["é", "a", "b", "c"], false),
            "a key that is no entrant's starts after where it would be"
        );
        assert_eq!(players(order.page(Some((9, "")), 1)), (vec![], false));
        assert_eq!(order.weight(), 5 + OVERHEAD);
    }

    #[tokio::test]
    async fn a_board_is_built_once_and_again_only_on_another_basis_or_display() {
        let boards = PastBoards::new(2, 2, ROOMY);
        let builds = Arc::new(AtomicUsize::new(0));
        let shown = Display::default();
        let get = |corrections, display| {
            ask(
                &boards,
                PastKey::AsOf(7),
                after(corrections),
                display,
                counted(&builds, 3),
            )
        };
        let first = get(0, &shown).await.expect("built");
        let again = get(0, &shown).await.expect("kept");
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        get(1, &shown).await.expect("built after a correction");
        assert_eq!(builds.load(Ordering::SeqCst), 2);
        let other = Display {
            conservative_k: 2.0,
            ..Display::default()
        };
        get(1, &other).await.expect("built for other settings");
        assert_eq!(builds.load(Ordering::SeqCst), 3);
        let season = PastKey::Season {
            after: 0,
            before: Some(7),
        };
        ask(&boards, season, after(1), &other, counted(&builds, 3))
            .await
            .expect("another board");
        boards
            .get(
                None,
                "q",
                PastKey::AsOf(7),
                (after(1), other.clone()),
                counted(&builds, 3),
            )
            .await
            .expect("another pool's");
        assert_eq!(builds.load(Ordering::SeqCst), 5);
        let open = PastKey::Season {
            after: 7,
            before: None,
        };
        for through in [8, 8, 9] {
            let basis = Basis {
                corrections: 1,
                through,
            };
            ask(&boards, open, basis, &other, counted(&builds, 3))
                .await
                .expect("an open season's");
        }
        assert_eq!(
            builds.load(Ordering::SeqCst),
            7,
            "built again once it took a round in"
        );
    }

    #[tokio::test]
    async fn requests_share_a_build_under_way_and_beyond_the_bound_are_refused() {
        let boards = Arc::new(PastBoards::<String>::new(1, 1, ROOMY));
        let (release, hold) = tokio::sync::oneshot::channel::<()>();
        let shown = Display::default();
        let slow = async move {
            let _ = hold.await;
            Ok(board(2))
        };
        let first = {
            let boards = Arc::clone(&boards);
            let shown = shown.clone();
            tokio::spawn(
                async move { ask(&boards, PastKey::AsOf(1), after(0), &shown, slow).await },
            )
        };
        tokio::task::yield_now().await;
        let builds = Arc::new(AtomicUsize::new(0));
        let refused = ask(
            &boards,
            PastKey::AsOf(2),
            after(0),
            &shown,
            counted(&builds, 2),
        )
        .await;
        assert_eq!(refused.err(), Some(PastError::Overloaded));
        let second = {
            let boards = Arc::clone(&boards);
            let builds = Arc::clone(&builds);
            tokio::spawn(async move {
                ask(
                    &boards,
                    PastKey::AsOf(1),
                    after(0),
                    &shown,
                    counted(&builds, 2),
                )
                .await
            })
        };
        let _ = release.send(());
        let first = first.await.expect("joined").expect("built");
        let second = second.await.expect("joined").expect("shared");
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(builds.load(Ordering::SeqCst), 0, "nothing else was built");
    }

    #[tokio::test]
    async fn one_client_builds_at_most_its_share_of_boards_and_joins_any_build() {
        let boards = Arc::new(PastBoards::<String>::new(4, 2, ROOMY));
        let (release, hold) = watch::channel(false);
        let ask = |client: &str, round: i64| {
            let (boards, mut hold) = (Arc::clone(&boards), hold.clone());
            let client = Client::Key(client.to_owned());
            tokio::spawn(async move {
                let held = async move {
                    let _ = hold.wait_for(|released| *released).await;
                    Ok(board(2))
                };
                let key = PastKey::AsOf(round);
                let shown = Display::default();
                boards
                    .get(Some(&client), "p", key, (after(0), shown), held)
                    .await
            })
        };
        let building = |n: usize| {
            let boards = Arc::clone(&boards);
            async move {
                while boards.building.available_permits() != 4 - n {
                    tokio::task::yield_now().await;
                }
            }
        };
        let mut asked = vec![ask("hog", 1), ask("hog", 2)];
        building(2).await;
        let third = ask("hog", 3).await.expect("joined");
        assert_eq!(
            third.err(),
            Some(PastError::OverShare),
            "a third build of the same client"
        );
        asked.push(ask("hog", 1));
        asked.extend([ask("other", 3), ask("other", 4)]);
        building(4).await;
        let refused = ask("third", 5).await.expect("joined");
        assert_eq!(
            refused.err(),
            Some(PastError::Overloaded),
            "every build taken"
        );
        let _ = release.send(true);
        for asked in asked {
            asked
                .await
                .expect("joined")
                .expect("built, the hog's second ask for round 1 joining the first");
        }
        building(0).await;
        ask("hog", 5)
            .await
            .expect("joined")
            .expect("builds that ended give the client's share back");
    }

    #[tokio::test]
    async fn a_dropped_request_does_not_stop_its_build() {
        let boards = PastBoards::<String>::new(1, 1, ROOMY);
        let builds = Arc::new(AtomicUsize::new(0));
        let shown = Display::default();
        let (release, hold) = tokio::sync::oneshot::channel::<()>();
        let slow = {
            let builds = Arc::clone(&builds);
            async move {
                let _ = hold.await;
                builds.fetch_add(1, Ordering::SeqCst);
                Ok(board(2))
            }
        };
        let asked = ask(&boards, PastKey::AsOf(1), after(0), &shown, slow);
        let gone = tokio::time::timeout(std::time::Duration::from_millis(10), asked).await;
        assert!(gone.is_err(), "the request timed out");
        let _ = release.send(());
        let board = as_of(&boards, &builds, 1, 2)
            .await
            .expect("the build went on");
        assert_eq!(board.players(), 2);
        assert_eq!(builds.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn failures_are_not_kept_and_boards_beyond_the_players_bound_are_dropped() {
        let boards = PastBoards::new(2, 2, OVERHEAD + 5);
        let builds = Arc::new(AtomicUsize::new(0));
        let shown = Display::default();
        let failed = ask(&boards, PastKey::AsOf(1), after(0), &shown, async {
            Err("database gone".to_owned())
        })
        .await;
        assert_eq!(
            failed.err(),
            Some(PastError::Failed("database gone".to_owned()))
        );
        as_of(&boards, &builds, 1, 3)
            .await
            .expect("built after the failure");
        as_of(&boards, &builds, 2, 3).await.expect("built");
        as_of(&boards, &builds, 2, 3).await.expect("kept");
        assert_eq!(
            builds.load(Ordering::SeqCst),
            2,
            "3 + 3 players: the older dropped"
        );
        as_of(&boards, &builds, 1, 3).await.expect("built again");
        assert_eq!(builds.load(Ordering::SeqCst), 3);
        let large = as_of(&boards, &builds, 5, 6).await.expect("answered");
        assert_eq!(large.players(), 6);
        as_of(&boards, &builds, 1, 3).await.expect("kept");
        assert_eq!(
            builds.load(Ordering::SeqCst),
            4,
            "a board too large to keep pushed out none of the others"
        );
        let panicked = ask(&boards, PastKey::AsOf(9), after(0), &shown, async {
            panic!("boom")
        })
        .await;
        assert_eq!(panicked.err(), Some(PastError::Panicked));
    }
}
