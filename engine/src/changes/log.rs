//! The change log: every committed write's change records, in commit order, in the table
//! `odm.changes` of the same file, written by the transaction that made the changes.
//!
//! Rules:
//! - A record's key is its commit's cluster time and its position in the commit, so keys
//!   order records as they were committed: a transaction takes its time at its first change,
//!   while it holds the file's only write lock, so a later commit has a later time.
//! - A transaction's records wait in memory and are written to the log's tables at its
//!   commit, or earlier once they hold [`WAITING_BYTES`] (so memory does not grow with the
//!   transaction's size). A record is written once, straight into the table it stays in.
//!   Work that is undone inside the transaction removes its records, waiting or written
//!   ([`TxnChanges::truncate`]), and an aborted transaction leaves none, as redb drops its
//!   writes.
//! - The log is bounded like MongoDB's oplog: past `max_bytes`, or older than `max_age`, the
//!   oldest records are removed by the next commit that records changes, never that
//!   transaction's own (a log nobody writes to keeps what it has).
//!   The key of the last record removed is kept: a stream resuming before it has lost history
//!   ([`crate::Error::ChangeStreamHistoryLost`]). Turning the log on after it was off moves that
//!   point to the present, since the changes in between were not recorded.
//! - Records are written to a small head table, `odm.changes.head`, while it and the records
//!   being written hold fewer than [`HEAD_RECORDS`] together; otherwise the head is moved into
//!   the main table, `odm.changes`, in key order and emptied, and the records are written to
//!   the main table. redb copies every page a commit touches on the way from the root: an
//!   append to a table of a few pages copies one or two, to the main table (megabytes) three or
//!   more, once per commit; moving in bulk copies the main table's last pages once for many
//!   commits. Invariant: every head record is newer than every main record (a move takes the
//!   whole head, and a new record is newer than all before it), so the log reads as the main
//!   table followed by the head ([`Log`]).
//! - Each record is written into one buffer from its parts, and read back as one. Runs of
//!   `APPEND_RUN` (8) or more records are appended through one redb cursor at the table's end,
//!   spliced into the last leaf instead of descending the tree for each; shorter runs (a cursor
//!   costs more than it saves on them) and a record out of order are inserted plainly.

use std::ops::Bound;
use std::time::Duration;

use bson::{Document, RawDocument, RawDocumentBuf, doc};
use redb::{
    AccessGuard, ReadableTable, ReadableTableMetadata, StorageError, Table, WriteTransaction,
};

use super::clock::{self, InFlight};
use crate::error::{Error, Result};
use crate::raw;
use crate::tables::{CHANGE_LOG_KEY, CHANGE_LOG_TRIMMED_KEY, CHANGES, CHANGES_HEAD, META};

/// A record's key: commit time, position in the commit.
pub type Position = (u64, u32);

/// How much history the change log keeps, and whether it records at all. Stored in the file;
/// see [`crate::Database::set_change_log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeLogOptions {
    /// Whether commits record their changes.
    pub enabled: bool,
    /// The log's size past which the oldest records are removed.
    pub max_bytes: u64,
    /// The age past which records are removed, if any.
    pub max_age: Option<Duration>,
}

/// 64 MiB of history, of any age.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

impl Default for ChangeLogOptions {
    fn default() -> Self {
        ChangeLogOptions {
            enabled: true,
            max_bytes: DEFAULT_MAX_BYTES,
            max_age: None,
        }
    }
}

impl ChangeLogOptions {
    pub(crate) fn to_document(self) -> Document {
        let mut d = doc! {
            "enabled": self.enabled,
            "maxBytes": i64::try_from(self.max_bytes).unwrap_or(i64::MAX),
        };
        if let Some(age) = self.max_age {
            d.insert(
                "maxAgeSeconds",
                i64::try_from(age.as_secs()).unwrap_or(i64::MAX),
            );
        }
        d
    }

