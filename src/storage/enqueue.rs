//! One transaction of posts ([`super::Storage::enqueue_requests`]) worked out in memory, so
//! that Postgres is asked a fixed number of statements whatever the number of lines (SQLite,
//! in-process, goes line by line): what is stored under the lines' ids, the tail of the queue
//! and what the pool is now, read once; every new line written in one statement. Requests are taken in order, each all or nothing,
//! and a later one sees what an earlier one stored, as if each had its own transaction.

use std::collections::HashMap;

use super::rows::{content_hash, parse_status};
use super::{
    Against, Audited, EnqueueRequest, Enqueued, EnqueuedAll, EntryKind, Error, RoundStatus,
};
use crate::engine::SystemParams;

/// A line stored under an id the requests use: its status and the hash it is compared by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StoredLine {
    /// `queued`, `applied`, `failed` or `voided`.
    pub status: RoundStatus,
    /// Its comparison key's hash ([`content_hash`]).
    pub hash: Vec<u8>,
}

/// The pool's queue as the transaction found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tail {
    /// The seq of its newest line, 0 for none.
    pub last_seq: i64,
    /// Rounds waiting.
    pub queued: u64,
}

/// A line to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NewLine<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its place in the pool's order.
    pub seq: i64,
    /// Its canonical JSON.
    pub body: &'a str,
    /// Its comparison key's hash.
    pub hash: Vec<u8>,
    /// What it is.
    pub kind: EntryKind,
    /// The admin action it is, for the audit log.
    pub audit: Option<Audited<'a>>,
}

/// What the transaction answers each request, and the lines it writes.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan<'a> {
    /// One answer per request, in order.
    pub answers: Vec<EnqueuedAll>,
    /// Every new line, in seq order.
    pub lines: Vec<NewLine<'a>>,
}

/// What the pool is now, as a request's [`Against`] is compared with.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Now {
    /// Its parameters.
    pub params: SystemParams,
    /// Its newest queued correction's seq.
    pub correction: Option<i64>,
}

/// The stored status of a line whose status column reads `status`.
pub(super) fn stored(status: &str, hash: Vec<u8>) -> Result<StoredLine, Error> {
    Ok(StoredLine {
        status: parse_status(status)?,
        hash,
    })
}

/// Plans `requests` over the lines `stored` under their ids, the queue's `tail` and what the
/// pool is `now` (needed only when a request is checked against it), with at most
/// `max_queued` rounds waiting.
pub(super) fn plan<'a>(
    requests: &[EnqueueRequest<'a>],
    mut stored: HashMap<&'a str, StoredLine>,
    mut tail: Tail,
    mut now: Option<Now>,
    max_queued: u64,
) -> Plan<'a> {
    let mut answers = Vec::with_capacity(requests.len());
    let mut lines = Vec::new();
    for request in requests {
        if let Some(against) = request.against {
            if !matches(now.as_ref(), &against) {
                answers.push(EnqueuedAll::Changed);
                continue;
            }
        }
        let answer = plan_request(request, &stored, &tail, max_queued);
        if let EnqueuedAll::Stored(outcomes) = &answer {
            for (entry, outcome) in request.entries.iter().zip(outcomes) {
                if let Enqueued::Accepted { .. } = outcome {
                    tail.last_seq += 1;
                    tail.queued += 1;
                    let hash = content_hash(entry.key);
                    stored.insert(
                        entry.id,
                        StoredLine {
                            status: RoundStatus::Queued,
                            hash: hash.clone(),
                        },
                    );
                    if entry.kind == EntryKind::Correction {
                        if let Some(now) = now.as_mut() {
                            now.correction = Some(tail.last_seq);
                        }
                    }
                    lines.push(NewLine {
                        id: entry.id,
                        seq: tail.last_seq,
                        body: entry.body,
                        hash,
                        kind: entry.kind,
                        audit: entry.audit,
                    });
                }
            }
        }
        answers.push(answer);
    }
    Plan { answers, lines }
}

/// Whether the pool is still as a request was checked `against`.
fn matches(now: Option<&Now>, against: &Against<'_>) -> bool {
    now.is_some_and(|now| now.params == *against.params && now.correction == against.correction)
}

