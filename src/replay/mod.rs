//! The offline `replay` command: read a whole history of rounds, apply them in file order to
//! an in-memory [`Population`], judge each round's prediction on the priors before it is
//! applied, and report a [`Summary`] and the final ratings. Reading lives in [`input`], the
//! report in [`summary`], the ratings file in [`output`]; this module only drives them. It
//! knows nothing of the command line (that is `cli`) and never touches storage.

pub mod input;
pub mod output;
pub mod summary;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::engine::metrics::{round_metrics, MetricsSum, Opponents};
use crate::engine::{self, Beliefs, Population, SystemParams, SystemState};
use crate::wire::FieldError;

pub use input::{InputFormat, SourcedRound};
pub use summary::Summary;

/// What to replay and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The rounds: a JSON Lines file or a directory, per `format`.
    pub input: PathBuf,
    /// How `input` is laid out.
    pub format: InputFormat,
    /// The pool's rating system and parameters (validated by [`run`]).
    pub params: SystemParams,
    /// Metrics count only participations whose player had at least this many earlier rounds.
    pub min_history: u64,
    /// The opponents each participation's log loss and Brier score look at.
    pub opponents: Opponents,
    /// Whether to draw a progress bar on stderr.
    pub progress: bool,
}

/// Everything that can stop a replay.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A pool parameter is out of range.
    #[error("{0}")]
    Params(engine::Error),
    /// The input could not be read at all.
    #[error("cannot read {path}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A round is not valid JSON or not a valid round.
    #[error("{location}: {error}")]
    Input {
        /// Where the round came from, e.g. `line 7` or `rounds/3.json`.
        location: String,
        /// The offending field and what is wrong with it.
        error: FieldError,
    },
    /// The ratings file could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The outcome of a replay.
#[derive(Debug)]
pub struct Replay {
    /// Counts, timing and accuracy.
    pub summary: Summary,
    /// Every player's final belief.
    pub population: Population,
}

/// Reads every round, then applies them in order. Nothing is applied unless the whole input
/// reads cleanly, so a bad line is reported before any rating work.
pub fn run(options: &Options) -> Result<Replay, Error> {
    let began = Instant::now();
    let mut population = Population::new(options.params.clone()).map_err(Error::Params)?;
    let rounds = input::read(&options.input, options.format)?;
    let progress = if options.progress {
        let bar = ProgressBar::new(rounds.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} rounds {elapsed}") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };

    let mut rating_time = Duration::ZERO;
    let mut metrics_time = Duration::ZERO;
    let mut participations = 0;
    let mut metrics = MetricsSum::default();
    for (index, sourced) in rounds.iter().enumerate() {
        let round = &sourced.round;
        let in_round = |error: engine::Error| Error::Input {
            location: sourced.location.clone(),
            error: error.into(),
        };
        {
            let started = Instant::now();
            let priors: Vec<&SystemState> = round
                .standings
                .iter()
                .map(|s| population.belief_or_newcomer(&s.player))
                .collect();
            let counted = |i: usize| priors[i].rounds() >= options.min_history;
            // Each round draws its own opponents, so that sampling errors average out.
            let opponents = options.opponents.seeded(index as u64);
            let judged = round_metrics(population.system(), round, &priors, counted, opponents)
                .map_err(in_round)?;
            participations += judged.len();
            // Added by player id, so the means do not depend on the order standings are listed.
            let mut by_player: Vec<usize> = (0..judged.len()).collect();
            by_player.sort_unstable_by_key(|&i| &round.standings[i].player);
            for judged in by_player.into_iter().filter_map(|i| judged[i].as_ref()) {
                metrics.add(judged);
            }
            metrics_time += started.elapsed();
        }
        let started = Instant::now();
        population.apply(round).map_err(in_round)?;
        rating_time += started.elapsed();
        progress.inc(1);
    }
    progress.finish_and_clear();

    Ok(Replay {
        summary: Summary::new(
            rounds.len(),
            participations,
            population.len(),
            rating_time,
            metrics_time,
            began.elapsed(),
            &metrics,
        ),
        population,
    })
}
