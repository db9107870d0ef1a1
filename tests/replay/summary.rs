//! The summary and the ratings file on the synthetic sample.

use std::collections::HashSet;

use crate::{json_summary, mmr_service, path_str, plain_sample, sample};

const SUMMARY_KEYS: [&str; 12] = [
    "rounds",
    "participations",
    "players",
    "rating_seconds",
    "metrics_seconds",
    "wall_seconds",
    "pair_inversion",
    "rank_deviation",
    "log_loss",
    "brier",
    "log_loss_stderr",
    "brier_stderr",
];
/// The sample's rounds.
const SAMPLE_ROUNDS: u64 = 40;

/// Participations and distinct players of the sample, counted straight from the file.
fn sample_counts() -> (u64, u64) {
    let text = std::fs::read_to_string(sample()).expect("the sample is readable");
    let mut participations = 0;
    let mut players = HashSet::new();
    for line in text.lines() {
        let round: serde_json::Value = serde_json::from_str(line).expect("the sample is JSON");
        for standing in round["standings"].as_array().expect("standings") {
            participations += 1;
            players.insert(standing["player"].as_str().expect("player").to_owned());
        }
    }
    (participations, players.len() as u64)
}

#[test]
fn the_json_summary_of_the_sample_has_exactly_the_documented_keys_and_sane_values() {
    let summary = json_summary(&["--input", path_str(&sample())]);
    let object = summary.as_object().expect("an object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = SUMMARY_KEYS.to_vec();
    expected.sort_unstable();
    assert_eq!(keys, expected);

    let (participations, players) = sample_counts();
    assert_eq!(summary["rounds"].as_u64(), Some(SAMPLE_ROUNDS));
    assert_eq!(summary["participations"].as_u64(), Some(participations));
    assert_eq!(summary["players"].as_u64(), Some(players));
    let number = |key: &str| summary[key].as_f64().unwrap_or(f64::NAN);
    assert!(number("rating_seconds") >= 0.0);
    assert!(
        number("wall_seconds") >= number("rating_seconds"),
        "the whole replay contains its rating: {summary}"
    );
    assert!(
        number("wall_seconds") >= number("rating_seconds") + number("metrics_seconds"),
        "{summary}"
    );
    // Every opponent is looked at unless `--metric-opponents` asks for a sample.
    assert_eq!(
        (number("log_loss_stderr"), number("brier_stderr")),
        (0.0, 0.0)
    );
    // The sample's players have stable hidden skills: ratings must beat coin flips.
    assert!((0.5..=1.0).contains(&number("pair_inversion")), "{summary}");
    assert!((0.0..0.5).contains(&number("rank_deviation")), "{summary}");
    assert!(
        (0.0..std::f64::consts::LN_2).contains(&number("log_loss")),
        "{summary}"
    );
    assert!((0.0..0.25).contains(&number("brier")), "{summary}");
}

#[test]
fn min_history_narrows_the_metrics_but_not_the_counts() {
    let input = path_str(&sample()).to_owned();
    let all = json_summary(&["--input", &input]);
    let seasoned = json_summary(&["--input", &input, "--min-history", "5"]);
    let nobody = json_summary(&["--input", &input, "--min-history", "1000"]);
    for key in ["rounds", "participations", "players"] {
        assert_eq!(all[key], seasoned[key], "{key}");
        assert_eq!(all[key], nobody[key], "{key}");
    }
    assert_ne!(all["pair_inversion"], seasoned["pair_inversion"]);
    for key in ["pair_inversion", "rank_deviation", "log_loss", "brier"] {
        assert!(
            nobody[key].is_null(),
            "{key} with no qualifying participation"
        );
    }
}

#[test]
fn the_text_summary_names_every_figure_and_a_piped_run_draws_no_progress_bar() {
    let output = mmr_service(&["replay", "--input", path_str(&sample())]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    for label in [
        "rounds",
        "participations",
        "players",
        "rating seconds",
        "metrics seconds",
        "wall seconds",
        "pair inversion",
        "rank deviation",
        "log loss",
        "brier",
    ] {
        assert!(text.contains(label), "{label} missing from:\n{text}");
    }
    assert!(output.stderr.is_empty(), "stderr: {:?}", output.stderr);
}

#[test]
fn the_ratings_file_is_sorted_by_player_and_parses_back() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let csv_path = dir.path().join("ratings.csv");
    let summary = json_summary(&[
        "--input",
        path_str(&sample()),
        "--output",
        path_str(&csv_path),
    ]);
    let mut reader = csv::Reader::from_path(&csv_path).expect("the ratings file exists");
    let header = reader.headers().expect("a header").clone();
    assert_eq!(
        header.iter().collect::<Vec<_>>(),
        ["player", "mu", "sigma", "rounds"]
    );
    let mut names = Vec::new();
    let mut rounds = 0;
    for record in reader.records() {
        let record = record.expect("a well-formed record");
        names.push(record[0].to_owned());
        let mu: f64 = record[1].parse().expect("mu is a number");
        let sigma: f64 = record[2].parse().expect("sigma is a number");
        assert!(mu.is_finite() && sigma > 0.0, "{record:?}");
        rounds += record[3].parse::<u64>().expect("rounds is an integer");
    }
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "not sorted: {names:?}"
    );
    assert!(
        names.iter().any(|n| n == "Team \"Rocket\", Inc"),
        "quoting lost a name"
    );
    assert_eq!(Some(names.len() as u64), summary["players"].as_u64());
    assert_eq!(Some(rounds), summary["participations"].as_u64());
}

