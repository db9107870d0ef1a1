//! End-to-end tests of `mmr-service replay` and `evaluate`: the real binary on the
//! repository's synthetic sample, on broken inputs, on the reference's directory format, and
//! (when present) on the shared datasets outside the repository.

mod datasets;
mod errors;
mod evaluate;
mod formats;
mod summary;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's synthetic sample of rounds.
fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample.jsonl")
}

/// Runs `mmr-service` with `args`.
fn mmr_service(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmr-service"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Runs `mmr-service replay --json` with `args` and returns the summary.
fn json_summary(args: &[&str]) -> serde_json::Value {
    json_output("replay", args)
}

/// Runs `mmr-service COMMAND --json` with `args`, which must succeed, and returns the one
/// JSON object it prints.
fn json_output(command: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec![command, "--json"];
    all.extend_from_slice(args);
    let output = mmr_service(&all);
    assert!(
        output.status.success(),
        "{command} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("stdout is one JSON object")
}

/// The sample without round weights, performance ceilings and teams, which most systems other
/// than Elo-MMR do not have, written into `dir`.
fn plain_sample(dir: &Path) -> PathBuf {
    let input = dir.join("plain.jsonl");
    let sample = std::fs::read_to_string(sample()).expect("the sample");
    let plain: Vec<String> = sample
        .lines()
        .map(|line| {
            let mut round: serde_json::Value = serde_json::from_str(line).expect("JSON");
            if let Some(fields) = round.as_object_mut() {
                fields.remove("weight");
                fields.remove("perf_ceiling");
                if let Some(serde_json::Value::Array(standings)) = fields.get_mut("standings") {
                    for standing in standings.iter_mut().filter_map(|s| s.as_object_mut()) {
                        standing.remove("team");
                    }
                }
            }
            round.to_string()
        })
        .collect();
    std::fs::write(&input, plain.join("\n")).expect("written");
    input
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("test paths are UTF-8")
}
