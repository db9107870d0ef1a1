//! Elo-MMR's parameters (docs/elo-mmr.md, "Parameters of a rating pool"), with their defaults,
//! ranges and validation; the other systems keep theirs in their own modules. Nothing here
//! knows where the values came from (CLI, config, HTTP).

use serde::{Deserialize, Serialize};

use crate::bounds::{within, MAX_ABS_RATING, MAX_SPREAD, MIN_SPREAD};
use crate::Error;

/// Which performance model the pool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// Elo-MMR(ρ): logistic performances, a belief of one Gaussian and many logistic factors.
    #[default]
    Logistic,
    /// Elo-MMχ: Gaussian performances, the belief stays one Gaussian.
    Gaussian,
}

/// How a tie counts when a performance is estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Ties {
    /// A tie counts as a win and as a loss (the paper's default).
    #[default]
    Both,
    /// A tie counts as half a win and half a loss.
    Split,
}

/// Largest `drift_per_day`, a variance per day: across the 10,000 years RFC 3339 times can span
/// it adds under 4e12 to a variance, no more than [`MAX_SPREAD`] squared does.
pub const MAX_DRIFT_PER_DAY: f64 = 1e6;
/// Largest `history_limit`. Every player keeps up to this many factors in memory and in storage
/// and every rating update sums over all of them; far more than the longest careers in the
/// datasets, and small enough to store as a 64-bit integer.
pub const MAX_HISTORY_LIMIT: usize = 100_000;

/// The engine parameters of one rating pool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct EloMmrParams {
    /// Performance model.
    #[cfg_attr(feature = "schema", schema(inline))]
    pub variant: Variant,
    /// Spread (std) of a performance around skill in a round of weight 1.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub beta: f64,
    /// Skill drift (std) added each time a player takes part.
    #[cfg_attr(feature = "schema", schema(minimum = 0.0, maximum = 1e6))]
    pub gamma: f64,
    /// Pseudodiffusion transfer rate; `f64::INFINITY` gives Elo-MMR(∞) (written `"inf"` in
    /// JSON, which has no infinity).
    #[serde(with = "rho_text")]
    #[cfg_attr(feature = "schema", schema(schema_with = rho_text::schema))]
    pub rho: f64,
    /// Mean of a new player's prior.
    #[cfg_attr(feature = "schema", schema(minimum = -1e9, maximum = 1e9))]
    pub mu_init: f64,
    /// Std of a new player's prior.
    #[cfg_attr(feature = "schema", schema(minimum = 1e-6, maximum = 1e6))]
    pub sigma_init: f64,
    /// Extra drift variance per day since a player's last round.
    #[cfg_attr(feature = "schema", schema(minimum = 0.0, maximum = 1e6))]
    pub drift_per_day: f64,
    /// Most logistic factors kept per player; older ones fold into the Gaussian term.
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 100_000))]
    pub history_limit: usize,
    /// How ties count.
    #[cfg_attr(feature = "schema", schema(inline))]
    pub ties: Ties,
}

impl Default for EloMmrParams {
    fn default() -> Self {
        Self {
            variant: Variant::Logistic,
            beta: 200.0,
            gamma: 35.0,
            rho: 1.0,
            mu_init: 1500.0,
            sigma_init: 350.0,
            drift_per_day: 0.0,
            history_limit: 500,
            ties: Ties::Both,
        }
    }
}

impl EloMmrParams {
    /// Checks every parameter; the error names the first one that is out of range.
    pub fn validate(&self) -> Result<(), Error> {
        within("beta", self.beta, MIN_SPREAD, MAX_SPREAD)?;
        within("gamma", self.gamma, 0.0, MAX_SPREAD)?;
        if self.rho.is_nan() || self.rho < 0.0 {
            return Err(Error::parameter("rho", "must be >= 0 (infinity allowed)"));
        }
        within("mu_init", self.mu_init, -MAX_ABS_RATING, MAX_ABS_RATING)?;
        within("sigma_init", self.sigma_init, MIN_SPREAD, MAX_SPREAD)?;
        within("drift_per_day", self.drift_per_day, 0.0, MAX_DRIFT_PER_DAY)?;
        if !(1..=MAX_HISTORY_LIMIT).contains(&self.history_limit) {
            return Err(Error::parameter(
                "history_limit",
                format!("must be an integer from 1 to {MAX_HISTORY_LIMIT}"),
            ));
        }
        Ok(())
    }
}

