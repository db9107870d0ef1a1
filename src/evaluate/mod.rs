//! The offline `evaluate` command: rate one history with several rating systems and compare
//! their predictions, as the Elo-MMR paper's §6 does. Each system replays the rounds (a
//! [`replay`] pass); with a tuning fraction its main parameters are first searched on the
//! opening rounds ([`search`]) and the metrics are computed on the rest only. Knows nothing of
//! the command line and never touches storage.

pub mod search;

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::engine::metrics::{MetricsSum, Opponents, ParticipationMetrics};
use crate::engine::{Population, SystemName, SystemParams};
use crate::replay::{self, input, InputFormat, Pass};

/// The metric a tuning search optimizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Highest mean pair inversion.
    PairInversion,
    /// Lowest mean rank deviation.
    RankDeviation,
    /// Lowest mean log loss.
    LogLoss,
    /// Lowest mean Brier score.
    Brier,
}

impl Objective {
    /// The objective's value among `metrics`.
    fn of(self, metrics: &ParticipationMetrics) -> f64 {
        match self {
            Self::PairInversion => metrics.pair_inversion,
            Self::RankDeviation => metrics.rank_deviation,
            Self::LogLoss => metrics.log_loss,
            Self::Brier => metrics.brier,
        }
    }

    /// Whether `a` is strictly better than `b`.
    fn better(self, a: f64, b: f64) -> bool {
        match self {
            Self::PairInversion => a > b,
            Self::RankDeviation | Self::LogLoss | Self::Brier => a < b,
        }
    }
}

/// How to tune: on which share of the rounds, for which metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Share of the rounds, from the first, the search is scored on; in (0, 1).
    pub fraction: f64,
    /// What the search optimizes.
    pub objective: Objective,
}

/// What to evaluate and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The rounds: a JSON Lines file or a directory, per `format`.
    pub input: PathBuf,
    /// How `input` is laid out.
    pub format: InputFormat,
    /// Each system to compare, with its parameters (the starting point when tuning).
    pub systems: Vec<SystemParams>,
    /// Each round is judged among the players with at least this many earlier rounds only.
    pub min_history: u64,
    /// The opponents each participation's log loss and Brier score look at.
    pub opponents: Opponents,
    /// Whether, and how, to search each system's parameters first.
    pub tuning: Option<Tuning>,
    /// Whether to draw a progress bar on stderr.
    pub progress: bool,
}

/// One system's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The system's name.
    pub system: SystemName,
    /// The parameters it was scored with (the search's choice when tuning), as the body of
    /// `PUT /v1/pools/{pool}` takes them, `system` included.
    pub params: serde_json::Value,
    /// Mean pair inversion over the judged participations (`None`: nothing was judged).
    pub pair_inversion: Option<f64>,
    /// Mean rank deviation.
    pub rank_deviation: Option<f64>,
    /// Mean log loss (nats).
    pub log_loss: Option<f64>,
    /// Mean Brier score.
    pub brier: Option<f64>,
    /// Seconds spent rating the whole history once (the scored pass), timed while its judging
    /// runs beside it.
    pub rating_seconds: f64,
    /// Participations judged.
    pub judged: u64,
    /// Why the system could not rate the history (a round it refuses, e.g. a team for a
    /// system without teams), in which case every metric is `None`.
    pub error: Option<String>,
    /// Rounds its arithmetic could not rate (a result not finite), skipped as the service
    /// fails them: neither rated nor judged.
    pub skipped: usize,
}

/// The outcome of an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// Rounds in the history.
    pub rounds: usize,
    /// Rounds the search was scored on (the metrics start after them); 0 without tuning.
    pub tuning_rounds: usize,
    /// What the search optimized, if there was one.
    pub objective: Option<Objective>,
    /// One row per system, in the order asked.
    pub systems: Vec<Row>,
}

/// Reads the history once, then evaluates each system on it. A system that cannot rate one of
/// the rounds gets a row saying why; the others go on.
pub fn run(options: &Options) -> Result<Evaluation, replay::Error> {
    let rounds = input::read(&options.input, options.format)?;
    let tuning_rounds = options.tuning.map_or(0, |t| {
        ((t.fraction * rounds.len() as f64).ceil() as usize).min(rounds.len())
    });
    let searches = options.tuning.map_or(0, |_| {
        options
            .systems
            .iter()
            .map(|s| 1 + 4 * s.name().tuned().len())
            .sum::<usize>()
    });
    let steps = (searches * tuning_rounds + options.systems.len() * rounds.len()) as u64;
    let progress = replay::progress_bar(options.progress, steps, "rounds");
    let pass = |judged_from: usize, rounds| Pass {
        rounds,
        min_history: options.min_history,
        opponents: options.opponents,
        judged_from,
        leagues: None,
    };
    let evaluate = |system: &SystemParams| -> Result<Row, replay::Error> {
        let chosen = match options.tuning {
            None => system.clone(),
            Some(tuning) => {
                let score = |candidate: &SystemParams| {
                    let population =
                        Population::new(candidate.clone()).map_err(replay::Error::Params)?;
                    let rated = pass(0, &rounds[..tuning_rounds]).run(population, &progress)?;
                    Ok(rated
                        .metrics
                        .mean()
                        .map_or(f64::NAN, |m| tuning.objective.of(&m)))
                };
                // A candidate that judged nothing (NaN) never wins; anything beats it.
                let better =
                    |a: f64, b: f64| !a.is_nan() && (b.is_nan() || tuning.objective.better(a, b));
                search::coordinate(system, score, better)?.0
            }
        };
        let population = Population::new(chosen.clone()).map_err(replay::Error::Params)?;
        let rated = pass(tuning_rounds, &rounds).run(population, &progress)?;
        Ok(Row {
            skipped: rated.failed.len(),
            ..Row::new(&chosen, rated.rating_time.as_secs_f64(), &rated.metrics)
        })
    };
    let rows = options
        .systems
        .iter()
        .map(|system| {
            evaluate(system).unwrap_or_else(|error| Row {
                error: Some(error.to_string()),
                ..Row::new(system, 0.0, &MetricsSum::default())
            })
        })
        .collect();
    progress.finish_and_clear();
    Ok(Evaluation {
        rounds: input::round_count(&rounds),
        tuning_rounds,
        objective: options.tuning.map(|t| t.objective),
        systems: rows,
    })
}

