//! [`Collection`]: a named collection whose every call is its own immediately durable
//! transaction, for code that does not need to group writes.

use bson::{Bson, RawDocumentBuf};

use crate::collection::InsertManyResult;
use crate::db::Database;
use crate::document::IntoRawDocument;
use crate::error::Result;
use crate::index::IndexSpec;

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

    pub fn replace_one(
        &self,
        id: &Bson,
        doc: impl IntoRawDocument,
    ) -> Result<Option<RawDocumentBuf>> {
        self.db.write(|t| t.replace_one(&self.name, id, doc))
    }

    pub fn delete_one(&self, id: &Bson) -> Result<Option<RawDocumentBuf>> {
        self.db.write(|t| t.delete_one(&self.name, id))
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
