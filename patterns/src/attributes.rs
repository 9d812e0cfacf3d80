//! `AttributeArray` (S3b): user-defined attributes as an array of `{k, v}` pairs under one
//! compound multikey index `(attrs.k, attrs.v)`, so that equality and range queries on any
//! attribute use the same index however many different attributes there are (the S3a design,
//! a subdocument with an index per attribute, needs a new index for every new attribute).
//!
//! The attributes live in the user's own model, in an array field of [`Attr`] the user names at
//! open, so the documents keep their other fields and are read back as the model. Queries on
//! one attribute go through `$elemMatch`, so the key and the value conditions hold for the same
//! pair and both bound the index; [`AttributeArray::filter`] gives that condition as a typed
//! filter to combine with others, [`AttributeArray::find`] a typed find.

use bson::Bson;
use odm::engine::query::Explain;
use odm::{Collection, Document, Embedded, Field, Filter, Find, Index, Projection};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// One attribute: its key and its value, of any type. The user's model holds them in an array
/// field, `#[odm(embedded)] attrs: Vec<Attr>` (with `#[serde(default)]` if documents may have
/// none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Attr {
    pub k: String,
    pub v: Bson,
}

/// The attributes in one array field of the user's model `D`; see the module documentation.
///
/// ```
/// use bson::Bson;
/// use odm::{Document, Embedded};
/// use odm_patterns::{Attr, AttributeArray, Condition};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "files")]
/// struct File {
///     #[odm(id)]
///     id: i64,
///     #[serde(default)]
///     #[odm(embedded)]
///     attrs: Vec<Attr>,
/// }
///
/// let db = odm::Database::in_memory()?;
/// let f = File::fields();
/// let files = db.collection::<File>()?;
/// files.insert_many(&[File { id: 1, attrs: vec![] }, File { id: 2, attrs: vec![] }])?;
/// let attrs = AttributeArray::open(&db, "files", &f.attrs)?;
/// attrs.put(f.id.eq(1), "size", &64)?;
/// attrs.put(f.id.eq(2), "size", &4096)?;
/// attrs.put(f.id.eq(2), "type", &"image")?;
/// let big = Condition::Range { above: Some((Bson::Int32(100), false)), below: None };
/// let found: Vec<i64> = attrs.find("size", &big).to_vec()?.iter().map(|f| f.id).collect();
/// assert_eq!(found, [2]);
/// assert_eq!(attrs.get::<String>(f.id.eq(2), "type")?.as_deref(), Some("image"));
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug)]
pub struct AttributeArray<D> {
    docs: Collection<D>,
    attrs: Field<D, Vec<Attr>>,
}

impl<D> Clone for AttributeArray<D> {
    fn clone(&self) -> Self {
        AttributeArray {
            docs: self.docs.clone(),
            attrs: self.attrs.clone(),
        }
    }
}

const PATTERN: &str = "attributes";

/// A condition on one attribute's value.
#[derive(Debug, Clone)]
pub enum Condition {
    Eq(Bson),
    /// Greater than the first bound (inclusive when `true`), less than the second.
    Range {
        above: Option<(Bson, bool)>,
        below: Option<(Bson, bool)>,
    },
}

impl<D: Document> AttributeArray<D> {
    /// The attributes in the field `attrs` of the model's documents in collection `name`. The
    /// one index `(attrs.k, attrs.v)` depends on the field chosen, so it is created here.
    pub fn open(
        db: &odm::Database,
        name: &str,
        attrs: &Field<D, Vec<Attr>>,
    ) -> Result<Self, PatternError> {
        let a = Attr::fields();
        db.transaction(|txn| record(txn, PATTERN, name, bson::doc! { "field": attrs.path() }))?;
        // After the transaction: MongoDB creates an index inside one only on a collection the
        // transaction created, and the documents are often there first.
        let docs: Collection<D> = db.collection_named(name)?;
        docs.create_index(Index::asc(&attrs.element(&a.k)).then_asc(&attrs.element(&a.v)))?;
        Ok(AttributeArray {
            docs,
            attrs: attrs.clone(),
        })
    }

