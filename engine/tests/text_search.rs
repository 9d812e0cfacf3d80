//! Text indexes and `$text`, as MongoDB's manual describes them: one text index per collection,
//! its options as `listIndexes` shows them, terms found through the index, phrases and
//! negations judged on the documents, scores by MongoDB's formula through `{$meta:
//! "textScore"}`, and MongoDB's errors.

use bson::{Bson, Document, doc};
use odm_engine::query::{Access, FindOptions};
use odm_engine::{Database, Error, IndexSpec};

fn articles() -> Database {
    let db = Database::in_memory().unwrap();
    let c = db.collection("articles");
    c.insert_many(
        [
            doc! { "_id": 1, "subject": "coffee", "author": "xyz", "views": 50 },
            doc! { "_id": 2, "subject": "Coffee Shopping", "author": "efg", "views": 5 },
            doc! { "_id": 3, "subject": "Baking a cake", "author": "abc", "views": 90 },
            doc! { "_id": 4, "subject": "baking", "author": "xyz", "views": 100 },
            doc! { "_id": 5, "subject": "Café Con Leche", "author": "abc", "views": 200 },
            doc! { "_id": 6, "subject": "Сырники", "author": "jkl", "views": 80 },
            doc! { "_id": 7, "subject": "coffee and cream", "author": "efg", "views": 10 },
            doc! { "_id": 8, "subject": "Cafe con Leche", "author": "xyz", "views": 10 },
        ],
        true,
    )
    .unwrap();
    c.create_index(IndexSpec::from_keys_document(&doc! { "subject": "text" }).unwrap())
        .unwrap();
    db
}

fn find(db: &Database, filter: Document, options: FindOptions) -> Result<Vec<Document>, Error> {
    let txn = db.read().unwrap();
    let c = txn.collection("articles").unwrap().unwrap();
    c.find(&filter, &options)?.collect()
}

fn ids(db: &Database, filter: Document) -> Vec<i32> {
    let mut ids: Vec<i32> = find(db, filter, FindOptions::default())
        .unwrap()
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect();
    ids.sort_unstable();
    ids
}

fn search(text: &str) -> Document {
    doc! { "$text": { "$search": text } }
}

#[test]
fn the_manuals_examples() {
    let db = articles();
    assert_eq!(ids(&db, search("coffee")), [1, 2, 7]);
    assert_eq!(ids(&db, search("bake coffee cake")), [1, 2, 3, 4, 7]);
    assert_eq!(ids(&db, search("\"coffee shop\"")), [2]);
    assert_eq!(ids(&db, search("coffee -shop")), [1, 7]);
    assert_eq!(
        ids(
            &db,
            doc! { "$text": { "$search": "leche", "$language": "es" } }
        ),
        [5, 8]
    );
    assert_eq!(ids(&db, search("сы́рники CAFÉS")), [5, 6, 8]);
    assert_eq!(
        ids(
            &db,
            doc! { "$text": { "$search": "Coffee", "$caseSensitive": true } }
        ),
        [2]
    );
    assert_eq!(
        ids(
            &db,
            doc! { "$text": { "$search": "CAFÉ", "$diacriticSensitive": true } }
        ),
        [5]
    );
    assert_eq!(
        ids(
            &db,
            doc! { "$text": { "$search": "coffee" }, "views": { "$gt": 20 } }
        ),
        [1]
    );
}

#[test]
fn the_plan_walks_the_terms_of_the_text_index() {
    let db = articles();
    let txn = db.read().unwrap();
    let c = txn.collection("articles").unwrap().unwrap();
    let explain = c
        .explain(&search("coffee cake"), &FindOptions::default())
        .unwrap();
    let Access::IndexScan(scan) = &explain.winning.access else {
        panic!("{:?}", explain.winning.access);
    };
    assert_eq!(scan.index, "subject_text");
    assert_eq!(scan.intervals.len(), 2);
}

