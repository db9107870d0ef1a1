//! Weng-Lin (Weng & Lin, "A Bayesian Approximation Method for Online Ranking", JMLR 2011), the
//! model OpenSkill implements, in two of its forms: Bradley-Terry full pairing (every entrant
//! compared with every other one) and Plackett-Luce (the ranking as a sequence of choices).
//! `docs/weng-lin.md` states the updates this file computes.
//!
//! A team is one entrant whose rating and variance are its members' sums; each member moves by
//! their share of the team's variance. A tie is half a win. Before each round, every
//! participant's variance grows by `tau²` (OpenSkill's dynamics; 0 turns it off).

mod bradley_terry;

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::rating::Rating;
use super::round::Round;
use super::system::{checked_layout, Model, Performance, Rated, RatingSystem};
use super::{Error, LOGISTIC_SCALE};
use crate::bounds::{within, MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};

/// Weng-Lin's parameters, with OpenSkill's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct WengLinParams {
    /// Performance spread β: how far apart two ratings must be for a clear favourite.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub beta: f64,
    /// Smallest factor one round may shrink a variance by (OpenSkill's κ), in (0, 1].
    #[cfg_attr(feature = "schema", schema(exclusive_minimum = 0.0, maximum = 1.0))]
    pub kappa: f64,
    /// Skill drift τ (std) added to every participant before each round.
    #[cfg_attr(feature = "schema", schema(minimum = 0.0, maximum = 1e6))]
    pub tau: f64,
    /// Mean of a new player's prior.
    #[cfg_attr(feature = "schema", schema(minimum = -1e9, maximum = 1e9))]
    pub mu_init: f64,
    /// Std of a new player's prior.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub sigma_init: f64,
    /// How a ranking is read.
    #[cfg_attr(feature = "schema", schema(inline))]
    pub model: WengLinModel,
}

/// The likelihood of a ranking in Weng-Lin's update.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WengLinModel {
    /// Bradley-Terry, full pairing: every pair of entrants is a game; its sums are
    /// interpolated wherever that needs fewer than half the N² terms (from a few thousand
    /// entrants of ordinary spread), O(N) per round for a given spread of variances.
    #[default]
    BradleyTerry,
    /// Plackett-Luce: the winner is chosen from everyone, the second from the rest, and so on.
    /// O(N) per round after sorting.
    PlackettLuce,
}

impl Default for WengLinParams {
    fn default() -> Self {
        Self {
            beta: 25.0 / 6.0,
            kappa: 1e-4,
            tau: 25.0 / 300.0,
            mu_init: 25.0,
            sigma_init: 25.0 / 3.0,
            model: WengLinModel::BradleyTerry,
        }
    }
}

/// A player's belief: a Gaussian `N(mu, sigma²)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WengLinState {
    /// Rating.
    pub mu: f64,
    /// Uncertainty.
    pub sigma: f64,
    /// Rounds played.
    pub rounds: u64,
}

/// Weng-Lin, Bradley-Terry full pairing or Plackett-Luce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WengLin;

/// An entrant as the update sees it: summed rating and variance.
#[derive(Debug, Clone, Copy)]
struct Team {
    mu: f64,
    variance: f64,
}

impl RatingSystem for WengLin {
    type Params = WengLinParams;
    type State = WengLinState;
    const TUNED: &'static [&'static str] = &["beta", "tau"];

    fn validate(params: &WengLinParams) -> Result<(), Error> {
        within("beta", params.beta, MIN_SPREAD, MAX_SPREAD)?;
        if !(params.kappa > 0.0 && params.kappa <= 1.0) {
            return Err(Error::parameter("kappa", "must be a number in (0, 1]"));
        }
        within("tau", params.tau, 0.0, MAX_SPREAD)?;
        within("mu_init", params.mu_init, -MAX_ABS_RATING, MAX_ABS_RATING)?;
        within("sigma_init", params.sigma_init, MIN_SPREAD, MAX_SPREAD)
    }

    fn newcomer(params: &WengLinParams) -> WengLinState {
        WengLinState {
            mu: params.mu_init,
            sigma: params.sigma_init,
            rounds: 0,
        }
    }

    fn check_round(_: &WengLinParams, round: &Round) -> Result<(), Error> {
        round.refuse_weight_and_ceiling("Weng-Lin")?;
        round.refuse_partial_play("Weng-Lin")
    }

    /// Bradley-Terry: [`bradley_terry::sums`], over every pair.
    /// Plackett-Luce: O(N) ([`plackett_luce`]).
    fn rate(
        params: &WengLinParams,
        round: &Round,
        priors: &[&WengLinState],
    ) -> Result<Vec<Rated<WengLinState>>, Error> {
        let layout = checked_layout::<Self>(params, round, priors.len())?;
        let tau2 = params.tau * params.tau;
        let variances: Vec<f64> = priors.iter().map(|p| p.sigma * p.sigma + tau2).collect();
        let teams: Vec<Team> = layout
            .entrants
            .iter()
            .map(|members| Team {
                mu: members.iter().map(|&m| priors[m].mu).sum(),
                variance: members.iter().map(|&m| variances[m]).sum(),
            })
            .collect();
        let updates = match params.model {
            WengLinModel::BradleyTerry => {
                let mus: Vec<f64> = teams.iter().map(|t| t.mu).collect();
                let variances: Vec<f64> = teams.iter().map(|t| t.variance).collect();
                let two_beta2 = 2.0 * params.beta * params.beta;
                bradley_terry::sums(two_beta2, &mus, &variances, &layout.group_of_entrants())
            }
            WengLinModel::PlackettLuce => plackett_luce(params, &teams, &layout.groups),
        };

        let mut rated: Vec<Option<Rated<WengLinState>>> = vec![None; priors.len()];
        for ((members, team), &(omega, delta)) in layout.entrants.iter().zip(&teams).zip(&updates) {
            for &m in members {
                let share = variances[m] / team.variance;
                let variance = variances[m] * (1.0 - share * delta).max(params.kappa);
                rated[m] = Some(Rated {
                    performance: team.mu + omega,
                    state: WengLinState {
                        mu: priors[m].mu + share * omega,
                        sigma: variance.sqrt(),
                        rounds: priors[m].rounds + 1,
                    },
                });
            }
        }
        Ok(rated.into_iter().flatten().collect())
    }

    fn rating(state: &WengLinState) -> Rating {
        Rating {
            mu: state.mu,
            sigma: Some(state.sigma),
        }
    }

    fn rounds(state: &WengLinState) -> u64 {
        state.rounds
    }

    fn with_rating(state: &WengLinState, rating: Rating) -> WengLinState {
        WengLinState {
            mu: rating.mu,
            sigma: rating.sigma.unwrap_or(state.sigma),
            ..*state
        }
    }

    fn model(_: &WengLinParams) -> Model {
        Model::Logistic
    }

    /// Bradley-Terry's P(a beats b) is a logistic in `(μ_a − μ_b) / c` with
    /// `c² = σ_a² + σ_b² + 2β²`, one β² per entrant whatever its size (as in the update): the
    /// logistic model's closed form gives exactly that when an entrant's variance is
    /// `(Σσ² + β²) / LOGISTIC_SCALE²`.
    fn performance(params: &WengLinParams, members: &[&WengLinState]) -> Performance {
        let skill_variance: f64 = members.iter().map(|p| p.sigma * p.sigma).sum();
        let noise_variance = params.beta * params.beta;
        Performance {
            mean: members.iter().map(|p| p.mu).sum(),
            variance: (skill_variance + noise_variance) / (LOGISTIC_SCALE * LOGISTIC_SCALE),
            skill_variance,
            noise_variance,
        }
    }
}

