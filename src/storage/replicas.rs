//! What several service processes (replicas) sharing one Postgres database need of it beyond
//! the rows: a heartbeat table saying which replicas are alive, one lease per pool (a session
//! advisory lock, held on a connection of its own, so that it ends the moment the process or
//! its connection dies), and notifications (`LISTEN`/`NOTIFY`) naming each pool whose rows a
//! commit changed. docs/replicas.md tells how the service uses them. SQLite has none of this:
//! one process owns its file.
//!
//! Leases decide who does the work, never what is correct: every settling transaction checks,
//! under the pool's lock, that the pool has applied exactly what the rounds were rated on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool};
use sqlx::{ConnectOptions, PgConnection};
use tokio::sync::{mpsc, Mutex};

use super::Error;

/// The channel every commit that changes a pool notifies, with the pool's name as payload.
pub(super) const CHANGES_CHANNEL: &str = "mmr_pool_changed";

/// Heartbeats older than this are deleted: a replica that stopped long ago.
const FORGET_AFTER_SECS: f64 = 3600.0;

/// What a replica hears from the others through the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A commit changed pool `.0` (a round queued or settled, its settings changed, or the
    /// pool created).
    Pool(String),
    /// The listening connection was lost and is back: notifications may have been missed.
    Reconnected,
}

/// What asking for a pool's lease gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// This process holds it now.
    Taken,
    /// Another process holds it.
    Held,
    /// Postgres's shared lock table is full (`out of shared memory`, SQLSTATE 53200), so no
    /// process can take it. The leases already held stay held: the connection is kept.
    NoRoom,
}

/// The database's side of running several replicas (Postgres only).
#[async_trait]
pub trait Replicas: Send + Sync {
    /// Holds replica id `replica` for this process, for as long as the lease connection lasts
    /// (and again on each new one); [`Error::ReplicaIdTaken`] if another live process holds it.
    async fn claim(&self, replica: &str) -> Result<(), Error>;

    /// Records that `replica` is alive now and returns every replica seen within `within`,
    /// itself included, sorted. An error means the lease connection was lost, and with it
    /// every lease this process held.
    async fn heartbeat(&self, replica: &str, within: Duration) -> Result<Vec<String>, Error>;

    /// Takes pool `pool`'s lease unless another process holds it or the server has no room
    /// for it. Held until [`Self::release`] or until the lease connection ends.
    async fn try_lease(&self, pool: &str) -> Result<Lease, Error>;

    /// Gives pool `pool`'s lease back.
    async fn release(&self, pool: &str) -> Result<(), Error>;

    /// Removes `replica`'s heartbeat: the others rank the pools without it from their next
    /// heartbeat, and take each as soon as its lease is free.
    async fn withdraw(&self, replica: &str) -> Result<(), Error>;

    /// Removes `replica`'s heartbeat and ends the lease connection, which gives back every
    /// lease still held.
    async fn leave(&self, replica: &str);

    /// Starts listening for changes; they arrive on the receiver until it is dropped.
    async fn listen(&self) -> Result<mpsc::Receiver<Change>, Error>;
}

/// [`Replicas`] on a Postgres server.
pub(super) struct PgReplicas {
    pool: PgPool,
    options: PgConnectOptions,
    /// The connection holding this process's leases; `None` after it was lost.
    session: Mutex<Option<PgConnection>>,
    /// Whether another replica was live at the last heartbeat (true when it failed).
    others: Arc<AtomicBool>,
    /// The replica id this process claimed: each new lease connection holds it again.
    claimed: std::sync::Mutex<Option<String>>,
}

impl PgReplicas {
    /// Replicas coordinated through the server `pool` connects to; each heartbeat sets
    /// `others` to whether another replica is live.
    pub(super) fn new(pool: PgPool, others: Arc<AtomicBool>) -> Self {
        let options = (*pool.connect_options()).clone();
        Self {
            pool,
            options,
            session: Mutex::new(None),
            others,
            claimed: std::sync::Mutex::new(None),
        }
    }

    /// A new lease connection, holding the claimed replica id if there is one.
    async fn open_session(&self) -> Result<PgConnection, Error> {
        let mut connection = self.options.connect().await?;
        let claimed = self
            .claimed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(replica) = claimed {
            hold_id(&mut connection, &replica).await?;
        }
        Ok(connection)
    }
}

/// Takes replica id `replica`'s lock on `connection`, unless another session holds it.
async fn hold_id(connection: &mut PgConnection, replica: &str) -> Result<(), Error> {
    let held: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(advisory_key("replica id", replica))
        .fetch_one(connection)
        .await?;
    if held {
        Ok(())
    } else {
        Err(Error::ReplicaIdTaken(replica.to_owned()))
    }
}

/// The advisory lock key of pool `pool`'s lease: 64 bits of a SHA-256, so that two pools never
/// share a lease in practice (a shared one would leave one of them without an owner whenever
/// the two are meant for different replicas). Single-key advisory locks do not overlap the
/// two-key ones the settling transactions take.
fn lease_key(pool: &str) -> i64 {
    advisory_key("lease", pool)
}

