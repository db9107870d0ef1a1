//! `mmr-service import` against the real service: a file posted in order, in batches of rounds
//! between the season starts, under a tight write budget (so 429s are retried), stopped halfway
//! and run again (it goes on where it stopped, posting nothing twice; season starts included),
//! ending with ratings equal to `replay` of the file to the bit; batches too large for the
//! service sent again in halves; the reference implementation's directory format; and a bad
//! line refused before anything is posted.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::server::{Backend, Options, Server, ADMIN_KEY};
use crate::{
    assert_same_ratings, replayed, replayed_leagues, served, served_in, served_leagues,
    wait_until_applied, POOL,
};

/// Lines in the imported file: rounds, and a season start in each half.
const LINES: usize = 42;

/// The places of the season starts among the lines.
const SEASONS: [usize; 2] = [13, 31];

/// Round `i` of a small league: four of ten players, in an order that varies.
pub(crate) fn synthetic_round(i: usize) -> String {
    let players: Vec<String> = (0..4)
        .map(|k| format!("p{}", (i * 3 + k * (i % 3 + 1)) % 10))
        .collect();
    let mut unique = players.clone();
    unique.sort();
    unique.dedup();
    let standings: Vec<serde_json::Value> = unique
        .iter()
        .enumerate()
        .map(|(rank, player)| serde_json::json!({"player": player, "rank": (rank + i) % unique.len() + 1}))
        .collect();
    serde_json::json!({"id": format!("round-{i}"), "time": format!("2026-01-{:02}T00:00:00Z", i % 28 + 1), "standings": standings}).to_string()
}

