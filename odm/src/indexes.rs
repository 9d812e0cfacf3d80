//! Declared indexes: a model's indexes and shard key, kept in step with the database.
//!
//! Opening a model's collection creates the collection (with its shard key) and the declared
//! indexes that are missing; a declared index whose stored definition differs is an error that
//! shows both, never a silent rebuild. [`crate::Collection::sync_indexes`] also reports the
//! stored indexes the model does not declare, and drops them only when asked to.

use std::fmt::{self, Write};

use odm_engine::{CollectionOptions, ID_INDEX_NAME, IndexSpec, WriteTxn};

use crate::error::{Error, Result};
use crate::model::Document;

/// What syncing a model's indexes did and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexPlan {
    /// Declared indexes that were missing and are now built.
    pub created: Vec<String>,
    /// Declared indexes already there, as declared.
    pub unchanged: Vec<String>,
    /// Stored indexes the model does not declare (kept unless dropping was asked for).
    pub undeclared: Vec<String>,
    /// Undeclared indexes dropped.
    pub dropped: Vec<String>,
}

impl fmt::Display for IndexPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |names: &[String]| {
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        };
        write!(
            f,
            "created: {}; unchanged: {}; undeclared: {}; dropped: {}",
            list(&self.created),
            list(&self.unchanged),
            list(&self.undeclared),
            list(&self.dropped)
        )
    }
}

/// An index definition as text, for mismatch messages: `{ a: 1, b: -1 } unique sparse`.
pub(crate) fn describe(spec: &IndexSpec) -> String {
    let mut text = spec.keys_document().to_string();
    if spec.is_unique() {
        text.push_str(" unique");
    }
    if spec.is_sparse() {
        text.push_str(" sparse");
    }
    if let Some(ttl) = spec.ttl() {
        let _ = write!(text, " expireAfterSeconds={}", ttl.as_secs());
    }
    if let Some(partial) = spec.partial_filter() {
        let _ = write!(text, " partialFilterExpression={}", partial.document());
    }
    text
}

/// Brings the collection `name` in line with the declaration of `T`, inside `txn`.
pub(crate) fn sync<T: Document>(
    txn: &mut WriteTxn<'_>,
    name: &str,
    drop_undeclared: bool,
) -> Result<IndexPlan> {
    match (txn.collection_options(name), T::shard_key()) {
        (None, key) => {
            let mut options = CollectionOptions::default();
            if let Some(key) = key {
                options = options.with_shard_key(key);
            }
            txn.create_collection_with(name, options)?;
        }
        (Some(stored), declared) if stored.shard_key != declared => {
            let show = |k: Option<&odm_engine::ShardKey>| {
                k.map_or_else(|| "none".to_owned(), |k| k.to_document().to_string())
            };
            return Err(Error::IndexMismatch {
                collection: name.to_owned(),
                index: "shard key".to_owned(),
                declared: show(declared.as_ref()),
                stored: show(stored.shard_key.as_ref()),
            });
        }
        _ => {}
    }
    let stored = txn.list_indexes(name);
    let declared = T::indexes();
    let mut plan = IndexPlan::default();
    for spec in &declared {
        match stored.iter().find(|s| s.name() == spec.name()) {
            Some(existing) if existing == spec => plan.unchanged.push(spec.name().to_owned()),
            Some(existing) => {
                return Err(Error::IndexMismatch {
                    collection: name.to_owned(),
                    index: spec.name().to_owned(),
                    declared: describe(spec),
                    stored: describe(existing),
                });
            }
            None => {
                plan.created.push(txn.create_index(name, spec.clone())?);
            }
        }
    }
    for spec in &stored {
        let declared_here = declared.iter().any(|d| d.name() == spec.name());
        if declared_here || spec.name() == ID_INDEX_NAME {
            continue;
        }
        plan.undeclared.push(spec.name().to_owned());
        if drop_undeclared {
            txn.drop_index(name, spec.name())?;
            plan.dropped.push(spec.name().to_owned());
        }
    }
    Ok(plan)
}
