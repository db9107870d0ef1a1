//! What every request handler and worker shares: the storage, the in-memory pools, the
//! settings, and the operations that touch more than one of them (creating a pool and its
//! worker, accepting a round). Handlers call one method here or one read on a pool; the HTTP
//! shapes stay in `api`.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::audit::Actor;
use crate::compute::{Compute, MAX_ENTRANTS};
use crate::config::{hash_key, KeySettings, Role, Settings};
use crate::display::leagues::{recompute, Entrant, HistoryPoint};
use crate::display::{Display, LeagueTable, Leagues};
use crate::engine::SystemParams;
use crate::group_commit::GroupCommit;
use crate::params::{ParamsError, ParamsOverrides};
use crate::pools::loading::{Loading, LOAD_RETRY};
use crate::pools::past::{BuildFailed, PastBoards, RoundOrders};
use crate::pools::{Pool, PoolState, Pools};
use crate::rate_limit::RateLimits;
use crate::scope::Scope;
use crate::storage::{
    self, Against, Enqueued, EnqueuedAll, LeagueHistory, NewEntry, PoolWrite, Recomputed, Replicas,
    Storage, StoredKey,
};
use crate::worker;

/// The rating systems a round posted to a pool must be rateable by, and what the queue checks
/// is still so when it stores the round ([`Against`]): an acknowledged round is one the pool
/// can rate, whatever parameter change races it.
#[derive(Debug, Clone, PartialEq)]
pub struct Systems {
    /// The pool's parameters.
    pub params: SystemParams,
    /// Those of its queued corrections that set new ones.
    pub pending: Vec<SystemParams>,
    /// The seq of its newest queued correction.
    pub correction: Option<i64>,
}

impl Systems {
    /// As memory has them: the pool's parameters and no correction queued, which is nearly
    /// always so; where it is not, the queue refuses the round and
    /// [`AppState::systems_stored`] reads them.
    #[must_use]
    pub fn now(pool: &Pool) -> Self {
        Self {
            params: crate::engine::Beliefs::system(&*pool.read()).clone(),
            pending: Vec::new(),
            correction: None,
        }
    }

    /// Each of them, the pool's first.
    pub fn all(&self) -> impl Iterator<Item = &SystemParams> {
        std::iter::once(&self.params).chain(&self.pending)
    }

    /// What the queue checks.
    #[must_use]
    pub fn against(&self) -> Against<'_> {
        Against {
            params: &self.params,
            correction: self.correction,
        }
    }
}

/// The parameters a stored correction line sets, if it sets any.
fn new_params(body: &str) -> Option<SystemParams> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    match crate::wire::Entry::from_value(&value).ok()? {
        crate::wire::Entry::Correction(correction) => match correction.action {
            crate::wire::Correction::Params { system } => Some(system),
            _ => None,
        },
        _ => None,
    }
}

/// Shared by every handler and worker; cheap to clone: one reference count, where axum
/// clones the state for every request.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] shares: the data, and the keys, limits and lifecycle apart.
pub struct Shared {
    /// The database, for the worker and the writes.
    pub storage: Arc<dyn Storage>,
    /// The database for the requests' reads, through connections of its own
    /// (`database.read_connections`).
    pub reads: Arc<dyn Storage>,
    /// `/readyz`'s last look at the database.
    pub database_seen: tokio::sync::Mutex<Option<DatabaseSeen>>,
    /// Every pool in memory.
    pub pools: Arc<Pools>,
    /// The settings the service started with.
    pub settings: Arc<Settings>,
    /// Each pool's writer of posted lines.
    group_commit: GroupCommit,
    /// Past leaderboards (as-of reads, seasons' standings), built once and kept for a while.
    pub past_boards: PastBoards<BuildFailed>,
    /// The order of large rounds' results, built once and kept for a while.
    pub round_orders: RoundOrders<BuildFailed>,
    /// Each pool's turn to be read from the database into memory, and the recent failures.
    loading: Loading,
    /// The keys kept in the database.
    pub keys: Keys,
    /// What one client, and all of them, may hold at once.
    pub limits: Limits,
    /// The workers, this process's place among the replicas, and stopping.
    lifecycle: Lifecycle,
}

/// The keys kept in the database that still work, as requests are checked against them
/// (beside `settings.auth.keys`).
pub struct Keys {
    /// Replaced whole when a key is created or revoked here, and re-read every second for
    /// changes made by another process.
    pub stored: ArcSwap<Vec<KeySettings>>,
    /// Held while the keys are re-read and replaced.
    turn: tokio::sync::Mutex<()>,
}

