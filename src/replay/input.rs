//! Reading a history of rounds for `replay`, in one of two layouts: JSON Lines of
//! [`Entry`] (rounds, and the season starts between them; a pool's export opens with a
//! [`PoolLine`]), or the reference implementation's directory of `0.json`, `1.json`, …
//! (the `Contest` of `multi-skill`'s `data_processing`). Every error says where (line or
//! file) and which field; nothing is rated here.

use std::collections::HashMap;
use std::fs;
use std::io::ErrorKind;
use std::io::{BufRead, BufReader};
use std::path::Path;

use rayon::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::Error;
use crate::engine::{Round, SoftReset, Standing};
use crate::wire::{Entry, FieldError, PoolLine};

/// How the input of `replay` is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum InputFormat {
    /// One round per line in the wire format; blank lines are skipped.
    #[default]
    Jsonl,
    /// A directory of `0.json`, `1.json`, … in the reference implementation's format, read in
    /// numeric order up to the first missing index.
    EloMmrDir,
}

/// A round, or a season start, and where it was read from.
#[derive(Debug, Clone)]
pub struct SourcedRound {
    /// `line 7` or the file's path: how errors point at the round.
    pub location: String,
    /// What the line holds.
    pub line: Line,
}

/// One step of a history.
#[derive(Debug, Clone)]
pub enum Line {
    /// A round's results.
    Round(Round),
    /// A new season, which soft-resets every rating (`{"season": {…}}`, docs/seasons.md).
    Season(SoftReset),
}

/// How many of `lines` are rounds (not season starts).
#[must_use]
pub fn round_count(lines: &[SourcedRound]) -> usize {
    lines
        .iter()
        .filter(|l| matches!(l.line, Line::Round(_)))
        .count()
}

impl Line {
    /// The round, if the line holds one.
    #[must_use]
    pub fn into_round(self) -> Option<Round> {
        match self {
            Self::Round(round) => Some(round),
            Self::Season(_) => None,
        }
    }
}

/// The pool line a JSON Lines file opens with (a pool's export does), if it opens with one.
pub fn pool_line(path: &Path, format: InputFormat) -> Result<Option<PoolLine>, Error> {
    if format != InputFormat::Jsonl {
        return Ok(None);
    }
    let read_error = |source| Error::Read {
        path: path.to_owned(),
        source,
    };
    // The first line only: the rounds are read after, by `read`.
    let file = fs::File::open(path).map_err(read_error)?;
    let mut first = None;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(read_error)?;
        if !line.trim().is_empty() {
            first = Some((index, line));
            break;
        }
    }
    let Some((index, line)) = first else {
        return Ok(None);
    };
    let Ok(value) = serde_json::from_str::<Value>(&line) else {
        return Ok(None);
    };
    PoolLine::from_value(&value)
        .transpose()
        .map_err(|error| Error::Input {
            location: format!("line {}", index + 1),
            error,
        })
}

/// Reads every round of `path`, in order (past the pool line a file may open with).
pub fn read(path: &Path, format: InputFormat) -> Result<Vec<SourcedRound>, Error> {
    match format {
        InputFormat::Jsonl => read_jsonl(path),
        InputFormat::EloMmrDir => read_elo_mmr_dir(path),
    }
}

fn read_jsonl(path: &Path) -> Result<Vec<SourcedRound>, Error> {
    let text = fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .collect();
    // A pool line opens an export; `pool_line` reads it.
    if lines
        .first()
        .is_some_and(|(_, line)| PoolLine::is_line(line))
    {
        lines.remove(0);
    }
    // Parsed in parallel, reported in order: the first bad line is the one named.
    let parsed: Vec<Result<(String, SourcedRound), Error>> = lines
        .into_par_iter()
        .map(|(index, line)| {
            let location = format!("line {}", index + 1);
            match parse_line(line) {
                Ok((id, line)) => Ok((id, SourcedRound { location, line })),
                Err(error) => Err(Error::Input { location, error }),
            }
        })
        .collect();
    // A pool keeps one line per id: a file that repeats one would rate rounds no pool holds.
    let mut seen: HashMap<String, String> = HashMap::with_capacity(parsed.len());
    let mut rounds = Vec::with_capacity(parsed.len());
    for result in parsed {
        let (id, round) = result?;
        if let Some(first) = seen.get(&id) {
            return Err(Error::Input {
                error: FieldError::new("id", format!("`{id}` is the id of {first} too")),
                location: round.location,
            });
        }
        seen.insert(id, round.location.clone());
        rounds.push(round);
    }
    Ok(rounds)
}

