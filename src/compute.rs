//! Where compute-heavy requests run: a rayon pool of their own, so that neither the async
//! runtime's threads nor the workers' rating (on rayon's global pool) wait behind them, with a
//! budget on the work running at once and a cancel flag that stops the work when the request
//! goes away (its client disconnects or its timeout fires). Each computation declares its
//! cost in the caller's units (entrants, for predictions), so many small requests run side
//! by side while a few large ones fill the budget; one client may hold only a share of it, so
//! that no one client keeps every other one refused. Knows nothing of HTTP.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// Most entrants (or sides) one prediction may hold: the pairwise matrix grows as its square.
/// The compute budget is counted in entrants, as this many of the largest requests at once.
pub const MAX_ENTRANTS: usize = 1000;

use crate::rate_limit::{Client, Share, Shares};

/// Why a computation did not run to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The computations running already use the budget up.
    #[error("too many computations are running")]
    Overloaded,
    /// The client's own computations running already use up its share of the budget.
    #[error("this client's computations use up its share")]
    OverShare,
    /// The computation panicked (the cause is logged).
    #[error("the computation panicked")]
    Panicked,
}

/// The pool compute-heavy requests run on.
#[derive(Debug)]
pub struct Compute {
    threads: rayon::ThreadPool,
    permits: Arc<Semaphore>,
    budget: u32,
    client_share: u32,
    shares: Arc<Shares>,
}

/// What a computation holds of the budget and of its client's share: given back when dropped.
/// The result comes with it, so that a route can keep it until its answer is written (a large
/// answer a client does not read would otherwise stay in memory without counting against
/// anything).
#[derive(Debug)]
pub struct Held {
    _permit: Option<OwnedSemaphorePermit>,
    _share: Option<Share>,
}

