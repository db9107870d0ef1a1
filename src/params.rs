//! A pool's rating system and parameters as people write them, in part: the body of
//! `PUT /v1/pools/{pool}`, a `[pools.NAME]` section, a `params` correction, `replay`'s flags.
//! Each names a system (Elo-MMR when it names none) and some of its parameters, which replace
//! the system's defaults. The engine's types ([`SystemParams`]) say which parameters a system
//! has, of what type and within what range: nothing here lists them.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::engine::{self, EloMmrParams, SystemName, SystemParams};

/// A system's name and some of its parameters, not yet checked against it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamsOverrides {
    /// The rating system; Elo-MMR when `None`.
    pub system: Option<SystemName>,
    /// The parameters given, by name, as JSON values (`null` leaves one to its default).
    pub set: Map<String, Value>,
}

/// Why [`ParamsOverrides::apply`] refused.
#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    /// A name no system has, or a value its parameter's type does not take.
    #[error("`{field}`: {message}")]
    Malformed {
        /// The parameter.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// Another system's parameter.
    #[error("invalid parameter `{field}`: is not a parameter of {}", system.as_str())]
    Foreign {
        /// The parameter.
        field: String,
        /// The system asked for.
        system: SystemName,
    },
    /// A value out of its parameter's range.
    #[error(transparent)]
    OutOfRange(#[from] engine::Error),
}

impl ParamsError {
    /// The parameter at fault.
    #[must_use]
    pub fn field(&self) -> Option<String> {
        match self {
            Self::Malformed { field, .. } | Self::Foreign { field, .. } => Some(field.clone()),
            Self::OutOfRange(error) => error.field(),
        }
    }
}

impl ParamsOverrides {
    /// The system asked for, with every parameter set here replacing its default (`base` for
    /// Elo-MMR, the system's own defaults otherwise), checked.
    pub fn apply(&self, base: &EloMmrParams) -> Result<SystemParams, ParamsError> {
        let defaults = match self.system.unwrap_or_default() {
            SystemName::EloMmr => SystemParams::EloMmr(*base),
            system => system.defaults(),
        };
        let params = merged(&defaults, &self.set)?;
        params.validate()?;
        Ok(params)
    }
}

/// `params` with each parameter in `set` replacing its value (`null` leaves it), not yet
/// checked against the parameters' ranges: an error names a parameter the system does not
/// have or a value of the wrong type.
pub fn merged(
    params: &SystemParams,
    set: &Map<String, Value>,
) -> Result<SystemParams, ParamsError> {
    let system = params.name();
    let mut given = own(params);
    for (field, value) in set {
        match given.get_mut(field) {
            Some(slot) if !value.is_null() => slot.clone_from(value),
            Some(_) => {}
            None if SystemName::ALL
                .into_iter()
                .any(|other| own(&other.defaults()).contains_key(field)) =>
            {
                if !value.is_null() {
                    return Err(ParamsError::Foreign {
                        field: field.clone(),
                        system,
                    });
                }
            }
            None => {
                return Err(ParamsError::Malformed {
                    field: field.clone(),
                    message: format!("unknown field `{field}`"),
                })
            }
        }
    }
    let mut track = serde_path_to_error::Track::new();
    system
        .read_params(serde_path_to_error::Deserializer::new(
            Value::Object(given),
            &mut track,
        ))
        .map_err(|error| ParamsError::Malformed {
            field: track.path().to_string(),
            message: error.to_string(),
        })
}

/// `x` as a parameter's value: a number, or for an infinity (which JSON has no number for)
/// the name `"inf"` (`"-inf"`, `"NaN"`), which the parameters that take infinity read.
#[must_use]
pub fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or_else(|| x.to_string().into(), Value::Number)
}

/// The parameters of `params` in their text form, by name: the object `params` holds in
/// [`SystemParams`]' form.
fn own(params: &SystemParams) -> Map<String, Value> {
    // Every system's parameters are plain numbers and names: encoding cannot fail.
    match serde_json::to_value(params) {
        Ok(Value::Object(mut encoded)) => match encoded.remove("params") {
            Some(Value::Object(own)) => own,
            _ => Map::new(),
        },
        _ => Map::new(),
    }
}

impl<'de> Deserialize<'de> for ParamsOverrides {
    /// An object of `system` and parameters. A parameter's value is a number, a name or
    /// `null`: TOML's `inf` (JSON has no infinity) arrives as the name `"inf"`, which the
    /// parameters that take infinity read.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(OverridesVisitor)
    }
}

struct OverridesVisitor;

impl<'de> Visitor<'de> for OverridesVisitor {
    type Value = ParamsOverrides;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of a rating system and its parameters")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamsOverrides, A::Error> {
        let mut overrides = ParamsOverrides::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == "system" {
                overrides.system = map.next_value()?;
            } else {
                let Setting(value) = map.next_value()?;
                overrides.set.insert(key, value);
            }
        }
        Ok(overrides)
    }
}

/// One parameter's value.
struct Setting(Value);

impl<'de> Deserialize<'de> for Setting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SettingVisitor).map(Setting)
    }
}

struct SettingVisitor;

impl<'de> Visitor<'de> for SettingVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, a name or null")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(number(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Value, A::Error> {
        Err(de::Error::invalid_type(de::Unexpected::Seq, &self))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Value, A::Error> {
        Err(de::Error::invalid_type(de::Unexpected::Map, &self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn overrides(value: Value) -> ParamsOverrides {
        serde_json::from_value(value).expect("an object")
    }

    #[test]
    fn a_parameter_given_replaces_its_default_and_null_leaves_it() {
        let base = EloMmrParams {
            beta: 150.0,
            ..EloMmrParams::default()
        };
        let params = overrides(json!({"gamma": 20, "rho": "inf", "sigma_init": null}))
            .apply(&base)
            .expect("valid");
        let SystemParams::EloMmr(params) = params else {
            panic!("Elo-MMR by default")
        };
        assert_eq!(params.beta, 150.0);
        assert_eq!(params.gamma, 20.0);
        assert_eq!(params.rho, f64::INFINITY);
        assert_eq!(params.sigma_init, base.sigma_init);
    }

    #[test]
    fn another_system_s_parameter_an_unknown_one_and_a_wrong_type_are_named() {
        let refused = |value| {
            overrides(value)
                .apply(&EloMmrParams::default())
                .expect_err("refused")
        };
        let foreign = refused(json!({"system": "elo", "beta": 1}));
        assert!(matches!(&foreign, ParamsError::Foreign { field, .. } if field == "beta"));
        assert!(overrides(json!({"system": "elo", "beta": null}))
            .apply(&EloMmrParams::default())
            .is_ok());
        let unknown = refused(json!({"colour": 1}));
        assert!(matches!(&unknown, ParamsError::Malformed { field, .. } if field == "colour"));
        let typed = refused(json!({"history_limit": -1}));
        assert!(matches!(&typed, ParamsError::Malformed { field, .. } if field == "history_limit"));
        let range = refused(json!({"system": "weng_lin", "kappa": 0}));
        assert_eq!(range.field().as_deref(), Some("kappa"));
        assert!(matches!(range, ParamsError::OutOfRange(_)));
    }
}
