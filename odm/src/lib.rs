//! The typed layer over [`odm_engine`]: models checked at compile time, typed filters and
//! updates, and collections that keep their declared indexes.
//!
//! - [`Document`] (derive it): a model's collection, id, indexes and shard key, and its field
//!   handles; [`Embedded`] (derive it) for types stored inside models. Both may be generic
//!   (`Bucket<M>` holding `Vec<Envelope<M>>`); their handles are typed by the parameters.
//! - [`Field`]: a handle on one field, `Model::fields().name`, typed by model and value.
//!   - [`Filter`]: `eq`, `ne`, `gt`, `gte`, `lt`, `lte`, `is_in`, `not_in`, `exists`, `regex`,
//!     `starts_with`, `contains`, `not_contains`, `contains_all`, `size`, `elem_match`; combined with `and`,
//!     `or`, `!` (not), `all_of`, `any_of`, `none_of`.
//!   - [`Update`]: `set`, `unset`, `inc`, `mul`, `min`, `max`, `rename_to`, `set_on_insert`,
//!     `current_date`, `push`, `push_with` ([`Push`]: each, position, sort, slice),
//!     `add_to_set`, `add_each_to_set`, `pull`, `pull_where`, `pull_all`, `pop_first`,
//!     `pop_last`; positional handles `matched` (`$`), `all` (`$[]`), `filtered` (`$[id]`);
//!     `Update::pipeline` for an update written as aggregation stages.
//!   - [`Sort`] and [`Projection`].
//! - [`Database`]: [`Database::collection`] (syncs declared indexes),
//!   [`Database::collection_named`] (the same model in a collection named at run time),
//!   [`Database::write`] and [`Database::transaction`] (multi-model transactions through
//!   [`Txn`], whose [`TxnCollection`]s write and read their own writes),
//!   [`Database::sync_indexes`] ([`IndexPlan`]); [`Options`] (TTL monitor, [`Durability`]).
//! - Back ends: an engine file ([`Database::open`]) or memory, or, with the `mongodb`
//!   feature, a MongoDB deployment through the official driver (`Database::connect`); the same
//!   typed calls, filters, updates and pipelines run on both, declared indexes and shard keys
//!   deploy on both, and errors carry MongoDB's codes on both ([`Error::code`]).
//! - [`Collection`]: `insert_one`, `insert_many`, `save`, `update_document` and
//!   `delete_document` (a known document, found by its `_id` and shard key, and its revision
//!   when the model keeps one), `get`, `find` ([`Find`]: `sort`, `skip`,
//!   `limit`, `hint`, `collation`, `to_vec`, `iter` ([`Cursor`]), `first`, `project`, `explain`), `find_one`, `count`,
//!   `distinct`, `aggregate` ([`Aggregate`]), `update_one`, `upsert_one`, `update_many`, `replace_one`, `delete_one`,
//!   `delete_many`, `find_one_and_update`, `find_one_and_replace`, `find_one_and_delete`
//!   ([`ModifyOptions`]), `bulk_write` ([`WriteModel`], [`BulkResult`]), `create_index`
//!   ([`Index`]: an index chosen at run time, keys from field handles).
//! - [`Expr`]: typed aggregation expressions (field against field, arithmetic, `cond`, arrays
//!   filtered and mapped through their elements' handles) for `$expr` filters
//!   ([`Filter::expr`]) and pipeline updates ([`Field::set_expr`]).
//! - [`Aggregate`]: a typed pipeline, each stage checked against the documents' shape at
//!   that point: `filter` (`$match` from a [`Filter`]), `sort`, `skip`, `limit`, `unwind`
//!   ([`Unwound`], [`Field::unwound`]), `group` ([`Group`]: a key and typed accumulators
//!   `sum`, `avg`, `min`, `max`, `first`, `last`, `push`, `add_to_set`, `count` into an output
//!   type), `project` ([`Reshape`] into an output type), `lookup` (another model joined into
//!   an output type), `populate` and `populate_one` (the documents a [`Ref`] field references,
//!   by one `$lookup`; `_strict` forms refuse dangling references), raw `stage` and `stage_into`; run by `to_vec`, `iter` (a [`Cursor`]),
//!   `first`, `count` and `explain`.
//! - Search: `#[odm(index(text(title = 10, body)))]`, `#[odm(index(geo))]` and
//!   `#[odm(index(flat))]` declare text, `2dsphere` and `2d` indexes, their fields' types
//!   checked ([`Searchable`], [`Located`], [`Planar`]); [`text`] ([`Text`]) filters a model that
//!   has a text index ([`TextIndexed`]), [`Sort::text_score`] and [`Aggregate::text_score`] use
//!   its score; [`GeoPoint`] and [`Geometry`] hold locations, queried by `near` ([`Near`]),
//!   `within`, `within_radius`, `intersects`, `near_flat`, `within_box` and the `$geoNear`
//!   stage [`Aggregate::geo_near`] ([`GeoNear`]).
//! - Kept fields and hooks: `#[odm(created_at)]`, `#[odm(updated_at)]` ([`Timestamp`]) and
//!   `#[odm(version)]` ([`Revision`], [`Error::VersionConflict`]) fields the ODM writes itself;
//!   `#[odm(hooks)]` and [`Hooks`] around the writes of a model's values.
//! - Enum models: `#[derive(Document)]` on an enum of models of one collection, stored with
//!   serde's tag; [`Collection::variant`] ([`VariantCollection`], [`Variant`]) queries one.
//! - Schemas: `#[odm(schema)]` computes a model's `$jsonSchema` ([`Schema`], [`DeclaredSchema`])
//!   and [`Database::collection`] deploys it as the validator on both back ends;
//!   [`Collection::schema_violations`] finds stored documents that break it.
//! - [`Error`]: the engine's errors, plus serialization and declaration mismatches; a stored
//!   document that does not decode names its collection, `_id` and the path that failed.
//!
//! Every typed value becomes the plain `bson::Document` MongoDB would receive (`to_document`
//! on filters and updates), and a `bson::Document` converts into a typed filter or update as an
//! escape hatch.
//!
//! Depends on the engine, the derive and the shard-key advisor, and with the `mongodb` feature
//! on the official driver; never on the wire server or the `odm` command (`odm-server`,
//! `odm-cli`), so an application that uses the typed layer builds no server, TLS, compression
//! or command-line crate.

