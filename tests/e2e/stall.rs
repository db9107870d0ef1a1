//! Stalls: the most expensive request a reader may send, a prediction of [`MAX_ENTRANTS`]
//! players, must not hold up anyone else's reads or writes of the same pool. A forecast of
//! that size has taken over 30 s (minutes, with 4 at once on 2 cores), and a service that
//! computes it while holding the pool's state (or that lets the worker's publication of a
//! round wait behind it, and every other read wait behind the worker) stops answering the
//! pool entirely. So the real binary, on a pool of about 3,000 players seeded from synthetic
//! rounds, gets for [`LOAD`]: 4 clients, each from a loopback address of its own, posting the
//! largest allowed prediction in a loop (each answered 200 or, when the service refuses or
//! gives up on it, 503), a writer posting a new
//! round every 200 ms, 2 clients posting 30 MiB match-quality bodies of small arrays (far over
//! what a compute route takes: parsing one on the async runtime took it for seconds), and 2
//! readers alternating a player and a leaderboard page. Every read
//! must answer 200 within [`READ_BOUND`] (the log shows the count, p50, p99 and max), every
//! round must be acknowledged (202), and every acknowledged round must be applied soon after.
//!
//! Reads of the database must not hold up the writes either. Clients reading a round's
//! results over and over, from [`DATABASE_READERS`] addresses with [`DATABASE_READS_EACH`]
//! connections each, kept every connection of the service's one pool busy, and the worker and
//! the writes waited behind them for one: rounds took 0.7-1.1 s to be acknowledged and up to
//! 4.6 s to be applied. The reads now have connections of their own; the rounds must be
//! acknowledged within [`POST_BOUND`] (median) and applied within [`APPLY_BOUND`] while the
//! readers go on.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use mmr_service::compute::MAX_ENTRANTS;
use reqwest::blocking::Client;
use serde_json::{json, Value};

use crate::rounds::{self, Rng, Round};
use crate::server::{Backend, Server, ADMIN_KEY};

/// The pool the test loads.
const POOL: &str = "stall";

/// Seed of every random draw: the rounds, their players, the readers' choices.
const SEED: u64 = 0x5_7a11;

/// Players the seeded rounds draw from.
const PLAYERS: usize = 3_000;

/// Rounds posted before the load starts.
const SEED_ROUNDS: usize = 40;

/// Entrants of each seeded round.
const SEED_ENTRANTS: usize = 300;

/// How long the clients keep starting requests.
const LOAD: Duration = Duration::from_secs(10);

/// Clients posting the largest predictions at once.
const PREDICTORS: usize = 4;

/// Clients posting bodies far over what a compute route takes, in a loop.
const FLOODERS: usize = 2;

/// What a flooder posts: just under the service-wide body limit (32 MiB by default), far over
/// what a compute route takes. Parsed on the async runtime, one such body took it for seconds.
const FLOOD_BYTES: usize = 30 << 20;

/// How a client posting a body tells that the service closed the connection before taking it.
const CLOSED_WHILE_SENDING: &str = "connection closed while sending";

/// Clients reading players and leaderboard pages.
const READERS: usize = 2;

/// Entrants of the round whose results the database readers read over and over: every page of
/// it reads all of its rows.
const WIDE_ENTRANTS: usize = 20_000;

/// Addresses reading the database at once, and connections each keeps busy.
const DATABASE_READERS: usize = 8;
const DATABASE_READS_EACH: usize = 16;

/// Longest a round posted after the writer's may take to be applied while the database
/// readers go on.
const APPLY_BOUND: Duration = Duration::from_secs(1);

/// Longest the writer's median POST may take while the database readers go on.
const POST_BOUND: Duration = Duration::from_millis(250);

/// The writer posts a round this often.
const WRITE_EVERY: Duration = Duration::from_millis(200);

/// Entrants of each round the writer posts.
const WRITE_ENTRANTS: usize = 50;

/// Pause between two reads of one reader.
const READ_PAUSE: Duration = Duration::from_millis(10);

/// Longest a read may take.
const READ_BOUND: Duration = Duration::from_secs(1);

/// Longest a reader waits for an answer before counting the read as unanswered.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest the writer waits for an answer before counting the round as unanswered.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest a predictor waits: past the service's own 30 s request timeout, so that a
/// prediction in flight when the load ends cannot hold the test forever.
const PREDICTION_TIMEOUT: Duration = Duration::from_secs(35);

