//! Explain: which plan a query runs, which plans it rejected and why, and what running it
//! examined, as a typed value, as a document shaped like MongoDB's explain output, and as text.

use std::fmt;

use bson::{Document, doc};

use super::candidates::WalkStats;
use super::cursor::Cursor;
use super::exec::FindOptions;
use super::plan::{Access, Plan, candidates};
use super::projection::Projection;
use super::routing::{Routing, route};
use super::selection::Query;
use crate::error::Result;
use crate::options::ShardKey;
use crate::read::ReadCollection;

/// The explanation of one query.
#[derive(Debug, Clone)]
pub struct Explain {
    pub collection: String,
    pub winning: Plan,
    pub rejected: Vec<Plan>,
    /// Whether results had to be sorted in memory.
    pub in_memory_sort: bool,
    /// What the blocking sort wrote to temporary files past its memory limit.
    pub spill: super::Spill,
    /// Whether the index alone answered the query (no document read).
    pub covered: bool,
    pub projection: Option<Projection>,
    /// For a collection with a shard key: the key, and where the query would go on a cluster.
    pub routing: Option<(ShardKey, Routing)>,
    pub keys_examined: u64,
    pub docs_examined: u64,
    pub returned: u64,
    /// Wall time of the run, in whole milliseconds (MongoDB's `executionTimeMillis`).
    pub execution_millis: u64,
    /// The stage MongoDB puts above the index scan, its input left out: for a `$text` query
    /// `TEXT_MATCH` (the index, its prefix values, the parsed search), for a near query served
    /// by a geo index `GEO_NEAR_2DSPHERE` or `GEO_NEAR_2D` (its key pattern and index).
    pub head: Option<Document>,
}

/// Every candidate plan of a query on a collection, best first.
fn all_plans(query: &Query, collection: &ReadCollection<'_>) -> Vec<super::plan::Plan> {
    // `$text` has one plan, the text index's, and a geo condition a geo index serves the
    // geo index's.
    if query.text.is_some() || serves_geo(query, collection) {
        return Vec::new();
    }
    candidates(
        &query.filter,
        query.collation(),
        query.sort.as_ref(),
        &collection.meta().indexes,
    )
}

/// Whether a geo index serves the query's geo condition (see `plan::geo_plan`).
fn serves_geo(query: &Query, collection: &ReadCollection<'_>) -> bool {
    query.hint.is_none()
        && super::plan::geo_plan(&query.filter, &collection.meta().indexes).is_some()
}

impl ReadCollection<'_> {
    /// Plans and runs a find, reporting the plans and what the run examined. The run is the
    /// find's own cursor, drained: the figures are those of the find.
    pub fn explain(&self, filter: &Document, options: &FindOptions) -> Result<Explain> {
        let query = Query::parse(filter, options.query_options())?.under(self.meta())?;
        let query = self.near_reach(query)?;
        let winning = if query.hint.is_some() || query.text.is_some() || serves_geo(&query, self) {
            self.choose_plan(&query)?
        } else {
            let chosen = self.best_plan(&query);
            if chosen.from_cache {
                chosen
            } else {
                all_plans(&query, self).swap_remove(0)
            }
        };
        let started = std::time::Instant::now();
        let mut cursor = self.cursor_with_plan(winning, query)?;
        let mut returned = 0u64;
        for result in cursor.by_ref() {
            result?;
            returned += 1;
        }
        let mut explained = self.explained(filter, options, &cursor, returned)?;
        explained.execution_millis =
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(explained)
    }

    /// The explanation of a find whose cursor has run (as far as its reader pulled it),
    /// having returned `returned` documents.
    pub(crate) fn explained<T>(
        &self,
        filter: &Document,
        options: &FindOptions,
        cursor: &Cursor<'_, T>,
        returned: u64,
    ) -> Result<Explain> {
        let query = Query::parse(filter, options.query_options())?.under(self.meta())?;
        let winning = cursor.plan().clone();
        let rejected = all_plans(&query, self)
            .into_iter()
            .filter(|p| !same_access(&p.access, &winning.access))
            .collect();
        let routing = self.meta().options.shard_key.as_ref().map(|key| {
            (
                key.clone(),
                route(key, &query.filter, query.collation.is_some()),
            )
        });
        let WalkStats {
            keys_examined,
            docs_examined,
        } = cursor.stats();
        let head = match &query.text {
            Some(text) => Some(text_match_stage(text, &query.filter)),
            None => query
                .near
                .as_ref()
                .and_then(|_| self.geo_near_stage(&winning)),
        };
        Ok(Explain {
            collection: self.name().to_owned(),
            in_memory_sort: cursor.sorted_in_memory(),
            spill: cursor.spill(),
            covered: cursor.is_covered(),
            projection: query.projection,
            routing,
            winning,
            rejected,
            keys_examined,
            docs_examined,
            returned,
            execution_millis: 0,
            head,
        })
    }
}

