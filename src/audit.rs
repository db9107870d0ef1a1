//! The audit log's vocabulary: who acted ([`Actor`]: a key, or the service itself at startup)
//! and what they did ([`Action`]). Storage writes an entry in the transaction of each admin or
//! key action it performs (`storage::Storage`), and `GET /v1/audit` reads them back. Plain
//! data: no I/O, no HTTP.

use serde::Serialize;
use utoipa::ToSchema;

/// Who asked for an action: a key's name (or `@config` and `@bootstrap`, the service at its
/// start, which no key's name can be), and the request's id where it came over HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The key's name.
    pub key: String,
    /// The request's `x-request-id`.
    pub request_id: Option<String>,
}

impl Actor {
    /// The service itself, doing `what` with no request: `@what`.
    #[must_use]
    pub fn service(what: &str) -> Self {
        Self {
            key: format!("@{what}"),
            request_id: None,
        }
    }
}

/// What an audit entry records. Stored and shown by these names (`pool.create`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ToSchema)]
pub enum Action {
    /// `PUT /v1/pools/{pool}` created the pool (or the configuration's `[pools]` did).
    #[serde(rename = "pool.create")]
    PoolCreate,
    /// `PUT /v1/pools/{pool}` changed its parameters.
    #[serde(rename = "pool.update")]
    PoolUpdate,
    /// `DELETE /v1/pools/{pool}`.
    #[serde(rename = "pool.delete")]
    PoolDelete,
    /// `PUT` or `PATCH /v1/pools/{pool}/display`.
    #[serde(rename = "display.update")]
    DisplayUpdate,
    /// A correction queued: a void (`DELETE …/rounds/{id}` or `POST …/corrections`).
    #[serde(rename = "correction.void")]
    CorrectionVoid,
    /// A correction queued: a disqualification.
    #[serde(rename = "correction.disqualify")]
    CorrectionDisqualify,
    /// A correction queued: a rename.
    #[serde(rename = "correction.rename")]
    CorrectionRename,
    /// A correction queued: a merge.
    #[serde(rename = "correction.merge")]
    CorrectionMerge,
    /// A correction queued: new parameters.
    #[serde(rename = "correction.params")]
    CorrectionParams,
    /// A season start queued (`POST …/seasons`).
    #[serde(rename = "season.start")]
    SeasonStart,
    /// A key created (`POST /v1/keys`, or the first start's admin key).
    #[serde(rename = "key.create")]
    KeyCreate,
    /// A key revoked (`DELETE /v1/keys/{name}`).
    #[serde(rename = "key.revoke")]
    KeyRevoke,
}

impl Action {
    /// Every action, in the order above.
    pub const ALL: [Self; 12] = [
        Self::PoolCreate,
        Self::PoolUpdate,
        Self::PoolDelete,
        Self::DisplayUpdate,
        Self::CorrectionVoid,
        Self::CorrectionDisqualify,
        Self::CorrectionRename,
        Self::CorrectionMerge,
        Self::CorrectionParams,
        Self::SeasonStart,
        Self::KeyCreate,
        Self::KeyRevoke,
    ];

    /// Its name, as stored and shown.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PoolCreate => "pool.create",
            Self::PoolUpdate => "pool.update",
            Self::PoolDelete => "pool.delete",
            Self::DisplayUpdate => "display.update",
            Self::CorrectionVoid => "correction.void",
            Self::CorrectionDisqualify => "correction.disqualify",
            Self::CorrectionRename => "correction.rename",
            Self::CorrectionMerge => "correction.merge",
            Self::CorrectionParams => "correction.params",
            Self::SeasonStart => "season.start",
            Self::KeyCreate => "key.create",
            Self::KeyRevoke => "key.revoke",
        }
    }

    /// The action named `name`, if there is one.
    #[must_use]
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_reads_back_from_its_name_as_serde_writes_it() {
        for action in Action::ALL {
            assert_eq!(Action::named(action.as_str()), Some(action));
            assert_eq!(
                serde_json::to_string(&action).expect("encodes"),
                format!("\"{}\"", action.as_str())
            );
        }
        assert_eq!(Action::named("pool.drop"), None);
        assert!(Actor::service("config").key.starts_with('@'));
    }
}
