//! An embedded document engine stored in redb that speaks MongoDB's data model.
//!
//! - [`Database`]: open a file or an in-memory database; [`Database::read`] snapshots,
//!   [`Database::write`] transactions over any number of collections, [`Database::verify`],
//!   [`Database::stats`], [`Database::compact`], TTL expiry ([`Database::expire`], [`TtlMonitor`]).
//! - [`WriteTxn`]: inserts, replaces, deletes, collections and indexes ([`IndexSpec`]).
//! - [`ReadTxn`] / [`ReadCollection`]: gets, scans, index prefix scans, yielding
//!   [`StoredDocument`]s that decode straight into serde types.
//! - [`Collection`]: one collection with each call auto-committed.
//! - [`interrupt`]: an operation's time limit and kill flag, checked inside its loops.
//! - [`order`] and [`keys`]: MongoDB's order over BSON values and the byte encoding that
//!   preserves it, the two laws everything else rests on.
//!
//! The engine knows nothing of Rust structs; the `odm` crate adds types on top. It depends on
//! no other crate of the project: every other one builds on it.

pub mod aggregate;
mod autocommit;
mod budget;
pub mod calendar;
pub mod capped;
mod catalog;
pub mod changes;
mod code;
pub mod collation;
mod collection;
pub mod commands;
mod db;
pub mod decode;
mod document;
mod element_type;
mod error;
pub mod expr;
pub mod geo;
mod group_commit;
pub mod hashed;
mod index;
mod index_store;
pub mod interrupt;
pub mod json;
pub mod keys;
mod nesting;
mod number;
mod options;
pub mod order;
pub mod path;
mod pcre;
pub mod query;
mod raw;
mod read;
pub mod retryable;
pub mod sampling;
mod schema;
mod spill;
mod stats;
mod table_pool;
mod tables;
pub mod text;
mod ttl;
mod turn;
pub mod update;
mod upgrade;
pub mod validation;
mod value_set;
mod verify;
pub mod wal;

pub use autocommit::Collection;
pub use catalog::FORMAT_VERSION;
pub use code::ErrorCode;
pub use collection::InsertManyResult;
pub use db::{Database, Durability, ReadTxn, WriteTxn};
pub use document::{IntoRawDocument, MAX_DOCUMENT_SIZE, with_id_first};
pub use error::{DocumentError, Error, IndexSpecError, Result};
pub use index::{ID_INDEX_NAME, IndexSpec, MAX_KEYS_PER_DOCUMENT};
pub use keys::Direction;
pub use nesting::{
    InputError, MAX_INPUT_DEPTH, MAX_STORED_DEPTH, QUERY_THREAD_STACK_BYTES, check_input,
};
pub use options::{CollectionOptions, ShardKey};
pub use path::Path;
pub use read::{IndexPrefixScan, ReadCollection, StoredDocument};
pub use schema::id_index_spec;
pub use stats::{CollectionStats, DatabaseStats, IndexStats};
pub use ttl::{EXPIRY_BATCH, Expiry, TtlMonitor, TtlStats};
pub use verify::VerifyReport;
