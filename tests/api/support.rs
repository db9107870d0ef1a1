//! The API under test, in process: [`TestApp`] builds the service's state over a fresh database
//! (`tests/common/db.rs`) and calls the router with `tower::ServiceExt::oneshot`, one request at
//! a time. No background worker runs: tests apply queued rounds with [`TestApp::apply_queued`],
//! which steps `worker::process_next` until the queue is empty. Also the fixtures the tests
//! share (keys, rounds), the check of the shared error body, and [`Snapshot`]: everything a
//! request could change, to prove that a refused one changed nothing. Asserts only what every
//! test relies on.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::{Arc, Mutex, Once};

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use mmr_service::api::{self, auth::hash_key};
use mmr_service::config::{KeySettings, Overrides, Role, Settings};
use mmr_service::engine::{Beliefs, SystemParams, SystemState};
use mmr_service::params::ParamsOverrides;
use mmr_service::scope::Scope;
use mmr_service::state::AppState;
use mmr_service::storage;
use mmr_service::worker::{self, Processed, Settled};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::Connection;
use tower::ServiceExt;
use tracing::Level;
use tracing_subscriber::filter::dynamic_filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

pub use crate::db::Backend;
use crate::db::TestDatabase;
use crate::storage_ext::tester;

/// An admin key: may create pools.
pub const ADMIN_KEY: &str = "admin-secret";

/// A write key: may post rounds.
pub const WRITE_KEY: &str = "write-secret";

/// A read key: may only read.
pub const READ_KEY: &str = "read-secret";

/// The pool most tests use.
pub const POOL: &str = "main";

/// Keys that authenticate no one, each with what it is.
pub const UNKNOWN_KEYS: [(Option<&str>, &str); 2] =
    [(None, "no key"), (Some("guess"), "an unknown key")];

/// A body that goes out with a request.
pub enum Payload {
    /// None at all.
    Empty,
    /// JSON, with `Content-Type: application/json`.
    Json(Value),
    /// Raw bytes with the given content type (`None`: no `Content-Type` header).
    Raw(Option<&'static str>, Vec<u8>),
}

/// What the router answered.
#[derive(Debug)]
pub struct TestResponse {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body read as JSON (`Null` when empty).
    pub body: Value,
}

impl TestResponse {
    /// Checks that this is an error response with `status`, the shared body
    /// `{"error": {"code", "message", "field"?}}`, code `code` and field `field`; `context`
    /// names the case in the failure message.
    #[track_caller]
    pub fn assert_error(&self, status: StatusCode, code: &str, field: Option<&str>, context: &str) {
        assert_eq!(self.status, status, "{context}: {:#}", self.body);
        assert_eq!(
            self.headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some("application/json"),
            "{context}: an error body is JSON"
        );
        let object = self.body.as_object().expect("the body is an object");
        assert_eq!(
            object.keys().collect::<Vec<_>>(),
            ["error"],
            "{context}: {:#}",
            self.body
        );
        let error = self.body["error"]
            .as_object()
            .expect("`error` is an object");
        assert!(
            error
                .keys()
                .all(|k| matches!(k.as_str(), "code" | "message" | "field")),
            "{context}: unexpected keys in {:#}",
            self.body
        );
        assert_eq!(error["code"], code, "{context}: {:#}", self.body);
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{context}: a message is given: {:#}",
            self.body
        );
        assert_eq!(
            error
                .get("field")
                .map(|f| f.as_str().expect("`field` is a string")),
            field,
            "{context}: {:#}",
            self.body
        );
    }

    /// Checks that the answer asks the client to wait `secs` seconds before asking again.
    #[track_caller]
    pub fn assert_retry_after(&self, secs: u64, context: &str) {
        assert_eq!(
            self.headers.get(header::RETRY_AFTER),
            Some(&header::HeaderValue::from(secs)),
            "{context}: Retry-After"
        );
    }

