//! Enum models (S14, single-collection inheritance): several shapes in one collection, typed.
//!
//! `#[derive(Document)]` on an enum whose variants each hold one model (`Book(Book)`), stored
//! with serde's internally tagged representation (`#[serde(tag = "type")]`, any tag name):
//! - each variant's model is a [`Variant`] of the enum, with its discriminator value (serde's
//!   name of the variant, after `rename_all` and `rename`);
//! - the enum's handles are the discriminator (`tag`), the shared `_id` (`id`), the fields
//!   every variant has, declared on the enum (`#[odm(shared(title: String))]`), and each
//!   variant's own handles (`Item::fields().volume.series_title`), rooted in that variant:
//!   a filter on a variant's field is a `Filter<Volume>`, which only that variant's
//!   [`VariantCollection`] takes, and it adds the discriminator to every filter;
//! - an index a variant declares is partial on its discriminator (MongoDB's
//!   `partialFilterExpression`), and named with the discriminator's value appended;
//! - a query through [`crate::Collection::variant`] returns the variant's own type.
//!
//! Every variant's model names the enum's collection, and all call their id the same and
//! give it the same type; the derive checks both at compile time, and that every variant's
//! model has each shared field with its declared type. That they store it under one name
//! (serde's renames may differ) is checked when a collection of the enum is first opened
//! ([`Error::InconsistentModel`]). Write variants through the
//! enum's collection or its variant views, not through a collection of the variant's model
//! alone, which would store them without the discriminator.

use std::marker::PhantomData;

use bson::{Bson, RawDocument, RawDocumentBuf, doc};
use odm_engine::IndexSpec;

use crate::aggregate::Aggregate;
use crate::codec::to_raw;
use crate::collection::{Collection, Find, ModifyOptions};
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::hooks::{self, Write};
use crate::kept;
use crate::model::Document;
use crate::sort::Sort;
use crate::txn::serialized;
use crate::update::Update;

/// A model stored as one variant of the enum model `E`; the derive on `E` implements it.
pub trait Variant<E: Document>: Document {
    /// The discriminator field, as serde writes it (`#[serde(tag = "...")]` on `E`).
    const TAG_FIELD: &'static str;
    /// This variant's value of the discriminator.
    const TAG: &'static str;
    /// The enum holding this variant.
    fn into_model(self) -> E;
    /// This variant out of the enum, if the enum holds it.
    fn from_model(model: E) -> Option<Self>;
}

/// The indexes `V` declares, each partial on its discriminator and named with it appended.
#[doc(hidden)]
pub fn variant_indexes<V: Document>(tag_field: &str, tag: &str) -> Vec<IndexSpec> {
    V::indexes()
        .into_iter()
        .filter_map(|spec| {
            let mut partial = doc! { tag_field: tag };
            if let Some(existing) = spec.partial_filter() {
                partial.extend(existing.document().clone());
            }
            let name = format!("{}_{tag}", spec.name());
            // A partial filter of equalities and the variant's own always parses.
            spec.partial(partial).ok().map(|spec| spec.named(&name))
        })
        .collect()
}

/// Whether two strings are equal, in a constant (the derive's compile-time checks).
#[doc(hidden)]
pub const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The documents of one variant `V` of the enum model `E`: every filter and update is `V`'s,
/// every filter is joined to `V`'s discriminator, and results are `V`s. Made by
/// [`Collection::variant`].
///
/// ```
/// use odm::{Database, Document, Filter};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "items")]
/// struct Book {
///     #[odm(id)]
///     id: i64,
///     title: String,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "items", index(keys(series = 1, volume = 1), unique))]
/// struct Volume {
///     #[odm(id)]
///     id: i64,
///     title: String,
///     series: String,
///     volume: i32,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "items")]
/// #[serde(tag = "type", rename_all = "lowercase")]
/// enum Item {
///     Book(Book),
///     Volume(Volume),
/// }
///
/// let db = Database::in_memory()?;
/// let items = db.collection::<Item>()?; // the volume index, partial on {type: "volume"}
/// items.insert_one(&Item::Book(Book { id: 1, title: "Dune".into() }))?;
/// let volumes = items.variant::<Volume>();
/// volumes.insert_one(&Volume { id: 2, title: "Foundation".into(), series: "Foundation".into(), volume: 1 })?;
/// let v = Item::fields().volume;
/// let found: Vec<Volume> = volumes.find(v.series.eq("Foundation")).to_vec()?;
/// assert_eq!(found[0].volume, 1);
/// assert_eq!(items.count(Filter::all())?, 2);
/// assert_eq!(items.count(Item::fields().tag.eq("book"))?, 1);
/// # Ok::<(), odm::Error>(())
/// ```
pub struct VariantCollection<E, V> {
    collection: Collection<E>,
    _variant: PhantomData<fn() -> V>,
}

