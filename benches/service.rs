//! Load benchmark of the whole service (not criterion: an HTTP load run). It serves the API
//! in-process on loopback and:
//! - ingests all of `../shared/data/ctftime` through `POST /rounds`, one round after another
//!   as a platform would, on SQLite and on Postgres: rounds/s and entrants/s until the last
//!   round is applied, and that time over the engine's alone (the same rounds rated in
//!   memory, in the same run), then the time from POST to applied of the largest round
//!   (15,794 entrants) and of a 10,000-entrant round, each re-posted under a new id; then the
//!   time from voiding the latter (`DELETE …/rounds/{id}`) until the pool, rated again from
//!   its stored rounds, is switched in;
//! - ingests the same rounds again into a fresh database, posted in batches of
//!   [`BATCH_ROUNDS`] through `POST /round-batches` (one request and one commit per batch):
//!   the time until the last is applied, and over the engine's;
//! - measures reads with `wrk` (player lookup, leaderboard page of 100, win probability)
//!   beside a bare axum handler returning a small JSON object, in the same run.
//!
//! `cargo bench --bench service` (needs `wrk` on the PATH for the reads; Postgres is skipped
//! when it does not answer). Results go to stdout as Markdown rows for BENCHMARKS.md.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::{Json, Router};
use mmr_service::engine::{EloMmrParams, Population, Round};
use mmr_service::wire::RoundRequest;

#[path = "common/mod.rs"]
mod common;

const KEY: &str = "bench-key";
const POOL: &str = "ctf";
const WRK_ARGS: [&str; 5] = ["-t2", "-c32", "-d10s", "--latency", "--timeout=2s"];
/// Rounds per `POST /round-batches` of the batched ingest.
const BATCH_ROUNDS: usize = 100;