    /// Checks the status, naming `context` and showing the body when it differs.
    #[track_caller]
    pub fn assert_status(&self, status: StatusCode, context: &str) -> &Value {
        assert_eq!(self.status, status, "{context}: {:#}", self.body);
        &self.body
    }
}

/// The service over a fresh database, with the three test keys configured.
pub struct TestApp {
    /// The state the router serves (its storage, pools and settings).
    pub state: AppState,
    router: Router,
    /// Kept so that a SQLite database outlives the app; `None` when [`run`] owns it.
    _database: Option<TestDatabase>,
}

/// The settings every test starts from: the compiled-in defaults, `env` on top, and one key of
/// each role.
pub fn settings(env: &[(&str, &str)]) -> Settings {
    let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
    let mut settings =
        Settings::load(None, env, &Overrides::default()).expect("test settings load");
    settings.auth.keys = [
        ("ops", Role::Admin, ADMIN_KEY),
        ("judge", Role::Write, WRITE_KEY),
        ("frontend", Role::Read, READ_KEY),
    ]
    .into_iter()
    .map(|(name, role, key)| KeySettings {
        name: name.to_owned(),
        role,
        sha256: hash_key(key),
        pools: Scope::All,
    })
    .collect();
    settings
}

impl TestApp {
    /// The service with default settings on a fresh SQLite database.
    pub async fn new() -> Self {
        Self::with_settings(settings(&[])).await
    }

    /// The service with `settings` on a fresh SQLite database.
    pub async fn with_settings(settings: Settings) -> Self {
        install_log_capture();
        let database = TestDatabase::create(Backend::Sqlite)
            .await
            .expect("SQLite is always available");
        let url = database.url.clone();
        Self::open(&url, settings, Some(database)).await
    }

    async fn open(url: &str, mut settings: Settings, database: Option<TestDatabase>) -> Self {
        url.clone_into(&mut settings.database.url);
        let storage = storage::connect(url).await.expect("open the test database");
        let state = AppState::new(storage, settings).expect("the state");
        state.load_pools(false).await.expect("load pools");
        Self {
            router: api::app(state.clone()),
            state,
            _database: database,
        }
    }

    /// The service as it would start again on the same database: a new state that loads every
    /// pool from storage, beside this one.
    pub async fn restarted(&self) -> Self {
        self.restarted_with(Settings::clone(&self.state.settings))
            .await
    }

    /// [`Self::restarted`] with `settings` instead of this app's.
    pub async fn restarted_with(&self, settings: Settings) -> Self {
        let state = AppState::new(Arc::clone(&self.state.storage), settings).expect("the state");
        state.load_pools(false).await.expect("load pools");
        Self {
            router: api::app(state.clone()),
            state,
            _database: None,
        }
    }

    /// Sends one request to the router.
    pub async fn send(
        &self,
        method: Method,
        uri: &str,
        key: Option<&str>,
        payload: Payload,
    ) -> TestResponse {
        self.send_request(request(method, uri, key, payload)).await
    }

    /// Sends one request without a key from the client at `peer` (an address and port), as
    /// the server's listener would say it came.
    pub async fn send_from(
        &self,
        peer: &str,
        method: Method,
        uri: &str,
        payload: Payload,
    ) -> TestResponse {
        let peer: SocketAddr = peer.parse().expect("a socket address");
        let mut request = request(method, uri, None, payload);
        request.extensions_mut().insert(ConnectInfo(peer));
        self.send_request(request).await
    }

    /// `GET uri` with `accept`: the status, the content type and the body as text.
    pub async fn get_text(&self, uri: &str, accept: &str) -> (StatusCode, String, String) {
        let (status, content_type, bytes) = self.get_bytes(uri, accept).await;
        let text = String::from_utf8(bytes.to_vec()).expect("UTF-8");
        (status, content_type, text)
    }

    /// `GET uri` with `accept`: the status, the content type and the body.
    pub async fn get_bytes(&self, uri: &str, accept: &str) -> (StatusCode, String, Bytes) {
        let request = Request::builder()
            .uri(uri)
            .header(header::ACCEPT, accept)
            .body(Body::empty())
            .expect("a valid request");
        let (parts, bytes) = self.call(request).await;
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        (parts.status, content_type, bytes)
    }

