//! `Aggregate<T, R, O>`: a typed aggregation pipeline over a collection of the model `T`.
//!
//! Each stage is checked against the shape of the documents that reach it, through two type
//! parameters:
//! - `R`, the type whose field handles name fields at this point: `T` until a stage gives the
//!   documents a new shape (`group`, `project`, `lookup`, `stage_into`), that stage's output
//!   type after it. A handle of any other type is a compile error.
//! - `O`, what results decode into: `T` while stages only select, order and cut (decoded as a
//!   find decodes, migrations included), the output type after a reshaping stage, and
//!   [`Unwound`] after an `$unwind`, which decodes into nothing until a later stage reshapes
//!   the documents or the caller names their type (`decode_as`).
//!
//! The builders of the reshaping stages, [`Group`] and [`Reshape`], take the output's handle
//! first, as MongoDB writes `{output: expression}`, and the input's second; both must hold
//! values of types that fit (the same type, or the type an accumulator yields). Raw stages
//! stay available: `stage` keeps the shape, `stage_into` declares a new one.

use std::marker::PhantomData;
use std::sync::Arc;

use bson::{Bson, Document as BsonDocument, RawDocument, RawDocumentBuf, doc};
use odm_engine::ReadTxn;
use odm_engine::aggregate::{AggregateExplain, AggregateOptions};
use serde::de::DeserializeOwned;

use crate::collection::Collection;
use crate::cursor::Cursor;
use crate::database::{Database, Store};
use crate::error::{BuildError, Error, Result};
use crate::expr::Expr;
use crate::field::{Field, Numeric};
use crate::filter::Filter;
use crate::geo::GeoNear;
use crate::model::Document;
use crate::reference::{References, ReferencesOne};
use crate::sort::Sort;
use crate::txn::serialized;

/// The shape of documents after an `$unwind`: the handles of `R` still name their fields
/// (see [`Field::unwound`] for the unwound array's elements), but no Rust type is known to
/// hold them, so results cannot be decoded until a stage reshapes them or
/// [`Aggregate::decode_as`] names their type.
#[derive(Debug)]
pub struct Unwound<R>(PhantomData<fn() -> R>);

/// How results of the shape `O` decode: the bytes, and the name of the collection aggregated
/// (for errors).
type Decoder<O> = fn(&RawDocument, &str) -> Result<O>;

/// A typed aggregation pipeline being built; see the module documentation and
/// [`Collection::aggregate`].
///
/// ```
/// use odm::{Database, Document, Embedded, Filter, Group, Sort};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "orders")]
/// struct Order {
///     #[odm(id)]
///     id: i64,
///     customer: String,
///     amount: f64,
///     paid: bool,
/// }
///
/// /// One row of the report: a customer's total over their paid orders.
/// #[derive(Serialize, Deserialize, Embedded, Debug, PartialEq)]
/// struct Spend {
///     customer: String,
///     total: f64,
///     orders: u32,
/// }
///
/// let db = Database::in_memory()?;
/// let orders = db.collection::<Order>()?;
/// for (id, customer, amount, paid) in
///     [(1, "ann", 30.0, true), (2, "bob", 12.5, true), (3, "ann", 5.0, true), (4, "bob", 99.0, false)]
/// {
///     orders.insert_one(&Order { id, customer: customer.into(), amount, paid })?;
/// }
/// let (f, s) = (Order::fields(), Spend::fields());
/// let report: Vec<Spend> = orders
///     .aggregate()
///     .filter(f.paid.eq(true))
///     .group(
///         Group::by(&s.customer, &f.customer)
///             .sum(&s.total, &f.amount)
///             .count(&s.orders),
///     )
///     .sort(Sort::desc(&s.total))
///     .to_vec()?;
/// assert_eq!(report, [
///     Spend { customer: "ann".into(), total: 35.0, orders: 2 },
///     Spend { customer: "bob".into(), total: 12.5, orders: 1 },
/// ]);
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Aggregate<T, R = T, O = T> {
    db: Database,
    name: Arc<str>,
    stages: Vec<BsonDocument>,
    /// The first value a stage could not write as BSON; running reports it.
    error: Option<BuildError>,
    options: AggregateOptions,
    decode: Decoder<O>,
    _shape: PhantomData<fn() -> (T, R)>,
}

/// The same aggregation, to run again (see [`crate::Find`]'s `Clone`).
impl<T, R, O> Clone for Aggregate<T, R, O> {
    fn clone(&self) -> Self {
        Aggregate {
            db: self.db.clone(),
            name: self.name.clone(),
            stages: self.stages.clone(),
            error: self.error.clone(),
            options: self.options.clone(),
            decode: self.decode,
            _shape: PhantomData,
        }
    }
}

#[cfg(feature = "async")]
impl<T, R, O> Aggregate<T, R, O> {
    /// Whether the aggregation has a time limit of its own ([`Aggregate::max_time`]).
    pub(crate) fn has_time_limit(&self) -> bool {
        self.options.interrupt.is_some()
    }

    /// Whether a stage writes (`$out`, `$merge`): the pipeline then waits for the writer.
    pub(crate) fn writes(&self) -> bool {
        self.stages
            .iter()
            .any(|stage| stage.contains_key("$out") || stage.contains_key("$merge"))
    }

    pub(crate) fn database(&self) -> &Database {
        &self.db
    }
}