#[test]
fn listed_as_mongodb_lists_it() {
    let db = articles();
    let listed: Vec<Document> = db
        .collection("articles")
        .list_indexes()
        .unwrap()
        .iter()
        .map(IndexSpec::to_document)
        .collect();
    let text = listed
        .iter()
        .find(|d| d.get_str("name").ok() == Some("subject_text"))
        .unwrap();
    assert_eq!(
        text.get_document("key").unwrap(),
        &doc! { "_fts": "text", "_ftsx": 1 }
    );
    assert_eq!(
        text.get_document("weights").unwrap(),
        &doc! { "subject": 1 }
    );
    assert_eq!(text.get_str("default_language").unwrap(), "english");
    assert_eq!(text.get_str("language_override").unwrap(), "language");
    assert_eq!(text.get("textIndexVersion"), Some(&Bson::Int32(3)));
    // The listed form reads back as the same index.
    assert_eq!(IndexSpec::from_document(text).unwrap().to_document(), *text);
}

fn scored(db: &Database, filter: Document, sort: Option<Document>) -> Vec<(i32, f64)> {
    let options = FindOptions {
        projection: Some(doc! { "score": { "$meta": "textScore" }, "subject": 0 }),
        sort,
        ..FindOptions::default()
    };
    find(db, filter, options)
        .unwrap()
        .iter()
        .map(|d| (d.get_i32("_id").unwrap(), d.get_f64("score").unwrap()))
        .collect()
}

#[test]
fn scores_by_mongodb_formula_projected_and_sorted() {
    let db = articles();
    let by_score = Some(doc! { "score": { "$meta": "textScore" } });
    // "coffee" alone scores 1 (1.1 only when the whole string is the term, and its term is
    // `coffe`); in two words 0.75; in three words (one a stop word) 0.75.
    assert_eq!(
        scored(&db, search("coffee"), by_score.clone()),
        [(1, 1.0), (2, 0.75), (7, 0.75)]
    );
    let whole = Database::in_memory().unwrap();
    whole
        .collection("articles")
        .insert_one(doc! { "_id": 1, "subject": "Cake" })
        .unwrap();
    whole
        .collection("articles")
        .create_index(IndexSpec::from_keys_document(&doc! { "subject": "text" }).unwrap())
        .unwrap();
    assert_eq!(scored(&whole, search("cakes"), None), [(1, 1.1)]);
    // Several terms add up: "Baking a cake" holds `bake` and `cake`.
    let both = scored(&db, search("bake cake"), by_score);
    assert_eq!(both[0].0, 3);
    assert!((both[0].1 - 1.5).abs() < 1e-9, "{both:?}");
    assert_eq!(both[1], (4, 1.0));
    // A sort by score then by a field.
    let mixed = scored(
        &db,
        search("coffee"),
        Some(doc! { "score": { "$meta": "textScore" }, "views": -1 }),
    );
    assert_eq!(
        mixed.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [1, 7, 2]
    );
}

fn refusal(db: &Database, filter: Document, options: FindOptions) -> (i32, String) {
    let e = find(db, filter, options).unwrap_err();
    (e.code(), e.to_string())
}

#[test]
fn mongodb_refusals() {
    let db = articles();
    let plain = FindOptions::default();
    let (code, message) = refusal(&db, doc! { "$nor": [search("x")] }, plain.clone());
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("text expression not allowed in nor"));
    let (code, message) = refusal(
        &db,
        doc! { "$and": [search("x"), search("y")] },
        plain.clone(),
    );
    assert_eq!(code, 2);
    assert!(message.contains("Too many text expressions"));
    let (code, _) = refusal(
        &db,
        doc! { "tags": { "$elemMatch": { "$text": { "$search": "x" } } } },
        plain.clone(),
    );
    assert_eq!(code, 2);
    // `$or` with a branch no index serves.
    let (code, message) = refusal(
        &db,
        doc! { "$or": [search("x"), { "views": 1 }] },
        plain.clone(),
    );
    assert_eq!(code, 291, "{message}");
    // A score with no `$text`.
    let (code, _) = refusal(
        &db,
        doc! {},
        FindOptions {
            projection: Some(doc! { "s": { "$meta": "textScore" } }),
            ..FindOptions::default()
        },
    );
    assert_eq!(code, 40218);
    let (code, _) = refusal(
        &db,
        search("x"),
        FindOptions {
            hint: Some(Bson::String("_id_".into())),
            ..plain.clone()
        },
    );
    assert_eq!(code, 2);
    // No text index.
    db.collection("articles")
        .drop_index("subject_text")
        .unwrap();
    let (code, message) = refusal(&db, search("coffee"), plain);
    assert_eq!(
        (code, message.as_str()),
        (27, "text index required for $text query")
    );
}

