//! Running a query over a collection: match, sort, skip, limit, project; counts and distinct
//! values.
//!
//! The executor walks the best plan's candidates (by `_id`, by index ranges, or a scan in `_id`
//! order) and lets the matcher judge every one, so a plan's extra candidates never reach the
//! result. Contract: every returned document passed the matcher. When the plan's order is the
//! requested sort, results stream and stop at `skip + limit`; otherwise a sort keeps at most
//! [`SORT_MEMORY_LIMIT`] bytes of documents, and with a limit only the best `skip + limit` as
//! it goes.

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};

use std::collections::BTreeSet;
use std::ops::Bound;

use super::cache::{self, Choice};
use super::filter::Filter;
use super::plan::{Access, KeyRange, Plan, candidates, hinted, index_plan_for};
use super::projection::Projection;
use super::sort::Sort;
use crate::error::{Error, Result};
use crate::keys;
use crate::order::compare;
use crate::read::ReadCollection;

/// MongoDB's limit on the memory of a blocking sort: 100 MiB.
pub const SORT_MEMORY_LIMIT: usize = 100 * 1024 * 1024;

/// The options of a find, as in MongoDB: sort, projection, skip and limit (0 or `None`: no
/// limit).
#[derive(Debug, Clone, Default)]
pub struct FindOptions {
    pub sort: Option<Document>,
    pub projection: Option<Document>,
    pub skip: u64,
    pub limit: Option<u64>,
    /// Forces a plan: an index name, an index key pattern, or `{$natural: 1}`.
    pub hint: Option<Bson>,
}

