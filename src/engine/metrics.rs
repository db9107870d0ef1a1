//! Accuracy metrics of one round (docs/elo-mmr.md "Accuracy metrics", paper §6.3), judged on the
//! beliefs held *before* the round is applied: pair inversion and rank deviation, plus the log
//! loss and Brier score of the pairwise win probabilities of [`predict`](super::predict). Pure
//! arithmetic on priors; nothing here changes a belief or knows where rounds come from.
//!
//! A team is one entrant (its rating and performance distribution are the ones its rating
//! system gives it, a [`Performance`](super::Performance); for Elo-MMR its members' sums); each
//! member is credited with the team's metrics. How the
//! undecided cases count:
//! - equal prior ratings of two entrants who did not tie: the prediction "the higher rating
//!   finishes ahead" says nothing, so the pair counts half for pair inversion, and for rank
//!   deviation the entrants sharing a rating predict a range of ranks, just as a tie gives a
//!   range of actual ranks: the deviation is the gap between the two ranges (0 if they meet);
//! - a tie: counts as a correct prediction for pair inversion (the paper's "winning or
//!   tying"), and as the outcome 1/2 for log loss and Brier;
//! - a round where everybody ties scores like any other (pair inversion 1, rank deviation 0),
//!   unlike the reference implementation, which leaves such rounds out.

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
}

impl MetricsSum {
    /// Adds one participation.
    pub fn add(&mut self, metrics: &ParticipationMetrics) {
        self.count += 1;
        self.pair_inversion += metrics.pair_inversion;
        self.rank_deviation += metrics.rank_deviation;
        self.log_loss += metrics.log_loss;
        self.brier += metrics.brier;
    }

    /// Number of participations added.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The mean of every metric, or `None` if nothing was added.
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
        })
    }
}

/// The metrics of every participation of `round`, aligned with `round.standings`.
/// `priors[i]` is the belief of `round.standings[i].player` before the round, as for
/// [`rate_round`](super::rate_round). Predictions use the priors as they are (no diffusion)
/// and a round of weight 1, exactly as [`predict`](super::predict) would answer before the
/// round.
///
/// Pair inversion and rank deviation cost O(N log N); log loss and Brier look at all N² pairs,
/// in parallel over entrants, each entrant's sum sequential, so the result does not depend on
/// the thread count nor on the order of `round.standings`.
///
/// ```
/// use mmr_service::engine::metrics::round_metrics;
/// use mmr_service::engine::{Params, PlayerState, Round, Standing, SystemParams, SystemState};
///
/// let params = Params::default();
/// let mut strong = PlayerState::new(&params);
/// strong.mu += 400.0;
/// let weak = SystemState::EloMmr(PlayerState::new(&params));
/// let strong = SystemState::EloMmr(strong);
/// let round = Round::new(vec![Standing::solo("strong", 1), Standing::solo("weak", 2)]);
/// let metrics = round_metrics(&SystemParams::EloMmr(params), &round, &[&strong, &weak])?;
/// assert_eq!(metrics[0].pair_inversion, 1.0);
/// assert_eq!(metrics[1].rank_deviation, 0.0);
/// # Ok::<(), mmr_service::engine::Error>(())
/// ```
pub fn round_metrics(
    system: &SystemParams,
    round: &Round,
    priors: &[&SystemState],
) -> Result<Vec<ParticipationMetrics>, Error> {
    system.validate()?;
    if priors.len() != round.standings.len() {
        return Err(Error::PriorCount {
            standings: round.standings.len(),
            priors: priors.len(),
        });
    }
    let layout = Layout::of(round)?;
    let performances: Vec<(f64, f64)> = layout
        .entrants
        .iter()
        .map(|members| {
            let states: Vec<&SystemState> = members.iter().map(|&m| priors[m]).collect();
            let performance = system.performance(&states)?;
            Ok((performance.mean, performance.variance))
        })
        .collect::<Result<_, Error>>()?;
    let ratings: Vec<f64> = performances.iter().map(|&(mu, _)| mu).collect();
    let ordering = RatingOrder::of(&ratings, &layout);
    let opponents = (ratings.len() - 1) as f64;

    let group_of = layout.group_of_entrants();
    let entrant_metrics: Vec<ParticipationMetrics> = (0..ratings.len())
        .into_par_iter()
        .map(|e| {
            let group = &layout.groups[group_of[e]];
            let (log_loss, brier) =
                pairwise_scores(system.model(), &performances, group.clone(), e);
            ParticipationMetrics {
                pair_inversion: ordering.correct_halves[e] as f64 / (2.0 * opponents),
                rank_deviation: ordering.deviation(e, group.start, group.end - 1) as f64
                    / opponents,
                log_loss: log_loss / opponents,
                brier: brier / opponents,
            }
        })
        .collect();

    let mut metrics = vec![entrant_metrics[0]; round.standings.len()];
    for (members, entrant) in layout.entrants.iter().zip(&entrant_metrics) {
        for &m in members {
            metrics[m] = *entrant;
        }
    }
    Ok(metrics)
}

