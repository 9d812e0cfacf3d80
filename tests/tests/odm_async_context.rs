//! The sync API called from async code, as a web handler or a `#[tokio::test]` calls it, on
//! the back end `odm::testing::database()` chooses. Blocking on a runtime from a thread that
//! runs one is what tokio refuses ("Cannot start a runtime from within a runtime"); the typed
//! API works there on both back ends, on tokio's current-thread and multi-threaded runtimes
//! and in spawned tasks: connecting, writes, reads, a streamed cursor, a transaction, a change
//! stream, dropping it all.

use std::time::Duration;

use odm::{Document, Filter};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "notes")]
struct Note {
    #[odm(id)]
    id: i64,
    text: String,
}

fn note(id: i64, text: &str) -> Note {
    Note {
        id,
        text: text.into(),
    }
}

/// Every kind of call the typed API makes of its back end.
fn exercise() -> odm::Result<()> {
    let db = odm::testing::database()?;
    let notes = db.collection::<Note>()?;
    let mut stream = notes.watch().open()?;
    notes.insert_many(&[note(1, "one"), note(2, "two")])?;
    let f = Note::fields();
    notes.update_one(f.id.eq(2), f.text.set("deux"))?;
    db.write(|txn| txn.insert_one(&note(3, "three")).map(drop))?;
    let streamed: Vec<i64> = notes
        .find(Filter::all())
        .sort(odm::Sort::asc(&f.id))
        .iter()?
        .map(|n| n.map(|n| n.id))
        .collect::<odm::Result<_>>()?;
    assert_eq!(streamed, [1, 2, 3]);
    assert_eq!(notes.get(2)?.map(|n| n.text).as_deref(), Some("deux"));
    assert_eq!(notes.aggregate().filter(f.id.gte(2)).count()?, 2);
    let first = stream.next_timeout(Duration::from_secs(10))?;
    assert_eq!(first.and_then(|e| e.full_document), Some(note(1, "one")));
    // A stream longer than what one call on the driver reads ahead, in order.
    let many: Vec<Note> = (10..710).map(|id| note(id, "many")).collect();
    notes.insert_many(&many)?;
    let mut ids = notes
        .find(f.id.gte(10))
        .sort(odm::Sort::asc(&f.id))
        .iter()?;
    for expected in 10..710 {
        assert_eq!(ids.next().transpose()?.map(|n| n.id), Some(expected));
    }
    assert!(ids.next().is_none());
    notes.delete_many(Filter::all())?;
    drop(stream);
    drop(db);
    Ok(())
}

#[test]
fn the_sync_api_works_inside_a_current_thread_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { exercise() }).unwrap();
}

#[test]
fn the_sync_api_works_in_a_task_of_a_multi_threaded_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let task = runtime.spawn(async { exercise() });
    runtime.block_on(task).unwrap().unwrap();
}
