//! `mmr-service evaluate` on the synthetic sample: one row per system, the same metrics as
//! `replay` of the same system, a parameter search on the opening rounds, and clear errors.

use std::path::Path;

use crate::{json_output, json_summary, mmr_service, path_str, plain_sample, sample};

/// Runs `mmr-service evaluate --json` on `input` with `args` and returns its object.
fn evaluation(input: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--input", path_str(input)];
    all.extend_from_slice(args);
    json_output("evaluate", &all)
}

#[test]
fn every_system_gets_a_row_with_replay_s_metrics() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = plain_sample(dir.path());
    let result = evaluation(&input, &["--min-history", "2"]);
    assert_eq!(result["rounds"], 40);
    assert_eq!(result["tuning_rounds"], 0);
    let rows = result["systems"].as_array().expect("systems");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["system"].as_str()).collect();
    assert_eq!(
        names,
        [
            "elo_mmr",
            "weng_lin",
            "trueskill",
            "glicko2",
            "codeforces",
            "topcoder",
            "elo"
        ]
    );
    // The names `evaluate` prints are the names `--system` takes.
    for (row, system) in rows.iter().zip(names.iter().copied()) {
        let replayed = json_summary(&[
            "--input",
            path_str(&input),
            "--system",
            system,
            "--min-history",
            "2",
        ]);
        for metric in ["pair_inversion", "rank_deviation", "log_loss", "brier"] {
            assert_eq!(row[metric], replayed[metric], "{system}: {metric}");
        }
        assert_eq!(row["params"]["system"], row["system"]);
        assert_eq!(row["error"], serde_json::Value::Null);
    }
}

#[test]
fn a_system_that_cannot_rate_a_round_gets_a_row_saying_why() {
    // The sample has teams, which Elo-MMR rates and Elo refuses.
    let result = evaluation(&sample(), &["--systems", "elo-mmr,elo"]);
    let rows = result["systems"].as_array().expect("systems");
    assert_eq!(rows[0]["error"], serde_json::Value::Null);
    assert!(rows[0]["pair_inversion"].is_number());
    let error = rows[1]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("line ") && error.contains(".team"),
        "{error}"
    );
    assert_eq!(rows[1]["pair_inversion"], serde_json::Value::Null);
}

#[test]
fn a_search_on_the_opening_rounds_prints_parameters_a_pool_takes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = plain_sample(dir.path());
    let result = evaluation(
        &input,
        &[
            "--systems",
            "elo-mmr,topcoder",
            "--tune-fraction",
            "0.25",
            "--tune-metric",
            "log-loss",
        ],
    );
    assert_eq!(result["tuning_rounds"], 10);
    assert_eq!(result["objective"], "log_loss");
    let rows = result["systems"].as_array().expect("systems");
    assert_eq!(rows.len(), 2);
    // Every chosen value is one of the searched multiples of the default.
    let beta = rows[0]["params"]["beta"].as_f64().expect("beta");
    assert!(
        [100.0, 150.0, 200.0, 300.0, 400.0].contains(&beta),
        "{beta}"
    );
    let multiplier = rows[1]["params"]["weight_multiplier"]
        .as_f64()
        .expect("multiplier");
    assert!(
        [0.5, 0.75, 1.0, 1.5, 2.0].contains(&multiplier),
        "{multiplier}"
    );
    // Judged on the other 30 rounds only: fewer participations than without tuning.
    let untuned = evaluation(&input, &["--systems", "elo-mmr"]);
    assert!(rows[0]["judged"].as_u64() < untuned["systems"][0]["judged"].as_u64());
}

#[test]
fn bad_arguments_are_refused_by_name() {
    let input = sample();
    for (args, named) in [
        (&["--systems", "elo-mmr,nope"][..], "nope"),
        (&["--tune-fraction", "1"][..], "--tune-fraction"),
        (&["--tune-metric", "speed"][..], "speed"),
    ] {
        let mut all = vec!["evaluate", "--input", path_str(&input)];
        all.extend_from_slice(args);
        let output = mmr_service(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
}

#[test]
fn the_text_output_says_what_each_metric_means_and_how_players_were_judged() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = plain_sample(dir.path());
    for (command, system) in [("evaluate", "--systems"), ("replay", "--system")] {
        let output = mmr_service(&[
            command,
            "--input",
            path_str(&input),
            system,
            "elo-mmr",
            "--min-history",
            "2",
        ]);
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{command}: {text}");
        for said in [
            "pair inversion  share of the pairs",
            "higher is better, 0.5 is a coin toss",
            "ln 2 = 0.693 is a coin toss",
            "Judged here: K = 2.",
        ] {
            assert!(
                text.contains(said),
                "{command} does not say `{said}`: {text}"
            );
        }
        let help = mmr_service(&[command, "--help"]);
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(
            help.contains("What the metrics mean"),
            "{command} --help: {help}"
        );
        // Where TrueSkill is offered, its licence is named (docs/trueskill.md).
        if command == "evaluate" {
            assert!(
                help.contains("Microsoft's trademark") && help.contains("docs/trueskill.md"),
                "{command} --help: {help}"
            );
        }
    }
}
