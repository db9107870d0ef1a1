//! Applying a correction (docs/corrections.md): the pool is rated again from its stored rounds
//! as the correction leaves them, on a blocking thread and beside the live snapshot, which
//! reads keep answering from; the outcome streams into one transaction that replaces the
//! pool's players and history (factors included) and marks the correction applied; only then
//! is the pool reloaded and published. Rounds posted meanwhile wait in the queue behind the
//! correction. A crash before the commit leaves the stored pool as it was and the correction
//! queued: the next worker step starts the recomputation again.

use std::sync::atomic::Ordering;

use anyhow::Context;
use tokio::sync::mpsc;

use super::line::{self, Line};
use super::{rate, reload, Outcome, Processed, Record, Settled, BATCH_ROUNDS};
use crate::corrections;
use crate::engine::Beliefs;
use crate::pools::{Pool, PoolState};
use crate::storage::{
    self, EntryKind, LineOutcome, QueuedRound, RecomputedLine, Rewrite, RoundOutcome, Storage,
};
use crate::wire::Correction;

/// Batches of rated lines waiting for the transaction to write them: the rating runs at most
/// this far ahead of the writes (plus the batch being rated and the one being written).
const AHEAD: usize = 2;

/// Whether a queued line is a correction.
pub(super) fn is_correction(queued: &QueuedRound) -> bool {
    queued.kind == EntryKind::Correction.as_str()
}

