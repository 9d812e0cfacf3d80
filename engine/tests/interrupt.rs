//! Stopping work (see `odm_engine::interrupt`): a deadline or a kill stops a sort, a group and
//! an expression loop in the middle, a find at its next pull, and a write with nothing written.

use std::time::{Duration, Instant};

use bson::{Document, doc};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::interrupt::{CHECK_EVERY, Interrupt};
use odm_engine::query::FindOptions;
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, Error, ErrorCode};

/// 20 documents, each holding an array of 5,000 numbers: fewer documents scanned than
/// [`CHECK_EVERY`] become a hundred thousand once unwound, so that the work happens in the
/// stage after `$unwind` and the scan alone never looks at the clock.
fn arrays() -> Database {
    const { assert!(20 < CHECK_EVERY) };
    let db = Database::in_memory().unwrap();
    db.write(|t| {
        for i in 0..20 {
            let values: Vec<i32> = (0..5000).map(|v| (v * 7919 + i) % 1000).collect();
            t.insert_one("c", doc! {"_id": i, "a": values})?;
        }
        Ok::<_, Error>(())
    })
    .unwrap();
    db
}

/// Runs `pipeline` over `c` under a deadline `limit` away; the error and how long after the
/// deadline it came.
fn expired(db: &Database, pipeline: &[Document], limit: Duration) -> (Error, Duration) {
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let options = AggregateOptions {
        interrupt: Some(Interrupt::within(Some(limit))),
        ..AggregateOptions::default()
    };
    let started = Instant::now();
    let e = c.aggregate(pipeline, &options).unwrap_err();
    (e, started.elapsed().saturating_sub(limit))
}

/// How long `pipeline` takes without a limit.
fn unlimited(db: &Database, pipeline: &[Document]) -> Duration {
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let started = Instant::now();
    c.aggregate(pipeline, &AggregateOptions::default()).unwrap();
    started.elapsed()
}

/// A pipeline whose blocking stage `last` takes its input from `$unwind` of stored arrays,
/// each unwound document carrying a computed payload: the scan ends early and the time goes
/// into the stage, which must stop by itself.
fn through_unwind(last: Document) -> Vec<Document> {
    vec![
        doc! {"$unwind": "$a"},
        doc! {"$addFields": {"pad": {"$concat": ["x", {"$toString": "$a"}]}}},
        last,
    ]
}

fn assert_stops_in_the_stage(last: Document) {
    let db = arrays();
    let pipeline = through_unwind(last);
    let whole = unlimited(&db, &pipeline);
    let limit = whole / 10;
    let (e, late) = expired(&db, &pipeline, limit);
    assert!(matches!(e, Error::TimeLimitExceeded), "{e}");
    assert_eq!(e.error_code(), ErrorCode::MAX_TIME_MS_EXPIRED);
    assert_eq!(e.to_string(), "operation exceeded time limit");
    eprintln!("stopped {late:?} after the deadline; unlimited, {whole:?}");
    assert!(
        late < whole / 4,
        "stopped {late:?} after a deadline {limit:?} away, the whole takes {whole:?}"
    );
}

#[test]
fn a_sort_stops_at_its_deadline() {
    assert_stops_in_the_stage(doc! {"$sort": {"pad": 1, "a": -1}});
}

#[test]
fn a_group_stops_at_its_deadline() {
    assert_stops_in_the_stage(
        doc! {"$group": {"_id": "$a", "n": {"$sum": 1}, "p": {"$addToSet": "$pad"}}},
    );
}

#[test]
fn an_expression_loop_stops_at_its_deadline_and_a_kill_stops_it_too() {
    let db = Database::in_memory().unwrap();
    db.write(|t| t.insert_one("c", doc! {"_id": 1}).map(drop))
        .unwrap();
    // One document, one expression of minutes: only the loops inside it can stop.
    let pipeline = [doc! {"$project": {"v": {"$reduce": {
    "input": {"$range": [0, 1_000_000]}, "initialValue": 0,
    "in": {"$add": ["$$value", {"$size": {"$map": {"input": {"$range": [0, 1000]}, "in": "$$this"}}}]}}}}}];
    let (e, late) = expired(&db, &pipeline, Duration::from_millis(50));
    assert!(matches!(e, Error::TimeLimitExceeded), "{e}");
    assert!(late < Duration::from_secs(1), "{late:?}");

    let interrupt = Interrupt::new();
    let killer = interrupt.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        killer.kill();
    });
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let options = AggregateOptions {
        interrupt: Some(interrupt),
        ..AggregateOptions::default()
    };
    let e = c.aggregate(&pipeline, &options).unwrap_err();
    assert!(matches!(e, Error::Interrupted), "{e}");
    assert_eq!(e.code(), 11601);
    assert_eq!(e.code_name(), "Interrupted");
}

