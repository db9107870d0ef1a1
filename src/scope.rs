//! Which pools a key reaches: every pool, or the pools its patterns name. A pattern is a pool
//! name, or the start of one followed by `*` (`chess-*` reaches `chess-blitz` and
//! `chess-rapid`). A key configured or created without patterns reaches every pool, as every
//! key did before keys had scopes.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::names::{is_pool_name, MAX_POOL_NAME};

/// Most patterns one key may list.
pub const MAX_PATTERNS: usize = 100;

/// The pools a key reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Option<Vec<String>>", into = "Option<Vec<String>>")]
pub enum Scope {
    /// Every pool, those created later too.
    #[default]
    All,
    /// The pools these patterns match, and no other: shared, since every request of the key
    /// takes its scope along.
    Pools(Arc<[String]>),
}

impl Scope {
    /// The scope `patterns` describe (`None`: every pool), or why they do not describe one.
    pub fn of(patterns: Option<Vec<String>>) -> Result<Self, &'static str> {
        let Some(patterns) = patterns else {
            return Ok(Self::All);
        };
        if patterns.is_empty() {
            return Err("must list at least one pool (leave it out for every pool)");
        }
        if patterns.len() > MAX_PATTERNS {
            return Err("must list at most 100 patterns");
        }
        if !patterns.iter().all(|pattern| is_pattern(pattern)) {
            return Err("each must be a pool name, or the start of one followed by `*`");
        }
        Ok(Self::Pools(patterns.into()))
    }

    /// Whether the key reaches pool `pool`.
    #[must_use]
    pub fn allows(&self, pool: &str) -> bool {
        match self {
            Self::All => true,
            Self::Pools(patterns) => {
                patterns
                    .iter()
                    .any(|pattern| match pattern.strip_suffix('*') {
                        Some(start) => pool.starts_with(start),
                        None => pattern == pool,
                    })
            }
        }
    }

    /// Whether the key reaches every pool.
    #[must_use]
    pub fn is_all(&self) -> bool {
        matches!(self, Self::All)
    }

    /// The patterns, as stored and shown; `None` for every pool.
    #[must_use]
    pub fn patterns(&self) -> Option<&[String]> {
        match self {
            Self::All => None,
            Self::Pools(patterns) => Some(patterns),
        }
    }
}

impl TryFrom<Option<Vec<String>>> for Scope {
    type Error = &'static str;

    fn try_from(patterns: Option<Vec<String>>) -> Result<Self, Self::Error> {
        Self::of(patterns)
    }
}

impl From<Scope> for Option<Vec<String>> {
    fn from(scope: Scope) -> Self {
        match scope {
            Scope::All => None,
            Scope::Pools(patterns) => Some(patterns.to_vec()),
        }
    }
}

/// Whether `pattern` is a pool name, or a non-empty start of one followed by `*`.
fn is_pattern(pattern: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(start) => !start.is_empty() && start.len() < MAX_POOL_NAME && is_pool_name(start),
        None => is_pool_name(pattern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(patterns: &[&str]) -> Scope {
        Scope::of(Some(patterns.iter().map(|p| (*p).to_owned()).collect())).expect("valid")
    }

    #[test]
    fn a_pattern_is_a_name_or_the_start_of_one_and_a_star() {
        let chess = scope(&["chess-*", "go"]);
        for (pool, reached) in [
            ("chess-blitz", true),
            ("chess-", true),
            ("chess", false),
            ("go", true),
            ("go-ranked", false),
            ("xiangqi", false),
        ] {
            assert_eq!(chess.allows(pool), reached, "{pool}");
        }
        assert!(Scope::All.allows("anything"));
        assert!(Scope::of(None).expect("every pool").is_all());
    }

    #[test]
    fn patterns_that_reach_nothing_or_everything_by_accident_are_refused() {
        for bad in [
            vec![],
            vec!["*".to_owned()],
            vec!["Chess-*".to_owned()],
            vec!["chess-**".to_owned()],
            vec!["ch*ss".to_owned()],
            vec![String::new()],
            vec!["x".repeat(65)],
            vec!["a".to_owned(); 101],
        ] {
            assert!(Scope::of(Some(bad.clone())).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_scope_reads_and_prints_as_a_list_or_null() {
        let chess: Scope = serde_json::from_str(r#"["chess-*"]"#).expect("a list");
        assert_eq!(chess, scope(&["chess-*"]));
        assert_eq!(
            serde_json::to_string(&chess).expect("printed"),
            r#"["chess-*"]"#
        );
        let all: Scope = serde_json::from_str("null").expect("null");
        assert_eq!(all, Scope::All);
        assert!(serde_json::from_str::<Scope>("[]").is_err());
    }
}