/// Longest the test waits for the service to apply what it acknowledged.
const APPLY_TIMEOUT: Duration = Duration::from_secs(120);

/// Most requests one client starts, whatever the clock says.
const MAX_REQUESTS: usize = 100_000;

/// Reads that failed, kept for the report.
const FAILURES_SHOWN: usize = 20;

/// The stall tests saturate the cores on purpose: one at a time, so that one backend's load
/// does not count against the other's latencies.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What one read was answered, and how long it took.
struct Read {
    path: String,
    latency: Duration,
    /// The status, or why there was none.
    outcome: Result<u16, String>,
}

/// What the writer was told.
#[derive(Default)]
struct Writes {
    /// Rounds answered 202, in order.
    acknowledged: Vec<String>,
    /// Anything but a 202, described.
    problems: Vec<String>,
    /// How long each POST took.
    latencies: Vec<Duration>,
}

impl Writes {
    /// The median POST's latency, and a line saying how the POSTs went.
    fn summary(&self) -> (Duration, String) {
        let mut latencies = self.latencies.clone();
        latencies.sort_unstable();
        let median = quantile(&latencies, 0.5);
        let line = format!(
            "{} rounds posted, {} acknowledged, p50 {median:?}, max {:?}",
            latencies.len(),
            self.acknowledged.len(),
            quantile(&latencies, 1.0)
        );
        (median, line)
    }
}

/// Round `id` of [`WRITE_ENTRANTS`] players drawn from `known`, ranked in the order drawn.
fn live_round(rng: &mut Rng, known: &[String], id: &str) -> Round {
    let mut players: Vec<&String> = known.iter().collect();
    // A partial Fisher–Yates shuffle: the first `WRITE_ENTRANTS` are a uniform draw.
    for j in 0..WRITE_ENTRANTS {
        let k = j + rng.below((players.len() - j) as u64) as usize;
        players.swap(j, k);
    }
    let standings: Vec<Value> = players[..WRITE_ENTRANTS]
        .iter()
        .enumerate()
        .map(|(place, player)| json!({"player": player, "rank": place + 1}))
        .collect();
    Round::parse(json!({"id": id, "standings": standings}).to_string())
}

/// Creates the pool and posts its [`SEED_ROUNDS`] seeded rounds, then `more`; the players of
/// the seeded rounds.
fn seed(server: &Server, more: &[Round]) -> Vec<String> {
    let status = server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY);
    assert_eq!(status, 201, "pool created");
    let mut rng = Rng::new(SEED);
    let seeded = rounds::synthetic(&mut rng, POOL, SEED_ROUNDS, PLAYERS, SEED_ENTRANTS);
    for round in seeded.iter().chain(more) {
        let status = server.post(&format!("/v1/pools/{POOL}/rounds"), &round.body, ADMIN_KEY);
        assert_eq!(status, 202, "seeded round {} accepted", round.id);
    }
    players_of(&seeded)
}

/// Every player the rounds name, sorted.
fn players_of(rounds: &[Round]) -> Vec<String> {
    let mut players = BTreeSet::new();
    for round in rounds {
        let body: Value = serde_json::from_str(&round.body).expect("a round is JSON");
        for standing in body["standings"].as_array().expect("standings") {
            let player = standing["player"].as_str().expect("a player id");
            players.insert(player.to_owned());
        }
    }
    players.into_iter().collect()
}

