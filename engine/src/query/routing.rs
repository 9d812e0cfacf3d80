//! Shard routing: where a query on a sharded collection would go on a MongoDB cluster.
//!
//! The embedded engine has one shard; explain still reports, for a collection declared with a
//! shard key, whether `mongos` could send the query to a single shard, to the shards owning a
//! range of the key (targeted), or must ask every shard (broadcast). MongoDB's rules:
//! - a ranged key `{a: 1, b: 1}`: equality on every field reaches one shard; equality, `$in` or
//!   a range on a leading prefix (`a`) reaches the shards owning those ranges; no condition on
//!   `a` reaches all;
//! - a hashed key `{a: "hashed"}`: equality on `a` reaches one shard and `$in` a few; a range
//!   on a hashed value says nothing about where it lives, so it reaches all;
//! - `$or` is targeted when every branch is; `$nor` and negations never are.
//!
//! `target_filter` also gives the ranges of the encoded key a filter can reach (the key planned
//! as an index over it, a hashed field as its hash): what `analyzeShardKey` targets sampled
//! queries with.

use std::fmt;

use bson::RawBsonRef;

use super::filter::{Filter, Pattern, Predicate};
use super::plan::{Access, KeyRange, binary_index_plan_for, conditions};
use crate::catalog::IndexMeta;
use crate::index::IndexSpec;
use crate::options::ShardKey;

/// How many shards a query would reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Routing {
    SingleShard,
    /// The shards owning some ranges of the shard key.
    Targeted,
    Broadcast,
}

impl Routing {
    /// The spelling in explain documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Routing::SingleShard => "single shard",
            Routing::Targeted => "targeted",
            Routing::Broadcast => "broadcast",
        }
    }
}

impl fmt::Display for Routing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one condition on a shard key field tells the router.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// One value.
    Point,
    /// A few values (`$in`).
    Points,
    /// A range of values.
    Range,
}

/// The routing of a filter document on a collection sharded by `key` (a `mongos`'s choice for
/// a query or a write with this filter, under the simple collation); a filter that does not
/// parse is the engine's error for it.
pub fn route_filter(key: &ShardKey, filter: &bson::Document) -> crate::error::Result<Routing> {
    Ok(route(key, &Filter::parse(filter)?, false))
}

/// Where a filter goes under `key`: its routing, and the ranges of the encoded key it can reach
/// (the key's values encoded field after field, ascending, as an index on the key holds them,
/// a hashed field as its hash), `None` when it can reach every key. `collated`: whether its
/// strings compare under a non-simple collation (they then bound nothing). This is what
/// `analyzeShardKey` targets sampled queries with.
pub fn target_filter(
    key: &ShardKey,
    filter: &bson::Document,
    collated: bool,
) -> crate::error::Result<(Routing, Option<Vec<KeyRange>>)> {
    let parsed = Filter::parse(filter)?;
    Ok((
        route(key, &parsed, collated),
        key_ranges(key, &parsed, collated),
    ))
}

fn key_ranges(key: &ShardKey, filter: &Filter, collated: bool) -> Option<Vec<KeyRange>> {
    if let Filter::Or(branches) = filter {
        let mut all = Vec::new();
        for branch in branches {
            all.extend(key_ranges(key, branch, collated)?);
        }
        return Some(all);
    }
    // The key seen as an index over it: never multikey, since a key holds no arrays.
    let index = IndexMeta {
        id: 0,
        spec: IndexSpec::from_keys_document(&key.to_document()).ok()?,
        multikey: false,
    };
    match binary_index_plan_for(&index, filter, collated, None)?.access {
        Access::IndexScan(scan) => Some(scan.intervals),
        _ => None,
    }
}

