//! `Update<R>`: a typed update of the model `R`, built from field handles.
//!
//! Each method produces one operator entry (`views.inc(1)` is `{$inc: {views: 1}}`); `and`
//! joins updates into one document, applied all or nothing. Operators exist only where the
//! field's type allows them: `inc` and `mul` on numbers, `push`, `add_to_set`, `pull` and `pop`
//! on `Vec`s, `current_date` on dates.

use odm_engine::update::UpdateModifications;
use std::marker::PhantomData;

use bson::{Bson, Document};
use serde::Serialize;

use crate::error::BuildError;
use crate::field::{Field, IntoValue, Numeric, to_bson};
use crate::filter::Filter;
use crate::model::Embedded;

/// A typed update; see the module documentation.
///
/// ```
/// use odm::{Database, Document, Push};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "players")]
/// struct Player {
///     #[odm(id)]
///     id: i64,
///     score: i64,
///     recent: Vec<i64>,
/// }
///
/// let db = Database::in_memory()?;
/// let players = db.collection::<Player>()?;
/// players.insert_one(&Player { id: 1, score: 0, recent: Vec::new() })?;
/// let f = Player::fields();
/// for points in [5, 8, 3, 9] {
///     // One update: add to the score, keep the three latest results.
///     players.update_one(
///         f.id.eq(1),
///         f.score.inc(points).and(f.recent.push_with(Push::each([points]).slice(-3))),
///     )?;
/// }
/// let ann = players.get(1)?.unwrap();
/// assert_eq!((ann.score, ann.recent), (25, vec![8, 3, 9]));
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Update<R> {
    doc: Document,
    /// A pipeline update (aggregation stages) instead of operators.
    pipeline: Option<Vec<Document>>,
    error: Option<BuildError>,
    _model: PhantomData<fn() -> R>,
}

impl<R> Clone for Update<R> {
    fn clone(&self) -> Self {
        Update {
            doc: self.doc.clone(),
            pipeline: self.pipeline.clone(),
            error: self.error.clone(),
            _model: PhantomData,
        }
    }
}

impl<R> std::fmt::Debug for Update<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Update({})", self.doc)
    }
}

impl<R> From<Document> for Update<R> {
    fn from(doc: Document) -> Self {
        Update::raw(doc)
    }
}

impl<R> Update<R> {
    /// An update written as a MongoDB document, unchecked.
    pub fn raw(doc: Document) -> Self {
        Update {
            doc,
            pipeline: None,
            error: None,
            _model: PhantomData,
        }
    }

    /// An update written as an aggregation pipeline (`$set`, `$unset`, `$project`,
    /// `$replaceWith`, ... computed from the document's own fields), unchecked; it cannot be
    /// combined with operators.
    pub fn pipeline(stages: Vec<Document>) -> Self {
        Update {
            doc: Document::new(),
            pipeline: Some(stages),
            error: None,
            _model: PhantomData,
        }
    }

    /// An update that could not be built; running it reports `error`.
    pub(crate) fn failed(error: BuildError) -> Self {
        let mut update = Update::raw(Document::new());
        update.error = Some(error);
        update
    }

    fn entry(operator: &str, path: &str, value: Result<Bson, bson::error::Error>) -> Self {
        Update::built_entry(
            operator,
            path,
            value.map_err(|source| BuildError::UnwritableAt {
                path: path.to_owned(),
                source,
            }),
        )
    }

    /// An entry whose value was built by another builder (a filter), with its error as it is.
    fn built_entry(operator: &str, path: &str, value: Result<Bson, BuildError>) -> Self {
        let mut update = Update::raw(Document::new());
        match value {
            Ok(v) => {
                let mut fields = Document::new();
                fields.insert(path, v);
                update.doc.insert(operator, fields);
            }
            Err(e) => update.error = Some(e),
        }
        update
    }

