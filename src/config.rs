//! The service's settings: `config/default.toml` compiled in as the base layer, then an
//! optional file, then `MMR__SECTION__KEY` environment variables (and `DATABASE_URL` below
//! them), then command-line flags. Typed and validated once, at startup; key hashes are
//! redacted in `Debug`. Nothing here opens a socket or a database.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::engine::EloMmrParams;
use crate::params::ParamsOverrides;
use crate::scope::Scope;

/// The compiled-in base layer.
const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// Prefix of the environment variables that override settings (`MMR__SERVER__ADDR`).
const ENV_PREFIX: &str = "MMR";

/// Separator between the prefix, the section and the key in an environment variable's name.
const ENV_SEPARATOR: &str = "__";

/// Every setting of the service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The HTTP server.
    pub server: ServerSettings,
    /// The database.
    pub database: DatabaseSettings,
    /// The round queue and its workers.
    pub queue: QueueSettings,
    /// Processes sharing one Postgres database.
    pub replicas: ReplicaSettings,
    /// Who may do what.
    pub auth: AuthSettings,
    /// How many requests each client may make.
    pub rate_limit: RateLimitSettings,
    /// Engine parameters of a pool created without them.
    pub engine: EloMmrParams,
    /// Pools created at startup when missing, by name.
    #[serde(default)]
    pub pools: BTreeMap<String, ParamsOverrides>,
}

/// `[server]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// Where to listen; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Largest request body accepted, in bytes.
    pub body_limit_bytes: usize,
    /// Request bodies read and parsed at once may declare at most this many bytes together
    /// (a body sent without a length counts as `body_limit_bytes`); beyond, 503, unparsed.
    pub body_bytes_in_flight: usize,
    /// Longest a request may take before it is answered 503.
    pub request_timeout_secs: u64,
    /// Origins allowed by CORS; empty turns CORS off.
    pub cors_allowed_origins: Vec<String>,
    /// How many of the largest compute-heavy requests (predictions, match quality of 1000
    /// entrants) may run at once; smaller ones count in proportion to their entrants.
    pub max_concurrent_computations: usize,
    /// Threads of the pool those requests run on; 0 takes one per core.
    pub compute_threads: usize,
    /// How many past leaderboards (as-of reads, seasons' standings) may be built at once.
    pub max_concurrent_past_boards: usize,
    /// How many players the past leaderboards kept after their build may hold together.
    pub past_boards_kept_players: usize,
    /// How many entrants the orders of large rounds' results kept after their build may hold
    /// together.
    pub round_orders_kept_entrants: usize,
    /// What one client (a key, or an anonymous address) may hold at once of the computations'
    /// budget, of the past leaderboards being built and of the reads of the database, in
    /// percent (rounded up to whole largest computations, boards and reads, at least one of
    /// each); 100 lets one client take all.
    pub client_share_percent: usize,
    /// Connections served at once (`crate::serve::Connections`): beyond, a new one waits for
    /// room.
    pub max_connections: usize,
    /// Of them, those one client address (an IPv6 one by its /64) may hold: beyond, a new one
    /// is closed as soon as it is accepted.
    pub max_connections_per_address: usize,
}

impl ServerSettings {
    /// What one client may hold of `whole` largest computations or boards (see
    /// `client_share_percent`).
    #[must_use]
    pub fn client_share(&self, whole: usize) -> usize {
        whole
            .saturating_mul(self.client_share_percent)
            .div_ceil(100)
            .max(1)
    }
}

/// `[database]`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSettings {
    /// `postgres://…` or `sqlite://PATH`.
    pub url: String,
    /// Connections the requests' reads of the database take (histories, rounds, seasons,
    /// as-of boards, exports, change feeds), apart from those of the worker and the writes.
    pub read_connections: u32,
}

impl fmt::Debug for DatabaseSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may hold a password: show only its scheme.
        let scheme = self.url.split_once(':').map_or("?", |(scheme, _)| scheme);
        f.debug_struct("DatabaseSettings")
            .field("url", &format_args!("{scheme}://…"))
            .field("read_connections", &self.read_connections)
            .finish()
    }
}

