//! A slow client cannot hold the service: a POST whose body trickles in a byte at a time is
//! cut off with 503 `timeout` after `server.request_timeout_secs`, stores nothing, and while it
//! trickles other clients' rounds are accepted and applied. And a connection that sends no
//! request head (nothing, half of one, or nothing more after an answer) is closed within
//! [`HEAD_TIMEOUT`]: each is a file descriptor the service would otherwise keep for as long as
//! the client likes. Nor can a client open connections without bound: one address holds at
//! most `server.max_connections_per_address`, a connection beyond is closed at once, and beyond
//! `server.max_connections` in all a new connection waits until one closes, or until the one
//! silent longest is closed to make room. Over a real socket, because the point is what the
//! HTTP server does with a connection that is open and nearly idle.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use mmr_service::serve::{HEAD_TIMEOUT, SILENT_EVICTABLE};

use crate::rounds::{self, Rng};
use crate::server::{Backend, Options, Server, ADMIN_KEY};
use crate::{wait_until_applied, POOL};

/// `server.request_timeout_secs` for this test.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Pause between two bytes of the slow body: it would take minutes to arrive.
const DRIBBLE: Duration = Duration::from_millis(200);

/// Rounds other clients post while the slow one trickles.
const OTHER_ROUNDS: usize = 10;

/// Extra time the cut-off may take beyond the timeout on a loaded machine.
const SLACK: Duration = Duration::from_secs(5);

/// The status line, headers and body of an HTTP/1.1 response read from `stream`.
fn read_response(stream: &mut TcpStream) -> (String, Vec<(String, String)>, String) {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buffer).expect("the response arrives");
        assert!(n > 0, "the connection closed before a response");
        bytes.extend_from_slice(&buffer[..n]);
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
    };
    let head = String::from_utf8(bytes[..head_end].to_vec()).expect("an ASCII head");
    let mut lines = head.split("\r\n");
    let status = lines.next().expect("a status line").to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .map(|(_, value)| value.parse().expect("a length"))
        .expect("a Content-Length");
    let mut body = bytes[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buffer).expect("the body arrives");
        assert!(n > 0, "the connection closed inside the body");
        body.extend_from_slice(&buffer[..n]);
    }
    (
        status,
        headers,
        String::from_utf8(body).expect("a UTF-8 body"),
    )
}

#[test]
fn a_client_trickling_its_body_is_cut_off_at_the_timeout_without_holding_other_rounds_back() {
    let options = Options {
        env: vec![(
            "MMR__SERVER__REQUEST_TIMEOUT_SECS",
            REQUEST_TIMEOUT.as_secs().to_string(),
        )],
        route_database: None,
    };
    let Some(server) = Server::start_with(Backend::Sqlite, options) else {
        return;
    };
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    let mut rng = Rng::new(7);
    let slow = rounds::wide("slow", 8);
    let others = rounds::synthetic(&mut rng, "other", OTHER_ROUNDS, 12, 6);

    let addr = server
        .base_url()
        .strip_prefix("http://")
        .expect("an http URL");
    let mut stream = TcpStream::connect(addr).expect("connect");
    let head = format!(
        "POST /v1/pools/{POOL}/rounds HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: Bearer {ADMIN_KEY}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        slow.body.len()
    );
    // The clock starts before the head is sent: the service's timeout cannot start earlier,
    // so the cut-off measured here is never short of it (started after the write, a
    // preempted test thread once saw 4.9997 s).
    let started = Instant::now();
    stream.write_all(head.as_bytes()).expect("send the head");
    let dribbler = {
        let mut stream = stream.try_clone().expect("a socket handle");
        let body = slow.body.clone().into_bytes();
        std::thread::spawn(move || {
            for byte in body {
                // The service hangs up at the timeout: the write then fails, and that is all.
                if stream.write_all(&[byte]).is_err() {
                    return;
                }
                std::thread::sleep(DRIBBLE);
            }
        })
    };

    for round in &others {
        assert_eq!(
            server.post(&format!("/v1/pools/{POOL}/rounds"), &round.body, ADMIN_KEY),
            202,
            "round {} is accepted while the slow client trickles",
            round.id
        );
    }
    wait_until_applied(&server, OTHER_ROUNDS as u64);
    let others_applied = started.elapsed();
    assert!(
        others_applied < REQUEST_TIMEOUT,
        "the other rounds were applied only after {others_applied:?}"
    );

    stream
        .set_read_timeout(Some(REQUEST_TIMEOUT + SLACK))
        .expect("a read timeout");
    let (status, headers, body) = read_response(&mut stream);
    let cut_off = started.elapsed();
    assert!(status.starts_with("HTTP/1.1 503"), "{status}: {body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("a JSON body");
    assert_eq!(body["error"]["code"], "timeout", "{body}");
    assert!(
        headers.iter().any(|(name, _)| name == "retry-after"),
        "a 503 carries Retry-After"
    );
    assert!(
        cut_off >= REQUEST_TIMEOUT && cut_off < REQUEST_TIMEOUT + SLACK,
        "cut off after {cut_off:?}, not at the {REQUEST_TIMEOUT:?} timeout"
    );
    // Shutting the socket down ends the dribbling thread's writes on its handle too.
    stream
        .shutdown(Shutdown::Both)
        .expect("shut the socket down");
    dribbler.join().expect("the dribbling thread");

    let round = reqwest::blocking::get(format!(
        "{}/v1/pools/{POOL}/rounds/{}",
        server.base_url(),
        slow.id
    ))
    .expect("an answer");
    assert_eq!(round.status(), 404, "the cut-off round was not stored");
    let pool = server.get_json(&format!("/v1/pools/{POOL}"));
    assert_eq!(
        (&pool["rounds_applied"], &pool["rounds_queued"]),
        (&OTHER_ROUNDS.into(), &0.into()),
        "{pool}"
    );
}

/// Reads from `stream`, a connection `what`, until the service closes it, or fails after
/// `within`; how long that took, and how many bytes came before the close.
fn closed_after(stream: &mut TcpStream, what: &str, within: Duration) -> (Duration, usize) {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(within))
        .expect("a read timeout");
    let mut received = 0;
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return (started.elapsed(), received),
            Ok(n) => received += n,
            Err(error) => {
                panic!("the service kept a connection {what} open for {within:?}: {error}")
            }
        }
    }
}

