//! Retryable writes' records: for each logical session, the transaction number of its latest
//! retryable write and the reply that write gave, stored in the write's own transaction.
//!
//! MongoDB's retryable writes specification: a driver that loses its connection after sending a
//! write sends it again with the same session and `txnNumber`; the server answers the retry
//! with the first attempt's result instead of applying it twice. Because the record commits
//! with the write, either both are in the file or neither is, and a retry after a restart is
//! answered as well as one a second later. MongoDB keeps one record per session (its
//! `config.transactions`), so a session's older numbers cannot be retried; so does this table,
//! and [`WriteTxn::forget_retryable_writes`] drops the records of sessions long unused.

use bson::{Bson, DateTime, Document, doc};
use redb::ReadableTable;

use crate::db::{ReadTxn, WriteTxn};
use crate::error::{Error, Result};
use crate::tables::RETRYABLE;

/// What a session's latest retryable write left.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryRecord {
    pub txn_number: i64,
    /// When it was written.
    pub at: DateTime,
    /// The reply the write gave.
    pub reply: Document,
}

impl RetryRecord {
    fn decode(bytes: &[u8]) -> Result<RetryRecord> {
        let corrupt = |reason: &str| Error::corrupt("a retryable write's record", reason);
        let doc = Document::from_reader(bytes).map_err(|_| corrupt("it is not a document"))?;
        match (doc.get("txnNumber"), doc.get("at"), doc.get("reply")) {
            (Some(Bson::Int64(n)), Some(Bson::DateTime(at)), Some(Bson::Document(reply))) => {
                Ok(RetryRecord {
                    txn_number: *n,
                    at: *at,
                    reply: reply.clone(),
                })
            }
            _ => Err(corrupt("a field is missing or of the wrong type")),
        }
    }
}

impl WriteTxn<'_> {
    /// The record of `session`'s latest retryable write, as this transaction sees it.
    pub fn retryable_write(&self, session: &[u8]) -> Result<Option<RetryRecord>> {
        let table = self.txn.open_table(RETRYABLE)?;
        let found = table.get(session)?;
        found.map(|v| RetryRecord::decode(v.value())).transpose()
    }

    /// Records `reply` as the result of `session`'s write number `txn_number`, replacing the
    /// session's earlier record; committed with this transaction's writes. A reply too large to
    /// store with its record (a find-and-modify's image near 16 MB) leaves no record: a retry
    /// of it then runs again, as a write without a session would.
    pub fn record_retryable_write(
        &mut self,
        session: &[u8],
        txn_number: i64,
        reply: &Document,
    ) -> Result<()> {
        let record =
            doc! { "txnNumber": txn_number, "at": DateTime::now(), "reply": reply.clone() };
        let mut bytes = Vec::new();
        let mut table = self.txn.open_table(RETRYABLE)?;
        if record.to_writer(&mut bytes).is_err() || bytes.len() > crate::MAX_DOCUMENT_SIZE * 2 {
            table.remove(session)?;
            return Ok(());
        }
        table.insert(session, bytes.as_slice())?;
        Ok(())
    }

    /// Drops the records written before `cutoff` (sessions unused since); how many.
    pub fn forget_retryable_writes(&mut self, cutoff: DateTime) -> Result<u64> {
        let mut table = self.txn.open_table(RETRYABLE)?;
        let mut stale = Vec::new();
        for row in table.iter()? {
            let (key, value) = row?;
            if RetryRecord::decode(value.value())?.at < cutoff {
                stale.push(key.value().to_vec());
            }
        }
        for key in &stale {
            table.remove(key.as_slice())?;
        }
        Ok(stale.len() as u64)
    }
}

impl ReadTxn {
    /// The record of `session`'s latest retryable write in this snapshot.
    pub fn retryable_write(&self, session: &[u8]) -> Result<Option<RetryRecord>> {
        let table = match self.txn.open_table(RETRYABLE) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(Error::from(e)),
        };
        let found = table.get(session)?;
        found.map(|v| RetryRecord::decode(v.value())).transpose()
    }
}

#[cfg(test)]
mod tests {
    use crate::Database;
    use bson::{DateTime, doc};

    #[test]
    fn a_record_commits_with_its_write_and_replaces_the_sessions_last() {
        let db = Database::in_memory().unwrap();
        let session = [7u8; 16];
        db.write(|t| {
            t.insert_one("c", doc! { "_id": 1 })?;
            t.record_retryable_write(&session, 1, &doc! { "n": 1 })
        })
        .unwrap();
        let record = db
            .read()
            .unwrap()
            .retryable_write(&session)
            .unwrap()
            .unwrap();
        assert_eq!((record.txn_number, record.reply), (1, doc! { "n": 1 }));
        // A write that fails takes its record with it.
        let failed: crate::Result<()> = db.write(|t| {
            t.record_retryable_write(&session, 2, &doc! { "n": 5 })?;
            Err(crate::Error::NestedWrite)
        });
        assert!(failed.is_err());
        let record = db
            .read()
            .unwrap()
            .retryable_write(&session)
            .unwrap()
            .unwrap();
        assert_eq!(record.txn_number, 1);
        db.write(|t| t.record_retryable_write(&session, 3, &doc! { "n": 2 }))
            .unwrap();
        let record = db
            .read()
            .unwrap()
            .retryable_write(&session)
            .unwrap()
            .unwrap();
        assert_eq!(record.txn_number, 3);
        assert!(
            db.read()
                .unwrap()
                .retryable_write(&[1u8; 16])
                .unwrap()
                .is_none()
        );
        // Forgetting drops what is older than the cutoff only.
        let past = DateTime::from_millis(0);
        assert_eq!(db.write(|t| t.forget_retryable_writes(past)).unwrap(), 0);
        let future = DateTime::from_millis(i64::MAX);
        assert_eq!(db.write(|t| t.forget_retryable_writes(future)).unwrap(), 1);
        assert!(
            db.read()
                .unwrap()
                .retryable_write(&session)
                .unwrap()
                .is_none()
        );
    }
}
