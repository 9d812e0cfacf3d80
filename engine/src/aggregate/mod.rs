//! Aggregation pipelines over one collection: [`ReadCollection::aggregate`].
//!
//! Stages: `$match`, `$sort`, `$skip`, `$limit`, `$project`, `$addFields` (`$set`), `$unset`,
//! `$replaceRoot` (`$replaceWith`), `$unwind`, `$group`, `$count`, `$lookup`, `$facet`,
//! `$unionWith` (see `combine`), `$sample`, `$bucketAuto` (see `bucket_auto`), `$graphLookup`
//! (see `graph`), `$setWindowFields` (see `window`), `$redact`, `$documents` (first stage
//! only), `$fill` (expanded into `$setWindowFields`, see `desugar`), `$densify` (see
//! `densify`), and
//! `$sortByCount` and `$bucket`, which expand into
//! `$group` and `$sort` as MongoDB defines them (see `desugar`). The leading
//! `$match`, with the `$sort`, `$skip` and `$limit` right after it, runs as a find, so it uses
//! indexes. Documents stream through the stages one at a time
//! ([`ReadCollection::aggregate_iter`]); what a blocking stage holds counts as it grows against
//! the operation's memory budget (see `crate::budget` for each stage's rule): `$sort`,
//! `$bucketAuto`, `$sample` and `$setWindowFields` sort through the one external sort, and
//! `$group` keeps one running state per group and field; past the budget they spill to
//! temporary files when [`AggregateOptions::allow_disk_use`] allows (the default) and otherwise
//! fail with [`Error::AggregateMemoryExceeded`]. A spilled `$group` gives its groups in key
//! order.
//! Other stages are refused by name. A final `$out` or `$merge` writes the results: see
//! `output` and [`Database::aggregate`](crate::Database::aggregate).
//!
//! A `$group` right after the head gets from the find only the fields it reads (so an index
//! holding them answers alone), and when its key is one field that a non-multikey index
//! orders, the find reads that index in key order and the group passes each group on as the
//! key changes, holding one at a time (`plan_pipeline`, `group::group_in_key_order`).
//! `$sample` sorts by random keys and keeps the first `size` (MongoDB's way without a random
//! cursor); `$redact` decides per level, descending into fields and arrays.
//!
//! `$group`: `_id` is any expression (groups are equal values in MongoDB's order, under the
//! collation if any, and come out in the order first seen); accumulators `$sum`, `$avg`, `$min`,
//! `$max`, `$first`, `$last`, `$push`, `$addToSet`, `$count`, `$mergeObjects`, `$stdDevPop`,
//! `$stdDevSamp`, `$concatArrays`, `$setUnion`, the N family (`$firstN`, `$lastN`, `$minN`,
//! `$maxN`, `$top`, `$topN`, `$bottom`, `$bottomN`), `$median` and `$percentile` (see `group`
//! for their rules). `$unwind`: a path, or
//! `{path, includeArrayIndex, preserveNullAndEmptyArrays}`.
//!
//! `$lookup` joins another collection of the same snapshot: by equality (`localField`,
//! `foreignField`: a foreign document joins when its field equals the local value or, for an
//! array, one of its elements; a missing local value joins null and missing, as in MongoDB),
//! run as a find with `$in` so the foreign field's index serves; or by a `pipeline` whose
//! `$$` variables come from `let`, evaluated on each input document; or both.

mod bucket_auto;
mod combine;
mod densify;
mod desugar;
mod explain;
mod geo_near;
mod graph;
mod group;
mod output;
mod stats;
mod window;

use std::rc::Rc;
use std::sync::Arc;

use bson::{Bson, Document};

use crate::budget::Budget;
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::db::ReadTxn;
use crate::error::{Error, Result};
use crate::expr::take_n::Pick;
use crate::expr::{Env, Expr, Scope, error, eval_in};
use crate::interrupt::{Interrupt, Interruptible};
use crate::path::{Parents, Path};
use crate::query::{FindOptions, Sort};
use crate::read::ReadCollection;
use crate::spill::{self, Sorter};
use crate::update::Pipeline;
use group::Accumulator;

pub(crate) use explain::insert_spill;
pub use explain::{AggregateExplain, StageExplain};

/// Options of [`ReadCollection::aggregate`].
#[derive(Debug, Clone, Default)]
pub struct AggregateOptions {
    /// Variables the pipeline's expressions name as `$$name`.
    pub let_vars: Option<Document>,
    /// How strings compare in `$match`, `$sort` and `$group` keys.
    pub collation: Option<Document>,
    /// Forces the plan of the leading `$match`, as in a find.
    pub hint: Option<Bson>,
    /// The time limit and kill flag the pipeline runs under: entered while it plans and at
    /// each pull (see [`crate::interrupt`]); `None` runs it under the caller's.
    pub interrupt: Option<Interrupt>,
    /// Whether the stages that spill (`$sort`, `$group`, `$bucketAuto`, `$sample`, the sort of
    /// `$setWindowFields`) past their memory limit may write temporary files (MongoDB's
    /// `allowDiskUse`); `None` allows it, as MongoDB 6.0+ does by default.
    pub allow_disk_use: Option<bool>,
    /// Whether `$out` and `$merge` write past the target collection's validator (MongoDB's
    /// `bypassDocumentValidation`).
    pub bypass_document_validation: bool,
    /// The memory limit of each blocking stage, in bytes (`None`: MongoDB's 100 MiB). For
    /// tests, which spill without 100 MiB of data.
    #[doc(hidden)]
    pub memory_limit: Option<usize>,
}

