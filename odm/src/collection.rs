//! `Collection<T>`: the typed operations on one model's collection.
//!
//! Reads run on a snapshot and decode stored bytes straight into `T`; writes each run in their
//! own transaction through [`Txn`](crate::Txn). Filters and updates are typed by `T`, and a plain
//! `bson::Document` converts into either where the typed API falls short.

use std::marker::PhantomData;

use bson::Bson;
use odm_engine::query::{Explain, FindOptions};
use odm_engine::update::{BulkResult, UpdateOptions, UpdateResult};

use crate::codec::{from_raw, id_alias};
use crate::database::{Database, WriteModel};
use crate::error::{Error, Result};
use crate::field::Field;
use crate::filter::Filter;
use crate::indexes::IndexPlan;
use crate::model::Document;
use crate::sort::{Projection, Sort};
use crate::update::Update;

/// The collection of the model `T`; get it with [`Database::collection`].
pub struct Collection<T> {
    db: Database,
    _model: PhantomData<fn() -> T>,
}

impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection {
            db: self.db.clone(),
            _model: PhantomData,
        }
    }
}

impl<T: Document> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Collection({})", T::COLLECTION)
    }
}

/// Options of `find_one_and_update`, `find_one_and_replace` and `find_one_and_delete`.
#[derive(Debug)]
pub struct ModifyOptions<T> {
    /// Which match: the first in this order.
    pub sort: Option<Sort<T>>,
    pub upsert: bool,
    /// Return the document after the update (otherwise before).
    pub return_after: bool,
}

impl<T> Default for ModifyOptions<T> {
    fn default() -> Self {
        ModifyOptions {
            sort: None,
            upsert: false,
            return_after: false,
        }
    }
}

fn filter_document<T: Document>(filter: Filter<T>) -> Result<bson::Document> {
    filter.into_document().map_err(|reason| Error::Serialize {
        collection: T::COLLECTION.to_owned(),
        reason,
    })
}

impl<T: Document> Collection<T> {
    pub(crate) fn new(db: Database) -> Self {
        Collection {
            db,
            _model: PhantomData,
        }
    }

    /// The handles on `T`'s fields.
    pub fn fields(&self) -> T::Fields {
        T::fields()
    }

    pub fn insert_one(&self, value: &T) -> Result<Bson> {
        self.db.write(|t| t.insert_one(value))
    }

