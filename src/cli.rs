//! The command line of the `mmr-service` binary (clap derive) and what each subcommand runs.
//! It turns arguments into library calls and prints their results; the work itself lives in
//! [`startup`](crate::startup), [`replay`], [`evaluate`] and the engine.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Overrides, Settings};
use crate::display::Display;
use crate::engine::metrics::Opponents;
use crate::engine::{SystemName, SystemParams};
use crate::evaluate::{self, Objective, Tuning};
use crate::import;
use crate::params;
use crate::replay::{self, InputFormat};
use crate::startup::Application;
use crate::wire::PoolLine;

/// Exact, parallel Elo-MMR ratings.
#[derive(Debug, Parser)]
#[command(name = "mmr-service", version, about)]
pub struct Cli {
    /// What to do; `serve` when left out.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API (what `mmr-service` alone runs; options need `serve`): on an embedded
    /// SQLite file unless configured.
    Serve(ServeArgs),
    /// Apply a file of rounds in order and report accuracy, timing and (optionally) ratings.
    Replay(ReplayArgs),
    /// Compare rating systems on one file of rounds, optionally searching their parameters on
    /// its opening rounds first.
    Evaluate(EvaluateArgs),
    /// Post a file of rounds to a pool of a running service, in order, with retries; run again
    /// after a stop, it goes on from the first round the service does not have.
    Import(ImportArgs),
    /// Print the hex SHA-256 of a key, for `[[auth.keys]] sha256`.
    HashKey {
        /// The key.
        key: String,
    },
}

/// Arguments of `serve`; each wins over the configuration file and the environment.
#[derive(Debug, Default, Args)]
pub struct ServeArgs {
    /// A TOML file layered over the built-in defaults (`config/default.toml`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Address to listen on, e.g. 127.0.0.1:8080.
    #[arg(long)]
    pub addr: Option<SocketAddr>,
    /// `postgres://…` or `sqlite://PATH`.
    #[arg(long)]
    pub database_url: Option<String>,
}

/// Arguments of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The service, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    pub url: String,
    /// The pool to post to. It must exist unless the input is an export, whose opening line
    /// creates it (with an admin key).
    #[arg(long)]
    pub pool: String,
    /// The rounds: a JSON Lines file, or a directory with `--input-format elo-mmr-dir`.
    #[arg(long)]
    pub input: PathBuf,
    /// How the input is laid out.
    #[arg(long, value_enum, default_value_t = InputFormat::Jsonl)]
    pub input_format: InputFormat,
    /// A key with the `write` role.
    #[arg(long, env = "MMR_API_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// Post every round, not only those after the last one the service has.
    #[arg(long)]
    pub from_start: bool,
    /// Write player and team ids in Unicode normalization form C (NFC), which the service
    /// requires, instead of stopping at the first id that is not (ids shown alike become one).
    #[arg(long)]
    pub nfc: bool,
    /// Tries per request before giving up (429, 503 and lost connections are retried).
    #[arg(long, default_value_t = 20)]
    pub attempts: u32,
    /// Rounds per request (`POST …/round-batches`), 1 to 1000; fewer when their bodies pass
    /// 8 MiB.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub batch_rounds: u16,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `replay`. Rating parameters left out take their system's defaults.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true, after_long_help = replay::summary::METRICS_LEGEND)]