impl<T, R, O> std::fmt::Debug for Aggregate<T, R, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregate")
            .field("collection", &self.name)
            .field("stages", &self.stages)
            .finish_non_exhaustive()
    }
}

impl<T: Document> Aggregate<T> {
    pub(crate) fn new(collection: &Collection<T>) -> Self {
        Aggregate {
            db: collection.database().clone(),
            name: Arc::from(collection.name()),
            stages: Vec::new(),
            error: None,
            options: AggregateOptions::default(),
            decode: crate::codec::from_raw::<T>,
            _shape: PhantomData,
        }
    }
}

impl<T: Document, R, O> Aggregate<T, R, O> {
    /// Offers the pipeline to the collection's query analyzer: its leading `$match`.
    fn sample(&self, engine: &odm_engine::Database) {
        engine.sample_query(
            &self.name,
            odm_engine::sampling::SampledCommand::Aggregate,
            |_| {
                odm_engine::sampling::aggregate_command(
                    &self.stages,
                    self.options.collation.as_ref(),
                    self.options.let_vars.as_ref(),
                )
            },
        );
    }

    fn then(mut self, stage: BsonDocument) -> Self {
        self.stages.push(stage);
        self
    }

    /// The same pipeline, its documents now of the shape (`R2`, `O2`).
    pub(crate) fn reshaped<R2, O2>(self, decode: Decoder<O2>) -> Aggregate<T, R2, O2> {
        Aggregate {
            db: self.db,
            name: self.name,
            stages: self.stages,
            error: self.error,
            options: self.options,
            decode,
            _shape: PhantomData,
        }
    }

    /// `$match`: only the documents the filter matches. A leading one uses indexes, as a find.
    #[must_use]
    pub fn filter(mut self, filter: impl Into<Filter<R>>) -> Self {
        match filter.into().into_document() {
            // MongoDB takes `$text` in the first stage only: after nothing but `$match` stages
            // (a variant's tag, earlier filters), they join into one.
            Ok(filter) if filter.contains_key("$text") && self.only_matches() => {
                let mut all: Vec<Bson> = self
                    .stages
                    .drain(..)
                    .filter_map(|mut s| s.remove("$match"))
                    .collect();
                all.push(Bson::Document(filter));
                self.then(doc! { "$match": { "$and": all } })
            }
            Ok(filter) => self.then(doc! { "$match": filter }),
            Err(e) => {
                self.error.get_or_insert(e);
                self
            }
        }
    }

    /// Whether there are stages, every one a `$match`.
    fn only_matches(&self) -> bool {
        !self.stages.is_empty()
            && self
                .stages
                .iter()
                .all(|s| s.len() == 1 && s.contains_key("$match"))
    }

    /// `$sort`.
    #[must_use]
    pub fn sort(self, sort: Sort<R>) -> Self {
        let sort = sort.to_document().clone();
        self.then(doc! { "$sort": sort })
    }

    /// `$skip`.
    #[must_use]
    pub fn skip(self, n: u64) -> Self {
        self.then(doc! { "$skip": count_value(n) })
    }

    /// `$limit`.
    #[must_use]
    pub fn limit(self, n: u64) -> Self {
        self.then(doc! { "$limit": count_value(n) })
    }

    /// `$unwind`: one document per element of the array, the field holding that element.
    /// Documents whose array is missing or empty pass on none. Name the elements with
    /// [`Field::unwound`] in later stages.
    pub fn unwind<E>(self, array: &Field<R, Vec<E>>) -> Aggregate<T, R, Unwound<R>> {
        self.then(doc! { "$unwind": field_ref(array) })
            .reshaped(unwound_has_no_type::<R>)
    }

    /// [`Aggregate::unwind`] that keeps the documents whose array is missing, null or empty
    /// (MongoDB's `preserveNullAndEmptyArrays`): each passes on once, without the field.
    pub fn unwind_keeping_empty<E>(self, array: &Field<R, Vec<E>>) -> Aggregate<T, R, Unwound<R>> {
        self.then(doc! {
            "$unwind": { "path": field_ref(array), "preserveNullAndEmptyArrays": true }
        })
        .reshaped(unwound_has_no_type::<R>)
    }

    /// `$set`: each document's `field` now holds `value`, computed from the document (the
    /// shape stays, the value being of the field's type).
    #[must_use]
    pub fn set_expr<V>(mut self, field: &Field<R, V>, value: Expr<R, V>) -> Self {
        match value.to_bson() {
            Ok(value) => self.then(doc! { "$set": { field.path(): value } }),
            Err(e) => {
                self.error.get_or_insert(e);
                self
            }
        }
    }

    /// `$group`: one document per distinct key, of the type `Out`; see [`Group`].
    pub fn group<Out: DeserializeOwned>(self, group: Group<R, Out>) -> Aggregate<T, Out, Out> {
        let mut out = self;
        if let Some(e) = group.error.clone() {
            out.error.get_or_insert(e);
        }
        out.stages.extend(group.into_stages());
        out.reshaped(decode_output::<Out>)
    }

    /// `$project`: documents of the type `Out`, each field taken from a field of this shape;
    /// see [`Reshape`].
    pub fn project<Out: DeserializeOwned>(self, shape: Reshape<R, Out>) -> Aggregate<T, Out, Out> {
        self.then(doc! { "$project": shape.into_document() })
            .reshaped(decode_output::<Out>)
    }

