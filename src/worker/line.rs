//! A queued line as the worker reads it. A round is read straight into the engine's round from
//! the form POST stored once it had checked it, with no walk through the wire layer and no
//! check again: what the pool's system still refuses, the engine finds while it lays the round
//! out, which it does once. Season starts and corrections, few and small, are read through the
//! wire layer as the API reads them.
//!
//! **The stored form of a round.** Form 1 is a line of the round stream (docs/rounds.md),
//! `wire::RoundRequest` serialized: what every version of the service has written. It has no
//! `v` key, which the wire refuses in a round; a later form will be an object with `"v": N`, so
//! a process that meets a row written by a newer one (replicas upgraded one at a time) fails
//! that line with a reason instead of misreading it.

use serde::Deserialize;
use time::OffsetDateTime;

use crate::engine::{Round, SoftReset, Standing};
use crate::storage::{EntryKind, QueuedRound};
use crate::wire::{Correction, Entry};

/// The stored forms of a round this version reads.
const FORMS: &str = "form 1";

/// A queued line, read.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Line {
    /// A round, as the engine rates it.
    Round(Round),
    /// The start of a season, and its reset.
    Season(SoftReset),
    /// A correction of the rounds before it.
    Correction(Correction),
}

/// A round in its stored form: form 1, read field by field into the engine's types (its `id`
/// is the row's own).
#[derive(Deserialize)]
struct Stored {
    /// Absent in form 1; a later form's number.
    v: Option<u64>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    time: Option<OffsetDateTime>,
    weight: Option<f64>,
    perf_ceiling: Option<f64>,
    standings: Vec<Standing>,
}

