//! The client side of the crash and fault tests: posts rounds one after another as a contest
//! platform would, through kills and outages, and keeps a [`Ledger`] of what the service
//! answered. A POST that gets no answer is posted again (the same id and body: a service that
//! stored it answers 200 with its status) or, when the test says so, abandoned; a 503 or 429 is
//! posted again after its `Retry-After`. Owns no server: the test moves the [`Target`] when it
//! restarts one. Also checks the ledger against the rounds the database holds.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;
use std::time::Duration;

use crate::rounds::Round;
use crate::server::StoredRound;

/// Longest the client waits for an answer before counting the POST as unanswered.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// Pause before posting again after no answer: the service is being restarted.
const NO_ANSWER_PAUSE: Duration = Duration::from_millis(10);

/// Where the client posts, shared with the test that kills, restarts and watches the service.
pub struct Target {
    base: RwLock<String>,
    posting: AtomicUsize,
    unavailable: AtomicUsize,
}

impl Target {
    /// A target at `base` (`http://HOST:PORT`).
    pub fn new(base: &str) -> Self {
        Self {
            base: RwLock::new(base.to_owned()),
            posting: AtomicUsize::new(0),
            unavailable: AtomicUsize::new(0),
        }
    }

    /// Points the client at a restarted service.
    pub fn move_to(&self, base: &str) {
        base.clone_into(&mut self.base.write().expect("not poisoned"));
    }

    /// Index of the round being posted; the number of rounds once all are done.
    pub fn posting(&self) -> usize {
        self.posting.load(Ordering::SeqCst)
    }

    /// POSTs answered 503 so far.
    pub fn unavailable(&self) -> usize {
        self.unavailable.load(Ordering::SeqCst)
    }
}

/// What the client was told.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Rounds in the order of their first 2xx answer.
    pub acknowledged: Vec<String>,
    /// Rounds whose POST got no answer and that were not posted again.
    pub abandoned: BTreeSet<String>,
    /// POSTs that got no answer (refused, reset, or cut off before the response).
    pub unanswered: usize,
    /// POSTs answered 503 (`database_unavailable`, `queue_full`, `timeout`) or 429.
    pub retried: usize,
}

/// Posts `rounds` (season starts among them) in order to `pool` with `key`, each until it gets a 2xx or, after a POST
/// that got no answer, until `abandon` says to give it up. Any other answer fails the test.
pub fn post_all(
    rounds: &[Round],
    pool: &str,
    key: &str,
    target: &Target,
    mut abandon: impl FnMut() -> bool,
) -> Ledger {
    let client = reqwest::blocking::Client::builder()
        .timeout(ANSWER_TIMEOUT)
        .build()
        .expect("an HTTP client");
    let mut ledger = Ledger::default();
    for (i, round) in rounds.iter().enumerate() {
        target.posting.store(i, Ordering::SeqCst);
        let (route, body) = round.posted();
        loop {
            let base = target.base.read().expect("not poisoned").clone();
            let answer = client
                .post(format!("{base}/v1/pools/{pool}/{route}"))
                .header("content-type", "application/json")
                .bearer_auth(key)
                .body(body.clone())
                .send();
            let response = match answer {
                Ok(response) => response,
                Err(_) => {
                    ledger.unanswered += 1;
                    if abandon() {
                        ledger.abandoned.insert(round.id.clone());
                        break;
                    }
                    std::thread::sleep(NO_ANSWER_PAUSE);
                    continue;
                }
            };
            match response.status().as_u16() {
                200 | 202 => {
                    ledger.acknowledged.push(round.id.clone());
                    break;
                }
                status @ (429 | 503) => {
                    if status == 503 {
                        target.unavailable.fetch_add(1, Ordering::SeqCst);
                    }
                    ledger.retried += 1;
                    let seconds = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| {
                            panic!("round {}: a {status} without Retry-After", round.id)
                        });
                    std::thread::sleep(Duration::from_secs(seconds));
                }
                status => panic!(
                    "round {}: unexpected {status}: {}",
                    round.id,
                    response.text().unwrap_or_default()
                ),
            }
        }
    }
    target.posting.store(rounds.len(), Ordering::SeqCst);
    ledger
}

impl Ledger {
    /// Checks what the database holds (`stored`, in acceptance order) against what the client
    /// was told: every stored round was posted, is applied with one history row per entrant,
    /// and was acknowledged or abandoned; every acknowledged round is stored, once, and the
    /// acknowledged ones are in the order of their first 2xx. Returns the stored rounds in
    /// acceptance order, and how many abandoned rounds were stored anyway.
    pub fn check<'a>(
        &self,
        rounds: &'a [Round],
        stored: &[StoredRound],
    ) -> (Vec<&'a Round>, usize) {
        let posted: BTreeMap<&str, &Round> = rounds.iter().map(|r| (r.id.as_str(), r)).collect();
        let acknowledged: BTreeSet<&str> = self.acknowledged.iter().map(String::as_str).collect();
        let mut seen = BTreeSet::new();
        let mut order = Vec::with_capacity(stored.len());
        let mut abandoned_but_stored = 0;
        for row in stored {
            let round = posted
                .get(row.id.as_str())
                .unwrap_or_else(|| panic!("round {} is stored but was never posted", row.id));
            assert!(
                seen.insert(row.id.as_str()),
                "round {} is stored twice",
                row.id
            );
            assert_eq!(row.status, "applied", "round {} is not applied", row.id);
            assert_eq!(
                row.history_rows,
                i64::try_from(round.entrants).expect("a small count"),
                "round {}: one history row per entrant, no more, no less",
                row.id
            );
            if !acknowledged.contains(row.id.as_str()) {
                assert!(
                    self.abandoned.contains(&row.id),
                    "round {} is stored, unacknowledged, yet was not abandoned",
                    row.id
                );
                abandoned_but_stored += 1;
            }
            order.push(*round);
        }
        for id in &self.acknowledged {
            assert!(
                seen.contains(id.as_str()),
                "acknowledged round {id} was lost"
            );
        }
        let applied_acknowledged: Vec<&str> = stored
            .iter()
            .map(|row| row.id.as_str())
            .filter(|id| acknowledged.contains(id))
            .collect();
        let first_2xx: Vec<&str> = self.acknowledged.iter().map(String::as_str).collect();
        assert!(
            applied_acknowledged == first_2xx,
            "rounds were applied in another order than they were acknowledged"
        );
        (order, abandoned_but_stored)
    }
}
