//! Accuracy metrics of one round (docs/elo-mmr.md "Accuracy metrics", paper §6.3), judged on the
//! beliefs held *before* the round is applied: pair inversion and rank deviation, plus the log
//! loss and Brier score of the pairwise win probabilities of [`predict`](super::predict). Pure
//! arithmetic on priors; nothing here changes a belief or knows where rounds come from.
//!
//! Pair inversion and rank deviation are counted exactly as the paper's reference
//! implementation (`multi-skill` 0.1.2's `pairwise_metric` and `percentile_distance_metric`)
//! counts them, which a test checks:
//! - the round is first cut to the entrants the caller counts (the paper keeps players with at
//!   least 5 earlier rounds), and the metrics are computed among those alone;
//! - a tie is a correct prediction for pair inversion (the paper's "winning or tying"), and
//!   the outcome 1/2 for log loss and Brier;
//! - equal prior ratings of two entrants who did not tie predict nothing: the pair counts as
//!   missed for pair inversion, and for rank deviation entrants with equal ratings are
//!   predicted in their finishing order;
//! - rank deviation is the distance from an entrant's predicted position to the range of
//!   places its tie group covers;
//! - a round with fewer than two entrants left, or where everybody left ties, predicts nothing
//!   and is left out.
//!
//! A team is one entrant (its rating and performance distribution are the ones its rating
//! system gives it, a [`Performance`](super::Performance); for Elo-MMR its members' sums); each
//! counted member is credited with the team's metrics.

use rayon::prelude::*;

use super::any::{SystemParams, SystemState};
use super::predict::beats;
use super::round::{Layout, Round};
use super::system::Model;
use super::Error;

/// Smallest probability a log loss is taken of: a hopeless prediction (the model's probability
/// underflowed, or nearly) costs at most `-ln(1e-200)` ≈ 460.5 nats instead of infinity.
const SMALLEST_PROBABILITY: f64 = 1e-200;
/// A running product of probabilities is multiplied by `2^LOG_LOSS_RESCALE` whenever it falls
/// below `2^-LOG_LOSS_RESCALE`: exact, and with [`SMALLEST_PROBABILITY`] it stays a normal
/// number.
const LOG_LOSS_RESCALE: i32 = 300;
/// The outcome value of a tie in log loss and Brier score.
const TIE_OUTCOME: f64 = 0.5;

/// How well the priors predicted one participation, each an average over the entrant's
/// opponents (the other entrants of the round).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParticipationMetrics {
    /// Share of opponents against whom "the higher prior rating finishes ahead or ties" came
    /// true, in `[0, 1]`; higher is better.
    pub pair_inversion: f64,
    /// Distance between the actual rank and the rank predicted by sorting on prior rating,
    /// divided by `entrants − 1`, in `[0, 1]`; lower is better.
    pub rank_deviation: f64,
    /// Mean negative natural log of the probability given to each pairwise outcome (nats).
    pub log_loss: f64,
    /// Mean squared error of the pairwise win probabilities, in `[0, 1]`.
    pub brier: f64,
    /// Variance of `log_loss` as an estimate: 0 when every opponent was looked at (see
    /// [`Opponents`]). A team's members share one estimate, so each is given the team's
    /// variance times the number of members counted: added over participations, these
    /// variances sum to the variance of the total.
    pub log_loss_variance: f64,
    /// Variance of `brier` as an estimate, as for `log_loss_variance`.
    pub brier_variance: f64,
}

/// Which opponents the log loss and Brier score of a participation average over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opponents {
    /// Every opponent: exact, O(N²) per round.
    All,
    /// At most `count` (at least 2): in a round with more opponents, the finishing order of
    /// the others is cut into `count` strata of equal size (±1) and one opponent is drawn
    /// uniformly from each, independently for every entrant (a fixed hash of `seed`, entrant,
    /// stratum and round size, so a replay is reproducible; give each round its own `seed`,
    /// or rounds of one size repeat their draws and their errors add up instead of averaging
    /// out). Weighted by stratum size, the average is an unbiased estimate of the exact one,
    /// O(N · m) per round. Its variance is taken as that of simple random sampling without
    /// replacement, `(1 − m/(N−1)) s²/m` with `s²` the sample variance, which proportional
    /// stratification does not exceed in expectation.
    AtMost {
        /// Opponents drawn per participation.
        count: usize,
        /// Distinguishes this round's draws from every other round's.
        seed: u64,
    },
}

impl Opponents {
    /// The same choice, with its draws seeded by `seed`.
    #[must_use]
    pub fn seeded(self, seed: u64) -> Self {
        match self {
            Self::All => Self::All,
            Self::AtMost { count, .. } => Self::AtMost { count, seed },
        }
    }
}

/// Running sums of [`ParticipationMetrics`], added in the caller's order so that the means
/// are reproducible bit for bit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MetricsSum {
    count: u64,
    pair_inversion: f64,
    rank_deviation: f64,
    log_loss: f64,
    brier: f64,
    log_loss_variance: f64,
    brier_variance: f64,
}

impl MetricsSum {
    /// Adds one participation.
    pub fn add(&mut self, metrics: &ParticipationMetrics) {
        self.count += 1;
        self.pair_inversion += metrics.pair_inversion;
        self.rank_deviation += metrics.rank_deviation;
        self.log_loss += metrics.log_loss;
        self.brier += metrics.brier;
        self.log_loss_variance += metrics.log_loss_variance;
        self.brier_variance += metrics.brier_variance;
    }

    /// Number of participations added.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The mean of every metric, with the variance of the means of log loss and Brier score
    /// (the estimates of different entrants are independent), or `None` if nothing was added.
    #[must_use]
    pub fn mean(&self) -> Option<ParticipationMetrics> {
        if self.count == 0 {
            return None;
        }
        let n = self.count as f64;
        Some(ParticipationMetrics {
            pair_inversion: self.pair_inversion / n,
            rank_deviation: self.rank_deviation / n,
            log_loss: self.log_loss / n,
            brier: self.brier / n,
            log_loss_variance: self.log_loss_variance / (n * n),
            brier_variance: self.brier_variance / (n * n),
        })
    }
}

