//! Pools that failed to load, remembered for a while. Loading reads a pool's every player from
//! the database: without this, each request naming a pool this replica cannot load (its own
//! routes, and `GET /v1/pools`, which any reader may call) would read the whole pool again to
//! fail the same way. An outage is not remembered: it is answered 503 and retried at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a failed load is answered from memory before the pool is read again: an operator's
/// repair of the stored data takes effect within it (or at a restart).
pub const LOAD_RETRY: Duration = Duration::from_secs(30);

/// Each pool's last failed load: when, and why.
#[derive(Debug, Default)]
pub struct LoadFailures {
    failed: Mutex<HashMap<String, (Instant, String)>>,
}

impl LoadFailures {
    /// Why pool `name` failed to load, if it did less than [`LOAD_RETRY`] before `now`.
    pub fn recent(&self, name: &str, now: Instant) -> Option<String> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed
            .get(name)
            .filter(|(at, _)| now.saturating_duration_since(*at) < LOAD_RETRY)
            .map(|(_, why)| why.clone())
    }

    /// Pool `name` failed to load at `at`, for the reason `why`.
    pub fn record(&self, name: &str, why: String, at: Instant) {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
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
        let failures = LoadFailures::default();
        let at = Instant::now();
        failures.record("broken", "a player in no league".into(), at);
        assert_eq!(
            failures.recent("broken", at + LOAD_RETRY / 2).as_deref(),
            Some("a player in no league")
        );
        assert_eq!(failures.recent("other", at), None);
        assert_eq!(failures.recent("broken", at + LOAD_RETRY), None);
        // A later failure of another pool drops the stale entry.
        failures.record("other", "no such column".into(), at + LOAD_RETRY);
        assert_eq!(failures.failed.lock().expect("not poisoned").len(), 1);
    }
}