impl Row {
    fn new(system: &SystemParams, rating_seconds: f64, metrics: &MetricsSum) -> Self {
        let mean = metrics.mean();
        // `{"system": NAME, "params": {...}}` flattened into the body a pool takes.
        let mut params = serde_json::to_value(system)
            .ok()
            .and_then(|mut v| v.get_mut("params").map(serde_json::Value::take))
            .unwrap_or_default();
        if let Some(object) = params.as_object_mut() {
            object.insert("system".to_owned(), system.name().as_str().into());
        }
        Self {
            system: system.name(),
            params,
            pair_inversion: mean.map(|m| m.pair_inversion),
            rank_deviation: mean.map(|m| m.rank_deviation),
            log_loss: mean.map(|m| m.log_loss),
            brier: mean.map(|m| m.brier),
            rating_seconds,
            judged: metrics.count(),
            error: None,
            skipped: 0,
        }
    }
}

/// A mean log loss above this many nats is explained where it is printed: a system this far
/// above a coin toss's ln 2 gave probabilities near 0 or 1 that were often wrong.
const OVERCONFIDENT: f64 = 1.0;

impl fmt::Display for Evaluation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.objective {
            Some(objective) => writeln!(
                f,
                "{} rounds; parameters searched for the best {} on the first {}, metrics on the other {}",
                self.rounds,
                serde_json::to_value(objective)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
                    .replace('_', " "),
                self.tuning_rounds,
                self.rounds - self.tuning_rounds
            )?,
            None => writeln!(f, "{} rounds", self.rounds)?,
        }
        writeln!(
            f,
            "{:<12} {:>14} {:>14} {:>9} {:>7} {:>10} {:>9}",
            "system", "pair inversion", "rank deviation", "log loss", "brier", "rating s", "judged"
        )?;
        let metric = |value: Option<f64>, width: usize| {
            value.map_or_else(
                || format!("{:>width$}", "n/a"),
                |v| format!("{v:>width$.4}"),
            )
        };
        for row in &self.systems {
            writeln!(
                f,
                "{:<12} {} {} {} {} {:>10.3} {:>9}",
                row.system.as_str(),
                metric(row.pair_inversion, 14),
                metric(row.rank_deviation, 14),
                metric(row.log_loss, 9),
                metric(row.brier, 7),
                row.rating_seconds,
                row.judged
            )?;
        }
        for row in &self.systems {
            let name = row.system.as_str();
            match &row.error {
                Some(error) => writeln!(f, "{name}: cannot rate this history: {error}")?,
                None => writeln!(f, "{name}: {}", row.params)?,
            }
            if let Some(loss) = row.log_loss.filter(|&loss| loss > OVERCONFIDENT) {
                writeln!(
                    f,
                    "{name}: a log loss of {loss:.1} nats, where a coin toss scores 0.693: its \
                     probabilities were near 0 or 1 and often wrong (overconfident)"
                )?;
            }
            if row.skipped > 0 {
                writeln!(
                    f,
                    "{name}: {} rounds skipped: its arithmetic gave a rating that is not finite",
                    row.skipped
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(system: SystemName, log_loss: f64) -> Row {
        Row {
            system,
            params: serde_json::json!({}),
            pair_inversion: Some(0.6),
            rank_deviation: Some(0.25),
            log_loss: Some(log_loss),
            brier: Some(0.2),
            rating_seconds: 0.1,
            judged: 100,
            error: None,
            skipped: 0,
        }
    }

    #[test]
    fn an_overconfident_systems_log_loss_is_explained_where_it_is_printed() {
        let evaluation = Evaluation {
            rounds: 10,
            tuning_rounds: 0,
            objective: None,
            systems: vec![
                row(SystemName::EloMmr, 0.65),
                row(SystemName::Glicko2, 45.4159),
            ],
        };
        let text = evaluation.to_string();
        assert!(
            text.contains("glicko2: a log loss of 45.4 nats, where a coin toss scores 0.693"),
            "{text}"
        );
        assert!(!text.contains("elo_mmr: a log loss"), "{text}");
    }
}
