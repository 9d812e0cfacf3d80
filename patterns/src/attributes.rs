//! `Attributes` (S3b): user-defined attributes as an array of `{k, v}` pairs under one
//! compound multikey index `(attrs.k, attrs.v)`, so that equality and range queries on any
//! attribute use the same index however many different attributes there are (the S3a design,
//! a subdocument with an index per attribute, needs a new index for every new attribute).
//!
//! Queries on one attribute go through `$elemMatch`, so the key and the value conditions hold
//! for the same pair and both bound the index.

use bson::{Bson, Document, doc};
use odm::engine::IndexSpec;
use odm::engine::query::{Explain, FindOptions};
use odm::engine::update::UpdateOptions;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::meta::{PatternError, record};

/// Documents with attributes, in one collection; see the module documentation.
#[derive(Debug, Clone)]
pub struct Attributes {
    db: odm::Database,
    name: String,
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

impl Attributes {
    pub fn open(db: &odm::Database, name: &str) -> Result<Self, PatternError> {
        db.engine().write(|txn| {
            record(txn, PATTERN, name, Document::new())?;
            let spec = IndexSpec::new([
                ("attrs.k", odm::engine::Direction::Ascending),
                ("attrs.v", odm::engine::Direction::Ascending),
            ])
            .map_err(odm::engine::Error::from)?;
            if !txn
                .list_indexes(name)
                .iter()
                .any(|s| s.name() == spec.name())
            {
                txn.create_index(name, spec)?;
            }
            Ok::<_, PatternError>(())
        })?;
        Ok(Attributes {
            db: db.clone(),
            name: name.to_owned(),
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
        let value = bson::serialize_to_bson(value).map_err(|e| PatternError::Refused {
            pattern: PATTERN,
            name: self.name.clone(),
            reason: format!("the value of `{key}` does not serialize: {e}"),
        })?;
        self.db.engine().write(|txn| {
            let replaced = txn.update_one(
                &self.name,
                &doc! { "_id": id.clone(), "attrs.k": key },
                &doc! { "$set": { "attrs.$.v": value.clone() } },
                &UpdateOptions::default(),
            )?;
            if replaced.matched == 0 {
                txn.update_one(
                    &self.name,
                    &doc! { "_id": id.clone() },
                    &doc! { "$push": { "attrs": { "k": key, "v": value.clone() } } },
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
        let Some(raw) = self.db.engine().collection(&self.name).get(&id.into())? else {
            return Ok(None);
        };
        let doc = Document::try_from(raw.as_ref()).map_err(|e| self.damaged(e.to_string()))?;
        let Ok(attrs) = doc.get_array("attrs") else {
            return Ok(None);
        };
        for attr in attrs {
            if let Bson::Document(pair) = attr
                && pair.get_str("k").ok() == Some(key)
            {
                let value = pair.get("v").cloned().unwrap_or(Bson::Null);
                return bson::deserialize_from_bson(value)
                    .map(Some)
                    .map_err(|e| self.damaged(format!("`{key}` does not decode: {e}")));
            }
        }
        Ok(None)
    }

    /// Removes one attribute; `false` when the document had none by that key.
    pub fn remove(&self, id: impl Into<Bson>, key: &str) -> Result<bool, PatternError> {
        let result = self.db.engine().collection(&self.name).update_one(
            &doc! { "_id": id.into() },
            &doc! { "$pull": { "attrs": { "k": key } } },
            &UpdateOptions::default(),
        )?;
        Ok(result.modified > 0)
    }

    /// The ids of the documents whose attribute `key` meets `condition`, through the index.
    pub fn find(&self, key: &str, condition: &Condition) -> Result<Vec<Bson>, PatternError> {
        let txn = self.db.engine().read()?;
        let Some(coll) = txn.collection(&self.name)? else {
            return Ok(Vec::new());
        };
        let options = FindOptions {
            projection: Some(doc! { "_id": 1 }),
            sort: Some(doc! { "_id": 1 }),
            ..FindOptions::default()
        };
        coll.find(&filter(key, condition), &options)?
            .map(|d| Ok(d?.get("_id").cloned().unwrap_or(Bson::Null)))
            .collect()
    }

    /// How [`Attributes::find`] runs.
    pub fn explain_find(&self, key: &str, condition: &Condition) -> Result<Explain, PatternError> {
        let txn = self.db.engine().read()?;
        let coll = txn
            .collection(&self.name)?
            .ok_or_else(|| self.damaged("no documents yet".to_owned()))?;
        Ok(coll.explain(&filter(key, condition), &FindOptions::default())?)
    }

    fn damaged(&self, reason: String) -> PatternError {
        PatternError::Damaged {
            pattern: PATTERN,
            name: self.name.clone(),
            reason,
        }
    }
}

/// `{attrs: {$elemMatch: {k, v: condition}}}`.
fn filter(key: &str, condition: &Condition) -> Document {
    let value = match condition {
        Condition::Eq(v) => v.clone(),
        Condition::Range { above, below } => {
            let mut range = Document::new();
            if let Some((v, inclusive)) = above {
                range.insert(if *inclusive { "$gte" } else { "$gt" }, v.clone());
            }
            if let Some((v, inclusive)) = below {
                range.insert(if *inclusive { "$lte" } else { "$lt" }, v.clone());
            }
            Bson::Document(range)
        }
    };
    doc! { "attrs": { "$elemMatch": { "k": key, "v": value } } }
}
