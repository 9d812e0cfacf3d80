//! The plan cache: the plan chosen for a query shape, reused while the collection's indexes
//! stay the same.
//!
//! A shape is the filter's structure with values reduced to their type bracket, plus the sort;
//! queries of one shape rank their candidate plans the same way, so the choice carries over.
//! Entries are keyed by the collection's index set (ids and multikey flags), so creating,
//! dropping or changing an index makes the old entries unreachable; the cache is bounded and
//! cleared when full.
//!
//! Beside the choices, the cache counts how many operations each index served since the
//! database was opened (`$indexStats`' `accesses`): every plan a query, a count, a distinct or a
//! write runs is counted once per index it reads.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::filter::{ElemMatch, Filter, Pattern, Predicate};
use super::sort::Sort;
use crate::catalog::CollectionMeta;
use crate::collation::Collation;
use crate::order::bracket;

/// The most entries kept before the cache starts over.
const CAPACITY: usize = 4096;

/// What a cached choice names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The best plan is a scan of this index.
    Index(String),
    /// Any other plan: planned afresh each time (cheap: no index bounds to rank).
    Other,
}

/// The index id the `_id` index's uses are counted under: it has no catalog id of its own,
/// and no secondary index is given this one.
pub(crate) const ID_INDEX_USES: u64 = u64::MAX;

#[derive(Debug)]
pub(crate) struct PlanCache {
    entries: Mutex<HashMap<Vec<u8>, Choice>>,
    /// Operations per (collection id, index id).
    uses: Mutex<HashMap<(u64, u64), u64>>,
    /// When the counting started.
    since: bson::DateTime,
}

impl Default for PlanCache {
    fn default() -> PlanCache {
        PlanCache {
            entries: Mutex::default(),
            uses: Mutex::default(),
            since: bson::DateTime::now(),
        }
    }
}

impl PlanCache {
    /// Counts one operation for each index `plan` reads.
    pub(crate) fn used(&self, meta: &CollectionMeta, plan: &super::plan::Plan) {
        let names = plan.indexes();
        if names.is_empty() {
            return;
        }
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        for name in names {
            let index = if name == crate::index::ID_INDEX_NAME {
                Some(ID_INDEX_USES)
            } else {
                meta.index(name).map(|index| index.id)
            };
            if let Some(index) = index {
                *uses.entry((meta.id, index)).or_default() += 1;
            }
        }
    }

    /// How many operations an index served, and since when.
    pub(crate) fn uses(&self, collection: u64, index: u64) -> (u64, bson::DateTime) {
        let uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        (
            uses.get(&(collection, index)).copied().unwrap_or(0),
            self.since,
        )
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<Choice> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    pub(crate) fn put(&self, key: Vec<u8>, choice: Choice) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(key, choice);
    }
}

/// The cache key of a query on a collection; `collation`: the one it compares strings under
/// (which decides which indexes string conditions may bound, so it plans otherwise). Built as
/// bytes, every name and pattern with its length before it, so two shapes never share a key.
pub(crate) fn key(
    meta: &CollectionMeta,
    filter: &Filter,
    collation: Option<&Collation>,
    sort: Option<&Sort>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&meta.id.to_le_bytes());
    push_len(&mut out, meta.indexes.len());
    for index in &meta.indexes {
        out.extend_from_slice(&index.id.to_le_bytes());
        out.push(u8::from(index.multikey));
    }
    match collation {
        None => out.push(0),
        Some(collation) => {
            out.push(1);
            push_text(&mut out, &collation.normalized().to_string());
        }
    }
    filter_shape(filter, &mut out);
    if let Some(sort) = sort {
        for (path, direction) in sort.fields() {
            push_text(&mut out, path.as_str());
            out.extend_from_slice(&direction.as_i32().to_le_bytes());
        }
    }
    out
}

fn push_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u64).to_le_bytes());
}

fn push_text(out: &mut Vec<u8>, text: &str) {
    push_len(out, text.len());
    out.extend_from_slice(text.as_bytes());
}

