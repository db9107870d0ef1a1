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
//! staleness check and one published snapshot for a batch of them, which is what lets ingest
//! keep up with a platform posting its history. The rounds queued after a batch are read and
//! rated on its result while it commits, so rating and writing overlap; they commit after it,
//! or are thrown away if its commit fails. On SQLite, which writes one transaction at a time,
//! storage lines its writers up first come first served, so a post waits for one commit, not
//! for a worker committing back to back. A round alone in the queue is settled alone, as soon as it arrives.

mod line;
mod recompute;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing::{info_span, Instrument};

use crate::display::LeagueMove;
use crate::engine::predict::expected_places;
use crate::engine::{Applied, Beliefs, Round};
use crate::instruments;
use crate::pools::{LastRound, Played, Pool, PoolState};
use crate::storage::{
    self, AppliedEntrant, AppliedRound, QueuedRound, RoundOutcome, SeasonStart, Storage,
};
use line::Line;

/// Most rounds settled in one transaction.
const BATCH_ROUNDS: usize = 64;
/// A batch takes further rounds only while the bodies taken so far are shorter than this, in
/// characters (about 450,000 standings): a batch's memory and transaction stay bounded, and a
/// history of large rounds still goes in few transactions. Each transaction rewrites the row of
/// every player its rounds name, so smaller batches of large rounds rewrote most players' rows
/// again and again: at 2 MiB, a backfill of 300 rounds of 4,000 among 30,000 players took 18
/// batches and spent as long upserting players as inserting its 1.2M history rows; at 16 MiB it
/// takes 5 (BENCHMARKS.md, "Backfill").
const BATCH_BYTES: usize = 16 << 20;
/// Most batches one step settles. A step holds the pool's turn, which a parameter change and a
/// hand-over to another replica wait for: it rates no further batch once one of them waits.
const PIPELINED_BATCHES: usize = 16;

/// What one step of the worker did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// The oldest queued rounds were settled, in this order, in one transaction.
    Settled(Vec<Settled>),
    /// Another process moved the pool on: memory caught up by rating again, in order, the
    /// `lines` it applied since.
    Followed {
        /// Lines rated again.
        lines: usize,
    },
    /// Another process changed the pool in a way only a reload shows (a correction, new
    /// parameters or leagues): memory was reloaded from the database.
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

