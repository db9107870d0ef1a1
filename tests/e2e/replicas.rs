//! Several replicas on one Postgres database (issue 14): three real binaries share it; four
//! pools are created on different replicas, and each is served by all three within a second.
//! Four clients then post each pool's rounds (season starts among them) to replicas drawn at
//! random, posting again to another one when a POST gets no answer, while the test SIGKILLs the
//! owner of a random pool at seeded random moments, times how long the pool goes without an
//! owner, and restarts the killed replica. At the end every round acknowledged is stored once
//! and applied in acceptance order, and every replica serves ratings equal to
//! `mmr-service replay` of each pool's stored rounds, bit for bit. Last, follower lag: rounds
//! posted to a pool's owner, timed from the moment the owner serves a round's new player to the
//! moment both followers do. Every replica must have followed lines one by one
//! (`mmr_lines_followed_total`), not only reloaded.
//!
//! The seed comes from `MMR_REPLICAS_SEED` or the clock and is printed.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::rounds::{self, Rng, Round};
use crate::server::{Backend, Options, Server, ADMIN_KEY};
use crate::stream::Ledger;
use crate::{assert_same_ratings, replayed, served_in};

/// Replicas sharing the database.
const REPLICAS: usize = 3;

/// Pools, each with its own client.
const POOLS: usize = 4;

/// Rounds posted to each pool.
const ROUNDS: usize = 600;

/// A season starts before this round of each pool.
const SEASON_AT: usize = 300;

/// A client's pause after each acknowledged round, as a platform posting results as contests
/// end: the posting lasts long enough for every kill and failover to land in it.
const PACE: Duration = Duration::from_millis(40);

/// Owners SIGKILLed while the clients post.
const KILLS: usize = 4;

/// Rounds timed for the follower lag.
const LAG_ROUNDS: usize = 40;

/// Longest anything here waits: for an owner, for rounds to be applied, for a follower.
const PATIENCE: Duration = Duration::from_secs(60);

fn pool_name(pool: usize) -> String {
    format!("rep{pool}")
}

fn seed() -> u64 {
    match std::env::var("MMR_REPLICAS_SEED") {
        Ok(seed) => seed.parse().expect("MMR_REPLICAS_SEED is a u64"),
        Err(_) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("after 1970");
            now.as_secs() ^ u64::from(now.subsec_nanos())
        }
    }
}

/// The replicas' addresses, moved by the test as it restarts them.
type Bases = Arc<RwLock<Vec<String>>>;

