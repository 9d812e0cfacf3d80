//! `Database::stats` (what each collection and index occupies, and the file's free pages) and
//! `Database::compact` (returns free pages to the file system).
//!
//! Sizes come from redb's own accounting of its b-trees: `data_bytes` are the bytes of keys and
//! values stored in a table, `storage_bytes` the pages the table occupies. A document's key is
//! the encoding of its `_id`, so a collection's `data_bytes` slightly exceed the sum of its
//! documents' BSON sizes.

use std::sync::Arc;

use redb::{ReadableTableMetadata, TableStats};

use crate::catalog::CollectionMeta;
use crate::db::{Database, ReadTxn};
use crate::error::{Error, Result};
use crate::index_store;
use crate::tables;

/// What [`Database::stats`] reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatabaseStats {
    /// Every collection, in name order.
    pub collections: Vec<CollectionStats>,
    /// The size of a page of the file.
    pub page_size: u64,
    /// Pages in use (every table, the catalog, redb's own metadata).
    pub allocated_pages: u64,
    /// The file's length in bytes; 0 in memory.
    pub file_bytes: u64,
    /// Pages the file holds that nothing uses: what [`Database::compact`] can return.
    pub free_pages: u64,
}

/// One collection in [`DatabaseStats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectionStats {
    pub name: String,
    pub documents: u64,
    /// Stored keys and documents.
    pub data_bytes: u64,
    /// The pages the documents' table occupies.
    pub storage_bytes: u64,
    /// The secondary indexes (the `_id` index is the documents' table itself).
    pub indexes: Vec<IndexStats>,
    /// The pages of the `_id` index apart from the documents' table: on a collection with a
    /// default collation, the index that keeps `_id`s unique under it.
    pub id_index_bytes: u64,
}

/// One secondary index in [`CollectionStats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexStats {
    pub name: String,
    /// The pages the index's tables occupy.
    pub storage_bytes: u64,
}

impl CollectionStats {
    /// The bytes all of the collection's indexes occupy.
    pub fn index_bytes(&self) -> u64 {
        self.id_index_bytes + self.indexes.iter().map(|i| i.storage_bytes).sum::<u64>()
    }
}

fn pages_bytes(stats: &TableStats, page_size: u64) -> u64 {
    (stats.leaf_pages() + stats.branch_pages()) * page_size
}

impl ReadTxn {
    /// What one collection and its indexes occupy in this snapshot.
    pub(crate) fn collection_stats(&self, meta: &CollectionMeta) -> Result<CollectionStats> {
        let page_size = self.page_size;
        let docs = self
            .txn
            .open_table(tables::bytes(&tables::docs_name(meta.id)))?;
        let table = docs.stats()?;
        let mut indexes = Vec::new();
        let mut id_index_bytes = 0;
        for index in &meta.indexes {
            let (main, delta) = index_store::table_names(meta.id, index.id);
            let mut storage_bytes = 0;
            for name in [main, delta] {
                let t = self.txn.open_table(tables::bytes(&name))?;
                storage_bytes += pages_bytes(&t.stats()?, page_size);
            }
            if index.spec.is_collated_id() {
                id_index_bytes = storage_bytes;
                continue;
            }
            indexes.push(IndexStats {
                name: index.spec.name().to_owned(),
                storage_bytes,
            });
        }
        Ok(CollectionStats {
            name: meta.name.clone(),
            documents: docs.len()?,
            data_bytes: table.stored_bytes(),
            storage_bytes: pages_bytes(&table, page_size),
            indexes,
            id_index_bytes,
        })
    }
}

impl Database {
    /// Sizes of every collection and index, and the file's free pages; see the module
    /// documentation. It takes the write lock for a moment (redb reports page counts to a
    /// writer), so it waits for a running write transaction.
    pub fn stats(&self) -> Result<DatabaseStats> {
        let (page_size, allocated_pages) = {
            let txn = self.shared.redb.begin_write()?;
            let stats = txn.stats().map_err(|e| Error::Storage(e.into()))?;
            let counts = (stats.page_size() as u64, stats.allocated_pages());
            txn.abort()?;
            counts
        };
        let read = self.read()?;
        let collections = read
            .catalog
            .collections
            .values()
            .map(|meta| read.collection_stats(meta))
            .collect::<Result<Vec<_>>>()?;
        let file_bytes = self.shared.file_bytes();
        let file_pages = file_bytes / page_size.max(1);
        Ok(DatabaseStats {
            collections,
            page_size,
            allocated_pages,
            file_bytes,
            free_pages: file_pages.saturating_sub(allocated_pages),
        })
    }

    /// Moves pages toward the start of the file and truncates the free tail; returns whether
    /// the file shrank. Needs the only handle to the database ([`Error::Compaction`]
    /// otherwise), since redb compacts with nothing else open.
    pub fn compact(&mut self) -> Result<bool> {
        let shared = Arc::get_mut(&mut self.shared)
            .ok_or_else(|| Error::Compaction("the database has other open handles".to_owned()))?;
        let mut compacted = false;
        // redb compacts a bounded amount per call; repeat until nothing moves.
        while shared
            .redb
            .compact()
            .map_err(|e| Error::Compaction(e.to_string()))?
        {
            compacted = true;
        }
        Ok(compacted)
    }
}
