//! Glicko-2 (Glickman, "Example of the Glicko-2 system", 2013): a rating, its deviation and a
//! volatility per player. A round is one rating period for its participants, and every other
//! entrant of the round is one game against them (a tie is half a win). `docs/glicko2.md`
//! states every formula this file computes.

use std::f64::consts::PI;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::rating::Rating;
use super::round::Round;
use super::system::{checked_layout, Model, Performance, Rated, RatingSystem};
use super::Error;
use crate::bounds::{within, MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};
use crate::maths::chebyshev::{self, Chebyshev, Leaves};

/// Glicko-2's parameters, with Glickman's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Glicko2Params {
    /// The system constant τ: how far one period may move a volatility.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 100.0))]
    pub tau: f64,
    /// A new player's rating.
    #[cfg_attr(feature = "schema", schema(minimum = -1e9, maximum = 1e9))]
    pub mu_init: f64,
    /// A new player's rating deviation.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub sigma_init: f64,
    /// A new player's volatility.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 10.0))]
    pub volatility_init: f64,
}

impl Default for Glicko2Params {
    fn default() -> Self {
        Self {
            tau: 0.5,
            mu_init: 1500.0,
            sigma_init: 350.0,
            volatility_init: 0.06,
        }
    }
}

/// A player: rating, rating deviation (both in rating points) and volatility.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Glicko2State {
    /// Rating `r`.
    pub mu: f64,
    /// Rating deviation RD.
    pub sigma: f64,
    /// Volatility σ (on Glicko-2's internal scale).
    pub volatility: f64,
    /// Rounds played.
    pub rounds: u64,
}

/// Glicko-2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Glicko2;

/// Rating points per unit of Glicko-2's internal scale (Glickman's 173.7178 ≈ 400 / ln 10).
const SCALE: f64 = 173.7178;
/// The rating that is 0 on the internal scale (only differences of ratings enter the update).
const CENTER: f64 = 1500.0;
/// Glickman's convergence tolerance for the volatility.
const TOLERANCE: f64 = 1e-6;
/// Bound on the volatility iteration's steps, far beyond what it needs (a few dozen).
const MAX_STEPS: usize = 1_000;

