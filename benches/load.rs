//! Mixed load run of the whole service over loopback (not criterion): for a fixed time,
//! writer clients post rounds to several pools while reader clients look up players,
//! leaderboard pages, histories and win probabilities; a sampler polls `/readyz` for the
//! queue depth. When the time is up the writers stop, the queues drain, and every pool is
//! checked to have applied every round it accepted.
//!
//! `cargo bench --bench load` (60 s per backend; `MMR_LOAD_SECS` changes it, Postgres is
//! skipped when it does not answer). Results go to stdout as Markdown for BENCHMARKS.md.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "common/clients.rs"]
mod clients;
#[path = "common/mod.rs"]
mod common;

use clients::{percentiles, Rng};

const KEY: &str = "load-key";
const POOLS: usize = 4;
const WRITERS: usize = 8;
const READERS: usize = 24;
/// Players per pool; rounds draw their entrants from them.
const PLAYERS: u64 = 5_000;
/// Entrants of a posted round: uniform in this range.
const ENTRANTS: (u64, u64) = (10, 200);
/// Rounds posted to each pool before the clock starts, so that reads find ratings.
const SEED_ROUNDS: usize = 40;

/// The read routes, as the tables name them.
const ROUTES: [&str; 4] = [
    "player lookup",
    "leaderboard page of 100",
    "player history (20)",
    "win probability",
];

fn main() {
    let seconds = std::env::var("MMR_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let service = tokio::runtime::Runtime::new().expect("a runtime");
    let clients = tokio::runtime::Runtime::new().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sqlite_url = format!("sqlite://{}", dir.path().join("load.sqlite3").display());
    let mut backends = vec![("SQLite", sqlite_url)];
    match service.block_on(common::fresh_postgres("mmr_load")) {
        Ok(url) => backends.push(("Postgres", url)),
        Err(reason) => println!("Postgres SKIPPED: {reason}"),
    }
    for (backend, url) in backends {
        let base = serve(&service, &url);
        let report = clients.block_on(run(&base, Duration::from_secs(seconds)));
        report.print(backend, seconds);
    }
}

/// Starts the service on `database_url` with generous queue and rate limits (the run
/// measures throughput, not the limits), creates the pools, returns the base URL.
fn serve(runtime: &tokio::runtime::Runtime, database_url: &str) -> String {
    let base = common::start(runtime, database_url, KEY);
    let client = reqwest::blocking::Client::new();
    for pool in 0..POOLS {
        let status = client
            .put(format!("{base}/v1/pools/load{pool}"))
            .bearer_auth(KEY)
            .json(&json!({}))
            .send()
            .expect("PUT answered")
            .status();
        assert!(status.is_success(), "pool created: {status}");
    }
    base
}

/// What one client saw.
#[derive(Default)]
struct Tally {
    /// Latencies in ms, per read route (index in [`ROUTES`]) or of round POSTs.
    reads: [Vec<f64>; ROUTES.len()],
    posts: Vec<f64>,
    accepted: u64,
    entrants: u64,
    /// Answers that were neither 2xx nor a player unknown to a read (404 `player_not_found`
    /// happens when a reader picks a player no applied round has named yet).
    errors: Vec<String>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        for (mine, theirs) in self.reads.iter_mut().zip(other.reads) {
            mine.extend(theirs);
        }
        self.posts.extend(other.posts);
        self.accepted += other.accepted;
        self.entrants += other.entrants;
        self.errors.extend(other.errors);
    }
}

/// Everything measured in one run.
struct Report {
    tally: Tally,
    /// From the start until every accepted round was applied.
    drained: Duration,
    max_queue_depth: u64,
    applied: u64,
}

impl Report {
    fn print(&self, backend: &str, seconds: u64) {
        let t = &self.tally;
        let secs = seconds as f64;
        println!();
        println!(
            "### {backend}: {seconds} s, {WRITERS} writers on {POOLS} pools, {READERS} readers"
        );
        println!();
        println!("| | value |");
        println!("|---|---|");
        println!(
            "| rounds accepted | {} ({:.1}/s) |",
            t.accepted,
            t.accepted as f64 / secs
        );
        println!(
            "| entrants applied | {} ({:.0}/s until the queues drained at {:.1} s) |",
            t.entrants,
            t.entrants as f64 / self.drained.as_secs_f64(),
            self.drained.as_secs_f64()
        );
        println!(
            "| rounds applied = accepted | {} |",
            self.applied == t.accepted
        );
        println!("| max queue depth (all pools) | {} |", self.max_queue_depth);
        println!("| errors | {} |", t.errors.len());
        println!();
        println!("| route | requests | requests/s | p50 ms | p99 ms |");
        println!("|---|---|---|---|---|");
        let row = |name: &str, latencies: &[f64]| {
            let (p50, p99) = percentiles(latencies);
            println!(
                "| {name} | {} | {:.0} | {p50:.2} | {p99:.2} |",
                latencies.len(),
                latencies.len() as f64 / secs
            );
        };
        row("POST round", &t.posts);
        for (name, latencies) in ROUTES.iter().zip(&t.reads) {
            row(name, latencies);
        }
        for error in t.errors.iter().take(10) {
            println!("error: {error}");
        }
    }
}

