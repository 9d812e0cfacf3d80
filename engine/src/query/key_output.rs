//! find's `returnKey` and `showRecordId`: results made of the index key each document was found
//! through, and of its record id.
//!
//! - `returnKey`: each result is the key of the plan's index that reached the document, a
//!   document of the key pattern's field names (`{"a.b": 1, c: "x"}`); for a multikey
//!   document, the first of its keys the walk meets inside the plan's ranges. A plan that
//!   reads no index (a collection scan) returns `{}` for each document, as MongoDB does. The
//!   projection is not applied: the key replaces it.
//! - `showRecordId`: each result carries `$recordId`, last; not a key (`returnKey` wins, as
//!   MongoDB's replies show). Collections here are clustered by
//!   `_id` (the documents table is keyed by the encoded `_id`), so a record id is that key,
//!   as binary data, as MongoDB's clustered collections give one.

use std::ops::{Bound, RangeBounds};

use bson::{Bson, Document, RawDocument};

use super::plan::{Access, KeyRange, Plan, id_index};
use super::selection::KeyOptions;
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::collection::key_error;
use crate::error::{Error, Result};
use crate::keys;

/// What `returnKey` and `showRecordId` need of the plan; see the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct KeyOutput {
    /// The walks that may have found a document: an index and its ranges, in plan order;
    /// `None` when `returnKey` is off.
    walks: Option<Vec<Walk>>,
    show_record_id: bool,
}

#[derive(Debug, Clone)]
struct Walk {
    index: IndexMeta,
    ranges: Vec<KeyRange>,
    reverse: bool,
}

impl KeyOutput {
    /// The output the options ask for under `plan`; `None` when they ask for none.
    pub(crate) fn new(options: &KeyOptions, plan: &Plan, meta: &CollectionMeta) -> Option<Self> {
        if !options.return_key && !options.show_record_id {
            return None;
        }
        let walks = options.return_key.then(|| {
            let mut walks = Vec::new();
            walks_of(plan, meta, &mut walks);
            walks
        });
        Some(KeyOutput {
            walks,
            show_record_id: options.show_record_id && !options.return_key,
        })
    }

    /// The result for one document: its key (with `returnKey`) or `document`, then its
    /// record id (with `showRecordId`).
    pub(crate) fn apply(
        &self,
        collection: &str,
        raw: &RawDocument,
        document: impl FnOnce() -> Result<Document>,
    ) -> Result<Document> {
        let mut out = match &self.walks {
            Some(walks) => key_of(collection, walks, raw)?,
            None => document()?,
        };
        if self.show_record_id {
            let id = raw
                .get("_id")
                .ok()
                .flatten()
                .ok_or_else(|| Error::Corrupt {
                    location: format!("collection `{collection}`"),
                    reason: "a stored document has no `_id`".into(),
                })?;
            out.insert(
                "$recordId",
                Bson::Binary(bson::Binary {
                    subtype: bson::spec::BinarySubtype::Generic,
                    bytes: keys::encode(id),
                }),
            );
        }
        Ok(out)
    }
}

fn walks_of(plan: &Plan, meta: &CollectionMeta, out: &mut Vec<Walk>) {
    match &plan.access {
        Access::IndexScan(scan) => {
            let index = if scan.index == crate::index::ID_INDEX_NAME {
                Some(id_index())
            } else {
                meta.index(&scan.index).cloned()
            };
            out.extend(index.map(|index| Walk {
                index,
                ranges: scan.intervals.clone(),
                reverse: scan.reverse,
            }));
        }
        Access::IdLookup { .. } => out.push(Walk {
            index: id_index(),
            ranges: vec![(Bound::Unbounded, Bound::Unbounded)],
            reverse: false,
        }),
        Access::Or(branches) => branches.iter().for_each(|b| walks_of(b, meta, out)),
        Access::CollectionScan | Access::NaturalScan { .. } => {}
    }
}

/// The first key, in walk order, of the first walk that reaches the document; `{}` when no
/// walk does (a collection scan).
fn key_of(collection: &str, walks: &[Walk], raw: &RawDocument) -> Result<Document> {
    for walk in walks {
        let entries = walk
            .index
            .spec
            .key_entries(raw)
            .map_err(|e| key_error(collection, &walk.index, e))?;
        let inside = entries
            .into_iter()
            .filter(|(key, _)| walk.ranges.iter().any(|r| contains(r, key)));
        let first = if walk.reverse {
            inside.max_by(|a, b| a.0.cmp(&b.0))
        } else {
            inside.min_by(|a, b| a.0.cmp(&b.0))
        };
        if let Some((_, key)) = first {
            return Ok(key);
        }
    }
    Ok(Document::new())
}

/// Whether an index key lies in a range of keys (the ranges are built for keys alone: an
/// entry's `_id` suffix never moves it across a bound).
fn contains(range: &KeyRange, key: &[u8]) -> bool {
    (
        range.0.as_ref().map(Vec::as_slice),
        range.1.as_ref().map(Vec::as_slice),
    )
        .contains(key)
}
