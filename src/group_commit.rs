//! Group commit: the lines posted to one pool while its last transaction commits are stored
//! together in the next one. One writer per pool and process takes the requests waiting for
//! it, stores them in one transaction ([`Storage::enqueue_requests`]: each request's lines
//! all or none, its outcome its own) and answers each once that transaction is durable. So a
//! pool's posts pay for one commit each batch rather than each post, and no post waits behind
//! the lock on the queue's tail for longer than the batch in flight. Knows nothing of HTTP.
//!
//! A request is answered only after the commit holding it, so an acknowledged line is stored;
//! one whose client went away meanwhile is stored all the same, and a re-post of it is
//! recognized as such. If a batch's transaction fails, each of its requests is tried again
//! alone, so that the error each client gets is its own (and one request that the database
//! refuses cannot fail the others).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::audit::{Action, Actor};
use crate::engine::SystemParams;
use crate::storage::{
    self, Against, Audited, EnqueueRequest, EnqueuedAll, EntryKind, NewEntry, Storage,
};

/// Most requests stored in one transaction: a batch's requests wait for all of it.
const MOST_REQUESTS: usize = 256;
/// A batch takes a further request only while its lines so far are shorter than this, in
/// bytes: a large post waits for no more than a few small ones, and a transaction holds at
/// most this plus one post (itself bounded by the request body's limit).
const MOST_BYTES: usize = 4 << 20;

/// A writer with no request for this long ends (the next post starts another), so that a
/// pool no longer posted to holds no task.
const IDLE: Duration = Duration::from_secs(60);

/// A line to queue, owned, so that it can wait for the pool's writer.
struct Line {
    id: String,
    kind: EntryKind,
    body: String,
    /// `None` where the line is compared by its body.
    key: Option<String>,
    /// Who queued it as what admin action, for the audit log.
    audit: Option<(Actor, Action)>,
}

impl Line {
    fn entry(&self) -> NewEntry<'_> {
        NewEntry {
            id: &self.id,
            kind: self.kind,
            body: &self.body,
            key: self.key.as_deref().unwrap_or(&self.body),
            audit: self.audit.as_ref().map(|(actor, action)| Audited {
                actor,
                action: *action,
            }),
        }
    }

    fn bytes(&self) -> usize {
        self.id.len() + self.body.len() + self.key.as_ref().map_or(0, String::len)
    }
}

/// One request waiting for its pool's writer.
struct Request {
    lines: Vec<Line>,
    against: Option<(SystemParams, Option<i64>)>,
    answer: oneshot::Sender<Result<EnqueuedAll, storage::Error>>,
}

impl Request {
    fn bytes(&self) -> usize {
        self.lines.iter().map(Line::bytes).sum()
    }
}

/// Each pool's writer, started when the pool's first post arrives.
pub struct GroupCommit {
    storage: Arc<dyn Storage>,
    max_queued: u64,
    writers: Mutex<HashMap<String, mpsc::UnboundedSender<Request>>>,
}

impl GroupCommit {
    /// Writers that store into `storage`, at most `max_queued` rounds waiting per pool.
    #[must_use]
    pub fn new(storage: Arc<dyn Storage>, max_queued: u64) -> Self {
        Self {
            storage,
            max_queued,
            writers: Mutex::new(HashMap::new()),
        }
    }