    /// This update and `other` together (their paths must not overlap).
    #[must_use]
    pub fn and(mut self, other: Update<R>) -> Self {
        self.error = self.error.or(other.error);
        if self.pipeline.is_some() || other.pipeline.is_some() {
            self.error = self.error.or(Some(BuildError::PipelineCombined));
        }
        for (operator, fields) in other.doc {
            match (self.doc.get_mut(&operator), fields) {
                (Some(Bson::Document(mine)), Bson::Document(theirs)) => mine.extend(theirs),
                (_, fields) => {
                    self.doc.insert(operator, fields);
                }
            }
        }
        self
    }

    /// The MongoDB update document (empty for a pipeline update, see
    /// [`Update::to_pipeline`]).
    pub fn to_document(&self) -> &Document {
        &self.doc
    }

    /// The stages of a pipeline update.
    pub fn to_pipeline(&self) -> Option<&[Document]> {
        self.pipeline.as_deref()
    }

    /// What the engine applies: the operators, or the pipeline.
    pub(crate) fn into_modifications(self) -> Result<UpdateModifications, BuildError> {
        match (self.error, self.pipeline) {
            (Some(e), _) => Err(e),
            (None, Some(stages)) => Ok(UpdateModifications::Pipeline(stages)),
            (None, None) => Ok(UpdateModifications::Document(self.doc)),
        }
    }
}

/// An update checked and parsed once, to apply many times: each
/// [`TxnCollection::update_one_prepared`](crate::TxnCollection::update_one_prepared) then skips
/// building and parsing it (a message delivered to many inboxes, say). Made by
/// [`Collection::prepare_update`](crate::Collection::prepare_update); an update of operators or
/// a pipeline, without array filters or `let` variables of its own.
///
/// ```
/// use odm::{Database, Document, UpdateOptions};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "counters")]
/// struct Counter {
///     #[odm(id)]
///     id: i64,
///     n: i64,
/// }
///
/// let db = Database::in_memory()?;
/// let counters = db.collection::<Counter>()?;
/// let f = Counter::fields();
/// let bump = counters.prepare_update(f.n.inc(1))?;
/// db.transaction(|txn| {
///     let mut counters = txn.collection::<Counter>()?;
///     let upsert = UpdateOptions { upsert: true, ..UpdateOptions::default() };
///     for id in [1, 2, 1] {
///         counters.update_one_prepared(f.id.eq(id), &bump, &upsert)?;
///     }
///     Ok::<_, odm::Error>(())
/// })?;
/// assert_eq!(counters.get(1)?.map(|c| c.n), Some(2));
/// # Ok::<(), odm::Error>(())
/// ```
pub struct PreparedUpdate<R> {
    /// As given, for a MongoDB deployment and for sampled statements.
    modifications: UpdateModifications,
    /// As the engine applies it.
    parsed: odm_engine::update::Update,
    _model: PhantomData<fn() -> R>,
}

impl<R> Clone for PreparedUpdate<R> {
    fn clone(&self) -> Self {
        PreparedUpdate {
            modifications: self.modifications.clone(),
            parsed: self.parsed.clone(),
            _model: PhantomData,
        }
    }
}

impl<R> std::fmt::Debug for PreparedUpdate<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PreparedUpdate")
            .field(&self.modifications)
            .finish()
    }
}

impl<R: crate::Document> PreparedUpdate<R> {
    /// Checks and parses `update` for collection `collection` (named in its errors), with the
    /// model's kept fields stamped by the server at each application (`$currentDate`, `$inc`;
    /// an upsert of a model with `created_at` is stamped again at its call).
    pub(crate) fn new(update: Update<R>, collection: &str) -> crate::Result<Self> {
        let modifications = crate::txn::serialized(collection, update.into_modifications())?;
        let modifications = crate::kept::updated::<R>(modifications, false, crate::kept::now());
        let no_let = odm_engine::expr::Scope::with_let(None).map_err(odm_engine::Error::from)?;
        let parsed = odm_engine::update::Update::parse_modifications(&modifications, &[], &no_let)
            .map_err(odm_engine::Error::from)?;
        Ok(PreparedUpdate {
            modifications,
            parsed,
            _model: PhantomData,
        })
    }
}

