//! `$setWindowFields`' input, one partition at a time.
//!
//! As MongoDB does (a `$sort` on the partition key and `sortBy` before the stage), the input
//! goes through the operation's external sort (`crate::spill`): by partition key (MongoDB's
//! order of values; null and missing are one key), then `sortBy`, ties in input order. Past the
//! memory budget the sort spills, or fails with 292 without disk use. Without `partitionBy` and
//! `sortBy` nothing is sorted: the input is one partition, in its order.
//!
//! The partition being computed is held, counted against the budget. Past it, with disk use
//! allowed, the documents held so far are written to a temporary file (`spill::DocumentFile`)
//! and read back by position as the windows need them (a spill, reported in explain); without
//! disk use it fails with MongoDB's 5643011. When what the outputs make passes the budget, the
//! documents still in memory go to disk as well, to make room (`Emitting::with_room`).

use std::borrow::Cow;
use std::sync::Arc;

use bson::{Bson, Document, RawDocument, RawDocumentBuf};

use super::super::Documents;
use super::{NAME, SetWindowFields, fail};
use crate::budget::Budget;
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::{Env, compare_bson, eval_in};
use crate::order::compare_in;
use crate::spill::{self, DocumentFile, Sorter};

/// Documents in partition order, each with its partition key.
type Keyed<'a> = Box<dyn Iterator<Item = Result<(Bson, Document)>> + 'a>;

/// The sorted input, read a partition at a time.
pub(super) struct Partitions<'a> {
    sorted: Keyed<'a>,
    /// The first document of the next partition, read already.
    next: Option<(Bson, Document)>,
    collation: Option<Arc<Collation>>,
    budget: Budget,
}

impl<'a> Partitions<'a> {
    pub(super) fn new(
        stage: &SetWindowFields,
        input: Documents<'a>,
        collation: Option<Arc<Collation>>,
        budget: Budget,
    ) -> Result<Partitions<'a>> {
        let sorted: Keyed<'a> = if stage.partition_by.is_none() && stage.sort.is_none() {
            Box::new(input.map(|doc| Ok((Bson::Null, doc?))))
        } else {
            sorted(stage, input, collation.clone(), budget.clone())?
        };
        let mut partitions = Partitions {
            sorted,
            next: None,
            collation,
            budget,
        };
        partitions.next = partitions.sorted.next().transpose()?;
        Ok(partitions)
    }

    /// The next partition's documents in order, and the bytes of those held in memory.
    pub(super) fn next_partition(&mut self) -> Result<Option<(Docs, usize)>> {
        let Some((key, first)) = self.next.take() else {
            return Ok(None);
        };
        let mut docs = Docs {
            file: None,
            memory: Vec::new(),
        };
        let mut held = 0;
        let mut doc = first;
        loop {
            held += crate::document::encoded_size(&doc);
            docs.memory.push(doc);
            if self.budget.exceeded(held) {
                self.spill(&mut docs, held)?;
                held = 0;
            }
            let Some((next_key, next)) = self.sorted.next().transpose()? else {
                break;
            };
            if !compare_bson(&next_key, &key, self.collation.as_deref()).is_eq() {
                self.next = Some((next_key, next));
                break;
            }
            crate::interrupt::check()?;
            doc = next;
        }
        Ok(Some((docs, held)))
    }

    /// Writes the documents `docs` holds in memory (`held` bytes, past the budget) to its
    /// file, or fails without disk use.
    fn spill(&self, docs: &mut Docs, held: usize) -> Result<()> {
        if !self.budget.allows_disk_use() {
            let limit = self.budget.limit();
            return Err(fail(
                ErrorCode::location(5_643_011),
                format!(
                    "Exceeded max memory. Current memory: {held} bytes. Max allowed memory: {limit} bytes. Set 'allowDiskUse: true' to spill to disk"
                ),
            ));
        }
        docs.write_out(&self.budget).map(|_| ())
    }
}

/// A partition's documents in order: once it passed the budget, the first ones on disk, the
/// rest in memory.
pub(super) struct Docs {
    file: Option<DocumentFile>,
    memory: Vec<Document>,
}