/// The metrics of the participations of `round` that `counted` selects (by index into
/// `round.standings`), aligned with `round.standings`, `None` for the others. `priors[i]` is
/// the belief of `round.standings[i].player` before the round, as for
/// [`rate_round`](super::rate_round). Predictions use the priors as they are (no diffusion)
/// and a round of weight 1, exactly as [`predict`](super::predict) would answer before the
/// round.
///
/// The paper's protocol: the round is first cut to the entrants `counted` keeps (a team stays,
/// with all its members' strength, when one of its members is counted), and every metric is
/// computed among them alone. A round that keeps fewer than two entrants, or whose kept
/// entrants all tie, predicts nothing and gives every participation `None`.
///
/// Pair inversion and rank deviation cost O(N log N); log loss and Brier look at the
/// `opponents` of each kept entrant: sampled ones in parallel over entrants, each entrant's
/// sum sequential; every pair exactly, over tiles of the pair matrix that depend on N alone
/// (`pairwise_scores`). So the result does not depend on the thread count nor on the order of
/// `round.standings`, and a participation that is not kept costs nothing.
///
/// ```
/// use mmr_engine::metrics::{round_metrics, Opponents};
/// use mmr_engine::{EloMmrParams, EloMmrState, Round, Standing, SystemParams, SystemState};
///
/// let params = EloMmrParams::default();
/// let mut strong = EloMmrState::new(&params);
/// strong.mu += 400.0;
/// let weak = SystemState::EloMmr(EloMmrState::new(&params));
/// let strong = SystemState::EloMmr(strong);
/// let round = Round::new(vec![
///     Standing::solo("strong", 1),
///     Standing::solo("weak", 2),
///     Standing::solo("new", 3),
/// ]);
/// let system = SystemParams::EloMmr(params);
/// let newcomer = system.newcomer();
/// let priors = [&strong, &weak, &newcomer];
/// let metrics = round_metrics(&system, &round, &priors, |i| i < 2, Opponents::All)?;
/// assert_eq!(metrics[0].map(|m| m.pair_inversion), Some(1.0));
/// assert_eq!(metrics[1].map(|m| m.rank_deviation), Some(0.0));
/// assert_eq!(metrics[2], None);
/// let alone = round_metrics(&system, &round, &priors, |i| i == 0, Opponents::All)?;
/// assert_eq!(alone[0], None);
/// # Ok::<(), mmr_engine::Error>(())
/// ```
pub fn round_metrics(
    system: &SystemParams,
    round: &Round,
    priors: &[&SystemState],
    counted: impl Fn(usize) -> bool,
    opponents: Opponents,
) -> Result<Vec<Option<ParticipationMetrics>>, Error> {
    Ok(Judging::of(system, round, priors, counted)?.score(opponents))
}

/// What [`round_metrics`] takes from the priors, owned: the round's judging can then run
/// while the round itself is being applied (`replay` does both at once).
#[derive(Debug)]
pub struct Judging {
    model: Model,
    layout: Layout,
    /// Which standings the metrics count.
    counted: Vec<bool>,
    /// The kept entrants, indices into `layout.entrants`, and their tie groups.
    kept: Kept,
    /// Each kept entrant's performance (mean, variance).
    performances: Vec<(f64, f64)>,
}

impl Judging {
    /// Reads what judging `round` needs from `priors`, with the same arguments and errors as
    /// [`round_metrics`].
    pub fn of(
        system: &SystemParams,
        round: &Round,
        priors: &[&SystemState],
        counted: impl Fn(usize) -> bool,
    ) -> Result<Self, Error> {
        system.validate()?;
        if priors.len() != round.standings.len() {
            return Err(Error::PriorCount {
                standings: round.standings.len(),
                priors: priors.len(),
            });
        }
        let layout = Layout::of(round)?;
        let counted: Vec<bool> = (0..round.standings.len()).map(counted).collect();
        let kept = Kept::of(&layout, &|i| counted[i]);
        let performances = if kept.groups.len() < 2 {
            Vec::new()
        } else {
            kept.entrants
                .iter()
                .map(|&e| {
                    let states: Vec<&SystemState> =
                        layout.entrants[e].iter().map(|&m| priors[m]).collect();
                    let performance = system.performance(&states)?;
                    Ok((performance.mean, performance.variance))
                })
                .collect::<Result<_, Error>>()?
        };
        Ok(Self {
            model: system.model(),
            layout,
            counted,
            kept,
            performances,
        })
    }

    /// The metrics of every standing, as [`round_metrics`] returns them.
    #[must_use]
    pub fn score(&self, opponents: Opponents) -> Vec<Option<ParticipationMetrics>> {
        let mut metrics = vec![None; self.counted.len()];
        let (kept, performances) = (&self.kept, &self.performances);
        if kept.groups.len() < 2 {
            return metrics;
        }
        let ratings: Vec<f64> = performances.iter().map(|&(mu, _)| mu).collect();
        let ordering = RatingOrder::of(&ratings, &kept.groups);
        let opponent_count = (ratings.len() - 1) as f64;

        let mut group_of = vec![0; ratings.len()];
        for (g, range) in kept.groups.iter().enumerate() {
            group_of[range.clone()].fill(g);
        }
        let sample = match opponents {
            Opponents::AtMost { count, seed } if count >= 2 && count < ratings.len() - 1 => {
                Some((count, seed))
            }
            _ => None,
        };
        let exact = match sample {
            Some(_) => Vec::new(),
            None => pairwise_scores(
                self.model,
                performances,
                &group_of,
                tile_width(ratings.len()),
            ),
        };
        let entrant_metrics: Vec<ParticipationMetrics> = (0..ratings.len())
            .into_par_iter()
            .map(|e| {
                let group = &kept.groups[group_of[e]];
                let scores = match sample {
                    Some((count, seed)) => {
                        sampled_scores(self.model, performances, group.clone(), e, count, seed)
                    }
                    None => exact[e],
                };
                ParticipationMetrics {
                    pair_inversion: ordering.correct[e] as f64 / opponent_count,
                    rank_deviation: ordering.deviation(e, group.start, group.end - 1) as f64
                        / opponent_count,
                    log_loss: scores.log_loss,
                    brier: scores.brier,
                    log_loss_variance: scores.log_loss_variance,
                    brier_variance: scores.brier_variance,
                }
            })
            .collect();

        for (&e, entrant) in kept.entrants.iter().zip(&entrant_metrics) {
            let members = &self.layout.entrants[e];
            let shared = members.iter().filter(|&&m| self.counted[m]).count() as f64;
            for &m in members {
                if self.counted[m] {
                    metrics[m] = Some(ParticipationMetrics {
                        log_loss_variance: shared * entrant.log_loss_variance,
                        brier_variance: shared * entrant.brier_variance,
                        ..*entrant
                    });
                }
            }
        }
        metrics
    }
}

