//! Which pools this process applies when replicas share one Postgres database
//! (docs/replicas.md). At every heartbeat each replica records that it is alive and reads
//! which replicas are. Each pool belongs to the live replica that ranks first for it by
//! rendezvous hashing (the highest hash of the pool's and the replica's names), so pools spread
//! evenly, and when a replica comes or goes only the pools it wins or held move. The owner
//! holds the pool's lease: a replica takes the lease of a pool it should own as soon as the
//! lease is free, and gives back one it should no longer own once its worker's step is over.
//! Between heartbeats, the other replicas' commits arrive as notifications and wake the pool's
//! worker: an owner finds the round a follower queued, a follower catches up.
//!
//! Leases only share out the work. What is correct does not depend on them: a replica that
//! lost its lease without knowing it is refused at its next commit.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::config::Settings;
use crate::pools::{Pool, Pools};
use crate::storage::{self, Change, Lease, Replicas};

/// What the heartbeat and the listener need of the service: its pools and its name among the
/// replicas, its settings, and its lifecycle. The service's shared state implements it
/// (`crate::state`), so this module needs nothing of the layers above.
pub trait Host: Clone + Send + Sync + 'static {
    /// Every pool this process has loaded.
    fn pools(&self) -> &Pools;
    /// Pool `name`, loaded from the database if this process has not loaded it yet; `None` if
    /// there is no such pool.
    fn pool(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<Arc<Pool>>, storage::Error>> + Send;
    /// This process's name among the replicas.
    fn replica_id(&self) -> &str;
    /// The settings the service started with.
    fn settings(&self) -> &Settings;
    /// Resolves when a pool was added here, so its lease can be sought at once.
    fn pool_added(&self) -> impl Future<Output = ()> + Send;
    /// Resolves once the service is stopping.
    fn stopping(&self) -> impl Future<Output = ()> + Send;
    /// Runs `task` among the service's tasks, which a stop waits for.
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static);
}

/// How often a stopping replica looks for pools whose worker has stopped, to give them back.
const LEAVING_POLL: Duration = Duration::from_millis(20);

/// The live replica that owns pool `pool`: the one whose name hashed with the pool's ranks
/// first. `None` if `live` is empty.
#[must_use]
pub fn owner<'a>(pool: &str, live: &'a [String]) -> Option<&'a str> {
    live.iter()
        .max_by_key(|replica| Sha256::digest(format!("{pool}\0{replica}")))
        .map(String::as_str)
}

/// Starts the heartbeat and the listener of this process, until the service stops.
pub fn start<H: Host>(state: &H, replicas: &Arc<dyn Replicas>) {
    state.spawn(heartbeats(state.clone(), Arc::clone(replicas)));
    state.spawn(listen(state.clone(), Arc::clone(replicas)));
}

/// Beats every `replicas.heartbeat_ms`, taking and giving back leases, until the service
/// stops; then leaves the ranking at once and gives each pool back as its worker finishes.
async fn heartbeats<H: Host>(state: H, replicas: Arc<dyn Replicas>) {
    let settings = &state.settings().replicas;
    let mut tick = tokio::time::interval(Duration::from_millis(settings.heartbeat_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let within = Duration::from_millis(settings.lease_timeout_ms);
    let mut leases = HashSet::new();
    let mut full = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = state.pool_added() => {}
            () = state.stopping() => break,
        }
        let beat = beat(&state, replicas.as_ref(), within, &mut leases, &mut full);
        if let Err(error) = beat.await {
            lost(&state, &mut leases, &error);
        }
    }
    leave(&state, replicas.as_ref(), &mut leases).await;
}

/// Every lease is gone with the lease connection: no pool is applied here until they are
/// taken again.
fn lost<H: Host>(state: &H, leases: &mut HashSet<String>, error: &crate::storage::Error) {
    tracing::warn!(%error, "the lease connection failed; this process owns no pool until it is back");
    leases.clear();
    for pool in state.pools().all() {
        if pool.owned() {
            pool.hand_over();
        }
    }
}

