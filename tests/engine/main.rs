//! Integration tests of the rating engine, through its public API only
//! (`mmr_service::engine`): the properties the paper proves (`properties`, `diffusion`),
//! bit-identical results whatever the listing order and thread count (`determinism`), a
//! differential test against a plain O(N²) transcription of Algorithms 1–3 kept here
//! (`reference`, `differential`), agreement with the paper's own implementation on the shared
//! datasets (`multi_skill`), the accuracy metrics counted as that implementation counts them
//! (`paper_metrics`), and the extremes the engine must survive (`edge_cases`).
//! `support` holds the random beliefs and rounds they share. `weng_lin`, `true_skill`,
//! `glicko2` and `elo` check the other rating systems against the crate `skillratings`, their
//! sources' worked examples, and by their properties.

mod determinism;
mod differential;
mod diffusion;
mod edge_cases;
mod elo;
mod finite;
mod glicko2;
mod multi_skill;
mod paper_metrics;
mod properties;
mod reference;
mod support;
mod true_skill;
mod weng_lin;