    /// Inserts all of `values` or, when one is refused, none.
    pub fn insert_many<'v>(&self, values: impl IntoIterator<Item = &'v T>) -> Result<Vec<Bson>> {
        self.db.write(|t| t.insert_many(values))
    }

    /// The document with this `_id`.
    pub fn get(&self, id: impl Into<Bson>) -> Result<Option<T>> {
        let id = id.into();
        let txn = self.db.engine().read()?;
        let Some(coll) = txn.collection(T::COLLECTION)? else {
            return Ok(None);
        };
        coll.get(&id)?
            .map(|stored| from_raw::<T>(stored.as_raw()?))
            .transpose()
    }

    /// A find, refined with the builder's methods and run by `to_vec`, `first` or `explain`.
    pub fn find(&self, filter: impl Into<Filter<T>>) -> Find<T> {
        Find {
            db: self.db.clone(),
            filter: filter.into(),
            sort: None,
            skip: 0,
            limit: None,
            hint: None,
            collation: None,
        }
    }

    pub fn find_one(&self, filter: impl Into<Filter<T>>) -> Result<Option<T>> {
        self.find(filter).first()
    }

    pub fn count(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = filter_document(filter.into())?;
        let txn = self.db.engine().read()?;
        match txn.collection(T::COLLECTION)? {
            Some(coll) => Ok(coll.count_matching(&filter, 0, 0)?),
            None => Ok(0),
        }
    }

    /// Runs an aggregation pipeline over the collection (stages and accumulators as
    /// [`odm_engine::aggregate`] lists; a leading `$match` uses indexes). The stages shape
    /// their own output, so results come back as plain documents.
    pub fn aggregate(&self, pipeline: &[bson::Document]) -> Result<Vec<bson::Document>> {
        let txn = self.db.engine().read()?;
        match txn.collection(T::COLLECTION)? {
            Some(coll) => Ok(coll.aggregate(
                pipeline,
                &odm_engine::aggregate::AggregateOptions::default(),
            )?),
            None => Ok(Vec::new()),
        }
    }

    /// The distinct values of a field among matches (array elements counted one by one).
    pub fn distinct<V>(
        &self,
        field: &Field<T, V>,
        filter: impl Into<Filter<T>>,
    ) -> Result<Vec<Bson>> {
        let filter = filter_document(filter.into())?;
        let txn = self.db.engine().read()?;
        match txn.collection(T::COLLECTION)? {
            Some(coll) => Ok(coll.distinct(field.path(), &filter)?),
            None => Ok(Vec::new()),
        }
    }

    pub fn update_one(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        self.update_one_with(filter, update, &UpdateOptions::default())
    }

    /// Updates the first match, or inserts a document seeded from the filter's equalities.
    pub fn upsert_one(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let options = UpdateOptions {
            upsert: true,
            ..UpdateOptions::default()
        };
        self.update_one_with(filter, update, &options)
    }

    /// `update_one` with the engine's options (upsert, array filters, sort, hint).
    pub fn update_one_with(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.db.write(|t| t.update_one(filter, update, options))
    }

    /// Updates every match, all or nothing.
    pub fn update_many(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.db
            .write(|t| t.update_many(filter, update, &UpdateOptions::default()))
    }

    /// Replaces the first match with `value`.
    pub fn replace_one(&self, filter: impl Into<Filter<T>>, value: &T) -> Result<UpdateResult> {
        let filter = filter.into();
        self.db.write(|t| t.replace_one(filter, value, false))
    }

    pub fn delete_one(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = filter.into();
        self.db.write(|t| t.delete_one(filter))
    }

    pub fn delete_many(&self, filter: impl Into<Filter<T>>) -> Result<u64> {
        let filter = filter.into();
        self.db.write(|t| t.delete_many(filter))
    }

    pub fn find_one_and_update(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let (filter, update) = (filter.into(), update.into());
        self.db
            .write(|t| t.find_one_and_update(filter, update, options))
    }

    /// Replaces the first match with `value`; see [`Txn::find_one_and_replace`](crate::Txn::find_one_and_replace).
    pub fn find_one_and_replace(
        &self,
        filter: impl Into<Filter<T>>,
        value: &T,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = filter.into();
        self.db
            .write(|t| t.find_one_and_replace(filter, value, options))
    }

    /// A mix of writes in one transaction; see [`Txn::bulk_write`](crate::Txn::bulk_write). The operations that
    /// succeeded are committed, the failures reported by position.
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = WriteModel<T>>,
        ordered: bool,
    ) -> Result<BulkResult> {
        self.db.write(|t| t.bulk_write(models, ordered))
    }

    pub fn find_one_and_delete(
        &self,
        filter: impl Into<Filter<T>>,
        options: &ModifyOptions<T>,
    ) -> Result<Option<T>> {
        let filter = filter.into();
        self.db.write(|t| t.find_one_and_delete(filter, options))
    }

    /// Rewrites every document of an earlier schema version at the model's version (reads
    /// migrate lazily anyway); returns how many were rewritten. All or nothing.
    pub fn migrate(&self) -> Result<u64> {
        if T::VERSION == 0 {
            return Ok(0);
        }
        let outdated = bson::doc! { "$or": [
            { "_v": { "$exists": false } },
            { "_v": { "$lt": i64::from(T::VERSION) } },
        ] };
        let ids: Vec<Bson> = {
            let txn = self.db.engine().read()?;
            let Some(coll) = txn.collection(T::COLLECTION)? else {
                return Ok(0);
            };
            let options = FindOptions {
                projection: Some(bson::doc! { "_id": 1 }),
                ..FindOptions::default()
            };
            coll.find(&outdated, &options)?
                .map(|doc| doc.map(|d| d.get("_id").cloned().unwrap_or(Bson::Null)))
                .collect::<odm_engine::Result<_>>()?
        };
        self.db.write(|t| {
            let mut rewritten = 0;
            for id in &ids {
                let Some(stored) = t.inner.get(T::COLLECTION, id)? else {
                    continue;
                };
                if crate::codec::stored_version(&stored) >= T::VERSION {
                    continue;
                }
                let current = crate::codec::to_raw(&from_raw::<T>(&stored)?)?;
                t.inner.replace_by_id(T::COLLECTION, id, current)?;
                rewritten += 1;
            }
            Ok(rewritten)
        })
    }

    /// Creates missing declared indexes and reports stored ones the model does not declare,
    /// dropping them when `drop_undeclared`.
    pub fn sync_indexes(&self, drop_undeclared: bool) -> Result<IndexPlan> {
        self.db.sync_indexes::<T>(drop_undeclared)
    }
}

/// How many matches a [`FindIter`] reads ahead of its caller.
pub const STREAM_BUFFER: usize = 64;

/// The matches of a find, pulled one at a time; see [`Find::stream`].
#[derive(Debug)]
pub struct FindIter<T> {
    /// `None` once dropped, so that the reader stops before it is joined.
    receiver: Option<std::sync::mpsc::Receiver<Result<T>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl<T> Iterator for FindIter<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        self.receiver.as_ref()?.recv().ok()
    }
}

impl<T> Drop for FindIter<T> {
    fn drop(&mut self) {
        self.receiver = None;
        if let Some(reader) = self.reader.take() {
            // The reader's next send fails and it returns; a panic in it was already reported.
            let _ = reader.join();
        }
    }
}

