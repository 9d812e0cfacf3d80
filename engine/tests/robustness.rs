//! Bad input never panics and a refused write changes nothing: random documents built from the
//! query, update and expression vocabularies (operators in odd places, wrong argument types,
//! every BSON type, long strings, nesting past MongoDB's 100 levels, the operators that grow
//! values) go through finds, counts, aggregations, updates (operators and pipelines), deletes
//! and expression evaluation. Each call may succeed or fail; it must not panic, and when a write
//! fails the collection must be exactly as before, its indexes equal to their recomputation.

use bson::{Bson, Document, doc};
use odm_engine::expr::{Expr, Scope};
use odm_engine::query::FindOptions;
use odm_engine::update::{UpdateModifications, UpdateOptions};
use odm_engine::{Database, IndexSpec};
use proptest::prelude::*;

/// Field names and operators of filters, updates, pipelines and expressions, with paths.
const KEYS: &[&str] = &[
    "a",
    "b",
    "a.b",
    "a.0",
    "c",
    "_id",
    "$eq",
    "$ne",
    "$gt",
    "$lte",
    "$in",
    "$nin",
    "$all",
    "$and",
    "$or",
    "$nor",
    "$not",
    "$elemMatch",
    "$size",
    "$exists",
    "$type",
    "$regex",
    "$options",
    "$mod",
    "$expr",
    "$set",
    "$unset",
    "$inc",
    "$mul",
    "$min",
    "$rename",
    "$push",
    "$addToSet",
    "$pull",
    "$pop",
    "$each",
    "$slice",
    "$sort",
    "$position",
    "$bit",
    "and",
    "$currentDate",
    "$setOnInsert",
    "a.$",
    "a.$[]",
    "a.$[x]",
    "$addFields",
    "$project",
    "$replaceWith",
    "$replaceRoot",
    "newRoot",
    "$literal",
    "$add",
    "$subtract",
    "$divide",
    "$concat",
    "$cond",
    "if",
    "then",
    "else",
    "$map",
    "$filter",
    "$reduce",
    "input",
    "as",
    "in",
    "cond",
    "initialValue",
    "$let",
    "vars",
    "$getField",
    "$setField",
    "field",
    "value",
    "$arrayElemAt",
    "$switch",
    "branches",
    "case",
    "default",
    "$size",
    "$ifNull",
    "$sum",
];

fn scalar() -> impl Strategy<Value = Bson> {
    prop_oneof![
        8 => (-3i32..4).prop_map(Bson::Int32),
        1 => Just(Bson::Int64(i64::MAX)),
        1 => Just(Bson::Int32(i32::MIN)),
        2 => prop_oneof![Just(0.5), Just(-0.0), Just(f64::NAN), Just(f64::INFINITY)]
            .prop_map(Bson::Double),
        8 => prop::sample::select(vec![
            "", "a", "$a", "$a.b", "$$ROOT", "$$x", "$$this", "$$NOW", "^a", "x", "number",
            "string", "$", "$$", "a.$[x]",
        ])
        .prop_map(|s| Bson::String(s.into())),
        2 => Just(Bson::Null),
        2 => any::<bool>().prop_map(Bson::Boolean),
        1 => Just(Bson::Decimal128("1.5".parse().unwrap())),
        3 => other_type(),
        1 => long_string(),
    ]
}

/// One value of each BSON type the list above leaves out.
fn other_type() -> impl Strategy<Value = Bson> {
    use bson::spec::BinarySubtype;
    prop::sample::select(vec![
        Bson::Binary(bson::Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![0, 255],
        }),
        Bson::Binary(bson::Binary {
            subtype: BinarySubtype::Uuid,
            bytes: vec![7; 16],
        }),
        Bson::ObjectId(bson::oid::ObjectId::from_bytes([1; 12])),
        Bson::DateTime(bson::DateTime::from_millis(i64::MIN)),
        Bson::DateTime(bson::DateTime::from_millis(1_700_000_000_000)),
        Bson::Timestamp(bson::Timestamp {
            time: u32::MAX,
            increment: 1,
        }),
        regex("a(b", "imsx"),
        regex("^a", ""),
        Bson::JavaScriptCode("function() {}".to_owned()),
        Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
            code: "x".to_owned(),
            scope: doc! { "x": 1 },
        }),
        Bson::Symbol("a".to_owned()),
        Bson::MinKey,
        Bson::MaxKey,
        Bson::Undefined,
        db_pointer(),
        Bson::Decimal128("NaN".parse().unwrap()),
        Bson::Decimal128("-0E+6111".parse().unwrap()),
    ])
}