#[test]
fn two_replays_write_identical_ratings_and_elo_mmr_infinity_differs() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = sample();
    let run = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        let mut args = vec!["--input", path_str(&input), "--output", path_str(&path)];
        args.extend_from_slice(extra);
        json_summary(&args);
        std::fs::read(path).expect("the ratings file exists")
    };
    let first = run("a.csv", &[]);
    assert_eq!(first, run("b.csv", &[]));
    assert_ne!(
        first,
        run("c.csv", &["--rho", "inf", "--variant", "logistic"])
    );
    assert_ne!(
        first,
        run("d.csv", &["--variant", "gaussian", "--ties", "split"])
    );
}

#[test]
fn params_given_as_flags_or_as_key_values_rate_alike_and_other_systems_rate_the_sample() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = plain_sample(dir.path());
    let run = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        let mut args = vec!["--input", path_str(&input), "--output", path_str(&path)];
        args.extend_from_slice(extra);
        let summary = json_summary(&args);
        (
            summary,
            std::fs::read(path).expect("the ratings file exists"),
        )
    };
    let flags = [
        "--variant",
        "gaussian",
        "--rho",
        "inf",
        "--beta",
        "150",
        "--gamma",
        "20",
        "--mu-init",
        "1000",
        "--sigma-init",
        "300",
        "--drift-per-day",
        "2",
        "--history-limit",
        "30",
        "--ties",
        "split",
    ];
    let pairs: Vec<String> = flags
        .chunks(2)
        .map(|f| {
            format!(
                "{}={}",
                f[0].trim_start_matches("--").replace('-', "_"),
                f[1]
            )
        })
        .collect();
    let pairs: Vec<&str> = pairs.iter().flat_map(|p| ["--param", p.as_str()]).collect();
    let (_, by_flags) = run("flags.csv", &flags);
    assert_eq!(by_flags, run("pairs.csv", &pairs).1);
    let mut explicit = vec!["--system", "elo-mmr"];
    explicit.extend_from_slice(&flags);
    assert_eq!(by_flags, run("explicit.csv", &explicit).1);
    let (_, default) = run("default.csv", &[]);
    assert_ne!(by_flags, default, "the flags change the ratings");
    let flags = by_flags;

    let (elo_mmr, _) = run("elo-mmr.csv", &[]);
    // Each with the most a σ can end at: its newcomers' σ, plus TrueSkill's small drift.
    for (system, params, most) in [
        ("weng-lin", "tau=0", 25.0 / 3.0),
        ("weng-lin", "model=plackett_luce", 25.0 / 3.0),
        ("trueskill", "draw_probability=0.2", 25.0 / 3.0 + 0.1),
        ("glicko2", "tau=0.4", 350.0),
        ("codeforces", "weight_multiplier=0.5", 350.0),
        // A volatility grows when the rating moves far: bounded by the field, not by σ₀.
        ("topcoder", "weight_multiplier=0.5", 5000.0),
        // Elo keeps no σ: the column is empty.
        ("elo", "k=16", f64::NAN),
    ] {
        let (summary, ratings) = run(
            &format!("{system}.csv"),
            &["--system", system, "--param", params],
        );
        assert_ne!(ratings, flags);
        assert_eq!(summary["players"], elo_mmr["players"], "{system}");
        let pair_inversion = summary["pair_inversion"].as_f64().unwrap_or(-1.0);
        assert!((0.0..=1.0).contains(&pair_inversion), "{system}: {summary}");
        let ratings = String::from_utf8(ratings).expect("UTF-8");
        let mut lines = ratings.lines();
        assert_eq!(lines.next(), Some("player,mu,sigma,rounds"));
        for line in lines {
            let fields: Vec<&str> = line.rsplitn(4, ',').collect();
            if most.is_nan() {
                assert_eq!(fields[1], "", "{system}: {line}");
                continue;
            }
            let sigma: f64 = fields[1].parse().expect("a number");
            assert!(sigma > 0.0 && sigma <= most, "{system}: {line}");
        }
    }
}

#[test]
fn sampled_metrics_are_unbiased_within_their_standard_errors() {
    let exact = json_summary(&["--input", path_str(&sample()), "--metric-opponents", "all"]);
    let sampled = json_summary(&["--input", path_str(&sample()), "--metric-opponents", "4"]);
    let number = |summary: &serde_json::Value, key: &str| summary[key].as_f64().unwrap_or(f64::NAN);
    for key in [
        "rounds",
        "participations",
        "pair_inversion",
        "rank_deviation",
    ] {
        assert_eq!(exact[key], sampled[key], "{key} never samples");
    }
    for (key, stderr) in [("log_loss", "log_loss_stderr"), ("brier", "brier_stderr")] {
        assert_eq!(number(&exact, stderr), 0.0);
        let error = number(&sampled, stderr);
        assert!(error > 0.0, "{sampled}");
        let gap = (number(&sampled, key) - number(&exact, key)).abs();
        assert!(
            gap <= 4.0 * error,
            "{key}: off by {gap}, standard error {error}"
        );
        assert!(
            gap > 0.0,
            "{key}: four opponents of up to 29 cannot be exact"
        );
    }
}

#[test]
fn a_sample_of_fewer_than_two_opponents_is_refused() {
    for value in ["1", "0", "many"] {
        let output = mmr_service(&[
            "replay",
            "--input",
            path_str(&sample()),
            "--metric-opponents",
            value,
        ]);
        assert_eq!(output.status.code(), Some(2), "{value}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--metric-opponents"), "{value}: {stderr}");
    }
}