impl RatingSystem for Glicko2 {
    type Params = Glicko2Params;
    type State = Glicko2State;
    const TUNED: &'static [&'static str] = &["tau", "sigma_init"];

    fn validate(params: &Glicko2Params) -> Result<(), Error> {
        within("tau", params.tau, MIN_SPREAD, 100.0)?;
        within("mu_init", params.mu_init, -MAX_ABS_RATING, MAX_ABS_RATING)?;
        within("sigma_init", params.sigma_init, MIN_SPREAD, MAX_SPREAD)?;
        within("volatility_init", params.volatility_init, MIN_SPREAD, 10.0)
    }

    fn newcomer(params: &Glicko2Params) -> Glicko2State {
        Glicko2State {
            mu: params.mu_init,
            sigma: params.sigma_init,
            volatility: params.volatility_init,
            rounds: 0,
        }
    }

    fn check_round(_: &Glicko2Params, round: &Round) -> Result<(), Error> {
        round.refuse_weight_and_ceiling("Glicko-2")?;
        round.refuse_partial_play("Glicko-2")?;
        round.refuse_teams("Glicko-2")
    }

    /// Each player's period sums two terms over every other entrant, each a function of the
    /// player's rating alone ([`PeriodSums`]): O(N) per round past 64 players, O(N²) below.
    fn rate(
        params: &Glicko2Params,
        round: &Round,
        priors: &[&Glicko2State],
    ) -> Result<Vec<Rated<Glicko2State>>, Error> {
        let layout = checked_layout::<Self>(params, round, priors.len())?;
        // Opponents are summed over in the layout's order (by rank, then name), so that the
        // result does not depend on the order the standings are listed in, bit for bit.
        let order: Vec<usize> = layout.entrants.iter().map(|members| members[0]).collect();
        let mut position = vec![0; priors.len()];
        for (k, &i) in order.iter().enumerate() {
            position[i] = k;
        }
        let internal: Vec<(f64, f64)> = order
            .iter()
            .map(|&i| ((priors[i].mu - CENTER) / SCALE, priors[i].sigma / SCALE))
            .collect();
        let weights: Vec<f64> = internal.iter().map(|&(_, phi)| g(phi)).collect();
        // Σ_{j≠k} g_j s_kj for each entrant k (in layout order): the weights of everyone
        // behind, and half of those tied.
        let total: f64 = weights.iter().sum();
        let mut scores = vec![0.0; weights.len()];
        let mut ahead = 0.0;
        for range in &layout.groups {
            let tied: f64 = weights[range.clone()].iter().sum();
            for k in range.clone() {
                scores[k] = (total - ahead - tied) + 0.5 * (tied - weights[k]);
            }
            ahead += tied;
        }
        let mus: Vec<f64> = internal.iter().map(|&(mu, _)| mu).collect();
        let sums = PeriodSums::new(&mus, &weights);
        Ok((0..priors.len())
            .into_par_iter()
            .map(|i| {
                let k = position[i];
                let (mu, phi) = internal[k];
                let (information, expected) = sums.without(k);
                let surprise = scores[k] - expected;
                let v = information.recip();
                let prior = priors[i];
                let (performance, state) = if v.is_finite() {
                    let delta = v * surprise;
                    let volatility = new_volatility(prior.volatility, delta, phi, v, params.tau);
                    let widened = phi.hypot(volatility);
                    let phi_new = (widened.powi(-2) + information).recip().sqrt();
                    (
                        CENTER + SCALE * (mu + delta),
                        Glicko2State {
                            mu: CENTER + SCALE * phi_new.mul_add(phi_new * surprise, mu),
                            sigma: SCALE * phi_new,
                            volatility,
                            rounds: prior.rounds + 1,
                        },
                    )
                } else {
                    // Every game was a foregone conclusion: the period says nothing, and the
                    // deviation widens as for a period without games.
                    (
                        prior.mu,
                        Glicko2State {
                            sigma: SCALE * phi.hypot(prior.volatility),
                            rounds: prior.rounds + 1,
                            ..*prior
                        },
                    )
                };
                Rated { performance, state }
            })
            .collect())
    }

    fn rating(state: &Glicko2State) -> Rating {
        Rating {
            mu: state.mu,
            sigma: Some(state.sigma),
        }
    }

    fn rounds(state: &Glicko2State) -> u64 {
        state.rounds
    }

    fn is_finite(state: &Glicko2State) -> bool {
        [state.mu, state.sigma, state.volatility]
            .into_iter()
            .all(f64::is_finite)
    }

    fn with_rating(state: &Glicko2State, rating: Rating) -> Glicko2State {
        Glicko2State {
            mu: rating.mu,
            sigma: rating.sigma.unwrap_or(state.sigma),
            ..*state
        }
    }

    fn model(_: &Glicko2Params) -> Model {
        Model::Logistic
    }

    /// Glicko's expected score of `a` against `b` is a logistic in `r_a − r_b` with scale
    /// `√(SCALE² + 3(RD_a² + RD_b²)/π²)`. The logistic model's closed form gives exactly that
    /// when a player's performance variance is `RD² + π² SCALE² / 6` (half the constant each).
    fn performance(_: &Glicko2Params, members: &[&Glicko2State]) -> Performance {
        let skill_variance: f64 = members.iter().map(|p| p.sigma * p.sigma).sum();
        let noise_variance = PI * PI * SCALE * SCALE / 6.0 * members.len() as f64;
        Performance {
            mean: members.iter().map(|p| p.mu).sum(),
            variance: skill_variance + noise_variance,
            skill_variance,
            noise_variance,
        }
    }
}

/// Below this much information per entrant of the round, a player's sums are taken exactly:
/// the interpolant's absolute error (rounding level times N) would be too large a share of
/// them. Only a player far from the whole field has so little.
const SMALL_INFORMATION: f64 = 1e-6;