/// The `q`-quantile of `sorted` (nearest rank); zero when empty.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Waits until the pool has applied `applied` rounds and has none queued; its description.
fn wait_until_applied(server: &Server, applied: usize) -> Value {
    let deadline = Instant::now() + APPLY_TIMEOUT;
    loop {
        let pool = server.get_json(&format!("/v1/pools/{POOL}"));
        assert_eq!(pool["rounds_failed"], 0, "no round may fail: {pool}");
        if pool["rounds_applied"].as_u64() == Some(applied as u64) && pool["rounds_queued"] == 0 {
            return pool;
        }
        assert!(
            Instant::now() < deadline,
            "rounds not applied in time: {pool}"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// The largest prediction a reader may ask, of its own window of the known players.
fn largest_prediction(known: &[String], predictor: usize) -> String {
    let offset = predictor * known.len() / PREDICTORS;
    let entrants: Vec<Value> = (0..MAX_ENTRANTS)
        .map(|i| json!({"players": [known[(offset + i) % known.len()]]}))
        .collect();
    json!({ "entrants": entrants }).to_string()
}

/// A match-quality body of [`FLOOD_BYTES`] of one-player sides: millions of small arrays.
fn flood_body() -> String {
    let sides = FLOOD_BYTES / r#"["a"],"#.len();
    format!(r#"{{"sides":[{}["a"]]}}"#, r#"["a"],"#.repeat(sides - 1))
}

/// One client, at loopback address `from`, posting `body` to `path` over and over until the
/// load ends. Returns the answers by kind (`200`, `503 timeout`, `no answer`, …) and the
/// longest answer.
fn post_in_a_loop(
    base: &str,
    from: Ipv4Addr,
    path: &str,
    body: &str,
    deadline: Instant,
) -> (BTreeMap<String, usize>, Duration) {
    let client = Client::builder()
        .timeout(PREDICTION_TIMEOUT)
        .local_address(IpAddr::V4(from))
        .build()
        .expect("an HTTP client");
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    let mut longest = Duration::ZERO;
    for _ in 0..MAX_REQUESTS {
        if Instant::now() >= deadline {
            break;
        }
        let started = Instant::now();
        let answer = client
            .post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .and_then(|response| {
                let status = response.status().as_u16();
                let bytes = response.bytes()?;
                Ok((status, bytes))
            });
        longest = longest.max(started.elapsed());
        let kind = match answer {
            Err(error) if error.is_timeout() => "no answer (client timeout)".to_owned(),
            // A service refusing a body on its length answers at once and closes the
            // connection; a client still sending then sees the connection go.
            Err(error) if error.is_request() => CLOSED_WHILE_SENDING.to_owned(),
            Err(error) => format!("no answer ({error})"),
            Ok((503, bytes)) => {
                let body: Value = serde_json::from_slice(&bytes).unwrap_or_default();
                format!("503 {}", body["error"]["code"].as_str().unwrap_or("?"))
            }
            Ok((status, _)) => status.to_string(),
        };
        *answers.entry(kind).or_default() += 1;
    }
    (answers, longest)
}

/// The writer: a new round every [`WRITE_EVERY`] until the load ends. Its client is built
/// before the load's clock starts: built while 128 readers built theirs and loaded the
/// service, it once sent nothing in the 10 s.
fn write(client: &Client, base: &str, known: &[String], deadline: Instant) -> Writes {
    let mut rng = Rng::new(SEED ^ 0xa11);
    let mut writes = Writes::default();
    let mut tick = Instant::now();
    for i in 0..MAX_REQUESTS {
        // Due one period after the last one was, or at once when the last POST took longer;
        // none is started once the load has ended.
        tick = (tick + WRITE_EVERY).max(Instant::now());
        if tick >= deadline {
            break;
        }
        thread::sleep(tick.saturating_duration_since(Instant::now()));
        let round = live_round(&mut rng, known, &format!("live-{i}"));
        let sent = Instant::now();
        let answer = client
            .post(format!("{base}/v1/pools/{POOL}/rounds"))
            .header("content-type", "application/json")
            .bearer_auth(ADMIN_KEY)
            .body(round.body)
            .send();
        writes.latencies.push(sent.elapsed());
        match answer.map(|response| response.status().as_u16()) {
            Ok(202) => writes.acknowledged.push(round.id),
            Ok(status) => writes
                .problems
                .push(format!("round {} answered {status}", round.id)),
            Err(error) => writes.problems.push(format!(
                "round {}: no answer after {:?}: {error}",
                round.id,
                sent.elapsed()
            )),
        }
    }
    writes
}

/// One reader: a player, then the top of the leaderboard, and again, until the load ends.
fn read(base: &str, known: &[String], reader: usize, deadline: Instant) -> Vec<Read> {
    let client = http_client(READ_TIMEOUT);
    let mut rng = Rng::new(SEED ^ (0xbeef + reader as u64));
    let mut reads = Vec::new();
    for i in 0..MAX_REQUESTS {
        if Instant::now() >= deadline {
            break;
        }
        let path = if (i + reader) % 2 == 0 {
            let player = &known[rng.below(known.len() as u64) as usize];
            format!("/v1/pools/{POOL}/players/{player}")
        } else {
            format!("/v1/pools/{POOL}/leaderboard?limit=50")
        };
        let started = Instant::now();
        let outcome = client
            .get(format!("{base}{path}"))
            .send()
            .and_then(|response| {
                let status = response.status().as_u16();
                response.bytes()?;
                Ok(status)
            })
            .map_err(|error| error.to_string());
        reads.push(Read {
            path,
            latency: started.elapsed(),
            outcome,
        });
        thread::sleep(READ_PAUSE);
    }
    reads
}

/// A client whose requests give up after `timeout`.
fn http_client(timeout: Duration) -> Client {
    Client::builder()
        .timeout(timeout)
        .build()
        .expect("an HTTP client")
}

/// Waits until every round in `ids` reads as applied; how long that took.
fn wait_until_rounds_applied(base: &str, ids: &[String]) -> Duration {
    let client = http_client(READ_TIMEOUT);
    let started = Instant::now();
    let deadline = started + APPLY_TIMEOUT;
    for id in ids {
        loop {
            let round: Option<Value> = client
                .get(format!("{base}/v1/pools/{POOL}/rounds/{id}"))
                .send()
                .and_then(|response| response.error_for_status())
                .and_then(|response| response.json())
                .ok();
            let status = round.as_ref().map(|r| r["status"].clone());
            match status.as_ref().and_then(Value::as_str) {
                Some("applied") => break,
                Some("failed") => panic!("round {id} failed: {round:?}"),
                _ => {}
            }
            assert!(
                Instant::now() < deadline,
                "round {id} not applied {APPLY_TIMEOUT:?} after the load ended: {round:?}"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
    started.elapsed()
}

fn reads_and_writes_keep_answering_while_the_largest_predictions_run(backend: Backend) {
    let _one_at_a_time = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(server) = Server::start(backend) else {
        return;
    };
    let known = seed(&server, &[]);
    assert!(
        known.len() >= MAX_ENTRANTS,
        "a prediction needs {MAX_ENTRANTS} distinct players, the seed has {}",
        known.len()
    );
    let pool = wait_until_applied(&server, SEED_ROUNDS);
    assert_eq!(
        pool["players"].as_u64(),
        Some(known.len() as u64),
        "every seeded player is rated: {pool}"
    );
    println!(
        "{backend:?}: {} seeded rounds applied, {} players; load for {LOAD:?}",
        SEED_ROUNDS,
        known.len()
    );

    let base = server.base_url().to_owned();
    let writer_client = http_client(WRITE_TIMEOUT);
    let deadline = Instant::now() + LOAD;
    let predictions_path = format!("/v1/pools/{POOL}/predictions");
    let flood_path = format!("/v1/pools/{POOL}/match-quality");
    let flood = flood_body();
    let (predictions, floods, writes, reads) = thread::scope(|scope| {
        let (base, known) = (&base, &known);
        let (predictions_path, flood_path, flood) = (&predictions_path, &flood_path, &flood);
        let predictors: Vec<_> = (0..PREDICTORS)
            .map(|p| {
                let body = largest_prediction(known, p);
                // Each from an address of its own (all of 127/8 is loopback on Linux): one
                // client may hold only a share of the computations.
                let from = Ipv4Addr::new(127, 0, 0, 10 + p as u8);
                scope.spawn(move || post_in_a_loop(base, from, predictions_path, &body, deadline))
            })
            .collect();
        let flooders: Vec<_> = (0..FLOODERS)
            .map(|_| {
                let from = Ipv4Addr::LOCALHOST;
                scope.spawn(move || post_in_a_loop(base, from, flood_path, flood, deadline))
            })
            .collect();
        let writer_client = &writer_client;
        let writer = scope.spawn(move || write(writer_client, base, known, deadline));
        let readers: Vec<_> = (0..READERS)
            .map(|r| scope.spawn(move || read(base, known, r, deadline)))
            .collect();
        let reads: Vec<Read> = readers
            .into_iter()
            .flat_map(|reader| reader.join().expect("a reader finished"))
            .collect();
        let writes = writer.join().expect("the writer finished");
        let predictions: Vec<_> = predictors
            .into_iter()
            .map(|predictor| predictor.join().expect("a predictor finished"))
            .collect();
        let floods: Vec<_> = flooders
            .into_iter()
            .map(|flooder| flooder.join().expect("a flooder finished"))
            .collect();
        (predictions, floods, writes, reads)
    });

    let (answers, longest_prediction) = tally(&predictions);
    println!(
        "{backend:?}: predictions of {MAX_ENTRANTS} entrants by answer {answers:?}, longest {longest_prediction:?}"
    );
    let (flood_answers, longest_flood) = tally(&floods);
    println!(
        "{backend:?}: match-quality bodies of {FLOOD_BYTES} bytes by answer {flood_answers:?}, longest {longest_flood:?}"
    );
    let mut latencies: Vec<Duration> = reads.iter().map(|r| r.latency).collect();
    latencies.sort_unstable();
    let failures: Vec<String> = reads
        .iter()
        .filter(|r| r.outcome != Ok(200) || r.latency > READ_BOUND)
        .map(|r| format!("GET {} after {:?}: {:?}", r.path, r.latency, r.outcome))
        .collect();
    println!(
        "{backend:?}: {} reads, p50 {:?}, p99 {:?}, max {:?}; {} not answered 200 within {READ_BOUND:?}",
        reads.len(),
        quantile(&latencies, 0.5),
        quantile(&latencies, 0.99),
        quantile(&latencies, 1.0),
        failures.len()
    );
    println!("{backend:?}: {}", writes.summary().1);

    assert!(!reads.is_empty(), "the readers read");
    assert!(
        failures.is_empty(),
        "{} of {} reads were not answered 200 within {READ_BOUND:?}, the first ones: {:#?}",
        failures.len(),
        reads.len(),
        &failures[..failures.len().min(FAILURES_SHOWN)]
    );
    assert!(
        writes.problems.is_empty(),
        "every round is acknowledged: {:#?}",
        writes.problems
    );
    assert!(!writes.acknowledged.is_empty(), "the writer wrote");
    let took = wait_until_rounds_applied(&base, &writes.acknowledged);
    println!("{backend:?}: every acknowledged round applied {took:?} after the load ended");
    wait_until_applied(&server, SEED_ROUNDS + writes.acknowledged.len());
    assert!(
        answers
            .keys()
            .all(|kind| ["200", "503 overloaded", "503 timeout"].contains(&kind.as_str())),
        "every prediction is answered 200, or 503 `overloaded` or `timeout`: {answers:?}"
    );
    assert!(
        flood_answers.contains_key("413")
            && flood_answers
                .keys()
                .all(|kind| ["413", CLOSED_WHILE_SENDING].contains(&kind.as_str())),
        "every body over a compute route's limit is refused 413 on its length: {flood_answers:?}"
    );
}

/// One connection of a database reader at loopback address `from`: the first page of round
/// `wide`'s results (read whole from the database each time), over and over until `stop` is
/// set or, should the test fail before it sets it, until `deadline`. Returns the answers by
/// status, and the longest.
fn read_rounds_until(
    base: &str,
    from: Ipv4Addr,
    wide: &str,
    stop: &AtomicBool,
    deadline: Instant,
) -> (BTreeMap<String, usize>, Duration) {
    let client = Client::builder()
        .timeout(READ_TIMEOUT)
        .local_address(IpAddr::V4(from))
        .build()
        .expect("an HTTP client");
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    let mut longest = Duration::ZERO;
    let url = format!("{base}/v1/pools/{POOL}/rounds/{wide}?limit=1000");
    for _ in 0..MAX_REQUESTS {
        if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
            break;
        }
        let started = Instant::now();
        let answer = client.get(&url).send().and_then(|r| {
            let status = r.status().as_u16();
            r.bytes()?;
            Ok(status)
        });
        longest = longest.max(started.elapsed());
        let kind = match answer {
            Ok(status) => status.to_string(),
            Err(error) if error.is_timeout() => "no answer (client timeout)".to_owned(),
            Err(error) => format!("no answer ({error})"),
        };
        *answers.entry(kind).or_default() += 1;
    }
    (answers, longest)
}

/// Posts a round of `known`'s first two players after the others and waits until it is
/// applied: how long that took. A round is applied after those posted before it, and the wait
/// reads the player from the pool's snapshot, which the database's readers cannot hold up.
fn mark_applied(base: &str, known: &[String]) -> Duration {
    let client = http_client(WRITE_TIMEOUT);
    let marker = json!({"id": "marker", "standings": [
        {"player": known[0], "rank": 1}, {"player": known[1], "rank": 2}]});
    let started = Instant::now();
    let status = client
        .post(format!("{base}/v1/pools/{POOL}/rounds"))
        .bearer_auth(ADMIN_KEY)
        .json(&marker)
        .send()
        .map(|response| response.status().as_u16());
    assert!(
        matches!(status, Ok(202)),
        "the marker round is acknowledged: {status:?}"
    );
    let player = format!("{base}/v1/pools/{POOL}/players/{}", known[0]);
    loop {
        let last: Option<Value> = client
            .get(&player)
            .send()
            .and_then(|response| response.json())
            .ok();
        if last.is_some_and(|p| p["last_round"]["id"] == "marker") {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < APPLY_TIMEOUT,
            "the marker round not applied in {APPLY_TIMEOUT:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

fn rounds_keep_being_applied_while_clients_read_the_database(backend: Backend) {
    let _one_at_a_time = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(server) = Server::start(backend) else {
        return;
    };
    let wide = rounds::wide("wide", WIDE_ENTRANTS);
    let known = seed(&server, std::slice::from_ref(&wide));
    wait_until_applied(&server, SEED_ROUNDS + 1);
    println!(
        "{backend:?}: {DATABASE_READERS} addresses × {DATABASE_READS_EACH} connections read a round of {WIDE_ENTRANTS} results for {LOAD:?} while rounds arrive"
    );

    let base = server.base_url().to_owned();
    let writer_client = http_client(WRITE_TIMEOUT);
    let deadline = Instant::now() + LOAD;
    let stop = AtomicBool::new(false);
    let (reads, writes, applied_after) = thread::scope(|scope| {
        let (base, known, stop, wide) = (&base, &known, &stop, wide.id.as_str());
        let readers: Vec<_> = (0..DATABASE_READERS * DATABASE_READS_EACH)
            .map(|c| {
                let from = Ipv4Addr::new(127, 0, 1, 10 + (c % DATABASE_READERS) as u8);
                let until = deadline + APPLY_TIMEOUT;
                scope.spawn(move || read_rounds_until(base, from, wide, stop, until))
            })
            .collect();
        let writes = write(&writer_client, base, known, deadline);
        // The readers go on while the rounds left are applied.
        let applied_after = mark_applied(base, known);
        stop.store(true, Ordering::Relaxed);
        let reads: Vec<_> = readers
            .into_iter()
            .map(|reader| reader.join().expect("a reader finished"))
            .collect();
        (reads, writes, applied_after)
    });
    let (answers, longest_read) = tally(&reads);
    let (median_post, posts) = writes.summary();
    println!(
        "{backend:?}: reads of the round by answer {answers:?}, longest {longest_read:?}; {posts}; a round posted after them applied {applied_after:?} after its POST"
    );
    assert!(
        writes.problems.is_empty(),
        "every round is acknowledged: {:#?}",
        writes.problems
    );
    assert!(!writes.acknowledged.is_empty(), "the writer wrote");
    assert!(
        median_post <= POST_BOUND,
        "half the rounds took over {POST_BOUND:?} to be acknowledged"
    );
    assert!(
        applied_after <= APPLY_BOUND,
        "a round posted after the others was applied {applied_after:?} after its POST (at most {APPLY_BOUND:?})"
    );
    // The reads themselves may wait long for the 4 connections, or not get one (503): only
    // that they kept the database busy matters here.
    let readers = DATABASE_READERS * DATABASE_READS_EACH;
    assert!(
        answers.get("200").is_some_and(|&n| n >= readers),
        "the readers read the round at least {readers} times: {answers:?}"
    );
    wait_until_applied(&server, SEED_ROUNDS + 2 + writes.acknowledged.len());
}

/// Each client's answers, added up by kind, and the longest answer of all.
fn tally(clients: &[(BTreeMap<String, usize>, Duration)]) -> (BTreeMap<String, usize>, Duration) {
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    let mut longest_answer = Duration::ZERO;
    for (kinds, longest) in clients {
        for (kind, count) in kinds {
            *answers.entry(kind.clone()).or_default() += count;
        }
        longest_answer = longest_answer.max(*longest);
    }
    (answers, longest_answer)
}

/// Entrants of the round whose results one client reads over and over: each page of it sorts
/// them all (about 60 ms on Postgres here).
const HUGE_ENTRANTS: usize = 200_000;

/// Connections from the one client reading it.
const HOGS: usize = 16;

/// History reads another client makes meanwhile, one after another.
const HISTORY_READS: usize = 40;

/// What the median of those may take.
const FAIR_READ_BOUND: Duration = Duration::from_millis(100);

/// One client reading a huge round's results from 16 connections holds no more than its share
/// of the database's read connections (2 of 4): another client's history reads go on at once.
/// With a share of reads under way (16 of 32), its reads held all 4 and such a read took
/// 1.3 s at the median.
fn one_clients_slow_reads_leave_the_others_their_connections(backend: Backend) {
    let _one_at_a_time = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(server) = Server::start(backend) else {
        return;
    };
    let huge = rounds::wide("huge", HUGE_ENTRANTS);
    let known = seed(&server, std::slice::from_ref(&huge));
    wait_until_applied(&server, SEED_ROUNDS + 1);
    let base = server.base_url().to_owned();
    let stop = AtomicBool::new(false);
    let (hogs, mut took) = thread::scope(|scope| {
        let (base, stop) = (&base, &stop);
        let hogs: Vec<_> = (0..HOGS)
            .map(|_| {
                scope.spawn(move || {
                    let client = Client::builder()
                        .timeout(READ_TIMEOUT)
                        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 2, 10)))
                        .build()
                        .expect("an HTTP client");
                    let url = format!("{base}/v1/pools/{POOL}/rounds/huge?limit=1");
                    let mut reads = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let answered = client.get(&url).send().and_then(|r| r.bytes());
                        reads += usize::from(answered.is_ok());
                    }
                    reads
                })
            })
            .collect();
        let client = Client::builder()
            .timeout(READ_TIMEOUT)
            .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 2, 20)))
            .build()
            .expect("an HTTP client");
        // The other client reads once the one's reads fill what they may.
        thread::sleep(Duration::from_secs(1));
        let url = format!("{base}/v1/pools/{POOL}/players/{}/history", known[0]);
        let took: Vec<Duration> = (0..HISTORY_READS)
            .map(|_| {
                let started = Instant::now();
                let status = client
                    .get(&url)
                    .send()
                    .map(|r| r.status().as_u16())
                    .expect("a history read answered");
                assert_eq!(status, 200, "a history read");
                started.elapsed()
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        let hogs: usize = hogs.into_iter().map(|h| h.join().expect("a reader")).sum();
        (hogs, took)
    });
    took.sort();
    let median = quantile(&took, 0.5);
    println!(
        "{backend:?}: one client read a {HUGE_ENTRANTS}-entrant round {hogs} times from {HOGS} connections; \
         another's history reads: p50 {median:?}, p99 {:?}",
        quantile(&took, 0.99)
    );
    assert!(hogs > 0, "the one client's reads were answered too");
    assert!(
        median < FAIR_READ_BOUND,
        "{backend:?}: another client's history read took {median:?} at the median"
    );
}

#[test]
fn sqlite_one_clients_slow_reads_leave_the_others_their_connections() {
    one_clients_slow_reads_leave_the_others_their_connections(Backend::Sqlite);
}

#[test]
fn postgres_one_clients_slow_reads_leave_the_others_their_connections() {
    one_clients_slow_reads_leave_the_others_their_connections(Backend::Postgres);
}

#[test]
fn sqlite_reads_and_writes_of_a_pool_keep_answering_while_the_largest_predictions_run() {
    reads_and_writes_keep_answering_while_the_largest_predictions_run(Backend::Sqlite);
}

#[test]
fn postgres_reads_and_writes_of_a_pool_keep_answering_while_the_largest_predictions_run() {
    reads_and_writes_keep_answering_while_the_largest_predictions_run(Backend::Postgres);
}

#[test]
fn sqlite_rounds_keep_being_applied_while_clients_read_the_database() {
    rounds_keep_being_applied_while_clients_read_the_database(Backend::Sqlite);
}

#[test]
fn postgres_rounds_keep_being_applied_while_clients_read_the_database() {
    rounds_keep_being_applied_while_clients_read_the_database(Backend::Postgres);
}
