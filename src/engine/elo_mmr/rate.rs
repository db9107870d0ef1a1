//! One round, start to finish (Algorithm 1): diffuse every participant, estimate every
//! entrant's performance, update every participant. Values in, values out.

use rayon::prelude::*;

use crate::elo_mmr::params::{EloMmrParams, Variant};
use crate::elo_mmr::performance::{group_roots, GaussianCurves, LogisticCurves, Term};
use crate::elo_mmr::player::EloMmrState;
use crate::round::{Layout, Round};
use crate::system::{Given, Rated};
use crate::Error;

/// Rates one round. `priors[i]` is the belief of `round.standings[i].player` before the round
/// (`EloMmrState::new` for a newcomer); the result is aligned with `round.standings` too.
///
/// The result does not depend on the order of `round.standings` nor on the number of rayon
/// threads, bit for bit.
///
/// ```
/// use mmr_engine::{rate_round, EloMmrParams, EloMmrState, Round, Standing};
///
/// let params = EloMmrParams::default();
/// let round = Round::new(vec![Standing::solo("ann", 1), Standing::solo("bob", 2)]);
/// let newcomer = EloMmrState::new(&params);
/// let rated = rate_round(&params, &round, &[&newcomer, &newcomer])?;
/// assert!(rated[0].state.mu > params.mu_init && rated[1].state.mu < params.mu_init);
/// # Ok::<(), mmr_engine::Error>(())
/// ```
pub fn rate_round(
    params: &EloMmrParams,
    round: &Round,
    priors: &[&EloMmrState],
) -> Result<Vec<Rated<EloMmrState>>, Error> {
    let layout = checked(params, round, priors.len())?;
    let diffused: Vec<EloMmrState> = priors
        .par_iter()
        .map(|p| {
            p.diffused(
                p.drift_variance(params, round.time),
                params.rho,
                params.variant,
            )
        })
        .collect();
    Ok(rate_diffused(params, round, &layout, diffused))
}

/// [`rate_round`] on states the caller gives up: each is diffused in place instead of copied
/// (a belief holds up to `history_limit` factors), with the same results bit for bit. On an
/// error the states come back unchanged.
pub fn rate_round_owned(
    params: &EloMmrParams,
    round: &Round,
    mut priors: Vec<EloMmrState>,
) -> Given<EloMmrState> {
    let layout = match checked(params, round, priors.len()) {
        Ok(layout) => layout,
        Err(error) => return Err((error, priors)),
    };
    priors.par_iter_mut().for_each(|p| {
        p.diffuse(
            p.drift_variance(params, round.time),
            params.rho,
            params.variant,
        );
    });
    Ok(rate_diffused(params, round, &layout, priors))
}

/// The round's layout, once the parameters and the number of priors are checked.
fn checked(params: &EloMmrParams, round: &Round, priors: usize) -> Result<Layout, Error> {
    params.validate()?;
    if priors != round.standings.len() {
        return Err(Error::PriorCount {
            standings: round.standings.len(),
            priors,
        });
    }
    Layout::of(round)
}

/// The rest of Algorithm 1, once every participant is diffused (`diffused[i]` is
/// `round.standings[i]`'s): every entrant's performance, then every participant's update.
fn rate_diffused(
    params: &EloMmrParams,
    round: &Round,
    layout: &Layout,
    diffused: Vec<EloMmrState>,
) -> Vec<Rated<EloMmrState>> {
    let beta_t2 = params.beta * params.beta / round.weight;

    // Paper §3.3: a team is one entrant whose mean and variance are its members' sums.
    let terms: Vec<Term> = layout
        .entrants
        .iter()
        .map(|members| {
            let mu: f64 = members.iter().map(|&m| diffused[m].mu).sum();
            let variance: f64 = members
                .iter()
                .map(|&m| diffused[m].sigma * diffused[m].sigma)
                .sum();
            Term {
                mu,
                delta: (members.len() as f64 * beta_t2 + variance).sqrt(),
            }
        })
        .collect();
    let group_perf = match params.variant {
        Variant::Logistic => group_roots(&LogisticCurves::new(&terms, &layout.groups, params.ties)),
        Variant::Gaussian => group_roots(&GaussianCurves::new(&terms, &layout.groups, params.ties)),
    };

    // Each member's own performance and spread: the team's, less what the others brought.
    let mut observations = vec![(0.0, 0.0); round.standings.len()];
    for (group, range) in layout.groups.iter().enumerate() {
        for members in &layout.entrants[range.clone()] {
            for &m in members {
                let others = members.iter().filter(|&&o| o != m);
                let others_mu: f64 = others.clone().map(|&o| diffused[o].mu).sum();
                let others_var: f64 = others.map(|&o| diffused[o].sigma * diffused[o].sigma).sum();
                let mut perf = group_perf[group] - others_mu;
                if let Some(ceiling) = round.perf_ceiling {
                    perf = perf.min(ceiling);
                }
                let beta = (members.len() as f64 * beta_t2 + others_var).sqrt();
                observations[m] = (perf, beta);
            }
        }
    }

    diffused
        .into_par_iter()
        .zip(observations)
        .map(|(state, (performance, beta))| Rated {
            performance,
            state: state.observed(performance, beta, params, round.time),
        })
        .collect()
}