/// `[queue]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSettings {
    /// Most rounds waiting in one pool's queue.
    pub max_queued_per_pool: u64,
    /// How often an idle worker looks for rounds another process queued, in milliseconds.
    pub poll_interval_ms: u64,
    /// How long a worker waits after a database error before it tries again, in milliseconds.
    pub retry_delay_ms: u64,
}

/// `[replicas]` (Postgres only).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaSettings {
    /// This process's name among the replicas; empty: a random one at each start.
    pub id: String,
    /// How often a replica says it is alive and takes or gives back pools, in milliseconds.
    pub heartbeat_ms: u64,
    /// How long a replica may go unheard before its pools go to the others, in milliseconds.
    pub lease_timeout_ms: u64,
}

/// `[auth]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// Whether reads need a key too.
    pub read_key_required: bool,
    /// The accepted keys, beside those kept in the database (`/v1/keys`).
    pub keys: Vec<KeySettings>,
    /// Whether the first start with no key configured and none in the database creates an
    /// admin key and prints it once.
    pub bootstrap: bool,
}

/// `[rate_limit]`: budgets per client, each a sustained rate and a burst; a rate of 0 is no
/// limit.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSettings {
    /// Requests per second each key may make to routes that need a write or admin key.
    pub writes_per_second: u32,
    /// Requests a key that has been idle may make at once before the rate applies.
    pub writes_burst: u32,
    /// Reads per second per key for a read given one, else per client address.
    pub reads_per_second: u32,
    /// Reads a client that has been idle may make at once before the rate applies.
    pub reads_burst: u32,
}

/// What a key may do; each role may do everything the ones before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Read ratings and predictions (needed only when `read_key_required`).
    Read,
    /// Post rounds.
    Write,
    /// Create pools and change their parameters.
    Admin,
}

impl Role {
    /// The role as configured, stored and shown.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Admin => "admin",
        }
    }

    /// The role called `name`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Read, Self::Write, Self::Admin]
            .into_iter()
            .find(|role| role.as_str() == name)
    }
}

/// One `[[auth.keys]]` entry.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySettings {
    /// A name for logs; never the key.
    pub name: String,
    /// What the key may do.
    pub role: Role,
    /// Hex SHA-256 of the key.
    pub sha256: String,
    /// The pools it reaches: names, or starts of names followed by `*`; every pool when left
    /// out.
    #[serde(default)]
    pub pools: Scope,
}

impl fmt::Debug for KeySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySettings")
            .field("name", &self.name)
            .field("role", &self.role)
            .field("sha256", &"<redacted>")
            .field("pools", &self.pools)
            .finish()
    }
}

/// Settings given on the command line; they win over every other layer.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--addr`.
    pub addr: Option<SocketAddr>,
    /// `--database-url`.
    pub database_url: Option<String>,
}

