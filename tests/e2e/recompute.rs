//! A correction's recomputation through a SIGKILL, on the real binary: a pool holding the
//! shared formula1 rounds (synthetic ones without them) gets a rename, and the service is
//! killed while it rates the pool again. The database holds the pool as it was, the
//! correction still queued; the restarted service applies it once, then the round posted after
//! it, and every rating equals `replay` of the pool's export (the corrected rounds), bit for
//! bit.

use std::time::{Duration, Instant};

use crate::rounds::{self, Rng};
use crate::server::{Backend, Server, ADMIN_KEY};
use crate::{assert_same_ratings, formula1, post_all, replayed, served, wait_until_applied, POOL};

/// Longest wait for the recomputation to be seen running.
const RUNNING_TIMEOUT: Duration = Duration::from_secs(60);

fn a_correction_interrupted_by_a_kill_is_applied_once_after_a_restart(backend: Backend) {
    let rounds: Vec<String> = formula1(usize::MAX).unwrap_or_else(|| {
        let synthetic = rounds::synthetic(&mut Rng::new(7), "syn", 600, 200, 20);
        synthetic.into_iter().map(|round| round.body).collect()
    });
    let Some(mut server) = Server::start(backend) else {
        return;
    };
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    post_all(&server, &rounds);
    wait_until_applied(&server, rounds.len() as u64);

    let first: serde_json::Value = serde_json::from_str(&rounds[0]).expect("JSON");
    let player = first["standings"][0]["player"]
        .as_str()
        .expect("a player")
        .to_owned();
    let rename =
        serde_json::json!({"id": "handle", "action": "rename", "player": player, "to": "renamed"});
    assert_eq!(
        server.post(
            &format!("/v1/pools/{POOL}/corrections"),
            &rename.to_string(),
            ADMIN_KEY
        ),
        202
    );
    let after = serde_json::json!({"id": "after", "standings": [
        {"player": "renamed", "rank": 1}, {"player": "newcomer", "rank": 2}]});
    post_all(&server, &[after.to_string()]);

    let deadline = Instant::now() + RUNNING_TIMEOUT;
    loop {
        let recompute = server.get_json(&format!("/v1/pools/{POOL}/recompute"));
        let (done, lines) = (recompute["done"].as_u64(), recompute["lines"].as_u64());
        // Some lines rated and handed to the transaction, not all: the kill lands inside it.
        if recompute["state"] == "running" && done > Some(0) && done < lines {
            server.kill();
            eprintln!("killed while recomputing: {recompute}");
            break;
        }
        assert_ne!(
            recompute["state"], "applied",
            "the kill came too late: {recompute}"
        );
        assert!(Instant::now() < deadline, "never seen running: {recompute}");
        std::thread::sleep(Duration::from_millis(1));
    }
    let stored = server.stored_rounds(POOL);
    let correction = stored
        .iter()
        .find(|round| round.id == "handle")
        .expect("the correction is stored");
    assert_eq!(
        correction.status, "queued",
        "the kill left the stored pool as it was"
    );

    server.restart();
    wait_until_applied(&server, rounds.len() as u64 + 2);
    let export = server.export(POOL);
    let lines: Vec<String> = export.lines().map(str::to_owned).collect();
    // The pool's line, the rounds, and the round posted after the correction.
    assert_eq!(lines.len(), rounds.len() + 2);
    let served = served(&server);
    assert!(!served.contains_key(&player) && served.contains_key("renamed"));
    assert_same_ratings(&served, &replayed(server.dir(), &lines));
    let recompute = server.get_json(&format!("/v1/pools/{POOL}/recompute"));
    assert_eq!(recompute["state"], "applied", "{recompute}");
}

#[test]
fn sqlite_applies_a_correction_once_through_a_kill_in_its_recomputation() {
    a_correction_interrupted_by_a_kill_is_applied_once_after_a_restart(Backend::Sqlite);
}

#[test]
fn postgres_applies_a_correction_once_through_a_kill_in_its_recomputation() {
    a_correction_interrupted_by_a_kill_is_applied_once_after_a_restart(Backend::Postgres);
}
