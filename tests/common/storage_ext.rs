//! Shortcuts over the `Storage` trait that only tests take: one line queued, one round
//! applied or failed alone, the oldest queued round, every player of a pool, and the actor the
//! audit log records for what tests do straight to storage. The service goes through the
//! batch operations they wrap. Shared by the test binaries through
//! `#[path = "../common/storage_ext.rs"] mod storage_ext;`.

use async_trait::async_trait;
use mmr_service::audit::Actor;
use mmr_service::storage::{
    Against, AppliedRound, Enqueued, EntryKind, Error, NewEntry, QueuedRound, RoundOutcome,
    Storage, StoredPlayer,
};

/// Who the audit log records for an admin action a test takes straight to storage or state:
/// the key `tester`.
pub fn tester() -> Actor {
    Actor {
        key: "tester".to_owned(),
        request_id: None,
    }
}

/// The shortcuts, for every storage.
#[allow(dead_code, reason = "each test binary takes the shortcuts it needs")]
#[async_trait]
pub trait StorageExt: Storage {
    /// [`Storage::enqueue_entries`] for one line.
    async fn enqueue_entry(
        &self,
        pool: &str,
        entry: NewEntry<'_>,
        max_queued: u64,
        against: Option<Against<'_>>,
    ) -> Result<Enqueued, Error> {
        self.enqueue_entries(pool, &[entry], max_queued, against)
            .await?
            .into_one()
    }

    /// [`Self::enqueue_entry`] for a round, compared by its body as it is.
    async fn enqueue_round(
        &self,
        pool: &str,
        id: &str,
        body: &str,
        max_queued: u64,
    ) -> Result<Enqueued, Error> {
        self.enqueue_entry(
            pool,
            NewEntry::by_body(id, EntryKind::Round, body),
            max_queued,
            None,
        )
        .await
    }

    /// The pool's oldest queued round, if any.
    async fn oldest_queued(&self, pool: &str) -> Result<Option<QueuedRound>, Error> {
        Ok(self.queued_rounds(pool, 0, 1, 0).await?.pop())
    }

    /// [`Storage::settle_rounds`] for the one round `id`, applied, in a pool without leagues,
    /// rated on the pool as it stands now.
    async fn apply_round(&self, pool: &str, id: &str, round: &AppliedRound) -> Result<(), Error> {
        let now = self.applied_now(pool).await?;
        self.settle_rounds(pool, &[(id, RoundOutcome::Applied(round))], now, None)
            .await
    }

    /// [`Storage::settle_rounds`] for the one round `id`, failed with `error`, in a pool without
    /// leagues.
    async fn fail_round(&self, pool: &str, id: &str, error: &str) -> Result<(), Error> {
        let now = self.applied_now(pool).await?;
        self.settle_rounds(pool, &[(id, RoundOutcome::Failed(error))], now, None)
            .await
    }

    /// How many rounds `pool` has applied (0 for an unknown pool, which settling refuses).
    async fn applied_now(&self, pool: &str) -> Result<u64, Error> {
        Ok(self.pool_progress(pool).await?.map_or(0, |p| p.applied))
    }

    /// Every player of `pool` with their belief, by player id.
    async fn load_players(&self, pool: &str) -> Result<Vec<StoredPlayer>, Error> {
        Ok(self
            .load_pool(pool)
            .await?
            .map_or_else(Vec::new, |loaded| loaded.players))
    }
}

impl<S: Storage + ?Sized> StorageExt for S {}
