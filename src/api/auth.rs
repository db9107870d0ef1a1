//! Who may do what: `Authorization: Bearer <key>` checked against the SHA-256 hashes of the
//! configured keys and of those kept in the database (`/v1/keys`). The presented key is hashed
//! and compared with every known hash in constant time (`subtle::ConstantTimeEq`), so neither
//! a wrong key nor a near miss answers faster. A key never reaches a log: only its name does. An authorized request then draws
//! on its client's budget (`rate_limit`): the key's, or for an anonymous read its address's;
//! that client is left in the request's extensions for the extractors of its body.

use std::marker::PhantomData;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use subtle::ConstantTimeEq;

use super::error::Error;
use crate::config::{KeySettings, Role};
use crate::rate_limit::{Budget, Client};
use crate::state::AppState;

pub use crate::config::hash_key;

/// The role of the key of `keys` matching `presented`, if any (the highest, should two
/// entries share a key), with its name.
fn role_of<'a>(
    keys: impl IntoIterator<Item = &'a KeySettings>,
    presented: &str,
) -> Option<(Role, &'a str)> {
    let digest = hash_key(presented);
    let mut found = None;
    // Every entry is compared, matched or not, so the time taken does not tell which matched.
    for key in keys {
        let matches: bool = key
            .sha256
            .to_ascii_lowercase()
            .as_bytes()
            .ct_eq(digest.as_bytes())
            .into();
        if matches && found.is_none_or(|(role, _)| key.role > role) {
            found = Some((key.role, key.name.as_str()));
        }
    }
    found
}

/// The token of a `Bearer` credential, empty when the scheme stands alone (HTTP strips the
/// space after it); the scheme is case-insensitive (RFC 7235).
fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization
        .split_once(|c: char| c.is_ascii_whitespace())
        .unwrap_or((authorization, ""));
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// What a route needs.
pub trait Requirement {
    /// The least role allowed.
    const ROLE: Role;
}

/// Reading: open to all unless `auth.read_key_required`.
#[derive(Debug)]
pub struct Read;
impl Requirement for Read {
    const ROLE: Role = Role::Read;
}

/// Posting rounds.
#[derive(Debug)]
pub struct Write;
impl Requirement for Write {
    const ROLE: Role = Role::Write;
}

/// Creating and changing pools.
#[derive(Debug)]
pub struct Admin;
impl Requirement for Admin {
    const ROLE: Role = Role::Admin;
}

/// Proof that the request carries a key allowed to do what `R` requires, and who it came from.
#[derive(Debug)]
pub struct Authorized<R> {
    client: Option<Client>,
    role: PhantomData<R>,
}

impl<R> Authorized<R> {
    /// Who asked: the key's name, or an anonymous reader's address (`None` for a router
    /// called in process, which has no peer address).
    #[must_use]
    pub fn client(&self) -> Option<&Client> {
        self.client.as_ref()
    }
}

impl<R: Requirement + Send> FromRequestParts<AppState> for Authorized<R> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let auth = &state.settings.auth;
        let budget = if R::ROLE == Role::Read {
            Budget::Read
        } else {
            Budget::Write
        };
        // A `Bearer` credential is checked wherever it is presented, so a client with a wrong
        // key learns it on its first read instead of being served as anonymous; any other
        // scheme (a proxy's `Basic`, say) is not ours to judge on an open read.
        let presented = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_token);
        if R::ROLE == Role::Read && !auth.read_key_required && presented.is_none() {
            // A router called in process (tests) has no peer address: nothing to count it by.
            let client = parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| Client::address(peer.ip()));
            if let Some(client) = &client {
                draw(state, budget, client)?;
                parts.extensions.insert(client.clone());
            }
            return Ok(Self {
                client,
                role: PhantomData,
            });
        }
        let presented = presented
            .filter(|key| !key.is_empty())
            .ok_or(Error::Unauthenticated)?;
        let stored = state.keys.stored.load();
        let (role, name) = role_of(auth.keys.iter().chain(stored.iter()), presented)
            .ok_or(Error::Unauthenticated)?;
        tracing::debug!(key.name = name, "authenticated");
        if role < R::ROLE {
            return Err(Error::Forbidden);
        }
        let client = Client::Key(name.to_owned());
        drop(stored);
        draw(state, budget, &client)?;
        parts.extensions.insert(client.clone());
        Ok(Self {
            client: Some(client),
            role: PhantomData,
        })
    }
}

/// Takes one request from `client`'s `budget`, or refuses it with how long to wait.
fn draw(state: &AppState, budget: Budget, client: &Client) -> Result<(), Error> {
    state
        .limits
        .rate_limits
        .check(budget, client)
        .map_err(|wait| {
            tracing::debug!(?client, "rate limited");
            Error::RateLimited {
                // Retry-After counts whole seconds: round up, so a retry on time is not too early.
                retry_after_secs: (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1),
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, role: Role, secret: &str) -> KeySettings {
        KeySettings {
            name: name.to_owned(),
            role,
            sha256: hash_key(secret),
        }
    }

    #[test]
    fn hashes_are_lowercase_hex_sha256() {
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_bearer_token_is_whatever_follows_the_scheme() {
        for (header, token) in [
            ("Bearer k", Some("k")),
            ("bEaReR  k ", Some("k")),
            ("Bearer\tk", Some("k")),
            ("Bearer", Some("")),
            ("Bearer ", Some("")),
            ("Basic k", None),
            ("k", None),
            ("Bearerk", None),
        ] {
            assert_eq!(bearer_token(header), token, "{header:?}");
        }
    }

    #[test]
    fn a_key_is_known_by_its_hash_and_gets_the_highest_role_listed() {
        let keys = [
            key("judge", Role::Write, "s3cret"),
            key("ops", Role::Admin, "root"),
            key("ops-copy", Role::Read, "root"),
        ];
        assert_eq!(role_of(&keys, "s3cret"), Some((Role::Write, "judge")));
        assert_eq!(role_of(&keys, "root"), Some((Role::Admin, "ops")));
        assert_eq!(role_of(&keys, "s3cre"), None);
        assert_eq!(role_of(&keys, ""), None);
        let mut upper = key("UP", Role::Write, "k");
        upper.sha256 = upper.sha256.to_ascii_uppercase();
        assert_eq!(role_of(&[upper], "k").map(|(r, _)| r), Some(Role::Write));
    }
}
