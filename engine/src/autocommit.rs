//! [`Collection`]: a named collection whose every call is its own immediately durable
//! transaction, for code that does not need to group writes.

use bson::{Bson, Document, RawDocumentBuf};

use crate::collection::InsertManyResult;
use crate::db::Database;
use crate::document::IntoRawDocument;
use crate::error::Result;
use crate::index::IndexSpec;
use crate::update::{
    BulkResult, BulkWrite, DeleteOptions, FindAndModify, UpdateModifications, UpdateOptions,
    UpdateResult,
};

/// A handle on one collection of a database; cheap to clone. Each method runs in a transaction
/// of its own; use [`Database::write`] to group several.
#[derive(Debug, Clone)]
pub struct Collection {
    db: Database,
    name: String,
}

impl Database {
    /// A handle on a collection; the collection is created by its first insert or index.
    pub fn collection(&self, name: &str) -> Collection {
        Collection {
            db: self.clone(),
            name: name.to_owned(),
        }
    }
}

impl Collection {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn insert_one(&self, doc: impl IntoRawDocument) -> Result<Bson> {
        self.db.write(|t| t.insert_one(&self.name, doc))
    }

    /// See [`WriteTxn::insert_many`](crate::WriteTxn::insert_many): the documents inserted
    /// before a failure are committed.
    pub fn insert_many<D: IntoRawDocument>(
        &self,
        docs: impl IntoIterator<Item = D>,
        ordered: bool,
    ) -> Result<InsertManyResult> {
        self.db.write(|t| t.insert_many(&self.name, docs, ordered))
    }

    pub fn get(&self, id: &Bson) -> Result<Option<RawDocumentBuf>> {
        let txn = self.db.read()?;
        let Some(collection) = txn.collection(&self.name)? else {
            return Ok(None);
        };
        collection
            .get(id)?
            .map(|d| d.to_raw_document_buf())
            .transpose()
    }

    pub fn replace_by_id(
        &self,
        id: &Bson,
        doc: impl IntoRawDocument,
    ) -> Result<Option<RawDocumentBuf>> {
        self.db.write(|t| t.replace_by_id(&self.name, id, doc))
    }

    pub fn delete_by_id(&self, id: &Bson) -> Result<Option<RawDocumentBuf>> {
        self.db.write(|t| t.delete_by_id(&self.name, id))
    }

    /// See [`WriteTxn::update_one`](crate::WriteTxn::update_one).
    pub fn update_one(
        &self,
        filter: &Document,
        update: impl Into<UpdateModifications>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let update = update.into();
        self.db
            .write(|t| t.update_one(&self.name, filter, update, options))
    }

    /// See [`WriteTxn::update_many`](crate::WriteTxn::update_many).
    pub fn update_many(
        &self,
        filter: &Document,
        update: impl Into<UpdateModifications>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let update = update.into();
        self.db
            .write(|t| t.update_many(&self.name, filter, update, options))
    }

    /// See [`WriteTxn::replace_one`](crate::WriteTxn::replace_one).
    pub fn replace_one(
        &self,
        filter: &Document,
        replacement: &Document,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.db
            .write(|t| t.replace_one(&self.name, filter, replacement, options))
    }

    pub fn delete_one(&self, filter: &Document) -> Result<u64> {
        self.db.write(|t| t.delete_one(&self.name, filter))
    }

    pub fn delete_many(&self, filter: &Document) -> Result<u64> {
        self.db.write(|t| t.delete_many(&self.name, filter))
    }

    /// See [`WriteTxn::delete_one_with`](crate::WriteTxn::delete_one_with).
    pub fn delete_one_with(&self, filter: &Document, options: &DeleteOptions) -> Result<u64> {
        self.db
            .write(|t| t.delete_one_with(&self.name, filter, options))
    }

    /// See [`WriteTxn::delete_many_with`](crate::WriteTxn::delete_many_with).
    pub fn delete_many_with(&self, filter: &Document, options: &DeleteOptions) -> Result<u64> {
        self.db
            .write(|t| t.delete_many_with(&self.name, filter, options))
    }

    pub fn find_one_and_update(
        &self,
        filter: &Document,
        update: impl Into<UpdateModifications>,
        options: &FindAndModify,
    ) -> Result<Option<Document>> {
        let update = update.into();
        self.db
            .write(|t| t.find_one_and_update(&self.name, filter, update, options))
    }

    pub fn find_one_and_replace(
        &self,
        filter: &Document,
        replacement: &Document,
        options: &FindAndModify,
    ) -> Result<Option<Document>> {
        self.db
            .write(|t| t.find_one_and_replace(&self.name, filter, replacement, options))
    }

    pub fn find_one_and_delete(
        &self,
        filter: &Document,
        options: &FindAndModify,
    ) -> Result<Option<Document>> {
        self.db
            .write(|t| t.find_one_and_delete(&self.name, filter, options))
    }

    /// See [`WriteTxn::bulk_write`](crate::WriteTxn::bulk_write): the operations that
    /// succeeded are committed.
    pub fn bulk_write(&self, bulk: BulkWrite) -> Result<BulkResult> {
        self.db.write(|t| t.bulk_write(&self.name, bulk))
    }

    pub fn count(&self) -> Result<u64> {
        let txn = self.db.read()?;
        txn.collection(&self.name)?.map_or(Ok(0), |c| c.len())
    }

    pub fn create_index(&self, spec: IndexSpec) -> Result<String> {
        self.db.write(|t| t.create_index(&self.name, spec))
    }

    pub fn drop_index(&self, name: &str) -> Result<()> {
        self.db.write(|t| t.drop_index(&self.name, name))
    }

    pub fn list_indexes(&self) -> Result<Vec<IndexSpec>> {
        Ok(self.db.read()?.list_indexes(&self.name))
    }
}
