//! Crash safety: one client streams rounds to the real binary while the test SIGKILLs it at
//! seeded random moments (mid-POST, mid-apply, idle) and restarts it each time. The client
//! posts again every round whose POST got no answer, except a seeded few it abandons. At the
//! end every acknowledged round is applied exactly once, in the order of its first 2xx, every
//! stored round is whole (applied, one history row per entrant), and every rating equals
//! `mmr-service replay` of the stored rounds, bit for bit, before and after one more restart.
//! The pool has leagues whose players move every few rounds, so kills land in rounds that place,
//! promote and demote players: every player's league and division equal those of
//! `mmr-service replay --display` too. Seasons start every few hundred rounds (soft resets
//! posted between rounds), so kills also land while a season starts.
//!
//! The seed comes from `MMR_CRASH_SEED` or the clock and is printed: run again with it to
//! draw the same kill points and abandonments (timing still varies from run to run).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::rounds::{self, Rng, Round};
use crate::server::{Backend, Server, ADMIN_KEY};
use crate::stream::{self, Target};
use crate::{
    assert_same_ratings, formula1, replayed, replayed_leagues, served, served_leagues,
    wait_until_applied, POOL,
};

/// SIGKILLs per run, at least 20 by the issue.
const KILLS: usize = 24;

/// Longest pause between the client reaching a kill point and the kill, so that kills land
/// in every phase of a POST and of the worker's step.
const MAX_KILL_DELAY_MS: u64 = 15;

/// One in this many POSTs left unanswered by a kill is abandoned rather than posted again.
const ABANDON_ONE_IN: u64 = 4;

/// Rounds between two season starts in the stream.
const SEASON_EVERY: usize = 150;

/// Rounds streamed when `../shared/data/formula1` is absent.
const SYNTHETIC_ROUNDS: usize = 600;

/// The pool's display settings: leagues narrow enough (k = 1, thresholds 150 apart, divisions
/// of 3) that rounds keep moving players between leagues and divisions.
const DISPLAY: &str = r#"{"leagues": {"k": 1, "placement_rounds": 2, "division_size": 3,
    "tiers": [{"name": "bronze"}, {"name": "silver", "threshold": 1350},
              {"name": "gold", "threshold": 1500}, {"name": "diamond", "threshold": 1650}]}}"#;

fn seed() -> u64 {
    match std::env::var("MMR_CRASH_SEED") {
        Ok(seed) => seed.parse().expect("MMR_CRASH_SEED is a u64"),
        Err(_) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("after 1970");
            now.as_secs() ^ (u64::from(now.subsec_nanos()) << 32) ^ u64::from(std::process::id())
        }
    }
}

fn applied_exactly_once_in_order_through_random_kills(backend: Backend) {
    let seed = seed();
    eprintln!("crash test on {backend:?}: seed {seed} (replay with MMR_CRASH_SEED={seed})");
    let mut rng = Rng::new(seed);
    let rounds: Vec<Round> = match formula1(usize::MAX) {
        Some(lines) => lines.into_iter().map(Round::parse).collect(),
        None => {
            println!("streaming {SYNTHETIC_ROUNDS} synthetic rounds instead");
            rounds::synthetic(&mut rng, "syn", SYNTHETIC_ROUNDS, 200, 20)
        }
    };
    // A season starts every SEASON_EVERY rounds, with a soft reset: a kill may land while
    // one is applied, and applying one twice (or never) would show in every rating.
    let rounds: Vec<Round> = rounds
        .into_iter()
        .enumerate()
        .flat_map(|(i, round)| {
            let season = (i > 0 && i % SEASON_EVERY == 0).then(|| {
                Round::parse(format!(
                    r#"{{"season":{{"id":"season-{i}","mu_reset":0.3,"sigma_reset":0.5}}}}"#
                ))
            });
            season.into_iter().chain([round])
        })
        .collect();
    let Some(mut server) = Server::start(backend) else {
        return;
    };
    let started = Instant::now();
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}/display"), DISPLAY, ADMIN_KEY),
        200
    );

    // Distinct points in the stream, so that every kill comes after the client moved on.
    let mut kill_points: Vec<usize> = Vec::with_capacity(KILLS);
    while kill_points.len() < KILLS {
        let point = 1 + rng.below(rounds.len() as u64 - 2) as usize;
        if !kill_points.contains(&point) {
            kill_points.push(point);
        }
    }
    kill_points.sort_unstable();

    let rounds = Arc::new(rounds);
    let target = Arc::new(Target::new(server.base_url()));
    let client = {
        let (rounds, target) = (Arc::clone(&rounds), Arc::clone(&target));
        let mut rng = Rng::new(rng.next_u64());
        std::thread::spawn(move || {
            stream::post_all(&rounds, POOL, ADMIN_KEY, &target, || {
                rng.below(ABANDON_ONE_IN) == 0
            })
        })
    };
    let mut kills = 0;
    let mut kills_with_rounds_queued = 0;
    for point in kill_points {
        while target.posting() < point && !client.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        if client.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(rng.below(MAX_KILL_DELAY_MS + 1)));
        server.kill();
        kills += 1;
        let stored = server.stored_rounds(POOL);
        if stored.iter().any(|round| round.status == "queued") {
            kills_with_rounds_queued += 1;
        }
        server.restart();
        target.move_to(server.base_url());
    }
    let ledger = client.join().expect("the client thread");
    assert!(kills >= 20, "only {kills} kills happened");

    let stored = server.stored_rounds(POOL).len();
    wait_until_applied(&server, stored as u64);
    let (order, abandoned_but_stored) = ledger.check(&rounds, &server.stored_rounds(POOL));
    let order: Vec<String> = order.into_iter().map(|r| r.body.clone()).collect();
    let expected = replayed(server.dir(), &order);
    assert_same_ratings(&served(&server), &expected);
    let leagues = replayed_leagues(server.dir(), &order, Some(DISPLAY));
    let moved = leagues
        .values()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(
        moved > 10,
        "players are spread over leagues and divisions: {leagues:?}"
    );
    assert_eq!(
        served_leagues(&server),
        leagues,
        "leagues as replay places them"
    );

    // A cold start reads every belief back from the database alone.
    server.kill();
    server.restart();
    assert_same_ratings(&served(&server), &expected);
    assert_eq!(
        served_leagues(&server),
        leagues,
        "leagues after a cold start"
    );
    assert_eq!(server.terminate(), Some(0), "SIGTERM exits 0");
    eprintln!(
        "crash test on {backend:?}: {kills} kills ({kills_with_rounds_queued} left rounds \
         queued), {} rounds stored, {} acknowledged, {} POSTs unanswered, {} retried after \
         503/429, {} abandoned ({abandoned_but_stored} of them stored), {:.1} s",
        order.len(),
        ledger.acknowledged.len(),
        ledger.unanswered,
        ledger.retried,
        ledger.abandoned.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn sqlite_applies_every_acknowledged_round_exactly_once_in_order_through_random_sigkills() {
    applied_exactly_once_in_order_through_random_kills(Backend::Sqlite);
}

#[test]
fn postgres_applies_every_acknowledged_round_exactly_once_in_order_through_random_sigkills() {
    applied_exactly_once_in_order_through_random_kills(Backend::Postgres);
}
