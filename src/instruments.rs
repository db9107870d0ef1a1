//! Prometheus metrics (docs/monitoring.md, "Metrics"): what the code records through the `metrics` facade,
//! and the text `GET /metrics` serves. Counters and histograms are recorded where things
//! happen (a request answered, rounds settled); gauges that describe the present (queue depth,
//! players, database connections) are read when scraped, so they are never stale.
//!
//! The recorder is process-wide, installed once however many services a process builds (the
//! tests build many): series of different pools never mix, since every series carries its
//! pool's name.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Requests answered, by route (its pattern, `/v1/pools/{pool}/…`), method and status.
pub const REQUESTS: &str = "mmr_http_requests_total";
/// Seconds from a request's arrival to its answer, by route and method.
pub const REQUEST_SECONDS: &str = "mmr_http_request_duration_seconds";
/// Rounds applied, by pool.
pub const ROUNDS_APPLIED: &str = "mmr_rounds_applied_total";
/// Rounds the worker could not rate, by pool.
pub const ROUNDS_FAILED: &str = "mmr_rounds_failed_total";
/// Lines another replica applied that this one rated again to follow it, by pool.
pub const LINES_FOLLOWED: &str = "mmr_lines_followed_total";
/// Times a pool's memory was loaded afresh from the database, by pool.
pub const POOL_RELOADS: &str = "mmr_pool_reloads_total";
/// Seconds a worker step spent rating its rounds, by pool.
pub const RATING_SECONDS: &str = "mmr_apply_rating_seconds";
/// Seconds a worker step spent committing its rounds, by pool.
pub const COMMIT_SECONDS: &str = "mmr_apply_commit_seconds";
/// Rounds waiting in a pool's queue, when scraped.
pub const QUEUE_DEPTH: &str = "mmr_queue_depth";
/// 1 if the database answered the scrape's read of the queues, else 0.
pub const DATABASE_UP: &str = "mmr_database_up";
/// The worker's steps that failed in a row, up to its last one, by pool, when scraped: 0 while
/// it applies, rising while the same failure repeats.
pub const WORKER_FAILING_STEPS: &str = "mmr_worker_failing_steps";
/// Rated players of a pool, when scraped.
pub const PLAYERS: &str = "mmr_players";
/// Database connections open, when scraped.
pub const DB_CONNECTIONS: &str = "mmr_db_connections";
/// Of them, those idle.
pub const DB_CONNECTIONS_IDLE: &str = "mmr_db_connections_idle";
/// Connections open for the requests' reads (`database.read_connections`).
pub const DB_READ_CONNECTIONS: &str = "mmr_db_read_connections";
/// Of them, those idle.
pub const DB_READ_CONNECTIONS_IDLE: &str = "mmr_db_read_connections_idle";

/// Client connections open, when scraped.
pub const HTTP_CONNECTIONS: &str = "mmr_http_connections";
/// Connections closed as soon as accepted: their address held all it may.
pub const HTTP_CONNECTIONS_REFUSED: &str = "mmr_http_connections_refused_total";
/// Connections closed, when all were open, to make room: they had sent no whole request head.
pub const HTTP_CONNECTIONS_EVICTED: &str = "mmr_http_connections_evicted_total";

/// Connections closed because their client took too little of an answer within the write
/// deadline.
pub const HTTP_WRITES_TIMED_OUT: &str = "mmr_http_writes_timed_out_total";

/// Requests that presented a key, by the key's name (never the key).
pub const KEY_REQUESTS: &str = "mmr_key_requests_total";

/// Histogram buckets in seconds: 1 ms to 60 s.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0,
];

/// How often the recorder's samples are folded into their histograms' buckets without a scrape.
const UPKEEP: Duration = Duration::from_secs(5);

