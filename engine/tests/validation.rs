//! Document validation and `$jsonSchema`: the schema's keywords against the query operators
//! that say the same, and a collection's validator at each level and action.

use bson::{Bson, Document, RawDocumentBuf, bson, doc};
use odm_engine::query::{Filter, FindOptions};
use odm_engine::update::UpdateOptions;
use odm_engine::validation::{Validation, ValidationAction, ValidationLevel};
use odm_engine::{CollectionOptions, Database, Error, ErrorCode};
use proptest::prelude::*;

/// Scalars of every kind a field of the law's documents holds (arrays left out: a schema
/// looks at an array whole, where query operators look into it).
fn scalar() -> impl Strategy<Value = Bson> {
    prop_oneof![
        (-5i32..5).prop_map(Bson::Int32),
        (-5i64..5).prop_map(Bson::Int64),
        (-5.0f64..5.0).prop_map(|d| Bson::Double((d * 2.0).round() / 2.0)),
        "[a-c]{0,4}".prop_map(Bson::String),
        any::<bool>().prop_map(Bson::Boolean),
        Just(Bson::Null),
        Just(Bson::Document(doc! {"x": 1})),
    ]
}

fn document() -> impl Strategy<Value = Document> {
    (prop::option::of(scalar()), prop::option::of(scalar())).prop_map(|(a, b)| {
        let mut d = doc! {"_id": 1};
        if let Some(a) = a {
            d.insert("a", a);
        }
        if let Some(b) = b {
            d.insert("b", b);
        }
        d
    })
}

/// A keyword on field `a` and the query that says the same of a document without arrays.
fn keyword() -> impl Strategy<Value = (Document, Document)> {
    let absent_or = |q: Document| doc! {"$or": [{"a": {"$exists": false}}, q]};
    prop_oneof![
        (-4i32..4).prop_map(move |k| (
            doc! {"properties": {"a": {"minimum": k}}},
            absent_or(doc! {"$or": [{"a": {"$not": {"$type": "number"}}}, {"a": {"$gte": k}}]}),
        )),
        (-4i32..4).prop_map(move |k| (
            doc! {"properties": {"a": {"maximum": k, "exclusiveMaximum": true}}},
            absent_or(doc! {"$or": [{"a": {"$not": {"$type": "number"}}}, {"a": {"$lt": k}}]}),
        )),
        prop::sample::select(vec![
            "string", "int", "double", "bool", "null", "object", "number"
        ])
        .prop_map(move |t| (
            doc! {"properties": {"a": {"bsonType": t}}},
            absent_or(doc! {"a": {"$type": t}}),
        )),
        Just((
            doc! {"required": ["a", "b"]},
            doc! {"a": {"$exists": true}, "b": {"$exists": true}}
        )),
        (0u32..4).prop_map(move |n| (
            doc! {"properties": {"a": {"maxLength": n}}},
            absent_or(doc! {"$or": [
                {"a": {"$not": {"$type": "string"}}},
                {"a": {"$not": {"$regex": format!("^.{{{},}}$", n + 1), "$options": "s"}}},
            ]}),
        )),
        Just((
            doc! {"properties": {"a": {"enum": [1, "a", null]}}},
            absent_or(doc! {"a": {"$in": [1, "a", null]}}),
        )),
        Just((
            doc! {"additionalProperties": false, "properties": {"_id": {}, "a": {}}},
            doc! {"b": {"$exists": false}},
        )),
        Just((
            doc! {"properties": {"a": {"not": {"bsonType": "string"}}}},
            absent_or(doc! {"a": {"$not": {"$type": "string"}}}),
        )),
    ]
}

fn matches(filter: &Document, doc: &Document) -> bool {
    let raw = RawDocumentBuf::try_from(doc).unwrap();
    Filter::parse(filter).unwrap().matches(&raw)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// Law: a `$jsonSchema` keyword matches the documents its query translation matches, and
    /// a schema of several keywords is their conjunction.
    #[test]
    fn a_schema_matches_what_its_query_translation_matches(
        keywords in prop::collection::vec(keyword(), 1..3),
        doc in document(),
    ) {
        let mut schema = doc! {};
        let mut clauses = Vec::new();
        for (i, (keyword, query)) in keywords.iter().enumerate() {
            // Each keyword in an `allOf` branch, so that two `properties` do not collide.
            schema.insert(format!("k{i}"), Bson::Document(keyword.clone()));
            clauses.push(Bson::Document(query.clone()));
        }
        let branches: Vec<Bson> = schema.values().cloned().collect();
        let by_schema = doc! {"$jsonSchema": {"allOf": branches}};
        let by_query = doc! {"$and": clauses};
        prop_assert_eq!(matches(&by_schema, &doc), matches(&by_query, &doc), "{} vs {} on {}", by_schema, by_query, doc);
    }
}

