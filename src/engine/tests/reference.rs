//! A plain, deliberately slow transcription of the paper's Algorithms 1–3 as `MATH.md` states
//! them, to check the engine against: every participant diffused (Algorithm 2), every entrant's
//! performance found by bisection on the full sum over every entrant (first half of
//! Algorithm 3), every posterior mode found by bisection (second half). No shared curves, no
//! interpolation, no prefix sums, no parallelism: O(N²) work per round, and each line can be
//! read against `MATH.md`.

use std::f64::consts::{PI, SQRT_2};

use mmr_engine::{EloMmrParams, EloMmrState, Round, Ties, Variant};

/// Seconds in a day, for `drift_per_day`.
const SECONDS_PER_DAY: f64 = 86_400.0;
/// Every bisection starts on `[-BOUND, BOUND]`, far beyond any rating the tests use.
const BOUND: f64 = 1e7;
/// Mills' ratio is computed as the quotient of `erfc` and the density below this point (both
/// stay normal numbers up to about 37, and libm's `erfc` keeps full relative precision), and by
/// its continued fraction above, where both would underflow.
const CONTINUED_FRACTION_FROM: f64 = 30.0;
/// Levels of the continued fraction: from 30 on, ten would already reach rounding level.
const CONTINUED_FRACTION_TERMS: u32 = 60;

/// A player's belief, field by field as in `MATH.md` "A player's belief".
#[derive(Debug, Clone)]
pub struct Belief {
    pub mu: f64,
    pub sigma: f64,
    pub p0: f64,
    pub w0: f64,
    /// `(p_k, w_k, β_k)`, oldest first.
    pub factors: Vec<(f64, f64, f64)>,
    /// Time of the last round played, in seconds.
    pub last_time: Option<i64>,
}

impl From<&EloMmrState> for Belief {
    fn from(state: &EloMmrState) -> Self {
        Self {
            mu: state.mu,
            sigma: state.sigma,
            p0: state.p0,
            w0: state.w0,
            factors: state
                .factors
                .iter()
                .map(|f| (f.perf, state.weight(f), f.beta))
                .collect(),
            last_time: state.last_time,
        }
    }
}

/// One participant after a round.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub performance: f64,
    pub belief: Belief,
}

