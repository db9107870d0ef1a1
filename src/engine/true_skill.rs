//! TrueSkill (Herbrich, Minka & Graepel, "TrueSkill: A Bayesian Skill Rating System", NIPS
//! 2006): Gaussian beliefs about skill, updated by expectation propagation on the round's
//! factor graph. `docs/trueskill.md` states the graph, the message schedule and every formula
//! this file computes.
//!
//! Entrants are chained in the layout's order (best rank first; tied entrants by name), one
//! difference between each neighbouring pair: a strict win for different ranks, a draw within
//! the draw margin for equal ones. Only the chain is iterated; everything below it is sent
//! once down and once up. A standing's `partial_play` weighs the player's performance in their
//! team's sum.

use serde::{Deserialize, Serialize};

use super::rating::Rating;
use super::round::Round;
use super::system::{checked_layout, Model, Performance, Rated, RatingSystem};
use super::Error;
use crate::bounds::{within, MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};
use crate::maths::normal;

/// TrueSkill's parameters, with the paper's defaults (in its units: μ₀ = 25).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct TrueSkillParams {
    /// Performance spread β (std of a performance around skill).
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub beta: f64,
    /// Dynamics τ: skill drift (std) added to every participant before each round.
    #[cfg_attr(feature = "schema", schema(minimum = 0.0, maximum = 1e6))]
    pub tau: f64,
    /// Probability that two evenly matched entrants of one player each draw, in (0, 1): it
    /// sets the draw margin.
    #[cfg_attr(
        feature = "schema",
        schema(exclusive_minimum = 0.0, exclusive_maximum = 1.0)
    )]
    pub draw_probability: f64,
    /// Mean of a new player's prior.
    #[cfg_attr(feature = "schema", schema(minimum = -1e9, maximum = 1e9))]
    pub mu_init: f64,
    /// Std of a new player's prior.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub sigma_init: f64,
}

impl Default for TrueSkillParams {
    fn default() -> Self {
        Self {
            beta: 25.0 / 6.0,
            tau: 25.0 / 300.0,
            draw_probability: 0.1,
            mu_init: 25.0,
            sigma_init: 25.0 / 3.0,
        }
    }
}

/// A player's belief: a Gaussian `N(mu, sigma²)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrueSkillState {
    /// Rating.
    pub mu: f64,
    /// Uncertainty.
    pub sigma: f64,
    /// Rounds played.
    pub rounds: u64,
}

/// TrueSkill, with draws and partial play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrueSkill;

/// Most sweeps over the chain of differences, and the change of a difference's marginal under
/// which the sweeps stop: the schedule of the published implementations (the reference
/// implementation's and `skillratings`' alike), whose results ours reproduce.
const MAX_SWEEPS: usize = 10;
const CONVERGED: f64 = 1e-4;

