//! Where a query reads: a read snapshot, or a write transaction's own tables.
//!
//! The planner and the candidate walk need three things of a collection: its documents in `_id`
//! order, one document by encoded `_id`, and ranges of index entries. A read snapshot gives
//! them from its read-only tables; a write transaction (for updates, deletes and
//! find-and-modify) gives them from the tables it is writing, after writing out its buffered
//! index changes, so that a query sees the transaction's own earlier writes. Only the plan's
//! index tables are opened (a writer takes others when it needs them).

use std::collections::BTreeMap;
use std::ops::Bound;

use redb::{AccessGuard, ReadableTable, Table};

use crate::catalog::{CollectionMeta, IndexMeta};
use crate::error::{Error, Result};
use crate::index_store::{IndexTablesMut, MergedRange};
use crate::read::ReadCollection;
use crate::table_pool::TablePool;
use crate::tables;

/// A stored document's bytes, borrowed from a table.
pub(crate) type Guard<'a> = AccessGuard<'a, &'static [u8]>;

/// Rows of the documents table: (encoded `_id`, document bytes).
pub(crate) type DocumentRows<'a> = redb::Range<'a, &'static [u8], &'static [u8]>;

/// Documents of an `_id` range, in either direction.
pub(crate) type DocumentRange<'a> =
    Box<dyn Iterator<Item = std::result::Result<Guard<'a>, redb::StorageError>> + 'a>;

fn directed<'a>(range: DocumentRows<'a>, reverse: bool) -> DocumentRange<'a> {
    let values = |row: std::result::Result<(Guard<'a>, Guard<'a>), redb::StorageError>| {
        row.map(|(_, value)| value)
    };
    if reverse {
        Box::new(range.rev().map(values))
    } else {
        Box::new(range.map(values))
    }
}

pub(crate) use crate::capped::NaturalIds;

/// A collection as a query reads it; see the module documentation.
pub(crate) trait Source {
    fn meta(&self) -> &CollectionMeta;

    /// Where a blocking sort over this source writes its temporary files: beside the
    /// database when the source knows it, else the system's temporary folder.
    fn spill_dir(&self) -> crate::budget::SpillDir {
        crate::budget::SpillDir::temporary()
    }

    /// Every document, in `_id` order.
    fn documents(&self) -> Result<DocumentRows<'_>>;

    /// The document stored under an encoded `_id`.
    fn document(&self, id_key: &[u8]) -> Result<Option<Guard<'_>>>;

    /// A capped collection's documents' `_id`s in insertion order (reversed when `reverse`),
    /// from past the sequence number `after`; an error on any other collection.
    fn natural(&self, reverse: bool, after: Option<u64>) -> Result<NaturalIds<'_>>;

    /// The documents whose encoded `_id` lies within bounds, in `_id` order (descending when
    /// `reverse`).
    fn documents_between(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<DocumentRange<'_>>;

    /// An index's entries within byte bounds, in key order (descending when `reverse`).
    fn index_rows(
        &self,
        index: &IndexMeta,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<MergedRange<'_>>;

    fn name(&self) -> &str {
        &self.meta().name
    }

    /// Damage found in this collection.
    fn corrupt(&self, what: &str) -> Error {
        Error::corrupt(format!("collection `{}`", self.name()), what)
    }
}

impl Source for ReadCollection<'_> {
    fn meta(&self) -> &CollectionMeta {
        ReadCollection::meta(self)
    }

    fn spill_dir(&self) -> crate::budget::SpillDir {
        self.snapshot().spill_dir.clone()
    }

    fn documents(&self) -> Result<DocumentRows<'_>> {
        self.documents_range()
    }

