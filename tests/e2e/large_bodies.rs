//! Large round bodies cannot take the service's memory: bodies are read and parsed within a
//! budget of bytes in all (`server.body_bytes_in_flight`; a body beyond it is answered 503
//! `overloaded` and dropped unparsed), and the memory a refused body took is given back to the
//! system (the binary's allocator is mimalloc). Before, six concurrent 30 MiB rounds that fail
//! validation at their last standing peaked at 3.4 GB here and left 3.1 GB resident; with the
//! budget alone (glibc's allocator) 1.2 GB and 1.0 GB.

use std::time::{Duration, Instant};

use crate::server::{Backend, ADMIN_KEY};
use crate::unread::{resident_mb, with_a_pool};
use crate::POOL;

/// Bodies posted at once.
const AT_ONCE: usize = 6;

/// What parsing the bodies let in may add to the service's resident memory at the peak.
const PEAK_BOUND_MB: f64 = 1500.0;

/// What may stay resident once they were refused.
const AFTER_BOUND_MB: f64 = 200.0;

/// A round of about 30 MiB whose last standing has rank 0: refused with 422 only once the whole
/// body was parsed.
fn refused_round() -> String {
    let players = 690_000;
    let mut body = String::with_capacity(31 << 20);
    body.push_str(r#"{"id": "big", "standings": ["#);
    for i in 0..players {
        let rank = if i + 1 == players { 0 } else { i + 1 };
        body.push_str(&format!(
            r#"{{"player": "player-{i:08}", "rank": {rank}}},"#
        ));
    }
    body.pop();
    body.push_str("]}");
    assert!(
        body.len() < 32 << 20,
        "{} bytes: under the body limit",
        body.len()
    );
    body
}

#[test]
fn large_refused_bodies_are_parsed_within_a_budget_and_their_memory_goes_back() {
    let body = refused_round();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(server) = with_a_pool(backend) else {
            continue;
        };
        let pid = server.pid();
        let before = resident_mb(pid);
        let done = std::sync::atomic::AtomicBool::new(false);
        let (peak, statuses) = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| {
                let mut peak = before;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    peak = peak.max(resident_mb(pid));
                    std::thread::sleep(Duration::from_millis(20));
                }
                peak
            });
            let posts: Vec<_> = (0..AT_ONCE)
                .map(|_| {
                    scope.spawn(|| {
                        server.post(&format!("/v1/pools/{POOL}/rounds"), &body, ADMIN_KEY)
                    })
                })
                .collect();
            let statuses: Vec<u16> = posts
                .into_iter()
                .map(|post| post.join().expect("a post"))
                .collect();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            (watcher.join().expect("the watcher"), statuses)
        });
        // The allocator gives freed memory back within a few seconds.
        let settled = Instant::now();
        let mut after = resident_mb(pid);
        while after - before >= AFTER_BOUND_MB && settled.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(250));
            after = resident_mb(pid);
        }
        println!(
            "{backend:?}: {AT_ONCE} refused 30 MiB rounds at once: {statuses:?}; {before:.0} MB before, \
             {peak:.0} MB at the peak, {after:.0} MB after"
        );
        assert!(
            statuses.iter().all(|&s| s == 422 || s == 503),
            "{statuses:?}"
        );
        assert!(statuses.contains(&422), "one was parsed: {statuses:?}");
        assert!(
            peak - before < PEAK_BOUND_MB,
            "{backend:?}: {before:.0} MB before, {peak:.0} MB at the peak"
        );
        assert!(
            after - before < AFTER_BOUND_MB,
            "{backend:?}: {before:.0} MB before, {after:.0} MB after"
        );
        assert_eq!(
            server.get_json(&format!("/v1/pools/{POOL}"))["rounds_queued"],
            0,
            "nothing stored"
        );
    }
}
