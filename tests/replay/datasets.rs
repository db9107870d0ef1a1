//! Full replays of the shared datasets, which live beside the repository, not in it: each
//! test skips with a message when its data is absent (a fresh clone).

use std::path::PathBuf;

use crate::{json_summary, path_str};

/// `../shared/data/<name>/rounds.jsonl` relative to the repository, if present.
fn shared_rounds(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(name)
        .join("rounds.jsonl");
    if path.exists() {
        Some(path)
    } else {
        println!("skipping: {} is absent", path.display());
        None
    }
}

#[test]
fn a_full_replay_of_formula1_succeeds() {
    let Some(input) = shared_rounds("formula1") else {
        return;
    };
    let lines = std::fs::read_to_string(&input)
        .expect("readable")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let summary = json_summary(&["--input", path_str(&input), "--min-history", "5"]);
    assert_eq!(summary["rounds"].as_u64(), Some(lines as u64));
    let pair_inversion = summary["pair_inversion"].as_f64().unwrap_or(f64::NAN);
    assert!((0.5..=1.0).contains(&pair_inversion), "{summary}");
}
