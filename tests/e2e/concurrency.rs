//! Concurrency: 32 writers post rounds to 4 pools while 32 readers read every route, for a
//! bounded time, against the real binary. Writers go in waves (a barrier per pool): at the
//! start of each wave all 8 writers of a pool post the same new round at once, then each
//! posts a round of its own, and some post an earlier round again (same body: 200) or with
//! another body (409). Afterwards: no answer was a 5xx (or anything unexpected); each id was
//! accepted (202) exactly once; the database holds exactly the accepted rounds, each applied
//! once with one history row per entrant, in an acceptance order that respects what the
//! clients saw (a round acknowledged before another was posted comes first); readers never saw
//! a pool go back in time; and every rating equals `mmr-service replay` of the pool's rounds in
//! acceptance order, bit for bit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::{json, Value};

use crate::rounds::{Rng, Round};
use crate::server::{Backend, Options, Server, ADMIN_KEY};
use crate::{assert_same_ratings, replayed};

/// Pools written to at once.
const POOLS: usize = 4;

/// Writers per pool (32 in all).
const WRITERS_PER_POOL: usize = 8;

/// Readers (spread over every pool).
const READERS: usize = 32;

/// How long the writers keep starting waves.
const LOAD: Duration = Duration::from_secs(10);

/// Players of each pool; rounds draw from them.
const PLAYERS: u64 = 40;

/// Most entrants of a round.
const MAX_ENTRANTS: u64 = 12;

/// Longest the test waits for the service to apply what it accepted.
const APPLY_TIMEOUT: Duration = Duration::from_secs(120);

/// Longest one request may take before it counts as unanswered.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

fn pool_name(pool: usize) -> String {
    format!("c{pool}")
}

/// Round `id` of `pool`: between 2 and [`MAX_ENTRANTS`] of the pool's players in a random
/// order with some ties, drawn from a generator seeded by `id`, so that posting it again sends
/// the same body.
fn make_round(pool: usize, id: &str) -> Round {
    let mut rng = Rng::new(id.bytes().fold(pool as u64, |h, b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    }));
    let entrants = 2 + rng.below(MAX_ENTRANTS - 1);
    let mut players: Vec<u64> = (0..PLAYERS).collect();
    let mut rank = 0;
    let standings: Vec<Value> = (0..entrants)
        .map(|place| {
            let k = place + rng.below(PLAYERS - place);
            players.swap(place as usize, k as usize);
            if place == 0 || rng.below(6) != 0 {
                rank = place + 1;
            }
            json!({"player": format!("{}-p{}", pool_name(pool), players[place as usize]), "rank": rank})
        })
        .collect();
    Round::parse(json!({"id": id, "standings": standings}).to_string())
}

/// The same id as `round` with other content.
fn conflicting(round: &Round) -> String {
    let mut body: Value = serde_json::from_str(&round.body).expect("a round is JSON");
    body["weight"] = json!(2.0);
    body.to_string()
}

/// What the clients saw.
#[derive(Default)]
struct Log {
    /// Anything that must not happen, described.
    problems: Vec<String>,
    /// Per pool: every accepted round with the wave it was posted in (its first), and whether
    /// it was the wave's shared round.
    accepted: BTreeMap<String, BTreeMap<String, (usize, bool)>>,
    /// Every round posted, by pool and id.
    rounds: BTreeMap<String, BTreeMap<String, Round>>,
    /// Answers by status, for the report.
    statuses: BTreeMap<u16, usize>,
    /// Requests the readers made.
    reads: usize,
}

impl Log {
    fn problem(&mut self, what: String) {
        if self.problems.len() < 50 {
            self.problems.push(what);
        }
    }
}

/// POSTs `body` to `pool`'s rounds; the status, or `None` without an answer.
fn post(client: &Client, base: &str, pool: &str, body: &str) -> Option<u16> {
    client
        .post(format!("{base}/v1/pools/{pool}/rounds"))
        .header("content-type", "application/json")
        .bearer_auth(ADMIN_KEY)
        .body(body.to_owned())
        .send()
        .ok()
        .map(|response| response.status().as_u16())
}

