//! The async API (`odm::aio`) on the back end `odm::testing::database()` chooses (the engine,
//! or MongoDB through `tests/wire/backends.sh`), on tokio's multi-thread and current-thread
//! runtimes: every kind of operation, streams read ahead and dropped, transactions committed,
//! aborted and retried, change streams, cancellation and panics.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use odm::aio::{Count, Database, Query, Subscribe};
use odm::{Document, Filter, ModifyOptions, Sort, WriteModel};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "notes")]
struct Note {
    #[odm(id)]
    id: i64,
    text: String,
    #[odm(index)]
    n: i64,
}

fn note(id: i64, text: &str) -> Note {
    Note {
        id,
        text: text.into(),
        n: id % 10,
    }
}

/// An enum model of two variants in one collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "shapes")]
struct Circle {
    #[odm(id)]
    id: i64,
    r: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "shapes")]
struct Square {
    #[odm(id)]
    id: i64,
    side: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "shapes")]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Shape {
    Circle(Circle),
    Square(Square),
}

/// A fresh database on the chosen back end; on MongoDB, with a client of the test's runtime.
async fn database() -> Database {
    odm::testing::aio_database().await.expect("a database")
}

/// Tests that open streams run one at a time: one of them counts reader threads.
static READERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How many of this process's threads are stream readers.
fn reader_threads() -> usize {
    threads_named("odm-reader")
}

/// How many of this process's threads have the name `name`.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |tasks| {
        tasks
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim() == name)
            .count()
    })
}

