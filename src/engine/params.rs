//! The parameters of one rating pool (MATH.md, "Parameters of a rating pool"), with their
//! defaults and validation. Nothing here knows where the values came from (CLI, config, HTTP).

use serde::{Deserialize, Serialize};

use super::Error;

/// Which performance model the pool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
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
#[serde(rename_all = "snake_case")]
pub enum Ties {
    /// A tie counts as a win and as a loss (the paper's default).
    #[default]
    Both,
    /// A tie counts as half a win and half a loss.
    Split,
}

/// Smallest and largest round weight accepted: beyond these, `beta / sqrt(weight)` squared
/// leaves the range where `1 / beta_t²` is a finite, normal number for any sane `beta`.
pub const MIN_ROUND_WEIGHT: f64 = 1e-6;
/// See [`MIN_ROUND_WEIGHT`].
pub const MAX_ROUND_WEIGHT: f64 = 1e6;

/// The engine parameters of one rating pool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Performance model.
    pub variant: Variant,
    /// Spread (std) of a performance around skill in a round of weight 1.
    pub beta: f64,
    /// Skill drift (std) added each time a player takes part.
    pub gamma: f64,
    /// Pseudodiffusion transfer rate; `f64::INFINITY` gives Elo-MMR(∞).
    pub rho: f64,
    /// Mean of a new player's prior.
    pub mu_init: f64,
    /// Std of a new player's prior.
    pub sigma_init: f64,
    /// Extra drift variance per day since a player's last round.
    pub drift_per_day: f64,
    /// Most logistic factors kept per player; older ones fold into the Gaussian term.
    pub history_limit: usize,
    /// How ties count.
    pub ties: Ties,
}

impl Default for Params {
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

impl Params {
    /// Checks every parameter; the error names the first one that is out of range.
    pub fn validate(&self) -> Result<(), Error> {
        positive_finite("beta", self.beta)?;
        non_negative_finite("gamma", self.gamma)?;
        if self.rho.is_nan() || self.rho < 0.0 {
            return Err(Error::parameter("rho", "must be >= 0 (infinity allowed)"));
        }
        if !self.mu_init.is_finite() {
            return Err(Error::parameter("mu_init", "must be a finite number"));
        }
        positive_finite("sigma_init", self.sigma_init)?;
        non_negative_finite("drift_per_day", self.drift_per_day)?;
        if self.history_limit == 0 {
            return Err(Error::parameter("history_limit", "must be at least 1"));
        }
        Ok(())
    }
}

fn positive_finite(name: &'static str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::parameter(name, "must be a finite number > 0"))
    }
}

fn non_negative_finite(name: &'static str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::parameter(name, "must be a finite number >= 0"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(Params::default().validate(), Ok(()));
    }

    /// A parameter's name and a way to spoil it.
    type Spoiler = (&'static str, fn(&mut Params));

    #[test]
    fn every_bad_parameter_is_named() {
        let cases: [Spoiler; 10] = [
            ("beta", |p| p.beta = 0.0),
            ("beta", |p| p.beta = f64::NAN),
            ("gamma", |p| p.gamma = -1.0),
            ("rho", |p| p.rho = -0.5),
            ("rho", |p| p.rho = f64::NAN),
            ("mu_init", |p| p.mu_init = f64::INFINITY),
            ("sigma_init", |p| p.sigma_init = 0.0),
            ("drift_per_day", |p| p.drift_per_day = f64::NAN),
            ("history_limit", |p| p.history_limit = 0),
            ("sigma_init", |p| p.sigma_init = f64::NEG_INFINITY),
        ];
        for (name, spoil) in cases {
            let mut params = Params::default();
            spoil(&mut params);
            match params.validate() {
                Err(Error::InvalidParameter { name: got, .. }) => assert_eq!(got, name),
                other => panic!("{name}: expected an error naming it, got {other:?}"),
            }
        }
    }

    #[test]
    fn infinite_rho_is_allowed() {
        let params = Params {
            rho: f64::INFINITY,
            ..Params::default()
        };
        assert_eq!(params.validate(), Ok(()));
    }
}
