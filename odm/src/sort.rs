//! Typed sorts and projections over the fields of a model.

use std::marker::PhantomData;

use bson::Document;

use crate::field::Field;

/// A sort of the model `R`: `Sort::desc(&f.sent).then_asc(&f.id)`.
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
