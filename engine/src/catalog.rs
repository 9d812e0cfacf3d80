//! The persisted catalog: collections, their indexes, and the storage format version.
//!
//! The catalog is one BSON document in the meta table, rewritten by the transaction that changes
//! it, so a catalog change commits or aborts with the data it describes. The format version is
//! stored beside it and checked before anything else is read.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, Document, doc};

use crate::error::{Error, Result};
use crate::index::IndexSpec;
use crate::options::CollectionOptions;
use crate::sampling::QueryAnalyzer;

/// The storage format this build reads and writes. Bump it on any change to key encoding, table
/// layout or catalog shape; files of another version are refused, never misread, except those
/// of `UPGRADABLE_FROM`.
///
/// Version 3 added query sampling: a collection's `queryAnalyzer` in the catalog and the
/// `odm.sampled_queries` table. An older build would drop the one and ignore the other, so
/// it must refuse such files; a version 2 file is a version 3 file without them.
///
/// Version 4 added the change log (`odm.changes`, see [`crate::changes`]) and the collection
/// option `changeStreamPreAndPostImages`. An older build would write without recording its
/// changes, leaving a silent gap in the history; an upgraded file's log starts empty (no
/// resume token can predate it: only this version makes them).
///
/// Version 5 writes files through the write-ahead log (see [`crate::wal`]). The pages are the
/// same, but an older build would open a file whose last commits are still only in its log,
/// miss them, and write over pages the log would later replay; so it must refuse the file.
///
/// Version 6 encodes numbers in keys compactly (see [`crate::keys`]) where earlier versions wrote
/// their exact decimal digits. An older build would misread every key holding a number; opening
/// an earlier file rewrites its keys (see `upgrade`).
///
/// Version 7 appends change records to a head table, `odm.changes.head`, moved into
/// `odm.changes` in bulk (see [`crate::changes`]). An older build would not see the newest
/// records, which are in the head, and would append its own before them; so it must refuse the
/// file. A version 6 file is a version 7 file with an empty head.
///
/// Version 8 added capped collections (see [`crate::capped`]), whose natural-order tables every
/// write keeps in step, and validators (see [`crate::validation`]). An older build would write
/// capped collections without those tables and past validators; so it must refuse the file. A
/// version 7 file is a version 8 file without either.
///
/// Version 9 added indexes with a collation, whose string keys are sort keys (see
/// [`crate::keys::encode_collated_into`]), and collections with a default collation. An older
/// build would read such an index as one of binary strings and answer from it wrongly; so it
/// must refuse the file. A version 8 file is a version 9 file without either.
///
/// Version 10 keeps the `_id`s of a collection with a default collation unique under it, by an
/// index on `_id` under that collation (`IndexSpec::collated_id`). An older
/// build would list that index as one of the user's, let it be dropped, and let `_id`s collide;
/// so it must refuse the file. A version 9 file has the index built when opened.
pub const FORMAT_VERSION: u32 = 10;

/// The earlier versions this build upgrades in place when it opens them (see `upgrade`).
pub const UPGRADABLE_FROM: &[u32] = &[2, 3, 4, 5, 6, 7, 8, 9];

/// One secondary index of a collection.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexMeta {
    /// Names the index's table; never reused within a file.
    pub(crate) id: u64,
    pub(crate) spec: IndexSpec,
    /// Whether any document ever gave this index more than one key. Set on write, never
    /// cleared (as in MongoDB), so a planner may rely on `false`.
    pub(crate) multikey: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CollectionMeta {
    /// Names the collection's tables; never reused within a file.
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) indexes: Vec<IndexMeta>,
    pub(crate) options: CollectionOptions,
    /// Its query analyzer, once configured (see [`crate::sampling`]).
    pub(crate) query_analyzer: Option<QueryAnalyzer>,
}