impl ReadCollection<'_> {
    /// The `GEO_NEAR_2DSPHERE` or `GEO_NEAR_2D` stage above a near query's scan of the geo
    /// index that serves it.
    fn geo_near_stage(&self, winning: &Plan) -> Option<Document> {
        let Access::IndexScan(scan) = &winning.access else {
            return None;
        };
        let index = self
            .meta()
            .indexes
            .iter()
            .find(|i| i.spec.name() == scan.index)?;
        let stage = match index.spec.geo()?.1 {
            crate::geo::GeoIndex::Sphere { .. } => "GEO_NEAR_2DSPHERE",
            crate::geo::GeoIndex::Flat { .. } => "GEO_NEAR_2D",
        };
        Some(doc! {
            "stage": stage,
            "keyPattern": scan.described.key_pattern.clone(),
            "indexName": &scan.index,
        })
    }
}

/// The stages MongoDB puts above an index scan, which [`Explain::head`] keeps.
const HEAD_STAGES: [&str; 3] = ["TEXT_MATCH", "GEO_NEAR_2DSPHERE", "GEO_NEAR_2D"];

/// The head stage of a server's plan tree (its fields, its input left out).
fn head_of(tree: &Document) -> Option<Document> {
    if !HEAD_STAGES.contains(&tree.get_str("stage").ok()?) {
        return None;
    }
    let mut stage = tree.clone();
    stage.remove("inputStage");
    Some(stage)
}

/// The fields of a `$text` query's `TEXT_MATCH` stage, as MongoDB shows them.
fn text_match_stage(text: &crate::text::TextMatch, filter: &super::filter::Filter) -> Document {
    let conditions = super::plan::conditions(filter, false);
    let prefix: Document = text
        .prefix
        .iter()
        .filter_map(|path| {
            conditions
                .iter()
                .find_map(|(p, predicate)| match predicate {
                    super::filter::Predicate::Eq(v) if p.as_str() == path => {
                        Some((path.clone(), bson::Bson::try_from(v.clone()).ok()?))
                    }
                    _ => None,
                })
        })
        .collect();
    doc! {
        "stage": "TEXT_MATCH",
        "indexPrefix": prefix,
        "indexName": &text.index,
        "parsedTextQuery": text.query.to_document(),
        "textIndexVersion": crate::text::TEXT_INDEX_VERSION,
    }
}

/// Puts the keys and documents examined on the stages that examined them, down the tree's
/// `inputStage` chain (an `OR`'s branches share the totals, so they stay on the `OR`).
fn annotate_stages(stage: &mut Document, keys: u64, docs: u64, depth: usize) {
    let count = |n: u64| crate::number::int_or_long(i64::try_from(n).unwrap_or(i64::MAX));
    match stage.get_str("stage").unwrap_or_default() {
        "IXSCAN" => {
            stage.insert("keysExamined", count(keys));
        }
        "FETCH" | "COLLSCAN" | "IDHACK" => {
            stage.insert("docsExamined", count(docs));
        }
        "OR" => {
            stage.insert("keysExamined", count(keys));
            return;
        }
        _ => {}
    }
    if depth < 8
        && let Ok(input) = stage.get_document_mut("inputStage")
    {
        annotate_stages(input, keys, docs, depth + 1);
    }
}