    /// `$lookup`: each document gains, in the field `into` of the type `Out`, the documents of
    /// `from` whose field `foreign` equals its field `local` (or, when `local` holds an
    /// array, one of its elements). `Out` holds this shape's fields and the joined array; the
    /// joined documents decode as `F` (ids included; schema migrations do not run on them).
    pub fn lookup<F: Document, K, Out: DeserializeOwned>(
        self,
        from: &Collection<F>,
        local: &Field<R, K>,
        foreign: &Field<F, K>,
        into: &Field<Out, Vec<F>>,
    ) -> Aggregate<T, Out, Out> {
        self.then(lookup_stage::<F>(
            from.name(),
            local.path(),
            foreign.path(),
            into.path(),
        ))
        .reshaped(decode_output::<Out>)
    }

    /// Populates references: each document gains, in the field `into` of the type `Out`, the
    /// documents of `from` that its field `refs` (a [`crate::Ref`], an optional one or an array of
    /// them) references, by one `$lookup` on `_id`, never a query per document. `into` may be
    /// `refs` itself, replacing the ids with the documents. A reference to no document is
    /// left out; [`Aggregate::populate_strict`] fails on it instead.
    ///
    /// ```
    /// use odm::{Database, Document, Embedded, Ref, Sort};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Debug, PartialEq, Serialize, Deserialize, Document)]
    /// #[odm(collection = "parts")]
    /// struct Part {
    ///     #[odm(id)]
    ///     sku: String,
    ///     price: i64,
    /// }
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "products")]
    /// struct Product {
    ///     #[odm(id)]
    ///     id: i64,
    ///     parts: Vec<Ref<Part>>,
    /// }
    ///
    /// /// A product with its parts loaded in place of their ids.
    /// #[derive(Debug, Serialize, Deserialize, Embedded)]
    /// struct Assembled {
    ///     #[serde(rename = "_id")]
    ///     id: i64,
    ///     parts: Vec<Part>,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let (parts, products) = (db.collection::<Part>()?, db.collection::<Product>()?);
    /// parts.insert_many(&[Part { sku: "bolt".into(), price: 2 }, Part { sku: "nut".into(), price: 1 }])?;
    /// let refs = vec![Ref::new("bolt".to_owned()), Ref::new("nut".to_owned())];
    /// products.insert_one(&Product { id: 1, parts: refs })?;
    /// let (f, a) = (Product::fields(), Assembled::fields());
    /// let assembled = products.aggregate().populate(&parts, &f.parts, &a.parts).to_vec()?;
    /// assert_eq!(assembled[0].parts.iter().map(|p| p.price).sum::<i64>(), 3);
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn populate<F: Document, V: References<F>, Out: DeserializeOwned>(
        self,
        from: &Collection<F>,
        refs: &Field<R, V>,
        into: &Field<Out, Vec<F>>,
    ) -> Aggregate<T, Out, Out> {
        self.then(lookup_stage::<F>(
            from.name(),
            refs.path(),
            "_id",
            into.path(),
        ))
        .reshaped(decode_output::<Out>)
    }

    /// [`Aggregate::populate`] that fails with [`Error::DanglingReference`] when a document
    /// references one that does not exist.
    pub fn populate_strict<F: Document, V: References<F>, Out: DeserializeOwned>(
        self,
        from: &Collection<F>,
        refs: &Field<R, V>,
        into: &Field<Out, Vec<F>>,
    ) -> Aggregate<T, Out, Out> {
        let mut out = self;
        out.stages
            .extend(strict_lookup::<F>(from.name(), refs.path(), into.path()));
        out.reshaped(decode_referenced::<Out>)
    }

    /// Populates one reference (a [`crate::Ref`] or an optional one) into the field `into`, an
    /// `Option` of the referenced model: `None` when the reference is `None` or names no
    /// document. One `$lookup`, as [`Aggregate::populate`].
    pub fn populate_one<F: Document, V: ReferencesOne<F>, Out: DeserializeOwned>(
        self,
        from: &Collection<F>,
        refs: &Field<R, V>,
        into: &Field<Out, Option<F>>,
    ) -> Aggregate<T, Out, Out> {
        self.then(lookup_stage::<F>(
            from.name(),
            refs.path(),
            "_id",
            into.path(),
        ))
        .then(first_of(into.path()))
        .reshaped(decode_output::<Out>)
    }

    /// [`Aggregate::populate_one`] that fails with [`Error::DanglingReference`] when a
    /// reference names no document (a `None` reference is not dangling).
    pub fn populate_one_strict<F: Document, V: ReferencesOne<F>, Out: DeserializeOwned>(
        self,
        from: &Collection<F>,
        refs: &Field<R, V>,
        into: &Field<Out, Option<F>>,
    ) -> Aggregate<T, Out, Out> {
        let mut out = self;
        out.stages
            .extend(strict_lookup::<F>(from.name(), refs.path(), into.path()));
        out.then(first_of(into.path()))
            .reshaped(decode_referenced::<Out>)
    }

    /// `$geoNear`: the documents nearest the stage's point, nearest first, as the type `Out`,
    /// which holds this shape's fields and the distance; see [`GeoNear`]. MongoDB takes it as
    /// a pipeline's first stage only: `filter`s before it (and a variant's tag) join its query;
    /// after any other stage it is refused when the pipeline runs (40602).
    ///
    /// ```
    /// use odm::{Database, Document, Embedded, GeoNear, GeoPoint};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "cafes")]
    /// struct Cafe {
    ///     #[odm(id)]
    ///     id: i64,
    ///     #[odm(index(geo))]
    ///     at: GeoPoint,
    /// }
    ///
    /// /// A cafe with its distance from the caller, in kilometres.
    /// #[derive(Serialize, Deserialize, Embedded)]
    /// struct Nearby {
    ///     #[serde(rename = "_id")]
    ///     id: i64,
    ///     km: f64,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let cafes = db.collection::<Cafe>()?;
    /// cafes.insert_many(&[
    ///     Cafe { id: 1, at: GeoPoint::new(2.35, 48.86) },  // Paris
    ///     Cafe { id: 2, at: GeoPoint::new(4.84, 45.76) },  // Lyon
    ///     Cafe { id: 3, at: GeoPoint::new(2.29, 48.87) },  // Paris, farther west
    /// ])?;
    /// let (f, n) = (Cafe::fields(), Nearby::fields());
    /// let here = GeoPoint::new(2.35, 48.85);
    /// let near = f.at.near(here).max_distance(50_000.0);
    /// let found: Vec<Nearby> = cafes
    ///     .aggregate()
    ///     .geo_near(GeoNear::new(near, &n.km).distance_multiplier(0.001))
    ///     .to_vec()?;
    /// assert_eq!(found.iter().map(|c| c.id).collect::<Vec<_>>(), [1, 3]);
    /// assert!((found[0].km - 1.11).abs() < 0.01);
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn geo_near<V, Out: DeserializeOwned>(
        self,
        stage: GeoNear<R, V, Out>,
    ) -> Aggregate<T, Out, Out> {
        let mut out = self;
        // `$geoNear` must come first: the `$match` stages before it (a variant's tag, filters)
        // become its query, which selects the same documents.
        let before: Vec<BsonDocument> = if out.only_matches() {
            out.stages
                .drain(..)
                .filter_map(|mut s| match s.remove("$match") {
                    Some(Bson::Document(filter)) => Some(filter),
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        match stage.into_stage(before) {
            Ok(stage) => out.stages.push(stage),
            Err(e) => {
                out.error.get_or_insert(e);
            }
        }
        out.reshaped(decode_output::<Out>)
    }

    /// `$addFields` of the text search's score (`{$meta: "textScore"}`) in the output type's
    /// field `into`: `Out` holds this shape's fields and the score. A `$match` of a
    /// [`crate::text`] condition must come first.
    pub fn text_score<Out: DeserializeOwned>(self, into: &Field<Out, f64>) -> Aggregate<T, Out, Out>
    where
        R: crate::search::TextIndexed,
    {
        self.then(doc! { "$addFields": { into.path(): { "$meta": "textScore" } } })
            .reshaped(decode_output::<Out>)
    }

    /// A raw stage that leaves the documents' shape as it is (`$sample`, `$addFields` of a
    /// field the type ignores, ...); the escape hatch for stages the builder does not type.
    #[must_use]
    pub fn stage(self, stage: BsonDocument) -> Self {
        self.then(stage)
    }

    /// A raw stage whose results are of the type `Out` (`bson::Document` for any shape).
    pub fn stage_into<Out: DeserializeOwned>(self, stage: BsonDocument) -> Aggregate<T, Out, Out> {
        self.then(stage).reshaped(decode_output::<Out>)
    }

    /// Results decoded as `Out`, the shape kept: the type of documents after an `$unwind`
    /// (or a raw stage), as the caller knows it. Handles still come from `R`.
    pub fn decode_as<Out: DeserializeOwned>(self) -> Aggregate<T, R, Out> {
        self.reshaped(decode_output::<Out>)
    }

    /// Compares strings under a collation in `$match`, `$sort` and `$group` keys; see
    /// [`crate::Find::collation`].
    #[must_use]
    pub fn collation(mut self, collation: BsonDocument) -> Self {
        self.options.collation = Some(collation);
        self
    }

    /// The pipeline must end within `limit` of this call; see [`crate::Find::max_time`].
    #[must_use]
    pub fn max_time(mut self, limit: std::time::Duration) -> Self {
        self.options.interrupt = Some(odm_engine::interrupt::Interrupt::within(Some(limit)));
        self
    }

    /// Whether `$sort` and `$group` may write temporary files past their 100 MiB (MongoDB's
    /// `allowDiskUse`, allowed unless set to `false`); without it they fail with MongoDB's 292.
    #[must_use]
    pub fn allow_disk_use(mut self, allow: bool) -> Self {
        self.options.allow_disk_use = Some(allow);
        self
    }

    /// Forces the plan of the leading `$match` to use this index.
    #[must_use]
    pub fn hint(mut self, index: &str) -> Self {
        self.options.hint = Some(Bson::String(index.to_owned()));
        self
    }

    /// The stages as MongoDB takes them, or the first value that could not be written.
    pub fn pipeline(&self) -> Result<&[BsonDocument]> {
        match &self.error {
            Some(reason) => serialized(&self.name, Err(reason.clone())),
            None => Ok(&self.stages),
        }
    }

    /// How many documents come out (`$count`).
    pub fn count(self) -> Result<u64> {
        let counted: Aggregate<T, Counted, Counted> = self
            .then(doc! { "$count": "n" })
            .reshaped(decode_output::<Counted>);
        Ok(counted.first()?.map_or(0, |c| c.n))
    }

    /// How the engine plans and runs this pipeline: the plan of its head and what each later
    /// stage passed on.
    pub fn explain(self) -> Result<AggregateExplain> {
        self.pipeline()?;
        let engine = match self.db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                return remote.wait(remote.explain_aggregate(
                    &self.name,
                    &self.stages,
                    &self.options,
                    T::shard_key().as_ref(),
                ));
            }
        };
        let txn = engine.read()?;
        let coll = txn
            .collection(&self.name)?
            .ok_or_else(|| odm_engine::Error::CollectionNotFound(self.name.to_string()))?;
        Ok(coll.explain_aggregate(&self.stages, &self.options)?)
    }

    /// Runs the pipeline on `snapshot`, giving each result, decoded, to `sink` until it answers
    /// `false`.
    fn run(
        snapshot: &ReadTxn,
        name: &str,
        stages: &[BsonDocument],
        options: &AggregateOptions,
        decode: Decoder<O>,
        sink: &mut dyn FnMut(Result<O>) -> bool,
    ) -> Result<()> {
        let Some(coll) = snapshot.collection(name)? else {
            return Ok(());
        };
        for document in coll.aggregate_iter(stages, options)? {
            let item = document.map_err(Error::from).and_then(|document| {
                let raw = RawDocumentBuf::try_from(&document)
                    .map_err(|e| output_error::<O>(name, &document, e.to_string()))?;
                decode(&raw, name)
            });
            if !sink(item) {
                break;
            }
        }
        Ok(())
    }
}

