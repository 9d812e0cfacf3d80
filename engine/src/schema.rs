//! Collections and indexes: create, list, rename and drop, inside a write transaction.
//!
//! Index creation follows MongoDB: creating an index that exists with the same definition is a
//! no-op; the same name or the same keys (under the same collation) with another definition is
//! [`Error::IndexConflict`].
//! Building an index over existing documents computes every entry first, so a uniqueness
//! violation or an unindexable document fails the call with nothing written.

use std::collections::BTreeMap;
use std::sync::Arc;

use bson::RawDocumentBuf;
use redb::ReadableTable;

use crate::catalog::{CollectionMeta, IndexMeta, check_collection_name};
use crate::collection::{key_error, stored_document};
use crate::db::{ReadTxn, WriteTxn};
use crate::error::{Error, Result};
use crate::index::{ID_INDEX_NAME, IndexSpec, describe_key, entry, unique_holder};
use crate::index_store;
use crate::keys::Direction;
use crate::options::CollectionOptions;
use crate::tables;

/// The spec of the primary index, `{_id: 1}` named `_id_`, as [`WriteTxn::list_indexes`]
/// reports it.
pub fn id_index_spec() -> IndexSpec {
    // "_id" is a valid path, so this cannot fail.
    IndexSpec::new([("_id", Direction::Ascending)]).map_or_else(
        |_| unreachable!("`_id` is a valid index path"),
        |s| s.named(ID_INDEX_NAME),
    )
}

fn is_id_index(spec: &IndexSpec) -> bool {
    spec.keys().len() == 1
        && spec.keys()[0].0.as_str() == "_id"
        && !spec.is_unique()
        && !spec.is_sparse()
        && spec.ttl().is_none()
}