impl CollectionMeta {
    pub(crate) fn index(&self, name: &str) -> Option<&IndexMeta> {
        self.indexes.iter().find(|i| i.spec.name() == name)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Catalog {
    pub(crate) collections: BTreeMap<String, Arc<CollectionMeta>>,
    /// The next id for a collection or an index table.
    pub(crate) next_id: u64,
}

impl Catalog {
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<CollectionMeta>> {
        self.collections.get(name)
    }

    pub(crate) fn allocate_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(crate) fn to_document(&self) -> Document {
        let collections: Vec<Bson> = self
            .collections
            .values()
            .map(|c| {
                let indexes: Vec<Bson> = c
                    .indexes
                    .iter()
                    .map(|i| Bson::Document(index_doc(i)))
                    .collect();
                let mut entry = doc! {
                    "name": &c.name,
                    "id": c.id as i64,
                    "indexes": indexes,
                    "options": c.options.to_document(),
                };
                if let Some(analyzer) = &c.query_analyzer {
                    entry.insert("queryAnalyzer", analyzer.to_document());
                }
                Bson::Document(entry)
            })
            .collect();
        doc! { "next_id": self.next_id as i64, "collections": collections }
    }

    pub(crate) fn from_document(d: &Document) -> Result<Catalog> {
        let bad = |reason: &str| Error::corrupt("catalog", reason);
        let next_id = d.get_i64("next_id").map_err(|_| bad("missing next_id"))? as u64;
        let mut collections = BTreeMap::new();
        for c in d
            .get_array("collections")
            .map_err(|_| bad("missing collections"))?
        {
            let c = c
                .as_document()
                .ok_or_else(|| bad("collection entry is not a document"))?;
            let name = c
                .get_str("name")
                .map_err(|_| bad("collection without a name"))?
                .to_owned();
            let id = c
                .get_i64("id")
                .map_err(|_| bad("collection without an id"))? as u64;
            let mut indexes = Vec::new();
            for i in c
                .get_array("indexes")
                .map_err(|_| bad("collection without indexes"))?
            {
                let i = i
                    .as_document()
                    .ok_or_else(|| bad("index entry is not a document"))?;
                indexes.push(index_from_doc(i)?);
            }
            let options = match c.get_document("options") {
                Ok(o) => CollectionOptions::from_document(o)
                    .map_err(|e| bad(&format!("collection `{name}` options: {e}")))?,
                Err(_) => CollectionOptions::default(),
            };
            let query_analyzer = match c.get_document("queryAnalyzer") {
                Ok(a) => Some(QueryAnalyzer::from_document(a)?),
                Err(_) => None,
            };
            collections.insert(
                name.clone(),
                Arc::new(CollectionMeta {
                    id,
                    name,
                    indexes,
                    options,
                    query_analyzer,
                }),
            );
        }
        Ok(Catalog {
            collections,
            next_id,
        })
    }
}

fn index_doc(i: &IndexMeta) -> Document {
    let mut d = doc! {
        "id": i.id as i64,
        "name": i.spec.name(),
        "key": i.spec.keys_document(),
        "unique": i.spec.is_unique(),
        "sparse": i.spec.is_sparse(),
        "multikey": i.multikey,
    };
    if let Some(ttl) = i.spec.ttl() {
        d.insert("expireAfterSeconds", ttl.as_secs() as i64);
    }
    if let Some(partial) = i.spec.partial_filter() {
        d.insert("partialFilterExpression", partial.document().clone());
    }
    if let Some(background) = i.spec.background() {
        d.insert("background", background);
    }
    if let Some(collation) = i.spec.collation() {
        d.insert("collation", collation.normalized().clone());
    }
    d
}

fn index_from_doc(d: &Document) -> Result<IndexMeta> {
    let bad = |reason: String| Error::corrupt("catalog", reason);
    let id = d
        .get_i64("id")
        .map_err(|_| bad("index without an id".into()))? as u64;
    let name = d
        .get_str("name")
        .map_err(|_| bad("index without a name".into()))?;
    let key = d
        .get_document("key")
        .map_err(|_| bad(format!("index `{name}` without keys")))?;
    let mut spec = IndexSpec::from_keys_document(key)
        .map_err(|e| bad(format!("index `{name}`: {e}")))?
        .named(name);
    if d.get_bool("unique").unwrap_or(false) {
        spec = spec.unique();
    }
    if d.get_bool("sparse").unwrap_or(false) {
        spec = spec.sparse();
    }
    if let Ok(filter) = d.get_document("partialFilterExpression") {
        spec = spec
            .partial(filter.clone())
            .map_err(|e| bad(format!("index `{name}`: {e}")))?;
    }
    if let Ok(secs) = d.get_i64("expireAfterSeconds") {
        spec = spec.expire_after(Duration::from_secs(secs as u64));
    }
    spec = spec.with_background(d.get_bool("background").ok());
    if let Ok(collation) = d.get_document("collation") {
        spec = spec
            .collated(collation)
            .map_err(|e| bad(format!("index `{name}`: {e}")))?;
    }
    Ok(IndexMeta {
        id,
        spec,
        multikey: d.get_bool("multikey").unwrap_or(false),
    })
}

/// Collection names follow MongoDB's rules that matter here: not empty, no `$`, no NUL.
pub(crate) fn check_collection_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "empty"
    } else if name.contains('$') {
        "contains `$`"
    } else if name.contains('\0') {
        "contains a NUL character"
    } else {
        return Ok(());
    };
    Err(Error::InvalidCollectionName {
        name: name.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_round_trips() {
        let mut catalog = Catalog::default();
        let id = catalog.allocate_id();
        let index_id = catalog.allocate_id();
        let spec = IndexSpec::ascending("sent")
            .unwrap()
            .expire_after(Duration::from_mins(1));
        catalog.collections.insert(
            "inbox".into(),
            Arc::new(CollectionMeta {
                id,
                name: "inbox".into(),
                indexes: vec![IndexMeta {
                    id: index_id,
                    spec,
                    multikey: true,
                }],
                options: CollectionOptions::default()
                    .with_shard_key(crate::options::ShardKey::range(["a", "b"]).unwrap()),
                query_analyzer: Some(QueryAnalyzer {
                    mode: crate::sampling::AnalyzerMode::Off,
                    samples_per_second: Some(2.5),
                    start_time: bson::DateTime::from_millis(1_000),
                    stop_time: Some(bson::DateTime::from_millis(2_000)),
                    collection_uuid: bson::Uuid::new(),
                }),
            }),
        );
        let back = Catalog::from_document(&catalog.to_document()).unwrap();
        assert_eq!(back, catalog);
    }

    #[test]
    fn damaged_catalog_is_an_error() {
        let e = Catalog::from_document(&doc! { "next_id": 1_i64 }).unwrap_err();
        assert!(e.to_string().contains("corrupt data in catalog"), "{e}");
    }
}
