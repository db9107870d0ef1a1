//! Codeforces' rating system as the Elo-MMR paper evaluates it (§6.2; the reference crate
//! `multi-skill` calls it `CodeforcesSys`): each player's performance is the rating at which
//! their expected rank would be the geometric mean of their actual and expected ranks, and the
//! new rating is a weighted average of the old one and that performance. `docs/codeforces.md`
//! states every formula this file computes.
//!
//! Every sum it needs is one function of a single variable, `F(x) = Σ_j tanh(a (x − μ_j))`,
//! evaluated at each player's rating and inverted at each player's target. `F` is interpolated
//! once per round on Chebyshev leaves, to rounding accuracy, so a round costs O(N) sums at a
//! few hundred points plus O(1) per player, not O(N²); rounds of at most 64 players sum it
//! exactly instead, which is cheaper at that size.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::chebyshev::{self, Chebyshev};
use super::params::{within, MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};
use super::rating::Rating;
use super::round::Round;
use super::solve::increasing_root;
use super::system::{checked_layout, Model, Performance, Rated, RatingSystem};
use super::{tanh, Error, LOGISTIC_SCALE};

/// The Codeforces system's parameters, with the paper's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodeforcesParams {
    /// Performance spread β (the std of a logistic performance) in a round of weight 1.
    pub beta: f64,
    /// How much a round's performance weighs against the old rating (times the round weight).
    pub weight_multiplier: f64,
    /// A new player's rating.
    pub mu_init: f64,
    /// The σ shown for every player: the system keeps no uncertainty.
    pub sigma_init: f64,
}

impl Default for CodeforcesParams {
    fn default() -> Self {
        Self {
            // Codeforces' 400-point logistic (base 10) as a standard deviation.
            beta: 400.0 / (LOGISTIC_SCALE * std::f64::consts::LN_10),
            weight_multiplier: 1.0,
            mu_init: 1500.0,
            sigma_init: 350.0,
        }
    }
}

/// A player: a rating, the σ shown, and a round count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CodeforcesState {
    /// Rating.
    pub mu: f64,
    /// The σ shown (always the pool's `sigma_init`).
    pub sigma: f64,
    /// Rounds played.
    pub rounds: u64,
}

/// Codeforces' system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codeforces;

impl RatingSystem for Codeforces {
    type Params = CodeforcesParams;
    type State = CodeforcesState;

    fn validate(params: &CodeforcesParams) -> Result<(), Error> {
        within("beta", params.beta, MIN_SPREAD, MAX_SPREAD)?;
        within(
            "weight_multiplier",
            params.weight_multiplier,
            MIN_SPREAD,
            1e6,
        )?;
        within("mu_init", params.mu_init, -MAX_ABS_RATING, MAX_ABS_RATING)?;
        within("sigma_init", params.sigma_init, MIN_SPREAD, MAX_SPREAD)
    }

    fn newcomer(params: &CodeforcesParams) -> CodeforcesState {
        CodeforcesState {
            mu: params.mu_init,
            sigma: params.sigma_init,
            rounds: 0,
        }
    }

    fn check_round(_: &CodeforcesParams, round: &Round) -> Result<(), Error> {
        if round.perf_ceiling.is_some() {
            return Err(Error::round(
                "perf_ceiling",
                "must be left out: Codeforces has no performance to cap",
            ));
        }
        round.refuse_partial_play("Codeforces")?;
        round.refuse_teams("Codeforces")
    }

    fn rate(
        params: &CodeforcesParams,
        round: &Round,
        priors: &[&CodeforcesState],
    ) -> Result<Vec<Rated<CodeforcesState>>, Error> {
        let layout = checked_layout::<Self>(params, round, priors.len())?;
        let n = priors.len() as f64;
        let spread = params.beta / round.weight.sqrt();
        let weight = round.weight * params.weight_multiplier;
        let ratings: Vec<f64> = priors.iter().map(|p| p.mu).collect();
        let sum = TanhSum::new(&ratings, 1.0 / (2.0 * LOGISTIC_SCALE * spread));
        // Each player's place: 1-based, the middle of their tie.
        let mut place = vec![0.0; priors.len()];
        let mut before = 0;
        for group in &layout.groups {
            let size = group.len();
            for members in &layout.entrants[group.clone()] {
                place[members[0]] = before as f64 + (size as f64 + 1.0) / 2.0;
            }
            before += size;
        }
        Ok((0..priors.len())
            .into_par_iter()
            .map(|i| {
                let expected = (n + 1.0 - sum.value(ratings[i])) / 2.0;
                let rank = (place[i] * expected).sqrt();
                let performance = sum.inverse(n + 1.0 - 2.0 * rank);
                Rated {
                    performance,
                    state: CodeforcesState {
                        mu: (priors[i].mu + weight * performance) / (1.0 + weight),
                        rounds: priors[i].rounds + 1,
                        ..*priors[i]
                    },
                }
            })
            .collect())
    }