#[test]
fn malformed_schemas_are_refused_by_keyword() {
    for (schema, word) in [
        (doc! {"bsonType": "strung"}, "strung"),
        (doc! {"type": "integer"}, "integer"),
        (doc! {"type": "object", "bsonType": "object"}, "type"),
        (doc! {"required": []}, "required"),
        (doc! {"required": ["a", "a"]}, "twice"),
        (doc! {"minimum": "1"}, "minimum"),
        (doc! {"exclusiveMinimum": true}, "exclusiveMinimum"),
        (doc! {"format": "email"}, "format"),
        (doc! {"$ref": "#/x"}, "$ref"),
        (doc! {"nonsense": 1}, "nonsense"),
        (doc! {"properties": {"a": 1}}, "properties"),
    ] {
        let e = Filter::parse(&doc! {"$jsonSchema": schema.clone()}).unwrap_err();
        assert!(e.to_string().contains(word), "{schema}: {e}");
    }
}

fn validated(validator: Document, level: ValidationLevel, action: ValidationAction) -> Database {
    let db = Database::in_memory().unwrap();
    let validation = Validation::new(validator, level, action).unwrap();
    let options = CollectionOptions::default().with_validation(validation);
    db.write(|w| w.create_collection_with("c", options))
        .unwrap();
    db
}

fn schema_of_names() -> Document {
    doc! {"$jsonSchema": {
        "bsonType": "object",
        "required": ["name"],
        "properties": {"name": {"bsonType": "string"}, "age": {"minimum": 0}},
    }}
}

fn ids(db: &Database) -> Vec<i32> {
    let txn = db.read().unwrap();
    let c = txn.collection("c").unwrap().unwrap();
    c.find(&doc! {}, &FindOptions::default())
        .unwrap()
        .map(|d| d.unwrap().get_i32("_id").unwrap())
        .collect()
}

#[test]
fn a_strict_validator_refuses_inserts_and_updates_that_fail_it_and_says_why() {
    let db = validated(
        schema_of_names(),
        ValidationLevel::Strict,
        ValidationAction::Error,
    );
    let c = db.collection("c");
    c.insert_one(doc! {"_id": 1, "name": "ann", "age": 3})
        .unwrap();
    let e = c.insert_one(doc! {"_id": 2, "name": 7}).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::DOCUMENT_VALIDATION_FAILURE);
    let Error::DocumentValidation { id, details, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(**id, bson!(2));
    assert_eq!(details.get_str("operatorName").unwrap(), "$jsonSchema");
    let rules = details.get_array("schemaRulesNotSatisfied").unwrap();
    let properties = rules[0].as_document().unwrap();
    assert_eq!(
        properties.get_str("operatorName").unwrap(),
        "properties",
        "{details}"
    );
    let failed = properties.get_array("propertiesNotSatisfied").unwrap()[0]
        .as_document()
        .unwrap();
    assert_eq!(failed.get_str("propertyName").unwrap(), "name");
    let why = failed.get_array("details").unwrap()[0]
        .as_document()
        .unwrap();
    assert_eq!(
        why.get_str("reason").unwrap(),
        "type did not match",
        "{why}"
    );
    assert_eq!(why.get_str("consideredType").unwrap(), "int", "{why}");
    let missing = c.insert_one(doc! {"_id": 3}).unwrap_err();
    let Error::DocumentValidation { details, .. } = &missing else {
        panic!("{missing}")
    };
    let required = details.get_array("schemaRulesNotSatisfied").unwrap()[0]
        .as_document()
        .unwrap();
    assert_eq!(
        required.get_array("missingProperties").unwrap(),
        &vec![bson!("name")]
    );
    let update = c.update_one(
        &doc! {"_id": 1},
        &doc! {"$set": {"age": -1}},
        &UpdateOptions::default(),
    );
    assert_eq!(
        update.unwrap_err().error_code(),
        ErrorCode::DOCUMENT_VALIDATION_FAILURE
    );
    assert_eq!(ids(&db), [1]);
    assert_eq!(
        c.get(&bson!(1)).unwrap().unwrap().get_i32("age").unwrap(),
        3
    );
}

