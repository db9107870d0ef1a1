//! What the routes that queue a line (a round, a batch, a season start, a correction) share:
//! a round checked ready to queue, what the queue answered, and the line's URL and status.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Serialize;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::ToSchema;

use super::error::Error;
use crate::state::Systems;
use crate::storage::{Enqueued, RoundStatus};
use crate::wire::{FieldError, RoundRequest};

/// A round's place in its life.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoundStatusResponse {
    /// The round's id.
    pub id: String,
    /// `queued`, `applied`, `failed`, or `voided` (by a correction).
    #[schema(schema_with = status_schema)]
    pub status: &'static str,
    /// 1 for the next round the worker applies; present on a 202.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
    /// Why the round failed; present when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A line's status in the OpenAPI document: one of [`RoundStatus::ALL`].
pub(super) fn status_schema() -> Schema {
    one_of_strings(RoundStatus::ALL.map(RoundStatus::as_str), "queued")
}

/// A string that is one of `values`, shown with `example`.
pub(super) fn one_of_strings(
    values: impl IntoIterator<Item = &'static str>,
    example: &str,
) -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(values))
            .examples([example])
            .build(),
    )
}

/// What the queue answered a line posted to it (a round, a season start, a correction), as
/// the routes that post one say it: 202 with its place, 200 with the status of the line stored
/// before, 409 for other content under its id, 503 for a full queue.
pub(super) struct Queued {
    /// 202 or 200.
    pub status: StatusCode,
    /// The line's status now.
    pub stored: RoundStatus,
    /// Its place in the queue, when it was accepted now.
    pub position: Option<u64>,
}

impl Queued {
    /// `outcome` of queueing line `id`.
    pub(super) fn of(outcome: Enqueued, id: &str) -> Result<Self, Error> {
        match outcome {
            Enqueued::Accepted { position } => Ok(Self {
                status: StatusCode::ACCEPTED,
                stored: RoundStatus::Queued,
                position: Some(position),
            }),
            Enqueued::AlreadyStored { status } => Ok(Self {
                status: StatusCode::OK,
                stored: status,
                position: None,
            }),
            Enqueued::Conflict => Err(Error::RoundConflict {
                id: id.to_owned(),
                field: "id".to_owned(),
            }),
            Enqueued::QueueFull { .. } => Err(Error::QueueFull),
            // The pool changed under each of the route's tries (see [`CHECK_TRIES`]): the
            // client tries again.
            Enqueued::Changed => Err(Error::Unavailable),
        }
    }
}

/// How often a route checks a round against the pool's systems and tries to queue it, when the
/// queue finds the pool changed since each check: a pool's parameters change seldom, so a
/// second try nearly always stores it.
pub(super) const CHECK_TRIES: u32 = 3;

/// What a path segment encodes: everything but RFC 3986's unreserved characters, which
/// stay as they are (`cup-7`, not `cup%2D7`).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The URL of line `id` of pool `pool`. The ids `.` and `..` are encoded whole: as they are,
/// clients would read them as the path's own dot segments and go to another URL.
pub(super) fn round_url(pool: &str, id: &str) -> String {
    let set = if matches!(id, "." | "..") {
        NON_ALPHANUMERIC
    } else {
        SEGMENT
    };
    format!("/v1/pools/{pool}/rounds/{}", utf8_percent_encode(id, set))
}

/// Headers holding `Location: url`.
pub(super) fn located(url: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(url) {
        headers.insert(header::LOCATION, value);
    }
    headers
}

/// A round that passed validation, ready to queue.
pub(super) struct Checked {
    /// Its id.
    pub id: String,
    /// Its canonical JSON, as stored.
    pub body: String,
    /// What a re-post of it is compared by ([`RoundRequest::comparison_key`]).
    pub key: String,
}

/// A round already parsed, checked completely (for each of the pool's rating `systems` too)
/// and made ready to queue: its id, its canonical JSON (what is stored) and what a re-post is
/// compared by. Its fields sit under `path` (a JSON path such as `rounds[3]`, empty for the
/// body itself), which an error's field starts with.
pub(super) fn checked(
    value: &serde_json::Value,
    systems: &Systems,
    path: &str,
) -> Result<Checked, Error> {
    let invalid = |e: FieldError| {
        let field = match (path.is_empty(), e.field.is_empty()) {
            (true, _) => e.field,
            (false, true) => path.to_owned(),
            (false, false) => format!("{path}.{}", e.field),
        };
        Error::invalid("invalid_round", field, e.reason)
    };
    let request = RoundRequest::from_value(value).map_err(invalid)?;
    let round = request.checked_round().map_err(invalid)?;
    for system in systems.all() {
        system.check_round(&round).map_err(|e| invalid(e.into()))?;
    }
    crate::wire::not_ahead(&round).map_err(invalid)?;
    let serialized = |json: serde_json::Result<String>| {
        json.map_err(|e| {
            tracing::error!(error = %e, "round serialization failed");
            Error::Internal
        })
    };
    let body = serialized(serde_json::to_string(&request))?;
    let key = serialized(request.comparison_key())?;
    Ok(Checked {
        id: request.id,
        body,
        key,
    })
}
