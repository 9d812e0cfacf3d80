//! The guide to odm: one module per chapter, each chapter a Markdown file under `chapters/`
//! whose examples `cargo test` runs as doctests, so an example that stops compiling or stops
//! holding fails CI. Read the chapters as Markdown in the repository or as rustdoc pages
//! (`cargo doc -p odm-guide --open`).
//!
//! This crate holds no code: it may depend on every product crate, and none may depend on it.

#[doc = include_str!("../chapters/01-getting-started.md")]
pub mod getting_started {}

#[doc = include_str!("../chapters/02-models-and-indexes.md")]
pub mod models_and_indexes {}

#[doc = include_str!("../chapters/03-queries-and-updates.md")]
pub mod queries_and_updates {}

#[doc = include_str!("../chapters/04-aggregation.md")]
pub mod aggregation {}

#[doc = include_str!("../chapters/05-transactions.md")]
pub mod transactions {}

#[doc = include_str!("../chapters/06-patterns.md")]
pub mod patterns {}

#[doc = include_str!("../chapters/07-change-streams.md")]
pub mod change_streams {}

#[doc = include_str!("../chapters/08-serving-and-tools.md")]
pub mod serving_and_tools {}

#[doc = include_str!("../chapters/09-mongodb-back-end.md")]
pub mod mongodb_back_end {}

#[doc = include_str!("../chapters/10-performance.md")]
pub mod performance {}

#[doc = include_str!("../chapters/11-engine-and-hardening.md")]
pub mod engine_and_hardening {}

#[doc = include_str!("../chapters/12-async.md")]
pub mod async_api {}