#[test]
fn moderate_leaves_invalid_documents_updatable_and_warn_lets_writes_through() {
    let db = validated(
        doc! {"n": {"$gte": 0}},
        ValidationLevel::Strict,
        ValidationAction::Error,
    );
    let c = db.collection("c");
    db.write(|w| {
        w.bypass_document_validation(true);
        w.insert_one("c", doc! {"_id": 1, "n": -5})
    })
    .unwrap();
    c.insert_one(doc! {"_id": 2, "n": 5}).unwrap();
    let moderate = Validation::new(
        doc! {"n": {"$gte": 0}},
        ValidationLevel::Moderate,
        ValidationAction::Error,
    )
    .unwrap();
    db.write(|w| w.set_validation("c", Some(moderate))).unwrap();
    let set = |id: i32, n: i32| {
        c.update_one(
            &doc! {"_id": id},
            &doc! {"$set": {"n": n}},
            &UpdateOptions::default(),
        )
    };
    set(1, -6).unwrap();
    assert!(set(2, -1).is_err(), "a valid document stays valid");
    let warn = Validation::new(
        doc! {"n": {"$gte": 0}},
        ValidationLevel::Strict,
        ValidationAction::Warn,
    )
    .unwrap();
    db.write(|w| w.set_validation("c", Some(warn))).unwrap();
    let before = odm_engine::validation::warnings();
    c.insert_one(doc! {"_id": 3, "n": -1}).unwrap();
    assert!(odm_engine::validation::warnings() > before);
    let off = Validation::new(
        doc! {"n": {"$gte": 0}},
        ValidationLevel::Off,
        ValidationAction::Error,
    )
    .unwrap();
    db.write(|w| w.set_validation("c", Some(off))).unwrap();
    c.insert_one(doc! {"_id": 4, "n": -1}).unwrap();
    assert_eq!(ids(&db), [1, 2, 3, 4]);
}

#[test]
fn a_query_operator_validator_names_the_clauses_that_failed() {
    let db = validated(
        doc! {"a": {"$gt": 1}, "b": {"$exists": true}},
        ValidationLevel::Strict,
        ValidationAction::Error,
    );
    let e = db
        .collection("c")
        .insert_one(doc! {"_id": 1, "a": 0})
        .unwrap_err();
    let Error::DocumentValidation { details, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(details.get_str("operatorName").unwrap(), "$and");
    let clauses = details.get_array("clausesNotSatisfied").unwrap();
    assert_eq!(clauses.len(), 2, "{details}");
    let first = clauses[0]
        .as_document()
        .unwrap()
        .get_document("details")
        .unwrap();
    assert_eq!(first.get_str("operatorName").unwrap(), "$gt");
    assert_eq!(first.get_i32("consideredValue").unwrap(), 0);
    let second = clauses[1]
        .as_document()
        .unwrap()
        .get_document("details")
        .unwrap();
    assert_eq!(second.get_str("reason").unwrap(), "field was missing");
}

#[test]
fn a_validator_survives_reopening_the_file() {
    let dir = std::env::temp_dir().join(format!("odm-validation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("v.odm");
    {
        let db = Database::open(&path).unwrap();
        let validation = Validation::new(
            schema_of_names(),
            ValidationLevel::Moderate,
            ValidationAction::Error,
        )
        .unwrap();
        let options = CollectionOptions::default().with_validation(validation);
        db.write(|w| w.create_collection_with("c", options))
            .unwrap();
    }
    let db = Database::open(&path).unwrap();
    let options = db.read().unwrap().collection_options("c").unwrap();
    let validation = options.validation.unwrap();
    assert_eq!(validation.level(), ValidationLevel::Moderate);
    assert!(db.collection("c").insert_one(doc! {"_id": 1}).is_err());
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}