    /// Stores `entries` at the end of `pool`'s queue, all or none, if the pool is still as they
    /// were checked `against`, in the transaction of the next batch: as
    /// [`Storage::enqueue_entries`], answered once that transaction commits.
    pub async fn enqueue(
        &self,
        pool: &str,
        entries: &[NewEntry<'_>],
        against: Option<Against<'_>>,
    ) -> Result<EnqueuedAll, storage::Error> {
        let (answer, answered) = oneshot::channel();
        let request = Request {
            lines: entries
                .iter()
                .map(|entry| Line {
                    id: entry.id.to_owned(),
                    kind: entry.kind,
                    body: entry.body.to_owned(),
                    key: (entry.key != entry.body).then(|| entry.key.to_owned()),
                    audit: entry.audit.map(|a| (a.actor.clone(), a.action)),
                })
                .collect(),
            against: against.map(|a| (a.params.clone(), a.correction)),
            answer,
        };
        // A writer that has just ended for want of work gives the request back: once to a
        // new one.
        let request = match self.writer(pool).send(request) {
            Ok(()) => None,
            Err(mpsc::error::SendError(request)) => Some(request),
        };
        if let Some(request) = request {
            self.writer(pool).send(request).map_err(|_| closed())?;
        }
        answered.await.map_err(|_| closed())?
    }

    /// `pool`'s writer, started if it has none (or its last one ended).
    fn writer(&self, pool: &str) -> mpsc::UnboundedSender<Request> {
        let mut writers = self
            .writers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(writer) = writers.get(pool).filter(|w| !w.is_closed()) {
            return writer.clone();
        }
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(write(
            Arc::clone(&self.storage),
            pool.to_owned(),
            self.max_queued,
            receiver,
        ));
        writers.insert(pool.to_owned(), sender.clone());
        sender
    }

    /// Ends `pool`'s writer once the requests it holds are answered (the pool was deleted).
    pub fn forget(&self, pool: &str) {
        self.writers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(pool);
    }
}

/// The error a request gets when its writer is gone: the process is stopping, as if its
/// connections were closed (unavailable: 503).
fn closed() -> storage::Error {
    storage::Error::Database(sqlx::Error::PoolClosed)
}

/// A pool's writer: takes every request waiting (up to a batch's bounds), stores them in one
/// transaction, answers them; until every sender is gone or it had no work for [`IDLE`].
async fn write(
    storage: Arc<dyn Storage>,
    pool: String,
    max_queued: u64,
    mut requests: mpsc::UnboundedReceiver<Request>,
) {
    loop {
        let first = match tokio::time::timeout(IDLE, requests.recv()).await {
            Ok(Some(first)) => first,
            Ok(None) => return,
            // Closed, it still hands over what was sent before; then it ends.
            Err(_) => {
                requests.close();
                continue;
            }
        };
        let mut bytes = first.bytes();
        let mut batch = vec![first];
        while batch.len() < MOST_REQUESTS && bytes < MOST_BYTES {
            let Ok(next) = requests.try_recv() else {
                break;
            };
            bytes += next.bytes();
            batch.push(next);
        }
        store(storage.as_ref(), &pool, max_queued, batch).await;
    }
}

/// Stores `batch` in one transaction and answers each request; if that fails, stores each
/// request alone.
async fn store(storage: &dyn Storage, pool: &str, max_queued: u64, batch: Vec<Request>) {
    let outcomes = {
        let entries: Vec<Vec<NewEntry<'_>>> = batch
            .iter()
            .map(|request| request.lines.iter().map(Line::entry).collect())
            .collect();
        let requests: Vec<EnqueueRequest<'_>> = batch
            .iter()
            .zip(&entries)
            .map(|(request, entries)| EnqueueRequest {
                entries,
                against: against(request),
            })
            .collect();
        storage.enqueue_requests(pool, &requests, max_queued).await
    };
    match outcomes {
        Ok(outcomes) => {
            for (request, outcome) in batch.into_iter().zip(outcomes) {
                // A client that went away leaves its answer unread.
                let _ = request.answer.send(Ok(outcome));
            }
        }
        Err(_) if batch.len() > 1 => {
            for request in batch {
                let entries: Vec<NewEntry<'_>> = request.lines.iter().map(Line::entry).collect();
                let outcome = storage
                    .enqueue_entries(pool, &entries, max_queued, against(&request))
                    .await;
                let _ = request.answer.send(outcome);
            }
        }
        Err(error) => {
            if let Some(request) = batch.into_iter().next() {
                let _ = request.answer.send(Err(error));
            }
        }
    }
}

fn against(request: &Request) -> Option<Against<'_>> {
    request
        .against
        .as_ref()
        .map(|(params, correction)| Against {
            params,
            correction: *correction,
        })
}
