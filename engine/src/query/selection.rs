//! `Query`: one parsed query, as every operation that selects documents takes it (finds,
//! counts, distinct values, updates, deletes, find-and-modify, an aggregation's leading
//! `$match`): the filter, the collation its strings compare under, the sort, projection, hint,
//! skip and limit. Each operation states which of its options are the query's
//! ([`QueryOptions`]) and [`Query::parse`] reads them, so parsing, the collation and their
//! errors are written once.
//!
//! The collation belongs to the query, not to the filter: matching, the positional `$`, the
//! planner (which cannot bound strings by an index of binary strings when a collation applies)
//! and the plan cache's shapes all read it from here.

use std::sync::Arc;

use bson::{Bson, Document, RawDocument};

use super::filter::Filter;
use super::plan::Plan;
use super::projection::Projection;
use super::residual::residual;
use super::sort::Sort;
use crate::catalog::CollectionMeta;
use crate::collation::Collation;
use crate::error::Error;
use crate::error::Result;
use crate::expr::{ExprError, Scope};
use crate::text::TextMatch;

/// A parsed query; see the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    /// Shared: a write's selection runs a copy of its query, whose filter the write reads
    /// again (the positional `$`, an upsert's seed).
    pub(crate) filter: Arc<Filter>,
    pub(crate) collation: Option<Arc<Collation>>,
    /// Whether the operation named a collation (the `simple` one included); one that did
    /// not runs under its collection's default (see [`Query::under`]).
    pub(crate) collation_given: bool,
    /// `None` for no sort or an empty one; compares strings under the collation.
    pub(crate) sort: Option<Sort>,
    pub(crate) projection: Option<Projection>,
    pub(crate) hint: Option<Bson>,
    pub(crate) skip: u64,
    /// `None` for no limit (a limit of 0 is none).
    pub(crate) limit: Option<u64>,
    /// What of the filter the chosen plan leaves to the matcher, when its index bounds decide
    /// some conditions exactly (see `residual`); `None` checks the whole filter.
    pub(crate) residual: Option<Filter>,
    /// The blocking sort's memory limit (`None`: MongoDB's) and whether it may spill.
    pub(crate) memory: Memory,
    /// The natural order a `$natural` sort, or else hint, asks for, and whether it is the
    /// sort: insertion order on a capped collection, `_id` order on others (`sort` then holds
    /// the `_id` sort).
    pub(crate) natural: Option<Natural>,
    /// find's `min`, `max`, `returnKey` and `showRecordId` (see [`super::min_max`] and
    /// [`super::key_output`]).
    pub(crate) keys: KeyOptions,
    /// The filter's `$text` bound to the collection's text index (see [`Query::under`]): it
    /// gives the plan and each result's `textScore`.
    pub(crate) text: Option<Arc<TextMatch>>,
    /// The filter's `$near` or `$nearSphere` and its path (see [`Query::under`]): it gives
    /// each result's distance, which orders them when the query has no sort of its own.
    pub(crate) near: Option<Arc<(crate::path::Path, crate::geo::Near)>>,
}

/// find's options that read or return index keys and record ids.
#[derive(Debug, Clone, Default)]
pub struct KeyOptions {
    /// The key the hinted index's walk starts at (inclusive).
    pub min: Option<Document>,
    /// The key the hinted index's walk stops before.
    pub max: Option<Document>,
    /// Each result is the index key it was found through (`{}` without an index).
    pub return_key: bool,
    /// Each result carries its record id as `$recordId`.
    pub show_record_id: bool,
}

/// See [`Query::natural`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Natural {
    pub(crate) reverse: bool,
    pub(crate) is_sort: bool,
}

/// The direction of a `{$natural: 1 | -1}` document: `Some(reverse)`.
fn natural_direction(spec: &Document) -> Option<bool> {
    let direction = spec.get("$natural").and_then(crate::expr::as_i64)?;
    (spec.len() == 1).then_some(direction < 0)
}

/// An operation's memory options: see [`crate::budget`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Memory {
    /// Bytes a blocking stage may hold; `None` for [`crate::budget::MEMORY_LIMIT`].
    pub(crate) limit: Option<usize>,
    /// `None` for the default, which allows it.
    pub(crate) allow_disk_use: Option<bool>,
}

impl Memory {
    /// A budget of these options whose spills go into `dir`.
    pub(crate) fn budget(self, dir: crate::budget::SpillDir) -> crate::budget::Budget {
        crate::budget::Budget::new(self.limit, self.allow_disk_use, dir)
    }
}

