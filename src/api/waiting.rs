//! `?wait=applied` on the routes that post rounds: the answer waits until the rounds posted are
//! applied or failed, so that a client reads its own results next without polling. Waiting
//! holds no worker, lock or database connection: the request sleeps on the pool's published
//! snapshots and reads the rounds' statuses after each, from the oldest unsettled one on (the
//! worker settles rounds in the order they were accepted).

use std::time::Duration;

use serde::Deserialize;
use tokio::time::Instant;
use utoipa::{IntoParams, ToSchema};

use super::error::Error;
use super::queueing::RoundStatusResponse;
use super::reads;
use crate::pools::Pool;
use crate::rate_limit::Client;
use crate::state::AppState;
use crate::storage::{ResultsPage, RoundStatus};

/// Seconds a post waits when it gives no `timeout`.
const DEFAULT_TIMEOUT_SECS: f64 = 10.0;

/// How often a waiting post reads the statuses even with no snapshot published: a round
/// another replica applies is published here only when this process follows the pool.
const RECHECK: Duration = Duration::from_secs(1);

/// `?wait=&timeout=`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// `applied`: answer once every round posted is applied or failed (200, each with its
    /// status), not once they are queued. Should `timeout` pass first, the answer is the 202
    /// it would have been without waiting.
    #[param(inline)]
    wait: Option<WaitFor>,
    /// Seconds to wait with `wait=applied` (default 10), at most one second less than the
    /// server's request timeout (`server.request_timeout_secs`, 30 by default).
    #[param(minimum = 0.0)]
    timeout: Option<f64>,
}

/// What a post waits for.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitFor {
    /// The rounds' application, or their failure.
    Applied,
}

impl WaitQuery {
    /// How long to wait, if at all; 400 naming `timeout` for a time that is not one, or for a
    /// `timeout` without `wait`.
    pub(super) fn deadline(&self, state: &AppState) -> Result<Option<Instant>, Error> {
        let Some(WaitFor::Applied) = self.wait else {
            return match self.timeout {
                Some(_) => Err(Error::query("timeout", "is given without `wait=applied`")),
                None => Ok(None),
            };
        };
        let secs = self.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if !(secs.is_finite() && secs >= 0.0) {
            return Err(Error::query(
                "timeout",
                "must be a number of seconds, 0 or more",
            ));
        }
        // The request's own timeout answers 503: the wait ends a second before it.
        let most = state.settings.server.request_timeout_secs.saturating_sub(1) as f64;
        Ok(Some(
            Instant::now() + Duration::from_secs_f64(secs.min(most)),
        ))
    }
}

/// Waits until every round of `answers` that is queued is settled or `deadline` passes, and
/// writes each one's status into `answers`; whether all were settled.
pub(super) async fn settle(
    state: &AppState,
    client: Option<&Client>,
    pool: &Pool,
    answers: &mut [RoundStatusResponse],
    deadline: Instant,
) -> Result<bool, Error> {
    let mut changes = pool.changes();
    let mut next = 0;
    loop {
        // Marked seen before reading: a snapshot published during the reads wakes the wait.
        changes.borrow_and_update();
        while let Some(answer) = answers.get_mut(next) {
            if answer.status != RoundStatus::Queued.as_str() {
                next += 1;
                continue;
            }
            let Some(record) = reads(state, client)
                .await
                .round(pool.name(), &answer.id, &ResultsPage::NONE)
                .await?
            else {
                // Voided meanwhile, by a correction that rewrote the pool.
                answer.status = RoundStatus::Voided.as_str();
                answer.position = None;
                continue;
            };
            if record.status == RoundStatus::Queued {
                break;
            }
            answer.status = record.status.as_str();
            answer.position = None;
            answer.error = record.error;
        }
        if next == answers.len() {
            return Ok(true);
        }
        let recheck = deadline.min(Instant::now() + RECHECK);
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return Ok(false);
                }
            }
            () = tokio::time::sleep_until(recheck) => {
                if Instant::now() >= deadline {
                    return Ok(false);
                }
            }
        }
    }
}