impl<R> PreparedUpdate<R> {
    /// The update as given, and as the engine applies it.
    pub(crate) fn parts(&self) -> (&UpdateModifications, &odm_engine::update::Update) {
        (&self.modifications, &self.parsed)
    }
}

impl<R, V: Serialize> Field<R, V> {
    pub fn set(&self, value: impl IntoValue<V>) -> Update<R> {
        Update::entry("$set", self.path(), value.into_bson())
    }

    /// Sets the value only when an upsert inserts the document.
    pub fn set_on_insert(&self, value: impl IntoValue<V>) -> Update<R> {
        Update::entry("$setOnInsert", self.path(), value.into_bson())
    }

    /// Keeps the smaller of the current value and `value`.
    pub fn min(&self, value: impl IntoValue<V>) -> Update<R> {
        Update::entry("$min", self.path(), value.into_bson())
    }

    /// Keeps the larger of the current value and `value`.
    pub fn max(&self, value: impl IntoValue<V>) -> Update<R> {
        Update::entry("$max", self.path(), value.into_bson())
    }

    /// Moves the value to another field of the same type.
    pub fn rename_to(&self, to: &Field<R, V>) -> Update<R> {
        Update::entry(
            "$rename",
            self.path(),
            Ok(Bson::String(to.path().to_owned())),
        )
    }
}

impl<R, V> Field<R, V> {
    pub fn unset(&self) -> Update<R> {
        Update::entry("$unset", self.path(), Ok(Bson::String(String::new())))
    }
}

impl<R, V: Numeric> Field<R, V> {
    pub fn inc(&self, by: V) -> Update<R> {
        Update::entry("$inc", self.path(), to_bson(&by))
    }

    pub fn mul(&self, by: V) -> Update<R> {
        Update::entry("$mul", self.path(), to_bson(&by))
    }
}

/// Date types `$currentDate` can write.
pub trait DateLike: private::Sealed {}
impl DateLike for bson::DateTime {}
impl DateLike for Option<bson::DateTime> {}
impl private::Sealed for bson::DateTime {}
impl private::Sealed for Option<bson::DateTime> {}

mod private {
    pub trait Sealed {}
}

impl<R, V: DateLike> Field<R, V> {
    /// Sets the field to the current time.
    pub fn current_date(&self) -> Update<R> {
        Update::entry("$currentDate", self.path(), Ok(Bson::Boolean(true)))
    }
}

/// `$push` with modifiers: `Push::each(items).sort_by(..).slice(-50)`.
///
/// ```
/// use odm::{Database, Document, Embedded, Push};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Embedded)]
/// struct Score {
///     player: String,
///     points: i32,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "boards")]
/// struct Board {
///     #[odm(id)]
///     id: i64,
///     #[odm(embedded)]
///     top: Vec<Score>,
/// }
///
/// let db = Database::in_memory()?;
/// let boards = db.collection::<Board>()?;
/// boards.insert_one(&Board { id: 1, top: Vec::new() })?;
/// let (f, s) = (Board::fields(), Score::fields());
/// for (player, points) in [("ann", 30), ("bob", 90), ("cy", 60)] {
///     // Keep the two best: push, sort by points descending, keep the first two.
///     let score = Score { player: player.into(), points };
///     boards.update_one(
///         f.id.eq(1),
///         f.top.push_with(Push::each([score]).sort_by(&s.points, false).slice(2)),
///     )?;
/// }
/// let top: Vec<String> = boards.get(1)?.unwrap().top.into_iter().map(|s| s.player).collect();
/// assert_eq!(top, ["bob", "cy"]);
/// # Ok::<(), odm::Error>(())
/// ```
#[derive(Debug)]
pub struct Push<E> {
    /// The elements as BSON, or why one could not be written.
    each: Result<Vec<Bson>, bson::error::Error>,
    position: Option<i32>,
    slice: Option<i32>,
    sort: Option<Bson>,
    _element: std::marker::PhantomData<fn() -> E>,
}

