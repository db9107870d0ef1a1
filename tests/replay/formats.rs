//! The reference implementation's directory format gives the same ratings as the same rounds
//! in JSON Lines.

use std::path::Path;

use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::{json_summary, path_str, sample};

/// Writes `round` (wire format, no teams) as the reference's `index.json` in `dir`: standings
/// in rank order, each with its 0-based tie range, plus the fields the reference carries and
/// we do not use.
fn write_contest(dir: &Path, index: usize, round: &Value) {
    let mut standings: Vec<(String, u64)> = round["standings"]
        .as_array()
        .expect("standings")
        .iter()
        .map(|s| {
            let player = s["player"].as_str().expect("player").to_owned();
            (player, s["rank"].as_u64().expect("rank"))
        })
        .collect();
    standings.sort_by_key(|s| s.1);
    let ranges: Vec<Value> = standings
        .iter()
        .map(|(player, rank)| {
            let lo = standings.iter().filter(|s| s.1 < *rank).count();
            let hi = standings.iter().filter(|s| s.1 <= *rank).count() - 1;
            json!([player, lo, hi])
        })
        .collect();
    let time = OffsetDateTime::parse(round["time"].as_str().expect("time"), &Rfc3339)
        .expect("an RFC 3339 time")
        .unix_timestamp();
    let mut contest = json!({
        "name": round["id"],
        "url": null,
        "time_seconds": time,
        "standings": ranges,
    });
    if let Some(weight) = round.get("weight") {
        contest["weight"] = weight.clone();
    }
    std::fs::write(dir.join(format!("{index}.json")), contest.to_string()).expect("writable");
}

#[test]
fn the_elo_mmr_directory_format_rates_exactly_like_the_same_rounds_in_jsonl() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let contests = dir.path().join("contests");
    std::fs::create_dir(&contests).expect("writable");
    let text = std::fs::read_to_string(sample()).expect("the sample is readable");
    // Team rounds have no equivalent in the reference's format.
    let solo: Vec<&str> = text.lines().filter(|l| !l.contains("\"team\"")).collect();
    assert!(solo.len() > 30, "the sample should be mostly solo rounds");
    for (index, line) in solo.iter().enumerate() {
        write_contest(&contests, index, &serde_json::from_str(line).expect("JSON"));
    }
    let jsonl = dir.path().join("solo.jsonl");
    std::fs::write(&jsonl, solo.join("\n")).expect("writable");

    let from_dir = dir.path().join("from_dir.csv");
    let from_jsonl = dir.path().join("from_jsonl.csv");
    let dir_summary = json_summary(&[
        "--input",
        path_str(&contests),
        "--input-format",
        "elo-mmr-dir",
        "--output",
        path_str(&from_dir),
    ]);
    let jsonl_summary = json_summary(&[
        "--input",
        path_str(&jsonl),
        "--output",
        path_str(&from_jsonl),
    ]);

    assert_eq!(dir_summary["rounds"].as_u64(), Some(solo.len() as u64));
    for key in [
        "rounds",
        "participations",
        "players",
        "pair_inversion",
        "rank_deviation",
        "log_loss",
        "brier",
    ] {
        assert_eq!(dir_summary[key], jsonl_summary[key], "{key}");
    }
    let read = |path: &Path| std::fs::read(path).expect("the ratings file exists");
    assert_eq!(read(&from_dir), read(&from_jsonl));
}

#[test]
fn a_directory_without_round_zero_is_an_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let output = crate::mmr_service(&[
        "replay",
        "--input",
        path_str(dir.path()),
        "--input-format",
        "elo-mmr-dir",
    ]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("0.json"));
}