/// Sets the cancel flag when the request's future is dropped before the work is done.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Compute {
    /// A pool of `threads` threads (0: one per core) running computations whose costs add up
    /// to at most `budget`, those of one client to at most `client_share`.
    pub fn new(threads: usize, budget: u32, client_share: u32) -> anyhow::Result<Self> {
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("compute-{i}"))
            .build()?;
        Ok(Self {
            threads,
            permits: Arc::new(Semaphore::new(budget as usize)),
            budget,
            client_share,
            shares: Arc::new(Shares::new(client_share as usize)),
        })
    }

    /// Runs `work` for `client` (none: a caller in process, counted in no share), which costs
    /// `cost` (1 at least, the whole budget and a whole share at most: a larger cost would be
    /// refused forever), on the pool and waits for its result;
    /// refused at once when the budget, or the client's share of it, is used up. `work` is handed
    /// a flag that is set once nobody waits for the result any more; it should poll it and
    /// stop early. The computation keeps its share of the budget until it has stopped.
    pub async fn run<T: Send + 'static>(
        &self,
        client: Option<&Client>,
        cost: usize,
        work: impl FnOnce(&AtomicBool) -> T + Send + 'static,
    ) -> Result<T, Refused> {
        self.run_keeping(client, cost, false, work)
            .await
            .map(|(done, _)| done)
    }

    /// [`Self::run`], the result coming with the computation's share of the budget ([`Held`])
    /// for the caller to give back once it is done with the result: a large answer counts
    /// until it is written.
    pub async fn run_held<T: Send + 'static>(
        &self,
        client: Option<&Client>,
        cost: usize,
        work: impl FnOnce(&AtomicBool) -> T + Send + 'static,
    ) -> Result<(T, Held), Refused> {
        self.run_keeping(client, cost, true, work).await
    }

    /// [`Self::run_held`] if `keep`; otherwise the share is given back as the work ends, on
    /// the pool's thread, not once its caller is next polled.
    async fn run_keeping<T: Send + 'static>(
        &self,
        client: Option<&Client>,
        cost: usize,
        keep: bool,
        work: impl FnOnce(&AtomicBool) -> T + Send + 'static,
    ) -> Result<(T, Held), Refused> {
        // Not `clamp`: a budget of 0 (refusing everything) must not panic.
        let cost = u32::try_from(cost)
            .unwrap_or(u32::MAX)
            .min(self.budget)
            .max(1);
        let held = cost.min(self.client_share).max(1);
        let share = match client {
            Some(client) => Some(
                self.shares
                    .take(client, held as usize)
                    .ok_or(Refused::OverShare)?,
            ),
            None => None,
        };
        let permit = Arc::clone(&self.permits)
            .try_acquire_many_owned(cost)
            .map_err(|_| Refused::Overloaded)?;
        let cancel = Arc::new(AtomicBool::new(false));
        let _cancel_on_drop = CancelOnDrop(Arc::clone(&cancel));
        let (send, receive) = oneshot::channel();
        let span = tracing::Span::current();
        self.threads.spawn(move || {
            let _entered = span.enter();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&cancel)));
            if outcome.is_err() {
                tracing::error!("a computation panicked");
            }
            let held = if keep {
                Held {
                    _permit: Some(permit),
                    _share: share,
                }
            } else {
                drop((permit, share));
                Held {
                    _permit: None,
                    _share: None,
                }
            };
            // The receiver is gone when the request was dropped: nobody wants the result, and
            // the share comes back with it.
            let _ = send.send(
                outcome
                    .map(|done| (done, held))
                    .map_err(|_| Refused::Panicked),
            );
        });
        receive.await.unwrap_or(Err(Refused::Panicked))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_result_keeps_its_share_until_the_caller_drops_it() {
        let compute = Compute::new(1, 2, 1).expect("a pool");
        let client = Client::Key("reader".to_owned());
        let (answer, held) = compute
            .run_held(Some(&client), 1, |_| 1)
            .await
            .expect("computed");
        assert_eq!(answer, 1);
        assert_eq!(
            compute.run(Some(&client), 1, |_| 2).await,
            Err(Refused::OverShare),
            "the first answer still holds the share"
        );
        drop(held);
        assert_eq!(compute.run(Some(&client), 1, |_| 3).await, Ok(3));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_beyond_the_bound_is_refused_and_a_dropped_request_cancels_its_work() {
        let compute = Arc::new(Compute::new(1, 1, 1).expect("a pool"));
        let (started, started_rx) = std::sync::mpsc::channel();
        let (stopped, stopped_rx) = std::sync::mpsc::channel();
        let running = {
            let compute = Arc::clone(&compute);
            tokio::spawn(async move {
                compute
                    .run(None, 1, move |cancel| {
                        let _ = started.send(());
                        while !cancel.load(Ordering::Relaxed) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        let _ = stopped.send(());
                    })
                    .await
            })
        };
        started_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the work started");
        assert_eq!(compute.run(None, 1, |_| ()).await, Err(Refused::Overloaded));
        running.abort();
        stopped_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("dropping the request cancelled the work");
        let mut answer = Err(Refused::Overloaded);
        for _ in 0..1000 {
            answer = compute.run(None, 1, |_| 7).await;
            if answer.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(answer, Ok(7), "the bound is freed once the work stops");
    }

    #[tokio::test]
    async fn small_computations_share_the_budget_a_large_one_fills() {
        let compute = Arc::new(Compute::new(2, 10, 10).expect("a pool"));
        let (release, hold) = tokio::sync::oneshot::channel::<()>();
        let hold = std::sync::Mutex::new(Some(hold));
        let busy = {
            let compute = Arc::clone(&compute);
            tokio::spawn(async move {
                compute
                    .run(None, 8, move |_| {
                        let hold = hold.lock().expect("not poisoned").take();
                        if let Some(hold) = hold {
                            let _ = hold.blocking_recv();
                        }
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(compute.run(None, 3, |_| ()).await, Err(Refused::Overloaded));
        assert_eq!(
            compute.run(None, 2, |_| 5).await,
            Ok(5),
            "2 of the 10 are free"
        );
        let _ = release.send(());
        assert_eq!(busy.await.expect("joined"), Ok(()));
    }

    #[tokio::test]
    async fn a_panicking_computation_is_reported_and_frees_its_place() {
        let compute = Compute::new(1, 1, 1).expect("a pool");
        assert_eq!(
            compute.run(None, 1, |_| -> u8 { panic!("boom") }).await,
            Err(Refused::Panicked)
        );
        assert_eq!(compute.run(None, 1, |_| 1).await, Ok(1));
    }

    #[tokio::test]
    async fn one_client_holds_at_most_its_share_and_others_keep_their_room() {
        let compute = Arc::new(Compute::new(2, 10, 5).expect("a pool"));
        let greedy = Client::Key("greedy".to_owned());
        let other = Client::Key("other".to_owned());
        let (release, hold) = tokio::sync::oneshot::channel::<()>();
        let hold = std::sync::Mutex::new(Some(hold));
        let busy = {
            let (compute, greedy) = (Arc::clone(&compute), greedy.clone());
            tokio::spawn(async move {
                compute
                    .run(Some(&greedy), 4, move |_| {
                        let hold = hold.lock().expect("not poisoned").take();
                        if let Some(hold) = hold {
                            let _ = hold.blocking_recv();
                        }
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            compute.run(Some(&greedy), 2, |_| ()).await,
            Err(Refused::OverShare),
            "4 + 2 is more than a share of 5"
        );
        assert_eq!(compute.run(Some(&greedy), 1, |_| 1).await, Ok(1));
        assert_eq!(compute.run(Some(&other), 5, |_| 2).await, Ok(2));
        assert_eq!(
            compute.run(Some(&other), 6, |_| 4).await,
            Ok(4),
            "a cost beyond the share counts as the whole share (and 6 of the budget)"
        );
        let _ = release.send(());
        assert_eq!(busy.await.expect("joined"), Ok(()));
        assert_eq!(
            compute.run(Some(&greedy), 5, |_| 3).await,
            Ok(3),
            "a finished computation gives its share back"
        );
    }
}
