//! Options a collection is created with, kept in the catalog.
//!
//! The shard key says how the collection would be partitioned on a sharded MongoDB deployment
//! (S6): a range key over one or more fields, or a hashed key over one field. The embedded
//! engine stores everything on one node; the key is kept so that query plans can say whether a
//! query would be routed to one shard or broadcast, and so that the same model can be sharded
//! when it moves to MongoDB.

use std::sync::Arc;

use bson::{Bson, Document};

use crate::capped::Capped;
use crate::collation::{Collation, CollationError};
use crate::error::IndexSpecError;
use crate::keys::Direction;
use crate::path::Path;
use crate::validation::Validation;

/// How a collection was declared; see the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectionOptions {
    pub shard_key: Option<ShardKey>,
    /// MongoDB's `changeStreamPreAndPostImages`: the change log keeps each changed
    /// document's image before the change (and an update's after it), for change streams'
    /// `fullDocumentBeforeChange` and `fullDocument: "whenAvailable" | "required"`.
    pub change_stream_pre_and_post_images: bool,
    /// A capped collection's limits (see [`crate::capped`]).
    pub capped: Option<Capped>,
    /// Its validator, level and action (see [`crate::validation`]).
    pub validation: Option<Validation>,
    /// Its default collation: every operation on it that names no collation of its own runs
    /// under this one, and every index created on it without one is created with it, as in
    /// MongoDB. (The `_id` index, which is the documents table, keys `_id`s by their bytes.)
    pub collation: Option<Arc<Collation>>,
}

impl CollectionOptions {
    #[must_use]
    pub fn with_shard_key(mut self, key: ShardKey) -> Self {
        self.shard_key = Some(key);
        self
    }

    #[must_use]
    pub fn with_pre_and_post_images(mut self, enabled: bool) -> Self {
        self.change_stream_pre_and_post_images = enabled;
        self
    }

    #[must_use]
    pub fn with_validation(mut self, validation: Validation) -> Self {
        self.validation = Some(validation);
        self
    }

    /// The collection with a default collation; the `simple` locale is none.
    pub fn with_collation(mut self, collation: &Document) -> Result<Self, CollationError> {
        self.collation = Collation::parse(collation)?;
        Ok(self)
    }

    #[must_use]
    pub fn with_capped(mut self, capped: Capped) -> Self {
        self.capped = Some(capped);
        self
    }

    pub(crate) fn to_document(&self) -> Document {
        let mut d = Document::new();
        if let Some(capped) = self.capped {
            d.insert("capped", capped.to_document());
        }
        if let Some(validation) = &self.validation {
            d.insert("validation", validation.to_document());
        }
        if let Some(key) = &self.shard_key {
            d.insert("shardKey", key.to_document());
        }
        if self.change_stream_pre_and_post_images {
            d.insert("changeStreamPreAndPostImages", true);
        }
        if let Some(collation) = &self.collation {
            d.insert("collation", collation.normalized().clone());
        }
        d
    }

    pub(crate) fn from_document(d: &Document) -> Result<CollectionOptions, IndexSpecError> {
        let shard_key = match d.get_document("shardKey") {
            Ok(key) => Some(ShardKey::from_document(key)?),
            Err(_) => None,
        };
        Ok(CollectionOptions {
            shard_key,
            change_stream_pre_and_post_images: d
                .get_bool("changeStreamPreAndPostImages")
                .unwrap_or(false),
            capped: match d.get_document("capped") {
                Ok(c) => {
                    Some(
                        Capped::from_document(c).ok_or_else(|| IndexSpecError::BadOption {
                            option: "capped".into(),
                            reason: format!("{c} is not a capped collection's limits"),
                        })?,
                    )
                }
                Err(_) => None,
            },
            validation: match d.get_document("validation") {
                Ok(v) => {
                    Some(
                        Validation::from_document(v).ok_or_else(|| IndexSpecError::BadOption {
                            option: "validation".into(),
                            reason: format!("{v} is not a collection's validator"),
                        })?,
                    )
                }
                Err(_) => None,
            },
            collation: match d.get_document("collation") {
                Ok(c) => Collation::parse(c).map_err(|e| IndexSpecError::BadOption {
                    option: "collation".into(),
                    reason: e.to_string(),
                })?,
                Err(_) => None,
            },
        })
    }
}

