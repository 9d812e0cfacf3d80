//! The consistency law: after every write, each index holds exactly the entries recomputed from
//! the documents (`Database::verify` is clean), the collection equals a model that applies only
//! the operations reported as successful, and no unique index lets two documents share a key.
//!
//! Random sequences of inserts, batch inserts, replaces, `$set` updates, all-or-nothing `$inc`
//! of every document, deletes and aborted transactions run
//! over random documents (nested, arrays, mixed types, missing fields) in a collection with every
//! index kind: single, compound with mixed directions, nested, multikey, nested multikey, unique,
//! compound unique, sparse unique and TTL.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{Bson, DateTime, Document, RawBson};
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, Direction, Error, IndexSpec, keys, order};
use proptest::prelude::*;

const C: &str = "things";

fn scalar() -> impl Strategy<Value = Bson> {
    prop_oneof![
        (0i32..4).prop_map(Bson::Int32),
        (0i64..4).prop_map(|v| Bson::Double(v as f64)),
        prop::sample::select(vec!["x", "y", ""]).prop_map(|s| Bson::String(s.into())),
        Just(Bson::Null),
        (0i64..3).prop_map(|d| Bson::DateTime(DateTime::from_millis(d * 1000))),
    ]
}

fn field_value() -> impl Strategy<Value = Bson> {
    prop_oneof![
        4 => scalar(),
        2 => prop::collection::vec(scalar(), 0..3).prop_map(Bson::Array),
        1 => common::value(),
    ]
}

fn maybe(s: impl Strategy<Value = Bson>) -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![1 => Just(None), 3 => s.prop_map(Some)]
}

