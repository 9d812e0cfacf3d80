//! Capped collections: a fixed budget of bytes, and optionally of documents, kept in insertion
//! order, the oldest documents removed first.
//!
//! Rules, as MongoDB's:
//! - A capped collection holds at most `size` bytes of documents (the sum of their BSON sizes,
//!   MongoDB's `size` in `collStats`) and, with `max`, at most `max` documents. An insert past
//!   either removes the oldest documents, in insertion order, until both hold again; a document
//!   larger than `size` alone is refused.
//! - Natural order is insertion order: each document takes the collection's next sequence
//!   number (MongoDB's record id), never reused, so a tailable cursor resumes after the last
//!   number it returned and knows its place is lost when that document is gone.
//! - Other collections keep no sequence: their natural order is `_id` order (see
//!   ARCHITECTURE.md for the measurements behind that decision).
//!
//! Storage: `odm.c{id}.natural` maps the sequence number (8 bytes, big-endian, so byte order is
//! number order) to the encoded `_id`; `odm.c{id}.natural_ids` maps the encoded `_id` back to
//! its sequence number and size (8 + 4 bytes). The row of `natural_ids` under the empty key (no
//! encoded `_id` is empty) holds the next sequence number and the total size (8 bytes each).
//! Every write of a capped collection goes through `collection::Writer`, which keeps the three
//! in step with the documents table; `verify` checks them.

use std::ops::Bound;

use bson::Document;
use redb::ReadableTable;

pub use crate::error::CappedError;
use crate::error::{Error, Result};
use crate::table_pool::{BytesTable, TablePool};
use crate::tables;

/// The largest `size` MongoDB accepts: 1 PiB.
pub const MAX_CAPPED_SIZE: u64 = 1 << 50;

/// The limits of a capped collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capped {
    /// The most bytes of documents it holds.
    pub size: u64,
    /// The most documents it holds, if limited.
    pub max: Option<u64>,
}

impl Capped {
    /// Limits as `create` gives them. As MongoDB, `size` must be 1 to 1 PiB and is rounded
    /// up to a multiple of 256; a `max` of 0 or less is no limit.
    pub fn new(size: i64, max: Option<i64>) -> Result<Capped, CappedError> {
        let size = u64::try_from(size)
            .ok()
            .filter(|&s| s > 0 && s <= MAX_CAPPED_SIZE)
            .ok_or(CappedError::InvalidSize(size))?;
        Ok(Capped {
            size: size.div_ceil(256) * 256,
            max: max.and_then(|m| u64::try_from(m).ok()).filter(|&m| m > 0),
        })
    }

    /// The limits as the catalog keeps them.
    pub(crate) fn to_document(self) -> Document {
        let mut d = bson::doc! { "size": i64::try_from(self.size).unwrap_or(i64::MAX) };
        if let Some(max) = self.max {
            d.insert("max", i64::try_from(max).unwrap_or(i64::MAX));
        }
        d
    }

    pub(crate) fn from_document(d: &Document) -> Option<Capped> {
        let size = u64::try_from(d.get_i64("size").ok()?).ok()?;
        let max = d.get_i64("max").ok().and_then(|m| u64::try_from(m).ok());
        Some(Capped { size, max })
    }
}

/// The key of the `natural_ids` row that holds the collection's counters.
const STATE_KEY: &[u8] = &[];

/// A capped collection's next sequence number and total size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) next: u64,
    pub(crate) bytes: u64,
}

/// A capped collection's two order tables inside a write transaction.
pub(crate) struct Natural<'t> {
    order: BytesTable<'t>,
    ids: BytesTable<'t>,
}

