//! Running a query over a collection: find through a cursor, counts and distinct values.
//!
//! Every query walks the best plan's candidates (by `_id`, by index ranges, or a scan in `_id`
//! order) and lets the matcher judge every one, so a plan's extra candidates never reach the
//! result. The matcher checks what the plan's bounds do not decide exactly (see `residual`).
//! Contract: every returned or counted document satisfies the whole filter.

use bson::{Bson, Document};

use super::cache::{self, Choice, PlanCache};
use super::candidates::Candidates;
use super::covered::{self, Output};
use super::cursor::{Cursor, Decode};
use super::filter::Filter;
use super::plan::{
    Access, Plan, TextPlanError, candidates, geo_plan, hinted, index_plan_for, text_plan,
};
use super::selection::{KeyOptions, Query, QueryOptions};
use crate::catalog::CollectionMeta;
use crate::error::{Error, FilterError, Result};
use crate::interrupt::Interrupt;
use crate::read::ReadCollection;

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
    /// Variables that `$expr` in the filter names as `$$name` (MongoDB's `let`).
    pub let_vars: Option<Document>,
    /// How strings compare in the filter and the sort (see [`crate::collation`]).
    pub collation: Option<Document>,
    /// The time limit and kill flag the find runs under: entered while the cursor is made
    /// (a sort in memory runs then) and at each pull (see [`crate::interrupt`]); `None` runs
    /// it under the caller's.
    pub interrupt: Option<Interrupt>,
    /// Whether a blocking sort past its memory limit may write temporary files (MongoDB's
    /// `allowDiskUse`); `None` allows it, as MongoDB 6.0+ does by default.
    pub allow_disk_use: Option<bool>,
    /// The memory limit of a blocking sort, in bytes (`None`: MongoDB's 100 MiB). For tests,
    /// which spill without 100 MiB of data.
    #[doc(hidden)]
    pub memory_limit: Option<usize>,
    /// Where a walk of the hinted index starts and stops (MongoDB's `min` and `max`), and
    /// whether results are index keys (`returnKey`) or carry `$recordId` (`showRecordId`).
    pub keys: KeyOptions,
}

impl FindOptions {
    /// Parses `filter` with these options (projection, sort, collation, hint, `let`) without
    /// running them: a malformed query fails now, even where there is no collection to read, as
    /// MongoDB parses a command before it looks the collection up.
    pub fn check(&self, filter: &Document) -> Result<()> {
        Query::parse(filter, self.query_options()).map(drop)
    }

    /// The options as a query reads them.
    pub(crate) fn query_options(&self) -> QueryOptions<'_> {
        QueryOptions {
            sort: self.sort.as_ref(),
            projection: self.projection.as_ref(),
            collation: self.collation.as_ref(),
            let_vars: self.let_vars.as_ref(),
            hint: self.hint.as_ref(),
            skip: self.skip,
            limit: self.limit,
            keys: Some(&self.keys),
            memory: super::selection::Memory {
                limit: self.memory_limit,
                allow_disk_use: self.allow_disk_use,
            },
        }
    }
}