impl ReadCollection<'_> {
    /// Runs an aggregation pipeline; see the module documentation.
    pub fn aggregate(
        &self,
        pipeline: &[Document],
        options: &AggregateOptions,
    ) -> Result<Vec<Document>> {
        self.aggregate_iter(pipeline, options)?.collect()
    }

    /// Runs an aggregation pipeline as a stream: documents flow through the stages one at a
    /// time as the caller pulls them, so memory holds what `$sort` and `$group` must (within
    /// their bound), never the whole input.
    pub fn aggregate_iter<'a>(
        &'a self,
        pipeline: &[Document],
        options: &AggregateOptions,
    ) -> Result<Documents<'a>> {
        let _entered = options.interrupt.as_ref().map(Interrupt::enter);
        let Planned {
            source,
            stages,
            collation,
        } = self.plan_pipeline(pipeline, options)?;
        let docs: Documents<'a> = match source {
            Source::Find(head) => match head.geo_near {
                Some((stage, path)) => {
                    Box::new(head.cursor.map(move |doc| stage.annotate(doc?, &path)))
                }
                None => scored(head.cursor),
            },
            Source::Given(docs, _) => Box::new(docs.into_iter().map(Ok)),
        };
        let stages = stages.into_iter().map(|(stage, _)| stage);
        let docs = through(docs, stages, self.snapshot(), options, collation);
        Ok(match &options.interrupt {
            Some(interrupt) => Box::new(Interruptible::new(docs, interrupt.clone())),
            None => docs,
        })
    }

    /// Splits a pipeline into where its documents come from and the stages after that.
    ///
    /// The leading `$match`, with the `$sort`, `$skip` and `$limit` right after it, becomes a
    /// find. When a `$group` follows, the find returns only the fields the group reads (so an
    /// index holding them answers alone, reading no document), and when the group's key is one
    /// field that an index (not multikey) orders, the find reads that index in order: equal
    /// keys then arrive together and the group passes each one on as soon as the key changes
    /// instead of holding them all.
    fn plan_pipeline<'a>(
        &'a self,
        pipeline: &[Document],
        options: &AggregateOptions,
    ) -> Result<Planned<'a>> {
        if crate::nesting::any_exceeds(pipeline, crate::MAX_INPUT_DEPTH) {
            return Err(Error::InputTooDeep {
                what: "pipeline",
                max: crate::MAX_INPUT_DEPTH,
            });
        }
        let defaulted = self.under_default_collation(options);
        let options = defaulted.as_ref().unwrap_or(options);
        let Parsed {
            stages,
            specs,
            collation,
        } = parse_pipeline(pipeline, options)?;
        let mut rest = stages.into_iter().zip(specs).peekable();
        let planned = |source, rest: std::iter::Peekable<_>| Planned {
            source,
            stages: rest.collect(),
            collation: collation.clone(),
        };
        // `$documents` gives its own documents; `$collStats` and `$indexStats` report on the
        // collection instead of reading it.
        if let Some((first, spec)) = rest.next_if(|(stage, _)| {
            matches!(
                stage,
                Stage::Documents(_) | Stage::CollStats(_) | Stage::IndexStats
            )
        }) {
            let docs = match first {
                Stage::Documents(expr) => documents_of(&expr)?,
                Stage::CollStats(spec) => vec![spec.report(self)?],
                _ => stats::index_stats(self),
            };
            return Ok(planned(Source::Given(docs, spec), rest));
        }
        let mut find = FindOptions {
            let_vars: options.let_vars.clone(),
            collation: options.collation.clone(),
            hint: options.hint.clone(),
            allow_disk_use: options.allow_disk_use,
            memory_limit: options.memory_limit,
            ..FindOptions::default()
        };
        let head = rest
            .next_if(|(stage, _)| matches!(stage, Stage::GeoNear(_) | Stage::Match(..)))
            .map(|(stage, _)| stage);
        let (filter, geo_near) = self.head_filter(head)?;
        let mut sorted = false;
        while let Some((stage, _)) = rest.peek() {
            match stage {
                Stage::Sort(_, spec) if !sorted && find.skip == 0 && find.limit.is_none() => {
                    find.sort = Some(spec.clone());
                    sorted = true;
                }
                Stage::Skip(n) if find.limit.is_none() => find.skip = find.skip.saturating_add(*n),
                Stage::Limit(n) => find.limit = Some(find.limit.map_or(*n, |l| l.min(*n))),
                _ => break,
            }
            rest.next();
        }
        if let Some((
            Stage::Group {
                grouping,
                in_key_order,
            },
            _,
        )) = rest.peek_mut().filter(|_| geo_near.is_none())
        {
            // A `$text` head scores whole documents: it keeps every field. (A `$geoNear` head
            // measures whole documents and keeps its order: it is never narrowed or reordered.)
            if let Some(paths) = grouping
                .fields_read()
                .filter(|p| !p.is_empty() && !filter.contains_key("$text"))
            {
                find.projection = Some(projection_of(paths));
            }
            let unordered = !sorted && find.skip == 0 && find.limit.is_none();
            if unordered
                && find.hint.is_none()
                && let Some(key) = grouping.key_field()
            {
                let by_key = FindOptions {
                    sort: Some(bson::doc! { key: 1 }),
                    ..find.clone()
                };
                if self.index_orders(&filter, &by_key)? {
                    find = by_key;
                    *in_key_order = true;
                }
            }
        }
        let cursor = self.find(&filter, &find)?;
        let head = Head {
            cursor,
            filter,
            options: find,
            geo_near,
        };
        Ok(planned(Source::Find(Box::new(head)), rest))
    }

    /// The filter of a pipeline's head find: its leading `$match`'s, or the near query of its
    /// leading `$geoNear` (with that stage, which annotates the results, and its field).
    #[allow(clippy::type_complexity)]
    fn head_filter(
        &self,
        head: Option<Stage>,
    ) -> Result<(Document, Option<(Box<geo_near::GeoNear>, Path)>)> {
        Ok(match head {
            Some(Stage::GeoNear(stage)) => {
                let (near, path) = stage.find(self.name(), &self.meta().indexes)?;
                (near, Some((stage, path)))
            }
            Some(Stage::Match(_, spec)) => (spec, None),
            _ => (Document::new(), None),
        })
    }

    /// The options with the collection's default collation, when they name none (see
    /// [`crate::options::CollectionOptions::collation`]); `None` when they stand as given.
    pub fn under_default_collation(&self, options: &AggregateOptions) -> Option<AggregateOptions> {
        let default = self.meta().options.collation.as_ref()?;
        options
            .collation
            .as_ref()
            .is_none_or(Document::is_empty)
            .then(|| AggregateOptions {
                collation: Some(default.normalized().clone()),
                ..options.clone()
            })
    }

    /// Whether the find's best plan gives its sort by scanning an index that is not multikey
    /// (so that each document comes once, in the order of its single value).
    fn index_orders(&self, filter: &Document, options: &FindOptions) -> Result<bool> {
        let query = crate::query::Query::parse(filter, options.query_options())?;
        let plan = self.best_plan(&query);
        Ok(plan.provides_sort
            && matches!(&plan.access, crate::query::Access::IndexScan(scan) if !scan.multikey))
    }
}

/// An inclusion projection of `paths` (`_id` only when listed), a path inside another
/// listed one left out as the outer one holds it.
fn projection_of(mut paths: Vec<String>) -> Document {
    paths.sort();
    paths.dedup();
    let mut projection = Document::new();
    let mut kept: Vec<&String> = Vec::new();
    for path in &paths {
        let inside = kept.iter().any(|outer| {
            path.strip_prefix(outer.as_str())
                .is_some_and(|r| r.starts_with('.'))
        });
        if !inside {
            kept.push(path);
        }
    }
    if !kept.iter().any(|p| *p == "_id" || p.starts_with("_id.")) {
        projection.insert("_id", 0);
    }
    for path in kept {
        projection.insert(path.clone(), 1);
    }
    projection
}

/// Where a pipeline's documents come from.
enum Source<'a> {
    /// The leading `$match`, `$sort`, `$skip` and `$limit`, run as this find.
    Find(Box<Head<'a>>),
    /// The documents of a first stage that reads no collection (`$documents`, `$collStats`,
    /// `$indexStats`), and that stage.
    Given(Vec<Document>, Document),
}

/// The find a pipeline's head runs as: its cursor, and the find (for explain).
struct Head<'a> {
    cursor: crate::query::Cursor<'a>,
    filter: Document,
    options: FindOptions,
    /// A leading `$geoNear` and its field: it annotates each result with its distance.
    geo_near: Option<(Box<geo_near::GeoNear>, Path)>,
}

/// A pipeline ready to run: its source, then each stage after it with the document it was
/// parsed from (after `desugar`).
struct Planned<'a> {
    source: Source<'a>,
    stages: Vec<(Stage, Document)>,
    collation: Option<Arc<Collation>>,
}

/// `docs` through the rest of the stages.
fn through<'a>(
    mut docs: Documents<'a>,
    stages: impl Iterator<Item = Stage>,
    snapshot: &'a ReadTxn,
    options: &AggregateOptions,
    collation: Option<Arc<Collation>>,
) -> Documents<'a> {
    let context = context(snapshot, options, collation);
    for stage in stages {
        docs = stage.stream(docs, &context);
    }
    Box::new(docs.map(|doc| within_result_size(doc.map(without_score))))
}

/// The head's documents, each with its text score when the head's filter holds `$text` (see
/// [`crate::text::SCORE_FIELD`]).
fn scored(cursor: crate::query::Cursor<'_>) -> Documents<'_> {
    let Some(text) = cursor.text_match() else {
        return Box::new(cursor);
    };
    Box::new(cursor.map(move |doc| {
        let mut doc = doc?;
        let raw = bson::RawDocumentBuf::try_from(&doc).map_err(|e| stage_error("$match", e))?;
        let score = text
            .score(&raw)
            .map_err(|e| stage_error("$match", e.to_string()))?;
        doc.insert(crate::text::SCORE_FIELD, score);
        Ok(doc)
    }))
}

/// A result as it leaves a pipeline: without the text score it carried (see
/// [`crate::text::SCORE_FIELD`]).
pub(crate) fn without_score(mut doc: Document) -> Document {
    doc.remove(crate::text::SCORE_FIELD);
    doc
}

/// A document a pipeline hands out, checked against MongoDB's limit on a result document: its
/// values each met the bounds on computed values, but together they may still be too large
/// to send or store.
fn within_result_size(doc: Result<Document>) -> Result<Document> {
    let doc = doc?;
    let size = crate::document::encoded_size(&doc);
    if size > crate::document::MAX_RESULT_SIZE {
        return Err(Error::ResultTooLarge {
            size,
            max: crate::document::MAX_RESULT_SIZE,
        });
    }
    Ok(doc)
}

fn context<'a>(
    snapshot: &'a ReadTxn,
    options: &AggregateOptions,
    collation: Option<Arc<Collation>>,
) -> Rc<Context<'a>> {
    Rc::new(Context {
        snapshot,
        options: options.clone(),
        collation,
        budget: Budget::new(
            options.memory_limit,
            options.allow_disk_use,
            snapshot.spill_dir.clone(),
        ),
    })
}