/// The entrants a round's metrics are computed among, in the layout's rank order.
#[derive(Debug)]
struct Kept {
    /// Indices into the layout's entrants.
    entrants: Vec<usize>,
    /// Ranges of `entrants` that share a rank, best first.
    groups: Vec<std::ops::Range<usize>>,
}

impl Kept {
    /// The entrants with at least one member `counted` keeps.
    fn of(layout: &Layout, counted: &impl Fn(usize) -> bool) -> Self {
        let mut entrants = Vec::new();
        let mut groups = Vec::new();
        for range in &layout.groups {
            let start = entrants.len();
            entrants.extend(
                range
                    .clone()
                    .filter(|&e| layout.entrants[e].iter().any(|&m| counted(m))),
            );
            if entrants.len() > start {
                groups.push(start..entrants.len());
            }
        }
        Self { entrants, groups }
    }
}

/// One entrant's log loss and Brier score, averaged over its opponents, and their variances
/// as estimates.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scores {
    log_loss: f64,
    brier: f64,
    log_loss_variance: f64,
    brier_variance: f64,
}

/// Entrants per side of a tile of the pair matrix, at least (see [`pairwise_scores`]).
const MIN_TILE: usize = 64;
/// Tiles per side of the pair matrix, at most: each entrant keeps one partial sum per tile.
const MAX_TILES: usize = 32;

/// The side of the pair matrix's tiles for a round of `n` kept entrants: a function of `n`
/// alone, so that the sums, added tile by tile, do not depend on the machine.
fn tile_width(n: usize) -> usize {
    n.div_ceil(MAX_TILES).max(MIN_TILE)
}

/// Log loss and Brier score of every entrant against every other, exactly, each pair's
/// probabilities computed once for both of its entrants (half the work of computing each
/// entrant's row alone). Entrants are in rank order, `group_of` their tie groups' indices.
///
/// The pair matrix is cut into square tiles of side `tile`; the tiles on and above the
/// diagonal are computed in parallel, each giving its rows' and its columns' entrants one
/// partial sum, and every entrant adds its partial sums in tile order. So the result depends
/// on `tile` but on neither the thread count nor the scheduling. The probability of the
/// outcome that happened is computed directly (winner over loser), which keeps a tiny
/// probability accurate instead of forming it as `1 − p`.
fn pairwise_scores(
    model: Model,
    performances: &[(f64, f64)],
    group_of: &[usize],
    tile: usize,
) -> Vec<Scores> {
    let n = performances.len();
    let tiles = n.div_ceil(tile);
    let span = |t: usize| t * tile..((t + 1) * tile).min(n);
    let pairs: Vec<(usize, usize)> = (0..tiles)
        .flat_map(|a| (a..tiles).map(move |b| (a, b)))
        .collect();
    let partials: Vec<(Vec<TileSums>, Vec<TileSums>)> = pairs
        .par_iter()
        .map(|&(a, b)| tile_sums(model, performances, group_of, span(a), span(b)))
        .collect();
    // Entrant `e`'s partial sum over the opponents of tile `t` sits at `e * tiles + t`.
    let mut sums = vec![TileSums::default(); n * tiles];
    for (&(a, b), (rows, columns)) in pairs.iter().zip(&partials) {
        for (e, partial) in span(a).zip(rows) {
            sums[e * tiles + b] = *partial;
        }
        for (e, partial) in span(b).zip(columns) {
            sums[e * tiles + a] = *partial;
        }
    }
    let opponents = (n - 1) as f64;
    sums.chunks(tiles)
        .map(|row| {
            let total = row.iter().fold(TileSums::default(), |sum, t| TileSums {
                decided: sum.decided + t.decided,
                tied: sum.tied + t.tied,
                brier: sum.brier + t.brier,
            });
            Scores {
                log_loss: (total.decided + TIE_OUTCOME * total.tied) / opponents,
                brier: total.brier / opponents,
                log_loss_variance: 0.0,
                brier_variance: 0.0,
            }
        })
        .collect()
}

/// One entrant's sums over the opponents of one tile: `−ln` of the probabilities of the
/// decided pairs' outcomes, `−ln` of both ways of each tied pair's (halved by the caller),
/// and the squared errors.
#[derive(Debug, Clone, Copy, Default)]
struct TileSums {
    decided: f64,
    tied: f64,
    brier: f64,
}

/// [`TileSums`] being gathered.
struct TileProducts {
    decided: NegativeLogProduct,
    tied: NegativeLogProduct,
    brier: f64,
}

impl TileProducts {
    fn new() -> Self {
        Self {
            decided: NegativeLogProduct::new(),
            tied: NegativeLogProduct::new(),
            brier: 0.0,
        }
    }

    /// The entrant's pair was decided, and `p` is the probability the model gave the outcome.
    fn decided(&mut self, p: f64) {
        self.decided.multiply(p);
        self.brier += (1.0 - p) * (1.0 - p);
    }

    /// The entrant tied, and the model gave it `p` to win and its opponent `q`.
    fn tied(&mut self, p: f64, q: f64) {
        self.tied.multiply(p);
        self.tied.multiply(q);
        self.brier += (p - TIE_OUTCOME) * (p - TIE_OUTCOME);
    }