/// The two sums a rating period needs, as functions of the player's rating `x` (internal
/// scale), over every entrant `j` of the round: the information `I(x) = Σ g_j² E_j (1 − E_j)`
/// and the expected score `T(x) = Σ g_j E_j`, with `E_j = 1 / (1 + exp(−g_j (x − μ_j)))`.
/// Each term is a logistic in `x` whose nearest complex singularity is `π / g_j ≥ π` away, so
/// both are interpolated to rounding accuracy on Chebyshev leaves `4 / max g_j` wide, as
/// Codeforces' tanh sum is (docs/codeforces.md): O(N) per round instead of O(N²). Small
/// rounds, and rounds whose ratings spread over so many leaves that the interpolant would
/// cost more than N exact sums, sum exactly.
struct PeriodSums<'a> {
    mus: &'a [f64],
    weights: &'a [f64],
    grid: Leaves,
    /// Per leaf: the interpolants of `I` and `T`.
    leaves: Vec<(Chebyshev, Chebyshev)>,
}

impl<'a> PeriodSums<'a> {
    fn new(mus: &'a [f64], weights: &'a [f64]) -> Self {
        let low = mus.iter().copied().fold(f64::INFINITY, f64::min);
        let high = mus.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let steepest = weights.iter().copied().fold(0.0, f64::max);
        let grid = Leaves::covering(low, high, 4.0 / steepest);
        let mut sums = Self {
            mus,
            weights,
            grid,
            leaves: Vec::new(),
        };
        if grid.worth_fitting(mus.len()) {
            sums.leaves = (0..grid.count)
                .into_par_iter()
                .map(|leaf| {
                    let (a, b) = grid.bounds(leaf);
                    let values = chebyshev::nodes(a, b).map(|x| sums.exact(x, None));
                    (
                        Chebyshev::fit(a, b, &values.map(|(i, _)| i)),
                        Chebyshev::fit(a, b, &values.map(|(_, t)| t)),
                    )
                })
                .collect();
        }
        sums
    }

    /// `(I(x), T(x))` summed over every entrant but `skip`.
    fn exact(&self, x: f64, skip: Option<usize>) -> (f64, f64) {
        self.mus
            .iter()
            .zip(self.weights)
            .enumerate()
            .filter(|&(j, _)| Some(j) != skip)
            .fold((0.0, 0.0), |(information, expected), (_, (&mu, &g))| {
                let e = 1.0 / (1.0 + (-g * (x - mu)).exp());
                (information + g * g * e * (1.0 - e), expected + g * e)
            })
    }

    /// `(I, T)` at entrant `k`'s own rating, over every other entrant.
    fn without(&self, k: usize) -> (f64, f64) {
        let (x, g) = (self.mus[k], self.weights[k]);
        if self.leaves.is_empty() {
            return self.exact(x, Some(k));
        }
        let (information, expected) = &self.leaves[self.grid.index(x)];
        // The entrant's own term: E = 1/2.
        let information = information.eval(x).0 - g * g / 4.0;
        if information < SMALL_INFORMATION * self.mus.len() as f64 {
            return self.exact(x, Some(k));
        }
        (information, expected.eval(x).0 - g / 2.0)
    }
}

/// Glickman's `g(φ)`: how much a game against an opponent of deviation `φ` tells.
fn g(phi: f64) -> f64 {
    (1.0 + 3.0 * phi * phi / (PI * PI)).sqrt().recip()
}

/// The new volatility: the root of Glickman's `f` by the Illinois method (his step 5).
fn new_volatility(volatility: f64, delta: f64, phi: f64, v: f64, tau: f64) -> f64 {
    let a = (volatility * volatility).ln();
    let (delta2, phi2) = (delta * delta, phi * phi);
    let f = |x: f64| {
        let ex = x.exp();
        let denominator = phi2 + v + ex;
        ex * (delta2 - phi2 - v - ex) / (2.0 * denominator * denominator) - (x - a) / (tau * tau)
    };
    let mut low = a;
    let mut high = if delta2 > phi2 + v {
        (delta2 - phi2 - v).ln()
    } else {
        let mut k = 1.0;
        while f(a - k * tau) < 0.0 && k < MAX_STEPS as f64 {
            k += 1.0;
        }
        a - k * tau
    };
    let (mut f_low, mut f_high) = (f(low), f(high));
    for _ in 0..MAX_STEPS {
        if (high - low).abs() <= TOLERANCE {
            break;
        }
        let next = low + (low - high) * f_low / (f_high - f_low);
        let f_next = f(next);
        if f_next * f_high <= 0.0 {
            low = high;
            f_low = f_high;
        } else {
            f_low /= 2.0;
        }
        high = next;
        f_high = f_next;
    }
    (low / 2.0).exp()
}