fn regex(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(bson::Regex {
        pattern: pattern.try_into().unwrap(),
        options: options.try_into().unwrap(),
    })
}

/// A deprecated DBPointer, which the bson crate builds only by reading bytes.
fn db_pointer() -> Bson {
    let mut bytes = vec![0, 0, 0, 0, 0x0C, b'p', 0, 2, 0, 0, 0, b'c', 0];
    bytes.extend_from_slice(&[1; 12]);
    bytes.push(0);
    let len = i32::try_from(bytes.len()).unwrap().to_le_bytes();
    bytes[..4].copy_from_slice(&len);
    let doc = Document::try_from(bson::RawDocument::from_bytes(&bytes).unwrap()).unwrap();
    doc.get("p").cloned().unwrap()
}

/// A string of up to 64 KiB, past every inline or small-string size, of one or several bytes
/// a character.
fn long_string() -> impl Strategy<Value = Bson> {
    (
        prop::sample::select(vec!["a", "é", "€", "$", "\u{1F600}"]),
        1usize..65_536,
    )
        .prop_map(|(unit, n)| Bson::String(unit.repeat(n / unit.len().max(1))))
}

/// `inner` wrapped in `levels` arrays or documents (alternating from `pick`): nesting past
/// MongoDB's 100 levels, which the engine must refuse or handle without overflowing a stack.
fn deep(inner: Bson, levels: usize, pick: u8) -> Bson {
    (0..levels).fold(inner, |v, i| {
        if (usize::from(pick) + i) % 3 == 0 {
            Bson::Array(vec![v])
        } else {
            Bson::Document(doc! { KEYS[(usize::from(pick) + i) % KEYS.len()]: v })
        }
    })
}

fn value() -> impl Strategy<Value = Bson> {
    let shallow = scalar().prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..4).prop_map(|fields| {
                Bson::Document(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    });
    prop_oneof![
        20 => shallow.clone(),
        1 => (shallow, 90usize..140, any::<u8>()).prop_map(|(v, levels, pick)| deep(v, levels, pick)),
    ]
}

