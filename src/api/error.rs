//! The one error type of the API and its JSON body `{"error": {"code", "message", "field"?}}`.
//! Every status the API answers with is chosen here, in one exhaustive match. A 5xx body
//! reveals nothing: its cause is logged once, inside the request's span, where it arises.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::compute::Refused;
use crate::pools::past::{BuildFailed, PastError};
use crate::storage;

/// Seconds a client is asked to wait before retrying a 503.
pub const RETRY_AFTER_SECS: u64 = 1;

/// Everything a request can fail with.
#[derive(Debug, Clone)]
pub enum Error {
    /// The body is not well-formed JSON (or nests too deeply).
    MalformedJson(String),
    /// A query parameter is missing, of the wrong type or out of range.
    InvalidQuery {
        /// The parameter.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// No key, or a key the service does not know.
    Unauthenticated,
    /// A key whose role does not allow this.
    Forbidden,
    /// A path names a pool, round or player that does not exist (`what` says which).
    NotFound {
        /// What kind of thing.
        what: Resource,
        /// What was asked for.
        id: String,
    },
    /// `around` names a rated player whom the board asked for does not list (a provisional
    /// player with `established=true`, or one of another league): 404 `player_not_found`.
    NotListed(String),
    /// The route exists, but not with this method.
    MethodNotAllowed,
    /// A round with this id was stored before with a different body.
    RoundConflict {
        /// The round's id.
        id: String,
        /// Where the id sits in the request: `id`, or `rounds[3].id` in a batch.
        field: String,
    },
    /// The pool's parameters cannot change: it has rounds.
    ParamsLocked(String),
    /// The pool is being rated again for a correction: it cannot be deleted now.
    Recomputing(String),
    /// A key of this name exists, or the key named is one the configuration holds.
    KeyConflict {
        /// The key's name.
        name: String,
        /// Why the request cannot be done.
        message: String,
    },
    /// The body is larger than the route takes: `[server] body_limit_bytes`, or a compute
    /// route's 4 MiB; the limit in bytes.
    PayloadTooLarge(usize),
    /// The body is not `application/json`.
    UnsupportedMediaType,
    /// The body was sent with this `Content-Encoding`: bodies are read uncompressed.
    UnsupportedEncoding(String),
    /// The body is JSON but says something the service refuses; `field` names the culprit.
    Invalid {
        /// Machine-readable kind: `invalid_round`, `invalid_parameter`, `invalid_request`.
        code: &'static str,
        /// Path of the field, e.g. `standings[2].rank`; empty for the body itself (then the
        /// body has no `field`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The client has spent its request budget (`[rate_limit]`) for now, or holds its share of
    /// something bounded in all (computations, past-board builds, streams).
    RateLimited {
        /// Whole seconds until it may ask again (at least 1).
        retry_after_secs: u64,
    },
    /// The pool's queue is full.
    QueueFull,
    /// As many compute-heavy requests as allowed are running already.
    Overloaded,
    /// The database cannot be reached; the write was not made.
    Unavailable,
    /// The request took longer than `[server] request_timeout_secs`.
    Timeout,
    /// Something failed inside the service; the cause is in the log.
    Internal,
}

/// The JSON body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorResponse {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The inside of an [`ErrorResponse`].
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Machine-readable kind, e.g. `invalid_round`, `pool_not_found`, `queue_full`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// The request field at fault (a JSON path such as `standings[2].rank`, or a query
    /// parameter), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// What a 404 did not find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// A pool.
    Pool,
    /// A round (or a season start or correction, by its id).
    Round,
    /// A player.
    Player,
    /// A key kept in the database.
    Key,
    /// A season, by its number.
    Season,
    /// No route has this path.
    Route,
}

impl Resource {
    /// Its name in messages.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pool => "pool",
            Self::Round => "round",
            Self::Player => "player",
            Self::Key => "key",
            Self::Season => "season",
            Self::Route => "route",
        }
    }

    /// The error code of a 404 about it.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Self::Pool => "pool_not_found",
            Self::Round => "round_not_found",
            Self::Player => "player_not_found",
            Self::Key => "key_not_found",
            Self::Season => "season_not_found",
            Self::Route => "route_not_found",
        }
    }
}

