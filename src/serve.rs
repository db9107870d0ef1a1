//! The accept loop: each connection is served by hyper with a deadline on request heads, so
//! that a connection sending nothing, or a head a byte at a time, or lying idle between
//! requests, is closed after [`HEAD_TIMEOUT`]. Without it (axum's `serve` sets no timer, so
//! hyper's own timeout never runs) any client could hold connections, each a file
//! descriptor, until the process had none left for its database or for other clients.
//!
//! For the same reason the loop bounds the connections open at once ([`Connections`]): in
//! all, below the files the process may open, so that its database always has descriptors
//! left; and per client address, so that one address cannot take them all. When all are open,
//! the connection that has been open longest without sending a request makes room for the
//! next (once it has been silent for [`SILENT_EVICTABLE`]): a flood of connections that send
//! nothing, from however many addresses, leaves room for clients that do send requests.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::extract::Request;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::ServerSettings;
use crate::instruments;
use crate::rate_limit::{Client, Shares};

/// Longest a connection may take to send a request's head, counted from when it opened or
/// from the end of its last answer: idle keep-alive connections are closed after it too.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the loop pauses when accepting fails (no file descriptor left, say), rather
/// than spinning on the error.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// How long a connection must have been open without sending a request before it may be
/// closed to make room for a new one when all are open: a client that means to ask sends its
/// request right after connecting, in far less.
pub const SILENT_EVICTABLE: Duration = Duration::from_secs(1);

/// Files the process keeps for everything but its clients' connections: its database
/// connections (up to 10 and `database.read_connections`, three files each on SQLite), the
/// listener, the runtime's own, the log.
const FILES_KEPT: u64 = 256;

/// The connections served at once: at most `allowed` in all (beyond, the next one accepted
/// waits until one closes, or until the oldest of those that never sent a request is closed,
/// and the others wait in the listener's backlog meanwhile) and `per_client` from one client address, an IPv6 one by
/// its /64 (beyond, a new one is closed at once, before anything is read from it).
#[derive(Debug)]
pub struct Connections {
    allowed: usize,
    per_client: usize,
    open: Arc<Semaphore>,
    shares: Arc<Shares>,
    /// The connections open in the order they were accepted, those that sent a request or
    /// ended among them until a look for one to close passes them over.
    opened: Mutex<VecDeque<Weak<Opened>>>,
}

/// One connection as the loop sees it.
#[derive(Debug)]
struct Opened {
    at: Instant,
    /// Set when its first request arrives: from then on it is never closed to make room.
    asked: AtomicBool,
    close: CancellationToken,
}

impl Opened {
    /// Still open, and silent since it was accepted.
    fn silent(&self) -> bool {
        !self.asked.load(Ordering::Relaxed) && !self.close.is_cancelled()
    }
}

impl Connections {
    /// `server.max_connections`, lowered to what the process may open besides [`FILES_KEPT`]
    /// (its soft limit on open files, raised to the hard one first), and of those
    /// `server.max_connections_per_address` from one address.
    #[must_use]
    pub fn new(server: &ServerSettings) -> Self {
        let wanted = server.max_connections;
        let files = rlimit::increase_nofile_limit(u64::MAX).unwrap_or_else(|error| {
            tracing::warn!(%error, "the limit on open files could not be read");
            u64::MAX
        });
        let allowed = allowed_with(wanted, files);
        if allowed < wanted {
            tracing::warn!(
                wanted,
                allowed,
                files,
                "server.max_connections lowered to what the limit on open files leaves"
            );
        }
        let per_client = server.max_connections_per_address.min(allowed);
        Self {
            allowed,
            per_client,
            open: Arc::new(Semaphore::new(allowed)),
            shares: Arc::new(Shares::new(per_client)),
            opened: Mutex::new(VecDeque::new()),
        }
    }

