//! The planner law: for random documents (nested, arrays, mixed types, missing fields) and
//! random filters, sorts, skips, limits, projections and collations, a collection with indexes
//! of every kind returns exactly what the same collection without secondary indexes returns.
//! Index scans may visit extra candidates; they must never miss one, and the matcher must
//! reject the extras.

use bson::{Bson, Document, Regex, doc};
use odm_engine::query::FindOptions;
use odm_engine::update::{DeleteOptions, FindAndModify, UpdateOptions};
use odm_engine::{Database, Direction, IndexSpec};
use proptest::prelude::*;

fn regex(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.try_into().unwrap(),
        options: options.try_into().unwrap(),
    })
}

fn scalar() -> impl Strategy<Value = Bson> {
    prop_oneof![
        (0i32..6).prop_map(Bson::Int32),
        (0i64..6).prop_map(|v| Bson::Double(v as f64 + 0.5)),
        (0i64..6).prop_map(Bson::Int64),
        prop::sample::select(vec!["", "a", "ab", "abc", "b", "ba", "B"])
            .prop_map(|s| Bson::String(s.into())),
        Just(Bson::Null),
        Just(Bson::Double(-0.0)),
        // A symbol indexes as the string it holds; a stored regex equals a query's regex.
        Just(Bson::Symbol("ab".into())),
        Just(regex("^a", "")),
        // Equal to itself, above nothing and below nothing: a range bound the planner skips.
        Just(Bson::Double(f64::NAN)),
        any::<bool>().prop_map(Bson::Boolean),
    ]
}

fn value() -> impl Strategy<Value = Bson> {
    prop_oneof![
        5 => scalar(),
        2 => prop::collection::vec(scalar(), 0..4).prop_map(Bson::Array),
        1 => scalar().prop_map(|x| Bson::Document(doc! { "x": x })),
        1 => prop::collection::vec(scalar().prop_map(|x| Bson::Document(doc! { "x": x })), 0..3)
            .prop_map(Bson::Array),
        // Arrays of arrays, and fields named like positions (`a.0` reads both).
        1 => prop::collection::vec(prop::collection::vec(scalar(), 0..3).prop_map(Bson::Array), 0..3)
            .prop_map(Bson::Array),
        1 => scalar().prop_map(|x| Bson::Document(doc! { "0": x })),
        1 => prop::collection::vec(
            prop_oneof![
                scalar().prop_map(|x| Bson::Document(doc! { "0": x })),
                scalar().prop_map(|x| Bson::Document(doc! { "x": x })),
                Just(Bson::Document(Document::new())),
                scalar(),
            ],
            0..3
        )
        .prop_map(Bson::Array),
    ]
}

fn maybe(s: impl Strategy<Value = Bson>) -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![1 => Just(None), 4 => s.prop_map(Some)]
}

fn document() -> BoxedStrategy<Document> {
    (
        maybe(value()),
        maybe(scalar()),
        maybe(value()),
        maybe(prop::collection::vec(scalar(), 0..4).prop_map(Bson::Array)),
        maybe(scalar()),
        maybe(scalar()),
        any::<bool>(),
        maybe(subdocuments()),
    )
        .prop_map(|(a, b, d, tags, e, g, e_first, s)| {
            let mut doc = Document::new();
            // Field order varies, so covered results (in index order) meet both orders.
            if e_first && let Some(e) = &e {
                doc.insert("e", e.clone());
            }
            for (name, v) in [("a", a), ("b", b), ("tags", tags)] {
                if let Some(v) = v {
                    doc.insert(name, v);
                }
            }
            if let Some(d) = d {
                doc.insert("c", doc! { "d": d });
            }
            if !e_first && let Some(e) = e {
                doc.insert("e", e);
            }
            if let Some(g) = g {
                doc.insert("n", doc! { "g": g });
            }
            if let Some(s) = s {
                doc.insert("s", s);
            }
            doc
        })
        .boxed()
}

/// An array of subdocuments `{n: ...}` (scalars or arrays of them), or one subdocument: the
/// path `s.n` reaches values in several elements, which `$all` may draw from separately.
fn subdocuments() -> impl Strategy<Value = Bson> {
    let n = prop_oneof![
        3 => scalar(),
        1 => prop::collection::vec(scalar(), 0..3).prop_map(Bson::Array),
    ];
    let element = prop_oneof![
        4 => n.prop_map(|n| Bson::Document(doc! { "n": n })),
        1 => Just(Bson::Document(Document::new())),
    ];
    prop_oneof![
        4 => prop::collection::vec(element.clone(), 0..4).prop_map(Bson::Array),
        1 => element,
    ]
}