/// A pipeline whose first stage is `$documents`: it reads no collection.
fn from_documents<'a>(
    snapshot: &'a ReadTxn,
    stages: Vec<Stage>,
    options: &AggregateOptions,
    collation: Option<Arc<Collation>>,
) -> Result<Documents<'a>> {
    let mut stages = stages.into_iter();
    let Some(Stage::Documents(expr)) = stages.next() else {
        return Err(Error::from(
            error("$documents", "the pipeline must start with $documents")
                .with_code(ErrorCode::FAILED_TO_PARSE),
        ));
    };
    let docs: Documents<'a> = Box::new(documents_of(&expr)?.into_iter().map(Ok));
    Ok(through(docs, stages, snapshot, options, collation))
}

/// Parses `pipeline`'s stages without running them: a malformed stage fails now.
pub(crate) fn check_stages(pipeline: &[Document]) -> Result<()> {
    AggregateOptions::default().check(pipeline)
}

impl AggregateOptions {
    /// Parses `pipeline` under these options without running it: a malformed stage fails now,
    /// even where there is no collection to read. A final `$out` or `$merge` is checked as
    /// [`Database::aggregate`](crate::Database::aggregate) reads it.
    pub fn check(&self, pipeline: &[Document]) -> Result<()> {
        let stages = match pipeline.split_last() {
            Some((last, rest)) if output::is_output(last)? => rest,
            _ => pipeline,
        };
        parse_pipeline(stages, self).map(drop)
    }
}

impl ReadTxn {
    /// Runs `pipeline` over `docs`, the output of a stage that reads no collection (the
    /// server's `$currentOp`), in this snapshot.
    pub fn aggregate_documents(
        &self,
        docs: Vec<Document>,
        pipeline: &[Document],
        options: &AggregateOptions,
    ) -> Result<Vec<Document>> {
        let _entered = options.interrupt.as_ref().map(Interrupt::enter);
        let Parsed {
            stages, collation, ..
        } = parse_pipeline(pipeline, options)?;
        let docs: Documents<'_> = Box::new(docs.into_iter().map(Ok));
        through(docs, stages.into_iter(), self, options, collation).collect()
    }
}

impl ReadTxn {
    /// Runs a pipeline that reads no collection, one that starts with `$documents` (MongoDB's
    /// `{aggregate: 1}`), in this snapshot (which its `$lookup`s read).
    pub fn aggregate_without_collection(
        &self,
        pipeline: &[Document],
        options: &AggregateOptions,
    ) -> Result<Vec<Document>> {
        let _entered = options.interrupt.as_ref().map(Interrupt::enter);
        let Parsed {
            stages, collation, ..
        } = parse_pipeline(pipeline, options)?;
        from_documents(self, stages, options, collation)?.collect()
    }
}

/// Runs `pipeline` over given documents (a change stream's events), in `snapshot`.
pub(crate) fn over_documents(
    snapshot: &ReadTxn,
    pipeline: &[Document],
    docs: Vec<Document>,
) -> Result<Vec<Document>> {
    let options = AggregateOptions::default();
    let Parsed {
        stages, collation, ..
    } = parse_pipeline(pipeline, &options)?;
    let docs: Documents<'_> = Box::new(docs.into_iter().map(Ok));
    through(docs, stages.into_iter(), snapshot, &options, collation).collect()
}

/// Runs a sub-pipeline (of `$lookup` or `$unionWith`) over the collection `from`, or, without
/// one, over the documents of its leading `$documents`.
fn sub_pipeline(
    snapshot: &ReadTxn,
    from: Option<&str>,
    pipeline: &[Document],
    options: &AggregateOptions,
) -> Result<Vec<Document>> {
    if let Some(name) = from {
        return match snapshot.collection(name)? {
            Some(coll) => coll.aggregate(pipeline, options),
            None => Ok(Vec::new()),
        };
    }
    let Parsed {
        stages, collation, ..
    } = parse_pipeline(pipeline, options)?;
    from_documents(snapshot, stages, options, collation)?.collect()
}

/// The documents `$lookup` joins to one document, gathered while they hold at most `limit`
/// bytes (the operation's budget, MongoDB's 100 MiB); past it, MongoDB's 4568.
fn lookup_documents(
    snapshot: &ReadTxn,
    from: Option<&str>,
    pipeline: &[Document],
    options: &AggregateOptions,
    limit: usize,
) -> Result<Vec<Document>> {
    let gather = |docs: Documents<'_>| -> Result<Vec<Document>> {
        let mut held = 0usize;
        let mut out = Vec::new();
        for doc in docs {
            let doc = doc?;
            held += crate::document::encoded_size(&doc);
            if held > limit {
                let name = from.unwrap_or("$documents");
                return Err(Error::from(
                    error(
                        "$lookup",
                        format!(
                            "Total size of documents in {name} matching pipeline's $lookup stage exceeds {limit} bytes"
                        ),
                    )
                    .with_code(ErrorCode::location(4568)),
                ));
            }
            out.push(doc);
        }
        Ok(out)
    };
    if let Some(name) = from {
        return match snapshot.collection(name)? {
            Some(coll) => gather(coll.aggregate_iter(pipeline, options)?),
            None => Ok(Vec::new()),
        };
    }
    let Parsed {
        stages, collation, ..
    } = parse_pipeline(pipeline, options)?;
    gather(from_documents(snapshot, stages, options, collation)?)
}

/// Counts `doc`'s encoded size into `held`, what a stage that cannot spill holds; past the
/// operation's budget the stage fails (MongoDB's 292) rather than grows on.
fn hold(held: &mut usize, doc: &Document, budget: &Budget, stage: &str) -> Result<()> {
    *held += crate::document::encoded_size(doc);
    if budget.exceeded(*held) {
        return Err(budget.exceeded_error(stage));
    }
    Ok(())
}

/// Every stage name MongoDB knows. A name outside this list is unknown (MongoDB's 40324,
/// answered even where pipelines are only checked, as an update's); one inside it that a
/// context does not run is refused by name.
const MONGODB_STAGES: &[&str] = &[
    "$addFields",
    "$bucket",
    "$bucketAuto",
    "$changeStream",
    "$changeStreamSplitLargeEvent",
    "$collStats",
    "$count",
    "$currentOp",
    "$densify",
    "$documents",
    "$facet",
    "$fill",
    "$geoNear",
    "$graphLookup",
    "$group",
    "$indexStats",
    "$limit",
    "$listClusterCatalog",
    "$listLocalSessions",
    "$listSampledQueries",
    "$listSearchIndexes",
    "$listSessions",
    "$lookup",
    "$match",
    "$merge",
    "$out",
    "$planCacheStats",
    "$project",
    "$querySettings",
    "$queryStats",
    "$rankFusion",
    "$redact",
    "$replaceRoot",
    "$replaceWith",
    "$sample",
    "$scoreFusion",
    "$search",
    "$searchMeta",
    "$set",
    "$setWindowFields",
    "$shardedDataDistribution",
    "$skip",
    "$sort",
    "$sortByCount",
    "$unionWith",
    "$unset",
    "$unwind",
    "$vectorSearch",
];

/// Whether MongoDB knows a stage of this name.
pub fn is_stage_name(name: &str) -> bool {
    MONGODB_STAGES.contains(&name)
}

/// A pipeline's stages, parsed with its `let` variables and collation.
struct Parsed {
    stages: Vec<Stage>,
    /// The document of each stage (after `desugar`), for explain.
    specs: Vec<Document>,
    collation: Option<Arc<Collation>>,
}