/// Posts `rounds` to `pool` in order, each to a replica drawn at random, until one answers it
/// 2xx (a POST with no answer goes to another draw: the same id and body, so a replica that
/// stored it answers 200). Every round is acknowledged; none is abandoned.
fn post_to_random_replicas(rounds: &[Round], pool: &str, bases: &Bases, seed: u64) -> Ledger {
    let mut rng = Rng::new(seed);
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client");
    let mut ledger = Ledger::default();
    for round in rounds {
        let (route, body) = round.posted();
        loop {
            let base = {
                let bases = bases.read().expect("not poisoned");
                bases[rng.below(bases.len() as u64) as usize].clone()
            };
            let answer = client
                .post(format!("{base}/v1/pools/{pool}/{route}"))
                .header("content-type", "application/json")
                .bearer_auth(ADMIN_KEY)
                .body(body.clone())
                .send();
            match answer.map(|response| response.status().as_u16()) {
                Ok(200 | 202) => {
                    ledger.acknowledged.push(round.id.clone());
                    std::thread::sleep(PACE);
                    break;
                }
                Ok(429 | 503) => {
                    ledger.retried += 1;
                    std::thread::sleep(Duration::from_millis(200));
                }
                Ok(status) => panic!("round {}: unexpected {status}", round.id),
                Err(_) => {
                    ledger.unanswered += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
    ledger
}

/// The running replica that owns `pool`, by its `/readyz` (answered 503 while a worker
/// starts, with the same body).
fn owner_of(servers: &[Server], pool: &str) -> Option<usize> {
    static CLIENT: std::sync::OnceLock<reqwest::blocking::Client> = std::sync::OnceLock::new();
    let client = CLIENT.get_or_init(reqwest::blocking::Client::new);
    servers.iter().position(|server| {
        server.running()
            && client
                .get(format!("{}/readyz", server.base_url()))
                .send()
                .and_then(reqwest::blocking::Response::json::<serde_json::Value>)
                .is_ok_and(|ready| {
                    ready["owned_pools"]
                        .as_array()
                        .is_some_and(|owned| owned.iter().any(|p| p == pool))
                })
    })
}

/// Waits until a running replica owns `pool`; which one, and how long it took.
fn wait_for_owner(servers: &[Server], pool: &str) -> (usize, Duration) {
    let started = Instant::now();
    loop {
        if let Some(owner) = owner_of(servers, pool) {
            return (owner, started.elapsed());
        }
        assert!(started.elapsed() < PATIENCE, "{pool} has no owner");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `server` serves player `player` of `pool`.
fn serves_player(
    client: &reqwest::blocking::Client,
    server: &Server,
    pool: &str,
    player: &str,
) -> bool {
    client
        .get(format!(
            "{}/v1/pools/{pool}/players/{player}",
            server.base_url()
        ))
        .send()
        .is_ok_and(|response| response.status() == 200)
}

/// Waits until `pool` has an owner and every one of `servers` serves its player `player`.
fn wait_until_served(
    client: &reqwest::blocking::Client,
    servers: &[Server],
    pool: &str,
    player: &str,
) {
    wait_for_owner(servers, pool);
    let started = Instant::now();
    while !servers
        .iter()
        .all(|s| serves_player(client, s, pool, player))
    {
        assert!(
            started.elapsed() < PATIENCE,
            "{pool}: {player} is not served everywhere"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `q`-quantile of `sorted`.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn a_second_process_under_a_replica_id_in_use_stops_at_startup() {
    let options = Options {
        env: vec![("MMR__REPLICAS__ID", "twin".to_owned())],
        ..Options::default()
    };
    let Some(first) = Server::start_with(Backend::Postgres, options) else {
        return;
    };
    let (code, log) = first.replica_that_stops();
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains("replicas.id `twin` is held by another live process"),
        "{log}"
    );
    assert_eq!(
        first.get_json("/readyz")["replica"],
        "twin",
        "the first serves on"
    );
}

#[test]
fn replicas_share_the_pools_survive_their_owners_deaths_and_serve_the_same_ratings() {
    let seed = seed();
    eprintln!("replicas test: seed {seed} (replay with MMR_REPLICAS_SEED={seed})");
    let mut rng = Rng::new(seed);
    let Some(first) = Server::start(Backend::Postgres) else {
        return;
    };
    let mut servers = vec![first];
    for _ in 1..REPLICAS {
        let replica = servers[0].replica();
        servers.push(replica);
    }

    // Each pool is created on another replica and served by all of them within a second.
    for pool in 0..POOLS {
        let name = pool_name(pool);
        let created = Instant::now();
        assert_eq!(
            servers[pool % REPLICAS].put(&format!("/v1/pools/{name}"), "{}", ADMIN_KEY),
            201
        );
        for server in &servers {
            while !reqwest::blocking::get(format!(
                "{}/v1/pools/{name}/leaderboard",
                server.base_url()
            ))
            .is_ok_and(|response| response.status() == 200)
            {
                assert!(
                    created.elapsed() < PATIENCE,
                    "{name} is not served everywhere"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let served_everywhere = created.elapsed();
        assert!(
            served_everywhere < Duration::from_secs(1),
            "{name} served by every replica after {served_everywhere:?}"
        );
        wait_for_owner(&servers, &name);
    }
    let owners: Vec<usize> = (0..POOLS)
        .map(|pool| owner_of(&servers, &pool_name(pool)).expect("an owner"))
        .collect();
    eprintln!("owners at the start: {owners:?}");

    let streams: Vec<Vec<Round>> = (0..POOLS)
        .map(|pool| {
            let name = pool_name(pool);
            let mut rounds = rounds::synthetic(&mut rng, &name, ROUNDS, 60, 12);
            rounds.insert(
                SEASON_AT,
                Round::parse(format!(
                    r#"{{"season":{{"id":"{name}-season","mu_reset":0.3,"sigma_reset":0.5}}}}"#
                )),
            );
            rounds
        })
        .collect();
    let bases: Bases = Arc::new(RwLock::new(
        servers.iter().map(|s| s.base_url().to_owned()).collect(),
    ));
    let started = Instant::now();
    let clients: Vec<_> = streams
        .iter()
        .enumerate()
        .map(|(pool, rounds)| {
            let (rounds, bases, seed) = (rounds.clone(), Arc::clone(&bases), rng.next_u64());
            std::thread::spawn(move || {
                post_to_random_replicas(&rounds, &pool_name(pool), &bases, seed)
            })
        })
        .collect();

    let mut failovers = Vec::new();
    for _ in 0..KILLS {
        std::thread::sleep(Duration::from_millis(200 + rng.below(1000)));
        if clients.iter().all(std::thread::JoinHandle::is_finished) {
            break;
        }
        let pool = pool_name(rng.below(POOLS as u64) as usize);
        let (victim, _) = wait_for_owner(&servers, &pool);
        servers[victim].kill();
        let (heir, took) = wait_for_owner(&servers, &pool);
        eprintln!("killed the owner of {pool}; replica {heir} took it over in {took:?}");
        failovers.push(took);
        servers[victim].restart();
        bases.write().expect("not poisoned")[victim] = servers[victim].base_url().to_owned();
    }
    let ledgers: Vec<Ledger> = clients
        .into_iter()
        .map(|client| client.join().expect("a client"))
        .collect();
    assert!(
        failovers.len() >= 3,
        "only {} kills happened",
        failovers.len()
    );

    for (pool, (rounds, ledger)) in streams.iter().zip(&ledgers).enumerate() {
        let name = pool_name(pool);
        let deadline = Instant::now() + PATIENCE;
        let stored = loop {
            let stored = servers[0].stored_rounds(&name);
            if stored.iter().all(|round| round.status == "applied") {
                break stored;
            }
            assert!(Instant::now() < deadline, "{name}: rounds left unapplied");
            std::thread::sleep(Duration::from_millis(50));
        };
        let (order, _) = ledger.check(rounds, &stored);
        let order: Vec<String> = order.into_iter().map(|round| round.body.clone()).collect();
        let expected = replayed(servers[0].dir(), &order);
        for (i, server) in servers.iter().enumerate() {
            let deadline = Instant::now() + PATIENCE;
            while served_in(server, &name).len() != expected.len() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let mut served = served_in(server, &name);
            // A follower may still be rating the last rounds: give it until the deadline.
            while served != expected && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
                served = served_in(server, &name);
            }
            eprintln!("{name}: replica {i} serves {} players", served.len());
            assert_same_ratings(&served, &expected);
        }
        eprintln!(
            "{name}: {} rounds stored, {} POSTs unanswered, {} answered 503/429",
            order.len(),
            ledger.unanswered,
            ledger.retried
        );
    }
    eprintln!(
        "{} rounds through {} kills in {:.1} s",
        ledgers.iter().map(|l| l.acknowledged.len()).sum::<usize>(),
        failovers.len(),
        started.elapsed().as_secs_f64()
    );

    // Follower lag: from the owner serving a round's new player to every follower serving it.
    let pool = pool_name(0);
    let (owner, _) = wait_for_owner(&servers, &pool);
    let mut lags = Vec::with_capacity(LAG_ROUNDS);
    let client = reqwest::blocking::Client::new();
    for i in 0..LAG_ROUNDS {
        let player = format!("lag-{i}");
        let body = format!(
            r#"{{"id":"lag-{i}","standings":[{{"player":"{player}","rank":1}},{{"player":"{pool}-p0","rank":2}}]}}"#
        );
        assert_eq!(
            servers[owner].post(&format!("/v1/pools/{pool}/rounds"), &body, ADMIN_KEY),
            202
        );
        let deadline = Instant::now() + PATIENCE;
        while !serves_player(&client, &servers[owner], &pool, &player) {
            assert!(Instant::now() < deadline, "the owner applies lag-{i}");
            std::thread::sleep(Duration::from_millis(1));
        }
        let served_by_owner = Instant::now();
        for (_, follower) in servers.iter().enumerate().filter(|(j, _)| *j != owner) {
            while !serves_player(&client, follower, &pool, &player) {
                assert!(Instant::now() < deadline, "the followers follow lag-{i}");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        lags.push(served_by_owner.elapsed());
    }
    lags.sort_unstable();
    failovers.sort_unstable();
    eprintln!(
        "follower lag over {LAG_ROUNDS} rounds: p50 {:?}, p99 {:?}, max {:?}; failover over {} \
         kills: p50 {:?}, max {:?}",
        quantile(&lags, 0.5),
        quantile(&lags, 0.99),
        lags[lags.len() - 1],
        failovers.len(),
        quantile(&failovers, 0.5),
        failovers[failovers.len() - 1],
    );
    // The service's defaults: a dead owner's pools move within the lease timeout (3 s) and a
    // heartbeat (1 s), with room for a loaded machine.
    assert!(
        failovers[failovers.len() - 1] < Duration::from_secs(8),
        "failover took {:?}",
        failovers[failovers.len() - 1]
    );

    // Every replica followed others' lines one by one: none kept up by reloading alone.
    for (i, server) in servers.iter().enumerate() {
        let metrics = reqwest::blocking::get(format!("{}/metrics", server.base_url()))
            .and_then(reqwest::blocking::Response::text)
            .expect("metrics");
        let followed: f64 = metrics
            .lines()
            .filter(|line| line.starts_with("mmr_lines_followed_total"))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        eprintln!("replica {i} followed {followed} lines since it last started");
        assert!(followed > 0.0, "replica {i} followed no line");
    }

    let keeper = servers.remove(0);
    drop(servers);
    drop(keeper);
}

/// A pool deleted through one replica: the other drops it within a second or two (its refresh
/// each second), its owner gives the lease back, and a pool created again under the name is
/// owned, applied and served afresh by both, nothing of the old one showing.
#[test]
fn a_pool_deleted_through_one_replica_is_dropped_by_the_other() {
    let Some(first) = Server::start(Backend::Postgres) else {
        return;
    };
    let servers = vec![first.replica(), first];
    let client = reqwest::blocking::Client::new();
    assert_eq!(servers[0].put("/v1/pools/gone", "{}", ADMIN_KEY), 201);
    let round = r#"{"id": "r1", "standings": [{"player": "old", "rank": 1}, {"player": "older", "rank": 2}]}"#;
    assert_eq!(
        servers[0].post("/v1/pools/gone/rounds", round, ADMIN_KEY),
        202
    );
    wait_until_served(&client, &servers, "gone", "old");

    let deleted = client
        .delete(format!(
            "{}/v1/pools/gone?confirm=gone",
            servers[1].base_url()
        ))
        .bearer_auth(ADMIN_KEY)
        .send()
        .expect("an answer");
    assert_eq!(deleted.status(), 200);
    let started = Instant::now();
    // A player is read from memory: the replica that did not delete the pool serves it until
    // its refresh drops it.
    let gone = |server: &Server| {
        client
            .get(format!("{}/v1/pools/gone/players/old", server.base_url()))
            .send()
            .is_ok_and(|response| response.status() == 404)
    };
    while !servers.iter().all(gone) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a replica still serves the deleted pool"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("dropped by both replicas in {:?}", started.elapsed());
    while owner_of(&servers, "gone").is_some() {
        assert!(
            started.elapsed() < PATIENCE,
            "a replica still owns the deleted pool"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    assert_eq!(servers[1].put("/v1/pools/gone", "{}", ADMIN_KEY), 201);
    let round = r#"{"id": "r1", "standings": [{"player": "new", "rank": 1}, {"player": "newer", "rank": 2}]}"#;
    assert_eq!(
        servers[1].post("/v1/pools/gone/rounds", round, ADMIN_KEY),
        202
    );
    wait_until_served(&client, &servers, "gone", "new");
    for server in &servers {
        assert!(
            !serves_player(&client, server, "gone", "old"),
            "the old pool shows"
        );
        assert_eq!(server.get_json("/v1/pools/gone")["players"], 2);
    }
}