    fn sums(&self) -> TileSums {
        TileSums {
            decided: self.decided.value(),
            tied: self.tied.value(),
            brier: self.brier,
        }
    }
}

/// The partial sums of the tile of pairs `rows` × `columns`, `rows` not after `columns`:
/// the rows' entrants' sums over the columns' entrants, and the columns' over the rows'. On
/// the diagonal (`rows == columns`) the tile's pairs are its entrant pairs, each once, and
/// all its sums are the rows'.
fn tile_sums(
    model: Model,
    performances: &[(f64, f64)],
    group_of: &[usize],
    rows: std::ops::Range<usize>,
    columns: std::ops::Range<usize>,
) -> (Vec<TileSums>, Vec<TileSums>) {
    let diagonal = rows == columns;
    let mut row_products: Vec<TileProducts> = rows.clone().map(|_| TileProducts::new()).collect();
    let mut column_products: Vec<TileProducts> = if diagonal {
        Vec::new()
    } else {
        columns.clone().map(|_| TileProducts::new()).collect()
    };
    for i in rows.clone() {
        let first = if diagonal { i + 1 } else { columns.start };
        for j in first..columns.end {
            let (ahead, behind) = if diagonal {
                let (left, right) = row_products.split_at_mut(j - rows.start);
                (&mut left[i - rows.start], &mut right[0])
            } else {
                (
                    &mut row_products[i - rows.start],
                    &mut column_products[j - columns.start],
                )
            };
            // Entrants are in rank order: `i` finished ahead of `j`, or tied with it.
            let p = beats(model, performances[i], performances[j]);
            if group_of[i] == group_of[j] {
                let q = beats(model, performances[j], performances[i]);
                ahead.tied(p, q);
                behind.tied(q, p);
            } else {
                ahead.decided(p);
                behind.decided(p);
            }
        }
    }
    (
        row_products.iter().map(TileProducts::sums).collect(),
        column_products.iter().map(TileProducts::sums).collect(),
    )
}

/// Log loss and Brier score of entrant `e` estimated from `m` opponents (fewer than the round
/// has) drawn one per stratum of the finishing order ([`Opponents::AtMost`]), seeded by `seed`.
fn sampled_scores(
    model: Model,
    performances: &[(f64, f64)],
    ties: std::ops::Range<usize>,
    e: usize,
    m: usize,
    seed: u64,
) -> Scores {
    let own = performances[e];
    let others = performances.len() - 1;
    let mut log_loss = Moments::default();
    let mut brier = Moments::default();
    let seed = splitmix64(splitmix64(seed) ^ ((others as u64) << 32) ^ e as u64);
    // Stratum `s` starts at ⌊s · others / m⌋, stepped without a division per stratum.
    let (step, carry) = (others / m, others % m);
    let (mut start, mut remainder) = (0, 0);
    for stratum in 0..m {
        let mut end = start + step;
        remainder += carry;
        if remainder >= m {
            remainder -= m;
            end += 1;
        }
        let size = end - start;
        // A uniform offset in the stratum, from the high bits of the draw (multiply-shift).
        let draw = splitmix64(seed ^ stratum as u64) >> 32;
        let k = start + ((draw * size as u64) >> 32) as usize;
        start = end;
        // Opponents are numbered without `e` itself.
        let j = if k >= e { k + 1 } else { k };
        let other = performances[j];
        let (loss, error) = if ties.contains(&j) {
            let p = beats(model, own, other);
            let q = beats(model, other, own);
            let loss = -TIE_OUTCOME
                * (p.max(SMALLEST_PROBABILITY).ln() + q.max(SMALLEST_PROBABILITY).ln());
            (loss, (p - TIE_OUTCOME) * (p - TIE_OUTCOME))
        } else {
            let p = if j < e {
                beats(model, other, own)
            } else {
                beats(model, own, other)
            };
            (-p.max(SMALLEST_PROBABILITY).ln(), (1.0 - p) * (1.0 - p))
        };
        log_loss.add(loss, size as f64);
        brier.add(error, size as f64);
    }
    let (m, others) = (m as f64, others as f64);
    let variance = |moments: &Moments| {
        let spread = (moments.squares - moments.sum * moments.sum / m) / (m - 1.0);
        (1.0 - m / others) * spread.max(0.0) / m
    };
    Scores {
        log_loss: log_loss.weighted / others,
        brier: brier.weighted / others,
        log_loss_variance: variance(&log_loss),
        brier_variance: variance(&brier),
    }
}

/// Sums over a sample: weighted by stratum size for the estimate, plain for its variance.
#[derive(Default)]
struct Moments {
    weighted: f64,
    sum: f64,
    squares: f64,
}

impl Moments {
    fn add(&mut self, x: f64, weight: f64) {
        self.weighted += weight * x;
        self.sum += x;
        self.squares += x * x;
    }
}

/// A 64-bit mix with no visible pattern between nearby inputs (Steele, Lea and Flood's
/// SplitMix64 finalizer): the sampler's source of randomness, a pure function of its input.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `Σ −ln p` over many probabilities, taken as one logarithm of their product: a logarithm
/// per pair would cost more than the rest of the pairwise loop together.
struct NegativeLogProduct {
    product: f64,
    rescales: i32,
    rescale_below: f64,
    rescale_by: f64,
}

impl NegativeLogProduct {
    fn new() -> Self {
        Self {
            product: 1.0,
            rescales: 0,
            rescale_below: 2f64.powi(-LOG_LOSS_RESCALE),
            rescale_by: 2f64.powi(LOG_LOSS_RESCALE),
        }
    }

    fn multiply(&mut self, p: f64) {
        self.product *= p.max(SMALLEST_PROBABILITY);
        while self.product < self.rescale_below {
            self.product *= self.rescale_by;
            self.rescales += 1;
        }
    }

    fn value(&self) -> f64 {
        f64::from(self.rescales) * f64::from(LOG_LOSS_RESCALE) * std::f64::consts::LN_2
            - self.product.ln()
    }
}