impl WriteTxn<'_> {
    /// Creates an empty collection; [`Error::CollectionExists`] when it exists.
    pub fn create_collection(&mut self, name: &str) -> Result<()> {
        self.create_collection_with(name, CollectionOptions::default())
    }

    /// Creates an empty collection with options (a shard key, say).
    pub fn create_collection_with(&mut self, name: &str, options: CollectionOptions) -> Result<()> {
        if self.catalog.get(name).is_some() {
            return Err(Error::CollectionExists(name.to_owned()));
        }
        check_collection_name(name)?;
        self.create_collection_meta(name, options)?;
        Ok(())
    }

    /// The options a collection was created with; `None` when it does not exist.
    pub fn collection_options(&self, name: &str) -> Option<CollectionOptions> {
        self.catalog.get(name).map(|m| m.options.clone())
    }

    /// Whether a collection existed before this transaction began: the latest committed
    /// catalog, which no other writer changes while this transaction holds the writer. MongoDB
    /// lets a transaction create indexes only on a collection it created itself.
    pub fn existed_before(&self, name: &str) -> bool {
        self.db.has_collection(name)
    }

    /// The names of the collections, in order, as this transaction sees them.
    pub fn list_collection_names(&self) -> Vec<String> {
        self.catalog.collections.keys().cloned().collect()
    }

    /// Records a shard key on a collection (created when missing), as `shardCollection`
    /// does: the same key again changes nothing; another key than the one recorded is
    /// [`Error::ShardKeyChanged`]. The key decides how explain routes queries; supporting
    /// indexes are the caller's (see MongoDB's rule in `odm serve`'s `shardCollection`).
    pub fn shard_collection(&mut self, name: &str, key: crate::options::ShardKey) -> Result<()> {
        let Some(options) = self.collection_options(name) else {
            return self
                .create_collection_with(name, CollectionOptions::default().with_shard_key(key));
        };
        match options.shard_key {
            Some(existing) if existing == key => Ok(()),
            Some(existing) => Err(Error::ShardKeyChanged {
                collection: name.to_owned(),
                existing: existing.to_document().to_string(),
                requested: key.to_document().to_string(),
            }),
            None => {
                let description = bson::doc! { "shardKey": key.to_document(), "unique": false };
                let catalog = self.catalog_mut();
                if let Some(meta) = catalog.collections.get_mut(name) {
                    Arc::make_mut(meta).options.shard_key = Some(key);
                }
                self.record_ddl(
                    "shardCollection",
                    name,
                    bson::doc! { "operationDescription": description },
                )
            }
        }
    }

    /// Drops a collection with its documents and indexes; `false` when it did not exist.
    pub fn drop_collection(&mut self, name: &str) -> Result<bool> {
        let Some(meta) = self.catalog_mut().collections.remove(name) else {
            return Ok(false);
        };
        self.pending
            .retain(|(collection, _), _| *collection != meta.id);
        self.tables.close_all();
        self.txn
            .delete_table(tables::bytes(&tables::docs_name(meta.id)))?;
        if meta.options.capped.is_some() {
            crate::capped::delete_tables(self.txn, meta.id)?;
        }
        for index in &meta.indexes {
            index_store::delete(self.txn, meta.id, index.id)?;
        }
        self.record_ddl("drop", name, bson::doc! {})?;
        Ok(true)
    }

    /// MongoDB's `convertToCapped`: makes a collection capped with these limits. Its documents
    /// keep their natural order (insertion order for a capped one, `_id` order for others) as
    /// their insertion order; the oldest are removed while the limits are exceeded; its other
    /// indexes are dropped, as MongoDB keeps only `_id`'s (with its collation, if any).
    pub fn convert_to_capped(&mut self, name: &str, limits: crate::capped::Capped) -> Result<()> {
        let meta = self
            .catalog
            .get(name)
            .cloned()
            .ok_or_else(|| Error::CollectionNotFound(name.to_owned()))?;
        for index in meta.indexes.iter().filter(|i| !i.spec.is_collated_id()) {
            self.drop_index(name, index.spec.name())?;
        }
        let order = crate::capped::natural_order_of(&self.tables, &meta)?;
        if meta.options.capped.is_some() {
            self.tables.close_all();
            crate::capped::delete_tables(self.txn, meta.id)?;
        }
        if let Some(meta) = self.catalog_mut().collections.get_mut(name) {
            Arc::make_mut(meta).options.capped = Some(limits);
        }
        crate::capped::record_order(&self.tables, meta.id, &order)?;
        let mut writer = self.writer(name, false)?;
        let trimmed = writer.remove_oldest_past_limits(None);
        writer.finish();
        trimmed
    }

    /// MongoDB's `collMod` of `validator`, `validationLevel` and `validationAction`: the
    /// collection's validation from now on (`None` removes it); the documents it holds are not
    /// checked, as in MongoDB. Records a `modify` change.
    pub fn set_validation(
        &mut self,
        collection: &str,
        validation: Option<crate::validation::Validation>,
    ) -> Result<()> {
        let catalog = self.catalog_mut();
        let meta = catalog
            .collections
            .get_mut(collection)
            .ok_or_else(|| Error::CollectionNotFound(collection.to_owned()))?;
        let description = validation.as_ref().map_or_else(
            bson::Document::new,
            crate::validation::Validation::to_document,
        );
        Arc::make_mut(meta).options.validation = validation;
        self.record_ddl(
            "modify",
            collection,
            bson::doc! { "operationDescription": description },
        )
    }

    /// Keeps (or stops keeping) a collection's images before and after each change in the
    /// change log, as MongoDB's `changeStreamPreAndPostImages` option does.
    pub fn set_pre_and_post_images(&mut self, collection: &str, enabled: bool) -> Result<()> {
        self.modify_collection(collection, Some(enabled))
    }

    /// MongoDB's `collMod`: changes the options given (`changeStreamPreAndPostImages`) and
    /// records a `modify` change, with no option too, as MongoDB does.
    pub fn modify_collection(
        &mut self,
        collection: &str,
        pre_and_post_images: Option<bool>,
    ) -> Result<()> {
        let catalog = self.catalog_mut();
        let meta = catalog
            .collections
            .get_mut(collection)
            .ok_or_else(|| Error::CollectionNotFound(collection.to_owned()))?;
        let meta = Arc::make_mut(meta);
        let before = meta.options.change_stream_pre_and_post_images;
        let mut description = bson::Document::new();
        if let Some(enabled) = pre_and_post_images {
            meta.options.change_stream_pre_and_post_images = enabled;
            description.insert(
                "changeStreamPreAndPostImages",
                bson::doc! { "enabled": enabled },
            );
        }
        self.record_ddl(
            "modify",
            collection,
            bson::doc! {
                "operationDescription": description,
                "stateBeforeChange": {
                    "collectionOptions": {
                        "changeStreamPreAndPostImages": { "enabled": before },
                    },
                },
            },
        )
    }

    /// Records `dropDatabase` in the change log: `odm serve` drops a database's collections,
    /// then records this, so that database and deployment streams see it.
    pub fn record_drop_database(&mut self) -> Result<()> {
        self.record_ddl("dropDatabase", "", bson::doc! {})
    }

    /// Renames a collection; its documents and indexes stay as they are.
    pub fn rename_collection(&mut self, from: &str, to: &str) -> Result<()> {
        check_collection_name(to)?;
        if self.catalog.get(to).is_some() {
            return Err(Error::CollectionExists(to.to_owned()));
        }
        let catalog = self.catalog_mut();
        let mut meta = catalog
            .collections
            .remove(from)
            .ok_or_else(|| Error::CollectionNotFound(from.to_owned()))?;
        to.clone_into(&mut Arc::make_mut(&mut meta).name);
        catalog.collections.insert(to.to_owned(), meta);
        self.record_ddl("rename", from, bson::doc! { "to": to })
    }

    /// Creates an index (and the collection, when needed) and returns its name.
    pub fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<String> {
        if is_id_index(&spec) {
            let meta = self
                .collection_meta(collection, true)?
                .ok_or_else(|| Error::CollectionNotFound(collection.to_owned()))?;
            check_id_index_collation(&meta, &spec)?;
            return Ok(ID_INDEX_NAME.to_owned());
        }
        spec.validate()?;
        let meta = self
            .collection_meta(collection, true)?
            .ok_or_else(|| Error::CollectionNotFound(collection.to_owned()))?;
        let spec = spec.inheriting(meta.options.collation.as_ref());
        if let Some(existing) = conflicting_index(&meta, &spec)? {
            return Ok(existing);
        }
        let index_id = self.catalog_mut().allocate_id();
        let mut index = IndexMeta {
            id: index_id,
            spec,
            multikey: false,
        };
        self.tables.close_all();
        build_index(self.txn, &meta, &mut index)?;
        let name = index.spec.name().to_owned();
        let description = bson::doc! { "indexes": [index.spec.to_document()] };
        let catalog = self.catalog_mut();
        if let Some(stored) = catalog.collections.get_mut(collection) {
            Arc::make_mut(stored).indexes.push(index);
        }
        self.record_ddl(
            "createIndexes",
            collection,
            bson::doc! { "operationDescription": description },
        )?;
        Ok(name)
    }

    /// Drops a secondary index; the `_id_` index cannot be dropped.
    pub fn drop_index(&mut self, collection: &str, name: &str) -> Result<()> {
        let not_found = || Error::IndexNotFound {
            collection: collection.to_owned(),
            index: name.to_owned(),
        };
        if name == ID_INDEX_NAME {
            return Err(Error::IdIndexRequired);
        }
        if name == crate::index::COLLATED_ID_INDEX_NAME {
            return Err(not_found());
        }
        let catalog = self.catalog_mut();
        let meta = catalog
            .collections
            .get_mut(collection)
            .ok_or_else(not_found)?;
        let meta = Arc::make_mut(meta);
        let position = meta
            .indexes
            .iter()
            .position(|i| i.spec.name() == name)
            .ok_or_else(not_found)?;
        let index = meta.indexes.remove(position);
        let collection_id = meta.id;
        self.pending.remove(&(collection_id, index.id));
        self.tables.close_all();
        index_store::delete(self.txn, collection_id, index.id)?;
        self.record_ddl(
            "dropIndexes",
            collection,
            bson::doc! { "operationDescription": { "indexes": [index.spec.to_document()] } },
        )
    }

    /// The indexes of a collection, `_id_` first; empty when the collection does not exist.
    pub fn list_indexes(&self, collection: &str) -> Vec<IndexSpec> {
        list_indexes(self.catalog.get(collection))
    }
}

