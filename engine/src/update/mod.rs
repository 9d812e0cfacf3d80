//! The update language: parsing update documents and applying them to documents.
//!
//! - `parse`: an update document -> [`Update`], operators sorted in MongoDB's processing order,
//!   or a replacement; malformed updates are [`UpdateError`] naming the path and operator.
//! - `apply`: operators applied to one document (creating intermediate documents, MongoDB's
//!   numeric types, positional `$`, `$[]` and `$[id]` with array filters).
//! - `pipeline`: updates written as an aggregation pipeline (`$set`, `$project`, `$unset`,
//!   `$replaceWith`, ...), computed with [`crate::expr`] expressions.
//! - `in_place`: the common operators applied to the stored bytes without decoding the
//!   document; the same result as `apply`, or it declines and `apply` runs.
//! - `decimal`: decimal128 sums and products for `$inc` and `$mul`.
//! - `upsert`: the document an upsert seeds from the query's equality conditions.
//! - `by_id`: updates of one document named by `_id`, under conditions parsed once.
//! - `write`: update, replace, delete, find-and-modify and bulk operations inside a write
//!   transaction.

mod apply;
mod by_id;
pub(crate) mod decimal;
mod in_place;
mod parse;
mod pipeline;
mod upsert;
mod write;

pub use crate::error::UpdateError;
pub use by_id::IdConditions;
pub use parse::{Operators, Update, UpdateModifications};
pub use pipeline::Pipeline;
pub(crate) use write::Updated;
pub use write::{
    BulkResult, BulkWrite, DeleteOptions, FindAndModify, Modified, Modify, OpResult,
    ReturnDocument, UpdateOptions, UpdateResult, WriteOp, parsed_alone,
};
