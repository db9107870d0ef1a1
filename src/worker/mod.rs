//! The worker: one loop per pool that takes the oldest queued rounds, rates them one after
//! another on rayon (off the async runtime), commits every entrant's new state, their history
//! and the rounds' statuses in one transaction, and only then publishes the new ratings in
//! memory. Rounds are applied strictly in acceptance order; the storage layer refuses to
//! settle any rounds but the oldest queued ones, so a second process sharing the database
//! cannot apply a round twice.
//!
//! A correction is applied by rating the pool again from its stored rounds beside the live
//! state ([`recompute`]), and storing the result in one transaction.
//!
//! Rounds that wait together are settled together: one transaction (one disk flush), one
//! staleness check and one published snapshot for the lot, which is what lets ingest keep up
//! with a platform posting its history. A round alone in the queue is settled alone, as soon
//! as it arrives.

mod recompute;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing::{info_span, Instrument};

use crate::display::LeagueMove;
use crate::engine::predict::expected_places;
use crate::engine::{Applied, Beliefs, Round, SystemState};
use crate::instruments;
use crate::pools::{LastRound, Played, Pool, PoolState};
use crate::storage::{
    self, AppliedEntrant, AppliedRound, QueuedRound, RoundOutcome, SeasonStart, Storage,
};
use crate::wire::Entry;

/// Most rounds settled in one step.
const BATCH_ROUNDS: usize = 64;
/// A step takes further rounds only while the bodies taken so far are shorter than this, in
/// characters (about 40,000 standings): a large round waits for no more than a few small ones, and a
/// step's memory and transaction stay bounded.
const BATCH_BYTES: usize = 2 << 20;

/// What one step of the worker did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// The oldest queued rounds were settled, in this order, in one transaction.
    Settled(Vec<Settled>),
    /// Another process settled the oldest round first; memory was reloaded from the database.
    Reloaded,
    /// No round is waiting.
    Idle,
}

/// What became of one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Round `id` was rated and committed.
    Applied(String),
    /// Round `id` could not be rated and is marked failed.
    Failed(String),
}

