//! What every rating system shows of a player, whatever it keeps inside: a rating with its
//! uncertainty, and what one round did to it. Reads, history rows and `replay`'s output are
//! built on these two values only.

/// A player's displayed rating: `mu`, and the standard deviation of the system's belief about
/// it, for a system that keeps one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rating {
    /// The rating.
    pub mu: f64,
    /// Its uncertainty (a standard deviation, in rating points); `None` for a system that
    /// keeps none (Elo).
    pub sigma: Option<f64>,
}

impl Rating {
    /// `μ − kσ`: a rating the player's skill exceeds with high confidence (k = 3 unless a
    /// pool's display settings say otherwise); `μ` itself where the system keeps no σ.
    #[must_use]
    pub fn conservative(&self, k: f64) -> f64 {
        self.mu - k * self.sigma.unwrap_or(0.0)
    }
}

/// What one round did to one player.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingChange {
    /// The performance the round credited the player with.
    pub performance: f64,
    /// The rating before the round (before any drift the round itself adds).
    pub before: Rating,
    /// The rating after the round.
    pub after: Rating,
}

impl RatingChange {
    /// How far the rating moved: `after.mu − before.mu`.
    #[must_use]
    pub fn delta(&self) -> f64 {
        self.after.mu - self.before.mu
    }
}
