//! An enum model's variant for async code: each of [`crate::VariantCollection`]'s operations
//! as a future, and its finds run by [`super::Query`].

use std::future::Future;

use bson::Bson;

use crate::collection::ModifyOptions;
use crate::error::Result;
use crate::filter::Filter;
use crate::model::Document;
use crate::update::Update;
use crate::variant::{Variant, VariantCollection as Blocking, VariantFind};
use crate::{Aggregate, UpdateResult};

use super::stream::{self, Sink};
use super::{Collection, Query, inline, pool};

/// The documents of one variant `V` of an enum model `E`, for async code; cheap to clone.
/// Each method runs the sync [`crate::VariantCollection`]'s method of the same name; see
/// there for what it does.
pub struct VariantCollection<E, V> {
    inner: Blocking<E, V>,
}

impl<E, V> Clone for VariantCollection<E, V> {
    fn clone(&self) -> Self {
        VariantCollection {
            inner: self.inner.clone(),
        }
    }
}

impl<E, V: Document> std::fmt::Debug for VariantCollection<E, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("VariantCollection")
            .field(&self.inner)
            .finish()
    }
}

impl<E: Document + Send + Sync + 'static> Collection<E> {
    /// The documents of the variant `V` (see [`crate::VariantCollection`]).
    pub fn variant<V: Variant<E>>(&self) -> VariantCollection<E, V> {
        VariantCollection {
            inner: self.blocking().variant::<V>(),
        }
    }
}

impl<E, V> VariantCollection<E, V>
where
    E: Document + Send + Sync + 'static,
    V: Variant<E> + Send + Sync + 'static,
{
    /// The sync API over the same documents.
    pub fn blocking(&self) -> &Blocking<E, V> {
        &self.inner
    }

    /// Runs `work` on the sync variant collection on a worker.
    pub async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&Blocking<E, V>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let inner = self.inner.clone();
        pool::run(move || work(&inner)).await
    }

    /// Runs the read `work`: on this thread first, for a slice, on the embedded engine.
    async fn read<R: Send + 'static>(
        &self,
        work: impl Fn(&Blocking<E, V>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let inner = self.inner.clone();
        let inline = self.inner.collection().database().engine().is_some();
        inline::read(inline, move || work(&inner)).await
    }

    /// Inserts a `V`, stored with its discriminator; returns its `_id`.
    pub async fn insert_one(&self, value: V) -> Result<Bson> {
        self.run(move |c| c.insert_one(&value)).await
    }

    /// A find to refine and run with [`super::Query`]'s methods.
    pub fn find(&self, filter: impl Into<Filter<V>>) -> VariantFind<E, V> {
        self.inner.find(filter)
    }

    pub async fn find_one(&self, filter: impl Into<Filter<V>>) -> Result<Option<V>> {
        let filter = filter.into();
        self.read(move |c| c.find_one(filter.clone())).await
    }

    /// An aggregation over the documents of `V`, to build and run with [`super::Query`].
    pub fn aggregate(&self) -> Aggregate<E, V, V> {
        self.inner.aggregate()
    }

    pub async fn count(&self, filter: impl Into<Filter<V>>) -> Result<u64> {
        let filter = filter.into();
        self.read(move |c| c.count(filter.clone())).await
    }

    pub async fn update_one(
        &self,
        filter: impl Into<Filter<V>>,
        update: impl Into<Update<V>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |c| c.update_one(filter, update)).await
    }

    pub async fn update_many(
        &self,
        filter: impl Into<Filter<V>>,
        update: impl Into<Update<V>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |c| c.update_many(filter, update)).await
    }

    pub async fn find_one_and_update(
        &self,
        filter: impl Into<Filter<V>>,
        update: impl Into<Update<V>>,
        options: ModifyOptions<V>,
    ) -> Result<Option<V>> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |c| c.find_one_and_update(filter, update, &options))
            .await
    }

    pub async fn find_one_and_delete(
        &self,
        filter: impl Into<Filter<V>>,
        options: ModifyOptions<V>,
    ) -> Result<Option<V>> {
        let filter = filter.into();
        self.run(move |c| c.find_one_and_delete(filter, &options))
            .await
    }

    pub async fn delete_one(&self, filter: impl Into<Filter<V>>) -> Result<u64> {
        let filter = filter.into();
        self.run(move |c| c.delete_one(filter)).await
    }

    pub async fn delete_many(&self, filter: impl Into<Filter<V>>) -> Result<u64> {
        let filter = filter.into();
        self.run(move |c| c.delete_many(filter)).await
    }
}

/// A variant's find runs as the enum's find it holds, its results read as `V`.
impl<E, V> Query for VariantFind<E, V>
where
    E: Document + Send + Sync + 'static,
    V: Variant<E> + Send + 'static,
{
    type Item = V;
    type Explain = odm_engine::query::Explain;

    async fn fetch_all(self) -> Result<Vec<V>> {
        let found = self.into_find()?.fetch_all().await?;
        Ok(found.into_iter().filter_map(V::from_model).collect())
    }

    async fn fetch_one(self) -> Result<Option<V>> {
        Ok(self.into_find()?.fetch_one().await?.and_then(V::from_model))
    }

    fn stream(self) -> impl Future<Output = Result<stream::Stream<V>>> + Send {
        stream::open(move || {
            let producer = self.into_find()?.iter()?.into_producer();
            Ok(move |sink: &Sink<V>| {
                producer(&mut |found| match found.map(V::from_model).transpose() {
                    Some(item) => sink.send(item),
                    None => true,
                });
            })
        })
    }

    fn fetch_explain(self) -> impl Future<Output = Result<Self::Explain>> + Send {
        pool::run(move || self.explain())
    }
}