impl ReadCollection<'_> {
    /// The documents matching `filter`, sorted, skipped, limited and projected.
    pub fn find(&self, filter: &Document, options: &FindOptions) -> Result<Vec<Document>> {
        let projection = options
            .projection
            .as_ref()
            .map(Projection::parse)
            .transpose()?;
        let parsed = Filter::parse(filter)?;
        let sort = parse_sort(options)?;
        let plan = self.choose_plan(&parsed, sort.as_ref(), options.hint.as_ref())?;
        self.select(&plan, &parsed, sort.as_ref(), options)?
            .iter()
            .map(|doc| match &projection {
                Some(p) => p
                    .apply(doc, &parsed)
                    .map_err(|e| Error::corrupt(format!("collection `{}`", self.name()), e)),
                None => Document::try_from(doc.as_ref())
                    .map_err(|e| Error::corrupt(format!("collection `{}`", self.name()), e)),
            })
            .collect()
    }

    /// [`ReadCollection::find`] decoding each document straight into `T` (projections apply
    /// first, through a document).
    pub fn find_as<T: serde::de::DeserializeOwned>(
        &self,
        filter: &Document,
        options: &FindOptions,
    ) -> Result<Vec<T>> {
        if options.projection.is_some() {
            return self
                .find(filter, options)?
                .into_iter()
                .map(|d| {
                    bson::deserialize_from_document(d).map_err(|e| Error::Decode {
                        collection: self.name().to_owned(),
                        id: "?".into(),
                        reason: e.to_string(),
                    })
                })
                .collect();
        }
        let decode = |raw: &bson::RawDocument| -> Result<T> {
            crate::decode::from_slice(raw.as_bytes()).map_err(|reason| Error::Decode {
                collection: self.name().to_owned(),
                id: raw
                    .get("_id")
                    .ok()
                    .flatten()
                    .map_or_else(|| "<unknown>".into(), crate::index::render),
                reason,
            })
        };
        let parsed = Filter::parse(filter)?;
        let sort = parse_sort(options)?;
        let plan = self.choose_plan(&parsed, sort.as_ref(), options.hint.as_ref())?;
        if sort.is_some() && !plan.provides_sort {
            return self
                .select(&plan, &parsed, sort.as_ref(), options)?
                .iter()
                .map(|raw| decode(raw))
                .collect();
        }
        // The plan's order is the result order: decode matches as they come, no copies.
        let limit = options
            .limit
            .filter(|&l| l > 0)
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        let mut to_skip = options.skip;
        let mut out = Vec::new();
        self.walk(&plan, |raw| {
            if !parsed.matches(raw) {
                return Ok(true);
            }
            if to_skip > 0 {
                to_skip -= 1;
                return Ok(true);
            }
            out.push(decode(raw)?);
            Ok(limit.is_none_or(|l| out.len() < l))
        })?;
        Ok(out)
    }

    /// The documents a plan finds for `filter`, as stored, sorted, skipped and limited.
    fn select(
        &self,
        plan: &Plan,
        filter: &Filter,
        sort: Option<&Sort>,
        options: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        let limit = options.limit.filter(|&l| l > 0);
        let keep = limit.map(|l| options.skip.saturating_add(l));
        let mut selected = self.matching(plan, filter, sort, keep)?;
        let skip = usize::try_from(options.skip).unwrap_or(usize::MAX);
        selected.drain(..skip.min(selected.len()));
        if let Some(limit) = limit {
            selected.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        Ok(selected)
    }

    /// How many documents match `filter`, after `skip` and within `limit` (0: none).
    pub fn count_matching(&self, filter: &Document, skip: u64, limit: u64) -> Result<u64> {
        let filter = Filter::parse(filter)?;
        let plan = self.best_plan(&filter, None);
        let mut n = 0u64;
        self.walk(&plan, |doc| {
            if filter.matches(doc) {
                n += 1;
            }
            Ok(true)
        })?;
        let n = n.saturating_sub(skip);
        Ok(if limit > 0 { n.min(limit) } else { n })
    }

    /// The distinct values of `key` among documents matching `filter`: arrays count element by
    /// element, values equal under MongoDB's comparison (`1` and `1.0`) count once, in sort
    /// order.
    pub fn distinct(&self, key: &str, filter: &Document) -> Result<Vec<Bson>> {
        let filter = Filter::parse(filter)?;
        let segments: Vec<&str> = key.split('.').collect();
        let mut values: Vec<bson::RawBson> = Vec::new();
        for doc in self.scan()? {
            let doc = doc?;
            let raw = doc.as_raw()?;
            if !filter.matches(raw) {
                continue;
            }
            let mut found = Vec::new();
            collect_values(RawBsonRef::Document(raw), &segments, &mut found);
            for v in found {
                if !values
                    .iter()
                    .any(|seen| compare(seen.as_raw_bson_ref(), v).is_eq())
                {
                    values.push(bson::RawBson::from(v));
                }
            }
        }
        values.sort_by(|a, b| compare(a.as_raw_bson_ref(), b.as_raw_bson_ref()));
        values
            .into_iter()
            .map(|v| {
                Bson::try_from(v)
                    .map_err(|e| Error::corrupt(format!("collection `{}`", self.name()), e))
            })
            .collect()
    }

    /// The plan the executor runs: the hinted one, or the best-ranked candidate.
    pub(crate) fn choose_plan(
        &self,
        filter: &Filter,
        sort: Option<&Sort>,
        hint: Option<&Bson>,
    ) -> Result<Plan> {
        match hint {
            Some(hint) => hinted(hint, filter, sort, &self.meta().indexes).map_err(|reason| {
                Error::InvalidFilter(super::filter::FilterError {
                    path: String::new(),
                    operator: "hint".into(),
                    reason,
                })
            }),
            None => Ok(self.best_plan(filter, sort)),
        }
    }

    /// The best-ranked plan, through the plan cache: a query of a cached shape goes straight
    /// to the index chosen before.
    pub(crate) fn best_plan(&self, filter: &Filter, sort: Option<&Sort>) -> Plan {
        let key = cache::key(self.meta(), filter, sort);
        if let Some(Choice::Index(name)) = self.plan_cache().get(&key)
            && let Some(index) = self.meta().index(&name)
            && let Some(mut plan) = index_plan_for(index, filter, sort)
        {
            plan.from_cache = true;
            return plan;
        }
        let plan = candidates(filter, sort, &self.meta().indexes).swap_remove(0);
        let choice = match &plan.access {
            Access::IndexScan(scan) => Choice::Index(scan.index.clone()),
            _ => Choice::Other,
        };
        self.plan_cache().put(key, choice);
        plan
    }

    /// Matching documents in result order, keeping at most `keep` of them when given.
    fn matching(
        &self,
        plan: &Plan,
        filter: &Filter,
        sort: Option<&Sort>,
        keep: Option<u64>,
    ) -> Result<Vec<RawDocumentBuf>> {
        let keep = keep.map(|k| usize::try_from(k).unwrap_or(usize::MAX));
        let sort = sort.filter(|s| !s.is_empty());
        let streaming = sort.is_none() || plan.provides_sort;
        let mut buffer: Vec<RawDocumentBuf> = Vec::new();
        let mut bytes = 0usize;
        self.walk(plan, |raw| {
            if !filter.matches(raw) {
                return Ok(true);
            }
            buffer.push(raw.to_owned());
            if streaming {
                return Ok(keep.is_none_or(|k| buffer.len() < k));
            }
            bytes += raw.as_bytes().len();
            if let (Some(k), Some(sort)) = (keep, sort)
                && buffer.len() >= k.saturating_mul(2).max(64)
            {
                buffer.sort_by(|a, b| sort.compare(a, b));
                buffer.truncate(k);
                bytes = buffer.iter().map(|d| d.as_bytes().len()).sum();
            }
            if bytes > SORT_MEMORY_LIMIT {
                return Err(Error::SortMemoryExceeded {
                    collection: self.name().to_owned(),
                    limit: SORT_MEMORY_LIMIT,
                });
            }
            Ok(true)
        })?;
        if let (false, Some(sort)) = (streaming, sort) {
            buffer.sort_by(|a, b| sort.compare(a, b));
        }
        if let Some(k) = keep {
            buffer.truncate(k);
        }
        Ok(buffer)
    }

    /// Visits a plan's candidates in plan order, each once, until `visit` returns `false`.
    pub(crate) fn walk(
        &self,
        plan: &Plan,
        mut visit: impl FnMut(&bson::RawDocument) -> Result<bool>,
    ) -> Result<WalkStats> {
        self.walk_into(plan, &mut visit)
    }

    fn walk_into(
        &self,
        plan: &Plan,
        visit: &mut dyn FnMut(&bson::RawDocument) -> Result<bool>,
    ) -> Result<WalkStats> {
        let mut stats = WalkStats::default();
        match &plan.access {
            Access::Or(branches) => {
                // Each document once, whichever branches find it.
                let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
                let mut stopped = false;
                for branch in branches {
                    let branch_stats = self.walk_into(branch, &mut |raw: &bson::RawDocument| {
                        let id = raw
                            .get("_id")
                            .ok()
                            .flatten()
                            .map(keys::encode)
                            .unwrap_or_default();
                        if !seen.insert(id) {
                            return Ok(true);
                        }
                        let go_on = visit(raw)?;
                        stopped = !go_on;
                        Ok(go_on)
                    })?;
                    stats.keys_examined += branch_stats.keys_examined;
                    stats.docs_examined += branch_stats.docs_examined;
                    if stopped {
                        break;
                    }
                }
            }
            Access::CollectionScan => {
                for doc in self.scan()? {
                    let doc = doc?;
                    stats.docs_examined += 1;
                    if !visit(doc.as_raw()?)? {
                        break;
                    }
                }
            }
            Access::IdLookup { ids } => {
                let mut id_keys: Vec<Vec<u8>> = ids
                    .iter()
                    .map(|v| keys::encode(v.as_raw_bson_ref()))
                    .collect();
                id_keys.sort();
                id_keys.dedup();
                for id_key in id_keys {
                    stats.keys_examined += 1;
                    let Some(doc) = self.get_by_key(&id_key)? else {
                        continue;
                    };
                    stats.docs_examined += 1;
                    if !visit(doc.as_raw()?)? {
                        break;
                    }
                }
            }
            Access::IndexScan(scan) => {
                let index = self
                    .meta()
                    .index(&scan.index)
                    .ok_or_else(|| Error::IndexNotFound {
                        collection: self.name().to_owned(),
                        index: scan.index.clone(),
                    })?;
                // A document has one key in a non-multikey index, so disjoint intervals cannot
                // return it twice.
                let dedupe = scan.multikey || overlapping(&scan.intervals);
                let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
                let ordered: Box<dyn Iterator<Item = &KeyRange>> = if scan.reverse {
                    Box::new(scan.intervals.iter().rev())
                } else {
                    Box::new(scan.intervals.iter())
                };
                'intervals: for (lower, upper) in ordered {
                    let range =
                        self.index_range(index, as_slice(lower), as_slice(upper), scan.reverse)?;
                    for row in range {
                        let (key, value) = row?;
                        stats.keys_examined += 1;
                        let id = crate::read::entry_id(index, key.value(), value.value(), 0, 0)
                            .ok_or_else(|| {
                                Error::corrupt(
                                    format!(
                                        "index `{}` of collection `{}`",
                                        scan.index,
                                        self.name()
                                    ),
                                    "an entry is not a well-formed key",
                                )
                            })?;
                        if dedupe && !seen.insert(id.clone()) {
                            continue;
                        }
                        let doc = self.fetch_entry(&id)?;
                        stats.docs_examined += 1;
                        if !visit(doc.as_raw()?)? {
                            break 'intervals;
                        }
                    }
                }
            }
        }
        Ok(stats)
    }
}