impl Settings {
    /// Reads every layer: the compiled-in defaults, `file` when given, the environment
    /// (`env` lists its variables, so tests need not touch the process's own), then `flags`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        flags: &Overrides,
    ) -> anyhow::Result<Self> {
        let env: Vec<(String, String)> = env.into_iter().collect();
        let mut builder = config::Config::builder().add_source(config::File::from_str(
            DEFAULT_TOML,
            config::FileFormat::Toml,
        ));
        if let Some(path) = file {
            builder = builder.add_source(
                config::File::from(path)
                    .format(config::FileFormat::Toml)
                    .required(true),
            );
        }
        // The conventional variable, below our own: set only where `MMR__DATABASE__URL` is not.
        let ours = format!("{ENV_PREFIX}{ENV_SEPARATOR}DATABASE{ENV_SEPARATOR}URL");
        let database_url = env
            .iter()
            .find(|(name, url)| name == "DATABASE_URL" && !url.is_empty())
            .filter(|_| !env.iter().any(|(name, _)| *name == ours));
        if let Some((_, url)) = database_url {
            builder = builder.set_override("database.url", url.as_str())?;
        }
        let prefixed: config::Map<String, String> = env
            .into_iter()
            .filter(|(name, _)| name.starts_with(&format!("{ENV_PREFIX}{ENV_SEPARATOR}")))
            .collect();
        builder = builder.add_source(
            config::Environment::with_prefix(ENV_PREFIX)
                .prefix_separator(ENV_SEPARATOR)
                .separator(ENV_SEPARATOR)
                .try_parsing(true)
                // The one list a variable can set: origins, comma-separated.
                .list_separator(",")
                .with_list_parse_key("server.cors_allowed_origins")
                .source(Some(prefixed)),
        );
        if let Some(addr) = flags.addr {
            builder = builder.set_override("server.addr", addr.to_string())?;
        }
        if let Some(url) = &flags.database_url {
            builder = builder.set_override("database.url", url.as_str())?;
        }
        let settings: Self = builder
            .build()
            .context("reading the configuration")?
            .try_deserialize()
            .context("reading the configuration")?;
        settings.validate()?;
        Ok(settings)
    }

    /// Checks what the types alone do not.
    fn validate(&self) -> anyhow::Result<()> {
        self.engine
            .validate()
            .context("invalid [engine] parameters")?;
        for (name, overrides) in &self.pools {
            anyhow::ensure!(
                crate::names::is_pool_name(name),
                "invalid pool name [pools.{name}]: expected [a-z0-9_-]{{1,64}}"
            );
            overrides
                .apply(&self.engine)
                .with_context(|| format!("invalid parameters in [pools.{name}]"))?;
        }
        let mut key_names = std::collections::HashSet::new();
        for key in &self.auth.keys {
            anyhow::ensure!(
                crate::names::is_pool_name(&key.name),
                "auth key `{}`: a key's name is 1 to 64 of a-z0-9_-",
                key.name
            );
            anyhow::ensure!(
                key_names.insert(&key.name),
                "auth key `{}` is configured twice",
                key.name
            );
            anyhow::ensure!(
                key.sha256.len() == 64 && key.sha256.bytes().all(|b| b.is_ascii_hexdigit()),
                "auth key `{}`: sha256 must be 64 hex digits (see `mmr-service hash-key`)",
                key.name
            );
        }
        for origin in &self.server.cors_allowed_origins {
            anyhow::ensure!(
                origin == "*" && self.server.cors_allowed_origins.len() == 1 || is_origin(origin),
                "server.cors_allowed_origins: `{origin}` is not an origin: scheme://host[:port] \
                 with no path (not even a trailing /), or \"*\" alone for any origin"
            );
        }
        let server = &self.server;
        for (name, positive) in [
            ("server.body_limit_bytes", server.body_limit_bytes > 0),
            (
                "server.body_bytes_in_flight",
                server.body_bytes_in_flight > 0,
            ),
            (
                "server.request_timeout_secs",
                server.request_timeout_secs > 0,
            ),
            (
                "server.max_concurrent_computations",
                server.max_concurrent_computations > 0,
            ),
            (
                "server.max_concurrent_past_boards",
                server.max_concurrent_past_boards > 0,
            ),
            ("server.max_connections", server.max_connections > 0),
            (
                "server.max_connections_per_address",
                server.max_connections_per_address > 0,
            ),
            (
                "database.read_connections",
                self.database.read_connections > 0,
            ),
        ] {
            anyhow::ensure!(positive, "{name} must be > 0");
        }
        anyhow::ensure!(
            (1..=100).contains(&self.server.client_share_percent),
            "server.client_share_percent must be between 1 and 100"
        );
        let limits = &self.rate_limit;
        for (name, rate, burst) in [
            ("writes", limits.writes_per_second, limits.writes_burst),
            ("reads", limits.reads_per_second, limits.reads_burst),
        ] {
            anyhow::ensure!(
                rate == 0 || burst > 0,
                "rate_limit.{name}_burst must be > 0 when rate_limit.{name}_per_second is set"
            );
        }
        for (name, positive) in [
            (
                "queue.max_queued_per_pool",
                self.queue.max_queued_per_pool > 0,
            ),
            ("queue.poll_interval_ms", self.queue.poll_interval_ms > 0),
            ("queue.retry_delay_ms", self.queue.retry_delay_ms > 0),
        ] {
            anyhow::ensure!(positive, "{name} must be > 0");
        }
        anyhow::ensure!(
            self.replicas.heartbeat_ms > 0
                && self.replicas.lease_timeout_ms > self.replicas.heartbeat_ms,
            "replicas.lease_timeout_ms must exceed replicas.heartbeat_ms, which must be > 0"
        );
        Ok(())
    }
}