impl ReadCollection<'_> {
    /// The documents matching `filter`, sorted, skipped, limited and projected, through a
    /// cursor (see [`Cursor`] for what it holds in memory).
    pub fn find<'c>(&'c self, filter: &Document, options: &FindOptions) -> Result<Cursor<'c>> {
        self.cursor(filter, options, Decode::documents())
    }

    /// [`ReadCollection::find`] returning each result's bytes (projected results re-encoded).
    pub fn find_raw<'c>(
        &'c self,
        filter: &Document,
        options: &FindOptions,
    ) -> Result<Cursor<'c, bson::RawDocumentBuf>> {
        self.cursor(filter, options, Decode::bytes())
    }

    /// [`ReadCollection::find`] decoding each result straight from the stored bytes into `T`
    /// (through a document when there is a projection). A document that does not decode is an
    /// error naming the collection and `_id`.
    pub fn find_as<'c, T: serde::de::DeserializeOwned>(
        &'c self,
        filter: &Document,
        options: &FindOptions,
    ) -> Result<Cursor<'c, T>> {
        self.find_as_with_id(filter, options, None)
    }

    /// [`ReadCollection::find_as`] for a type that calls `_id` `id_field` (when given).
    pub fn find_as_with_id<'c, T: serde::de::DeserializeOwned>(
        &'c self,
        filter: &Document,
        options: &FindOptions,
        id_field: Option<&'static str>,
    ) -> Result<Cursor<'c, T>> {
        let decode = Decode {
            raw: |c: &str, raw: &bson::RawDocument, id_field| {
                crate::decode::from_slice_with_id(raw.as_bytes(), id_field).map_err(|reason| {
                    Error::Decode {
                        collection: c.to_owned(),
                        id: crate::decode::id_text(raw),
                        reason,
                    }
                })
            },
            projected: |c: &str, mut doc: Document, id_field| {
                let id = doc
                    .get("_id")
                    .map_or_else(|| "<unknown>".to_owned(), ToString::to_string);
                if let Some(name) = id_field
                    && let Some(value) = doc.remove("_id")
                {
                    doc.insert(name, value);
                }
                bson::deserialize_from_document(doc).map_err(|source| Error::Decode {
                    collection: c.to_owned(),
                    id,
                    reason: crate::decode::DecodeFailure::Bson {
                        path: None,
                        source: Box::new(source),
                    },
                })
            },
            id_field,
        };
        self.cursor(filter, options, decode)
    }

    fn cursor<'c, T>(
        &'c self,
        filter: &Document,
        options: &FindOptions,
        decode: Decode<T>,
    ) -> Result<Cursor<'c, T>> {
        let _entered = options.interrupt.as_ref().map(Interrupt::enter);
        let query = Query::parse(filter, options.query_options())?.under(self.meta())?;
        let query = self.near_reach(query)?;
        let plan = self.choose_plan(&query)?;
        Ok(Cursor::new(self, plan, query, decode)?.interrupted_by(options.interrupt.clone()))
    }

    /// A near query with a limit but no maximum distance, in nearest-first order, reads only
    /// as far as its results reach: it tries radii growing fourfold from [`FIRST_REACH`] and
    /// runs with the first within which `skip + limit` documents match. No document beyond
    /// that radius can be nearer than those, so the answer is the same as reading every
    /// document the index holds; past [`REACH_STEPS`] radii, it reads them all.
    pub(crate) fn near_reach(&self, query: Query) -> Result<Query> {
        let Some(near) = query.near.clone() else {
            return Ok(query);
        };
        let (path, near) = &*near;
        let nearest_only = query
            .sort
            .as_ref()
            .is_some_and(|s| s.needs_distance() && s.fields().is_empty());
        let Some(limit) = query
            .limit
            .filter(|_| near.max.is_none() && nearest_only && query.hint.is_none())
        else {
            return Ok(query);
        };
        let need = query.skip.saturating_add(limit);
        let mut radius = match near.metric {
            crate::geo::Metric::Metres => FIRST_REACH,
            crate::geo::Metric::Radians => FIRST_REACH / crate::geo::EARTH_RADIUS_METRES,
            crate::geo::Metric::Flat => FIRST_REACH / 100_000.0,
        };
        for _ in 0..REACH_STEPS {
            let mut probe = query.clone();
            probe.filter = std::sync::Arc::new(query.filter.with_near_max(radius));
            let mut bounded = near.clone();
            bounded.max = Some(radius);
            probe.near = Some(std::sync::Arc::new((path.clone(), bounded)));
            if self.count_up_to(&mut probe, need)? >= need {
                return Ok(probe);
            }
            radius *= 4.0;
        }
        Ok(query)
    }

    /// How many documents match `query`, counting no further than `enough`.
    fn count_up_to(&self, query: &mut Query, enough: u64) -> Result<u64> {
        let plan = choose_plan(self.meta(), self.plan_cache(), query)?;
        query.run_under(&plan, self.meta());
        let mut n = 0u64;
        for candidate in Candidates::new(self, &plan, None)? {
            if query.matches(candidate?.raw(self.name())?)? {
                n += 1;
                if n >= enough {
                    break;
                }
            }
        }
        Ok(n)
    }

    /// A cursor over a given plan, for explain.
    pub(crate) fn cursor_with_plan(&self, plan: Plan, query: Query) -> Result<Cursor<'_, ()>> {
        let decode = Decode {
            raw: |_: &str, _: &bson::RawDocument, _| Ok(()),
            projected: |_: &str, _: Document, _| Ok(()),
            id_field: None,
        };
        Cursor::new(self, plan, query, decode)
    }

    /// How many documents match `filter`, after `skip` and within `limit` (0: none). Answered
    /// from the index alone when the filter reads only indexed paths.
    pub fn count_matching(&self, filter: &Document, skip: u64, limit: u64) -> Result<u64> {
        self.count_matching_with(filter, skip, limit, None)
    }

    /// [`ReadCollection::count_matching`] with strings compared under a collation.
    pub fn count_matching_with(
        &self,
        filter: &Document,
        skip: u64,
        limit: u64,
        collation: Option<&Document>,
    ) -> Result<u64> {
        self.count_matching_hinted(filter, skip, limit, collation, None)
    }

    /// [`ReadCollection::count_matching_with`] through the plan `hint` forces, when given.
    pub fn count_matching_hinted(
        &self,
        filter: &Document,
        skip: u64,
        limit: u64,
        collation: Option<&Document>,
        hint: Option<&Bson>,
    ) -> Result<u64> {
        let mut query = Query::parse(
            filter,
            QueryOptions {
                collation,
                skip,
                limit: Some(limit),
                hint,
                ..QueryOptions::default()
            },
        )?
        .under(self.meta())?;
        let empty = matches!(&*query.filter, Filter::And(parts) if parts.is_empty());
        let n = if empty && hint.is_none() {
            self.len()?
        } else {
            let plan = choose_plan(self.meta(), self.plan_cache(), &query)?;
            query.run_under(&plan, self.meta());
            let covering =
                covered::covering(self.meta(), &plan, &query.filter, None, Output::Count);
            let mut n = 0u64;
            for candidate in Candidates::new(self, &plan, covering)? {
                if query.matches(candidate?.raw(self.name())?)? {
                    n += 1;
                }
            }
            n
        };
        let n = n.saturating_sub(query.skip);
        Ok(query.limit.map_or(n, |limit| n.min(limit)))
    }

    /// The distinct values of `key` among documents matching `filter`: arrays count element by
    /// element, values equal under MongoDB's comparison (`1` and `1.0`) count once, in sort
    /// order.
    pub fn distinct(&self, key: &str, filter: &Document) -> Result<Vec<Bson>> {
        self.distinct_with(key, filter, None)
    }

    /// [`ReadCollection::distinct`] with strings compared (and counted once when equal) under a
    /// collation; of equal strings, the first found is returned.
    pub fn distinct_with(
        &self,
        key: &str,
        filter: &Document,
        collation: Option<&Document>,
    ) -> Result<Vec<Bson>> {
        self.distinct_hinted(key, filter, collation, None)
    }

    /// [`ReadCollection::distinct_with`] through the plan `hint` forces (an index's name or key
    /// pattern, or `{$natural: 1}`), when given.
    pub fn distinct_hinted(
        &self,
        key: &str,
        filter: &Document,
        collation: Option<&Document>,
        hint: Option<&Bson>,
    ) -> Result<Vec<Bson>> {
        let query = Query::parse(
            filter,
            QueryOptions {
                collation,
                hint,
                ..QueryOptions::default()
            },
        )?
        .under(self.meta())?;
        let plan = choose_plan(self.meta(), self.plan_cache(), &query)?;
        distinct_values(self, &plan, &query, key)
    }

    /// The plan the executor runs: the hinted one, or the best-ranked candidate.
    pub(crate) fn choose_plan(&self, query: &Query) -> Result<Plan> {
        choose_plan(self.meta(), self.plan_cache(), query)
    }

    /// The best-ranked plan of a query, its hint aside.
    pub(crate) fn best_plan(&self, query: &Query) -> Plan {
        best_plan(self.meta(), self.plan_cache(), query)
    }
}

