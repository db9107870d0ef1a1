//! What the benches that measure whole processes (start-up, memory, several replicas) share:
//! the service's binary, running, and dropping the databases they fill.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use sqlx::Connection;

/// What the service logs once it listens, before its address.
const SERVING: &str = "serving addr=";

/// The service binary, running.
pub struct Service {
    child: Child,
    /// `http://HOST:PORT`.
    pub base: String,
}

impl Service {
    /// Starts the binary with `config` and waits until it listens (pools are loaded before).
    pub fn start(config: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mmr-service"))
            .args(["serve", "--config"])
            .arg(config)
            .env("RUST_LOG", "info")
            .env_remove("DATABASE_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the service starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (addr_tx, addr_rx) = mpsc::channel();
        // Drains the log for the child's whole life, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some((_, addr)) = line.split_once(SERVING) {
                    let _ = addr_tx.send(addr.trim().to_owned());
                }
            }
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(600))
            .expect("the service listens");
        Self {
            child,
            base: format!("http://{addr}"),
        }
    }

    /// The process's resident memory (`VmRSS`), in KiB.
    pub fn resident_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the process's status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Drops the database at `url`, made by `common::fresh_postgres` (it may hold millions of rows).
pub async fn drop_database(url: &str) {
    let (server, name) = url.rsplit_once('/').expect("a URL with a database");
    let mut admin = sqlx::PgConnection::connect(&format!("{server}/postgres"))
        .await
        .expect("the server answers");
    sqlx::query(&format!("DROP DATABASE \"{name}\""))
        .execute(&mut admin)
        .await
        .expect("the database dropped");
}