fn parse_pipeline(pipeline: &[Document], options: &AggregateOptions) -> Result<Parsed> {
    let scope = Scope::with_let(options.let_vars.as_ref())?;
    let collation = crate::query::parse_collation(options.collation.as_ref())?;
    let specs = desugar::expand(pipeline, &scope)?;
    let stages = specs
        .iter()
        .map(|s| Stage::parse(s, &scope, collation.as_ref()))
        .collect::<Result<Vec<_>>>()?;
    check_text_first(&stages)?;
    Ok(Parsed {
        stages,
        specs,
        collation,
    })
}

/// A `$match` stage, matched under the pipeline's collation (see `stream`). It may not hold a
/// `$near`: a near query sorts, a `$match` only filters (`$geoNear` is the stage that sorts).
fn match_stage(spec: Document, scope: &Scope) -> Result<Stage> {
    let filter = crate::query::Filter::parse_with(&spec, scope)?;
    if filter.near().is_some() {
        return Err(Error::from(
            error(
                "$match",
                "$geoNear, $near, and $nearSphere are not allowed in this context",
            )
            .with_code(ErrorCode::location(5_626_500)),
        ));
    }
    Ok(Stage::Match(filter, spec))
}

/// MongoDB's rule for `$text` in a pipeline: only in a `$match` that is the first stage (so
/// that it runs on the collection's text index), never in `$facet`.
fn check_text_first(stages: &[Stage]) -> Result<()> {
    let has_text = |stage: &Stage| match stage {
        Stage::Match(filter, _) => filter.text().is_some(),
        _ => false,
    };
    let in_facet = stages.iter().any(|stage| match stage {
        Stage::Facet(facets) => facets.iter().any(|(_, inner)| inner.iter().any(has_text)),
        _ => false,
    });
    if in_facet || stages.iter().skip(1).any(has_text) {
        return Err(Error::from(
            error(
                "$match",
                "$match with $text is only allowed as the first pipeline stage",
            )
            .with_code(ErrorCode::location(17313)),
        ));
    }
    Ok(())
}

/// Documents flowing out of a stage, pulled one at a time.
pub type Documents<'a> = Box<dyn Iterator<Item = Result<Document>> + 'a>;

/// The documents of a blocking stage (`$sort`, `$group`, `$count`), computed when first pulled.
fn blocking<'a>(run: impl FnOnce() -> Result<Vec<Document>> + 'a) -> Documents<'a> {
    Box::new(
        std::iter::once_with(run).flat_map(|result| -> Documents<'a> {
            match result {
                Ok(docs) => Box::new(docs.into_iter().map(Ok)),
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        }),
    )
}

/// What later stages may need besides their documents.
struct Context<'a> {
    snapshot: &'a ReadTxn,
    options: AggregateOptions,
    collation: Option<Arc<Collation>>,
    /// The operation's memory budget (see [`crate::budget`]).
    budget: Budget,
}

/// The documents of a blocking stage that may stream its output (a merge from disk),
/// computed when first pulled.
fn deferred<'a>(run: impl FnOnce() -> Result<Documents<'a>> + 'a) -> Documents<'a> {
    Box::new(
        std::iter::once_with(run).flat_map(|result| -> Documents<'a> {
            match result {
                Ok(docs) => docs,
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        }),
    )
}

enum Stage {
    /// The parsed filter, and its document (for the leading `$match`, run as a find).
    Match(crate::query::Filter, Document),
    Sort(Sort, Document),
    Skip(u64),
    Limit(u64),
    /// `$project`, `$addFields`, `$unset`, `$replaceRoot`: the update pipeline's stages.
    Shape(Pipeline),
    Unwind {
        path: Path,
        index_field: Option<String>,
        preserve: bool,
    },
    Group {
        grouping: Box<group::Grouping>,
        /// Whether the input arrives in the order of the group key (see
        /// [`group::group_in_key_order`]).
        in_key_order: bool,
    },
    Count(String),
    Lookup(Box<Lookup>),
    /// `$facet`: named sub-pipelines over the same input (see `combine`).
    Facet(Vec<(String, Vec<Stage>)>),
    /// `$unionWith`: the input, then another collection through a pipeline (see `combine`).
    UnionWith {
        /// `None`: the pipeline starts with `$documents`.
        coll: Option<String>,
        pipeline: Vec<Document>,
    },
    /// `$sample`: this many documents of the input, chosen at random, in random order.
    Sample(u64),
    /// `$graphLookup` (see `graph`).
    GraphLookup(Box<graph::GraphLookup>),
    /// `$densify` (see `densify`).
    Densify(Box<densify::Densify>),
    /// `$setWindowFields` (see `window`).
    SetWindowFields(Box<window::SetWindowFields>),
    /// `$redact`: the expression decides at each level of each document.
    Redact(Expr),
    /// `$documents`: the first stage's documents, instead of the collection's.
    Documents(Expr),
    /// `$geoNear` (see `geo_near`): a first stage, run as a near query.
    GeoNear(Box<geo_near::GeoNear>),
    /// `$collStats` and `$indexStats` (see `stats`): first stages reporting on the collection.
    CollStats(stats::CollStats),
    IndexStats,
    /// `$bucketAuto` (see `bucket_auto`).
    BucketAuto {
        group_by: Expr,
        buckets: usize,
        fields: Vec<(String, Accumulator, Expr)>,
        granularity: Option<bucket_auto::Rounder>,
    },
}

/// A parsed `$lookup`.
struct Lookup {
    /// `None`: the pipeline starts with `$documents`.
    from: Option<String>,
    /// `localField` and `foreignField`, for an equality join.
    equality: Option<(Path, String)>,
    /// `let` variables, evaluated on each input document for the pipeline.
    vars: Vec<(String, Expr)>,
    pipeline: Vec<Document>,
    output: Path,
}

fn stage_error(stage: &str, reason: impl std::fmt::Display) -> Error {
    Error::from(error(stage, reason))
}

fn whole(stage: &str, v: &Bson) -> Result<u64> {
    crate::expr::as_i64(v)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| stage_error(stage, "expects a non-negative whole number"))
}

impl Stage {
    fn parse(stage: &Document, scope: &Scope, collation: Option<&Arc<Collation>>) -> Result<Stage> {
        let mut fields = stage.iter();
        let (Some((name, arg)), None) = (fields.next(), fields.next()) else {
            return Err(stage_error(
                "pipeline",
                "every stage must be a document with exactly one field",
            ));
        };
        let spec = || match arg {
            Bson::Document(d) => Ok(d.clone()),
            _ => Err(stage_error(name, "expects a document")),
        };
        Ok(match name.as_str() {
            "$match" => match_stage(spec()?, scope)?,
            "$sort" => {
                let spec = spec()?;
                if spec.is_empty() {
                    return Err(stage_error(name, "needs at least one field"));
                }
                Stage::Sort(Sort::parse(&spec)?.collated(collation.cloned()), spec)
            }
            "$skip" => Stage::Skip(whole(name, arg)?),
            "$limit" => match whole(name, arg)? {
                0 => {
                    return Err(Error::from(
                        error(name, "must be positive").with_code(ErrorCode::location(15958)),
                    ));
                }
                n => Stage::Limit(n),
            },
            "$project" | "$addFields" | "$set" | "$unset" | "$replaceRoot" | "$replaceWith" => {
                Stage::Shape(Pipeline::parse(std::slice::from_ref(stage), scope)?)
            }
            "$count" => {
                let refuse = |code: i32, reason: &str| {
                    Err(Error::from(
                        error(name, reason.to_owned()).with_code(ErrorCode::location(code)),
                    ))
                };
                match arg {
                    Bson::String(s) if s.is_empty() => {
                        return refuse(40157, "the count field must be a non-empty string");
                    }
                    Bson::String(s) if s.starts_with('$') => {
                        return refuse(40158, "the count field cannot be a $-prefixed path");
                    }
                    Bson::String(s) if s.contains('.') => {
                        return refuse(40160, "the count field cannot contain '.'");
                    }
                    Bson::String(s) if s == "_id" => {
                        return refuse(9_039_800, "the count field cannot be '_id'");
                    }
                    Bson::String(s) => Stage::Count(s.clone()),
                    _ => return refuse(40156, "the count field must be a string"),
                }
            }
            "$unwind" => parse_unwind(arg)?,
            "$lookup" => Stage::Lookup(Box::new(parse_lookup(&spec()?, scope)?)),
            "$out" | "$merge" => {
                return Err(stage_error(
                    name,
                    "writes: it must be the last stage, run through Database::aggregate",
                ));
            }
            "$group" => parse_group(&spec()?, scope, collation)?,
            "$facet" => combine::parse_facet(arg, scope, collation)?,
            "$unionWith" => combine::parse_union_with(arg)?,
            "$sample" => parse_sample(arg)?,
            "$bucketAuto" => bucket_auto::parse(arg, scope)?,
            "$graphLookup" => graph::parse(arg, scope)?,
            "$setWindowFields" => window::parse(arg, scope)?,
            "$densify" => densify::parse(arg)?,
            "$redact" => Stage::Redact(Expr::parse(arg, &scope.with_system(&redact_variables()))?),
            "$documents" => Stage::Documents(Expr::parse(arg, scope)?),
            "$geoNear" => Stage::GeoNear(Box::new(geo_near::GeoNear::parse(arg)?)),
            "$collStats" => stats::parse_coll_stats(arg)?,
            "$indexStats" => stats::parse_index_stats(arg)?,
            other if !is_stage_name(other) => {
                return Err(error(
                    other,
                    format!("Unrecognized pipeline stage name: '{other}'"),
                )
                .with_code(ErrorCode::location(40324))
                .into());
            }
            other => {
                return Err(stage_error(
                    other,
                    "is not a supported aggregation stage ($match, $sort, $skip, $limit, $project, $addFields, $set, $unset, $replaceRoot, $replaceWith, $unwind, $group, $count, $lookup, $facet, $unionWith, $sample, $sortByCount, $bucket, $bucketAuto, $graphLookup, $redact, $documents, $setWindowFields, $fill, $densify, $collStats, $indexStats, $out, $merge)",
                ));
            }
        })
    }