#[test]
fn connections_that_send_no_request_head_in_time_are_closed() {
    let Some(server) = Server::start(Backend::Sqlite) else {
        return;
    };
    let addr = server
        .base_url()
        .strip_prefix("http://")
        .expect("an http URL")
        .to_owned();
    let within = HEAD_TIMEOUT + SLACK;
    let silent = TcpStream::connect(&addr).expect("connect");
    let mut half = TcpStream::connect(&addr).expect("connect");
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .expect("half a head");
    let mut idle = TcpStream::connect(&addr).expect("connect");
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .expect("a request");
    let (status, _, _) = read_response(&mut idle);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    // Meanwhile, others are answered.
    assert_eq!(server.get_json("/healthz")["status"], "ok");
    let handles: Vec<_> = [
        ("sending nothing", silent),
        ("half a head", half),
        ("idle after an answer", idle),
    ]
    .into_iter()
    .map(|(what, mut stream)| {
        std::thread::spawn(move || (what, closed_after(&mut stream, what, within)))
    })
    .collect();
    for handle in handles {
        let (what, (took, received)) = handle.join().expect("a reader");
        println!("a connection {what} closed after {took:?} ({received} bytes before)");
        assert!(took <= within, "a connection {what} was open {took:?}");
    }
}

/// `server.max_connections` for the test.
const MAX_CONNECTIONS: usize = 16;

/// `server.max_connections_per_address` for the test.
const PER_ADDRESS: usize = 4;

/// A connection to `server` from the loopback address `127.0.0.{host}`.
fn connect_from(server: &SocketAddr, host: u8) -> TcpStream {
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
    let from = SocketAddr::from((Ipv4Addr::new(127, 0, 0, host), 0));
    socket.bind(&from.into()).expect("bind a loopback address");
    socket.connect(&(*server).into()).expect("connect");
    socket.into()
}

/// Sends a `GET path` on `stream`; with `close`, asks the service to close the connection
/// after its answer.
fn send_get(stream: &mut TcpStream, path: &str, close: bool) {
    let connection = if close { "close" } else { "keep-alive" };
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: {connection}\r\n\r\n")
                .as_bytes(),
        )
        .expect("a request");
}

/// Asserts that the answer on `stream` arrives within [`SLACK`] and is a 200.
fn answered_ok(stream: &mut TcpStream, what: &str) {
    stream
        .set_read_timeout(Some(SLACK))
        .expect("a read timeout");
    let (status, _, _) = read_response(stream);
    assert!(status.starts_with("HTTP/1.1 200"), "{what}: {status}");
}

