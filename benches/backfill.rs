//! A platform migrating its history (issue 48 item 3), not criterion. For each input, in one
//! run: the engine alone rating it (`replay`'s rating time, nothing judged), the ingest
//! (`mmr-service import` into a running service, from the first post until every round is
//! applied), and the database's own bulk load of exactly the rows the service wrote for it
//! (Postgres: `COPY` of every table into an empty database of the same schema, one
//! transaction; SQLite: one `INSERT … SELECT` per table from the service's file into a fresh one
//! of the same schema and settings, one transaction). Goal: ingest ≤ 1.5× (engine + load).
//!
//! `cargo bench --bench backfill`. Inputs: a synthetic history written here ([`ROUNDS`] rounds
//! of [`ENTRANTS`] drawn from [`PLAYERS`], 1.2M participations), and ctftime from
//! `../shared/data` when it is there (said SKIPPED otherwise); `MMR_BACKFILL_INPUT` names one
//! other file instead of both. Postgres is skipped when it does not answer. Results go to
//! stdout as Markdown rows for BENCHMARKS.md.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use mmr_service::engine::metrics::Opponents;
use mmr_service::engine::SystemName;
use mmr_service::import;
use mmr_service::replay::{self, InputFormat};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, Row};

#[path = "common/binary.rs"]
#[allow(dead_code)]
mod binary;
#[path = "common/clients.rs"]
#[allow(dead_code)]
mod clients;
#[path = "common/mod.rs"]
mod common;

const KEY: &str = "backfill-key";
const ROUNDS: usize = 300;
const ENTRANTS: usize = 4_000;
const PLAYERS: u64 = 30_000;

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let inputs: Vec<(String, PathBuf)> = match std::env::var_os("MMR_BACKFILL_INPUT") {
        Some(path) => vec![("input".to_owned(), PathBuf::from(path))],
        None => {
            let synthetic = dir.path().join("synthetic.jsonl");
            write_synthetic(&synthetic);
            let mut inputs = vec![("synthetic".to_owned(), synthetic)];
            let ctftime =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/ctftime/rounds.jsonl");
            if ctftime.exists() {
                inputs.push(("ctftime".to_owned(), ctftime));
            } else {
                println!("ctftime SKIPPED: {} is not there", ctftime.display());
            }
            inputs
        }
    };
    let postgres = tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(common::fresh_postgres("mmr_backfill_probe"));
    if let Err(reason) = &postgres {
        println!("Postgres SKIPPED: {reason}");
    }
    println!(
        "| input | backend | engine s | load s | ingest s (worker's rating / commits) | ingest / (engine + load) |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, input) in &inputs {
        let engine = engine_seconds(input);
        let file = dir.path().join(format!("{name}.sqlite3"));
        let sqlite_url = format!("sqlite://{}", file.display());
        let ingest = ingest_of(&sqlite_url, input, &format!("{name}-sqlite"));
        let load = sqlite_load_seconds(&file, &dir.path().join(format!("{name}-own.sqlite3")));
        print_row(name, "SQLite", engine, load, ingest);
        if postgres.is_ok() {
            let runtime = tokio::runtime::Runtime::new().expect("a runtime");
            let url = runtime
                .block_on(common::fresh_postgres("mmr_backfill"))
                .expect("a database");
            let ingest = ingest_of(&url, input, &format!("{name}-postgres"));
            let load = runtime.block_on(postgres_load_seconds(&url));
            runtime.block_on(binary::drop_database(&url));
            print_row(name, "Postgres", engine, load, ingest);
        }
    }
    if let Ok(probe) = &postgres {
        tokio::runtime::Runtime::new()
            .expect("a runtime")
            .block_on(binary::drop_database(probe));
    }
}

fn print_row(input: &str, backend: &str, engine: f64, load: f64, ingest: Ingest) {
    println!(
        "| {input} | {backend} | {engine:.2} | {load:.2} | {:.2} ({:.2} / {:.2}) | **{:.2}** |",
        ingest.seconds,
        ingest.rating,
        ingest.commits,
        ingest.seconds / (engine + load)
    );
}

