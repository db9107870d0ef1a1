//! The ratings file a replay writes: CSV `player,mu,sigma,rounds`, sorted by player, floats in
//! Rust's shortest round-tripping form so two runs can be compared bit for bit. Player names
//! may hold commas and quotes, hence a real CSV writer.

use std::path::Path;

use super::Error;
use crate::engine::Population;

/// Writes every player of `population` to `path`. The file is built in memory and written in
/// one go, so a failure leaves no half-written ratings behind the caller's back.
pub fn write_ratings(population: &Population, path: &Path) -> Result<(), Error> {
    let write_error = |source| Error::Write {
        path: path.to_owned(),
        source,
    };
    let mut players: Vec<_> = population.players().collect();
    players.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut record = |fields: [&str; 4]| {
        writer
            .write_record(fields)
            .map_err(|e| write_error(e.into()))
    };
    record(["player", "mu", "sigma", "rounds"])?;
    for (player, state) in players {
        let rating = state.rating();
        record([
            player,
            &rating.mu.to_string(),
            &rating.sigma.map_or_else(String::new, |s| s.to_string()),
            &state.rounds().to_string(),
        ])?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|e| write_error(e.into_error()))?;
    std::fs::write(path, bytes).map_err(write_error)
}
