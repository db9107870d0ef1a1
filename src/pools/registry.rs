//! Every pool the service knows, by name ([`Pools`]).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::pool::Pool;

/// Every pool the service knows, by name.
#[derive(Debug, Default)]
pub struct Pools {
    pools: RwLock<BTreeMap<String, Arc<Pool>>>,
}

impl Pools {
    /// The pool called `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Arc<Pool>> {
        self.pools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// Every pool, by name.
    #[must_use]
    pub fn all(&self) -> Vec<Arc<Pool>> {
        self.pools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// Takes pool `name` out, marked deleted ([`Pool::remove`]); `None` if there was none.
    pub fn remove(&self, name: &str) -> Option<Arc<Pool>> {
        let removed = self
            .pools
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(name)?;
        removed.remove();
        Some(removed)
    }

    /// Adds `pool` unless one of its name exists; returns the pool now registered under the
    /// name and whether it is the one given.
    pub fn insert(&self, pool: Pool) -> (Arc<Pool>, bool) {
        let mut pools = self
            .pools
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match pools.get(pool.name()) {
            Some(existing) => (Arc::clone(existing), false),
            None => {
                let pool = Arc::new(pool);
                pools.insert(pool.name().to_owned(), Arc::clone(&pool));
                (pool, true)
            }
        }
    }
}
