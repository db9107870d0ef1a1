//! Logging: `tracing` events as text lines on stderr, filtered by `RUST_LOG` (default `info`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The filter used when `RUST_LOG` is not set.
const DEFAULT_FILTER: &str = "info";

/// Installs the global subscriber; a second call does nothing.
pub fn init() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Err only when a subscriber is already installed, which is fine.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