fn main() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/ctftime/rounds.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("SKIPPED: {} is absent", path.display());
        return;
    };
    let rounds: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a round"))
        .collect();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");

    let engine = engine_seconds(&rounds);
    println!("Engine alone (default parameters, rounds parsed beforehand): {engine:.2} s");
    println!();
    println!("| backend | rounds | entrants | ingest s | ingest / engine | rounds/s | entrants/s | largest round (15,794) POST→applied ms | 10,000-entrant round POST→applied ms | recompute after a void, s | recompute / ingest |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let sqlite_url = format!("sqlite://{}", dir.path().join("bench.sqlite3").display());
    let sqlite_base = serve(&runtime, &sqlite_url);
    ingest("SQLite", &sqlite_base, &rounds, engine);
    match runtime.block_on(common::fresh_postgres("mmr_bench")) {
        Ok(url) => {
            let base = serve(&runtime, &url);
            ingest("Postgres", &base, &rounds, engine);
        }
        Err(reason) => println!("| Postgres | SKIPPED: {reason} |"),
    }

    println!();
    println!("| backend | rounds posted in batches of {BATCH_ROUNDS} | posts s | ingest s | ingest / engine |");
    println!("|---|---|---|---|---|");
    let batched_url = format!("sqlite://{}", dir.path().join("batched.sqlite3").display());
    ingest_batched("SQLite", &serve(&runtime, &batched_url), &rounds, engine);
    match runtime.block_on(common::fresh_postgres("mmr_bench_batched")) {
        Ok(url) => ingest_batched("Postgres", &serve(&runtime, &url), &rounds, engine),
        Err(reason) => println!("| Postgres | SKIPPED: {reason} |"),
    }

    let bare = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let app = Router::new().route(
            "/",
            get(|| async {
                Json(serde_json::json!({"player": "tourist", "mu": 3500.5, "sigma": 80.25}))
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    });
    let top = top_players(&sqlite_base);
    println!();
    println!(
        "| reads (wrk {}) on the SQLite pool | requests/s | p50 ms | p99 ms |",
        WRK_ARGS.join(" ")
    );
    println!("|---|---|---|---|");
    for (name, url) in [
        ("bare axum handler, small JSON", format!("{bare}/")),
        (
            "player lookup (from memory, `peak=false`)",
            format!(
                "{sqlite_base}/v1/pools/{POOL}/players/{}?peak=false",
                top[0]
            ),
        ),
        (
            "player page with its peak (a read of their history)",
            format!("{sqlite_base}/v1/pools/{POOL}/players/{}", top[0]),
        ),
        (
            "leaderboard page of 100",
            format!("{sqlite_base}/v1/pools/{POOL}/leaderboard?limit=100"),
        ),
        (
            "win probability",
            format!(
                "{sqlite_base}/v1/pools/{POOL}/win-probability?a={}&b={}",
                top[0], top[1]
            ),
        ),
    ] {
        match wrk(&url) {
            Some((rps, p50, p99)) => println!("| {name} | {rps:.0} | {p50:.2} | {p99:.2} |"),
            None => println!("| {name} | wrk unavailable or failed | | |"),
        }
    }
}

/// Starts the service on `database_url`, creates the pool, returns its base URL.
fn serve(runtime: &tokio::runtime::Runtime, database_url: &str) -> String {
    let base = common::start(runtime, database_url, KEY);
    let client = reqwest::blocking::Client::new();
    let status = client
        .put(format!("{base}/v1/pools/{POOL}"))
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .expect("PUT answered")
        .status();
    assert!(status.is_success(), "pool created: {status}");
    base
}

/// Seconds the engine alone takes to rate `rounds` in order with the pool's default
/// parameters: what ingest is measured against.
fn engine_seconds(rounds: &[serde_json::Value]) -> f64 {
    let parsed: Vec<Round> = rounds
        .iter()
        .map(|r| {
            serde_json::from_value::<RoundRequest>(r.clone())
                .expect("a round request")
                .to_round()
                .expect("a valid round")
        })
        .collect();
    let mut population = Population::new(EloMmrParams::default()).expect("default parameters");
    // On one of rayon's threads, as the `replay` command rates: the engine alone.
    rayon::scope(|_| {
        let started = Instant::now();
        for round in &parsed {
            population.apply(round).expect("rated");
        }
        started.elapsed().as_secs_f64()
    })
}

/// Posts every round in order, waits until all are applied, then times two large rounds.
fn ingest(backend: &str, base: &str, rounds: &[serde_json::Value], engine: f64) {
    let client = reqwest::blocking::Client::new();
    let entrants: usize = rounds
        .iter()
        .map(|r| r["standings"].as_array().map_or(0, Vec::len))
        .sum();
    let started = Instant::now();
    for round in rounds {
        post(&client, base, round);
    }
    wait_applied(
        &client,
        base,
        rounds.last().expect("rounds"),
        Duration::from_millis(20),
    );
    let seconds = started.elapsed().as_secs_f64();
    let largest = rounds
        .iter()
        .max_by_key(|r| r["standings"].as_array().map_or(0, Vec::len))
        .expect("rounds");
    let mut copy = largest.clone();
    copy["id"] = "bench-largest".into();
    let largest_ms = post_to_applied(&client, base, &copy);
    let mut ten_k = largest.clone();
    ten_k["id"] = "bench-10k".into();
    if let Some(standings) = ten_k["standings"].as_array_mut() {
        standings.truncate(10_000);
    }
    let ten_k_ms = post_to_applied(&client, base, &ten_k);
    let recompute = void_to_applied(&client, base, "bench-10k");
    println!(
        "| {backend} | {} | {entrants} | {seconds:.1} | {:.1}× | {:.0} | {:.0} | {largest_ms:.0} | {ten_k_ms:.0} | {recompute:.1} | {:.2}× |",
        rounds.len(),
        seconds / engine,
        rounds.len() as f64 / seconds,
        entrants as f64 / seconds,
        recompute / seconds,
    );
}

/// Posts every round in order in batches of [`BATCH_ROUNDS`] and waits until all are applied.
fn ingest_batched(backend: &str, base: &str, rounds: &[serde_json::Value], engine: f64) {
    let client = reqwest::blocking::Client::new();
    let started = Instant::now();
    for batch in rounds.chunks(BATCH_ROUNDS) {
        let response = client
            .post(format!("{base}/v1/pools/{POOL}/round-batches"))
            .bearer_auth(KEY)
            .json(&serde_json::json!({ "rounds": batch }))
            .send()
            .expect("POST answered");
        assert_eq!(response.status(), 202, "batch accepted");
    }
    let posts = started.elapsed().as_secs_f64();
    wait_applied(
        &client,
        base,
        rounds.last().expect("rounds"),
        Duration::from_millis(20),
    );
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "| {backend} | {} | {posts:.2} | {seconds:.2} | {:.1}× |",
        rounds.len(),
        seconds / engine
    );
}

