//! `Collection<T>` for async code: each of the sync collection's operations as a future.

use bson::Bson;

use crate::collection::ModifyOptions;
use crate::error::Result;
use crate::field::Field;
use crate::filter::Filter;
use crate::indexes::{Index, IndexPlan};
use crate::model::Document;
use crate::txn::WriteModel;
use crate::update::Update;
use crate::{Aggregate, Durability, Find, UpdateOptions, UpdateResult, Watch};

use super::{inline, pool};

/// A model's collection, for async code; cheap to clone. Each method runs the sync
/// [`crate::Collection`]'s method of the same name on a worker (reads and eventual single
/// inserts on the embedded engine start on the calling thread: see [`super::INLINE_SLICE`]);
/// see there for what it does.
///
/// Finds and aggregations are built with the sync builders ([`Collection::find`],
/// [`Collection::aggregate`]) and run by [`super::Query`]'s async methods.
pub struct Collection<T> {
    inner: crate::Collection<T>,
}

impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection {
            inner: self.inner.clone(),
        }
    }
}

impl<T> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Collection").field(&self.inner).finish()
    }
}

impl<T: Document + Send + Sync + 'static> Collection<T> {
    pub(super) fn new(inner: crate::Collection<T>) -> Self {
        Collection { inner }
    }

    /// The sync API over the same collection.
    pub fn blocking(&self) -> &crate::Collection<T> {
        &self.inner
    }

    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The same collection, committing with this durability.
    #[must_use]
    pub fn with_durability(self, durability: Durability) -> Self {
        Collection {
            inner: self.inner.with_durability(durability),
        }
    }

    /// Runs `work` on the sync collection on a worker: any operation this type has no async
    /// method for (`explain`, `migrate`, `schema_violations`, ...).
    pub async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&crate::Collection<T>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let inner = self.inner.clone();
        pool::run(move || work(&inner)).await
    }

    /// Inserts `value`; returns its `_id`. With eventual durability on the embedded engine it
    /// runs on the calling task's thread first, for a slice (see [`super::INLINE_SLICE`]).
    pub async fn insert_one(&self, value: T) -> Result<Bson> {
        if self.inserts_inline(&value)
            && let Some(done) = inline::attempt(|| self.inner.insert_one(&value))
        {
            return done;
        }
        self.run(move |c| c.insert_one(&value)).await
    }

    /// Whether inserting `value` may start on the calling task's thread: an insert bounded by
    /// the one document that waits for no disk (see [`inline`]).
    fn inserts_inline(&self, value: &T) -> bool {
        let db = self.inner.database();
        db.engine().is_some()
            && self.inner.durability() == Durability::Eventual
            && db.is_synced::<T>(self.inner.name())
            && value.hooks().is_none()
    }

    /// Inserts all of `values` or none; see [`crate::Collection::insert_many`].
    pub async fn insert_many(&self, values: Vec<T>) -> Result<Vec<Bson>> {
        self.run(move |c| c.insert_many(&values)).await
    }

    /// Runs the read `work` on the sync collection: on this thread first, for a slice, on
    /// the embedded engine (see [`super::INLINE_SLICE`]).
    async fn read<R: Send + 'static>(
        &self,
        work: impl Fn(&crate::Collection<T>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let inner = self.inner.clone();
        let inline = inner.database().engine().is_some();
        inline::read(inline, move || work(&inner)).await
    }

    pub async fn get(&self, id: impl Into<Bson>) -> Result<Option<T>> {
        let id = id.into();
        self.read(move |c| c.get(id.clone())).await
    }

    /// A find to refine and run with [`super::Query`]'s methods.
    pub fn find(&self, filter: impl Into<Filter<T>>) -> Find<T> {
        self.inner.find(filter)
    }

    pub async fn find_one(&self, filter: impl Into<Filter<T>>) -> Result<Option<T>> {
        let filter = filter.into();
        self.read(move |c| c.find_one(filter.clone())).await
    }

    pub async fn count(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = filter.into();
        self.read(move |c| c.count(filter.clone())).await
    }

    /// An aggregation to build and run with [`super::Query`]'s methods.
    pub fn aggregate(&self) -> Aggregate<T> {
        self.inner.aggregate()
    }

    pub async fn distinct<V: 'static>(
        &self,
        field: &Field<T, V>,
        filter: impl Into<Filter<T>>,
    ) -> Result<Vec<Bson>> {
        let (field, filter) = (field.clone(), filter.into());
        self.read(move |c| c.distinct(&field, filter.clone())).await
    }

    pub async fn update_one(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |c| c.update_one(filter, update)).await
    }

    pub async fn upsert_one(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |c| c.upsert_one(filter, update)).await
    }

    pub async fn update_one_with(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |c| c.update_one_with(filter, update, &options))
            .await
    }

    pub async fn update_many(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |c| c.update_many(filter, update)).await
    }

    pub async fn replace_one(
        &self,
        filter: impl Into<Filter<T>>,
        value: T,
    ) -> Result<UpdateResult> {
        let filter = filter.into();
        self.run(move |c| c.replace_one(filter, &value)).await
    }

    /// Saves `value` (see [`crate::Collection::save`]) and gives it back with the fields the
    /// save keeps (its revision, its timestamps) updated.
    pub async fn save(&self, mut value: T) -> Result<(T, UpdateResult)> {
        self.run(move |c| c.save(&mut value).map(|result| (value, result)))
            .await
    }

    pub async fn update_document(
        &self,
        value: T,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let update = update.into();
        self.run(move |c| c.update_document(&value, update)).await
    }

    pub async fn delete_document(&self, value: T) -> Result<u64> {
        self.run(move |c| c.delete_document(&value)).await
    }

    pub async fn delete_one(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = filter.into();
        self.run(move |c| c.delete_one(filter)).await
    }

    pub async fn delete_many(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = filter.into();
        self.run(move |c| c.delete_many(filter)).await
    }

    pub async fn find_one_and_update(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |c| c.find_one_and_update(filter, update, &options))
            .await
    }

    pub async fn find_one_and_replace(
        &self,
        filter: impl Into<Filter<T>>,
        value: T,
        options: ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = filter.into();
        self.run(move |c| c.find_one_and_replace(filter, &value, &options))
            .await
    }

    pub async fn find_one_and_delete(
        &self,
        filter: impl Into<Filter<T>>,
        options: ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = filter.into();
        self.run(move |c| c.find_one_and_delete(filter, &options))
            .await
    }

    pub async fn bulk_write(
        &self,
        models: Vec<WriteModel<T>>,
        ordered: bool,
    ) -> Result<crate::BulkResult> {
        self.run(move |c| c.bulk_write(models, ordered)).await
    }

    pub async fn sync_indexes(&self, drop_undeclared: bool) -> Result<IndexPlan> {
        self.run(move |c| c.sync_indexes(drop_undeclared)).await
    }

    pub async fn create_index(&self, index: Index<T>) -> Result<String> {
        self.run(move |c| c.create_index(index)).await
    }

    /// The collection's changes, as a [`Watch`] to refine and open with
    /// [`super::Subscribe::stream`].
    pub fn watch(&self) -> Watch<T> {
        self.inner.watch()
    }
}
