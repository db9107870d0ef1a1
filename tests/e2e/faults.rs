//! Database faults on Postgres: the database goes away while a client streams rounds and the
//! worker is rating a large one, then comes back. While it is away the service answers reads
//! from memory, answers writes 503 `database_unavailable` with `Retry-After` within seconds,
//! reports not ready on `/readyz` and alive on `/healthz`; once it is back the service
//! reconnects by itself, the worker applies what was queued, and nothing acknowledged is lost.
//!
//! The database is taken away by a TCP [`Proxy`] between the service and the Postgres test
//! server, not by `pg_ctl stop`: that server is shared with every other test running at the
//! same time, which would fail too. Closing the proxy's listener and every connection through
//! it looks to the service exactly like a stopped server: open connections end, new ones are
//! refused.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::rounds::{self, Round};
use crate::server::{Backend, Options, Server, ADMIN_KEY};
use crate::stream::{self, Target};
use crate::{assert_same_ratings, formula1, replayed, served, wait_until_applied, POOL};

/// Postgres's port when a URL names none.
const POSTGRES_PORT: u16 = 5432;

/// How often the proxy's listener looks for a stop between connections.
const ACCEPT_POLL: Duration = Duration::from_millis(5);

/// Rounds streamed by the client; the database goes away after the first half.
const STREAMED: usize = 300;

/// Entrants of the round the worker is rating when the database goes away.
const WIDE_ROUND: usize = 20_000;

/// How long the database stays away: several of the worker's retries.
const OUTAGE: Duration = Duration::from_secs(6);

/// Longest a write may take to be refused while the database is away. The service gives up
/// on a connection after 3 s (then answers 503); a PUT to an existing pool may first wait
/// that long for the worker's turn. Far below the 30 s request timeout it would hit otherwise.
const REFUSAL_WITHIN: Duration = Duration::from_secs(10);

/// Longest `/readyz` may take to answer while the database is away.
const READINESS_WITHIN: Duration = Duration::from_secs(3);

/// Longest the test waits for any answer, so that a slow one fails an assertion that says so.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(90);

/// Longest the service may take to notice the database is back.
const RECONNECT_WITHIN: Duration = Duration::from_secs(30);

/// A TCP proxy to a Postgres server that can be stopped and started again on the same port.
struct Proxy {
    port: u16,
    upstream: String,
    open: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl Proxy {
    /// A proxy on a free local port to `upstream` (`host:port`), accepting.
    fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("an address").port();
        let mut proxy = Self {
            port,
            upstream,
            open: Arc::new(AtomicBool::new(false)),
            connections: Arc::new(Mutex::new(Vec::new())),
            acceptor: None,
        };
        proxy.accept_on(listener);
        proxy
    }

    /// The database comes back: connections are accepted again.
    fn resume(&mut self) {
        // std sets SO_REUSEADDR, so the port is free again despite the connections just closed.
        let listener = TcpListener::bind(("127.0.0.1", self.port)).expect("bind the proxy again");
        self.accept_on(listener);
    }

    /// The database goes away: new connections are refused and open ones are cut.
    fn stop(&mut self) {
        self.open.store(false, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            acceptor.join().expect("the acceptor thread");
        }
        for connection in self.connections.lock().expect("not poisoned").drain(..) {
            let _ = connection.shutdown(Shutdown::Both);
        }
    }

    fn accept_on(&mut self, listener: TcpListener) {
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        self.open.store(true, Ordering::SeqCst);
        let (open, connections, upstream) = (
            Arc::clone(&self.open),
            Arc::clone(&self.connections),
            self.upstream.clone(),
        );
        // The listener is dropped when this thread ends, which makes connecting fail.
        self.acceptor = Some(std::thread::spawn(move || {
            while open.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        if let Ok(server) = TcpStream::connect(&upstream) {
                            pipe(client, server, &connections);
                        }
                    }
                    Err(_) => std::thread::sleep(ACCEPT_POLL),
                }
            }
        }));
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies bytes both ways between `client` and `server` until either side closes or the proxy
/// stops, which shuts down the sockets recorded in `connections`.
fn pipe(client: TcpStream, server: TcpStream, connections: &Mutex<Vec<TcpStream>>) {
    client
        .set_nonblocking(false)
        .expect("a blocking connection");
    let clone = |stream: &TcpStream| stream.try_clone().expect("a socket handle");
    connections
        .lock()
        .expect("not poisoned")
        .extend([clone(&client), clone(&server)]);
    for (mut from, mut to) in [(clone(&client), clone(&server)), (server, client)] {
        std::thread::spawn(move || {
            let mut buffer = [0u8; 16 * 1024];
            while let Ok(n) = from.read(&mut buffer) {
                if n == 0 || to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(Shutdown::Write);
        });
    }
}

/// The `host:port` a Postgres URL connects to, and the URL with it replaced by `to`.
fn reroute(url: &str, to: &str) -> (String, String) {
    let start = url.find("://").map_or(0, |at| at + "://".len());
    let end = url[start..]
        .find(['/', '?'])
        .map_or(url.len(), |at| start + at);
    let authority = &url[start..end];
    let host_at = authority.rfind('@').map_or(0, |at| at + 1);
    let host = &authority[host_at..];
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok());
    let upstream = if has_port {
        host.to_owned()
    } else {
        format!("{host}:{POSTGRES_PORT}")
    };
    let rerouted = format!(
        "{}{}{to}{}",
        &url[..start],
        &authority[..host_at],
        &url[end..]
    );
    (upstream, rerouted)
}