impl RatingSystem for TrueSkill {
    type Params = TrueSkillParams;
    type State = TrueSkillState;
    const TUNED: &'static [&'static str] = &["beta", "tau"];

    fn validate(params: &TrueSkillParams) -> Result<(), Error> {
        within("beta", params.beta, MIN_SPREAD, MAX_SPREAD)?;
        within("tau", params.tau, 0.0, MAX_SPREAD)?;
        if !(params.draw_probability > 0.0 && params.draw_probability < 1.0) {
            return Err(Error::parameter(
                "draw_probability",
                "must be a number in (0, 1)",
            ));
        }
        within("mu_init", params.mu_init, -MAX_ABS_RATING, MAX_ABS_RATING)?;
        within("sigma_init", params.sigma_init, MIN_SPREAD, MAX_SPREAD)
    }

    fn newcomer(params: &TrueSkillParams) -> TrueSkillState {
        TrueSkillState {
            mu: params.mu_init,
            sigma: params.sigma_init,
            rounds: 0,
        }
    }

    fn check_round(_: &TrueSkillParams, round: &Round) -> Result<(), Error> {
        round.refuse_weight_and_ceiling("TrueSkill")
    }

    /// O(P + E·S) for P players, E entrants and S ≤ 10 sweeps.
    fn rate(
        params: &TrueSkillParams,
        round: &Round,
        priors: &[&TrueSkillState],
    ) -> Result<Vec<Rated<TrueSkillState>>, Error> {
        let layout = checked_layout::<Self>(params, round, priors.len())?;
        let beta2 = params.beta * params.beta;
        let tau2 = params.tau * params.tau;
        let weights: Vec<f64> = round
            .standings
            .iter()
            .map(|s| s.partial_play.unwrap_or(1.0))
            .collect();

        // Skill (prior and drift), then performance: one message each, down. Means are taken
        // relative to the round's `origin`, which the update does not depend on.
        let origin = origin(params.beta, priors);
        let skills: Vec<Natural> = priors
            .iter()
            .map(|p| Natural::of(p.mu - origin, p.sigma * p.sigma + tau2))
            .collect();
        let likelihoods: Vec<Natural> = skills.iter().map(|&s| s.noisy(beta2)).collect();
        let sums: Vec<Natural> = layout
            .entrants
            .iter()
            .map(|members| Natural::sum(members.iter().map(|&m| (weights[m], likelihoods[m]))))
            .collect();

        let mut chain = Chain::new(&sums);
        let group_of = layout.group_of_entrants();
        let draw_z = -normal::quantile((1.0 - params.draw_probability) / 2.0);
        // A team's sum is measured from its weight times the origin: a difference between
        // teams of other weights, from the difference of those.
        let weight_of = |k: usize| -> f64 { layout.entrants[k].iter().map(|&m| weights[m]).sum() };
        let outcomes: Vec<Outcome> = (0..sums.len() - 1)
            .map(|k| {
                let players = layout.entrants[k].len() + layout.entrants[k + 1].len();
                Outcome {
                    margin: draw_z * (players as f64).sqrt() * params.beta,
                    draw: group_of[k] == group_of[k + 1],
                    offset: (weight_of(k) - weight_of(k + 1)) * origin,
                }
            })
            .collect();
        chain.settle(&outcomes);

        // Back up: each member's performance from their team's, then their skill.
        let mut rated: Vec<Option<Rated<TrueSkillState>>> = vec![None; priors.len()];
        for (j, members) in layout.entrants.iter().enumerate() {
            let team = chain.teams[j].to_members();
            for &m in members {
                let others = members
                    .iter()
                    .filter(|&&l| l != m)
                    .map(|&l| (-weights[l] / weights[m], likelihoods[l]));
                let performance =
                    Natural::sum(std::iter::once((weights[m].recip(), team)).chain(others));
                let skill = skills[m].times(performance.noisy(beta2));
                rated[m] = Some(Rated {
                    performance: likelihoods[m].times(performance).mean() + origin,
                    state: TrueSkillState {
                        mu: skill.mean() + origin,
                        sigma: skill.pi.recip().sqrt(),
                        rounds: priors[m].rounds + 1,
                    },
                });
            }
        }
        Ok(rated.into_iter().flatten().collect())
    }

    fn rating(state: &TrueSkillState) -> Rating {
        Rating {
            mu: state.mu,
            sigma: Some(state.sigma),
        }
    }

    fn rounds(state: &TrueSkillState) -> u64 {
        state.rounds
    }

    fn with_rating(state: &TrueSkillState, rating: Rating) -> TrueSkillState {
        TrueSkillState {
            mu: rating.mu,
            sigma: rating.sigma.unwrap_or(state.sigma),
            ..*state
        }
    }

    fn model(_: &TrueSkillParams) -> Model {
        Model::Gaussian
    }

    /// The team's performance is the sum of its members', each `N(μ, σ² + β²)`.
    fn performance(params: &TrueSkillParams, members: &[&TrueSkillState]) -> Performance {
        let skill_variance: f64 = members.iter().map(|p| p.sigma * p.sigma).sum();
        let noise_variance = params.beta * params.beta * members.len() as f64;
        Performance {
            mean: members.iter().map(|p| p.mu).sum(),
            variance: skill_variance + noise_variance,
            skill_variance,
            noise_variance,
        }
    }
}

/// A Gaussian in natural parameters, precision `pi = 1/σ²` and `tau = μ/σ²`: the product and
/// quotient of two densities are the sum and difference of their parameters. `pi = 0` is the
/// flat density, the value of a message not sent yet.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Natural {
    pi: f64,
    tau: f64,
}