fn document() -> impl Strategy<Value = Document> {
    prop::collection::vec((prop::sample::select(KEYS), value()), 0..4)
        .prop_map(|fields| fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

const PATHS: &[&str] = &[
    "a", "b", "a.b", "a.0", "c.d", "a.$[]", "a.$", "a.$[x]", "_id", "n",
];
const FIELD_OPS: &[&str] = &[
    "$eq",
    "$ne",
    "$gt",
    "$gte",
    "$lt",
    "$in",
    "$nin",
    "$all",
    "$exists",
    "$type",
    "$size",
    "$elemMatch",
    "$not",
    "$regex",
    "$mod",
];
const UPDATE_OPS: &[&str] = &[
    "$set",
    "$unset",
    "$inc",
    "$mul",
    "$min",
    "$max",
    "$rename",
    "$push",
    "$addToSet",
    "$pull",
    "$pullAll",
    "$pop",
    "$bit",
    "$setOnInsert",
    "$currentDate",
];
const EXPR_OPS: &[&str] = &[
    "$toInt",
    "$toString",
    "$toDecimal",
    "$round",
    "$trunc",
    "$pow",
    "$sqrt",
    "$range",
    "$indexOfArray",
    "$setUnion",
    "$substr",
    "$strcasecmp",
    "$year",
    "$dateToString",
    "$trim",
    "$regexMatch",
    "$slice",
    "$split",
    "$substrCP",
    "$add",
    "$subtract",
    "$multiply",
    "$divide",
    "$mod",
    "$concat",
    "$eq",
    "$gt",
    "$cmp",
    "$and",
    "$or",
    "$not",
    "$ifNull",
    "$size",
    "$arrayElemAt",
    "$concatArrays",
    "$in",
    "$toUpper",
    "$abs",
    "$type",
    "$max",
    "$sum",
    "$first",
    "$isArray",
    "$mergeObjects",
    "$zip",
    "$objectToArray",
    "$arrayToObject",
    "$replaceAll",
    "$reverseArray",
    "$setField",
];

fn mostly_scalar() -> impl Strategy<Value = Bson> {
    prop_oneof![3 => scalar(), 1 => value()]
}

/// Filters shaped like real ones: fields with a value or an operator.
fn shaped_filter() -> impl Strategy<Value = Document> {
    prop::collection::vec(
        (
            prop::sample::select(PATHS),
            prop::option::of(prop::sample::select(FIELD_OPS)),
            mostly_scalar(),
        ),
        0..3,
    )
    .prop_map(|fields| {
        fields
            .into_iter()
            .map(|(path, op, v)| match op {
                Some(op) => (path.to_owned(), Bson::Document(doc! { op: v })),
                None => (path.to_owned(), v),
            })
            .collect()
    })
}

/// Updates shaped like real ones: operators over paths.
fn shaped_update() -> impl Strategy<Value = Document> {
    prop::collection::vec(
        (
            prop::sample::select(UPDATE_OPS),
            prop::sample::select(PATHS),
            value(),
        ),
        1..3,
    )
    .prop_map(|ops| {
        let mut update = Document::new();
        for (op, path, v) in ops {
            update.insert(op, doc! { path: v });
        }
        update
    })
}

/// Expressions shaped like real ones: operators over field paths and literals.
fn shaped_expr() -> impl Strategy<Value = Bson> {
    let leaf = prop_oneof![
        prop::sample::select(vec!["$a", "$b", "$a.b", "$c.d", "$_id", "$$ROOT"])
            .prop_map(|s| Bson::String(s.into())),
        scalar(),
    ];
    leaf.prop_recursive(3, 20, 3, |inner| {
        prop_oneof![
            4 => (
                prop::sample::select(EXPR_OPS),
                prop::collection::vec(inner.clone(), 1..3),
            )
                .prop_map(|(op, args)| Bson::Document(doc! { op: args })),
            1 => (inner, 0usize..4, prop::sample::select(vec![0i64, 3, 40])).prop_map(
                |(e, which, n)| growth(e, which, n)
            ),
        ]
    })
}

/// One of the operators that build values from `e` over `n` steps (`$map` and `$reduce` over
/// a `$range`, the accumulating `$reduce` forms that concatenate), small enough for thousands
/// of cases: the string form doubles, and so meets the bound on a string's size within 40
/// steps. (`computed_limits.rs` drives each operator past its bound.)
fn growth(e: Bson, which: usize, n: i64) -> Bson {
    let range = doc! { "$range": [0, n] };
    let step = match which {
        0 => return Bson::Document(doc! { "$map": { "input": range, "in": e } }),
        1 => doc! { "$concatArrays": ["$$value", ["$$this", e]] },
        2 => doc! { "$concat": ["$$value", { "$toString": e }, "$$value"] },
        _ => doc! { "$setUnion": ["$$value", ["$$this", e]] },
    };
    let initial = if which == 2 {
        Bson::from("ab")
    } else {
        Bson::Array(vec![])
    };
    Bson::Document(doc! { "$reduce": { "input": range, "initialValue": initial, "in": step } })
}

/// Pipelines shaped like real ones: `$set` and `$unset` over expressions.
fn shaped_pipeline() -> impl Strategy<Value = Vec<Document>> {
    prop::collection::vec(
        prop_oneof![
            (prop::sample::select(PATHS), shaped_expr())
                .prop_map(|(path, e)| doc! { "$set": { path: e } }),
            prop::sample::select(PATHS).prop_map(|path| doc! { "$unset": path }),
            shaped_expr()
                .prop_map(|e| doc! { "$replaceWith": { "$mergeObjects": ["$$ROOT", { "x": e }] } }),
        ],
        1..3,
    )
}

fn database() -> Database {
    let db = Database::in_memory().unwrap();
    let c = db.collection("c");
    c.create_index(IndexSpec::ascending("a").unwrap()).unwrap();
    c.create_index(IndexSpec::ascending("a.b").unwrap().unique().sparse())
        .unwrap();
    for (i, d) in [
        doc! { "a": 1, "b": "x" },
        doc! { "a": [1, 2, { "b": 3 }], "c": { "d": [] } },
        doc! { "a": { "b": "y" }, "b": [null, 1.5] },
        doc! { "b": "$literal" },
    ]
    .into_iter()
    .enumerate()
    {
        let mut d = d;
        d.insert("_id", i32::try_from(i).unwrap());
        c.insert_one(&d).unwrap();
    }
    db
}

/// The collection's documents as bytes (so that a stored NaN equals itself).
fn contents(db: &Database) -> Vec<Vec<u8>> {
    let txn = db.read().unwrap();
    let coll = txn.collection("c").unwrap().unwrap();
    coll.find_raw(&doc! {}, &FindOptions::default())
        .unwrap()
        .map(|d| d.unwrap().into_bytes())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn random_queries_never_panic(
        filter in prop_oneof![document(), shaped_filter(), shaped_expr().prop_map(|e| doc! { "$expr": e })],
        sort in document(),
        projection in document(),
        let_vars in document(),
    ) {
        let db = database();
        let txn = db.read().unwrap();
        let coll = txn.collection("c").unwrap().unwrap();
        for options in [
            FindOptions::default(),
            FindOptions { sort: Some(sort.clone()), projection: Some(projection.clone()), limit: Some(2), ..FindOptions::default() },
            FindOptions { let_vars: Some(let_vars.clone()), collation: Some(doc! { "locale": "en", "strength": 1 }), ..FindOptions::default() },
        ] {
            if let Ok(cursor) = coll.find(&filter, &options) {
                let _ = cursor.collect::<Result<Vec<_>, _>>();
            }
            let _ = coll.explain(&filter, &options);
        }
        let _ = coll.count_matching(&filter, 0, 0);
        let _ = coll.distinct("a", &filter);
        // The same documents as aggregation stages, and shaped ones.
        let stages = [
            doc! { "$match": filter.clone() },
            doc! { "$group": { "_id": "$a", "n": { "$sum": 1 }, "s": { "$addToSet": "$b" } } },
            doc! { "$unwind": { "path": "$a", "preserveNullAndEmptyArrays": true } },
            doc! { "$sort": sort.clone() },
            doc! { "$project": projection.clone() },
            doc! { "$lookup": { "from": "c", "localField": "a", "foreignField": "b", "as": "j" } },
            doc! { "$lookup": { "from": "c", "let": let_vars.clone(), "pipeline": [{ "$match": filter.clone() }], "as": "k" } },
            let_vars.clone(),
        ];
        let options = odm_engine::aggregate::AggregateOptions { let_vars: Some(let_vars.clone()), ..Default::default() };
        let _ = coll.aggregate(&stages, &options);
        let _ = coll.aggregate(&stages[1..3], &options);
        let _ = coll.aggregate(&stages[5..], &options);
    }

    #[test]
    fn random_updates_change_all_or_nothing(
        filter in prop_oneof![Just(doc! {}), document(), shaped_filter()],
        update in prop_oneof![1 => document(), 3 => shaped_update()],
        pipeline in prop_oneof![1 => prop::collection::vec(document(), 0..3), 3 => shaped_pipeline()],
        upsert in any::<bool>(),
        use_pipeline in any::<bool>(),
    ) {
        let db = database();
        let c = db.collection("c");
        let options = UpdateOptions { upsert, array_filters: vec![doc! { "x": { "$gt": 1 } }], ..UpdateOptions::default() };
        let modifications: UpdateModifications = if use_pipeline { pipeline.into() } else { update.into() };
        let plain = UpdateOptions { upsert, ..UpdateOptions::default() };
        for options in [&options, &plain] {
            let before = contents(&db);
            for many in [true, false] {
                let result = if many {
                    c.update_many(&filter, modifications.clone(), options)
                } else {
                    c.update_one(&filter, modifications.clone(), options)
                };
                if result.is_err() {
                    prop_assert_eq!(&contents(&db), &before, "a failed update changed the collection");
                }
                prop_assert!(db.verify().unwrap().is_clean());
                if result.is_ok() {
                    break;
                }
            }
        }
        let _ = c.delete_many(&filter);
        prop_assert!(db.verify().unwrap().is_clean());
    }

    #[test]
    fn random_expressions_never_panic(
        expr in prop_oneof![value(), shaped_expr()],
        root in document(),
        let_vars in document(),
    ) {
        if let Ok(scope) = Scope::with_let(Some(&let_vars))
            && let Ok(parsed) = Expr::parse(&expr, &scope)
        {
            let _ = parsed.evaluate(&root);
        }
    }
}