/// Boxed: the nested strategy types are otherwise deep enough to overflow a test thread's stack
/// in debug builds.
fn document() -> BoxedStrategy<Document> {
    let items = prop::collection::vec(
        (maybe(scalar()), maybe(field_value())).prop_map(|(k, v)| {
            let mut d = Document::new();
            if let Some(k) = k {
                d.insert("k", k);
            }
            if let Some(v) = v {
                d.insert("v", v);
            }
            Bson::Document(d)
        }),
        0..3,
    )
    .prop_map(Bson::Array);
    (
        maybe((0i32..12).prop_map(Bson::Int32)),
        maybe(field_value()),
        maybe(field_value()),
        maybe(field_value().prop_map(|x| Bson::Document(bson::doc! { "x": x }))),
        maybe(prop::collection::vec(scalar(), 0..4).prop_map(Bson::Array)),
        maybe(items),
        maybe(field_value()),
        (maybe(scalar()), maybe(scalar())),
        maybe(scalar()),
        maybe(field_value()),
    )
        .prop_map(|(id, a, b, n, tags, items, u, (cu1, cu2), s, t)| {
            let mut d = Document::new();
            let fields = [
                ("_id", id),
                ("a", a),
                ("b", b),
                ("n", n),
                ("tags", tags),
                ("items", items),
                ("u", u),
                ("cu1", cu1),
                ("cu2", cu2),
                ("s", s),
                ("t", t),
            ];
            for (name, value) in fields {
                if let Some(value) = value {
                    d.insert(name, value);
                }
            }
            d
        })
        .boxed()
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Document),
    InsertMany(Vec<Document>, bool),
    Replace(i32, Document),
    Delete(i32),
    /// Operations run in a transaction whose closure then fails: nothing may remain.
    Aborted(Vec<Document>, i32),
    /// Deletes a document and inserts one with the same `_id` in one transaction, so the same
    /// index entries are removed and added again.
    DeleteReinsert(i32, Document),
    /// `update_one({_id}, {$set: {field: value}})`: index entries change by difference.
    Set(i32, &'static str, Bson),
    /// `update_many({}, {$inc: {field: 1}})`: all or nothing, so a unique violation or a
    /// non-numeric value in any document leaves every document as it was.
    IncAll(&'static str),
    /// `update_one({_id}, operators)` on nested and array paths, indexed or not: entries of
    /// the indexes the update reaches change, the others must already be right (verify checks
    /// both). The model takes the document the engine stored; a refused update changes nothing.
    Modify(i32, Document),
}

/// An update of one or two operators on paths inside and beside the indexed fields.
fn modification() -> BoxedStrategy<Document> {
    let path = prop::sample::select(vec![
        "n",
        "n.x",
        "n.y",
        "items",
        "items.k",
        "items.0.k",
        "items.1.v",
        "tags",
        "tags.1",
        "a",
        "b",
        "z",
        "z.w",
    ]);
    let op = prop_oneof![
        (path.clone(), field_value()).prop_map(|(p, v)| ("$set", p, v)),
        (path.clone(), -2i32..3).prop_map(|(p, n)| ("$inc", p, Bson::Int32(n))),
        path.clone()
            .prop_map(|p| ("$unset", p, Bson::String(String::new()))),
        (path.clone(), field_value()).prop_map(|(p, v)| ("$push", p, v)),
        (path.clone(), prop_oneof![Just(1), Just(-1)]).prop_map(|(p, n)| (
            "$pop",
            p,
            Bson::Int32(n)
        )),
        (path, field_value()).prop_map(|(p, v)| ("$max", p, v)),
    ];
    prop::collection::vec(op, 1..3)
        .prop_map(|ops| {
            let mut update = Document::new();
            for (operator, path, value) in ops {
                let mut fields = update.get_document(operator).cloned().unwrap_or_default();
                fields.insert(path, value);
                update.insert(operator, fields);
            }
            update
        })
        .boxed()
}

fn op() -> BoxedStrategy<Op> {
    prop_oneof![
        4 => document().prop_map(Op::Insert),
        1 => (prop::collection::vec(document(), 1..4), any::<bool>()).prop_map(|(d, o)| Op::InsertMany(d, o)),
        2 => (0i32..12, document()).prop_map(|(id, d)| Op::Replace(id, d)),
        1 => (0i32..12).prop_map(Op::Delete),
        1 => (prop::collection::vec(document(), 1..3), 0i32..12).prop_map(|(d, id)| Op::Aborted(d, id)),
        1 => (0i32..12, document()).prop_map(|(id, d)| Op::DeleteReinsert(id, d)),
        2 => (0i32..12, prop::sample::select(vec!["a", "b", "tags", "u", "cu1", "s", "t", "new"]), field_value())
            .prop_map(|(id, f, v)| Op::Set(id, f, v)),
        1 => prop::sample::select(vec!["a", "cu1", "u"]).prop_map(Op::IncAll),
        3 => (0i32..12, modification()).prop_map(|(id, u)| Op::Modify(id, u)),
    ]
    .boxed()
}

fn indexes() -> Vec<IndexSpec> {
    use Direction::{Ascending as Asc, Descending as Desc};
    vec![
        IndexSpec::new([("a", Asc)]).unwrap(),
        IndexSpec::new([("a", Asc), ("b", Desc)]).unwrap(),
        IndexSpec::new([("n.x", Desc)]).unwrap(),
        IndexSpec::new([("tags", Asc)]).unwrap(),
        IndexSpec::new([("items.k", Asc), ("items.v", Desc)]).unwrap(),
        IndexSpec::new([("u", Asc)]).unwrap().unique(),
        IndexSpec::new([("cu1", Asc), ("cu2", Desc)])
            .unwrap()
            .unique(),
        IndexSpec::new([("s", Asc)]).unwrap().sparse().unique(),
        IndexSpec::new([("t", Asc)])
            .unwrap()
            .expire_after(Duration::from_secs(1)),
        IndexSpec::new([("a", Desc), ("tags", Asc)])
            .unwrap()
            .named("partial")
            .partial(bson::doc! { "s": { "$gt": 0 } })
            .unwrap()
            .unique(),
    ]
}

/// The model: documents by encoded `_id`, as the engine should store them (`_id` first).
type Model = BTreeMap<Vec<u8>, Document>;

fn id_key(id: &Bson) -> Vec<u8> {
    keys::encode(RawBson::try_from(id.clone()).unwrap().as_raw_bson_ref())
}

fn same(a: &Bson, b: &Bson) -> bool {
    let (a, b) = (
        RawBson::try_from(a.clone()).unwrap(),
        RawBson::try_from(b.clone()).unwrap(),
    );
    order::compare(a.as_raw_bson_ref(), b.as_raw_bson_ref()).is_eq()
}

/// The values of top-level field `u` as a unique index sees them, worked out independently of
/// the engine: missing is null, an array gives its elements, an empty array undefined.
fn u_values(d: &Document) -> Vec<Bson> {
    match d.get("u") {
        None => vec![Bson::Null],
        Some(Bson::Array(items)) if items.is_empty() => vec![Bson::Undefined],
        Some(Bson::Array(items)) => items.clone(),
        Some(v) => vec![v.clone()],
    }
}

fn u_conflict(model: &Model, doc: &Document, except: Option<&[u8]>) -> bool {
    let mine = u_values(doc);
    model.iter().any(|(k, other)| {
        Some(k.as_slice()) != except
            && u_values(other)
                .iter()
                .any(|v| mine.iter().any(|m| same(v, m)))
    })
}

/// What the engine stores for an inserted document: `_id` first.
fn stored_form(doc: &Document, id: &Bson) -> Document {
    let mut out = Document::new();
    out.insert("_id", id.clone());
    for (k, v) in doc {
        if k != "_id" {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// Checks an insert's outcome against the model, and applies it.
fn apply_insert(
    model: &mut Model,
    doc: &Document,
    outcome: Result<Bson, Error>,
) -> Result<(), TestCaseError> {
    match outcome {
        Ok(id) => {
            let key = id_key(&id);
            prop_assert!(!model.contains_key(&key), "a duplicate _id was accepted");
            prop_assert!(
                !u_conflict(model, doc, None),
                "a duplicate unique `u` was accepted"
            );
            model.insert(key, stored_form(doc, &id));
        }
        Err(Error::DuplicateKey { index, .. }) if index == "_id_" => {
            prop_assert!(model.contains_key(&id_key(doc.get("_id").unwrap())));
        }
        Err(Error::DuplicateKey { index, .. }) if index == "u_1" => {
            prop_assert!(
                u_conflict(model, doc, None),
                "refused `u` without a conflict"
            );
        }
        Err(Error::DuplicateKey { .. } | Error::ParallelArrays { .. }) => {}
        Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
    }
    Ok(())
}

fn check(db: &Database, model: &Model) -> Result<(), TestCaseError> {
    let report = db.verify().unwrap();
    prop_assert!(report.is_clean(), "verify: {:?}", report.problems);
    // Compared as bytes: exact field order and types, and NaN equals itself.
    let txn = db.read().unwrap();
    let stored: Vec<Vec<u8>> = match txn.collection(C).unwrap() {
        Some(c) => c
            .scan()
            .unwrap()
            .map(|d| d.unwrap().bytes().to_vec())
            .collect(),
        None => Vec::new(),
    };
    let expected: Vec<Vec<u8>> = model.values().map(|d| d.to_vec().unwrap()).collect();
    prop_assert_eq!(stored, expected);
    Ok(())
}

// Long on purpose: the model-based test's interpreter: one match arm per operation, each checked
// against the model right where it runs; split, the arms would lose the state they share.
#[allow(clippy::too_many_lines)]
fn run(ops: Vec<Op>, merge_threshold: u64) -> Result<(), TestCaseError> {
    let db = Database::in_memory().unwrap();
    // Merge each index's recent entries into its main table often, so that both tables and the
    // merge are exercised.
    db.set_index_merge_threshold(merge_threshold);
    let coll = db.collection(C);
    for spec in indexes() {
        coll.create_index(spec).unwrap();
    }
    let mut model = Model::new();
    for op in ops {
        match op {
            Op::Insert(doc) => {
                let outcome = coll.insert_one(&doc);
                apply_insert(&mut model, &doc, outcome)?;
            }
            Op::InsertMany(docs, ordered) => {
                let result = coll.insert_many(docs.iter(), ordered).unwrap();
                let mut outcomes: BTreeMap<usize, Result<Bson, Error>> = BTreeMap::new();
                outcomes.extend(result.inserted.into_iter().map(|(i, id)| (i, Ok(id))));
                outcomes.extend(result.failures.into_iter().map(|(i, e)| (i, Err(e))));
                if ordered
                    && let Some((&first_failure, _)) = outcomes.iter().find(|(_, o)| o.is_err())
                {
                    prop_assert_eq!(
                        outcomes.len(),
                        first_failure + 1,
                        "ordered insert went on after a failure"
                    );
                } else {
                    prop_assert_eq!(outcomes.len(), docs.len());
                }
                for (i, outcome) in outcomes {
                    apply_insert(&mut model, &docs[i], outcome)?;
                }
            }
            Op::Replace(id, doc) => {
                let id = Bson::Int32(id);
                let mut replacement = doc.clone();
                replacement.remove("_id");
                match coll.replace_by_id(&id, &replacement) {
                    Ok(old) => {
                        let key = id_key(&id);
                        prop_assert_eq!(old.is_some(), model.contains_key(&key));
                        if old.is_some() {
                            prop_assert!(
                                !u_conflict(&model, &replacement, Some(&key)),
                                "replace accepted a duplicate `u`"
                            );
                            model.insert(key, stored_form(&replacement, &id));
                        }
                    }
                    Err(Error::DuplicateKey { index, .. }) => {
                        if index == "u_1" {
                            prop_assert!(u_conflict(&model, &replacement, Some(&id_key(&id))));
                        }
                    }
                    Err(Error::ParallelArrays { .. }) => {}
                    Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
                }
            }
            Op::Delete(id) => {
                let old = coll.delete_by_id(&Bson::Int32(id)).unwrap();
                let removed = model.remove(&id_key(&Bson::Int32(id)));
                prop_assert_eq!(old.is_some(), removed.is_some());
            }
            Op::DeleteReinsert(id, doc) => {
                let key = id_key(&Bson::Int32(id));
                let Some(old) = model.get(&key).cloned() else {
                    continue;
                };
                // Half the time the same document comes back, so every entry is re-added.
                let mut again = if doc.len() % 2 == 0 { old.clone() } else { doc };
                again.insert("_id", id);
                let outcome = db.write(|txn| {
                    txn.delete_by_id(C, &Bson::Int32(id))?;
                    txn.insert_one(C, &again)
                });
                model.remove(&key);
                let failed = outcome.is_err();
                apply_insert(&mut model, &again, outcome)?;
                if failed {
                    // The transaction aborted: the old document is back.
                    model.insert(key, old);
                }
            }
            Op::Set(id, field, value) => {
                let id = Bson::Int32(id);
                let key = id_key(&id);
                let outcome = coll.update_one(
                    &bson::doc! { "_id": id.clone() },
                    &bson::doc! { "$set": { field: value.clone() } },
                    &UpdateOptions::default(),
                );
                match outcome {
                    Ok(result) => {
                        prop_assert_eq!(result.matched, u64::from(model.contains_key(&key)));
                        if let Some(doc) = model.get(&key) {
                            let mut new = doc.clone();
                            new.insert(field, value);
                            prop_assert!(
                                !u_conflict(&model, &new, Some(&key)),
                                "update accepted a duplicate `u`"
                            );
                            model.insert(key, new);
                        }
                    }
                    Err(Error::DuplicateKey { .. } | Error::ParallelArrays { .. }) => {}
                    Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
                }
            }
            Op::IncAll(field) => {
                // The transaction commits whatever the update says, so a failed update must
                // have undone its own partial work.
                let outcome = db
                    .write(|txn| {
                        Ok::<_, Error>(txn.update_many(
                            C,
                            &Document::new(),
                            &bson::doc! { "$inc": { field: 1 } },
                            &UpdateOptions::default(),
                        ))
                    })
                    .unwrap();
                // Decimal sums are the engine's own decimal arithmetic: their results are read
                // back (as `None` here), everything else is computed by the model.
                let incremented: Option<BTreeMap<Vec<u8>, (Document, bool)>> = model
                    .iter()
                    .map(|(k, d)| {
                        let (next, read_back) = match d.get(field) {
                            None => (Bson::Int32(1), false),
                            Some(Bson::Int32(x)) => (Bson::Int32(x + 1), false),
                            Some(Bson::Int64(x)) => (Bson::Int64(x + 1), false),
                            Some(Bson::Double(x)) => (Bson::Double(x + 1.0), false),
                            Some(Bson::Decimal128(_)) => (Bson::Null, true),
                            Some(_) => return None,
                        };
                        let mut d = d.clone();
                        d.insert(field, next);
                        Some((k.clone(), (d, read_back)))
                    })
                    .collect();
                match (outcome, incremented) {
                    (Ok(result), Some(next)) => {
                        prop_assert_eq!(result.matched, model.len() as u64);
                        let txn = db.read().unwrap();
                        let coll = txn.collection(C).unwrap().unwrap();
                        model = next
                            .into_iter()
                            .map(|(k, (mut d, read_back))| {
                                if read_back {
                                    let id = d.get("_id").cloned().unwrap();
                                    let stored: Document =
                                        coll.get(&id).unwrap().unwrap().decode().unwrap();
                                    let sum = stored.get(field).cloned().unwrap();
                                    assert!(matches!(sum, Bson::Decimal128(_)), "{sum}");
                                    d.insert(field, sum);
                                }
                                (k, d)
                            })
                            .collect();
                    }
                    // A non-numeric value, or a unique index refusing the result: nothing may
                    // have changed, which `check` below confirms against the unchanged model.
                    (Err(Error::InvalidUpdate(_)), None)
                    | (Err(Error::DuplicateKey { .. } | Error::ParallelArrays { .. }), Some(_)) => {
                    }
                    (outcome, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "$inc of `{field}`: got {outcome:?}, model expected {}",
                            if expected.is_some() {
                                "success"
                            } else {
                                "a refusal"
                            }
                        )));
                    }
                }
            }
            Op::Modify(id, update) => {
                let id = Bson::Int32(id);
                let key = id_key(&id);
                let outcome = coll.update_one(
                    &bson::doc! { "_id": id.clone() },
                    &update,
                    &UpdateOptions::default(),
                );
                if let Ok(result) = outcome {
                    prop_assert_eq!(result.matched, u64::from(model.contains_key(&key)));
                    if result.modified > 0 {
                        let txn = db.read().unwrap();
                        let stored = txn.collection(C).unwrap().unwrap().get(&id).unwrap();
                        let stored = Document::try_from(stored.unwrap().as_raw().unwrap()).unwrap();
                        prop_assert!(
                            !u_conflict(&model, &stored, Some(&key)),
                            "update accepted a duplicate `u`"
                        );
                        model.insert(key, stored);
                    }
                }
            }
            Op::Aborted(docs, id) => {
                let outcome: Result<(), Error> = db.write(|txn| {
                    for doc in &docs {
                        let _ = txn.insert_one(C, doc);
                    }
                    txn.delete_by_id(C, &Bson::Int32(id))?;
                    Err(Error::CollectionNotFound("abort on purpose".into()))
                });
                prop_assert!(outcome.is_err());
            }
        }
        check(&db, &model)?;
    }
    // Expire everything that has a date in `t`: still consistent afterwards.
    // TTL is one second, so dates before 999 s expire at 1000 s.
    db.expire(DateTime::from_millis(1_000_000)).unwrap();
    model.retain(|_, d| !has_date_before(d.get("t"), 999_000));
    check(&db, &model)
}

/// Whether a TTL field holds a date before `cutoff` ms (for an array, its earliest date).
fn has_date_before(v: Option<&Bson>, cutoff: i64) -> bool {
    let early = |b: &Bson| matches!(b, Bson::DateTime(d) if d.timestamp_millis() < cutoff);
    match v {
        Some(Bson::Array(items)) => items.iter().any(early),
        Some(b) => early(b),
        None => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn indexes_always_equal_recomputed_entries(ops in prop::collection::vec(op(), 1..25), merge_threshold in 0u64..6) {
        run(ops, merge_threshold)?;
    }
}