    /// This stage over `input`: streaming stages pass documents on one at a time; blocking
    /// stages (`$sort`, `$group`, `$count`, `$bucketAuto`, `$sample`, ...) read their whole input
    /// when first pulled.
    fn stream<'a>(self, input: Documents<'a>, context: &Rc<Context<'a>>) -> Documents<'a> {
        let budget = context.budget.for_stage();
        self.stream_within(input, context, budget)
    }

    /// [`Stage::stream`] with the stage's own budget, whose spills explain reads.
    fn stream_within<'a>(
        self,
        input: Documents<'a>,
        context: &Rc<Context<'a>>,
        budget: Budget,
    ) -> Documents<'a> {
        let collation = context.collation.clone();
        match self {
            Stage::Match(filter, _) => matching(input, filter, collation),
            Stage::Sort(sort, _) => deferred(move || sort_all(input, sort, budget)),
            Stage::Skip(n) => skipping(input, n),
            Stage::Limit(n) => Box::new(input.take(usize::try_from(n).unwrap_or(usize::MAX))),
            // A reshaped document keeps its text score, as MongoDB keeps its metadata.
            Stage::Shape(pipeline) => Box::new(input.map(move |doc| {
                let doc = doc?;
                let score = doc.get(crate::text::SCORE_FIELD).cloned();
                let mut shaped = pipeline.transform_collated(doc, collation.as_deref())?;
                if let Some(score) = score {
                    shaped.insert(crate::text::SCORE_FIELD, score);
                }
                Ok(shaped)
            })),
            Stage::Count(field) => blocking(move || count(input, field)),
            Stage::Unwind {
                path,
                index_field,
                preserve,
            } => unwinding(input, path, index_field, preserve),
            Stage::Group {
                grouping,
                in_key_order,
            } => {
                if in_key_order {
                    Box::new(group::group_in_key_order(input, *grouping, budget))
                } else {
                    deferred(move || group::group_within(input, *grouping, &budget))
                }
            }
            Stage::Lookup(lookup) => {
                let context = context.clone();
                Box::new(input.map(move |doc| lookup.join(doc?, &context)))
            }
            Stage::Facet(facets) => combine::facet(facets, input, context),
            Stage::UnionWith { coll, pipeline } => {
                combine::union_with(coll, pipeline, input, context)
            }
            Stage::Sample(size) => deferred(move || sample(input, size, budget)),
            Stage::SetWindowFields(spec) => spec.run(input, collation, budget),
            Stage::Densify(spec) => spec.run(input, budget),
            Stage::GraphLookup(search) => {
                let context = context.clone();
                Box::new(input.map(move |doc| search.join(doc?, &context)))
            }
            Stage::Redact(expr) => redacting(input, expr, collation),
            Stage::Documents(_) => not_first("$documents"),
            Stage::GeoNear(_) => not_first("$geoNear"),
            Stage::CollStats(_) => not_first("$collStats"),
            Stage::IndexStats => not_first("$indexStats"),
            Stage::BucketAuto {
                group_by,
                buckets,
                fields,
                granularity,
            } => bucket_auto::run(
                input,
                group_by,
                buckets,
                fields,
                granularity,
                collation,
                budget,
            ),
        }
    }
}

/// `$match`: the documents the filter matches.
fn matching(
    input: Documents<'_>,
    filter: crate::query::Filter,
    collation: Option<Arc<Collation>>,
) -> Documents<'_> {
    Box::new(input.filter_map(move |doc| {
        let keep = doc.and_then(|d| {
            let raw = bson::RawDocumentBuf::try_from(&d).map_err(|e| stage_error("$match", e))?;
            Ok(filter
                .try_matches_in(&raw, collation.as_deref())?
                .then_some(d))
        });
        keep.transpose()
    }))
}

/// `$skip`: the documents after the first `n`. Errors pass through: a skipped position is a
/// document, not a failure.
fn skipping(input: Documents<'_>, n: u64) -> Documents<'_> {
    let mut to_skip = n;
    Box::new(input.filter(move |doc| {
        if doc.is_ok() && to_skip > 0 {
            to_skip -= 1;
            return false;
        }
        true
    }))
}

/// `$count`: one document of the number of input documents in `field`; none for no input.
fn count(input: Documents<'_>, field: String) -> Result<Vec<Document>> {
    let mut n: i64 = 0;
    for doc in input {
        doc?;
        n += 1;
    }
    Ok(if n == 0 {
        Vec::new()
    } else {
        let n = crate::number::int_or_long(n);
        vec![bson::doc! { field: n }]
    })
}

/// `$unwind` of each document (see [`unwind`]).
fn unwinding(
    input: Documents<'_>,
    path: Path,
    index_field: Option<String>,
    preserve: bool,
) -> Documents<'_> {
    Box::new(input.flat_map(move |doc| -> Documents<'_> {
        match doc {
            Ok(doc) => Box::new(unwind(doc, path.clone(), index_field.clone(), preserve).map(Ok)),
            Err(e) => Box::new(std::iter::once(Err(e))),
        }
    }))
}

