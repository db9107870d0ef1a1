//! The README's tour, run as a user pastes it: every ```sh block whose commands are `curl` lines
//! runs in bash, in order, against the real binary on a fresh embedded database, with `KEY` set
//! to the admin key its first start printed. The fenced block right after one (blank lines
//! between at most) is what its commands must print, a line per `curl`, where `...` stands for
//! anything (a number that depends on the ratings, a key). Blocks that are not `curl` lines
//! (building, starting the binary) are not run here: other tests run those commands.

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

/// The `sh` blocks of `markdown` made of `curl` lines, each with the block after it.
fn examples(markdown: &str) -> Vec<Example> {
    let blocks = fenced_blocks(markdown);
    let mut examples = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let first = block.text.lines().find(|l| !l.trim().is_empty());
        if block.info != "sh" || !first.is_some_and(|l| l.starts_with("curl ")) {
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

/// Runs `commands` in bash against `base`, each `curl` answer on a line of its own.
fn run(commands: &str, base: &str, key: &str) -> String {
    let script = format!(
        "set -eu\ncurl() {{ command curl -sS \"$@\"; echo; }}\n{}",
        commands.replace("localhost:8080", base.trim_start_matches("http://"))
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("KEY", key)
        .output()
        .expect("bash runs");
    assert!(
        output.status.success(),
        "{commands}\nfailed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
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
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let tour = examples(&readme);
    assert!(
        tour.len() >= 6,
        "the tour's examples are found: {}",
        tour.len()
    );
    let Some(server) = Server::start(Backend::Default) else {
        return;
    };
    let key = server.first_key().expect("the first start prints a key");
    for example in &tour {
        let printed = run(&example.commands, server.base_url(), &key);
        if let Some(shown) = &example.shown {
            if let Some(problem) = mismatch(shown, &printed) {
                panic!("{}\n{problem}\nall printed:\n{printed}", example.commands);
            }
        }
    }
}

#[test]
fn an_output_that_differs_from_what_is_shown_is_caught() {
    let markdown = "text\n\n```sh\ncurl a\n```\n\n```json\n{\"id\":\"r1\",\"mu\":...}\n```\n\
                    prose\n\n```\nnot an output\n```\n```sh\nsleep 1\n```\n";
    let found = examples(markdown);
    assert_eq!(found.len(), 1, "only curl blocks run");
    let shown = found[0].shown.as_deref().expect("the block right after");
    assert_eq!(mismatch(shown, "{\"id\":\"r1\",\"mu\":1500.5}\n"), None);
    assert!(mismatch(shown, "{\"id\":\"r2\",\"mu\":1500.5}\n").is_some());
    assert!(mismatch(shown, "{\"id\":\"r1\",\"mu\":1}\n{}\n").is_some());
    assert!(matches_line("a...b...c", "a12b34c"));
    assert!(!matches_line("a...b...c", "a12b34"));
    assert!(!matches_line("x...", "y"));
}
