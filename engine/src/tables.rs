//! The only module that names redb tables.
//!
//! - `odm.meta`: the storage format version and the catalog (one BSON document);
//! - `odm.c{collection}.docs`: encoded `_id` -> raw BSON document, one table per collection;
//! - `odm.c{collection}.i{index}` and `odm.c{collection}.i{index}.delta`: the entries of an index
//!   (see [`crate::index`]), split between a main table and a small delta of recent entries (see
//!   `index_store`);
//! - `odm.sampled_queries`: sample number -> a sampled query (see [`crate::sampling`]), with
//!   their total size under the meta key `sampled_queries_bytes`;
//! - `odm.changes` and `odm.changes.head`: (commit time, position in the commit) -> a change
//!   record (see [`crate::changes`]), split between a main table and a small head of the
//!   newest records, with the log's options and trim point under the meta keys `change_log`
//!   and `change_log_trimmed`;
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

/// See the module documentation; deleted before the transaction that creates it ends.
pub(crate) const UNDO: Bytes<'static> = TableDefinition::new("odm.undo");

pub(crate) fn docs_name(collection: u64) -> String {
    format!("odm.c{collection}.docs")
}

/// Inside the transaction that upgrades a file only: the documents table being rewritten under
/// new keys (see [`crate::upgrade`]), renamed to [`docs_name`] before the transaction ends.
pub(crate) fn docs_rekeyed_name(collection: u64) -> String {
    format!("odm.c{collection}.docs.rekeyed")
}

pub(crate) fn index_name(collection: u64, index: u64) -> String {
    format!("odm.c{collection}.i{index}")
}

pub(crate) fn index_delta_name(collection: u64, index: u64) -> String {
    format!("odm.c{collection}.i{index}.delta")
}

pub(crate) fn bytes(name: &str) -> Bytes<'_> {
    TableDefinition::new(name)
}