impl Natural {
    fn of(mean: f64, variance: f64) -> Self {
        let pi = variance.recip();
        Self { pi, tau: pi * mean }
    }

    fn mean(self) -> f64 {
        if self.pi == 0.0 {
            0.0
        } else {
            self.tau / self.pi
        }
    }

    fn times(self, other: Self) -> Self {
        Self {
            pi: self.pi + other.pi,
            tau: self.tau + other.tau,
        }
    }

    fn over(self, other: Self) -> Self {
        Self {
            pi: self.pi - other.pi,
            tau: self.tau - other.tau,
        }
    }

    /// The density of `X + N(0, noise)`: a Gaussian likelihood factor's message.
    fn noisy(self, noise: f64) -> Self {
        let a = noise.mul_add(self.pi, 1.0).recip();
        Self {
            pi: a * self.pi,
            tau: a * self.tau,
        }
    }

    /// The density of `Σ c·X` for independent `X` given as `(c, density of X)`: a sum factor's
    /// message. A flat term makes the sum flat.
    fn sum(terms: impl Iterator<Item = (f64, Self)>) -> Self {
        let (mut mean, mut variance) = (0.0, 0.0);
        for (c, x) in terms {
            mean += c * x.mean();
            variance += if x.pi == 0.0 {
                f64::INFINITY
            } else {
                c * c / x.pi
            };
        }
        let pi = variance.recip();
        Self { pi, tau: pi * mean }
    }

    /// How far `other` is from `self`: the schedule's convergence measure.
    fn distance(self, other: Self) -> f64 {
        let pi = (self.pi - other.pi).abs();
        if pi.is_infinite() {
            return 0.0;
        }
        (self.tau - other.tau).abs().max(pi.sqrt())
    }
}

/// What a neighbouring pair of entrants did: the first won, or they drew.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    /// Draw margin ε, in performance points.
    margin: f64,
    draw: bool,
    /// What the difference's mean is measured from (see [`origin`]): 0 between teams of one
    /// weight.
    offset: f64,
}

/// A team's performance variable: the messages of its three factors. What a factor is sent is
/// the product of the other two, never the marginal divided by its own message: a truncation
/// far in a tail sends a precision many orders above the others, and dividing it back out of a
/// sum that holds it leaves nothing of the smaller ones (an upset between teams whose sums stand
/// 5e12 spreads apart drove a precision to 0 that way, and a mean to infinity).
#[derive(Debug, Clone, Copy)]
struct TeamNode {
    /// From its members' performances.
    members: Natural,
    /// From the difference with the entrant ranked before (absent for the first).
    left: Natural,
    /// From the difference with the entrant ranked after (absent for the last).
    right: Natural,
}

impl TeamNode {
    /// What the difference with the entrant ranked before is sent.
    fn to_left(self) -> Natural {
        self.members.times(self.right)
    }

    /// What the difference with the entrant ranked after is sent.
    fn to_right(self) -> Natural {
        self.members.times(self.left)
    }

    /// What the chain says of the team, its members' message aside: what they are sent.
    fn to_members(self) -> Natural {
        self.left.times(self.right)
    }
}

/// A difference `t_k − t_{k+1}`: the messages of its two factors, and its marginal, which only
/// measures convergence.
#[derive(Debug, Clone, Copy, Default)]
struct DiffNode {
    marginal: Natural,
    /// From the sum factor that defines it.
    sum: Natural,
    /// From the truncation factor of the outcome.
    truncation: Natural,
}

/// The chain of team performances and their differences.
struct Chain {
    teams: Vec<TeamNode>,
    diffs: Vec<DiffNode>,
}

impl Chain {
    /// The chain with each team's performance known only from its members.
    fn new(sums: &[Natural]) -> Self {
        Self {
            teams: sums
                .iter()
                .map(|&members| TeamNode {
                    members,
                    left: Natural::default(),
                    right: Natural::default(),
                })
                .collect(),
            diffs: vec![DiffNode::default(); sums.len() - 1],
        }
    }

