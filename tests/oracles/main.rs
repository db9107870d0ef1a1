//! The engine against the paper's own implementation (the crate `multi-skill`, the Elo-MMR
//! authors' code) on the shared datasets, read as the service reads them (`replay`'s input):
//! every rating of formula1 and of early ctftime agrees (`multi_skill`), and the accuracy
//! metrics are counted as that implementation counts them (`paper_metrics`). Each test says it
//! skipped where `../shared/data` is absent (a fresh clone). The engine's own tests are in
//! `src/engine/tests`.

mod multi_skill;
mod paper_metrics;
