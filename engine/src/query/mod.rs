//! The query language: parsing MongoDB filters and judging documents against them.
//!
//! - `filter`: a filter document -> [`Filter`], a tree of field predicates; bad input is
//!   [`FilterError`] naming the path and the operator.
//! - `matcher`: whether a document matches a [`Filter`]. It is the only judge of a match: any
//!   faster path (an index scan) may return extra candidates but must never miss one.

mod filter;
mod matcher;

pub use filter::{
    ElemMatch, FieldPath, Filter, FilterError, Pattern, Predicate, QueryRegex, TypeSpec,
};
