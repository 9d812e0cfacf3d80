//! The only module that names redb tables.
//!
//! - `odm.meta`: the storage format version and the catalog (one BSON document);
//! - `odm.c{collection}.docs`: encoded `_id` -> raw BSON document, one table per collection;
//! - `odm.c{collection}.i{index}` and `odm.c{collection}.i{index}.delta`: the entries of an index
//!   (see [`crate::index`]), split between a main table and a small delta of recent entries (see
//!   `index_store`);
//! - `odm.c{collection}.natural` and `odm.c{collection}.natural_ids`: a capped collection's
//!   insertion order, sequence number -> encoded `_id` and back (see [`crate::capped`]);
//! - `odm.sampled_queries`: sample number -> a sampled query (see [`crate::sampling`]), with
//!   their total size under the meta key `sampled_queries_bytes`;
//! - `odm.changes` and `odm.changes.head`: (commit time, position in the commit) -> a change
//!   record (see [`crate::changes`]), split between a main table and a small head of the
//!   newest records, with the log's options and trim point under the meta keys `change_log`
//!   and `change_log_trimmed`;
//! - `odm.retryable_writes`: a session's id -> its latest retryable write's number and reply
//!   (see [`crate::retryable`]);
//! - `odm.undo`: inside one write transaction only, never committed: the documents an
//!   all-or-nothing `update_many` has replaced, so that it can put them back without holding
//!   them in memory.
//!
//! Tables are named by numeric ids from the catalog, never by user-chosen names, so renaming a
//! collection or an index touches only the catalog.

use redb::TableDefinition;

pub(crate) type Bytes<'a> = TableDefinition<'a, &'static [u8], &'static [u8]>;

pub(crate) const META_NAME: &str = "odm.meta";
pub(crate) const META: TableDefinition<'static, &'static str, &'static [u8]> =
    TableDefinition::new(META_NAME);

/// Keys of the meta table.
pub(crate) const FORMAT_VERSION_KEY: &str = "format_version";
pub(crate) const CATALOG_KEY: &str = "catalog";

/// Key of the meta table: the bytes of the stored samples (8 bytes, big-endian).
pub(crate) const SAMPLED_BYTES_KEY: &str = "sampled_queries_bytes";

pub(crate) const SAMPLED_QUERIES: TableDefinition<'static, u64, &'static [u8]> =
    TableDefinition::new("odm.sampled_queries");

/// Keys of the meta table for the change log: its options (a BSON document) and the key of the
/// last record trimmed (12 bytes).
pub(crate) const CHANGE_LOG_KEY: &str = "change_log";
pub(crate) const CHANGE_LOG_TRIMMED_KEY: &str = "change_log_trimmed";

pub(crate) const CHANGES: TableDefinition<'static, (u64, u32), &'static [u8]> =
    TableDefinition::new("odm.changes");
/// The change log's newest records, moved to `odm.changes` in bulk (see `changes::log`).
pub(crate) const CHANGES_HEAD: TableDefinition<'static, (u64, u32), &'static [u8]> =
    TableDefinition::new("odm.changes.head");

/// Session id (the bytes of its `lsid.id`) -> a BSON record `{txnNumber, at, reply}`.
pub(crate) const RETRYABLE: TableDefinition<'static, &'static [u8], &'static [u8]> =
    TableDefinition::new("odm.retryable_writes");

/// See the module documentation; deleted before the transaction that creates it ends.
pub(crate) const UNDO: Bytes<'static> = TableDefinition::new("odm.undo");

/// `odm.c<collection>`, then `.i<index>` for an index's table, then `last`. Written by hand: a
/// table is opened by name on every operation, and `format!` costs several times more.
fn table_name(collection: u64, index: Option<u64>, last: &str) -> String {
    let mut name = String::with_capacity(48);
    name.push_str("odm.c");
    push_decimal(&mut name, collection);
    if let Some(index) = index {
        name.push_str(".i");
        push_decimal(&mut name, index);
    }
    name.push_str(last);
    name
}

/// Appends `n` in decimal digits (without `format!`, which costs several times as much on the
/// write path's names and paths).
pub(crate) fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

pub(crate) fn docs_name(collection: u64) -> String {
    table_name(collection, None, ".docs")
}

/// Inside the transaction that upgrades a file only: the documents table being rewritten under
/// new keys (see [`crate::upgrade`]), renamed to [`docs_name`] before the transaction ends.
pub(crate) fn docs_rekeyed_name(collection: u64) -> String {
    table_name(collection, None, ".docs.rekeyed")
}

/// A capped collection's insertion order: sequence number (8 bytes, big-endian) -> encoded `_id`.
pub(crate) fn natural_name(collection: u64) -> String {
    table_name(collection, None, ".natural")
}

/// A capped collection's encoded `_id` -> its sequence number and size (see [`crate::capped`]).
pub(crate) fn natural_ids_name(collection: u64) -> String {
    table_name(collection, None, ".natural_ids")
}

pub(crate) fn index_name(collection: u64, index: u64) -> String {
    table_name(collection, Some(index), "")
}

pub(crate) fn index_delta_name(collection: u64, index: u64) -> String {
    table_name(collection, Some(index), ".delta")
}

pub(crate) fn bytes(name: &str) -> Bytes<'_> {
    TableDefinition::new(name)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Law: the names written by hand are the names `format!` writes (they name tables in
        /// existing files).
        #[test]
        fn table_names_are_spelled_as_before(collection in any::<u64>(), index in any::<u64>()) {
            prop_assert_eq!(docs_name(collection), format!("odm.c{collection}.docs"));
            prop_assert_eq!(
                docs_rekeyed_name(collection),
                format!("odm.c{collection}.docs.rekeyed")
            );
            prop_assert_eq!(index_name(collection, index), format!("odm.c{collection}.i{index}"));
            prop_assert_eq!(
                index_delta_name(collection, index),
                format!("odm.c{collection}.i{index}.delta")
            );
        }
    }

    #[test]
    fn edge_numbers_are_spelled_in_full() {
        for n in [0, 1, 9, 10, 99, 100, u64::MAX] {
            assert_eq!(index_name(n, n), format!("odm.c{n}.i{n}"));
        }
    }
}
