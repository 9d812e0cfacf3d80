//! The traits `#[derive(Document)]` and `#[derive(Embedded)]` implement.

use odm_engine::{IndexSpec, ShardKey};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A model stored in a collection: what the derive knows about it.
///
/// `#[derive(Document)]` reads these attributes (and serde's `rename`, `rename_all`, `skip`):
/// - on the struct, `#[odm(...)]`: `collection = "name"` (required); `index(keys(a = 1,
///   "b.c" = -1), unique, sparse, name = "..", partial = ..)` for compound and nested indexes;
///   `shard_key(a, b)` or `shard_key(hashed(a))`; `version = N` with `from = Previous` or
///   `migrate = function` for documents of earlier versions; `hooks`, for a model that
///   implements [`crate::Hooks`]; `schema` or `schema(level = "..", action = "..")` for a
///   `$jsonSchema` deployed as the validator (see [`crate::Schema`]);
/// - on a field: `id` (stored as `_id`; exactly one), `index` or `index(unique, sparse, desc,
///   ttl = "30d")`, `embedded` (a type deriving `Embedded`, or a `Vec` or `Option` of one, whose
///   fields get handles); `created_at` and `updated_at` (a `bson::DateTime`, or an `Option` of
///   one, the ODM sets on every write) and `version` (an `i32`, `i64` or `u32` revision that
///   makes saves of a known document conditional); at most one of each; `schema(minimum = ..,
///   max_length = .., pattern = "..", ...)` rules added to the field's schema.
///
/// Mistakes in them (a misspelt field, a TTL on a compound or non-date index, a unique index
/// a shard key does not prefix, ...) are compile errors naming the mistake.
///
/// ```
/// use odm::{Database, Document, Embedded};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Embedded)]
/// struct Address {
///     city: String,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(
///     collection = "customers",
///     index(keys(region = 1, "address.city" = 1)),
///     shard_key(email)
/// )]
/// #[serde(rename_all = "camelCase")]
/// struct Customer {
///     #[odm(id)]
///     customer_id: i64,
///     region: String,
///     #[odm(index(unique))]
///     email: String,
///     #[odm(index(ttl = "30d"))]
///     last_seen: bson::DateTime,
///     #[odm(embedded)]
///     address: Address,
/// }
///
/// assert_eq!(Customer::COLLECTION, "customers");
/// assert_eq!(Customer::ID_FIELD, "customerId");
/// let db = Database::in_memory()?;
/// let plan = db.sync_indexes::<Customer>(false)?;
/// assert!(plan.created.iter().any(|name| name == "region_1_address.city_1"), "{plan}");
/// assert_eq!(Customer::fields().address.city.path(), "address.city");
/// assert_eq!(Customer::fields().customer_id.path(), "_id");
/// # Ok::<(), odm::Error>(())
/// ```
/// Laws the derive upholds (and a hand-written impl must): `COLLECTION` is a valid collection
/// name; every path in `indexes()` and `shard_key()` names a field as serde writes it; the
/// field `ID_FIELD` (serde's name for the id field) is stored as `_id`.
pub trait Document: Serialize + DeserializeOwned + 'static {
    /// The typed field handles, `Self::fields().name`.
    type Fields;
    /// The type of the id field (`#[odm(id)]`), which a [`crate::Ref`] to this model holds.
    type Id;
    /// The collection the model lives in.
    const COLLECTION: &'static str;
    /// Serde's name of the id field; stored under `_id`.
    const ID_FIELD: &'static str;
    /// Whether the model declares a text index (`#[odm(index(text(...)))]`); an enum model's
    /// variants may hold one between them, as a collection has at most one.
    const HAS_TEXT_INDEX: bool = false;
    /// The schema version (`#[odm(version = N)]`); 0 for an unversioned model. Versioned
    /// models store it in each document as `_v`.
    const VERSION: u32 = 0;
    /// Serde's name of the `#[odm(created_at)]` field: set to the time of the insert by every
    /// insert and upsert, and kept by replacements (see [`crate::Timestamp`] for its types).
    const CREATED_AT: Option<&'static str> = None;
    /// Serde's name of the `#[odm(updated_at)]` field: set to the time of every write.
    const UPDATED_AT: Option<&'static str> = None;
    /// Serde's name of the `#[odm(version)]` field: the document's revision, incremented by
    /// every update and replacement; `save`, `update_document` and `delete_document` are
    /// conditional on it (see [`crate::Revision`] for its types and [`crate::Error::VersionConflict`]).
    const REVISION: Option<&'static str> = None;
    fn fields() -> Self::Fields;
    /// The value of the id field.
    fn document_id(&self) -> &Self::Id;
    /// The revision the value holds (0 for a model without one).
    #[doc(hidden)]
    fn revision(&self) -> i64 {
        0
    }
    /// Brings the value's kept fields up to what a write stored.
    #[doc(hidden)]
    fn keep(&mut self, kept: &crate::kept::Kept) {
        let _ = kept;
    }
    /// The model's lifecycle hooks (`#[odm(hooks)]`), if it declares them.
    #[doc(hidden)]
    fn hooks(&self) -> Option<&dyn crate::Hooks> {
        None
    }
    #[doc(hidden)]
    fn hooks_mut(&mut self) -> Option<&mut dyn crate::Hooks> {
        None
    }
    /// The `$jsonSchema` the model deploys as its collection's validator (`#[odm(schema)]`),
    /// with its validation level and action; see [`crate::Schema`].
    fn declared_schema() -> Option<crate::DeclaredSchema> {
        None
    }
    /// Runs the client-side `check` functions of the model's fields and of the embedded
    /// values it holds (`#[odm(schema(check = f))]`, see [`crate::Schema::check`]): the first
    /// refusal, with the refused field's path.
    #[doc(hidden)]
    fn check_fields(&self) -> Result<(), crate::SchemaProblem> {
        Ok(())
    }
    /// Why the model cannot be used, found only at run time (an enum model's shared field
    /// stored under different names by its variants); checked when a collection of it is
    /// first opened.
    #[doc(hidden)]
    fn inconsistency() -> Option<String> {
        None
    }
    /// The indexes the model declares.
    fn indexes() -> Vec<IndexSpec>;
    /// The shard key the model declares, if any.
    fn shard_key() -> Option<ShardKey>;

    /// A stored document of the earlier version `from` as this model: through the previous
    /// model and `From` (`#[odm(from = Previous)]`) or a function (`#[odm(migrate = f)]`).
    fn upgrade(stored: &bson::RawDocument, from: u32) -> Result<Self, String> {
        let _ = stored;
        Err(format!(
            "the document is of schema version {from}, {} is at version {} and declares no migration",
            Self::COLLECTION,
            Self::VERSION
        ))
    }
}