pub struct ReplayArgs {
    /// The rounds: a JSON Lines file, or a directory with `--input-format elo-mmr-dir`.
    #[arg(long)]
    pub input: PathBuf,
    /// Write the final ratings here as CSV `player,mu,sigma,rounds`, sorted by player (with
    /// `--display`, also `conservative,display_rating,provisional,league,division,points`).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// A pool's display settings, as `PUT /v1/pools/{pool}/display` takes them (JSON): its
    /// leagues are followed round by round, as the service follows them [default: the pool
    /// line's, if the input opens with one].
    #[arg(long, value_name = "FILE")]
    pub display: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The rating system [default: the one of the pool line an export opens with, else
    /// elo_mmr]. Its parameters are the pool line's when it names the same system, else its
    /// defaults; the flags below change them one by one.
    #[arg(long, value_parser = system_name())]
    pub system: Option<SystemName>,
    /// A parameter of the system, e.g. `--param tau=0` (repeatable; wins over the flags below).
    /// A value that reads as JSON is taken as such, any other as a string.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = key_value)]
    pub params: Vec<(String, String)>,
    /// Performance model.
    #[arg(long, value_enum)]
    pub variant: Option<VariantArg>,
    /// Spread of a performance around skill (rating points).
    #[arg(long)]
    pub beta: Option<f64>,
    /// Skill drift per round played (rating points).
    #[arg(long)]
    pub gamma: Option<f64>,
    /// Pseudodiffusion transfer rate; `inf` gives Elo-MMR(∞).
    #[arg(long)]
    pub rho: Option<f64>,
    /// A new player's rating.
    #[arg(long)]
    pub mu_init: Option<f64>,
    /// A new player's uncertainty.
    #[arg(long)]
    pub sigma_init: Option<f64>,
    /// Extra drift variance per day between a player's rounds.
    #[arg(long)]
    pub drift_per_day: Option<f64>,
    /// Most logistic factors kept per player.
    #[arg(long)]
    pub history_limit: Option<usize>,
    /// How a tie counts when a performance is estimated.
    #[arg(long, value_enum)]
    pub ties: Option<TiesArg>,
    /// Average the metrics only over participations whose player had at least K earlier rounds.
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub min_history: u64,
    /// Log loss and Brier score of a participation average over at most M opponents, drawn one
    /// per stratum of the finishing order (the summary gives their standard errors), or over
    /// every opponent with `all` (exact, O(N²) per round).
    #[arg(long, value_name = "M", default_value = "all", value_parser = parse_opponents)]
    pub metric_opponents: Opponents,
    /// How `--input` is laid out.
    #[arg(long, value_enum, default_value_t = InputFormat::Jsonl)]
    pub input_format: InputFormat,
}

/// Arguments of `evaluate`.
#[derive(Debug, Args)]
#[command(after_long_help = replay::summary::METRICS_LEGEND)]
pub struct EvaluateArgs {
    /// The rounds: a JSON Lines file, or a directory with `--input-format elo-mmr-dir`.
    #[arg(long)]
    pub input: PathBuf,
    /// How `--input` is laid out.
    #[arg(long, value_enum, default_value_t = InputFormat::Jsonl)]
    pub input_format: InputFormat,
    /// The systems to compare, comma-separated, or `all`. `trueskill` is TrueSkill, whose name
    /// is Microsoft's trademark and whose method Microsoft patented: before shipping its
    /// ratings in a commercial product, read docs/trueskill.md ("Licence and trademark") or
    /// choose another system.
    #[arg(long, value_name = "LIST|all", default_value = "all", value_parser = parse_systems)]
    pub systems: SystemList,
    /// Judge each round among the players with at least K earlier rounds only.
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub min_history: u64,
    /// Search each system's main parameters on this share of the rounds (from the first) and
    /// compute the metrics on the rest, e.g. 0.1 as the paper did.
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub tune_fraction: Option<f64>,
    /// The metric the search optimizes.
    #[arg(long, value_enum, default_value_t = ObjectiveArg::PairInversion)]
    pub tune_metric: ObjectiveArg,
    /// As for `replay`: at most M opponents per participation for log loss and Brier, or `all`.
    #[arg(long, value_name = "M", default_value = "all", value_parser = parse_opponents)]
    pub metric_opponents: Opponents,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--systems`: the systems in the order given.
#[derive(Debug, Clone)]
pub struct SystemList(pub Vec<SystemName>);

/// `all`, or comma-separated system names.
fn parse_systems(value: &str) -> Result<SystemList, String> {
    if value == "all" {
        return Ok(SystemList(SystemName::ALL.to_vec()));
    }
    value
        .split(',')
        .map(|name| {
            system_named(name.trim()).ok_or_else(|| {
                let names = SystemName::ALL.map(SystemName::as_str).join(", ");
                format!(
                    "no rating system is called `{}`: expected one of {names}",
                    name.trim()
                )
            })
        })
        .collect::<Result<_, _>>()
        .map(SystemList)
}

/// `--tune-fraction`: a number strictly between 0 and 1.
fn parse_fraction(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(f) if f > 0.0 && f < 1.0 => Ok(f),
        _ => Err("expected a number strictly between 0 and 1".to_owned()),
    }
}

/// `--tune-metric`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ObjectiveArg {
    /// Highest pair inversion.
    PairInversion,
    /// Lowest rank deviation.
    RankDeviation,
    /// Lowest log loss.
    LogLoss,
    /// Lowest Brier score.
    Brier,
}

/// `--metric-opponents`: `all`, or a count of at least 2.
fn parse_opponents(value: &str) -> Result<Opponents, String> {
    if value == "all" {
        return Ok(Opponents::All);
    }
    match value.parse::<usize>() {
        Ok(count) if count >= 2 => Ok(Opponents::AtMost { count, seed: 0 }),
        _ => Err("expected `all` or a whole number of at least 2".to_owned()),
    }
}

/// `--system`: the API's names (`system` of `PUT /v1/pools/{pool}`), which `evaluate` prints;
/// `elo-mmr` and `weng-lin` are taken too.
fn system_name() -> impl TypedValueParser<Value = SystemName> {
    let names = SystemName::ALL.map(|system| {
        let name = system.as_str();
        PossibleValue::new(name).alias(name.replace('_', "-"))
    });
    // The parser lets through only the names above.
    PossibleValuesParser::new(names).map(|name| system_named(&name).unwrap_or_default())
}

/// The system called `name`, or with `-` for `_`.
fn system_named(name: &str) -> Option<SystemName> {
    let name = name.replace('-', "_");
    SystemName::ALL
        .into_iter()
        .find(|system| system.as_str() == name)
}

/// Splits `KEY=VALUE`.
fn key_value(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got `{arg}`")),
    }
}

/// `--variant`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VariantArg {
    /// Elo-MMR(ρ).
    Logistic,
    /// Elo-MMχ.
    Gaussian,
}

/// `--ties`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TiesArg {
    /// A tie is a win and a loss.
    Both,
    /// A tie is half a win and half a loss.
    Split,
}

impl ReplayArgs {
    /// The rating system and its parameters: the pool line's where it names the same system,
    /// else the system's defaults, changed by the flags, then by `--param` (not yet validated).
    /// A parameter the system does not have is an error naming it.
    pub fn system(&self, pool: Option<&PoolLine>) -> anyhow::Result<SystemParams> {
        let system = match (self.system, pool) {
            (Some(system), _) => system,
            (None, Some(pool)) => pool.system.name(),
            (None, None) => SystemName::EloMmr,
        };
        let start = match pool {
            Some(pool) if pool.system.name() == system => pool.system.clone(),
            _ => system.defaults(),
        };
        let mut set = serde_json::Map::new();
        for (key, value) in [
            ("beta", self.beta),
            ("gamma", self.gamma),
            ("rho", self.rho),
            ("mu_init", self.mu_init),
            ("sigma_init", self.sigma_init),
            ("drift_per_day", self.drift_per_day),
        ] {
            if let Some(value) = value {
                set.insert(key.to_owned(), params::number(value));
            }
        }
        if let Some(limit) = self.history_limit {
            set.insert("history_limit".to_owned(), limit.into());
        }
        for (key, value) in [
            ("variant", self.variant.and_then(|v| v.to_possible_value())),
            ("ties", self.ties.and_then(|t| t.to_possible_value())),
        ] {
            if let Some(value) = value {
                set.insert(key.to_owned(), value.get_name().into());
            }
        }
        for (key, value) in &self.params {
            let value = serde_json::from_str(value).unwrap_or_else(|_| value.as_str().into());
            set.insert(key.clone(), value);
        }
        params::merged(&start, &set)
            .with_context(|| format!("invalid parameters for --system {}", system.as_str()))
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command.unwrap_or(Command::Serve(ServeArgs::default())) {
        Command::Serve(args) => run_serve(&args),
        Command::Replay(args) => run_replay(&args),
        Command::Evaluate(args) => run_evaluate(&args),
        Command::Import(args) => run_import(&args),
        Command::HashKey { key } => {
            println!("{}", crate::config::hash_key(&key));
            Ok(())
        }
    }
}

fn run_serve(args: &ServeArgs) -> anyhow::Result<()> {
    crate::telemetry::init();
    let settings = Settings::load(
        args.config.as_deref(),
        std::env::vars(),
        &Overrides {
            addr: args.addr,
            database_url: args.database_url.clone(),
        },
    )?;
    tracing::info!(?settings, "configuration loaded");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        Application::build(settings)
            .await?
            .run_until_stopped()
            .await
    })
}

/// The display settings in `path`, validated.
fn read_display(path: &Path) -> anyhow::Result<Display> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let display: Display = serde_json::from_str(&text)
        .with_context(|| format!("{}: not display settings", path.display()))?;
    display
        .validate()
        .with_context(|| format!("{}: invalid display settings", path.display()))?;
    Ok(display)
}

fn run_replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let pool = replay::input::pool_line(&args.input, args.input_format)?;
    let display = match &args.display {
        Some(path) => Some(read_display(path)?),
        None => pool.as_ref().map(|pool| pool.display.clone()),
    };
    let options = replay::Options {
        input: args.input.clone(),
        format: args.input_format,
        params: args.system(pool.as_ref())?,
        min_history: args.min_history,
        opponents: args.metric_opponents,
        progress: std::io::stderr().is_terminal(),
        display,
    };
    let outcome = replay::run(&options)?;
    if let Some(first) = outcome.failed.first() {
        eprintln!(
            "warning: {} rounds could not be rated and were skipped, as the service marks them \
             failed; the first: {first}",
            outcome.failed.len()
        );
    }
    if let Some(path) = &args.output {
        let shown = options.display.as_ref().map(|d| (d, &outcome.leagues));
        replay::output::write_ratings(&outcome.population, shown, path)?;
    }
    if args.json {
        let json = serde_json::to_string(&outcome.summary).context("serializing the summary")?;
        println!("{json}");
    } else {
        print!("{}", outcome.summary);
        print!("\n{}", replay::summary::METRICS_LEGEND);
        println!("  Judged here: K = {}.", args.min_history);
    }
    Ok(())
}

fn run_import(args: &ImportArgs) -> anyhow::Result<()> {
    let options = import::Options {
        url: args.url.clone(),
        pool: args.pool.clone(),
        input: args.input.clone(),
        format: args.input_format,
        key: args.key.clone(),
        from_start: args.from_start,
        nfc: args.nfc,
        attempts: args.attempts,
        batch_rounds: usize::from(args.batch_rounds),
        progress: std::io::stderr().is_terminal(),
    };
    let summary = import::run(&options)?;
    if args.json {
        let json = serde_json::to_string(&summary).context("serializing the summary")?;
        println!("{json}");
    } else {
        println!(
            "{} rounds: {} accepted, {} already there, {} skipped as imported before ({} retries)",
            summary.rounds, summary.accepted, summary.known, summary.skipped, summary.retries
        );
    }
    Ok(())
}

fn run_evaluate(args: &EvaluateArgs) -> anyhow::Result<()> {
    let objective = match args.tune_metric {
        ObjectiveArg::PairInversion => Objective::PairInversion,
        ObjectiveArg::RankDeviation => Objective::RankDeviation,
        ObjectiveArg::LogLoss => Objective::LogLoss,
        ObjectiveArg::Brier => Objective::Brier,
    };
    let options = evaluate::Options {
        input: args.input.clone(),
        format: args.input_format,
        systems: args.systems.0.iter().map(|s| s.defaults()).collect(),
        min_history: args.min_history,
        opponents: args.metric_opponents,
        tuning: args.tune_fraction.map(|fraction| Tuning {
            fraction,
            objective,
        }),
        progress: std::io::stderr().is_terminal(),
    };
    let evaluation = evaluate::run(&options)?;
    if args.json {
        let json = serde_json::to_string(&evaluation).context("serializing the evaluation")?;
        println!("{json}");
    } else {
        print!("{evaluation}");
        print!("\n{}", replay::summary::METRICS_LEGEND);
        println!("  Judged here: K = {}.", args.min_history);
    }
    Ok(())
}