// Without the MongoDB back end, a `Store` and a `Writer` have one variant: the matches that pick
// the back end have one arm, and what only the embedded one has is always there. They stay as
// they are so that both builds read the same.
#![cfg_attr(
    not(feature = "mongodb"),
    allow(clippy::infallible_destructuring_match, clippy::unnecessary_wraps)
)]

/// The shard-key advisor, whose reports [`Database::analyze_shard_key`] returns.
pub use odm_advisor as advisor;
mod aggregate;
#[cfg(feature = "async")]
pub mod aio;
mod codec;
mod collection;
mod cursor;
mod database;
mod error;
mod expr;
mod field;
mod filter;
mod geo;
mod hooks;
mod indexes;
mod kept;
mod model;
mod reference;
#[cfg(feature = "mongodb")]
mod remote;
mod schema;
mod search;
mod sort;
#[doc(hidden)]
pub mod testing;
mod txn;
mod update;
mod variant;
mod watch;
mod writer;

pub use aggregate::{Aggregate, AvgOf, Count, Group, Holds, Reshape, SumOf, Unwound};
pub use collection::{
    Collection, Find, InTxn, MIGRATION_BATCH, MigrationProgress, ModifyOptions, Snapshot,
};
pub use cursor::{Cursor, STREAM_BUFFER};
pub use database::{Database, Options};
pub use error::{BuildError, Error, Result};
pub use expr::{Element, Expr};
pub use field::{Field, IntoValue, Numeric};
pub use filter::{Filter, PreparedConditions};
pub use geo::{EARTH_RADIUS_METRES, GeoNear, GeoPoint, Geometry, Located, Near, Planar};
pub use hooks::Hooks;
pub use indexes::{Index, IndexPlan};
pub use kept::{Revision, Timestamp};
pub use model::{Document, Embedded};
pub use odm_derive::{Document, Embedded, Schema};
pub use odm_engine as engine;
pub use odm_engine::Durability;
pub use odm_engine::changes::{FullDocument, FullDocumentBeforeChange};
pub use odm_engine::update::{BulkResult, UpdateOptions, UpdateResult};
pub use reference::{Ref, References, ReferencesOne};
pub use schema::{
    ArrayValued, DeclaredSchema, NumberValued, Schema, SchemaProblem, SchemaViolation, TextValued,
};
pub use search::{Language, Searchable, Text, TextIndexed, text};
pub use sort::{Projection, Sort};
pub use txn::{Txn, TxnCollection, WriteModel};
pub use update::{DateLike, PreparedUpdate, Push, Update};
pub use variant::{Variant, VariantCollection, VariantFind};
pub use watch::{
    ChangeEvent, ChangeStream, EventDocument, Events, Namespace, OperationType, ResumeToken,
    TruncatedArray, UpdateDescription, Watch,
};

/// What generated code names; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::codec::{decode_versioned, migrate_with};
    pub use crate::geo::{flat_key, sphere_key};
    pub use crate::kept::Kept;
    pub use crate::search::{TextIndexed, text_key};
    pub mod schema {
        pub use crate::schema::{
            array_rule, checked, declared, enumeration, number_rule, object, text_rule, under,
            version_property, with_rules,
        };
    }
    pub use crate::model::join;
    pub use crate::variant::{same_str, variant_indexes};
    pub use bson;
    pub use odm_engine::{Direction, IndexSpec, ShardKey};
    pub use serde;
    pub use std::time::Duration;
}