/// The options of an operation that make its query, borrowed from the operation's own options.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct QueryOptions<'a> {
    pub(crate) sort: Option<&'a Document>,
    pub(crate) projection: Option<&'a Document>,
    pub(crate) collation: Option<&'a Document>,
    /// Variables `$expr` names as `$$name` (MongoDB's `let`).
    pub(crate) let_vars: Option<&'a Document>,
    pub(crate) hint: Option<&'a Bson>,
    pub(crate) skip: u64,
    pub(crate) limit: Option<u64>,
    pub(crate) memory: Memory,
    pub(crate) keys: Option<&'a KeyOptions>,
}

impl Query {
    /// Parses a filter and the options of its query; malformed ones are refused before
    /// anything runs.
    pub(crate) fn parse(filter: &Document, options: QueryOptions<'_>) -> Result<Query> {
        let collation = parse_collation(options.collation)?;
        let keys = options.keys.cloned().unwrap_or_default();
        super::min_max::check(keys.min.as_ref(), keys.max.as_ref())?;
        let filter = Filter::parse_with(filter, &Scope::with_let(options.let_vars)?)?;
        // A `{$natural: -1}` hint asks for the reverse of storage order (`_id` order here).
        let natural_reverse = bson::doc! { "$natural": -1 };
        let reverse_hint = match options.hint {
            Some(Bson::Document(h))
                if h.get("$natural").and_then(crate::expr::as_i64) == Some(-1) =>
            {
                Some(&natural_reverse)
            }
            _ => None,
        };
        let sorted_naturally = options.sort.and_then(natural_direction);
        let hinted_naturally = match options.hint {
            Some(Bson::Document(h)) => natural_direction(h),
            _ => None,
        };
        let natural = sorted_naturally
            .or(hinted_naturally)
            .map(|reverse| Natural {
                reverse,
                is_sort: sorted_naturally == Some(reverse) || options.sort.is_none(),
            });
        let sort = options
            .sort
            .or(reverse_hint)
            .map(Sort::parse)
            .transpose()?
            .filter(|s| !s.is_empty())
            .map(|s| s.collated(collation.clone()));
        Ok(Query {
            filter: Arc::new(filter),
            collation,
            collation_given: options.collation.is_some_and(|c| !c.is_empty()),
            sort,
            projection: options.projection.map(Projection::parse).transpose()?,
            hint: options.hint.cloned(),
            skip: options.skip,
            limit: options.limit.filter(|&l| l > 0),
            residual: None,
            memory: options.memory,
            natural,
            keys,
            text: None,
            near: None,
        })
    }

    /// A query of this filter alone: no collation, sort, projection or bounds.
    #[cfg(test)]
    pub(crate) fn of_filter(filter: Filter) -> Query {
        Query {
            filter: Arc::new(filter),
            collation: None,
            collation_given: false,
            sort: None,
            projection: None,
            hint: None,
            skip: 0,
            limit: None,
            residual: None,
            memory: Memory::default(),
            natural: None,
            keys: KeyOptions::default(),
            text: None,
            near: None,
        }
    }

    /// The query as it runs on the collection `meta`: under the collection's default
    /// collation when the operation named none (MongoDB's rule; `{locale: "simple"}` names
    /// binary strings), and with its `$text` bound to the collection's text index, which it
    /// must have (MongoDB's `IndexNotFound` otherwise).
    pub(crate) fn under(mut self, meta: &CollectionMeta) -> Result<Query> {
        if let Some(default) = meta
            .options
            .collation
            .as_ref()
            .filter(|_| !self.collation_given)
        {
            self.collation = Some(default.clone());
            self.sort = self.sort.map(|s| s.collated(Some(default.clone())));
            self.collation_given = true;
        }
        if let Some((path, near)) = self.filter.near() {
            check_near_index(path, near, meta)?;
            self.near = Some(Arc::new((path.clone(), near.clone())));
            if self.natural.is_some() {
                return Err(Error::InvalidFilter(crate::error::FilterError::new(
                    "",
                    "$near",
                    "geoNear expression not allowed with $natural sort order",
                )));
            }
            if self.sort.is_none() {
                self.sort = Some(Sort::nearest());
            }
        }
        if let Some(text) = self.filter.text() {
            let bound = Arc::new(self.bind_text(&text.search, meta)?);
            Arc::make_mut(&mut self.filter).bind_text(&bound);
            self.text = Some(bound);
        } else if self
            .projection
            .as_ref()
            .is_some_and(Projection::needs_text_score)
            || self.sort.as_ref().is_some_and(Sort::needs_text_score)
        {
            return Err(Error::InvalidFilter(super::projection::no_text_score()));
        }
        Ok(self)
    }