/// Applies the corrections `queued`, the pool's oldest queued lines, holding the pool's turn:
/// the first, and with it the voids that follow a void, in one recomputation (a burst of voids
/// would otherwise rate the pool again once each, and fill its queue meanwhile). Should one of
/// them not apply after those before it (it names a round they voided), those go together and
/// it goes alone after them, failing as it would have.
pub(super) async fn apply(
    storage: &dyn Storage,
    pool: &Pool,
    queued: Vec<QueuedRound>,
) -> anyhow::Result<Processed> {
    let current = pool.read();
    let rated_on = current.applied();
    let mut lines = queued.into_iter();
    let Some(queued) = lines.next() else {
        return Ok(Processed::Idle);
    };
    pool.start_recompute(&queued.id, 0);
    let correction = match line::read(&queued) {
        Ok(Line::Correction(correction)) => correction,
        Ok(_) => return fail(storage, pool, &queued.id, rated_on, "not a correction").await,
        Err(reason) => return fail(storage, pool, &queued.id, rated_on, &reason).await,
    };
    let is_void = |action: &Correction| matches!(action, Correction::Void { .. });
    let mut actions = vec![correction];
    let mut ids = vec![queued.id.clone()];
    if is_void(&actions[0]) {
        for later in lines {
            match line::read(&later) {
                Ok(Line::Correction(next)) if is_void(&next) => {
                    actions.push(next);
                    ids.push(later.id);
                }
                _ => break,
            }
        }
    }
    let params = current.system().clone();
    let plan = loop {
        let applied = storage
            .applied_rounds(pool.name(), 0, u32::MAX, u64::MAX)
            .await
            .context("reading the applied rounds")?
            .rounds;
        let (actions_now, params_now) = (actions.clone(), params.clone());
        let plan = tokio::task::spawn_blocking(move || {
            corrections::plan_all(applied, &actions_now, &params_now)
        })
        .await;
        match plan {
            // Those before the one that cannot apply go together; it goes alone after them,
            // and fails then, as it would have alone.
            Ok(Err((index, _))) if actions.len() > 1 => {
                let keep = index.max(1);
                actions.truncate(keep);
                ids.truncate(keep);
            }
            plan => break plan.map(|planned| planned.map_err(|(_, reason)| reason)),
        }
    };
    if ids.len() > 1 {
        tracing::info!(
            pool = pool.name(),
            voids = ids.len(),
            "voids applied together"
        );
    }
    let mut plan = match plan {
        Ok(Ok(plan)) => plan,
        Ok(Err(reason)) => return fail(storage, pool, &queued.id, rated_on, &reason).await,
        Err(error) if !error.is_panic() => {
            pool.finish_recompute("interrupted");
            return Err(error).context("planning the correction");
        }
        Err(error) => {
            tracing::error!(pool = pool.name(), error = %error, "planning a correction panicked");
            return fail(
                storage,
                pool,
                &queued.id,
                rated_on,
                "internal error while planning",
            )
            .await;
        }
    };
    tracing::info!(
        pool = pool.name(),
        correction = queued.id,
        lines = plan.lines.len(),
        "recomputing the pool"
    );
    let count = plan.lines.len();
    let done = pool.start_recompute(&queued.id, count as u64);
    let (sender, mut receiver) = mpsc::channel(AHEAD);
    let lines = std::mem::take(&mut plan.lines);
    let (params, display) = (plan.params.clone(), current.display().clone());
    let rating = tokio::task::spawn_blocking(move || {
        let mut state = match PoolState::new(params, display) {
            Ok(state) => state,
            Err(error) => {
                // The receiver reports it; nothing else to do if it is gone.
                let _ = sender.blocking_send(Err(error.to_string()));
                return;
            }
        };
        for chunk in lines.chunks(BATCH_ROUNDS) {
            let batch = rate(&state, chunk.to_vec(), Record::Outcomes);
            let mut rated = Vec::with_capacity(chunk.len());
            for ((id, outcome), line) in batch.rounds.into_iter().zip(chunk) {
                let outcome = match outcome {
                    Outcome::Applied(round) => LineOutcome::Round(round),
                    Outcome::Season(start) => LineOutcome::Season(start),
                    Outcome::Failed(reason) => {
                        let _ = sender.blocking_send(Err(format!("round `{id}`: {reason}")));
                        return;
                    }
                };
                rated.push(RecomputedLine {
                    seq: line.seq,
                    id,
                    outcome,
                });
            }
            if sender.blocking_send(Ok(rated)).is_err() {
                // The transaction gave up: stop rating.
                return;
            }
            done.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            state = batch.next;
        }
    });
    let leagues = current.display().leagues.clone();
    let corrections: Vec<&str> = ids.iter().map(String::as_str).collect();
    let rewrite = Rewrite {
        corrections: &corrections,
        rated_on,
        leagues: leagues.as_ref(),
        changed: &plan.changed,
        voided: &plan.voided,
        params: &plan.params,
        lines: count,
    };
    let stored = storage
        .rewrite_pool(pool.name(), &rewrite, &mut receiver)
        .await;
    drop(receiver);
    if let Err(error) = rating.await {
        if !error.is_panic() || stored.is_ok() {
            pool.finish_recompute("interrupted");
            return Err(error).context("rating the pool again");
        }
        // A bug in the rating: retrying would stop the pool's queue for good.
        tracing::error!(pool = pool.name(), error = %error, "rating the pool again panicked");
        return fail(
            storage,
            pool,
            &queued.id,
            rated_on,
            "internal error while rating",
        )
        .await;
    }
    match stored {
        Ok(()) => {
            // Committed: applied, even if loading it fails now (the next step loads it then).
            let reloaded = reload(storage, pool).await;
            pool.finish_recompute("applied");
            reloaded?;
            Ok(Processed::Settled(
                ids.into_iter().map(Settled::Applied).collect(),
            ))
        }
        Err(storage::Error::Recompute(reason)) => {
            fail(storage, pool, &queued.id, rated_on, &reason).await
        }
        Err(storage::Error::NotNextRound { .. } | storage::Error::Stale { .. }) => {
            pool.finish_recompute("stale");
            reload(storage, pool).await
        }
        Err(error) => {
            pool.finish_recompute("interrupted");
            Err(error).context("storing the recomputed pool")
        }
    }
}

/// Marks the correction `id` failed with `reason`: it changes nothing.
async fn fail(
    storage: &dyn Storage,
    pool: &Pool,
    id: &str,
    rated_on: u64,
    reason: &str,
) -> anyhow::Result<Processed> {
    tracing::warn!(
        pool = pool.name(),
        correction = id,
        reason,
        "correction failed"
    );
    let leagues = pool.read().display().leagues.clone();
    match storage
        .settle_rounds(
            pool.name(),
            &[(id, RoundOutcome::Failed(reason))],
            rated_on,
            leagues.as_ref(),
        )
        .await
    {
        Ok(()) => {
            pool.finish_recompute("failed");
            Ok(Processed::Settled(vec![Settled::Failed(id.to_owned())]))
        }
        Err(storage::Error::NotNextRound { .. } | storage::Error::Stale { .. }) => {
            reload(storage, pool).await
        }
        Err(error) => Err(error).context("marking the correction failed"),
    }
}