/// Builds an index over the collection's documents (index creation, and the upgrade of older
/// files), setting its multikey flag when a document makes it multikey. Every entry is computed
/// first, so a uniqueness violation or an unindexable document writes nothing; then the entries
/// go straight into the main table, in key order, and the delta starts empty.
pub(crate) fn build_index(
    txn: &redb::WriteTransaction,
    meta: &CollectionMeta,
    index: &mut IndexMeta,
) -> Result<()> {
    let entries = build_entries(txn, meta, index)?;
    let (main, delta) = index_store::table_names(meta.id, index.id);
    let mut table = txn.open_table(tables::bytes(&main))?;
    for (key, value) in &entries {
        table.insert(key.as_slice(), value.as_slice())?;
    }
    txn.open_table(tables::bytes(&delta))?;
    Ok(())
}

/// Every entry of an index over the collection's documents, sorted by key.
fn build_entries(
    txn: &redb::WriteTransaction,
    meta: &CollectionMeta,
    index: &mut IndexMeta,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let docs = txn.open_table(tables::bytes(&tables::docs_name(meta.id)))?;
    let mut entries = BTreeMap::new();
    for row in docs.iter()? {
        let (id_key, bytes) = row?;
        let doc: RawDocumentBuf = stored_document(&meta.name, bytes.value())?;
        let Some(keys) = index
            .spec
            .document_keys(&doc)
            .map_err(|e| key_error(&meta.name, index, e))?
        else {
            continue;
        };
        index.multikey |= keys.multikey;
        for key in &keys.keys {
            let (k, v) = entry(index.spec.is_unique(), key, id_key.value(), &keys.types);
            if let Some(holder) = entries.insert(k, v)
                && index.spec.is_unique()
                && unique_holder(&holder) != Some(id_key.value())
            {
                let described = describe_key(&index.spec, &doc, key);
                return Err(Error::DuplicateKey {
                    collection: meta.name.clone(),
                    index: index.spec.reported_name().to_owned(),
                    key: described.text,
                    key_pattern: Box::new(described.pattern),
                    key_value: Box::new(described.value),
                });
            }
        }
    }
    Ok(entries)
}

