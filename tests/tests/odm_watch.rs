//! Typed change streams (`Collection::watch`, `Database::watch`) on the back end the
//! environment chooses (see `odm::testing`): typed events and filters, the non-blocking poll
//! and the wait with a timeout, resume tokens passed back, invalidate and `start_after`, and
//! the iterator.

use std::time::Duration;

use odm::{ChangeEvent, Document, Events, FullDocument, OperationType, ResumeToken};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "orders")]
struct Order {
    #[odm(id)]
    id: i64,
    customer: String,
    state: String,
    total: i64,
}

fn order(id: i64, customer: &str, total: i64) -> Order {
    Order {
        id,
        customer: customer.into(),
        state: "new".into(),
        total,
    }
}

/// The next event, waiting up to 10 s.
fn next(stream: &mut odm::ChangeStream<Order>) -> ChangeEvent<Order> {
    stream
        .next_timeout(Duration::from_secs(10))
        .unwrap()
        .expect("an event arrives")
}

#[test]
fn typed_events_of_every_write() {
    let db = odm::testing::database().unwrap();
    let orders = db.collection::<Order>().unwrap();
    let o = Order::fields();
    let mut stream = orders.watch().open().unwrap();
    assert!(stream.try_next().unwrap().is_none(), "nothing happened yet");
    orders.insert_one(&order(1, "ann", 10)).unwrap();
    orders.update_one(o.id.eq(1), o.state.set("paid")).unwrap();
    orders
        .replace_one(o.id.eq(1), &order(1, "ann", 99))
        .unwrap();
    orders.delete_one(o.id.eq(1)).unwrap();
    let insert = next(&mut stream);
    assert_eq!(insert.operation_type, OperationType::Insert);
    assert_eq!(insert.full_document, Some(order(1, "ann", 10)));
    assert_eq!(insert.document_key, Some(bson::doc! {"_id": 1_i64}));
    let update = next(&mut stream);
    assert_eq!(update.operation_type, OperationType::Update);
    assert_eq!(
        update.full_document, None,
        "no document on updates by default"
    );
    let description = update.update_description.unwrap();
    assert_eq!(description.updated_fields, bson::doc! {"state": "paid"});
    assert!(description.removed_fields.is_empty());
    let replace = next(&mut stream);
    assert_eq!(replace.operation_type, OperationType::Replace);
    assert_eq!(replace.full_document.unwrap().total, 99);
    let delete = next(&mut stream);
    assert_eq!(delete.operation_type, OperationType::Delete);
    assert_eq!(delete.ns.unwrap().coll.as_deref(), Some("orders"));
    assert!(stream.try_next().unwrap().is_none());
}

#[test]
fn a_typed_filter_selects_by_the_document_and_looks_updates_up() {
    let db = odm::testing::database().unwrap();
    let orders = db.collection::<Order>().unwrap();
    let o = Order::fields();
    let mut big = orders
        .watch()
        .matching(o.total.gte(100).and(o.customer.eq("bob")))
        .open()
        .unwrap();
    orders.insert_one(&order(1, "bob", 5)).unwrap();
    orders.insert_one(&order(2, "ann", 500)).unwrap();
    orders.insert_one(&order(3, "bob", 200)).unwrap();
    orders.update_one(o.id.eq(1), o.total.inc(1000)).unwrap();
    let first = next(&mut big);
    assert_eq!(first.full_document.unwrap().id, 3);
    let second = next(&mut big);
    assert_eq!(second.operation_type, OperationType::Update);
    assert_eq!(second.full_document.unwrap().total, 1005, "looked up");
    assert!(big.try_next().unwrap().is_none());
    // An explicit option wins over the lookup a filter asks for.
    let mut plain = orders
        .watch()
        .matching(o.total.gte(0))
        .full_document(FullDocument::Default)
        .open()
        .unwrap();
    orders.update_one(o.id.eq(2), o.total.inc(1)).unwrap();
    assert!(
        plain.try_next().unwrap().is_none(),
        "without the document an update matches no filter"
    );
}

/// `Events` selects by operation and id (`documentKey`) or by the inserted document, with no
/// update lookup: each kind passes only for the documents it names.
#[test]
fn typed_events_select_by_operation_id_and_inserted_document() {
    use OperationType::{Delete, Insert, Replace, Update};
    let db = odm::testing::database().unwrap();
    let orders = db.collection::<Order>().unwrap();
    let o = Order::fields();
    let mut stream = orders
        .watch()
        .events(
            Events::inserted(o.customer.eq("ann"))
                .or(Events::updated([1, 2]))
                .or(Events::replaced([2]))
                .or(Events::deleted([3])),
        )
        .open()
        .unwrap();
    for (id, customer) in [(1, "bob"), (2, "bob"), (3, "ann"), (4, "bob")] {
        orders.insert_one(&order(id, customer, 0)).unwrap();
    }
    for id in 1..=4 {
        orders.update_one(o.id.eq(id), o.total.inc(1)).unwrap();
        orders
            .replace_one(o.id.eq(id), &order(id, "bob", 7))
            .unwrap();
    }
    for id in 1..=4 {
        orders.delete_one(o.id.eq(id)).unwrap();
    }
    let mut seen = Vec::new();
    while let Some(event) = stream.next_timeout(Duration::from_secs(2)).unwrap() {
        let id = event
            .document_key
            .as_ref()
            .and_then(|k| k.get_i64("_id").ok());
        assert_eq!(
            event.full_document.is_some(),
            event.operation_type != OperationType::Update
                && event.operation_type != OperationType::Delete,
            "updates are not looked up"
        );
        seen.push((event.operation_type, id.unwrap()));
    }
    assert_eq!(
        seen,
        [
            (Insert, 3),
            (Update, 1),
            (Update, 2),
            (Replace, 2),
            (Delete, 3)
        ]
    );
}