impl Error {
    /// A 422 about field `field` of the body.
    pub fn invalid(
        code: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::Invalid {
            code,
            field: field.into(),
            message: message.into(),
        }
    }

    /// A 400 about query parameter `field`.
    pub fn query(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidQuery {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The error a bare status stands for, when something below the handlers (the router, a
    /// middleware) answered with it and no JSON body; `body_limit` is the service's limit on
    /// bodies, the only one a layer below the handlers enforces.
    #[must_use]
    pub fn from_status(status: StatusCode, body_limit: usize) -> Self {
        match status {
            StatusCode::NOT_FOUND => Self::NotFound {
                what: Resource::Route,
                id: String::new(),
            },
            StatusCode::METHOD_NOT_ALLOWED => Self::MethodNotAllowed,
            StatusCode::PAYLOAD_TOO_LARGE => Self::PayloadTooLarge(body_limit),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMediaType,
            StatusCode::REQUEST_TIMEOUT | StatusCode::SERVICE_UNAVAILABLE => Self::Timeout,
            StatusCode::BAD_REQUEST => Self::query("", "bad request"),
            _ => Self::Internal,
        }
    }

    fn parts(&self) -> (StatusCode, &'static str, String, Option<&str>) {
        match self {
            Self::MalformedJson(why) => (
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("the body is not valid JSON: {why}"),
                None,
            ),
            Self::InvalidQuery { field, message } => (
                StatusCode::BAD_REQUEST,
                "invalid_query",
                message.clone(),
                Some(field.as_str()).filter(|f| !f.is_empty()),
            ),
            Self::Unauthenticated => (
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "a valid key is required: `Authorization: Bearer <key>`".to_owned(),
                None,
            ),
            Self::Forbidden => (
                StatusCode::FORBIDDEN,
                "forbidden",
                "this key's role, or the pools it reaches, do not allow this request".to_owned(),
                None,
            ),
            Self::NotFound { what, id } => (
                StatusCode::NOT_FOUND,
                what.code(),
                if id.is_empty() {
                    format!("no such {}", what.as_str())
                } else {
                    format!("no {} `{id}`", what.as_str())
                },
                None,
            ),
            Self::NotListed(player) => (
                StatusCode::NOT_FOUND,
                "player_not_found",
                format!(
                    "player `{player}` is rated but not on this board: provisional players are \
                     listed with `established=false` (or the pool's `list_provisional`), \
                     `league=` lists one league's, and `active_days=` those who played lately"
                ),
                None,
            ),
            Self::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not take this method".to_owned(),
                None,
            ),
            Self::RoundConflict { id, field } => (
                StatusCode::CONFLICT,
                "round_conflict",
                format!("round `{id}` was already posted with different content"),
                Some(field.as_str()),
            ),
            Self::ParamsLocked(pool) => (
                StatusCode::CONFLICT,
                "params_locked",
                format!(
                    "pool `{pool}` has queued or applied rounds: its parameters cannot change \
                     here; post a `params` correction to rate it again with new ones"
                ),
                None,
            ),
            Self::Recomputing(pool) => (
                StatusCode::CONFLICT,
                "recompute_running",
                format!(
                    "pool `{pool}` is being rated again for a correction \
                     (GET /v1/pools/{pool}/recompute): delete it once that is done"
                ),
                None,
            ),
            Self::KeyConflict { name, message } => (
                StatusCode::CONFLICT,
                "key_conflict",
                format!("key `{name}`: {message}"),
                Some("name"),
            ),
            Self::PayloadTooLarge(limit) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("the body is larger than the {limit} bytes this route takes"),
                None,
            ),
            Self::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "the body must be JSON: `Content-Type: application/json`".to_owned(),
                None,
            ),
            Self::UnsupportedEncoding(encoding) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_encoding",
                format!("`Content-Encoding: {encoding}` is not read: send the body uncompressed"),
                None,
            ),
            Self::Invalid {
                code,
                field,
                message,
            } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                code,
                message.clone(),
                // An error about the body as a whole names no field.
                Some(field.as_str()).filter(|f| !f.is_empty()),
            ),
            Self::RateLimited { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many requests with this key or from this address; retry in {retry_after_secs} s"),
                None,
            ),
            Self::QueueFull => (
                StatusCode::SERVICE_UNAVAILABLE,
                "queue_full",
                "the pool's queue is full; retry later".to_owned(),
                None,
            ),
            Self::Overloaded => (
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
                "too many expensive requests are being computed; retry later".to_owned(),
                None,
            ),
            Self::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "database_unavailable",
                "the database cannot be reached; nothing was changed; retry later".to_owned(),
                None,
            ),
            Self::Timeout => (
                StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                "the request took too long".to_owned(),
                None,
            ),
            Self::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error".to_owned(),
                None,
            ),
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let retry_after = match self {
            Self::RateLimited { retry_after_secs } => Some(retry_after_secs),
            Self::QueueFull | Self::Overloaded | Self::Unavailable | Self::Timeout => {
                Some(RETRY_AFTER_SECS)
            }
            _ => None,
        };
        // RFC 9110 §11.6.1: a 401 names the scheme that would be accepted.
        let challenge = matches!(self, Self::Unauthenticated);
        let (status, code, message, field) = self.parts();
        let body = ErrorResponse {
            error: ErrorDetail {
                code: code.to_owned(),
                message,
                field: field.map(str::to_owned),
            },
        };
        let mut response = (status, Json(body)).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if challenge {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<Refused> for Error {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Overloaded => Self::Overloaded,
            Refused::OverShare => Self::RateLimited {
                retry_after_secs: RETRY_AFTER_SECS,
            },
            // The panic itself was logged where it was caught.
            Refused::Panicked => Self::Internal,
        }
    }
}

