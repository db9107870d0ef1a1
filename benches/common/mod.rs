//! What the service benchmarks share: starting the service in process, and a fresh database
//! of their own on the local Postgres server.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mmr_service::api::auth::hash_key;
use mmr_service::config::{Overrides, Settings};
use mmr_service::startup::Application;
use sqlx::Connection;

/// The Postgres server used when `MMR_TEST_DATABASE_URL` is not set, as in the tests.
const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Creates a database named `{prefix}_{nanoseconds}` and returns its URL, or why it could
/// not.
pub async fn fresh_postgres(prefix: &str) -> Result<String, String> {
    let admin_url =
        std::env::var("MMR_TEST_DATABASE_URL").unwrap_or_else(|_| POSTGRES_URL.to_owned());
    let mut admin = tokio::time::timeout(
        Duration::from_secs(5),
        sqlx::PgConnection::connect(&admin_url),
    )
    .await
    .map_err(|_| "connection timed out".to_owned())?
    .map_err(|e| e.to_string())?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{prefix}_{nanos}");
    sqlx::query(&format!("CREATE DATABASE \"{name}\""))
        .execute(&mut admin)
        .await
        .map_err(|e| e.to_string())?;
    let (base, _) = admin_url.rsplit_once('/').ok_or("a URL with a database")?;
    Ok(format!("{base}/{name}"))
}

/// Starts the service in `runtime` on `database_url`, with `key` as an admin key and neither
/// a queue bound nor rate limits that a benchmark could reach (they measure throughput, not
/// the limits), and returns its base URL.
pub fn start(runtime: &tokio::runtime::Runtime, database_url: &str, key: &str) -> String {
    let mut settings = Settings::load(
        None,
        Vec::new(),
        &Overrides {
            addr: Some("127.0.0.1:0".parse().expect("addr")),
            database_url: Some(database_url.to_owned()),
        },
    )
    .expect("settings");
    settings.auth.keys = vec![serde_json::from_value(serde_json::json!({
        "name": "bench", "role": "admin", "sha256": hash_key(key)
    }))
    .expect("a key")];
    settings.queue.max_queued_per_pool = 1_000_000;
    settings.rate_limit.writes_per_second = 0;
    settings.rate_limit.reads_per_second = 0;
    runtime.block_on(async {
        let app = Application::build(settings)
            .await
            .expect("the service starts");
        let base = format!("http://{}", app.local_addr().expect("addr"));
        tokio::spawn(app.run_until(std::future::pending()));
        base
    })
}
