//! Reading JSON request bodies so that every failure is an [`Error`] with the shared body: a
//! wrong content type is 415, bytes that are not JSON are 400, and JSON of the wrong shape is
//! 422 naming the field by its path (`entrants[1].players`).

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request};
use axum::http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use serde::de::DeserializeOwned;

use super::error::Error;
use crate::compute::MAX_ENTRANTS;
use crate::rate_limit::Client;
use crate::state::AppState;

/// The largest body a compute route (predictions, match quality, matchmaking) takes: its
/// largest valid request, 10,000 player ids of up to 256 bytes each, fits with room to spare.
/// Under the service-wide `server.body_limit_bytes` (32 MiB by default), a body of small
/// arrays costs seconds to parse and gigabytes of memory before any bound on its content is
/// checked.
pub const COMPUTE_BODY_LIMIT: usize = 4 << 20;

/// [`COMPUTE_BODY_LIMIT`] as a layer for a compute route's router (the service-wide limit,
/// when lower, still applies).
pub fn compute_body_limit() -> DefaultBodyLimit {
    DefaultBodyLimit::max(COMPUTE_BODY_LIMIT)
}

/// A request body read as JSON into `T`.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = Error;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Error> {
        let bytes = json_bytes(request, state).await?;
        parse(&bytes).map(Self)
    }
}

/// A compute route's body read as JSON into `T` on the compute pool ([`crate::compute`]),
/// within its budget (503 `overloaded` beyond): a body of [`COMPUTE_BODY_LIMIT`] costs as
/// much as one computation of [`MAX_ENTRANTS`] entrants, so bodies parsed at once cannot take
/// the async runtime's threads from every other request. It counts in the share of the client
/// that the route's [`super::auth::Authorized`] (an extractor of the request's head, so run
/// before this one) found: every route taking one must take an `Authorized` too, or its bodies
/// count in no client's share.
#[derive(Debug)]
pub struct ComputeJson<T>(pub T);

impl<T: DeserializeOwned + Send + 'static> FromRequest<AppState> for ComputeJson<T> {
    type Rejection = Error;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Error> {
        // Refused on its declared length before any of it is read; the limit layer alone
        // would read it up to the limit first.
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok()?.parse::<usize>().ok());
        if declared.is_some_and(|length| length > COMPUTE_BODY_LIMIT) {
            return Err(Error::PayloadTooLarge(COMPUTE_BODY_LIMIT));
        }
        let client = request.extensions().get::<Client>().cloned();
        // The route's own limit ([`compute_body_limit`]) is what a body read too large crossed,
        // unless the service's is lower.
        let bytes = json_bytes(request, state)
            .await
            .map_err(|error| match error {
                Error::PayloadTooLarge(limit) => {
                    Error::PayloadTooLarge(limit.min(COMPUTE_BODY_LIMIT))
                }
                other => other,
            })?;
        let cost = bytes.len() * MAX_ENTRANTS / COMPUTE_BODY_LIMIT;
        state
            .limits
            .compute
            .run(client.as_ref(), cost, move |_| parse(&bytes))
            .await?
            .map(Self)
    }
}

/// The raw bytes of a JSON body, after the content-type and size checks.
pub async fn json_bytes(request: Request, state: &AppState) -> Result<Bytes, Error> {
    let is_json = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json" || mime.ends_with("+json")
        });
    if !is_json {
        return Err(Error::UnsupportedMediaType);
    }
    // The body is read as sent: a compressed one would read as malformed JSON, and one merely
    // labelled compressed would be taken as it is.
    if let Some(encoding) = request
        .headers()
        .get(CONTENT_ENCODING)
        .filter(|value| !value.as_bytes().eq_ignore_ascii_case(b"identity"))
    {
        return Err(Error::UnsupportedEncoding(
            String::from_utf8_lossy(encoding.as_bytes()).into_owned(),
        ));
    }
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                Error::PayloadTooLarge(state.settings.server.body_limit_bytes)
            } else {
                Error::MalformedJson(rejection.body_text())
            }
        })
}

/// Parses `bytes` as `T`: syntax errors are 400, shape errors 422 with the field's path. The
/// syntax is checked first, on the whole body: read straight into `T`, serde_json reports some
/// shape errors (an enum given as a number) as syntax errors, and a shape error before the end
/// of a truncated body would hide that it is truncated.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|error| Error::MalformedJson(error.to_string()))?;
    // Every body the API takes is an object. serde also reads a struct from an array of its
    // fields in order, which would accept `["gaussian", 200, …]` as a pool's parameters.
    if !value.is_object() {
        return Err(Error::invalid(
            "invalid_request",
            "",
            "the body must be a JSON object",
        ));
    }
    from_object(value)
}

/// Reads `value`, a JSON object, as `T`: 422 `invalid_request` naming the field's path.
pub fn from_object<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let message = strip_position(error.inner());
        let mut field = if path == "." { String::new() } else { path };
        // A missing field is reported at the object that lacks it; name the field itself.
        if let Some(missing) = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            if !field.is_empty() {
                field.push('.');
            }
            field.push_str(missing);
        }
        Error::invalid("invalid_request", field, message)
    })
}

/// serde_json's message without its " at line L column C" suffix, which is noise for a field
/// already named by path.
fn strip_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "only the parse outcome is inspected")]
    struct Shape {
        sides: Vec<Vec<String>>,
    }

    #[test]
    fn syntax_errors_are_400_and_shape_errors_422_with_the_path() {
        assert!(matches!(parse::<Shape>(b"{"), Err(Error::MalformedJson(_))));
        assert!(matches!(
            parse::<Shape>(br#"{"sides": []} x"#),
            Err(Error::MalformedJson(_))
        ));
        match parse::<Shape>(br#"{"sides": [["a"], [3]]}"#) {
            Err(Error::Invalid { field, .. }) => assert_eq!(field, "sides[1][0]"),
            other => panic!("expected a 422, got {other:?}"),
        }
        match parse::<Shape>(br#"{"sides": [], "x": 1}"#) {
            Err(Error::Invalid { message, .. }) => assert!(message.contains("unknown field")),
            other => panic!("expected a 422, got {other:?}"),
        }
        match parse::<Shape>(b"{}") {
            Err(Error::Invalid { field, .. }) => assert_eq!(field, "sides"),
            other => panic!("expected a 422 naming the missing field, got {other:?}"),
        }
        assert!(
            matches!(
                parse::<Shape>(br#"{"x": 1, "sides": ["#),
                Err(Error::MalformedJson(_))
            ),
            "a truncated body is malformed, whatever it holds before the cut"
        );
        match parse::<Shape>(br#"[[["a"], ["b"]]]"#) {
            Err(Error::Invalid { field, .. }) => assert_eq!(field, ""),
            other => panic!("expected a 422 for an array of the fields, got {other:?}"),
        }
        assert!(parse::<Shape>(br#"{"sides": [["a"]]}"#).is_ok());
    }
}