/// Pair inversion counts and predicted ranks, from one sort of the prior ratings, as the
/// paper (and its reference implementation) counts them.
struct RatingOrder {
    /// Each entrant's correctly predicted opponents: those it tied with, those that finished
    /// ahead with a strictly higher rating, and those that finished behind with a strictly
    /// lower one. Equal ratings predict nothing, so such a pair counts as missed.
    correct: Vec<u64>,
    /// Each entrant's 0-based position when sorted by rating, highest first, equal ratings in
    /// finishing order.
    predicted: Vec<usize>,
}

impl RatingOrder {
    /// `ratings` of entrants in finishing order, `groups` their tie groups.
    fn of(ratings: &[f64], groups: &[std::ops::Range<usize>]) -> Self {
        let n = ratings.len();
        let mut by_rating: Vec<usize> = (0..n).collect();
        // Stable: equal ratings stay in finishing order.
        by_rating.sort_by(|&a, &b| ratings[b].total_cmp(&ratings[a]));
        let mut predicted = vec![0; n];
        let mut class = vec![0; n];
        let mut classes = 0;
        for (position, &e) in by_rating.iter().enumerate() {
            if position > 0 && ratings[by_rating[position - 1]] != ratings[e] {
                classes += 1;
            }
            class[e] = classes;
            predicted[e] = position;
        }
        let classes = classes + 1;

        let mut correct = vec![0u64; n];
        // Best groups first: who finished ahead with a higher rating.
        let mut ahead = Fenwick::new(classes);
        for range in groups {
            for e in range.clone() {
                correct[e] += ahead.below(class[e]) + (range.len() - 1) as u64;
            }
            for e in range.clone() {
                ahead.add(class[e]);
            }
        }
        // Worst groups first: who finished behind with a lower rating.
        let mut behind = Fenwick::new(classes);
        for range in groups.iter().rev() {
            for e in range.clone() {
                correct[e] += behind.total() - behind.below(class[e] + 1);
            }
            for e in range.clone() {
                behind.add(class[e]);
            }
        }
        Self { correct, predicted }
    }

    /// Distance from entrant `e`'s predicted position to its actual places, `first..=last`
    /// (0-based).
    fn deviation(&self, e: usize, first: usize, last: usize) -> usize {
        let p = self.predicted[e];
        first.saturating_sub(p).max(p.saturating_sub(last))
    }
}

/// A Fenwick (binary indexed) tree of counts over rating classes, for O(log N) prefix counts.
struct Fenwick {
    tree: Vec<u64>,
    total: u64,
}

impl Fenwick {
    fn new(len: usize) -> Self {
        Self {
            tree: vec![0; len + 1],
            total: 0,
        }
    }

    fn add(&mut self, index: usize) {
        self.total += 1;
        let mut i = index + 1;
        while i < self.tree.len() {
            self.tree[i] += 1;
            i += i & i.wrapping_neg();
        }
    }

    /// Count of entries with index `< end`.
    fn below(&self, end: usize) -> u64 {
        let mut sum = 0;
        let mut i = end;
        while i > 0 {
            sum += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }

    fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EloMmrParams, EloMmrState, Standing, Variant};
    use proptest::prelude::*;

    fn rated(params: &EloMmrParams, mu: f64) -> SystemState {
        SystemState::EloMmr(EloMmrState {
            mu,
            ..EloMmrState::new(params)
        })
    }

    fn newcomer(params: &EloMmrParams) -> SystemState {
        SystemState::EloMmr(EloMmrState::new(params))
    }

    /// [`round_metrics`] in an Elo-MMR pool with `params`.
    fn judge(
        params: &EloMmrParams,
        round: &Round,
        priors: &[&SystemState],
    ) -> Result<Vec<ParticipationMetrics>, Error> {
        let system = SystemParams::EloMmr(*params);
        let metrics = round_metrics(&system, round, priors, |_| true, Opponents::All)?;
        Ok(metrics.into_iter().flatten().collect())
    }

    /// Entrant `e`'s exact sums computed alone, one opponent after another: the oracle of the
    /// tiled [`pairwise_scores`]. Entrants are in rank order, so those before `ties` beat `e`
    /// and those after lost to it.
    fn row_scores(
        model: Model,
        performances: &[(f64, f64)],
        ties: std::ops::Range<usize>,
        e: usize,
    ) -> Scores {
        let own = performances[e];
        let mut decided = NegativeLogProduct::new();
        let mut brier = 0.0;
        for &winner in &performances[..ties.start] {
            let p = beats(model, winner, own);
            decided.multiply(p);
            brier += (1.0 - p) * (1.0 - p);
        }
        let mut tied = NegativeLogProduct::new();
        for (j, &other) in performances[ties.clone()].iter().enumerate() {
            if ties.start + j == e {
                continue;
            }
            let p = beats(model, own, other);
            tied.multiply(p);
            tied.multiply(beats(model, other, own));
            brier += (p - TIE_OUTCOME) * (p - TIE_OUTCOME);
        }
        for &loser in &performances[ties.end..] {
            let p = beats(model, own, loser);
            decided.multiply(p);
            brier += (1.0 - p) * (1.0 - p);
        }
        let opponents = (performances.len() - 1) as f64;
        Scores {
            log_loss: (decided.value() + TIE_OUTCOME * tied.value()) / opponents,
            brier: brier / opponents,
            log_loss_variance: 0.0,
            brier_variance: 0.0,
        }
    }

    /// The performance distribution of a team of `members` in an Elo-MMR pool.
    fn performance(params: &EloMmrParams, members: &[&SystemState]) -> (f64, f64) {
        let p = SystemParams::EloMmr(*params).performance(members);
        let p = p.expect("Elo-MMR states");
        (p.mean, p.variance)
    }

    fn solo_round(ranks: &[u64]) -> Round {
        Round::new(
            ranks
                .iter()
                .enumerate()
                .map(|(i, &rank)| Standing::solo(format!("p{i}"), rank))
                .collect(),
        )
    }

