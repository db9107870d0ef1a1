//! The real `mmr-service serve` as a child process: started in a temporary directory with a
//! config file holding an admin key, on a free port (read from its log), stopped with SIGKILL
//! or SIGTERM and started again on the same database. Owns the child, its directory and, for
//! Postgres, its fresh database, and removes all three when dropped; reads the database's
//! rounds directly, for tests that check what a crash left behind.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::Connection;
use tempfile::TempDir;

/// The key the tests write with.
pub const ADMIN_KEY: &str = "e2e-admin-key";

/// The Postgres server used when `MMR_TEST_DATABASE_URL` is not set.
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Longest the service may take to start listening, or to stop after SIGTERM.
const START_STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// The log line the service prints once it listens, before the address.
const SERVING: &str = "serving addr=";

/// Which database the service runs on.
#[derive(Debug, Clone, Copy)]
pub enum Backend {
    /// A SQLite file named in the config file.
    Sqlite,
    /// A fresh database on the Postgres test server.
    Postgres,
    /// No configuration at all: the built-in default, `./data/mmr.sqlite3`.
    Default,
}

/// Turns the URL of the database made for a test into the URL the service is given.
pub type RouteDatabase = Box<dyn FnOnce(&str) -> String>;

/// What a test changes in how the service starts; the default changes nothing.
#[derive(Default)]
pub struct Options {
    /// Settings given as `MMR__SECTION__KEY` environment variables.
    pub env: Vec<(&'static str, String)>,
    /// The database URL the service is given, from the URL of the database made for the test
    /// (a test that puts a proxy in between rewrites it).
    pub route_database: Option<RouteDatabase>,
}

/// A round as the database holds it.
#[derive(Debug)]
pub struct StoredRound {
    /// Its id.
    pub id: String,
    /// `queued`, `applied` or `failed`.
    pub status: String,
    /// History rows written for it: one per entrant once applied.
    pub history_rows: i64,
}

/// Every round of pool `$1` in acceptance order, with the history rows written for it.
const STORED_ROUNDS: &str = "
    SELECT r.id, r.status,
           (SELECT COUNT(*) FROM history h WHERE h.pool = r.pool AND h.seq = r.seq)
    FROM rounds r WHERE r.pool = $1 ORDER BY r.seq";

/// A Postgres database made for one test.
struct PgDatabase {
    admin_url: String,
    name: String,
}

/// A running (or stopped) service.
pub struct Server {
    child: Option<Child>,
    dir: TempDir,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    database_url: String,
    base: String,
    client: reqwest::blocking::Client,
    postgres: Option<PgDatabase>,
    /// The admin key the last start printed, if it created one (a first start).
    first_key: Arc<Mutex<Option<String>>>,
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// Creates a fresh Postgres database; `None` (after saying SKIPPED) when no server answers,
/// unless `CI` is set.
fn create_postgres() -> Option<(PgDatabase, String)> {
    let admin_url =
        std::env::var("MMR_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("mmr_e2e_{}_{nanos}", std::process::id());
    let created = block_on(async {
        let mut admin = tokio::time::timeout(
            Duration::from_secs(5),
            sqlx::PgConnection::connect(&admin_url),
        )
        .await
        .map_err(|_| "connection timed out".to_owned())?
        .map_err(|e| e.to_string())?;
        sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&mut admin)
            .await
            .map_err(|e| e.to_string())
    });
    match created {
        Ok(_) => {
            let (base, _) = admin_url
                .rsplit_once('/')
                .expect("a database URL with a path");
            let url = format!("{base}/{name}");
            Some((PgDatabase { admin_url, name }, url))
        }
        Err(reason) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "Postgres unreachable at {admin_url} in CI: {reason}"
            );
            println!("SKIPPED: Postgres unreachable at {admin_url}: {reason}");
            None
        }
    }
}

impl Server {
    /// Starts the service on `backend`; `None` when the backend is unavailable (skipped).
    pub fn start(backend: Backend) -> Option<Self> {
        Self::start_with(backend, Options::default())
    }

