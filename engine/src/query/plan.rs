//! Choosing how to find a query's candidates: by `_id`, by index ranges, or by scanning.
//!
//! Contract: a plan's candidates include every document the filter matches (they may include
//! more; the matcher decides). The plan is a pure function of the filter, the sort and the
//! index specs.
//!
//! Bounds come from the top-level conditions of the filter (those under `$and` included):
//! equality and `$in` give points, `$gt`/`$gte`/`$lt`/`$lte` give a range within the operand's
//! type bracket, an anchored regex with a literal prefix gives a string range. A compound index
//! takes points on its leading fields and at most one range, on the next field. On a multikey
//! index, a field takes at most one range condition: two conditions may be met by different
//! array elements, so their intersection could miss documents; the conditions of one
//! `$elemMatch` hold for one element, so they bound its paths (`a.b` for `{a: {$elemMatch:
//! {b: ..}}}`) and their ranges intersect. Arrays as operands, `null` on a
//! sparse index, and negations give no bounds. Plans rank by: `_id` lookup, then the number of
//! leading fields bound to points, then a range on the next field, then whether the index
//! order gives the requested sort, then fewer index fields.
//!
//! A partial index is a candidate only when the query implies its filter (it holds no other
//! documents). A hint (an index's name or key pattern, or `{$natural: 1}`) forces its plan.

use std::borrow::Cow;
use std::ops::Bound;

use bson::{RawBson, RawBsonRef};

use super::filter::{ElemMatch, Filter, Pattern, Predicate, QueryRegex};
use super::sort::Sort;
use crate::catalog::IndexMeta;
use crate::collation::Collation;
use crate::keys::{self, Direction};
use crate::order::{Bracket, bracket, compare, is_nan};
use crate::path::Path;

/// How a plan reaches its candidates.
#[derive(Debug, Clone)]
pub enum Access {
    CollectionScan,
    /// A capped collection's documents in insertion order, backward when `reverse` (see
    /// [`crate::capped`]).
    NaturalScan {
        reverse: bool,
    },
    /// Documents fetched by `_id`.
    IdLookup {
        ids: Vec<RawBson>,
    },
    IndexScan(IndexScan),
    /// The union of its branches' candidates, each document once (`$or` with an index per
    /// branch).
    Or(Vec<Plan>),
}

/// A range of encoded index keys.
pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// A walk over ranges of one index.
#[derive(Debug, Clone)]
pub struct IndexScan {
    pub index: String,
    /// Byte ranges of index keys, in index order.
    pub intervals: Vec<KeyRange>,
    /// Walked from the end, for a sort in the opposite order.
    pub reverse: bool,
    /// The bounds of each index field, shown by explain.
    pub bounds: Vec<(String, FieldBounds)>,
    pub multikey: bool,
    /// What explain tells of the index.
    pub described: IndexDescription,
}

/// What explain tells of an index beside its name: its key pattern, and whether it is partial,
/// sparse, unique.
#[derive(Debug, Clone, Default)]
pub struct IndexDescription {
    pub key_pattern: bson::Document,
    pub partial: bool,
    pub sparse: bool,
    pub unique: bool,
}

impl IndexScan {
    /// A walk of `index` over `intervals`, with what explain tells of the index.
    pub(crate) fn of(
        index: &IndexMeta,
        intervals: Vec<KeyRange>,
        reverse: bool,
        bounds: Vec<(String, FieldBounds)>,
    ) -> IndexScan {
        let spec = &index.spec;
        IndexScan {
            index: spec.name().to_owned(),
            intervals,
            reverse,
            bounds,
            multikey: index.multikey,
            described: IndexDescription {
                key_pattern: spec.keys_document(),
                partial: spec.partial_filter().is_some(),
                sparse: spec.is_sparse(),
                unique: spec.is_unique(),
            },
        }
    }
}

/// A candidate plan and how it ranks.
#[derive(Debug, Clone)]
pub struct Plan {
    pub access: Access,
    /// Whether candidates come out in the requested sort order.
    pub provides_sort: bool,
    pub rank: Rank,
    /// Whether the plan cache chose this plan's index for the query's shape.
    pub from_cache: bool,
}

