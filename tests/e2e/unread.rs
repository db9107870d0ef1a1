//! A client that asks for the largest answers and never reads them cannot pin the service's
//! memory: each answer keeps its computation's share of the budget until it is written, so one
//! address holds at most its share of them (2 of the 4 largest by default; its further
//! requests get 429), and a connection whose client takes too little of its answer within
//! [`WRITE_TIMEOUT`] is closed and its answer freed. Before, the share went back when computing
//! ended: 160 such connections from one address took the service from 20 MB to 3 GB.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use mmr_service::serve::WRITE_TIMEOUT;

use crate::server::{Backend, Options, Server, ADMIN_KEY};
use crate::POOL;

/// Connections from one address asking for a pairwise prediction of 1,000 entrants (about
/// 20 MB of JSON each) without reading.
const UNREAD: usize = 12;

/// What the answers held may add to the service's resident memory while they wait, and at the
/// peak: the two its address's share allows, about 20 MB each, the connections' buffers, and
/// what their two computations took (each holds its matrix and the answer's text as it grows,
/// about 50 MB). The allocator (mimalloc) gives a compute thread's freed pages back only as
/// that thread allocates again, so the last computations' memory stays until the next ones
/// reuse it: 141-145 MB here, where glibc's allocator showed 46-47 MB.
const HELD_BOUND_MB: f64 = 200.0;

/// Time a loaded machine may take beyond a deadline.
const SLACK: Duration = Duration::from_secs(10);

/// The service's resident memory, in MB.
pub fn resident_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let kb: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .expect("VmRSS");
    kb / 1024.0
}

/// A connection from `127.0.0.{host}` with a small receive buffer, as a client that means not
/// to read sets it.
fn connect_from(server: &SocketAddr, host: u8) -> TcpStream {
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
    socket.set_recv_buffer_size(4096).expect("a small buffer");
    let from = SocketAddr::from((Ipv4Addr::new(127, 0, 0, host), 0));
    socket.bind(&from.into()).expect("bind a loopback address");
    socket.connect(&(*server).into()).expect("connect");
    socket.into()
}

/// Sends a prediction request for `entrants` newcomers on `stream`.
fn ask_prediction(stream: &mut TcpStream, entrants: usize, pairwise: bool) {
    let entrants: Vec<serde_json::Value> = (0..entrants)
        .map(|i| serde_json::json!({"players": [format!("p{i}")]}))
        .collect();
    let body = serde_json::json!({"entrants": entrants, "pairwise": pairwise}).to_string();
    let head = format!(
        "POST /v1/pools/{POOL}/predictions HTTP/1.1\r\nHost: x\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(format!("{head}{body}").as_bytes())
        .expect("a request");
}

/// The status line of the answer on `stream`, and its declared length.
fn status_of(stream: &mut TcpStream) -> (String, usize) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).expect("an answer");
        assert!(n > 0, "the connection closed before an answer");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("an ASCII head");
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    (head.lines().next().unwrap_or_default().to_owned(), length)
}

/// A small prediction from `127.0.0.{host}`, read whole: its status line.
fn small_prediction(server: &SocketAddr, host: u8) -> String {
    let mut stream = connect_from(server, host);
    stream
        .set_read_timeout(Some(SLACK))
        .expect("a read timeout");
    ask_prediction(&mut stream, 2, false);
    status_of(&mut stream).0
}

/// Reads what `stream` still gives until it ends; the bytes read.
fn drain(stream: &mut TcpStream) -> usize {
    let mut buffer = vec![0u8; 1 << 16];
    let mut read = 0;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return read,
            Ok(n) => read += n,
        }
    }
}

/// The service on `backend` with an empty pool [`POOL`]; `None` where the backend is missing.
pub fn with_a_pool(backend: Backend) -> Option<Server> {
    let server = Server::start_with(backend, Options::default())?;
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    Some(server)
}

#[test]
fn unread_answers_hold_their_share_and_are_closed_by_the_write_deadline() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(server) = with_a_pool(backend) else {
            continue;
        };
        let address: SocketAddr = server
            .base_url()
            .trim_start_matches("http://")
            .parse()
            .expect("the service's address");
        let before = resident_mb(server.pid());
        let mut unread: Vec<TcpStream> = (0..UNREAD)
            .map(|_| {
                let mut stream = connect_from(&address, 1);
                ask_prediction(&mut stream, 1000, true);
                stream
            })
            .collect();
        // Every request has been answered or holds its share once a small one from the same
        // address is refused for its share and the memory stops growing.
        let started = Instant::now();
        let mut peak = before;
        loop {
            std::thread::sleep(Duration::from_millis(500));
            peak = peak.max(resident_mb(server.pid()));
            let refused = small_prediction(&address, 1).contains(" 429 ");
            if refused && started.elapsed() > Duration::from_secs(5) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the answers were never computed"
            );
        }
        // What stays while the answers wait.
        let mut held = peak;
        for _ in 0..8 {
            std::thread::sleep(Duration::from_millis(500));
            held = resident_mb(server.pid());
            peak = peak.max(held);
        }
        println!(
            "{backend:?}: {UNREAD} unread pairwise answers: {before:.0} MB before, {peak:.0} MB at the \
             peak, {held:.0} MB while they wait"
        );
        assert!(
            peak - before < HELD_BOUND_MB,
            "{backend:?}: {before:.0} MB before, {peak:.0} MB with answers unread"
        );
        assert!(
            small_prediction(&address, 2).contains(" 200 "),
            "another address keeps its room"
        );
        // The answers held are cut off by the write deadline; the others were refused.
        std::thread::sleep(WRITE_TIMEOUT + SLACK);
        let mut cut = 0;
        for stream in &mut unread {
            stream
                .set_read_timeout(Some(SLACK))
                .expect("a read timeout");
            let (status, length) = status_of(stream);
            if status.contains(" 200 ") {
                let read = drain(stream);
                assert!(read < length, "{read} of {length} bytes: cut off");
                cut += 1;
            } else {
                assert!(status.contains(" 429 "), "{status}");
            }
        }
        assert_eq!(
            cut, 2,
            "{backend:?}: the address's share is 2 of the largest"
        );
        assert!(
            small_prediction(&address, 1).contains(" 200 "),
            "the share came back"
        );
        let metrics = server.get_text("/metrics");
        assert!(
            metrics
                .lines()
                .any(|line| line.starts_with("mmr_http_writes_timed_out_total ")
                    && !line.ends_with(" 0")),
            "{metrics}"
        );
    }
}
