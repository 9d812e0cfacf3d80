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
use std::fmt::Write;
use std::sync::{Mutex, PoisonError};

use super::filter::{ElemMatch, Filter, Pattern, Predicate};
use super::sort::Sort;
use crate::catalog::CollectionMeta;
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
    entries: Mutex<HashMap<String, Choice>>,
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

    pub(crate) fn get(&self, key: &str) -> Option<Choice> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    pub(crate) fn put(&self, key: String, choice: Choice) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(key, choice);
    }
}

/// The cache key of a query on a collection; `collated`: whether it has a collation (which
/// keeps string conditions from bounding indexes, so it plans otherwise).
pub(crate) fn key(
    meta: &CollectionMeta,
    filter: &Filter,
    collated: bool,
    sort: Option<&Sort>,
) -> String {
    let mut out = format!("{}|", meta.id);
    for index in &meta.indexes {
        let _ = write!(
            out,
            "{}{},",
            index.id,
            if index.multikey { "m" } else { "" }
        );
    }
    out.push('|');
    if collated {
        out.push_str("collated:");
    }
    filter_shape(filter, &mut out);
    out.push('|');
    if let Some(sort) = sort {
        for (path, direction) in sort.fields() {
            let _ = write!(out, "{}:{},", path.as_str(), direction.as_i32());
        }
    }
    out
}

fn filter_shape(filter: &Filter, out: &mut String) {
    let (name, parts) = match filter {
        Filter::And(parts) => ("and", parts),
        Filter::Or(parts) => ("or", parts),
        Filter::Nor(parts) => ("nor", parts),
        Filter::Field(path, predicate) => {
            let _ = write!(out, "{}:", path.as_str());
            predicate_shape(predicate, out);
            return;
        }
        // No index serves an expression, so every one has the same plans.
        Filter::Expr(_) => {
            out.push_str("expr");
            return;
        }
    };
    let _ = write!(out, "{name}(");
    for part in parts {
        filter_shape(part, out);
        out.push(',');
    }
    out.push(')');
}

fn value_shape(v: &bson::RawBson, out: &mut String) {
    let _ = write!(out, "{:?}", bracket(&v.as_raw_bson_ref()));
}

fn predicate_shape(predicate: &Predicate, out: &mut String) {
    match predicate {
        Predicate::Eq(v)
        | Predicate::Gt(v)
        | Predicate::Gte(v)
        | Predicate::Lt(v)
        | Predicate::Lte(v) => {
            let op = match predicate {
                Predicate::Eq(_) => "eq",
                Predicate::Gt(_) => "gt",
                Predicate::Gte(_) => "gte",
                Predicate::Lt(_) => "lt",
                _ => "lte",
            };
            out.push_str(op);
            value_shape(v, out);
        }
        Predicate::In(patterns) | Predicate::All(patterns) => {
            out.push_str(if matches!(predicate, Predicate::In(_)) {
                "in["
            } else {
                "all["
            });
            for p in patterns {
                match p {
                    Pattern::Value(v) => value_shape(v, out),
                    // The literal prefix decides whether an index range applies.
                    Pattern::Regex(r) => {
                        let _ = write!(out, "re/{}/{}", r.pattern, r.options);
                    }
                    Pattern::ElemMatch(_) => out.push_str("em"),
                }
                out.push(',');
            }
            out.push(']');
        }
        Predicate::Regex(r) => {
            let _ = write!(out, "re/{}/{}", r.pattern, r.options);
        }
        Predicate::Not(inner) => {
            out.push_str("not(");
            for p in inner {
                predicate_shape(p, out);
                out.push(',');
            }
            out.push(')');
        }
        Predicate::ElemMatch(em) => match em.as_ref() {
            ElemMatch::Value(preds) => {
                out.push_str("em(");
                for p in preds {
                    predicate_shape(p, out);
                }
                out.push(')');
            }
            ElemMatch::Document(f) => {
                out.push_str("emd(");
                filter_shape(f, out);
                out.push(')');
            }
        },
        // These give no index bounds: their names are shape enough.
        Predicate::Size(_) => out.push_str("size"),
        Predicate::Exists => out.push_str("exists"),
        Predicate::Type(_) => out.push_str("type"),
        Predicate::Mod { .. } => out.push_str("mod"),
    }
}