impl From<storage::Error> for Error {
    fn from(error: storage::Error) -> Self {
        match error {
            storage::Error::PoolNotFound(pool) => Self::NotFound {
                what: Resource::Pool,
                id: pool,
            },
            storage::Error::ParamsLocked { pool, .. } => Self::ParamsLocked(pool),
            error if error.is_unavailable() => {
                tracing::error!(error = %error, "database unavailable");
                Self::Unavailable
            }
            other => {
                tracing::error!(error = %other, "storage error");
                Self::Internal
            }
        }
    }
}

impl From<Error> for BuildFailed {
    /// What the requests waiting for a build are told of its failure (the cause was logged
    /// where it happened).
    fn from(error: Error) -> Self {
        match error {
            Error::NotFound {
                what: Resource::Pool,
                id,
            } => Self::PoolNotFound(id),
            Error::Unavailable => Self::Unavailable,
            _ => Self::Internal,
        }
    }
}

impl From<PastError<BuildFailed>> for Error {
    fn from(error: PastError<BuildFailed>) -> Self {
        match error {
            PastError::Overloaded => Self::Overloaded,
            // A build takes seconds (a past board 1.5-3.5 s on ctftime): asking again in 1 s
            // would mostly be refused again.
            PastError::OverShare => Self::RateLimited {
                retry_after_secs: 2,
            },
            PastError::Failed(BuildFailed::PoolNotFound(id)) => Self::NotFound {
                what: Resource::Pool,
                id,
            },
            PastError::Failed(BuildFailed::Unavailable) => Self::Unavailable,
            PastError::Failed(BuildFailed::Internal) | PastError::Panicked => Self::Internal,
        }
    }
}
