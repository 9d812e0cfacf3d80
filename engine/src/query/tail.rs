//! Tailing a capped collection: the documents inserted after a position, in insertion order,
//! as a tailable cursor reads them batch after batch, each batch from a new snapshot.
//!
//! Rules, as MongoDB's:
//! - The position is the sequence number of the last document examined (matched or not), so
//!   the next batch starts after it; before the first document it is the collection's start.
//! - When the document at the position is gone (removed to make room, or deleted), the place
//!   is lost: `CappedPositionLost` (136), and the cursor ends.
//! - A tailable cursor's `skip` and `limit` count across batches.

use bson::{Document, RawDocumentBuf};

use super::selection::{Query, QueryOptions};
use super::source::Source;
use crate::capped::{self, CappedError};
use crate::db::ReadTxn;
use crate::error::{Error, Result};

/// A tailable cursor's query and place; see the module documentation.
#[derive(Debug)]
pub struct Tail {
    query: Query,
    collection: String,
    position: Option<u64>,
    skip: u64,
    /// Documents still to return, when limited.
    remaining: Option<u64>,
}

impl Tail {
    /// A tail of `collection` from its first document; the filter and projection are checked
    /// here.
    pub fn new(
        collection: &str,
        filter: &Document,
        projection: Option<&Document>,
        skip: u64,
        limit: Option<u64>,
    ) -> Result<Tail> {
        let options = QueryOptions {
            projection,
            ..QueryOptions::default()
        };
        Ok(Tail {
            query: Query::parse(filter, options)?,
            collection: collection.to_owned(),
            position: None,
            skip,
            remaining: limit.filter(|&l| l > 0),
        })
    }

    /// Whether the limit has been reached: the cursor is done.
    pub fn is_done(&self) -> bool {
        self.remaining == Some(0)
    }

    /// Whether the tail has examined no document yet.
    pub fn at_start(&self) -> bool {
        self.position.is_none()
    }

    /// The next documents past the position in `txn`, at most `max`, each admitted by
    /// `admit(size)` (a batch's byte rule) before it is taken; a document not admitted is read
    /// again by the next batch.
    pub fn next_batch(
        &mut self,
        txn: &ReadTxn,
        max: usize,
        admit: &mut dyn FnMut(usize) -> bool,
    ) -> Result<Vec<RawDocumentBuf>> {
        let collection = txn
            .collection(&self.collection)?
            .ok_or_else(|| Error::CollectionNotFound(self.collection.clone()))?;
        if let Some(position) = self.position
            && !capped::holds(collection.natural_order()?, position)?
        {
            return Err(Error::Capped(CappedError::PositionLost {
                collection: self.collection.clone(),
                position,
            }));
        }
        let mut out = Vec::new();
        for entry in collection.natural(false, self.position)? {
            if out.len() >= max || self.is_done() {
                break;
            }
            crate::interrupt::check()?;
            let (sequence, id) = entry?;
            let Some(stored) = collection.document(&id)? else {
                return Err(collection.corrupt("insertion order names a missing document"));
            };
            let raw = bson::RawDocument::from_bytes(stored.value())
                .map_err(|e| collection.corrupt(&e.to_string()))?;
            if !self
                .query
                .filter
                .try_matches(raw)
                .map_err(Error::InvalidExpression)?
            {
                self.position = Some(sequence);
                continue;
            }
            if self.skip > 0 {
                self.skip -= 1;
                self.position = Some(sequence);
                continue;
            }
            let shaped = self.shape(raw)?;
            if !admit(shaped.as_bytes().len()) {
                break;
            }
            self.position = Some(sequence);
            if let Some(remaining) = &mut self.remaining {
                *remaining -= 1;
            }
            out.push(shaped);
        }
        Ok(out)
    }

    /// The document as the cursor returns it: projected when the query has a projection.
    fn shape(&self, raw: &bson::RawDocument) -> Result<RawDocumentBuf> {
        let Some(projection) = &self.query.projection else {
            return Ok(raw.to_owned());
        };
        let projected = projection
            .apply(raw, &self.query)
            .map_err(|e| e.into_error(&self.collection))?;
        RawDocumentBuf::try_from(&projected).map_err(|e| Error::corrupt("projection", e))
    }
}