/// A document as text with its fields in name order: equal for equal results whatever order a
/// covered result lists its fields in, and telling types apart (int32 from int64, -0.0 from 0.0)
/// while a NaN equals itself, unlike `==`.
fn text(d: &Document) -> String {
    let mut fields: Vec<(&String, &Bson)> = d.iter().collect();
    fields.sort_by_key(|(k, _)| *k);
    format!("{fields:?}")
}

fn texts(docs: &[Document]) -> Vec<String> {
    docs.iter().map(text).collect()
}

const PATHS: [&str; 13] = [
    "a", "b", "c.d", "tags", "_id", "e", "n.g", "a.x", "a.0", "a.0.x", "tags.1", "s.n", "s.0.n",
];

/// Paths of the never-multikey index `{b: 1, e: -1}`: filters on them alone can be covered.
const COVERABLE: [&str; 2] = ["b", "e"];

/// Anchored literals (bounded exactly), patterns bounded by a prefix they only start, and
/// alternations that leave the anchor behind.
const REGEXES: [&str; 11] = [
    "^a", "^ab", "^b", "^", "a", "^ab$", "^a.", "^ab*", "^a\\.", "^ab|b", "^(a|b)",
];

fn condition() -> BoxedStrategy<Document> {
    condition_on(&PATHS)
}