    fn document(&self, id_key: &[u8]) -> Result<Option<Guard<'_>>> {
        self.document_guard(id_key)
    }

    fn natural(&self, reverse: bool, after: Option<u64>) -> Result<NaturalIds<'_>> {
        crate::capped::walk(self.natural_order()?, reverse, after)
    }

    fn documents_between(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<DocumentRange<'_>> {
        Ok(directed(self.documents_within(lower, upper)?, reverse))
    }

    fn index_rows(
        &self,
        index: &IndexMeta,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<MergedRange<'_>> {
        self.index_range(index, lower, upper, reverse)
    }
}

/// A collection inside a write transaction, every index's tables open, for reading only.
pub(crate) struct WriteView<'t> {
    meta: std::sync::Arc<CollectionMeta>,
    docs: Table<'t, &'static [u8], &'static [u8]>,
    /// A capped collection's insertion order (`odm.c{id}.natural`).
    natural: Option<Table<'t, &'static [u8], &'static [u8]>>,
    indexes: BTreeMap<u64, IndexTablesMut<'t>>,
}

impl<'t> WriteView<'t> {
    /// The open tables: the collection, its documents table, its index tables by index id.
    /// The insertion order table goes back to `pool`, for a writer to take with its pair.
    #[allow(clippy::type_complexity)]
    pub(crate) fn into_parts(
        self,
        pool: &TablePool<'t>,
    ) -> (
        std::sync::Arc<CollectionMeta>,
        Table<'t, &'static [u8], &'static [u8]>,
        BTreeMap<u64, IndexTablesMut<'t>>,
    ) {
        if let Some(natural) = self.natural {
            pool.put(natural);
        }
        (self.meta, self.docs, self.indexes)
    }

    /// Takes from the pool the collection's documents table and the index tables `plan`
    /// reads (a writer takes others when it needs them). The caller has written out the
    /// transaction's buffered index changes for this collection and holds no other handle on
    /// its tables.
    pub(crate) fn open(
        pool: &TablePool<'t>,
        meta: std::sync::Arc<CollectionMeta>,
        plan: &super::Plan,
    ) -> Result<Self> {
        let docs = pool.take(&tables::docs_name(meta.id))?;
        let natural = match meta.options.capped {
            Some(_) => Some(pool.take(&tables::natural_name(meta.id))?),
            None => None,
        };
        let mut indexes = BTreeMap::new();
        for name in plan.indexes() {
            if let Some(index) = meta.index(name) {
                indexes.insert(index.id, IndexTablesMut::open(pool, meta.id, index.id)?);
            }
        }
        Ok(WriteView {
            meta,
            docs,
            natural,
            indexes,
        })
    }

    /// Puts every table back in the pool.
    pub(crate) fn put_back(self, pool: &TablePool<'t>) {
        pool.put(self.docs);
        if let Some(natural) = self.natural {
            pool.put(natural);
        }
        for tables in self.indexes.into_values() {
            tables.put_back(pool);
        }
    }
}

impl Source for WriteView<'_> {
    fn meta(&self) -> &CollectionMeta {
        &self.meta
    }

    fn documents(&self) -> Result<DocumentRows<'_>> {
        Ok(self.docs.range::<&[u8]>(..)?)
    }

    fn document(&self, id_key: &[u8]) -> Result<Option<Guard<'_>>> {
        Ok(self.docs.get(id_key)?)
    }

    fn natural(&self, reverse: bool, after: Option<u64>) -> Result<NaturalIds<'_>> {
        let order = self
            .natural
            .as_ref()
            .ok_or_else(|| crate::capped::not_capped(&self.meta.name))?;
        crate::capped::walk(order, reverse, after)
    }

    fn documents_between(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<DocumentRange<'_>> {
        Ok(directed(self.docs.range::<&[u8]>((lower, upper))?, reverse))
    }

    fn index_rows(
        &self,
        index: &IndexMeta,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<MergedRange<'_>> {
        let tables = self
            .indexes
            .get(&index.id)
            .ok_or_else(|| Error::IndexNotFound {
                collection: self.meta.name.clone(),
                index: index.spec.name().to_owned(),
            })?;
        tables.directed_range(lower, upper, reverse)
    }
}