/// Runs `mmr-service import` and returns its JSON summary, or its stderr when it fails.
fn import(
    server: &Server,
    pool: &str,
    input: &Path,
    extra: &[&str],
) -> Result<serde_json::Value, String> {
    let output = Command::new(env!("CARGO_BIN_EXE_mmr-service"))
        .args([
            "import",
            "--url",
            server.base_url(),
            "--pool",
            pool,
            "--json",
            "--input",
        ])
        .arg(input)
        .args(extra)
        .env("MMR_API_KEY", ADMIN_KEY)
        .output()
        .expect("run mmr-service import");
    if output.status.success() {
        Ok(serde_json::from_slice(&output.stdout).expect("a JSON summary"))
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

fn an_import_stopped_halfway_goes_on_where_it_stopped_and_equals_replay(backend: Backend) {
    let options = Options {
        // Five rounds at once, then ten a second: the import meets 429 and waits.
        env: vec![
            ("MMR__RATE_LIMIT__WRITES_PER_SECOND", "10".to_owned()),
            ("MMR__RATE_LIMIT__WRITES_BURST", "5".to_owned()),
        ],
        ..Options::default()
    };
    let Some(server) = Server::start_with(backend, options) else {
        return;
    };
    let dir = server.dir().to_owned();
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    let mut rounds: Vec<String> = (0..LINES - SEASONS.len()).map(synthetic_round).collect();
    for at in SEASONS {
        let season =
            format!(r#"{{"season": {{"id": "s{at}", "mu_reset": 0.5, "sigma_reset": 0.5}}}}"#);
        rounds.insert(at, season);
    }
    let (half, whole) = (dir.join("half.jsonl"), dir.join("whole.jsonl"));
    std::fs::write(&half, rounds[..LINES / 2].join("\n")).expect("write");
    std::fs::write(&whole, rounds.join("\n") + "\n\n").expect("write");

    // Two rounds a request, so that the budget is met; the rest goes in the default batches.
    let first =
        import(&server, POOL, &half, &["--batch-rounds", "2"]).expect("the first half imports");
    assert_eq!(first["accepted"], LINES / 2, "{first}");
    assert_eq!(first["skipped"], 0, "{first}");
    assert!(
        first["retries"].as_u64() > Some(0),
        "the budget made it wait: {first}"
    );

    let second = import(&server, POOL, &whole, &[]).expect("the rest imports");
    assert_eq!(second["rounds"], LINES, "{second}");
    assert_eq!(
        second["skipped"],
        LINES / 2,
        "found where it stopped: {second}"
    );
    assert_eq!(second["accepted"], LINES / 2, "{second}");
    assert_eq!(second["known"], 0, "nothing posted twice: {second}");

    wait_until_applied(&server, LINES as u64);
    assert_same_ratings(&served(&server), &replayed(&dir, &rounds));

    // From the start: every round is answered as one the service has, and nothing changes.
    let again = import(&server, POOL, &whole, &["--from-start"]).expect("a repeat imports");
    assert_eq!(again["known"], LINES, "{again}");
    assert_eq!(again["accepted"], 0, "{again}");
    wait_until_applied(&server, LINES as u64);
}

fn the_reference_directory_format_imports_and_a_bad_line_posts_nothing(backend: Backend) {
    let Some(server) = Server::start(backend) else {
        return;
    };
    let dir = server.dir().to_owned();
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    let contests = dir.join("contests");
    std::fs::create_dir(&contests).expect("mkdir");
    for (index, standings) in [
        r#"[["ann", 0, 0], ["bob", 1, 2], ["cy", 1, 2]]"#,
        r#"[["cy", 0, 0], ["ann", 1, 1]]"#,
    ]
    .iter()
    .enumerate()
    {
        let contest = format!(
            r#"{{"name": "Contest {index}", "time_seconds": {}, "standings": {standings}}}"#,
            86_400 * (index + 1)
        );
        std::fs::write(contests.join(format!("{index}.json")), contest).expect("write");
    }
    let summary = import(&server, POOL, &contests, &["--input-format", "elo-mmr-dir"])
        .expect("the directory imports");
    assert_eq!(summary["accepted"], 2, "{summary}");
    wait_until_applied(&server, 2);
    let round = server.get_json(&format!("/v1/pools/{POOL}/rounds/1"));
    assert_eq!(
        round["status"], "applied",
        "the file's index is the round id: {round}"
    );

    // Another directory, whose indexes are the same ids: the resume check tells them apart.
    let other = dir.join("other");
    std::fs::create_dir(&other).expect("mkdir");
    for index in 0..3 {
        let contest = format!(
            r#"{{"name": "Other {index}", "time_seconds": 0, "standings": [["dee", 0, 0], ["eve", 1, 1]]}}"#
        );
        std::fs::write(other.join(format!("{index}.json")), contest).expect("write");
    }
    let error = import(&server, POOL, &other, &["--input-format", "elo-mmr-dir"])
        .expect_err("another input under the same ids stops");
    assert!(error.contains("is not this one"), "{error}");
    // A wrong key is not taken for another input.
    let error = import(
        &server,
        POOL,
        &contests,
        &["--input-format", "elo-mmr-dir", "--key", "wrong"],
    )
    .expect_err("a wrong key stops the import");
    assert!(
        error.contains("401") && !error.contains("is not this one"),
        "{error}"
    );

    // A file of a good round, then `line`.
    let bad = dir.join("bad.jsonl");
    let after_a_good_round = |line: &str| {
        std::fs::write(&bad, format!("{}\n{line}\n", synthetic_round(7))).expect("write");
        &bad
    };
    let late = after_a_good_round(r#"{"id": "late", "standings": []}"#);
    let error = import(&server, POOL, late, &[]).expect_err("a bad line stops the import");
    assert!(
        error.contains("line 2") && error.contains("standings"),
        "{error}"
    );
    // So does one the service would refuse for its time alone, a mistyped year.
    let typo = after_a_good_round(
        r#"{"id": "typo", "time": "2062-11-27T12:00:00Z", "standings": [{"player": "ann", "rank": 1}, {"player": "bob", "rank": 2}]}"#,
    );
    let error = import(&server, POOL, typo, &[]).expect_err("a round far ahead stops it");
    assert!(
        error.contains("line 2") && error.contains("time"),
        "{error}"
    );
    let pool = server.get_json(&format!("/v1/pools/{POOL}"));
    assert_eq!(
        pool["rounds_applied"].as_u64(),
        Some(2),
        "nothing was posted: {pool}"
    );
    assert_eq!(pool["rounds_queued"], 0, "{pool}");
}

#[test]
fn sqlite_import_resumes_where_it_stopped_and_equals_replay() {
    an_import_stopped_halfway_goes_on_where_it_stopped_and_equals_replay(Backend::Sqlite);
}

#[test]
fn postgres_import_resumes_where_it_stopped_and_equals_replay() {
    an_import_stopped_halfway_goes_on_where_it_stopped_and_equals_replay(Backend::Postgres);
}

#[test]
fn sqlite_import_reads_the_reference_directory_and_refuses_bad_lines_up_front() {
    the_reference_directory_format_imports_and_a_bad_line_posts_nothing(Backend::Sqlite);
}

#[test]
fn postgres_import_reads_the_reference_directory_and_refuses_bad_lines_up_front() {
    the_reference_directory_format_imports_and_a_bad_line_posts_nothing(Backend::Postgres);
}

/// A service taking smaller bodies than the import's batches: each batch it refuses (413) goes
/// again in halves, down to what fits, and every round arrives once, in order.
#[test]
fn batches_too_large_for_the_service_go_again_in_halves() {
    let options = Options {
        env: vec![("MMR__SERVER__BODY_LIMIT_BYTES", "2000".to_owned())],
        ..Options::default()
    };
    let Some(server) = Server::start_with(Backend::Sqlite, options) else {
        return;
    };
    let dir = server.dir().to_owned();
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    let rounds: Vec<String> = (0..40).map(synthetic_round).collect();
    assert!(
        rounds.iter().all(|round| round.len() < 1000),
        "one round fits"
    );
    let input = dir.join("rounds.jsonl");
    std::fs::write(&input, rounds.join("\n")).expect("write");
    let summary = import(&server, POOL, &input, &["--batch-rounds", "40"]).expect("imports");
    assert_eq!(summary["accepted"], 40, "{summary}");
    wait_until_applied(&server, 40);
    assert_same_ratings(&served(&server), &replayed(&dir, &rounds));
}

/// Ids that are not in NFC (`e` and a combining acute accent, as part of the ctftime set has
/// them): the import stops before posting anything and names `--nfc`, which writes them in
/// NFC, so that the player is the one written with `é` as one code point.
#[test]
fn ids_not_in_nfc_stop_the_import_unless_it_writes_them_in_nfc() {
    let Some(server) = Server::start(Backend::Sqlite) else {
        return;
    };
    let dir = server.dir().to_owned();
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    let rounds = [
        r#"{"id": "r1", "standings": [{"player": "ren\u00e9", "rank": 1}, {"player": "ana", "rank": 2}]}"#,
        r#"{"id": "r2", "standings": [{"player": "rene\u0301", "rank": 2, "team": "cafe\u0301"}, {"player": "ana", "rank": 1}]}"#,
    ];
    let input = dir.join("rounds.jsonl");
    std::fs::write(&input, rounds.join("\n")).expect("write");
    let refused = import(&server, POOL, &input, &[]).expect_err("refused");
    assert!(
        refused.contains("line 2: standings[0].player") && refused.contains("--nfc"),
        "{refused}"
    );
    let summary = import(&server, POOL, &input, &["--nfc"]).expect("imports");
    assert_eq!(summary["accepted"], 2, "{summary}");
    wait_until_applied(&server, 2);
    let rene = server.get_json(&format!("/v1/pools/{POOL}/players/ren%C3%A9"));
    assert_eq!(rene["rounds"], 2, "one player: {rene}");
    let again = import(&server, POOL, &input, &["--nfc", "--from-start"]).expect("imports");
    assert_eq!(again["known"], 2, "the same rounds, known: {again}");
}

/// A pool with parameters and display settings of its own, exported: the export opens with
/// the pool's line, `replay` of it rates every player as the pool did to the bit with no flag
/// given, and `import` of it into a pool that does not exist creates that pool with the same
/// settings and the same ratings. Into a pool of other parameters it is refused before posting.
fn an_export_replays_and_imports_as_the_pool_to_the_bit(backend: Backend) {
    let Some(server) = Server::start(backend) else {
        return;
    };
    let dir = server.dir().to_owned();
    let params =
        r#"{"system": "elo_mmr", "beta": 150, "gamma": 20, "rho": "inf", "mu_init": 1000}"#;
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), params, ADMIN_KEY),
        201
    );
    let display = r#"{"fixed_range": {"max": 3000}, "leagues": {"k": 2, "placement_rounds": 2,
        "division_size": 3, "tiers": [{"name": "low"}, {"name": "high", "threshold": 900}]}}"#;
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}/display"), display, ADMIN_KEY),
        200
    );
    let rounds: Vec<String> = (0..30).map(synthetic_round).collect();
    let input = dir.join("rounds.jsonl");
    std::fs::write(&input, rounds.join("\n")).expect("write");
    import(&server, POOL, &input, &[]).expect("imports");
    wait_until_applied(&server, 30);

    let export = server.export(POOL);
    let lines: Vec<String> = export.lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 31, "the pool's line, then every round");
    let opening: serde_json::Value = serde_json::from_str(&lines[0]).expect("JSON");
    let pool = server.get_json(&format!("/v1/pools/{POOL}"));
    for field in ["name", "system", "params", "display"] {
        assert_eq!(opening["pool"][field], pool[field], "{field}");
    }

    let original = served(&server);
    assert_same_ratings(&original, &replayed(&dir, &lines));
    assert_eq!(
        replayed_leagues(&dir, &lines, None),
        served_leagues(&server),
        "the pool line's leagues, followed as the pool followed them"
    );

    let exported = dir.join("export.jsonl");
    std::fs::write(&exported, &export).expect("write");
    let summary = import(&server, "copy", &exported, &[]).expect("creates the pool and imports");
    assert_eq!(summary["accepted"], 30, "{summary}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server.get_json("/v1/pools/copy")["rounds_applied"] != 30 {
        assert!(
            std::time::Instant::now() < deadline,
            "the copy is not applied"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let copy = server.get_json("/v1/pools/copy");
    for field in ["system", "params", "display"] {
        assert_eq!(copy[field], pool[field], "{field}");
    }
    assert_same_ratings(&served_in(&server, "copy"), &original);

    assert_eq!(server.put("/v1/pools/other", "{}", ADMIN_KEY), 201);
    let refused = import(&server, "other", &exported, &[]).expect_err("other parameters");
    assert!(refused.contains("other parameters"), "{refused}");
    assert_eq!(server.get_json("/v1/pools/other")["rounds_queued"], 0);
}

#[test]
fn sqlite_an_export_replays_and_imports_as_the_pool_to_the_bit() {
    an_export_replays_and_imports_as_the_pool_to_the_bit(Backend::Sqlite);
}

#[test]
fn postgres_an_export_replays_and_imports_as_the_pool_to_the_bit() {
    an_export_replays_and_imports_as_the_pool_to_the_bit(Backend::Postgres);
}
