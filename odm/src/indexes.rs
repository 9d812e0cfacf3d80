//! Declared indexes: a model's indexes and shard key, kept in step with the database.
//!
//! Opening a model's collection creates the collection (with its shard key) and the declared
//! indexes that are missing; a declared index whose stored definition differs is an error that
//! shows both, never a silent rebuild. [`crate::Collection::sync_indexes`] also reports the
//! stored indexes the model does not declare, and drops them only when asked to.
//!
//! [`Index`] is an index made at run time, when a setting chooses it (a retention, a variant):
//! its keys are field handles, so its paths are checked as a declaration's are.

use std::fmt::{self, Write};
use std::marker::PhantomData;
use std::time::Duration;

use odm_engine::{CollectionOptions, Direction, ID_INDEX_NAME, IndexSpec, WriteTxn};

use crate::error::{Error, Result};
use crate::field::Field;
use crate::model::Document;

/// An index of the model `R` made at run time by [`crate::TxnCollection::create_index`] or
/// [`crate::Collection::create_index`]: `Index::asc(&f.sent).expire_after(retention)`.
/// Creating one that exists with the same definition keeps it; one that exists with another
/// definition under the same name is an error. Note that `sync_indexes(true)` drops indexes
/// the model does not declare, these among them.
///
/// ```
/// use std::time::Duration;
/// use odm::{Database, Document, Index};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "sessions")]
/// struct Session {
///     #[odm(id)]
///     id: String,
///     user: String,
///     seen: bson::DateTime,
/// }
///
/// let db = Database::in_memory()?;
/// // Each tenant keeps its sessions for as long as its settings say.
/// let sessions = db.collection_named::<Session>("sessions_acme")?;
/// let f = Session::fields();
/// let retention = Duration::from_secs(3600);
/// let name = sessions.create_index(Index::asc(&f.seen).expire_after(retention))?;
/// assert_eq!(name, "seen_1");
/// // The same again is kept; another retention under the same name is refused.
/// sessions.create_index(Index::asc(&f.seen).expire_after(retention))?;
/// let longer = Index::asc(&f.seen).expire_after(retention * 2);
/// assert!(sessions.create_index(longer).is_err());
/// sessions.create_index(Index::asc(&f.user).then_desc(&f.seen).named("recent"))?;
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Index<R> {
    keys: Vec<(String, Direction)>,
    name: Option<String>,
    unique: bool,
    sparse: bool,
    expire_after: Option<Duration>,
    _model: PhantomData<fn() -> R>,
}

impl<R> fmt::Debug for Index<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index")
            .field("keys", &self.keys)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<R> Index<R> {
    fn on<V>(field: &Field<R, V>, direction: Direction) -> Self {
        Index {
            keys: vec![(field.path().to_owned(), direction)],
            name: None,
            unique: false,
            sparse: false,
            expire_after: None,
            _model: PhantomData,
        }
    }

    pub fn asc<V>(field: &Field<R, V>) -> Self {
        Index::on(field, Direction::Ascending)
    }

    pub fn desc<V>(field: &Field<R, V>) -> Self {
        Index::on(field, Direction::Descending)
    }

    #[must_use]
    pub fn then_asc<V>(mut self, field: &Field<R, V>) -> Self {
        self.keys
            .push((field.path().to_owned(), Direction::Ascending));
        self
    }

    #[must_use]
    pub fn then_desc<V>(mut self, field: &Field<R, V>) -> Self {
        self.keys
            .push((field.path().to_owned(), Direction::Descending));
        self
    }

    /// The index's name (by default MongoDB's, from its keys: `seen_1`).
    #[must_use]
    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    #[must_use]
    pub fn unique(mut self) -> Self {
        self.unique = true;
        self
    }

    #[must_use]
    pub fn sparse(mut self) -> Self {
        self.sparse = true;
        self
    }

    /// A TTL index: documents expire this long after the date in its one key field.
    #[must_use]
    pub fn expire_after(mut self, after: Duration) -> Self {
        self.expire_after = Some(after);
        self
    }

    /// The engine's index; the engine refuses what MongoDB refuses (a TTL on a compound
    /// index, ...) when it is created.
    pub(crate) fn into_spec(self) -> Result<IndexSpec> {
        let mut spec = IndexSpec::new(self.keys.iter().map(|(p, d)| (p.as_str(), *d)))
            .map_err(odm_engine::Error::from)?;
        if let Some(name) = &self.name {
            spec = spec.named(name);
        }
        if self.unique {
            spec = spec.unique();
        }
        if self.sparse {
            spec = spec.sparse();
        }
        if let Some(after) = self.expire_after {
            spec = spec.expire_after(after);
        }
        Ok(spec)
    }
}

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
