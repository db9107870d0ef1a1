//! The fixtures the storage tests share (parameters, round bodies, rated rounds) and [`run`],
//! which hands each test a storage opened on a fresh database (`tests/common/db.rs`).
//! Asserts nothing.

use std::future::Future;
use std::sync::Arc;

use crate::storage_ext::{tester, StorageExt};
use mmr_service::display::LeagueMove;
use mmr_service::engine::{Beliefs, EloMmrParams, Population, Round, Standing, SystemParams};
use mmr_service::storage::{self, AppliedEntrant, AppliedRound, ResultsPage, RoundRecord, Storage};
use sqlx::Connection;

pub use crate::db::Backend;

/// A queue bound no test reaches unless it means to.
pub const ROOMY_QUEUE: u64 = 1_000;

/// The pool most tests use.
pub const POOL: &str = "main";

/// Every result of a round, in one page.
pub const ALL: ResultsPage = ResultsPage {
    after: None,
    limit: u32::MAX,
    sorted_up_to: u64::MAX,
};

/// Round `id` of [`POOL`], which the test stored.
pub async fn stored_round(db: &Db, id: &str) -> RoundRecord {
    db.storage
        .round(POOL, id, &ALL)
        .await
        .expect("read")
        .expect("stored")
}

/// What a test gets: the storage and the URL it was opened with (to open it again, as a
/// second process or after a restart would).
#[derive(Clone)]
pub struct Db {
    /// The storage under test.
    pub storage: Arc<dyn Storage>,
    /// Its database URL.
    pub url: String,
}

/// Opens the storage on a fresh database on `backend`, runs `test` on it and removes the
/// database (`db::with_database`: even when the test panicked; SKIPPED without Postgres).
pub async fn run<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(Db) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    crate::db::with_database(backend, |url| async move {
        let storage = storage::connect(&url)
            .await
            .expect("open the test database");
        test(Db {
            storage: Arc::clone(&storage),
            url,
        })
        .await;
        storage.close().await;
    })
    .await;
}

/// The default parameters, with which the fixtures' pools are created.
pub fn params() -> SystemParams {
    SystemParams::EloMmr(EloMmrParams::default())
}

/// Creates the test pool with default parameters.
pub async fn create_pool(db: &Db) {
    db.storage
        .put_pool(POOL, &params(), &tester())
        .await
        .expect("create the pool");
}

/// A canonical body for round `id` (its content is opaque to storage).
pub fn body(id: &str, players: &[&str]) -> String {
    let standings: Vec<String> = players
        .iter()
        .enumerate()
        .map(|(i, p)| format!(r#"{{"player":"{p}","rank":{}}}"#, i + 1))
        .collect();
    format!(r#"{{"id":"{id}","standings":[{}]}}"#, standings.join(","))
}

/// Queues round `id` with `players` finishing in that order; panics unless accepted.
pub async fn enqueue(db: &Db, id: &str, players: &[&str]) {
    let outcome = db
        .storage
        .enqueue_round(POOL, id, &body(id, players), ROOMY_QUEUE)
        .await
        .expect("enqueue");
    assert!(
        matches!(outcome, storage::Enqueued::Accepted { .. }),
        "{id}: {outcome:?}"
    );
}

/// Rates a round of `players` finishing in that order at `time` on `population`, as the
/// worker would, and returns what it stores.
pub fn rate(population: &mut Population, players: &[&str], time: Option<i64>) -> AppliedRound {
    let standings: Vec<Standing> = players
        .iter()
        .enumerate()
        .map(|(i, p)| Standing::solo(*p, i as u64 + 1))
        .collect();
    let round = Round {
        time,
        ..Round::new(standings)
    };
    let changes = population.apply(&round).expect("rate the round");
    let entrants = round
        .standings
        .iter()
        .zip(changes)
        .map(|(standing, change)| AppliedEntrant {
            player: standing.player.clone(),
            rank: standing.rank,
            change,
            league: LeagueMove::default(),
            bonus_spent: 0.0,
            expected_rank: None,
            state: population
                .belief(&standing.player)
                .expect("a rated player has a state")
                .clone(),
            previous: None,
        })
        .collect();
    AppliedRound { time, entrants }
}

/// A population with the fixtures' parameters.
pub fn population() -> Population {
    Population::new(params()).expect("valid parameters")
}

/// Queues and applies round `id`, rated on `population`.
pub async fn enqueue_and_apply(
    db: &Db,
    population: &mut Population,
    id: &str,
    players: &[&str],
    time: Option<i64>,
) -> AppliedRound {
    enqueue(db, id, players).await;
    let mut applied = rate(population, players, time);
    // Each entrant's history row chains to their newest one, as the worker's memory says.
    for entrant in &mut applied.entrants {
        let newest = db
            .storage
            .player_history(POOL, &entrant.player, 1, None)
            .await
            .expect("history");
        entrant.previous = newest.entries.first().map(|e| e.seq);
    }
    db.storage
        .apply_round(POOL, id, &applied)
        .await
        .expect("apply the round");
    applied
}

/// Runs `sql` on the database at `url` through a connection of its own, beside any storage
/// open on it (as an operator's tool or damage would change it), and returns the first column
/// of its first row, if it returns any: a count, say.
pub async fn execute_raw(url: &str, sql: &str) -> Option<i64> {
    if url.starts_with("sqlite:") {
        let mut connection = sqlx::SqliteConnection::connect(url).await.expect("open");
        let row: Option<(i64,)> = sqlx::query_as(sql)
            .fetch_optional(&mut connection)
            .await
            .expect("execute");
        row.map(|(value,)| value)
    } else {
        let mut connection = sqlx::PgConnection::connect(url).await.expect("open");
        let row: Option<(i64,)> = sqlx::query_as(sql)
            .fetch_optional(&mut connection)
            .await
            .expect("execute");
        row.map(|(value,)| value)
    }
}