/// The process's recorder, installed on first use; `None` if another recorder was installed
/// first (then nothing is recorded here and `/metrics` serves an empty document).
///
/// A histogram keeps every sample recorded until upkeep folds them into its buckets; a scrape
/// runs it, and so does a thread of the recorder's own every [`UPKEEP`]: without one, a service
/// nobody scrapes would keep each request's sample (a value and its `Instant`, 24 bytes)
/// forever.
pub fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)
                .ok()?;
            match builder.install_recorder() {
                Ok(handle) => {
                    // Shown at 0 from the first scrape, so that a rule on their increase has
                    // a series to read before the first connection is refused or evicted.
                    metrics::counter!(HTTP_CONNECTIONS_REFUSED).increment(0);
                    metrics::counter!(HTTP_CONNECTIONS_EVICTED).increment(0);
                    metrics::counter!(HTTP_WRITES_TIMED_OUT).increment(0);
                    let upkept = handle.clone();
                    let spawned = std::thread::Builder::new()
                        .name("metrics-upkeep".into())
                        .spawn(move || loop {
                            std::thread::sleep(UPKEEP);
                            upkept.run_upkeep();
                        });
                    if let Err(error) = spawned {
                        tracing::warn!(%error, "metrics upkeep thread not started");
                    }
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics recorder not installed");
                    None
                }
            }
        })
        .as_ref()
}

/// Records one answered request.
pub fn request(route: &str, method: &str, status: u16, took: Duration) {
    let labels = [("route", route.to_owned()), ("method", method.to_owned())];
    metrics::histogram!(REQUEST_SECONDS, &labels).record(took.as_secs_f64());
    let mut labels = labels.to_vec();
    labels.push(("status", status.to_string()));
    metrics::counter!(REQUESTS, &labels).increment(1);
}

/// Records a request that presented the key named `key`.
pub fn key_request(key: &str) {
    metrics::counter!(KEY_REQUESTS, "key" => key.to_owned()).increment(1);
}

/// Records a worker step that settled `applied` and `failed` rounds of `pool`.
pub fn settled(pool: &str, applied: u64, failed: u64, rating: Duration, commit: Duration) {
    let labels = [("pool", pool.to_owned())];
    metrics::counter!(ROUNDS_APPLIED, &labels).increment(applied);
    metrics::counter!(ROUNDS_FAILED, &labels).increment(failed);
    metrics::histogram!(RATING_SECONDS, &labels).record(rating.as_secs_f64());
    metrics::histogram!(COMMIT_SECONDS, &labels).record(commit.as_secs_f64());
}

/// Records that `lines` lines another replica applied to `pool` were rated again here.
pub fn followed(pool: &str, lines: u64) {
    metrics::counter!(LINES_FOLLOWED, "pool" => pool.to_owned()).increment(lines);
}

/// Records that `pool`'s memory was loaded afresh from the database.
pub fn reloaded(pool: &str) {
    metrics::counter!(POOL_RELOADS, "pool" => pool.to_owned()).increment(1);
}

/// Records a connection closed as soon as accepted (its address held all it may).
pub fn connection_refused() {
    metrics::counter!(HTTP_CONNECTIONS_REFUSED).increment(1);
}

/// Records a connection closed to make room (it had sent no whole request head).
pub fn connection_evicted() {
    metrics::counter!(HTTP_CONNECTIONS_EVICTED).increment(1);
}

/// Records a connection closed because its client took too little of an answer in time.
pub fn connection_write_timed_out() {
    metrics::counter!(HTTP_WRITES_TIMED_OUT).increment(1);
}

/// Sets a gauge of `pool` to `value`.
pub fn pool_gauge(name: &'static str, pool: &str, value: f64) {
    metrics::gauge!(name, "pool" => pool.to_owned()).set(value);
}

/// Sets a gauge without labels to `value`.
pub fn gauge(name: &'static str, value: f64) {
    metrics::gauge!(name).set(value);
}

/// Every series in the Prometheus text format.
#[must_use]
pub fn render() -> String {
    handle().map_or_else(String::new, |handle| {
        handle.run_upkeep();
        handle.render()
    })
}