impl<E, V> Clone for VariantCollection<E, V> {
    fn clone(&self) -> Self {
        VariantCollection {
            collection: self.collection.clone(),
            _variant: PhantomData,
        }
    }
}

impl<E, V: Document> std::fmt::Debug for VariantCollection<E, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VariantCollection({})", std::any::type_name::<V>())
    }
}

impl<E: Document> Collection<E> {
    /// The documents of the variant `V` (see [`VariantCollection`]).
    pub fn variant<V: Variant<E>>(&self) -> VariantCollection<E, V> {
        VariantCollection {
            collection: self.clone(),
            _variant: PhantomData,
        }
    }
}

impl<E: Document, V: Variant<E>> VariantCollection<E, V> {
    /// `filter` joined to the variant's discriminator, as a filter of the enum.
    fn tagged(&self, filter: impl Into<Filter<V>>) -> Result<Filter<E>> {
        let mut tagged = doc! { V::TAG_FIELD: V::TAG };
        let own = serialized(self.collection.name(), filter.into().into_document())?;
        if !own.is_empty() {
            tagged = doc! { "$and": [tagged, own] };
        }
        Ok(Filter::from(tagged))
    }

    /// The variant's update, with its kept fields, as an update of the enum.
    fn update_of(&self, update: impl Into<Update<V>>, upsert: bool) -> Result<Update<E>> {
        let update = serialized(self.collection.name(), update.into().into_modifications())?;
        match kept::updated::<V>(update, upsert, kept::now()) {
            odm_engine::update::UpdateModifications::Document(operators) => {
                Ok(Update::from(operators))
            }
            odm_engine::update::UpdateModifications::Pipeline(stages) => {
                Ok(Update::pipeline(stages))
            }
        }
    }

    /// The enum's collection the variant's documents are in.
    #[cfg(feature = "async")]
    pub(crate) fn collection(&self) -> &Collection<E> {
        &self.collection
    }

    /// Inserts a `V`, stored with its discriminator first; returns its `_id`.
    pub fn insert_one(&self, value: &V) -> Result<Bson> {
        let name = self.collection.name();
        hooks::before(value, Write::Insert, name)?;
        let raw = kept::inserted::<V>(to_raw(value, name)?, kept::now(), None, name)?;
        let mut tagged = RawDocumentBuf::new();
        let tag_field =
            bson::raw::CString::try_from(V::TAG_FIELD).map_err(|e| Error::serialize(name, e))?;
        tagged.append(&tag_field, V::TAG);
        for element in &raw {
            let (key, value) = element.map_err(|e| Error::serialize(name, e))?;
            if key.as_str() != V::TAG_FIELD {
                tagged.append(key, value);
            }
        }
        let id = self.collection.insert_raw(tagged)?;
        hooks::after(value, Write::Insert, &id);
        Ok(id)
    }

    /// The `V`s the filter matches, to sort, page and read (see [`VariantFind`]).
    pub fn find(&self, filter: impl Into<Filter<V>>) -> VariantFind<E, V> {
        VariantFind {
            find: self
                .tagged(filter)
                .map(|filter| self.collection.find(filter)),
            _variant: PhantomData,
        }
    }

    /// The first `V` the filter matches.
    pub fn find_one(&self, filter: impl Into<Filter<V>>) -> Result<Option<V>> {
        self.find(filter).first()
    }

    /// An aggregation over the documents of `V`: it starts with `$match` on the
    /// discriminator, its stages take the variant's handles, and it reads `V`s until a stage
    /// reshapes them.
    pub fn aggregate(&self) -> Aggregate<E, V, V> {
        self.collection
            .aggregate()
            .filter(Filter::from(doc! { V::TAG_FIELD: V::TAG }))
            .reshaped(decode_variant::<E, V>)
    }

    pub fn count(&self, filter: impl Into<Filter<V>>) -> Result<u64> {
        self.collection.count(self.tagged(filter)?)
    }

    pub fn update_one(
        &self,
        filter: impl Into<Filter<V>>,
        update: impl Into<Update<V>>,
    ) -> Result<odm_engine::update::UpdateResult> {
        let filter = self.tagged(filter)?;
        self.collection
            .update_one(filter, self.update_of(update, false)?)
    }

    pub fn update_many(
        &self,
        filter: impl Into<Filter<V>>,
        update: impl Into<Update<V>>,
    ) -> Result<odm_engine::update::UpdateResult> {
        let filter = self.tagged(filter)?;
        self.collection
            .update_many(filter, self.update_of(update, false)?)
    }