impl Plan {
    /// The names of the indexes the plan reads (`_id_` for a lookup by `_id`), each branch
    /// of an `$or` included, each index once (branches of an `$or` may share one).
    pub fn indexes(&self) -> Vec<&str> {
        fn walk<'p>(plan: &'p Plan, out: &mut Vec<&'p str>) {
            let name = match &plan.access {
                Access::IndexScan(scan) => scan.index.as_str(),
                Access::IdLookup { .. } => crate::index::ID_INDEX_NAME,
                Access::Or(branches) => {
                    for branch in branches {
                        walk(branch, out);
                    }
                    return;
                }
                Access::CollectionScan | Access::NaturalScan { .. } => return,
            };
            if !out.contains(&name) {
                out.push(name);
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }
}

impl Plan {
    /// MongoDB's `planSummary`: `COLLSCAN`, `IDHACK`, `IXSCAN { a: 1, b: -1 }`, the branches of
    /// an `$or` joined by `, `.
    pub(crate) fn summary(&self, meta: &crate::catalog::CollectionMeta) -> String {
        match &self.access {
            Access::CollectionScan | Access::NaturalScan { .. } => "COLLSCAN".to_owned(),
            Access::IdLookup { .. } => "IDHACK".to_owned(),
            Access::IndexScan(scan) => {
                let pattern = if scan.index == crate::index::ID_INDEX_NAME {
                    "_id: 1".to_owned()
                } else {
                    meta.index(&scan.index).map_or_else(String::new, |index| {
                        index
                            .spec
                            .keys_document()
                            .iter()
                            .map(|(path, direction)| format!("{path}: {direction}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                };
                format!("IXSCAN {{ {pattern} }}")
            }
            Access::Or(branches) => branches
                .iter()
                .map(|b| b.summary(meta))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// The one `_id` a lookup by `_id` reads, when it reads one.
    pub(crate) fn single_id(&self) -> Option<&RawBson> {
        match &self.access {
            Access::IdLookup { ids } if ids.len() == 1 => ids.first(),
            _ => None,
        }
    }

    /// A plan that gives no sort order and ranks by a fixed `narrower` alone.
    pub(crate) fn unordered(access: Access, narrower: i64) -> Plan {
        Plan {
            access,
            provides_sort: false,
            from_cache: false,
            rank: Rank {
                id_lookup: false,
                point_fields: 0,
                range: false,
                provides_sort: false,
                narrower,
            },
        }
    }

    /// The scan of the documents table in `_id` order, the plan of last resort.
    pub(crate) fn collection_scan() -> Plan {
        Plan::unordered(Access::CollectionScan, i64::MIN)
    }

    /// A capped collection's scan in insertion order; `sorted` when that order is the sort
    /// the query asked for (`{$natural: 1}` or `-1`).
    pub(crate) fn natural_scan(reverse: bool, sorted: bool) -> Plan {
        Plan::unordered(Access::NaturalScan { reverse }, i64::MIN).providing_sort(sorted)
    }

    /// The plan, marked as giving the query's sort (or not).
    pub(crate) fn providing_sort(mut self, sorted: bool) -> Plan {
        self.provides_sort = sorted;
        self
    }
}

/// The ranking of a plan, best first when compared in descending order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rank {
    pub id_lookup: bool,
    pub point_fields: usize,
    pub range: bool,
    pub provides_sort: bool,
    /// Negated field count, so that fewer fields rank higher.
    pub narrower: i64,
}

/// A condition on one field's value, as a range of values.
#[derive(Debug, Clone)]
enum Edge {
    Value(RawBson, bool),
    BracketStart(Bracket),
    BracketEnd(Bracket),
    /// Every string starting with this prefix (as an upper edge).
    StringPrefix(String),
}

/// The value intervals a plan scans on one index field; displayed as explain shows them
/// (`[1, 5), ["a", "a"]`), spelled out only when shown: plans are made for every query.
#[derive(Debug, Clone)]
pub struct FieldBounds(Bounds);

#[derive(Debug, Clone)]
enum Bounds {
    Intervals(Vec<ValueInterval>),
    /// As a MongoDB server's explain reported them.
    Reported(String),
}

impl FieldBounds {
    /// Bounds as text, as a server's explain reports them.
    pub fn reported(text: String) -> FieldBounds {
        FieldBounds(Bounds::Reported(text))
    }
}

impl std::fmt::Display for FieldBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Bounds::Reported(text) => f.write_str(text),
            Bounds::Intervals(intervals) => {
                for (i, iv) in intervals.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(&iv.describe())?;
                }
                Ok(())
            }
        }
    }
}

#[derive(Debug, Clone)]
struct ValueInterval {
    lo: Edge,
    hi: Edge,
}

impl ValueInterval {
    fn point(v: RawBson) -> Self {
        ValueInterval {
            lo: Edge::Value(v.clone(), true),
            hi: Edge::Value(v, true),
        }
    }

    /// Whether the interval holds one value: both edges included and equal (an inclusive
    /// range such as `$gte: 0, $lte: 1` is not a point).
    fn is_point(&self) -> bool {
        match (&self.lo, &self.hi) {
            (Edge::Value(lo, true), Edge::Value(hi, true)) => {
                compare(lo.as_raw_bson_ref(), hi.as_raw_bson_ref()).is_eq()
            }
            _ => false,
        }
    }

    fn describe(&self) -> String {
        let edge = |e: &Edge| match e {
            Edge::Value(v, _) => crate::decode::render(v.as_raw_bson_ref()),
            Edge::BracketStart(b) => format!("start of {b:?}"),
            Edge::BracketEnd(b) => format!("end of {b:?}"),
            Edge::StringPrefix(p) => format!("\"{p}\" and longer"),
        };
        let open = if matches!(self.lo, Edge::Value(_, false)) {
            "("
        } else {
            "["
        };
        let close = if matches!(self.hi, Edge::Value(_, false)) {
            ")"
        } else {
            "]"
        };
        format!("{open}{}, {}{close}", edge(&self.lo), edge(&self.hi))
    }
}

/// A condition that can bound an index field: a top-level one, or one inside an `$elemMatch`
/// (`{a: {$elemMatch: {b: 1}}}` bounds `a.b`). Conditions of one `$elemMatch` share a group:
/// they hold for the same array element, so their ranges may be intersected even on a
/// multikey index.
pub(crate) struct Cond<'a> {
    /// The filter's own path, or for a document `$elemMatch` the array's path joined with the
    /// inner one.
    pub(crate) path: Cow<'a, Path>,
    pub(crate) predicate: &'a Predicate,
    pub(crate) group: Option<usize>,
}

/// The conditions that can bound index fields: [`conditions`], plus those inside `$elemMatch`,
/// except on paths with a numeric segment: the matcher reads `a.0` as a position or as a field
/// named `0` in any element of `a`, while an index holds the position alone.
pub(crate) fn bound_conditions(filter: &Filter, collated: bool) -> Vec<Cond<'_>> {
    let mut out = bound_conditions_any_path(filter, collated);
    out.retain(|cond| !cond.path.segments().iter().any(|s| is_numeric(s)));
    out
}

fn is_numeric(segment: &str) -> bool {
    !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit())
}