    /// Sweeps forward and back over the differences until a sweep changes no difference's
    /// marginal by more than [`CONVERGED`], or [`MAX_SWEEPS`] times; then sends the ends'
    /// messages to the first and last team.
    fn settle(&mut self, outcomes: &[Outcome]) {
        let last = self.diffs.len() - 1;
        for _ in 0..MAX_SWEEPS {
            let mut change = 0.0_f64;
            if last == 0 {
                self.down(0);
                change = self.truncate(0, outcomes[0]);
            } else {
                for (k, &outcome) in outcomes.iter().enumerate().take(last) {
                    self.down(k);
                    change = change.max(self.truncate(k, outcome));
                    self.up_to_second(k);
                }
                for k in (1..=last).rev() {
                    self.down(k);
                    change = change.max(self.truncate(k, outcomes[k]));
                    self.up_to_first(k);
                }
            }
            if change <= CONVERGED {
                break;
            }
        }
        self.up_to_first(0);
        self.up_to_second(last);
    }

    /// The difference's sum factor, from its two teams.
    fn down(&mut self, k: usize) {
        let first = self.teams[k].to_right();
        let second = self.teams[k + 1].to_left();
        let diff = &mut self.diffs[k];
        diff.sum = Natural::sum([(1.0, first), (-1.0, second)].into_iter());
        diff.marginal = diff.sum.times(diff.truncation);
    }

    /// The truncation factor: the moment-matched marginal of the difference given the outcome.
    /// Returns how far the marginal moved.
    fn truncate(&mut self, k: usize, outcome: Outcome) -> f64 {
        let diff = &mut self.diffs[k];
        let cavity = diff.sum;
        let sqrt_pi = cavity.pi.sqrt();
        let t = cavity.tau / sqrt_pi + outcome.offset * sqrt_pi;
        let (v, w) = if outcome.draw {
            draw_vw(t, outcome.margin * sqrt_pi)
        } else {
            win_vw(t, outcome.margin * sqrt_pi)
        };
        let shrink = 1.0 - w;
        let marginal = Natural {
            pi: cavity.pi / shrink,
            tau: sqrt_pi.mul_add(v, cavity.tau) / shrink,
        };
        let moved = diff.marginal.distance(marginal);
        diff.truncation = marginal.over(cavity);
        diff.marginal = marginal;
        moved
    }

    /// The difference's sum factor, to its first team: `t_k = d_k + t_{k+1}`.
    fn up_to_first(&mut self, k: usize) {
        let diff = self.diffs[k].truncation;
        let second = self.teams[k + 1].to_left();
        self.teams[k].right = Natural::sum([(1.0, diff), (1.0, second)].into_iter());
    }

    /// The difference's sum factor, to its second team: `t_{k+1} = t_k − d_k`.
    fn up_to_second(&mut self, k: usize) {
        let first = self.teams[k].to_right();
        let diff = self.diffs[k].truncation;
        self.teams[k + 1].left = Natural::sum([(1.0, first), (-1.0, diff)].into_iter());
    }
}

/// Where the round's means are measured from: the midpoint of its priors' means, rounded to a
/// multiple of `2^16·β` (a power of two). Messages carry `τ = μ/σ²`, and subtracting two of them
/// (dividing out a message) loses `|μ|/σ` of the digits: entrants rated about −2.6e8 and known to
/// 1e-6 lost them all and drove a precision negative. Measured from the origin, the means are
/// small against the spread and nothing cancels. Because the origin is a power of two's multiple
/// near the means, subtracting it is exact; a pool whose means stay within `2^15·β` of 0 (every
/// pool on TrueSkill's usual scales) has origin 0 and the arithmetic it had without one. The
/// update depends on differences of team sums, so a member's mean moves with the origin and a
/// team's sum with its weight times it ([`Outcome::offset`]): teams of other sizes do not stand
/// level when their members do.
fn origin(beta: f64, priors: &[&TrueSkillState]) -> f64 {
    let (low, high) = priors
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), p| {
            (low.min(p.mu), high.max(p.mu))
        });
    let grid = (beta * 65_536.0).log2().ceil().exp2();
    ((low / 2.0 + high / 2.0) / grid).round() * grid
}

/// Largest `w` used: `1 − w` divides a precision, and `w < 1` always holds in exact arithmetic.
const MAX_W: f64 = 1.0 - f64::EPSILON;