    /// Updates the first `V` the filter matches, in the options' order, and returns it before
    /// or after the update; an upsert stores the discriminator with the filter's equalities.
    pub fn find_one_and_update(
        &self,
        filter: impl Into<Filter<V>>,
        update: impl Into<Update<V>>,
        options: &ModifyOptions<V>,
    ) -> Result<Option<V>> {
        let filter = self.tagged(filter)?;
        let update = self.update_of(update, options.upsert)?;
        let found = self
            .collection
            .find_one_and_update(filter, update, &of_enum(options))?;
        Ok(found.and_then(V::from_model))
    }

    /// Deletes the first `V` the filter matches, in the options' order, and returns it.
    pub fn find_one_and_delete(
        &self,
        filter: impl Into<Filter<V>>,
        options: &ModifyOptions<V>,
    ) -> Result<Option<V>> {
        let filter = self.tagged(filter)?;
        let found = self
            .collection
            .find_one_and_delete(filter, &of_enum(options))?;
        Ok(found.and_then(V::from_model))
    }

    pub fn delete_one(&self, filter: impl Into<Filter<V>>) -> Result<u64> {
        self.collection.delete_one(self.tagged(filter)?)
    }

    pub fn delete_many(&self, filter: impl Into<Filter<V>>) -> Result<u64> {
        self.collection.delete_many(self.tagged(filter)?)
    }
}

/// A variant's find-and-modify options as the enum's (the sort's paths are the same).
fn of_enum<E, V>(options: &ModifyOptions<V>) -> ModifyOptions<E> {
    ModifyOptions {
        sort: options
            .sort
            .as_ref()
            .map(|sort| Sort::from(sort.to_document().clone())),
        upsert: options.upsert,
        return_after: options.return_after,
    }
}

/// A document of the enum model `E` read as its variant `V`: any other variant is an error
/// naming the document.
fn decode_variant<E: Document, V: Variant<E>>(raw: &RawDocument, collection: &str) -> Result<V> {
    V::from_model(crate::codec::from_raw::<E>(raw, collection)?).ok_or_else(|| {
        Error::AggregateOutput {
            collection: collection.to_owned(),
            output: std::any::type_name::<V>(),
            id: odm_engine::decode::id_text(raw),
            reason: format!("it is not of the variant `{}`", V::TAG),
        }
    })
}

/// A find over the documents of one variant ([`VariantCollection::find`]): sorted by the
/// variant's handles, paged, and read as `V`.
#[must_use]
pub struct VariantFind<E, V> {
    /// The enum's find, with the discriminator in its filter; or why the filter could not be
    /// written.
    find: Result<Find<E>>,
    _variant: PhantomData<fn() -> V>,
}

impl<E, V> std::fmt::Debug for VariantFind<E, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VariantFind({})", std::any::type_name::<V>())
    }
}

impl<E: Document, V: Variant<E>> VariantFind<E, V> {
    fn then(self, step: impl FnOnce(Find<E>) -> Find<E>) -> Self {
        VariantFind {
            find: self.find.map(step),
            _variant: PhantomData,
        }
    }

    /// Sorted by the variant's fields.
    pub fn sort(self, sort: Sort<V>) -> Self {
        self.then(|find| find.sort(Sort::from(sort.to_document().clone())))
    }

    /// Skips the first `n` matches.
    pub fn skip(self, n: u64) -> Self {
        self.then(|find| find.skip(n))
    }

    /// At most `n` matches.
    pub fn limit(self, n: u64) -> Self {
        self.then(|find| find.limit(n))
    }

    /// The matches, in order.
    pub fn to_vec(self) -> Result<Vec<V>> {
        let found = self.find?.to_vec()?;
        Ok(found.into_iter().filter_map(V::from_model).collect())
    }

    /// The matches streamed from one snapshot, a batch at a time, as [`Find::iter`] streams
    /// them.
    #[allow(clippy::iter_not_returning_iterator)]
    pub fn iter(self) -> Result<impl Iterator<Item = Result<V>>>
    where
        E: Send + 'static,
    {
        let cursor = self.find?.iter()?;
        Ok(cursor.filter_map(|found| found.map(V::from_model).transpose()))
    }

    /// The first match.
    pub fn first(self) -> Result<Option<V>> {
        Ok(self.find?.first()?.and_then(V::from_model))
    }

    /// How the find runs (the index used, keys and documents examined).
    pub fn explain(self) -> Result<odm_engine::query::Explain> {
        self.find?.explain()
    }

    /// The enum's find this one reads through (its filter holds the discriminator), or why
    /// it could not be built.
    #[cfg(feature = "async")]
    pub(crate) fn into_find(self) -> Result<Find<E>> {
        self.find
    }
}
