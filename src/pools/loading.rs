//! What keeps loading a pool from the database cheap when requests name it: loading reads every
//! player of the pool, so the requests that name a pool while it loads wait for that one load
//! (each pool its own turn; other pools' requests do not wait), and a pool whose stored data
//! cannot be loaded is answered from memory for a while instead of being read again at every
//! request that names it (its own routes, and `GET /v1/pools`, which any reader may call).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::OwnedMutexGuard;

/// How long a failed load is answered from memory before the pool is read again: an operator's
/// repair of the stored data takes effect within it (or at a restart).
pub const LOAD_RETRY: Duration = Duration::from_secs(30);

/// The pools being loaded, and the recent failures.
#[derive(Debug, Default)]
pub struct Loading {
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    failed: Mutex<HashMap<String, (Instant, String)>>,
}

/// Pool `name`'s turn to load, held until dropped.
pub struct Turn<'a> {
    loading: &'a Loading,
    name: &'a str,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut turns = self
            .loading
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Nobody else holds or waits for this pool's turn: forget it.
        if turns
            .get(self.name)
            .is_some_and(|turn| Arc::strong_count(turn) == 1)
        {
            turns.remove(self.name);
        }
    }
}

impl Loading {
    /// Waits for pool `name`'s turn to load.
    pub async fn turn<'a>(&'a self, name: &'a str) -> Turn<'a> {
        let turn = Arc::clone(
            self.turns
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(name.to_owned())
                .or_default(),
        );
        Turn {
            loading: self,
            name,
            guard: Some(turn.lock_owned().await),
        }
    }

    /// Why pool `name` failed to load, if it did less than [`LOAD_RETRY`] before `now`.
    pub fn recent_failure(&self, name: &str, now: Instant) -> Option<String> {
        let failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        failed
            .get(name)
            .filter(|(at, _)| now.saturating_duration_since(*at) < LOAD_RETRY)
            .map(|(_, why)| why.clone())
    }

    /// Pool `name` failed to load at `at`, for the reason `why`.
    pub fn failed(&self, name: &str, why: String, at: Instant) {
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        // Entries are few (pools that cannot load); drop the stale ones as they are added to.
        failed.retain(|_, (when, _)| at.saturating_duration_since(*when) < LOAD_RETRY);
        failed.insert(name.to_owned(), (at, why));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_answered_from_memory_until_the_retry_time() {
        let loading = Loading::default();
        let at = Instant::now();
        loading.failed("broken", "a player in no league".into(), at);
        assert_eq!(
            loading
                .recent_failure("broken", at + LOAD_RETRY / 2)
                .as_deref(),
            Some("a player in no league")
        );
        assert_eq!(loading.recent_failure("other", at), None);
        assert_eq!(loading.recent_failure("broken", at + LOAD_RETRY), None);
        // A later failure of another pool drops the stale entry.
        loading.failed("other", "no such column".into(), at + LOAD_RETRY);
        assert_eq!(loading.failed.lock().expect("not poisoned").len(), 1);
    }

    #[tokio::test]
    async fn a_pool_s_turn_waits_for_its_holder_not_for_other_pools() {
        let loading = Loading::default();
        let first = loading.turn("a").await;
        let other = tokio::time::timeout(Duration::from_secs(5), loading.turn("b")).await;
        assert!(other.is_ok(), "another pool's turn is free");
        let same = tokio::time::timeout(Duration::from_millis(50), loading.turn("a")).await;
        assert!(same.is_err(), "the same pool's turn waits");
        drop(other);
        drop(first);
        assert!(loading.turns.lock().expect("not poisoned").is_empty());
        let again = tokio::time::timeout(Duration::from_secs(5), loading.turn("a")).await;
        assert!(again.is_ok(), "the turn is free once dropped");
    }
}