/// Sums of log loss and Brier score of entrant `e` against every other entrant. Entrants are in
/// rank order, so those before `ties` beat `e` and those after lost to it. The probability of
/// the outcome that happened is computed directly (winner over loser), which keeps a tiny
/// probability accurate instead of forming it as `1 − p`.
fn pairwise_scores(
    model: Model,
    performances: &[(f64, f64)],
    ties: std::ops::Range<usize>,
    e: usize,
) -> (f64, f64) {
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
    (decided.value() + TIE_OUTCOME * tied.value(), brier)
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

/// Pair inversion counts and predicted rank ranges, from one sort of the prior ratings.
struct RatingOrder {
    /// Each entrant's equal-rating class, 0 for the highest rating.
    class: Vec<usize>,
    /// Entrants rated strictly higher than each class.
    above_class: Vec<usize>,
    /// Entrants in each class.
    class_size: Vec<usize>,
    /// Twice the correctly predicted opponents of each entrant (a pair with equal ratings and
    /// different ranks counts 1 of 2).
    correct_halves: Vec<u64>,
}

impl RatingOrder {
    fn of(ratings: &[f64], layout: &Layout) -> Self {
        let n = ratings.len();
        let mut by_rating: Vec<usize> = (0..n).collect();
        by_rating.sort_by(|&a, &b| ratings[b].total_cmp(&ratings[a]));
        let mut class = vec![0; n];
        let mut above_class = Vec::new();
        let mut class_size: Vec<usize> = Vec::new();
        for (position, &e) in by_rating.iter().enumerate() {
            let same = position > 0 && ratings[by_rating[position - 1]] == ratings[e];
            if !same {
                above_class.push(position);
                class_size.push(0);
            }
            class[e] = class_size.len() - 1;
            if let Some(size) = class_size.last_mut() {
                *size += 1;
            }
        }

        let classes = class_size.len();
        let mut correct_halves = vec![0u64; n];
        // Best groups first: who finished ahead of each entrant, counted by rating class.
        let mut ahead = Fenwick::new(classes);
        for range in &layout.groups {
            for e in range.clone() {
                let rated_higher = ahead.below(class[e]);
                let rated_equal = ahead.below(class[e] + 1) - rated_higher;
                let tied = (range.len() - 1) as u64;
                correct_halves[e] += 2 * (rated_higher + tied) + rated_equal;
            }
            for e in range.clone() {
                ahead.add(class[e]);
            }
        }
        // Worst groups first: who finished behind.
        let mut behind = Fenwick::new(classes);
        for range in layout.groups.iter().rev() {
            for e in range.clone() {
                let rated_higher_or_equal = behind.below(class[e] + 1);
                let rated_equal = rated_higher_or_equal - behind.below(class[e]);
                let rated_lower = behind.total() - rated_higher_or_equal;
                correct_halves[e] += 2 * rated_lower + rated_equal;
            }
            for e in range.clone() {
                behind.add(class[e]);
            }
        }
        Self {
            class,
            above_class,
            class_size,
            correct_halves,
        }
    }

    /// Gap between entrant `e`'s predicted rank range and its actual one, `first..=last`
    /// (0-based positions).
    fn deviation(&self, e: usize, first: usize, last: usize) -> usize {
        let c = self.class[e];
        let predicted_first = self.above_class[c];
        let predicted_last = predicted_first + self.class_size[c] - 1;
        first
            .saturating_sub(predicted_last)
            .max(predicted_first.saturating_sub(last))
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
    use crate::engine::{Params, PlayerState, Standing, Variant};
    use proptest::prelude::*;

    fn rated(params: &Params, mu: f64) -> SystemState {
        SystemState::EloMmr(PlayerState {
            mu,
            ..PlayerState::new(params)
        })
    }

    fn newcomer(params: &Params) -> SystemState {
        SystemState::EloMmr(PlayerState::new(params))
    }

    /// [`round_metrics`] in an Elo-MMR pool with `params`.
    fn judge(
        params: &Params,
        round: &Round,
        priors: &[&SystemState],
    ) -> Result<Vec<ParticipationMetrics>, Error> {
        round_metrics(&SystemParams::EloMmr(*params), round, priors)
    }

    /// The performance distribution of a team of `members` in an Elo-MMR pool.
    fn performance(params: &Params, members: &[&SystemState]) -> (f64, f64) {
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
        let params = Params::default();
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
    fn newcomers_are_a_coin_flip_and_predict_every_rank() {
        let params = Params::default();
        let newcomer = newcomer(&params);
        let round = solo_round(&[1, 2, 2, 4]);
        let metrics = judge(&params, &round, &[&newcomer; 4]).expect("valid round of newcomers");
        // The winner: three decided pairs, each half right.
        assert_eq!(metrics[0].pair_inversion, 0.5);
        // A tied player: one tie (right) and two decided pairs (half right each).
        assert_eq!(metrics[1].pair_inversion, 2.0 / 3.0);
        for m in &metrics {
            assert_eq!(m.rank_deviation, 0.0);
            assert!((m.log_loss - std::f64::consts::LN_2).abs() < 1e-15);
        }
        assert_eq!(metrics[0].brier, 0.25);
        // Against the tied partner the prediction 1/2 is exact.
        assert_eq!(metrics[1].brier, 0.25 * 2.0 / 3.0);
    }

    #[test]
    fn a_team_is_judged_as_one_entrant_on_its_summed_rating() {
        let params = Params::default();
        let member = |player: &str, rank| Standing {
            player: player.into(),
            rank,
            team: Some("duo".into()),
        };
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
        let params = Params::default();
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
    fn a_round_where_everybody_ties_is_predicted_perfectly_by_any_ratings() {
        let params = Params::default();
        let (a, b) = (rated(&params, 1200.0), rated(&params, 1800.0));
        let metrics = judge(&params, &solo_round(&[1, 1]), &[&a, &b]).expect("valid round");
        for m in metrics {
            assert_eq!((m.pair_inversion, m.rank_deviation), (1.0, 0.0));
        }
    }

    #[test]
    fn a_hopeless_upset_costs_a_finite_log_loss() {
        let params = Params {
            variant: Variant::Gaussian,
            ..Params::default()
        };
        let (a, b) = (rated(&params, -1e6), rated(&params, 1e6));
        let metrics = judge(&params, &solo_round(&[1, 2]), &[&a, &b]).expect("valid round");
        assert!(metrics[0].log_loss.is_finite() && metrics[0].log_loss > 400.0);
        assert_eq!(metrics[0].brier, 1.0);
    }

    #[test]
    fn a_wrong_number_of_priors_is_rejected() {
        let params = Params::default();
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
    fn means_are_none_until_something_is_added() {
        let mut sum = MetricsSum::default();
        assert_eq!(sum.mean(), None);
        let one = ParticipationMetrics {
            pair_inversion: 1.0,
            rank_deviation: 0.0,
            log_loss: 0.5,
            brier: 0.25,
        };
        sum.add(&one);
        sum.add(&ParticipationMetrics {
            pair_inversion: 0.0,
            ..one
        });
        assert_eq!(sum.count(), 2);
        assert_eq!(sum.mean().map(|m| m.pair_inversion), Some(0.5));
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

    fn metrics_of(params: &Params, entries: &[(u64, f64)]) -> Vec<ParticipationMetrics> {
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
            let params = Params {
                variant: if gaussian { Variant::Gaussian } else { Variant::Logistic },
                ..Params::default()
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
            for m in metrics_of(&Params::default(), &entries) {
                prop_assert_eq!(m.pair_inversion, 1.0);
                prop_assert_eq!(m.rank_deviation, 0.0);
            }
        }

        #[test]
        fn the_order_standings_are_listed_in_does_not_matter(
            entries in arbitrary_round(),
            seed in any::<u64>(),
        ) {
            let params = Params::default();
            let round = solo_round(&entries.iter().map(|e| e.0).collect::<Vec<_>>());
            let states: Vec<SystemState> = entries.iter().map(|e| rated(&params, e.1)).collect();
            let metrics = judge(&params, &round, &states.iter().collect::<Vec<_>>())
                .expect("valid round");

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
        fn the_fast_counts_agree_with_looking_at_every_pair(entries in arbitrary_round()) {
            let metrics = metrics_of(&Params::default(), &entries);
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
                        0.5
                    } else if (rank_i < rank_j) == (mu_i > mu_j) {
                        1.0
                    } else {
                        0.0
                    };
                }
                prop_assert_eq!(metrics[i].pair_inversion, correct / opponents);

                // Ranks (0-based) the actual result and the ratings allow, and their gap.
                let actual_first = entries.iter().filter(|e| e.0 < rank_i).count();
                let actual_last = entries.iter().filter(|e| e.0 <= rank_i).count() - 1;
                let predicted_first = entries.iter().filter(|e| e.1 > mu_i).count();
                let predicted_last = entries.iter().filter(|e| e.1 >= mu_i).count() - 1;
                let gap = actual_first.saturating_sub(predicted_last)
                    .max(predicted_first.saturating_sub(actual_last));
                prop_assert_eq!(metrics[i].rank_deviation, gap as f64 / opponents);
            }
        }
    }
}