/// `$redact` of each document (see [`redact`]); a pruned document is dropped.
fn redacting(input: Documents<'_>, expr: Expr, collation: Option<Arc<Collation>>) -> Documents<'_> {
    Box::new(input.filter_map(move |doc| {
        doc.and_then(|d| {
            let root = d.clone();
            let env = Env::collated(&root, collation.as_deref());
            redact(d, &expr, &env, true)
        })
        .transpose()
    }))
}

/// A stage that makes a pipeline's input (`$documents`, `$collStats`, `$indexStats`) found
/// after the first stage: an error in place of the documents.
fn not_first<'a>(name: &str) -> Documents<'a> {
    Box::new(std::iter::once(Err(Error::from(
        error(
            name,
            format!("{name} may only be the first stage of a pipeline"),
        )
        .with_code(ErrorCode::location(40602)),
    ))))
}

/// The values `$redact`'s expression answers with: symbols, a deprecated type no stored
/// value is expected to hold, so that a field's value is never taken for a decision.
fn redact_variables() -> [(&'static str, Bson); 3] {
    [
        ("DESCEND", Bson::Symbol("$$DESCEND".to_owned())),
        ("PRUNE", Bson::Symbol("$$PRUNE".to_owned())),
        ("KEEP", Bson::Symbol("$$KEEP".to_owned())),
    ]
}

/// `$redact` at one level: `$$KEEP` keeps it whole, `$$PRUNE` drops it, `$$DESCEND` keeps its
/// other fields and decides again for each document below, in fields and in arrays (at any
/// depth of arrays). `None` is pruned.
fn redact(doc: Document, expr: &Expr, root: &Env<'_>, top: bool) -> Result<Option<Document>> {
    // `$$ROOT` stays the input document; `CURRENT` is the level decided on.
    let decision = if top {
        eval_in(expr, root)?
    } else {
        eval_in(expr, &root.with_current(Bson::Document(doc.clone())))?
    };
    let symbol = match &decision {
        Some(Bson::Symbol(s)) => s.as_str(),
        _ => "",
    };
    match symbol {
        "$$KEEP" => Ok(Some(doc)),
        "$$PRUNE" => Ok(None),
        "$$DESCEND" => {
            let mut out = Document::new();
            for (key, value) in doc {
                if let Some(kept) = redact_value(value, expr, root)? {
                    out.insert(key, kept);
                }
            }
            Ok(Some(out))
        }
        _ => Err(Error::from(
            error(
                "$redact",
                format!(
                    "the expression must give $$DESCEND, $$PRUNE or $$KEEP, not {}",
                    decision.map_or_else(|| "missing".to_owned(), |v| v.to_string())
                ),
            )
            .with_code(ErrorCode::location(17053)),
        )),
    }
}

fn redact_value(value: Bson, expr: &Expr, root: &Env<'_>) -> Result<Option<Bson>> {
    Ok(match value {
        Bson::Document(d) => redact(d, expr, root, false)?.map(Bson::Document),
        Bson::Array(items) => {
            let mut kept = Vec::with_capacity(items.len());
            for item in items {
                if let Some(v) = redact_value(item, expr, root)? {
                    kept.push(v);
                }
            }
            Some(Bson::Array(kept))
        }
        other => Some(other),
    })
}

/// `$documents`' array of documents, evaluated once.
fn documents_of(expr: &Expr) -> Result<Vec<Document>> {
    let fail = |reason: &str| {
        Error::from(error("$documents", reason.to_owned()).with_code(ErrorCode::location(40228)))
    };
    match eval_in(expr, &Env::constant())? {
        Some(Bson::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Bson::Document(d) => Ok(d),
                _ => Err(fail("every element of the array must be a document")),
            })
            .collect(),
        _ => Err(fail("the expression must give an array of documents")),
    }
}

/// `$sample`'s `size`: a positive number, its fraction dropped.
fn parse_sample(arg: &Bson) -> Result<Stage> {
    let name = "$sample";
    let code = ErrorCode::location;
    let Bson::Document(spec) = arg else {
        return Err(Error::from(
            error(name, "the $sample stage specification must be an object").with_code(code(28745)),
        ));
    };
    if let Some(unknown) = spec.keys().find(|k| *k != "size") {
        return Err(Error::from(
            error(name, format!("unrecognized option to $sample: {unknown}"))
                .with_code(code(28748)),
        ));
    }
    let size = match spec.get("size") {
        None => {
            return Err(Error::from(
                error(name, "$sample stage must specify a size").with_code(code(28749)),
            ));
        }
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Double(f)) if f.is_nan() => 0,
        Some(Bson::Double(f)) => *f as i64,
        Some(Bson::Decimal128(d)) => d.to_string().parse::<f64>().map_or(0, |f| f as i64),
        Some(_) => {
            return Err(Error::from(
                error(name, "size argument to $sample must be a number").with_code(code(28746)),
            ));
        }
    };
    if size <= 0 {
        return Err(Error::from(
            error(name, "size argument to $sample must be a positive integer")
                .with_code(code(28747)),
        ));
    }
    Ok(Stage::Sample(size as u64))
}

/// `size` documents of the input chosen uniformly at random, in random order: as MongoDB does
/// when it cannot read a random cursor, each document gets a random key and the first `size`
/// by that key are kept, a sort with a limit under the stage's budget (past it the sort spills,
/// or fails without disk use). The randomness is not for security: a generator seeded from the
/// clock.
fn sample(input: Documents<'_>, size: u64, budget: Budget) -> Result<Documents<'_>> {
    let mut state = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x9e37_79b9_7f4a_7c15, |d| d.as_nanos() as u64)
        | 1;
    let mut next = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d).cast_signed()
    };
    let random = |record: &bson::RawDocument| match spill::key_of(record) {
        bson::RawBsonRef::Int64(n) => n,
        _ => 0,
    };
    let compare = move |a: &bson::RawDocument, b: &bson::RawDocument| random(a).cmp(&random(b));
    let keep = usize::try_from(size).unwrap_or(usize::MAX);
    let mut sorter = Sorter::new(budget, "$sample", compare, Some(keep));
    for doc in input {
        crate::interrupt::check()?;
        sorter.push(spill::keyed("$sample", Bson::Int64(next()), doc?)?)?;
    }
    Ok(Box::new(
        sorter
            .finish()?
            .map(|record| Ok(spill::unkeyed(&record?)?.1)),
    ))
}

