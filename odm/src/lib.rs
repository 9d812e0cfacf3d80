//! The typed layer over [`odm_engine`]: `#[derive(Document)]` models, typed filters and updates.
//!
//! This crate is being built; today it re-exports the engine so that applications can depend on
//! one crate name from the start.

pub use odm_engine as engine;