impl<T: Document, R, O: DeserializeOwned> Aggregate<T, R, O> {
    /// Every result, decoded.
    pub fn to_vec(self) -> Result<Vec<O>> {
        self.pipeline()?;
        let engine = match self.db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                return remote
                    .wait(remote.aggregate(None, &self.name, &self.stages, &self.options))?
                    .iter()
                    .map(|raw| (self.decode)(raw, &self.name))
                    .collect();
            }
        };
        self.sample(engine);
        let snapshot = engine.read()?;
        let mut out = Vec::new();
        let mut failed = None;
        Self::run(
            &snapshot,
            &self.name,
            &self.stages,
            &self.options,
            self.decode,
            &mut |item| match item {
                Ok(value) => {
                    out.push(value);
                    true
                }
                Err(e) => {
                    failed = Some(e);
                    false
                }
            },
        )?;
        match failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// The results one at a time, as [`crate::Find::iter`] gives matches: decoded when pulled,
    /// from one snapshot taken when this is called, at most [`crate::STREAM_BUFFER`] waiting
    /// in memory (besides what `$sort` and `$group` must hold). A result that does not decode
    /// is an `Err` item; the next pull goes on.
    #[allow(clippy::iter_not_returning_iterator)]
    pub fn iter(self) -> Result<Cursor<O>>
    where
        O: Send + 'static,
    {
        self.pipeline()?;
        let engine = match self.db.store() {
            Store::Embedded(engine) => engine,
            #[cfg(feature = "mongodb")]
            Store::Remote(remote) => {
                let command =
                    odm_engine::commands::aggregate(&self.name, &self.stages, &self.options);
                let stream = remote.stream(command)?;
                let (name, decode) = (self.name.clone(), self.decode);
                return Ok(Cursor::over(
                    stream.map(move |raw| raw.and_then(|raw| decode(&raw, &name))),
                ));
            }
        };
        self.sample(engine);
        let snapshot = engine.read()?;
        let Aggregate {
            name,
            stages,
            options,
            decode,
            ..
        } = self;
        Ok(Cursor::spawn(snapshot, move |snapshot, sink| {
            Self::run(snapshot, &name, &stages, &options, decode, sink)
        }))
    }

    /// The first result.
    pub fn first(self) -> Result<Option<O>> {
        Ok(self.limit(1).to_vec()?.into_iter().next())
    }
}

