//! Update, replace, delete, find-and-modify and bulk operations inside a write transaction.
//!
//! Every operation first selects its documents with the query engine over the transaction's
//! own tables (it sees the transaction's earlier writes), then computes each new document, then
//! writes. Rules, MongoDB's unless noted:
//! - An update applies all its operators to a document or none (S0.3); an update that changes
//!   nothing is matched but not modified and writes nothing.
//! - `_id` cannot change.
//! - Upsert: when nothing matches, the query's equality fields seed a new document, the update
//!   (with `$setOnInsert`) applies to it, and it is inserted; a replacement takes the query's
//!   `_id` when it has none.
//! - `update_many` is all or nothing by default, which MongoDB cannot offer: a document that
//!   fails (a unique index violation, `$inc` on a string) undoes the documents updated before
//!   it and the call fails, leaving the collection as before. With
//!   [`UpdateOptions::stop_at_first_error`] it behaves as MongoDB does: the documents updated
//!   before the failure stay updated and [`Error::UpdateStopped`] lists them.
//! - Bulk writes run their operations in order, each one whole or not at all; ordered bulks stop
//!   at the first failure, unordered ones go on; the result says what each did. A bulk write
//!   may name a collection per operation (`bulk_write_across`, MongoDB's client-level bulk
//!   write). An interruption (see [`crate::interrupt`]) ends any bulk at the operation it
//!   stopped, which changed nothing, and is its last failure; the operations before it stay,
//!   as MongoDB keeps them.
//!
//! Selection runs through a query `Cursor`, except when the plan is a lookup of one `_id` (no
//! hint, no collated string `_id`): that document is read by its key and judged by the whole
//! filter, with no cursor to build.

use std::borrow::Cow;
use std::sync::Arc;

use bson::{Bson, Document, RawDocument, RawDocumentBuf, oid::ObjectId};

use super::apply::Context;
use super::parse::{Operators, Update, UpdateModifications, error};
use super::upsert::{Seeding, seed};
use crate::catalog::CollectionMeta;
use crate::changes::record::Rewrite;
use crate::collection::Writer;
use crate::db::WriteTxn;
use crate::error::UpdateError;
use crate::error::{Error, Result};
use crate::expr::Scope;
use crate::keys;
use crate::query::{Cursor, Decode, Query, QueryOptions, Source, WriteView, choose_plan};

/// Options of [`WriteTxn::update_one`], [`WriteTxn::update_many`] and
/// [`WriteTxn::replace_one`].
#[derive(Debug, Clone, Default)]
pub struct UpdateOptions {
    /// Insert a document when nothing matches.
    pub upsert: bool,
    /// The filters of `$[identifier]` paths, one per identifier.
    pub array_filters: Vec<Document>,
    /// Forces a plan, as in a find.
    pub hint: Option<Bson>,
    /// `update_one` and `replace_one`: which matching document, the first in this order.
    pub sort: Option<Document>,
    /// `update_many` only: MongoDB's behaviour (keep the documents updated before a failure)
    /// instead of all or nothing.
    pub stop_at_first_error: bool,
    /// Variables that `$expr` in the filter and a pipeline update name as `$$name`.
    pub let_vars: Option<Document>,
    /// How strings compare in the filter and the sort (see [`crate::collation`]).
    pub collation: Option<Document>,
}

/// Options of [`WriteTxn::delete_one_with`] and [`WriteTxn::delete_many_with`].
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Forces a plan, as in a find.
    pub hint: Option<Bson>,
    /// Variables that `$expr` in the filter names as `$$name`.
    pub let_vars: Option<Document>,
    /// How strings compare in the filter (see [`crate::collation`]).
    pub collation: Option<Document>,
}

impl UpdateOptions {
    /// The options as the query of an update reads them; `limit`: `Some(1)` for an update of
    /// one document, `None` for several (which takes no sort).
    fn query_options(&self, limit: Option<u64>) -> QueryOptions<'_> {
        QueryOptions {
            sort: self.sort.as_ref().filter(|_| limit.is_some()),
            collation: self.collation.as_ref(),
            let_vars: self.let_vars.as_ref(),
            hint: self.hint.as_ref(),
            limit,
            ..QueryOptions::default()
        }
    }
}

impl DeleteOptions {
    fn query_options(&self, limit: Option<u64>) -> QueryOptions<'_> {
        QueryOptions {
            collation: self.collation.as_ref(),
            let_vars: self.let_vars.as_ref(),
            hint: self.hint.as_ref(),
            limit,
            ..QueryOptions::default()
        }
    }
}

impl FindAndModify {
    fn query_options(&self) -> QueryOptions<'_> {
        QueryOptions {
            sort: self.sort.as_ref(),
            projection: self.projection.as_ref(),
            collation: self.collation.as_ref(),
            let_vars: self.let_vars.as_ref(),
            hint: self.hint.as_ref(),
            limit: Some(1),
            ..QueryOptions::default()
        }
    }
}

/// What an update or replace did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateResult {
    pub matched: u64,
    pub modified: u64,
    /// The `_id` of the document an upsert inserted.
    pub upserted_id: Option<Bson>,
}

/// Which version of the document a find-and-modify returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReturnDocument {
    #[default]
    Before,
    After,
}

/// Options of the `find_one_and_*` operations.
#[derive(Debug, Clone, Default)]
pub struct FindAndModify {
    /// Which matching document is modified: the first in this order.
    pub sort: Option<Document>,
    /// Applied to the returned document.
    pub projection: Option<Document>,
    pub upsert: bool,
    pub return_document: ReturnDocument,
    pub array_filters: Vec<Document>,
    pub hint: Option<Bson>,
    /// Variables that `$expr` in the filter and a pipeline update name as `$$name`.
    pub let_vars: Option<Document>,
    /// How strings compare in the filter and the sort (see [`crate::collation`]).
    pub collation: Option<Document>,
}

