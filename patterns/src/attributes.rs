//! `AttributeArray` (S3b): user-defined attributes as an array of `{k, v}` pairs under one
//! compound multikey index `(attrs.k, attrs.v)`, so that equality and range queries on any
//! attribute use the same index however many different attributes there are (the S3a design,
//! a subdocument with an index per attribute, needs a new index for every new attribute).
//!
//! Queries on one attribute go through `$elemMatch`, so the key and the value conditions hold
//! for the same pair and both bound the index.

use bson::Bson;
use odm::engine::query::Explain;
use odm::{Collection, Document, Embedded, Filter, Projection, Sort, UpdateOptions};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// One attribute: its key and its value, of any type.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Attr {
    k: String,
    v: Bson,
}

/// A document with attributes. Other fields the application keeps in it are left alone.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "attributes", index(keys("attrs.k" = 1, "attrs.v" = 1)))]
struct Attributed {
    #[odm(id)]
    id: Bson,
    #[serde(default)]
    #[odm(embedded)]
    attrs: Vec<Attr>,
}

/// Documents with attributes, in one collection; see the module documentation.
///
/// ```
/// use bson::Bson;
/// use odm_patterns::{AttributeArray, Condition};
///
/// let db = odm::Database::in_memory()?;
/// let files = AttributeArray::open(&db, "files")?;
/// files.put(1, "size", &64)?;
/// files.put(2, "size", &4096)?;
/// files.put(2, "type", &"image")?;
/// let big = Condition::Range { above: Some((Bson::Int32(100), false)), below: None };
/// assert_eq!(files.find("size", &big)?, [Bson::Int32(2)]);
/// assert_eq!(files.get::<String>(2, "type")?.as_deref(), Some("image"));
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug, Clone)]
pub struct AttributeArray {
    docs: Collection<Attributed>,
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

impl AttributeArray {
    pub fn open(db: &odm::Database, name: &str) -> Result<Self, PatternError> {
        db.transaction(|txn| record(txn, PATTERN, name, bson::Document::new()))?;
        Ok(AttributeArray {
            docs: db.collection_named(name)?,
        })
    }

    /// Sets one attribute of a document (creating the document if needed).
    pub fn put<V: Serialize>(
        &self,
        id: impl Into<Bson>,
        key: &str,
        value: &V,
    ) -> Result<(), PatternError> {
        let id = id.into();
        let v = bson::serialize_to_bson(value).map_err(|e| PatternError::Refused {
            pattern: PATTERN,
            name: self.docs.name().to_owned(),
            reason: format!("the value of `{key}` does not serialize: {e}"),
        })?;
        let f = Attributed::fields();
        self.docs.database().transaction(|txn| {
            let mut docs = txn.collection_named::<Attributed>(self.docs.name())?;
            let replaced = docs.update_one(
                f.id.eq(&id).and(f.attrs.k.eq(key)),
                f.attrs.matched().v.set(&v),
                &UpdateOptions::default(),
            )?;
            if replaced.matched == 0 {
                let attr = Attr {
                    k: key.to_owned(),
                    v: v.clone(),
                };
                docs.update_one(
                    f.id.eq(&id),
                    f.attrs.push(attr),
                    &UpdateOptions {
                        upsert: true,
                        ..UpdateOptions::default()
                    },
                )?;
            }
            Ok(())
        })
    }

    /// One attribute of a document.
    pub fn get<V: DeserializeOwned>(
        &self,
        id: impl Into<Bson>,
        key: &str,
    ) -> Result<Option<V>, PatternError> {
        let Some(doc) = self.docs.get(id)? else {
            return Ok(None);
        };
        let Some(attr) = doc.attrs.into_iter().find(|a| a.k == key) else {
            return Ok(None);
        };
        bson::deserialize_from_bson(attr.v)
            .map(Some)
            .map_err(|e| self.damaged(format!("`{key}` does not decode: {e}")))
    }

    /// Removes one attribute; `false` when the document had none by that key.
    pub fn remove(&self, id: impl Into<Bson>, key: &str) -> Result<bool, PatternError> {
        let f = Attributed::fields();
        let result = self.docs.update_one(
            f.id.eq(id.into()),
            f.attrs.pull_where(Attr::fields().k.eq(key)),
        )?;
        Ok(result.modified > 0)
    }

    /// The ids of the documents whose attribute `key` meets `condition`, through the index.
    pub fn find(&self, key: &str, condition: &Condition) -> Result<Vec<Bson>, PatternError> {
        let f = Attributed::fields();
        let found = self
            .docs
            .find(filter(key, condition))
            .sort(Sort::asc(&f.id))
            .project(&Projection::include(&f.id))?;
        // A typed projection returns documents; the only field kept is the id.
        Ok(found
            .into_iter()
            .map(|mut d| d.remove(f.id.path()).unwrap_or(Bson::Null))
            .collect())
    }

    /// How [`AttributeArray::find`] runs.
    pub fn explain_find(&self, key: &str, condition: &Condition) -> Result<Explain, PatternError> {
        Ok(self.docs.find(filter(key, condition)).explain()?)
    }

    fn damaged(&self, reason: String) -> PatternError {
        PatternError::Damaged {
            pattern: PATTERN,
            name: self.docs.name().to_owned(),
            reason,
        }
    }
}

/// `{attrs: {$elemMatch: {k, v: condition}}}`: the key and the value conditions hold for the
/// same pair, and both bound the index.
fn filter(key: &str, condition: &Condition) -> Filter<Attributed> {
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
    Attributed::fields()
        .attrs
        .elem_match(a.k.eq(key).and(value))
}