    #[test]
    fn a_hand_checked_round_of_three_scores_as_expected() {
        let params = EloMmrParams::default();
        let (a, b, c) = (
            rated(&params, 1600.0),
            rated(&params, 1700.0),
            rated(&params, 1500.0),
        );
        let round = solo_round(&[1, 2, 3]);
        let metrics = judge(&params, &round, &[&a, &b, &c]).expect("valid round");
        let pair: Vec<f64> = metrics.iter().map(|m| m.pair_inversion).collect();
        let deviation: Vec<f64> = metrics.iter().map(|m| m.rank_deviation).collect();
        assert_eq!(pair, vec![0.5, 0.5, 1.0]);
        assert_eq!(deviation, vec![0.5, 0.5, 0.0]);

        let ab = beats(
            Model::Logistic,
            performance(&params, &[&a]),
            performance(&params, &[&b]),
        );
        let ac = beats(
            Model::Logistic,
            performance(&params, &[&a]),
            performance(&params, &[&c]),
        );
        let expected_log_loss = (-ab.ln() - ac.ln()) / 2.0;
        let expected_brier = ((1.0 - ab).powi(2) + (1.0 - ac).powi(2)) / 2.0;
        assert!((metrics[0].log_loss - expected_log_loss).abs() < 1e-12);
        assert!((metrics[0].brier - expected_brier).abs() < 1e-12);
    }

    #[test]
    fn newcomers_are_a_coin_flip_and_predict_only_their_ties() {
        let params = EloMmrParams::default();
        let newcomer = newcomer(&params);
        let round = solo_round(&[1, 2, 2, 4]);
        let metrics = judge(&params, &round, &[&newcomer; 4]).expect("valid round of newcomers");
        // The winner: three decided pairs, none predicted by equal ratings.
        assert_eq!(metrics[0].pair_inversion, 0.0);
        // A tied player: one tie (right) and two decided pairs (missed).
        assert_eq!(metrics[1].pair_inversion, 1.0 / 3.0);
        for m in &metrics {
            // Equal ratings are predicted in finishing order.
            assert_eq!(m.rank_deviation, 0.0);
            assert!((m.log_loss - std::f64::consts::LN_2).abs() < 1e-15);
        }
        assert_eq!(metrics[0].brier, 0.25);
        // Against the tied partner the prediction 1/2 is exact.
        assert_eq!(metrics[1].brier, 0.25 * 2.0 / 3.0);
    }

    #[test]
    fn a_team_is_judged_as_one_entrant_on_its_summed_rating() {
        let params = EloMmrParams::default();
        let member = |player: &str, rank| Standing::member(player, rank, "duo");
        let round = Round::new(vec![member("x", 2), member("y", 2), Standing::solo("z", 1)]);
        // The duo's summed rating (2000) is far above the lone player's, who won anyway.
        let (x, y, z) = (
            rated(&params, 1000.0),
            rated(&params, 1000.0),
            rated(&params, 1900.0),
        );
        let metrics = judge(&params, &round, &[&x, &y, &z]).expect("valid team round");
        for m in &metrics {
            assert_eq!(m.pair_inversion, 0.0);
            assert_eq!(m.rank_deviation, 1.0);
        }
        assert_eq!(metrics[0], metrics[1]);
        let duo = performance(&params, &[&x, &y]);
        let solo = performance(&params, &[&z]);
        let p = beats(Model::Logistic, solo, duo);
        assert!((metrics[2].log_loss + p.ln()).abs() < 1e-12);
    }

    #[test]
    fn a_log_loss_summed_past_the_rescaling_threshold_stays_exact() {
        let params = EloMmrParams::default();
        let newcomer = newcomer(&params);
        // Each of 399 opponents contributes a coin flip: a product of 2^-399 before rescaling.
        let ranks: Vec<u64> = (1..=400).collect();
        let metrics = judge(&params, &solo_round(&ranks), &vec![&newcomer; ranks.len()])
            .expect("valid round");
        for m in metrics {
            assert!(
                (m.log_loss - std::f64::consts::LN_2).abs() < 1e-14,
                "{}",
                m.log_loss
            );
        }
    }

    #[test]
    fn a_round_where_everybody_left_ties_predicts_nothing() {
        let params = EloMmrParams::default();
        let (a, b, c) = (
            rated(&params, 1200.0),
            rated(&params, 1800.0),
            rated(&params, 1500.0),
        );
        let system = SystemParams::EloMmr(params);
        let round = solo_round(&[1, 1, 2]);
        let priors = [&a, &b, &c];
        let all_tied = round_metrics(&system, &round, &priors, |i| i < 2, Opponents::All);
        assert_eq!(all_tied, Ok(vec![None; 3]));
        let alone = round_metrics(&system, &round, &priors, |i| i == 2, Opponents::All);
        assert_eq!(alone, Ok(vec![None; 3]));
    }

    #[test]
    fn a_hopeless_upset_costs_a_finite_log_loss() {
        let params = EloMmrParams {
            variant: Variant::Gaussian,
            ..EloMmrParams::default()
        };
        let (a, b) = (rated(&params, -1e6), rated(&params, 1e6));
        let metrics = judge(&params, &solo_round(&[1, 2]), &[&a, &b]).expect("valid round");
        assert!(metrics[0].log_loss.is_finite() && metrics[0].log_loss > 400.0);
        assert_eq!(metrics[0].brier, 1.0);
    }

    #[test]
    fn a_wrong_number_of_priors_is_rejected() {
        let params = EloMmrParams::default();
        let newcomer = newcomer(&params);
        let result = judge(&params, &solo_round(&[1, 2]), &[&newcomer]);
        assert_eq!(
            result,
            Err(Error::PriorCount {
                standings: 2,
                priors: 1
            })
        );
    }

