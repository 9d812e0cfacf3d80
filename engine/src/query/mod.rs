//! The query language: parsing MongoDB filters and judging documents against them.
//!
//! - `filter`: a filter document -> [`Filter`], a tree of field predicates; bad input is
//!   [`FilterError`] naming the path and the operator.
//! - `matcher`: whether a document matches a [`Filter`]. It is the only judge of a match: any
//!   faster path (an index scan) may return extra candidates but must never miss one.
//! - `sort`: sort specifications and MongoDB's document sort order.
//! - `plan`: the candidate plans of a query and their ranking (`_id` lookup, index ranges,
//!   collection scan).
//! - `cache`: the plan chosen per query shape, reused until the collection's indexes change.
//! - `explain`: the chosen and rejected plans and what running them examined.
//! - `candidates`: a plan's candidate documents, pulled one at a time.
//! - `covered`: when an index alone answers a query, and rebuilding documents from its entries.
//! - `cursor`: the results of a find, streamed in plan order or sorted in memory.
//! - `selection`: `Query`, one parsed query (filter, collation, sort,
//!   projection, hint, skip, limit) that every selecting operation builds the same way.
//! - `exec`: find (match, sort, skip, limit, project), counts and distinct values.
//! - `routing`: whether a query on a sharded collection would reach one shard, some or all.
//! - `min_max`: find's `min` and `max`, a walk of the hinted index between two keys.
//! - `key_output`: find's `returnKey` and `showRecordId`, results made of index keys and
//!   record ids.
//! - `projection`: inclusion, exclusion, `$slice`, `$elemMatch` and positional projections.

mod bits;
mod cache;
mod candidates;
mod covered;
mod cursor;
mod distinct;
mod exec;
mod explain;
mod filter;
mod json_schema;
mod key_output;
mod matcher;
mod min_max;
mod plan;
mod projection;
mod residual;
mod routing;
mod selection;
mod sort;
mod source;
mod tail;

pub use crate::error::FilterError;
pub use bits::{BitTest, Bits};
pub(crate) use cache::{ID_INDEX_USES, PlanCache};
pub use candidates::WalkStats;
pub(crate) use cursor::Decode;
pub use cursor::{Cursor, SORT_MEMORY_LIMIT, Spill};
pub use distinct::Distinct;
pub use exec::FindOptions;
pub(crate) use exec::{choose_plan, distinct_values};
pub use explain::Explain;
pub(crate) use filter::LOGICAL;
pub use filter::{ElemMatch, Filter, Pattern, Predicate, QueryRegex, TypeSpec};
pub use json_schema::JsonSchema;
pub(crate) use plan::id_lookup_plan;
pub use plan::{Access, FieldBounds, IndexDescription, IndexScan, KeyRange, Plan, Rank};
pub use projection::Projection;
pub(crate) use projection::no_text_score;
pub use routing::{Routing, route_filter, target_filter};
pub use selection::KeyOptions;
pub(crate) use selection::{Query, QueryOptions, parse_collation};
pub use sort::Sort;
pub(crate) use source::{Source, WriteView};
pub use tail::Tail;