/// An ingest's wall time, and the worker's time rating and committing within it (they overlap
/// on Postgres).
struct Ingest {
    seconds: f64,
    rating: f64,
    commits: f64,
}

/// The synthetic history: each player a hidden skill, each round [`ENTRANTS`] of them ranked
/// by skill plus noise (the shape of `tools/synthetic-rounds.py`, generated here so the bench
/// needs no Python).
fn write_synthetic(path: &Path) {
    use std::io::Write;
    let mut rng = clients::Rng(0x2545_f491_4f6c_dd1d);
    let skill: Vec<u64> = (0..PLAYERS).map(|_| rng.below(2_000)).collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("the file"));
    for round in 0..ROUNDS {
        let mut field: Vec<u64> = Vec::with_capacity(ENTRANTS);
        let mut taken = std::collections::HashSet::new();
        while field.len() < ENTRANTS {
            let player = rng.below(PLAYERS);
            if taken.insert(player) {
                field.push(player);
            }
        }
        let mut scored: Vec<(u64, u64)> = field
            .into_iter()
            .map(|p| (skill[p as usize] + rng.below(1_500), p))
            .collect();
        scored.sort_unstable_by(|a, b| b.cmp(a));
        let standings: Vec<serde_json::Value> = scored
            .iter()
            .enumerate()
            .map(|(i, &(_, p))| serde_json::json!({"player": format!("p{p}"), "rank": i + 1}))
            .collect();
        let line = serde_json::json!({"id": format!("synthetic-{round}"), "standings": standings});
        writeln!(out, "{line}").expect("a line");
    }
}

/// `replay`'s rating time for `input` on the default system, nothing judged.
fn engine_seconds(input: &Path) -> f64 {
    let replayed = replay::run(&replay::Options {
        input: input.to_owned(),
        format: InputFormat::Jsonl,
        params: SystemName::EloMmr.defaults(),
        min_history: u64::MAX,
        opponents: Opponents::All,
        progress: false,
        display: None,
    })
    .expect("the input replays");
    replayed.summary.rating_seconds
}