/// The routing of `filter` on a collection sharded by `key`; `collated`: whether its strings
/// compare under a collation (a shard key range holds binary strings, so those conditions do
/// not target).
pub(crate) fn route(key: &ShardKey, filter: &Filter, collated: bool) -> Routing {
    if let Filter::Or(branches) = filter {
        return branches
            .iter()
            .map(|b| route(key, b, collated))
            .max()
            .map_or(Routing::Broadcast, |worst| worst.max(Routing::Targeted));
    }
    let conds = conditions(filter, collated);
    let bound_of = |path: &str| -> Option<Bound> {
        conds
            .iter()
            .filter(|(p, _)| p.as_str() == path)
            .filter_map(|(_, predicate)| bound(predicate))
            .min_by_key(|b| match b {
                Bound::Point => 0,
                Bound::Points => 1,
                Bound::Range => 2,
            })
    };
    match key {
        ShardKey::Hashed(path) => match bound_of(path.as_str()) {
            Some(Bound::Point) => Routing::SingleShard,
            Some(Bound::Points) => Routing::Targeted,
            Some(Bound::Range) | None => Routing::Broadcast,
        },
        ShardKey::Range(fields) => {
            let bounds: Vec<Option<Bound>> =
                fields.iter().map(|(p, _)| bound_of(p.as_str())).collect();
            if bounds.iter().all(|b| *b == Some(Bound::Point)) {
                Routing::SingleShard
            } else if bounds[0].is_some() {
                Routing::Targeted
            } else {
                Routing::Broadcast
            }
        }
    }
}

/// A shard key value can be neither an array nor a regex, so only scalar operands bound it.
fn bound(predicate: &Predicate) -> Option<Bound> {
    let scalar = |v: &bson::RawBson| {
        !matches!(
            v.as_raw_bson_ref(),
            RawBsonRef::Array(_) | RawBsonRef::RegularExpression(_)
        )
    };
    match predicate {
        Predicate::Eq(v) if scalar(v) => Some(Bound::Point),
        Predicate::In(patterns) => {
            let values = patterns
                .iter()
                .all(|p| matches!(p, Pattern::Value(v) if scalar(v)));
            match patterns.len() {
                _ if !values => None,
                1 => Some(Bound::Point),
                _ => Some(Bound::Points),
            }
        }
        Predicate::Gt(v) | Predicate::Gte(v) | Predicate::Lt(v) | Predicate::Lte(v)
            if scalar(v) =>
        {
            Some(Bound::Range)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use bson::{Document, doc};

    use super::{Routing, route};
    use crate::options::ShardKey;
    use crate::query::Filter;

    fn routing(key: &ShardKey, filter: Document) -> Routing {
        route(key, &Filter::parse(&filter).unwrap(), false)
    }

    #[test]
    fn ranged_keys_route_by_their_prefix() {
        let key = ShardKey::range(["recipient", "sent"]).unwrap();
        let r = |f| routing(&key, f);
        assert_eq!(
            r(doc! { "recipient": "ann", "sent": 5 }),
            Routing::SingleShard
        );
        assert_eq!(r(doc! { "recipient": "ann" }), Routing::Targeted);
        assert_eq!(
            r(doc! { "recipient": { "$in": ["a", "b"] } }),
            Routing::Targeted
        );
        assert_eq!(r(doc! { "recipient": { "$gt": "m" } }), Routing::Targeted);
        assert_eq!(r(doc! { "sent": 5 }), Routing::Broadcast);
        assert_eq!(
            r(doc! { "recipient": { "$ne": "ann" } }),
            Routing::Broadcast
        );
        assert_eq!(
            r(doc! { "$or": [{ "recipient": "a" }, { "recipient": "b", "sent": 1 }] }),
            Routing::Targeted
        );
        assert_eq!(
            r(doc! { "$or": [{ "recipient": "a" }, { "sent": 1 }] }),
            Routing::Broadcast
        );
        assert_eq!(
            r(doc! { "$and": [{ "recipient": "a" }, { "sent": { "$in": [1] } }] }),
            Routing::SingleShard
        );
    }

    #[test]
    fn hashed_keys_route_equality_only() {
        let key = ShardKey::hashed("user").unwrap();
        let r = |f| routing(&key, f);
        assert_eq!(r(doc! { "user": 7 }), Routing::SingleShard);
        assert_eq!(r(doc! { "user": { "$in": [1, 2] } }), Routing::Targeted);
        assert_eq!(r(doc! { "user": { "$gte": 7 } }), Routing::Broadcast);
        assert_eq!(r(doc! {}), Routing::Broadcast);
    }
}
