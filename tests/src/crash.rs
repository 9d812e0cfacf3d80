//! The workload of the crash test, shared by the writer binary and the test that checks it.
//!
//! Transaction `n` (n = 1, 2, ...) inserts document `n` into collections `a` and `b`, deletes
//! document `n - 3` from both when `n` is a multiple of 5, and sets the counter document to `n`,
//! all in one write transaction with immediate durability. So the committed state after `n`
//! transactions is a pure function of `n`, which the checker recomputes.

use std::collections::BTreeSet;

use bson::{Bson, Document, doc};
use odm_engine::{Database, Direction, Error, IndexSpec};

pub const COUNTER: &str = "meta";

/// The ids present in `a` (and `b`) after transactions `1..=n`.
pub fn expected_ids(n: i64) -> BTreeSet<i64> {
    let mut ids = BTreeSet::new();
    for t in 1..=n {
        ids.insert(t);
        if t % 5 == 0 {
            ids.remove(&(t - 3));
        }
    }
    ids
}

pub fn create_indexes(db: &Database) -> Result<(), Error> {
    for name in ["a", "b"] {
        let c = db.collection(name);
        c.create_index(IndexSpec::ascending("k")?.unique())?;
        c.create_index(IndexSpec::new([
            ("tags", Direction::Ascending),
            ("n", Direction::Descending),
        ])?)?;
    }
    Ok(())
}

/// The last committed transaction number, from the counter document.
pub fn committed(db: &Database) -> Result<i64, Error> {
    let txn = db.read()?;
    let Some(meta) = txn.collection(COUNTER)? else {
        return Ok(0);
    };
    let Some(counter) = meta.get(&Bson::from("counter"))? else {
        return Ok(0);
    };
    Ok(counter.decode::<Document>()?.get_i64("n").unwrap_or(0))
}

fn document(n: i64) -> Document {
    let padding = "x".repeat((n % 200) as usize);
    doc! { "_id": n, "k": n, "n": n, "tags": [n % 7, n % 11, "t"], "padding": padding }
}

/// Runs transaction `n`.
pub fn step(db: &Database, n: i64) -> Result<(), Error> {
    db.write(|t| {
        t.insert_one("a", document(n))?;
        t.insert_one("b", document(n))?;
        if n % 5 == 0 {
            t.delete_by_id("a", &Bson::Int64(n - 3))?;
            t.delete_by_id("b", &Bson::Int64(n - 3))?;
        }
        let counter = doc! { "_id": "counter", "n": n };
        if t.replace_by_id(COUNTER, &Bson::from("counter"), counter.clone())?
            .is_none()
        {
            t.insert_one(COUNTER, counter)?;
        }
        Ok(())
    })
}

/// The ids stored in a collection.
pub fn stored_ids(db: &Database, collection: &str) -> Result<BTreeSet<i64>, Error> {
    let txn = db.read()?;
    let Some(c) = txn.collection(collection)? else {
        return Ok(BTreeSet::new());
    };
    let mut ids = BTreeSet::new();
    for d in c.scan()? {
        ids.insert(d?.decode::<Document>()?.get_i64("_id").unwrap_or(-1));
    }
    Ok(ids)
}