fn bound_conditions_any_path(filter: &Filter, collated: bool) -> Vec<Cond<'_>> {
    let mut out = Vec::new();
    let mut groups = 0;
    for (path, predicate) in conditions(filter, collated) {
        out.push(Cond {
            path: Cow::Borrowed(path),
            predicate,
            group: None,
        });
        if let Predicate::ElemMatch(elem) = predicate {
            groups += 1;
            let group = Some(groups);
            match &**elem {
                ElemMatch::Value(predicates) => {
                    out.extend(predicates.iter().map(|predicate| Cond {
                        path: Cow::Borrowed(path),
                        predicate,
                        group,
                    }));
                }
                ElemMatch::Document(inner) => {
                    for (sub, predicate) in conditions(inner, collated) {
                        out.push(Cond {
                            path: Cow::Owned(Path::new(&format!(
                                "{}.{}",
                                path.as_str(),
                                sub.as_str()
                            ))),
                            predicate,
                            group,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The top-level conditions of a filter that can bound an index: its fields, through `$and`.
/// Indexes hold binary strings, so under a collation (`collated`) only conditions without
/// strings bound.
pub(crate) fn conditions(filter: &Filter, collated: bool) -> Vec<(&Path, &Predicate)> {
    let mut out = Vec::new();
    field_conditions(filter, &mut out);
    if collated {
        out.retain(|(_, p)| !mentions_strings(p));
    }
    out
}

fn field_conditions<'f>(filter: &'f Filter, out: &mut Vec<(&'f Path, &'f Predicate)>) {
    match filter {
        Filter::And(parts) => parts.iter().for_each(|p| field_conditions(p, out)),
        Filter::Field(path, predicate) => out.push((path, predicate)),
        Filter::Or(_)
        | Filter::Nor(_)
        | Filter::Expr(_)
        | Filter::JsonSchema(_)
        | Filter::Text(_) => {}
    }
}

/// Whether a condition compares strings (which a collation changes); regular expressions do
/// not, as a collation does not apply to them.
fn mentions_strings(predicate: &Predicate) -> bool {
    let value = |v: &RawBson| holds_string(v.as_raw_bson_ref());
    let pattern = |p: &Pattern| match p {
        Pattern::Value(v) => value(v),
        Pattern::Regex(_) => false,
        Pattern::ElemMatch(_) => true,
    };
    match predicate {
        Predicate::Eq(v)
        | Predicate::Gt(v)
        | Predicate::Gte(v)
        | Predicate::Lt(v)
        | Predicate::Lte(v) => value(v),
        Predicate::In(ps) | Predicate::All(ps) => ps.iter().any(pattern),
        Predicate::ElemMatch(_) => true,
        Predicate::Not(inner) => inner.iter().any(mentions_strings),
        Predicate::Size(_)
        | Predicate::Exists
        | Predicate::Type(_)
        | Predicate::Mod { .. }
        | Predicate::Bits(_)
        | Predicate::Geo(_)
        | Predicate::Regex(_) => false,
    }
}

fn holds_string(v: bson::RawBsonRef<'_>) -> bool {
    match v {
        bson::RawBsonRef::String(_) | bson::RawBsonRef::Symbol(_) => true,
        bson::RawBsonRef::Document(d) => {
            d.iter().map_while(Result::ok).any(|(_, v)| holds_string(v))
        }
        bson::RawBsonRef::Array(a) => a.into_iter().map_while(Result::ok).any(holds_string),
        _ => false,
    }
}

fn usable_operand(v: &RawBson) -> bool {
    !matches!(
        v.as_raw_bson_ref(),
        RawBsonRef::Array(_) | RawBsonRef::MinKey | RawBsonRef::MaxKey | RawBsonRef::Undefined
    )
}

fn matches_null(v: &RawBson) -> bool {
    matches!(v.as_raw_bson_ref(), RawBsonRef::Null)
}

/// The literal prefix of an anchored regex that the index can use, if any.
pub(super) fn regex_prefix(r: &QueryRegex) -> Option<String> {
    if r.options.contains(['i', 'm', 'x']) {
        return None;
    }
    let rest = r.pattern.strip_prefix('^')?;
    // An alternation may leave the anchor behind (`^ab|cd` matches `xcd`): no prefix bounds it.
    // (A `|` inside a class or escaped is refused too, which only costs the index.)
    if rest.contains('|') {
        return None;
    }
    let mut prefix = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if "\\.^$*+?()[]{}|".contains(c) {
            if matches!(c, '*' | '?' | '{') {
                prefix.pop();
            }
            break;
        }
        if chars.peek().is_some_and(|n| matches!(n, '*' | '?' | '{')) {
            break;
        }
        prefix.push(c);
    }
    Some(prefix)
}

fn regex_intervals(r: &QueryRegex) -> Option<Vec<ValueInterval>> {
    let prefix = regex_prefix(r)?;
    let stored = RawBson::RegularExpression(bson::Regex {
        pattern: r.pattern.as_str().try_into().ok()?,
        options: r.options.as_str().try_into().ok()?,
    });
    Some(vec![
        ValueInterval {
            lo: Edge::Value(RawBson::String(prefix.clone()), true),
            hi: Edge::StringPrefix(prefix),
        },
        ValueInterval::point(stored),
    ])
}

/// The value intervals a field's conditions allow, or `None` when they give no bounds.
fn field_intervals(
    predicates: &[&Predicate],
    multikey: bool,
    sparse: bool,
) -> Option<Vec<ValueInterval>> {
    // Equality first: its points are the tightest bounds.
    for p in predicates {
        match p {
            Predicate::Eq(v) if usable_operand(v) && !(sparse && matches_null(v)) => {
                return Some(vec![ValueInterval::point(v.clone())]);
            }
            Predicate::In(patterns) => {
                let mut out = Vec::new();
                let usable = patterns.iter().all(|pattern| match pattern {
                    Pattern::Value(v) if usable_operand(v) && !(sparse && matches_null(v)) => {
                        out.push(ValueInterval::point(v.clone()));
                        true
                    }
                    Pattern::Regex(r) => regex_intervals(r).map(|ivs| out.extend(ivs)).is_some(),
                    _ => false,
                });
                if usable {
                    return Some(out);
                }
            }
            _ => {}
        }
    }
    let mut lo: Option<(RawBson, bool)> = None;
    let mut hi: Option<(RawBson, bool)> = None;
    let mut range_bracket: Option<Bracket> = None;
    for p in predicates {
        let (value, is_low, inclusive) = match p {
            Predicate::Gt(v) => (v, true, false),
            Predicate::Gte(v) => (v, true, true),
            Predicate::Lt(v) => (v, false, false),
            Predicate::Lte(v) => (v, false, true),
            Predicate::Regex(r) if range_bracket.is_none() => return regex_intervals(r),
            _ => continue,
        };
        if !usable_operand(value)
            || is_nan(value.as_raw_bson_ref())
            || (sparse && inclusive && matches_null(value))
        {
            continue;
        }
        let b = bracket(&value.as_raw_bson_ref());
        if range_bracket.is_some_and(|rb| rb != b) {
            continue;
        }
        if multikey && range_bracket.is_some() {
            // Another condition may be met by another element: keep one.
            break;
        }
        range_bracket = Some(b);
        let slot = if is_low { &mut lo } else { &mut hi };
        // Of two bounds at one value, the exclusive one is tighter (`$gt: 5` beside `$gte: 5`).
        let tighter = match slot {
            None => true,
            Some((current, _)) => {
                let order = compare(value.as_raw_bson_ref(), current.as_raw_bson_ref());
                let stricter = if is_low { order.is_gt() } else { order.is_lt() };
                stricter || (order.is_eq() && !inclusive)
            }
        };
        if tighter {
            *slot = Some((value.clone(), inclusive));
        }
    }
    let b = range_bracket?;
    Some(vec![ValueInterval {
        lo: lo.map_or(Edge::BracketStart(b), |(v, i)| Edge::Value(v, i)),
        hi: hi.map_or(Edge::BracketEnd(b), |(v, i)| Edge::Value(v, i)),
    }])
}

/// The points a hashed field is bound to: the hashes of an equality's or an `$in`'s values
/// (under the index's collation). Ranges, regexes and arrays bound nothing: a hash keeps no
/// order and no elements.
fn hashed_points(
    predicates: &[&Predicate],
    sparse: bool,
    collation: Option<&Collation>,
) -> Option<Vec<ValueInterval>> {
    let point = |v: &RawBson| {
        (usable_operand(v) && !(sparse && matches_null(v))).then(|| {
            let hash = crate::hashed::hash_collated(v.as_raw_bson_ref(), collation);
            ValueInterval::point(RawBson::Int64(hash))
        })
    };
    for p in predicates {
        match p {
            Predicate::Eq(v) => {
                if let Some(iv) = point(v) {
                    return Some(vec![iv]);
                }
            }
            Predicate::In(patterns) => {
                let points: Option<Vec<ValueInterval>> = patterns
                    .iter()
                    .map(|pattern| match pattern {
                        Pattern::Value(v) => point(v),
                        Pattern::Regex(_) | Pattern::ElemMatch(_) => None,
                    })
                    .collect();
                if points.is_some() {
                    return points;
                }
            }
            _ => {}
        }
    }
    None
}

/// `prefix` and `v` encoded as the index encodes keys (strings as sort keys under the
/// index's collation `cx`, if any).
fn encoded(prefix: &[u8], v: &RawBson, direction: Direction, cx: Option<&Collation>) -> Vec<u8> {
    // Room for a typical key: a tag and a few bytes, or a short string.
    let mut out = Vec::with_capacity(prefix.len() + 32);
    out.extend_from_slice(prefix);
    keys::encode_collated_into(&mut out, v.as_raw_bson_ref(), direction, cx);
    out
}

fn after(bytes: Vec<u8>) -> Bound<Vec<u8>> {
    keys::prefix_successor(&bytes).map_or(Bound::Unbounded, Bound::Excluded)
}

fn after_included(bytes: Vec<u8>) -> Option<Bound<Vec<u8>>> {
    keys::prefix_successor(&bytes).map(Bound::Included)
}

/// The byte range of keys that start with `prefix` and whose next field lies in `iv`.
fn byte_interval(
    prefix: &[u8],
    iv: &ValueInterval,
    direction: Direction,
    cx: Option<&Collation>,
) -> Option<KeyRange> {
    let encoded = |prefix: &[u8], v: &RawBson, direction| encoded(prefix, v, direction, cx);
    let with = |extra: &[u8]| [prefix, extra].concat();
    let tag = |b: Bracket, inverted: bool| {
        let t = keys::bracket_tag(b);
        if inverted { !t } else { t }
    };
    let string_prefix = |p: &str| {
        let mut out = prefix.to_vec();
        keys::encode_string_prefix(&mut out, p, direction);
        out
    };
    Some(match direction {
        Direction::Ascending => {
            let lower = match &iv.lo {
                Edge::Value(v, true) => Bound::Included(encoded(prefix, v, direction)),
                Edge::Value(v, false) => after_included(encoded(prefix, v, direction))?,
                Edge::BracketStart(b) => Bound::Included(with(&[tag(*b, false)])),
                Edge::BracketEnd(_) | Edge::StringPrefix(_) => return None,
            };
            let upper = match &iv.hi {
                Edge::Value(v, true) => after(encoded(prefix, v, direction)),
                Edge::Value(v, false) => Bound::Excluded(encoded(prefix, v, direction)),
                Edge::BracketEnd(b) => Bound::Excluded(with(&[tag(*b, false) + 1])),
                Edge::StringPrefix(p) => after(string_prefix(p)),
                Edge::BracketStart(_) => return None,
            };
            (lower, upper)
        }
        Direction::Descending => {
            let lower = match &iv.hi {
                Edge::Value(v, true) => Bound::Included(encoded(prefix, v, direction)),
                Edge::Value(v, false) => after_included(encoded(prefix, v, direction))?,
                Edge::BracketEnd(b) => Bound::Included(with(&[tag(*b, true)])),
                Edge::StringPrefix(p) => Bound::Included(string_prefix(p)),
                Edge::BracketStart(_) => return None,
            };
            let upper = match &iv.lo {
                Edge::Value(v, true) => after(encoded(prefix, v, direction)),
                Edge::Value(v, false) => Bound::Excluded(encoded(prefix, v, direction)),
                Edge::BracketStart(b) => Bound::Excluded(with(&[tag(*b, true).saturating_add(1)])),
                Edge::BracketEnd(_) | Edge::StringPrefix(_) => return None,
            };
            (lower, upper)
        }
    })
}

/// The most point combinations a compound index expands to before it stops bounding fields.
const MAX_POINTS: usize = 1024;

/// The plan of scanning `index` for the conditions: the key fields, in order, bound by their
/// conditions' values as long as each is bound to points (every combination of the points,
/// up to [`MAX_POINTS`]), then one field bound to ranges after those prefixes, and no further.
/// `None` when the index may miss matches (a partial index whose filter the query does not
/// imply, a sparse one left unbounded) or serves the query no better than a scan (neither
/// bounded nor giving the sort); a hint `forced` it past the last two.
fn index_plan(
    forced: bool,
    index: &IndexMeta,
    conds: &[Cond<'_>],
    sort: Option<&Sort>,
) -> Option<Plan> {
    let spec = &index.spec;
    // A text index serves `$text` alone (see `text_plan`), and a geo index geo conditions
    // alone (see `geo_plan`): their keys are terms and cells, not values.
    if spec.text().is_some() || spec.geo().is_some() || !partial_covers(index, conds) {
        return None;
    }
    let cx = spec.collation().map(|c| &**c);
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    let mut intervals: Option<Vec<KeyRange>> = None;
    let mut bounds = Vec::new();
    let mut point_fields = 0;
    let mut range = false;
    for (position, (path, direction)) in spec.keys().iter().enumerate() {
        let Some(ivs) = key_intervals(index, position, path, conds) else {
            break;
        };
        bounds.push((
            path.as_str().to_owned(),
            FieldBounds(Bounds::Intervals(ivs.clone())),
        ));
        if ivs.iter().all(ValueInterval::is_point) && prefixes.len() * ivs.len() <= MAX_POINTS {
            prefixes = prefixes
                .iter()
                .flat_map(|p| ivs.iter().map(move |iv| (p, iv)))
                .filter_map(|(p, iv)| match &iv.lo {
                    Edge::Value(v, _) => Some(encoded(p, v, *direction, cx)),
                    _ => None,
                })
                .collect();
            prefixes.sort();
            prefixes.dedup();
            point_fields += 1;
            continue;
        }
        let mut out: Vec<_> = prefixes
            .iter()
            .flat_map(|p| {
                ivs.iter()
                    .filter_map(move |iv| byte_interval(p, iv, *direction, cx))
            })
            .collect();
        out.sort_by_key(|a| bound_key(&a.0));
        intervals = Some(out);
        range = true;
        break;
    }
    let bounded = point_fields > 0 || range;
    if spec.is_sparse() && !bounded && !forced {
        return None;
    }
    let intervals = intervals.unwrap_or_else(|| prefix_ranges(prefixes));
    let (provides_sort, reverse) = sort_order(index, point_fields, intervals.len(), sort);
    if !bounded && !provides_sort && !forced {
        return None;
    }
    Some(Plan {
        access: Access::IndexScan(IndexScan::of(index, intervals, reverse, bounds)),
        provides_sort,
        from_cache: false,
        rank: Rank {
            id_lookup: false,
            point_fields,
            range,
            provides_sort,
            narrower: -(spec.keys().len() as i64),
        },
    })
}

/// The plan of a filter holding `$text`, `None` for another: the walk of the text index over
/// the keys of each positive term (after the prefix fields' values, which the filter must give
/// by equality), or, for a `$text` under `$or`, a plan per branch where every other branch has
/// an index. A search without positive terms walks nothing.
pub(crate) fn text_plan(
    filter: &Filter,
    collation: Option<&Collation>,
    indexes: &[IndexMeta],
) -> Option<Result<Plan, TextPlanError>> {
    let text = filter.text()?;
    let Some(bound) = &text.bound else {
        return Some(Err(TextPlanError::Unbound));
    };
    let branches = match filter {
        Filter::Or(branches) => Some(branches),
        Filter::And(parts) => parts.iter().find_map(|p| match p {
            Filter::Or(branches) if branches.iter().any(|b| b.text().is_some()) => Some(branches),
            _ => None,
        }),
        _ => None,
    };
    let Some(branches) = branches else {
        return Some(text_scan(filter, bound, indexes));
    };
    let mut plans = Vec::with_capacity(branches.len());
    for branch in branches {
        if branch.text().is_some() {
            match text_scan(branch, bound, indexes) {
                Ok(plan) => plans.push(plan),
                Err(e) => return Some(Err(e)),
            }
            continue;
        }
        let best = candidates(branch, collation, None, indexes).swap_remove(0);
        if matches!(
            best.access,
            Access::CollectionScan | Access::NaturalScan { .. }
        ) {
            return Some(Err(TextPlanError::UnindexedOrBranch));
        }
        plans.push(best);
    }
    Some(Ok(Plan::unordered(Access::Or(plans), -1000)))
}

/// The plan of a filter holding a geo condition a geo index serves: the walk of the index over
/// the cells covering the condition's region (see [`crate::geo`]), a `$near`'s first; `None`
/// when no geo index serves one. Only an index whose first field is the geo field serves (its
/// keys start with the cells), and no partial one.
pub(crate) fn geo_plan(filter: &Filter, indexes: &[IndexMeta]) -> Option<Plan> {
    use crate::geo::GeoCondition;
    let mut geo: Vec<(&Path, &GeoCondition)> = conditions(filter, false)
        .into_iter()
        .filter_map(|(path, predicate)| match predicate {
            Predicate::Geo(condition) => Some((path, &**condition)),
            _ => None,
        })
        .collect();
    geo.sort_by_key(|(_, c)| !matches!(c, GeoCondition::Near(_)));
    let conds = conditions(filter, false);
    for (path, condition) in geo {
        for index in indexes {
            let Some((positions, kind)) = index.spec.geo() else {
                continue;
            };
            let at = index.spec.keys().iter().position(|(p, _)| p == path);
            let Some(at) = at.filter(|at| positions.contains(at)) else {
                continue;
            };
            if index.spec.partial_filter().is_some() {
                continue;
            }
            let Some(prefix) = equality_prefix(index, at, &conds) else {
                continue;
            };
            if let Some(ranges) = kind.ranges(condition) {
                return Some(geo_scan(index, path, prefix, &ranges));
            }
        }
    }
    None
}

/// Index keys bound by equalities: their encoded concatenation, and each one's bounds.
type BoundPrefix = (Vec<u8>, Vec<(String, FieldBounds)>);

/// The keys before a geo index's field `at`, each bound to one value by an equality of the
/// filter: their encoded prefix and their bounds. `None` when one is not so bound, or is a
/// geo or hashed key, or the index's collation would key strings otherwise.
fn equality_prefix(
    index: &IndexMeta,
    at: usize,
    conds: &[(&Path, &Predicate)],
) -> Option<BoundPrefix> {
    if at > 0 && (index.spec.collation().is_some() || index.spec.hashed_field().is_some()) {
        return None;
    }
    let geo_positions = index.spec.geo().map_or(&[][..], |(positions, _)| positions);
    if geo_positions.iter().any(|&p| p < at) {
        return None;
    }
    bound_prefix(&index.spec.keys()[..at], conds).ok()
}

/// The keys `prefix` of an index, each bound to one value by an equality of the filter: their
/// encoded concatenation and their bounds; the path of the first one not so bound otherwise.
fn bound_prefix<'k>(
    prefix: &'k [(Path, Direction)],
    conds: &[(&Path, &Predicate)],
) -> Result<BoundPrefix, &'k Path> {
    let mut encoded = Vec::new();
    let mut bounds = Vec::new();
    for (path, direction) in prefix {
        let value = conds
            .iter()
            .find_map(|(p, predicate)| match predicate {
                Predicate::Eq(v) if *p == path && usable_operand(v) => Some(v),
                _ => None,
            })
            .ok_or(path)?;
        keys::encode_into(&mut encoded, value.as_raw_bson_ref(), *direction);
        bounds.push((
            path.as_str().to_owned(),
            FieldBounds(Bounds::Intervals(vec![ValueInterval::point(value.clone())])),
        ));
    }
    Ok((encoded, bounds))
}

/// The walk of a geo index over ranges of cell ids, under the keys of an equality prefix.
fn geo_scan(
    index: &IndexMeta,
    path: &Path,
    (prefix, mut bounds): BoundPrefix,
    ranges: &[(i64, i64)],
) -> Plan {
    let encoded = |id: i64| {
        let mut key = prefix.clone();
        keys::encode_into(&mut key, RawBsonRef::Int64(id), Direction::Ascending);
        key
    };
    let intervals = ranges
        .iter()
        .map(|&(lo, hi)| (Bound::Included(encoded(lo)), after(encoded(hi))))
        .collect();
    let shown: Vec<String> = ranges
        .iter()
        .map(|(lo, hi)| format!("[{lo}, {hi}]"))
        .collect();
    bounds.push((
        path.as_str().to_owned(),
        FieldBounds::reported(format!("[{}]", shown.join(", "))),
    ));
    let mut scan = IndexScan::of(index, intervals, false, bounds);
    // One geometry is keyed by several cells: the walk yields each document once.
    scan.multikey = true;
    Plan::unordered(Access::IndexScan(scan), 0)
}

/// The walk of the text index `bound` names over its positive terms' keys.
fn text_scan(
    filter: &Filter,
    bound: &crate::text::TextMatch,
    indexes: &[IndexMeta],
) -> Result<Plan, TextPlanError> {
    let index = indexes
        .iter()
        .find(|i| i.spec.name() == bound.index)
        .ok_or(TextPlanError::Unbound)?;
    let conds = conditions(filter, false);
    let (prefix, mut bounds) = bound_prefix(index.spec.text_prefix(), &conds).map_err(|path| {
        TextPlanError::PrefixNotBound {
            path: path.to_string(),
        }
    })?;
    let terms = &bound.query.terms;
    let keys: Vec<Vec<u8>> = terms
        .iter()
        .map(|term| {
            let mut key = prefix.clone();
            let term = crate::text::term_key(term);
            keys::encode_into(&mut key, RawBsonRef::String(&term), Direction::Ascending);
            key
        })
        .collect();
    let described: Vec<String> = terms.iter().map(|t| format!("{t:?}")).collect();
    bounds.push((
        "_fts".to_owned(),
        FieldBounds::reported(format!("[{}]", described.join(", "))),
    ));
    // No term, no walk: an empty list of ranges finds nothing.
    let intervals = if keys.is_empty() {
        Vec::new()
    } else {
        prefix_ranges(keys)
    };
    Ok(Plan::unordered(
        Access::IndexScan(IndexScan::of(index, intervals, false, bounds)),
        0,
    ))
}

/// Why a `$text` query has no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TextPlanError {
    /// The filter's `$text` was not bound to a text index (see `Query::under`).
    #[error("text index required for $text query")]
    Unbound,
    /// MongoDB's words.
    #[error(
        "failed to use text index to satisfy $text query (if text index is compound, are equality predicates given for all prefix fields?): no equality on `{path}`"
    )]
    PrefixNotBound { path: String },
    /// MongoDB's words.
    #[error(
        "Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well."
    )]
    UnindexedOrBranch,
}

