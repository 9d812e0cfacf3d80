//! Errors, named for the condition that caused them.
//!
//! Pure stages have their own narrow error: [`DocumentError`] for document validation,
//! [`IndexSpecError`] for index definitions, and for the parsers of command arguments
//! [`CollationError`], [`ExprError`], [`FilterError`] and [`UpdateError`], each carrying what
//! was refused and MongoDB's code. [`Error`] is what a database operation returns and wraps
//! them. Storage failures keep redb's error as their source.
//!
//! The errors live here, below every module that returns them, so that the operation error can
//! wrap a parser's error without this module depending on the parser; each parser re-exports
//! its own (`odm_engine::expr::ExprError`).

mod capped;
mod collation;
mod document;
mod expr;
mod filter;
mod index_spec;
mod interrupted;
mod operation;
mod update;

pub use capped::CappedError;
pub use collation::CollationError;
pub use document::DocumentError;
pub use expr::ExprError;
pub use filter::FilterError;
pub use index_spec::IndexSpecError;
pub use interrupted::Interrupted;
pub use operation::{Error, Result};
pub use update::UpdateError;
