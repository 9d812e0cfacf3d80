//! The documents and index tables a write transaction keeps open between its operations.
//!
//! redb finds a table by name in its table of tables and checks its key and value types at
//! every `open_table`, about 4,000 instructions; a transaction of many small writes would open
//! the same few tables again for each. Rules:
//! - A write transaction opens its documents and index tables (every `tables::bytes` table)
//!   through its pool ([`TablePool::take`]), and an operation done with one puts it back
//!   ([`TablePool::put`]) for the next to take. A table not put back (an operation that
//!   failed part way) is simply closed, and the next take opens it again.
//! - redb refuses to open, delete or rename a table that is open: code that does any of these
//!   to such a table without the pool closes the pool's idle tables first
//!   ([`TablePool::close_all`]).
//! - The pool keeps at most [`MAX_IDLE`] idle tables; putting one more back closes the oldest.
//! - The pool is dropped, closing every idle table, before the transaction commits (redb
//!   commits only once every table is closed). `Database::write_with` makes that commit on the
//!   redb transaction it owns, once the `WriteTxn` borrowing it is gone.

use std::cell::RefCell;

use redb::{Table, TableHandle, WriteTransaction};

use crate::error::Result;
use crate::tables;

/// A documents or index table: byte keys, byte values.
pub(crate) type BytesTable<'t> = Table<'t, &'static [u8], &'static [u8]>;

/// The idle tables a pool keeps at most.
pub(crate) const MAX_IDLE: usize = 32;

/// One write transaction's idle documents and index tables.
pub(crate) struct TablePool<'t> {
    txn: &'t WriteTransaction,
    /// Oldest first.
    idle: RefCell<Vec<BytesTable<'t>>>,
}

impl<'t> TablePool<'t> {
    pub(crate) fn new(txn: &'t WriteTransaction) -> TablePool<'t> {
        TablePool {
            txn,
            idle: RefCell::new(Vec::new()),
        }
    }

    /// The transaction the tables belong to.
    pub(crate) fn txn(&self) -> &'t WriteTransaction {
        self.txn
    }

    /// The table `name`: the idle one, or opened (and created if needed).
    pub(crate) fn take(&self, name: &str) -> Result<BytesTable<'t>> {
        let mut idle = self.idle.borrow_mut();
        if let Some(at) = idle.iter().position(|t| t.name() == name) {
            return Ok(idle.remove(at));
        }
        drop(idle);
        Ok(self.txn.open_table(tables::bytes(name))?)
    }

    /// Keeps `table` open for the next [`TablePool::take`].
    pub(crate) fn put(&self, table: BytesTable<'t>) {
        let mut idle = self.idle.borrow_mut();
        if idle.len() >= MAX_IDLE {
            idle.remove(0);
        }
        idle.push(table);
    }

    /// Runs `f` on the table `name` (opened, and created, if needed) and keeps it idle after.
    pub(crate) fn with<R>(
        &self,
        name: &str,
        f: impl FnOnce(&BytesTable<'t>) -> Result<R>,
    ) -> Result<R> {
        let table = self.take(name)?;
        let out = f(&table);
        self.put(table);
        out
    }

    /// Closes every idle table.
    pub(crate) fn close_all(&self) {
        self.idle.borrow_mut().clear();
    }

    /// The idle tables' names, oldest first.
    #[cfg(test)]
    pub(crate) fn idle_names(&self) -> Vec<String> {
        self.idle
            .borrow()
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::MAX_IDLE;
    use crate::tables::docs_name;
    use crate::{Database, IndexSpec};

    #[test]
    fn operations_of_a_transaction_take_the_tables_the_last_one_put_back() {
        let db = Database::in_memory().unwrap();
        db.collection("c")
            .create_index(IndexSpec::ascending("x").unwrap())
            .unwrap();
        db.write(|w| {
            let docs = docs_name(w.catalog.get("c").unwrap().id);
            w.insert_one("c", doc! {"_id": 1, "x": 1})?;
            assert_eq!(w.tables.idle_names(), std::slice::from_ref(&docs));
            w.insert_one("c", doc! {"_id": 2, "x": 2})?;
            assert_eq!(
                w.tables.idle_names(),
                std::slice::from_ref(&docs),
                "taken and put back"
            );
            // An update through the index reads it: its two tables join the pool.
            w.update_one(
                "c",
                &doc! {"x": 2},
                doc! {"$set": {"y": 1}},
                &crate::update::UpdateOptions::default(),
            )?;
            let idle = w.tables.idle_names();
            assert_eq!(idle.len(), 3, "{idle:?}");
            assert!(idle.contains(&docs));
            Ok::<(), crate::Error>(())
        })
        .unwrap();
        assert!(db.verify().unwrap().is_clean());
    }

    #[test]
    fn the_pool_keeps_the_latest_idle_tables_up_to_its_bound() {
        let db = Database::in_memory().unwrap();
        let names: Vec<String> = (0..MAX_IDLE + 8).map(|i| format!("c{i}")).collect();
        db.write(|w| {
            for name in &names {
                w.insert_one(name, doc! {"_id": 1})?;
            }
            let latest: Vec<String> = names[8..]
                .iter()
                .map(|n| docs_name(w.catalog.get(n).unwrap().id))
                .collect();
            assert_eq!(w.tables.idle_names(), latest);
            // The oldest were closed, and open again when taken.
            w.insert_one(&names[0], doc! {"_id": 2})?;
            Ok::<(), crate::Error>(())
        })
        .unwrap();
        let snapshot = db.read().unwrap();
        for name in &names {
            let n = snapshot.collection(name).unwrap().unwrap().len().unwrap();
            assert_eq!(n, if name == &names[0] { 2 } else { 1 });
        }
    }
}
