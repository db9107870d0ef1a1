//! A rating population kept in memory by player id: the convenience layer over
//! [`rate_round`](super::rate_round) that `replay` and the service use.

use std::collections::HashMap;

use super::params::Params;
use super::player::PlayerState;
use super::rate::rate_round;
use super::round::Round;
use super::Error;

/// What one round did to one player.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Performance credited in the round.
    pub performance: f64,
    /// Rating before the round.
    pub mu_before: f64,
    /// Uncertainty before the round.
    pub sigma_before: f64,
    /// Rating after the round.
    pub mu_after: f64,
    /// Uncertainty after the round.
    pub sigma_after: f64,
}

/// Beliefs looked up by player id: what predictions read. [`Population`] is one; the service's
/// published pool snapshots are another.
pub trait Beliefs {
    /// The pool's parameters.
    fn params(&self) -> &Params;
    /// A player's belief, if they have played.
    fn belief(&self, id: &str) -> Option<&PlayerState>;
    /// The belief of a player who has never played.
    fn newcomer(&self) -> &PlayerState;
    /// A player's belief, or a newcomer's if they have not played.
    fn belief_or_newcomer(&self, id: &str) -> &PlayerState {
        self.belief(id).unwrap_or_else(|| self.newcomer())
    }
}

/// Every player of one pool with their current belief.
#[derive(Debug, Clone)]
pub struct Population {
    params: Params,
    newcomer: PlayerState,
    players: HashMap<String, PlayerState>,
}

impl Population {
    /// An empty population; the parameters are validated here.
    pub fn new(params: Params) -> Result<Self, Error> {
        params.validate()?;
        Ok(Self {
            newcomer: PlayerState::new(&params),
            params,
            players: HashMap::new(),
        })
    }

    /// The pool's parameters.
    #[must_use]
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// A player's belief, if they have played.
    #[must_use]
    pub fn player(&self, id: &str) -> Option<&PlayerState> {
        self.players.get(id)
    }

    /// A player's belief, or a newcomer's if they have not played.
    #[must_use]
    pub fn player_or_newcomer(&self, id: &str) -> &PlayerState {
        self.players.get(id).unwrap_or(&self.newcomer)
    }

    /// Every player who has played, in no particular order.
    pub fn players(&self) -> impl Iterator<Item = (&str, &PlayerState)> {
        self.players.iter().map(|(id, state)| (id.as_str(), state))
    }

    /// Number of players who have played.
    #[must_use]
    pub fn len(&self) -> usize {
        self.players.len()
    }

    /// Whether nobody has played yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.players.is_empty()
    }

    /// Sets a player's belief: one computed by [`rate_round`] and committed elsewhere, or one
    /// loaded from storage.
    pub fn insert(&mut self, id: String, state: PlayerState) {
        self.players.insert(id, state);
    }

    /// Rates `round` and stores the new beliefs; on error nothing changes. The result is
    /// aligned with `round.standings`.
    pub fn apply(&mut self, round: &Round) -> Result<Vec<Change>, Error> {
        let priors: Vec<&PlayerState> = round
            .standings
            .iter()
            .map(|s| self.player_or_newcomer(&s.player))
            .collect();
        let rated = rate_round(&self.params, round, &priors)?;
        let changes = priors
            .iter()
            .zip(&rated)
            .map(|(prior, r)| Change {
                performance: r.performance,
                mu_before: prior.mu,
                sigma_before: prior.sigma,
                mu_after: r.state.mu,
                sigma_after: r.state.sigma,
            })
            .collect();
        for (standing, r) in round.standings.iter().zip(rated) {
            self.players.insert(standing.player.clone(), r.state);
        }
        Ok(changes)
    }
}

impl Beliefs for Population {
    fn params(&self) -> &Params {
        &self.params
    }

    fn belief(&self, id: &str) -> Option<&PlayerState> {
        self.players.get(id)
    }

    fn newcomer(&self) -> &PlayerState {
        &self.newcomer
    }
}