impl ReadTxn {
    /// The options a collection was created with; `None` when it does not exist.
    pub fn collection_options(&self, name: &str) -> Option<CollectionOptions> {
        self.catalog.get(name).map(|m| m.options.clone())
    }

    /// The indexes of a collection, `_id_` first; empty when the collection does not exist.
    pub fn list_indexes(&self, collection: &str) -> Vec<IndexSpec> {
        list_indexes(self.catalog.get(collection))
    }

    /// Whether an index of a collection ever held several keys for one document (an array in
    /// an indexed field). The `_id_` index never does.
    pub fn is_multikey(&self, collection: &str, index: &str) -> bool {
        self.catalog
            .get(collection)
            .and_then(|m| m.index(index))
            .is_some_and(|i| i.multikey)
    }
}

/// The indexes as users see them: `_id_` first, under the collection's collation, and the
/// index that keeps `_id`s unique under it (part of `_id_`) not apart.
fn list_indexes(meta: Option<&Arc<CollectionMeta>>) -> Vec<IndexSpec> {
    meta.map(|m| {
        let id = id_index_spec().under_collection_collation(m.options.collation.as_ref());
        std::iter::once(id)
            .chain(
                m.indexes
                    .iter()
                    .filter(|i| !i.spec.is_collated_id())
                    .map(|i| i.spec.clone()),
            )
            .collect()
    })
    .unwrap_or_default()
}

/// MongoDB's rule for an `_id` index asked for by a `createIndexes`: it names no collation or
/// its collection's (`simple` for a collection without one).
fn check_id_index_collation(meta: &CollectionMeta, spec: &IndexSpec) -> Result<()> {
    let collection = meta.options.collation.as_deref();
    if !spec.names_collation() || spec.collation().map(|c| &**c) == collection {
        return Ok(());
    }
    let describe = |c: Option<&crate::collation::Collation>| {
        c.map_or_else(
            || "{ locale: \"simple\" }".to_owned(),
            |c| c.normalized().to_string(),
        )
    };
    Err(crate::error::IndexSpecError::IdIndexCollation {
        index: describe(spec.collation().map(|c| &**c)),
        collection: describe(collection),
    }
    .into())
}

/// `Ok(Some(name))` when an identical index exists (creating it again is a no-op), an error when
/// one with the same name or keys differs, `Ok(None)` when the index is new.
fn conflicting_index(meta: &CollectionMeta, spec: &IndexSpec) -> Result<Option<String>> {
    for existing in &meta.indexes {
        let same_name = existing.spec.name() == spec.name();
        // Indexes on the same keys under different collations are different indexes.
        let same_keys = existing.spec.keys_document() == spec.keys_document()
            && existing.spec.collation().map(|c| &**c) == spec.collation().map(|c| &**c);
        if existing.spec == *spec {
            return Ok(Some(existing.spec.name().to_owned()));
        }
        if same_name || same_keys {
            let reason = if same_name {
                "an index with this name has another definition"
            } else {
                "an index with these keys exists under another name or with other options"
            };
            return Err(Error::IndexConflict {
                existing: existing.spec.name().to_owned(),
                requested: spec.name().to_owned(),
                reason: reason.to_owned(),
                same_name,
            });
        }
    }
    // A collection has one text index: `$text` names no index, so it must find one.
    if spec.text().is_some()
        && let Some(existing) = meta.indexes.iter().find(|i| i.spec.text().is_some())
    {
        return Err(crate::error::IndexSpecError::SecondTextIndex {
            existing: existing.spec.name().to_owned(),
        }
        .into());
    }
    Ok(None)
}