/// The result of `$count`.
#[derive(serde::Deserialize)]
struct Counted {
    n: u64,
}

/// `$skip` and `$limit` take a 64-bit integer; no collection holds more than `i64::MAX`.
fn count_value(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A field path as an expression: `$path`.
fn field_ref<R, V>(field: &Field<R, V>) -> String {
    format!("${}", field.path())
}

/// Results decoded as an output type `O` (no id renaming: the output's fields are as stored).
/// `$lookup` of the documents of `from` whose `foreign` equals `local` (or one of its
/// elements), into `into`, with the joined documents' `_id` under the name `F` gives its id.
fn lookup_stage<F: Document>(from: &str, local: &str, foreign: &str, into: &str) -> BsonDocument {
    let mut lookup = doc! {
        "from": from,
        "localField": local,
        "foreignField": foreign,
        "as": into,
    };
    if F::ID_FIELD != "_id" {
        // Joined documents are stored ones: their id is `_id`, and `F` calls it otherwise.
        lookup.insert(
            "pipeline",
            vec![
                Bson::Document(doc! { "$set": { F::ID_FIELD: "$_id" } }),
                Bson::Document(doc! { "$unset": "_id" }),
            ],
        );
    }
    doc! { "$lookup": lookup }
}

/// Where a strict populate notes the references that named no document, for its decoder.
const DANGLING: &str = "__odm_dangling";
/// Where a strict populate joins, before it moves the documents to their field (which may be
/// the references' own).
const JOINED: &str = "__odm_joined";

/// The stages of a strict populate: the `$lookup`, the references it did not find (non-null
/// references whose id no joined document has) noted under [`DANGLING`] with the field's
/// name, and the joined documents moved to `into`. [`DANGLING`] stays for the decoder.
fn strict_lookup<F: Document>(from: &str, refs: &str, into: &str) -> [BsonDocument; 4] {
    let references = format!("${refs}");
    let found = format!("${JOINED}.{}", F::ID_FIELD);
    [
        lookup_stage::<F>(from, refs, "_id", JOINED),
        doc! { "$set": { DANGLING: {
            "field": { "$literal": refs },
            "ids": { "$setDifference": [
                { "$filter": {
                    "input": { "$cond": [{ "$isArray": &references }, &references, [&references]] },
                    "cond": { "$ne": ["$$this", null] },
                } },
                found,
            ] },
        } } },
        doc! { "$set": { into: format!("${JOINED}") } },
        doc! { "$unset": JOINED },
    ]
}

/// `into`'s array replaced by its first element (missing when it is empty).
fn first_of(into: &str) -> BsonDocument {
    doc! { "$set": { into: { "$first": format!("${into}") } } }
}

/// [`decode_output`] of a strict populate's document: an error naming the references it
/// found no document for.
fn decode_referenced<O: DeserializeOwned>(raw: &RawDocument, collection: &str) -> Result<O> {
    if let Ok(Some(dangling)) = raw.get_document(DANGLING).map(Some)
        && let Ok(ids) = dangling.get_array("ids")
        && ids.into_iter().next().is_some()
    {
        return Err(Error::DanglingReference {
            collection: collection.to_owned(),
            id: odm_engine::decode::id_text(raw),
            field: dangling.get_str("field").unwrap_or_default().to_owned(),
            missing: ids
                .into_iter()
                .filter_map(std::result::Result::ok)
                .filter_map(|id| Bson::try_from(bson::RawBson::from(id)).ok())
                .map(|id| id.to_string())
                .collect(),
        });
    }
    decode_output(raw, collection)
}

fn decode_output<O: DeserializeOwned>(raw: &RawDocument, collection: &str) -> Result<O> {
    odm_engine::decode::from_slice_with_id(raw.as_bytes(), None).map_err(|reason| {
        Error::AggregateOutput {
            collection: collection.to_owned(),
            output: std::any::type_name::<O>(),
            id: odm_engine::decode::id_text(raw),
            reason: reason.to_string(),
        }
    })
}

/// The decoder of [`Unwound`] documents, which nothing calls: decoding needs
/// `O: DeserializeOwned`, and `Unwound` is not.
fn unwound_has_no_type<R>(raw: &RawDocument, collection: &str) -> Result<Unwound<R>> {
    Err(Error::AggregateOutput {
        collection: collection.to_owned(),
        output: std::any::type_name::<Unwound<R>>(),
        id: odm_engine::decode::id_text(raw),
        reason: "unwound documents have no type; group or project them, or name it with decode_as"
            .to_owned(),
    })
}

fn output_error<O>(collection: &str, document: &BsonDocument, reason: String) -> Error {
    Error::AggregateOutput {
        collection: collection.to_owned(),
        output: std::any::type_name::<O>(),
        id: document
            .get("_id")
            .map_or_else(|| "(no _id)".to_owned(), ToString::to_string),
        reason,
    }
}

/// A `$group` stage from documents whose handles are of `R` into documents of the type `Out`:
/// the key, by [`Group::by`] (or one group of all, [`Group::all`]), and an accumulator per
/// output field. The accumulators take the output's handle and the input's, whose types must
/// fit: `sum` of numbers into a type that holds their total ([`SumOf`]), `avg` into a float
/// ([`AvgOf`]), `min`, `max`, `first` and `last` into the input's type (or an `Option` of it),
/// `push` and `add_to_set` into a `Vec` of it, and `count` into an integer ([`Count`]).
///
/// The key lands in the output field given to `by`, whatever its name (MongoDB's `_id` is moved
/// there); an output field that is a path into an embedded value works too.
///
/// ```
/// use odm::{Database, Document, Embedded, Group, Sort};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "articles")]
/// struct Article {
///     #[odm(id)]
///     id: i64,
///     tags: Vec<String>,
///     words: u32,
/// }
///
/// #[derive(Serialize, Deserialize, Embedded, Debug, PartialEq)]
/// struct PerTag {
///     tag: String,
///     articles: Vec<i64>,
///     mean_words: f64,
/// }
///
/// #[derive(Serialize, Deserialize, Embedded, Debug, PartialEq)]
/// struct Overall {
///     longest: u32,
///     shortest: u32,
/// }
///
/// let db = Database::in_memory()?;
/// let articles = db.collection::<Article>()?;
/// articles.insert_many(&[
///     Article { id: 1, tags: vec!["rust".into(), "db".into()], words: 900 },
///     Article { id: 2, tags: vec!["rust".into()], words: 300 },
/// ])?;
/// let (f, t, o) = (Article::fields(), PerTag::fields(), Overall::fields());
/// // One document per tag of each article, then one group per tag.
/// let per_tag = articles
///     .aggregate()
///     .unwind(&f.tags)
///     .group(
///         Group::by(&t.tag, &f.tags.unwound())
///             .push(&t.articles, &f.id)
///             .avg(&t.mean_words, &f.words),
///     )
///     .sort(Sort::asc(&t.tag))
///     .to_vec()?;
/// assert_eq!(per_tag, [
///     PerTag { tag: "db".into(), articles: vec![1], mean_words: 900.0 },
///     PerTag { tag: "rust".into(), articles: vec![1, 2], mean_words: 600.0 },
/// ]);
/// let overall = articles
///     .aggregate()
///     .group(Group::all().max(&o.longest, &f.words).min(&o.shortest, &f.words))
///     .first()?;
/// assert_eq!(overall, Some(Overall { longest: 900, shortest: 300 }));
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Group<R, Out> {
    /// The `$group` document: `_id` (the key) and the accumulators.
    spec: BsonDocument,
    /// Outputs computed under a temporary top-level name (`$group` names its outputs at the
    /// top level) and moved to their place after it: `{place: "$temporary"}`. The key, whose
    /// place is `_id` in MongoDB, moves this way to the output field `by` names.
    moves: BsonDocument,
    /// The temporaries, dropped once moved.
    temporaries: Vec<Bson>,
    /// The first accumulator whose expression could not be written as BSON.
    error: Option<BuildError>,
    _types: PhantomData<fn() -> (R, Out)>,
}

impl<R, Out> std::fmt::Debug for Group<R, Out> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("spec", &self.spec)
            .field("moves", &self.moves)
            .finish_non_exhaustive()
    }
}

