//! Broken inputs and bad parameters: an error naming the place and the field, a non-zero
//! exit, and no ratings file.

use crate::{mmr_service, path_str, sample};

const GOOD_LINE: &str =
    r#"{"id": "ok", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}"#;

/// Replays `lines` (a good line first, then a blank line, then `bad` on line 3) and returns
/// the error message, after checking the exit code and that no ratings were written.
fn error_for(bad: &str) -> String {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = dir.path().join("rounds.jsonl");
    std::fs::write(&input, format!("{GOOD_LINE}\n\n{bad}\n{GOOD_LINE}\n")).expect("writable");
    let ratings = dir.path().join("ratings.csv");
    let output = mmr_service(&[
        "replay",
        "--input",
        path_str(&input),
        "--output",
        path_str(&ratings),
    ]);
    assert!(!output.status.success(), "{bad} was accepted");
    assert!(!ratings.exists(), "{bad}: ratings were written");
    assert!(output.stdout.is_empty(), "{bad}: a summary was printed");
    String::from_utf8(output.stderr).expect("UTF-8")
}

#[test]
fn every_bad_line_is_reported_with_its_line_number_and_field() {
    let cases = [
        (
            r#"{"id": "x", "standings": [{"player": "a", "rank": 1},"#,
            "line 3: invalid JSON",
            "malformed JSON",
        ),
        (
            r#"{"id": "x", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 0}]}"#,
            "line 3: standings[1].rank: must be a positive integer",
            "rank 0",
        ),
        (
            r#"{"id": "x", "standings": [{"player": "a", "rank": 1}, {"player": "a", "rank": 2}]}"#,
            "line 3: standings[1].player:",
            "duplicate player",
        ),
        (
            r#"{"id": "x", "standings": [{"player": "a", "rank": 1}, {"player": "b"}]}"#,
            "line 3: standings[1].rank: is missing",
            "missing rank",
        ),
        (
            r#"{"standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}"#,
            "line 3: id: is missing",
            "missing id",
        ),
        (
            r#"{"id": "x", "time": "19/02/2010", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}"#,
            "line 3: time:",
            "a time that is not RFC 3339",
        ),
        (
            r#"{"id": "x", "extra": true, "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}"#,
            "line 3: extra: unknown field",
            "an unknown field",
        ),
        (
            r#"{"id": "ok", "standings": [{"player": "c", "rank": 1}, {"player": "d", "rank": 2}]}"#,
            "line 3: id: `ok` is the id of line 1 too",
            "an id used before",
        ),
        (
            r#"{"season": {"id": "ok"}}"#,
            "line 3: id: `ok` is the id of line 1 too",
            "a season start under a round's id",
        ),
    ];
    for (bad, expected, why) in cases {
        let message = error_for(bad);
        assert!(
            message.contains(expected),
            "{why}: expected `{expected}` in `{message}`"
        );
    }
}

#[test]
fn a_bad_parameter_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ratings = dir.path().join("ratings.csv");
    for (flag, value) in [
        ("--beta", "0"),
        ("--rho", "-1"),
        ("--sigma-init", "nan"),
        ("--history-limit", "0"),
    ] {
        let output = mmr_service(&[
            "replay",
            "--input",
            path_str(&sample()),
            "--output",
            path_str(&ratings),
            flag,
            value,
        ]);
        let message = String::from_utf8_lossy(&output.stderr);
        let name = flag.trim_start_matches("--").replace('-', "_");
        assert!(!output.status.success(), "{flag} {value} was accepted");
        assert!(
            message.contains(&name),
            "{flag} {value}: `{message}` does not name it"
        );
        assert!(!ratings.exists());
    }
}

#[test]
fn a_parameter_its_system_does_not_have_or_a_malformed_one_is_named() {
    let input = sample();
    for (args, named) in [
        (&["--system", "weng-lin", "--rho", "1"][..], "rho"),
        (&["--system", "weng-lin", "--param", "gamma=3"][..], "gamma"),
        (&["--param", "kappa=0.5"][..], "kappa"),
        (&["--system", "weng-lin", "--param", "kappa=0"][..], "kappa"),
        (
            &["--system", "trueskill", "--param", "kappa=0.5"][..],
            "kappa",
        ),
        (
            &["--system", "trueskill", "--param", "draw_probability=1"][..],
            "draw_probability",
        ),
        (&["--system", "glicko2", "--beta", "3"][..], "beta"),
        (
            &["--system", "glicko2", "--param", "volatility_init=0"][..],
            "volatility_init",
        ),
        (&["--system", "codeforces", "--param", "tau=1"][..], "tau"),
        (&["--param", "beta"][..], "KEY=VALUE"),
    ] {
        let mut all = vec!["replay", "--input", path_str(&input)];
        all.extend_from_slice(args);
        let output = mmr_service(&all);
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} was accepted");
        assert!(
            message.contains(named),
            "{args:?}: `{message}` does not name {named}"
        );
    }
}

#[test]
fn a_missing_input_is_an_error() {
    let output = mmr_service(&["replay", "--input", "no/such/rounds.jsonl"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no/such/rounds.jsonl"));
}

#[test]
fn a_round_whose_team_sums_stand_far_beyond_their_spread_is_rated_with_no_warning() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = dir.path().join("rounds.jsonl");
    let ratings = dir.path().join("ratings.csv");
    // TrueSkill at μ₀ 5e8 known to σ₀ 1e-4, a pair tied with single players: their sums
    // stand 5e12 spreads apart. The round used to come out not finite and was skipped with a
    // warning (as the service failed it); now both rounds are rated.
    let standings = r#"[{"player": "p0", "rank": 1}, {"player": "p1", "rank": 2, "team": "t2"},
        {"player": "p2", "rank": 4}, {"player": "p3", "rank": 3},
        {"player": "p4", "rank": 4, "team": "t4"}, {"player": "p5", "rank": 4, "team": "t4"},
        {"player": "p6", "rank": 1}, {"player": "p7", "rank": 4}]"#
        .replace('\n', " ");
    let rounds = [
        format!(r#"{{"id": "pairs", "standings": {standings}}}"#),
        r#"{"id": "singles", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}"#
            .to_owned(),
    ];
    std::fs::write(&input, rounds.join("\n")).expect("write the rounds");
    let output = mmr_service(&[
        "replay",
        "--input",
        path_str(&input),
        "--system",
        "trueskill",
        "--param",
        "mu_init=5e8",
        "--param",
        "sigma_init=1e-4",
        "--param",
        "beta=1e-6",
        "--param",
        "tau=0",
        "--param",
        "draw_probability=0.5",
        "--output",
        path_str(&ratings),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("could not be rated"), "{stderr}");
    let written = std::fs::read_to_string(&ratings).expect("the ratings");
    let players: Vec<&str> = written
        .lines()
        .skip(1)
        .map(|line| line.split(',').next().unwrap_or_default())
        .collect();
    assert_eq!(
        players,
        ["a", "b", "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"],
        "both rounds rated: {written}"
    );
}
