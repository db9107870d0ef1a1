//! End-to-end tests of `mmr-service serve`: the real binary on a free port, fed rounds over
//! HTTP, killed with SIGKILL while rounds are queued and restarted, stopped with SIGTERM; its
//! ratings are compared bit for bit with `mmr-service replay` of the same rounds. Run on
//! SQLite always and on Postgres when a server answers (SKIPPED otherwise, unless `CI` is set).
//!
//! Beside the tests here: [`concurrency`] (32 writers and 32 readers at once, retries of one
//! round from many clients), [`crash`] (SIGKILLs at seeded random moments through a stream of
//! rounds), [`faults`] (the database going away and coming back), [`slow_client`] (a body that
//! trickles in is cut off without holding anything back), [`stall`] (the largest predictions
//! in a loop while rounds arrive: reads of the pool answer within 1 s, every round is applied),
//! [`import`] (`mmr-service import` through 429s, a stop and a resume), [`dashboard`] (the
//! page at `/` in headless Chromium), [`examples`] (the README's tour, pasted as a user would),
//! [`unread`] (answers a client never reads hold its share
//! and are cut off by the write deadline);
//! [`server`] runs the binary, [`rounds`] makes the rounds and [`stream`] posts them as a client
//! would.

mod concurrency;
mod crash;
mod dashboard;
mod examples;
mod faults;
mod import;
mod large_bodies;
mod recompute;
mod replicas;
mod rounds;
mod server;
mod slow_client;
mod stall;
mod stream;
mod unread;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use server::{Backend, Options, Server, ADMIN_KEY};

/// Rounds of `../shared/data/formula1` the tests post.
const ROUNDS: usize = 200;

/// Longest a test waits for the service to apply what it accepted.
const APPLY_TIMEOUT: Duration = Duration::from_secs(120);

/// The pool the tests rate in.
const POOL: &str = "f1";

/// The first `count` rounds of the shared formula1 set, if the set is present.
fn formula1(count: usize) -> Option<Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/formula1/rounds.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("SKIPPED: {} is absent", path.display());
        return None;
    };
    Some(
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .take(count)
            .map(str::to_owned)
            .collect(),
    )
}

/// The rows of `mmr-service replay --output` of `rounds`, with `--display` when given.
fn replay_rows(dir: &Path, rounds: &[String], display: Option<&str>) -> Vec<csv::StringRecord> {
    let input = dir.join(format!("replay-{}.jsonl", rounds.len()));
    std::fs::write(&input, rounds.join("\n")).expect("write the replay input");
    let output = dir.join(format!("replay-{}.csv", rounds.len()));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mmr-service"));
    command
        .arg("replay")
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(&output);
    if let Some(display) = display {
        let settings = dir.join("display.json");
        std::fs::write(&settings, display).expect("write the display settings");
        command.arg("--display").arg(&settings);
    }
    let status = command
        .stdout(std::process::Stdio::null())
        .status()
        .expect("replay runs");
    assert!(status.success(), "replay failed");
    let mut reader = csv::Reader::from_path(&output).expect("replay wrote its CSV");
    reader
        .records()
        .map(|record| record.expect("a CSV row"))
        .collect()
}

/// `player → (mu, sigma)` as `mmr-service replay --output` computes them from `rounds`.
fn replayed(dir: &Path, rounds: &[String]) -> BTreeMap<String, (f64, f64)> {
    replay_rows(dir, rounds, None)
        .iter()
        .map(|record| {
            let number = |i: usize| record[i].parse::<f64>().expect("a float");
            (record[0].to_owned(), (number(1), number(2)))
        })
        .collect()
}

/// `player → "league/division"` (empty when not placed) as `mmr-service replay --display`
/// places them after `rounds` (without `--display`, as the pool line `rounds` open with says).
fn replayed_leagues(
    dir: &Path,
    rounds: &[String],
    display: Option<&str>,
) -> BTreeMap<String, String> {
    replay_rows(dir, rounds, display)
        .iter()
        .map(|record| {
            let placement = match (&record[7], &record[8]) {
                ("", "") => String::new(),
                (league, division) => format!("{league}/{division}"),
            };
            (record[0].to_owned(), placement)
        })
        .collect()
}

/// Every entry of `pool`'s leaderboard, read page by page.
fn served_entries(server: &Server, pool: &str) -> Vec<serde_json::Value> {
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("/v1/pools/{pool}/leaderboard?limit=1000&established=false");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let page = server.get_json(&url);
        entries.extend(page["entries"].as_array().expect("entries").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return entries,
        }
    }
}

/// Every rated player of the pool with their rating.
fn served(server: &Server) -> BTreeMap<String, (f64, f64)> {
    served_in(server, POOL)
}

/// Every rated player of `pool` with their rating.
fn served_in(server: &Server, pool: &str) -> BTreeMap<String, (f64, f64)> {
    served_entries(server, pool)
        .iter()
        .map(|entry| {
            let player = entry["player"].as_str().expect("player").to_owned();
            let mu = entry["mu"].as_f64().expect("mu");
            let sigma = entry["sigma"].as_f64().expect("sigma");
            (player, (mu, sigma))
        })
        .collect()
}

/// Every rated player of the pool with their `"league/division"`, empty when not placed.
fn served_leagues(server: &Server) -> BTreeMap<String, String> {
    served_entries(server, POOL)
        .iter()
        .map(|entry| {
            let player = entry["player"].as_str().expect("player").to_owned();
            let league = &entry["league"];
            let placement = match league["league"].as_str() {
                Some(name) => format!("{name}/{}", league["division"]),
                None => String::new(),
            };
            (player, placement)
        })
        .collect()
}

