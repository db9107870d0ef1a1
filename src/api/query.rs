//! Reading query strings so that a bad parameter is a 400 with the shared body naming it.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::Error;

/// Most entries a page may hold.
pub const MAX_LIMIT: u32 = 1000;

/// Checks a page size: 1 to [`MAX_LIMIT`], `default` when absent.
pub(super) fn limit(value: Option<u32>, default: u32) -> Result<u32, Error> {
    match value.unwrap_or(default) {
        limit @ 1..=MAX_LIMIT => Ok(limit),
        _ => Err(Error::query("limit", "must be between 1 and 1000")),
    }
}

/// The query string read into `T`.
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Error> {
        let query = parts.uri.query().unwrap_or_default();
        let deserializer =
            serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(deserializer)
            .map(Self)
            .map_err(|error| {
                let field = error.path().to_string();
                let message = error.into_inner().to_string();
                // A missing or unknown parameter names itself only in the message.
                let field = if field == "." {
                    message.split('`').nth(1).unwrap_or_default().to_owned()
                } else {
                    field
                };
                Error::query(field, message)
            })
    }
}

/// Query parameter `field`, a round seq given as a cursor: 400 naming it when negative, which
/// no seq is.
pub(super) fn seq_param(field: &str, value: Option<i64>) -> Result<Option<i64>, Error> {
    match value {
        Some(seq) if seq < 0 => Err(not_a_seq(field, &seq.to_string())),
        _ => Ok(value),
    }
}

/// The 400 for `value` given as the round seq `field`.
pub(super) fn not_a_seq(field: &str, value: &str) -> Error {
    Error::query(
        field,
        format!("`{value}` is not a round seq (an integer, 0 or more)"),
    )
}