/// Each entrant's `(Ω, Δ)` under Plackett-Luce. With one scale `c` for the round, entrant `i`
/// has weight `e_i = exp(μ_i / c)`, and `S_g` sums the weights of every entrant placed no better
/// than group `g` (`groups` are in rank order). Weng & Lin's sums over the entrants `q` placed
/// no worse than `i`, each divided by the size of `q`'s group, collapse to one term per group:
/// `A = Σ 1/S_g` and `B = Σ 1/S_g²` over the groups up to `i`'s, so
/// `Ω = (σ_i² / c)(1/|g_i| − e_i A)` and `Δ = (σ_i / c)(σ_i² / c²)(e_i A − e_i² B)`.
///
/// Only `e_i A` and `e_i² B` are needed, and both are computed in log space, each term a ratio
/// of at most 1: for `i` in group `k`, `e_i A = exp(ln e_i − ln S_k) · A'_k` with
/// `A'_k = Σ_{g ≤ k} S_k / S_g = 1 + (S_k / S_{k−1}) A'_{k−1}` (and `B'` alike with squares).
/// The weights themselves underflow for an entrant far below the rest (`exp` of −6,000 is
/// 0), which made `S_g` 0 and `e_i A` 0·∞; here nothing overflows and nothing is divided by 0.
fn plackett_luce(
    params: &WengLinParams,
    teams: &[Team],
    groups: &[Range<usize>],
) -> Vec<(f64, f64)> {
    let beta2 = params.beta * params.beta;
    let c = teams.iter().map(|t| t.variance + beta2).sum::<f64>().sqrt();
    let top = teams.iter().map(|t| t.mu).fold(f64::NEG_INFINITY, f64::max);
    let logs: Vec<f64> = teams.iter().map(|t| (t.mu - top) / c).collect();
    // ln S_g, from the last group up.
    let mut below = f64::NEG_INFINITY;
    let mut log_suffix: Vec<f64> = groups
        .iter()
        .rev()
        .map(|g| {
            below = log_add(below, log_sum(&logs[g.clone()]));
            below
        })
        .collect();
    log_suffix.reverse();
    let (mut a, mut b) = (0.0_f64, 0.0_f64);
    let mut previous = f64::NEG_INFINITY;
    let mut updates = vec![(0.0, 0.0); teams.len()];
    for (group, &log_sum) in groups.iter().zip(&log_suffix) {
        // S_k / S_{k−1} ≤ 1; none before the first group, where A' and B' are 0.
        let ratio = if previous == f64::NEG_INFINITY {
            0.0
        } else {
            (log_sum - previous).exp()
        };
        a = ratio.mul_add(a, 1.0);
        b = (ratio * ratio).mul_add(b, 1.0);
        previous = log_sum;
        for i in group.clone() {
            let share = (logs[i] - log_sum).exp();
            let (ea, e2b) = (share * a, share * share * b);
            let variance = teams[i].variance;
            let omega = variance / c * (1.0 / group.len() as f64 - ea);
            let delta = variance.sqrt() / c * variance / (c * c) * (ea - e2b);
            updates[i] = (omega, delta);
        }
    }
    updates
}

/// `ln(eˣ + eʸ)`, exact where one of them is −∞.
fn log_add(x: f64, y: f64) -> f64 {
    let (high, low) = if x >= y { (x, y) } else { (y, x) };
    if low == f64::NEG_INFINITY {
        return high;
    }
    high + (low - high).exp().ln_1p()
}

/// `ln Σ exp(xᵢ)` over a non-empty slice, relative to its largest term.
fn log_sum(xs: &[f64]) -> f64 {
    let high = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    high + xs.iter().map(|&x| (x - high).exp()).sum::<f64>().ln()
}