fn condition_on(paths: &[&'static str]) -> BoxedStrategy<Document> {
    let path = prop::sample::select(paths.to_vec());
    let op = prop_oneof![
        scalar().prop_map(|v| v),
        scalar().prop_map(|v| Bson::Document(doc! { "$eq": v })),
        prop::collection::vec(scalar(), 1..3).prop_map(|v| Bson::Document(doc! { "$in": v })),
        (
            prop::sample::select(vec!["$gt", "$gte", "$lt", "$lte"]),
            scalar()
        )
            .prop_map(|(op, v)| {
                let mut d = Document::new();
                d.insert(op, v);
                Bson::Document(d)
            }),
        (scalar(), scalar()).prop_map(|(lo, hi)| Bson::Document(doc! { "$gte": lo, "$lt": hi })),
        // Two bounds on one side, often at one value.
        (scalar(), scalar()).prop_map(|(x, y)| Bson::Document(doc! { "$gte": x, "$gt": y })),
        (scalar(), scalar()).prop_map(|(x, y)| Bson::Document(doc! { "$lt": x, "$lte": y })),
        scalar().prop_map(|v| Bson::Document(doc! { "$ne": v })),
        any::<bool>().prop_map(|b| Bson::Document(doc! { "$exists": b })),
        prop::sample::select(REGEXES.to_vec()).prop_map(|p| Bson::Document(doc! { "$regex": p })),
        prop::sample::select(REGEXES.to_vec())
            .prop_map(|p| Bson::Document(doc! { "$regex": p, "$options": "i" })),
        (prop::sample::select(REGEXES.to_vec()), scalar())
            .prop_map(|(p, v)| Bson::Document(doc! { "$in": [regex(p, ""), v] })),
        prop::collection::vec(scalar(), 1..3).prop_map(|v| Bson::Document(doc! { "$nin": v })),
        (scalar(), scalar())
            .prop_map(|(lo, hi)| Bson::Document(doc! { "$elemMatch": { "$gte": lo, "$lt": hi } })),
        scalar().prop_map(|v| Bson::Document(doc! { "$elemMatch": { "x": v } })),
        prop::collection::vec(scalar(), 1..4).prop_map(|v| Bson::Document(doc! { "$all": v })),
        (scalar(), scalar()).prop_map(|(lo, hi)| Bson::Document(
            doc! { "$elemMatch": { "x": { "$gt": lo, "$lte": hi } } }
        )),
    ];
    (path, op)
        .prop_map(|(p, op)| {
            let mut d = Document::new();
            d.insert(p, op);
            d
        })
        .boxed()
}

fn filter() -> BoxedStrategy<Document> {
    prop_oneof![
        3 => prop::collection::vec(condition(), 0..3).prop_map(|conds| {
            let mut out = Document::new();
            for c in conds {
                for (k, v) in c {
                    if !out.contains_key(&k) {
                        out.insert(k, v);
                    }
                }
            }
            out
        }),
        1 => prop::collection::vec(condition(), 1..3).prop_map(|c| doc! { "$and": c }),
        1 => prop::collection::vec(condition(), 1..3).prop_map(|c| doc! { "$or": c }),
        2 => prop::collection::vec(condition_on(&COVERABLE), 1..3).prop_map(|c| doc! { "$and": c }),
    ]
    .boxed()
}

fn sort() -> impl Strategy<Value = Option<Document>> {
    prop_oneof![
        Just(None),
        (
            prop::sample::select(vec!["a", "b", "c.d", "tags", "e", "n.g"]),
            prop::sample::select(vec![1, -1])
        )
            .prop_map(|(p, d)| {
                let mut s = Document::new();
                s.insert(p, d);
                // A total order, so that limits cut at the same place whatever the plan.
                s.insert("_id", 1);
                Some(s)
            }),
    ]
}

/// Projections: none, inclusions (with or without `_id`; those of `b` and `e` alone can be
/// covered) and exclusions.
fn projection() -> impl Strategy<Value = Option<Document>> {
    let fields = prop::sample::subsequence(vec!["a", "b", "e", "n", "n.g", "tags"], 1..3);
    prop_oneof![
        2 => Just(None),
        2 => (prop::sample::subsequence(vec!["b", "e"], 1..=2), any::<bool>()).prop_map(|(f, id)| {
            let mut p: Document = f.into_iter().map(|f| (f.to_owned(), Bson::Int32(1))).collect();
            if !id {
                p.insert("_id", 0);
            }
            Some(p)
        }),
        1 => (fields.clone(), any::<bool>()).prop_map(|(f, id)| {
            let mut p: Document = f.into_iter().filter(|f| *f != "n.g").map(|f| (f.to_owned(), Bson::Int32(1))).collect();
            if !id {
                p.insert("_id", 0);
            }
            Some(p)
        }),
        1 => fields.prop_map(|f| Some(f.into_iter().map(|f| (f.to_owned(), Bson::Int32(0))).collect())),
    ]
}

fn indexes() -> Vec<IndexSpec> {
    use Direction::{Ascending as Asc, Descending as Desc};
    vec![
        IndexSpec::new([("a", Asc)]).unwrap(),
        IndexSpec::new([("b", Desc), ("a", Asc)]).unwrap(),
        IndexSpec::new([("c.d", Asc)]).unwrap().sparse(),
        IndexSpec::new([("tags", Asc)]).unwrap(),
        IndexSpec::new([("b", Asc)]).unwrap(),
        IndexSpec::new([("a.x", Desc)]).unwrap(),
        IndexSpec::new([("a.0", Asc)]).unwrap(),
        IndexSpec::new([("s.n", Asc)]).unwrap(),
        // Never multikey (`b`, `e` and `n.g` are never arrays): these can cover queries.
        IndexSpec::new([("b", Asc), ("e", Desc)]).unwrap(),
        IndexSpec::new([("n.g", Asc), ("e", Asc)]).unwrap(),
        // Hashed (on fields never arrays): equality and `$in` through hashes, the matcher
        // removing collisions such as 2 and 2.5.
        IndexSpec::hashed("e").unwrap(),
        IndexSpec::from_keys_document(&doc! { "n.g": 1, "b": "hashed" }).unwrap(),
        // Partial indexes with two fields, so that they outrank the others when both are bound.
        // (`b` is never an array, so these never hold parallel arrays.)
        IndexSpec::new([("c.d", Asc), ("b", Asc)])
            .unwrap()
            .partial(doc! { "b": { "$gte": 2 } })
            .unwrap(),
        IndexSpec::new([("tags", Desc), ("b", Asc)])
            .unwrap()
            .partial(doc! { "a": { "$exists": true }, "b": { "$lt": 4 } })
            .unwrap(),
        // Collated, under the collations queries draw (strings keyed as sort keys): string
        // conditions bound them, and they give sorts on strings, only for queries under the
        // same collation.
        IndexSpec::new([("b", Asc)])
            .unwrap()
            .named("b_1_en2")
            .collated(&doc! { "locale": "en", "strength": 2 })
            .unwrap(),
        IndexSpec::new([("a", Desc), ("b", Asc)])
            .unwrap()
            .named("a_-1_b_1_en1")
            .collated(&doc! { "locale": "en", "strength": 1 })
            .unwrap(),
        IndexSpec::new([("tags", Asc)])
            .unwrap()
            .named("tags_1_en2")
            .collated(&doc! { "locale": "en", "strength": 2 })
            .unwrap(),
        // A hashed index under a collation hashes strings' sort keys.
        IndexSpec::hashed("b")
            .unwrap()
            .named("b_hashed_en1")
            .collated(&doc! { "locale": "en", "strength": 1 })
            .unwrap(),
    ]
}

/// No collation (binary strings), or English at strength 2 (case-insensitive) or 1 (base
/// letters only): under a collation, indexes of binary strings may bound only string-free
/// conditions, and those of the same collation any but regexes.
fn collation() -> impl Strategy<Value = Option<Document>> {
    prop_oneof![
        4 => Just(None),
        1 => Just(Some(doc! { "locale": "en", "strength": 2 })),
        1 => Just(Some(doc! { "locale": "en", "strength": 1 })),
    ]
}

/// The same documents (numbered `_id`s) in two databases: one without secondary indexes, one
/// with all of [`indexes`], built before the documents arrive (with `merge_threshold`, when
/// given, documents before and after the indexes' first merge).
fn databases(docs: &[Document], merge_threshold: Option<u64>) -> (Database, Database) {
    let plain = Database::in_memory().unwrap();
    let indexed = Database::in_memory().unwrap();
    if let Some(threshold) = merge_threshold {
        indexed.set_index_merge_threshold(threshold);
    }
    plain.write(|t| t.create_collection("c")).unwrap();
    for spec in indexes() {
        indexed.collection("c").create_index(spec).unwrap();
    }
    for (i, d) in docs.iter().enumerate() {
        let mut d = d.clone();
        d.insert("_id", i as i32);
        plain.collection("c").insert_one(&d).unwrap();
        indexed.collection("c").insert_one(&d).unwrap();
    }
    (plain, indexed)
}

fn run(db: &Database, filter: &Document, options: &FindOptions) -> Result<Vec<Document>, String> {
    let txn = db.read().unwrap();
    let Some(c) = txn.collection("c").unwrap() else {
        return Ok(Vec::new());
    };
    c.find(filter, options)
        .and_then(Iterator::collect)
        .map_err(|e| e.to_string())
}

/// Where an index's bounds decide a filter's conditions exactly, the matcher no longer checks
/// them; these are the cases where bounds look exact and are not, each returning what a scan
/// returns (the property tests below meet them only by chance).
#[test]
fn bounds_decide_only_what_they_decide_exactly() {
    let docs = [
        doc! { "m": [10], "n": f64::NAN, "s": "b" },
        doc! { "m": [0, 10], "n": 3, "s": 4 },
        doc! { "m": 3, "n": -1.5, "s": "a" },
        doc! { "n": f64::NEG_INFINITY },
        doc! { "s": "ab" },
        doc! { "s": Bson::Symbol("abc".into()) },
        doc! { "s": regex("^a", "") },
        doc! { "s": regex("^a", "s") },
    ];
    let (plain, indexed) = databases(&docs, None);
    for spec in [
        IndexSpec::ascending("m").unwrap(),
        IndexSpec::ascending("n").unwrap(),
        IndexSpec::ascending("s").unwrap(),
    ] {
        indexed.collection("c").create_index(spec).unwrap();
    }
    for filter in [
        // Multikey: one range bounds the scan; an element may meet one condition and not both.
        doc! { "m": { "$gte": 1, "$lt": 5 } },
        // Open below: the bracket's start holds NaN, which no range matches.
        doc! { "n": { "$lt": 0 } },
        doc! { "n": { "$lte": 3 } },
        // Conditions in two brackets: the scan is bounded by one.
        doc! { "s": { "$gte": "a", "$lt": 5 } },
        // An equality bounds the scan, the range beside it does not.
        doc! { "n": 3, "$and": [{ "n": { "$gt": 5 } }] },
        // NaN as a range operand bounds nothing and matches nothing.
        doc! { "n": { "$gte": -2, "$lt": f64::NAN } },
        // Two bounds at one value, in either order and of different number types: the
        // exclusive one bounds the scan.
        doc! { "n": { "$gte": 3, "$gt": 3 } },
        doc! { "n": { "$gt": 3_i64, "$gte": 3.0 } },
        doc! { "n": { "$gte": -5, "$lte": 3, "$lt": 3 } },
        doc! { "$and": [{ "n": { "$lte": 3 } }, { "n": { "$lt": 3.0 } }] },
        // A regex bounds the strings that start with its literal prefix and its equal regex;
        // only an all-literal one matches every string there.
        doc! { "s": { "$regex": "^a" } },
        doc! { "s": { "$regex": "^a." } },
        doc! { "s": { "$regex": "^ab$" } },
        doc! { "s": { "$regex": "^abc*" } },
        // The anchor holds only the first alternative: `b` matches, outside `^ab`'s prefix.
        doc! { "s": { "$regex": "^ab|b" } },
        doc! { "s": { "$regex": "^a", "$options": "s" } },
        doc! { "s": { "$in": [regex("^a.", ""), "b"] } },
        doc! { "s": { "$in": [regex("^ab", ""), "b"] } },
    ] {
        let options = FindOptions::default();
        let sorted = |db: &Database| {
            let mut found = texts(&run(db, &filter, &options).unwrap());
            found.sort();
            found
        };
        assert_eq!(sorted(&indexed), sorted(&plain), "{filter}");
        let count = |db: &Database| {
            db.read()
                .unwrap()
                .collection("c")
                .unwrap()
                .unwrap()
                .count_matching(&filter, 0, 0)
                .unwrap()
        };
        assert_eq!(count(&indexed), count(&plain), "{filter}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn plans_return_what_a_scan_returns(
        docs in prop::collection::vec(document(), 0..30),
        filter in filter(),
        sort in sort(),
        projection in projection(),
        skip in prop_oneof![Just(0u64), 0u64..5],
        limit in prop_oneof![Just(None), (1u64..6).prop_map(Some)],
        merge_threshold in 0u64..4,
        collation in collation(),
    ) {
        let (plain, indexed) = databases(&docs, Some(merge_threshold));
        let options = FindOptions { sort: sort.clone(), projection: projection.clone(), skip, limit, hint: None, let_vars: None, collation: collation.clone(), ..FindOptions::default() };
        // The first run plans and caches the choice for this shape; the second reuses it.
        let first = run(&indexed, &filter, &options);
        let (mut expected, mut actual) = match (run(&plain, &filter, &options), run(&indexed, &filter, &options)) {
            (Ok(e), Ok(a)) => {
                prop_assert_eq!(first.as_ref().ok().map(|f| texts(f)), Some(texts(&a)), "a cached plan changed the result");
                // A blocking sort spilled one document a run gives the same results in the
                // same order.
                let spilling = FindOptions { memory_limit: Some(64), ..options.clone() };
                prop_assert_eq!(run(&indexed, &filter, &spilling).ok().map(|s| texts(&s)), Some(texts(&a)), "spilling changed the result");
                (e, a)
            }
            (e, a) => {
                prop_assert_eq!(e.is_err(), a.is_err(), "filter {}", filter);
                return Ok(());
            }
        };
        if sort.is_none() {
            // Projections may drop `_id`: order by the whole document (fields by name, since a
            // covered result lists its fields in index order) instead.
            let order = |a: &Document, b: &Document| {
                let raw = |d: &Document| {
                    let mut fields: Vec<(&String, &Bson)> = d.iter().collect();
                    fields.sort_by_key(|(k, _)| *k);
                    let sorted: Document = fields.into_iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    bson::RawDocumentBuf::try_from(&sorted).unwrap()
                };
                // Equal values of different types (0 and -0.0) tie by value: their debug text,
                // which tells them apart, breaks the tie.
                odm_engine::order::compare_documents(&raw(a), &raw(b))
                    .then_with(|| format!("{a:?}").cmp(&format!("{b:?}")))
            };
            expected.sort_by(order);
            actual.sort_by(order);
            if limit.is_some() || skip > 0 {
                // Unsorted skip/limit may pick any documents: compare how many, and that each matches.
                prop_assert_eq!(expected.len(), actual.len());
                return Ok(());
            }
        }
        prop_assert_eq!(texts(&expected), texts(&actual), "filter {}", filter);
        let count_plain = plain.read().unwrap().collection("c").unwrap().map(|c| c.count_matching_with(&filter, 0, 0, collation.as_ref()).unwrap());
        let count_indexed = indexed.read().unwrap().collection("c").unwrap().map(|c| c.count_matching_with(&filter, 0, 0, collation.as_ref()).unwrap());
        prop_assert_eq!(count_plain, count_indexed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Queries that read and return only indexed fields, so that a covered plan (built from
    /// index entries alone) often wins: the values, their types, nulls and missing fields come
    /// back as a scan of the documents gives them.
    #[test]
    fn covered_plans_return_what_a_scan_returns(
        docs in prop::collection::vec(document(), 0..30),
        conditions in prop::collection::vec(condition_on(&COVERABLE), 1..3),
        projected in prop::sample::subsequence(COVERABLE.to_vec(), 1..=2),
        sorted in any::<bool>(),
        merge_threshold in 0u64..4,
    ) {
        let (plain, indexed) = databases(&docs, Some(merge_threshold));
        let filter = doc! { "$and": conditions };
        let mut projection: Document = projected.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
        projection.insert("_id", 0);
        // Documents equal on the projected fields look alike, so ties need no tie-break.
        let options = FindOptions {
            sort: sorted.then(|| doc! { "b": 1, "e": -1 }),
            projection: Some(projection),
            ..FindOptions::default()
        };
        // Unsorted results are put in an order that ignores field order, which differs between
        // covered results (index order) and fetched ones.
        let canonical = |mut docs: Vec<Document>| {
            if !sorted {
                docs.sort_by_key(|d| {
                    let mut fields: Vec<String> = d.iter().map(|(k, v)| format!("{k}:{v:?}")).collect();
                    fields.sort();
                    fields
                });
            }
            docs
        };
        let expected = run(&plain, &filter, &options).map(canonical);
        let actual = run(&indexed, &filter, &options).map(canonical);
        match (expected, actual) {
            (Ok(e), Ok(a)) => {
                // Field order may differ (covered results list fields in index order); values
                // and types may not.
                prop_assert_eq!(e.len(), a.len());
                for (e, a) in e.iter().zip(&a) {
                    prop_assert_eq!(text(e), text(a), "filter {}", filter);
                    for (k, v) in e {
                        // Debug text tells int32 from int64 and -0.0 from 0.0, unlike `==`.
                        prop_assert_eq!(format!("{v:?}"), format!("{:?}", a.get(k).unwrap()));
                    }
                }
            }
            (e, a) => prop_assert_eq!(e.is_err(), a.is_err()),
        }
        let count = |db: &Database| db.read().unwrap().collection("c").unwrap().map(|c| c.count_matching(&filter, 0, 0).unwrap());
        prop_assert_eq!(count(&plain), count(&indexed));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// A `$group` after a leading `$match` reads only the fields it needs (an index answers
    /// alone when it holds them) and, keyed by one field an index orders, reads that index in
    /// order and passes each group on when the key changes: the groups are those of grouping a
    /// scan of the documents. (Only accumulators whose result does not depend on input order.)
    #[test]
    fn groups_return_what_a_scan_groups(
        docs in prop::collection::vec(document(), 0..30),
        conditions in prop::collection::vec(condition_on(&COVERABLE), 0..2),
        key in prop::sample::select(vec!["$b", "$e", "$n.g", "$a", "$c.d", "$tags", "$a.x"]),
        value in prop::sample::select(vec!["$b", "$e", "$n.g", "$a"]),
        collation in collation(),
    ) {
        let (plain, indexed) = databases(&docs, None);
        let mut pipeline = Vec::new();
        if !conditions.is_empty() {
            pipeline.push(doc! { "$match": { "$and": conditions } });
        }
        pipeline.push(doc! { "$group": {
            "_id": key,
            "n": { "$sum": 1 },
            "total": { "$sum": value },
            "low": { "$min": value },
            "high": { "$max": value },
            "seen": { "$addToSet": value },
        } });
        // Set order is unspecified: sorted (and the groups, below).
        pipeline.push(doc! { "$set": { "seen": { "$sortArray": { "input": "$seen", "sortBy": 1 } } } });
        let options = odm_engine::aggregate::AggregateOptions { collation, ..Default::default() };
        let run = |db: &Database| {
            let txn = db.read().unwrap();
            let Some(c) = txn.collection("c").unwrap() else { return Ok(Vec::new()) };
            c.aggregate(&pipeline, &options).map_err(|e| e.to_string())
        };
        match (run(&plain), run(&indexed)) {
            // Equal values of different numeric types are one group, represented (in `_id`,
            // `$min`, `$max`, `$addToSet`) by whichever came first: input order, which plans
            // may change. So groups compare by value, as MongoDB compares them (under the
            // collation, which equates strings such as `"b"` and `"B"` too).
            (Ok(mut e), Ok(mut a)) => {
                let collation = options.collation.as_ref().and_then(|c| odm_engine::collation::Collation::parse(c).unwrap());
                let raw = |d: &Document| bson::RawDocumentBuf::try_from(d).unwrap();
                let order = |x: &Document, y: &Document| {
                    let (x, y) = (raw(x), raw(y));
                    odm_engine::order::compare_in(
                        bson::RawBsonRef::Document(&x),
                        bson::RawBsonRef::Document(&y),
                        collation.as_deref(),
                    )
                };
                e.sort_by(order);
                a.sort_by(order);
                prop_assert_eq!(e.len(), a.len(), "pipeline {:?}", pipeline);
                for (e, a) in e.iter().zip(&a) {
                    prop_assert!(
                        order(e, a).is_eq(),
                        "{} vs {}, pipeline {:?}", e, a, pipeline
                    );
                }
            }
            (e, a) => prop_assert_eq!(e.is_err(), a.is_err()),
        }
    }
}

/// A write's filter naming one `_id` (stored ones are `Int32`; it may name one as another
/// number type, which encodes to the same key), beside up to one more condition, written the
/// ways a client writes it.
fn filter_by_one_id() -> BoxedStrategy<Document> {
    (
        0i32..14,
        0..3usize,
        0..3usize,
        prop::option::of(condition()),
    )
        .prop_map(|(n, kind, form, extra)| {
            let id = match kind {
                0 => Bson::Int32(n),
                1 => Bson::Int64(i64::from(n)),
                _ => Bson::Double(f64::from(n)),
            };
            let by_id = match form {
                0 => doc! { "_id": id },
                1 => doc! { "_id": { "$eq": id } },
                _ => doc! { "_id": { "$in": [id] } },
            };
            match extra {
                Some(extra) if !extra.contains_key("_id") => {
                    let mut merged = by_id;
                    merged.extend(extra);
                    merged
                }
                Some(extra) => doc! { "$and": [by_id, extra] },
                None => by_id,
            }
        })
        .boxed()
}

/// Every document of `c`, in `_id` order.
fn contents(db: &Database) -> Vec<String> {
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    let all: Vec<Document> = c
        .find(&doc! {}, &FindOptions::default())
        .and_then(Iterator::collect)
        .unwrap();
    texts(&all)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    /// Law: a write whose filter names one `_id` (read by its key, without a cursor) changes
    /// what the same write planned as a collection scan changes, and reports the same.
    #[test]
    fn writes_by_one_id_change_what_a_scans_writes_change(
        docs in prop::collection::vec(document(), 1..12),
        filter in filter_by_one_id(),
        kind in 0..4usize,
        collation in collation(),
    ) {
        // With every index, so that the write's index changes are checked too (`verify`).
        let (_, by_id) = databases(&docs, None);
        let (_, scanned) = databases(&docs, None);
        let update = doc! { "$inc": { "hits": 1 }, "$set": { "seen": true } };
        let write = |db: &Database, hint: Option<Bson>| -> Result<String, String> {
            let update_options = UpdateOptions { hint: hint.clone(), collation: collation.clone(), ..UpdateOptions::default() };
            let delete_options = DeleteOptions { hint: hint.clone(), collation: collation.clone(), ..DeleteOptions::default() };
            let modify = FindAndModify { hint, collation: collation.clone(), ..FindAndModify::default() };
            db.write(|t| Ok(match kind {
                0 => format!("{:?}", t.update_one("c", &filter, update.clone(), &update_options)),
                1 => format!("{:?}", t.update_many("c", &filter, update.clone(), &update_options)),
                2 => format!("{:?}", t.delete_one_with("c", &filter, &delete_options)),
                _ => format!("{:?}", t.find_one_and_update("c", &filter, update.clone(), &modify)),
            }))
            .map_err(|e: odm_engine::Error| e.to_string())
        };
        let natural = Some(Bson::Document(doc! { "$natural": 1 }));
        prop_assert_eq!(write(&by_id, None), write(&scanned, natural), "filter {}", filter);
        prop_assert_eq!(contents(&by_id), contents(&scanned), "filter {}", filter);
        prop_assert!(by_id.verify().unwrap().is_clean());
    }
}

/// `_id`s whose equality is subtle, stored beside the numbered documents: NaN, a decimal, two
/// binaries of one payload, a timestamp, a date, a boolean.
fn subtle_ids() -> Vec<Bson> {
    let binary = |subtype| {
        Bson::Binary(bson::Binary {
            subtype,
            bytes: vec![1, 2],
        })
    };
    vec![
        Bson::Double(f64::NAN),
        Bson::Decimal128("1.5".parse().unwrap()),
        binary(bson::spec::BinarySubtype::Generic),
        binary(bson::spec::BinarySubtype::Uuid),
        Bson::Timestamp(bson::Timestamp {
            time: 7,
            increment: 1,
        }),
        Bson::DateTime(bson::DateTime::from_millis(7)),
        Bson::Boolean(true),
    ]
}

/// An `_id` to update by: the stored ones are `Int32` (`0` equal to `-0.0`) or
/// [`subtle_ids`], named as another type of an equal value, as themselves, or missed, and
/// values the filter `{_id: ..}` reads otherwise than a key (null, a document).
fn an_id() -> impl Strategy<Value = Bson> {
    let subtle = prop::sample::select(subtle_ids());
    (0i32..14, 0..12usize, subtle).prop_map(|(n, kind, subtle)| match kind {
        0 => Bson::Int32(n),
        1 => Bson::Int64(i64::from(n)),
        2 => Bson::Double(f64::from(n)),
        3 => Bson::String(n.to_string()),
        4 => Bson::Null,
        5 => Bson::Document(doc! { "x": n }),
        6 => Bson::ObjectId(bson::oid::ObjectId::from_bytes([n as u8; 12])),
        7 => Bson::Double(-0.0),
        8 => Bson::Decimal128("NaN".parse().unwrap()),
        9 => Bson::Double(1.5),
        10 => Bson::Decimal128("1.50".parse().unwrap()),
        _ => subtle,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Law: an update of one document by `_id` under conditions parsed once does what the same
    /// update does with the filter `{_id: id, ..conditions}`: the same reply, the same
    /// contents, the same index uses (`$indexStats`), a clean `verify`. (Each path's work is
    /// checked against the other's, not against a model: the filter path is the reference.)
    #[test]
    fn updates_by_id_under_conditions_equal_the_filter_they_make(
        docs in prop::collection::vec(document(), 1..12),
        id in an_id(),
        extra in prop::option::of(condition()),
        kind in 0..3usize,
        upsert in any::<bool>(),
        collation in collation(),
    ) {
        use odm_engine::update::{IdConditions, Update, UpdateModifications};
        let conditions = match extra {
            Some(extra) if extra.contains_key("_id") => doc! { "$and": [extra] },
            Some(extra) => extra,
            None => Document::new(),
        };
        let update = match kind {
            0 => doc! { "$inc": { "hits": 1 }, "$set": { "seen": true } },
            1 => doc! { "$push": { "tags": "new" } },
            // Positional: it needs the conditions to have matched an array element.
            _ => doc! { "$set": { "tags.$": "hit" } },
        };
        let scope = odm_engine::expr::Scope::with_let(None).unwrap();
        let parsed = Update::parse_modifications(&UpdateModifications::Document(update), &[], &scope).unwrap();
        let prepared = IdConditions::parse(&conditions).unwrap();
        let options = UpdateOptions { upsert, collation, ..UpdateOptions::default() };
        let (_, by_id) = databases(&docs, None);
        let (_, by_filter) = databases(&docs, None);
        for db in [&by_id, &by_filter] {
            for (i, id) in subtle_ids().into_iter().enumerate() {
                let subtle = doc! { "_id": id, "a": i as i32, "tags": ["x", "y"] };
                db.write(|t| t.insert_one("c", &subtle)).unwrap();
            }
        }
        let by_id_reply = by_id
            .write(|t| t.update_one_by_id_parsed("c", &id, &prepared, &parsed, &options))
            .map_err(|e| e.to_string());
        let filter = prepared.filter(&id);
        let by_filter_reply = by_filter
            .write(|t| t.update_one_parsed("c", &filter, &parsed, &options))
            .map_err(|e| e.to_string());
        prop_assert_eq!(&by_id_reply, &by_filter_reply, "filter {}", filter);
        prop_assert_eq!(contents(&by_id), contents(&by_filter), "filter {}", filter);
        let uses = |db: &Database| -> Vec<String> {
            let stats = db
                .aggregate("c", &[doc! { "$indexStats": {} }], &odm_engine::aggregate::AggregateOptions::default())
                .unwrap();
            let mut uses: Vec<String> = stats
                .iter()
                .map(|d| format!("{} {}", d.get_str("name").unwrap(), d.get_document("accesses").unwrap().get("ops").unwrap()))
                .collect();
            uses.sort();
            uses
        };
        prop_assert_eq!(uses(&by_id), uses(&by_filter), "filter {}", filter);
        prop_assert!(by_id.verify().unwrap().is_clean());
    }
}

#[test]
fn conditions_for_an_update_by_id_may_not_name_the_id() {
    let refused = odm_engine::update::IdConditions::parse(&doc! { "_id": 1, "a": 2 }).unwrap_err();
    assert!(refused.to_string().contains("_id"), "{refused}");
    let malformed =
        odm_engine::update::IdConditions::parse(&doc! { "a": { "$bogus": 1 } }).unwrap_err();
    assert!(malformed.to_string().contains("$bogus"), "{malformed}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// MongoDB's definition of `$all`: the `$and` of one equality per value. Through an array of
    /// subdocuments (`s.n`), each value may be met by a different element; with and without
    /// indexes, the two filters return the same documents.
    #[test]
    fn all_returns_what_the_and_of_its_values_returns(
        docs in prop::collection::vec(document(), 0..30),
        path in prop::sample::select(PATHS.to_vec()),
        values in prop::collection::vec(scalar(), 1..4),
    ) {
        let (plain, indexed) = databases(&docs, None);
        let mut all = Document::new();
        all.insert(path, doc! { "$all": values.clone() });
        let parts: Vec<Document> = values
            .into_iter()
            .map(|v| {
                let mut part = Document::new();
                // A regex in `$all` matches as a pattern, as a regex condition does; any other
                // value is an equality.
                match v {
                    Bson::RegularExpression(_) => part.insert(path, v),
                    v => part.insert(path, doc! { "$eq": v }),
                };
                part
            })
            .collect();
        let and = doc! { "$and": parts };
        let options = FindOptions { sort: Some(doc! { "_id": 1 }), ..FindOptions::default() };
        for db in [&plain, &indexed] {
            let (a, b) = (run(db, &all, &options), run(db, &and, &options));
            prop_assert_eq!(a.map(|d| texts(&d)), b.map(|d| texts(&d)), "{} against {}", all, and);
        }
    }
}