    #[test]
    fn sampled_means_fall_within_a_few_standard_errors_of_the_exact_ones() {
        // A large round of spread ratings and a noisy finish, judged on 16 of ~1,500 opponents.
        let params = EloMmrParams::default();
        let count = 1_500;
        let mix = |i: u64, salt: u64| (splitmix64(i ^ salt) >> 11) as f64 / (1u64 << 53) as f64;
        let mus: Vec<f64> = (0..count).map(|i| 800.0 + 2800.0 * mix(i, 1)).collect();
        let mut order: Vec<usize> = (0..count as usize).collect();
        order.sort_by(|&a, &b| {
            let noisy = |i: usize| mus[i] + 900.0 * mix(i as u64, 2);
            noisy(b).total_cmp(&noisy(a))
        });
        let round = solo_round(&(1..=count).collect::<Vec<_>>());
        let states: Vec<SystemState> = order.iter().map(|&i| rated(&params, mus[i])).collect();
        let priors: Vec<&SystemState> = states.iter().collect();
        let system = SystemParams::EloMmr(params);
        let mean = |opponents| {
            let mut sum = MetricsSum::default();
            for m in round_metrics(&system, &round, &priors, |_| true, opponents)
                .expect("valid round")
                .iter()
                .flatten()
            {
                sum.add(m);
            }
            sum.mean().expect("counted")
        };
        let (exact, sampled) = (
            mean(Opponents::All),
            mean(Opponents::AtMost { count: 16, seed: 0 }),
        );
        for (name, gap, variance) in [
            (
                "log loss",
                sampled.log_loss - exact.log_loss,
                sampled.log_loss_variance,
            ),
            ("brier", sampled.brier - exact.brier, sampled.brier_variance),
        ] {
            let error = variance.sqrt();
            assert!(
                error > 0.0 && error < 0.01,
                "{name}: standard error {error}"
            );
            assert!(
                gap.abs() <= 4.0 * error,
                "{name}: off by {gap}, standard error {error}"
            );
        }
    }

    #[test]
    fn means_are_none_until_something_is_added() {
        let mut sum = MetricsSum::default();
        assert_eq!(sum.mean(), None);
        let one = ParticipationMetrics {
            pair_inversion: 1.0,
            rank_deviation: 0.0,
            log_loss: 0.5,
            brier: 0.25,
            log_loss_variance: 0.04,
            brier_variance: 0.0,
        };
        sum.add(&one);
        sum.add(&ParticipationMetrics {
            pair_inversion: 0.0,
            ..one
        });
        assert_eq!(sum.count(), 2);
        let mean = sum.mean().expect("two added");
        assert_eq!(mean.pair_inversion, 0.5);
        assert_eq!(
            (mean.log_loss_variance, mean.brier_variance),
            (0.02, 0.0),
            "the variance of a mean of two independent estimates"
        );
    }

    /// A round of 2 to 40 players: (rank, prior rating) each; ratings come from a small set so
    /// that equal ratings happen.
    fn arbitrary_round() -> impl Strategy<Value = Vec<(u64, f64)>> {
        prop::collection::vec(
            (
                1u64..6,
                (0i32..12).prop_map(|r| 1000.0 + 100.0 * f64::from(r)),
            ),
            2..40,
        )
    }

    /// A solo round of `entries` (rank, prior rating) in a pool with default parameters.
    fn default_round(entries: &[(u64, f64)]) -> (SystemParams, Round, Vec<SystemState>) {
        let round = solo_round(&entries.iter().map(|e| e.0).collect::<Vec<_>>());
        let states = entries
            .iter()
            .map(|e| rated(&EloMmrParams::default(), e.1))
            .collect();
        (SystemParams::EloMmr(EloMmrParams::default()), round, states)
    }

    fn metrics_of(params: &EloMmrParams, entries: &[(u64, f64)]) -> Vec<ParticipationMetrics> {
        let round = solo_round(&entries.iter().map(|e| e.0).collect::<Vec<_>>());
        let states: Vec<SystemState> = entries.iter().map(|e| rated(params, e.1)).collect();
        let priors: Vec<&SystemState> = states.iter().collect();
        judge(params, &round, &priors).expect("valid round")
    }

