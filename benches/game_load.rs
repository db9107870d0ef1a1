//! A game posting 1v1 results as they finish (issue 48 item 2), not criterion: for a fixed
//! time, [`CLIENTS`] clients each post one match per request, two players drawn from
//! [`PLAYERS`], while a reader asks for the same pool's leaderboard and players
//! ([`READS_PER_SECOND`]) and a subscriber to the pool's change feed notes when each round is
//! seen applied; then the queue drains. Beside it, in the same run, the database's own rate for the same durable work: one
//! single-row insert committed per request by as many clients (`pgbench` on Postgres; the same
//! loop over SQLite connections in the service's settings).
//!
//! `cargo bench --bench game_load` (20 s per backend; `MMR_GAME_SECS` changes it, Postgres is
//! skipped when it does not answer). Results go to stdout as Markdown for BENCHMARKS.md.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection};

#[path = "common/clients.rs"]
mod clients;
#[path = "common/mod.rs"]
mod common;

use clients::{percentiles, Rng};

const KEY: &str = "game-key";
const POOL: &str = "game";
const CLIENTS: usize = 16;
const PLAYERS: u64 = 100_000;
/// Reads of the pool a second, leaderboard pages and player pages in turn.
const READS_PER_SECOND: u32 = 200;
/// A round's body as a game posts it is about this long; the database's own inserts store as
/// much.
const BODY_BYTES: usize = 120;

