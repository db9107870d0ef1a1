//! A rating population kept in memory by player id: the convenience layer over
//! [`SystemParams::apply`] that `replay` uses, and what predictions read through [`Beliefs`].

use std::collections::HashMap;

use super::any::{SystemParams, SystemState};
use super::rating::RatingChange;
use super::round::Round;
use super::season::SoftReset;
use super::Error;

/// States looked up by player id: what predictions read. [`Population`] is one; the service's
/// published pool snapshots are another.
pub trait Beliefs {
    /// The pool's rating system and parameters.
    fn system(&self) -> &SystemParams;
    /// A player's state, if they have played.
    fn belief(&self, id: &str) -> Option<&SystemState>;
    /// The state of a player who has never played.
    fn newcomer(&self) -> &SystemState;
    /// A player's state, or a newcomer's if they have not played.
    fn belief_or_newcomer(&self, id: &str) -> &SystemState {
        self.belief(id).unwrap_or_else(|| self.newcomer())
    }
}

/// Every player of one pool with their current state.
#[derive(Debug, Clone)]
pub struct Population {
    system: SystemParams,
    newcomer: SystemState,
    players: HashMap<String, SystemState>,
}

impl Population {
    /// An empty population; the parameters are validated here.
    pub fn new(system: impl Into<SystemParams>) -> Result<Self, Error> {
        let system = system.into();
        system.validate()?;
        Ok(Self {
            newcomer: system.newcomer(),
            system,
            players: HashMap::new(),
        })
    }

    /// Every player who has played, in no particular order.
    pub fn players(&self) -> impl Iterator<Item = (&str, &SystemState)> {
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

    /// Sets a player's state, e.g. one loaded from storage.
    pub fn insert(&mut self, id: String, state: SystemState) {
        self.players.insert(id, state);
    }

    /// Starts a new season: every player's state after the soft `reset`.
    pub fn start_season(&mut self, reset: SoftReset) {
        if reset.keeps() {
            return;
        }
        for state in self.players.values_mut() {
            *state = self.system.soft_reset(state, reset);
        }
    }

    /// Rates `round` and stores the new states; on error nothing changes. The result is
    /// aligned with `round.standings`.
    pub fn apply(&mut self, round: &Round) -> Result<Vec<RatingChange>, Error> {
        let priors: Vec<&SystemState> = round
            .standings
            .iter()
            .map(|s| self.belief_or_newcomer(&s.player))
            .collect();
        let applied = self.system.apply(round, &priors)?;
        Ok(round
            .standings
            .iter()
            .zip(applied)
            .map(|(standing, a)| {
                match self.players.get_mut(&standing.player) {
                    Some(state) => *state = a.state,
                    None => {
                        self.players.insert(standing.player.clone(), a.state);
                    }
                }
                a.change
            })
            .collect())
    }
}

impl Beliefs for Population {
    fn system(&self) -> &SystemParams {
        &self.system
    }

    fn belief(&self, id: &str) -> Option<&SystemState> {
        self.players.get(id)
    }

    fn newcomer(&self) -> &SystemState {
        &self.newcomer
    }
}