/// What [`WriteTxn::find_and_modify`] does to the document it finds.
#[derive(Debug, Clone)]
pub enum Modify {
    /// Update operators, or a pipeline.
    Update(UpdateModifications),
    /// A whole new document (`_id` kept).
    Replace(Document),
    Delete,
}

/// What [`WriteTxn::find_and_modify`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Modified {
    /// The document before or after (as asked), projected; `None` when none matched, or when
    /// an upsert inserted and the document before was asked for.
    pub value: Option<Document>,
    /// Whether a document matched (and was updated, replaced or deleted).
    pub matched: bool,
    /// The `_id` of the document an upsert inserted.
    pub upserted_id: Option<Bson>,
}

/// One operation of a bulk write.
#[derive(Debug, Clone)]
pub enum WriteOp {
    InsertOne(Document),
    UpdateOne {
        filter: Document,
        update: UpdateModifications,
        options: UpdateOptions,
    },
    UpdateMany {
        filter: Document,
        update: UpdateModifications,
        options: UpdateOptions,
    },
    ReplaceOne {
        filter: Document,
        replacement: Document,
        options: UpdateOptions,
    },
    DeleteOne {
        filter: Document,
        options: DeleteOptions,
    },
    DeleteMany {
        filter: Document,
        options: DeleteOptions,
    },
}

/// A bulk write's operations and whether they are ordered.
#[derive(Debug, Clone, Default)]
pub struct BulkWrite {
    pub ops: Vec<WriteOp>,
    /// Stop at the first failing operation (otherwise go on).
    pub ordered: bool,
    /// Variables for every operation's `$expr` and pipeline (`$$name`); an operation's own
    /// `let_vars` come first.
    pub let_vars: Option<Document>,
}

/// What a bulk write did; positions are indexes into its operations.
#[derive(Debug, Default)]
pub struct BulkResult {
    pub inserted: u64,
    pub matched: u64,
    pub modified: u64,
    pub deleted: u64,
    pub upserted: u64,
    pub inserted_ids: Vec<(usize, Bson)>,
    pub upserted_ids: Vec<(usize, Bson)>,
    /// The failing operations and their errors; an ordered bulk has at most one.
    pub failures: Vec<(usize, Error)>,
    /// What each operation that succeeded did, by position (MongoDB's verbose results).
    pub results: Vec<(usize, OpResult)>,
}

/// One operation's own result in a bulk write.
#[derive(Debug, Clone, PartialEq)]
pub enum OpResult {
    Inserted(Bson),
    Updated(UpdateResult),
    Deleted(u64),
}

/// A replacement document, refused when it holds update operators.
fn replacement_of(replacement: Document) -> Result<Update> {
    if let Some(key) = replacement.keys().find(|k| k.starts_with('$')) {
        return Err(error(
            key,
            "replace",
            "a replacement document cannot hold update operators",
        )
        .into());
    }
    Ok(Update::Replacement(replacement))
}

/// A matched document: its encoded `_id` and its bytes.
type Selected = (Vec<u8>, RawDocumentBuf);

/// What a selection keeps of a document that needs its bytes (updates, find-and-modify).
fn keep_all(key: Vec<u8>, doc: RawDocumentBuf) -> Selected {
    (key, doc)
}

