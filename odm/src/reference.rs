//! Typed references: [`Ref<T>`] stores the id of a document of the model `T`, with `T`'s id
//! type, so a reference to the wrong model, or of the wrong id type, is a compile error.
//! [`crate::Aggregate::populate`] and [`crate::Aggregate::populate_one`] load the referenced
//! documents through one `$lookup` (never a query per document), and their `_strict` forms
//! fail with [`crate::Error::DanglingReference`] when a reference names no document.

use std::marker::PhantomData;

use bson::Document as BsonDocument;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::Document;
use crate::schema::Schema;

/// A reference to a document of the model `T`: stored as its id, alone.
///
/// ```
/// use odm::{Database, Document, Ref};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "hosts")]
/// struct Host {
///     #[odm(id)]
///     name: String,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "logs")]
/// struct LogLine {
///     #[odm(id)]
///     id: i64,
///     host: Ref<Host>, // stored as the host's name
///     text: String,
/// }
///
/// let db = Database::in_memory()?;
/// let (hosts, logs) = (db.collection::<Host>()?, db.collection::<LogLine>()?);
/// let web = Host { name: "web-1".into() };
/// hosts.insert_one(&web)?;
/// logs.insert_one(&LogLine { id: 1, host: Ref::to(&web), text: "up".into() })?;
/// let f = LogLine::fields();
/// assert_eq!(logs.count(f.host.eq(Ref::to(&web)))?, 1);
/// let line = logs.get(1)?.unwrap();
/// assert_eq!(line.host.id(), "web-1");
/// assert_eq!(line.host.get(&hosts)?.map(|h| h.name), Some("web-1".to_owned()));
/// // `Ref::<Host>::new(7)` does not compile: a host's id is a `String`.
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Ref<T: Document> {
    id: T::Id,
    _model: PhantomData<fn() -> T>,
}

impl<T: Document> Ref<T> {
    /// The reference to the document whose id is `id`.
    pub fn new(id: T::Id) -> Self {
        Ref {
            id,
            _model: PhantomData,
        }
    }

    /// The reference to `value`'s document.
    pub fn to(value: &T) -> Self
    where
        T::Id: Clone,
    {
        Ref::new(value.document_id().clone())
    }

    /// The id it holds.
    pub fn id(&self) -> &T::Id {
        &self.id
    }

    /// The referenced document, read from `collection`; one read. To load the references of
    /// many documents, populate them in an aggregation instead.
    pub fn get(&self, collection: &crate::Collection<T>) -> crate::Result<Option<T>>
    where
        T::Id: Serialize,
    {
        let id = crate::txn::serialized(collection.name(), bson::serialize_to_bson(&self.id))?;
        collection.get(id)
    }
}

impl<T: Document> Clone for Ref<T>
where
    T::Id: Clone,
{
    fn clone(&self) -> Self {
        Ref::new(self.id.clone())
    }
}

impl<T: Document> std::fmt::Debug for Ref<T>
where
    T::Id: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ref<{}>({:?})", T::COLLECTION, self.id)
    }
}

impl<T: Document> PartialEq for Ref<T>
where
    T::Id: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<T: Document> Eq for Ref<T> where T::Id: Eq {}

impl<T: Document> std::hash::Hash for Ref<T>
where
    T::Id: std::hash::Hash,
{
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl<T: Document> Serialize for Ref<T>
where
    T::Id: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.id.serialize(serializer)
    }
}

impl<'de, T: Document> Deserialize<'de> for Ref<T>
where
    T::Id: DeserializeOwned,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::Id::deserialize(deserializer).map(Ref::new)
    }
}

/// A reference's schema is its model's id's.
impl<T: Document> Schema for Ref<T>
where
    T::Id: Schema,
{
    const OPTIONAL: bool = <T::Id as Schema>::OPTIONAL;
    fn json_schema() -> BsonDocument {
        <T::Id as Schema>::json_schema()
    }
}

/// The field types that reference documents of `F`: one reference, an optional one, or an
/// array of them.
pub trait References<F: Document> {}
impl<F: Document> References<F> for Ref<F> {}
impl<F: Document> References<F> for Option<Ref<F>> {}
impl<F: Document> References<F> for Vec<Ref<F>> {}

/// The field types that reference at most one document of `F`.
pub trait ReferencesOne<F: Document>: References<F> {}
impl<F: Document> ReferencesOne<F> for Ref<F> {}
impl<F: Document> ReferencesOne<F> for Option<Ref<F>> {}