/// What the service answered, and how long it took.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: serde_json::Value,
    took: Duration,
}

/// `method path`, with `body` as JSON and the admin key when there is a body.
fn call(server: &Server, method: reqwest::Method, path: &str, body: Option<&str>) -> Answer {
    let started = Instant::now();
    let client = reqwest::blocking::Client::builder()
        .timeout(ANSWER_TIMEOUT)
        .build()
        .expect("an HTTP client");
    let mut request = client.request(method, format!("{}{path}", server.base_url()));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .bearer_auth(ADMIN_KEY)
            .body(body.to_owned());
    }
    let response = request.send().expect("an answer");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.json().expect("a JSON body");
    Answer {
        status,
        retry_after,
        body,
        took: started.elapsed(),
    }
}

/// Checks that a write answered 503 `database_unavailable` with `Retry-After`, promptly.
#[track_caller]
fn assert_refused(answer: Answer, what: &str) {
    let Answer {
        status,
        retry_after,
        body,
        took,
    } = answer;
    assert_eq!(status, 503, "{what}: {body}");
    assert_eq!(body["error"]["code"], "database_unavailable", "{what}");
    assert!(retry_after.is_some(), "{what}: a 503 carries Retry-After");
    assert!(took < REFUSAL_WITHIN, "{what}: refused only after {took:?}");
    eprintln!("database away: {what} refused in {took:?}");
}

