//! The offline `replay` command: read a whole history of rounds, apply them in file order to
//! an in-memory [`Population`], judge each round's prediction on the priors before it is
//! applied, and report a [`Summary`] and the final ratings. Reading lives in [`input`], the
//! report in [`summary`], the ratings file in [`output`]; this module only drives them. It
//! knows nothing of the command line (that is `cli`) and never touches storage.

pub mod input;
pub mod output;
pub mod summary;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::display::leagues::Entrant;
use crate::display::{Display, LeagueTable, Leagues};
use crate::engine::metrics::{Judging, MetricsSum, Opponents, ParticipationMetrics};
use crate::engine::{self, Beliefs, Population, SystemParams, SystemState};
use crate::wire::FieldError;

pub use input::{InputFormat, Line, SourcedRound};
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
    /// Each round is judged among the players with at least this many earlier rounds only
    /// (the paper's protocol).
    pub min_history: u64,
    /// The opponents each participation's log loss and Brier score look at.
    pub opponents: Opponents,
    /// Whether to draw a progress bar on stderr.
    pub progress: bool,
    /// The pool's display settings (validated by the caller): their leagues are followed
    /// round by round, as the service follows them.
    pub display: Option<Display>,
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
    /// Every player's final league, under the display settings' leagues.
    pub leagues: LeagueTable,
    /// The rounds skipped as the service fails them ([`Rated::failed`]).
    pub failed: Vec<String>,
}

/// Reads every round, then applies them in order. Nothing is applied unless the whole input
/// reads cleanly, so a bad line is reported before any rating work.
pub fn run(options: &Options) -> Result<Replay, Error> {
    let began = Instant::now();
    let population = Population::new(options.params.clone()).map_err(Error::Params)?;
    let rounds = input::read(&options.input, options.format)?;
    let progress = progress_bar(options.progress, rounds.len() as u64, "rounds");
    let pass = Pass {
        rounds: &rounds,
        min_history: options.min_history,
        opponents: options.opponents,
        judged_from: 0,
        leagues: options.display.as_ref().and_then(|d| d.leagues.as_ref()),
    };
    let rated = pass.run(population, &progress)?;
    progress.finish_and_clear();
    Ok(Replay {
        summary: Summary::new(
            input::round_count(&rounds),
            rated.participations,
            rated.population.len(),
            rated.rating_time,
            rated.metrics_time,
            began.elapsed(),
            &rated.metrics,
        ),
        population: rated.population,
        leagues: rated.leagues,
        failed: rated.failed,
    })
}

