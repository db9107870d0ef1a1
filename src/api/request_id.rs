//! The id that every answer carries in `x-request-id` and every log line of its request
//! carries as `request.id`. A service-made id is this process's random prefix and a counter:
//! unique across processes (a 64-bit random prefix each) and within one. A random UUID per
//! request costs a `getrandom` system call, which took about a tenth off the player-lookup
//! rate (`cargo bench --bench service`, BENCHMARKS.md). A client may send its own id; a
//! malformed one is replaced.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header::HeaderName, HeaderValue};
use tower_http::request_id::{MakeRequestId, RequestId};

/// The header that identifies a request in its answer and in every log line it caused.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Longest request id taken from a client.
const MAX_CLIENT_ID_LEN: usize = 64;

/// Makes `{prefix}-{n}` ids: 16 hex digits drawn once, then 0, 1, 2, … Clones share the counter.
#[derive(Debug, Clone)]
pub struct RequestIds {
    prefix: Arc<str>,
    next: Arc<AtomicU64>,
}

impl RequestIds {
    /// A new prefix, from the operating system's randomness (std seeds each `RandomState`
    /// from it), and a counter at 0.
    #[must_use]
    pub fn new() -> Self {
        let random = RandomState::new().build_hasher().finish();
        Self {
            prefix: Arc::from(format!("{random:016x}")),
            next: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Default for RequestIds {
    fn default() -> Self {
        Self::new()
    }
}

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&format!("{}-{n}", self.prefix))
            .ok()
            .map(RequestId::new)
    }
}

/// Removes a client's `x-request-id` unless it is short and plain (letters, digits, `-_.:`),
/// so that what lands in the logs is never the client's free text; a fresh id replaces it.
pub fn drop_malformed(mut request: Request) -> Request {
    let plain = request.headers().get(&REQUEST_ID).is_some_and(|id| {
        id.len() <= MAX_CLIENT_ID_LEN
            && id
                .as_bytes()
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
    });
    if !plain {
        request.headers_mut().remove(&REQUEST_ID);
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_within_a_process_and_carry_its_prefix() {
        let mut ids = RequestIds::new();
        let request = axum::http::Request::new(());
        let made: Vec<String> = (0..3)
            .map(|_| {
                let id = ids.make_request_id(&request).expect("an id");
                id.header_value().to_str().expect("ascii").to_owned()
            })
            .collect();
        assert_eq!(made[0], format!("{}-0", ids.prefix));
        assert_eq!(made[2], format!("{}-2", ids.prefix));
        assert_eq!(ids.prefix.len(), 16);
        assert_ne!(
            RequestIds::new().prefix,
            ids.prefix,
            "each process (each app) draws its own prefix"
        );
    }
}
