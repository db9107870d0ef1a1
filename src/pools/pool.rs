//! One pool's handle ([`Pool`]): the snapshot readers take, the signal that wakes its worker,
//! the turn the worker and parameter changes take, whether this process owns it, and the
//! correction it is recomputing.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::{watch, Mutex, MutexGuard, Notify};

use super::snapshot::PoolState;

/// Failed worker steps in a row after which a pool counts as stalled (`/readyz`): a database
/// away for one retry is not yet a pool that applies nothing.
pub const STALLED_AFTER: u64 = 3;

/// One pool: its state, the signal that wakes its worker, and the lock that makes the worker's
/// steps and parameter changes take turns.
#[derive(Debug)]
pub struct Pool {
    name: String,
    state: ArcSwap<PoolState>,
    wake: Notify,
    turn: Mutex<()>,
    /// Tasks waiting for the turn: a worker step that sees one stops rating ahead.
    waiting: AtomicUsize,
    worker_running: AtomicBool,
    /// The worker's steps that failed in a row, up to its last one: 0 once a step succeeds.
    failing_steps: AtomicU64,
    /// Whether this process applies the pool's rounds: always where one process owns the
    /// database; while it holds the pool's lease where replicas share one.
    owned: AtomicBool,
    /// Whether memory must be loaded afresh before the next step applies anything: set when
    /// this process takes the pool over, so that what it writes never rests on what it
    /// computed while following.
    reload: AtomicBool,
    /// Whether memory holds lines this process rated while following since it last loaded
    /// the pool: only then does taking the pool over need the reload.
    followed: AtomicBool,
    /// How many snapshots have been published: change feeds wait on it.
    published: watch::Sender<u64>,
    /// The correction this process is applying, or applied last.
    recompute: std::sync::Mutex<Option<Recompute>>,
    /// Set once the pool is deleted (here or, seen at a refresh, by another process): its
    /// worker ends.
    removed: AtomicBool,
}

/// Counts a task among those waiting for a pool's turn for as long as it lives, however the wait
/// ends (the turn taken, or the waiting future dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn on(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A correction's recomputation in this process, under way or finished.
#[derive(Debug, Clone)]
pub struct Recompute {
    /// The correction's id.
    pub correction: String,
    /// Lines to rate again.
    pub lines: u64,
    /// Lines rated so far.
    pub done: Arc<std::sync::atomic::AtomicU64>,
    /// When it started.
    pub started: std::time::SystemTime,
    /// How long it took and how it ended (`applied` or `failed`), once it has.
    pub finished: Option<(std::time::Duration, &'static str)>,
}

impl Pool {
    /// A pool named `name` holding `state`.
    #[must_use]
    pub fn new(name: String, state: PoolState) -> Self {
        Self {
            name,
            state: ArcSwap::from_pointee(state),
            wake: Notify::new(),
            turn: Mutex::new(()),
            waiting: AtomicUsize::new(0),
            worker_running: AtomicBool::new(false),
            failing_steps: AtomicU64::new(0),
            owned: AtomicBool::new(true),
            reload: AtomicBool::new(false),
            followed: AtomicBool::new(false),
            published: watch::Sender::new(0),
            recompute: std::sync::Mutex::new(None),
            removed: AtomicBool::new(false),
        }
    }

    /// Marks the pool deleted and wakes its worker, which then ends.
    pub fn remove(&self) {
        self.removed.store(true, Ordering::Release);
        self.wake();
    }

    /// Whether the pool was deleted.
    #[must_use]
    pub fn removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    /// Records that correction `correction` is being applied by rating `lines` lines again;
    /// the counter returned is for the rating to advance.
    pub fn start_recompute(
        &self,
        correction: &str,
        lines: u64,
    ) -> Arc<std::sync::atomic::AtomicU64> {
        let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
        *self
            .recompute
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Recompute {
            correction: correction.to_owned(),
            lines,
            done: Arc::clone(&done),
            started: std::time::SystemTime::now(),
            finished: None,
        });
        done
    }

    /// Records how the recomputation under way ended.
    pub fn finish_recompute(&self, outcome: &'static str) {
        if let Some(recompute) = self
            .recompute
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_mut()
        {
            let took = recompute.started.elapsed().unwrap_or_default();
            recompute.finished = Some((took, outcome));
        }
    }