/// Seconds from voiding round `id` until the pool's recomputation is applied (polled every
/// 20 ms): every other round rated again and the pool's rows written anew.
fn void_to_applied(client: &reqwest::blocking::Client, base: &str, id: &str) -> f64 {
    let started = Instant::now();
    let response = client
        .delete(format!("{base}/v1/pools/{POOL}/rounds/{id}"))
        .bearer_auth(KEY)
        .send()
        .expect("DELETE answered");
    assert_eq!(response.status(), 202, "void accepted");
    loop {
        let recompute: serde_json::Value = client
            .get(format!("{base}/v1/pools/{POOL}/recompute"))
            .send()
            .and_then(reqwest::blocking::Response::json)
            .expect("the recomputation");
        if recompute["state"] == "applied" {
            return started.elapsed().as_secs_f64();
        }
        assert_ne!(recompute["state"], "failed", "{recompute}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn post(client: &reqwest::blocking::Client, base: &str, round: &serde_json::Value) {
    let response = client
        .post(format!("{base}/v1/pools/{POOL}/rounds"))
        .bearer_auth(KEY)
        .json(round)
        .send()
        .expect("POST answered");
    assert_eq!(response.status(), 202, "round accepted");
}

/// Waits until `round` is applied, polling (every `every`) the rating of its first player,
/// which is served from memory and changes only after the commit: polling the round itself
/// would return all its results each time, and polling the pool would count its players.
fn wait_applied(
    client: &reqwest::blocking::Client,
    base: &str,
    round: &serde_json::Value,
    every: Duration,
) {
    let id = round["id"].as_str().expect("id");
    let player = round["standings"][0]["player"].as_str().expect("a player");
    let url = format!(
        "{base}/v1/pools/{POOL}/players/{}",
        percent_encoding::utf8_percent_encode(player, percent_encoding::NON_ALPHANUMERIC)
    );
    loop {
        let response = client.get(&url).send().expect("GET answered");
        if response.status() == 200 {
            let rating: serde_json::Value = response.json().expect("a player");
            if rating["last_round"]["id"] == id {
                return;
            }
        }
        std::thread::sleep(every);
    }
}

/// Milliseconds from sending `round` until it is applied (polled every ms).
fn post_to_applied(
    client: &reqwest::blocking::Client,
    base: &str,
    round: &serde_json::Value,
) -> f64 {
    let started = Instant::now();
    post(client, base, round);
    wait_applied(client, base, round, Duration::from_millis(1));
    started.elapsed().as_secs_f64() * 1e3
}

fn top_players(base: &str) -> Vec<String> {
    let page: serde_json::Value =
        reqwest::blocking::get(format!("{base}/v1/pools/{POOL}/leaderboard?limit=2"))
            .and_then(reqwest::blocking::Response::json)
            .expect("leaderboard");
    page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            let player = e["player"].as_str().expect("player");
            percent_encoding::utf8_percent_encode(player, percent_encoding::NON_ALPHANUMERIC)
                .to_string()
        })
        .collect()
}

/// `wrk` on `url`: requests/s, p50 and p99 latency in ms.
fn wrk(url: &str) -> Option<(f64, f64, f64)> {
    let output = Command::new("wrk").args(WRK_ARGS).arg(url).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    if text.contains("Non-2xx") {
        eprintln!("wrk saw errors on {url}:\n{text}");
        return None;
    }
    let rps = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))?
        .trim()
        .parse()
        .ok()?;
    let latency = |label: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(label))
            .and_then(|v| millis(v.trim()))
    };
    Some((rps, latency("50%")?, latency("99%")?))
}

/// wrk's "1.23ms" / "456.00us" / "1.20s" in milliseconds.
fn millis(text: &str) -> Option<f64> {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e3)
    } else {
        return None;
    };
    number.parse::<f64>().ok().map(|n| n * scale)
}
