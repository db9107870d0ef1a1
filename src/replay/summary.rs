//! What a replay reports: counts, the time spent in the engine and in all, and the mean accuracy metrics,
//! printable as text for people or as one JSON object for scripts.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::engine::metrics::MetricsSum;

/// The report of one replay. Serialized, its keys are exactly the fields below; a metric is
/// `null` when no participation qualified for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Rounds applied.
    pub rounds: usize,
    /// Player-round participations, all of them (not only those the metrics count).
    pub participations: usize,
    /// Distinct players rated.
    pub players: usize,
    /// Seconds spent inside the engine rating rounds: reading and metrics excluded.
    pub rating_seconds: f64,
    /// Seconds spent judging the rounds' predictions (the metrics). A round is judged while
    /// it is applied, so this overlaps `rating_seconds`: the two add up to more than the
    /// replay took when judging used cores the rating left idle.
    pub metrics_seconds: f64,
    /// Seconds the whole replay took, from reading the input to the last round's metrics
    /// (writing the ratings file excluded).
    pub wall_seconds: f64,
    /// Mean pair inversion over the participations the metrics count.
    pub pair_inversion: Option<f64>,
    /// Mean rank deviation.
    pub rank_deviation: Option<f64>,
    /// Mean log loss of the pairwise win probabilities (nats).
    pub log_loss: Option<f64>,
    /// Mean Brier score of the pairwise win probabilities.
    pub brier: Option<f64>,
    /// Standard error of `log_loss` where it was estimated from sampled opponents; 0 when
    /// every opponent was looked at.
    pub log_loss_stderr: Option<f64>,
    /// Standard error of `brier`, as for `log_loss_stderr`.
    pub brier_stderr: Option<f64>,
    /// Participations the metrics count (shown in the text form only).
    #[serde(skip)]
    pub judged: u64,
}

impl Summary {
    /// Builds the summary from the replay's counts and metric sums.
    #[must_use]
    pub fn new(
        rounds: usize,
        participations: usize,
        players: usize,
        rating_time: Duration,
        metrics_time: Duration,
        wall_time: Duration,
        metrics: &MetricsSum,
    ) -> Self {
        let mean = metrics.mean();
        Self {
            rounds,
            participations,
            players,
            rating_seconds: rating_time.as_secs_f64(),
            metrics_seconds: metrics_time.as_secs_f64(),
            wall_seconds: wall_time.as_secs_f64(),
            pair_inversion: mean.map(|m| m.pair_inversion),
            rank_deviation: mean.map(|m| m.rank_deviation),
            log_loss: mean.map(|m| m.log_loss),
            brier: mean.map(|m| m.brier),
            log_loss_stderr: mean.map(|m| m.log_loss_variance.sqrt()),
            brier_stderr: mean.map(|m| m.brier_variance.sqrt()),
            judged: metrics.count(),
        }
    }
}

/// What the metrics mean, printed under them by `replay` and `evaluate` and in their `--help`.
pub const METRICS_LEGEND: &str = "\
What the metrics mean (each judged on the ratings held before the round):
  pair inversion  share of the pairs of judged entrants that their prior ratings put in the
                  order they finished; higher is better, 0.5 is a coin toss. A pair that tied
                  counts as right, and two equal prior ratings as wrong, as the paper's
                  reference implementation counts them: newcomers, all at the initial rating,
                  pull it down when they are judged.
  rank deviation  distance from the place the prior ratings predicted to the place taken,
                  over the entrants less one; lower is better.
  log loss        mean -ln of the probability given to each pairwise result, in nats; lower is
                  better, ln 2 = 0.693 is a coin toss. Far above 1, the probabilities were near
                  0 or 1 and often wrong: the system was overconfident.
  brier           mean squared error of those probabilities; lower is better, 0.25 is a coin
                  toss.
  judged          the participations of players with at least K earlier rounds
                  (--min-history K); the paper judges with K = 5.
";

/// Decimal places of a metric in the text form.
const METRIC_DECIMALS: usize = 4;

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let metric = |value: Option<f64>| {
            value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.METRIC_DECIMALS$}"))
        };
        writeln!(f, "rounds          {}", self.rounds)?;
        writeln!(f, "participations  {}", self.participations)?;
        writeln!(f, "players         {}", self.players)?;
        writeln!(f, "rating seconds  {:.3}", self.rating_seconds)?;
        writeln!(f, "metrics seconds {:.3}", self.metrics_seconds)?;
        writeln!(f, "wall seconds    {:.3}", self.wall_seconds)?;
        writeln!(f, "metrics over    {} participations", self.judged)?;
        writeln!(f, "pair inversion  {}", metric(self.pair_inversion))?;
        writeln!(f, "rank deviation  {}", metric(self.rank_deviation))?;
        let stderr = |value: Option<f64>| match value {
            Some(e) if e > 0.0 => format!(" ± {e:.2e} (standard error)"),
            _ => String::new(),
        };
        writeln!(
            f,
            "log loss        {}{}",
            metric(self.log_loss),
            stderr(self.log_loss_stderr)
        )?;
        writeln!(
            f,
            "brier           {}{}",
            metric(self.brier),
            stderr(self.brier_stderr)
        )
    }
}