    proptest! {
        #[test]
        fn every_metric_stays_in_its_range(
            entries in arbitrary_round(),
            gaussian in any::<bool>(),
        ) {
            let params = EloMmrParams {
                variant: if gaussian { Variant::Gaussian } else { Variant::Logistic },
                ..EloMmrParams::default()
            };
            for m in metrics_of(&params, &entries) {
                prop_assert!((0.0..=1.0).contains(&m.pair_inversion));
                prop_assert!((0.0..=1.0).contains(&m.rank_deviation));
                prop_assert!(m.log_loss.is_finite() && m.log_loss >= 0.0);
                prop_assert!((0.0..=1.0).contains(&m.brier));
            }
        }

        #[test]
        fn ratings_in_finishing_order_predict_perfectly(
            mut ranks in prop::collection::vec(1u64..8, 2..40),
        ) {
            ranks.sort_unstable();
            // Distinct ratings, falling along the finishing order (ties in any order).
            let entries: Vec<(u64, f64)> = ranks
                .iter()
                .enumerate()
                .map(|(i, &rank)| (rank, 3000.0 - 10.0 * i as f64))
                .collect();
            for m in metrics_of(&EloMmrParams::default(), &entries) {
                prop_assert_eq!(m.pair_inversion, 1.0);
                prop_assert_eq!(m.rank_deviation, 0.0);
            }
        }

        #[test]
        fn the_order_standings_are_listed_in_does_not_matter(
            entries in arbitrary_round(),
            seed in any::<u64>(),
        ) {
            let params = EloMmrParams::default();
            let round = solo_round(&entries.iter().map(|e| e.0).collect::<Vec<_>>());
            let states: Vec<SystemState> = entries.iter().map(|e| rated(&params, e.1)).collect();
            let metrics = judge(&params, &round, &states.iter().collect::<Vec<_>>())
                .expect("valid round");
            prop_assume!(!metrics.is_empty());

            // A deterministic shuffle of the listing order, by a multiplicative hash.
            let mut order: Vec<usize> = (0..entries.len()).collect();
            order.sort_by_key(|&i| (i as u64 ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let shuffled = Round::new(order.iter().map(|&i| round.standings[i].clone()).collect());
            let priors: Vec<&SystemState> = order.iter().map(|&i| &states[i]).collect();
            let again = judge(&params, &shuffled, &priors).expect("valid round");
            for (k, &i) in order.iter().enumerate() {
                prop_assert_eq!(again[k], metrics[i]);
            }
        }

        #[test]
        fn leaving_participations_out_judges_the_round_without_them(
            entries in arbitrary_round(),
            left_out in prop::collection::vec(any::<bool>(), 40),
        ) {
            let (params, round, states) = default_round(&entries);
            let priors: Vec<&SystemState> = states.iter().collect();
            let some = round_metrics(&params, &round, &priors, |i| !left_out[i], Opponents::All)
                .expect("valid round");
            let kept: Vec<usize> = (0..entries.len()).filter(|&i| !left_out[i]).collect();
            if kept.len() < 2 {
                prop_assert!(some.iter().all(Option::is_none));
                return Ok(());
            }
            let cut = Round::new(kept.iter().map(|&i| round.standings[i].clone()).collect());
            let cut_priors: Vec<&SystemState> = kept.iter().map(|&i| priors[i]).collect();
            let alone = round_metrics(&params, &cut, &cut_priors, |_| true, Opponents::All)
                .expect("valid round");
            for (k, &i) in kept.iter().enumerate() {
                prop_assert_eq!(some[i], alone[k]);
            }
            for (i, metrics) in some.iter().enumerate() {
                prop_assert!(!left_out[i] || metrics.is_none());
            }
        }

        #[test]
        fn tiles_of_any_width_sum_every_pair_as_each_row_alone_does(
            entries in arbitrary_round(),
            spreads in prop::collection::vec(1.0..400.0f64, 40),
            gaussian in any::<bool>(),
            tile in 1usize..12,
        ) {
            let model = if gaussian { Model::Gaussian } else { Model::Logistic };
            let mut ranks: Vec<u64> = entries.iter().map(|e| e.0).collect();
            ranks.sort_unstable();
            let performances: Vec<(f64, f64)> = entries
                .iter()
                .zip(&spreads)
                .map(|(e, s)| (e.1, s * s))
                .collect();
            let mut group_of = vec![0; ranks.len()];
            let mut groups = Vec::new();
            for (e, &rank) in ranks.iter().enumerate() {
                if e == 0 || rank != ranks[e - 1] {
                    groups.push(e..e);
                }
                let last = groups.len() - 1;
                groups[last].end = e + 1;
                group_of[e] = last;
            }
            let tiled = pairwise_scores(model, &performances, &group_of, tile);
            for (e, scores) in tiled.iter().enumerate() {
                let alone = row_scores(model, &performances, groups[group_of[e]].clone(), e);
                prop_assert!((scores.log_loss - alone.log_loss).abs() <= 1e-12 * alone.log_loss.max(1.0));
                prop_assert!((scores.brier - alone.brier).abs() <= 1e-12);
                prop_assert_eq!((scores.log_loss_variance, scores.brier_variance), (0.0, 0.0));
            }
        }

        #[test]
        fn a_sample_as_large_as_the_field_is_exact(
            entries in arbitrary_round(),
            extra in 0usize..3,
        ) {
            let (params, round, states) = default_round(&entries);
            let priors: Vec<&SystemState> = states.iter().collect();
            let sample = Opponents::AtMost { count: (entries.len() - 1 + extra).max(2), seed: 7 };
            let all = round_metrics(&params, &round, &priors, |_| true, Opponents::All);
            let sampled = round_metrics(&params, &round, &priors, |_| true, sample);
            prop_assert_eq!(all, sampled);
        }

        #[test]
        fn sampled_scores_stay_in_range_and_repeat_exactly(
            entries in arbitrary_round(),
            m in 2usize..8,
            seed in any::<u64>(),
        ) {
            let (params, round, states) = default_round(&entries);
            let priors: Vec<&SystemState> = states.iter().collect();
            let sampled =
                round_metrics(&params, &round, &priors, |_| true, Opponents::AtMost { count: m, seed })
                    .expect("valid round");
            for metrics in sampled.iter().flatten() {
                prop_assert!(metrics.log_loss.is_finite() && metrics.log_loss >= 0.0);
                prop_assert!((0.0..=1.0).contains(&metrics.brier));
                prop_assert!(metrics.log_loss_variance >= 0.0 && metrics.brier_variance >= 0.0);
            }
            let again = round_metrics(
                &params, &round, &priors, |_| true, Opponents::AtMost { count: m, seed },
            );
            prop_assert_eq!(Ok(sampled), again);
        }

        #[test]
        fn the_fast_counts_agree_with_looking_at_every_pair(entries in arbitrary_round()) {
            let metrics = metrics_of(&EloMmrParams::default(), &entries);
            // A round where everybody ties predicts nothing.
            prop_assume!(!metrics.is_empty());
            let opponents = (entries.len() - 1) as f64;
            for (i, &(rank_i, mu_i)) in entries.iter().enumerate() {
                let mut correct = 0.0;
                for (j, &(rank_j, mu_j)) in entries.iter().enumerate() {
                    if i == j {
                        continue;
                    }
                    correct += if rank_i == rank_j {
                        1.0
                    } else if mu_i == mu_j {
                        0.0
                    } else if (rank_i < rank_j) == (mu_i > mu_j) {
                        1.0
                    } else {
                        0.0
                    };
                }
                prop_assert_eq!(metrics[i].pair_inversion, correct / opponents);

                // Places (0-based) the actual result allows, and the position sorting on
                // ratings predicts (equal ratings in finishing order: by rank, then name).
                let actual_first = entries.iter().filter(|e| e.0 < rank_i).count();
                let actual_last = entries.iter().filter(|e| e.0 <= rank_i).count() - 1;
                let name = |k: usize| format!("p{k}");
                let predicted = entries
                    .iter()
                    .enumerate()
                    .filter(|&(j, &(rank_j, mu_j))| {
                        mu_j > mu_i
                            || (mu_j == mu_i
                                && (rank_j < rank_i || (rank_j == rank_i && name(j) < name(i))))
                    })
                    .count();
                let gap = actual_first.saturating_sub(predicted)
                    .max(predicted.saturating_sub(actual_last));
                prop_assert_eq!(metrics[i].rank_deviation, gap as f64 / opponents);
            }
        }
    }
}