/// Waits (a bounded time) until no stream reader runs; whether it came to that.
async fn readers_stop() -> bool {
    for _ in 0..100 {
        if reader_threads() == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn crud() -> odm::Result<()> {
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    let f = Note::fields();
    assert_eq!(
        notes.insert_one(note(1, "one")).await?,
        bson::Bson::Int64(1)
    );
    notes
        .insert_many((2..=20).map(|id| note(id, "many")).collect())
        .await?;
    assert_eq!(notes.get(1).await?, Some(note(1, "one")));
    assert_eq!(notes.count(f.n.eq(3)).await?, 2);
    assert_eq!(notes.distinct(&f.text, Filter::all()).await?.len(), 2);
    let updated = notes.update_many(f.n.eq(0), f.text.set("tens")).await?;
    assert_eq!(updated.modified, 2);
    let page = notes
        .find(f.n.eq(0))
        .sort(Sort::desc(&f.id))
        .fetch_all()
        .await?;
    assert_eq!(page.iter().map(|n| n.id).collect::<Vec<_>>(), [20, 10]);
    assert_eq!(
        notes
            .find(f.id.gt(18))
            .sort(Sort::asc(&f.id))
            .fetch_one()
            .await?
            .map(|n| n.id),
        Some(19)
    );
    let before = notes
        .find_one_and_update(f.id.eq(1), f.text.set("uno"), ModifyOptions::default())
        .await?;
    assert_eq!(before.map(|n| n.text).as_deref(), Some("one"));
    let (saved, _) = notes.save(note(1, "saved")).await?;
    assert_eq!(saved.text, "saved");
    notes.replace_one(f.id.eq(2), note(2, "two")).await?;
    assert_eq!(
        notes.find_one(f.id.eq(2)).await?.map(|n| n.text).as_deref(),
        Some("two")
    );
    let bulk = notes
        .bulk_write(
            vec![
                WriteModel::InsertOne(note(21, "bulk")),
                WriteModel::DeleteMany(f.id.lt(3)),
            ],
            true,
        )
        .await?;
    assert_eq!((bulk.inserted, bulk.deleted), (1, 2));
    let total = notes
        .aggregate()
        .filter(f.text.eq("many"))
        .fetch_all()
        .await?
        .len();
    assert_eq!(total, 16);
    let counted = notes
        .aggregate()
        .filter(f.text.eq("many"))
        .fetch_count()
        .await?;
    assert_eq!(counted, 16);
    let explain = notes.find(f.n.eq(4)).fetch_explain().await?;
    assert_eq!(explain.index_used(), Some("n_1"), "{explain}");
    assert_eq!(explain.returned, 2);
    let explain = notes.aggregate().filter(f.n.eq(4)).fetch_explain().await?;
    let head = explain.cursor.expect("the pipeline's head is a find");
    assert_eq!(head.index_used(), Some("n_1"), "{head}");
    assert_eq!(notes.delete_one(f.id.eq(21)).await?, 1);
    assert_eq!(notes.delete_many(Filter::all()).await?, 18);
    assert!(db.collection_names().await?.contains(&"notes".to_owned()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_on_the_multi_thread_runtime() -> odm::Result<()> {
    crud().await
}

#[tokio::test(flavor = "current_thread")]
async fn every_operation_on_the_current_thread_runtime() -> odm::Result<()> {
    crud().await
}

#[tokio::test(flavor = "current_thread")]
async fn a_stream_reads_every_match_in_order_from_its_snapshot() -> odm::Result<()> {
    let _one = READERS.lock().await;
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    let f = Note::fields();
    notes
        .insert_many((0..1000).map(|id| note(id, "x")).collect())
        .await?;
    let mut stream = notes
        .find(Filter::all())
        .sort(Sort::asc(&f.id))
        .stream()
        .await?;
    // Written after the stream opened: not in its snapshot (on the engine).
    notes.insert_one(note(5000, "late")).await?;
    let mut expected = 0;
    while let Some(n) = stream.next().await {
        let n = n?;
        if n.id == 5000 {
            assert!(
                odm::testing::remote(),
                "a write after the snapshot was seen"
            );
            continue;
        }
        assert_eq!(n.id, expected);
        expected += 1;
    }
    assert_eq!(expected, 1000);
    let grouped = notes
        .aggregate()
        .filter(f.id.lt(1000))
        .sort(Sort::desc(&f.id))
        .stream()
        .await?
        .try_collect()
        .await?;
    assert_eq!(grouped.len(), 1000);
    assert_eq!(grouped[0].id, 999);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_stream_stops_its_reader() -> odm::Result<()> {
    let _one = READERS.lock().await;
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    notes
        .insert_many((0..5000).map(|id| note(id, "x")).collect())
        .await?;
    let mut stream = notes.find(Filter::all()).stream().await?;
    for _ in 0..3 {
        stream.next().await.expect("a match")?;
    }
    assert_eq!(reader_threads(), 1, "one reader fills the stream");
    drop(stream);
    assert!(readers_stop().await, "the reader outlived its stream");
    // So does a change stream's, waiting for events that never come.
    let events = notes.watch().stream().await?;
    assert_eq!(reader_threads(), 1);
    drop(events);
    assert!(
        readers_stop().await,
        "the change stream's reader outlived it"
    );
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_bad_query_fails_and_ends_the_stream() -> odm::Result<()> {
    let _one = READERS.lock().await;
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    notes.insert_one(note(1, "one")).await?;
    let bad = notes
        .aggregate()
        .stage(bson::doc! { "$nosuchstage": {} })
        .stream()
        .await;
    // Refused when the stream opens (MongoDB's reply to `aggregate`) or as its one item (the
    // engine parses the pipeline where it runs it), as the sync cursor does.
    let refusal = match bad {
        Ok(mut stream) => {
            let first = stream.next().await.expect("an item");
            assert!(stream.next().await.is_none(), "the error ends the stream");
            first.expect_err("an unknown stage")
        }
        Err(e) => e,
    };
    assert_eq!(refusal.code(), Some(40324), "unknown stage: {refusal}");
    Ok(())
}

/// A stream that cannot open (a resume token that is not one) fails where it is opened, and
/// leaves no reader behind.
#[tokio::test(flavor = "current_thread")]
async fn a_stream_that_cannot_open_fails_at_open() -> odm::Result<()> {
    let _one = READERS.lock().await;
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    let token = odm::ResumeToken::from_document(bson::doc! { "_data": "not a token" });
    let opened = notes.watch().resume_after(token).stream().await;
    assert!(opened.is_err(), "a malformed token is refused");
    assert!(
        readers_stop().await,
        "the reader of a stream that did not open ended"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_commits_on_ok_and_aborts_on_err() -> odm::Result<()> {
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    let f = Note::fields();
    notes.insert_one(note(1, "one")).await?;
    let kept = Arc::new(Mutex::new(None));
    let keep = Arc::clone(&kept);
    let n = db
        .transaction(move |txn| {
            *keep.lock().unwrap() = Some(txn.clone());
            async move {
                txn.insert_one(note(2, "two")).await?;
                txn.update_one(Note::fields().id.eq(1), Note::fields().text.set("uno"))
                    .await?;
                // The transaction sees its own writes.
                let seen = txn.find::<Note>(Filter::all()).await?;
                Ok(seen.len())
            }
        })
        .await?;
    assert_eq!(n, 2);
    assert_eq!(notes.get(1).await?.map(|n| n.text).as_deref(), Some("uno"));
    let late = kept.lock().unwrap().take().expect("kept");
    assert!(matches!(
        late.insert_one(note(9, "late")).await,
        Err(odm::Error::TransactionEnded)
    ));
    let failed: odm::Result<()> = db
        .transaction(|txn| async move {
            txn.delete_many::<Note>(Filter::all()).await?;
            txn.insert_one(note(1, "duplicate")).await?;
            txn.insert_one(note(1, "duplicate")).await?;
            Ok(())
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(
        notes.count(Filter::all()).await?,
        2,
        "the aborted delete stands undone"
    );
    assert_eq!(notes.count(f.id.eq(9)).await?, 0);
    Ok(())
}

/// 16 tasks each add one to a counter read in their transaction: no update is lost, because
/// a conflicting transaction waits (the engine) or fails transiently and runs again (MongoDB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_lose_no_update() -> odm::Result<()> {
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    notes.insert_one(note(1, "0")).await?;
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            db.transaction(|txn| async move {
                let counter = txn.get::<Note>(1).await?.expect("the counter");
                let next = counter.text.parse::<i64>().expect("a number") + 1;
                txn.replace_one(Note::fields().id.eq(1), note(1, &next.to_string()))
                    .await?;
                Ok(())
            })
            .await
        }));
    }
    for task in tasks {
        task.await.expect("no panic")?;
    }
    assert_eq!(notes.get(1).await?.map(|n| n.text).as_deref(), Some("16"));
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_change_stream_yields_typed_events_as_they_commit() -> odm::Result<()> {
    let _one = READERS.lock().await;
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    let f = Note::fields();
    let mut events = notes.watch().matching(f.n.eq(1)).stream().await?;
    notes.insert_one(note(1, "one")).await?;
    notes.insert_one(note(2, "two")).await?;
    notes.insert_one(note(11, "eleven")).await?;
    for expected in [1, 11] {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("an event within 10 s")
            .expect("the stream goes on")?;
        assert_eq!(event.full_document.map(|n| n.id), Some(expected));
    }
    Ok(())
}

/// An operation whose future is dropped before a worker takes it never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_operation_that_has_not_started_does_not_run() -> odm::Result<()> {
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    // Every worker busy until told.
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let wait = Arc::new(Mutex::new(wait));
    let mut busy = Vec::new();
    for _ in 0..odm::aio::pool_size() {
        let (db, wait) = (db.clone(), Arc::clone(&wait));
        busy.push(tokio::spawn(async move {
            db.run(move |_| {
                let _ = wait.lock().unwrap().recv();
                Ok(())
            })
            .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let queued = tokio::spawn({
        let notes = notes.clone();
        async move { notes.insert_one(note(7, "never")).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    queued.abort();
    assert!(queued.await.is_err(), "cancelled");
    for _ in 0..odm::aio::pool_size() {
        release.send(()).expect("a worker waits");
    }
    for task in busy {
        task.await.expect("no panic")?;
    }
    assert_eq!(notes.get(7).await?, None);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_panic_in_the_work_goes_on_in_the_caller() {
    let db = database().await;
    let caught = tokio::spawn(async move {
        db.run(|_| -> odm::Result<()> { panic!("the work's own panic") })
            .await
    })
    .await;
    assert!(caught.is_err_and(|e| e.is_panic()));
}

/// Reads longer than the slice they first get on the caller's thread run again on a worker and
/// answer whole; a read's own time limit is the caller's and is kept.
#[tokio::test(flavor = "current_thread")]
async fn long_reads_answer_whole_and_their_own_time_limit_holds() -> odm::Result<()> {
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    let f = Note::fields();
    notes
        .insert_many((0..20_000).map(|id| note(id, "x")).collect())
        .await?;
    // Not indexed: every document is read, far longer than the slice.
    let all = notes.find(f.text.eq("x")).fetch_all().await?;
    assert_eq!(all.len(), 20_000);
    assert_eq!(notes.count(f.text.eq("x")).await?, 20_000);
    let sum = notes
        .aggregate()
        .filter(f.text.eq("x"))
        .fetch_all()
        .await?
        .iter()
        .map(|n| n.n)
        .sum::<i64>();
    assert_eq!(sum, 2_000 * 45);
    let late = notes
        .find(f.text.eq("x"))
        .sort(Sort::desc(&f.text))
        .max_time(Duration::from_nanos(1))
        .fetch_all()
        .await;
    assert!(
        late.is_err_and(|e| e.code() == Some(50)),
        "MaxTimeMSExpired"
    );
    Ok(())
}

/// A transaction whose future is dropped midway is aborted: its writes are gone, and the next
/// writer gets its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_transaction_is_aborted() -> odm::Result<()> {
    let db = database().await;
    let notes = db.collection::<Note>().await?;
    let stalled = tokio::time::timeout(
        Duration::from_millis(300),
        db.transaction(|txn| async move {
            txn.insert_one(note(1, "never committed")).await?;
            std::future::pending::<()>().await;
            Ok(())
        }),
    )
    .await;
    assert!(stalled.is_err(), "the transaction never ends by itself");
    notes.insert_one(note(2, "after")).await?;
    assert_eq!(notes.get(1).await?, None);
    assert_eq!(notes.count(Filter::all()).await?, 1);
    Ok(())
}

/// An insert that may start on the task's thread (eventual durability: see
/// `odm::aio::INLINE_SLICE`) does not hold that thread while another transaction has the
/// writer's turn: on a current-thread runtime another task runs meanwhile (here, the one
/// that ends the transaction), and the insert completes after it.
#[tokio::test(flavor = "current_thread")]
async fn an_insert_behind_a_busy_writer_leaves_the_tasks_thread_free() -> odm::Result<()> {
    let db = database().await;
    let notes = db
        .collection::<Note>()
        .await?
        .with_durability(odm::Durability::Eventual);
    // The first insert syncs the collection; later ones may start inline.
    notes.insert_one(note(1, "first")).await?;
    let (began, wait_began) = tokio::sync::oneshot::channel();
    let (finish, wait_finish) = std::sync::mpsc::channel::<()>();
    let writer = {
        let db = db.blocking().clone();
        std::thread::spawn(move || {
            db.write(|txn| {
                txn.insert_one(&note(2, "held"))?;
                let _ = began.send(());
                // Told to finish by the runtime's one thread, which must stay free; a
                // thread held by the insert would never tell, and this gives up.
                Ok(wait_finish.recv_timeout(Duration::from_secs(10)).is_ok())
            })
        })
    };
    wait_began.await.expect("the writer began");
    let insert = tokio::spawn({
        let notes = notes.clone();
        async move { notes.insert_one(note(3, "after")).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    if db.blocking().engine().is_some() {
        assert!(
            !insert.is_finished(),
            "the insert waits for the writer's turn"
        );
    }
    finish.send(()).expect("the writer waits");
    assert_eq!(insert.await.expect("no panic")?, bson::Bson::Int64(3));
    let told = tokio::task::spawn_blocking(move || writer.join().expect("no panic"))
        .await
        .expect("no panic")?;
    assert!(
        told,
        "the runtime's thread was free while the insert waited"
    );
    assert_eq!(notes.count(Filter::all()).await?, 3);
    Ok(())
}

/// An enum model's variant through the async API: writes, reads and finds (fetched,
/// streamed, explained) see only its own documents, decoded as the variant.
#[tokio::test(flavor = "current_thread")]
async fn a_variant_of_an_enum_model_reads_and_writes_its_own_documents() -> odm::Result<()> {
    let db = database().await;
    let shapes = db.collection::<Shape>().await?;
    let circles = shapes.variant::<Circle>();
    let squares = shapes.variant::<Square>();
    for id in 1..=6 {
        circles.insert_one(Circle { id, r: id as f64 }).await?;
        squares
            .insert_one(Square {
                id: 100 + id,
                side: 1.0,
            })
            .await?;
    }
    let c = Shape::fields().circle;
    assert_eq!(circles.count(Filter::all()).await?, 6);
    assert_eq!(shapes.count(Filter::all()).await?, 12);
    let big: Vec<Circle> = circles
        .find(c.r.gte(4.0))
        .sort(Sort::asc(&c.r))
        .fetch_all()
        .await?;
    assert_eq!(big.iter().map(|c| c.id).collect::<Vec<_>>(), [4, 5, 6]);
    let streamed = circles
        .find(Filter::all())
        .stream()
        .await?
        .try_collect()
        .await?;
    assert_eq!(streamed.len(), 6);
    assert_eq!(
        circles.find(c.r.eq(2.0)).fetch_one().await?,
        Some(Circle { id: 2, r: 2.0 })
    );
    assert_eq!(
        circles.find(Filter::all()).fetch_explain().await?.returned,
        6
    );
    circles.update_many(c.r.lt(3.0), c.r.set(0.5)).await?;
    assert_eq!(circles.count(c.r.eq(0.5)).await?, 2);
    let gone = circles
        .find_one_and_delete(c.id.eq(6), ModifyOptions::default())
        .await?;
    assert_eq!(gone, Some(Circle { id: 6, r: 6.0 }));
    assert_eq!(circles.delete_many(Filter::all()).await?, 5);
    assert_eq!(squares.count(Filter::all()).await?, 6, "the squares stay");
    assert_eq!(squares.aggregate().fetch_count().await?, 6);
    Ok(())
}

/// The sync API over a database the async API connected, called on the thread of the
/// current-thread runtime it was connected on: on MongoDB the driver's client needs that very
/// thread, so the call is refused at once instead of waiting forever; on the engine it runs.
/// Run on a worker, it works on both back ends, and no runtime of the project's has started
/// for the async API's client.
#[tokio::test(flavor = "current_thread")]
async fn the_sync_api_on_its_clients_current_thread_runtime_is_refused_not_deadlocked()
-> odm::Result<()> {
    let db = database().await;
    db.collection::<Note>().await?;
    let here = db.blocking().collection_names();
    if odm::testing::remote() {
        assert!(
            matches!(here, Err(odm::Error::SyncCallInRuntime)),
            "{here:?}"
        );
        assert_eq!(
            threads_named("odm-mongodb"),
            0,
            "the async API's client runs on the caller's runtime"
        );
    } else {
        assert_eq!(here?, ["notes"]);
    }
    let on_worker = db.run(odm::Database::collection_names).await?;
    assert_eq!(on_worker, ["notes"]);
    Ok(())
}

/// The async API's MongoDB back end runs the driver on the caller's tokio runtime; polled
/// outside one (another executor), connecting fails at once with an error saying so, before
/// any network work, instead of a panic inside the driver.
#[test]
fn connecting_outside_a_tokio_runtime_is_refused_with_the_reason() {
    use std::future::Future;
    let mut connect = std::pin::pin!(Database::connect("mongodb://127.0.0.1:1/app"));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match connect.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Err(odm::Error::Driver { reason, .. })) => {
            assert!(reason.contains("tokio runtime"), "{reason}");
        }
        other => panic!("expected the refusal at the first poll, got {other:?}"),
    }
}