/// The key ranges holding the keys that start with each prefix; one unbounded range for the
/// empty prefix (no field bound).
fn prefix_ranges(prefixes: Vec<Vec<u8>>) -> Vec<KeyRange> {
    prefixes
        .into_iter()
        .map(|p| {
            if p.is_empty() {
                (Bound::Unbounded, Bound::Unbounded)
            } else {
                let upper = after(p.clone());
                (Bound::Included(p), upper)
            }
        })
        .collect()
}

/// Whether the index holds every document the query may match: a partial index holds only
/// those its filter accepts, so it serves a query that accepts no others.
fn partial_covers(index: &IndexMeta, conds: &[Cond<'_>]) -> bool {
    let Some(partial) = index.spec.partial_filter() else {
        return true;
    };
    let plain: Vec<(&Path, &Predicate)> = conds
        .iter()
        .filter(|c| c.group.is_none())
        .map(|c| (&*c.path, c.predicate))
        .collect();
    implies(&plain, partial.filter())
}

/// The values the conditions allow for the index's key field at `position`, on `path`;
/// `None` when they do not bound it.
fn key_intervals(
    index: &IndexMeta,
    position: usize,
    path: &Path,
    conds: &[Cond<'_>],
) -> Option<Vec<ValueInterval>> {
    let spec = &index.spec;
    // (An `$elemMatch` itself bounds nothing; its conditions do.)
    let on_field: Vec<&Cond<'_>> = conds
        .iter()
        .filter(|c| c.path.as_str() == path.as_str())
        .filter(|c| !matches!(c.predicate, Predicate::ElemMatch(_)))
        .collect();
    // Conditions of one `$elemMatch` hold for one element: their ranges intersect.
    let one_element = on_field.first().is_some_and(|first| {
        first.group.is_some() && on_field.iter().all(|c| c.group == first.group)
    });
    let predicates: Vec<&Predicate> = on_field.iter().map(|c| c.predicate).collect();
    let multikey = index.multikey && !one_element;
    if spec.hashed_field() == Some(position) {
        hashed_points(
            &predicates,
            spec.is_sparse(),
            spec.collation().map(|c| &**c),
        )
    } else {
        field_intervals(&predicates, multikey, spec.is_sparse())
    }
}

fn bound_key(b: &Bound<Vec<u8>>) -> Vec<u8> {
    match b {
        Bound::Included(v) | Bound::Excluded(v) => v.clone(),
        Bound::Unbounded => Vec::new(),
    }
}

/// The documents table seen as the `_id_` index: its keys are the encoded `_id`s.
pub(crate) fn id_index() -> IndexMeta {
    IndexMeta {
        id: u64::MAX,
        spec: crate::schema::id_index_spec(),
        multikey: false,
    }
}

/// Whether walking one interval of the index gives the sort's order, and in which direction.
pub(crate) fn sort_order(
    index: &IndexMeta,
    point_fields: usize,
    intervals: usize,
    sort: Option<&Sort>,
) -> (bool, bool) {
    // An index gives a sort on strings only when it keys them as the sort compares them.
    let index_collation = index.spec.collation().map(|c| &**c);
    let Some(sort) = sort.filter(|s| !s.is_empty() && s.collation() == index_collation) else {
        return (false, false);
    };
    // No index holds text scores or distances.
    if sort.needs_text_score() || sort.needs_distance() {
        return (false, false);
    }
    // Several intervals on the first field, walked in key order, give that field's order (the
    // walk skips what an earlier interval returned); after point fields they would not.
    if index.multikey || (intervals != 1 && point_fields > 0) {
        return (false, false);
    }
    let keys = index.spec.keys();
    // A hashed field bound to one hash may still hold several values (their hashes collide,
    // as NaN's and 0's do), so it fixes no order.
    let bound: Vec<&str> = keys[..point_fields]
        .iter()
        .enumerate()
        .filter(|(i, _)| index.spec.hashed_field() != Some(*i))
        .map(|(_, (p, _))| p.as_str())
        .collect();
    let wanted: Vec<_> = sort
        .fields()
        .iter()
        .filter(|(p, _)| !bound.contains(&p.as_str()))
        .collect();
    let rest = &keys[point_fields..];
    if wanted.is_empty() {
        return (true, false);
    }
    // A hashed field's keys are in hash order, not the field's.
    let hashed_in_sort = index
        .spec
        .hashed_field()
        .is_some_and(|h| h >= point_fields && h < point_fields + wanted.len());
    if wanted.len() > rest.len() || hashed_in_sort {
        return (false, false);
    }
    let same = wanted
        .iter()
        .zip(rest)
        .all(|((sp, sd), (ip, id))| sp == ip && sd == id);
    let opposite = wanted
        .iter()
        .zip(rest)
        .all(|((sp, sd), (ip, id))| sp == ip && sd != id);
    (same || opposite, opposite && !same)
}

fn id_lookup(conds: &[(&Path, &Predicate)]) -> Option<Vec<RawBson>> {
    for (path, predicate) in conds {
        if path.as_str() != "_id" {
            continue;
        }
        match predicate {
            Predicate::Eq(v) if usable_operand(v) => return Some(vec![v.clone()]),
            Predicate::In(patterns) => {
                let values: Option<Vec<RawBson>> = patterns
                    .iter()
                    .map(|p| match p {
                        Pattern::Value(v) if usable_operand(v) => Some(v.clone()),
                        _ => None,
                    })
                    .collect();
                if let Some(values) = values {
                    return Some(values);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every candidate plan, best first; the last is always the collection scan.
///
/// `collation`: the one the query compares strings under.
pub(crate) fn candidates(
    filter: &Filter,
    collation: Option<&Collation>,
    sort: Option<&Sort>,
    indexes: &[IndexMeta],
) -> Vec<Plan> {
    let mut plans = Vec::new();
    plans.extend(id_plan(filter, collation.is_some()));
    plans.extend(
        indexes
            .iter()
            .filter_map(|i| index_plan(false, i, &index_conditions(filter, collation, i), sort)),
    );
    // The documents table is the `_id` index: ranges of `_id` (an anchored regex, a range) and
    // sorts on `_id` walk it directly.
    let id = id_index();
    plans.extend(index_plan(
        false,
        &id,
        &index_conditions(filter, collation, &id),
        sort,
    ));
    if let Some(or) = or_plan(filter, collation, indexes) {
        plans.push(or);
    }
    plans.sort_by_key(|p| std::cmp::Reverse(p.rank));
    plans.push(Plan::collection_scan());
    plans
}

/// The lookup of the `_id`s the filter names exactly, if it does: the best plan whenever there
/// is one (an id lookup outranks every other, see [`Rank`]).
pub(crate) fn id_plan(filter: &Filter, collated: bool) -> Option<Plan> {
    Some(id_lookup_plan(id_lookup(&conditions(filter, collated))?))
}

/// The lookup of these `_id`s' keys, ranked as an id lookup.
pub(crate) fn id_lookup_plan(ids: Vec<RawBson>) -> Plan {
    Plan {
        access: Access::IdLookup { ids },
        provides_sort: false,
        from_cache: false,
        rank: Rank {
            id_lookup: true,
            point_fields: 1,
            range: false,
            provides_sort: false,
            narrower: 0,
        },
    }
}

/// A plan per `$or` branch when every branch can use an index (or `_id`); the other top-level
/// conditions are left to the matcher.
fn or_plan(filter: &Filter, collation: Option<&Collation>, indexes: &[IndexMeta]) -> Option<Plan> {
    let branches = match filter {
        Filter::Or(branches) => branches,
        Filter::And(parts) => parts.iter().find_map(|p| match p {
            Filter::Or(branches) => Some(branches),
            _ => None,
        })?,
        _ => return None,
    };
    let mut plans = Vec::with_capacity(branches.len());
    for branch in branches {
        let best = candidates(branch, collation, None, indexes).swap_remove(0);
        if matches!(
            best.access,
            Access::CollectionScan | Access::NaturalScan { .. }
        ) {
            return None;
        }
        plans.push(best);
    }
    Some(Plan::unordered(Access::Or(plans), -1000))
}

/// The plan a hint forces: an index by name or key pattern, or `{$natural: 1}` (or the `_id_`
/// index, which is the documents table itself) for a scan in `_id` order.
pub(crate) fn hinted(
    hint: &bson::Bson,
    filter: &Filter,
    collation: Option<&Collation>,
    sort: Option<&Sort>,
    indexes: &[IndexMeta],
) -> Result<Plan, HintError> {
    match hint {
        bson::Bson::String(name) if name == crate::index::ID_INDEX_NAME => {
            return Ok(Plan::collection_scan());
        }
        bson::Bson::Document(d) if d.contains_key("$natural") || *d == bson::doc! { "_id": 1 } => {
            return Ok(Plan::collection_scan());
        }
        _ => {}
    }
    let index = hinted_index(hint, indexes).ok_or_else(|| HintError::NoSuchIndex(hint.clone()))?;
    index_plan(
        true,
        &index,
        &index_conditions(filter, collation, &index),
        sort,
    )
    .ok_or_else(|| HintError::Unusable(hint.clone()))
}

/// The index a hint names, by name or key pattern; the `_id_` index (the documents table) too.
pub(crate) fn hinted_index(hint: &bson::Bson, indexes: &[IndexMeta]) -> Option<IndexMeta> {
    let id = id_index();
    let is_id = match hint {
        bson::Bson::String(name) => name == id.spec.name(),
        bson::Bson::Document(keys) => *keys == id.spec.keys_document(),
        _ => false,
    };
    if is_id {
        return Some(id);
    }
    match hint {
        bson::Bson::String(name) => indexes.iter().find(|i| i.spec.name() == name),
        bson::Bson::Document(keys) => indexes.iter().find(|i| i.spec.keys_document() == *keys),
        _ => None,
    }
    .cloned()
}

/// Why a query's hint cannot be followed; the hint as given.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HintError {
    #[error("hint {0} does not name an index of the collection")]
    NoSuchIndex(bson::Bson),
    #[error("hint {0} cannot be used")]
    Unusable(bson::Bson),
}

/// Whether every document the query's top-level conditions accept also passes `filter`: each
/// of the filter's conditions must follow from one of the query's conditions on the same path.
fn implies(query: &[(&Path, &Predicate)], filter: &Filter) -> bool {
    let Some(needed) = strict_conditions(filter) else {
        return false;
    };
    needed.iter().all(|(path, need)| {
        query
            .iter()
            .any(|(q, have)| q.as_str() == path.as_str() && predicate_implies(have, need))
    })
}

/// The conditions of a filter made only of `$and` and fields; `None` for anything else.
fn strict_conditions(filter: &Filter) -> Option<Vec<(&Path, &Predicate)>> {
    match filter {
        Filter::And(parts) => {
            let mut out = Vec::new();
            for p in parts {
                out.extend(strict_conditions(p)?);
            }
            Some(out)
        }
        Filter::Field(path, predicate) => Some(vec![(path, predicate)]),
        Filter::Or(_)
        | Filter::Nor(_)
        | Filter::Expr(_)
        | Filter::JsonSchema(_)
        | Filter::Text(_) => None,
    }
}

/// Whether a query condition `have` on a path guarantees the condition `need` on the same path.
/// Both hold "for some value at the path", so a value that satisfies `have` must satisfy `need`.
fn predicate_implies(have: &Predicate, need: &Predicate) -> bool {
    if format!("{have:?}") == format!("{need:?}") {
        return true;
    }
    let same_bracket =
        |a: &RawBson, b: &RawBson| bracket(&a.as_raw_bson_ref()) == bracket(&b.as_raw_bson_ref());
    let order = |a: &RawBson, b: &RawBson| compare(a.as_raw_bson_ref(), b.as_raw_bson_ref());
    match (have, need) {
        // A document with `v` at the path has a value meeting `need` when `v` does; negations
        // look at every value, so they are not implied this way.
        (Predicate::Eq(v), need) if !matches_null(v) && !matches!(need, Predicate::Not(_)) => {
            super::matcher::matches_value(v.as_raw_bson_ref(), need)
        }
        (Predicate::Gt(v) | Predicate::Gte(v), Predicate::Gt(w) | Predicate::Gte(w)) => {
            let strict_need = matches!(need, Predicate::Gt(_));
            let strict_have = matches!(have, Predicate::Gt(_));
            same_bracket(v, w)
                && (order(v, w).is_gt() || (order(v, w).is_eq() && (!strict_need || strict_have)))
        }
        (Predicate::Lt(v) | Predicate::Lte(v), Predicate::Lt(w) | Predicate::Lte(w)) => {
            let strict_need = matches!(need, Predicate::Lt(_));
            let strict_have = matches!(have, Predicate::Lt(_));
            same_bracket(v, w)
                && (order(v, w).is_lt() || (order(v, w).is_eq() && (!strict_need || strict_have)))
        }
        (
            Predicate::Gt(v) | Predicate::Gte(v) | Predicate::Lt(v) | Predicate::Lte(v),
            Predicate::Exists,
        ) => !matches_null(v),
        _ => false,
    }
}

/// The plan of one index for a query, if the index can serve it (for the plan cache).
pub(crate) fn index_plan_for(
    index: &IndexMeta,
    filter: &Filter,
    collation: Option<&Collation>,
    sort: Option<&Sort>,
) -> Option<Plan> {
    index_plan(
        false,
        index,
        &index_conditions(filter, collation, index),
        sort,
    )
}

/// [`index_plan_for`] on an index of binary strings (a shard key seen as an index), for a
/// query that compares strings under some collation (`collated`) or none.
pub(crate) fn binary_index_plan_for(
    index: &IndexMeta,
    filter: &Filter,
    collated: bool,
    sort: Option<&Sort>,
) -> Option<Plan> {
    index_plan(false, index, &bound_conditions(filter, collated), sort)
}

/// The conditions that may bound `index` for a query comparing strings under `collation`: all
/// of them when the index keys strings as the query compares them, those without strings
/// otherwise; and never a regex on an index of sort keys, whose strings are not in byte order.
/// (Of two bounds on one side, the planner keeps one, chosen in byte order: either alone is a
/// true bound, so a collation that orders them otherwise widens the walk, never misses.)
pub(crate) fn index_conditions<'f>(
    filter: &'f Filter,
    collation: Option<&Collation>,
    index: &IndexMeta,
) -> Vec<Cond<'f>> {
    let index_collation = index.spec.collation().map(|c| &**c);
    let same = collation == index_collation;
    let mut conds = bound_conditions(filter, !same);
    if index_collation.is_some() {
        conds.retain(|c| !reads_regex(c.predicate));
    }
    conds
}

fn reads_regex(predicate: &Predicate) -> bool {
    match predicate {
        Predicate::Regex(_) => true,
        Predicate::In(patterns) => patterns.iter().any(|p| matches!(p, Pattern::Regex(_))),
        _ => false,
    }
}