impl<R, Out> Group<R, Out> {
    /// Groups by the value of `key`, which lands in the output field `into`.
    pub fn by<K>(into: &Field<Out, K>, key: &Field<R, K>) -> Self {
        let mut group = Group::keyed(field_ref(key).into());
        if into.path() != "_id" {
            group.moves.insert(into.path(), "$_id");
            group.temporaries.push("_id".into());
        }
        group
    }

    /// One group of all the documents (MongoDB's `_id: null`).
    pub fn all() -> Self {
        Group::keyed(Bson::Null)
    }

    fn keyed(key: Bson) -> Self {
        Group {
            spec: doc! { "_id": key },
            moves: BsonDocument::new(),
            temporaries: Vec::new(),
            error: None,
            _types: PhantomData,
        }
    }

    fn accumulate<V>(mut self, into: &Field<Out, V>, operator: &str, argument: Bson) -> Self {
        let accumulator = doc! { operator: argument };
        if into.path().contains('.') {
            let temporary = format!("__odm_{}", self.temporaries.len());
            self.moves.insert(into.path(), format!("${temporary}"));
            self.spec.insert(&temporary, accumulator);
            self.temporaries.push(temporary.into());
        } else {
            self.spec.insert(into.path(), accumulator);
        }
        self
    }

    /// `$sum` of a numeric field.
    #[must_use]
    pub fn sum<N: Numeric, S: SumOf<N>>(self, into: &Field<Out, S>, of: &Field<R, N>) -> Self {
        self.accumulate(into, "$sum", field_ref(of).into())
    }