#[test]
fn text_under_or_with_indexed_branches() {
    let db = articles();
    db.collection("articles")
        .create_index(IndexSpec::ascending("views").unwrap())
        .unwrap();
    assert_eq!(
        ids(&db, doc! { "$or": [search("cake"), { "views": 200 }] }),
        [3, 5]
    );
}

#[test]
fn one_text_index_per_collection_and_its_options_checked() {
    let db = articles();
    // The same stored pattern, `{_fts: "text", _ftsx: 1}`, under another name: 85.
    let second = db
        .collection("articles")
        .create_index(IndexSpec::from_keys_document(&doc! { "author": "text" }).unwrap())
        .unwrap_err();
    assert_eq!(second.code(), 85, "{second}");
    // Another pattern: 67, naming the text index there is.
    let second = db
        .collection("articles")
        .create_index(
            IndexSpec::from_keys_document(&doc! { "views": 1, "author": "text" }).unwrap(),
        )
        .unwrap_err();
    assert_eq!(second.code(), 67, "{second}");
    assert!(second.to_string().contains("subject_text"), "{second}");
    for bad in [
        doc! { "key": { "a": "text", "b": 1, "c": "text" }, "name": "x" },
        doc! { "key": { "a": "text" }, "name": "x", "weights": { "a": 0 } },
        doc! { "key": { "a": "text" }, "name": "x", "default_language": "klingon" },
        doc! { "key": { "a": "text" }, "name": "x", "textIndexVersion": 1 },
        doc! { "key": { "a": "text", "b": "hashed" }, "name": "x" },
        // Text options on an index of another kind.
        doc! { "key": { "a": 1 }, "name": "x", "weights": { "a": 2 } },
    ] {
        assert!(IndexSpec::from_document(&bad).is_err(), "{bad}");
    }
}

#[test]
fn languages_per_document_and_their_errors() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("quotes");
    c.create_index(
        IndexSpec::from_document(&doc! {
            "key": { "quote": "text" }, "name": "q", "language_override": "idioma",
        })
        .unwrap(),
    )
    .unwrap();
    c.insert_one(doc! { "_id": 1, "quote": "corriendo rápido", "idioma": "es" })
        .unwrap();
    c.insert_one(doc! { "_id": 2, "quote": "running fast" })
        .unwrap();
    let refused = c
        .insert_one(doc! { "_id": 3, "quote": "x", "idioma": "klingon" })
        .unwrap_err();
    assert_eq!(refused.code(), 17262, "{refused}");
    let refused = c
        .insert_one(doc! { "_id": 4, "quote": "x", "idioma": 5 })
        .unwrap_err();
    assert_eq!(refused.code(), 17261, "{refused}");
    let txn = db.read().unwrap();
    let q = txn.collection("quotes").unwrap().unwrap();
    let found = |filter: Document| -> Vec<i32> {
        q.find(&filter, &FindOptions::default())
            .unwrap()
            .map(|d| d.unwrap().get_i32("_id").unwrap())
            .collect()
    };
    // Spanish stems `corriendo` to `corr`: a Spanish search finds it, an English one does not.
    assert_eq!(
        found(doc! { "$text": { "$search": "correr", "$language": "spanish" } }),
        [1]
    );
    assert_eq!(found(doc! { "$text": { "$search": "run" } }), [2]);
    assert_eq!(
        q.find(&doc! {}, &FindOptions::default()).unwrap().count(),
        2
    );
}