/// A bar of `len` steps counting `unit` on stderr, or a hidden one.
pub(crate) fn progress_bar(shown: bool, len: u64, unit: &str) -> ProgressBar {
    if !shown {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let template = format!("{{bar:40}} {{pos}}/{{len}} {unit} {{elapsed}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// Adds a round's judged participations to `metrics` by player id, so that the means do not
/// depend on the order standings are listed.
fn add_by_player(
    metrics: &mut MetricsSum,
    round: &engine::Round,
    judged: &[Option<ParticipationMetrics>],
) {
    let mut by_player: Vec<usize> = (0..judged.len()).filter(|&i| judged[i].is_some()).collect();
    by_player.sort_unstable_by_key(|&i| &round.standings[i].player);
    for judged in by_player.into_iter().filter_map(|i| judged[i].as_ref()) {
        metrics.add(judged);
    }
}

/// One pass over rounds already read: each is judged on the priors before it (from round
/// `judged_from` on), then applied.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pass<'a> {
    /// The rounds, in the order to apply them.
    pub rounds: &'a [SourcedRound],
    /// Metrics judge only players with at least this many earlier rounds.
    pub min_history: u64,
    /// The opponents each participation's log loss and Brier score look at.
    pub opponents: Opponents,
    /// Rounds before this index are applied without being judged.
    pub judged_from: usize,
    /// Leagues to follow, if any.
    pub leagues: Option<&'a Leagues>,
}

/// What a [`Pass`] leaves.
#[derive(Debug)]
pub(crate) struct Rated {
    /// Every player's final belief.
    pub population: Population,
    /// Player-round participations applied.
    pub participations: usize,
    /// Time spent rating.
    pub rating_time: Duration,
    /// Time spent judging.
    pub metrics_time: Duration,
    /// The judged participations' metrics.
    pub metrics: MetricsSum,
    /// Every player's league after the last round.
    pub leagues: LeagueTable,
    /// The rounds the system's arithmetic could not rate (a result not finite), each as
    /// `location: reason`: skipped, as the service marks such a round failed and goes on.
    pub failed: Vec<String>,
}

impl Pass<'_> {
    /// Applies every round to `population`, stepping `progress` once a round. The rounds go
    /// through on one of rayon's threads: each round's parallel steps then start from inside
    /// the pool, instead of the round being handed to the pool and waited for, round after
    /// round.
    pub(crate) fn run(
        self,
        population: Population,
        progress: &ProgressBar,
    ) -> Result<Rated, Error> {
        rayon::scope(|_| self.rate_all(population, progress))
    }

    fn rate_all(self, mut population: Population, progress: &ProgressBar) -> Result<Rated, Error> {
        let mut rating_time = Duration::ZERO;
        let mut metrics_time = Duration::ZERO;
        let mut participations = 0;
        let mut metrics = MetricsSum::default();
        let mut leagues = LeagueTable::new(self.leagues);
        let mut failed = Vec::new();
        // Rounds each player had played when the current season started: placement in a
        // league counts the rounds since.
        let mut season_bases: HashMap<String, u64> = HashMap::new();
        for (index, sourced) in self.rounds.iter().enumerate() {
            let round = match &sourced.line {
                Line::Round(round) => round,
                Line::Season(reset) => {
                    population.start_season(*reset);
                    if self.leagues.is_some() {
                        leagues = leagues.new_season();
                        season_bases = population
                            .players()
                            .map(|(id, state)| (id.to_owned(), state.rounds()))
                            .collect();
                    }
                    progress.inc(1);
                    continue;
                }
            };
            let in_round = |error: engine::Error| Error::Input {
                location: sourced.location.clone(),
                error: error.into(),
            };
            participations += round.standings.len();
            let started = Instant::now();
            let judging = if index >= self.judged_from {
                let priors: Vec<&SystemState> = round
                    .standings
                    .iter()
                    .map(|s| population.belief_or_newcomer(&s.player))
                    .collect();
                let counted = |i: usize| priors[i].rounds() >= self.min_history;
                Some(Judging::of(population.system(), round, &priors, counted).map_err(in_round)?)
            } else {
                None
            };
            metrics_time += started.elapsed();
            // The judging needs nothing of the population any more, so it runs while the round
            // is applied and fills the cores the rating leaves idle.
            let (judged, (changes, rated_in)) = rayon::join(
                || {
                    let started = Instant::now();
                    // Each round draws its own opponents, so that sampling errors average out.
                    let judged = judging.map(|j| j.score(self.opponents.seeded(index as u64)));
                    (judged, started.elapsed())
                },
                || {
                    let started = Instant::now();
                    (population.apply(round), started.elapsed())
                },
            );
            rating_time += rated_in;
            let changes = match changes {
                Ok(changes) => changes,
                // Neither rated nor judged: the service fails the round and goes on.
                Err(error @ engine::Error::NotFinite { .. }) => {
                    failed.push(format!("{}: {error}", sourced.location));
                    progress.inc(1);
                    continue;
                }
                Err(error) => return Err(in_round(error)),
            };
            if let (Some(judged), judged_in) = judged {
                let started = Instant::now();
                add_by_player(&mut metrics, round, &judged);
                metrics_time += judged_in + started.elapsed();
            }
            if self.leagues.is_some() {
                let entrants: Vec<Entrant<'_>> = round
                    .standings
                    .iter()
                    .zip(&changes)
                    .map(|(standing, change)| Entrant {
                        player: &standing.player,
                        rank: standing.rank,
                        rating: change.after,
                        prior: change.before.mu,
                        time: round.time,
                        rounds: population
                            .belief(&standing.player)
                            .map_or(0, SystemState::rounds)
                            - season_bases.get(&standing.player).copied().unwrap_or(0),
                    })
                    .collect();
                leagues.settle(&entrants);
            }
            progress.inc(1);
        }
        Ok(Rated {
            population,
            participations,
            rating_time,
            metrics_time,
            metrics,
            leagues,
            failed,
        })
    }
}