/// Algorithm 1: rates `round`; `priors[i]` belongs to `round.standings[i]` and so does the
/// `i`-th outcome.
pub fn rate(params: &EloMmrParams, round: &Round, priors: &[Belief]) -> Vec<Outcome> {
    let beta_t2 = params.beta * params.beta / round.weight;
    let diffused: Vec<Belief> = priors
        .iter()
        .map(|prior| diffuse(params, prior, round.time))
        .collect();

    // Entrants: a team (every standing with its name) or a lone player (paper §3.3).
    let mut entrants: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
    for (i, standing) in round.standings.iter().enumerate() {
        let team = standing.team.as_deref();
        match entrants
            .iter_mut()
            .find(|(name, _)| team.is_some() && *name == team)
        {
            Some((_, members)) => members.push(i),
            None => entrants.push((team, vec![i])),
        }
    }
    let ranks: Vec<u64> = entrants
        .iter()
        .map(|(_, members)| round.standings[members[0]].rank)
        .collect();
    let prior_performances: Vec<(f64, f64)> = entrants
        .iter()
        .map(|(_, members)| {
            let mu: f64 = members.iter().map(|&m| diffused[m].mu).sum();
            let variance: f64 = members.iter().map(|&m| diffused[m].sigma.powi(2)).sum();
            (mu, (members.len() as f64 * beta_t2 + variance).sqrt())
        })
        .collect();

    let mut outcomes: Vec<Option<Outcome>> = vec![None; round.standings.len()];
    for (e, (_, members)) in entrants.iter().enumerate() {
        let team_performance = match params.variant {
            Variant::Logistic => logistic_performance(&prior_performances, &ranks, e, params.ties),
            Variant::Gaussian => gaussian_performance(&prior_performances, &ranks, e, params.ties),
        };
        for &m in members {
            let others = || members.iter().filter(move |&&o| o != m);
            let mut performance = team_performance - others().map(|&o| diffused[o].mu).sum::<f64>();
            if let Some(ceiling) = round.perf_ceiling {
                performance = performance.min(ceiling);
            }
            let others_variance: f64 = others().map(|&o| diffused[o].sigma.powi(2)).sum();
            let beta = (members.len() as f64 * beta_t2 + others_variance).sqrt();
            outcomes[m] = Some(Outcome {
                performance,
                belief: update(params, &diffused[m], performance, beta, round.time),
            });
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.expect("every standing belongs to one entrant"))
        .collect()
}

/// Algorithm 2, with the Gaussian variant and ρ = ∞ collapsing the belief.
fn diffuse(params: &EloMmrParams, prior: &Belief, time: Option<i64>) -> Belief {
    let days = match (prior.last_time, time) {
        (Some(last), Some(now)) if now > last => (now - last) as f64 / SECONDS_PER_DAY,
        _ => 0.0,
    };
    let g2 = params.gamma * params.gamma + params.drift_per_day * days;
    let variance = prior.sigma * prior.sigma + g2;
    if params.variant == Variant::Gaussian || params.rho == f64::INFINITY {
        return Belief {
            mu: prior.mu,
            sigma: variance.sqrt(),
            p0: prior.mu,
            w0: 1.0 / variance,
            factors: Vec::new(),
            last_time: prior.last_time,
        };
    }
    let kappa = 1.0 / (1.0 + g2 / (prior.sigma * prior.sigma));
    let kappa_rho = kappa.powf(params.rho);
    let total: f64 = prior.w0 + prior.factors.iter().map(|f| f.1).sum::<f64>();
    let w_gauss = kappa_rho * prior.w0;
    let w_logistic = (1.0 - kappa_rho) * total;
    Belief {
        mu: prior.mu,
        sigma: variance.sqrt(),
        p0: (w_gauss * prior.p0 + w_logistic * prior.mu) / (w_gauss + w_logistic),
        w0: kappa * (w_gauss + w_logistic),
        factors: prior
            .factors
            .iter()
            .map(|&(p, w, beta)| (p, kappa.powf(1.0 + params.rho) * w, beta))
            .collect(),
        last_time: prior.last_time,
    }
}

/// The zero of the logistic `Q_i` (MATH.md step 3, increasing): every entrant `j` at or below
/// `i` adds `(tanh − 1)/δ_j`, every one at or above adds `(tanh + 1)/δ_j`; with split ties a
/// tied entrant adds its `tanh/δ_j` once and nothing else.
fn logistic_performance(entrants: &[(f64, f64)], ranks: &[u64], i: usize, ties: Ties) -> f64 {
    let scale = 3f64.sqrt() / PI;
    zero_of_increasing(|x| {
        entrants
            .iter()
            .zip(ranks)
            .map(|(&(mu, delta), &rank)| {
                let t = ((x - mu) / (2.0 * scale * delta)).tanh();
                let mut term = 0.0;
                if rank == ranks[i] && ties == Ties::Split {
                    term += t;
                } else {
                    if rank >= ranks[i] {
                        term += t - 1.0;
                    }
                    if rank <= ranks[i] {
                        term += t + 1.0;
                    }
                }
                term / delta
            })
            .sum()
    })
}

/// The zero of the Gaussian `Q_i` (MATH.md "Gaussian variant", decreasing): `l_j` for those
/// who beat `i`, `d_j` (or half `l_j` plus half `v_j` with split ties) for those tied with it,
/// itself included, `v_j` for those it beat.
fn gaussian_performance(entrants: &[(f64, f64)], ranks: &[u64], i: usize, ties: Ties) -> f64 {
    let q = |x: f64| -> f64 {
        entrants
            .iter()
            .zip(ranks)
            .map(|(&(mu, delta), &rank)| {
                let z = (x - mu) / delta;
                // f/(1 − F) and f/F of N(mu, delta²) at x.
                let hazard = 1.0 / (delta * mills_ratio(z));
                let reversed_hazard = 1.0 / (delta * mills_ratio(-z));
                let (l, v) = (-hazard, reversed_hazard);
                if rank < ranks[i] {
                    l
                } else if rank > ranks[i] {
                    v
                } else if ties == Ties::Split {
                    0.5 * (l + v)
                } else {
                    -(x - mu) / (delta * delta)
                }
            })
            .sum()
    };
    zero_of_increasing(|x| -q(x))
}

/// Mills' ratio `(1 − Φ(t)) / φ(t)` of the standard normal.
fn mills_ratio(t: f64) -> f64 {
    if t < CONTINUED_FRACTION_FROM {
        // Below -38 the density underflows to 0 and the ratio to +∞: the right limit, since
        // the hazard it divides then vanishes.
        let density = (-0.5 * t * t).exp() / (2.0 * PI).sqrt();
        0.5 * libm::erfc(t / SQRT_2) / density
    } else {
        // Laplace: 1 / (t + 1/(t + 2/(t + 3/(t + …)))), evaluated from the innermost level.
        let mut denominator = t;
        for k in (1..=CONTINUED_FRACTION_TERMS).rev() {
            denominator = t + f64::from(k) / denominator;
        }
        1.0 / denominator
    }
}

/// Second half of Algorithm 3: the observation `performance` with spread `beta`.
fn update(
    params: &EloMmrParams,
    diffused: &Belief,
    performance: f64,
    beta: f64,
    time: Option<i64>,
) -> Belief {
    let mut next = diffused.clone();
    next.last_time = time.or(diffused.last_time);
    match params.variant {
        Variant::Gaussian => {
            let precision = 1.0 / diffused.sigma.powi(2) + 1.0 / (beta * beta);
            next.mu =
                (diffused.mu / diffused.sigma.powi(2) + performance / (beta * beta)) / precision;
            next.sigma = 1.0 / precision.sqrt();
            next.p0 = next.mu;
            next.w0 = precision;
        }
        Variant::Logistic => {
            next.factors.push((performance, 1.0 / (beta * beta), beta));
            while next.factors.len() > params.history_limit {
                let (p, w, _) = next.factors.remove(0);
                next.p0 = (next.w0 * next.p0 + w * p) / (next.w0 + w);
                next.w0 += w;
            }
            let scale = 3f64.sqrt() / PI;
            next.mu = zero_of_increasing(|x| {
                next.w0 * (x - next.p0)
                    + next
                        .factors
                        .iter()
                        .map(|&(p, w, beta)| {
                            let beta_bar = scale * beta;
                            w * beta * beta / beta_bar * ((x - p) / (2.0 * beta_bar)).tanh()
                        })
                        .sum::<f64>()
            });
            let total: f64 = next.w0 + next.factors.iter().map(|f| f.1).sum::<f64>();
            next.sigma = 1.0 / total.sqrt();
        }
    }
    next
}

/// Bisection to the last representable point: the zero of an increasing `f`.
fn zero_of_increasing(f: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (-BOUND, BOUND);
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            return mid;
        }
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}