/// A line's id and what it holds.
fn parse_line(line: &str) -> Result<(String, Line), FieldError> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| FieldError::new("", format!("invalid JSON: {e}")))?;
    if PoolLine::from_value(&value).is_some() {
        return Err(FieldError::new(
            "pool",
            "a pool line opens a file (a pool's export) and is not read further down",
        ));
    }
    match Entry::from_value(&value)? {
        Entry::Round(round) => {
            let id = round.id.clone();
            round.into_round().map(|round| (id, Line::Round(round)))
        }
        Entry::Season(season) => Ok((season.id.clone(), Line::Season(season.reset()))),
        Entry::Correction(_) => Err(FieldError::new(
            "correction",
            "corrections are applied by the service: replay a pool's export, which holds the \
             corrected rounds",
        )),
    }
}

/// One file of the reference's directory format. Like the reference, fields it does not know
/// (`url`, anything else) are ignored.
#[derive(Deserialize)]
struct Contest {
    #[serde(default = "unit_weight")]
    weight: f64,
    time_seconds: u64,
    /// Player, and the 0-based range of places they share with the players they tied.
    standings: Vec<(String, u64, u64)>,
}

fn unit_weight() -> f64 {
    1.0
}

fn read_elo_mmr_dir(dir: &Path) -> Result<Vec<SourcedRound>, Error> {
    let mut rounds = Vec::new();
    for index in 0.. {
        let path = dir.join(format!("{index}.json"));
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound && index > 0 => break,
            Err(source) => return Err(Error::Read { path, source }),
        };
        let location = path.display().to_string();
        match contest_round(&text) {
            Ok(round) => rounds.push(SourcedRound {
                location,
                line: Line::Round(round),
            }),
            Err(error) => return Err(Error::Input { location, error }),
        }
    }
    Ok(rounds)
}

fn contest_round(text: &str) -> Result<Round, FieldError> {
    let contest: Contest = serde_json::from_str(text)
        .map_err(|e| FieldError::new("", format!("not a contest: {e}")))?;
    let time = i64::try_from(contest.time_seconds)
        .map_err(|_| FieldError::new("time_seconds", "is too large"))?;
    let standings = contest
        .standings
        .into_iter()
        .enumerate()
        .map(|(i, (player, lo, hi))| {
            if hi < lo {
                return Err(FieldError::new(
                    format!("standings[{i}]"),
                    "the tie range ends before it starts",
                ));
            }
            Ok(Standing::solo(player, lo + 1))
        })
        .collect::<Result<_, _>>()?;
    let round = Round {
        time: Some(time),
        weight: contest.weight,
        perf_ceiling: None,
        standings,
    };
    round.validate()?;
    Ok(round)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_contest_converts_with_tie_ranges_as_ranks() {
        let round = contest_round(
            r#"{"name": "Round #0", "url": null, "time_seconds": 86400,
                "standings": [["a", 0, 0], ["b", 1, 2], ["c", 1, 2]]}"#,
        )
        .expect("valid contest");
        let ranks: Vec<u64> = round.standings.iter().map(|s| s.rank).collect();
        assert_eq!(ranks, vec![1, 2, 2]);
        assert_eq!((round.time, round.weight), (Some(86_400), 1.0));
    }

    #[test]
    fn a_contest_without_a_time_names_the_field() {
        let error = contest_round(r#"{"name": "x", "standings": [["a", 0, 0], ["b", 1, 1]]}"#)
            .expect_err("time_seconds is required");
        assert!(error.reason.contains("time_seconds"), "{error}");
    }

    #[test]
    fn a_backwards_tie_range_is_rejected() {
        let error = contest_round(
            r#"{"name": "x", "time_seconds": 0, "standings": [["a", 0, 0], ["b", 2, 1]]}"#,
        )
        .expect_err("hi < lo");
        assert_eq!(error.field, "standings[1]");
    }
}
