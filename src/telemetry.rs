//! Logging: `tracing` events as text lines on stderr, filtered by `RUST_LOG` (default `info`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The filter used when `RUST_LOG` is not set, or cannot be read.
const DEFAULT_FILTER: &str = "info";

/// Installs the global subscriber; a second call does nothing.
pub fn init() {
    let (filter, unreadable) = match EnvFilter::try_from_default_env() {
        Ok(filter) => (filter, None),
        Err(error) => {
            // Unset is the usual case; a value that does not parse is a mistake to point out.
            let set = std::env::var_os(EnvFilter::DEFAULT_ENV).is_some();
            (EnvFilter::new(DEFAULT_FILTER), set.then_some(error))
        }
    };
    // Err only when a subscriber is already installed, which is fine.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    if let Some(error) = unreadable {
        tracing::warn!(%error, "RUST_LOG could not be read; logging at `{DEFAULT_FILTER}`");
    }
}
