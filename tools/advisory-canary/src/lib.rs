//! Empty: this crate exists for its lockfile (see Cargo.toml).