    pub(crate) fn from_document(d: &Document) -> Result<ChangeLogOptions> {
        let corrupt = |what: &str| Error::corrupt("change log options", what);
        Ok(ChangeLogOptions {
            enabled: d.get_bool("enabled").map_err(|_| corrupt("no `enabled`"))?,
            max_bytes: d
                .get_i64("maxBytes")
                .ok()
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| corrupt("no `maxBytes`"))?,
            max_age: match d.get_i64("maxAgeSeconds") {
                Ok(n) => Some(Duration::from_secs(
                    u64::try_from(n).map_err(|_| corrupt("a negative `maxAgeSeconds`"))?,
                )),
                Err(_) => None,
            },
        })
    }
}

/// The change log's options stored in the meta table (the defaults when none are).
pub(crate) fn stored_options(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<ChangeLogOptions> {
    match meta.get(CHANGE_LOG_KEY)? {
        Some(bytes) => {
            let d = Document::from_reader(bytes.value())
                .map_err(|e| Error::corrupt("change log options", e))?;
            ChangeLogOptions::from_document(&d)
        }
        None => Ok(ChangeLogOptions::default()),
    }
}

/// The key of the last record trimmed: resuming before it has lost history.
pub(crate) fn trimmed(meta: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Position> {
    match meta.get(CHANGE_LOG_TRIMMED_KEY)? {
        Some(bytes) => decode_position(bytes.value())
            .ok_or_else(|| Error::corrupt("change log", "the trim point is not 12 bytes")),
        None => Ok((0, 0)),
    }
}

fn encode_position((time, index): Position) -> [u8; 12] {
    let mut out = [0; 12];
    out[..8].copy_from_slice(&time.to_be_bytes());
    out[8..].copy_from_slice(&index.to_be_bytes());
    out
}

fn decode_position(bytes: &[u8]) -> Option<Position> {
    let time = u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    let index = u32::from_be_bytes(bytes.get(8..12)?.try_into().ok()?);
    (bytes.len() == 12).then_some((time, index))
}

/// The head's size at which a commit moves it into the main table (see the rules above).
pub(crate) const HEAD_RECORDS: u64 = 32;

/// The bytes of waiting records past which a transaction writes them before its commit.
pub(crate) const WAITING_BYTES: usize = 1 << 20;

/// One row of the log, as redb gives it.
pub(crate) type Row<'a> =
    std::result::Result<(AccessGuard<'a, Position>, AccessGuard<'a, &'static [u8]>), StorageError>;

/// The log's two tables read as one, in key order: the main table, then the head. A table
/// that does not exist (a file no commit has recorded into) reads as empty.
pub(crate) struct Log<T> {
    pub(crate) main: Option<T>,
    pub(crate) head: Option<T>,
}

impl<T: ReadableTable<Position, &'static [u8]>> Log<T> {
    fn tables(&self) -> impl Iterator<Item = &T> {
        self.main.iter().chain(&self.head)
    }

    /// The record at `at`, if any.
    pub(crate) fn get(&self, at: Position) -> Result<Option<AccessGuard<'_, &'static [u8]>>> {
        for table in self.tables() {
            if let Some(found) = table.get(at)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The records after `at`, oldest first.
    pub(crate) fn after(&self, at: Position) -> Result<impl Iterator<Item = Row<'_>>> {
        let range = (std::ops::Bound::Excluded(at), std::ops::Bound::Unbounded);
        let mut ranges = Vec::with_capacity(2);
        for table in self.tables() {
            ranges.push(table.range::<Position>(range)?);
        }
        Ok(ranges.into_iter().flatten())
    }

    /// The last record's key, if any.
    pub(crate) fn last(&self) -> Result<Option<Position>> {
        for table in [&self.head, &self.main].into_iter().flatten() {
            if let Some((key, _)) = table.last()? {
                return Ok(Some(key.value()));
            }
        }
        Ok(None)
    }

    /// The bytes of the log's records, counted when a database opens and then kept in memory
    /// by each commit (a counter stored in the file would add a page to every commit's writes).
    pub(crate) fn bytes(&self) -> Result<u64> {
        let mut total = 0;
        for table in self.tables() {
            for row in table.iter()? {
                total += row?.1.value().len() as u64;
            }
        }
        Ok(total)
    }
}

impl Log<redb::ReadOnlyTable<Position, &'static [u8]>> {
    /// The log as a read transaction sees it.
    pub(crate) fn read(txn: &redb::ReadTransaction) -> Result<Self> {
        let open = |table| match txn.open_table(table) {
            Ok(table) => Ok(Some(table)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(Error::from(e)),
        };
        Ok(Log {
            main: open(CHANGES)?,
            head: open(CHANGES_HEAD)?,
        })
    }
}

/// Moves every head record into `main`, in key order, and empties the head.
fn move_head(
    txn: &WriteTransaction,
    head: Table<'_, Position, &'static [u8]>,
    main: &mut Table<'_, Position, &'static [u8]>,
) -> Result<()> {
    // At most [`HEAD_RECORDS`] records, copied out so the head can be deleted after.
    let rows = head
        .iter()?
        .map(|row| row.map(|(key, value)| (key.value(), value.value().to_vec())))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    append_all(
        main,
        rows.iter().map(|(key, value)| (*key, value.as_slice())),
    )?;
    drop(head);
    txn.delete_table(CHANGES_HEAD)?;
    Ok(())
}

/// Stores new options; turning the log on after it was off moves the trim point to now.
pub(crate) fn store_options(txn: &WriteTransaction, options: ChangeLogOptions) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    let before = stored_options(&meta)?;
    let bytes = RawDocumentBuf::try_from(&options.to_document())
        .map_err(|e| Error::corrupt("change log options", e))?;
    meta.insert(CHANGE_LOG_KEY, bytes.as_bytes())?;
    if options.enabled && !before.enabled {
        mark_history_start(&mut meta)?;
    }
    Ok(())
}

/// Marks the present as the start of the log's history (the log turned on after it was off:
/// the changes in between were not recorded).
pub(crate) fn mark_history_start(meta: &mut Table<'_, &'static str, &'static [u8]>) -> Result<()> {
    let now = clock::from_timestamp(clock::tick());
    meta.insert(
        CHANGE_LOG_TRIMMED_KEY,
        encode_position((now, u32::MAX)).as_slice(),
    )?;
    Ok(())
}

/// One write transaction's side of the log: its commit time, taken at its first change, and
/// the records it wrote.
pub(crate) struct TxnChanges {
    options: ChangeLogOptions,
    time: Option<InFlight>,
    wall: bson::DateTime,
    next: u32,
    /// Bytes of the records written (less those truncated).
    bytes: u64,
    /// Fields every record of this transaction carries (`lsid`, `txnNumber`).
    context: RawDocumentBuf,
    /// Records not yet in the log's tables, by position, oldest first: the positions before
    /// the first of them (all of them, with none waiting) are in the tables, or were truncated.
    waiting: Vec<(u32, Vec<u8>)>,
    /// Their bytes.
    waiting_bytes: usize,
}

impl TxnChanges {
    pub(crate) fn new(options: ChangeLogOptions) -> TxnChanges {
        TxnChanges {
            options,
            time: None,
            wall: bson::DateTime::from_millis(0),
            next: 0,
            bytes: 0,
            context: RawDocumentBuf::new(),
            waiting: Vec::new(),
            waiting_bytes: 0,
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.options.enabled
    }

    pub(crate) fn set_context(&mut self, context: &Document) -> Result<()> {
        self.context = RawDocumentBuf::try_from(context)
            .map_err(|e| Error::corrupt("a change record's context", e))?;
        Ok(())
    }

    /// Appends one record (`op` on collection `coll`, with its `fields`): it waits in memory,
    /// and the waiting records are written through `txn` once they hold [`WAITING_BYTES`].
    pub(crate) fn append(
        &mut self,
        txn: &WriteTransaction,
        op: &str,
        coll: &str,
        fields: &RawDocument,
    ) -> Result<()> {
        self.append_elements(txn, op, coll, raw::elements_bytes(fields))
    }

    /// [`TxnChanges::append`] of fields given as encoded elements, one after another.
    pub(crate) fn append_elements(
        &mut self,
        txn: &WriteTransaction,
        op: &str,
        coll: &str,
        fields: &[u8],
    ) -> Result<()> {
        if !self.options.enabled {
            return Ok(());
        }
        if self.time.is_none() {
            self.time = Some(InFlight::take());
            self.wall = bson::DateTime::now();
        }
        // `op`, `coll`, `wall`, then the context's and the fields' elements, their bytes copied
        // as they are, once, into a buffer of the record's size.
        let context = raw::elements_bytes(&self.context);
        let size = 4 + (9 + op.len()) + (11 + coll.len()) + 14 + context.len() + fields.len() + 1;
        let mut bytes = Vec::with_capacity(size);
        bytes.extend_from_slice(&[0; 4]);
        raw::push_string(&mut bytes, "op", op);
        raw::push_string(&mut bytes, "coll", coll);
        raw::push_element(
            &mut bytes,
            raw::DATE_TIME,
            "wall",
            &self.wall.timestamp_millis().to_le_bytes(),
        );
        bytes.extend_from_slice(context);
        bytes.extend_from_slice(fields);
        bytes.push(0);
        let len = i32::try_from(bytes.len())
            .map_err(|_| Error::corrupt("a change record", "over 2 GiB"))?;
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        self.bytes += bytes.len() as u64;
        self.waiting_bytes += bytes.len();
        self.waiting.push((self.next, bytes));
        self.next += 1;
        if self.waiting_bytes >= WAITING_BYTES {
            self.write(txn)?;
        }
        Ok(())
    }

    /// Writes the waiting records: into the head while it and they hold fewer than
    /// [`HEAD_RECORDS`], otherwise into the main table, after the head (see the rules above).
    fn write(&mut self, txn: &WriteTransaction) -> Result<()> {
        let Some(time) = self.time.as_ref().map(InFlight::time) else {
            return Ok(());
        };
        if self.waiting.is_empty() {
            return Ok(());
        }
        let mut head = txn.open_table(CHANGES_HEAD)?;
        let held = head.len()?;
        if held + self.waiting.len() as u64 >= HEAD_RECORDS {
            let mut main = txn.open_table(CHANGES)?;
            if held > 0 {
                move_head(txn, head, &mut main)?;
            }
            insert_all(&mut main, time, &self.waiting)?;
        } else {
            insert_all(&mut head, time, &self.waiting)?;
        }
        self.waiting.clear();
        self.waiting_bytes = 0;
        Ok(())
    }

    /// The position the next record takes: pass it to [`TxnChanges::truncate`].
    pub(crate) fn mark(&self) -> u32 {
        self.next
    }

    /// Removes the records appended since `mark`: their work was undone.
    pub(crate) fn truncate(&mut self, txn: &WriteTransaction, mark: u32) -> Result<()> {
        let Some(time) = self.time.as_ref().map(InFlight::time) else {
            return Ok(());
        };
        let written = self.waiting.first().map_or(self.next, |(index, _)| *index);
        let kept = self.waiting.partition_point(|(index, _)| *index < mark);
        for (_, bytes) in self.waiting.drain(kept..) {
            self.bytes = self.bytes.saturating_sub(bytes.len() as u64);
            self.waiting_bytes -= bytes.len();
        }
        // Records already written are in the head or, after a move, the main table.
        if mark < written {
            for table in [CHANGES_HEAD, CHANGES] {
                let mut table = txn.open_table(table)?;
                for index in mark..written {
                    if let Some(old) = table.remove((time, index))? {
                        self.bytes = self.bytes.saturating_sub(old.value().len() as u64);
                    }
                }
            }
        }
        self.next = mark;
        Ok(())
    }

    /// Before the commit: writes the waiting records (see [`TxnChanges::write`]) and trims the
    /// log to its bounds, given the bytes its records held before this transaction (`held`,
    /// kept in memory: see [`Log::bytes`]). Returns the commit's time, to be released once
    /// the commit is visible (or has failed), and the bytes the log holds once it commits.
    pub(crate) fn finish(
        &mut self,
        txn: &WriteTransaction,
        held: u64,
    ) -> Result<Option<(InFlight, u64)>> {
        self.write(txn)?;
        let Some(in_flight) = self.time.take() else {
            return Ok(None);
        };
        let own_time = in_flight.time();
        let mut total = held + self.bytes;
        let cutoff = self.options.max_age.map(|age| {
            let now = clock::from_timestamp(clock::now()) >> 32;
            now.saturating_sub(age.as_secs()) << 32
        });
        // Most commits are within bounds and touch no table but the log's own records.
        if total <= self.options.max_bytes && cutoff.is_none() {
            return Ok(Some((in_flight, total)));
        }
        let mut main = txn.open_table(CHANGES)?;
        let mut head = txn.open_table(CHANGES_HEAD)?;
        let mut last_trimmed = None;
        loop {
            // Oldest first: the main table's records, then the head's.
            let first =
                |t: &Table<'_, Position, &'static [u8]>| -> Result<Option<(Position, u64)>> {
                    Ok(t.first()?.map(|(k, v)| (k.value(), v.value().len() as u64)))
                };
            let (table, (key, size)) = match (first(&main)?, first(&head)?) {
                (Some(oldest), _) => (&mut main, oldest),
                (None, Some(oldest)) => (&mut head, oldest),
                (None, None) => break,
            };
            let too_big = total > self.options.max_bytes;
            let too_old = cutoff.is_some_and(|c| key.0 < c);
            if key.0 == own_time || !(too_big || too_old) {
                break;
            }
            table.remove(key)?;
            total = total.saturating_sub(size);
            last_trimmed = Some(key);
        }
        // The trim point only moves forward: records from before the log was last turned
        // off may be older than the point its turning on set.
        if let Some(key) = last_trimmed {
            let mut meta = txn.open_table(META)?;
            if key > trimmed(&meta)? {
                meta.insert(CHANGE_LOG_TRIMMED_KEY, encode_position(key).as_slice())?;
            }
        }
        Ok(Some((in_flight, total)))
    }
}

/// See [`append_all`].
const APPEND_RUN: usize = 8;

fn insert_all(
    table: &mut Table<'_, Position, &'static [u8]>,
    time: u64,
    records: &[(u32, Vec<u8>)],
) -> Result<()> {
    append_all(
        table,
        records
            .iter()
            .map(|(index, bytes)| ((time, *index), bytes.as_slice())),
    )
}

/// Adds rows in ascending key order after the table's last, as the log's records come (a
/// commit's time is later than any before it, the head's records later than the main
/// table's): through one cursor at the table's end, so that redb splices them into the last
/// leaf as one run instead of descending the tree for each. A row that does not sort after the
/// one before (not expected) goes in by a plain insert after the others. Fewer than
/// [`APPEND_RUN`] rows go in by plain inserts: a cursor costs more than it saves on them (a
/// durable commit of one record: about 7,000 instructions more, by callgrind on `bench core`).
fn append_all<'r>(
    table: &mut Table<'_, Position, &'static [u8]>,
    rows: impl ExactSizeIterator<Item = (Position, &'r [u8])>,
) -> Result<()> {
    if rows.len() < APPEND_RUN {
        for (key, value) in rows {
            table.insert(key, value)?;
        }
        return Ok(());
    }
    let mut unordered = Vec::new();
    let mut cursor = table.upper_bound_mut(Bound::<Position>::Unbounded)?;
    for (key, value) in rows {
        match cursor.insert_before(key, value) {
            Ok(()) => {}
            Err(redb::CursorError::UnorderedKey) => unordered.push((key, value)),
            Err(e) => return Err(redb::Error::from(e).into()),
        }
    }
    cursor.close()?;
    for (key, value) in unordered {
        table.insert(key, value)?;
    }
    Ok(())
}

impl crate::db::ReadTxn {
    /// The cluster time of the last commit this snapshot's change log recorded; `None` when no
    /// commit has recorded changes. A commit made while the log was off left no time: callers
    /// that need every commit's time check [`crate::Database::change_log`] first.
    pub fn last_commit_time(&self) -> Result<Option<bson::Timestamp>> {
        let log = Log::read(&self.txn)?;
        Ok(log
            .last()?
            .map(|(time, _)| super::clock::to_timestamp(time)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip() {
        for options in [
            ChangeLogOptions::default(),
            ChangeLogOptions {
                enabled: false,
                max_bytes: 1,
                max_age: Some(Duration::from_hours(1)),
            },
        ] {
            assert_eq!(
                ChangeLogOptions::from_document(&options.to_document()).unwrap(),
                options
            );
        }
    }

    #[test]
    fn the_head_moves_into_the_main_table_whole() {
        let db = crate::Database::in_memory().unwrap();
        let c = db.collection("c");
        let inserts = HEAD_RECORDS * 3 + 5;
        for i in 0..inserts {
            c.insert_one(doc! {"_id": i as i64}).unwrap();
            let snapshot = db.read().unwrap();
            let log = Log::read(&snapshot.txn).unwrap();
            let len = |t: &Option<redb::ReadOnlyTable<Position, &'static [u8]>>| {
                t.as_ref().map_or(0, |t| t.len().unwrap())
            };
            let (main, head) = (len(&log.main), len(&log.head));
            // The collection's `create`, then one record per insert.
            assert_eq!(main + head, i + 2);
            assert!(head < HEAD_RECORDS, "head {head} after {i}");
            assert_eq!(main % HEAD_RECORDS, 0, "main {main} after {i}");
            let keys: Vec<Position> = log
                .after((0, 0))
                .unwrap()
                .map(|row| row.unwrap().0.value())
                .collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(log.last().unwrap(), keys.last().copied());
            assert_eq!(keys.len() as u64, main + head);
        }
    }

    #[test]
    fn trimming_reaches_the_head_once_the_main_table_is_empty() {
        let db = crate::Database::in_memory().unwrap();
        db.set_change_log(ChangeLogOptions {
            max_bytes: 1,
            ..ChangeLogOptions::default()
        })
        .unwrap();
        db.write(|w| w.create_collection("c")).unwrap();
        let c = db.collection("c");
        for i in 0..5_i64 {
            c.insert_one(doc! {"_id": i}).unwrap();
            let snapshot = db.read().unwrap();
            let log = Log::read(&snapshot.txn).unwrap();
            let kept: Vec<Position> = log
                .after((0, 0))
                .unwrap()
                .map(|row| row.unwrap().0.value())
                .collect();
            // Over its bound, the log keeps only the last commit's own record.
            assert_eq!(kept.len(), 1, "after insert {i}: {kept:?}");
            assert!(log.bytes().unwrap() > 0);
        }
    }

    fn log_rows(db: &crate::Database) -> (Vec<(Position, Vec<u8>)>, u64, u64) {
        let snapshot = db.read().unwrap();
        let log = Log::read(&snapshot.txn).unwrap();
        let len = |t: &Option<redb::ReadOnlyTable<Position, &'static [u8]>>| {
            t.as_ref().map_or(0, |t| t.len().unwrap())
        };
        let rows = log
            .after((0, 0))
            .unwrap()
            .map(|row| {
                let (k, v) = row.unwrap();
                (k.value(), v.value().to_vec())
            })
            .collect();
        (rows, len(&log.main), len(&log.head))
    }

    #[test]
    fn a_transaction_of_many_records_writes_them_to_the_main_table() {
        let db = crate::Database::in_memory().unwrap();
        let c = db.collection("c");
        c.insert_one(doc! {"_id": -1_i64}).unwrap();
        let (_, main, head) = log_rows(&db);
        assert_eq!(
            (main, head),
            (0, 2),
            "create and one insert wait in the head"
        );
        let docs: Vec<Document> = (0..HEAD_RECORDS as i64 * 2)
            .map(|i| doc! {"_id": i})
            .collect();
        db.write(|w| {
            w.insert_many("c", docs, true)?;
            // Until the commit the records wait in memory: the tables hold what they held.
            let held = |table| w.txn.open_table(table).unwrap().len().unwrap();
            assert_eq!((held(CHANGES), held(CHANGES_HEAD)), (0, 2));
            assert_eq!(w.changes.waiting.len() as u64, HEAD_RECORDS * 2);
            Ok::<(), Error>(())
        })
        .unwrap();
        let (rows, main, head) = log_rows(&db);
        assert_eq!(
            (main, head),
            (2 + HEAD_RECORDS * 2, 0),
            "the head moved first"
        );
        assert!(rows.windows(2).all(|w| w[0].0 < w[1].0));
        c.insert_one(doc! {"_id": "last"}).unwrap();
        let (_, main, head) = log_rows(&db);
        assert_eq!((main, head), (2 + HEAD_RECORDS * 2, 1));
    }

    /// Each kind of record, written into one buffer from its parts, is byte for byte the
    /// document the fields' plain encoding gives, in the documented order.
    #[test]
    fn records_are_the_documents_their_fields_make() {
        use crate::options::{CollectionOptions, ShardKey};
        let db = crate::Database::in_memory().unwrap();
        db.write(|w| {
            w.create_collection_with(
                "s",
                CollectionOptions::default()
                    .with_shard_key(ShardKey::range(["to.name"]).unwrap())
                    .with_pre_and_post_images(true),
            )
        })
        .unwrap();
        let (before, _, _) = log_rows(&db);
        let s = db.collection("s");
        let c = db.collection("c");
        let first = doc! {"_id": "m1", "to": {"name": "joe"}, "n": 1};
        s.insert_one(first.clone()).unwrap();
        let options = crate::update::UpdateOptions::default();
        s.update_one(&doc! {"_id": "m1"}, doc! {"$inc": {"n": 1}}, &options)
            .unwrap();
        c.insert_one(doc! {"_id": 7, "a": "x"}).unwrap();
        c.replace_one(&doc! {"_id": 7}, &doc! {"b": 2}, &options)
            .unwrap();
        c.delete_one(&doc! {"_id": 7}).unwrap();
        let (rows, _, _) = log_rows(&db);
        // The documents' records, without the `create` the first insert into `c` brings.
        let rows: Vec<&Vec<u8>> = rows[before.len()..]
            .iter()
            .map(|(_, bytes)| bytes)
            .filter(|bytes| {
                RawDocument::from_bytes(bytes)
                    .unwrap()
                    .get_str("op")
                    .unwrap()
                    != "create"
            })
            .collect();
        let records: Vec<Document> = rows
            .iter()
            .map(|bytes| RawDocument::from_bytes(bytes).unwrap().try_into().unwrap())
            .collect();
        let second = doc! {"_id": "m1", "to": {"name": "joe"}, "n": 2};
        let key = doc! {"_id": "m1", "to.name": "joe"};
        let expected = [
            doc! {"documentKey": key.clone(), "fullDocument": first.clone()},
            doc! {
                "documentKey": key,
                "updateDescription": {
                    "updatedFields": {"n": 2}, "removedFields": [], "truncatedArrays": [],
                },
                "postImage": second,
                "preImage": first,
            },
            doc! {"documentKey": {"_id": 7}, "fullDocument": {"_id": 7, "a": "x"}},
            doc! {"documentKey": {"_id": 7}, "fullDocument": {"_id": 7, "b": 2}},
            doc! {"documentKey": {"_id": 7}},
        ];
        let ops = ["insert", "update", "insert", "replace", "delete"];
        let colls = ["s", "s", "c", "c", "c"];
        assert_eq!(records.len(), expected.len());
        for (i, record) in records.iter().enumerate() {
            let mut whole = doc! {
                "op": ops[i],
                "coll": colls[i],
                "wall": record.get_datetime("wall").unwrap(),
            };
            whole.extend(expected[i].clone());
            assert_eq!(record, &whole);
            assert_eq!(
                rows[i].as_slice(),
                RawDocumentBuf::try_from(&whole).unwrap().as_bytes()
            );
        }
    }

    /// Rows after the table's last go in through the cursor as one run, or by plain inserts
    /// when few; a row out of order (earlier than the last) is inserted all the same.
    #[test]
    fn appended_rows_are_all_stored_whatever_their_order() {
        let db = redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(CHANGES).unwrap();
            table.insert((10, 0), b"old".as_slice()).unwrap();
            let value = |n: u32| n.to_le_bytes().to_vec();
            let mut expected = vec![((10, 0), b"old".to_vec())];
            for (time, count) in [(11, 3), (12, APPEND_RUN as u32), (13, 40)] {
                let mut rows: Vec<(Position, Vec<u8>)> =
                    (0..count).map(|i| ((time, i), value(i))).collect();
                // One row from before the table's last, mid-run.
                rows.insert(count as usize / 2, ((time - 2, 1000 + count), value(count)));
                append_all(
                    &mut table,
                    rows.iter().map(|(key, value)| (*key, value.as_slice())),
                )
                .unwrap();
                expected.extend(rows);
            }
            expected.sort();
            let stored: Vec<(Position, Vec<u8>)> = table
                .iter()
                .unwrap()
                .map(|row| {
                    let (k, v) = row.unwrap();
                    (k.value(), v.value().to_vec())
                })
                .collect();
            assert_eq!(stored, expected);
        }
        txn.commit().unwrap();
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// A record with a field of this many bytes.
        Append(usize),
        /// Cut back to this share (of 256) of the positions taken so far.
        Truncate(u8),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (0..400_000usize).prop_map(Step::Append),
            1 => any::<u8>().prop_map(Step::Truncate),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Law: whatever the head held before, and however records waiting in memory, written
        /// early (past `WAITING_BYTES`) and truncated interleave, the commit leaves exactly the
        /// records not truncated, each with its bytes, in position order after the earlier
        /// ones, the head below `HEAD_RECORDS`; and the bytes counted are theirs. With a log
        /// bound of one byte (`tight`), the commit trims every earlier record and none of its own.
        #[test]
        fn waiting_written_and_truncated_records_commit_as_a_list(
            before in 0..40u64,
            steps in proptest::collection::vec(step(), 0..24),
            tight in proptest::prelude::any::<bool>(),
        ) {
            let db = crate::Database::in_memory().unwrap();
            db.write(|w| w.create_collection("c")).unwrap();
            for i in 0..before {
                db.collection("c").insert_one(doc! {"_id": i as i64}).unwrap();
            }
            if tight {
                db.set_change_log(ChangeLogOptions {
                    max_bytes: 1,
                    ..ChangeLogOptions::default()
                })
                .unwrap();
            }
            let (mut earlier, _, _) = log_rows(&db);
            if tight && !steps.iter().any(|s| matches!(s, Step::Append(_))) {
                // A commit that records nothing trims nothing.
            } else if tight {
                earlier.clear();
            }
            let mut model: Vec<(u32, usize)> = Vec::new();
            let mut next = 0u32;
            let counted = db
                .write(|w| {
                    for step in &steps {
                        match step {
                            Step::Append(size) => {
                                let fields = RawDocumentBuf::try_from(
                                    &doc! {"fill": "x".repeat(*size)},
                                )
                                .unwrap();
                                w.changes.append(w.txn, "insert", "c", &fields)?;
                                model.push((next, *size));
                                next += 1;
                            }
                            Step::Truncate(share) => {
                                let mark = (u64::from(next) * u64::from(*share) / 256) as u32;
                                w.changes.truncate(w.txn, mark)?;
                                model.retain(|(i, _)| *i < mark);
                                next = mark;
                            }
                        }
                    }
                    Ok::<u64, Error>(w.changes.bytes)
                })
                .unwrap();
            let (rows, _, head) = log_rows(&db);
            proptest::prop_assert!(head < HEAD_RECORDS);
            proptest::prop_assert_eq!(&rows[..earlier.len()], &earlier[..]);
            let own = &rows[earlier.len()..];
            let positions: Vec<u32> = own.iter().map(|(k, _)| k.1).collect();
            let expected: Vec<u32> = model.iter().map(|(i, _)| *i).collect();
            proptest::prop_assert_eq!(positions, expected);
            proptest::prop_assert!(own.windows(2).all(|w| w[0].0.0 == w[1].0.0));
            for ((_, bytes), (_, size)) in own.iter().zip(&model) {
                let record = RawDocument::from_bytes(bytes).unwrap();
                let fill = record.get_str("fill").unwrap();
                proptest::prop_assert_eq!(fill.len(), *size);
            }
            let own_bytes: u64 = own.iter().map(|(_, b)| b.len() as u64).sum();
            proptest::prop_assert_eq!(counted, own_bytes);
        }
    }

    #[test]
    fn positions_round_trip() {
        let p = (u64::MAX - 3, 17);
        assert_eq!(decode_position(&encode_position(p)), Some(p));
        assert_eq!(decode_position(&[0; 11]), None);
    }
}