/// The budgets requests draw on: each bounds what all clients, and one, hold at once.
pub struct Limits {
    /// Every client's request budgets.
    pub rate_limits: RateLimits,
    /// Each client's turns at the reads of the database.
    pub read_turns: Arc<crate::rate_limit::Turns>,
    /// Where compute-heavy requests run.
    pub compute: Arc<Compute>,
    /// The bytes of request bodies being read and parsed.
    pub bodies: crate::body_budget::BodyBudget,
    /// Open change feeds: each holds a permit while it runs ([`MAX_FEEDS`] in all).
    pub feeds: Arc<tokio::sync::Semaphore>,
    /// Open change feeds per client ([`MAX_FEEDS_PER_CLIENT`] each).
    pub feed_shares: Arc<crate::rate_limit::Shares>,
    /// The connections the accept loop serves at once, in all and per client.
    pub connections: Arc<crate::serve::Connections>,
}

/// The pools' workers, this process among the replicas, and how it stops.
struct Lifecycle {
    workers: TaskTracker,
    /// Whether pools get a worker loop: set by [`AppState::load_pools`], so that a pool
    /// created later (by a `PUT`) gets one exactly when the loaded ones did. Tests that step
    /// the worker themselves leave it off.
    run_workers: AtomicBool,
    /// Whether this process shares the database with other replicas and applies only the
    /// pools whose lease it holds (`crate::ownership`): set with the workers, on Postgres.
    coordinated: AtomicBool,
    /// This process's name among the replicas.
    replica_id: Arc<str>,
    /// Asks for a heartbeat now rather than at the next tick: a pool was added to memory, and
    /// should get its owner at once.
    rebalance: tokio::sync::Notify,
    shutdown: CancellationToken,
    /// Cancelled as soon as the service is asked to stop, before requests drain: endless
    /// answers (the change feeds) end on it, or they would hold the drain open.
    closing: CancellationToken,
}

/// The most change feeds (`GET …/events`) open at once; beyond, 503 `overloaded`. Each is a
/// task and a query per poll interval.
pub const MAX_FEEDS: usize = 1024;

/// The most change feeds one client (a key, or an anonymous address: an IPv6 one by its /64)
/// keeps open at once; beyond, 429 `rate_limited`. A client that opens feeds and stops reading
/// them holds them until its connections drop: this keeps one such client from taking every
/// feed of [`MAX_FEEDS`].
pub const MAX_FEEDS_PER_CLIENT: usize = 16;

/// A look at the database: when it was taken, whether the database answered, and the rounds
/// then queued in all its pools (`None` if it did not answer that either).
#[derive(Debug, Clone, Copy)]
pub struct DatabaseSeen {
    /// When.
    pub at: Instant,
    /// Whether the database answered a ping in time.
    pub answered: bool,
    /// The rounds queued, if it answered that in time too.
    pub queue_depth: Option<u64>,
}

/// What [`AppState::create_key`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewKey {
    /// Stored (its hash only); the key, to show once.
    Created(String),
    /// A configured key or a stored one (revoked or not) has the name; nothing stored.
    NameTaken,
}

/// How often a process re-reads the database's keys, so that a key created or revoked through
/// another process sharing the database works, or stops working, here too; and looks for
/// pools such a process created.
pub const KEY_REFRESH: Duration = Duration::from_secs(1);

/// The name of the admin key the first start creates.
pub const FIRST_KEY_NAME: &str = "admin";

