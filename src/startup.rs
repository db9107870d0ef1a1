//! Building and running the service: connect to the database (running its migrations), load
//! every pool into memory, create the pools the configuration declares, start one worker per
//! pool, bind the listener; then serve until SIGINT or SIGTERM, drain in-flight requests, let
//! every worker finish the round it is applying, and close the database.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::api;
use crate::audit::Actor;
use crate::config::Settings;
use crate::ownership;
use crate::state::AppState;
use crate::storage;

/// A service that is connected, loaded and bound, not yet serving.
pub struct Application {
    listener: TcpListener,
    state: AppState,
}

impl Application {
    /// Connects, migrates, loads, starts the workers and binds (port 0 picks a free port).
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let storage = storage::connect(&settings.database.url)
            .await
            .context("opening the database")?;
        let declared = settings.pools.clone();
        let addr = settings.server.addr;
        let state = AppState::new(storage, settings).context("starting the compute pool")?;
        if let Some(replicas) = state
            .join_replicas()
            .await
            .context("joining the replicas")?
        {
            ownership::start(&state, &replicas);
        }
        state
            .load_pools(true)
            .await
            .context("loading the pools and keys")?;
        if let Some(key) = state
            .bootstrap_key()
            .await
            .context("creating the first key")?
        {
            print_first_key(&key, addr);
        }
        state.start_key_refresh();
        for (name, overrides) in &declared {
            if state.pools.get(name).is_none() {
                state
                    .put_pool(name, overrides, &Actor::service("config"))
                    .await
                    .with_context(|| format!("creating pool `{name}`"))?;
                tracing::info!(pool = %name, "pool created from the configuration");
            }
        }
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        Ok(Self { listener, state })
    }

    /// The address the service listens on.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until SIGINT or SIGTERM, then shuts down in order.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        self.run_until(stop_signal()).await
    }

    /// Serves until `stop` resolves, then drains requests, lets every worker finish its
    /// round and closes the database.
    pub async fn run_until(
        self,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let addr = self.local_addr()?;
        tracing::info!(%addr, "serving");
        let app = api::app(self.state.clone());
        let state = self.state.clone();
        let stop = async move {
            stop.await;
            state.close_streams();
        };
        let connections = Arc::clone(&self.state.limits.connections);
        tracing::info!(
            allowed = connections.allowed(),
            per_client = connections.per_client(),
            "connections served at once"
        );
        crate::serve::serve(self.listener, app, connections, stop).await;
        tracing::info!("requests drained; stopping the workers");
        self.state.stop_workers().await;
        self.state.reads.close().await;
        self.state.storage.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// Shows the first start's admin key, once, on stderr (never in the log).
fn print_first_key(key: &str, addr: SocketAddr) {
    eprintln!("{}", first_key_banner(key, addr));
}

/// What the first start says: its key, a request to try it with, and where the dashboard and
/// the API reference are.
fn first_key_banner(key: &str, addr: SocketAddr) -> String {
    let url = if addr.ip().is_unspecified() {
        format!("http://127.0.0.1:{}", addr.port())
    } else {
        format!("http://{addr}")
    };
    format!(
        "\nNo key is configured, so this first start created an admin key (named `admin`). It is \
         shown only now; the database keeps only its hash. Create more, or revoke it, at /v1/keys.\n\n    \
         {key}\n\nTry it:\n\n    curl -X PUT {url}/v1/pools/main -H 'Authorization: Bearer {key}' \
         -H 'Content-Type: application/json' -d '{{}}'\n\nThe dashboard is at {url}/ and the API \
         reference at {url}/docs.\n"
    )
}

/// Resolves on SIGINT or SIGTERM.
async fn stop_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received"),
        () = terminate => tracing::info!("SIGTERM received"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_start_names_its_key_the_dashboard_and_the_api_reference() {
        let addr: SocketAddr = "0.0.0.0:8080".parse().expect("an address");
        let banner = first_key_banner("mmr_k", addr);
        assert!(banner.contains("\n    mmr_k\n"), "{banner}");
        assert!(
            banner.contains("dashboard is at http://127.0.0.1:8080/ and the API reference at http://127.0.0.1:8080/docs"),
            "{banner}"
        );
    }
}
