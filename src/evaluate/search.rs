//! The parameter search of `evaluate --tune-fraction`: a coordinate search over each system's
//! main parameters, every candidate a multiple of the parameter's default. Parameters are set
//! through their serialized names, so the search needs no system's own types.

use crate::engine::SystemParams;
use crate::params;

/// The multiples of a parameter's default each sweep tries, in order.
pub const FACTORS: [f64; 5] = [0.5, 0.75, 1.0, 1.5, 2.0];

/// `params` with the numeric parameter `key` set to `value`, or `None` when the system has no
/// such numeric parameter.
#[must_use]
pub fn with(params: &SystemParams, key: &str, value: f64) -> Option<SystemParams> {
    self::value(params, key)?;
    let set = std::iter::once((key.to_owned(), params::number(value))).collect();
    params::merged(params, &set).ok()
}

/// The numeric parameter `key` of `params`.
#[must_use]
pub fn value(params: &SystemParams, key: &str) -> Option<f64> {
    serde_json::to_value(params)
        .ok()?
        .get("params")?
        .get(key)?
        .as_f64()
}

/// Coordinate search: from `start`, sweeps each tuned parameter ([`crate::engine::SystemName::tuned`]) over [`FACTORS`] times
/// its value in `start`, keeping the best candidate so far (`better(a, b)`: `a` beats `b`),
/// and returns the best. `score` rates a candidate; a candidate that fails validation is
/// skipped. Costs one score of `start` plus four per parameter.
pub fn coordinate<E>(
    start: &SystemParams,
    mut score: impl FnMut(&SystemParams) -> Result<f64, E>,
    better: impl Fn(f64, f64) -> bool,
) -> Result<(SystemParams, f64), E> {
    let mut best = (start.clone(), score(start)?);
    for &key in start.name().tuned() {
        let Some(base) = value(start, key) else {
            continue;
        };
        let centre = best.0.clone();
        for factor in FACTORS.into_iter().filter(|&f| f != 1.0) {
            let Some(candidate) = with(&centre, key, base * factor) else {
                continue;
            };
            if candidate.validate().is_err() {
                continue;
            }
            let s = score(&candidate)?;
            if better(s, best.1) {
                best = (candidate, s);
            }
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EloMmrParams, SystemName};

    #[test]
    fn every_searched_parameter_exists_and_is_numeric() {
        let systems = SystemName::ALL.map(SystemName::defaults);
        for params in systems {
            for key in params.name().tuned() {
                let value = value(&params, key).expect("a numeric parameter");
                let doubled = with(&params, key, 2.0 * value).expect("settable");
                assert_eq!(super::value(&doubled, key), Some(2.0 * value));
                assert_ne!(doubled, params);
            }
        }
    }

    #[test]
    fn the_search_finds_the_best_multiple_of_each_parameter() {
        let start = SystemParams::EloMmr(EloMmrParams::default());
        // A score that is best at twice the default β and half the default γ.
        let target = |p: &SystemParams| {
            let beta = value(p, "beta").unwrap_or_default();
            let gamma = value(p, "gamma").unwrap_or_default();
            Ok::<_, ()>(-(beta - 400.0).abs() - (gamma - 17.5).abs())
        };
        let (best, score) = coordinate(&start, target, |a, b| a > b).expect("no error");
        assert_eq!(value(&best, "beta"), Some(400.0));
        assert_eq!(value(&best, "gamma"), Some(17.5));
        assert_eq!(score, 0.0);
    }
}