/// Settles the pool's oldest queued rounds, if any, in batches: each batch is rated while the
/// one before it commits, and published after its own commit. The pool's turn is held throughout, so a parameter change cannot slip in
/// between reading the parameters and committing.
pub async fn process_next(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<Processed> {
    let _turn = pool.turn().await;
    if pool.reload_pending() {
        // Just taken over: what this process writes rests on the database, not on what it
        // computed while following. Memory loaded and not followed since (a process that
        // just started, on Postgres) is what a reload would read again.
        if pool.followed_since_load() {
            return reload(storage, pool).await;
        }
        pool.reloaded();
    }
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
        return catch_up(storage, pool).await;
    }
    if progress.display != *state.display() {
        // Another process changed only how the pool is shown: re-sort, nothing to reload.
        let shown = tokio::task::spawn_blocking(move || state.with_display(progress.display))
            .await
            .context("re-sorting the leaderboards")?;
        drop(pool.publish(shown));
    }
    let queued = match next_rounds(storage, pool, 0).await? {
        Next::Corrections(corrections) => {
            return recompute::apply(storage, pool, corrections).await
        }
        Next::Rounds(queued) if queued.is_empty() => return Ok(Processed::Idle),
        Next::Rounds(queued) => queued,
    };
    let mut rated = Some(rate_on(pool.read(), queued).await?);
    let mut settled = Vec::new();
    let mut batches = 0;
    while let Some(batch) = rated.take() {
        batches += 1;
        // The next rounds are rated on this batch's result while it commits; they are
        // committed only after it, and published only after their own commit.
        let ahead = batches < PIPELINED_BATCHES && pool.owned() && !pool.turn_wanted();
        let (committed, upcoming) = tokio::join!(settle(storage, pool, &batch), async {
            if ahead {
                rate_ahead(storage, pool, &batch).await
            } else {
                Ok(None)
            }
        });
        match committed {
            Ok(()) => {}
            // Rounds settled before this batch stay settled; the next step's check of the
            // pool's progress catches up.
            Err(storage::Error::NotNextRound { .. } | storage::Error::Stale { .. })
                if !settled.is_empty() =>
            {
                break
            }
            Err(storage::Error::NotNextRound { .. } | storage::Error::Stale { .. }) => {
                return catch_up(storage, pool).await
            }
            Err(error) if error.is_unavailable() => {
                return Err(error).context("committing the rounds")
            }
            // Refused for what it holds, not for an outage: committed again, it would be
            // refused again, for ever, and the pool would apply nothing more. What was settled
            // before stays settled; the next step finds the round the database refuses.
            Err(error) if !settled.is_empty() => {
                tracing::warn!(pool = pool.name(), %error, "the database refused a batch");
                break;
            }
            Err(error) => return settle_alone(storage, pool, &error).await,
        }
        let previous = pool.publish(batch.next);
        // Freeing a snapshot can mean freeing millions of shared places: not on the runtime's
        // threads (when a reader still holds it, that reader frees it later instead).
        tokio::task::spawn_blocking(move || drop(previous));
        settled.extend(batch.rounds.into_iter().map(|(id, outcome)| match outcome {
            Outcome::Applied(_) | Outcome::Season(_) => Settled::Applied(id),
            Outcome::Failed(reason) => {
                tracing::warn!(round.id = id, reason, "round failed");
                Settled::Failed(id)
            }
        }));
        rated = upcoming.unwrap_or_else(|error| {
            // What was committed stays settled; the next step reads the queue again.
            tracing::warn!(
                pool = pool.name(),
                error = format!("{error:#}"),
                "reading or rating the next rounds failed"
            );
            None
        });
    }
    Ok(Processed::Settled(settled))
}

/// After the database refused to store a batch for what it holds (`refused`, not an outage):
/// commits the pool's oldest queued round alone, and marks it failed if the database refuses
/// that too, so that one round the database cannot store fails rather than stopping the pool.
/// Where the round alone is stored, a later one of the batch is at fault: the steps that follow
/// come to it one round at a time.
async fn settle_alone(
    storage: &dyn Storage,
    pool: &Pool,
    refused: &storage::Error,
) -> anyhow::Result<Processed> {
    tracing::warn!(pool = pool.name(), error = %refused, "the database refused a batch");
    let queued = match next_rounds(storage, pool, 0).await? {
        Next::Rounds(mut queued) if !queued.is_empty() => {
            queued.truncate(1);
            queued
        }
        Next::Rounds(_) | Next::Corrections(_) => return Ok(Processed::Idle),
    };
    let batch = rate_on(pool.read(), queued).await?;
    let Some((id, _)) = batch.rounds.first() else {
        return Ok(Processed::Idle);
    };
    let id = id.clone();
    match settle(storage, pool, &batch).await {
        Ok(()) => {
            let previous = pool.publish(batch.next);
            tokio::task::spawn_blocking(move || drop(previous));
            Ok(Processed::Settled(vec![Settled::Applied(id)]))
        }
        Err(error) if error.is_unavailable() => Err(error).context("committing a round alone"),
        Err(storage::Error::NotNextRound { .. }) => catch_up(storage, pool).await,
        Err(error) => {
            tracing::error!(pool = pool.name(), round.id = id, %error, "the database refused a round");
            let reason = "the database refused to store its result (the service's log says why)";
            let leagues = pool.read().display().leagues.clone();
            storage
                .settle_rounds(
                    pool.name(),
                    &[(id.as_str(), RoundOutcome::Failed(reason))],
                    batch.rated_on,
                    leagues.as_ref(),
                )
                .await
                .context("marking a round the database refuses failed")?;
            instruments::settled(pool.name(), 0, 1, batch.rating, Duration::ZERO);
            Ok(Processed::Settled(vec![Settled::Failed(id)]))
        }
    }
}

