//! The ratings file a replay writes: CSV `player,mu,sigma,rounds`, sorted by player, floats in
//! Rust's shortest round-tripping form so two runs can be compared bit for bit. With display
//! settings, each row also gives what the pool would show: `conservative,display_rating,
//! provisional,league,division,points` (empty where there is nothing to show). Player names may hold
//! commas and quotes, hence a real CSV writer.

use std::path::Path;

use super::Error;
use crate::display::{Display, Extremes, LeagueTable, Spread};
use crate::engine::Population;

/// Writes every player of `population` to `path`, with what `display` shows of them when given
/// (their leagues from `leagues`). The file is built in memory and written in one go, so a
/// failure leaves no half-written ratings behind the caller's back.
pub fn write_ratings(
    population: &Population,
    display: Option<(&Display, &LeagueTable)>,
    path: &Path,
) -> Result<(), Error> {
    let write_error = |source| Error::Write {
        path: path.to_owned(),
        source,
    };
    let mut players: Vec<_> = population.players().collect();
    players.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut spread = Spread::default();
    let mut extremes: Option<Extremes> = None;
    for (_, state) in &players {
        let mu = state.rating().mu;
        spread.add(mu);
        extremes = Some(extremes.map_or(
            Extremes {
                top: mu,
                bottom: mu,
            },
            |e| Extremes {
                top: e.top.max(mu),
                bottom: e.bottom.min(mu),
            },
        ));
    }
    // As the service resolves it: once for every player.
    let range = display.and_then(|(display, _)| display.resolve(&spread, extremes));
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut record = |fields: &[&str]| {
        writer
            .write_record(fields)
            .map_err(|e| write_error(e.into()))
    };
    let mut header = vec!["player", "mu", "sigma", "rounds"];
    if display.is_some() {
        header.extend([
            "conservative",
            "display_rating",
            "provisional",
            "league",
            "division",
            "points",
        ]);
    }
    record(&header)?;
    for (player, state) in players {
        let rating = state.rating();
        let mut fields = vec![
            rating.mu.to_string(),
            rating.sigma.map_or_else(String::new, |s| s.to_string()),
            state.rounds().to_string(),
        ];
        if let Some((display, leagues)) = display {
            let shown = display.show(range, rating, state.rounds());
            let placement = leagues.placement_of(player);
            fields.extend([
                shown.conservative.to_string(),
                shown
                    .display_rating
                    .map_or_else(String::new, |d| d.to_string()),
                shown.provisional.to_string(),
                placement
                    .as_ref()
                    .map_or_else(String::new, |p| p.league.to_string()),
                placement
                    .as_ref()
                    .map_or_else(String::new, |p| p.division.to_string()),
                placement
                    .and_then(|p| p.points)
                    .map_or_else(String::new, |p| p.to_string()),
            ]);
        }
        let row: Vec<&str> = std::iter::once(player)
            .chain(fields.iter().map(String::as_str))
            .collect();
        record(&row)?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|e| write_error(e.into_error()))?;
    std::fs::write(path, bytes).map_err(write_error)
}