    /// The search bound to the collection's one text index, after MongoDB's checks of what a
    /// `$text` query may not ask for besides.
    fn bind_text(
        &self,
        search: &crate::text::TextSearch,
        meta: &CollectionMeta,
    ) -> Result<TextMatch> {
        let refuse = |reason: &str| {
            Error::InvalidFilter(crate::error::FilterError::new("", "$text", reason))
        };
        if self.hint.is_some() {
            return Err(refuse("text and hint not allowed in same query"));
        }
        if self.natural.is_some() {
            return Err(refuse(
                "text expression not allowed with $natural sort order",
            ));
        }
        let mut indexes = meta
            .indexes
            .iter()
            .filter_map(|i| Some((&i.spec, i.spec.text()?)));
        match (indexes.next(), indexes.next()) {
            (Some((index, spec)), None) => Ok(TextMatch::new(
                search,
                spec.clone(),
                index.name().to_owned(),
                index
                    .text_prefix()
                    .iter()
                    .map(|(p, _)| p.to_string())
                    .collect(),
            )),
            (None, _) => Err(Error::TextIndexRequired {
                reason: super::matcher::TEXT_INDEX_REQUIRED,
            }),
            (Some(_), Some(_)) => Err(Error::TextIndexRequired {
                reason: "more than one text index found for $text query",
            }),
        }
    }

    /// The collation strings compare under, if any.
    pub(crate) fn collation(&self) -> Option<&Collation> {
        self.collation.as_deref()
    }

    /// Whether `doc` matches the filter under the query's collation, or why an `$expr` could
    /// not be evaluated on it. After [`Query::run_under`], only for the plan's candidates.
    pub(crate) fn matches(&self, doc: &RawDocument) -> Result<bool, ExprError> {
        self.residual
            .as_ref()
            .unwrap_or(&*self.filter)
            .try_matches_in(doc, self.collation())
    }

    /// Leaves to [`Query::matches`] only what `plan`'s bounds do not decide exactly: from then
    /// on, it judges only the candidates of that plan.
    pub(crate) fn run_under(&mut self, plan: &Plan, meta: &CollectionMeta) {
        self.residual = residual(&self.filter, plan, meta, self.collation.is_some());
    }

    /// The array position the match of `doc` recorded, for the positional `$`.
    pub(crate) fn matched_position(&self, doc: &RawDocument) -> Option<usize> {
        self.filter.matched_position_in(doc, self.collation())
    }
}

/// MongoDB's words for a `$near` without a geo index to serve it.
const NO_GEO_NEAR_INDEX: &str = "unable to find index for $geoNear query";

/// A near query needs a geo index on its path that measures as it does: `2dsphere` for a
/// GeoJSON point, `2d` for a legacy `$near`, either for a legacy `$nearSphere`.
fn check_near_index(
    path: &crate::path::Path,
    near: &crate::geo::Near,
    meta: &CollectionMeta,
) -> Result<()> {
    use crate::geo::{GeoIndex, Metric};
    let serves = meta.indexes.iter().any(|index| {
        index.spec.geo().is_some_and(|(positions, kind)| {
            positions.iter().any(|&at| index.spec.keys()[at].0 == *path)
                && !matches!(
                    (kind, near.metric),
                    (GeoIndex::Sphere { .. }, Metric::Flat)
                        | (GeoIndex::Flat { .. }, Metric::Metres)
                )
        })
    });
    if serves {
        Ok(())
    } else {
        Err(Error::InvalidFilter(
            crate::error::FilterError::new("", "$near", NO_GEO_NEAR_INDEX)
                .with_code(crate::code::ErrorCode::NO_QUERY_EXECUTION_PLANS),
        ))
    }
}

/// A `collation` option; `None` for none or the simple (binary) one.
pub(crate) fn parse_collation(spec: Option<&Document>) -> Result<Option<Arc<Collation>>> {
    Ok(match spec {
        Some(spec) => Collation::parse(spec)?,
        None => None,
    })
}