/// Whether `origin` is what a browser sends as `Origin`: `http(s)://host[:port]`, no path.
fn is_origin(origin: &str) -> bool {
    let host = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    host.is_some_and(|host| {
        !host.is_empty()
            && !host.contains(['/', '?', '#', '@'])
            && axum::http::HeaderValue::from_str(origin).is_ok()
    })
}

/// The hex SHA-256 of `key`, as `[[auth.keys]] sha256` holds it.
#[must_use]
pub fn hash_key(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_compiled_in_defaults_load_and_select_sqlite() {
        let settings = Settings::load(None, env(&[]), &Overrides::default()).expect("defaults");
        assert_eq!(settings.server.addr.to_string(), "127.0.0.1:8080");
        assert_eq!(settings.database.url, "sqlite://data/mmr.sqlite3");
        assert_eq!(settings.engine, EloMmrParams::default());
        assert!(settings.auth.keys.is_empty() && !settings.auth.read_key_required);
    }

    #[test]
    fn a_file_then_the_environment_then_flags_override_in_that_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("mmr.toml");
        std::fs::write(
            &file,
            "[server]\naddr = \"127.0.0.1:9000\"\n[engine]\nbeta = 150.0\n\
             [pools.ranked]\ngamma = 20.0\n[[auth.keys]]\nname = \"judge\"\nrole = \"write\"\n\
             sha256 = \"00000000000000000000000000000000000000000000000000000000000000ff\"\n",
        )
        .expect("write config");
        let settings = Settings::load(
            Some(&file),
            env(&[
                ("MMR__ENGINE__GAMMA", "30"),
                ("MMR__AUTH__READ_KEY_REQUIRED", "true"),
                ("DATABASE_URL", "sqlite://from-env.sqlite3"),
                ("UNRELATED", "x"),
            ]),
            &Overrides {
                addr: Some("127.0.0.1:9100".parse().expect("addr")),
                database_url: None,
            },
        )
        .expect("layers");
        assert_eq!(settings.server.addr.port(), 9100, "flags win over the file");
        assert_eq!(settings.engine.beta, 150.0, "the file wins over defaults");
        assert_eq!(
            settings.engine.gamma, 30.0,
            "the environment wins over defaults"
        );
        assert!(settings.auth.read_key_required);
        assert_eq!(settings.database.url, "sqlite://from-env.sqlite3");
        assert_eq!(settings.pools["ranked"].set["gamma"].as_f64(), Some(20.0));
        assert_eq!(settings.auth.keys[0].role, Role::Write);
        assert!(!format!("{:?}", settings.auth.keys[0]).contains("ff"));
    }

    #[test]
    fn a_clients_share_is_rounded_up_to_whole_ones_and_never_none() {
        let mut server = Settings::load(None, env(&[]), &Overrides::default())
            .expect("defaults")
            .server;
        for (percent, whole, share) in [(50, 4, 2), (50, 2, 1), (50, 1, 1), (1, 4, 1), (100, 4, 4)]
        {
            server.client_share_percent = percent;
            assert_eq!(server.client_share(whole), share, "{percent}% of {whole}");
        }
    }

    #[test]
    fn database_url_is_read_below_our_own_variable_and_origins_from_a_list() {
        let load = |pairs: &[(&str, &str)]| {
            Settings::load(None, env(pairs), &Overrides::default()).expect("settings")
        };
        let ours = ("MMR__DATABASE__URL", "sqlite://ours.sqlite3");
        for pairs in [
            &[("DATABASE_URL", "sqlite://theirs.sqlite3"), ours][..],
            &[ours, ("DATABASE_URL", "sqlite://theirs.sqlite3")],
            &[("DATABASE_URL", ""), ours],
        ] {
            assert_eq!(
                load(pairs).database.url,
                "sqlite://ours.sqlite3",
                "{pairs:?}"
            );
        }
        let default = load(&[]).database.url;
        assert_eq!(load(&[("DATABASE_URL", "")]).database.url, default);
        let origins = load(&[(
            "MMR__SERVER__CORS_ALLOWED_ORIGINS",
            "https://a.example,http://b.example:8080",
        )]);
        assert_eq!(
            origins.server.cors_allowed_origins,
            ["https://a.example", "http://b.example:8080"]
        );
        let any = load(&[("MMR__SERVER__CORS_ALLOWED_ORIGINS", "*")]);
        assert_eq!(any.server.cors_allowed_origins, ["*"]);
    }

    #[test]
    fn bad_settings_are_refused_with_what_is_wrong() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases = [
            ("[engine]\nbeta = -1.0\n", "[engine]"),
            ("[pools.Bad]\n", "pool name"),
            ("[pools.ok]\nsigma_init = 0.0\n", "[pools.ok]"),
            (
                "[[auth.keys]]\nname = \"k\"\nrole = \"write\"\nsha256 = \"xyz\"\n",
                "sha256",
            ),
            ("[server]\ncolour = 1\n", "configuration"),
            (
                "[rate_limit]\nwrites_per_second = 5\nwrites_burst = 0\n",
                "rate_limit.writes_burst",
            ),
            (
                "[server]\nclient_share_percent = 0\n",
                "server.client_share_percent",
            ),
            (
                "[server]\nclient_share_percent = 101\n",
                "server.client_share_percent",
            ),
            ("[server]\nmax_connections = 0\n", "server.max_connections"),
            (
                "[server]\nmax_connections_per_address = 0\n",
                "server.max_connections_per_address",
            ),
            (
                "[database]\nread_connections = 0\n",
                "database.read_connections",
            ),
            ("[queue]\npoll_interval_ms = 0\n", "queue.poll_interval_ms"),
            ("[queue]\nretry_delay_ms = 0\n", "queue.retry_delay_ms"),
            (
                "[[auth.keys]]\nname = \"Bad Name!\"\nrole = \"write\"\nsha256 = \"00000000000000000000000000000000000000000000000000000000000000ff\"\n",
                "a key's name",
            ),
            (
                "[[auth.keys]]\nname = \"k\"\nrole = \"write\"\nsha256 = \"00000000000000000000000000000000000000000000000000000000000000ff\"\n\
                 [[auth.keys]]\nname = \"k\"\nrole = \"read\"\nsha256 = \"00000000000000000000000000000000000000000000000000000000000000fe\"\n",
                "configured twice",
            ),
            (
                "[server]\ncors_allowed_origins = [\"*\", \"http://a.example\"]\n",
                "server.cors_allowed_origins",
            ),
            (
                "[server]\ncors_allowed_origins = [\"http://a.example/\"]\n",
                "server.cors_allowed_origins",
            ),
            (
                "[server]\ncors_allowed_origins = [\"a.example\"]\n",
                "server.cors_allowed_origins",
            ),
        ];
        for (i, (text, expected)) in cases.into_iter().enumerate() {
            let file = dir.path().join(format!("{i}.toml"));
            std::fs::write(&file, text).expect("write config");
            let error =
                Settings::load(Some(&file), env(&[]), &Overrides::default()).expect_err(text);
            assert!(format!("{error:#}").contains(expected), "{text}: {error:#}");
        }
    }
}