/// Whether two plans reach documents the same way (the same index, or both without one).
fn same_access(a: &Access, b: &Access) -> bool {
    match (a, b) {
        (Access::IndexScan(x), Access::IndexScan(y)) => x.index == y.index,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// The stage tree of a plan: how it reaches documents (an index scan fetches them unless the
/// query is covered), then a blocking sort, then a projection.
fn stage(
    plan: &Plan,
    in_memory_sort: bool,
    covered: bool,
    projection: Option<&Projection>,
) -> Document {
    let fetch = |input: Document| {
        if covered {
            input
        } else {
            doc! { "stage": "FETCH", "inputStage": input }
        }
    };
    let mut tree = match &plan.access {
        Access::CollectionScan | Access::NaturalScan { reverse: false } => {
            doc! { "stage": "COLLSCAN", "direction": "forward" }
        }
        Access::NaturalScan { reverse: true } => {
            doc! { "stage": "COLLSCAN", "direction": "backward" }
        }
        Access::IdLookup { ids } => doc! { "stage": "IDHACK", "keys": ids.len() as i64 },
        Access::Or(branches) => {
            let inputs: Vec<bson::Bson> = branches
                .iter()
                .map(|b| bson::Bson::Document(stage(b, false, true, None)))
                .collect();
            fetch(doc! { "stage": "OR", "inputStages": inputs })
        }
        Access::IndexScan(scan) => {
            let bounds: Document = scan
                .bounds
                .iter()
                .map(|(path, bounds)| (path.clone(), bson::Bson::String(bounds.to_string())))
                .collect();
            fetch(doc! {
                "stage": "IXSCAN",
                "keyPattern": scan.described.key_pattern.clone(),
                "indexName": &scan.index,
                "isMultiKey": scan.multikey,
                "isUnique": scan.described.unique,
                "isSparse": scan.described.sparse,
                "isPartial": scan.described.partial,
                "direction": if scan.reverse { "backward" } else { "forward" },
                "indexBounds": bounds,
                "intervals": scan.intervals.len() as i64,
            })
        }
    };
    if in_memory_sort {
        tree = doc! { "stage": "SORT", "inputStage": tree };
    }
    if let Some(projection) = projection {
        let name = if covered {
            "PROJECTION_COVERED"
        } else if projection.included_paths().is_some() {
            "PROJECTION_SIMPLE"
        } else {
            "PROJECTION_DEFAULT"
        };
        tree = doc! { "stage": name, "inputStage": tree };
    }
    tree
}

impl Explain {
    /// A document shaped like MongoDB's `explain("executionStats")` output.
    pub fn to_document(&self) -> Document {
        let rejected: Vec<bson::Bson> = self
            .rejected
            .iter()
            .map(|p| bson::Bson::Document(stage(p, false, false, None)))
            .collect();
        let mut winning = stage(
            &self.winning,
            self.in_memory_sort,
            self.covered,
            self.projection.as_ref(),
        );
        if let Some(head) = &self.head {
            let mut above = head.clone();
            above.insert("inputStage", winning);
            winning = above;
        }
        let mut stats = doc! {
            "executionSuccess": true,
            "nReturned": crate::number::int_or_long(self.returned as i64),
            "executionTimeMillis": crate::number::int_or_long(self.execution_millis as i64),
            "totalKeysExamined": crate::number::int_or_long(self.keys_examined as i64),
            "totalDocsExamined": crate::number::int_or_long(self.docs_examined as i64),
            "executionStages": self.execution_stages(winning.clone()),
            "inMemorySort": self.in_memory_sort,
            "covered": self.covered,
        };
        if self.in_memory_sort {
            crate::aggregate::insert_spill(&mut stats, self.spill);
        }
        let mut planner = doc! {
            "namespace": &self.collection,
            "winningPlan": winning,
            "fromPlanCache": self.winning.from_cache,
            "rejectedPlans": rejected,
        };
        if let Some((key, routing)) = &self.routing {
            planner.insert(
                "shardRouting",
                doc! { "shardKey": key.to_document(), "routing": routing.as_str() },
            );
        }
        doc! { "queryPlanner": planner, "executionStats": stats }
    }

    /// The winning plan's stage tree with what the run counted, where it counted it: the
    /// results at the root, the keys at the index scan, the documents where they were read
    /// (the fetch, or the collection scan). Counts the run did not keep per stage (what an
    /// inner stage passed up) are not given, rather than guessed.
    fn execution_stages(&self, mut tree: Document) -> Document {
        let count = |n: u64| crate::number::int_or_long(i64::try_from(n).unwrap_or(i64::MAX));
        tree.insert("nReturned", count(self.returned));
        tree.insert("executionTimeMillisEstimate", count(self.execution_millis));
        annotate_stages(&mut tree, self.keys_examined, self.docs_examined, 0);
        tree
    }

    /// Reads an explain document in MongoDB's shape back into the typed form: this engine's
    /// own ([`Explain::to_document`]) or a MongoDB server's (`explain` of a `find` at
    /// `executionStats`, through a `mongos` too). What the document does not say stays empty:
    /// rejected plans are listed by access only, key intervals are not in it (their readable
    /// bounds are), and ranks are not compared. Routing comes from this engine's
    /// `shardRouting`, or from a `mongos`'s `SINGLE_SHARD` / `SHARD_MERGE` stage with the
    /// collection's `shard_key` (a merge over several shards reads as a broadcast, since the
    /// document does not say how many shards there are).
    pub fn from_document(document: &Document, shard_key: Option<&ShardKey>) -> Explain {
        let planner = document.get_document("queryPlanner").ok();
        let stats = document.get_document("executionStats").ok();
        let winning_tree = planner
            .and_then(|p| p.get_document("winningPlan").ok())
            .cloned()
            .unwrap_or_default();
        // A mongos wraps each shard's plan; the first shard's stands for the plan.
        let (shard_stage, tree) = match winning_tree.get_str("stage") {
            Ok(stage @ ("SINGLE_SHARD" | "SHARD_MERGE" | "SHARD_MERGE_SORT")) => {
                let inner = winning_tree
                    .get_array("shards")
                    .ok()
                    .and_then(|shards| shards.first())
                    .and_then(bson::Bson::as_document)
                    .and_then(|shard| shard.get_document("winningPlan").ok())
                    .cloned()
                    .unwrap_or_default();
                (Some(stage.to_owned()), inner)
            }
            _ => (None, winning_tree),
        };
        // Servers running the slot-based engine nest the classic tree under `queryPlan`.
        let tree = tree.get_document("queryPlan").cloned().unwrap_or(tree);
        let walked = Walked::of(&tree);
        let rejected = planner
            .and_then(|p| p.get_array("rejectedPlans").ok())
            .map(|plans| {
                plans
                    .iter()
                    .filter_map(bson::Bson::as_document)
                    .map(|plan| {
                        let plan = plan.get_document("queryPlan").unwrap_or(plan);
                        Walked::of(plan).plan(false)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let routing = match planner.and_then(|p| p.get_document("shardRouting").ok()) {
            Some(routing) => routing
                .get_document("shardKey")
                .ok()
                .and_then(|key| ShardKey::from_document(key).ok())
                .zip(match routing.get_str("routing") {
                    Ok("single shard") => Some(Routing::SingleShard),
                    Ok("targeted") => Some(Routing::Targeted),
                    Ok("broadcast") => Some(Routing::Broadcast),
                    _ => None,
                }),
            None => shard_key.zip(shard_stage).map(|(key, stage)| {
                let routing = if stage == "SINGLE_SHARD" {
                    Routing::SingleShard
                } else {
                    Routing::Broadcast
                };
                (key.clone(), routing)
            }),
        };
        let count = |name: &str| stats.map_or(0, |s| crate::expr::count_in(s, name));
        Explain {
            collection: planner
                .and_then(|p| p.get_str("namespace").ok())
                .or_else(|| shard_namespace(planner))
                .map(|ns| ns.split_once('.').map_or(ns, |(_, c)| c).to_owned())
                .unwrap_or_default(),
            winning: walked.plan(
                planner
                    .and_then(|p| p.get_bool("fromPlanCache").ok())
                    .unwrap_or(false),
            ),
            rejected,
            in_memory_sort: walked.sorted,
            spill: stats.map_or_else(super::Spill::default, |s| super::Spill {
                used_disk: s.get_bool("usedDisk").unwrap_or(false),
                spills: crate::expr::count_in(s, "spills"),
                spilled_bytes: crate::expr::count_in(s, "spilledBytes"),
            }),
            covered: walked.covered(),
            projection: None,
            routing,
            keys_examined: count("totalKeysExamined"),
            docs_examined: count("totalDocsExamined"),
            returned: count("nReturned"),
            execution_millis: count("executionTimeMillis"),
            head: head_of(&tree),
        }
    }

    /// The name of the index the winning plan scans, if it scans one.
    pub fn index_used(&self) -> Option<&str> {
        match &self.winning.access {
            Access::IndexScan(scan) => Some(&scan.index),
            _ => None,
        }
    }
}

impl fmt::Display for Explain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let describe = |p: &Plan| match &p.access {
            Access::CollectionScan => "collection scan".to_owned(),
            Access::NaturalScan { reverse } => {
                let order = if *reverse { "newest" } else { "oldest" };
                format!("collection scan in insertion order, {order} first")
            }
            Access::IdLookup { ids } => format!("_id lookup of {} value(s)", ids.len()),
            Access::Or(branches) => format!("union of {} plans ($or)", branches.len()),
            Access::IndexScan(scan) => {
                let bounds: Vec<String> = scan
                    .bounds
                    .iter()
                    .map(|(p, b)| format!("{p} in {b}"))
                    .collect();
                format!(
                    "index {} {}{}{}",
                    scan.index,
                    if scan.reverse { "backward" } else { "forward" },
                    if bounds.is_empty() {
                        String::new()
                    } else {
                        format!(" where {}", bounds.join(" and "))
                    },
                    if scan.multikey { " (multikey)" } else { "" }
                )
            }
        };
        writeln!(f, "query on `{}`", self.collection)?;
        writeln!(
            f,
            "  plan: {}{}",
            describe(&self.winning),
            if self.in_memory_sort {
                ", then sort in memory"
            } else {
                ""
            }
        )?;
        if self.covered {
            writeln!(f, "  covered: answered from the index alone")?;
        }
        if let Some((key, routing)) = &self.routing {
            writeln!(
                f,
                "  on a cluster sharded by {}: {routing}",
                key.to_document()
            )?;
        }
        for p in &self.rejected {
            writeln!(f, "  rejected: {}", describe(p))?;
        }
        write!(
            f,
            "  examined {} keys and {} documents, returned {}",
            self.keys_examined, self.docs_examined, self.returned
        )
    }
}

/// The namespace a `mongos`'s explain names in its first shard's entry.
fn shard_namespace(planner: Option<&Document>) -> Option<&str> {
    planner?
        .get_document("winningPlan")
        .ok()?
        .get_array("shards")
        .ok()?
        .first()?
        .as_document()?
        .get_str("namespace")
        .ok()
}

/// What a walk down an explain document's stage tree found.
struct Walked {
    access: Access,
    /// A blocking `SORT` stage above the access.
    sorted: bool,
    /// Whether a stage fetched documents (`FETCH`, or a scan of the collection itself).
    fetched: bool,
}

impl Walked {
    fn of(tree: &Document) -> Walked {
        let mut walked = Walked {
            access: Access::CollectionScan,
            sorted: false,
            fetched: false,
        };
        walked.access = walked.walk(tree, 0);
        walked
    }

    /// The access under `stage`; the depth bounds the walk of a hostile document.
    fn walk(&mut self, stage: &Document, depth: usize) -> Access {
        if depth > crate::nesting::MAX_INPUT_DEPTH {
            return Access::CollectionScan;
        }
        let name = stage.get_str("stage").unwrap_or_default();
        match name {
            "SORT" => self.sorted = true,
            "FETCH" | "COLLSCAN" | "CLUSTERED_IXSCAN" | "IDHACK" | "EXPRESS_IXSCAN"
            | "GEO_NEAR_2DSPHERE" | "GEO_NEAR_2D" => {
                self.fetched = true;
            }
            _ => {}
        }
        // Express stages write their key pattern as text; the `_id` index has its own name.
        let is_id_key = || {
            stage
                .get_str("indexName")
                .is_ok_and(|n| n == crate::ID_INDEX_NAME)
                || stage
                    .get_document("keyPattern")
                    .is_ok_and(|k| k.len() == 1 && k.contains_key("_id"))
        };
        match name {
            "COLLSCAN" | "CLUSTERED_IXSCAN" => return Access::CollectionScan,
            "IDHACK" | "EXPRESS_CLUSTERED_IXSCAN" => return Access::IdLookup { ids: Vec::new() },
            "EXPRESS_IXSCAN" if is_id_key() => return Access::IdLookup { ids: Vec::new() },
            "IXSCAN" | "EXPRESS_IXSCAN" => {
                let bounds = stage
                    .get_document("indexBounds")
                    .map(|bounds| {
                        bounds
                            .iter()
                            .map(|(path, value)| {
                                let text = match value {
                                    bson::Bson::String(text) => text.clone(),
                                    bson::Bson::Array(intervals) => intervals
                                        .iter()
                                        .map(|i| {
                                            i.as_str().map_or_else(|| i.to_string(), str::to_owned)
                                        })
                                        .collect::<Vec<_>>()
                                        .join(", "),
                                    other => other.to_string(),
                                };
                                (path.clone(), super::plan::FieldBounds::reported(text))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                return Access::IndexScan(super::plan::IndexScan {
                    index: stage.get_str("indexName").unwrap_or_default().to_owned(),
                    intervals: Vec::new(),
                    reverse: stage.get_str("direction").is_ok_and(|d| d == "backward"),
                    bounds,
                    multikey: stage.get_bool("isMultiKey").unwrap_or(false),
                    described: super::plan::IndexDescription {
                        key_pattern: stage
                            .get_document("keyPattern")
                            .cloned()
                            .unwrap_or_default(),
                        partial: stage.get_bool("isPartial").unwrap_or(false),
                        sparse: stage.get_bool("isSparse").unwrap_or(false),
                        unique: stage.get_bool("isUnique").unwrap_or(false),
                    },
                });
            }
            "OR" => {
                let branches = stage
                    .get_array("inputStages")
                    .map(|inputs| {
                        inputs
                            .iter()
                            .filter_map(bson::Bson::as_document)
                            .map(|input| {
                                let access = self.walk(input, depth + 1);
                                Walked {
                                    access,
                                    sorted: false,
                                    fetched: false,
                                }
                                .plan(false)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                return Access::Or(branches);
            }
            _ => {}
        }
        if let Ok(input) = stage.get_document("inputStage") {
            return self.walk(input, depth + 1);
        }
        // Stages over several inputs other than `OR` (a sort merge): the first stands for them.
        match stage
            .get_array("inputStages")
            .ok()
            .and_then(|inputs| inputs.first())
            .and_then(bson::Bson::as_document)
        {
            Some(input) => self.walk(input, depth + 1),
            None => Access::CollectionScan,
        }
    }

    /// Covered: an index answered without a document being fetched.
    fn covered(&self) -> bool {
        !self.fetched && matches!(self.access, Access::IndexScan(_))
    }

    fn plan(&self, from_cache: bool) -> Plan {
        Plan {
            access: self.access.clone(),
            provides_sort: !self.sorted,
            rank: super::plan::Rank {
                id_lookup: matches!(self.access, Access::IdLookup { .. }),
                point_fields: 0,
                range: false,
                provides_sort: !self.sorted,
                narrower: 0,
            },
            from_cache,
        }
    }
}