/// Leases a replica gives back when Postgres's lock table has no room for another: as many
/// locks as one transaction may count on by default (`max_locks_per_transaction`), so that
/// its heartbeat, its workers and the other clients of the server can run again. Without
/// them the next heartbeat would fail for want of a lock, drop the lease connection, and with
/// it every lease, to fill the table again at the beat after: measured, a pool was taken
/// 1,656 times in 12 s.
const HEADROOM: usize = 64;

/// How long a replica that found the lock table full waits before it tries to hold more
/// leases than it kept.
const FULL_PAUSE: Duration = Duration::from_secs(60);

/// Postgres's lock table was found full: since when (or since a later try found it still
/// full), and how many leases this replica kept then, its most until a try is granted.
#[derive(Debug, Clone, Copy)]
struct Full {
    since: Instant,
    cap: usize,
}

/// One heartbeat: says this process is alive, then takes the leases of the pools it should
/// own and gives back the others; `leases` are the pools whose lease it holds, `full` set
/// while Postgres's lock table has no room for more. An error means the lease connection,
/// and with it every lease, was lost. Nothing here waits for a pool: a beat that took longer
/// than the lease timeout would have the others take this replica for dead.
async fn beat<H: Host>(
    state: &H,
    replicas: &dyn Replicas,
    within: Duration,
    leases: &mut HashSet<String>,
    full: &mut Option<Full>,
) -> Result<(), crate::storage::Error> {
    let me = state.replica_id();
    let live = replicas.heartbeat(me, within).await?;
    // Once a pause is over, one lease beyond the cap is tried; granted, the cap goes.
    let mut trying = full.is_some_and(|f| f.since.elapsed() >= FULL_PAUSE);
    let mut no_room = 0;
    let mut wall = false;
    for pool in state.pools().all() {
        let mine = owner(pool.name(), &live) == Some(me);
        let held = leases.contains(pool.name());
        let capped = full.is_some_and(|f| leases.len() >= f.cap) && !trying;
        if mine && !held && (wall || capped) {
            no_room += 1;
        } else if mine && !held {
            // Still held while its previous owner finishes a step: taken at a later beat.
            match replicas.try_lease(pool.name()).await? {
                Lease::Taken => {
                    leases.insert(pool.name().to_owned());
                    pool.take_over();
                    tracing::info!(pool = pool.name(), replica = me, "pool taken");
                    if trying {
                        trying = false;
                        *full = None;
                    }
                }
                Lease::Held => {}
                Lease::NoRoom => {
                    no_room += 1;
                    wall = true;
                }
            }
        } else if mine && !pool.owned() {
            // Given up at an earlier beat, but not yet given back.
            pool.take_over();
        } else if !mine && held {
            pool.hand_over();
            // A step under way ends before the lease goes back, at a later beat.
            if let Some(turn) = pool.try_turn() {
                replicas.release(pool.name()).await?;
                leases.remove(pool.name());
                drop(turn);
                tracing::info!(pool = pool.name(), replica = me, "pool handed over");
            }
        }
    }
    // A pool deleted (here, or by another process and dropped at a refresh) gives its lease
    // back: its worker took no step since it was dropped.
    let deleted: Vec<String> = leases
        .iter()
        .filter(|name| state.pools().get(name).is_none())
        .cloned()
        .collect();
    for name in deleted {
        replicas.release(&name).await?;
        leases.remove(&name);
    }
    match full {
        // Still no room: the leases kept stay, and no more are given back.
        Some(full) if wall => full.since = Instant::now(),
        Some(_) => {}
        None if wall => {
            let freed = make_room(state, replicas, leases).await?;
            *full = Some(Full {
                since: Instant::now(),
                cap: leases.len(),
            });
            tracing::error!(
                pools = no_room + freed,
                held = leases.len(),
                "Postgres's lock table is full: these pools are applied by no replica; this one \
                 gave back leases to leave room and holds no more than it kept until a lease \
                 is granted again (tried each minute); raise max_locks_per_transaction \
                 (docs/replicas.md)"
            );
        }
        None => {}
    }
    Ok(())
}