fn aggregate(db: &Database, pipeline: &[Document]) -> Result<Vec<Document>, Error> {
    let txn = db.read().unwrap();
    let c = txn.collection("articles").unwrap().unwrap();
    c.aggregate(
        pipeline,
        &odm_engine::aggregate::AggregateOptions::default(),
    )
}

#[test]
fn pipelines_read_the_score_through_meta() {
    let db = articles();
    let score = doc! { "$meta": "textScore" };
    let out = aggregate(
        &db,
        &[
            doc! { "$match": search("coffee cake") },
            doc! { "$project": { "subject": 1, "score": score.clone() } },
            doc! { "$sort": { "score": score.clone(), "_id": 1 } },
            doc! { "$addFields": { "again": score.clone(), "whole": "$$ROOT" } },
        ],
    )
    .unwrap();
    let ids: Vec<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 7]);
    for d in &out {
        assert_eq!(d.get("score"), d.get("again"), "{d}");
        // The score the pipeline carries is seen only through `$meta`.
        assert!(!d.contains_key("$textScore"), "{d}");
        assert!(
            !d.get_document("whole").unwrap().contains_key("$textScore"),
            "{d}"
        );
    }
    // Accumulated, and dropped by `$group` as MongoDB drops metadata.
    let grouped = aggregate(
        &db,
        &[
            doc! { "$match": search("coffee") },
            doc! { "$group": { "_id": null, "total": { "$sum": score.clone() } } },
        ],
    )
    .unwrap();
    assert!(
        (grouped[0].get_f64("total").unwrap() - 2.5).abs() < 1e-9,
        "{grouped:?}"
    );
    let after_group = aggregate(
        &db,
        &[
            doc! { "$match": search("coffee") },
            doc! { "$group": { "_id": "$author" } },
            doc! { "$project": { "s": score.clone() } },
        ],
    )
    .unwrap_err();
    assert_eq!(after_group.code(), 40218, "{after_group}");
}

#[test]
fn text_in_a_pipeline_only_first() {
    let db = articles();
    let late = aggregate(
        &db,
        &[doc! { "$limit": 5 }, doc! { "$match": search("coffee") }],
    )
    .unwrap_err();
    assert_eq!(late.code(), 17313, "{late}");
    let faceted = aggregate(
        &db,
        &[doc! { "$facet": { "a": [{ "$match": search("coffee") }] } }],
    )
    .unwrap_err();
    assert_eq!(faceted.code(), 17313, "{faceted}");
    let unscored = aggregate(
        &db,
        &[doc! { "$addFields": { "s": { "$meta": "textScore" } } }],
    )
    .unwrap_err();
    assert_eq!(unscored.code(), 40218, "{unscored}");
    let counted = aggregate(
        &db,
        &[doc! { "$match": search("coffee") }, doc! { "$count": "n" }],
    )
    .unwrap();
    assert_eq!(counted, [doc! { "n": 3 }]);
}

#[test]
fn a_compound_text_index_needs_equality_on_its_prefix() {
    let db = articles();
    let c = db.collection("articles");
    c.drop_index("subject_text").unwrap();
    c.create_index(
        IndexSpec::from_keys_document(&doc! { "author": 1, "subject": "text" }).unwrap(),
    )
    .unwrap();
    assert_eq!(
        ids(
            &db,
            doc! { "author": "xyz", "$text": { "$search": "coffee cafe" } }
        ),
        [1, 8]
    );
    let txn = db.read().unwrap();
    let coll = txn.collection("articles").unwrap().unwrap();
    let explain = coll
        .explain(
            &doc! { "author": "xyz", "$text": { "$search": "coffee" } },
            &FindOptions::default(),
        )
        .unwrap();
    let text = explain.to_document();
    let stage = text
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(
        stage.get_document("indexPrefix").unwrap(),
        &doc! { "author": "xyz" }
    );
    drop(txn);
    let (code, message) = refusal(&db, search("coffee"), FindOptions::default());
    assert_eq!(code, 291, "{message}");
    assert!(message.contains("prefix"), "{message}");
}