/// One byte per kind of node or operator.
mod tag {
    pub const AND: u8 = 1;
    pub const OR: u8 = 2;
    pub const NOR: u8 = 3;
    pub const FIELD: u8 = 4;
    pub const EXPR: u8 = 5;
    pub const EQ: u8 = 6;
    pub const GT: u8 = 7;
    pub const GTE: u8 = 8;
    pub const LT: u8 = 9;
    pub const LTE: u8 = 10;
    pub const IN: u8 = 11;
    pub const ALL: u8 = 12;
    pub const REGEX: u8 = 13;
    pub const ELEM_MATCH: u8 = 14;
    pub const NOT: u8 = 15;
    pub const ELEM_MATCH_VALUE: u8 = 16;
    pub const ELEM_MATCH_DOCUMENT: u8 = 17;
    pub const SIZE: u8 = 18;
    pub const EXISTS: u8 = 19;
    pub const TYPE: u8 = 20;
    pub const MOD: u8 = 21;
    pub const VALUE: u8 = 22;
    pub const BITS: u8 = 23;
    pub const TEXT: u8 = 24;
    pub const GEO: u8 = 25;
}

fn filter_shape(filter: &Filter, out: &mut Vec<u8>) {
    let (name, parts) = match filter {
        Filter::And(parts) => (tag::AND, parts),
        Filter::Or(parts) => (tag::OR, parts),
        Filter::Nor(parts) => (tag::NOR, parts),
        Filter::Field(path, predicate) => {
            out.push(tag::FIELD);
            push_text(out, path.as_str());
            predicate_shape(predicate, out);
            return;
        }
        // No index serves an expression or a schema, so every one has the same plans.
        Filter::Expr(_) | Filter::JsonSchema(_) => {
            out.push(tag::EXPR);
            return;
        }
        // A `$text` always runs on the text index (see `plan::text_plan`).
        Filter::Text(_) => {
            out.push(tag::TEXT);
            return;
        }
    };
    out.push(name);
    push_len(out, parts.len());
    for part in parts {
        filter_shape(part, out);
    }
}

fn value_shape(v: &bson::RawBson, out: &mut Vec<u8>) {
    out.push(bracket(&v.as_raw_bson_ref()) as u8);
}

fn regex_shape(r: &super::filter::QueryRegex, out: &mut Vec<u8>) {
    // The literal prefix decides whether an index range applies.
    out.push(tag::REGEX);
    push_text(out, &r.pattern);
    push_text(out, &r.options);
}

fn predicate_shape(predicate: &Predicate, out: &mut Vec<u8>) {
    match predicate {
        Predicate::Eq(v)
        | Predicate::Gt(v)
        | Predicate::Gte(v)
        | Predicate::Lt(v)
        | Predicate::Lte(v) => {
            out.push(match predicate {
                Predicate::Eq(_) => tag::EQ,
                Predicate::Gt(_) => tag::GT,
                Predicate::Gte(_) => tag::GTE,
                Predicate::Lt(_) => tag::LT,
                _ => tag::LTE,
            });
            value_shape(v, out);
        }
        Predicate::In(patterns) | Predicate::All(patterns) => {
            out.push(if matches!(predicate, Predicate::In(_)) {
                tag::IN
            } else {
                tag::ALL
            });
            push_len(out, patterns.len());
            for p in patterns {
                match p {
                    Pattern::Value(v) => {
                        out.push(tag::VALUE);
                        value_shape(v, out);
                    }
                    Pattern::Regex(r) => regex_shape(r, out),
                    Pattern::ElemMatch(_) => out.push(tag::ELEM_MATCH),
                }
            }
        }
        Predicate::Regex(r) => regex_shape(r, out),
        Predicate::Not(inner) => {
            out.push(tag::NOT);
            push_len(out, inner.len());
            for p in inner {
                predicate_shape(p, out);
            }
        }
        Predicate::ElemMatch(em) => match em.as_ref() {
            ElemMatch::Value(preds) => {
                out.push(tag::ELEM_MATCH_VALUE);
                push_len(out, preds.len());
                for p in preds {
                    predicate_shape(p, out);
                }
            }
            ElemMatch::Document(f) => {
                out.push(tag::ELEM_MATCH_DOCUMENT);
                filter_shape(f, out);
            }
        },
        // These give no index bounds: their names are shape enough.
        Predicate::Size(_) => out.push(tag::SIZE),
        Predicate::Exists => out.push(tag::EXISTS),
        Predicate::Type(_) => out.push(tag::TYPE),
        Predicate::Mod { .. } => out.push(tag::MOD),
        Predicate::Bits(_) => out.push(tag::BITS),
        Predicate::Geo(_) => out.push(tag::GEO),
    }
}
