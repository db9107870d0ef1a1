//! The answers of compute routes (predictions, match quality, matchmaking): JSON that keeps the
//! computation's share of the budget ([`crate::compute::Held`]) until the last of it is handed to
//! the connection, or the connection is dropped. A pairwise prediction for 1,000 entrants is
//! about 20 MB; given back when computing ended, a client that never read its answers could
//! pin that much memory per request without ever being refused. Held, the answers waiting for
//! their clients count against the same budget and share as computations running, and the
//! connection's write deadline ([`crate::serve`]) ends those whose client stops reading.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use serde::Serialize;

use super::error::Error;
use crate::compute::Held;

/// How much of an answer is handed to the connection at a time: the connection asks for the
/// next part only once it has room for it, so the share is kept until the client has read
/// nearly all of it.
const PART: usize = 64 << 10;

/// `value` as a JSON answer that keeps `held` until it is written.
pub struct HeldJson<T>(pub T, pub Held);

impl<T: Serialize> IntoResponse for HeldJson<T> {
    fn into_response(self) -> Response {
        let HeldJson(value, held) = self;
        match serde_json::to_vec(&value) {
            Ok(json) => {
                let mut response = Response::new(Body::new(HeldBody {
                    rest: Bytes::from(json),
                    held: Some(held),
                }));
                response
                    .headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                response
            }
            Err(error) => {
                tracing::error!(%error, "an answer could not be serialized");
                Error::Internal.into_response()
            }
        }
    }
}

/// The bytes of an answer not yet handed out, and what they hold.
struct HeldBody {
    rest: Bytes,
    held: Option<Held>,
}

impl http_body::Body for HeldBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.rest.is_empty() {
            self.held = None;
            return Poll::Ready(None);
        }
        // A copy, not a slice of the answer: a slice would keep the whole answer's memory
        // until the connection had written it, after the share was given back.
        let part = self.rest.len().min(PART);
        let data = Bytes::copy_from_slice(&self.rest[..part]);
        if part == self.rest.len() {
            // The last part is handed out: the answer's memory and its share go back now.
            self.rest = Bytes::new();
            self.held = None;
        } else {
            self.rest = self.rest.slice(part..);
        }
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}
