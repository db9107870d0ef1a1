//! The README's tour and the guides' examples, run as a user pastes them: every ```sh block
//! runs in bash, in order, against the real binary on a fresh embedded database (one per file),
//! in an empty folder of its own, with `KEY` set to the admin key its first start printed and
//! `mmr-service` on the path. The fenced block right after one (blank lines between at most) is
//! what its commands must print, a line per `curl`, where `...` stands for anything (a number
//! that depends on the clock, a key); an example that shows no output must exit 0 and be
//! answered no HTTP error. A `curl` that times out (`-m`, to end a stream) is not a failure.
//! The blocks that build or test this repository, or start a server that does not return, are
//! not run ([`NOT_RUN`]); the text beside each says so.

use std::path::Path;
use std::process::Command;

use super::server::{Backend, Server};

/// One fenced block of a Markdown file: its info string (`sh`, `json`, or empty) and text.
#[derive(Debug, PartialEq)]
struct Fenced {
    info: String,
    text: String,
    /// Whether only blank lines separate it from the block before it.
    follows_block: bool,
}

/// Every fenced block of `markdown`, in order.
fn fenced_blocks(markdown: &str) -> Vec<Fenced> {
    let mut blocks = Vec::new();
    let mut open: Option<Fenced> = None;
    let mut prose_since_block = true;
    for line in markdown.lines() {
        let fence = line.trim_start().strip_prefix("```");
        if let Some(block) = open.as_mut() {
            if fence.is_some() {
                blocks.extend(open.take());
                prose_since_block = false;
            } else {
                block.text.push_str(line);
                block.text.push('\n');
            }
        } else if let Some(info) = fence {
            open = Some(Fenced {
                info: info.trim().to_owned(),
                text: String::new(),
                follows_block: !prose_since_block,
            });
        } else if !line.trim().is_empty() {
            prose_since_block = true;
        }
    }
    blocks
}

/// A command block to run and the output it shows, if any.
struct Example {
    commands: String,
    shown: Option<String>,
}

/// How the `sh` blocks that are not run begin, and why they are not.
const NOT_RUN: [(&str, &str); 3] = [
    (
        "cargo ",
        "builds this repository or runs its tests, from inside which this test runs",
    ),
    (".ci/run", "is CI, which runs this test"),
    (
        "target/release/mmr-service serve",
        "starts a server that serves until stopped; the tests start this binary themselves",
    ),
];

/// The `sh` blocks of `markdown` but those [`NOT_RUN`] names, each with the block after it.
fn examples(markdown: &str) -> Vec<Example> {
    let blocks = fenced_blocks(markdown);
    let mut examples = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let first = block.text.lines().find(|l| !l.trim().is_empty());
        let not_run = |line: &str| NOT_RUN.iter().any(|(start, _)| line.starts_with(start));
        if block.info != "sh" || first.is_none_or(not_run) {
            continue;
        }
        let shown = blocks
            .get(index + 1)
            .filter(|next| next.follows_block && next.info != "sh")
            .map(|next| next.text.clone());
        examples.push(Example {
            commands: block.text.clone(),
            shown,
        });
    }
    examples
}

/// Whether `line` is what `shown` shows, `...` standing for any text.
fn matches_line(shown: &str, line: &str) -> bool {
    let mut parts = shown.split("...");
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// What is wrong with `printed` as the output `shown` shows, if anything.
fn mismatch(shown: &str, printed: &str) -> Option<String> {
    let shown: Vec<&str> = shown.lines().collect();
    let printed: Vec<&str> = printed.lines().collect();
    if shown.len() != printed.len() {
        return Some(format!(
            "{} lines shown, {} printed",
            shown.len(),
            printed.len()
        ));
    }
    shown
        .iter()
        .zip(&printed)
        .find(|(s, p)| !matches_line(s, p))
        .map(|(s, p)| format!("shown:   {s}\nprinted: {p}"))
}

/// What an example printed, and the HTTP status of each answer it got.
struct Printed {
    output: String,
    statuses: Vec<u16>,
}

/// `curl` as the examples run it: quiet but for errors, each answer on a line of its own, its
/// status written to stderr; a timeout (`-m`) ends it without failing.
const CURL: &str = r#"curl() {
  local s=0
  command curl -sS -w '%{stderr}HTTP %{http_code}\n' "$@" || s=$?
  echo
  if [ "$s" -ne 0 ] && [ "$s" -ne 28 ]; then exit "$s"; fi
}"#;