    /// Starts the service on `backend` as `options` say; `None` when the backend is
    /// unavailable (skipped).
    pub fn start_with(backend: Backend, options: Options) -> Option<Self> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (postgres, url) = match backend {
            Backend::Sqlite => (
                None,
                Some(format!(
                    "sqlite://{}",
                    dir.path().join("mmr.sqlite3").display()
                )),
            ),
            Backend::Postgres => {
                let (db, url) = create_postgres()?;
                (Some(db), Some(url))
            }
            Backend::Default => (None, None),
        };
        let database_url = url.clone().unwrap_or_else(|| {
            format!("sqlite://{}", dir.path().join("data/mmr.sqlite3").display())
        });
        let mut args = vec![
            "serve".to_owned(),
            "--addr".to_owned(),
            "127.0.0.1:0".to_owned(),
        ];
        if let Some(mut url) = url {
            if let Some(route) = options.route_database {
                url = route(&url);
            }
            let config = dir.path().join("mmr.toml");
            // No write limit: tests post whole data sets (formula1's 1,100 rounds and more) as
            // fast as the service accepts them, past the default burst of 1,000; the limits
            // are tested in tests/api/security.rs.
            let text = format!(
                "[database]\nurl = \"{url}\"\n[queue]\npoll_interval_ms = 100\n\
                 [rate_limit]\nwrites_per_second = 0\n\
                 [[auth.keys]]\nname = \"e2e\"\nrole = \"admin\"\nsha256 = \"{}\"\n",
                mmr_service::api::auth::hash_key(ADMIN_KEY)
            );
            std::fs::write(&config, text).expect("write the config file");
            args.extend(["--config".to_owned(), config.display().to_string()]);
        }
        let mut server = Self {
            child: None,
            dir,
            args,
            env: options.env,
            database_url,
            base: String::new(),
            client: reqwest::blocking::Client::new(),
            postgres,
            first_key: Arc::default(),
        };
        server.restart();
        Some(server)
    }

    /// Another service on this one's database, with a working directory of its own: a
    /// replica, started and listening. This one keeps the database (and drops it).
    pub fn replica(&self) -> Self {
        let mut server = Self {
            child: None,
            dir: tempfile::tempdir().expect("a temporary directory"),
            args: self.args.clone(),
            env: self.env.clone(),
            database_url: self.database_url.clone(),
            base: String::new(),
            client: reqwest::blocking::Client::new(),
            postgres: None,
            first_key: Arc::default(),
        };
        server.restart();
        server
    }

    /// Runs another service on this one's database, as [`Self::replica`] would, expecting it to
    /// stop by itself within the start timeout: its exit code and log.
    pub fn replica_that_stops(&self) -> (Option<i32>, String) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut child = self.spawn(dir.path());
        let started = std::time::Instant::now();
        while child.try_wait().expect("its status").is_none() {
            if started.elapsed() > START_STOP_TIMEOUT {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().expect("its output");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// The service's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the service runs").id()
    }

    /// Whether the service runs (it was not killed or stopped since it last started).
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// The service's working directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `http://HOST:PORT` of the running service; it changes with every restart.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Every round of `pool` in acceptance order, read from the database itself.
    pub fn stored_rounds(&self, pool: &str) -> Vec<StoredRound> {
        let url = self.database_url.as_str();
        let rows: Vec<(String, String, i64)> = block_on(async {
            if url.starts_with("sqlite:") {
                let mut db = sqlx::SqliteConnection::connect(url).await?;
                sqlx::query_as(STORED_ROUNDS)
                    .bind(pool)
                    .fetch_all(&mut db)
                    .await
            } else {
                let mut db = sqlx::PgConnection::connect(url).await?;
                sqlx::query_as(STORED_ROUNDS)
                    .bind(pool)
                    .fetch_all(&mut db)
                    .await
            }
        })
        .expect("read the stored rounds");
        rows.into_iter()
            .map(|(id, status, history_rows)| StoredRound {
                id,
                status,
                history_rows,
            })
            .collect()
    }

    /// The service, started with this one's arguments and settings in `dir`, its log piped.
    fn spawn(&self, dir: &Path) -> Child {
        Command::new(env!("CARGO_BIN_EXE_mmr-service"))
            .args(&self.args)
            .current_dir(dir)
            .env("RUST_LOG", "info")
            .envs(self.env.iter().map(|(key, value)| (key, value)))
            .env_remove("DATABASE_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the service starts")
    }

    /// Starts the (stopped) service again on the same database and waits until it listens.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the service is already running");
        let mut child = self.spawn(self.dir.path());
        let stderr = child.stderr.take().expect("piped stderr");
        let (addr_tx, addr_rx) = mpsc::channel();
        let first_key = Arc::clone(&self.first_key);
        *first_key.lock().expect("not poisoned") = None;
        // Drains the log for the child's whole life, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some((_, addr)) = line.split_once(SERVING) {
                    let _ = addr_tx.send(addr.trim().to_owned());
                }
                // The first start's key is printed alone on an indented line, before serving.
                if line.starts_with("    mmr_") {
                    *first_key.lock().expect("not poisoned") = Some(line.trim().to_owned());
                }
                eprintln!("[service] {line}");
            }
        });
        let addr = addr_rx
            .recv_timeout(START_STOP_TIMEOUT)
            .expect("the service listens");
        self.base = format!("http://{addr}");
        self.child = Some(child);
    }

    /// The admin key the last start printed on stderr, if it created one.
    pub fn first_key(&self) -> Option<String> {
        self.first_key.lock().expect("not poisoned").clone()
    }

    /// SIGKILL: no chance to finish anything.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL");
            child.wait().expect("reaped");
        }
    }

    /// SIGTERM, then waits for the exit; its code.
    pub fn terminate(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "SIGTERM sent");
        let deadline = std::time::Instant::now() + START_STOP_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait().expect("waitable") {
                return status.code();
            }
            assert!(std::time::Instant::now() < deadline, "stopped in time");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// GET `path`, which must answer 200 with JSON.
    pub fn get_json(&self, path: &str) -> serde_json::Value {
        self.get_ok(path).json().expect("a JSON body")
    }

    /// `pool`'s export from the start, as JSON Lines: the pool's line, then every round.
    pub fn export(&self, pool: &str) -> String {
        reqwest::blocking::Client::new()
            .get(format!("{}/v1/pools/{pool}/rounds", self.base_url()))
            .header("accept", "application/x-ndjson")
            .send()
            .and_then(reqwest::blocking::Response::text)
            .expect("the export")
    }

    /// GET `path`, answered 200: its body as text.
    pub fn get_text(&self, path: &str) -> String {
        self.get_ok(path).text().expect("a text body")
    }

    /// GET `path`, which must answer 200.
    fn get_ok(&self, path: &str) -> reqwest::blocking::Response {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .expect("GET answered");
        assert_eq!(response.status(), 200, "GET {path}");
        response
    }

    /// POST `body` as JSON to `path` with `key`; the status.
    pub fn post(&self, path: &str, body: &str, key: &str) -> u16 {
        self.send(self.client.post(format!("{}{path}", self.base)), body, key)
    }

    /// PUT `body` as JSON to `path` with `key`; the status.
    pub fn put(&self, path: &str, body: &str, key: &str) -> u16 {
        self.send(self.client.put(format!("{}{path}", self.base)), body, key)
    }

    fn send(&self, request: reqwest::blocking::RequestBuilder, body: &str, key: &str) -> u16 {
        request
            .header("content-type", "application/json")
            .bearer_auth(key)
            .body(body.to_owned())
            .send()
            .expect("answered")
            .status()
            .as_u16()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if let Some(db) = self.postgres.take() {
            let _ = block_on(async {
                let mut admin = sqlx::PgConnection::connect(&db.admin_url).await?;
                sqlx::query(&format!(
                    "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                    db.name
                ))
                .execute(&mut admin)
                .await
            });
        }
    }
}