/// Below this, `2ε(1 + |a|)` makes a draw's interval narrow enough for [`draw_vw`] to
/// integrate across it by the first three terms of their series (relative error about its
/// cube, under 1e-15) rather than as a difference of two tails, which cancels.
const NARROW: f64 = 1e-5;

/// The mean and variance corrections `(v, w)` of a standardized difference `t` truncated to
/// `t > ε` (a win by more than the draw margin).
fn win_vw(t: f64, margin: f64) -> (f64, f64) {
    let x = t - margin;
    let v = normal::lower_ratio(x);
    (v, (v * (v + x)).clamp(0.0, MAX_W))
}

/// The corrections `(v, w)` of a standardized difference `t` truncated to `|t| ≤ ε` (a draw).
/// With `a = |t| − ε` and `b = |t| + ε`, the probability of the interval is `Φ(−a) − Φ(−b)`:
/// inside the margin (`a ≤ 0`) it is a sum of two `erf`s; outside, both tails are scaled by
/// `exp(a²/2)` so that nothing underflows; an interval narrower than [`NARROW`] is integrated
/// across by its series, where both forms cancel.
fn draw_vw(t: f64, margin: f64) -> (f64, f64) {
    const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
    let (a, b) = (t.abs() - margin, t.abs() + margin);
    let (mass, density_gap, moment_gap) = if 2.0 * margin * (1.0 + a.abs()) < NARROW {
        // So narrow an interval that the differences below cancel to nothing (with a draw
        // margin of 1e-21 of the spread, `a` and `b` are one number, the mass 0 and `v` not
        // finite): each integral across it, in powers of its width `u`, scaled by `exp(a²/2)`
        // as outside the margin, and all three divided by `u √(2π)`, which leaves `v` and `w`
        // as they are and finite for a width that is 0 in floating point.
        let u = 2.0 * margin;
        (
            1.0 - a * u / 2.0 + (a * a - 1.0) * u * u / 6.0,
            a + u * (1.0 - a * a) / 2.0,
            (1.0 - a * a) - u * a * (3.0 - a * a) / 2.0,
        )
    } else if a <= 0.0 {
        let mass = 0.5
            * (libm::erf(b * std::f64::consts::FRAC_1_SQRT_2)
                + libm::erf(-a * std::f64::consts::FRAC_1_SQRT_2));
        let (pa, pb) = (normal::pdf(a), normal::pdf(b));
        (mass, pa - pb, b * pb - a * pa)
    } else {
        let scale = (-2.0 * t.abs() * margin).exp();
        let mass = 0.5
            * (normal::erfcx(a * std::f64::consts::FRAC_1_SQRT_2)
                - scale * normal::erfcx(b * std::f64::consts::FRAC_1_SQRT_2));
        let gap = -(-2.0 * t.abs() * margin).exp_m1() * INV_SQRT_2PI;
        (mass, gap, (b * scale - a) * INV_SQRT_2PI)
    };
    let v = if t < 0.0 { 1.0 } else { -1.0 } * density_gap / mass;
    (v, v.mul_add(v, moment_gap / mass).clamp(0.0, MAX_W))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The corrections straight from their definitions, where nothing underflows.
    fn direct_draw(t: f64, e: f64) -> (f64, f64) {
        let (a, b) = (t.abs() - e, t.abs() + e);
        let mass = normal::cdf(-a) - normal::cdf(-b);
        let v = (normal::pdf(b) - normal::pdf(a)) / mass * if t < 0.0 { -1.0 } else { 1.0 };
        (v, v * v + (b * normal::pdf(b) - a * normal::pdf(a)) / mass)
    }

    #[test]
    fn draw_corrections_match_their_definition_inside_and_outside_the_margin() {
        for &e in &[0.05, 0.3, 1.0] {
            for i in -40..=40 {
                let t = f64::from(i) / 8.0;
                let (v, w) = draw_vw(t, e);
                let (dv, dw) = direct_draw(t, e);
                assert!((v - dv).abs() < 1e-9, "v at t = {t}, ε = {e}: {v} vs {dv}");
                assert!((w - dw).abs() < 1e-9, "w at t = {t}, ε = {e}: {w} vs {dw}");
            }
        }
    }

    #[test]
    fn a_draw_margin_far_below_the_spread_gives_finite_corrections_that_meet_the_tails() {
        for t in [-3.0, -0.483, 0.0, 0.2, 2.5] {
            for e in [0.0, 1e-300, 1e-21, 1e-12] {
                let (v, w) = draw_vw(t, e);
                let toward = if t < 0.0 { 1.0 } else { -1.0 } * f64::abs(t);
                assert!((v - toward).abs() < 1e-9, "v at t = {t}, ε = {e}: {v}");
                assert!(w > 1.0 - 1e-9 && w <= MAX_W, "w at t = {t}, ε = {e}: {w}");
            }
            // Either side of where the series takes over from the tails, one curve.
            let edge = NARROW / (2.0 * (1.0 + t.abs()));
            let (series, tails) = (draw_vw(t, edge * 0.999), draw_vw(t, edge * 1.001));
            assert!(
                (series.0 - tails.0).abs() < 1e-6,
                "v at t = {t}: {series:?} {tails:?}"
            );
            assert!(
                (series.1 - tails.1).abs() < 1e-6,
                "w at t = {t}: {series:?} {tails:?}"
            );
        }
    }

    /// Rates `round` with every entrant's prior at `mu`, known to 1e-6.
    fn rated_at(mu: f64, round: &Round) -> Vec<Rated<TrueSkillState>> {
        let params = TrueSkillParams {
            beta: 1e-6,
            tau: 0.0,
            draw_probability: 1e-9,
            mu_init: 0.0,
            sigma_init: 1e-6,
        };
        let prior = TrueSkillState {
            mu,
            sigma: 1e-6,
            rounds: 0,
        };
        let priors = vec![&prior; round.standings.len()];
        TrueSkill::rate(&params, round, &priors).expect("rated")
    }

    fn teams(standings: &[(&str, u64, Option<&str>)]) -> Round {
        Round::new(
            standings
                .iter()
                .map(|&(player, rank, team)| crate::Standing {
                    team: team.map(str::to_owned),
                    ..crate::Standing::solo(player, rank)
                })
                .collect(),
        )
    }

    #[test]
    fn a_round_rated_far_from_zero_moves_its_entrants_as_it_would_near_zero() {
        // Entrants at −2.6e8 known to 1e-6: measured from 0, dividing out a message cancelled
        // every digit and a precision went negative. Teams of one size stand level wherever
        // their members do, so the update is the one near 0.
        let round = teams(&[
            ("a", 3, Some("x")),
            ("b", 3, Some("x")),
            ("c", 1, Some("y")),
            ("d", 1, Some("y")),
            ("e", 2, Some("z")),
            ("f", 2, Some("z")),
        ]);
        let far = -261_236_138.339_121_28;
        for (near, away) in rated_at(0.0, &round).iter().zip(rated_at(far, &round)) {
            assert!((away.state.mu - far - near.state.mu).abs() < 1e-7);
            assert!((away.performance - far - near.performance).abs() < 1e-7);
            assert!((away.state.sigma / near.state.sigma - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn teams_of_other_sizes_far_from_zero_rate_finitely_and_as_their_sums_say() {
        // A pair at −2.6e8 each sums to −5.2e8, 2.6e8 (2.6e14 spreads) below a solo entrant:
        // beating them is certain and moves nobody; losing to them moves both sides far.
        let far = -261_236_138.339_121_28;
        let expected = teams(&[("a", 2, Some("x")), ("b", 2, Some("x")), ("c", 1, None)]);
        for rated in rated_at(far, &expected) {
            assert_eq!(rated.state.mu, far);
        }
        let upset = teams(&[("a", 1, Some("x")), ("b", 1, Some("x")), ("c", 2, None)]);
        let rated = rated_at(far, &upset);
        assert!(rated
            .iter()
            .all(|r| r.state.mu.is_finite() && r.state.sigma > 0.0));
        assert!(rated[0].state.mu > far && rated[2].state.mu < far);
    }

    #[test]
    fn corrections_stay_finite_far_in_the_tails() {
        for t in [-60.0, -30.0, 30.0, 60.0] {
            for (v, w) in [win_vw(t, 0.2), draw_vw(t, 0.2)] {
                assert!(v.is_finite() && (0.0..1.0).contains(&w), "t = {t}: {v} {w}");
            }
        }
    }
}
