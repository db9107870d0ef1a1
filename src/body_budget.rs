//! The budget of request bodies read and parsed at once (`server.body_bytes_in_flight`).
//! Checking a round means parsing it whole, which takes about 18 times its size (a 30 MiB
//! round, about 565 MB: six refused at once took 3.4 GB in `tests/e2e/large_bodies.rs`
//! without this budget): without a bound, a few clients posting the largest bodies at once could
//! take every byte of memory, even with bodies that are refused in the end. A request with a
//! body holds its declared length of the budget until it is answered (`api::bodies` takes it).
//! Knows nothing of HTTP.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::ServerSettings;

/// The unit the budget counts in: a body holds its length in these, rounded up.
const UNIT: usize = 1024;

/// The bytes of the bodies being read and parsed, out of `server.body_bytes_in_flight`.
#[derive(Debug)]
pub struct BodyBudget {
    units: Arc<Semaphore>,
    budget: u32,
    body_limit: usize,
}

impl BodyBudget {
    /// The budget `server` sets.
    #[must_use]
    pub fn new(server: &ServerSettings) -> Self {
        let budget = u32::try_from(server.body_bytes_in_flight.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .min(u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX));
        Self {
            units: Arc::new(Semaphore::new(budget as usize)),
            budget,
            body_limit: server.body_limit_bytes,
        }
    }

    /// The part of the budget a body of `length` bytes holds (`None`: one sent without a
    /// length, counted as the body limit), if that much is free. A body larger than the limit
    /// is refused before it comes here; one larger than the whole budget (set below the limit)
    /// needs all of it free.
    pub fn take(&self, length: Option<usize>) -> Option<OwnedSemaphorePermit> {
        let length = length.unwrap_or(self.body_limit).min(self.body_limit);
        let units = u32::try_from(length.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .min(self.budget)
            .max(1);
        Arc::clone(&self.units).try_acquire_many_owned(units).ok()
    }
}
