//! The accept loop: each connection is served by hyper with a deadline on request heads, so
//! that a connection sending nothing, or a head a byte at a time, or lying idle between
//! requests, is closed after [`HEAD_TIMEOUT`]. Without it (axum's `serve` sets no timer, so
//! hyper's own timeout never runs) any client could hold connections, each a file
//! descriptor, until the process had none left for its database or for other clients.
//!
//! Writes have a deadline too ([`WRITE_TIMEOUT`]): a client that stops reading an answer is
//! closed and its answer freed, rather than kept in memory for as long as it likes.
//!
//! For the same reason the loop bounds the connections open at once ([`Connections`]): in
//! all, below the files the process may open, so that its database always has descriptors
//! left; and per client address, so that one address cannot take them all. When all are open,
//! the connection that has been open longest without sending a request head makes room for the
//! next (once it has been silent for [`SILENT_EVICTABLE`]): a flood of connections that send
//! nothing, from however many addresses, leaves room for clients that do send requests.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll};
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
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::ServerSettings;
use crate::instruments;
use crate::rate_limit::{Client, Shares};

/// Longest a connection may take to send a request's head, counted from when it opened or
/// from the end of its last answer: idle keep-alive connections are closed after it too.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest a connection may take, while an answer waits to be sent, to take [`WRITE_PROGRESS`]
/// bytes of it (or the rest of it, when less): a client that stops reading is closed after it,
/// and what it was sent is freed. Without it a client that never reads holds its answer in
/// memory for as long as it likes (hyper sets no deadline on writes, and the head's deadline
/// does not run while an answer is written).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The bytes a client must take within each [`WRITE_TIMEOUT`] while an answer waits: about
/// 26 KB/s, so that reading a few bytes now and then does not hold an answer for ever.
pub const WRITE_PROGRESS: usize = 256 << 10;

/// How long the loop pauses when accepting fails (no file descriptor left, say), rather
/// than spinning on the error.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// How long a connection must have been open without sending a whole request head before it
/// may be closed to make room for a new one when all are open: a client that means to ask
/// sends its request right after connecting, in far less.
pub const SILENT_EVICTABLE: Duration = Duration::from_secs(1);

/// Files the process keeps for everything but its clients' connections and its database's:
/// the listener, the runtime's own, the log, a replica's lease.
const FILES_KEPT: u64 = 64;

/// Files one database connection may hold: a SQLite one has the database, its WAL and its
/// shared-memory index open.
const FILES_PER_DATABASE_CONNECTION: u64 = 3;

/// Connections of the worker and the writes: sqlx's default pool size, which the service keeps.
const WORKER_CONNECTIONS: u64 = 10;

/// A connection that has sent no whole request head yet, and may be closed to make room.
const SILENT: u8 = 0;
/// A connection whose first request arrived: never closed to make room.
const ASKED: u8 = 1;
/// A connection closed to make room.
const EVICTED: u8 = 2;

/// The connections served at once: at most `allowed` in all (beyond, the next one accepted
/// waits until one closes, or until the oldest of those that have sent no request, once it has
/// been open [`SILENT_EVICTABLE`], is closed; others wait in the listener's backlog meanwhile)
/// and `per_client` from one client address, an IPv6 one by its /64 (beyond, a new one is
/// closed at once, before anything is read from it).
#[derive(Debug)]
pub struct Connections {
    allowed: usize,
    per_client: usize,
    open: Arc<Semaphore>,
    shares: Arc<Shares>,
    /// The connections open in the order they were accepted, those that asked or ended among
    /// them until a look for one to close passes them over.
    opened: Mutex<VecDeque<Weak<Opened>>>,
}

/// One connection as the loop sees it.
#[derive(Debug)]
struct Opened {
    at: Instant,
    /// [`SILENT`], [`ASKED`] or [`EVICTED`]: it goes from the first to one of the others once,
    /// so a request that arrives as the loop picks its connection is either served or never
    /// started, not cut off half-way.
    state: AtomicU8,
    close: CancellationToken,
}

