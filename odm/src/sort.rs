//! Typed sorts and projections over the fields of a model.

use std::marker::PhantomData;

use bson::Document;

use crate::field::Field;

/// A sort of the model `R`: `Sort::desc(&f.sent).then_asc(&f.id)`.
///
/// ```
/// use odm::{Database, Document, Filter, Projection, Sort};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "runs", index(keys(seconds = 1)))]
/// struct Run {
///     #[odm(id)]
///     id: i64,
///     runner: String,
///     seconds: i32,
/// }
///
/// let db = Database::in_memory()?;
/// let runs = db.collection::<Run>()?;
/// for (id, runner, seconds) in [(1, "ann", 300), (2, "bob", 280), (3, "cy", 300)] {
///     runs.insert_one(&Run { id, runner: runner.into(), seconds })?;
/// }
/// let f = Run::fields();
/// let podium = runs
///     .find(Filter::all())
///     .sort(Sort::asc(&f.seconds).then_desc(&f.id))
///     .limit(3)
///     .project(&Projection::include(&f.runner).without_id())?;
/// let names: Vec<&str> = podium.iter().map(|d| d.get_str("runner").unwrap()).collect();
/// assert_eq!(names, ["bob", "cy", "ann"]);
/// # Ok::<(), odm::Error>(())
/// ```
#[derive(Debug)]
pub struct Sort<R> {
    doc: Document,
    _model: PhantomData<fn() -> R>,
}

impl<R> Clone for Sort<R> {
    fn clone(&self) -> Self {
        Sort {
            doc: self.doc.clone(),
            _model: PhantomData,
        }
    }
}

impl<R> From<Document> for Sort<R> {
    fn from(doc: Document) -> Self {
        Sort {
            doc,
            _model: PhantomData,
        }
    }
}

impl<R> Sort<R> {
    pub fn asc<V>(field: &Field<R, V>) -> Self {
        Sort::from(Document::new()).then_asc(field)
    }

    pub fn desc<V>(field: &Field<R, V>) -> Self {
        Sort::from(Document::new()).then_desc(field)
    }

    #[must_use]
    pub fn then_asc<V>(mut self, field: &Field<R, V>) -> Self {
        self.doc.insert(field.path(), 1);
        self
    }

    #[must_use]
    pub fn then_desc<V>(mut self, field: &Field<R, V>) -> Self {
        self.doc.insert(field.path(), -1);
        self
    }

    pub fn to_document(&self) -> &Document {
        &self.doc
    }
}

/// A projection of the model `R`: the fields a find returns (as documents, since a partial
/// document is not an `R`).
#[derive(Debug)]
pub struct Projection<R> {
    doc: Document,
    _model: PhantomData<fn() -> R>,
}

impl<R> From<Document> for Projection<R> {
    fn from(doc: Document) -> Self {
        Projection {
            doc,
            _model: PhantomData,
        }
    }
}

impl<R> Projection<R> {
    /// Only these fields (and `_id`, unless excluded).
    pub fn include<V>(field: &Field<R, V>) -> Self {
        Projection::from(Document::new()).and_include(field)
    }

    #[must_use]
    pub fn and_include<V>(mut self, field: &Field<R, V>) -> Self {
        self.doc.insert(field.path(), 1);
        self
    }

    /// Leaves `_id` out of an inclusion.
    #[must_use]
    pub fn without_id(mut self) -> Self {
        self.doc.insert("_id", 0);
        self
    }

    /// Every field but these.
    pub fn exclude<V>(field: &Field<R, V>) -> Self {
        Projection::from(Document::new()).and_exclude(field)
    }

    #[must_use]
    pub fn and_exclude<V>(mut self, field: &Field<R, V>) -> Self {
        self.doc.insert(field.path(), 0);
        self
    }

    pub fn to_document(&self) -> &Document {
        &self.doc
    }
}