fn main() {
    let seconds = std::env::var("MMR_GAME_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let duration = Duration::from_secs(seconds);
    let service = tokio::runtime::Runtime::new().expect("a runtime");
    let clients = tokio::runtime::Runtime::new().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sqlite_url = format!("sqlite://{}", dir.path().join("game.sqlite3").display());
    let sqlite_rate = clients.block_on(sqlite_inserts(&dir.path().join("own.sqlite3"), duration));
    let mut backends = vec![("SQLite", sqlite_url, Ok(sqlite_rate), None)];
    match service.block_on(common::fresh_postgres("mmr_game")) {
        Ok(url) => {
            let own = |run: fn(&str, Duration) -> Result<OwnRate, String>| {
                service
                    .block_on(common::fresh_postgres("mmr_game_own"))
                    .and_then(|own| run(&own, duration))
            };
            let (inserts, matches) = (own(pgbench_inserts), own(pgbench_matches));
            backends.push(("Postgres", url, inserts, Some(matches)));
        }
        Err(reason) => println!("Postgres SKIPPED: {reason}"),
    }
    for (backend, url, database_rate, match_rate) in backends {
        let base = common::start(&service, &url, KEY);
        let report = clients.block_on(run(&base, duration));
        report.print(backend, seconds, database_rate, match_rate);
    }
}

/// The database's own rate, and the machine's CPU time per insert while it ran.
#[derive(Clone, Copy)]
struct OwnRate {
    per_second: f64,
    cpu_ms: f64,
}

/// The machine's busy CPU time, read from `/proc/stat` (Linux): every core's time not idle.
#[derive(Clone, Copy)]
struct Cpu {
    busy: u64,
    total: u64,
    at: Instant,
}

impl Cpu {
    fn now() -> Self {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let ticks: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .filter_map(|n| n.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal …: idle and iowait are not busy.
        let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
        let total: u64 = ticks.iter().take(8).sum();
        Self {
            busy: total - idle,
            total,
            at: Instant::now(),
        }
    }

    /// CPU-seconds the machine was busy since `self`, over all its cores.
    fn busy_since(&self) -> f64 {
        let now = Self::now();
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        let share = (now.busy - self.busy) as f64 / (now.total - self.total).max(1) as f64;
        share * cores * now.at.duration_since(self.at).as_secs_f64()
    }
}

/// Commits per second of one single-row insert each, by [`CLIENTS`] connections for
/// `duration`, on a fresh SQLite file in the service's settings (WAL, `synchronous = FULL`).
async fn sqlite_inserts(path: &std::path::Path, duration: Duration) -> OwnRate {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(30));
    let mut setup = options.connect().await.expect("the file opens");
    sqlx::query("CREATE TABLE rounds (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .execute(&mut setup)
        .await
        .expect("a table");
    let cpu = Cpu::now();
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let options = options.clone();
        tasks.push(tokio::spawn(async move {
            let mut connection = options.connect().await.expect("the file opens");
            let body = "x".repeat(BODY_BYTES);
            let mut committed = 0u64;
            while Instant::now() < deadline {
                sqlx::query("INSERT INTO rounds (body) VALUES ($1)")
                    .bind(&body)
                    .execute(&mut connection)
                    .await
                    .expect("an insert");
                committed += 1;
            }
            connection.close().await.expect("closed");
            committed
        }));
    }
    let mut committed = 0;
    for task in tasks {
        committed += task.await.expect("a client");
    }
    OwnRate {
        per_second: committed as f64 / duration.as_secs_f64(),
        cpu_ms: cpu.busy_since() * 1e3 / committed.max(1) as f64,
    }
}

/// `pgbench`'s transactions per second of one single-row insert each, by [`CLIENTS`] clients
/// for `duration`, in a fresh database at `url`.
fn pgbench_inserts(url: &str, duration: Duration) -> Result<OwnRate, String> {
    pgbench(
        url,
        duration,
        "CREATE TABLE rounds (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)",
        &format!("INSERT INTO rounds (body) VALUES (repeat('x', {BODY_BYTES}));\n"),
    )
}

/// `pgbench`'s transactions per second writing what the service makes durable for one match,
/// one transaction each: the round's row, its two history rows, its two players' upserts and
/// the round's mark, by [`CLIENTS`] clients for `duration`, in a fresh database at `url`. The
/// service's own rows are wider; these are what any rating service must write.
fn pgbench_matches(url: &str, duration: Duration) -> Result<OwnRate, String> {
    let setup = "
        CREATE TABLE rounds (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL,
                             status TEXT NOT NULL DEFAULT 'queued');
        CREATE TABLE history (seq BIGINT, player TEXT, rank BIGINT, performance FLOAT8,
                              mu_before FLOAT8, sigma_before FLOAT8, mu_after FLOAT8,
                              sigma_after FLOAT8, PRIMARY KEY (player, seq));
        CREATE TABLE players (player TEXT PRIMARY KEY, mu FLOAT8, sigma FLOAT8,
                              rounds BIGINT, last_seq BIGINT)";
    let script = format!(
        "\\set a random(1, {PLAYERS})
\\set b 1 + (:a + random(0, {last})) % {PLAYERS}
BEGIN;
INSERT INTO rounds (body) VALUES (repeat('x', {BODY_BYTES})) RETURNING id \\gset
INSERT INTO history VALUES (:id, 'p' || :a, 1, 1600, 1500, 350, 1520, 340),
                           (:id, 'p' || :b, 2, 1400, 1500, 350, 1480, 340);
INSERT INTO players VALUES ('p' || :a, 1520, 340, 1, :id), ('p' || :b, 1480, 340, 1, :id)
    ON CONFLICT (player) DO UPDATE SET mu = EXCLUDED.mu, sigma = EXCLUDED.sigma,
                                       rounds = players.rounds + 1, last_seq = EXCLUDED.last_seq;
UPDATE rounds SET status = 'applied' WHERE id = :id;
END;
",
        last = PLAYERS - 2
    );
    pgbench(url, duration, setup, &script)
}

/// `pgbench`'s transactions per second of `script`, by [`CLIENTS`] clients for `duration`, in
/// the database at `url` once `setup` ran in it; and the machine's CPU time per transaction.
fn pgbench(url: &str, duration: Duration, setup: &str, script: &str) -> Result<OwnRate, String> {
    let bindir = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .map_err(|e| format!("pg_config: {e}"))?;
    let pgbench = format!("{}/pgbench", String::from_utf8_lossy(&bindir.stdout).trim());
    let status = Command::new("psql")
        .args([url, "-qc", setup])
        .status()
        .map_err(|e| format!("psql: {e}"))?;
    if !status.success() {
        return Err(format!("psql: {status}"));
    }
    let file = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    std::fs::write(file.path(), script).map_err(|e| e.to_string())?;
    let cpu = Cpu::now();
    let output = Command::new(pgbench)
        .args(["-n", "-c", &CLIENTS.to_string(), "-j", "2", "-T"])
        .arg(duration.as_secs().to_string())
        .arg("-f")
        .arg(file.path())
        .arg(url)
        .output()
        .map_err(|e| format!("pgbench: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|line| line.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|tps| tps.parse::<f64>().ok())
        .map(|per_second| OwnRate {
            per_second,
            cpu_ms: cpu.busy_since() * 1e3 / (per_second * duration.as_secs_f64()).max(1.0),
        })
        .ok_or_else(|| {
            format!(
                "pgbench said: {text}{}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
}

/// What the clients saw.
#[derive(Default)]
struct Tally {
    /// Each accepted round: its id, when its POST was sent, and how long the answer took (ms).
    posted: Vec<(String, Instant, f64)>,
    reads: Vec<f64>,
    errors: Vec<String>,
}

struct Report {
    tally: Tally,
    /// When the subscriber saw each round applied.
    seen: HashMap<String, Instant>,
    /// From the start until the last accepted round was seen applied.
    drained: Duration,
    /// The machine's busy CPU-seconds meanwhile.
    cpu_seconds: f64,
}

impl Report {
    fn print(
        &self,
        backend: &str,
        seconds: u64,
        database_rate: Result<OwnRate, String>,
        match_rate: Option<Result<OwnRate, String>>,
    ) {
        let t = &self.tally;
        let applied = t
            .posted
            .iter()
            .filter(|(id, ..)| self.seen.contains_key(id))
            .count();
        let rate = applied as f64 / self.drained.as_secs_f64();
        let to_applied: Vec<f64> = t
            .posted
            .iter()
            .filter_map(|(id, sent, _)| {
                let seen = self.seen.get(id)?;
                Some(seen.saturating_duration_since(*sent).as_secs_f64() * 1e3)
            })
            .collect();
        let posts: Vec<f64> = t.posted.iter().map(|(.., ms)| *ms).collect();
        println!();
        println!("### {backend}: {seconds} s, {CLIENTS} clients posting 1v1 matches among {PLAYERS} players, {READS_PER_SECOND} reads/s");
        println!();
        println!("| | value | goal |");
        println!("|---|---|---|");
        println!(
            "| matches accepted; seen applied | {}; {applied} | all |",
            t.posted.len()
        );
        println!(
            "| applied matches/s (until the last was seen, {:.1} s) | {rate:.0} | |",
            self.drained.as_secs_f64()
        );
        match database_rate {
            Ok(own) => {
                println!(
                    "| the database's own durable single-row inserts/s, {CLIENTS} clients | {:.0}; applied/own **{:.2}** | ≥ 0.5 |",
                    own.per_second,
                    rate / own.per_second
                );
                println!(
                    "| the machine's CPU-ms per applied match / per own insert | {:.3} / {:.3} | |",
                    self.cpu_seconds * 1e3 / applied.max(1) as f64,
                    own.cpu_ms
                );
            }
            Err(reason) => println!("| the database's own rate | not measured: {reason} | |"),
        }
        match match_rate {
            Some(Ok(own)) => println!(
                "| the database's own rate for a match's rows, one transaction each; CPU-ms each | {:.0}, applied/own {:.2}; {:.3} | |",
                own.per_second,
                rate / own.per_second,
                own.cpu_ms
            ),
            Some(Err(reason)) => println!("| the database's own rate for a match's rows | not measured: {reason} | |"),
            None => {}
        }
        let (p50, p99) = percentiles(&posts);
        println!("| POST p50 / p99 ms | {p50:.1} / {p99:.1} | p99 ≤ 50 |");
        let (p50, p99) = percentiles(&to_applied);
        println!("| POST to seen applied p50 / p99 ms | {p50:.1} / {p99:.1} | p99 ≤ 200 |");
        let (p50, p99) = percentiles(&t.reads);
        println!(
            "| reads of the pool ({}) p50 / p99 ms | {p50:.1} / {p99:.1} | p99 ≤ 20 |",
            t.reads.len()
        );
        println!("| errors | {} | 0 |", t.errors.len());
        for error in t.errors.iter().take(10) {
            println!("error: {error}");
        }
    }
}

async fn run(base: &str, duration: Duration) -> Report {
    let client = reqwest::Client::new();
    let status = client
        .put(format!("{base}/v1/pools/{POOL}"))
        .bearer_auth(KEY)
        .json(&json!({}))
        .send()
        .await
        .expect("PUT answered")
        .status();
    assert!(status.is_success(), "pool created: {status}");
    let seen = Arc::new(Mutex::new(HashMap::new()));
    let subscriber = tokio::spawn(subscribe(
        client.clone(),
        base.to_owned(),
        Arc::clone(&seen),
    ));
    let cpu = Cpu::now();
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for writer in 0..CLIENTS {
        tasks.push(tokio::spawn(post(
            client.clone(),
            base.to_owned(),
            writer,
            deadline,
        )));
    }
    tasks.push(tokio::spawn(read(
        client.clone(),
        base.to_owned(),
        deadline,
    )));
    let mut tally = Tally::default();
    for task in tasks {
        let mut part = task.await.expect("a client task");
        tally.posted.append(&mut part.posted);
        tally.reads.append(&mut part.reads);
        tally.errors.append(&mut part.errors);
    }
    // Every accepted round seen applied, or a minute after the posts stopped.
    let give_up = Instant::now() + Duration::from_secs(60);
    let drained = loop {
        let last = {
            let seen = seen.lock().expect("the seen rounds");
            tally
                .posted
                .iter()
                .map(|(id, ..)| seen.get(id).copied())
                .try_fold(started, |latest, at| at.map(|at| latest.max(at)))
        };
        if let Some(last) = last {
            break last - started;
        }
        if Instant::now() > give_up {
            tally
                .errors
                .push("not every round was seen applied".to_owned());
            break started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let cpu_seconds = cpu.busy_since();
    subscriber.abort();
    let seen = std::mem::take(&mut *seen.lock().expect("the seen rounds"));
    Report {
        tally,
        seen,
        drained,
        cpu_seconds,
    }
}

/// Posts one match at a time until `deadline`.
async fn post(client: reqwest::Client, base: String, writer: usize, deadline: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut rng = Rng(0x9e37_79b9 ^ (writer as u64 + 1) << 20);
    let mut n = 0;
    while Instant::now() < deadline {
        let a = rng.below(PLAYERS);
        let b = (a + 1 + rng.below(PLAYERS - 1)) % PLAYERS;
        let id = format!("w{writer}-{n}");
        let round = json!({"id": id, "standings": [
            {"player": format!("p{a}"), "rank": 1},
            {"player": format!("p{b}"), "rank": 2},
        ]});
        let sent = Instant::now();
        let outcome = client
            .post(format!("{base}/v1/pools/{POOL}/rounds"))
            .bearer_auth(KEY)
            .json(&round)
            .send()
            .await;
        match outcome {
            Ok(response) if response.status() == 202 => {
                tally
                    .posted
                    .push((id, sent, sent.elapsed().as_secs_f64() * 1e3));
            }
            Ok(response) => {
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                tally.errors.push(format!("POST: {status} {body}"));
            }
            Err(error) => tally.errors.push(format!("POST: {error}")),
        }
        n += 1;
    }
    tally
}

/// Reads the pool's leaderboard and its players in turn until `deadline` (a player no
/// applied round has named yet answers 404, which counts as a read).
async fn read(client: reqwest::Client, base: String, deadline: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut rng = Rng(0x5851_f42d);
    let mut n = 0u64;
    // At a frontend's pace rather than as fast as answers come: a reader that never waits
    // takes every spare cycle of the machine, and the posts' figures would measure it.
    let mut pace = tokio::time::interval(Duration::from_secs(1) / READS_PER_SECOND);
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while Instant::now() < deadline {
        pace.tick().await;
        let path = if n % 2 == 0 {
            "leaderboard?limit=100".to_owned()
        } else {
            format!("players/p{}", rng.below(PLAYERS))
        };
        n += 1;
        let sent = Instant::now();
        match client
            .get(format!("{base}/v1/pools/{POOL}/{path}"))
            .send()
            .await
        {
            Ok(response) if response.status().is_success() || response.status() == 404 => {
                drop(response.bytes().await);
                tally.reads.push(sent.elapsed().as_secs_f64() * 1e3);
            }
            Ok(response) => tally
                .errors
                .push(format!("GET {path}: {}", response.status())),
            Err(error) => tally.errors.push(format!("GET {path}: {error}")),
        }
    }
    tally
}

/// Follows the pool's change feed, noting when each round id is first seen applied.
async fn subscribe(
    client: reqwest::Client,
    base: String,
    seen: Arc<Mutex<HashMap<String, Instant>>>,
) {
    let mut response = client
        .get(format!("{base}/v1/pools/{POOL}/events"))
        .bearer_auth(KEY)
        .send()
        .await
        .expect("the feed answers");
    let mut pending = String::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let at = Instant::now();
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            if let Ok(event) = serde_json::from_str::<Value>(data.trim()) {
                if let Some(id) = event["id"].as_str() {
                    seen.lock()
                        .expect("the seen rounds")
                        .entry(id.to_owned())
                        .or_insert(at);
                }
            }
        }
    }
}
