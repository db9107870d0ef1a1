//! What a correction does to a pool's applied rounds (docs/corrections.md): the lines to rate
//! again from the start, the round bodies it changes, the rounds it voids, and the parameters
//! to rate with. Pure: the worker reads the lines, rates the plan and stores the outcome.

use crate::engine::SystemParams;
use crate::storage::{AppliedRecord, EntryKind, QueuedRound};
use crate::wire::{Correction, Entry, RoundRequest};

/// A correction's effect on the pool's applied lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Every surviving round and season start, in order, with its body after the correction:
    /// what the pool is rated from again.
    pub lines: Vec<QueuedRound>,
    /// The rounds whose bodies change, with their new canonical bodies.
    pub changed: Vec<(String, String)>,
    /// The rounds voided.
    pub voided: Vec<String>,
    /// The parameters to rate with.
    pub params: SystemParams,
}

/// The rounds among `entries`, by id.
fn rounds(entries: &mut [(AppliedRecord, Entry)]) -> Vec<(String, &mut RoundRequest)> {
    entries
        .iter_mut()
        .filter_map(|(record, entry)| match entry {
            Entry::Round(round) => Some((record.id.clone(), round)),
            _ => None,
        })
        .collect()
}

/// The plan of `correction` over `applied` (the pool's applied rounds and season starts, in
/// order) in a pool rated with `params`; a message saying why when it cannot apply.
pub fn plan(
    applied: Vec<AppliedRecord>,
    correction: &Correction,
    params: &SystemParams,
) -> Result<Plan, String> {
    plan_all(applied, std::slice::from_ref(correction), params).map_err(|(_, reason)| reason)
}

/// The plan of `corrections`, one after another, as one: what applying each in turn would
/// leave, for one recomputation instead of one each. When one of them cannot apply after those
/// before it, its index and why (then none is planned; those before it may be, alone).
pub fn plan_all(
    applied: Vec<AppliedRecord>,
    corrections: &[Correction],
    params: &SystemParams,
) -> Result<Plan, (usize, String)> {
    let mut entries: Vec<(AppliedRecord, Entry)> = applied
        .into_iter()
        .map(|record| {
            let value: serde_json::Value = serde_json::from_str(&record.body)
                .map_err(|e| format!("stored line `{}` unreadable: {e}", record.id))?;
            let entry = Entry::from_value(&value)
                .map_err(|e| format!("stored line `{}` unreadable: {e}", record.id))?;
            Ok((record, entry))
        })
        .collect::<Result<_, String>>()
        .map_err(|reason| (0, reason))?;
    let mut changed = std::collections::BTreeSet::new();
    let mut voided = Vec::new();
    let mut params = params.clone();
    for (index, correction) in corrections.iter().enumerate() {
        apply_one(
            correction,
            &mut entries,
            &mut changed,
            &mut voided,
            &mut params,
        )
        .map_err(|reason| (index, reason))?;
    }
    let merged = corrections
        .iter()
        .any(|c| matches!(c, Correction::Merge { .. }));
    // Checked against the parameters the last of them leaves: a failure here is the last's.
    lines_of(entries, &changed, voided, params, merged)
        .map_err(|reason| (corrections.len() - 1, reason))
}

