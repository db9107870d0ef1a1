//! The accept loop: each connection is served by hyper with a deadline on request heads, so
//! that a connection sending nothing, or a head a byte at a time, or lying idle between
//! requests, is closed after [`HEAD_TIMEOUT`]. Without it (axum's `serve` sets no timer, so
//! hyper's own timeout never runs) any client could hold connections, each a file
//! descriptor, until the process had none left for its database or for other clients.
//!
//! For the same reason the loop bounds the connections open at once ([`Connections`]): in
//! all, below the files the process may open, so that its database always has descriptors
//! left; and per client address, so that one address cannot take them all.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
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

/// Files the process keeps for everything but its clients' connections: its database
/// connections (up to 10 and `database.read_connections`, three files each on SQLite), the
/// listener, the runtime's own, the log.
const FILES_KEPT: u64 = 256;

/// The connections served at once: at most `allowed` in all (beyond, the loop accepts no more
/// until one closes: new ones wait in the listener's backlog) and `per_client` from one client
/// address, an IPv6 one by its /64 (beyond, a new one is closed at once, before anything is
/// read from it).
#[derive(Debug)]
pub struct Connections {
    allowed: usize,
    per_client: usize,
    open: Arc<Semaphore>,
    shares: Arc<Shares>,
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
        }
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
        let permit = tokio::select! {
            permit = Arc::clone(&connections.open).acquire_owned() => {
                permit.expect("the semaphore is never closed")
            }
            () = &mut stop => break,
        };
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
        let service =
            app.clone()
                .map_request(move |mut request: Request<hyper::body::Incoming>| {
                    request
                        .extensions_mut()
                        .insert(ConnectInfo::<SocketAddr>(peer));
                    request
                });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "connection ended");
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
