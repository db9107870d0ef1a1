//! The command line of the `mmr-service` binary (clap derive) and what each subcommand runs.
//! It turns arguments into library calls and prints their results; the work itself lives in
//! [`startup`](crate::startup), [`replay`] and the engine.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Overrides, Settings};
use crate::engine::{Params, Ties, Variant};
use crate::replay::{self, InputFormat};
use crate::startup::Application;

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
    /// Serve the HTTP API (the default): on an embedded SQLite file unless configured.
    Serve(ServeArgs),
    /// Apply a file of rounds in order and report accuracy, timing and (optionally) ratings.
    Replay(ReplayArgs),
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

/// Arguments of `replay`. Rating parameters left out take `Params::default()`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct ReplayArgs {
    /// The rounds: a JSON Lines file, or a directory with `--input-format elo-mmr-dir`.
    #[arg(long)]
    pub input: PathBuf,
    /// Write the final ratings here as CSV `player,mu,sigma,rounds`, sorted by player.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
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
    /// How `--input` is laid out.
    #[arg(long, value_enum, default_value_t = InputFormat::Jsonl)]
    pub input_format: InputFormat,
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
    /// The pool parameters: the defaults, overridden by whatever was given (not yet validated).
    #[must_use]
    pub fn params(&self) -> Params {
        let default = Params::default();
        Params {
            variant: match self.variant {
                Some(VariantArg::Logistic) => Variant::Logistic,
                Some(VariantArg::Gaussian) => Variant::Gaussian,
                None => default.variant,
            },
            beta: self.beta.unwrap_or(default.beta),
            gamma: self.gamma.unwrap_or(default.gamma),
            rho: self.rho.unwrap_or(default.rho),
            mu_init: self.mu_init.unwrap_or(default.mu_init),
            sigma_init: self.sigma_init.unwrap_or(default.sigma_init),
            drift_per_day: self.drift_per_day.unwrap_or(default.drift_per_day),
            history_limit: self.history_limit.unwrap_or(default.history_limit),
            ties: match self.ties {
                Some(TiesArg::Both) => Ties::Both,
                Some(TiesArg::Split) => Ties::Split,
                None => default.ties,
            },
        }
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command.unwrap_or(Command::Serve(ServeArgs::default())) {
        Command::Serve(args) => run_serve(&args),
        Command::Replay(args) => run_replay(&args),
        Command::HashKey { key } => {
            println!("{}", crate::api::auth::hash_key(&key));
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

fn run_replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let options = replay::Options {
        input: args.input.clone(),
        format: args.input_format,
        params: args.params().into(),
        min_history: args.min_history,
        progress: std::io::stderr().is_terminal(),
    };
    let outcome = replay::run(&options)?;
    if let Some(path) = &args.output {
        replay::output::write_ratings(&outcome.population, path)?;
    }
    if args.json {
        let json = serde_json::to_string(&outcome.summary).context("serializing the summary")?;
        println!("{json}");
    } else {
        print!("{}", outcome.summary);
    }
    Ok(())
}
