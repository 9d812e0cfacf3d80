//! How an index's entries are laid out in redb: a main table and a small delta table.
//!
//! redb copies every B-tree page a transaction touches. Index keys arrive in random order, so a
//! batch of N new entries in one large table touches about N different leaves, and each commit
//! would rewrite most of the index. Instead, new entries go to the delta table, which stays small
//! (a few leaves per commit), and once it holds more than an eighth of the main table (or
//! [`DELTA_MIN`] entries) its entries move to the main table in key order, touching each main
//! leaf once for many commits' worth of entries. (Measured by `bench core`: without the delta,
//! each 1,000-document commit over 100,000 documents with two indexes wrote about 2.6 MB.)
//!
//! A transaction whose changes to an index are a bulk load (at least [`BULK_MIN`] of them) and
//! number at least an eighth of the main table writes its entries straight into the main
//! table: through the delta they would soon bring on a merge that touches those leaves anyway,
//! and each entry would be written twice. (Measured by callgrind on `bench core --docs 20000`,
//! loads of 1,000 documents with two indexes: 14% fewer instructions in the index writes.)
//!
//! Invariant: the main and delta tables are disjoint, and together they hold exactly the
//! index's entries. Inserts go to the delta (or, as above, to the main table); a removal
//! removes the entry from whichever table holds it; reads look in both and merge ranges in key
//! order.

use std::collections::BTreeMap;
use std::iter::Peekable;

use redb::{AccessGuard, ReadableTable, ReadableTableMetadata, StorageError, WriteTransaction};

use crate::error::Result;
use crate::table_pool::{BytesTable, TablePool};
use crate::tables;

/// By default the delta table is merged into the main one when it grows past this many
/// entries, or past an eighth of the main table, whichever is larger
/// (see `Database::set_index_merge_threshold`).
pub(crate) const DELTA_MIN: u64 = 4096;
const DELTA_RATIO: u64 = 8;
/// The fewest changes to one index that a transaction writes straight into its main table
/// (see the module documentation): below it the delta takes them, as it always did.
const BULK_MIN: u64 = 256;

/// The names of an index's two tables.
pub(crate) fn table_names(collection: u64, index: u64) -> (String, String) {
    (
        tables::index_name(collection, index),
        tables::index_delta_name(collection, index),
    )
}

/// The net change a transaction makes to one index entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// The entry was absent when the transaction began and is added.
    Insert(Vec<u8>),
    /// The entry is removed.
    Remove,
    /// The entry was removed and added again: it may still sit in the main table, so it is
    /// removed from wherever it is before being added, which keeps the tables disjoint.
    Reinsert(Vec<u8>),
}

impl Change {
    /// The change after `next` follows `self` within one transaction.
    pub(crate) fn then(self, next: Change) -> Change {
        match (self, next) {
            (Change::Remove | Change::Reinsert(_), Change::Insert(v)) => Change::Reinsert(v),
            (_, next) => next,
        }
    }

    /// The value the entry has after the change, if any.
    pub(crate) fn value(&self) -> Option<&[u8]> {
        match self {
            Change::Insert(v) | Change::Reinsert(v) => Some(v),
            Change::Remove => None,
        }
    }
}

/// Both tables of one index, open in a write transaction.
pub(crate) struct IndexTablesMut<'t> {
    main: BytesTable<'t>,
    delta: BytesTable<'t>,
}

impl<'t> IndexTablesMut<'t> {
    /// Both tables, from the transaction's pool (opened, and created, if needed).
    pub(crate) fn open(pool: &TablePool<'t>, collection: u64, index: u64) -> Result<Self> {
        let (main, delta) = table_names(collection, index);
        Ok(IndexTablesMut {
            main: pool.take(&main)?,
            delta: pool.take(&delta)?,
        })
    }

    /// Puts both tables back in the pool.
    pub(crate) fn put_back(self, pool: &TablePool<'t>) {
        pool.put(self.main);
        pool.put(self.delta);
    }

    /// The value stored for `key`, in either table.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.delta.get(key)? {
            return Ok(Some(v.value().to_vec()));
        }
        Ok(self.main.get(key)?.map(|v| v.value().to_vec()))
    }

    /// Entries in key order within `range` (bytes bounds), from both tables.
    pub(crate) fn range<'a>(
        &'a self,
        lower: std::ops::Bound<&[u8]>,
        upper: std::ops::Bound<&[u8]>,
    ) -> Result<MergedRange<'a>> {
        self.directed_range(lower, upper, false)
    }

    /// Entries within bounds from both tables, in descending key order when `reverse`.
    pub(crate) fn directed_range<'a>(
        &'a self,
        lower: std::ops::Bound<&[u8]>,
        upper: std::ops::Bound<&[u8]>,
        reverse: bool,
    ) -> Result<MergedRange<'a>> {
        Ok(MergedRange::directed(
            self.main.range::<&[u8]>((lower, upper))?,
            self.delta.range::<&[u8]>((lower, upper))?,
            reverse,
        ))
    }
}