/// What `correction` does to `entries`, the rounds it `changed` and those `voided` so far,
/// and the `params`.
fn apply_one(
    correction: &Correction,
    entries: &mut [(AppliedRecord, Entry)],
    changed: &mut std::collections::BTreeSet<String>,
    voided: &mut Vec<String>,
    params: &mut SystemParams,
) -> Result<(), String> {
    match correction {
        Correction::Void { round } => {
            if voided.contains(round) || !rounds(entries).iter().any(|(id, _)| id == round) {
                return Err(format!("the pool has no applied round `{round}`"));
            }
            voided.push(round.clone());
        }
        Correction::Disqualify { round, player } => {
            let mut found = rounds(entries);
            let (_, standings) = found
                .iter_mut()
                .find(|(id, _)| id == round)
                .ok_or_else(|| format!("the pool has no applied round `{round}`"))?;
            let before = standings.standings.len();
            standings.standings.retain(|s| &s.player != player);
            if standings.standings.len() == before {
                return Err(format!("round `{round}` has no player `{player}`"));
            }
            changed.insert(round.clone());
        }
        Correction::Rename { player, to } => {
            let mut found = rounds(entries);
            let plays =
                |who: &str, round: &RoundRequest| round.standings.iter().any(|s| s.player == who);
            if found.iter().any(|(_, r)| plays(to, r)) {
                return Err(format!("player `{to}` has rounds already: merge instead"));
            }
            for (id, round) in &mut found {
                for standing in round.standings.iter_mut().filter(|s| &s.player == player) {
                    standing.player.clone_from(to);
                    changed.insert(id.clone());
                }
            }
            if changed.is_empty() {
                return Err(format!("player `{player}` has no applied round"));
            }
        }
        Correction::Merge { player, into } => {
            let mut found = rounds(entries);
            let plays =
                |who: &str, round: &RoundRequest| round.standings.iter().any(|s| s.player == who);
            for who in [player, into] {
                if !found.iter().any(|(_, r)| plays(who, r)) {
                    return Err(format!("player `{who}` has no applied round"));
                }
            }
            for (id, round) in &mut found {
                if !plays(player, round) {
                    continue;
                }
                if plays(into, round) {
                    // A round both played keeps `into`'s own result.
                    round.standings.retain(|s| &s.player != player);
                } else {
                    for standing in round.standings.iter_mut().filter(|s| &s.player == player) {
                        standing.player.clone_from(into);
                    }
                }
                changed.insert(id.clone());
            }
        }
        Correction::Params { system } => {
            system.validate().map_err(|e| format!("parameters: {e}"))?;
            params.clone_from(system);
        }
    }
    Ok(())
}