/// What the queue holds next.
enum Next {
    /// Rounds to rate (none: the queue is empty), up to a correction.
    Rounds(Vec<QueuedRound>),
    /// The corrections queued one after another at the head of the queue (one at least): they
    /// go after the rounds before them, without a round between them.
    Corrections(Vec<QueuedRound>),
}

/// The pool's oldest queued lines after seq `after`, as one batch.
async fn next_rounds(storage: &dyn Storage, pool: &Pool, after: i64) -> anyhow::Result<Next> {
    let mut queued = storage
        .queued_rounds(pool.name(), after, BATCH_ROUNDS, BATCH_BYTES)
        .await
        .context("reading the queue")?;
    Ok(match queued.iter().position(recompute::is_correction) {
        Some(0) => {
            let rounds = queued
                .iter()
                .position(|line| !recompute::is_correction(line))
                .unwrap_or(queued.len());
            queued.truncate(rounds);
            Next::Corrections(queued)
        }
        Some(at) => {
            queued.truncate(at);
            Next::Rounds(queued)
        }
        None => Next::Rounds(queued),
    })
}

/// Rates `queued` on `current`, off the async runtime.
async fn rate_on(current: Arc<PoolState>, queued: Vec<QueuedRound>) -> anyhow::Result<Batch> {
    // The snapshot travels to the blocking thread: the priors are read there, in place (an
    // Elo-MMR prior holds up to `history_limit` factors, too many to copy for a large round).
    tokio::task::spawn_blocking(move || rate(&current, queued, Record::Outcomes))
        .await
        .context("rating the rounds")
}

/// The rounds queued after `batch`, rated on its result, while it commits; none when the
/// queue holds nothing more, or a correction next (it waits for the next step).
async fn rate_ahead(
    storage: &dyn Storage,
    pool: &Pool,
    batch: &Batch,
) -> anyhow::Result<Option<Batch>> {
    match next_rounds(storage, pool, batch.last_seq).await? {
        Next::Rounds(queued) if !queued.is_empty() => {
            Ok(Some(rate_on(Arc::new(batch.next.clone()), queued).await?))
        }
        Next::Rounds(_) | Next::Corrections(_) => Ok(None),
    }
}

/// Commits `batch` (rated on the pool after `batch.rated_on` lines) in one transaction, and
/// counts and logs it.
async fn settle(storage: &dyn Storage, pool: &Pool, batch: &Batch) -> Result<(), storage::Error> {
    let span = info_span!(
        "apply_rounds",
        pool = pool.name(),
        rounds = batch.rounds.len(),
        round.first = batch.first_seq,
        round.last = batch.last_seq,
    );
    async {
        let started = std::time::Instant::now();
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
        storage
            .settle_rounds(pool.name(), &outcomes, batch.rated_on, leagues)
            .await?;
        let commit = started.elapsed();
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
            batch.rating,
            commit,
        );
        tracing::info!(
            entrants = batch.entrants,
            rating_ms = batch.rating.as_secs_f64() * 1e3,
            commit_ms = commit.as_secs_f64() * 1e3,
            "rounds settled"
        );
        Ok(())
    }
    .instrument(span)
    .await
}

