//! A plan's candidates, pulled one at a time: the iterator under every cursor, count and
//! explain.
//!
//! Candidates come in plan order: `_id` order for a scan, sorted `_id`s for a lookup, index order
//! (forwards or backwards, interval by interval) for an index scan, branch by branch for `$or`.
//! Each document comes once: an index scan drops repeated `_id`s when the index is multikey or
//! its intervals overlap, and `$or` drops what an earlier branch returned. Nothing is read ahead:
//! the iterator holds open ranges of the snapshot, never a batch of documents.
//!
//! A covered scan builds each candidate from the index entry (key and key types) instead of
//! fetching the document; an entry whose key cannot be decoded falls back to the document.

use std::collections::BTreeSet;
use std::ops::Bound;

use bson::{RawDocument, RawDocumentBuf};

use super::covered::Covering;
use super::plan::{Access, KeyRange, Plan};
use super::source::{DocumentRange, DocumentRows, Guard, NaturalIds, Source as Collection};
use crate::catalog::IndexMeta;
use crate::error::{Error, Result};
use crate::index_store::MergedRange;
use crate::keys;
use crate::read::entry_id;

/// One candidate document.
pub(crate) enum Candidate<'c> {
    /// As stored, under its encoded `_id`.
    Stored(Guard<'c>),
    /// Rebuilt from an index entry alone.
    Covered(RawDocumentBuf),
}

impl Candidate<'_> {
    /// The document; `collection` names it in the error for damaged bytes.
    pub(crate) fn raw(&self, collection: &str) -> Result<&RawDocument> {
        match self {
            Candidate::Stored(guard) => RawDocument::from_bytes(guard.value())
                .map_err(|e| Error::corrupt(format!("collection `{collection}`"), e)),
            Candidate::Covered(doc) => Ok(doc),
        }
    }
}

/// What a plan's walk examined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalkStats {
    pub keys_examined: u64,
    pub docs_examined: u64,
}

/// The candidates of one plan; see the module documentation.
pub(crate) struct Candidates<'c> {
    collection: &'c dyn Collection,
    source: Source<'c>,
    stats: WalkStats,
}

enum Source<'c> {
    Done,
    Scan(Box<DocumentRows<'c>>),
    /// A capped collection's encoded `_id`s in insertion order (see [`crate::capped`]).
    Natural(NaturalIds<'c>),
    Ids(std::vec::IntoIter<Vec<u8>>),
    /// Ranges of the documents table (the `_id_` index), interval by interval.
    IdRanges {
        intervals: std::vec::IntoIter<KeyRange>,
        reverse: bool,
        current: Option<DocumentRange<'c>>,
    },
    Index(Box<IndexSource<'c>>),
    Or {
        branches: std::vec::IntoIter<Plan>,
        current: Box<Source<'c>>,
        /// `_id` keys returned by earlier branches.
        seen: BTreeSet<Vec<u8>>,
    },
}

struct IndexSource<'c> {
    index: &'c IndexMeta,
    /// The intervals still to walk, in walk order.
    intervals: std::vec::IntoIter<KeyRange>,
    reverse: bool,
    current: Option<MergedRange<'c>>,
    /// `_id` keys returned so far, when a document could come twice.
    seen: Option<BTreeSet<Vec<u8>>>,
    covering: Option<Covering>,
}

impl<'c> Candidates<'c> {
    /// The candidates of `plan`, built from index entries when `covering` is given (an index
    /// scan that covers the query).
    pub(crate) fn new(
        collection: &'c dyn Collection,
        plan: &Plan,
        covering: Option<Covering>,
    ) -> Result<Self> {
        Ok(Candidates {
            collection,
            source: source(collection, plan, covering)?,
            stats: WalkStats::default(),
        })
    }

    /// What the walk has examined so far.
    pub(crate) fn stats(&self) -> WalkStats {
        self.stats
    }
}

fn source<'c>(
    collection: &'c dyn Collection,
    plan: &Plan,
    covering: Option<Covering>,
) -> Result<Source<'c>> {
    Ok(match &plan.access {
        Access::CollectionScan => Source::Scan(Box::new(collection.documents()?)),
        Access::NaturalScan { reverse } => Source::Natural(collection.natural(*reverse, None)?),
        Access::IdLookup { ids } => {
            let mut id_keys: Vec<Vec<u8>> = ids
                .iter()
                .map(|v| keys::encode(v.as_raw_bson_ref()))
                .collect();
            id_keys.sort();
            id_keys.dedup();
            Source::Ids(id_keys.into_iter())
        }
        Access::IndexScan(scan) if scan.index == crate::index::ID_INDEX_NAME => {
            let mut intervals = scan.intervals.clone();
            if scan.reverse {
                intervals.reverse();
            }
            Source::IdRanges {
                intervals: intervals.into_iter(),
                reverse: scan.reverse,
                current: None,
            }
        }
        Access::IndexScan(scan) => {
            let index =
                collection
                    .meta()
                    .index(&scan.index)
                    .ok_or_else(|| Error::IndexNotFound {
                        collection: collection.name().to_owned(),
                        index: scan.index.clone(),
                    })?;
            // A document has one key in a non-multikey index, so disjoint intervals cannot
            // return it twice.
            let dedupe = scan.multikey || index.multikey || overlapping(&scan.intervals);
            let mut intervals = scan.intervals.clone();
            if scan.reverse {
                intervals.reverse();
            }
            Source::Index(Box::new(IndexSource {
                index,
                intervals: intervals.into_iter(),
                reverse: scan.reverse,
                current: None,
                seen: dedupe.then(BTreeSet::new),
                covering,
            }))
        }
        Access::Or(branches) => Source::Or {
            branches: branches.clone().into_iter(),
            current: Box::new(Source::Done),
            seen: BTreeSet::new(),
        },
    })
}