/// A connection from `127.0.0.{host}` that has asked once and is kept open, idle.
fn asked_from(server: &SocketAddr, host: u8) -> TcpStream {
    let mut stream = connect_from(server, host);
    send_get(&mut stream, "/healthz", false);
    answered_ok(&mut stream, "a connection asking");
    stream
}

/// Asserts that nothing arrives on `stream` within `within`, and that it is still open.
fn nothing_within(stream: &mut TcpStream, within: Duration, what: &str) {
    stream
        .set_read_timeout(Some(within))
        .expect("a read timeout");
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) => {}
        other => panic!("{what}: {other:?}"),
    }
}

#[test]
fn connections_are_bounded_per_address_and_in_all_and_silent_ones_make_room() {
    let options = Options {
        env: vec![
            ("MMR__SERVER__MAX_CONNECTIONS", MAX_CONNECTIONS.to_string()),
            (
                "MMR__SERVER__MAX_CONNECTIONS_PER_ADDRESS",
                PER_ADDRESS.to_string(),
            ),
        ],
        route_database: None,
    };
    let Some(server) = Server::start_with(Backend::Sqlite, options) else {
        return;
    };
    let addr: SocketAddr = server
        .base_url()
        .strip_prefix("http://")
        .expect("an http URL")
        .parse()
        .expect("an address");
    // The harness's own client now holds one connection, idle, until the head deadline
    // closes it, and so do the connections below that asked: every step takes far less.
    assert_eq!(server.get_json("/healthz")["status"], "ok");
    let started = Instant::now();
    let in_time = |step: &str| {
        let took = started.elapsed();
        assert!(
            took < HEAD_TIMEOUT - SILENT_EVICTABLE * 3,
            "{step} began after {took:?}: the connections that asked may close meanwhile"
        );
    };

    // One address: its 4, then a fifth closed at once, while another address is answered.
    let mut held: Vec<TcpStream> = (0..PER_ADDRESS).map(|_| asked_from(&addr, 2)).collect();
    let mut beyond = connect_from(&addr, 2);
    let (took, _) = closed_after(&mut beyond, "beyond its address's", SILENT_EVICTABLE);
    println!("a connection beyond its address's closed after {took:?}");
    let mut other = connect_from(&addr, 9);
    send_get(&mut other, "/healthz", true);
    answered_ok(&mut other, "another address");
    drop(other);

    // All 16 open (the harness's one, the first address's 4, 11 more from three other
    // addresses), each having asked: a new connection waits until one closes.
    in_time("filling every place");
    for (host, count) in [(3, 4), (4, 4), (5, 3)] {
        held.extend((0..count).map(|_| asked_from(&addr, host)));
    }
    let mut waiting = connect_from(&addr, 6);
    send_get(&mut waiting, "/healthz", true);
    nothing_within(
        &mut waiting,
        SILENT_EVICTABLE * 2,
        "no answer while every connection is taken by one that asked",
    );
    drop(held.pop());
    answered_ok(&mut waiting, "once one closed");
    drop(waiting);

    // All 16 open again, two of them silent: the older silent one makes room for a new
    // connection once it has been silent long enough; the younger one stays.
    in_time("making room");
    drop(held.pop());
    let mut older = connect_from(&addr, 6);
    std::thread::sleep(Duration::from_millis(100));
    let mut younger = connect_from(&addr, 6);
    std::thread::sleep(SILENT_EVICTABLE);
    let mut asking = connect_from(&addr, 7);
    send_get(&mut asking, "/healthz", true);
    answered_ok(&mut asking, "in a silent one's place");
    let (took, _) = closed_after(&mut older, "silent longest", SLACK);
    println!("the connection silent longest closed {took:?} after the new one was answered");
    nothing_within(
        &mut younger,
        Duration::from_millis(200),
        "the younger silent connection stays open",
    );

    drop((held, younger));
    let mut scrape = connect_from(&addr, 8);
    send_get(&mut scrape, "/metrics", true);
    let (_, _, metrics) = read_response(&mut scrape);
    for counter in [
        "mmr_http_connections_refused_total 1",
        "mmr_http_connections_evicted_total 1",
    ] {
        assert!(
            metrics.lines().any(|line| line == counter),
            "{counter}: {metrics}"
        );
    }
}
