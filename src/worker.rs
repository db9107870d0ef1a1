//! The worker: one loop per pool that takes the oldest queued round, rates it on rayon (off
//! the async runtime), commits every entrant's new state, their history and the round's status
//! in one transaction, and only then publishes the new ratings in memory. Rounds are applied
//! strictly in acceptance order; the storage layer refuses to apply any round but the oldest
//! queued one, so a second process sharing the database cannot apply a round twice.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing::{info_span, Instrument};

use crate::engine::{Applied, Beliefs, Round, SystemState};
use crate::pools::{LastRound, Pool, PoolState};
use crate::storage::{self, AppliedEntrant, AppliedRound, QueuedRound, Storage};
use crate::wire::RoundRequest;

/// What one step of the worker did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// Round `id` was rated and committed.
    Applied(String),
    /// Round `id` could not be rated and is marked failed.
    Failed(String),
    /// Another process applied the oldest round first; memory was reloaded from the database.
    Reloaded,
    /// No round is waiting.
    Idle,
}

/// Applies the pool's oldest queued round, if any. The pool's turn is held throughout, so a
/// parameter change cannot slip in between reading the parameters and committing.
pub async fn process_next(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<Processed> {
    let _turn = pool.turn().await;
    if stale(storage, pool).await? {
        return reload(storage, pool).await;
    }
    let Some(queued) = storage
        .oldest_queued(pool.name())
        .await
        .context("reading the queue")?
    else {
        return Ok(Processed::Idle);
    };
    let span = info_span!("apply_round", pool = pool.name(), round.id = ?queued.id, round.seq = queued.seq);
    async {
        let round = match parse(&queued) {
            Ok(round) => round,
            Err(reason) => return fail(storage, pool, &queued, &reason).await,
        };
        let started = std::time::Instant::now();
        // The snapshot and the round travel to the blocking thread and back: the priors are
        // read there, in place (an Elo-MMR prior holds up to `history_limit` factors, too many
        // to copy for a large round).
        let snapshot = pool.read();
        let outcome = tokio::task::spawn_blocking(move || {
            let priors: Vec<&SystemState> = round
                .standings
                .iter()
                .map(|s| snapshot.belief_or_newcomer(&s.player))
                .collect();
            let applied = snapshot.system().apply(&round, &priors);
            (round, applied)
        })
        .await;
        let (round, applied) = match outcome {
            Ok((round, Ok(applied))) => (round, applied),
            Ok((_, Err(error))) => return fail(storage, pool, &queued, &error.to_string()).await,
            Err(join) => {
                tracing::error!(error = %join, "the engine panicked");
                return fail(storage, pool, &queued, "internal error while rating").await;
            }
        };
        let rating_ms = started.elapsed().as_secs_f64() * 1e3;
        let applied = applied_round(&round, applied);
        match storage.apply_round(pool.name(), &queued.id, &applied).await {
            Ok(()) => {}
            Err(storage::Error::NotNextRound { .. }) => return reload(storage, pool).await,
            Err(error) => return Err(error).context("committing the round"),
        }
        let commit_ms = started.elapsed().as_secs_f64() * 1e3 - rating_ms;
        publish(pool, &queued.id, applied)
            .await
            .context("publishing the round")?;
        tracing::info!(
            entrants = round.standings.len(),
            rating_ms,
            commit_ms,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "round applied"
        );
        Ok(Processed::Applied(queued.id))
    }
    .instrument(span)
    .await
}

/// Runs the pool's worker until `shutdown`: steps while rounds wait, sleeps until woken (or
/// `poll` passes, for rounds another process queued), waits `retry` after a database error.
/// Shutdown is checked only between steps, so a round being applied is always finished.
pub async fn run(
    storage: Arc<dyn Storage>,
    pool: Arc<Pool>,
    poll: Duration,
    retry: Duration,
    shutdown: CancellationToken,
) {
    pool.set_worker_running(true);
    while !shutdown.is_cancelled() {
        let wait = match process_next(storage.as_ref(), &pool).await {
            Ok(Processed::Idle) => poll,
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(
                    pool = pool.name(),
                    error = format!("{error:#}"),
                    "worker step failed; retrying"
                );
                retry
            }
        };
        tokio::select! {
            () = pool.woken() => {}
            () = tokio::time::sleep(wait) => {}
            () = shutdown.cancelled() => {}
        }
    }
    pool.set_worker_running(false);
}

fn parse(queued: &QueuedRound) -> Result<Round, String> {
    let request: RoundRequest =
        serde_json::from_str(&queued.body).map_err(|e| format!("stored body unreadable: {e}"))?;
    request.to_round().map_err(|e| e.to_string())
}

async fn fail(
    storage: &dyn Storage,
    pool: &Pool,
    queued: &QueuedRound,
    reason: &str,
) -> anyhow::Result<Processed> {
    tracing::warn!(reason, "round failed");
    match storage.fail_round(pool.name(), &queued.id, reason).await {
        Ok(()) => Ok(Processed::Failed(queued.id.clone())),
        Err(storage::Error::NotNextRound { .. }) => reload(storage, pool).await,
        Err(error) => Err(error).context("marking the round failed"),
    }
}

/// The outcome of a round as storage takes it.
fn applied_round(round: &Round, applied: Vec<Applied>) -> AppliedRound {
    AppliedRound {
        time: round.time,
        entrants: round
            .standings
            .iter()
            .zip(applied)
            .map(|(standing, Applied { state, change })| AppliedEntrant {
                player: standing.player.clone(),
                rank: standing.rank,
                change,
                state,
            })
            .collect(),
    }
}

/// Makes a committed round's ratings visible to reads: the next snapshot is derived from the
/// current one off the async runtime (O(k log n), but a large round into a large pool takes
/// milliseconds), then swapped in. Only the holder of the pool's turn gets here, so the
/// current snapshot cannot change meanwhile.
async fn publish(
    pool: &Pool,
    round_id: &str,
    applied: AppliedRound,
) -> Result<(), tokio::task::JoinError> {
    let last = LastRound {
        id: Arc::from(round_id),
        time: applied.time,
    };
    let current = pool.read();
    let next = tokio::task::spawn_blocking(move || {
        let players = applied
            .entrants
            .into_iter()
            .map(|e| (e.player, e.state, last.clone()))
            .collect();
        let mut next = PoolState::clone(&current);
        next.apply(players);
        next
    })
    .await?;
    let previous = pool.publish(next);
    // Freeing a snapshot can mean freeing millions of shared places: not on the runtime's
    // threads either (when a reader still holds it, that reader frees it later instead).
    tokio::task::spawn_blocking(move || drop(previous));
    Ok(())
}

/// Rebuilds the pool's memory from the database, after another process changed it.
async fn reload(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<Processed> {
    let info = storage
        .pool_progress(pool.name())
        .await?
        .with_context(|| format!("pool `{}` disappeared", pool.name()))?;
    let players = storage.load_players(pool.name()).await?;
    let state =
        tokio::task::spawn_blocking(move || PoolState::load(info.params, players, info.applied))
            .await
            .context("loading players")??;
    drop(pool.publish(state));
    tracing::info!(pool = pool.name(), "reloaded from the database");
    Ok(Processed::Reloaded)
}

/// Whether another process applied rounds or changed parameters since memory was loaded.
async fn stale(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<bool> {
    let info = storage
        .pool_progress(pool.name())
        .await
        .context("reading the pool")?
        .with_context(|| format!("pool `{}` disappeared", pool.name()))?;
    let state = pool.read();
    Ok(info.applied != state.applied() || info.params != *state.system())
}