impl<E> Push<E> {
    /// The elements to push: values of `E`, references to them, or views that write as `E`
    /// ([`IntoValue`]).
    pub fn each<I: IntoValue<E>>(items: impl IntoIterator<Item = I>) -> Self {
        Push {
            each: items.into_iter().map(IntoValue::into_bson).collect(),
            position: None,
            slice: None,
            sort: None,
            _element: std::marker::PhantomData,
        }
    }

    /// Inserts at this position (negative: from the end) instead of appending.
    #[must_use]
    pub fn position(mut self, at: i32) -> Self {
        self.position = Some(at);
        self
    }

    /// Keeps the first `n` elements, or the last `-n`.
    #[must_use]
    pub fn slice(mut self, n: i32) -> Self {
        self.slice = Some(n);
        self
    }

    /// Sorts the elements themselves, ascending or descending.
    #[must_use]
    pub fn sort(mut self, ascending: bool) -> Self {
        self.sort = Some(Bson::Int32(if ascending { 1 } else { -1 }));
        self
    }

    /// Sorts subdocument elements by a field of theirs.
    #[must_use]
    pub fn sort_by<V>(mut self, field: &Field<E, V>, ascending: bool) -> Self {
        let mut spec = match self.sort.take() {
            Some(Bson::Document(d)) => d,
            _ => Document::new(),
        };
        spec.insert(field.path(), if ascending { 1 } else { -1 });
        self.sort = Some(Bson::Document(spec));
        self
    }
}

impl<R, E: Serialize> Field<R, Vec<E>> {
    /// Appends one element.
    pub fn push(&self, element: impl IntoValue<E>) -> Update<R> {
        Update::entry("$push", self.path(), element.into_bson())
    }

    /// `$push` with `$each` and its modifiers, applied in MongoDB's order (position, sort,
    /// slice).
    pub fn push_with(&self, push: Push<E>) -> Update<R> {
        let value = push.each.map(|each| {
            let mut d = Document::new();
            d.insert("$each", each);
            if let Some(p) = push.position {
                d.insert("$position", p);
            }
            if let Some(s) = push.sort {
                d.insert("$sort", s);
            }
            if let Some(n) = push.slice {
                d.insert("$slice", n);
            }
            Bson::Document(d)
        });
        Update::entry("$push", self.path(), value)
    }

    /// Adds the element unless the array holds an equal one.
    pub fn add_to_set(&self, element: impl IntoValue<E>) -> Update<R> {
        Update::entry("$addToSet", self.path(), element.into_bson())
    }

    /// Adds each element the array does not hold yet.
    pub fn add_each_to_set(&self, elements: impl IntoIterator<Item = E>) -> Update<R> {
        let each: Result<Vec<Bson>, bson::error::Error> =
            elements.into_iter().map(|e| to_bson(&e)).collect();
        Update::entry(
            "$addToSet",
            self.path(),
            each.map(|each| Bson::Document(bson::doc! { "$each": each })),
        )
    }

    /// Removes every element equal to `element`.
    pub fn pull(&self, element: impl IntoValue<E>) -> Update<R> {
        Update::entry("$pull", self.path(), element.into_bson())
    }

    /// Removes every subdocument element matching `condition` (built from `E::fields()`).
    pub fn pull_where(&self, condition: Filter<E>) -> Update<R>
    where
        E: Embedded,
    {
        Update::built_entry(
            "$pull",
            self.path(),
            condition.into_document().map(Bson::Document),
        )
    }

    /// Removes every element equal to one of `elements`.
    pub fn pull_all(&self, elements: impl IntoIterator<Item = E>) -> Update<R> {
        let all: Result<Vec<Bson>, bson::error::Error> =
            elements.into_iter().map(|e| to_bson(&e)).collect();
        Update::entry("$pullAll", self.path(), all.map(Bson::Array))
    }

    /// Removes the first element.
    pub fn pop_first(&self) -> Update<R> {
        Update::entry("$pop", self.path(), Ok(Bson::Int32(-1)))
    }

    /// Removes the last element.
    pub fn pop_last(&self) -> Update<R> {
        Update::entry("$pop", self.path(), Ok(Bson::Int32(1)))
    }
}