impl Opened {
    fn silent(&self) -> bool {
        self.state.load(Ordering::Acquire) == SILENT
    }

    /// A request arrived: whether it may be served. One closed to make room stays closed, and
    /// its request is not started.
    fn ask(&self) -> bool {
        match self
            .state
            .compare_exchange(SILENT, ASKED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(state) => state == ASKED,
        }
    }

    /// Closes it if it is still silent.
    fn evict(&self) -> bool {
        let evicted = self
            .state
            .compare_exchange(SILENT, EVICTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if evicted {
            self.close.cancel();
        }
        evicted
    }
}

/// The process's limit on open files, its soft limit raised to the hard one the first time.
fn open_files_allowed() -> u64 {
    static FILES: OnceLock<u64> = OnceLock::new();
    *FILES.get_or_init(|| {
        rlimit::increase_nofile_limit(u64::MAX).unwrap_or_else(|error| {
            let soft = rlimit::Resource::NOFILE.get().map(|(soft, _)| soft);
            tracing::warn!(%error, ?soft, "the limit on open files could not be raised");
            soft.unwrap_or(u64::MAX)
        })
    })
}

impl Connections {
    /// `server.max_connections`, lowered to what the process may open besides its database
    /// connections' files (the worker's and `read_connections`) and [`FILES_KEPT`] (its soft
    /// limit on open files raised to the hard one first), and of those
    /// `server.max_connections_per_address` from one address.
    #[must_use]
    pub fn new(server: &ServerSettings, read_connections: u32) -> Self {
        let wanted = server.max_connections;
        let files = open_files_allowed();
        let kept = FILES_KEPT
            + FILES_PER_DATABASE_CONNECTION * (WORKER_CONNECTIONS + u64::from(read_connections));
        let allowed = allowed_with(wanted, files, kept);
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
                    if !oldest.evict() {
                        continue;
                    }
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

    /// The connection open longest of those that have sent no request; those found to have
    /// asked or ended on the way are forgotten.
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

    /// Notes a connection just accepted. Those that asked or ended are dropped from
    /// the list whenever it holds twice as many as may be open, so that it stays bounded when
    /// no look for one to close ever runs.
    fn accepted(&self) -> Arc<Opened> {
        let connection = Arc::new(Opened {
            at: Instant::now(),
            state: AtomicU8::new(SILENT),
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

/// A request that arrived on a connection as it was closed to make room: not served.
#[derive(Debug, thiserror::Error)]
#[error("the connection was closed to make room as its first request arrived")]
struct ClosedToMakeRoom;

/// Resolves at `at`, or never.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A connection's stream with [`WRITE_TIMEOUT`] on its writes: once a write has to wait for
/// the client, the client must take [`WRITE_PROGRESS`] bytes, or everything hyper had to send
/// (it flushes then), before the deadline, or the write fails and the connection ends.
struct WriteDeadline<T> {
    inner: T,
    /// When the client must have taken [`WRITE_PROGRESS`] bytes by, once a write waited.
    deadline: Pin<Box<Sleep>>,
    armed: bool,
    /// Bytes taken since the deadline was set.
    taken: usize,
}

impl<T> WriteDeadline<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep(WRITE_TIMEOUT)),
            armed: false,
            taken: 0,
        }
    }

    /// What a write gave: bytes taken count towards the deadline's due; a write that waits sets
    /// the deadline (if not yet set) and fails once it has passed.
    fn watched(
        &mut self,
        cx: &mut Context<'_>,
        written: Poll<std::io::Result<usize>>,
    ) -> Poll<std::io::Result<usize>> {
        match written {
            Poll::Ready(Ok(n)) => {
                if self.armed {
                    self.taken += n;
                    if self.taken >= WRITE_PROGRESS {
                        self.armed = false;
                    }
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending => {
                if !self.armed {
                    self.armed = true;
                    self.taken = 0;
                    self.deadline.as_mut().reset(Instant::now() + WRITE_TIMEOUT);
                }
                match self.deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        instruments::connection_write_timed_out();
                        Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "the client took too little of its answer in time",
                        )))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
            other => other,
        }
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for WriteDeadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for WriteDeadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watched(cx, written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watched(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // hyper flushes once all it had to send was taken: nothing waits any more.
        let flushed = Pin::new(&mut self.inner).poll_flush(cx);
        if flushed.is_ready() {
            self.armed = false;
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// `wanted` connections, or fewer if `files` (the process's limit on open files) would not
/// leave `kept` besides them; at least one.
fn allowed_with(wanted: usize, files: u64, kept: u64) -> usize {
    let room = usize::try_from(files.saturating_sub(kept)).unwrap_or(usize::MAX);
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
        let app = app.clone();
        let service = tower::service_fn(move |mut request: Request<hyper::body::Incoming>| {
            let app = app.clone();
            let served = asking.ask();
            async move {
                // An error rather than an answer: hyper then closes the connection, as the
                // loop is doing, and no handler has run.
                if !served {
                    return Err(ClosedToMakeRoom);
                }
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(peer));
                app.oneshot(request).await.map_err(|never| match never {})
            }
        });
        let connection = builder.serve_connection(
            WriteDeadline::new(TokioIo::new(stream)),
            TowerToHyperService::new(service),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            tokio::select! {
                ended = connection => {
                    if let Err(error) = ended {
                        tracing::debug!(%peer, %error, "connection ended");
                    }
                }
                () = opened.close.cancelled() => {
                    tracing::debug!(%peer, "connection closed to make room: it had not asked");
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
        assert_eq!(allowed_with(4096, 1_048_576, 106), 4096);
        assert_eq!(allowed_with(4096, u64::MAX, 106), 4096);
        assert_eq!(allowed_with(4096, 1024, 106), 1024 - 106);
        assert_eq!(allowed_with(4096, 100, 106), 1);
    }

    fn connections(allowed: usize) -> Connections {
        let mut settings =
            crate::config::Settings::load(None, Vec::new(), &crate::config::Overrides::default())
                .expect("the defaults");
        settings.server.max_connections = allowed;
        Connections::new(&settings.server, 4)
    }

    #[test]
    fn a_connection_that_asked_is_never_closed_to_make_room_nor_asks_once_closed() {
        let connections = connections(4);
        let asked = connections.accepted();
        assert!(asked.ask(), "its first request is served");
        assert!(!asked.evict());
        assert!(!asked.close.is_cancelled());
        assert!(asked.ask(), "and its next ones");
        let evicted = connections.accepted();
        assert!(evicted.evict());
        assert!(
            !evicted.ask(),
            "a request arriving as it closes is not started"
        );
        assert!(!evicted.silent() && evicted.close.is_cancelled());
        assert!(connections.oldest_silent().is_none(), "neither is silent");
    }

    #[test]
    fn the_oldest_silent_connection_is_found_past_those_that_asked_or_ended() {
        let connections = connections(4);
        let asked = connections.accepted();
        drop(connections.accepted());
        let older = connections.accepted();
        let younger = connections.accepted();
        assert!(asked.ask());
        let oldest = connections.oldest_silent().expect("a silent one");
        assert!(Arc::ptr_eq(&oldest, &older));
        assert!(older.evict());
        let oldest = connections.oldest_silent().expect("another silent one");
        assert!(Arc::ptr_eq(&oldest, &younger));
    }

    #[test]
    fn the_list_of_connections_stays_bounded_when_none_is_closed_to_make_room() {
        let connections = connections(4);
        let asking: Vec<_> = (0..100)
            .map(|_| {
                let connection = connections.accepted();
                assert!(connection.ask());
                connection
            })
            .collect();
        let listed = connections
            .opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        assert!(listed <= 8, "{listed} listed for 4 places");
        drop(asking);
    }
}