/// The distinct values of `key` among the documents of `source` that `query` matches, read
/// through `plan`: arrays count element by element, values equal under MongoDB's comparison
/// (or the query's collation) count once, in sort order.
pub(crate) fn distinct_values(
    source: &dyn super::source::Source,
    plan: &Plan,
    query: &Query,
    key: &str,
) -> Result<Vec<Bson>> {
    let mut distinct = super::distinct::Distinct::with(key, query.collation.clone());
    for candidate in Candidates::new(source, plan, None)? {
        let candidate = candidate?;
        let raw = candidate.raw(source.name())?;
        if query.matches(raw)? {
            distinct.add(raw)?;
        }
    }
    distinct.finish()
}

/// The plan a query runs: the hinted one, or the best-ranked candidate.
pub(crate) fn choose_plan(meta: &CollectionMeta, cache: &PlanCache, query: &Query) -> Result<Plan> {
    if let Some(plan) = text_plan(&query.filter, query.collation(), &meta.indexes) {
        return plan.map_err(text_plan_error);
    }
    if query.hint.is_none()
        && let Some(plan) = geo_plan(&query.filter, &meta.indexes)
    {
        return Ok(plan);
    }
    if meta.options.capped.is_some()
        && let Some(natural) = query.natural
    {
        return Ok(Plan::natural_scan(natural.reverse, natural.is_sort));
    }
    let (min, max) = (query.keys.min.as_ref(), query.keys.max.as_ref());
    let plan = match &query.hint {
        _ if min.is_some() || max.is_some() => super::min_max::plan(
            query.hint.as_ref(),
            min,
            max,
            query.collation.is_some(),
            query.sort.as_ref(),
            &meta.indexes,
        )
        .map_err(Error::InvalidFilter)?,
        Some(hint) => hinted(
            hint,
            &query.filter,
            query.collation(),
            query.sort.as_ref(),
            &meta.indexes,
        )
        .map_err(|reason| Error::InvalidFilter(FilterError::new("", "hint", reason)))?,
        None => best_plan(meta, cache, query),
    };
    cache.used(meta, &plan);
    if meta.options.capped.is_some() && matches!(plan.access, Access::CollectionScan) {
        // A capped collection scans in insertion order, as MongoDB's do.
        return Ok(Plan::natural_scan(false, false));
    }
    Ok(plan)
}