impl<'t> Natural<'t> {
    pub(crate) fn open(pool: &TablePool<'t>, collection: u64) -> Result<Natural<'t>> {
        Ok(Natural {
            order: pool.take(&tables::natural_name(collection))?,
            ids: pool.take(&tables::natural_ids_name(collection))?,
        })
    }

    pub(crate) fn put_back(self, pool: &TablePool<'t>) {
        pool.put(self.order);
        pool.put(self.ids);
    }

    pub(crate) fn state(&self) -> Result<State> {
        let Some(row) = self.ids.get(STATE_KEY)? else {
            return Ok(State::default());
        };
        let bytes = row.value();
        let (Some(next), Some(total)) = (be_u64(bytes, 0), be_u64(bytes, 8)) else {
            return Err(corrupt("counters are not 16 bytes"));
        };
        Ok(State { next, bytes: total })
    }

    fn set_state(&mut self, state: State) -> Result<()> {
        let mut row = [0u8; 16];
        row[..8].copy_from_slice(&state.next.to_be_bytes());
        row[8..].copy_from_slice(&state.bytes.to_be_bytes());
        self.ids.insert(STATE_KEY, row.as_slice())?;
        Ok(())
    }

    /// Records a new document, last in natural order.
    pub(crate) fn appended(&mut self, id_key: &[u8], size: usize) -> Result<()> {
        let mut state = self.state()?;
        let sequence = state.next;
        self.order
            .insert(sequence.to_be_bytes().as_slice(), id_key)?;
        self.ids.insert(id_key, id_row(sequence, size).as_slice())?;
        state.next += 1;
        state.bytes += size as u64;
        self.set_state(state)
    }

    /// Records that the document under `id_key` now has `size` bytes.
    pub(crate) fn resized(&mut self, id_key: &[u8], size: usize) -> Result<()> {
        let (sequence, old) = self.position(id_key)?;
        self.ids.insert(id_key, id_row(sequence, size).as_slice())?;
        let mut state = self.state()?;
        state.bytes = state.bytes.saturating_sub(old) + size as u64;
        self.set_state(state)
    }

    /// Forgets a removed document.
    pub(crate) fn removed(&mut self, id_key: &[u8]) -> Result<()> {
        let (sequence, size) = self.position(id_key)?;
        self.ids.remove(id_key)?;
        self.order.remove(sequence.to_be_bytes().as_slice())?;
        let mut state = self.state()?;
        state.bytes = state.bytes.saturating_sub(size);
        self.set_state(state)
    }

    /// The encoded `_id` of the oldest document while the collection is over its limits.
    pub(crate) fn oldest_over(&self, capped: Capped) -> Result<Option<Vec<u8>>> {
        let state = self.state()?;
        let count = redb::ReadableTableMetadata::len(&self.order)?;
        let over = state.bytes > capped.size || capped.max.is_some_and(|max| count > max);
        if !over {
            return Ok(None);
        }
        Ok(self.order.first()?.map(|(_, id)| id.value().to_vec()))
    }

    /// The sequence number and size recorded for a document.
    fn position(&self, id_key: &[u8]) -> Result<(u64, u64)> {
        let row = self
            .ids
            .get(id_key)?
            .ok_or_else(|| corrupt("a document has no place in natural order"))?;
        let bytes = row.value();
        match (be_u64(bytes, 0), bytes.get(8..12)) {
            (Some(sequence), Some(size)) => {
                let size = u32::from_be_bytes(size.try_into().unwrap_or_default());
                Ok((sequence, u64::from(size)))
            }
            _ => Err(corrupt("a place in natural order is not 12 bytes")),
        }
    }
}

fn id_row(sequence: u64, size: usize) -> [u8; 12] {
    let mut row = [0u8; 12];
    row[..8].copy_from_slice(&sequence.to_be_bytes());
    // Documents are at most 16 MiB and some bytes, far below `u32::MAX`.
    row[8..].copy_from_slice(&u32::try_from(size).unwrap_or(u32::MAX).to_be_bytes());
    row
}

fn be_u64(bytes: &[u8], at: usize) -> Option<u64> {
    bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
}

/// A collection's documents in natural order, as encoded `_id`s with their sizes: insertion
/// order for a capped collection, `_id` order for others.
pub(crate) fn natural_order_of(
    pool: &TablePool<'_>,
    meta: &crate::catalog::CollectionMeta,
) -> Result<Vec<(Vec<u8>, usize)>> {
    let docs = pool.take(&tables::docs_name(meta.id))?;
    let mut out = Vec::new();
    if meta.options.capped.is_some() {
        let order = pool.take(&tables::natural_name(meta.id))?;
        for entry in walk(&order, false, None)? {
            let (_, id) = entry?;
            let size = docs.get(id.as_slice())?.map_or(0, |d| d.value().len());
            out.push((id, size));
        }
        pool.put(order);
    } else {
        for row in docs.iter()? {
            let (id, doc) = row?;
            out.push((id.value().to_vec(), doc.value().len()));
        }
    }
    pool.put(docs);
    Ok(out)
}

/// Gives a collection's documents, new order tables, this insertion order.
pub(crate) fn record_order(
    pool: &TablePool<'_>,
    collection: u64,
    order: &[(Vec<u8>, usize)],
) -> Result<()> {
    let mut natural = Natural::open(pool, collection)?;
    for (id, size) in order {
        natural.appended(id, *size)?;
    }
    natural.put_back(pool);
    Ok(())
}

/// Deletes a dropped capped collection's order tables (the caller has closed its pool).
pub(crate) fn delete_tables(txn: &redb::WriteTransaction, collection: u64) -> Result<()> {
    txn.delete_table(tables::bytes(&tables::natural_name(collection)))?;
    txn.delete_table(tables::bytes(&tables::natural_ids_name(collection)))?;
    Ok(())
}

/// Checks a capped collection's order tables against its documents' sizes (by encoded `_id`):
/// one place per document, the two tables each other's inverse, the counters the sums.
pub(crate) fn verify(
    txn: &redb::ReadTransaction,
    meta: &crate::catalog::CollectionMeta,
    sizes: &std::collections::BTreeMap<Vec<u8>, u64>,
    problems: &mut Vec<String>,
) -> Result<()> {
    let name = &meta.name;
    let order = txn.open_table(tables::bytes(&tables::natural_name(meta.id)))?;
    let ids = txn.open_table(tables::bytes(&tables::natural_ids_name(meta.id)))?;
    let mut problem = |what: &str| problems.push(format!("`{name}`: insertion order: {what}"));
    let (mut total, mut places, mut last) = (0u64, 0u64, None);
    for row in ids.iter()? {
        let (id, place) = row?;
        let (id, place) = (id.value(), place.value());
        if id == STATE_KEY {
            continue;
        }
        places += 1;
        let (Some(sequence), Some(size)) = (be_u64(place, 0), place.get(8..12)) else {
            problem("a place is not 12 bytes");
            continue;
        };
        let size = u64::from(u32::from_be_bytes(size.try_into().unwrap_or_default()));
        total += size;
        last = last.max(Some(sequence));
        if sizes.get(id) != Some(&size) {
            problem("a place names a missing document or a wrong size");
        }
        if order
            .get(sequence.to_be_bytes().as_slice())?
            .map(|v| v.value().to_vec())
            != Some(id.to_vec())
        {
            problem("a sequence number does not lead back to its document");
        }
    }
    if places != sizes.len() as u64 || places != redb::ReadableTableMetadata::len(&order)? {
        problem("documents, places and sequence numbers differ in number");
    }
    let state = match ids.get(STATE_KEY)? {
        Some(row) => match (be_u64(row.value(), 0), be_u64(row.value(), 8)) {
            (Some(next), Some(bytes)) => State { next, bytes },
            _ => State::default(),
        },
        None => State::default(),
    };
    if state.bytes != total {
        problem("the recorded total size is not the sum of the documents' sizes");
    }
    if last.is_some_and(|last| last >= state.next) {
        problem("a sequence number is not below the next one");
    }
    Ok(())
}

/// A natural-order walk asked of a collection that is not capped.
pub(crate) fn not_capped(collection: &str) -> Error {
    Error::Capped(CappedError::NotCapped(collection.to_owned()))
}

fn corrupt(reason: &str) -> Error {
    Error::corrupt("a capped collection's natural order", reason)
}

/// A capped collection's encoded `_id`s with their sequence numbers, in insertion order or its
/// reverse.
pub(crate) type NaturalIds<'a> = Box<dyn Iterator<Item = Result<(u64, Vec<u8>)>> + 'a>;

/// A capped collection's encoded `_id`s in natural order (reversed when `reverse`), with their
/// sequence numbers, starting past `after` in the walk's direction.
pub(crate) fn walk<T>(order: &T, reverse: bool, after: Option<u64>) -> Result<NaturalIds<'_>>
where
    T: ReadableTable<&'static [u8], &'static [u8]>,
{
    let after = after.map(u64::to_be_bytes);
    let bound = after
        .as_ref()
        .map_or(Bound::Unbounded, |a| Bound::Excluded(a.as_slice()));
    let range = if reverse {
        order.range::<&[u8]>((Bound::Unbounded, bound))?
    } else {
        order.range::<&[u8]>((bound, Bound::Unbounded))?
    };
    let row = |row: std::result::Result<_, redb::StorageError>| -> Result<(u64, Vec<u8>)> {
        let (sequence, id): (redb::AccessGuard<'_, &[u8]>, redb::AccessGuard<'_, &[u8]>) = row?;
        let sequence = be_u64(sequence.value(), 0)
            .ok_or_else(|| corrupt("a sequence number is not 8 bytes"))?;
        Ok((sequence, id.value().to_vec()))
    };
    Ok(if reverse {
        Box::new(range.rev().map(row))
    } else {
        Box::new(range.map(row))
    })
}

/// Whether a document with this sequence number is still in the collection.
pub(crate) fn holds<T>(order: &T, sequence: u64) -> Result<bool>
where
    T: ReadableTable<&'static [u8], &'static [u8]>,
{
    Ok(order.get(sequence.to_be_bytes().as_slice())?.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_256_and_max_of_zero_or_less_is_no_limit() {
        assert_eq!(Capped::new(1, None).unwrap().size, 256);
        assert_eq!(
            Capped::new(MAX_CAPPED_SIZE as i64, None).unwrap().size,
            MAX_CAPPED_SIZE
        );
        assert_eq!(Capped::new(4096, Some(0)).unwrap().max, None);
        assert_eq!(
            Capped::new(4097, Some(-5)).unwrap(),
            Capped {
                size: 4352,
                max: None
            }
        );
        assert_eq!(Capped::new(1000, Some(3)).unwrap().max, Some(3));
        for bad in [0, -1, i64::MIN, (1 << 50) + 1, i64::MAX] {
            assert_eq!(Capped::new(bad, None), Err(CappedError::InvalidSize(bad)));
        }
    }

    #[test]
    fn limits_round_trip_through_the_catalog() {
        for capped in [
            Capped {
                size: 256,
                max: None,
            },
            Capped {
                size: MAX_CAPPED_SIZE,
                max: Some(u64::try_from(i64::MAX).unwrap()),
            },
        ] {
            assert_eq!(Capped::from_document(&capped.to_document()), Some(capped));
        }
    }
}