/// One writer of `pool`: waves until the deadline the wave leader reads.
fn write(
    base: &str,
    pool: usize,
    writer: usize,
    barrier: &Barrier,
    stop: &AtomicBool,
    log: &Mutex<Log>,
) {
    let name = pool_name(pool);
    let client = Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("a client");
    let deadline = Instant::now() + LOAD;
    let mut rng = Rng::new((pool * WRITERS_PER_POOL + writer) as u64);
    let record = |round: &Round,
                  wave: usize,
                  shared: bool,
                  status: Option<u16>,
                  expected: &[u16]| {
        let mut log = log.lock().expect("the log is not poisoned");
        let status_code = status.unwrap_or(0);
        *log.statuses.entry(status_code).or_default() += 1;
        log.rounds
            .entry(name.clone())
            .or_default()
            .entry(round.id.clone())
            .or_insert_with(|| round.clone());
        if !expected.contains(&status_code) {
            log.problem(format!(
                "{name} writer {writer} wave {wave}: round {} answered {status:?}, expected one of {expected:?}",
                round.id
            ));
        }
        if status == Some(202) {
            let previous = log
                .accepted
                .entry(name.clone())
                .or_default()
                .insert(round.id.clone(), (wave, shared));
            if previous.is_some() {
                log.problem(format!("{name}: round {} was accepted twice", round.id));
            }
        }
    };
    for wave in 0.. {
        if barrier.wait().is_leader() {
            stop.store(Instant::now() >= deadline, Ordering::SeqCst);
        }
        barrier.wait();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        // Every writer of the pool posts this one at once: one 202, the others 200.
        let shared = make_round(pool, &format!("{name}-w{wave}"));
        let status = post(&client, base, &name, &shared.body);
        record(&shared, wave, true, status, &[200, 202]);
        let own = make_round(pool, &format!("{name}-w{wave}-{writer}"));
        let status = post(&client, base, &name, &own.body);
        record(&own, wave, false, status, &[202]);
        if wave > 0 && rng.below(4) == 0 {
            let earlier = format!("{name}-w{}-{writer}", rng.below(wave as u64));
            let again = make_round(pool, &earlier);
            let status = post(&client, base, &name, &again.body);
            record(&again, wave, false, status, &[200]);
            if rng.below(2) == 0 {
                let status = post(&client, base, &name, &conflicting(&again));
                record(&again, wave, false, status, &[409]);
            }
        }
    }
}

/// One reader: random reads of random pools until `done`; checks that no answer is an error
/// other than 404 (a player or round not there yet) and that no pool goes back in time.
fn read(base: &str, reader: usize, done: &AtomicBool, log: &Mutex<Log>) {
    let client = Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("a client");
    let mut rng = Rng::new(1_000 + reader as u64);
    let mut applied_seen = [0_u64; POOLS];
    let mut reads = 0;
    while !done.load(Ordering::SeqCst) {
        let pool = rng.below(POOLS as u64) as usize;
        let name = pool_name(pool);
        let player = |rng: &mut Rng| format!("{name}-p{}", rng.below(PLAYERS));
        let url = |path: String| format!("{base}/v1/pools/{name}{path}");
        let request = match rng.below(7) {
            0 => client.get(url(String::new())),
            1 => client.get(url("/leaderboard?limit=20".to_owned())),
            2 => client.get(url(format!("/players/{}", player(&mut rng)))),
            3 => client.get(url(format!(
                "/players/{}/history?limit=5",
                player(&mut rng)
            ))),
            4 => {
                let (a, b) = (player(&mut rng), player(&mut rng));
                if a == b {
                    continue;
                }
                client.get(url(format!("/win-probability?a={a}&b={b}")))
            }
            5 => client.get(url(format!("/rounds/{name}-w{}", rng.below(20)))),
            _ => client.post(url("/match-quality".to_owned())).json(&json!({
                "sides": [[format!("{name}-p1"), format!("{name}-p2")], [format!("{name}-p3")]]
            })),
        };
        reads += 1;
        let answer = request.send().map(|response| {
            let status = response.status().as_u16();
            let path = response.url().path().to_owned();
            let body: Value = response.json().unwrap_or_default();
            (status, path, body)
        });
        let mut log = log.lock().expect("the log is not poisoned");
        match answer {
            Err(error) => log.problem(format!("reader {reader}: no answer: {error}")),
            Ok((status, path, body)) => {
                *log.statuses.entry(status).or_default() += 1;
                if status != 200 && status != 404 {
                    log.problem(format!("reader {reader}: {path} answered {status}: {body}"));
                }
                if status == 200 && path == format!("/v1/pools/{name}") {
                    let applied = body["rounds_applied"].as_u64().unwrap_or(0);
                    if applied < applied_seen[pool] {
                        log.problem(format!(
                            "reader {reader}: {name} went back from {} to {applied} rounds applied",
                            applied_seen[pool]
                        ));
                    }
                    applied_seen[pool] = applied;
                }
            }
        }
    }
    log.lock().expect("the log is not poisoned").reads += reads;
}

/// Every rated player of `pool`, read page by page from the leaderboard.
fn served(client: &Client, base: &str, pool: &str) -> BTreeMap<String, (f64, f64)> {
    let mut ratings = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{base}/v1/pools/{pool}/leaderboard?limit=1000&established=false");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let page: Value = client
            .get(url)
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.json())
            .expect("a leaderboard page");
        for entry in page["entries"].as_array().expect("entries") {
            let player = entry["player"].as_str().expect("player").to_owned();
            let rating = (
                entry["mu"].as_f64().expect("mu"),
                entry["sigma"].as_f64().expect("sigma"),
            );
            ratings.insert(player, rating);
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return ratings,
        }
    }
}