/// Writes a transaction's buffered changes to one index, then merges the delta into the main
/// table when it has grown enough.
pub(crate) fn apply(
    pool: &TablePool<'_>,
    collection: u64,
    index: u64,
    changes: BTreeMap<Vec<u8>, Change>,
    delta_min: u64,
) -> Result<()> {
    apply_to(
        pool,
        IndexTablesMut::open(pool, collection, index)?,
        collection,
        index,
        changes,
        delta_min,
    )
}

/// [`apply`] through the index's tables, already open; they go back to the pool.
pub(crate) fn apply_to<'t>(
    pool: &TablePool<'t>,
    mut tables: IndexTablesMut<'t>,
    collection: u64,
    index: u64,
    changes: BTreeMap<Vec<u8>, Change>,
    delta_min: u64,
) -> Result<()> {
    let main_len = tables.main.len()?;
    // A bulk batch of at least an eighth of the main table goes straight into it: in the delta
    // it would bring on a merge that writes those leaves anyway, having written each entry twice.
    let bulk = changes.len() as u64;
    let into_main = bulk >= BULK_MIN && bulk.saturating_mul(DELTA_RATIO) >= main_len;
    for (key, change) in changes {
        // Disjoint tables: an entry is in one of them at most.
        if matches!(change, Change::Remove | Change::Reinsert(_))
            && tables.delta.remove(key.as_slice())?.is_none()
        {
            tables.main.remove(key.as_slice())?;
        }
        if let Some(value) = change.value() {
            let table = if into_main {
                &mut tables.main
            } else {
                &mut tables.delta
            };
            table.insert(key.as_slice(), value)?;
        }
    }
    let threshold = delta_min.max(tables.main.len()? / DELTA_RATIO);
    if tables.delta.len()? > threshold {
        merge(pool, tables, collection, index)?;
    } else {
        tables.put_back(pool);
    }
    Ok(())
}

/// Moves every delta entry into the main table, in key order, and empties the delta (deleted
/// and created again: the pool holds no idle copy, as its caller had it open).
fn merge<'t>(
    pool: &TablePool<'t>,
    mut tables: IndexTablesMut<'t>,
    collection: u64,
    index: u64,
) -> Result<()> {
    for row in tables.delta.iter()? {
        let (key, value) = row?;
        tables.main.insert(key.value(), value.value())?;
    }
    pool.put(tables.main);
    drop(tables.delta);
    let (_, delta) = table_names(collection, index);
    pool.txn().delete_table(tables::bytes(&delta))?;
    pool.with(&delta, |_| Ok(()))
}

/// Deletes both tables of an index; the pool must hold neither (see `table_pool`).
pub(crate) fn delete(txn: &WriteTransaction, collection: u64, index: u64) -> Result<()> {
    let (main, delta) = table_names(collection, index);
    txn.delete_table(tables::bytes(&main))?;
    txn.delete_table(tables::bytes(&delta))?;
    Ok(())
}

type Row<'a> = std::result::Result<
    (
        AccessGuard<'a, &'static [u8]>,
        AccessGuard<'a, &'static [u8]>,
    ),
    StorageError,
>;

type Rows<'a> = Box<dyn Iterator<Item = Row<'a>> + 'a>;

/// Two key-ordered ranges over disjoint tables, merged into one key-ordered range, forwards or
/// backwards.
pub(crate) struct MergedRange<'a> {
    main: Peekable<Rows<'a>>,
    delta: Peekable<Rows<'a>>,
    reverse: bool,
}

impl<'a> MergedRange<'a> {
    /// Both ranges walked in descending key order when `reverse`.
    pub(crate) fn directed(
        main: redb::Range<'a, &'static [u8], &'static [u8]>,
        delta: redb::Range<'a, &'static [u8], &'static [u8]>,
        reverse: bool,
    ) -> Self {
        let boxed = |r: redb::Range<'a, &'static [u8], &'static [u8]>| -> Rows<'a> {
            if reverse {
                Box::new(r.rev())
            } else {
                Box::new(r)
            }
        };
        MergedRange {
            main: boxed(main).peekable(),
            delta: boxed(delta).peekable(),
            reverse,
        }
    }
}

impl<'a> Iterator for MergedRange<'a> {
    type Item = Row<'a>;

    fn next(&mut self) -> Option<Row<'a>> {
        let from_delta = match (self.main.peek(), self.delta.peek()) {
            (None, None) => return None,
            (Some(_), None) | (Some(Err(_)), _) => false,
            (None, Some(_)) | (_, Some(Err(_))) => true,
            (Some(Ok((main, _))), Some(Ok((delta, _)))) => {
                (delta.value() < main.value()) != self.reverse
            }
        };
        if from_delta {
            self.delta.next()
        } else {
            self.main.next()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Change;

    #[test]
    fn a_removal_followed_by_an_insert_is_a_reinsert() {
        let v = || vec![1];
        assert_eq!(
            Change::Remove.then(Change::Insert(v())),
            Change::Reinsert(v())
        );
        assert_eq!(Change::Reinsert(v()).then(Change::Remove), Change::Remove);
        assert_eq!(
            Change::Reinsert(v()).then(Change::Insert(v())),
            Change::Reinsert(v())
        );
        assert_eq!(Change::Insert(v()).then(Change::Remove), Change::Remove);
    }
}