#[test]
fn postgres_going_away_mid_stream_keeps_reads_refuses_writes_and_loses_nothing() {
    let Some(lines) = formula1(STREAMED) else {
        return;
    };
    // The wide round mid-stream keeps the worker busy when the database goes away, with the
    // rounds after it queued behind it.
    let mut rounds: Vec<Round> = lines.into_iter().map(Round::parse).collect();
    let wide_at = rounds.len() / 2;
    rounds.insert(wide_at, rounds::wide("wide", WIDE_ROUND));
    let proxy = Arc::new(Mutex::new(None::<Proxy>));
    let options = Options {
        route_database: Some(Box::new({
            let proxy = Arc::clone(&proxy);
            move |url: &str| {
                let (upstream, _) = reroute(url, "");
                let started = Proxy::start(upstream);
                let (_, rerouted) = reroute(url, &format!("127.0.0.1:{}", started.port));
                *proxy.lock().expect("not poisoned") = Some(started);
                rerouted
            }
        })),
        ..Options::default()
    };
    let Some(server) = Server::start_with(Backend::Postgres, options) else {
        return;
    };
    let mut proxy = proxy
        .lock()
        .expect("not poisoned")
        .take()
        .expect("the service goes through the proxy");
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );

    let rounds = Arc::new(rounds);
    let target = Arc::new(Target::new(server.base_url()));
    let client = {
        let (rounds, target) = (Arc::clone(&rounds), Arc::clone(&target));
        std::thread::spawn(move || stream::post_all(&rounds, POOL, ADMIN_KEY, &target, || false))
    };
    while target.posting() <= wide_at {
        std::thread::sleep(Duration::from_millis(1));
    }

    proxy.stop();
    let went_away = Instant::now();
    let queued_at_outage = server
        .stored_rounds(POOL)
        .iter()
        .filter(|round| round.status == "queued")
        .count();
    assert!(queued_at_outage > 0, "the wide round, at least, is queued");
    let refused_before = target.unavailable();

    let health = call(&server, reqwest::Method::GET, "/healthz", None);
    assert_eq!(
        (health.status, &health.body["status"]),
        (200, &"ok".into()),
        "{}",
        health.body
    );
    let readiness = call(&server, reqwest::Method::GET, "/readyz", None);
    let body = &readiness.body;
    assert_eq!(
        readiness.status, 503,
        "not ready while the database is away: {body}"
    );
    assert_eq!(
        (&body["status"], &body["database"], &body["queue_depth"]),
        (&"not_ready".into(), &false.into(), &serde_json::Value::Null),
        "{body}"
    );
    assert!(
        readiness.took < READINESS_WITHIN,
        "readyz answered after {:?}",
        readiness.took
    );

    let metrics = reqwest::blocking::Client::builder()
        .timeout(ANSWER_TIMEOUT)
        .build()
        .expect("an HTTP client")
        .get(format!("{}/metrics", server.base_url()))
        .send()
        .expect("an answer");
    assert_eq!(
        metrics.status(),
        200,
        "metrics are served while the database is away"
    );
    let metrics = metrics.text().expect("a text body");
    assert!(
        metrics.lines().any(|line| line == "mmr_database_up 0"),
        "{metrics}"
    );

    let reads_from_memory = || -> Vec<serde_json::Value> {
        [
            "/v1/pools/f1/players/fangio",
            "/v1/pools/f1/leaderboard?limit=100",
            "/v1/pools/f1/win-probability?a=fangio&b=ascari",
        ]
        .iter()
        .map(|path| server.get_json(path))
        .collect()
    };
    let reads = reads_from_memory();
    assert!(reads[2]["p_a"].as_f64().is_some(), "{}", reads[2]);
    // The page without the peak, which only the database has.
    assert_eq!(reads[0]["peak"], serde_json::Value::Null, "{}", reads[0]);
    assert_eq!(reads[0]["player"], "fangio", "{}", reads[0]);

    let probe = rounds::wide("probe", 2);
    assert_refused(
        call(
            &server,
            reqwest::Method::POST,
            "/v1/pools/f1/rounds",
            Some(&probe.body),
        ),
        "POST a round",
    );
    assert_refused(
        call(&server, reqwest::Method::PUT, "/v1/pools/f1", Some("{}")),
        "PUT an existing pool",
    );
    assert_refused(
        call(&server, reqwest::Method::PUT, "/v1/pools/other", Some("{}")),
        "PUT a new pool",
    );

    std::thread::sleep(OUTAGE.saturating_sub(went_away.elapsed()));
    assert_eq!(
        reads_from_memory(),
        reads,
        "reads are answered, and nothing changes while the database is away"
    );
    assert!(
        target.unavailable() > refused_before,
        "the stream was refused while the database was away"
    );

    proxy.resume();
    let back = Instant::now();
    loop {
        let readiness = call(&server, reqwest::Method::GET, "/readyz", None);
        if readiness.status == 200 {
            break;
        }
        assert!(
            back.elapsed() < RECONNECT_WITHIN,
            "not ready {RECONNECT_WITHIN:?} after the database came back: {}",
            readiness.body
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ready_after = back.elapsed();
    let mut ledger = client.join().expect("the client thread");
    assert_eq!(
        server.post(&format!("/v1/pools/{POOL}/rounds"), &probe.body, ADMIN_KEY),
        202,
        "the refused round is accepted now"
    );
    ledger.acknowledged.push(probe.id.clone());

    let stored = server.stored_rounds(POOL).len();
    wait_until_applied(&server, stored as u64);
    let mut posted = rounds.to_vec();
    posted.push(probe);
    let (order, _) = ledger.check(&posted, &server.stored_rounds(POOL));
    let order: Vec<String> = order.into_iter().map(|r| r.body.clone()).collect();
    assert_same_ratings(&served(&server), &replayed(server.dir(), &order));
    eprintln!(
        "database away for {:?} with {queued_at_outage} rounds queued; ready {ready_after:?} \
         after it came back; the stream was refused {} times and lost nothing",
        back.duration_since(went_away),
        ledger.retried
    );
}

#[test]
fn a_postgres_url_is_rerouted_through_the_proxy() {
    let cases = [
        (
            "postgres://postgres@127.0.0.1:5432/db",
            "127.0.0.1:5432",
            "postgres://postgres@127.0.0.1:7/db",
        ),
        (
            "postgresql://u:p@db.example/x?sslmode=disable",
            "db.example:5432",
            "postgresql://u:p@127.0.0.1:7/x?sslmode=disable",
        ),
        (
            "postgres://localhost:6543",
            "localhost:6543",
            "postgres://127.0.0.1:7",
        ),
    ];
    for (url, upstream, rerouted) in cases {
        assert_eq!(
            reroute(url, "127.0.0.1:7"),
            (upstream.to_owned(), rerouted.to_owned()),
            "{url}"
        );
    }
}