/// Runs a find in `txn` and gives each match, decoded, to `f` until it returns `Ok(false)`.
fn each_match<T: Document>(
    txn: &odm_engine::ReadTxn,
    filter: &bson::Document,
    options: &FindOptions,
    mut f: impl FnMut(Result<T>) -> Result<bool>,
) -> Result<()> {
    let Some(coll) = txn.collection(T::COLLECTION)? else {
        return Ok(());
    };
    if T::VERSION > 0 {
        // Versioned models check each document's version (and migrate older ones).
        for raw in coll.find_raw(filter, options)? {
            if !f(raw.map_err(Error::from).and_then(|raw| from_raw::<T>(&raw)))? {
                break;
            }
        }
        return Ok(());
    }
    for item in coll.find_as_with_id::<T>(filter, options, id_alias::<T>())? {
        if !f(item.map_err(Error::from))? {
            break;
        }
    }
    Ok(())
}

/// A find being built; see [`Collection::find`].
#[derive(Debug)]
pub struct Find<T> {
    db: Database,
    filter: Filter<T>,
    sort: Option<Sort<T>>,
    skip: u64,
    limit: Option<u64>,
    hint: Option<Bson>,
    collation: Option<bson::Document>,
}

impl<T: Document> Find<T> {
    #[must_use]
    pub fn sort(mut self, sort: Sort<T>) -> Self {
        self.sort = Some(sort);
        self
    }

    #[must_use]
    pub fn skip(mut self, n: u64) -> Self {
        self.skip = n;
        self
    }

    #[must_use]
    pub fn limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Forces the plan to use this index.
    #[must_use]
    pub fn hint(mut self, index: &str) -> Self {
        self.hint = Some(Bson::String(index.to_owned()));
        self
    }

    /// Compares strings under a collation, MongoDB's `{locale, strength, ...}` document
    /// (`{locale: "en", strength: 2}` is case-insensitive); see [`odm_engine::collation`].
    #[must_use]
    pub fn collation(mut self, collation: bson::Document) -> Self {
        self.collation = Some(collation);
        self
    }

    fn parts(self) -> Result<(Database, bson::Document, FindOptions)> {
        let filter = filter_document(self.filter)?;
        let options = FindOptions {
            sort: self.sort.map(|s| s.to_document().clone()),
            projection: None,
            skip: self.skip,
            limit: self.limit,
            hint: self.hint,
            let_vars: None,
            collation: self.collation,
        };
        Ok((self.db, filter, options))
    }

    /// Every match, decoded as `T`.
    pub fn to_vec(self) -> Result<Vec<T>> {
        let (db, filter, options) = self.parts()?;
        let mut out = Vec::new();
        each_match::<T>(&db.engine().read()?, &filter, &options, |item| {
            out.push(item?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The matches as a stream: each is read and decoded when pulled, and at most
    /// [`STREAM_BUFFER`] wait in memory, however many match. All come from one snapshot, taken
    /// when this is called.
    ///
    /// A reader thread holds the snapshot and the cursor (a cursor borrows its snapshot, so the
    /// two cannot travel inside the iterator) and hands the matches over through a bounded
    /// channel; dropping the iterator stops the thread.
    pub fn stream(self) -> Result<FindIter<T>>
    where
        T: Send + 'static,
    {
        let (db, filter, options) = self.parts()?;
        // Taken here, so that writes made after this call are not seen.
        let snapshot = db.engine().read()?;
        let (sender, receiver) = std::sync::mpsc::sync_channel(STREAM_BUFFER);
        let reader = std::thread::spawn(move || {
            let outcome = each_match::<T>(&snapshot, &filter, &options, |item| {
                // A send fails once the iterator is dropped: nobody wants more.
                Ok(sender.send(item).is_ok())
            });
            if let Err(e) = outcome {
                let _ = sender.send(Err(e));
            }
        });
        Ok(FindIter {
            receiver: Some(receiver),
            reader: Some(reader),
        })
    }

    /// The first match.
    pub fn first(self) -> Result<Option<T>> {
        Ok(self.limit(1).to_vec()?.into_iter().next())
    }

    /// The matches as documents holding only the projected fields.
    pub fn project(self, projection: &Projection<T>) -> Result<Vec<bson::Document>> {
        let (db, filter, mut options) = self.parts()?;
        options.projection = Some(projection.to_document().clone());
        let txn = db.engine().read()?;
        let Some(coll) = txn.collection(T::COLLECTION)? else {
            return Ok(Vec::new());
        };
        Ok(coll
            .find(&filter, &options)?
            .collect::<odm_engine::Result<Vec<_>>>()?)
    }

    /// How the engine runs this find, and what running it examines.
    pub fn explain(self) -> Result<Explain> {
        let (db, filter, options) = self.parts()?;
        let txn = db.engine().read()?;
        let coll = txn
            .collection(T::COLLECTION)?
            .ok_or_else(|| odm_engine::Error::CollectionNotFound(T::COLLECTION.to_owned()))?;
        Ok(coll.explain(&filter, &options)?)
    }
}
