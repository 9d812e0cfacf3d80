//! `$setWindowFields`' input, one partition at a time.
//!
//! As MongoDB does (a `$sort` on the partition key and `sortBy` before the stage), the input
//! goes through the operation's external sort (`crate::spill`): by partition key (MongoDB's
//! order of values; null and missing are one key), then `sortBy`, ties in input order. Past the
//! memory budget the sort spills, or fails with 292 without disk use. Without `partitionBy` and
//! `sortBy` nothing is sorted: the input is one partition, in its order.
//!
//! The partition being computed is held, counted against the budget. A partition is not
//! written to disk: past the budget it fails with MongoDB's 5643011 without disk use, and with
//! disk use (where MongoDB would spill the partition) with 5414201, MongoDB's error of a stage
//! still past the limit once it has spilled what it can.

use std::sync::Arc;

use bson::{Bson, Document, RawDocument};

use super::super::Documents;
use super::{NAME, SetWindowFields, fail};
use crate::budget::Budget;
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::expr::{Env, compare_bson, eval_in};
use crate::order::compare_in;
use crate::spill::{self, Sorter};

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

    /// The next partition's documents in order, and the bytes they hold.
    pub(super) fn next_partition(&mut self) -> Result<Option<(Vec<Document>, usize)>> {
        let Some((key, first)) = self.next.take() else {
            return Ok(None);
        };
        let mut held = crate::document::encoded_size(&first);
        let mut docs = vec![first];
        self.check(held)?;
        while let Some((next_key, doc)) = self.sorted.next().transpose()? {
            if !compare_bson(&next_key, &key, self.collation.as_deref()).is_eq() {
                self.next = Some((next_key, doc));
                break;
            }
            crate::interrupt::check()?;
            held += crate::document::encoded_size(&doc);
            self.check(held)?;
            docs.push(doc);
        }
        Ok(Some((docs, held)))
    }

    /// A partition holding `held` bytes must be within the budget.
    fn check(&self, held: usize) -> Result<()> {
        if !self.budget.exceeded(held) {
            return Ok(());
        }
        let limit = self.budget.limit();
        Err(if self.budget.allows_disk_use() {
            exceeded(held, limit)
        } else {
            fail(
                ErrorCode::location(5_643_011),
                format!(
                    "Exceeded max memory. Current memory: {held} bytes. Max allowed memory: {limit} bytes. Set 'allowDiskUse: true' to spill to disk"
                ),
            )
        })
    }
}

/// MongoDB's error of the stage past its memory limit with nothing more it can spill (5414201).
pub(super) fn exceeded(used: usize, limit: usize) -> Error {
    fail(
        ErrorCode::location(5_414_201),
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
