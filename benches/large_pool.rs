//! Figures for large pools (issue 14, item 7), on the real binary and Postgres (not criterion:
//! each figure is one long run). For each rating system:
//! - a pool of `MMR_LARGE_POOL_PLAYERS` players (default 1,000,000), each rated once, by rounds
//!   of 10,000 newcomers posted over HTTP one after another: the time until the last is applied;
//! - the service restarted on it: how much longer than on an empty database it takes to load the
//!   pool and listen, and the resident memory the pool adds, per player (the same binary on the
//!   empty database is the baseline);
//! - for Elo-MMR, a round of every player of the pool posted over HTTP: the time from the POST
//!   until the round is applied.
//!
//! `cargo bench --bench large_pool` (skipped when Postgres does not answer); set
//! `MMR_LARGE_POOL_SYSTEMS` to a comma-separated list of systems (`elo_mmr,glicko2`) to measure
//! only those. Results go to stdout as Markdown rows for BENCHMARKS.md.

use std::time::{Duration, Instant};

use mmr_service::api::auth::hash_key;
use serde_json::{json, Value};

#[path = "common/binary.rs"]
mod binary;
// Only its fresh Postgres database is used here, not its in-process service.
#[allow(dead_code)]
#[path = "common/mod.rs"]
mod common;

use binary::Service;

const KEY: &str = "bench-key";
const POOL: &str = "large";
/// Entrants of each round that builds the pool.
const ROUND: usize = 10_000;

/// The rating systems measured, as `PUT /v1/pools/{pool}` creates them.
const SYSTEMS: [(&str, &str); 7] = [
    ("Elo-MMR", "elo_mmr"),
    ("Weng-Lin", "weng_lin"),
    ("TrueSkill", "trueskill"),
    ("Glicko-2", "glicko2"),
    ("Codeforces", "codeforces"),
    ("Topcoder", "topcoder"),
    ("Elo", "elo"),
];

fn main() {
    let players: usize = std::env::var("MMR_LARGE_POOL_PLAYERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let only = std::env::var("MMR_LARGE_POOL_SYSTEMS").ok();
    let measured = |system: &str| {
        only.as_deref()
            .is_none_or(|only| only.split(',').any(|name| name.trim() == system))
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    println!("Pools of {players} players, each rated once (rounds of {ROUND} newcomers)");
    println!();
    println!("| system | ingest s | participations/s | empty start s | start with the pool s | load s | resident MiB, empty | with the pool | bytes per player |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (label, system) in SYSTEMS.into_iter().filter(|&(_, system)| measured(system)) {
        let url = match runtime.block_on(common::fresh_postgres("mmr_large")) {
            Ok(url) => url,
            Err(reason) => {
                println!("SKIPPED: Postgres is unavailable: {reason}");
                return;
            }
        };
        let config = dir.path().join(format!("{system}.toml"));
        std::fs::write(&config, config_text(&url)).expect("write the config file");
        let (service, empty_start) = start(&config);
        let empty_rss = service.resident_kib();
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .expect("a client");
        let created = client
            .put(format!("{}/v1/pools/{POOL}", service.base))
            .bearer_auth(KEY)
            .json(&json!({ "system": system }))
            .send()
            .expect("PUT answered")
            .status();
        assert!(created.is_success(), "{system}: pool created: {created}");
        let started = Instant::now();
        let rounds = players.div_ceil(ROUND);
        for r in 0..rounds {
            let entrants = (r * ROUND..players.min((r + 1) * ROUND)).collect::<Vec<_>>();
            post(
                &client,
                &service.base,
                &round(&format!("build-{r}"), &entrants),
            );
        }
        wait_applied(&client, &service.base, rounds as u64);
        let ingest = started.elapsed().as_secs_f64();
        drop(service);
        let (service, started_in) = start(&config);
        let rss = service.resident_kib();
        println!(
            "| {label} | {ingest:.1} | {:.0} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} |",
            players as f64 / ingest,
            empty_start.as_secs_f64(),
            started_in.as_secs_f64(),
            started_in.saturating_sub(empty_start).as_secs_f64(),
            empty_rss as f64 / 1024.0,
            rss as f64 / 1024.0,
            rss.saturating_sub(empty_rss) as f64 * 1024.0 / players as f64,
        );
        if system == "elo_mmr" {
            let everyone = (0..players).rev().collect::<Vec<_>>();
            let body = round("everyone", &everyone);
            let started = Instant::now();
            post(&client, &service.base, &body);
            let accepted = started.elapsed().as_secs_f64();
            wait_applied(&client, &service.base, rounds as u64 + 1);
            println!(
                "| {label}: one round of all {players} players, POST to 202 {accepted:.1} s, to applied {:.1} s | | | | | | | | |",
                started.elapsed().as_secs_f64()
            );
        }
        drop(service);
        runtime.block_on(binary::drop_database(&url));
    }
}

/// The service started with `config`, and how long it took to listen (pools are loaded
/// before).
fn start(config: &std::path::Path) -> (Service, Duration) {
    let started = Instant::now();
    let service = Service::start(config);
    (service, started.elapsed())
}

/// The service's configuration: Postgres at `url`, the bench's admin key, no rate limits, and
/// a body limit that takes a round of every player.
fn config_text(url: &str) -> String {
    format!(
        "[server]\naddr = \"127.0.0.1:0\"\nbody_limit_bytes = 268435456\n\
         request_timeout_secs = 600\n[database]\nurl = \"{url}\"\n\
         [rate_limit]\nwrites_per_second = 0\nreads_per_second = 0\n\
         [[auth.keys]]\nname = \"bench\"\nrole = \"admin\"\nsha256 = \"{}\"\n",
        hash_key(KEY)
    )
}

/// A round of players `entrants` (numbers), finishing in that order.
fn round(id: &str, entrants: &[usize]) -> Value {
    let standings: Vec<Value> = entrants
        .iter()
        .enumerate()
        .map(|(rank, p)| json!({"player": format!("p{p:07}"), "rank": rank + 1}))
        .collect();
    json!({"id": id, "standings": standings})
}

fn post(client: &reqwest::blocking::Client, base: &str, round: &Value) {
    let response = client
        .post(format!("{base}/v1/pools/{POOL}/rounds"))
        .bearer_auth(KEY)
        .json(round)
        .send()
        .expect("POST answered");
    assert_eq!(response.status(), 202, "round accepted");
}

/// Polls the pool until no round waits (for at most ten minutes), then checks that all
/// `applied` lines were applied.
fn wait_applied(client: &reqwest::blocking::Client, base: &str, applied: u64) {
    let started = Instant::now();
    loop {
        let pool: Value = client
            .get(format!("{base}/v1/pools/{POOL}"))
            .send()
            .and_then(reqwest::blocking::Response::json)
            .expect("the pool");
        if pool["rounds_queued"] == 0 {
            assert_eq!(pool["rounds_applied"], applied, "{pool}");
            assert_eq!(pool["rounds_failed"], 0, "{pool}");
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "{pool}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