impl<'c> Iterator for Candidates<'c> {
    type Item = Result<Candidate<'c>>;

    fn next(&mut self) -> Option<Result<Candidate<'c>>> {
        let before = self.stats;
        let next = match crate::interrupt::check() {
            Ok(()) => self.source.next(self.collection, &mut self.stats),
            Err(stopped) => Some(Err(stopped.into())),
        };
        let keys = self.stats.keys_examined - before.keys_examined;
        let docs = self.stats.docs_examined - before.docs_examined;
        if keys + docs > 0 {
            crate::interrupt::note_examined(keys, docs);
        }
        if matches!(next, Some(Err(_))) {
            // After an error, nothing more: a cursor never skips what it could not read.
            self.source = Source::Done;
        }
        next
    }
}

impl<'c> Source<'c> {
    fn next(
        &mut self,
        collection: &'c dyn Collection,
        stats: &mut WalkStats,
    ) -> Option<Result<Candidate<'c>>> {
        match self {
            Source::Done => None,
            Source::Scan(range) => {
                let row = range.next()?;
                stats.docs_examined += 1;
                Some(
                    row.map(|(_, value)| Candidate::Stored(value))
                        .map_err(Error::from),
                )
            }
            Source::Natural(ids) => {
                let id = match ids.next()? {
                    Ok((_, id)) => id,
                    Err(e) => return Some(Err(e)),
                };
                stats.docs_examined += 1;
                match collection.document(&id) {
                    Ok(Some(doc)) => Some(Ok(Candidate::Stored(doc))),
                    Ok(None) => Some(Err(collection.corrupt(
                        "insertion order names a document the collection does not hold",
                    ))),
                    Err(e) => Some(Err(e)),
                }
            }
            Source::Ids(ids) => loop {
                let id = ids.next()?;
                stats.keys_examined += 1;
                match collection.document(&id) {
                    Ok(Some(doc)) => {
                        stats.docs_examined += 1;
                        return Some(Ok(Candidate::Stored(doc)));
                    }
                    Ok(None) => {}
                    Err(e) => return Some(Err(e)),
                }
            },
            Source::Index(index) => index.next(collection, stats),
            Source::IdRanges {
                intervals,
                reverse,
                current,
            } => loop {
                let range = if let Some(range) = current {
                    range
                } else {
                    let (lower, upper) = intervals.next()?;
                    match collection.documents_between(as_slice(&lower), as_slice(&upper), *reverse)
                    {
                        Ok(range) => current.insert(range),
                        Err(e) => return Some(Err(e)),
                    }
                };
                match range.next() {
                    None => *current = None,
                    Some(row) => {
                        stats.keys_examined += 1;
                        stats.docs_examined += 1;
                        return Some(row.map(Candidate::Stored).map_err(Error::from));
                    }
                }
            },
            Source::Or {
                branches,
                current,
                seen,
            } => loop {
                match current.next(collection, stats) {
                    Some(Ok(candidate)) => {
                        let id = match candidate.raw(collection.name()) {
                            Ok(raw) => raw.get("_id").ok().flatten().map(keys::encode),
                            Err(e) => return Some(Err(e)),
                        };
                        if seen.insert(id.unwrap_or_default()) {
                            return Some(Ok(candidate));
                        }
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => {
                        let branch = branches.next()?;
                        match source(collection, &branch, None) {
                            Ok(next) => **current = next,
                            Err(e) => return Some(Err(e)),
                        }
                    }
                }
            },
        }
    }
}

