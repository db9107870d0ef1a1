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
///
/// States sit in a vector and the map holds each player's index in it: a round looks each
/// entrant up once, and a held player's new state goes back by index.
#[derive(Debug, Clone)]
pub struct Population {
    system: SystemParams,
    newcomer: SystemState,
    slots: HashMap<String, usize, foldhash::fast::RandomState>,
    states: Vec<SystemState>,
}

impl Population {
    /// An empty population; the parameters are validated here.
    pub fn new(system: impl Into<SystemParams>) -> Result<Self, Error> {
        let system = system.into();
        system.validate()?;
        Ok(Self {
            newcomer: system.newcomer(),
            system,
            slots: HashMap::default(),
            states: Vec::new(),
        })
    }

    /// Every player who has played, in no particular order.
    pub fn players(&self) -> impl Iterator<Item = (&str, &SystemState)> {
        self.slots
            .iter()
            .map(|(id, &slot)| (id.as_str(), &self.states[slot]))
    }

    /// Number of players who have played.
    #[must_use]
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether nobody has played yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Sets a player's state, e.g. one loaded from storage.
    pub fn insert(&mut self, id: String, state: SystemState) {
        match self.slots.get(&id) {
            Some(&slot) => self.states[slot] = state,
            None => self.add(id, state),
        }
    }

    /// A player not held yet.
    fn add(&mut self, id: String, state: SystemState) {
        debug_assert!(!self.slots.contains_key(&id), "{id} is held already");
        self.slots.insert(id, self.states.len());
        self.states.push(state);
    }

    /// Starts a new season: every player's state after the soft `reset`.
    pub fn start_season(&mut self, reset: SoftReset) {
        if reset.keeps() {
            return;
        }
        for state in &mut self.states {
            *state = self.system.soft_reset(state, reset);
        }
    }

    /// Rates `round` and stores the new states; on error nothing changes. The result is
    /// aligned with `round.standings`. Should the engine panic, the entrants' states are lost
    /// (newcomers' in their place): nothing uses a population after a panic. So are they after
    /// an [`Error::NotFinite`] of a system that rates in place ([`SystemParams::apply_owned`]).
    pub fn apply(&mut self, round: &Round) -> Result<Vec<RatingChange>, Error> {
        // The entrants' states are moved out into the round (a newcomer's in their place
        // meanwhile) rather than copied: an Elo-MMR belief holds up to `history_limit`
        // factors. `held[i]` is the slot standing i's state came from, if it had one.
        let (priors, held): (Vec<SystemState>, Vec<Option<usize>>) = round
            .standings
            .iter()
            .map(|s| match self.slots.get(&s.player) {
                Some(&slot) => (
                    std::mem::replace(&mut self.states[slot], self.newcomer.clone()),
                    Some(slot),
                ),
                None => (self.newcomer.clone(), None),
            })
            .unzip();
        let applied = match self.system.apply_owned(round, priors) {
            Ok(applied) => applied,
            Err((error, priors)) => {
                // Back where they were. Last first: a player listed twice (which the round
                // is refused for) had their state moved out at their first place.
                for (prior, held) in priors.into_iter().zip(held).rev() {
                    if let Some(slot) = held {
                        self.states[slot] = prior;
                    }
                }
                return Err(error);
            }
        };
        Ok(round
            .standings
            .iter()
            .zip(applied)
            .zip(held)
            .map(|((standing, a), held)| {
                match held {
                    Some(slot) => self.states[slot] = a.state,
                    None => self.add(standing.player.clone(), a.state),
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
        self.slots.get(id).map(|&slot| &self.states[slot])
    }

    fn newcomer(&self) -> &SystemState {
        &self.newcomer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EloMmrParams, Standing};

    fn held(population: &Population) -> Vec<String> {
        let mut held: Vec<String> = population
            .players()
            .map(|(id, state)| format!("{id}: {state:?}"))
            .collect();
        held.sort();
        held
    }

    #[test]
    fn a_refused_round_leaves_every_state_where_it_was() {
        let mut population = Population::new(EloMmrParams::default()).expect("valid parameters");
        let first = Round::new(vec![Standing::solo("ann", 1), Standing::solo("bob", 2)]);
        population.apply(&first).expect("a valid round");
        let before = held(&population);
        // Ann twice (moved out at her first place), and a newcomer.
        let refused = Round::new(vec![
            Standing::solo("ann", 1),
            Standing::solo("cy", 2),
            Standing::solo("ann", 3),
        ]);
        assert!(population.apply(&refused).is_err());
        assert_eq!(held(&population), before);
        assert_eq!(population.len(), 2);
    }

    #[test]
    fn inserting_a_held_player_replaces_their_state() {
        let mut population = Population::new(EloMmrParams::default()).expect("valid parameters");
        let first = Round::new(vec![Standing::solo("ann", 1), Standing::solo("bob", 2)]);
        population.apply(&first).expect("a valid round");
        let bob = population.belief("bob").expect("bob played").clone();
        population.insert("ann".to_owned(), bob.clone());
        assert_eq!(population.len(), 2);
        assert_eq!(population.belief("ann"), Some(&bob));
        population.insert("cy".to_owned(), bob.clone());
        assert_eq!(population.len(), 3);
        assert_eq!(population.players().count(), 3);
    }
}