/// `$sort`: every input document, held as raw BSON and counted against the budget; past it
/// the sort spills sorted runs to disk and merges them (see `crate::spill`), or fails when
/// disk use is not allowed.
fn sort_all(input: Documents<'_>, sort: Sort, budget: Budget) -> Result<Documents<'_>> {
    let by_score = sort.needs_text_score();
    let compare = move |a: &bson::RawDocument, b: &bson::RawDocument| sort.compare(a, b);
    let mut sorter = Sorter::new(budget, "$sort", compare, None);
    for doc in input {
        crate::interrupt::check()?;
        let doc = doc?;
        if by_score && !doc.contains_key(crate::text::SCORE_FIELD) {
            return Err(Error::InvalidFilter(crate::query::no_text_score()));
        }
        sorter.push(bson::RawDocumentBuf::try_from(&doc).map_err(|e| stage_error("$sort", e))?)?;
    }
    Ok(Box::new(sorter.finish()?.map(|raw| {
        Document::try_from(raw?.as_ref()).map_err(|e| stage_error("$sort", e))
    })))
}

fn parse_lookup(spec: &Document, scope: &Scope) -> Result<Lookup> {
    let name = "$lookup";
    let known = [
        "from",
        "localField",
        "foreignField",
        "let",
        "pipeline",
        "as",
    ];
    if let Some(unknown) = spec.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(stage_error(name, format!("unknown option `{unknown}`")));
    }
    let text = |key: &str| match spec.get(key) {
        None => Ok(None),
        Some(Bson::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(stage_error(
            name,
            format!("`{key}` must be a non-empty string"),
        )),
    };
    let from = text("from")?;
    let documents_first = matches!(spec.get("pipeline"), Some(Bson::Array(stages))
        if matches!(stages.first(), Some(Bson::Document(d)) if d.contains_key("$documents")));
    if from.is_none() && !documents_first {
        return Err(Error::from(
            error(
                name,
                "needs `from`, the collection to join (or a pipeline starting with $documents)",
            )
            .with_code(ErrorCode::FAILED_TO_PARSE),
        ));
    }
    let Some(output) = text("as")? else {
        return Err(stage_error(
            name,
            "needs `as`, the field that receives the joined documents",
        ));
    };
    let equality = match (text("localField")?, text("foreignField")?) {
        (Some(local), Some(foreign)) => Some((Path::new(&local), foreign)),
        (None, None) => None,
        _ => {
            return Err(stage_error(
                name,
                "`localField` and `foreignField` go together",
            ));
        }
    };
    let pipeline = match spec.get("pipeline") {
        None => Vec::new(),
        Some(Bson::Array(stages)) => stages
            .iter()
            .map(|s| match s {
                Bson::Document(d) => Ok(d.clone()),
                _ => Err(stage_error(
                    name,
                    "every `pipeline` stage must be a document",
                )),
            })
            .collect::<Result<_>>()?,
        Some(_) => return Err(stage_error(name, "`pipeline` must be an array of stages")),
    };
    if equality.is_none() && spec.get("pipeline").is_none() {
        return Err(stage_error(
            name,
            "needs `localField` and `foreignField`, or a `pipeline`",
        ));
    }
    let vars = match spec.get("let") {
        None => Vec::new(),
        Some(Bson::Document(d)) => d
            .iter()
            .map(|(k, v)| Ok((k.clone(), Expr::parse(v, scope)?)))
            .collect::<Result<_>>()?,
        Some(_) => return Err(stage_error(name, "`let` must be a document")),
    };
    Ok(Lookup {
        from,
        equality,
        vars,
        pipeline,
        output: Path::new(&output),
    })
}

impl Lookup {
    /// One input document with its joined documents at the output path.
    fn join(&self, mut doc: Document, context: &Context<'_>) -> Result<Document> {
        let joined = {
            {
                let mut pipeline = Vec::with_capacity(self.pipeline.len() + 1);
                // Without `from`, the pipeline's own `$documents` come first.
                let mut stages = self.pipeline.iter().cloned();
                if self.from.is_none() {
                    pipeline.extend(stages.next());
                }
                if let Some((local, foreign_field)) = &self.equality {
                    let mut values = local.elements(&doc);
                    if values.is_empty() {
                        values.push(Bson::Null);
                    }
                    pipeline.push(
                        bson::doc! { "$match": { foreign_field.clone(): { "$in": values } } },
                    );
                }
                pipeline.extend(stages);
                // The variables are values of this document: literals, never re-read as
                // expressions.
                let env = Env::collated(&doc, context.collation.as_deref());
                let mut vars = context.options.let_vars.clone().unwrap_or_default();
                for (name, expr) in &self.vars {
                    let value = match eval_in(expr, &env)? {
                        Some(value) => Bson::Document(bson::doc! { "$literal": value }),
                        // A missing field binds the variable to missing.
                        None => Bson::String("$$REMOVE".to_owned()),
                    };
                    vars.insert(name.clone(), value);
                }
                let options = AggregateOptions {
                    let_vars: Some(vars),
                    collation: context.options.collation.clone(),
                    hint: None,
                    ..context.options.clone()
                };
                let limit = context.budget.limit();
                lookup_documents(
                    context.snapshot,
                    self.from.as_deref(),
                    &pipeline,
                    &options,
                    limit,
                )?
            }
        };
        let joined = Bson::Array(joined.into_iter().map(Bson::Document).collect());
        set_output(&mut doc, &self.output, joined);
        Ok(doc)
    }
}

/// Sets `value` at a stage's output path, creating (or replacing non-document) parents.
pub(super) fn set_output(doc: &mut Document, path: &Path, value: Bson) {
    // Overwriting parents never blocks.
    let _ = path.set(doc, value, Parents::Overwrite);
}

fn parse_unwind(arg: &Bson) -> Result<Stage> {
    let name = "$unwind";
    let (path, index_field, preserve) = match arg {
        Bson::String(p) => (p.clone(), None, false),
        Bson::Document(d) => {
            if let Some(unknown) = d.keys().find(|k| {
                !["path", "includeArrayIndex", "preserveNullAndEmptyArrays"].contains(&k.as_str())
            }) {
                return Err(stage_error(name, format!("unknown option `{unknown}`")));
            }
            let Some(Bson::String(p)) = d.get("path") else {
                return Err(stage_error(name, "`path` must be a string"));
            };
            let index = match d.get("includeArrayIndex") {
                None => None,
                Some(Bson::String(f)) if !f.is_empty() && !f.starts_with('$') => Some(f.clone()),
                Some(Bson::String(_)) => {
                    return Err(Error::from(
                        error(
                            name,
                            "`includeArrayIndex` must be a field name, not starting with `$`",
                        )
                        .with_code(ErrorCode::location(28822)),
                    ));
                }
                Some(_) => {
                    return Err(Error::from(
                        error(name, "`includeArrayIndex` must be a string")
                            .with_code(ErrorCode::location(28810)),
                    ));
                }
            };
            let preserve = match d.get("preserveNullAndEmptyArrays") {
                None => false,
                Some(Bson::Boolean(b)) => *b,
                Some(_) => {
                    return Err(stage_error(
                        name,
                        "`preserveNullAndEmptyArrays` must be a boolean",
                    ));
                }
            };
            (p.clone(), index, preserve)
        }
        _ => return Err(stage_error(name, "expects a field path or a document")),
    };
    let code = ErrorCode::location;
    let Some(path) = path.strip_prefix('$') else {
        return Err(Error::from(
            error(
                name,
                format!("`{path}` must be a field path starting with `$`"),
            )
            .with_code(code(28818)),
        ));
    };
    if path.is_empty() {
        return Err(Error::from(
            error(name, "the path `$` names no field").with_code(code(40352)),
        ));
    }
    let Some(path) = Path::checked(path) else {
        return Err(Error::from(
            error(name, format!("`${path}` is not a valid field path")).with_code(code(40353)),
        ));
    };
    Ok(Stage::Unwind {
        path,
        index_field,
        preserve,
    })
}

fn parse_group(
    spec: &Document,
    scope: &Scope,
    collation: Option<&Arc<Collation>>,
) -> Result<Stage> {
    let name = "$group";
    let Some(id) = spec.get("_id") else {
        return Err(Error::from(
            error(name, "needs an `_id` (null for one group)")
                .with_code(ErrorCode::location(15955)),
        ));
    };
    let id = Expr::parse(id, scope)?;
    let fields = accumulator_fields(name, spec, scope)?;
    Ok(Stage::Group {
        grouping: Box::new(group::Grouping::new(id, fields, collation.cloned())),
        in_key_order: false,
    })
}

/// The output fields of `$group` (every field but `_id`) or `$bucketAuto`: an accumulator each.
fn accumulator_fields(
    name: &str,
    spec: &Document,
    scope: &Scope,
) -> Result<Vec<(String, Accumulator, Expr)>> {
    let mut fields = Vec::new();
    for (field, value) in spec {
        if field == "_id" {
            continue;
        }
        if field.contains('.') || field.starts_with('$') {
            return Err(stage_error(
                name,
                format!("`{field}` is not a valid output field name"),
            ));
        }
        let Bson::Document(acc) = value else {
            return Err(stage_error(
                name,
                format!("`{field}` must be an accumulator document"),
            ));
        };
        let (Some((op, arg)), 1) = (acc.iter().next(), acc.len()) else {
            return Err(stage_error(
                name,
                format!("`{field}` must hold exactly one accumulator"),
            ));
        };
        let (accumulator, expr) = parse_accumulator(op, arg, field, scope)?;
        fields.push((field.clone(), accumulator, expr));
    }
    Ok(fields)
}

/// The accumulators that take one expression, by name.
const UNARY_ACCUMULATORS: [(&str, Accumulator); 13] = [
    ("$sum", Accumulator::Sum),
    ("$avg", Accumulator::Avg),
    ("$min", Accumulator::Min),
    ("$max", Accumulator::Max),
    ("$first", Accumulator::First),
    ("$last", Accumulator::Last),
    ("$push", Accumulator::Push),
    ("$addToSet", Accumulator::AddToSet),
    ("$mergeObjects", Accumulator::MergeObjects),
    ("$stdDevPop", Accumulator::StdDevPop),
    ("$stdDevSamp", Accumulator::StdDevSamp),
    ("$concatArrays", Accumulator::ConcatArrays),
    ("$setUnion", Accumulator::SetUnion),
];

/// One accumulator of `$group`: what it is, and the expression it reads from each document.
fn parse_accumulator(
    op: &str,
    arg: &Bson,
    field: &str,
    scope: &Scope,
) -> Result<(Accumulator, Expr)> {
    if let Some((_, accumulator)) = UNARY_ACCUMULATORS.iter().find(|(name, _)| *name == op) {
        return parse_unary(accumulator.clone(), op, arg, field, scope);
    }
    match op {
        "$count" => parse_count(arg),
        "$firstN" | "$lastN" | "$minN" | "$maxN" => parse_take_n(op, arg, scope),
        "$top" | "$bottom" | "$topN" | "$bottomN" => parse_sorted(op, arg, scope),
        "$percentile" | "$median" => parse_percentile(op, arg, scope),
        other => Err(stage_error(
            other,
            "is not a supported accumulator ($sum, $avg, $min, $max, $first, $last, $push, \
             $addToSet, $count, $mergeObjects, $stdDevPop, $stdDevSamp, $concatArrays, \
             $setUnion, $firstN, $lastN, $minN, $maxN, $top, $topN, $bottom, $bottomN, \
             $median, $percentile)",
        )),
    }
}

/// An accumulator of one expression. MongoDB: an accumulator is a unary operator, so an array
/// is refused rather than read as a list of arguments.
fn parse_unary(
    accumulator: Accumulator,
    op: &str,
    arg: &Bson,
    field: &str,
    scope: &Scope,
) -> Result<(Accumulator, Expr)> {
    match arg {
        Bson::Array(_) => Err(Error::from(
            error(
                op,
                format!("`{field}`: an accumulator takes one expression, not an array"),
            )
            .with_code(ErrorCode::location(40237)),
        )),
        _ => Ok((accumulator, Expr::parse(arg, scope)?)),
    }
}

/// `$count`: `{}`, a `$sum` of 1.
fn parse_count(arg: &Bson) -> Result<(Accumulator, Expr)> {
    match arg {
        Bson::Document(d) if d.is_empty() => {
            Ok((Accumulator::Count, Expr::Literal(Bson::Int32(1))))
        }
        _ => Err(stage_error("$count", "takes an empty document")),
    }
}

/// `$firstN`, `$lastN`, `$minN`, `$maxN`: `{n, input}`.
fn parse_take_n(op: &str, arg: &Bson, scope: &Scope) -> Result<(Accumulator, Expr)> {
    let (n, input) = crate::expr::n_arguments(op, arg, "input")?;
    let pick = match op {
        "$firstN" => Pick::First,
        "$lastN" => Pick::Last,
        "$minN" => Pick::Min,
        _ => Pick::Max,
    };
    Ok((
        Accumulator::TakeN(pick, Expr::parse(n, scope)?),
        Expr::parse(input, scope)?,
    ))
}

/// `$top`, `$bottom` (`{sortBy, output}`), `$topN`, `$bottomN` (and `n`). A spec with several
/// faults reports the first of: its shape, an unknown argument, `n`, `output`, `sortBy`.
fn parse_sorted(op: &str, arg: &Bson, scope: &Scope) -> Result<(Accumulator, Expr)> {
    let with_n = op.ends_with('N');
    let code = |c: i32| ErrorCode::location(c);
    let Bson::Document(spec) = arg else {
        return Err(Error::from(
            error(op, "expects a document with `sortBy` and `output`").with_code(code(5_788_001)),
        ));
    };
    if let Some(unknown) = spec
        .keys()
        .find(|k| !(matches!(k.as_str(), "sortBy" | "output") || (with_n && *k == "n")))
    {
        return Err(Error::from(
            error(op, format!("unknown argument to {op} '{unknown}'")).with_code(code(5_788_002)),
        ));
    }
    let n = match (with_n, spec.get("n")) {
        (true, Some(n)) => Some(Expr::parse(n, scope)?),
        (true, None) => {
            return Err(Error::from(
                error(op, "missing value for 'n'").with_code(code(5_788_003)),
            ));
        }
        (false, _) => None,
    };
    let output = spec.get("output").ok_or_else(|| {
        Error::from(error(op, "missing value for 'output'").with_code(code(5_788_004)))
    })?;
    let sort = match spec.get("sortBy") {
        None => {
            return Err(Error::from(
                error(op, "missing value for 'sortBy'").with_code(code(5_788_005)),
            ));
        }
        Some(Bson::Document(d)) if d.is_empty() => {
            return Err(Error::from(
                error(op, "sortBy must have at least one sort key").with_code(code(15_976)),
            ));
        }
        Some(Bson::Document(d)) => Sort::parse(d)?,
        Some(_) => {
            return Err(Error::from(
                error(op, "sortBy must be a document").with_code(code(10_065)),
            ));
        }
    };
    Ok((
        Accumulator::Sorted {
            sort,
            bottom: op.starts_with("$bottom"),
            n,
        },
        Expr::parse(output, scope)?,
    ))
}

/// `$percentile` (`{input, p, method}`) and `$median` (`{input, method}`); the only method is
/// `approximate`.
fn parse_percentile(op: &str, arg: &Bson, scope: &Scope) -> Result<(Accumulator, Expr)> {
    let median = op == "$median";
    let Bson::Document(spec) = arg else {
        let code = if median { 7_436_100 } else { 7_429_703 };
        return Err(Error::from(
            error(op, "expects a document with `input` and `method`")
                .with_code(ErrorCode::location(code)),
        ));
    };
    let known: &[&str] = if median {
        &["input", "method"]
    } else {
        &["input", "p", "method"]
    };
    if let Some(unknown) = spec.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(Error::from(
            error(
                op,
                format!("BSON field '{op}.{unknown}' is an unknown field"),
            )
            .with_code(ErrorCode::location(40415)),
        ));
    }
    if let Some(missing) = known.iter().find(|k| !spec.contains_key(**k)) {
        return Err(Error::from(
            error(
                op,
                format!("BSON field '{op}.{missing}' is missing but a required field"),
            )
            .with_code(ErrorCode::IDL_FAILED_TO_PARSE),
        ));
    }
    match spec.get("method") {
        Some(Bson::String(m)) if m == "approximate" => {}
        Some(Bson::String(_)) => {
            return Err(Error::from(error(
                op,
                "currently only 'approximate' can be used as a percentile 'method'",
            )));
        }
        _ => {
            return Err(Error::from(
                error(op, "'method' must be a string").with_code(ErrorCode::TYPE_MISMATCH),
            ));
        }
    }
    let p = match spec.get("p") {
        Some(p) => Expr::parse(p, scope)?,
        None => Expr::Literal(Bson::Array(vec![Bson::Double(0.5)])),
    };
    Ok((
        Accumulator::Percentile { p, median },
        Expr::parse(spec.get("input").unwrap_or(&Bson::Null), scope)?,
    ))
}