/// `rho` in text formats: a number, or the string `"inf"` for an infinite one. Reading also
/// takes TOML's own `inf`, and a number or `"infinity"` as a string.
mod rho_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(rho: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if *rho == f64::INFINITY {
            serializer.serialize_str("inf")
        } else {
            serializer.serialize_f64(*rho)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Rho {
            Number(f64),
            Text(String),
        }
        // Text also reaches here from environment variables and `--param`.
        match Rho::deserialize(deserializer)? {
            Rho::Number(rho) => Ok(rho),
            Rho::Text(text) => match text.parse::<f64>() {
                Ok(rho) if !rho.is_nan() => Ok(rho),
                _ => Err(serde::de::Error::custom("rho must be a number or \"inf\"")),
            },
        }
    }

    /// ρ in an API document: a number >= 0, or `"inf"`.
    #[cfg(feature = "schema")]
    pub fn schema() -> utoipa::openapi::schema::Schema {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
        Schema::OneOf(
            OneOfBuilder::new()
                .item(
                    ObjectBuilder::new()
                        .schema_type(Type::Number)
                        .minimum(Some(0)),
                )
                .item(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some(["inf"])),
                )
                .description(Some(
                    "Pseudodiffusion transfer rate: a number >= 0, or `\"inf\"` for Elo-MMR(∞).",
                ))
                .build(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::{MAX_ROUND_WEIGHT, MIN_ROUND_WEIGHT};
    use std::sync::atomic::AtomicBool;

    use crate::predict::{forecast, Figures};
    use crate::{Population, Round, Standing};

    #[test]
    fn defaults_are_valid() {
        assert_eq!(EloMmrParams::default().validate(), Ok(()));
    }

    /// A parameter's name and a way to spoil it.
    type Spoiler = (&'static str, fn(&mut EloMmrParams));

    #[test]
    fn every_bad_parameter_is_named() {
        let cases: [Spoiler; 20] = [
            ("beta", |p| p.beta = 0.0),
            ("beta", |p| p.beta = f64::NAN),
            ("beta", |p| p.beta = 1e308),
            ("beta", |p| p.beta = MIN_SPREAD / 2.0),
            ("gamma", |p| p.gamma = -1.0),
            ("gamma", |p| p.gamma = 1e308),
            ("rho", |p| p.rho = -0.5),
            ("rho", |p| p.rho = f64::NAN),
            ("mu_init", |p| p.mu_init = f64::INFINITY),
            ("mu_init", |p| p.mu_init = -1e300),
            ("sigma_init", |p| p.sigma_init = 0.0),
            ("sigma_init", |p| p.sigma_init = f64::NEG_INFINITY),
            ("sigma_init", |p| p.sigma_init = 1e300),
            ("sigma_init", |p| p.sigma_init = 1e-300),
            ("drift_per_day", |p| p.drift_per_day = f64::NAN),
            ("drift_per_day", |p| p.drift_per_day = 1e308),
            ("drift_per_day", |p| p.drift_per_day = -1.0),
            ("history_limit", |p| p.history_limit = 0),
            ("history_limit", |p| p.history_limit = MAX_HISTORY_LIMIT + 1),
            ("history_limit", |p| p.history_limit = usize::MAX),
        ];
        for (name, spoil) in cases {
            let mut params = EloMmrParams::default();
            spoil(&mut params);
            match params.validate() {
                Err(Error::InvalidParameter { name: got, .. }) => assert_eq!(got, name),
                other => panic!("{name}: expected an error naming it, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_range_error_states_the_range() {
        let params = EloMmrParams {
            gamma: 1e308,
            ..EloMmrParams::default()
        };
        assert_eq!(
            params.validate(),
            Err(Error::parameter("gamma", "must be a number from 0 to 1e6"))
        );
    }

    /// Seconds from the Unix epoch to 0000-01-01 and to 9999-12-31T23:59:59Z, the ends of
    /// what an RFC 3339 time can say.
    const FIRST_TIME: i64 = -62_167_219_200;
    const LAST_TIME: i64 = 253_402_300_799;

    /// Every combination of extreme parameters, rounds at the extreme weights and ceilings 10,000
    /// years apart, then a forecast: all finite. The bounds are where the engine is safe.
    #[test]
    fn every_corner_of_the_bounds_rates_and_predicts_finitely() {
        let solo = |players: &[(&str, u64)]| -> Vec<Standing> {
            players.iter().map(|&(p, r)| Standing::solo(p, r)).collect()
        };
        let rounds = [
            Round {
                time: Some(FIRST_TIME),
                weight: MIN_ROUND_WEIGHT,
                perf_ceiling: Some(-MAX_ABS_RATING),
                standings: solo(&[("a", 1), ("b", 2), ("c", 2), ("d", 4)]),
            },
            Round {
                time: Some(LAST_TIME),
                weight: MAX_ROUND_WEIGHT,
                perf_ceiling: Some(MAX_ABS_RATING),
                standings: solo(&[("a", 3), ("b", 2), ("e", 1)]),
            },
            Round::new(solo(&[("d", 1), ("e", 2), ("a", 3), ("b", 4)])),
        ];
        let entrants: [&[&str]; 4] = [&["a"], &["b", "c"], &["e"], &["newcomer"]];
        // Each bit of `corner` picks one end of one parameter's range.
        for corner in 0..32_u32 {
            let end = |bit: u32, low: f64, high: f64| {
                if corner >> bit & 1 == 0 {
                    low
                } else {
                    high
                }
            };
            for rho in [0.0, 1.0, f64::INFINITY] {
                let params = EloMmrParams {
                    variant: [Variant::Logistic, Variant::Gaussian][(corner & 1) as usize],
                    beta: end(1, MIN_SPREAD, MAX_SPREAD),
                    sigma_init: end(2, MIN_SPREAD, MAX_SPREAD),
                    gamma: end(3, 0.0, MAX_SPREAD),
                    mu_init: end(4, -MAX_ABS_RATING, MAX_ABS_RATING),
                    rho,
                    drift_per_day: MAX_DRIFT_PER_DAY,
                    history_limit: 2,
                    ties: Ties::Both,
                };
                let mut population = Population::new(params).expect("valid parameters");
                for round in &rounds {
                    for change in population.apply(round).expect("a valid round") {
                        assert!(
                            change.performance.is_finite()
                                && change.after.mu.is_finite()
                                && change.after.sigma.is_some_and(f64::is_normal),
                            "{params:?}: {change:?}"
                        );
                    }
                }
                let all = Figures {
                    expected_ranks: true,
                    pairwise: true,
                };
                let go = AtomicBool::new(false);
                let forecast = forecast(&population, &entrants, all, &go).expect("a forecast");
                let mut values = forecast
                    .entrants
                    .iter()
                    .flat_map(|e| [Some(e.p_first), e.expected_rank])
                    .flatten()
                    .chain(forecast.pairwise.iter().flatten().flatten().copied())
                    .chain([forecast.quality]);
                assert!(values.all(f64::is_finite), "{params:?}: {forecast:?}");
            }
        }
    }

    #[test]
    fn infinite_rho_is_allowed() {
        let params = EloMmrParams {
            rho: f64::INFINITY,
            ..EloMmrParams::default()
        };
        assert_eq!(params.validate(), Ok(()));
    }
}