/// `Events::changed` passes both updates and replacements; a document filter holding `$expr`
/// is refused, since its paths would name the event's fields.
#[test]
fn changed_events_pass_updates_and_replacements_and_expr_filters_are_refused() {
    let db = odm::testing::database().unwrap();
    let orders = db.collection::<Order>().unwrap();
    let o = Order::fields();
    let mut stream = orders.watch().events(Events::changed([1])).open().unwrap();
    orders.insert_one(&order(1, "ann", 1)).unwrap();
    orders.update_one(o.id.eq(1), o.total.inc(1)).unwrap();
    orders.replace_one(o.id.eq(1), &order(1, "ann", 9)).unwrap();
    assert_eq!(next(&mut stream).operation_type, OperationType::Update);
    assert_eq!(next(&mut stream).operation_type, OperationType::Replace);
    let by_expr = odm::Filter::expr(o.total.expr().gt(o.id.expr()));
    for err in [
        orders
            .watch()
            .events(Events::inserted(by_expr.clone()))
            .open()
            .unwrap_err(),
        orders
            .watch()
            .matching(odm::Filter::all().or(by_expr))
            .open()
            .unwrap_err(),
    ] {
        assert!(err.to_string().contains("cannot hold `$expr`"), "{err}");
    }
}

#[test]
fn a_stored_token_resumes_and_start_after_passes_an_invalidate() {
    let db = odm::testing::database().unwrap();
    let orders = db.collection::<Order>().unwrap();
    let mut stream = orders.watch().open().unwrap();
    for id in 1..=3 {
        orders.insert_one(&order(id, "ann", id)).unwrap();
    }
    let first = next(&mut stream);
    // Stored as a document and read back, as an application would keep it.
    let stored = first.token.as_document().clone();
    let mut resumed = orders
        .watch()
        .resume_after(ResumeToken::from_document(stored))
        .open()
        .unwrap();
    let ids: Vec<i64> = (0..2)
        .map(|_| next(&mut resumed).full_document.unwrap().id)
        .collect();
    assert_eq!(ids, [2, 3]);
    assert!(db.drop_collection("orders").unwrap());
    let drop = next(&mut resumed);
    assert_eq!(drop.operation_type, OperationType::Drop);
    let invalidate = next(&mut resumed);
    assert_eq!(invalidate.operation_type, OperationType::Invalidate);
    assert!(resumed.is_closed());
    assert!(
        resumed.next().is_none(),
        "the iterator ends after invalidate"
    );
    let orders = db.collection::<Order>().unwrap();
    orders.insert_one(&order(9, "new", 1)).unwrap();
    let mut after = orders.watch().start_after(invalidate.token).open().unwrap();
    assert_eq!(next(&mut after).full_document.unwrap().id, 9);
}

#[test]
fn the_iterator_waits_for_a_writer_in_another_thread() {
    let db = odm::testing::database().unwrap();
    let orders = db.collection::<Order>().unwrap();
    let stream = orders.watch().open().unwrap();
    let writer = {
        let orders = orders.clone();
        std::thread::spawn(move || {
            for id in 0..3 {
                std::thread::sleep(Duration::from_millis(50));
                orders.insert_one(&order(id, "w", id)).unwrap();
            }
        })
    };
    let ids: Vec<i64> = stream
        .take(3)
        .map(|e| e.unwrap().full_document.unwrap().id)
        .collect();
    assert_eq!(ids, [0, 1, 2]);
    writer.join().unwrap();
}

#[test]
fn a_database_stream_sees_every_collection() {
    let db = odm::testing::database().unwrap();
    let orders = db.collection::<Order>().unwrap();
    let mut all = db.watch().open().unwrap();
    orders.insert_one(&order(1, "ann", 1)).unwrap();
    db.collection_named::<Order>("archive")
        .unwrap()
        .insert_one(&order(2, "bob", 2))
        .unwrap();
    let colls: Vec<String> = (0..2)
        .map(|_| {
            all.next_timeout(Duration::from_secs(10))
                .unwrap()
                .unwrap()
                .ns
                .unwrap()
                .coll
                .unwrap()
        })
        .collect();
    assert_eq!(colls, ["orders", "archive"]);
}

/// An event whose document does not decode as the model is an error naming the collection,
/// and it stays: the stream neither skips it nor moves its token past it.
#[test]
fn an_event_that_does_not_decode_fails_and_stays() {
    let db = odm::testing::database().unwrap();
    let Some(engine) = db.engine().cloned() else {
        return; // a raw write needs the embedded engine
    };
    let orders = db.collection::<Order>().unwrap();
    let mut stream = orders.watch().open().unwrap();
    let before = stream.resume_token();
    engine
        .write(|w| w.insert_one("orders", bson::doc! {"_id": 5_i64, "customer": 1}))
        .unwrap();
    for _ in 0..2 {
        let err = stream
            .next_timeout(Duration::from_secs(10))
            .expect_err("the document is not an Order");
        assert!(err.to_string().contains("orders"), "{err}");
        assert_eq!(
            stream.resume_token(),
            before,
            "the token stays before the event"
        );
    }
}
