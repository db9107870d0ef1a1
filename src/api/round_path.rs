//! The round a path names. A round's id may hold `/` (a voided round's correction is
//! `void/cup-7`): `…/rounds/void/cup-7` names it as written, and `…/rounds/void%2Fcup-7`, the
//! form the router alone would need, names it too.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::Deserialize;

use super::error::Error;

/// Where the router serves a round's id with `/` in it: `{id}` is its first segment, `{*rest}`
/// the rest of the path. The documented route, `…/rounds/{id}`, takes the ids without.
pub(super) const SPLIT_ROUND: &str = "/v1/pools/{pool}/rounds/{id}/{*rest}";

/// The pool and round id of a path to one round.
#[derive(Debug)]
pub struct RoundPath {
    /// The pool.
    pub pool: String,
    /// The round's id, its segments joined again.
    pub id: String,
}

#[derive(Deserialize)]
struct Segments {
    pool: String,
    id: String,
    rest: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for RoundPath {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        let Path(Segments { pool, id, rest }) = Path::from_request_parts(parts, state)
            .await
            .map_err(|rejection| {
                Error::invalid(
                    "invalid_path",
                    "id",
                    format!("not a round's path: {rejection}"),
                )
            })?;
        let id = match rest {
            Some(rest) => format!("{id}/{rest}"),
            None => id,
        };
        Ok(Self { pool, id })
    }
}
