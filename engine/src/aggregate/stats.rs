//! `$collStats` and `$indexStats`: a pipeline's first stage reporting on its collection instead
//! of reading it.
//!
//! `$collStats` gives one document: `ns`, `localTime`, and what the options ask for:
//! `storageStats` (the sizes redb accounts for the collection and each index, divided by
//! `scale`, as `Database::stats` reports them) and `count`. `latencyStats` and `queryExecStats`
//! are refused: the engine does not time operations. `$indexStats` gives one document per
//! index: `name`, `key`, `spec`, and `accesses` (the operations whose plan read the index since
//! the database was opened).

use bson::{Bson, Document, doc};

use super::Stage;
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::expr::error;
use crate::read::ReadCollection;

fn fail(stage: &str, code: ErrorCode, reason: impl std::fmt::Display) -> Error {
    Error::from(error(stage, reason).with_code(code))
}

/// What `$collStats` was asked for.
pub(super) struct CollStats {
    /// `storageStats`, with its scale.
    storage: Option<u64>,
    count: bool,
}

pub(super) fn parse_coll_stats(arg: &Bson) -> Result<Stage> {
    let name = "$collStats";
    let Bson::Document(spec) = arg else {
        return Err(fail(
            name,
            ErrorCode::location(5_447_000),
            "the $collStats specification must be an object",
        ));
    };
    let mut stats = CollStats {
        storage: None,
        count: false,
    };
    for (key, value) in spec {
        let Bson::Document(options) = value else {
            return Err(fail(
                name,
                ErrorCode::TYPE_MISMATCH,
                format!("`{key}` must be an object"),
            ));
        };
        match key.as_str() {
            "storageStats" => {
                let scale = match options.get("scale") {
                    None => 1,
                    Some(v) => match crate::expr::whole_number(v) {
                        Some(n) if n >= 1 => n as u64,
                        _ => {
                            return Err(fail(
                                name,
                                ErrorCode::location(51024),
                                format!("scale must be a positive whole number, not {v}"),
                            ));
                        }
                    },
                };
                stats.storage = Some(scale);
            }
            "count" => stats.count = true,
            "latencyStats" | "queryExecStats" => {
                return Err(fail(
                    name,
                    ErrorCode::NOT_IMPLEMENTED,
                    format!("`{key}` is not reported: this engine does not time operations"),
                ));
            }
            other => {
                return Err(fail(
                    name,
                    ErrorCode::location(40415),
                    format!("unknown field `{other}`"),
                ));
            }
        }
    }
    Ok(Stage::CollStats(stats))
}

pub(super) fn parse_index_stats(arg: &Bson) -> Result<Stage> {
    match arg {
        Bson::Document(d) if d.is_empty() => Ok(Stage::IndexStats),
        _ => Err(fail(
            "$indexStats",
            ErrorCode::location(28803),
            "the $indexStats stage takes an empty object",
        )),
    }
}

fn long(n: u64) -> Bson {
    Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX))
}

impl CollStats {
    /// The one document of `$collStats` for `coll`.
    pub(super) fn report(&self, coll: &ReadCollection<'_>) -> Result<Document> {
        let mut out = doc! {
            "ns": coll.name(),
            "localTime": bson::DateTime::now(),
        };
        if let Some(scale) = self.storage {
            let stats = coll.snapshot().collection_stats(coll.meta())?;
            let index_bytes = stats.index_bytes();
            // The `_id` index is the documents' table itself: MongoDB counts and lists it, and
            // its pages are the collection's `storageSize`, so it adds no bytes of its own but
            // those of the index keeping `_id`s unique under a default collation.
            let id_size = long(stats.id_index_bytes / scale);
            let sizes: Document = std::iter::once((crate::ID_INDEX_NAME.to_owned(), id_size))
                .chain(
                    stats
                        .indexes
                        .iter()
                        .map(|i| (i.name.clone(), long(i.storage_bytes / scale))),
                )
                .collect();
            let average = stats.data_bytes.checked_div(stats.documents).unwrap_or(0);
            let capped = coll.meta().options.capped;
            let mut storage = doc! {
                    "size": long(stats.data_bytes / scale),
                    "count": long(stats.documents),
                    "avgObjSize": long(average),
                    "storageSize": long(stats.storage_bytes / scale),
                    "freeStorageSize": 0_i64,
                    "capped": capped.is_some(),
            };
            // A capped collection's limits: MongoDB reports `max` 0 for no limit.
            if let Some(capped) = capped {
                storage.insert("max", long(capped.max.unwrap_or(0)));
                storage.insert("maxSize", long(capped.size / scale));
            }
            storage.extend(doc! {
                    "nindexes": i32::try_from(stats.indexes.len() + 1).unwrap_or(i32::MAX),
                    "indexBuilds": [],
                    "totalIndexSize": long(index_bytes / scale),
                    "totalSize": long((stats.storage_bytes + index_bytes) / scale),
                    "indexSizes": sizes,
                    "scaleFactor": long(scale),
            });
            out.insert("storageStats", storage);
        }
        if self.count {
            out.insert("count", doc! {"count": long(coll.len()?)});
        }
        Ok(out)
    }
}

/// The documents of `$indexStats` for `coll`, one per index, `_id_` first.
pub(super) fn index_stats(coll: &ReadCollection<'_>) -> Vec<Document> {
    let meta = coll.meta();
    let id_index =
        crate::schema::id_index_spec().under_collection_collation(meta.options.collation.as_ref());
    std::iter::once((&id_index, crate::query::ID_INDEX_USES))
        .chain(
            meta.indexes
                .iter()
                .filter(|index| !index.spec.is_collated_id())
                .map(|index| (&index.spec, index.id)),
        )
        .map(|(spec, id)| {
            let (ops, since) = coll.plan_cache().uses(meta.id, id);
            doc! {
                "name": spec.name(),
                "key": spec.keys_document(),
                "accesses": {"ops": long(ops), "since": since},
                "spec": spec.to_document(),
            }
        })
        .collect()
}