/// The sort of a find; an empty sort document is no sort.
pub(crate) fn parse_sort(options: &FindOptions) -> Result<Option<Sort>> {
    Ok(options
        .sort
        .as_ref()
        .map(Sort::parse)
        .transpose()?
        .filter(|s| !s.is_empty()))
}

/// What a plan's walk examined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalkStats {
    pub keys_examined: u64,
    pub docs_examined: u64,
}

/// Whether any two of the (lower-bound ordered) intervals share a key.
fn overlapping(intervals: &[KeyRange]) -> bool {
    intervals.windows(2).any(|pair| {
        let (_, upper) = &pair[0];
        let (lower, _) = &pair[1];
        match (upper, lower) {
            (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
            (Bound::Excluded(u), Bound::Included(l)) => l < u,
            (Bound::Excluded(u) | Bound::Included(u), Bound::Excluded(l) | Bound::Included(l)) => {
                l <= u
            }
        }
    })
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The values at a path for `distinct`: arrays at the end give their elements, arrays in the
/// middle are walked through their subdocuments; missing fields give nothing.
fn collect_values<'a>(value: RawBsonRef<'a>, segments: &[&str], out: &mut Vec<RawBsonRef<'a>>) {
    let Some((first, rest)) = segments.split_first() else {
        match value {
            RawBsonRef::Array(a) => out.extend(a.into_iter().map_while(Result::ok)),
            other => out.push(other),
        }
        return;
    };
    match value {
        RawBsonRef::Document(d) => {
            if let Ok(Some(child)) = d.get(first) {
                collect_values(child, rest, out);
            }
        }
        RawBsonRef::Array(a) => {
            for element in a.into_iter().map_while(Result::ok) {
                if let RawBsonRef::Document(_) = element {
                    collect_values(element, segments, out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::FindOptions;
    use crate::Database;

    #[test]
    fn find_sorts_skips_and_limits() {
        let db = Database::in_memory().unwrap();
        db.collection("c")
            .insert_many(
                [
                    doc! { "_id": 1, "a": 3 },
                    doc! { "_id": 2, "a": 1 },
                    doc! { "_id": 3 },
                    doc! { "_id": 4, "a": [0, 9] },
                ],
                true,
            )
            .unwrap();
        let txn = db.read().unwrap();
        let c = txn.collection("c").unwrap().unwrap();
        let ids = |options: FindOptions| -> Vec<i32> {
            c.find(&doc! {}, &options)
                .unwrap()
                .iter()
                .map(|d| d.get_i32("_id").unwrap())
                .collect()
        };
        let sort = |s| FindOptions {
            sort: Some(s),
            ..FindOptions::default()
        };
        assert_eq!(ids(sort(doc! { "a": 1 })), [3, 4, 2, 1]);
        assert_eq!(ids(sort(doc! { "a": -1 })), [4, 1, 2, 3]);
        assert_eq!(
            ids(FindOptions {
                skip: 1,
                limit: Some(2),
                ..sort(doc! { "a": 1 })
            }),
            [4, 2]
        );
        assert_eq!(ids(sort(doc! { "a": 1, "_id": 1 })), [3, 4, 2, 1]);
    }
}
