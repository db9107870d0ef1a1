//! Who may do what: `Authorization: Bearer <key>` checked against the SHA-256 hashes of the
//! configured keys and of those kept in the database (`/v1/keys`). The presented key is hashed
//! and compared with every known hash in constant time (`subtle::ConstantTimeEq`), so neither
//! a wrong key nor a near miss answers faster. A key never reaches a log: only its name does. An authorized request then draws
//! on its client's budget (`rate_limit`): the key's, or for an anonymous read its address's;
//! that client is left in the request's extensions for the extractors of its body. A key
//! reaches only the pools of its [`Scope`]: a route of another pool answers as if it did not
//! exist (404 `pool_not_found`), so that a key learns no other pool's name.

use std::marker::PhantomData;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, RawPathParams};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use subtle::ConstantTimeEq;
use tower_http::request_id::RequestId;

use super::error::{Error, Resource};
use crate::audit::Actor;
use crate::config::{KeySettings, Role};
use crate::instruments;
use crate::rate_limit::{Budget, Client};
use crate::scope::Scope;
use crate::state::AppState;

pub use crate::config::hash_key;

/// The key of `keys` matching `presented`, if any (the one of the highest role, should two
/// entries share a key).
fn key_of<'a>(
    keys: impl IntoIterator<Item = &'a KeySettings>,
    presented: &str,
) -> Option<&'a KeySettings> {
    let digest = hash_key(presented);
    let mut found: Option<&KeySettings> = None;
    // Every entry is compared, matched or not, so the time taken does not tell which matched.
    for key in keys {
        let matches: bool = key
            .sha256
            .to_ascii_lowercase()
            .as_bytes()
            .ct_eq(digest.as_bytes())
            .into();
        if matches && found.is_none_or(|found| key.role > found.role) {
            found = Some(key);
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

/// Proof that the request carries a key allowed to do what `R` requires, reaching the pool
/// its path names, and who it came from.
#[derive(Debug)]
pub struct Authorized<R> {
    client: Option<Client>,
    scope: Scope,
    /// The request's `x-request-id` (the client's, or the one the service gave it).
    request_id: Option<String>,
    role: PhantomData<R>,
}

impl<R> Authorized<R> {
    /// Who asked: the key's name, or an anonymous reader's address (`None` for a router
    /// called in process, which has no peer address).
    #[must_use]
    pub fn client(&self) -> Option<&Client> {
        self.client.as_ref()
    }

    /// The pools the request's key reaches (every pool for an anonymous read).
    #[must_use]
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Who the audit log records as acting: the key's name and the request's id.
    /// [`Error::Unauthenticated`] for an anonymous read, which acts on nothing.
    pub fn actor(&self) -> Result<Actor, Error> {
        match &self.client {
            Some(Client::Key(key)) => Ok(Actor {
                key: key.clone(),
                request_id: self.request_id.clone(),
            }),
            _ => Err(Error::Unauthenticated),
        }
    }

    /// Refuses a key that does not reach every pool: what spans pools (the keys) is theirs
    /// alone.
    pub fn require_every_pool(&self) -> Result<(), Error> {
        if self.scope.is_all() {
            Ok(())
        } else {
            Err(Error::Forbidden)
        }
    }
}

impl<R: Requirement + Send> FromRequestParts<AppState> for Authorized<R> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let auth = &state.settings.auth;
        let request_id = parts
            .extensions
            .get::<RequestId>()
            .and_then(|id| id.header_value().to_str().ok())
            .map(str::to_owned);
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
                scope: Scope::All,
                request_id,
                role: PhantomData,
            });
        }
        let presented = presented
            .filter(|key| !key.is_empty())
            .ok_or(Error::Unauthenticated)?;
        let stored = state.keys.stored.load();
        let key = key_of(auth.keys.iter().chain(stored.iter()), presented)
            .ok_or(Error::Unauthenticated)?;
        tracing::debug!(key.name = key.name, "authenticated");
        instruments::key_request(&key.name);
        if key.role < R::ROLE {
            return Err(Error::Forbidden);
        }
        let (client, scope) = (Client::Key(key.name.clone()), key.pools.clone());
        drop(stored);
        draw(state, budget, &client)?;
        if let Some(pool) = path_pool(parts, state).await {
            if !scope.allows(&pool) {
                return Err(Error::NotFound {
                    what: Resource::Pool,
                    id: pool,
                });
            }
        }
        parts.extensions.insert(client.clone());
        Ok(Self {
            client: Some(client),
            scope,
            request_id,
            role: PhantomData,
        })
    }
}

/// The pool the request's path names (`{pool}`), if it names one.
async fn path_pool(parts: &mut Parts, state: &AppState) -> Option<String> {
    let params = RawPathParams::from_request_parts(parts, state).await.ok()?;
    params
        .iter()
        .find_map(|(name, value)| (name == "pool").then(|| value.to_owned()))
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
            pools: Scope::All,
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
        let found = |presented: &str| key_of(&keys, presented).map(|k| (k.role, k.name.as_str()));
        assert_eq!(found("s3cret"), Some((Role::Write, "judge")));
        assert_eq!(found("root"), Some((Role::Admin, "ops")));
        assert_eq!(found("s3cre"), None);
        assert_eq!(found(""), None);
        let mut upper = key("UP", Role::Write, "k");
        upper.sha256 = upper.sha256.to_ascii_uppercase();
        assert_eq!(key_of(&[upper], "k").map(|k| k.role), Some(Role::Write));
    }
}