    /// `$sum` of a numeric expression's values (each document's item count, a product of
    /// two fields, ...).
    #[must_use]
    pub fn sum_expr<N: Numeric, S: SumOf<N>>(
        mut self,
        into: &Field<Out, S>,
        of: Expr<R, N>,
    ) -> Self {
        match of.to_bson() {
            Ok(of) => self.accumulate(into, "$sum", of),
            Err(e) => {
                self.error.get_or_insert(e);
                self
            }
        }
    }

    /// `$avg` of a numeric field.
    #[must_use]
    pub fn avg<N: Numeric, A: AvgOf<N>>(self, into: &Field<Out, A>, of: &Field<R, N>) -> Self {
        self.accumulate(into, "$avg", field_ref(of).into())
    }

    /// `$min`: the least value in MongoDB's order.
    #[must_use]
    pub fn min<V, H: Holds<V>>(self, into: &Field<Out, H>, of: &Field<R, V>) -> Self {
        self.accumulate(into, "$min", field_ref(of).into())
    }

    /// `$max`: the greatest value in MongoDB's order.
    #[must_use]
    pub fn max<V, H: Holds<V>>(self, into: &Field<Out, H>, of: &Field<R, V>) -> Self {
        self.accumulate(into, "$max", field_ref(of).into())
    }

    /// `$first`: the value of the group's first document (sort before grouping to choose it).
    #[must_use]
    pub fn first<V, H: Holds<V>>(self, into: &Field<Out, H>, of: &Field<R, V>) -> Self {
        self.accumulate(into, "$first", field_ref(of).into())
    }

    /// `$last`: the value of the group's last document.
    #[must_use]
    pub fn last<V, H: Holds<V>>(self, into: &Field<Out, H>, of: &Field<R, V>) -> Self {
        self.accumulate(into, "$last", field_ref(of).into())
    }

    /// `$push`: every document's value, in order.
    #[must_use]
    pub fn push<V>(self, into: &Field<Out, Vec<V>>, of: &Field<R, V>) -> Self {
        self.accumulate(into, "$push", field_ref(of).into())
    }

    /// `$addToSet`: the distinct values.
    #[must_use]
    pub fn add_to_set<V>(self, into: &Field<Out, Vec<V>>, of: &Field<R, V>) -> Self {
        self.accumulate(into, "$addToSet", field_ref(of).into())
    }

    /// `$count`: how many documents the group holds.
    #[must_use]
    pub fn count<C: Count>(self, into: &Field<Out, C>) -> Self {
        self.accumulate(into, "$count", Bson::Document(BsonDocument::new()))
    }

