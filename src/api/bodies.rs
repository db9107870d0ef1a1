//! Request bodies within their budget ([`crate::body_budget`]): each request with a body holds
//! its declared length (`Content-Length`; the body limit when it sends none) of
//! `server.body_bytes_in_flight` until it is answered; a body that does not fit is answered 503
//! `overloaded` and dropped as it arrives, unparsed. Requests without a body pass freely.

use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;

use super::error::Error;
use crate::state::AppState;

/// Admits a request whose body fits what is left of the budget, holding its part until it is
/// answered; answers 503 `overloaded` for one that does not.
pub async fn admit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let length = match headers.get(CONTENT_LENGTH) {
        Some(value) => value.to_str().ok().and_then(|v| v.parse::<usize>().ok()),
        None if headers.contains_key(TRANSFER_ENCODING) => None,
        None => Some(0),
    };
    if length == Some(0) {
        return next.run(request).await;
    }
    let Some(held) = state.limits.bodies.take(length) else {
        tracing::debug!(?length, "a body beyond what is left of the budget");
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