    /// The correction this process is applying, or applied last.
    #[must_use]
    pub fn recompute(&self) -> Option<Recompute> {
        self.recompute
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The pool's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The current snapshot. Readers may hold it as long as they like: nothing waits for it.
    #[must_use]
    pub fn read(&self) -> Arc<PoolState> {
        self.state.load_full()
    }

    /// Makes `state` the snapshot that reads see, and returns the one it replaces (readers may
    /// still hold it). Only the holder of the pool's [`turn`](Self::turn) publishes, so no
    /// change is lost between reading the current snapshot and replacing it.
    pub fn publish(&self, state: impl Into<Arc<PoolState>>) -> Arc<PoolState> {
        let previous = self.state.swap(state.into());
        self.published.send_modify(|count| *count += 1);
        previous
    }

    /// A receiver that sees every later [`publish`](Self::publish) (as a changed count).
    #[must_use]
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
    }

    /// Tells the worker a round may be waiting.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Waits until [`Pool::wake`] is called (or was called since the last wait).
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Takes the pool's turn: held by the worker for a whole step and by a parameter change.
    /// Turns are taken in the order asked for.
    pub async fn turn(&self) -> MutexGuard<'_, ()> {
        if let Ok(turn) = self.turn.try_lock() {
            return turn;
        }
        let _waiting = Waiting::on(&self.waiting);
        self.turn.lock().await
    }

    /// Whether another task waits for the turn its holder has: a worker step then settles
    /// what it has rated and ends, instead of rating its next batch.
    #[must_use]
    pub fn turn_wanted(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }

    /// Records whether the pool's worker loop is running.
    pub fn set_worker_running(&self, running: bool) {
        self.worker_running.store(running, Ordering::Release);
    }

    /// Whether the pool's worker loop is running.
    #[must_use]
    pub fn worker_running(&self) -> bool {
        self.worker_running.load(Ordering::Acquire)
    }

    /// Records how the worker's last step ended; returns the steps that failed in a row.
    pub fn step_ended(&self, succeeded: bool) -> u64 {
        if succeeded {
            self.failing_steps.store(0, Ordering::Release);
            0
        } else {
            self.failing_steps.fetch_add(1, Ordering::AcqRel) + 1
        }
    }

    /// The worker's steps that failed in a row, up to its last one.
    #[must_use]
    pub fn failing_steps(&self) -> u64 {
        self.failing_steps.load(Ordering::Acquire)
    }

    /// Whether the worker's last [`STALLED_AFTER`] steps or more all failed: the pool applies
    /// nothing until what fails them is mended.
    #[must_use]
    pub fn stalled(&self) -> bool {
        self.failing_steps() >= STALLED_AFTER
    }

    /// The same pool, followed rather than owned until [`Pool::take_over`].
    #[must_use]
    pub fn following(self) -> Self {
        self.owned.store(false, Ordering::Release);
        self
    }

    /// Records that this process applies the pool's rounds from now on, after loading it
    /// afresh, and wakes the worker.
    pub fn take_over(&self) {
        self.reload.store(true, Ordering::Release);
        self.owned.store(true, Ordering::Release);
        self.wake();
    }

    /// Records that this process only follows the pool from now on, and wakes the worker.
    pub fn hand_over(&self) {
        self.owned.store(false, Ordering::Release);
        self.wake();
    }

    /// Whether memory must be loaded afresh before the next step (see [`Pool::take_over`]).
    #[must_use]
    pub fn reload_pending(&self) -> bool {
        self.reload.load(Ordering::Acquire)
    }

    /// Records that memory holds lines rated while following (by the holder of the turn).
    pub fn followed_lines(&self) {
        self.followed.store(true, Ordering::Release);
    }

    /// Whether memory holds lines rated while following since the pool was last loaded.
    #[must_use]
    pub fn followed_since_load(&self) -> bool {
        self.followed.load(Ordering::Acquire)
    }

    /// Records that memory is what the database holds: loaded afresh, or found to be a load
    /// not followed since.
    pub fn reloaded(&self) {
        self.reload.store(false, Ordering::Release);
        self.followed.store(false, Ordering::Release);
    }

    /// The pool's turn if nobody holds it now.
    #[must_use]
    pub fn try_turn(&self) -> Option<MutexGuard<'_, ()>> {
        self.turn.try_lock().ok()
    }

    /// Whether this process applies the pool's rounds; otherwise its worker only follows the
    /// process that does.
    #[must_use]
    pub fn owned(&self) -> bool {
        self.owned.load(Ordering::Acquire)
    }
}