/// The lines left of `entries` once the rounds `voided` are taken out, with their new bodies
/// where `changed`, each checked against `params`; a round a merge left with one entrant
/// (`merged`) is voided too.
fn lines_of(
    entries: Vec<(AppliedRecord, Entry)>,
    changed: &std::collections::BTreeSet<String>,
    mut voided: Vec<String>,
    params: SystemParams,
    merged: bool,
) -> Result<Plan, String> {
    let mut lines = Vec::with_capacity(entries.len());
    let mut bodies = Vec::with_capacity(changed.len());
    for (record, entry) in entries {
        if voided.contains(&record.id) {
            continue;
        }
        let body = if let Entry::Round(round) = &entry {
            let checked = round
                .to_round()
                .and_then(|r| params.check_round(&r).map_err(Into::into));
            match checked {
                Ok(()) => {}
                // A merge can leave a round between a player and themselves: no result.
                Err(_) if merged && round.standings.len() < 2 => {
                    voided.push(record.id);
                    continue;
                }
                Err(error) => return Err(format!("round `{}`: {error}", record.id)),
            }
            if changed.contains(&record.id) {
                let body = entry.canonical().map_err(|e| e.to_string())?;
                bodies.push((record.id.clone(), body.clone()));
                body
            } else {
                record.body
            }
        } else {
            record.body
        };
        let kind = match entry {
            Entry::Season(_) => EntryKind::Season,
            _ => EntryKind::Round,
        };
        lines.push(QueuedRound {
            id: record.id,
            seq: record.seq,
            body,
            kind: kind.as_str().to_owned(),
        });
    }
    Ok(Plan {
        lines,
        changed: bodies,
        voided,
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EloMmrParams, EloParams};

    fn record(seq: i64, body: &str) -> AppliedRecord {
        let value: serde_json::Value = serde_json::from_str(body).expect("JSON");
        let id = value["id"]
            .as_str()
            .or_else(|| value["season"]["id"].as_str())
            .expect("an id")
            .to_owned();
        AppliedRecord {
            seq,
            id,
            body: body.to_owned(),
        }
    }

    fn stream() -> Vec<AppliedRecord> {
        vec![
            record(
                1,
                r#"{"id":"r1","standings":[{"player":"a","rank":1},{"player":"b","rank":2},{"player":"c","rank":3}]}"#,
            ),
            record(
                2,
                r#"{"season":{"id":"s2","mu_reset":0.5,"sigma_reset":0.0}}"#,
            ),
            record(
                3,
                r#"{"id":"r3","standings":[{"player":"b","rank":1},{"player":"a2","rank":2}]}"#,
            ),
            record(
                4,
                r#"{"id":"r4","standings":[{"player":"a","rank":1},{"player":"a2","rank":2}]}"#,
            ),
        ]
    }

    fn run(correction: Correction) -> Result<Plan, String> {
        plan(stream(), &correction, &EloMmrParams::default().into())
    }

    fn ids(plan: &Plan) -> Vec<&str> {
        plan.lines.iter().map(|l| l.id.as_str()).collect()
    }

    #[test]
    fn a_void_drops_the_round_and_keeps_the_rest_as_stored() {
        let plan = run(Correction::Void { round: "r3".into() }).expect("applies");
        assert_eq!(ids(&plan), ["r1", "s2", "r4"]);
        assert_eq!(plan.voided, ["r3"]);
        assert!(plan.changed.is_empty());
        assert_eq!(plan.lines[0].body, stream()[0].body);
        let missing = run(Correction::Void { round: "s2".into() });
        assert!(missing
            .expect_err("a season start is not a round")
            .contains("s2"));
    }

    #[test]
    fn a_disqualification_removes_one_standing_and_needs_two_left() {
        let plan = run(Correction::Disqualify {
            round: "r1".into(),
            player: "b".into(),
        })
        .expect("applies");
        assert_eq!(
            plan.changed,
            [(
                "r1".to_owned(),
                r#"{"id":"r1","standings":[{"player":"a","rank":1},{"player":"c","rank":3}]}"#
                    .to_owned()
            )]
        );
        assert_eq!(plan.lines[0].body, plan.changed[0].1);
        let alone = run(Correction::Disqualify {
            round: "r3".into(),
            player: "b".into(),
        });
        assert!(alone.is_err(), "one entrant left: void the round instead");
        assert!(run(Correction::Disqualify {
            round: "r1".into(),
            player: "zed".into()
        })
        .is_err());
    }

    #[test]
    fn a_rename_rewrites_every_round_and_refuses_a_taken_name() {
        let plan = run(Correction::Rename {
            player: "a".into(),
            to: "ann".into(),
        })
        .expect("applies");
        let changed: Vec<&str> = plan.changed.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(changed, ["r1", "r4"]);
        assert!(plan
            .changed
            .iter()
            .all(|(_, body)| body.contains(r#""player":"ann""#)));
        assert!(run(Correction::Rename {
            player: "a".into(),
            to: "b".into()
        })
        .is_err());
        assert!(run(Correction::Rename {
            player: "zed".into(),
            to: "z".into()
        })
        .is_err());
    }

    #[test]
    fn a_merge_moves_the_rounds_and_voids_one_against_oneself() {
        let plan = run(Correction::Merge {
            player: "a2".into(),
            into: "a".into(),
        })
        .expect("applies");
        assert_eq!(ids(&plan), ["r1", "s2", "r3"]);
        assert_eq!(plan.voided, ["r4"]);
        assert!(plan.lines[2].body.contains(r#"{"player":"a","rank":2}"#));
    }

    #[test]
    fn new_parameters_must_take_every_round() {
        let plan = run(Correction::Params {
            system: SystemParams::Elo(EloParams::default()),
        })
        .expect("Elo takes these rounds");
        assert_eq!(plan.params, SystemParams::Elo(EloParams::default()));
        assert_eq!(ids(&plan), ["r1", "s2", "r3", "r4"]);
        let bad = EloMmrParams {
            beta: -1.0,
            ..EloMmrParams::default()
        };
        assert!(run(Correction::Params { system: bad.into() }).is_err());
    }
}