/// A new random key: `mmr_` and 256 bits from the operating system's generator, base64url.
fn new_secret() -> Result<String, storage::Error> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes)
        .map_err(|error| storage::Error::Corrupt(format!("no randomness for a key: {error}")))?;
    Ok(format!("mmr_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// Seconds since the Unix epoch.
fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// What deleting a pool did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// The pool and everything it held are gone.
    Deleted,
    /// There was no such pool.
    NotFound,
    /// This process is rating the pool again for a correction: nothing was deleted.
    Recomputing,
}

/// Why a pool could not be created or changed.
#[derive(Debug, thiserror::Error)]
pub enum PutPoolError {
    /// A parameter is not the system's, of the wrong type or out of range.
    #[error(transparent)]
    Invalid(#[from] ParamsError),
    /// The database refused or failed.
    #[error(transparent)]
    Storage(#[from] storage::Error),
}

impl crate::ownership::Host for AppState {
    fn pools(&self) -> &Pools {
        &self.pools
    }

    fn pool(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<Arc<Pool>>, storage::Error>> + Send {
        AppState::pool(self, name)
    }

    fn replica_id(&self) -> &str {
        AppState::replica_id(self)
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn pool_added(&self) -> impl Future<Output = ()> + Send {
        AppState::pool_added(self)
    }

    fn stopping(&self) -> impl Future<Output = ()> + Send {
        AppState::stopping(self)
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        AppState::spawn(self, task);
    }
}

impl AppState {
    /// State over `storage` with no pools loaded yet; fails only if the compute pool's
    /// threads cannot be started.
    pub fn new(storage: Arc<dyn Storage>, settings: Settings) -> anyhow::Result<Self> {
        // Recording starts with the first service of the process, not at the first scrape.
        crate::instruments::handle();
        // The budget is counted in entrants: this many of the largest requests at once.
        let server = &settings.server;
        let entrants = |largest: usize| {
            let entrants = largest.saturating_mul(MAX_ENTRANTS);
            u32::try_from(entrants).unwrap_or(u32::MAX)
        };
        let compute = Compute::new(
            server.compute_threads,
            entrants(server.max_concurrent_computations),
            entrants(server.client_share(server.max_concurrent_computations)),
        )?;
        let past_boards = PastBoards::new(
            server.max_concurrent_past_boards,
            server.client_share(server.max_concurrent_past_boards),
            server.past_boards_kept_players,
        );
        let round_orders = RoundOrders::new(
            server.max_concurrent_past_boards,
            server.client_share(server.max_concurrent_past_boards),
            server.round_orders_kept_entrants,
        );
        let read_connections = settings.database.read_connections;
        let connections = Arc::new(crate::serve::Connections::new(server, read_connections));
        let reads = storage.for_reads(read_connections);
        // A client's share of the connections themselves: with the default 4 and
        // `server.client_share_percent` 50, one client's reads hold at most 2 at once, and its
        // others wait for their turn, so that the rest always serve other clients. (A share
        // of reads under way, 16 of 32, let one client's slow reads hold all 4: another's
        // 1 ms history read took 1.3 s.)
        let read_turns =
            crate::rate_limit::Turns::new(server.client_share(read_connections as usize));
        let group_commit =
            GroupCommit::new(Arc::clone(&storage), settings.queue.max_queued_per_pool);
        let replica_id = if settings.replicas.id.is_empty() {
            Arc::from(random_replica_id())
        } else {
            Arc::from(settings.replicas.id.as_str())
        };
        Ok(Self(Arc::new(Shared {
            storage,
            reads,
            database_seen: tokio::sync::Mutex::default(),
            pools: Arc::new(Pools::default()),
            group_commit,
            past_boards,
            round_orders,
            loading: Loading::default(),
            keys: Keys {
                stored: ArcSwap::from_pointee(Vec::new()),
                turn: tokio::sync::Mutex::default(),
            },
            limits: Limits {
                rate_limits: RateLimits::new(&settings.rate_limit),
                read_turns: Arc::new(read_turns),
                compute: Arc::new(compute),
                bodies: crate::body_budget::BodyBudget::new(server),
                feeds: Arc::new(tokio::sync::Semaphore::new(MAX_FEEDS)),
                feed_shares: Arc::new(crate::rate_limit::Shares::new(MAX_FEEDS_PER_CLIENT)),
                connections,
            },
            lifecycle: Lifecycle {
                workers: TaskTracker::new(),
                run_workers: AtomicBool::new(false),
                coordinated: AtomicBool::new(false),
                replica_id,
                rebalance: tokio::sync::Notify::new(),
                shutdown: CancellationToken::new(),
                closing: CancellationToken::new(),
            },
            settings: Arc::new(settings),
        })))
    }

    /// Where replicas share the database, claims this process's id among them and returns
    /// them: pools added from then on are followed until this process takes their lease
    /// (`crate::ownership`, which the caller starts). `None` where one process owns it.
    pub async fn join_replicas(&self) -> anyhow::Result<Option<Arc<dyn Replicas>>> {
        let Some(replicas) = self.storage.replicas() else {
            return Ok(None);
        };
        // Two processes under one id would each take the other's heartbeat for its own.
        replicas.claim(self.replica_id()).await?;
        self.lifecycle.coordinated.store(true, Ordering::Relaxed);
        Ok(Some(replicas))
    }

    /// Loads the database's keys, and every stored pool into memory and starts its worker
    /// (`start_workers`), or leaves workers to the caller (tests drive
    /// [`worker::process_next`] themselves).
    pub async fn load_pools(&self, start_workers: bool) -> anyhow::Result<()> {
        self.lifecycle
            .run_workers
            .store(start_workers, Ordering::Relaxed);
        if let Some(name) = self.shadowed_key().await? {
            anyhow::bail!(
                "the configured key `{name}` has the name of a key kept in the database, which \
                 would go on working and could not be revoked: give the configured key another \
                 name, or start once without it and revoke the stored one (DELETE /v1/keys/{name})"
            );
        }
        self.refresh_keys().await?;
        self.load_stored_pools(self.storage.pool_names().await?, false)
            .await?;
        Ok(())
    }

    /// The name of a configured key that a working key kept in the database has too, if any.
    async fn shadowed_key(&self) -> Result<Option<String>, storage::Error> {
        let stored = self.storage.keys().await?;
        Ok(stored
            .into_iter()
            .filter(|key| key.revoked_at.is_none())
            .find(|key| self.settings.auth.keys.iter().any(|c| c.name == key.name))
            .map(|key| key.name))
    }

    /// Pool `name`: from memory, or else loaded from the database (with a worker if
    /// [`AppState::load_pools`] started them): at startup, and for a pool another process
    /// created since. `None` if the database has no such pool. Requests naming a pool while it
    /// loads wait for that load, and a load that failed on the stored data is answered from
    /// memory for [`LOAD_RETRY`] (`crate::pools::loading`).
    pub async fn pool(&self, name: &str) -> Result<Option<Arc<Pool>>, storage::Error> {
        self.pool_looked_up_in(name, None).await
    }

    /// [`AppState::pool`], where a pool neither in memory nor recently failed is first looked
    /// for in `lookup` (a request's reads), and loaded only if it is there: any client may name
    /// a pool that does not exist, and looking for it must not take a connection the worker
    /// and the writes need.
    pub async fn pool_looked_up_in(
        &self,
        name: &str,
        lookup: Option<&dyn Storage>,
    ) -> Result<Option<Arc<Pool>>, storage::Error> {
        if let Some(pool) = self.pools.get(name) {
            return Ok(Some(pool));
        }
        let remembered = |why: String| {
            storage::Error::Corrupt(format!(
                "{why} (remembered: the pool is read again {} s after the failure)",
                LOAD_RETRY.as_secs()
            ))
        };
        if let Some(why) = self.loading.recent_failure(name, Instant::now()) {
            return Err(remembered(why));
        }
        let _turn = self.loading.turn(name).await;
        if let Some(pool) = self.pools.get(name) {
            return Ok(Some(pool));
        }
        if let Some(why) = self.loading.recent_failure(name, Instant::now()) {
            return Err(remembered(why));
        }
        if let Some(lookup) = lookup {
            if lookup.pool(name).await?.is_none() {
                return Ok(None);
            }
        }
        let loaded = self.load(name).await;
        if let Err(error) = &loaded {
            if let Some(why) = bad_data(error) {
                tracing::error!(pool = name, %error, "the pool cannot be loaded");
                self.loading.failed(name, why, Instant::now());
            }
        }
        loaded
    }

    /// Reads pool `name` from the database into memory.
    async fn load(&self, name: &str) -> Result<Option<Arc<Pool>>, storage::Error> {
        let Some(loaded) = self.storage.load_pool(name).await? else {
            return Ok(None);
        };
        let state = blocking(move || PoolState::from_loaded(loaded))
            .await?
            .map_err(|error| storage::Error::Corrupt(format!("pool `{name}`: {error}")))?;
        let players = state.len();
        let (pool, inserted) = self.pools.insert(self.new_pool(name, state));
        if inserted {
            tracing::info!(pool = name, players, "pool loaded");
            self.start_worker_if_running(&pool);
        }
        Ok(Some(pool))
    }

    /// Creates pool `name` or changes its parameters: `overrides` on top of `[engine]`, as
    /// `actor` asked. A new pool gets a worker loop if [`AppState::load_pools`] started them.
    pub async fn put_pool(
        &self,
        name: &str,
        overrides: &ParamsOverrides,
        actor: &Actor,
    ) -> Result<(PoolWrite, SystemParams), PutPoolError> {
        let params = overrides.apply(&self.settings.engine)?;
        // A pool another process created is loaded first: it is not new here.
        let existing = self.pool(name).await?;
        // The worker reads the parameters in its turn: a change must not land mid-step.
        let turn = match &existing {
            Some(pool) => Some(pool.turn().await),
            None => None,
        };
        let outcome = self.storage.put_pool(name, &params, actor).await?;
        match &existing {
            Some(pool) if outcome != PoolWrite::Unchanged => {
                let display = pool.read().display().clone();
                drop(
                    pool.publish(
                        PoolState::new(params.clone(), display).map_err(ParamsError::from)?,
                    ),
                );
            }
            Some(_) => {}
            None => {
                let state = PoolState::new(params.clone(), Display::default())
                    .map_err(ParamsError::from)?;
                let (pool, inserted) = self.pools.insert(self.new_pool(name, state));
                if inserted {
                    self.start_worker_if_running(&pool);
                }
            }
        }
        drop(turn);
        Ok((outcome, params))
    }

    /// Deletes pool `name`: refused while this process rates it again for a correction; else
    /// in the pool's turn (a worker step under way ends first), every row of it in one
    /// transaction, then its memory, its worker and its past boards.
    pub async fn delete_pool(&self, name: &str, actor: &Actor) -> Result<Deletion, storage::Error> {
        // A pool another process created is loaded first, to be dropped with its worker.
        let existing = self.pool(name).await?;
        if existing
            .as_ref()
            .and_then(|pool| pool.recompute())
            .is_some_and(|recompute| recompute.finished.is_none())
        {
            return Ok(Deletion::Recomputing);
        }
        let turn = match &existing {
            Some(pool) => Some(pool.turn().await),
            None => None,
        };
        let deleted = self.storage.delete_pool(name, actor).await?;
        self.forget_pool(name);
        drop(turn);
        Ok(if deleted {
            Deletion::Deleted
        } else {
            Deletion::NotFound
        })
    }

    /// Drops pool `name` from memory: its worker and its writer end, its lease goes back at
    /// the next heartbeat, its past boards and its rounds' orders go.
    fn forget_pool(&self, name: &str) {
        if self.pools.remove(name).is_some() {
            tracing::info!(pool = name, "pool deleted");
        }
        self.group_commit.forget(name);
        self.past_boards.forget(name);
        self.round_orders.forget(name);
    }

    /// Sets pool `pool`'s display settings (validated by the caller) and publishes the pool
    /// shown with them; returns that snapshot. Re-sorting the leaderboards runs off the async
    /// threads, in the pool's turn, so no round is published in between. Should the settings be
    /// stored and this request end before the snapshot is published (a dropped connection, a
    /// panic), the worker finds at its next step that memory's settings differ from the stored
    /// ones and publishes them itself.
    ///
    /// New leagues are state: every player's league is recomputed from the history rows
    /// (no re-rating) and stored with the settings in one transaction.
    ///
    /// `change` makes the new settings from the current ones in the pool's turn, so that two
    /// changes of different settings both land.
    pub async fn put_display<E: From<storage::Error>>(
        &self,
        pool: &Pool,
        change: impl FnOnce(&Display) -> Result<Display, E>,
        actor: &Actor,
    ) -> Result<Arc<PoolState>, E> {
        let _turn = pool.turn().await;
        let current = pool.read();
        let display = change(current.display())?;
        if display.leagues == current.display().leagues {
            self.storage
                .put_display(pool.name(), &display, actor)
                .await?;
            let next = Arc::new(blocking(move || current.with_display(display)).await?);
            drop(pool.publish(Arc::clone(&next)));
            return Ok(next);
        }
        // Another process may apply a round between the read and the write: then again.
        let mut attempts = 0;
        let (recomputed, table) = loop {
            attempts += 1;
            let history = self.storage.league_rows(pool.name()).await?;
            let leagues = display.leagues.clone();
            let (recomputed, table) =
                blocking(move || recompute_leagues(leagues.as_ref(), history)).await?;
            match self
                .storage
                .put_leagues(pool.name(), &display, &recomputed, actor)
                .await
            {
                Err(storage::Error::Stale { .. }) if attempts < 3 => continue,
                Err(error) => return Err(error.into()),
                Ok(()) => break (recomputed, table),
            }
        };
        if recomputed.applied != current.applied() {
            // Memory is behind the database (another process applied rounds): reload the pool,
            // leagues and all, so that the answer shows what was stored.
            worker::reload(self.storage.as_ref(), pool)
                .await
                .map_err(|error| {
                    storage::Error::Corrupt(format!("reloading the pool: {error:#}"))
                })?;
            return Ok(pool.read());
        }
        let next = Arc::new(blocking(move || current.with_leagues(display, table)).await?);
        drop(pool.publish(Arc::clone(&next)));
        Ok(next)
    }

    /// Re-reads the database's keys: those not revoked are accepted from now on, and a
    /// revoked one no longer is. Refreshes take turns, so a read taken before a revocation
    /// cannot be stored after it.
    pub async fn refresh_keys(&self) -> Result<(), storage::Error> {
        let _turn = self.keys.turn.lock().await;
        let active: Vec<KeySettings> = self
            .storage
            .keys()
            .await?
            .into_iter()
            .filter(|key| key.revoked_at.is_none())
            // Startup refuses such a clash; one made since by a process configured otherwise
            // is not let shadow this process's key (nor share its budget).
            .filter(|key| {
                let shadowing = self.settings.auth.keys.iter().any(|c| c.name == key.name);
                if shadowing {
                    tracing::warn!(
                        key.name = key.name,
                        "a stored key has the name of a configured key: it does not work here"
                    );
                }
                !shadowing
            })
            .map(|key| KeySettings {
                name: key.name,
                role: key.role,
                sha256: key.sha256,
                pools: key.pools,
            })
            .collect();
        self.keys.stored.store(Arc::new(active));
        Ok(())
    }

    /// Creates a key kept in the database (its name and scope checked by the caller), working
    /// at once.
    pub async fn create_key(
        &self,
        name: &str,
        role: Role,
        pools: Scope,
        actor: &Actor,
    ) -> Result<NewKey, storage::Error> {
        if self.settings.auth.keys.iter().any(|key| key.name == name) {
            return Ok(NewKey::NameTaken);
        }
        let secret = new_secret()?;
        let key = StoredKey {
            name: name.to_owned(),
            role,
            sha256: hash_key(&secret),
            created_at: now(),
            revoked_at: None,
            pools,
        };
        if !self.storage.create_key(&key, actor).await? {
            return Ok(NewKey::NameTaken);
        }
        self.refresh_keys().await?;
        tracing::info!(key.name = name, key.role = role.as_str(), "key created");
        Ok(NewKey::Created(secret))
    }

    /// Revokes the database's key `name`: it stops working here at once (in other processes
    /// within [`KEY_REFRESH`]). `false` if there is no such key not yet revoked.
    pub async fn revoke_key(&self, name: &str, actor: &Actor) -> Result<bool, storage::Error> {
        let revoked = self.storage.revoke_key(name, now(), actor).await?;
        if revoked {
            // Dropped from memory without a read that could fail: the revocation is stored.
            let _turn = self.keys.turn.lock().await;
            let kept: Vec<KeySettings> = self
                .keys
                .stored
                .load()
                .iter()
                .filter(|key| key.name != name)
                .cloned()
                .collect();
            self.keys.stored.store(Arc::new(kept));
            tracing::info!(key.name = name, "key revoked");
        }
        Ok(revoked)
    }

    /// On a first start (no key configured, none in the database, and `auth.bootstrap`),
    /// creates an admin key and returns it, to be shown once; otherwise `None`.
    pub async fn bootstrap_key(&self) -> Result<Option<String>, storage::Error> {
        let auth = &self.settings.auth;
        if !auth.bootstrap || !auth.keys.is_empty() {
            return Ok(None);
        }
        let secret = new_secret()?;
        let key = StoredKey {
            name: FIRST_KEY_NAME.to_owned(),
            role: Role::Admin,
            sha256: hash_key(&secret),
            created_at: now(),
            revoked_at: None,
            pools: Scope::All,
        };
        let created = self
            .storage
            .create_first_key(&key, &Actor::service("bootstrap"))
            .await?;
        self.refresh_keys().await?;
        Ok(created.then_some(secret))
    }

    /// Loads the pools another process created since: every pool the database has and memory
    /// has not, past any that cannot be loaded; and drops those another process deleted.
    pub async fn load_new_pools(&self) -> Result<(), storage::Error> {
        let stored = self.storage.pool_names().await?;
        for pool in self.pools.all() {
            if !stored.iter().any(|name| name == pool.name()) {
                self.forget_pool(pool.name());
            }
        }
        self.load_stored_pools(stored, true).await
    }

    /// Loads every pool of `stored` not in memory yet. A pool that cannot be loaded fails the whole
    /// at startup; later (`skip_unloadable`), it keeps no other pool from loading (its failure
    /// is logged where its load was tried, and its own routes answer 500).
    async fn load_stored_pools(
        &self,
        stored: Vec<String>,
        skip_unloadable: bool,
    ) -> Result<(), storage::Error> {
        for name in stored {
            if self.pools.get(&name).is_none() {
                match self.pool(&name).await {
                    Err(error) if error.is_unavailable() || !skip_unloadable => return Err(error),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Re-reads the database's keys, and loads the pools another process created, every
    /// [`KEY_REFRESH`] until shutdown.
    pub fn start_key_refresh(&self) {
        let state = self.clone();
        self.lifecycle.workers.spawn(async move {
            let mut tick = tokio::time::interval(KEY_REFRESH);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = state.lifecycle.shutdown.cancelled() => return,
                }
                if let Err(error) = state.refresh_keys().await {
                    tracing::warn!(%error, "re-reading the keys failed; keeping the last ones");
                }
                if let Err(error) = state.load_new_pools().await {
                    tracing::warn!(%error, "looking for pools created elsewhere failed");
                }
            }
        });
    }

    /// Stores validated lines at the end of `pool`'s queue, all or none
    /// ([`Storage::enqueue_entries`]), if the pool is still as they were checked `against`,
    /// and wakes its worker if one was new.
    pub async fn enqueue_all(
        &self,
        pool: &Pool,
        entries: &[NewEntry<'_>],
        against: Option<Against<'_>>,
    ) -> Result<EnqueuedAll, storage::Error> {
        let outcome = self
            .group_commit
            .enqueue(pool.name(), entries, against)
            .await?;
        if let EnqueuedAll::Stored(outcomes) = &outcome {
            if outcomes
                .iter()
                .any(|o| matches!(o, Enqueued::Accepted { .. }))
            {
                pool.wake();
            }
        }
        Ok(outcome)
    }

    /// Stores a validated line (a round, a season start, a correction) at the end of `pool`'s
    /// queue, if the pool is still as it was checked `against`, and wakes its worker.
    pub async fn enqueue(
        &self,
        pool: &Pool,
        entry: NewEntry<'_>,
        against: Option<Against<'_>>,
    ) -> Result<Enqueued, storage::Error> {
        self.enqueue_all(pool, &[entry], against).await?.into_one()
    }

    /// The systems a round posted to `pool` must be rateable by, as the database has them: the
    /// pool's parameters, then those of the corrections queued that set new ones (they rate
    /// the rounds queued after them). Read when the queue found [`Systems::now`] behind.
    pub async fn systems_stored(&self, pool: &Pool) -> Result<Systems, storage::Error> {
        let progress = self
            .storage
            .pool_progress(pool.name())
            .await?
            .ok_or_else(|| storage::Error::PoolNotFound(pool.name().to_owned()))?;
        let corrections = self.storage.queued_corrections(pool.name()).await?;
        let mut pending: Vec<SystemParams> = Vec::new();
        // One that cannot be read fails when its turn comes; it sets nothing meanwhile.
        for params in corrections.iter().filter_map(|line| new_params(&line.body)) {
            if params != progress.params && !pending.contains(&params) {
                pending.push(params);
            }
        }
        Ok(Systems {
            params: progress.params,
            pending,
            correction: corrections.last().map(|line| line.seq),
        })
    }

    /// Cancelled once the service is stopping: open change feeds end.
    #[must_use]
    pub fn closing(&self) -> CancellationToken {
        self.lifecycle.closing.clone()
    }

    /// Ends every open change feed (the first step of stopping).
    pub fn close_streams(&self) {
        self.lifecycle.closing.cancel();
    }

    /// Starts `pool`'s worker loop.
    pub fn start_worker(&self, pool: Arc<Pool>) {
        let queue = &self.settings.queue;
        self.lifecycle.workers.spawn(worker::run(
            Arc::clone(&self.storage),
            pool,
            Duration::from_millis(queue.poll_interval_ms),
            Duration::from_millis(queue.retry_delay_ms),
            self.lifecycle.shutdown.clone(),
        ));
    }

    /// Pool `name` holding `state`, to add to memory: where replicas share the database, it is
    /// followed until this process takes its lease.
    fn new_pool(&self, name: &str, state: PoolState) -> Pool {
        let pool = Pool::new(name.to_owned(), state);
        if self.lifecycle.coordinated.load(Ordering::Relaxed) {
            pool.following()
        } else {
            pool
        }
    }

    /// Starts the worker of a pool just added to memory, when the loaded pools got one; where
    /// replicas share the database, the next heartbeat comes at once to give it an owner.
    fn start_worker_if_running(&self, pool: &Arc<Pool>) {
        if self.lifecycle.run_workers.load(Ordering::Relaxed) {
            if self.lifecycle.coordinated.load(Ordering::Relaxed) {
                self.lifecycle.rebalance.notify_one();
            }
            self.start_worker(Arc::clone(pool));
        }
    }

    /// Asks every worker to stop after its current round and waits until they have. Where
    /// replicas share the database, each pool's lease goes back as soon as its worker has
    /// stopped (`crate::ownership`), and then the lease connection ends.
    pub async fn stop_workers(&self) {
        self.lifecycle.shutdown.cancel();
        self.lifecycle.workers.close();
        self.lifecycle.workers.wait().await;
        if self.lifecycle.coordinated.load(Ordering::Relaxed) {
            if let Some(replicas) = self.storage.replicas() {
                replicas.leave(&self.lifecycle.replica_id).await;
            }
        }
    }

    /// Runs `task` until the service stops; stopping waits for it.
    pub fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        self.lifecycle.workers.spawn(task);
    }

    /// Resolves when a pool was added to memory since the last call: the heartbeat gives it an
    /// owner at once.
    pub async fn pool_added(&self) {
        self.lifecycle.rebalance.notified().await;
    }

    /// Resolves once the service is stopping.
    pub async fn stopping(&self) {
        self.lifecycle.shutdown.cancelled().await;
    }

    /// This process's name among the replicas sharing the database.
    #[must_use]
    pub fn replica_id(&self) -> &str {
        &self.lifecycle.replica_id
    }

    /// Whether this process shares the database with other replicas (see
    /// [`crate::ownership`]).
    #[must_use]
    pub fn coordinated(&self) -> bool {
        self.lifecycle.coordinated.load(Ordering::Relaxed)
    }
}

/// A name for this process among the replicas when none is configured: new at each start,
/// so that a restarted process is not taken for the one that died.
fn random_replica_id() -> String {
    let mut bytes = [0u8; 6];
    if getrandom::getrandom(&mut bytes).is_err() {
        // Unique enough among the replicas of one database: the process id and the clock.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        return format!("replica-{}-{nanos:08x}", std::process::id());
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("replica-{hex}")
}

/// Runs `work` on a blocking thread. A panic in it (a bug) goes on as the caller's panic.
/// What a failed load says, if it failed on the stored data itself (a value that does not
/// decode, players that do not fit the pool): that fails the same way until someone repairs the
/// data, so it is remembered. Anything else (an outage, an SQL error, a server out of memory) is
/// tried again at the next request.
fn bad_data(error: &storage::Error) -> Option<String> {
    match error {
        storage::Error::Corrupt(why) => Some(why.clone()),
        storage::Error::Database(
            cause @ (sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_)),
        ) => Some(cause.to_string()),
        _ => None,
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, storage::Error> {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => Ok(done),
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => Err(storage::Error::Corrupt(format!(
                "work on a blocking thread was cancelled: {error}"
            ))),
        },
    }
}

/// Every player's league under `leagues`, from a pool's history: what to store, and the
/// table to publish.
fn recompute_leagues(
    leagues: Option<&Leagues>,
    history: LeagueHistory,
) -> (Recomputed, LeagueTable) {
    let points: Vec<HistoryPoint<'_>> = history
        .rows
        .iter()
        .map(|row| HistoryPoint {
            round: row.seq,
            entrant: Entrant {
                player: &row.player,
                rank: row.rank,
                rating: row.rating,
                prior: row.prior,
                rounds: 0,
                time: row.time,
            },
        })
        .collect();
    let (table, moves) = recompute(leagues, &points, &history.seasons);
    let rows = history
        .rows
        .iter()
        .zip(moves)
        .filter(|(_, moved)| moved.before.is_some() || moved.after.is_some())
        .map(|(row, moved)| (row.player.clone(), row.seq, moved))
        .collect();
    let players = table
        .placements()
        .map(|(player, placement, spent)| (player.to_string(), placement, spent))
        .collect();
    let recomputed = Recomputed {
        applied: history.applied,
        rows,
        players,
    };
    (recomputed, table)
}