impl WriteTxn<'_> {
    /// Applies an update (a document of operators, or a pipeline) to the first document
    /// matching `filter`.
    pub fn update_one(
        &mut self,
        collection: &str,
        filter: &Document,
        update: impl Into<UpdateModifications>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let scope = Scope::with_let(options.let_vars.as_ref())?;
        let update = Update::parse_modifications(&update.into(), &options.array_filters, &scope)?;
        self.update_with(collection, filter, &update, options, Some(1))
    }

    /// Applies an update document (operators only) to every document matching `filter`; all or
    /// nothing unless [`UpdateOptions::stop_at_first_error`].
    pub fn update_many(
        &mut self,
        collection: &str,
        filter: &Document,
        update: impl Into<UpdateModifications>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let scope = Scope::with_let(options.let_vars.as_ref())?;
        let update = Update::parse_modifications(&update.into(), &options.array_filters, &scope)?;
        self.update_with(collection, filter, &update, options, None)
    }

    /// [`WriteTxn::update_one`] with an update parsed once ([`Update::parse_modifications`]),
    /// for the same update applied to many documents one call at a time: each call then skips
    /// the parse. The update keeps the array filters it was parsed with, so
    /// `options.array_filters` must be empty (`let_vars` still serve the filter); a
    /// replacement is refused, as `update_one` refuses one (see `replace_one`).
    pub fn update_one_parsed(
        &mut self,
        collection: &str,
        filter: &Document,
        update: &Update,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.update_parsed(collection, filter, update, options, Some(1))
    }

    /// [`WriteTxn::update_many`] with an update parsed once; see
    /// [`WriteTxn::update_one_parsed`].
    pub fn update_many_parsed(
        &mut self,
        collection: &str,
        filter: &Document,
        update: &Update,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.update_parsed(collection, filter, update, options, None)
    }

    /// [`WriteTxn::update_one_parsed`] of the document stored under the `_id` `id`, judged by
    /// `conditions` (a query without a top-level `_id` condition): the plan the filter
    /// `{_id: id}` would get (see `by_id`), without parsing or planning a filter.
    pub(super) fn update_parsed_by_key(
        &mut self,
        collection: &str,
        id: bson::RawBson,
        conditions: &Query,
        update: &Update,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        not_a_replacement(update)?;
        parsed_alone(options)?;
        let Some(meta) = self.collection_meta(collection, false)? else {
            return Ok(UpdateResult::default());
        };
        // As `plan_over_own_writes` does, so that the writer starts from the same tables.
        self.flush_index_writes_of(meta.id)?;
        let plan = crate::query::id_lookup_plan(vec![id]);
        self.db.shared.plan_cache.used(&meta, &plan);
        let updated =
            self.with_planned_selection(&meta, conditions, plan, keep_all, |writer, selected| {
                if selected.is_empty() {
                    return Ok(None);
                }
                apply_update(writer, selected, conditions, update, options).map(Some)
            })?;
        Ok(updated.unwrap_or_default())
    }

    /// The parsed updates' checks, then [`WriteTxn::update_with`].
    fn update_parsed(
        &mut self,
        collection: &str,
        filter: &Document,
        update: &Update,
        options: &UpdateOptions,
        limit: Option<u64>,
    ) -> Result<UpdateResult> {
        not_a_replacement(update)?;
        parsed_alone(options)?;
        self.update_with(collection, filter, update, options, limit)
    }

    /// Replaces the first document matching `filter` with `replacement` (keeping its `_id`).
    pub fn replace_one(
        &mut self,
        collection: &str,
        filter: &Document,
        replacement: &Document,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let update = replacement_of(replacement.clone())?;
        self.update_with(collection, filter, &update, options, Some(1))
    }

    /// Deletes the first document matching `filter`; returns how many were deleted (0 or 1).
    pub fn delete_one(&mut self, collection: &str, filter: &Document) -> Result<u64> {
        self.delete_matching(collection, filter, &DeleteOptions::default(), Some(1))
    }

    /// Deletes every document matching `filter`; returns how many.
    pub fn delete_many(&mut self, collection: &str, filter: &Document) -> Result<u64> {
        self.delete_matching(collection, filter, &DeleteOptions::default(), None)
    }

    /// [`WriteTxn::delete_one`] with a hint and `let` variables.
    pub fn delete_one_with(
        &mut self,
        collection: &str,
        filter: &Document,
        options: &DeleteOptions,
    ) -> Result<u64> {
        self.delete_matching(collection, filter, options, Some(1))
    }

    /// [`WriteTxn::delete_many`] with a hint and `let` variables.
    pub fn delete_many_with(
        &mut self,
        collection: &str,
        filter: &Document,
        options: &DeleteOptions,
    ) -> Result<u64> {
        self.delete_matching(collection, filter, options, None)
    }

    /// Updates the first document matching `filter` (in `options.sort` order) and returns it,
    /// before or after the update.
    pub fn find_one_and_update(
        &mut self,
        collection: &str,
        filter: &Document,
        update: impl Into<UpdateModifications>,
        options: &FindAndModify,
    ) -> Result<Option<Document>> {
        Ok(self
            .find_and_modify(collection, filter, Modify::Update(update.into()), options)?
            .value)
    }

    /// Replaces the first document matching `filter` and returns it, before or after.
    pub fn find_one_and_replace(
        &mut self,
        collection: &str,
        filter: &Document,
        replacement: &Document,
        options: &FindAndModify,
    ) -> Result<Option<Document>> {
        Ok(self
            .find_and_modify(
                collection,
                filter,
                Modify::Replace(replacement.clone()),
                options,
            )?
            .value)
    }

    /// Deletes the first document matching `filter` and returns it.
    pub fn find_one_and_delete(
        &mut self,
        collection: &str,
        filter: &Document,
        options: &FindAndModify,
    ) -> Result<Option<Document>> {
        Ok(self
            .find_and_modify(collection, filter, Modify::Delete, options)?
            .value)
    }

    /// MongoDB's `findAndModify`: updates, replaces or deletes the first document matching
    /// `filter` (in `options.sort` order) and tells what happened, as the command's
    /// `lastErrorObject` does, with the document before or after.
    pub fn find_and_modify(
        &mut self,
        collection: &str,
        filter: &Document,
        action: Modify,
        options: &FindAndModify,
    ) -> Result<Modified> {
        let update = match action {
            Modify::Update(update) => {
                let scope = Scope::with_let(options.let_vars.as_ref())?;
                Some(Update::parse_modifications(
                    &update,
                    &options.array_filters,
                    &scope,
                )?)
            }
            Modify::Replace(replacement) => Some(replacement_of(replacement)?),
            Modify::Delete => None,
        };
        self.modify_first(collection, filter, update.as_ref(), options)
    }

    /// The documents matching `filter` in `sort` order, at most `limit`, read from this
    /// transaction's own tables, so that its earlier writes count.
    pub fn find(
        &mut self,
        collection: &str,
        filter: &Document,
        sort: Option<&Document>,
        limit: Option<u64>,
    ) -> Result<Vec<Document>> {
        let query = Query::parse(
            filter,
            QueryOptions {
                sort,
                limit,
                ..QueryOptions::default()
            },
        )?;
        let Some(meta) = self.collection_meta(collection, false)? else {
            return Ok(Vec::new());
        };
        let query = query.under(&meta)?;
        let found = self.with_selection(&meta, &query, keep_all, |_, selected| Ok(selected))?;
        found
            .into_iter()
            .map(|(_, raw)| {
                Document::try_from(raw.as_ref())
                    .map_err(|e| Error::corrupt(format!("collection `{collection}`"), e))
            })
            .collect()
    }

    /// A find with every option of [`FindOptions`](crate::query::FindOptions) (projection,
    /// skip, collation, hint, `let`), read from this transaction's own tables so that its
    /// earlier writes count; each result's bytes.
    pub fn find_with(
        &mut self,
        collection: &str,
        filter: &Document,
        options: &crate::query::FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        let _entered = options
            .interrupt
            .as_ref()
            .map(crate::interrupt::Interrupt::enter);
        let query = Query::parse(filter, options.query_options())?;
        let Some(meta) = self.collection_meta(collection, false)? else {
            return Ok(Vec::new());
        };
        let query = query.under(&meta)?;
        let plan = self.plan_over_own_writes(&meta, &query)?;
        let view = WriteView::open(&self.tables, meta.clone(), &plan)?;
        let found: Result<Vec<RawDocumentBuf>> =
            Cursor::new(&view, plan, query, Decode::bytes())?.collect();
        view.put_back(&self.tables);
        found
    }

    /// MongoDB's `distinct` inside this transaction: the distinct values of `key` among the
    /// documents matching `filter`, the transaction's own writes included (see
    /// [`ReadCollection::distinct_hinted`](crate::ReadCollection::distinct_hinted)).
    pub fn distinct_within(
        &mut self,
        collection: &str,
        key: &str,
        filter: &Document,
        options: &crate::query::FindOptions,
    ) -> Result<Vec<Bson>> {
        let query = Query::parse(filter, options.query_options())?;
        let Some(meta) = self.collection_meta(collection, false)? else {
            return Ok(Vec::new());
        };
        let query = query.under(&meta)?;
        let plan = self.plan_over_own_writes(&meta, &query)?;
        let view = WriteView::open(&self.tables, meta.clone(), &plan)?;
        let values = crate::query::distinct_values(&view, &plan, &query, key);
        view.put_back(&self.tables);
        values
    }

    /// [`WriteTxn::find_with`] holding at most `max_bytes` of results: past them it stops
    /// reading and fails with MongoDB's 146 (`ExceededMemoryLimit`), so a find inside a
    /// transaction never gathers more than its caller can keep.
    pub fn find_within(
        &mut self,
        collection: &str,
        filter: &Document,
        options: &crate::query::FindOptions,
        max_bytes: usize,
    ) -> Result<Vec<RawDocumentBuf>> {
        let query = Query::parse(filter, options.query_options())?;
        let Some(meta) = self.collection_meta(collection, false)? else {
            return Ok(Vec::new());
        };
        let query = query.under(&meta)?;
        let plan = self.plan_over_own_writes(&meta, &query)?;
        let view = WriteView::open(&self.tables, meta.clone(), &plan)?;
        let gather = |cursor: Cursor<'_, RawDocumentBuf>| {
            let mut held = 0usize;
            let mut found = Vec::new();
            for doc in cursor {
                let doc = doc?;
                held += doc.as_bytes().len();
                if held > max_bytes {
                    return Err(Error::from(
                        crate::expr::error(
                            "find",
                            format!(
                                "the results of a find inside a transaction would hold more than {max_bytes} bytes"
                            ),
                        )
                        .with_code(crate::ErrorCode::EXCEEDED_MEMORY_LIMIT),
                    ));
                }
                found.push(doc);
            }
            Ok(found)
        };
        let found = Cursor::new(&view, plan, query, Decode::bytes()).and_then(gather);
        view.put_back(&self.tables);
        found
    }

    /// How many documents match, after the options' skip and within their limit, read from
    /// this transaction's own tables; counted as they are found, holding none of them.
    pub fn count_with(
        &mut self,
        collection: &str,
        filter: &Document,
        options: &crate::query::FindOptions,
    ) -> Result<u64> {
        let query = Query::parse(filter, options.query_options())?;
        let Some(meta) = self.collection_meta(collection, false)? else {
            return Ok(0);
        };
        let query = query.under(&meta)?;
        let plan = self.plan_over_own_writes(&meta, &query)?;
        let view = WriteView::open(&self.tables, meta.clone(), &plan)?;
        let decode = Decode {
            raw: |_: &str, _: &bson::RawDocument, _| Ok(()),
            projected: |_: &str, _: Document, _| Ok(()),
            id_field: None,
        };
        let counted = Cursor::new(&view, plan, query, decode)
            .and_then(|mut cursor| cursor.try_fold(0u64, |n, found| found.map(|()| n + 1)));
        view.put_back(&self.tables);
        counted
    }

    /// The first document matching `filter` in `sort` order; see [`WriteTxn::find`].
    pub fn find_one(
        &mut self,
        collection: &str,
        filter: &Document,
        sort: Option<&Document>,
    ) -> Result<Option<Document>> {
        Ok(self
            .find(collection, filter, sort, Some(1))?
            .into_iter()
            .next())
    }

    /// Runs a bulk write; see the module documentation. Storage errors end it with `Err`.
    pub fn bulk_write(&mut self, collection: &str, bulk: BulkWrite) -> Result<BulkResult> {
        let BulkWrite {
            ops,
            ordered,
            let_vars,
        } = bulk;
        let ops = ops
            .into_iter()
            .map(|op| (collection.to_owned(), op))
            .collect();
        self.bulk_write_across(ops, ordered, let_vars.as_ref())
    }

    /// A bulk write whose operations each name their collection (MongoDB's client-level bulk
    /// write), with the same rules as [`WriteTxn::bulk_write`].
    pub fn bulk_write_across(
        &mut self,
        ops: Vec<(String, WriteOp)>,
        ordered: bool,
        let_vars: Option<&Document>,
    ) -> Result<BulkResult> {
        let mut result = BulkResult::default();
        let with_let = |mut options: UpdateOptions| {
            if options.let_vars.is_none() {
                options.let_vars = let_vars.cloned();
            }
            options
        };
        let delete_with_let = |mut options: DeleteOptions| {
            if options.let_vars.is_none() {
                options.let_vars = let_vars.cloned();
            }
            options
        };
        for (position, (collection, op)) in ops.into_iter().enumerate() {
            let collection = collection.as_str();
            if let Err(stopped) = crate::interrupt::check() {
                result.failures.push((position, stopped.into()));
                break;
            }
            let outcome = match op {
                WriteOp::InsertOne(doc) => {
                    self.insert_one(collection, &doc).map(OpResult::Inserted)
                }
                WriteOp::UpdateOne {
                    filter,
                    update,
                    options,
                } => self
                    .update_one(collection, &filter, update, &with_let(options))
                    .map(OpResult::Updated),
                WriteOp::UpdateMany {
                    filter,
                    update,
                    options,
                } => self
                    .update_many(collection, &filter, update, &with_let(options))
                    .map(OpResult::Updated),
                WriteOp::ReplaceOne {
                    filter,
                    replacement,
                    options,
                } => self
                    .replace_one(collection, &filter, &replacement, &with_let(options))
                    .map(OpResult::Updated),
                WriteOp::DeleteOne { filter, options } => self
                    .delete_one_with(collection, &filter, &delete_with_let(options))
                    .map(OpResult::Deleted),
                WriteOp::DeleteMany { filter, options } => self
                    .delete_many_with(collection, &filter, &delete_with_let(options))
                    .map(OpResult::Deleted),
            };
            match outcome {
                Ok(done) => result.record(position, done),
                // As MongoDB: an interruption ends the batch, what the statements before it
                // did stays (the interrupted one changed nothing), and the caller reports it.
                Err(e) if e.is_interruption() => {
                    result.failures.push((position, e));
                    break;
                }
                Err(e) if e.is_per_document() => {
                    result.failures.push((position, e));
                    if ordered {
                        break;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(result)
    }

    /// Selects the documents `query` matches (at most its limit, in its sort order) from this
    /// transaction's tables, keeping of each what `keep` makes of its encoded `_id` and bytes
    /// (a delete keeps the `_id` alone, so that memory never holds every matched document), then
    /// runs `work` with them and a writer over the same open tables. The query's projection is
    /// the caller's to apply.
    fn with_selection<S, R>(
        &mut self,
        meta: &Arc<CollectionMeta>,
        query: &Query,
        keep: impl Fn(Vec<u8>, RawDocumentBuf) -> S,
        work: impl FnOnce(&mut Writer<'_, '_>, Vec<S>) -> Result<R>,
    ) -> Result<R> {
        let plan = self.plan_over_own_writes(meta, query)?;
        self.with_planned_selection(meta, query, plan, keep, work)
    }

    /// [`WriteTxn::with_selection`] by a plan already chosen (and its index uses counted),
    /// over tables that hold this transaction's buffered index changes.
    fn with_planned_selection<S, R>(
        &mut self,
        meta: &Arc<CollectionMeta>,
        query: &Query,
        plan: crate::query::Plan,
        keep: impl Fn(Vec<u8>, RawDocumentBuf) -> S,
        work: impl FnOnce(&mut Writer<'_, '_>, Vec<S>) -> Result<R>,
    ) -> Result<R> {
        let view = WriteView::open(&self.tables, meta.clone(), &plan)?;
        let mut selected = Vec::new();
        let no_id = || view.corrupt("a document has no _id");
        if let Some(id) = plan.single_id().filter(|_| query.skip == 0) {
            // One `_id` named exactly (the usual write by `_id`): its document is read by key
            // and judged by the whole filter, as the cursor would judge it, without one. (At
            // most one document: no order to keep, no limit to count.) The key is the one the
            // document is stored under; equal numbers of any type encode alike.
            let key = keys::encode(id.as_raw_bson_ref());
            if let Some(stored) = view.document(&key)? {
                let doc = RawDocument::from_bytes(stored.value())
                    .map_err(|e| view.corrupt(&e.to_string()))?;
                if query.matches(doc)? {
                    crate::raw::get(doc, "_id")
                        .ok()
                        .flatten()
                        .ok_or_else(no_id)?;
                    selected.push(keep(key, doc.to_owned()));
                }
            }
        } else {
            let selecting = Query {
                projection: None,
                ..query.clone()
            };
            for doc in Cursor::new(&view, plan, selecting, Decode::bytes())? {
                let doc = doc?;
                let id = doc.get("_id").ok().flatten().ok_or_else(no_id)?;
                selected.push(keep(keys::encode(id), doc));
            }
        }
        let delta_min = self.db.merge_threshold();
        let mut writer = Writer::from_view(
            view,
            &self.tables,
            &mut self.pending,
            &mut self.changes,
            !self.bypass_validation,
        )?;
        let result = work(&mut writer, selected);
        let applied = writer.apply_staged_to_open_indexes(delta_min);
        let newly_multikey = writer.finish();
        self.mark_multikey(&meta.name, &newly_multikey);
        applied?;
        result
    }

    /// The plan of `query` over this transaction's tables, once they hold its buffered index
    /// changes (a read must see the transaction's own writes).
    fn plan_over_own_writes(
        &mut self,
        meta: &Arc<CollectionMeta>,
        query: &Query,
    ) -> Result<crate::query::Plan> {
        self.flush_index_writes_of(meta.id)?;
        choose_plan(meta, &self.db.shared.plan_cache, query)
    }

    fn update_with(
        &mut self,
        collection: &str,
        filter: &Document,
        update: &Update,
        options: &UpdateOptions,
        limit: Option<u64>,
    ) -> Result<UpdateResult> {
        let query = Query::parse(filter, options.query_options(limit))?;
        // MongoDB takes `sort` for an update of one document (which one it picks); for several
        // it would mean nothing, and is refused rather than ignored.
        if limit.is_none() && options.sort.is_some() {
            return Err(error(
                "",
                "sort",
                "`sort` applies to an update of one document, not to update_many",
            )
            .with_code(crate::code::ErrorCode::FAILED_TO_PARSE)
            .into());
        }
        let bounded = limit.is_none() && !options.stop_at_first_error;
        let meta = self.collection_meta(collection, false)?;
        let query = match &meta {
            Some(meta) => query.under(meta)?,
            None => query,
        };
        let matched = match meta {
            // Several documents, all or nothing: the selection keeps their ids alone.
            Some(meta) if bounded => self.with_selection(
                &meta,
                &query,
                |key, _| key,
                |writer, ids| {
                    if ids.is_empty() {
                        return Ok(None);
                    }
                    update_all_or_nothing(writer, &ids, &query, update).map(Some)
                },
            )?,
            Some(meta) => self.with_selection(&meta, &query, keep_all, |writer, selected| {
                if selected.is_empty() {
                    return Ok(None);
                }
                apply_update(writer, selected, &query, update, options).map(Some)
            })?,
            None => None,
        };
        if let Some(result) = matched {
            return Ok(result);
        }
        if !options.upsert {
            return Ok(UpdateResult::default());
        }
        let doc = upserted(filter, &query, update)?;
        let id = self.insert_one(collection, &doc)?;
        Ok(UpdateResult {
            matched: 0,
            modified: 0,
            upserted_id: Some(id),
        })
    }

    fn delete_matching(
        &mut self,
        collection: &str,
        filter: &Document,
        options: &DeleteOptions,
        limit: Option<u64>,
    ) -> Result<u64> {
        let query = Query::parse(filter, options.query_options(limit))?;
        let Some(meta) = self.collection_meta(collection, false)? else {
            return Ok(0);
        };
        let query = query.under(&meta)?;
        let ids_only = |key, _| key;
        self.with_selection(&meta, &query, ids_only, |writer, selected| {
            let mut deleted = 0;
            for key in &selected {
                if writer.delete(key)?.is_some() {
                    deleted += 1;
                }
            }
            Ok(deleted)
        })
    }

    fn modify_first(
        &mut self,
        collection: &str,
        filter: &Document,
        update: Option<&Update>,
        options: &FindAndModify,
    ) -> Result<Modified> {
        let query = Query::parse(filter, options.query_options())?;
        let meta = self.collection_meta(collection, false)?;
        let query = match &meta {
            Some(meta) => query.under(meta)?,
            None => query,
        };
        let found = match meta {
            Some(meta) => self.with_selection(&meta, &query, keep_all, |writer, selected| {
                let Some((key, original)) = selected.into_iter().next() else {
                    return Ok(None);
                };
                let Some(update) = update else {
                    writer.delete(&key)?;
                    return Ok(Some(original));
                };
                let new = updated_document(&original, &query, update, bson::DateTime::now())?;
                if let Some(new) = &new {
                    writer.replace_updated(&key, &original, Cow::Borrowed(new), update)?;
                }
                Ok(Some(match options.return_document {
                    ReturnDocument::Before => original,
                    ReturnDocument::After => new.map_or(original, |n| n.doc),
                }))
            })?,
            None => None,
        };
        let matched = found.is_some();
        let mut upserted_id = None;
        let returned = match (found, update) {
            (Some(doc), _) => Some(doc),
            (None, Some(update)) if options.upsert => {
                let doc = upserted(filter, &query, update)?;
                let id = self.insert_one(collection, &doc)?;
                upserted_id = Some(id.clone());
                match options.return_document {
                    ReturnDocument::Before => None,
                    ReturnDocument::After => self.get(collection, &id)?,
                }
            }
            (None, _) => None,
        };
        let corrupt = |e: String| Error::corrupt(format!("collection `{collection}`"), e);
        let value = match (returned, &query.projection) {
            (None, _) => None,
            (Some(raw), Some(p)) => Some(
                p.apply(&raw, &query)
                    .map_err(|e| e.into_error(collection))?,
            ),
            (Some(raw), None) => {
                Some(Document::try_from(raw.as_ref()).map_err(|e| corrupt(e.to_string()))?)
            }
        };
        Ok(Modified {
            value,
            matched,
            upserted_id,
        })
    }
}

/// Applies an update to the selected documents through `writer`; see the module
/// documentation for the all-or-nothing and stop-at-first-error modes.
/// Updates every document of `ids`, or none: memory holds the ids, not the documents.
///
/// A first pass computes each new document and checks it against every rule that depends on it
/// alone, writing nothing; so the second pass, which writes, can only be refused by a unique
/// index (a key another document holds at that moment). Only then must the documents written
/// before be put back: a collection with a unique index keeps the originals it replaces in the
/// transaction's undo table, on disk rather than in memory, and drops the table when done.
fn update_all_or_nothing(
    writer: &mut Writer<'_, '_>,
    ids: &[Vec<u8>],
    query: &Query,
    update: &Update,
) -> Result<UpdateResult> {
    let now = bson::DateTime::now();
    for key in ids {
        let original = read_selected(writer, key)?;
        if let Some(new) = updated_document(&original, query, update, now)? {
            writer.check_updated(new, update)?;
        }
    }
    let mut undo = if writer.has_unique_index() {
        Some(writer.undo_table()?)
    } else {
        None
    };
    let mut modified = 0;
    let mut failure = None;
    let mark = writer.change_mark();
    // The documents replaced, in the order they were: undone in the reverse order, each undo
    // returns to a state that held before (restoring in another order could make a restored
    // value collide, in a unique index, with a later document's new one).
    let mut applied: Vec<&[u8]> = Vec::new();
    for key in ids {
        let original = read_selected(writer, key)?;
        let Some(new) = updated_document(&original, query, update, now)? else {
            continue;
        };
        if let Err(e) = writer.replace_updated(key, &original, Cow::Owned(new), update) {
            failure = Some(e);
            break;
        }
        modified += 1;
        if let Some(undo) = &mut undo {
            undo.insert(key.as_slice(), original.as_bytes())?;
            applied.push(key);
        }
    }
    if let Some(undo) = undo {
        if failure.is_some() {
            for key in applied.into_iter().rev() {
                let original = redb::ReadableTable::get(&undo, key)?.ok_or_else(|| {
                    Error::corrupt("the undo table", "a replaced document is missing")
                })?;
                let original = RawDocumentBuf::from_bytes(original.value().to_vec())
                    .map_err(|e| Error::corrupt("the undo table", e))?;
                let current = read_selected(writer, key)?;
                writer.replace_known(key, &current, original, Rewrite::Replace)?;
            }
            writer.undo_changes_since(mark)?;
        }
        drop(undo);
        writer.drop_undo_table()?;
    }
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(UpdateResult {
        matched: ids.len() as u64,
        modified,
        upserted_id: None,
    })
}

/// A selected document, read again in the transaction that selected it.
fn read_selected(writer: &Writer<'_, '_>, key: &[u8]) -> Result<RawDocumentBuf> {
    writer.stored(key)?.ok_or_else(|| {
        Error::corrupt(
            format!("collection `{}`", writer.collection_name()),
            "a selected document vanished",
        )
    })
}

fn apply_update(
    writer: &mut Writer<'_, '_>,
    selected: Vec<Selected>,
    query: &Query,
    update: &Update,
    options: &UpdateOptions,
) -> Result<UpdateResult> {
    let now = bson::DateTime::now();
    let mut result = UpdateResult {
        matched: selected.len() as u64,
        ..UpdateResult::default()
    };
    if options.stop_at_first_error {
        // MongoDB's behaviour: document by document, keeping what was done.
        let mut updated = Vec::new();
        for (key, original) in &selected {
            crate::interrupt::check()?;
            let step = updated_document(original, query, update, now)
                .map_err(Error::from)
                .and_then(|new| match new {
                    Some(new) => writer
                        .replace_updated(key, original, Cow::Owned(new), update)
                        .map(|()| true),
                    None => Ok(false),
                });
            match step {
                Ok(modified) => {
                    if modified {
                        result.modified += 1;
                        updated.push(id_of(original));
                    }
                }
                Err(e) if e.is_per_document() => {
                    return Err(Error::UpdateStopped {
                        collection: writer.collection_name().to_owned(),
                        updated,
                        source: Box::new(e),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        return Ok(result);
    }
    // All or nothing: compute every new document first, then write; a write that fails puts
    // back the documents written before it.
    let mut changes = Vec::new();
    for (key, original) in &selected {
        if let Some(new) = updated_document(original, query, update, now)? {
            changes.push((key, original, new));
        }
    }
    let mark = writer.change_mark();
    for (done, (key, original, new)) in changes.iter().enumerate() {
        if let Err(e) = writer.replace_updated(key, original, Cow::Borrowed(new), update) {
            for (key, original, new) in changes[..done].iter().rev() {
                writer.replace_known(key, &new.doc, (*original).clone(), Rewrite::Replace)?;
            }
            writer.undo_changes_since(mark)?;
            return Err(e);
        }
    }
    result.modified = changes.len() as u64;
    Ok(result)
}

impl BulkResult {
    /// Counts the outcome of the operation at `position` (its ids, its counts) and keeps it.
    pub fn record(&mut self, position: usize, done: OpResult) {
        match &done {
            OpResult::Inserted(id) => {
                self.inserted += 1;
                self.inserted_ids.push((position, id.clone()));
            }
            OpResult::Updated(r) => {
                self.matched += r.matched;
                self.modified += r.modified;
                if let Some(id) = &r.upserted_id {
                    self.upserted += 1;
                    self.upserted_ids.push((position, id.clone()));
                }
            }
            OpResult::Deleted(n) => self.deleted += n,
        }
        self.results.push((position, done));
    }
}

/// The `_id` of a stored document.
fn id_of(doc: &RawDocumentBuf) -> Bson {
    doc.get("_id")
        .ok()
        .flatten()
        .and_then(|id| Bson::try_from(id).ok())
        .unwrap_or(Bson::Null)
}

/// Refuses array filters beside an update parsed in advance, which carries its own: they
/// would be silently ignored. Each back end of the typed layer checks the same.
pub fn parsed_alone(options: &UpdateOptions) -> Result<()> {
    if options.array_filters.is_empty() {
        return Ok(());
    }
    Err(error(
        "",
        "arrayFilters",
        "array filters belong to an update's parse: an update parsed in advance takes none beside it",
    )
    .with_code(crate::code::ErrorCode::FAILED_TO_PARSE)
    .into())
}

/// Refuses a replacement where an update of operators (or a pipeline) is due: an update call
/// never replaces a whole document.
fn not_a_replacement(update: &Update) -> Result<()> {
    match update {
        Update::Replacement(_) => Err(error(
            "",
            "update",
            "an update document must hold only operators (`$set`, `$inc`, ...); use replace for a whole document",
        )
        .with_code(crate::code::ErrorCode::FAILED_TO_PARSE)
        .into()),
        Update::Operators(_) | Update::Pipeline(_) => Ok(()),
    }
}

/// A document an update made.
#[derive(Debug, Clone)]
pub(crate) struct Updated {
    pub(crate) doc: RawDocumentBuf,
    /// Built on the stored bytes by splicing checked values in (see `in_place`): a valid
    /// document within the limits, its `_id` first and unchanged.
    pub(crate) spliced: bool,
}

/// The document an update turns `original` into, or `None` when it changes nothing.
fn updated_document(
    original: &RawDocumentBuf,
    query: &Query,
    update: &Update,
    now: bson::DateTime,
) -> std::result::Result<Option<Updated>, UpdateError> {
    let malformed = |e: bson::error::Error| error("", "update", e);
    let new = match update {
        Update::Replacement(replacement) => {
            let id = id_of(original);
            let mut new = Document::new();
            new.insert("_id", id.clone());
            for (k, v) in replacement {
                if k == "_id" {
                    if !same_id(&id, v) {
                        return Err(id_changed());
                    }
                    continue;
                }
                new.insert(k.clone(), v.clone());
            }
            new
        }
        Update::Operators(ops) => {
            // On the stored bytes where it can, decoded where it must: the same bytes either
            // way (see `in_place`).
            let (doc, spliced) = match super::in_place::apply(ops, original, now) {
                Some(new) => (new, true),
                None => (apply_decoded(ops, original, query, now)?, false),
            };
            return Ok((doc.as_bytes() != original.as_bytes()).then_some(Updated { doc, spliced }));
        }
        Update::Pipeline(pipeline) => pipeline.apply(
            Document::try_from(original.as_ref()).map_err(malformed)?,
            query.collation(),
        )?,
    };
    let doc = RawDocumentBuf::try_from(&new).map_err(malformed)?;
    Ok((doc.as_bytes() != original.as_bytes()).then_some(Updated {
        doc,
        spliced: false,
    }))
}

/// Operators applied to a decoded copy of `original`, encoded again.
pub(super) fn apply_decoded(
    ops: &Operators,
    original: &RawDocument,
    query: &Query,
    now: bson::DateTime,
) -> std::result::Result<RawDocumentBuf, UpdateError> {
    let malformed = |e: bson::error::Error| error("", "update", e);
    let doc = Document::try_from(original).map_err(malformed)?;
    let new = apply_operators(ops, doc, original, query, false, now)?;
    RawDocumentBuf::try_from(&new).map_err(malformed)
}

/// Applies operators to `doc`, a decoded copy of `original` (or the seed of an upsert).
fn apply_operators(
    ops: &Operators,
    mut doc: Document,
    original: &bson::RawDocument,
    query: &Query,
    inserting: bool,
    now: bson::DateTime,
) -> std::result::Result<Document, UpdateError> {
    let before = doc.get("_id").cloned();
    let ctx = Context {
        query,
        original,
        inserting,
        now,
    };
    ops.apply(&mut doc, &ctx)?;
    match (&before, doc.get("_id")) {
        (Some(before), Some(after)) if same_id(before, after) => {}
        (None, _) if inserting => {}
        _ => return Err(id_changed()),
    }
    // `_id` stays first.
    if doc.keys().next().is_some_and(|k| k != "_id")
        && let Some(id) = doc.remove("_id")
    {
        let mut ordered = Document::new();
        ordered.insert("_id", id);
        ordered.extend(doc);
        doc = ordered;
    }
    Ok(doc)
}

/// `doc` with a new ObjectId first when it has no `_id`.
fn with_new_id(doc: Document) -> Document {
    if doc.contains_key("_id") {
        return doc;
    }
    let mut with_id = Document::new();
    with_id.insert("_id", ObjectId::new());
    with_id.extend(doc);
    with_id
}

pub(crate) fn same_id(a: &Bson, b: &Bson) -> bool {
    match (
        bson::RawBson::try_from(a.clone()),
        bson::RawBson::try_from(b.clone()),
    ) {
        (Ok(a), Ok(b)) => keys::encode(a.as_raw_bson_ref()) == keys::encode(b.as_raw_bson_ref()),
        _ => false,
    }
}

fn id_changed() -> UpdateError {
    error(
        "_id",
        "update",
        "performing an update on the path `_id` would modify the immutable field `_id`",
    )
    .with_code(crate::code::ErrorCode::IMMUTABLE_FIELD)
}

/// The document an upsert inserts: the query's equality fields, then the update (or the
/// replacement with the query's `_id`).
fn upserted(filter: &Document, query: &Query, update: &Update) -> Result<Document> {
    let seeding = match update {
        Update::Replacement(_) => Seeding::IdOnly,
        Update::Operators(_) | Update::Pipeline(_) => Seeding::AllFields,
    };
    let seeded = seed(filter, seeding)?;
    let doc = match update {
        Update::Replacement(replacement) => {
            let mut doc = Document::new();
            match (replacement.get("_id"), seeded.get("_id")) {
                (Some(id), _) | (None, Some(id)) => {
                    doc.insert("_id", id.clone());
                }
                (None, None) => {}
            }
            for (k, v) in replacement {
                if k != "_id" {
                    doc.insert(k.clone(), v.clone());
                }
            }
            doc
        }
        Update::Operators(ops) => {
            let seed_raw = RawDocumentBuf::try_from(&seeded).map_err(|e| error("", "upsert", e))?;
            let doc = apply_operators(ops, seeded, &seed_raw, query, true, bson::DateTime::now())?;
            with_new_id(doc)
        }
        Update::Pipeline(pipeline) => with_new_id(pipeline.apply(seeded, query.collation())?),
    };
    Ok(doc)
}