#[test]
fn a_find_stops_at_its_next_pull_once_past_its_deadline() {
    let db = arrays();
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let options = FindOptions {
        interrupt: Some(Interrupt::within(Some(Duration::from_millis(30)))),
        ..FindOptions::default()
    };
    let mut cursor = c.find(&doc! {}, &options).unwrap();
    assert!(cursor.next().unwrap().is_ok(), "within the limit");
    std::thread::sleep(Duration::from_millis(40));
    assert!(matches!(cursor.next(), Some(Err(Error::TimeLimitExceeded))));
    assert!(cursor.next().is_none(), "nothing after the error");
}

#[test]
fn a_write_stopped_by_its_deadline_writes_nothing() {
    let db = arrays();
    let slow = doc! {"$expr": {"$gt": [{"$size": {"$map": {"input": {"$range": [0, 200_000]}, "in": "$$this"}}}, 0]}};
    let e = db
        .write(|t| {
            t.update_many(
                "c",
                &doc! {},
                doc! {"$set": {"first": true}},
                &UpdateOptions::default(),
            )?;
            let _entered = Interrupt::within(Some(Duration::from_millis(50))).enter();
            t.delete_many("c", &slow)
        })
        .unwrap_err();
    assert!(matches!(e, Error::TimeLimitExceeded), "{e}");
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    assert_eq!(c.count_matching(&doc! {}, 0, 0).unwrap(), 20);
    assert_eq!(c.count_matching(&doc! {"first": true}, 0, 0).unwrap(), 0);
}

#[test]
fn a_find_inside_a_write_transaction_runs_under_its_options_interrupt() {
    let db = arrays();
    let slow = doc! {"$expr": {"$gt": [{"$size": {"$map": {"input": {"$range": [0, 200_000]}, "in": "$$this"}}}, 0]}};
    let options = FindOptions {
        interrupt: Some(Interrupt::within(Some(Duration::from_millis(50)))),
        ..FindOptions::default()
    };
    let started = Instant::now();
    let e = db.write(|t| t.find_with("c", &slow, &options)).unwrap_err();
    assert!(matches!(e, Error::TimeLimitExceeded), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// A write waiting for the database's one writer stops at its deadline or its kill, having
/// written nothing, while the writer ahead of it goes on and commits.
#[test]
fn a_write_waiting_for_the_writer_stops_at_its_deadline_and_its_kill() {
    let db = std::sync::Arc::new(Database::in_memory().unwrap());
    let (inside, release) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
    let ahead = {
        let db = db.clone();
        let (inside, release) = (inside.0, release.1);
        std::thread::spawn(move || {
            db.write(|t| {
                t.insert_one("c", doc! {"_id": "ahead"})?;
                inside.send(()).unwrap();
                release.recv().unwrap();
                Ok::<_, Error>(())
            })
        })
    };
    inside.1.recv().unwrap();
    let waiting = |interrupt: Interrupt, id: &'static str| {
        let db = db.clone();
        std::thread::spawn(move || {
            let _entered = interrupt.enter();
            let started = Instant::now();
            let outcome = db.write(|t| t.insert_one("c", doc! {"_id": id}).map(drop));
            (outcome, started.elapsed())
        })
    };
    let (outcome, waited) = waiting(Interrupt::within(Some(Duration::from_millis(100))), "late")
        .join()
        .unwrap();
    assert!(
        matches!(outcome, Err(Error::TimeLimitExceeded)),
        "{outcome:?}"
    );
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    let kill = Interrupt::new();
    let killed = waiting(kill.clone(), "killed");
    std::thread::sleep(Duration::from_millis(50));
    kill.kill();
    let (outcome, _) = killed.join().unwrap();
    assert_eq!(outcome.unwrap_err().code(), ErrorCode::INTERRUPTED.code);
    release.0.send(()).unwrap();
    ahead.join().unwrap().unwrap();
    let txn = db.read().unwrap();
    let ids: Vec<Document> = txn
        .collection("c")
        .unwrap()
        .unwrap()
        .find(&doc! {}, &FindOptions::default())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        ids,
        vec![doc! {"_id": "ahead"}],
        "the stopped writes wrote nothing"
    );
}
