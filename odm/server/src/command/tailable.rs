//! Tailable cursors over capped collections (`find` with `tailable`, and `awaitData`).
//!
//! Rules, as MongoDB's:
//! - Only a capped collection can be tailed, only in insertion order (no sort but
//!   `{$natural: 1}`), never with `singleBatch`, never inside a transaction.
//! - A tailable cursor stays open when it runs out: `getMore` answers an empty batch and the
//!   same id. It closes when its limit is reached, when it started on an empty collection
//!   (there is no place to resume from), or when its place was removed (`CappedPositionLost`).
//! - With `awaitData`, a `getMore` that finds nothing waits up to its `maxTimeMS` (one second
//!   by default) for an insert, then answers an empty batch, not a time-out error.
//!
//! Each batch reads a new snapshot (see `odm_engine::query::Tail`), so a cursor holds no
//! snapshot between batches, and reads each database by name, so a dropped database ends it.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bson::{Bson, Document, RawDocumentBuf};
use odm_engine::ErrorCode;
use odm_engine::query::Tail;

use super::args::Args;
use super::{CommandError, Ctx};
use crate::cursors::BatchBytes;
use crate::storage::Storage;

/// A `getMore` of an `awaitData` cursor without `maxTimeMS` waits this long.
pub const DEFAULT_AWAIT: Duration = Duration::from_secs(1);

/// A tailable cursor between batches.
#[derive(Debug)]
pub struct TailCursor {
    db: String,
    tail: Tail,
    await_data: bool,
}

impl TailCursor {
    /// Whether `getMore` may wait for new documents (and so take a `maxTimeMS`).
    pub fn awaits(&self) -> bool {
        self.await_data
    }

    /// Whether the cursor is over: its limit reached.
    pub fn is_done(&self) -> bool {
        self.tail.is_done()
    }

    /// Up to `max` documents past the cursor's place; an `awaitData` cursor that finds none
    /// waits up to `wait` for an insert (until `killed`).
    pub fn next_batch(
        &mut self,
        storage: &Storage,
        max: usize,
        wait: Option<Duration>,
        killed: &AtomicBool,
    ) -> Result<Vec<RawDocumentBuf>, CommandError> {
        let wait = if self.await_data {
            wait.unwrap_or(DEFAULT_AWAIT)
        } else {
            Duration::ZERO
        };
        let done = std::cell::Cell::new(self.is_done());
        crate::cursors::await_results(
            wait,
            killed,
            || {
                let batch = self.poll(storage, max);
                done.set(self.is_done());
                batch
            },
            || done.get(),
        )
    }

    fn poll(&mut self, storage: &Storage, max: usize) -> Result<Vec<RawDocumentBuf>, CommandError> {
        let db = storage.get(&self.db)?.ok_or_else(|| {
            CommandError::new(
                ErrorCode::NAMESPACE_NOT_FOUND,
                format!("database {} was dropped under a tailable cursor", self.db),
            )
        })?;
        let txn = db.read()?;
        let mut bytes = BatchBytes::default();
        Ok(self
            .tail
            .next_batch(&txn, max, &mut |size| bytes.admit(size))?)
    }
}

/// Checks a `find`'s tailable options; `Some(await_data)` when it asks for a tailable cursor.
pub fn requested(args: &Args<'_>, in_transaction: bool) -> Result<Option<bool>, CommandError> {
    let tailable = args.flag("tailable")?;
    let await_data = args.flag("awaitData")?;
    if await_data && !tailable {
        return Err(CommandError::new(
            ErrorCode::FAILED_TO_PARSE,
            "Cannot set 'awaitData' without also setting 'tailable'",
        ));
    }
    if !tailable {
        return Ok(None);
    }
    if args.flag("singleBatch")? {
        return Err(CommandError::bad_value(
            "cannot use tailable option with the 'singleBatch' option",
        ));
    }
    let natural_forward = |sort: &Document| {
        sort.is_empty()
            || (sort.len() == 1
                && sort
                    .get("$natural")
                    .and_then(super::args::whole_number)
                    .is_some_and(|d| d == 1))
    };
    if args.doc("sort")?.is_some_and(|s| !natural_forward(s)) {
        return Err(CommandError::bad_value(
            "cannot use tailable option with a sort other than {$natural: 1}",
        ));
    }
    if refuses_hint(args.get("hint")) {
        return Err(CommandError::bad_value(
            "a tailable cursor reads in natural order: it takes no hint but {$natural: 1}",
        ));
    }
    if in_transaction {
        return Err(CommandError::new(
            ErrorCode::INVALID_OPTIONS,
            "It is not supported to open a tailable cursor inside a transaction",
        ));
    }
    Ok(Some(await_data))
}

/// Opens a tailable cursor's first batch on `collection` of `ctx.db`; the cursor to keep, if
/// it stays open.
pub fn open(
    ctx: &Ctx<'_>,
    collection: &str,
    filter: &Document,
    args: &Args<'_>,
    await_data: bool,
    first: usize,
) -> Result<(Vec<RawDocumentBuf>, Option<TailCursor>), CommandError> {
    let Some(db) = ctx.server.storage.get(&ctx.db)? else {
        return Ok((Vec::new(), None));
    };
    let txn = db.read()?;
    let Some(options) = txn.collection_options(collection) else {
        return Ok((Vec::new(), None));
    };
    if options.capped.is_none() {
        return Err(CommandError::bad_value(format!(
            "error processing query: ns={}.{collection} tailable cursor requested on non capped collection",
            ctx.db
        )));
    }
    let skip = args.non_negative("skip")?.unwrap_or(0);
    let limit = args.non_negative("limit")?;
    let mut tail = Tail::new(collection, filter, args.doc("projection")?, skip, limit)?;
    let mut bytes = BatchBytes::default();
    let batch = tail.next_batch(&txn, first, &mut |size| bytes.admit(size))?;
    // A cursor that examined nothing has no place to resume from: MongoDB closes it.
    if tail.at_start() || tail.is_done() {
        return Ok((batch, None));
    }
    Ok((
        batch,
        Some(TailCursor {
            db: ctx.db.clone(),
            tail,
            await_data,
        }),
    ))
}

/// Whether `hint` asks for anything but the natural order a tail reads in.
fn refuses_hint(hint: Option<&Bson>) -> bool {
    match hint {
        None => false,
        Some(Bson::Document(h)) => !(h.is_empty() || h.contains_key("$natural")),
        Some(_) => true,
    }
}