/// Gives back up to [`HEADROOM`] leases of pools whose worker is between steps; how many.
async fn make_room<H: Host>(
    state: &H,
    replicas: &dyn Replicas,
    leases: &mut HashSet<String>,
) -> Result<usize, crate::storage::Error> {
    let mut freed = 0;
    for pool in state.pools().all() {
        if freed == HEADROOM {
            break;
        }
        if !leases.contains(pool.name()) {
            continue;
        }
        if let Some(turn) = pool.try_turn() {
            pool.hand_over();
            replicas.release(pool.name()).await?;
            leases.remove(pool.name());
            drop(turn);
            freed += 1;
        }
    }
    Ok(freed)
}

/// Stopping: leaves the ranking at once, so that the others take over each pool as soon as
/// its lease is free, and frees each lease as soon as the pool's worker has finished its last
/// step (the workers stop between steps). The caller then ends the lease connection.
async fn leave<H: Host>(state: &H, replicas: &dyn Replicas, leases: &mut HashSet<String>) {
    let me = state.replica_id();
    for name in leases.iter() {
        // A step under way ends after the batch it is committing instead of rating on.
        if let Some(pool) = state.pools().get(name) {
            pool.hand_over();
        }
    }
    if let Err(error) = replicas.withdraw(me).await {
        tracing::warn!(%error, "removing this replica's heartbeat failed");
    }
    while !leases.is_empty() {
        let done: Vec<String> = leases
            .iter()
            .filter(|name| {
                state
                    .pools()
                    .get(name)
                    .is_none_or(|pool| !pool.worker_running())
            })
            .cloned()
            .collect();
        for name in done {
            if let Err(error) = replicas.release(&name).await {
                lost(state, leases, &error);
                return;
            }
            leases.remove(&name);
            tracing::info!(pool = name, replica = me, "pool handed over");
        }
        tokio::time::sleep(LEAVING_POLL).await;
    }
}

/// Wakes the worker of each pool another replica changed, loading the pools it created.
async fn listen<H: Host>(state: H, replicas: Arc<dyn Replicas>) {
    let retry = Duration::from_millis(state.settings().queue.retry_delay_ms);
    loop {
        let mut changes = match replicas.listen().await {
            Ok(changes) => {
                // Anything sent while nobody listened is lost: every pool looks for itself.
                for pool in state.pools().all() {
                    pool.wake();
                }
                changes
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for other replicas' changes; retrying");
                tokio::select! {
                    () = tokio::time::sleep(retry) => continue,
                    () = state.stopping() => return,
                }
            }
        };
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                () = state.stopping() => return,
            };
            match change {
                Some(Change::Pool(name)) => match state.pool(&name).await {
                    Ok(Some(pool)) => pool.wake(),
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(pool = name, %error, "loading a changed pool failed")
                    }
                },
                // Notifications may have been missed: every pool looks for itself.
                Some(Change::Reconnected) => {
                    for pool in state.pools().all() {
                        pool.wake();
                    }
                }
                None => break,
            }
        }
        tokio::select! {
            () = tokio::time::sleep(retry) => {}
            () = state.stopping() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::owner;

    #[test]
    fn pools_spread_over_the_replicas_and_only_a_dead_ones_pools_move() {
        let three: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let two: Vec<String> = ["a", "c"].map(String::from).to_vec();
        let pools: Vec<String> = (0..300).map(|i| format!("pool-{i}")).collect();
        let mut counts = std::collections::BTreeMap::new();
        for pool in &pools {
            let before = owner(pool, &three).expect("an owner");
            *counts.entry(before).or_insert(0) += 1;
            let after = owner(pool, &two).expect("an owner");
            if before != "b" {
                assert_eq!(before, after, "{pool} stays where it was");
            }
        }
        assert!(
            counts.values().all(|&n| (70..=130).contains(&n)),
            "{counts:?}"
        );
        assert_eq!(owner("x", &[]), None);
    }
}
