//! What the fuzz targets share: reading an input as BSON documents, and a collection to run
//! them against, with and without indexes.
//!
//! An input is a run of BSON documents, each starting with its own length as BSON does; the
//! first malformed length ends the run, and a document that does not parse is skipped. Seed
//! inputs written this way (see `odm-tests`' `fuzz-seeds`) keep mutations close to real
//! filters, updates and pipelines.

pub mod grow;

use bson::{Document, RawDocument, doc};
use odm_engine::{Database, IndexSpec};

/// The most documents an input contributes; more only slows each run.
const MAX_DOCUMENTS: usize = 16;

/// The documents of an input, in order.
pub fn documents(mut data: &[u8]) -> Vec<Document> {
    let mut out = Vec::new();
    while data.len() >= 5 && out.len() < MAX_DOCUMENTS {
        let len = i32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        let Ok(len) = usize::try_from(len) else { break };
        if len < 5 || len > data.len() {
            break;
        }
        if let Ok(doc) = RawDocument::from_bytes(&data[..len]).and_then(Document::try_from) {
            out.push(doc);
        }
        data = &data[len..];
    }
    out
}

/// The field paths a filter names at its top level and under `$and`/`$or`/`$nor`, for
/// indexes that make the planner use them.
pub fn paths(filter: &Document, out: &mut Vec<String>) {
    for (key, value) in filter {
        if matches!(key.as_str(), "$and" | "$or" | "$nor") {
            if let bson::Bson::Array(items) = value {
                for item in items {
                    if let bson::Bson::Document(d) = item {
                        paths(d, out);
                    }
                }
            }
        } else if !key.starts_with('$') && !out.contains(key) && out.len() < 4 {
            out.push(key.clone());
        }
    }
}

/// A collection `c` holding `docs`, with an ascending index on each of `paths` (those that
/// are valid index paths) when `indexed`. Documents the engine refuses are left out, the same
/// ones either way.
pub fn collection(docs: &[Document], paths: &[String], indexed: bool) -> Database {
    let db = Database::in_memory().expect("an in-memory database opens");
    let c = db.collection("c");
    if indexed {
        for path in paths {
            if let Ok(spec) = IndexSpec::ascending(path) {
                let _ = c.create_index(spec);
            }
        }
    }
    for doc in docs {
        let _ = c.insert_one(doc);
    }
    db
}

/// A small collection `c`, and `d` with the same documents, for the pipelines `grow` builds
/// (which read the fields `a`, a number, and `s`, a string).
pub fn growth_collections() -> Database {
    let docs = [
        doc! { "_id": 1, "a": 1, "s": "ab" },
        doc! { "_id": 2, "a": [1, 2], "s": "é" },
        doc! { "_id": 3 },
    ];
    let db = collection(&docs, &[], false);
    let d = db.collection("d");
    for doc in &docs {
        let _ = d.insert_one(doc);
    }
    db
}
