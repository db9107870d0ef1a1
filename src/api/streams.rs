//! What the long-lived streams (change feeds and streamed round exports) share: a place among
//! them, held until the stream ends, and writing to a client that may stop reading.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

use super::auth::{Authorized, Read};
use super::error::Error;
use crate::rate_limit::Share;
use crate::state::AppState;

/// A comment line this often keeps proxies from closing an idle feed; a client refused a
/// place is told to try again after as long.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A place among the service's long-lived streams (change feeds and streamed round exports),
/// held until the stream ends: one of [`crate::state::MAX_FEEDS`] in all (503 `overloaded`
/// beyond) and of [`crate::state::MAX_FEEDS_PER_CLIENT`] per client (429 beyond).
pub(super) struct StreamPlace {
    _permit: OwnedSemaphorePermit,
    _share: Option<Share>,
}

/// Takes a [`StreamPlace`] for the client of `auth`.
pub(super) fn stream_place(
    state: &AppState,
    auth: &Authorized<Read>,
) -> Result<StreamPlace, Error> {
    let share = match auth.client() {
        Some(client) => Some(state.limits.feed_shares.take(client, 1).ok_or(
            Error::RateLimited {
                retry_after_secs: KEEP_ALIVE.as_secs(),
            },
        )?),
        None => None,
    };
    let permit = Arc::clone(&state.limits.feeds)
        .try_acquire_owned()
        .map_err(|_| Error::Overloaded)?;
    Ok(StreamPlace {
        _permit: permit,
        _share: share,
    })
}

/// Writes `text` and flushes it to the client; gives up when the service stops, so that a
/// client that reads nothing cannot hold the shutdown open.
pub(super) async fn send(
    writer: &mut DuplexStream,
    text: &str,
    closing: &CancellationToken,
) -> std::io::Result<()> {
    let write = async {
        writer.write_all(text.as_bytes()).await?;
        writer.flush().await
    };
    tokio::select! {
        written = write => written,
        () = closing.cancelled() => Err(std::io::ErrorKind::Interrupted.into()),
    }
}