impl<'c> IndexSource<'c> {
    fn next(
        &mut self,
        collection: &'c dyn Collection,
        stats: &mut WalkStats,
    ) -> Option<Result<Candidate<'c>>> {
        loop {
            let range = if let Some(range) = &mut self.current {
                range
            } else {
                let (lower, upper) = self.intervals.next()?;
                match collection.index_rows(
                    self.index,
                    as_slice(&lower),
                    as_slice(&upper),
                    self.reverse,
                ) {
                    Ok(range) => self.current.insert(range),
                    Err(e) => return Some(Err(e)),
                }
            };
            let Some(row) = range.next() else {
                self.current = None;
                continue;
            };
            return match row {
                Err(e) => Some(Err(e.into())),
                Ok((key, value)) => {
                    stats.keys_examined += 1;
                    match self.candidate(collection, key.value(), value.value(), stats) {
                        Ok(Some(candidate)) => Some(Ok(candidate)),
                        Ok(None) => continue,
                        Err(e) => Some(Err(e)),
                    }
                }
            };
        }
    }

    /// The candidate of one entry; `None` for a document already returned.
    fn candidate(
        &mut self,
        collection: &'c dyn Collection,
        key: &[u8],
        value: &[u8],
        stats: &mut WalkStats,
    ) -> Result<Option<Candidate<'c>>> {
        let damaged = || {
            Error::corrupt(
                format!(
                    "index `{}` of collection `{}`",
                    self.index.spec.name(),
                    collection.name()
                ),
                "an entry is not a well-formed key",
            )
        };
        let id = entry_id(self.index, key, value, 0, 0).ok_or_else(damaged)?;
        if let Some(seen) = &mut self.seen
            && !seen.insert(id.to_vec())
        {
            return Ok(None);
        }
        if let Some(covering) = &self.covering {
            let types = crate::index::entry_types(self.index.spec.is_unique(), value)
                .ok_or_else(damaged)?;
            if let Some(doc) = covering.build(key, types) {
                return Ok(Some(Candidate::Covered(doc)));
            }
        }
        stats.docs_examined += 1;
        match collection.document(id)? {
            Some(guard) => Ok(Some(Candidate::Stored(guard))),
            None => Err(collection.corrupt("an index entry refers to a missing document")),
        }
    }
}

/// Whether any two of the (lower-bound ordered) intervals share a key.
fn overlapping(intervals: &[KeyRange]) -> bool {
    intervals.windows(2).any(|pair| {
        let (_, upper) = &pair[0];
        let (lower, _) = &pair[1];
        match (upper, lower) {
            (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
            (Bound::Excluded(u), Bound::Included(l)) => l < u,
            (Bound::Excluded(u) | Bound::Included(u), Bound::Excluded(l) | Bound::Included(l)) => {
                l <= u
            }
        }
    })
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