/// The first radius a near query with a limit tries, in metres (see `near_reach`; legacy
/// radians and plane units take the same reach on the Earth, a plane unit as a degree).
const FIRST_REACH: f64 = 500.0;

/// How many radii a near query with a limit tries before it reads everything: 500 m times
/// 4¹² is past the Earth's half circumference.
const REACH_STEPS: usize = 13;

/// The error of a `$text` query without a plan, as MongoDB reports it.
fn text_plan_error(e: TextPlanError) -> Error {
    match e {
        TextPlanError::Unbound => Error::TextIndexRequired {
            reason: super::matcher::TEXT_INDEX_REQUIRED,
        },
        other => Error::InvalidFilter(
            FilterError::new("", "$text", other)
                .with_code(crate::code::ErrorCode::NO_QUERY_EXECUTION_PLANS),
        ),
    }
}

/// The best-ranked plan: an id lookup when the filter names its `_id`s (no other plan can win,
/// so none is ranked), otherwise through the plan cache: a query of a cached shape goes
/// straight to the index chosen before.
pub(crate) fn best_plan(meta: &CollectionMeta, cache: &PlanCache, query: &Query) -> Plan {
    let (filter, collation, sort) = (&query.filter, query.collation(), query.sort.as_ref());
    // A `$text` query that has no plan fails in `choose_plan`, before anything runs.
    if let Some(plan) = text_plan(filter, collation, &meta.indexes) {
        return plan.unwrap_or_else(|_| Plan::collection_scan());
    }
    if let Some(plan) = super::plan::id_plan(filter, collation.is_some()) {
        return plan;
    }
    let key = cache::key(meta, filter, collation, sort);
    if let Some(Choice::Index(name)) = cache.get(&key)
        && let Some(index) = meta.index(&name)
        && let Some(mut plan) = index_plan_for(index, filter, collation, sort)
    {
        plan.from_cache = true;
        return plan;
    }
    let plan = candidates(filter, collation, sort, &meta.indexes).swap_remove(0);
    let choice = match &plan.access {
        Access::IndexScan(scan) => Choice::Index(scan.index.clone()),
        _ => Choice::Other,
    };
    cache.put(key, choice);
    plan
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
                .map(|d| d.unwrap().get_i32("_id").unwrap())
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