/// Settles the pool's oldest queued rounds, if any. The pool's turn is held throughout, so a
/// parameter change cannot slip in between reading the parameters and committing.
pub async fn process_next(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<Processed> {
    let _turn = pool.turn().await;
    let progress = storage
        .pool_progress(pool.name())
        .await
        .context("reading the pool")?
        .with_context(|| format!("pool `{}` disappeared", pool.name()))?;
    let state = pool.read();
    if progress.applied != state.applied()
        || progress.params != *state.system()
        || progress.display.leagues != state.display().leagues
    {
        // Leagues are state too: new ones were recomputed in the database.
        return reload(storage, pool).await;
    }
    if progress.display != *state.display() {
        // Another process changed only how the pool is shown: re-sort, nothing to reload.
        let shown = tokio::task::spawn_blocking(move || state.with_display(progress.display))
            .await
            .context("re-sorting the leaderboards")?;
        drop(pool.publish(shown));
    }
    let mut queued = storage
        .queued_rounds(pool.name(), BATCH_ROUNDS, BATCH_BYTES)
        .await
        .context("reading the queue")?;
    match queued.iter().position(recompute::is_correction) {
        Some(0) => return recompute::apply(storage, pool, queued.swap_remove(0)).await,
        // A correction goes alone, after the rounds before it.
        Some(at) => queued.truncate(at),
        None => {}
    }
    let (Some(first), Some(last)) = (queued.first(), queued.last()) else {
        return Ok(Processed::Idle);
    };
    let span = info_span!(
        "apply_rounds",
        pool = pool.name(),
        rounds = queued.len(),
        round.first = first.seq,
        round.last = last.seq,
    );
    async {
        let started = std::time::Instant::now();
        // The snapshot travels to the blocking thread: the priors are read there, in place (an
        // Elo-MMR prior holds up to `history_limit` factors, too many to copy for a large round).
        let current = pool.read();
        let rated_on = current.applied();
        let batch = tokio::task::spawn_blocking(move || rate(&current, queued))
            .await
            .context("rating the rounds")?;
        let rating_ms = started.elapsed().as_secs_f64() * 1e3;
        let outcomes: Vec<(&str, RoundOutcome<'_>)> = batch
            .rounds
            .iter()
            .map(|(id, outcome)| {
                let outcome = match outcome {
                    Outcome::Applied(round) => RoundOutcome::Applied(round),
                    Outcome::Failed(reason) => RoundOutcome::Failed(reason),
                    Outcome::Season(start) => RoundOutcome::Season(start),
                };
                (id.as_str(), outcome)
            })
            .collect();
        let leagues = batch.next.display().leagues.as_ref();
        match storage
            .settle_rounds(pool.name(), &outcomes, rated_on, leagues)
            .await
        {
            Ok(()) => {}
            Err(storage::Error::NotNextRound { .. } | storage::Error::Stale { .. }) => {
                return reload(storage, pool).await
            }
            Err(error) => return Err(error).context("committing the rounds"),
        }
        let commit_ms = started.elapsed().as_secs_f64() * 1e3 - rating_ms;
        let count = |kind: fn(&Outcome) -> bool| {
            batch
                .rounds
                .iter()
                .filter(|(_, outcome)| kind(outcome))
                .count() as u64
        };
        instruments::settled(
            pool.name(),
            count(|outcome| matches!(outcome, Outcome::Applied(_))),
            count(|outcome| matches!(outcome, Outcome::Failed(_))),
            Duration::from_secs_f64(rating_ms / 1e3),
            Duration::from_secs_f64(commit_ms.max(0.0) / 1e3),
        );
        let previous = pool.publish(batch.next);
        // Freeing a snapshot can mean freeing millions of shared places: not on the runtime's
        // threads (when a reader still holds it, that reader frees it later instead).
        tokio::task::spawn_blocking(move || drop(previous));
        tracing::info!(
            entrants = batch.entrants,
            rating_ms,
            commit_ms,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "rounds settled"
        );
        let settled = batch
            .rounds
            .into_iter()
            .map(|(id, outcome)| match outcome {
                Outcome::Applied(_) | Outcome::Season(_) => Settled::Applied(id),
                Outcome::Failed(reason) => {
                    tracing::warn!(round.id = id, reason, "round failed");
                    Settled::Failed(id)
                }
            })
            .collect();
        Ok(Processed::Settled(settled))
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

/// Rounds rated in one step, and the snapshot that holds their ratings.
struct Batch {
    /// Each round's id and outcome, oldest first.
    rounds: Vec<(String, Outcome)>,
    /// Standings of the applied rounds.
    entrants: usize,
    /// The pool after every applied round: published once they are committed.
    next: PoolState,
}

enum Outcome {
    Applied(AppliedRound),
    Failed(String),
    Season(SeasonStart),
}

/// Rates `queued` in order, each on the beliefs the rounds before it left, and starts the
/// seasons among them. A round that cannot be rated (or that makes the engine panic) is failed
/// and leaves every belief as it was.
fn rate(current: &PoolState, queued: Vec<QueuedRound>) -> Batch {
    let mut next = current.clone();
    let mut entrants = 0;
    let rounds = queued
        .into_iter()
        .map(|queued| {
            let round = match parse(&queued) {
                Ok(Entry::Season(season)) => {
                    let reset = season.reset();
                    next = next.new_season(reset);
                    let states = if reset.keeps() {
                        Vec::new()
                    } else {
                        next.beliefs()
                            .map(|(id, state)| (id.to_owned(), state.clone()))
                            .collect()
                    };
                    return (queued.id, Outcome::Season(SeasonStart { states }));
                }
                Ok(Entry::Round(round)) => round.to_round().map_err(|e| e.to_string()),
                Ok(Entry::Correction(_)) => Err("a correction is applied by recomputation".into()),
                Err(error) => Err(error),
            };
            let outcome = round.and_then(|round| {
                let applied = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let priors: Vec<&SystemState> = round
                        .standings
                        .iter()
                        .map(|s| next.belief_or_newcomer(&s.player))
                        .collect();
                    let expected = next
                        .display()
                        .expected_ranks
                        .then(|| expected_places(next.system(), &round, &priors).ok())
                        .flatten();
                    let applied = next.system().apply(&round, &priors)?;
                    Ok::<_, crate::engine::Error>((applied, expected))
                }));
                match applied {
                    Ok(Ok((applied, expected))) => Ok(applied_round(&round, applied, expected)),
                    Ok(Err(error)) => Err(error.to_string()),
                    Err(_) => {
                        tracing::error!(round.id = queued.id, "the engine panicked");
                        Err("internal error while rating".to_owned())
                    }
                }
            });
            let outcome = match outcome {
                Ok(mut applied) => {
                    let last = LastRound {
                        id: Arc::from(queued.id.as_str()),
                        time: applied.time,
                    };
                    let moves = next.apply(
                        applied
                            .entrants
                            .iter()
                            .map(|e| Played {
                                player: e.player.clone(),
                                rank: e.rank,
                                prior: e.change.before.mu,
                                state: e.state.clone(),
                                last_round: last.clone(),
                            })
                            .collect(),
                    );
                    for (entrant, moved) in applied.entrants.iter_mut().zip(moves) {
                        entrant.league = moved;
                        entrant.bonus_spent = next.leagues().bonus_spent(&entrant.player);
                    }
                    entrants += applied.entrants.len();
                    Outcome::Applied(applied)
                }
                Err(reason) => Outcome::Failed(reason),
            };
            (queued.id, outcome)
        })
        .collect();
    Batch {
        rounds,
        entrants,
        next,
    }
}

fn parse(queued: &QueuedRound) -> Result<Entry, String> {
    let value: serde_json::Value =
        serde_json::from_str(&queued.body).map_err(|e| format!("stored body unreadable: {e}"))?;
    Entry::from_value(&value).map_err(|e| format!("stored body unreadable: {e}"))
}

/// The outcome of a round as storage takes it, with each standing's expected place when the
/// pool records them.
fn applied_round(round: &Round, applied: Vec<Applied>, expected: Option<Vec<f64>>) -> AppliedRound {
    let expected = expected.map_or_else(
        || vec![None; applied.len()],
        |e| e.into_iter().map(Some).collect(),
    );
    AppliedRound {
        time: round.time,
        entrants: round
            .standings
            .iter()
            .zip(applied)
            .zip(expected)
            .map(
                |((standing, Applied { state, change }), expected_rank)| AppliedEntrant {
                    player: standing.player.clone(),
                    rank: standing.rank,
                    change,
                    league: LeagueMove::default(),
                    bonus_spent: 0.0,
                    expected_rank,
                    state,
                },
            )
            .collect(),
    }
}

/// Rebuilds the pool's memory from the database, after another process changed it.
pub(crate) async fn reload(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<Processed> {
    let info = storage
        .pool_progress(pool.name())
        .await?
        .with_context(|| format!("pool `{}` disappeared", pool.name()))?;
    let players = storage.load_players(pool.name()).await?;
    let state = tokio::task::spawn_blocking(move || {
        PoolState::load(info.params, info.display, players, info.applied)
    })
    .await
    .context("loading players")??;
    drop(pool.publish(state));
    tracing::info!(pool = pool.name(), "reloaded from the database");
    Ok(Processed::Reloaded)
}
