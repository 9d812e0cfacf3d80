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
    if let Some(schema) = T::declared_schema() {
        deploy_schema(txn, name, &schema)?;
    }
    let stored: Vec<Stored> = txn
        .list_indexes(name)
        .into_iter()
        .map(|spec| Stored {
            name: spec.name().to_owned(),
            spec: StoredSpec::Known(spec),
        })
        .collect();
    let (mut plan, missing) = diff(name, &T::indexes(), T::shard_key().as_ref(), &stored)?;
    for spec in missing {
        plan.created.push(txn.create_index(name, spec)?);
    }
    if drop_undeclared {
        for index in &plan.undeclared {
            txn.drop_index(name, index)?;
        }
        plan.dropped.clone_from(&plan.undeclared);
    }
    Ok(plan)
}

/// An index a database holds, by name.
struct Stored {
    name: String,
    spec: StoredSpec,
}

/// A stored index's definition: one this engine reads, or (from a server) one it cannot
/// describe, kept as the server described it, with the reason, for the mismatch error.
enum StoredSpec {
    Known(IndexSpec),
    /// Only a server lists an index this engine cannot read.
    #[cfg_attr(not(feature = "mongodb"), allow(dead_code))]
    Unreadable {
        described: bson::Document,
        reason: odm_engine::IndexSpecError,
    },
}

impl StoredSpec {
    fn describe(&self) -> String {
        match self {
            StoredSpec::Known(spec) => describe(spec),
            StoredSpec::Unreadable { described, reason } => format!("{described} ({reason})"),
        }
    }
}

/// The declared indexes compared with the stored ones, the same way on both back ends: the
/// plan so far (unchanged and undeclared names) and the declared indexes to create. A declared
/// index stored under its name with another definition is [`Error::IndexMismatch`]. The
/// index of the declared shard key (which `shardCollection` builds, and a cluster needs) counts
/// as declared.
fn diff(
    collection: &str,
    declared: &[IndexSpec],
    shard_key: Option<&odm_engine::ShardKey>,
    stored: &[Stored],
) -> Result<(IndexPlan, Vec<IndexSpec>)> {
    let mut plan = IndexPlan::default();
    let mut missing = Vec::new();
    for spec in declared {
        match stored.iter().find(|s| s.name == spec.name()) {
            Some(Stored {
                spec: StoredSpec::Known(existing),
                ..
            }) if existing == spec => {
                plan.unchanged.push(spec.name().to_owned());
            }
            Some(Stored { spec: existing, .. }) => {
                return Err(Error::IndexMismatch {
                    collection: collection.to_owned(),
                    index: spec.name().to_owned(),
                    declared: describe(spec),
                    stored: existing.describe(),
                });
            }
            None => missing.push(spec.clone()),
        }
    }
    let shard_key = shard_key.map(odm_engine::ShardKey::to_document);
    for index in stored {
        let declared_here = declared.iter().any(|d| d.name() == index.name);
        let of_shard_key = matches!((&index.spec, &shard_key), (StoredSpec::Known(spec), Some(key)) if spec.keys_document() == *key);
        if !declared_here && !of_shard_key && index.name != ID_INDEX_NAME {
            plan.undeclared.push(index.name.clone());
        }
    }
    Ok((plan, missing))
}

/// Makes the model's declared schema the collection's validation, unless it already is.
fn deploy_schema(txn: &mut WriteTxn<'_>, name: &str, schema: &crate::DeclaredSchema) -> Result<()> {
    let validation =
        odm_engine::validation::Validation::new(schema.validator(), schema.level, schema.action)
            .map_err(odm_engine::Error::from)?;
    let stored = txn
        .collection_options(name)
        .and_then(|options| options.validation);
    let same = stored.is_some_and(|s| {
        s.validator() == validation.validator()
            && s.level() == validation.level()
            && s.action() == validation.action()
    });
    if !same {
        txn.set_validation(name, Some(validation))?;
    }
    Ok(())
}

/// [`sync`] on a MongoDB deployment: `listIndexes` diffed as the engine's indexes are, the
/// missing ones built by one `createIndexes`, and a declared shard key deployed by
/// `shardCollection`.
///
/// The shard key: a `mongos` shards the collection (after `enableSharding`, which older
/// servers need) or, when it is sharded already, accepts the same key and refuses another
/// (`AlreadyInitialized`, reported as a mismatch naming both). `odm serve` records the key in
/// its catalog the same way. A replica set or standalone `mongod` has no such command: there
/// the key is a declaration for the day the collection moves to a cluster.
///
/// Inside a transaction (`session`), the indexes are read outside it and what is missing is
/// created inside it: MongoDB builds indexes in a transaction on a collection the transaction
/// creates, and `odm serve`, whose transaction holds its one writer, would otherwise wait for
/// itself. The shard key is deployed only outside transactions (`shardCollection` never runs
/// in one); the caller records such a sync as complete only without a key.
#[cfg(feature = "mongodb")]
pub(crate) fn sync_remote<T: Document>(
    remote: &crate::remote::Remote,
    name: &str,
    drop_undeclared: bool,
    mut session: Option<&mut mongodb::ClientSession>,
) -> Result<IndexPlan> {
    // In a transaction the collection is not created by name: `create` of a collection this
    // transaction made already (two models on one collection) would abort it. `createIndexes`
    // and the first insert create it.
    let listed = if let Some(listed) = remote.wait(remote.list_indexes(name))? {
        listed
    } else {
        if session.is_none() {
            remote.wait(remote.create_collection(None, name))?;
        }
        Vec::new()
    };
    let stored: Vec<Stored> = listed
        .iter()
        .map(|index| Stored {
            name: index.get_str("name").unwrap_or_default().to_owned(),
            spec: match IndexSpec::from_document(index) {
                Ok(spec) => StoredSpec::Known(spec),
                Err(reason) => StoredSpec::Unreadable {
                    described: index.clone(),
                    reason,
                },
            },
        })
        .collect();
    let (mut plan, missing) = diff(name, &T::indexes(), T::shard_key().as_ref(), &stored)?;
    remote.wait(remote.create_indexes(session.as_deref_mut(), name, &missing))?;
    plan.created = missing.iter().map(|spec| spec.name().to_owned()).collect();
    // After the declared indexes, so that one of them can be the key's supporting index.
    if let Some(key) = T::shard_key()
        && session.is_none()
    {
        remote.wait(remote.deploy_shard_key(name, &key))?;
    }
    if let Some(schema) = T::declared_schema()
        && session.is_none()
    {
        remote.wait(remote.deploy_schema(name, &schema))?;
    }
    if drop_undeclared {
        for index in &plan.undeclared {
            remote.wait(remote.drop_index(name, index))?;
        }
        plan.dropped.clone_from(&plan.undeclared);
    }
    Ok(plan)
}