/// Waits until `pool` has applied `applied` rounds and has none queued.
fn wait_until_applied(client: &Client, base: &str, pool: &str, applied: usize) {
    let deadline = Instant::now() + APPLY_TIMEOUT;
    loop {
        let info: Value = client
            .get(format!("{base}/v1/pools/{pool}"))
            .send()
            .and_then(|r| r.json())
            .expect("the pool");
        assert_eq!(
            info["rounds_failed"], 0,
            "{pool}: no round may fail: {info}"
        );
        if info["rounds_applied"].as_u64() == Some(applied as u64) && info["rounds_queued"] == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{pool}: not applied in time: {info}"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

fn concurrent_writers_and_readers_leave_every_pool_as_a_sequential_replay(backend: Backend) {
    let options = Options {
        // Every writer shares one key: budgets are tested elsewhere (tests/api/security.rs).
        env: vec![("MMR__RATE_LIMIT__WRITES_PER_SECOND", "0".to_owned())],
        ..Options::default()
    };
    let Some(server) = Server::start_with(backend, options) else {
        return;
    };
    for pool in 0..POOLS {
        let status = server.put(&format!("/v1/pools/{}", pool_name(pool)), "{}", ADMIN_KEY);
        assert_eq!(status, 201, "pool {pool} created");
    }
    let base = server.base_url().to_owned();
    let log = Mutex::new(Log::default());
    let writers_done = AtomicBool::new(false);
    let started = Instant::now();
    let barriers: Vec<Barrier> = (0..POOLS).map(|_| Barrier::new(WRITERS_PER_POOL)).collect();
    let stops: Vec<AtomicBool> = (0..POOLS).map(|_| AtomicBool::new(false)).collect();
    thread::scope(|scope| {
        let readers: Vec<_> = (0..READERS)
            .map(|reader| {
                let (base, done, log) = (&base, &writers_done, &log);
                scope.spawn(move || read(base, reader, done, log))
            })
            .collect();
        let writers: Vec<_> = (0..POOLS * WRITERS_PER_POOL)
            .map(|w| {
                let (pool, writer) = (w / WRITERS_PER_POOL, w % WRITERS_PER_POOL);
                let (base, barrier, stop, log) = (&base, &barriers[pool], &stops[pool], &log);
                scope.spawn(move || write(base, pool, writer, barrier, stop, log))
            })
            .collect();
        for writer in writers {
            writer.join().expect("a writer finished");
        }
        writers_done.store(true, Ordering::SeqCst);
        for reader in readers {
            reader.join().expect("a reader finished");
        }
    });
    let log = log.into_inner().expect("the log is not poisoned");
    println!(
        "{backend:?}: {} s of load, {} reads, answers by status {:?}",
        started.elapsed().as_secs(),
        log.reads,
        log.statuses
    );
    assert!(log.problems.is_empty(), "{:#?}", log.problems);
    assert!(
        !log.statuses.keys().any(|status| *status >= 500),
        "no 5xx: {:?}",
        log.statuses
    );

    let client = Client::new();
    for pool in 0..POOLS {
        let name = pool_name(pool);
        let accepted = &log.accepted[&name];
        let rounds = &log.rounds[&name];
        wait_until_applied(&client, &base, &name, accepted.len());

        let stored = server.stored_rounds(&name);
        let stored_ids: Vec<&str> = stored.iter().map(|r| r.id.as_str()).collect();
        let unique: BTreeSet<&str> = stored_ids.iter().copied().collect();
        assert_eq!(
            unique.len(),
            stored.len(),
            "{name}: no round is stored twice"
        );
        assert_eq!(
            unique,
            accepted.keys().map(String::as_str).collect(),
            "{name}: the database holds exactly the rounds answered 202"
        );
        for round in &stored {
            assert_eq!(round.status, "applied", "{name}: {}", round.id);
            assert_eq!(
                round.history_rows as usize, rounds[&round.id].entrants,
                "{name}: {} has one history row per entrant",
                round.id
            );
        }
        // Every wave's rounds were acknowledged before the next wave was posted, and each
        // wave's shared round before any writer posted its own: acceptance order must agree.
        let order: Vec<(usize, bool)> = stored
            .iter()
            .map(|r| {
                let (wave, shared) = accepted[&r.id];
                (wave, !shared)
            })
            .collect();
        assert!(
            order.windows(2).all(|w| w[0] <= w[1]),
            "{name}: acceptance order contradicts what the clients saw: {stored_ids:?}"
        );

        let bodies: Vec<String> = stored.iter().map(|r| rounds[&r.id].body.clone()).collect();
        assert_same_ratings(
            &served(&client, &base, &name),
            &replayed(server.dir(), &bodies),
        );
        println!("{name}: {} rounds, ratings equal the replay", bodies.len());
    }
}

#[test]
fn sqlite_under_32_writers_and_32_readers_applies_each_round_once_in_acceptance_order() {
    concurrent_writers_and_readers_leave_every_pool_as_a_sequential_replay(Backend::Sqlite);
}

#[test]
fn postgres_under_32_writers_and_32_readers_applies_each_round_once_in_acceptance_order() {
    concurrent_writers_and_readers_leave_every_pool_as_a_sequential_replay(Backend::Postgres);
}