    /// Sets one attribute of the document `which` selects (replacing its value if the key is
    /// there); `false` when no document matched.
    pub fn put<V: Serialize>(
        &self,
        which: Filter<D>,
        key: &str,
        value: &V,
    ) -> Result<bool, PatternError> {
        let v = bson::serialize_to_bson(value)
            .map_err(|e| self.refused(format!("the value of `{key}` does not serialize: {e}")))?;
        let a = Attr::fields();
        self.docs.database().transaction(|txn| {
            let mut docs = txn.collection_named::<D>(self.docs.name())?;
            let replaced = docs.update_one(
                which.clone().and(self.attrs.element(&a.k).eq(key)),
                self.attrs.matched().fields().v.set(&v),
                &odm::UpdateOptions::default(),
            )?;
            if replaced.matched > 0 {
                return Ok(true);
            }
            let attr = Attr {
                k: key.to_owned(),
                v: v.clone(),
            };
            let pushed = docs.update_one(
                which.clone(),
                self.attrs.push(attr),
                &odm::UpdateOptions::default(),
            )?;
            Ok(pushed.matched > 0)
        })
    }

    /// One attribute of the document `which` selects.
    pub fn get<V: DeserializeOwned>(
        &self,
        which: Filter<D>,
        key: &str,
    ) -> Result<Option<V>, PatternError> {
        let found = self
            .docs
            .find(which)
            .limit(1)
            .project(&Projection::include(&self.attrs).without_id())?;
        let Some(doc) = found.into_iter().next() else {
            return Ok(None);
        };
        // The projection keeps the array under its path.
        let value = odm::engine::Path::new(self.attrs.path())
            .get(&doc)
            .cloned()
            .unwrap_or(Bson::Null);
        let attrs: Vec<Attr> = match value {
            Bson::Null => Vec::new(),
            value => bson::deserialize_from_bson(value)
                .map_err(|e| self.damaged(format!("the attributes do not decode: {e}")))?,
        };
        let Some(attr) = attrs.into_iter().find(|a| a.k == key) else {
            return Ok(None);
        };
        bson::deserialize_from_bson(attr.v)
            .map(Some)
            .map_err(|e| self.damaged(format!("`{key}` does not decode: {e}")))
    }

    /// Removes one attribute of the document `which` selects; `false` when it had none by that
    /// key.
    pub fn remove(&self, which: Filter<D>, key: &str) -> Result<bool, PatternError> {
        let result = self
            .docs
            .update_one(which, self.attrs.pull_where(Attr::fields().k.eq(key)))?;
        Ok(result.modified > 0)
    }

    /// `{attrs: {$elemMatch: {k, v: condition}}}`: the key and the value conditions hold for the
    /// same pair, and both bound the index. Combine it with other conditions on the model.
    pub fn filter(&self, key: &str, condition: &Condition) -> Filter<D> {
        let a = Attr::fields();
        let value = match condition {
            Condition::Eq(v) => a.v.eq(v),
            Condition::Range { above, below } => {
                let mut range = Filter::all();
                if let Some((v, inclusive)) = above {
                    range = range.and(if *inclusive { a.v.gte(v) } else { a.v.gt(v) });
                }
                if let Some((v, inclusive)) = below {
                    range = range.and(if *inclusive { a.v.lte(v) } else { a.v.lt(v) });
                }
                range
            }
        };
        self.attrs.elem_match(a.k.eq(key).and(value))
    }

    /// The documents whose attribute `key` meets `condition`, through the index; sort, limit or
    /// project it as any find.
    pub fn find(&self, key: &str, condition: &Condition) -> Find<D> {
        self.docs.find(self.filter(key, condition))
    }

    /// How [`AttributeArray::find`] runs.
    pub fn explain_find(&self, key: &str, condition: &Condition) -> Result<Explain, PatternError> {
        Ok(self.find(key, condition).explain()?)
    }

    fn refused(&self, reason: String) -> PatternError {
        PatternError::Refused {
            pattern: PATTERN,
            name: self.docs.name().to_owned(),
            reason,
        }
    }

    fn damaged(&self, reason: String) -> PatternError {
        PatternError::Damaged {
            pattern: PATTERN,
            name: self.docs.name().to_owned(),
            reason,
        }
    }
}
