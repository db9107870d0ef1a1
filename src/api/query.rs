//! Reading query strings so that a bad parameter is a 400 with the shared body naming it.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::Error;

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
