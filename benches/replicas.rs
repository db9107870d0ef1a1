//! Ingest and reads with one replica and with three sharing one Postgres database (issue 14,
//! item 7), on the real binary, in one run (not criterion: each figure is one load run):
//! - ingest: four pools, one client per pool posting its rounds one after another, each round
//!   to the next replica in turn; the time until every replica serves the last round of every
//!   pool;
//! - reads: client threads looking up random players of random pools for 10 s, each thread on
//!   one replica (spread evenly): requests/s, p50 and p99;
//! - each replica's resident memory at the end.
//!
//! `cargo bench --bench replicas` (skipped when Postgres does not answer). Results go to stdout
//! as Markdown rows for BENCHMARKS.md.

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
const POOLS: usize = 4;
const PLAYERS: u64 = 2_000;
const ROUNDS: usize = 250;
const ENTRANTS: usize = 100;
const READERS: usize = 8;
const READ_FOR: Duration = Duration::from_secs(10);

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    println!(
        "{POOLS} pools, {ROUNDS} rounds of {ENTRANTS} of {PLAYERS} players each; {READERS} reading threads for {} s",
        READ_FOR.as_secs()
    );
    println!();
    println!("| replicas | ingest s | participations/s | reads/s | read p50 ms | read p99 ms | resident MiB per replica |");
    println!("|---|---|---|---|---|---|---|");
    for replicas in [1, 3] {
        let url = match runtime.block_on(common::fresh_postgres("mmr_replicas")) {
            Ok(url) => url,
            Err(reason) => {
                println!("SKIPPED: Postgres is unavailable: {reason}");
                return;
            }
        };
        let config = dir.path().join(format!("{replicas}.toml"));
        std::fs::write(&config, config_text(&url)).expect("write the config file");
        let services: Vec<Service> = (0..replicas).map(|_| Service::start(&config)).collect();
        let bases: Vec<String> = services.iter().map(|s| s.base.clone()).collect();
        let client = reqwest::blocking::Client::new();
        for pool in 0..POOLS {
            let status = client
                .put(format!("{}/v1/pools/pool-{pool}", bases[pool % replicas]))
                .bearer_auth(KEY)
                .json(&json!({}))
                .send()
                .expect("PUT answered")
                .status();
            assert!(status.is_success(), "pool created: {status}");
        }
        let ingest = ingest(&bases);
        let (reads, p50, p99) = read(&bases);
        let resident: Vec<String> = services
            .iter()
            .map(|s| format!("{:.0}", s.resident_kib() as f64 / 1024.0))
            .collect();
        println!(
            "| {replicas} | {ingest:.1} | {:.0} | {reads:.0} | {p50:.2} | {p99:.2} | {} |",
            (POOLS * ROUNDS * ENTRANTS) as f64 / ingest,
            resident.join(", "),
        );
        drop(services);
        runtime.block_on(binary::drop_database(&url));
    }
}

fn config_text(url: &str) -> String {
    format!(
        "[server]\naddr = \"127.0.0.1:0\"\n[database]\nurl = \"{url}\"\n\
         [rate_limit]\nwrites_per_second = 0\nreads_per_second = 0\n\
         [[auth.keys]]\nname = \"bench\"\nrole = \"admin\"\nsha256 = \"{}\"\n",
        hash_key(KEY)
    )
}

/// A small deterministic generator, so both runs post the same rounds.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Round `r` of pool `pool`: `ENTRANTS` distinct players drawn from `PLAYERS`.
fn round(pool: usize, r: usize, rng: &mut Lcg) -> Value {
    let mut players = std::collections::BTreeSet::new();
    let mut standings = Vec::with_capacity(ENTRANTS);
    while standings.len() < ENTRANTS {
        let player = rng.below(PLAYERS);
        if players.insert(player) {
            standings.push(json!({"player": format!("p{player:04}"), "rank": standings.len() + 1}));
        }
    }
    json!({"id": format!("pool-{pool}-{r:04}"), "standings": standings})
}

/// Posts every pool's rounds (a client per pool, each round to the next replica in turn) and
/// returns the seconds until every replica serves every pool's last round.
fn ingest(bases: &[String]) -> f64 {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for pool in 0..POOLS {
            scope.spawn(move || {
                let client = reqwest::blocking::Client::new();
                let mut rng = Lcg(pool as u64 + 1);
                let mut last = Value::Null;
                for r in 0..ROUNDS {
                    last = round(pool, r, &mut rng);
                    let response = client
                        .post(format!(
                            "{}/v1/pools/pool-{pool}/rounds",
                            bases[r % bases.len()]
                        ))
                        .bearer_auth(KEY)
                        .json(&last)
                        .send()
                        .expect("POST answered");
                    assert_eq!(response.status(), 202, "round accepted");
                }
                for base in bases {
                    wait_served(&client, base, pool, &last);
                }
            });
        }
    });
    started.elapsed().as_secs_f64()
}

/// Waits (at most a minute) until the replica at `base` serves `round`'s first player after
/// it.
fn wait_served(client: &reqwest::blocking::Client, base: &str, pool: usize, round: &Value) {
    let player = round["standings"][0]["player"].as_str().expect("a player");
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{base} serves {}",
            round["id"]
        );
        let response = client
            .get(format!("{base}/v1/pools/pool-{pool}/players/{player}"))
            .send()
            .expect("GET answered");
        if response.status() == 200 {
            let rating: Value = response.json().expect("a player");
            if rating["last_round"]["id"] == round["id"] {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `READERS` threads looking up random players for `READ_FOR`, thread `i` on replica
/// `i % replicas`: requests per second, p50 and p99 in ms.
fn read(bases: &[String]) -> (f64, f64, f64) {
    let mut latencies: Vec<f64> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..READERS)
            .map(|i| {
                let base = &bases[i % bases.len()];
                scope.spawn(move || {
                    let client = reqwest::blocking::Client::new();
                    let mut rng = Lcg(100 + i as u64);
                    let mut latencies = Vec::new();
                    let started = Instant::now();
                    while started.elapsed() < READ_FOR {
                        let (pool, player) = (rng.below(POOLS as u64), rng.below(PLAYERS));
                        let sent = Instant::now();
                        let response = client
                            .get(format!("{base}/v1/pools/pool-{pool}/players/p{player:04}"))
                            .send()
                            .expect("GET answered");
                        let status = response.status();
                        let _ = response.bytes();
                        assert!(status == 200 || status == 404, "a player or none: {status}");
                        latencies.push(sent.elapsed().as_secs_f64() * 1e3);
                    }
                    latencies
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("a reader"))
            .collect()
    });
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    (
        latencies.len() as f64 / READ_FOR.as_secs_f64(),
        at(0.5),
        at(0.99),
    )
}