async fn run(base: &str, duration: Duration) -> Report {
    let client = reqwest::Client::new();
    for pool in 0..POOLS {
        for n in 0..SEED_ROUNDS {
            let mut rng = Rng(((pool * 1000 + n) as u64) << 8 | 1);
            let (round, _) = random_round(&mut rng, &format!("seed-{n}"));
            let response = post_round(&client, base, pool, &round).await;
            assert!(response.is_ok(), "seed round: {response:?}");
        }
    }
    wait_drained(&client, base).await;

    let started = Instant::now();
    let deadline = started + duration;
    let max_depth = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample_depth(
        client.clone(),
        base.to_owned(),
        Arc::clone(&max_depth),
        Arc::clone(&done),
    ));
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        tasks.push(tokio::spawn(write(
            client.clone(),
            base.to_owned(),
            writer,
            deadline,
        )));
    }
    for reader in 0..READERS {
        tasks.push(tokio::spawn(read(
            client.clone(),
            base.to_owned(),
            reader,
            deadline,
        )));
    }
    let mut tally = Tally::default();
    for task in tasks {
        tally.merge(task.await.expect("a client task"));
    }
    wait_drained(&client, base).await;
    let drained = started.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.await.expect("the sampler");

    let mut applied = 0;
    for pool in 0..POOLS {
        let info: Value = client
            .get(format!("{base}/v1/pools/load{pool}"))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .expect("pool")
            .json()
            .await
            .expect("pool JSON");
        let count = info["rounds_applied"].as_u64().expect("applied count");
        applied += count - SEED_ROUNDS as u64;
    }
    Report {
        tally,
        drained,
        max_queue_depth: max_depth.load(Ordering::Relaxed),
        applied,
    }
}

/// Posts rounds to the pools in turn until `deadline`.
async fn write(client: reqwest::Client, base: String, writer: usize, deadline: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut rng = Rng(0x9e37_79b9 ^ (writer as u64 + 1) << 20);
    let mut n = 0;
    while Instant::now() < deadline {
        let pool = (writer + n) % POOLS;
        let (round, entrants) = random_round(&mut rng, &format!("w{writer}-{n}"));
        let started = Instant::now();
        match post_round(&client, &base, pool, &round).await {
            Ok(()) => {
                tally.posts.push(started.elapsed().as_secs_f64() * 1e3);
                tally.accepted += 1;
                tally.entrants += entrants;
            }
            Err(error) => tally.errors.push(error),
        }
        n += 1;
    }
    tally
}

/// Sends reads, routes drawn at random, until `deadline`.
async fn read(client: reqwest::Client, base: String, reader: usize, deadline: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut rng = Rng(0x5851_f42d ^ (reader as u64 + 1) << 24);
    while Instant::now() < deadline {
        let pool = rng.below(POOLS as u64);
        let route = rng.below(ROUTES.len() as u64) as usize;
        // Two different players: a win probability against oneself is a 400.
        let a = rng.below(PLAYERS);
        let b = (a + 1 + rng.below(PLAYERS - 1)) % PLAYERS;
        let path = match route {
            0 => format!("players/p{a}"),
            1 => "leaderboard?limit=100".to_owned(),
            2 => format!("players/p{a}/history?limit=20"),
            _ => format!("win-probability?a=p{a}&b=p{b}"),
        };
        let started = Instant::now();
        let outcome = client
            .get(format!("{base}/v1/pools/load{pool}/{path}"))
            .send()
            .await;
        let elapsed = started.elapsed().as_secs_f64() * 1e3;
        match outcome {
            Ok(response) if response.status().is_success() => {
                drop(response.bytes().await);
                tally.reads[route].push(elapsed);
            }
            Ok(response) if response.status() == 404 => {
                let body = response.text().await.unwrap_or_default();
                if body.contains("player_not_found") {
                    tally.reads[route].push(elapsed);
                } else {
                    tally.errors.push(format!("GET {path}: 404 {body}"));
                }
            }
            Ok(response) => {
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                tally.errors.push(format!("GET {path}: {status} {body}"));
            }
            Err(error) => tally.errors.push(format!("GET {path}: {error}")),
        }
    }
    tally
}

/// Polls `/readyz` every 50 ms until `done`, keeping the largest queue depth seen.
async fn sample_depth(
    client: reqwest::Client,
    base: String,
    max_depth: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
) {
    while !done.load(Ordering::Relaxed) {
        if let Some(depth) = queue_depth(&client, &base).await {
            max_depth.fetch_max(depth, Ordering::Relaxed);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn queue_depth(client: &reqwest::Client, base: &str) -> Option<u64> {
    let ready: Value = client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    ready["queue_depth"].as_u64()
}

async fn wait_drained(client: &reqwest::Client, base: &str) {
    while queue_depth(client, base).await != Some(0) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Posts `round` to pool `load{pool}`; an error names what went wrong.
async fn post_round(
    client: &reqwest::Client,
    base: &str,
    pool: usize,
    round: &Value,
) -> Result<(), String> {
    let response = client
        .post(format!("{base}/v1/pools/load{pool}/rounds"))
        .bearer_auth(KEY)
        .json(round)
        .send()
        .await
        .map_err(|e| format!("POST: {e}"))?;
    let status = response.status();
    if status == 202 {
        return Ok(());
    }
    let body = response.text().await.unwrap_or_default();
    Err(format!("POST: {status} {body}"))
}

/// A round named `id` of distinct random players in a random order, about one in ten tied
/// with the one before; and its number of entrants.
fn random_round(rng: &mut Rng, id: &str) -> (Value, u64) {
    let size = ENTRANTS.0 + rng.below(ENTRANTS.1 - ENTRANTS.0 + 1);
    let mut players = std::collections::BTreeSet::new();
    while (players.len() as u64) < size {
        players.insert(rng.below(PLAYERS));
    }
    let mut order: Vec<u64> = players.into_iter().collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut rank = 0;
    let standings: Vec<Value> = order
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i == 0 || rng.below(10) != 0 {
                rank = i + 1;
            }
            json!({"player": format!("p{p}"), "rank": rank})
        })
        .collect();
    (json!({"id": id, "standings": standings}), size)
}