/// A shard key: ranged fields (`{recipient: 1, sent: 1}`) or one hashed field
/// (`{identifier: "hashed"}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardKey {
    Range(Vec<(Path, Direction)>),
    Hashed(Path),
}

impl ShardKey {
    /// A ranged key over `fields`, in order.
    pub fn range<'a>(
        fields: impl IntoIterator<Item = &'a str>,
    ) -> Result<ShardKey, IndexSpecError> {
        let mut paths: Vec<(Path, Direction)> = Vec::new();
        for field in fields {
            let path = Path::parse(field)?;
            if paths.iter().any(|(p, _)| *p == path) {
                return Err(IndexSpecError::RepeatedPath {
                    path: field.to_owned(),
                });
            }
            paths.push((path, Direction::Ascending));
        }
        if paths.is_empty() {
            return Err(IndexSpecError::NoKeys);
        }
        Ok(ShardKey::Range(paths))
    }

    pub fn hashed(field: &str) -> Result<ShardKey, IndexSpecError> {
        Ok(ShardKey::Hashed(Path::parse(field)?))
    }

    /// The key's field paths, in order.
    pub fn paths(&self) -> Vec<&Path> {
        match self {
            ShardKey::Range(fields) => fields.iter().map(|(p, _)| p).collect(),
            ShardKey::Hashed(path) => vec![path],
        }
    }

    /// MongoDB's spelling: `{a: 1, b: 1}` or `{a: "hashed"}`.
    pub fn to_document(&self) -> Document {
        match self {
            ShardKey::Range(fields) => fields
                .iter()
                .map(|(p, d)| (p.as_str().to_owned(), Bson::Int32(d.as_i32())))
                .collect(),
            ShardKey::Hashed(path) => {
                let mut d = Document::new();
                d.insert(path.as_str(), "hashed");
                d
            }
        }
    }

    /// Reads MongoDB's spelling. As MongoDB: a ranged field's value is 1; `"hashed"` names the
    /// hashed field. A hashed field among others (MongoDB 4.4's compound hashed keys) is a
    /// key this engine does not route, refused by name.
    pub fn from_document(d: &Document) -> Result<ShardKey, IndexSpecError> {
        if let [(path, Bson::String(kind))] = d.iter().collect::<Vec<_>>().as_slice()
            && kind == "hashed"
        {
            return ShardKey::hashed(path);
        }
        for (path, value) in d {
            match value {
                Bson::Int32(1) | Bson::Int64(1) => {}
                // Exactly one: 1.0 is the only double MongoDB takes here.
                #[allow(clippy::float_cmp)]
                Bson::Double(one) if *one == 1.0 => {}
                Bson::String(kind) if kind == "hashed" => {
                    return Err(IndexSpecError::UnsupportedKind {
                        path: path.clone(),
                        kind: "compound hashed shard key".into(),
                    });
                }
                other => {
                    return Err(IndexSpecError::BadKeyValue {
                        path: path.clone(),
                        reason: format!(
                            "a shard key field can only be 1 or \"hashed\", not {other}"
                        ),
                    });
                }
            }
        }
        ShardKey::range(d.keys().map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_keys_round_trip_in_mongodb_spelling() {
        let range = ShardKey::range(["recipient", "sent"]).unwrap();
        assert_eq!(
            range.to_document(),
            bson::doc! { "recipient": 1, "sent": 1 }
        );
        assert_eq!(
            ShardKey::from_document(&range.to_document()).unwrap(),
            range
        );
        let hashed = ShardKey::hashed("identifier").unwrap();
        assert_eq!(hashed.to_document(), bson::doc! { "identifier": "hashed" });
        let options = CollectionOptions::default().with_shard_key(hashed);
        assert_eq!(
            CollectionOptions::from_document(&options.to_document()).unwrap(),
            options
        );
        assert!(ShardKey::range(Vec::<&str>::new()).is_err());
    }
}