impl Docs {
    /// Writes the documents held in memory to the partition's file (a spill of `budget`'s
    /// stage); returns whether there were any.
    pub(super) fn write_out(&mut self, budget: &Budget) -> Result<bool> {
        if self.memory.is_empty() {
            return Ok(false);
        }
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(DocumentFile::create(budget.dir())?),
        };
        let bytes = file.append(
            self.memory
                .drain(..)
                .map(|d| RawDocumentBuf::try_from(&d).map_err(|e| fail(ErrorCode::BAD_VALUE, e))),
        )?;
        budget.spilled(bytes);
        self.memory.shrink_to_fit();
        Ok(true)
    }

    fn on_disk(&self) -> usize {
        self.file.as_ref().map_or(0, DocumentFile::len)
    }

    pub(super) fn len(&self) -> usize {
        self.on_disk() + self.memory.len()
    }

    /// The document at `i` (read back if on disk).
    pub(super) fn get(&self, i: usize) -> Result<Cow<'_, Document>> {
        let on_disk = self.on_disk();
        match &self.file {
            Some(file) if i < on_disk => {
                let raw = file.get(i)?;
                Document::try_from(raw.as_ref())
                    .map(Cow::Owned)
                    .map_err(|e| Error::corrupt("spill file", e))
            }
            _ => self
                .memory
                .get(i - on_disk)
                .map(Cow::Borrowed)
                .ok_or_else(|| Error::corrupt("partition", "a position past its documents")),
        }
    }

    /// The documents at `range`, in order.
    pub(super) fn range(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = Result<Cow<'_, Document>>> {
        range.map(|i| self.get(i))
    }
}

/// The code of [`exceeded`].
pub(super) const EXCEEDED: i32 = 5_414_201;

/// MongoDB's error of the stage past its memory limit with nothing more it can spill (5414201).
pub(super) fn exceeded(used: usize, limit: usize) -> Error {
    fail(
        ErrorCode::location(EXCEEDED),
        format!(
            "Exceeded memory limit in DocumentSourceSetWindowFields, used {used} bytes but max allowed is {limit}"
        ),
    )
}

/// The partition key of `doc`: null for null, missing and undefined; an array is refused.
fn partition_key(stage: &SetWindowFields, doc: &Document, cx: Option<&Collation>) -> Result<Bson> {
    let Some(e) = &stage.partition_by else {
        return Ok(Bson::Null);
    };
    match eval_in(e, &Env::collated(doc, cx))? {
        None | Some(Bson::Undefined) => Ok(Bson::Null),
        Some(Bson::Array(_)) => Err(fail(
            ErrorCode::TYPE_MISMATCH,
            "the partitionBy expression cannot evaluate to an array",
        )),
        Some(v) => Ok(v),
    }
}

/// The input through the external sort, by partition key then `sortBy`.
fn sorted<'a>(
    stage: &SetWindowFields,
    input: Documents<'a>,
    collation: Option<Arc<Collation>>,
    budget: Budget,
) -> Result<Keyed<'a>> {
    let sort = stage
        .sort
        .as_ref()
        .map(|(sort, _)| sort.clone().collated(collation.clone()));
    let cx = collation.clone();
    let compare = move |a: &RawDocument, b: &RawDocument| {
        compare_in(spill::key_of(a), spill::key_of(b), cx.as_deref()).then_with(|| {
            match (&sort, a.get_document("d"), b.get_document("d")) {
                (Some(sort), Ok(a), Ok(b)) => sort.compare(a, b),
                _ => std::cmp::Ordering::Equal,
            }
        })
    };
    let mut sorter = Sorter::new(budget, NAME, compare, None);
    for doc in input {
        crate::interrupt::check()?;
        let doc = doc?;
        let key = partition_key(stage, &doc, collation.as_deref())?;
        sorter.push(spill::keyed(NAME, key, doc)?)?;
    }
    Ok(Box::new(
        sorter.finish()?.map(|record| spill::unkeyed(&record?)),
    ))
}