    fn into_stages(self) -> Vec<BsonDocument> {
        let mut stages = vec![doc! { "$group": self.spec }];
        if !self.moves.is_empty() {
            stages.push(doc! { "$set": self.moves });
            stages.push(doc! { "$unset": self.temporaries });
        }
        stages
    }
}

/// A `$project` from documents whose handles are of `R` into documents of the type `Out`: each
/// output field taken from an input field of the same type.
///
/// ```
/// use odm::{Database, Document, Embedded, Filter, Reshape, Sort};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Embedded)]
/// struct Address {
///     city: String,
///     street: String,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "people")]
/// struct Person {
///     #[odm(id)]
///     id: i64,
///     name: String,
///     #[odm(embedded)]
///     address: Address,
/// }
///
/// #[derive(Serialize, Deserialize, Embedded, Debug, PartialEq)]
/// struct Card {
///     who: String,
///     city: String,
/// }
///
/// let db = Database::in_memory()?;
/// let people = db.collection::<Person>()?;
/// people.insert_one(&Person {
///     id: 1,
///     name: "Ann".into(),
///     address: Address { city: "Lyon".into(), street: "rue Neuve".into() },
/// })?;
/// let (f, c) = (Person::fields(), Card::fields());
/// let cards: Vec<Card> = people
///     .aggregate()
///     .project(Reshape::new().field(&c.who, &f.name).field(&c.city, &f.address.city))
///     .to_vec()?;
/// assert_eq!(cards, [Card { who: "Ann".into(), city: "Lyon".into() }]);
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Reshape<R, Out> {
    /// The `$project` document.
    project: BsonDocument,
    /// Whether an output field is `_id` (otherwise `_id` is left out).
    keeps_id: bool,
    _types: PhantomData<fn() -> (R, Out)>,
}

impl<R, Out> std::fmt::Debug for Reshape<R, Out> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reshape")
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl<R, Out> Default for Reshape<R, Out> {
    fn default() -> Self {
        Reshape {
            project: BsonDocument::new(),
            keeps_id: false,
            _types: PhantomData,
        }
    }
}

impl<R, Out> Reshape<R, Out> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The output field `into` takes the value of the input field `from`.
    #[must_use]
    pub fn field<V>(mut self, into: &Field<Out, V>, from: &Field<R, V>) -> Self {
        self.keeps_id |= into.path() == "_id";
        // `$project` writes dotted outputs into embedded documents itself.
        self.project.insert(into.path(), field_ref(from));
        self
    }

    fn into_document(self) -> BsonDocument {
        let mut project = self.project;
        if !self.keeps_id {
            project.insert("_id", 0);
        }
        project
    }
}

/// Output types that hold a `$sum` of values of `N`: `i64` or `f64` for integers, `f64` for
/// floats, `Decimal128` for decimals (an `Option` input sums alike; missing values add
/// nothing). `i32` is refused: a total of 32-bit values may need 64 bits.
pub trait SumOf<N>: sealed::Output {}

/// Output types that hold an `$avg` of values of `N`: `f64` (`Decimal128` for decimals), or
/// an `Option` of it; an input that may be missing needs the `Option`, since a group where
/// every value is missing averages to null.
pub trait AvgOf<N>: sealed::Output {}

/// Output types that hold a value of `V` picked from the group (`min`, `max`, `first`,
/// `last`): `V`, or `Option<V>`.
pub trait Holds<V> {}

impl<V> Holds<V> for V {}
impl<V> Holds<V> for Option<V> {}

/// Integer types that hold a count.
pub trait Count: sealed::Output {}

mod sealed {
    pub trait Output {}
}

macro_rules! outputs {
    ($($t:ty)*) => {$( impl sealed::Output for $t {} impl sealed::Output for Option<$t> {} )*};
}
outputs!(i32 i64 u32 u64 usize f64 bson::Decimal128);

macro_rules! integer_totals {
    ($($t:ty)*) => {$(
        impl SumOf<$t> for i64 {}
        impl SumOf<$t> for f64 {}
        impl SumOf<Option<$t>> for i64 {}
        impl SumOf<Option<$t>> for f64 {}
        impl AvgOf<$t> for f64 {}
        impl AvgOf<$t> for Option<f64> {}
        impl AvgOf<Option<$t>> for Option<f64> {}
    )*};
}
integer_totals!(i8 i16 i32 i64 u8 u16 u32);

macro_rules! float_totals {
    ($($t:ty)*) => {$(
        impl SumOf<$t> for f64 {}
        impl SumOf<Option<$t>> for f64 {}
        impl AvgOf<$t> for f64 {}
        impl AvgOf<$t> for Option<f64> {}
        impl AvgOf<Option<$t>> for Option<f64> {}
    )*};
}
float_totals!(f32 f64);

impl SumOf<bson::Decimal128> for bson::Decimal128 {}
impl SumOf<Option<bson::Decimal128>> for bson::Decimal128 {}
impl AvgOf<bson::Decimal128> for bson::Decimal128 {}
impl AvgOf<bson::Decimal128> for Option<bson::Decimal128> {}
impl AvgOf<Option<bson::Decimal128>> for Option<bson::Decimal128> {}

macro_rules! counts {
    ($($t:ty)*) => {$( impl Count for $t {} )*};
}
counts!(i32 i64 u32 u64 usize);