/// Brings a pool this process does not own up to the database, in the pool's turn: see
/// [`catch_up`]. `Idle` when memory was current already.
pub async fn follow(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<Processed> {
    let _turn = pool.turn().await;
    catch_up(storage, pool).await
}

/// Catches memory up with the lines another process applied since the snapshot's last one,
/// by rating them again here, in order, exactly as that process did (the engine's results do
/// not depend on the machine or its threads): only the rounds are read, never the pool. A
/// correction, new parameters or new leagues, or counts that do not add up, are shown by a
/// reload instead. The caller holds the pool's turn.
async fn catch_up(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<Processed> {
    let mut caught_up = 0;
    loop {
        let current = pool.read();
        let since = storage
            .applied_since(pool.name(), current.last_seq(), BATCH_ROUNDS, BATCH_BYTES)
            .await
            .context("reading the lines applied elsewhere")?
            .with_context(|| format!("pool `{}` disappeared", pool.name()))?;
        let lines = since.lines.len() as u64;
        let behind = since.progress.applied.checked_sub(current.applied());
        let followable = since.progress.params == *current.system()
            && since.progress.display.leagues == current.display().leagues
            && !since.corrected
            && behind.is_some_and(|behind| behind >= lines && (lines > 0 || behind == 0));
        if !followable {
            return reload(storage, pool).await;
        }
        if since.lines.is_empty() {
            if since.progress.display != *current.display() {
                // Only how the pool is shown changed: re-sort, nothing to rate.
                let display = since.progress.display;
                let shown = tokio::task::spawn_blocking(move || current.with_display(display))
                    .await
                    .context("re-sorting the leaderboards")?;
                drop(pool.publish(shown));
            }
            return Ok(if caught_up == 0 {
                Processed::Idle
            } else {
                Processed::Followed { lines: caught_up }
            });
        }
        let batch = tokio::task::spawn_blocking(move || rate(&current, since.lines, Record::State))
            .await
            .context("rating the lines applied elsewhere")?;
        if let Some((id, _)) = batch
            .rounds
            .iter()
            .find(|(_, outcome)| matches!(outcome, Outcome::Failed(_)))
        {
            tracing::warn!(
                pool = pool.name(),
                round.id = id,
                "a round applied elsewhere fails here; reloading the pool"
            );
            return reload(storage, pool).await;
        }
        caught_up += batch.rounds.len();
        instruments::followed(pool.name(), batch.rounds.len() as u64);
        pool.followed_lines();
        let previous = pool.publish(batch.next);
        tokio::task::spawn_blocking(move || drop(previous));
        tracing::debug!(pool = pool.name(), lines, "caught up with another process");
    }
}

/// Runs the pool's worker until `shutdown`: steps while rounds wait, sleeps until woken (or
/// `poll` passes, for rounds another process queued), waits `retry` after a database error.
/// While another process owns the pool, each step only catches up with it ([`follow`]).
/// Shutdown is checked only between steps, so a round being applied is always finished.
pub async fn run(
    storage: Arc<dyn Storage>,
    pool: Arc<Pool>,
    poll: Duration,
    retry: Duration,
    shutdown: CancellationToken,
) {
    pool.set_worker_running(true);
    while !shutdown.is_cancelled() && !pool.removed() {
        let step = if pool.owned() {
            process_next(storage.as_ref(), &pool).await
        } else {
            follow(storage.as_ref(), &pool).await
        };
        let failing = pool.step_ended(step.is_ok());
        let wait = match step {
            Ok(Processed::Idle) => poll,
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(
                    pool = pool.name(),
                    error = format!("{error:#}"),
                    failing_steps = failing,
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

/// Rounds rated together, and the snapshot that holds their ratings.
struct Batch {
    /// Each round's id and outcome, oldest first.
    rounds: Vec<(String, Outcome)>,
    /// The seqs of the first and the last of them.
    first_seq: i64,
    last_seq: i64,
    /// Standings of the applied rounds.
    entrants: usize,
    /// Lines applied in the state they were rated on.
    rated_on: u64,
    /// How long rating them took.
    rating: Duration,
    /// The pool after every applied round: published once they are committed.
    next: PoolState,
}

/// What rating a line records beyond the new states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Record {
    /// Everything storage writes: each entrant's expected place too, when the pool keeps them.
    Outcomes,
    /// The states only: the lines were stored by the process that applied them.
    State,
}

enum Outcome {
    Applied(AppliedRound),
    Failed(String),
    Season(SeasonStart),
}

/// Rates `queued` in order, each on the beliefs the rounds before it left, and starts the
/// seasons among them. A round that cannot be rated (or that makes the engine panic) is failed
/// and leaves every belief as it was.
///
/// Each round goes to rayon's pool on its own (`SystemParams::apply`), not the whole batch as
/// `replay` does: a pool thread waiting inside a round may take up a job injected meanwhile and
/// finish it first, so a batch as one job could hold another pool's round up for 64 rounds.
fn rate(current: &PoolState, queued: Vec<QueuedRound>, record: Record) -> Batch {
    let started = std::time::Instant::now();
    let first_seq = queued.first().map_or(current.last_seq(), |q| q.seq);
    let last_seq = queued.last().map_or(current.last_seq(), |q| q.seq);
    let mut next = current.clone();
    let mut entrants = 0;
    let rounds = queued
        .into_iter()
        .map(|queued| {
            let round = match line::read(&queued) {
                Ok(Line::Season(reset)) => {
                    next = next.new_season(queued.seq, reset);
                    let states = if reset.keeps() {
                        Vec::new()
                    } else {
                        next.beliefs()
                            .map(|(id, state)| (id.to_owned(), state.clone()))
                            .collect()
                    };
                    return (queued.id, Outcome::Season(SeasonStart { states }));
                }
                Ok(Line::Round(round)) => Ok(round),
                Ok(Line::Correction(_)) => Err("a correction is applied by recomputation".into()),
                Err(error) => Err(error),
            };
            let outcome = round.and_then(|round| {
                let held = next.entrants(round.standings.iter().map(|s| s.player.as_str()));
                let applied = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let priors = held.priors(&next);
                    // Expected places that are not finite are not kept: they are shown
                    // beside the round, and a number is promised there.
                    let expected = (record == Record::Outcomes && next.display().expected_ranks)
                        .then(|| expected_places(next.system(), &round, &priors).ok())
                        .flatten()
                        .filter(|places| places.iter().all(|p| p.is_finite()));
                    let applied = next.system().apply(&round, &priors)?;
                    Ok::<_, crate::engine::Error>((applied, expected))
                }));
                match applied {
                    Ok(Ok((applied, expected))) => {
                        Ok((applied_round(&round, applied, expected), held))
                    }
                    Ok(Err(error)) => Err(error.to_string()),
                    Err(_) => {
                        tracing::error!(round.id = queued.id, "the engine panicked");
                        Err("internal error while rating".to_owned())
                    }
                }
            });
            let outcome = match outcome {
                Ok((mut applied, held)) => {
                    let last =
                        LastRound::new(Arc::from(queued.id.as_str()), applied.time, queued.seq);
                    let moves = next.apply_entrants(
                        queued.seq,
                        applied
                            .entrants
                            .iter()
                            .map(|e| Played {
                                player: e.player.clone(),
                                rank: e.rank,
                                before: e.change.before,
                                state: e.state.clone(),
                                last_round: last.clone(),
                            })
                            .collect(),
                        held,
                    );
                    for (entrant, entered) in applied.entrants.iter_mut().zip(moves) {
                        entrant.league = entered.league;
                        entrant.previous = entered.previous;
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
        first_seq,
        last_seq,
        entrants,
        rated_on: current.applied(),
        rating: started.elapsed(),
        next,
    }
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
                    previous: None,
                },
            )
            .collect(),
    }
}

/// Rebuilds the pool's memory from the database, after another process changed it.
pub(crate) async fn reload(storage: &dyn Storage, pool: &Pool) -> anyhow::Result<Processed> {
    let loaded = storage
        .load_pool(pool.name())
        .await?
        .with_context(|| format!("pool `{}` disappeared", pool.name()))?;
    let state = tokio::task::spawn_blocking(move || PoolState::from_loaded(loaded))
        .await
        .context("loading players")??;
    drop(pool.publish(state));
    pool.reloaded();
    instruments::reloaded(pool.name());
    tracing::info!(pool = pool.name(), "reloaded from the database");
    Ok(Processed::Reloaded)
}