/// Waits until the pool has applied `applied` rounds and has none queued.
fn wait_until_applied(server: &Server, applied: u64) {
    let deadline = Instant::now() + APPLY_TIMEOUT;
    loop {
        let pool = server.get_json(&format!("/v1/pools/{POOL}"));
        if pool["rounds_applied"].as_u64() == Some(applied) && pool["rounds_queued"] == 0 {
            return;
        }
        assert_eq!(pool["rounds_failed"], 0, "no round may fail: {pool}");
        assert!(
            Instant::now() < deadline,
            "rounds not applied in time: {pool}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts the service's ratings equal the replay's, to the bit.
fn assert_same_ratings(
    served: &BTreeMap<String, (f64, f64)>,
    replayed: &BTreeMap<String, (f64, f64)>,
) {
    assert_eq!(served.len(), replayed.len(), "the same players are rated");
    for (player, &(mu, sigma)) in replayed {
        let &(served_mu, served_sigma) = served
            .get(player)
            .unwrap_or_else(|| panic!("{player} is missing from the service"));
        assert_eq!(
            (served_mu.to_bits(), served_sigma.to_bits()),
            (mu.to_bits(), sigma.to_bits()),
            "{player}: served ({served_mu}, {served_sigma}) vs replayed ({mu}, {sigma})"
        );
    }
}

/// Posts `rounds`, each of which must be accepted (202).
fn post_all(server: &Server, rounds: &[String]) {
    for round in rounds {
        let status = server.post(&format!("/v1/pools/{POOL}/rounds"), round, ADMIN_KEY);
        assert_eq!(
            status,
            202,
            "round accepted: {}",
            &round[..round.len().min(80)]
        );
    }
}

fn served_equals_replay_through_a_kill_and_a_restart(backend: Backend) {
    let Some(rounds) = formula1(ROUNDS) else {
        return;
    };
    let Some(mut server) = Server::start(backend) else {
        return;
    };
    let dir: PathBuf = server.dir().to_owned();
    let status = server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY);
    assert_eq!(status, 201, "pool created");

    let half = ROUNDS / 2;
    post_all(&server, &rounds[..half]);
    wait_until_applied(&server, half as u64);
    assert_same_ratings(&served(&server), &replayed(&dir, &rounds[..half]));

    // The rest is accepted faster than it is applied: SIGKILL finds rounds queued.
    post_all(&server, &rounds[half..]);
    let pool = server.get_json(&format!("/v1/pools/{POOL}"));
    server.kill();
    println!("killed with {} rounds queued", pool["rounds_queued"]);

    server.restart();
    wait_until_applied(&server, ROUNDS as u64);
    assert_same_ratings(&served(&server), &replayed(&dir, &rounds));

    // Re-posting an applied round is recognized, not applied again.
    let status = server.post(&format!("/v1/pools/{POOL}/rounds"), &rounds[0], ADMIN_KEY);
    assert_eq!(
        status, 200,
        "an identical re-post is answered with its status"
    );

    assert_eq!(
        server.terminate(),
        Some(0),
        "SIGTERM stops the service with exit code 0"
    );
}

#[test]
fn sqlite_ratings_equal_replay_through_a_kill_and_a_restart() {
    served_equals_replay_through_a_kill_and_a_restart(Backend::Sqlite);
}

#[test]
fn postgres_ratings_equal_replay_through_a_kill_and_a_restart() {
    served_equals_replay_through_a_kill_and_a_restart(Backend::Postgres);
}

#[test]
fn with_no_configuration_the_service_serves_on_an_embedded_sqlite_file_and_makes_its_first_key() {
    let Some(mut server) = Server::start(Backend::Default) else {
        return;
    };
    assert_eq!(server.get_json("/readyz")["status"], "ready");
    assert!(
        server.dir().join("data/mmr.sqlite3").exists(),
        "the default database is ./data/mmr.sqlite3"
    );
    // The README's first command is enough to take rounds: the first start printed a key.
    let key = server
        .first_key()
        .expect("the first start prints an admin key");
    assert_eq!(server.put(&format!("/v1/pools/{POOL}"), "{}", &key), 201);
    let round = r#"{"id": "r1", "standings": [{"player": "ann", "rank": 1}, {"player": "bob", "rank": 2}]}"#;
    assert_eq!(
        server.post(&format!("/v1/pools/{POOL}/rounds"), round, &key),
        202
    );
    wait_until_applied(&server, 1);
    server.kill();
    server.restart();
    assert_eq!(server.first_key(), None, "only the first start makes a key");
    assert_eq!(server.put(&format!("/v1/pools/{POOL}"), "{}", &key), 200);
}

#[test]
fn a_pool_the_configuration_declares_is_created_at_start_by_the_service_as_the_audit_log_says() {
    let options = Options {
        env: vec![("MMR__POOLS__RANKED__BETA", "150".to_owned())],
        ..Options::default()
    };
    let Some(server) = Server::start_with(Backend::Default, options) else {
        return;
    };
    let key = server
        .first_key()
        .expect("the first start prints an admin key");
    assert_eq!(server.get_json("/v1/pools/ranked")["params"]["beta"], 150.0);
    let log: serde_json::Value = reqwest::blocking::Client::new()
        .get(format!("{}/v1/audit", server.base_url()))
        .bearer_auth(&key)
        .send()
        .and_then(reqwest::blocking::Response::json)
        .expect("the audit log");
    let acted: Vec<(&str, &str, &serde_json::Value)> = log["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["action"].as_str().expect("an action"),
                e["key"].as_str().expect("a key"),
                &e["pool"],
            )
        })
        .collect();
    assert_eq!(
        acted,
        [
            ("pool.create", "@config", &serde_json::json!("ranked")),
            ("key.create", "@bootstrap", &serde_json::Value::Null),
        ],
        "{log:#}"
    );
}