/// 64 bits of the SHA-256 of `name` in the namespace `what`.
fn advisory_key(what: &str, name: &str) -> i64 {
    let digest = Sha256::digest(format!("mmr-service {what}\0{name}"));
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// Whether `error` is Postgres's answer when its shared lock table has no room left:
/// `out of shared memory`, SQLSTATE 53200.
pub fn lock_table_full(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "53200")
}

/// Runs one statement on the lease connection of `$self`, bound to `$db` in `$work`
/// (connecting first if there is none). A failure drops the connection, and every lease with it.
macro_rules! on_session {
    ($self:ident, |$db:ident| $work:expr) => {{
        let mut session = $self.session.lock().await;
        let mut connection = match session.take() {
            Some(connection) => connection,
            None => $self.open_session().await?,
        };
        let $db = &mut connection;
        let result = $work;
        if result.is_ok() {
            *session = Some(connection);
        }
        Ok(result?)
    }};
}

#[async_trait]
impl Replicas for PgReplicas {
    async fn claim(&self, replica: &str) -> Result<(), Error> {
        let held: Result<(), Error> = on_session!(self, |db| hold_id(db, replica).await);
        held?;
        *self
            .claimed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(replica.to_owned());
        Ok(())
    }

    async fn heartbeat(&self, replica: &str, within: Duration) -> Result<Vec<String>, Error> {
        let live: Result<Vec<String>, Error> = on_session!(self, |db| {
            async {
                sqlx::query(
                    "INSERT INTO replicas (id, seen_at) VALUES ($1, now())
                     ON CONFLICT (id) DO UPDATE SET seen_at = now()",
                )
                .bind(replica)
                .execute(&mut *db)
                .await?;
                sqlx::query(
                    "DELETE FROM replicas WHERE seen_at < now() - make_interval(secs => $1)",
                )
                .bind(FORGET_AFTER_SECS)
                .execute(&mut *db)
                .await?;
                sqlx::query_scalar(
                    "SELECT id FROM replicas WHERE seen_at >= now() - make_interval(secs => $1)
                     ORDER BY id",
                )
                .bind(within.as_secs_f64())
                .fetch_all(&mut *db)
                .await
            }
            .await
        });
        let alone = live
            .as_ref()
            .is_ok_and(|live| live.iter().all(|id| id == replica));
        self.others.store(!alone, Ordering::Release);
        live
    }

    async fn try_lease(&self, pool: &str) -> Result<Lease, Error> {
        on_session!(self, |db| {
            match sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                .bind(lease_key(pool))
                .fetch_one(db)
                .await
            {
                Ok(true) => Ok(Lease::Taken),
                Ok(false) => Ok(Lease::Held),
                // The statement failed on a sound session, which keeps its locks: dropping
                // it would give back every lease, only to meet the same wall when they are
                // taken again.
                Err(error) if lock_table_full(&error) => Ok(Lease::NoRoom),
                Err(error) => Err(error),
            }
        })
    }

    async fn release(&self, pool: &str) -> Result<(), Error> {
        on_session!(self, |db| {
            sqlx::query("SELECT pg_advisory_unlock($1)")
                .bind(lease_key(pool))
                .execute(db)
                .await
                .map(drop)
        })
    }

    async fn withdraw(&self, replica: &str) -> Result<(), Error> {
        sqlx::query("DELETE FROM replicas WHERE id = $1")
            .bind(replica)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn leave(&self, replica: &str) {
        let mut session = self.session.lock().await;
        if let Err(error) = self.withdraw(replica).await {
            tracing::warn!(%error, "removing this replica's heartbeat failed");
        }
        if let Some(connection) = session.take() {
            if let Err(error) = sqlx::Connection::close(connection).await {
                tracing::warn!(%error, "closing the lease connection failed");
            }
        }
    }

    async fn listen(&self) -> Result<mpsc::Receiver<Change>, Error> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.listen(CHANGES_CHANNEL).await?;
        let (sender, receiver) = mpsc::channel(1024);
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    received = listener.try_recv() => received,
                    // Nobody listens any more (the service stops): the connection goes too.
                    () = sender.closed() => return,
                };
                let change = match received {
                    Ok(Some(notification)) => Change::Pool(notification.payload().to_owned()),
                    // The connection was lost; the next call reconnects.
                    Ok(None) => Change::Reconnected,
                    Err(error) => {
                        // Reconnecting failed: ending the channel tells the caller to listen
                        // again later.
                        tracing::warn!(%error, "listening for other replicas' changes failed");
                        return;
                    }
                };
                // A full channel drops the notice: the followers' periodic catch-up covers it.
                if let Err(mpsc::error::TrySendError::Closed(_)) = sender.try_send(change) {
                    return;
                }
            }
        });
        Ok(receiver)
    }
}

#[cfg(test)]
mod tests {
    use super::lease_key;

    #[test]
    fn lease_keys_differ_by_pool_and_stay_put() {
        assert_ne!(lease_key("main"), lease_key("main2"));
        assert_eq!(lease_key("main"), lease_key("main"));
    }
}