/// Starts the service on `database_url`, creates `pool` (named apart for each run: the
/// process's metrics outlive the service), imports `input` and waits until
/// every round is applied: seconds from the first post to the last round applied. The service
/// stops when this returns (its runtime is dropped).
fn ingest_of(database_url: &str, input: &Path, pool: &str) -> Ingest {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let base = common::start(&runtime, database_url, KEY);
    let client = reqwest::blocking::Client::new();
    let created = client
        .put(format!("{base}/v1/pools/{pool}"))
        .bearer_auth(KEY)
        .json(&serde_json::json!({}))
        .send()
        .expect("PUT answered");
    assert!(created.status().is_success(), "{}", created.status());
    let began = Instant::now();
    let summary = import::run(&import::Options {
        url: base.clone(),
        pool: pool.to_owned(),
        input: input.to_owned(),
        format: InputFormat::Jsonl,
        key: Some(KEY.to_owned()),
        from_start: false,
        nfc: true,
        attempts: 20,
        batch_rounds: 200,
        progress: false,
    })
    .expect("the import");
    loop {
        let state: serde_json::Value = client
            .get(format!("{base}/v1/pools/{pool}"))
            .send()
            .and_then(reqwest::blocking::Response::json)
            .expect("the pool");
        if state["rounds_applied"].as_u64() == Some(summary.accepted as u64) {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(600),
            "not applied: {state}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let seconds = began.elapsed().as_secs_f64();
    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .and_then(reqwest::blocking::Response::text)
        .expect("the metrics");
    let sum = |name: &str| {
        let prefix = format!("{name}_sum{{pool=\"{pool}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|value| value.parse().ok())
            .unwrap_or(f64::NAN)
    };
    let ingest = Ingest {
        seconds,
        rating: sum("mmr_apply_rating_seconds"),
        commits: sum("mmr_apply_commit_seconds"),
    };
    runtime.shutdown_timeout(Duration::from_secs(10));
    ingest
}

/// Opens (or creates) a SQLite file in the service's settings.
fn sqlite_options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
}

/// Seconds to copy every row of the service's file `from` into a fresh file `to` of the same
/// schema, one `INSERT … SELECT` per table in one transaction.
fn sqlite_load_seconds(from: &Path, to: &Path) -> f64 {
    tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(async {
            let mut own = sqlite_options(to).connect().await.expect("the file opens");
            sqlx::migrate!("./migrations/sqlite")
                .run(&mut own)
                .await
                .expect("the schema");
            sqlx::query(&format!("ATTACH DATABASE '{}' AS service", from.display()))
                .execute(&mut own)
                .await
                .expect("attached");
            let tables = tables_with_rows_sqlite(&mut own).await;
            let began = Instant::now();
            let mut tx = own.begin().await.expect("a transaction");
            for table in &tables {
                sqlx::query(&format!(
                    "INSERT INTO main.{table} SELECT * FROM service.{table}"
                ))
                .execute(&mut *tx)
                .await
                .expect("the rows");
            }
            tx.commit().await.expect("committed");
            began.elapsed().as_secs_f64()
        })
}

/// The service's tables that hold rows, parents first (`pools`, which `rounds` refers to).
async fn tables_with_rows_sqlite(own: &mut sqlx::SqliteConnection) -> Vec<String> {
    let names: Vec<String> = sqlx::query(
        "SELECT name FROM service.sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations' ORDER BY name <> 'pools', name",
    )
    .fetch_all(&mut *own)
    .await
    .expect("the tables")
    .iter()
    .map(|row| row.get(0))
    .collect();
    let mut with_rows = Vec::new();
    for name in names {
        let rows: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM service.{name}"))
            .fetch_one(&mut *own)
            .await
            .expect("a count");
        if rows > 0 {
            with_rows.push(name);
        }
    }
    with_rows
}

/// Seconds to `COPY` every row the service wrote at `url` into a fresh database of the same
/// schema, one transaction (the text is read out beforehand, not timed).
async fn postgres_load_seconds(url: &str) -> f64 {
    let mut service = sqlx::PgConnection::connect(url).await.expect("connected");
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' \
         AND tablename <> '_sqlx_migrations' ORDER BY tablename <> 'pools', tablename",
    )
    .fetch_all(&mut service)
    .await
    .expect("the tables");
    let mut dumps = Vec::new();
    for table in tables {
        let mut text = Vec::new();
        let mut out = service
            .copy_out_raw(&format!("COPY {table} TO STDOUT"))
            .await
            .expect("COPY out");
        while let Some(chunk) = out.next().await {
            text.extend_from_slice(&chunk.expect("a chunk"));
        }
        drop(out);
        if !text.is_empty() {
            dumps.push((table, text));
        }
    }
    let own_url = common::fresh_postgres("mmr_backfill_own")
        .await
        .expect("a database");
    let mut own = sqlx::PgConnection::connect(&own_url)
        .await
        .expect("connected");
    sqlx::migrate!("./migrations/postgres")
        .run(&mut own)
        .await
        .expect("the schema");
    let began = Instant::now();
    let mut tx = own.begin().await.expect("a transaction");
    for (table, text) in &dumps {
        let mut copy = tx
            .copy_in_raw(&format!("COPY {table} FROM STDIN"))
            .await
            .expect("COPY in");
        copy.send(text.as_slice()).await.expect("the rows");
        copy.finish().await.expect("copied");
    }
    tx.commit().await.expect("committed");
    let seconds = began.elapsed().as_secs_f64();
    own.close().await.expect("closed");
    binary::drop_database(&own_url).await;
    seconds
}