/// One request's answer, given what is stored and the queue's tail before it.
fn plan_request(
    request: &EnqueueRequest<'_>,
    stored: &HashMap<&str, StoredLine>,
    tail: &Tail,
    max_queued: u64,
) -> EnqueuedAll {
    let mut outcomes = Vec::with_capacity(request.entries.len());
    let mut new = 0u64;
    for (index, entry) in request.entries.iter().enumerate() {
        match stored.get(entry.id) {
            Some(line) => {
                // A line stored before keys existed is compared by its body's hash.
                let same = line.hash == content_hash(entry.key)
                    || (entry.key != entry.body && line.hash == content_hash(entry.body));
                if !same {
                    return EnqueuedAll::Conflict(index);
                }
                outcomes.push(Enqueued::AlreadyStored {
                    status: line.status,
                });
            }
            None => {
                new += 1;
                outcomes.push(Enqueued::Accepted {
                    position: tail.queued + new,
                });
            }
        }
    }
    if new > 0 && tail.queued.saturating_add(new) > max_queued {
        return EnqueuedAll::QueueFull {
            queued: tail.queued,
            new,
        };
    }
    EnqueuedAll::Stored(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EloParams;
    use crate::storage::NewEntry;

    fn entry(id: &'static str, body: &'static str) -> NewEntry<'static> {
        NewEntry::by_body(id, EntryKind::Round, body)
    }

    fn tail(last_seq: i64, queued: u64) -> Tail {
        Tail { last_seq, queued }
    }

    fn one<'a>(entries: &'a [NewEntry<'static>]) -> Vec<EnqueueRequest<'a>> {
        vec![EnqueueRequest {
            entries,
            against: None,
        }]
    }

    #[test]
    fn new_lines_take_the_places_after_the_tail_and_a_later_request_sees_them() {
        let (first, second) = (
            [entry("a", "A"), entry("b", "B")],
            [entry("b", "B"), entry("c", "C")],
        );
        let third = [entry("c", "other")];
        let requests = [&first[..], &second[..], &third[..]].map(|entries| EnqueueRequest {
            entries,
            against: None,
        });
        let plan = plan(&requests, HashMap::new(), tail(7, 2), None, 10);
        assert_eq!(
            plan.answers,
            [
                EnqueuedAll::Stored(vec![
                    Enqueued::Accepted { position: 3 },
                    Enqueued::Accepted { position: 4 }
                ]),
                EnqueuedAll::Stored(vec![
                    Enqueued::AlreadyStored {
                        status: RoundStatus::Queued
                    },
                    Enqueued::Accepted { position: 5 }
                ]),
                EnqueuedAll::Conflict(0),
            ]
        );
        let seqs: Vec<(&str, i64)> = plan.lines.iter().map(|l| (l.id, l.seq)).collect();
        assert_eq!(seqs, [("a", 8), ("b", 9), ("c", 10)]);
    }

    #[test]
    fn a_request_is_all_or_nothing() {
        let stored = HashMap::from([("b", stored_line("applied", "B"))]);
        let entries = [entry("a", "A"), entry("b", "changed")];
        let plan = plan(&one(&entries), stored, tail(1, 0), None, 10);
        assert_eq!(plan.answers, [EnqueuedAll::Conflict(1)]);
        assert!(plan.lines.is_empty());

        let entries = [entry("a", "A"), entry("b", "B"), entry("c", "C")];
        let full = super::plan(&one(&entries), HashMap::new(), tail(9, 9), None, 10);
        assert_eq!(full.answers, [EnqueuedAll::QueueFull { queued: 9, new: 3 }]);
        assert!(full.lines.is_empty());
    }

    #[test]
    fn a_repost_of_a_full_queue_is_still_recognized() {
        let stored = HashMap::from([("a", stored_line("failed", "A"))]);
        let entries = [entry("a", "A")];
        let plan = plan(&one(&entries), stored, tail(9, 10), None, 10);
        assert_eq!(
            plan.answers,
            [EnqueuedAll::Stored(vec![Enqueued::AlreadyStored {
                status: RoundStatus::Failed
            }])]
        );
    }

    #[test]
    fn a_correction_queued_by_an_earlier_request_changes_what_later_ones_are_checked_against() {
        let params = SystemParams::Elo(EloParams::default());
        let correction = [NewEntry::by_body("fix", EntryKind::Correction, "F")];
        let round = [entry("r", "R")];
        let against_none = Some(Against {
            params: &params,
            correction: None,
        });
        let against_fix = Some(Against {
            params: &params,
            correction: Some(4),
        });
        let requests = [
            EnqueueRequest {
                entries: &correction,
                against: against_none,
            },
            EnqueueRequest {
                entries: &round,
                against: against_none,
            },
            EnqueueRequest {
                entries: &round,
                against: against_fix,
            },
        ];
        let now = Now {
            params: params.clone(),
            correction: None,
        };
        let plan = plan(&requests, HashMap::new(), tail(3, 0), Some(now), 10);
        assert_eq!(
            plan.answers,
            [
                EnqueuedAll::Stored(vec![Enqueued::Accepted { position: 1 }]),
                EnqueuedAll::Changed,
                EnqueuedAll::Stored(vec![Enqueued::Accepted { position: 2 }]),
            ]
        );
    }

    fn stored_line(status: &str, key: &str) -> StoredLine {
        stored(status, content_hash(key)).expect("a status")
    }
}
