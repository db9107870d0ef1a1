//! The budget of request bodies read and parsed at once. Checking a round means parsing it
//! whole, which takes about 19 times its size (a 30 MiB round, about 570 MB): without a bound,
//! a few clients posting the largest bodies at once could take every byte of memory, even with
//! bodies that are refused in the end. Each request with a body holds its declared length
//! (`Content-Length`; the body limit when it sends none) of `server.body_bytes_in_flight` until
//! it is answered; a body that does not fit is answered 503 `overloaded` and dropped as it
//! arrives, unparsed. Requests without a body pass freely.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use tokio::sync::Semaphore;

use super::error::Error;
use crate::config::ServerSettings;
use crate::state::AppState;

/// The unit the budget counts in: a body holds its length in these, rounded up.
const UNIT: usize = 1024;

/// The bytes of the bodies being read and parsed, out of `server.body_bytes_in_flight`.
#[derive(Debug)]
pub struct Bodies {
    units: Arc<Semaphore>,
    budget: u32,
    body_limit: usize,
}

impl Bodies {
    /// The budget `server` sets.
    #[must_use]
    pub fn new(server: &ServerSettings) -> Self {
        let budget = u32::try_from(server.body_bytes_in_flight.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .min(Semaphore::MAX_PERMITS as u32);
        Self {
            units: Arc::new(Semaphore::new(budget as usize)),
            budget,
            body_limit: server.body_limit_bytes,
        }
    }
}

/// Admits a request whose body fits what is left of the budget, holding its part until it is
/// answered; answers 503 `overloaded` for one that does not.
pub async fn admit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let bodies = &state.bodies;
    let headers = request.headers();
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<usize>().ok());
    let length = match declared {
        Some(length) => length,
        None if headers.contains_key(TRANSFER_ENCODING) => bodies.body_limit,
        None => 0,
    };
    if length == 0 {
        return next.run(request).await;
    }
    // A body larger than the limit is refused by the limit's layer, before this one; one larger
    // than the whole budget (set below the limit) waits for all of it.
    let units = u32::try_from(length.min(bodies.body_limit).div_ceil(UNIT))
        .unwrap_or(u32::MAX)
        .min(bodies.budget)
        .max(1);
    let Ok(held) = Arc::clone(&bodies.units).try_acquire_many_owned(units) else {
        tracing::debug!(length, "a body beyond what is left of the budget");
        // Its bytes are dropped as they arrive: a client still sending would otherwise have
        // the connection reset under it, and with it the answer.
        let mut body = request.into_body();
        while let Some(Ok(_)) = body.frame().await {}
        return Error::Overloaded.into_response();
    };
    let response = next.run(request).await;
    drop(held);
    response
}