/// Reads `queued` by its kind; why not, when it cannot be read.
pub(super) fn read(queued: &QueuedRound) -> Result<Line, String> {
    let unreadable = |e: &dyn std::fmt::Display| format!("stored body unreadable: {e}");
    if queued.kind == EntryKind::Round.as_str() {
        let stored: Stored = serde_json::from_str(&queued.body).map_err(|e| unreadable(&e))?;
        if let Some(form) = stored.v {
            return Err(format!(
                "stored in form {form}, which this version cannot read ({FORMS})"
            ));
        }
        return Ok(Line::Round(Round {
            time: stored.time.map(OffsetDateTime::unix_timestamp),
            weight: stored.weight.unwrap_or(1.0),
            perf_ceiling: stored.perf_ceiling,
            standings: stored.standings,
        }));
    }
    let value: serde_json::Value =
        serde_json::from_str(&queued.body).map_err(|e| unreadable(&e))?;
    match Entry::from_value(&value).map_err(|e| unreadable(&e))? {
        Entry::Season(season) => Ok(Line::Season(season.reset())),
        Entry::Correction(correction) => Ok(Line::Correction(correction.action)),
        Entry::Round(_) => Err(format!("a round stored as a {}", queued.kind)),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::wire::{RoundRequest, StandingRequest};

    fn queued(kind: EntryKind, body: &str) -> QueuedRound {
        QueuedRound {
            id: "r".into(),
            seq: 1,
            body: body.into(),
            kind: kind.as_str().into(),
        }
    }

    /// What the wire layer makes of `body`, as the worker read it before.
    fn through_the_wire(body: &str) -> Round {
        let value: serde_json::Value = serde_json::from_str(body).expect("JSON");
        let request = RoundRequest::from_value(&value).expect("a round");
        request.to_round().expect("a checked round")
    }

    fn round(body: &str) -> Round {
        match read(&queued(EntryKind::Round, body)) {
            Ok(Line::Round(round)) => round,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn rows_as_earlier_versions_wrote_them_read_as_the_wire_layer_reads_them() {
        for body in [
            r#"{"id":"a","standings":[{"player":"x","rank":1},{"player":"y","rank":2}]}"#,
            r#"{"id":"b","time":"2020-03-01T10:00:00+02:00","weight":null,"perf_ceiling":null,
                "standings":[{"player":"x","rank":1,"team":null,"partial_play":null},
                             {"player":"y","rank":1,"team":"t"},{"player":"z","rank":1,"team":"t"}]}"#,
            r#"{"id":"c","time":"1999-12-31T23:59:60Z","weight":1.0,"perf_ceiling":3000.5,
                "standings":[{"player":"x","rank":2,"partial_play":0.25},{"player":"y","rank":1}]}"#,
        ] {
            assert_eq!(round(body), through_the_wire(body), "{body}");
        }
    }

    #[test]
    fn a_row_of_a_later_form_is_refused_with_a_reason_not_misread() {
        let body = r#"{"v":2,"standings":[{"player":"x","rank":1},{"player":"y","rank":2}]}"#;
        let reason = read(&queued(EntryKind::Round, body)).expect_err("a later form");
        assert_eq!(
            reason,
            "stored in form 2, which this version cannot read (form 1)"
        );
    }

    #[test]
    fn seasons_and_corrections_are_read_by_their_kind() {
        let season = r#"{"season":{"id":"s","mu_reset":0.5,"sigma_reset":0.0}}"#;
        assert_eq!(
            read(&queued(EntryKind::Season, season)),
            Ok(Line::Season(SoftReset {
                mu: 0.5,
                sigma: 0.0
            }))
        );
        let void = r#"{"correction":{"id":"c","action":"void","round":"r"}}"#;
        assert_eq!(
            read(&queued(EntryKind::Correction, void)),
            Ok(Line::Correction(Correction::Void { round: "r".into() }))
        );
        let misfiled =
            r#"{"id":"a","standings":[{"player":"x","rank":1},{"player":"y","rank":2}]}"#;
        assert!(read(&queued(EntryKind::Season, misfiled)).is_err());
        let reason = read(&queued(EntryKind::Round, "{")).expect_err("no JSON");
        assert!(reason.starts_with("stored body unreadable"), "{reason}");
    }

    fn standing() -> impl Strategy<Value = StandingRequest> {
        (
            "[a-z]{1,3}",
            1..5u64,
            proptest::option::of("[a-z]{1,2}"),
            proptest::option::of(0.01..=1.0f64),
        )
            .prop_map(|(player, rank, team, partial_play)| StandingRequest {
                player,
                rank,
                team,
                partial_play,
            })
    }

    proptest! {
        /// Whatever POST stores (a checked round, serialized), the worker reads as the round
        /// POST checked, to the bit.
        #[test]
        fn a_stored_round_reads_as_the_round_post_checked(
            standings in proptest::collection::vec(standing(), 2..8),
            seconds in proptest::option::of(0..4_000_000_000i64),
            minutes in -1439..1440i32,
            weight in proptest::option::of(1e-6..=1e6f64),
            perf_ceiling in proptest::option::of(-1e6..1e6f64),
        ) {
            let time = seconds.map(|s| {
                let offset = time::UtcOffset::from_whole_seconds(minutes * 60).expect("an offset");
                let instant = OffsetDateTime::from_unix_timestamp(s).expect("a time");
                instant.to_offset(offset)
                    .format(&time::format_description::well_known::Rfc3339).expect("RFC 3339")
            });
            let request = RoundRequest { id: "r".into(), time, weight, perf_ceiling, standings };
            let Ok(checked) = request.checked_round() else { return Ok(()) };
            let body = serde_json::to_string(&request).expect("JSON");
            prop_assert_eq!(round(&body), checked);
        }
    }
}

/// What reading a queued round costs the worker, against the wire layer's way (parse, walk,
/// copy, check). `cargo test --release --lib worker::line::figures -- --ignored --nocapture`.
#[cfg(test)]
mod figures {
    use std::time::Instant;

    use super::*;
    use crate::wire::RoundRequest;

    #[test]
    #[ignore = "prints figures"]
    fn reading_a_stored_round_against_the_wire_layer() {
        for entrants in [2, 100_000] {
            let standings: Vec<String> = (0..entrants)
                .map(|i| format!(r#"{{"player":"player-{i}","rank":{}}}"#, i + 1))
                .collect();
            let body = format!(
                r#"{{"id":"r","time":"2026-11-30T10:00:00Z","standings":[{}]}}"#,
                standings.join(",")
            );
            let queued = QueuedRound {
                id: "r".into(),
                seq: 1,
                body,
                kind: EntryKind::Round.as_str().into(),
            };
            let runs = 2_000_000 / entrants;
            let started = Instant::now();
            for _ in 0..runs {
                std::hint::black_box(read(std::hint::black_box(&queued)).is_ok());
            }
            let direct = started.elapsed() / runs;
            let started = Instant::now();
            for _ in 0..runs {
                let value: serde_json::Value =
                    serde_json::from_str(std::hint::black_box(&queued.body)).expect("JSON");
                let request = RoundRequest::from_value(&value).expect("a round");
                std::hint::black_box(request.to_round().is_ok());
            }
            let wire = started.elapsed() / runs;
            println!("{entrants} entrants: stored form {direct:?}, through the wire {wire:?}");
        }
    }
}