/// Runs `commands` in bash against `base` in `dir`, each `curl` answer on a line of its own.
fn run(commands: &str, base: &str, key: &str, dir: &Path) -> Printed {
    let address = base.trim_start_matches("http://");
    let commands = commands
        .replace("localhost:8080", address)
        .replace("127.0.0.1:8080", address);
    let script = format!("set -eu\n{CURL}\n{commands}");
    let binary = Path::new(env!("CARGO_BIN_EXE_mmr-service"));
    let path = std::env::join_paths(
        std::iter::once(binary.parent().expect("a directory").to_owned()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ),
    )
    .expect("a PATH");
    let output = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("KEY", key)
        .env("PATH", path)
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{commands}\nfailed: {stderr}");
    let statuses = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("HTTP ")?.parse().ok())
        .collect();
    Printed {
        output: String::from_utf8(output.stdout).expect("UTF-8 output"),
        statuses,
    }
}

/// Runs the examples of the Markdown file at `path` (from the crate's root) on a fresh server,
/// checking each; how many ran, or `None` where no server could start.
fn run_examples(path: &str) -> Option<usize> {
    let markdown = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let found = examples(&markdown);
    let server = Server::start(Backend::Default)?;
    let key = server.first_key().expect("the first start prints a key");
    let folder = tempfile::tempdir().expect("a folder for the examples' files");
    for example in &found {
        let printed = run(&example.commands, server.base_url(), &key, folder.path());
        match &example.shown {
            Some(shown) => {
                if let Some(problem) = mismatch(shown, &printed.output) {
                    panic!(
                        "{path}:\n{}\n{problem}\nall printed:\n{}",
                        example.commands, printed.output
                    );
                }
            }
            None => assert!(
                printed.statuses.iter().all(|status| *status < 400),
                "{path}: an example that shows no output was answered {:?}:\n{}\n{}",
                printed.statuses,
                example.commands,
                printed.output
            ),
        }
    }
    Some(found.len())
}

/// Whether `curl` and `bash` are here; under CI they must be.
fn tools_present() -> bool {
    let present = ["curl", "bash"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(
        present || std::env::var_os("CI").is_none(),
        "curl and bash are needed in CI"
    );
    if !present {
        println!("SKIPPED: curl or bash is missing");
    }
    present
}

#[test]
fn the_readmes_tour_prints_what_it_shows() {
    if !tools_present() {
        return;
    }
    if let Some(ran) = run_examples("README.md") {
        assert!(ran >= 6, "the tour's examples are found: {ran}");
    }
}

/// The guides whose examples run; every other page of the book holds none.
const GUIDES: [&str; 6] = [
    "docs/commands.md",
    "docs/platforms.md",
    "docs/frontends.md",
    "docs/matchmakers.md",
    "docs/seasons.md",
    "docs/display.md",
];

#[test]
fn every_guides_examples_print_what_they_show() {
    if !tools_present() {
        return;
    }
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    for entry in std::fs::read_dir(&docs).expect("docs/") {
        let path = entry.expect("an entry").path();
        let name = format!(
            "docs/{}",
            path.file_name().expect("a name").to_string_lossy()
        );
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            examples(&text).is_empty() || GUIDES.contains(&name.as_str()),
            "{name} holds examples: add it to GUIDES"
        );
    }
    for guide in GUIDES {
        if let Some(ran) = run_examples(guide) {
            assert!(ran > 0, "{guide}: no example found");
        }
    }
}

#[test]
fn an_output_that_differs_from_what_is_shown_is_caught() {
    let markdown = "text\n\n```sh\ncurl a\n```\n\n```json\n{\"id\":\"r1\",\"mu\":...}\n```\n\
                    prose\n\n```\nnot an output\n```\n```sh\ncargo test\n```\n```toml\na = 1\n```\n";
    let found = examples(markdown);
    assert_eq!(
        found.len(),
        1,
        "sh blocks run, but those that build or test the repository"
    );
    let shown = found[0].shown.as_deref().expect("the block right after");
    assert_eq!(mismatch(shown, "{\"id\":\"r1\",\"mu\":1500.5}\n"), None);
    assert!(mismatch(shown, "{\"id\":\"r2\",\"mu\":1500.5}\n").is_some());
    assert!(mismatch(shown, "{\"id\":\"r1\",\"mu\":1}\n{}\n").is_some());
    assert!(matches_line("a...b...c", "a12b34c"));
    assert!(!matches_line("a...b...c", "a12b34"));
    assert!(!matches_line("x...", "y"));
}