    /// Room for one more connection: a free place, or, when all are taken, the place of the
    /// connection that has been silent longest once it has been so for [`SILENT_EVICTABLE`]
    /// (closed here; its place comes back as its task ends). `None` once `stop` resolves.
    async fn room(
        &self,
        stop: &mut (impl Future<Output = ()> + Unpin),
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        loop {
            if let Ok(permit) = Arc::clone(&self.open).try_acquire_owned() {
                return Some(permit);
            }
            // Once one is closed, its place is waited for: looking again before its task ends
            // would close another.
            let evictable_at = match self.oldest_silent() {
                Some(oldest) if oldest.at.elapsed() >= SILENT_EVICTABLE => {
                    oldest.close.cancel();
                    instruments::connection_evicted();
                    None
                }
                oldest => oldest.map(|oldest| oldest.at + SILENT_EVICTABLE),
            };
            tokio::select! {
                permit = Arc::clone(&self.open).acquire_owned() => {
                    return Some(permit.expect("the semaphore is never closed"));
                }
                () = sleep_until(evictable_at) => {}
                () = &mut *stop => return None,
            }
        }
    }

    /// The connection open longest of those that never sent a request; those found to have
    /// sent one or ended on the way are forgotten.
    fn oldest_silent(&self) -> Option<Arc<Opened>> {
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(front) = opened.front() {
            match front.upgrade() {
                Some(oldest) if oldest.silent() => return Some(oldest),
                _ => {
                    opened.pop_front();
                }
            }
        }
        None
    }

    /// Notes a connection just accepted. Those that sent a request or ended are dropped from
    /// the list whenever it holds twice as many as may be open, so that it stays bounded when
    /// no look for one to close ever runs.
    fn accepted(&self) -> Arc<Opened> {
        let connection = Arc::new(Opened {
            at: Instant::now(),
            asked: AtomicBool::new(false),
            close: CancellationToken::new(),
        });
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        if opened.len() >= self.allowed.saturating_mul(2) {
            opened.retain(|connection| connection.upgrade().is_some_and(|c| c.silent()));
        }
        opened.push_back(Arc::downgrade(&connection));
        connection
    }

    /// Connections that may be open at once, in all.
    #[must_use]
    pub fn allowed(&self) -> usize {
        self.allowed
    }

    /// Connections that may be open at once from one client address.
    #[must_use]
    pub fn per_client(&self) -> usize {
        self.per_client
    }

    /// Connections open now.
    #[must_use]
    pub fn open(&self) -> usize {
        self.allowed - self.open.available_permits()
    }
}

/// Resolves at `at`, or never.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// `wanted` connections, or fewer if `files` (the process's limit on open files) would not
/// leave [`FILES_KEPT`] besides them; at least one.
fn allowed_with(wanted: usize, files: u64) -> usize {
    let room = usize::try_from(files.saturating_sub(FILES_KEPT)).unwrap_or(usize::MAX);
    wanted.min(room).max(1)
}

/// Serves `app` on `listener` until `stop` resolves, then waits for the connections'
/// requests under way to be answered. Handlers see the peer's address as
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    connections: Arc<Connections>,
    stop: impl Future<Output = ()>,
) {
    // HTTP/1.1 only: telling HTTP/2 from 1.1 reads the first bytes with no deadline, so a
    // connection that sends nothing would wait forever before the head's deadline started.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT);
    let graceful = GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Some(share) = connections.shares.take(&Client::address(peer.ip()), 1) else {
            instruments::connection_refused();
            tracing::debug!(%peer, "connection closed: its address holds all it may");
            continue;
        };
        // Room is made only for a connection that is there: made ahead, it would close a
        // silent one for nobody.
        let Some(permit) = connections.room(&mut stop).await else {
            break;
        };
        let opened = connections.accepted();
        let asking = Arc::clone(&opened);
        let service =
            app.clone()
                .map_request(move |mut request: Request<hyper::body::Incoming>| {
                    asking.asked.store(true, Ordering::Relaxed);
                    request
                        .extensions_mut()
                        .insert(ConnectInfo::<SocketAddr>(peer));
                    request
                });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            tokio::select! {
                ended = connection => {
                    if let Err(error) = ended {
                        tracing::debug!(%peer, %error, "connection ended");
                    }
                }
                () = opened.close.cancelled() => {
                    tracing::debug!(%peer, "connection closed to make room: it sent nothing");
                }
            }
            drop((permit, share));
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connections_allowed_leave_files_for_the_rest() {
        assert_eq!(allowed_with(4096, 1_048_576), 4096);
        assert_eq!(allowed_with(4096, u64::MAX), 4096);
        assert_eq!(allowed_with(4096, 1024), 1024 - 256);
        assert_eq!(allowed_with(4096, 100), 1);
    }
}
