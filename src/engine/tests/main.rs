//! Integration tests of the rating engine, through its public API only (`mmr_engine`): the
//! properties the paper proves (`properties`, `diffusion`), bit-identical results whatever the
//! listing order and thread count (`determinism`), a differential test against a plain O(N²)
//! transcription of Algorithms 1–3 kept here (`reference`, `differential`), and the extremes
//! the engine must survive (`edge_cases`, `finite`). `support` holds the random beliefs and
//! rounds they share. `weng_lin`, `true_skill`, `glicko2` and `elo` check the other rating
//! systems against the crate `skillratings`, their sources' worked examples, and by their
//! properties. Agreement with the paper's own implementation on the shared datasets is in the
//! service's `tests/oracles`, which reads the datasets through `replay`.

mod determinism;
mod differential;
mod diffusion;
mod edge_cases;
mod elo;
mod finite;
mod glicko2;
mod properties;
mod reference;
mod support;
mod true_skill;
mod weng_lin;