    fn rating(state: &CodeforcesState) -> Rating {
        Rating {
            mu: state.mu,
            sigma: state.sigma,
        }
    }

    fn rounds(state: &CodeforcesState) -> u64 {
        state.rounds
    }

    fn model(_: &CodeforcesParams) -> Model {
        Model::Logistic
    }

    /// The system's own win probability is a logistic in `μ_a − μ_b` with std β: each player
    /// performs with variance `β²/2` around their rating, and no uncertainty about it.
    fn performance(params: &CodeforcesParams, members: &[&CodeforcesState]) -> Performance {
        let noise_variance = params.beta * params.beta / 2.0 * members.len() as f64;
        Performance {
            mean: members.iter().map(|p| p.mu).sum(),
            variance: noise_variance,
            skill_variance: 0.0,
            noise_variance,
        }
    }
}

/// Rounds of at most this many players sum `F` exactly wherever it is needed: O(N²) work that,
/// this small, costs less than the interpolant's few hundred exact sums.
const DIRECT_LIMIT: usize = 64;

/// `F(x) = Σ_j tanh(a (x − μ_j))`: for a small round the ratings themselves, otherwise
/// Chebyshev leaves `2/a` wide covering every rating and far enough beyond that `F` is within
/// one entrant of `±N` at the ends.
struct TanhSum<'a> {
    ratings: &'a [f64],
    a: f64,
    start: f64,
    end: f64,
    width: f64,
    leaves: Vec<Chebyshev>,
    entrants: f64,
}

impl<'a> TanhSum<'a> {
    fn new(ratings: &'a [f64], a: f64) -> Self {
        let low = ratings.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratings.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // tanh(z) is within 1/(2N) of 1 from z = ln(4N)/2 on.
        let reach = ((4.0 * ratings.len() as f64).ln() / 2.0 + 1.0) / a;
        let width = 2.0 / a;
        let start = low - reach;
        let count = (((high + reach - start) / width).ceil() as usize).max(1);
        let mut sum = Self {
            ratings,
            a,
            start,
            end: start + count as f64 * width,
            width,
            leaves: Vec::new(),
            entrants: ratings.len() as f64,
        };
        if ratings.len() > DIRECT_LIMIT {
            sum.leaves = (0..count)
                .into_par_iter()
                .map(|k| {
                    let (lo, hi) = (start + k as f64 * width, start + (k + 1) as f64 * width);
                    Chebyshev::fit(lo, hi, &chebyshev::nodes(lo, hi).map(|x| sum.exact(x).0))
                })
                .collect();
        }
        sum
    }

    /// `F(x)` and its slope, summed over every rating.
    fn exact(&self, x: f64) -> (f64, f64) {
        self.ratings.iter().fold((0.0, 0.0), |(value, slope), &mu| {
            let t = tanh(self.a * (x - mu));
            (value + t, slope + self.a * (1.0 - t * t))
        })
    }

    /// The leaf holding `x`, ends included.
    fn leaf(&self, x: f64) -> &Chebyshev {
        let k = ((x - self.start) / self.width).floor().max(0.0) as usize;
        &self.leaves[k.min(self.leaves.len() - 1)]
    }

    fn value(&self, x: f64) -> f64 {
        if self.leaves.is_empty() {
            self.exact(x).0
        } else {
            self.leaf(x).eval(x).0
        }
    }

    /// The `x` where `F(x) = target`, for a target in `(−N, N)`, clamped to the leaves.
    fn inverse(&self, target: f64) -> f64 {
        let target = target.clamp(-self.entrants, self.entrants);
        let (mut lo, mut hi) = (self.start, self.end);
        if self.leaves.is_empty() {
            return increasing_root(lo, hi, 0.5 * (lo + hi), |x| {
                let (value, slope) = self.exact(x);
                (value - target, slope)
            });
        }
        // Bisect on leaf boundaries to the leaf holding the root, then solve there.
        let (mut first, mut last) = (0, self.leaves.len());
        while last - first > 1 {
            let mid = (first + last) / 2;
            let edge = self.start + mid as f64 * self.width;
            if self.leaves[mid].eval(edge).0 < target {
                first = mid;
                lo = edge;
            } else {
                last = mid;
                hi = edge;
            }
        }
        let leaf = &self.leaves[first];
        increasing_root(lo, hi, 0.5 * (lo + hi), |x| {
            let (value, slope) = leaf.eval(x);
            (value - target, slope)
        })
    }
}