/// A type stored inside documents (a subdocument, or the elements of an array), whose fields
/// have handles too, continuing the path of the field that holds it. Its own `fields()` are
/// relative to one value, for conditions on array elements; output types of aggregations
/// derive it too, for their handles.
///
/// ```
/// use odm::{Database, Document, Embedded};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Embedded)]
/// struct Line {
///     sku: String,
///     qty: u32,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "carts")]
/// struct Cart {
///     #[odm(id)]
///     id: i64,
///     #[odm(embedded)]
///     lines: Vec<Line>,
/// }
///
/// let db = Database::in_memory()?;
/// let carts = db.collection::<Cart>()?;
/// carts.insert_one(&Cart { id: 1, lines: vec![Line { sku: "pen".into(), qty: 3 }] })?;
/// let (f, line) = (Cart::fields(), Line::fields());
/// assert_eq!(f.lines.sku.path(), "lines.sku");
/// // One element that is both a pen and plentiful: `$elemMatch` over the element's handles.
/// let found = carts.count(f.lines.elem_match(line.sku.eq("pen").and(line.qty.gte(2))))?;
/// assert_eq!(found, 1);
/// # Ok::<(), odm::Error>(())
/// ```
pub trait Embedded: Serialize + DeserializeOwned {
    /// Handles on the fields, rooted in the model `R`, for a field whose value type is `W`
    /// (`Self`, or `Vec<Self>` for an array of subdocuments).
    type Fields<R, W>;
    /// The handles under `prefix` (empty for the type's own fields).
    fn fields_at<R, W>(prefix: &str) -> Self::Fields<R, W>;
    /// Handles relative to one value of this type, for `$elemMatch` and `$pull` conditions.
    fn fields() -> Self::Fields<Self, Self>
    where
        Self: Sized,
    {
        Self::fields_at("")
    }
}

/// A path under a prefix: `a.b`, or `b` under no prefix.
#[doc(hidden)]
pub fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        return name.to_owned();
    }
    // Built by hand: handles are made on every typed call, and `format!` costs several times
    // more than the two copies.
    let mut path = String::with_capacity(prefix.len() + 1 + name.len());
    path.push_str(prefix);
    path.push('.');
    path.push_str(name);
    path
}
