//! The accept loop: each connection is served by hyper with a deadline on request heads, so
//! that a connection sending nothing, or a head a byte at a time, or lying idle between
//! requests, is closed after [`HEAD_TIMEOUT`]. Without it (axum's `serve` sets no timer, so
//! hyper's own timeout never runs) any client could hold connections, each a file
//! descriptor, until the process had none left for its database or for other clients.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::extract::Request;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt;

/// Longest a connection may take to send a request's head, counted from when it opened or
/// from the end of its last answer: idle keep-alive connections are closed after it too.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the loop pauses when accepting fails (no file descriptor left, say), rather
/// than spinning on the error.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Serves `app` on `listener` until `stop` resolves, then waits for the connections'
/// requests under way to be answered. Handlers see the peer's address as
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(listener: TcpListener, app: Router, stop: impl Future<Output = ()>) {
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
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