    /// `GET uri` with `headers`, answered without reading the body (for endless answers).
    pub async fn get_stream(
        &self,
        uri: &str,
        headers: &[(&str, &str)],
    ) -> axum::response::Response {
        let mut request = Request::builder().uri(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send_unread(request.body(Body::empty()).expect("a valid request"))
            .await
    }

    /// The router's answer to `request`, its body not read: for endless answers.
    pub async fn send_unread(&self, request: Request<Body>) -> axum::response::Response {
        self.router
            .clone()
            .oneshot(request)
            .await
            .expect("the router is infallible")
    }

    /// The router's answer to `request`: its head and its whole body.
    async fn call(&self, request: Request<Body>) -> (axum::http::response::Parts, Bytes) {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router is infallible");
        let (parts, body) = response.into_parts();
        (
            parts,
            body.collect().await.expect("read the body").to_bytes(),
        )
    }

    /// Sends a request built by the caller.
    pub async fn send_request(&self, request: Request<Body>) -> TestResponse {
        let (parts, bytes) = self.call(request).await;
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "the body is not JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        TestResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    /// Checks that `method uri` refuses, with 415 or 400 and nothing else, bodies that are not
    /// a JSON document: `valid` sent as text or without a content type, no body, and broken
    /// JSON (`valid` truncated or followed by more, empty, not UTF-8).
    pub async fn assert_refuses_bodies_that_are_not_json(
        &self,
        method: &Method,
        uri: &str,
        key: Option<&str>,
        valid: &Value,
    ) {
        let text = valid.to_string().into_bytes();
        let truncated = text[..text.len() - 1].to_vec();
        let trailing = [text.as_slice(), b" {}"].concat();
        let json = Some("application/json");
        let cases = [
            (
                Payload::Raw(Some("text/plain"), text.clone()),
                "a JSON body sent as text",
            ),
            (Payload::Raw(None, text), "no content type"),
            (Payload::Empty, "no body at all"),
            (Payload::Raw(json, truncated), "truncated JSON"),
            (Payload::Raw(json, trailing), "trailing characters"),
            (Payload::Raw(json, Vec::new()), "an empty body"),
            (
                Payload::Raw(json, b"\xff\xfe".to_vec()),
                "bytes that are not UTF-8",
            ),
        ];
        for (payload, case) in cases {
            let (status, code) = match payload {
                Payload::Raw(Some("application/json"), _) => {
                    (StatusCode::BAD_REQUEST, "malformed_json")
                }
                _ => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            };
            self.send(method.clone(), uri, key, payload)
                .await
                .assert_error(status, code, None, &format!("{method} {uri}: {case}"));
        }
    }

    /// `GET uri` without a key.
    pub async fn get(&self, uri: &str) -> TestResponse {
        self.send(Method::GET, uri, None, Payload::Empty).await
    }

    /// `POST uri` with a JSON body and `key`.
    pub async fn post(&self, uri: &str, key: Option<&str>, body: Value) -> TestResponse {
        self.send(Method::POST, uri, key, Payload::Json(body)).await
    }

    /// `PUT /v1/pools/{pool}` with `params` and the admin key.
    pub async fn put_pool(&self, pool: &str, params: Value) -> TestResponse {
        self.send(
            Method::PUT,
            &format!("/v1/pools/{pool}"),
            Some(ADMIN_KEY),
            Payload::Json(params),
        )
        .await
    }

    /// Creates pool `pool` with the default parameters, through the state (not the route).
    pub async fn create_pool(&self, pool: &str) {
        self.state
            .put_pool(pool, &ParamsOverrides::default(), &tester())
            .await
            .expect("create the pool");
    }

    /// Creates pool `pool` as [`Self::create_pool`] does, shown as pools were before a new
    /// pool's leaderboard left provisional players out: nobody provisional, every player
    /// listed by μ. For tests of what the display does not change.
    pub async fn create_plain_pool(&self, pool: &str) {
        self.create_pool(pool).await;
        self.send(
            Method::PUT,
            &format!("/v1/pools/{pool}/display"),
            Some(ADMIN_KEY),
            Payload::Json(
                json!({"provisional": null, "default_order": "mu", "list_provisional": true}),
            ),
        )
        .await
        .assert_status(StatusCode::OK, "the plain display");
    }

    /// `POST /v1/pools/{pool}/rounds` with `round` and the write key.
    pub async fn post_round(&self, pool: &str, round: Value) -> TestResponse {
        self.post(&format!("/v1/pools/{pool}/rounds"), Some(WRITE_KEY), round)
            .await
    }

    /// Posts `round` to [`POOL`] and checks it was accepted.
    pub async fn queue_round(&self, round: Value) {
        let id = round["id"].clone();
        let response = self.post_round(POOL, round).await;
        assert_eq!(
            response.status,
            StatusCode::ACCEPTED,
            "round {id}: {:#}",
            response.body
        );
    }

    /// Posts each of `rounds` to [`POOL`] and applies them all.
    pub async fn play(&self, rounds: impl IntoIterator<Item = Value>) {
        for round in rounds {
            self.queue_round(round).await;
        }
        self.apply_queued(POOL).await;
    }

    /// Steps the worker of `pool` until its queue is empty; returns what became of each round.
    pub async fn apply_queued(&self, pool: &str) -> Vec<Settled> {
        let pool = self.state.pools.get(pool).expect("the pool is loaded");
        let mut settled = Vec::new();
        loop {
            match worker::process_next(self.state.storage.as_ref(), &pool)
                .await
                .expect("a worker step")
            {
                Processed::Idle => return settled,
                Processed::Settled(rounds) => settled.extend(rounds),
                Processed::Reloaded | Processed::Followed { .. } => {
                    panic!("nothing else writes to the test database")
                }
            }
        }
    }

    /// `GET /v1/pools/{pool}`'s body, checked to be a 200.
    pub async fn pool_info(&self, pool: &str) -> Value {
        let response = self.get(&format!("/v1/pools/{pool}")).await;
        response
            .assert_status(StatusCode::OK, "get the pool")
            .clone()
    }
}

/// Builds the service over a fresh database on `backend`, runs `test` on it and removes the
/// database (`db::with_database`: even when the test panicked; SKIPPED without Postgres).
pub async fn run<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(TestApp) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    install_log_capture();
    crate::db::with_database(backend, |url| async move {
        let app = TestApp::open(&url, settings(&[]), None).await;
        let (storage, reads) = (Arc::clone(&app.state.storage), Arc::clone(&app.state.reads));
        test(app).await;
        reads.close().await;
        storage.close().await;
    })
    .await;
}

/// A round `id` in which `players` finish in the order given (ranks 1, 2, …).
pub fn round(id: &str, players: &[&str]) -> Value {
    let standings: Vec<Value> = players
        .iter()
        .enumerate()
        .map(|(i, player)| json!({"player": player, "rank": i + 1}))
        .collect();
    json!({"id": id, "standings": standings})
}

/// Round `id` of [`round`], taking place at `time` (RFC 3339).
pub fn round_at(id: &str, time: &str, players: &[&str]) -> Value {
    let mut round = round(id, players);
    round["time"] = json!(time);
    round
}

/// A JSON number as `f64`.
#[track_caller]
pub fn num(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

/// Everything a request could change, so that two snapshots are equal exactly when nothing
/// changed: every row of every table, read straight from the database (whatever tables the
/// migrations made); each pool's state in memory (parameters, rounds applied, every player's
/// whole posterior); and what the read routes answer. Taken with [`TestApp::snapshot`], on
/// SQLite only.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    /// `sqlite_master`: every table and index with its SQL.
    schema: Vec<(String, String, Option<String>)>,
    /// Each table's rows, every column as an SQL literal (`quote()`, which round-trips floats
    /// exactly), sorted.
    tables: BTreeMap<String, Vec<String>>,
    /// Each pool in memory: its parameters, rounds applied, and its players' posteriors.
    memory: BTreeMap<String, (SystemParams, u64, BTreeMap<String, SystemState>)>,
    /// What each read route answered, by URI.
    api: BTreeMap<String, (StatusCode, Value)>,
}

impl Snapshot {
    /// Checks that nothing differs from `before`, naming what does; `context` names the case.
    #[track_caller]
    pub fn assert_same_as(&self, before: &Self, context: &str) {
        assert_eq!(self.schema, before.schema, "{context}: the schema changed");
        assert_eq!(
            self.tables.keys().collect::<Vec<_>>(),
            before.tables.keys().collect::<Vec<_>>(),
            "{context}: tables were added or dropped"
        );
        for (table, rows) in &self.tables {
            let old = &before.tables[table];
            let added: Vec<&String> = rows.iter().filter(|r| !old.contains(r)).collect();
            let removed: Vec<&String> = old.iter().filter(|r| !rows.contains(r)).collect();
            assert!(
                added.is_empty() && removed.is_empty() && rows.len() == old.len(),
                "{context}: table `{table}` changed: added {added:#?}, removed {removed:#?}"
            );
        }
        assert_eq!(
            self.memory.keys().collect::<Vec<_>>(),
            before.memory.keys().collect::<Vec<_>>(),
            "{context}: pools were added to or dropped from memory"
        );
        for (pool, state) in &self.memory {
            assert!(
                state == &before.memory[pool],
                "{context}: pool `{pool}` changed in memory"
            );
        }
        assert_eq!(
            self.api.keys().collect::<Vec<_>>(),
            before.api.keys().collect::<Vec<_>>(),
            "{context}: the pools, players or rounds the API shows changed"
        );
        for (uri, answer) in &self.api {
            assert_eq!(
                answer, &before.api[uri],
                "{context}: GET {uri} answers differently"
            );
        }
    }
}

impl TestApp {
    /// Everything the service holds and shows, to compare with a later [`Snapshot`].
    pub async fn snapshot(&self) -> Snapshot {
        let (schema, tables, rounds) = self.database_rows().await;
        let memory: BTreeMap<_, _> = self
            .state
            .pools
            .all()
            .iter()
            .map(|pool| {
                let state = pool.read();
                let players: BTreeMap<String, SystemState> = state
                    .beliefs()
                    .map(|(id, player)| (id.to_owned(), player.clone()))
                    .collect();
                (
                    pool.name().to_owned(),
                    (state.system().clone(), state.applied(), players),
                )
            })
            .collect();

        let listed = self.get("/v1/pools").await;
        let mut pools: Vec<String> = listed.body["pools"]
            .as_array()
            .map(|pools| {
                pools
                    .iter()
                    .filter_map(|pool| pool["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        pools.extend(memory.keys().cloned());
        pools.sort();
        pools.dedup();
        let segment = |id: &str| utf8_percent_encode(id, NON_ALPHANUMERIC).to_string();
        let mut uris = vec!["/v1/pools".to_owned()];
        for pool in &pools {
            let base = format!("/v1/pools/{}", segment(pool));
            uris.push(base.clone());
            uris.push(format!("{base}/leaderboard?limit=1000&order=mu"));
            uris.push(format!("{base}/leaderboard?limit=1000&order=conservative"));
            uris.push(format!("{base}/leaderboard?limit=1000&established=true"));
            uris.push(format!("{base}/display"));
            uris.push(format!("{base}/players?limit=1000"));
            for player in memory.get(pool).into_iter().flat_map(|(_, _, p)| p.keys()) {
                let player = format!("{base}/players/{}", segment(player));
                uris.push(format!("{player}/history?limit=1000"));
                uris.push(player);
            }
        }
        for (pool, id) in rounds {
            uris.push(format!(
                "/v1/pools/{}/rounds/{}",
                segment(&pool),
                segment(&id)
            ));
        }
        let mut api = BTreeMap::new();
        for uri in uris {
            let response = self.get(&uri).await;
            api.insert(uri, (response.status, response.body));
        }
        Snapshot {
            schema,
            tables,
            memory,
            api,
        }
    }

    /// The schema, every table's rows and the (pool, id) of every round, through a read-only
    /// connection of its own (not the service's storage, which is what is being checked).
    async fn database_rows(&self) -> Schema {
        let options = SqliteConnectOptions::from_str(&self.state.settings.database.url)
            .expect("a snapshot is of a SQLite database")
            .read_only(true);
        let mut db = SqliteConnection::connect_with(&options)
            .await
            .expect("open the test database");
        let schema: Vec<(String, String, Option<String>)> =
            sqlx::query_as("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
                .fetch_all(&mut db)
                .await
                .expect("read the schema");
        let mut tables = BTreeMap::new();
        for (kind, table, _) in &schema {
            if kind != "table" {
                continue;
            }
            let columns: Vec<String> =
                sqlx::query_scalar("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
                    .bind(table)
                    .fetch_all(&mut db)
                    .await
                    .expect("read a table's columns");
            let row = columns
                .iter()
                .map(|column| format!("quote(\"{column}\")"))
                .collect::<Vec<_>>()
                .join(" || ', ' || ");
            let mut rows: Vec<String> =
                sqlx::query_scalar(&format!("SELECT {row} FROM \"{table}\""))
                    .fetch_all(&mut db)
                    .await
                    .expect("read a table's rows");
            rows.sort();
            tables.insert(table.clone(), rows);
        }
        let rounds: Vec<(String, String)> = sqlx::query_as("SELECT pool, id FROM rounds")
            .fetch_all(&mut db)
            .await
            .expect("read the round ids");
        db.close().await.expect("close the snapshot connection");
        (schema, tables, rounds)
    }
}

/// What [`TestApp::database_rows`] reads: the schema, each table's rows, every round's pool
/// and id.
type Schema = (
    Vec<(String, String, Option<String>)>,
    BTreeMap<String, Vec<String>>,
    Vec<(String, String)>,
);

/// Log lines captured on one thread ([`capture_log`]), in a buffer the caller reads.
#[derive(Clone, Default)]
pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("the log buffer is not poisoned")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("the log buffer is not poisoned"))
            .into_owned()
    }
}

thread_local! {
    /// Where this thread's log lines go, and up to which level, while it captures them.
    static CAPTURED: RefCell<Option<(LogBuffer, Level)>> = const { RefCell::new(None) };
}

/// Captures this thread's log lines up to `level` until the guard is dropped. The tests'
/// requests run on their own thread (tokio's current-thread runtime), so these are the
/// lines of the requests a test sends.
pub fn capture_log(level: Level) -> (LogBuffer, impl Drop) {
    install_log_capture();
    let log = LogBuffer::default();
    CAPTURED.set(Some((log.clone(), level)));
    (log, StopCapture)
}

/// Installs the one subscriber of the process, which decides per event whether its thread
/// captures ([`capture_log`]). Every app the tests build installs it first, so that no log
/// call is reached before it: tracing caches whether a call site logs when it is first
/// reached, and a call site first reached as a subscriber is installed may keep "never".
/// Subscribers set per thread (`set_default`) as tests started missed events that way, at
/// random (the key log test lost every `authenticated` line when run beside the other key
/// tests).
fn install_log_capture() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // Decided per event: a plain `filter_fn` is asked once per call site and cached.
        let capturing = dynamic_filter_fn(|metadata, _| {
            CAPTURED.with_borrow(|captured| {
                captured
                    .as_ref()
                    .is_some_and(|(_, level)| metadata.level() <= level)
            })
        });
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(|| ThreadWriter)
            .with_filter(capturing);
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .expect("no other subscriber in the API tests");
    });
}

/// Ends the capture [`capture_log`] started on this thread.
struct StopCapture;

impl Drop for StopCapture {
    fn drop(&mut self) {
        CAPTURED.set(None);
    }
}

/// Writes into the buffer of the thread that logs, if it captures.
struct ThreadWriter;

impl Write for ThreadWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        CAPTURED.with_borrow_mut(|captured| match captured {
            Some((log, _)) => log.write(bytes),
            None => Ok(bytes.len()),
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The round ids of `player`'s history in `pool`, newest first, read in pages of 7.
pub async fn history_ids(app: &TestApp, pool: &str, player: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut uri = format!("/v1/pools/{pool}/players/{player}/history?limit=7");
    loop {
        let page = app.get(&uri).await;
        let page = page.assert_status(StatusCode::OK, "history");
        ids.extend(
            page["entries"]
                .as_array()
                .expect("entries")
                .iter()
                .map(|e| e["round_id"].as_str().expect("an id").to_owned()),
        );
        match page["next_before"].as_i64() {
            Some(before) => {
                uri = format!("/v1/pools/{pool}/players/{player}/history?limit=7&before={before}");
            }
            None => return ids,
        }
    }
}

/// A request of `method` to `uri` with `key` and `payload`.
fn request(method: Method, uri: &str, key: Option<&str>, payload: Payload) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(key) = key {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let body = match payload {
        Payload::Empty => Body::empty(),
        Payload::Json(value) => {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
            Body::from(value.to_string())
        }
        Payload::Raw(content_type, bytes) => {
            if let Some(content_type) = content_type {
                builder = builder.header(header::CONTENT_TYPE, content_type);
            }
            Body::from(bytes)
        }
    };
    builder.body(body).expect("a valid request")
}