/// The documents one input document unwinds to.
/// `$unwind` of one document, lazily: one document per element, each a copy of the document
/// without the array plus that element (so an array of n elements costs n small copies, not n
/// copies of the array).
fn unwind(
    mut doc: Document,
    path: Path,
    index_field: Option<String>,
    preserve: bool,
) -> Box<dyn Iterator<Item = Document>> {
    // A dotted index field is a path; through the unwound element, it writes into it.
    let index_path = index_field.map(|f| Path::new(&f));
    let with_index = move |mut d: Document, i: Option<usize>| {
        if let Some(path) = &index_path {
            set_output(
                &mut d,
                path,
                i.map_or(Bson::Null, |i| Bson::Int64(i as i64)),
            );
        }
        d
    };
    match path.get(&doc) {
        Some(Bson::Array(_)) => {
            // The array's place is kept (holding null), so that each element goes where it was.
            let Ok(Some(Bson::Array(items))) = path.replace(&mut doc, Bson::Null) else {
                return Box::new(std::iter::empty());
            };
            if items.is_empty() {
                // Preserved, an empty array's field goes away.
                let _ = path.remove(&mut doc);
                return if preserve {
                    Box::new(std::iter::once(with_index(doc, None)))
                } else {
                    Box::new(std::iter::empty())
                };
            }
            Box::new(items.into_iter().enumerate().map(move |(i, item)| {
                let mut d = doc.clone();
                // The parents exist: the array was found through them.
                let _ = path.set(&mut d, item, Parents::Existing);
                with_index(d, Some(i))
            }))
        }
        None | Some(Bson::Null | Bson::Undefined) if preserve => {
            Box::new(std::iter::once(with_index(doc, None)))
        }
        None | Some(Bson::Null | Bson::Undefined) => Box::new(std::iter::empty()),
        // A value that is not an array unwinds to itself.
        Some(_) => Box::new(std::iter::once(with_index(doc, None))),
    }
}
