//! Schemas that deploy (`#[odm(schema)]`): the `$jsonSchema` a model's Rust type implies, its
//! deployment as the collection's validator by `Database::collection` with the declared level
//! and action, and the stored documents that break it, found with their paths. Each test runs
//! on the back end `odm::testing::database()` chooses.

use bson::{Bson, doc};
use odm::{Document, Embedded, Error, Schema};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Draft,
    InReview,
    #[serde(rename = "live")]
    Published,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
#[odm(schema)]
struct Author {
    name: String,
    #[odm(schema(pattern = "^[^@]+@[^@]+$"))]
    email: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "articles", schema)]
#[serde(rename_all = "camelCase")]
struct Article {
    #[odm(id)]
    id: i64,
    #[odm(schema(min_length = 1, max_length = 80))]
    title: String,
    status: Status,
    #[odm(schema(minimum = 0))]
    word_count: u32,
    #[odm(schema(max_items = 3))]
    tags: Vec<String>,
    #[odm(embedded)]
    author: Author,
    #[serde(rename = "summary")]
    abstract_text: Option<String>,
    #[odm(updated_at)]
    updated_at: bson::DateTime,
    #[serde(skip)]
    cached: Option<String>,
}

fn article(id: i64) -> Article {
    Article {
        id,
        title: "Schemas that deploy".into(),
        status: Status::Draft,
        word_count: 1200,
        tags: vec!["odm".into()],
        author: Author {
            name: "Ann".into(),
            email: Some("ann@example.org".into()),
        },
        abstract_text: None,
        updated_at: bson::DateTime::MIN,
        cached: None,
    }
}

/// The same collection seen without a schema: what another program may write.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "articles")]
struct Loose {
    #[odm(id)]
    id: i64,
    title: Bson,
    status: Bson,
}

#[test]
fn the_schema_follows_the_rust_type_and_serdes_names() {
    let declared = Article::declared_schema().expect("declared");
    let ints = Bson::from(vec!["int", "long"]);
    assert_eq!(
        declared.json_schema,
        doc! {
            "bsonType": "object",
            "required": ["_id", "title", "status", "wordCount", "tags", "author", "updatedAt"],
            "properties": {
                "_id": { "bsonType": ints.clone() },
                "title": { "bsonType": "string", "minLength": 1, "maxLength": 80 },
                "status": { "bsonType": "string", "enum": ["draft", "in_review", "live"] },
                "wordCount": { "bsonType": ints, "minimum": 0 },
                "tags": { "bsonType": "array", "items": { "bsonType": "string" }, "maxItems": 3 },
                "author": {
                    "bsonType": "object",
                    "required": ["name"],
                    "properties": {
                        "name": { "bsonType": "string" },
                        "email": { "bsonType": ["string", "null"], "pattern": "^[^@]+@[^@]+$" },
                    },
                },
                "summary": { "bsonType": ["string", "null"] },
                "updatedAt": { "bsonType": "date" },
            },
        }
    );
    assert_eq!(
        declared.validator(),
        doc! { "$jsonSchema": declared.json_schema.clone() }
    );
    assert_eq!(Loose::declared_schema(), None);
}

#[test]
fn the_collection_refuses_documents_that_break_the_schema() {
    let db = odm::testing::database().unwrap();
    let articles = db.collection::<Article>().unwrap();
    articles.insert_one(&article(1)).unwrap();
    // A value the Rust type allows but a rule refuses.
    let mut long = article(2);
    long.title = "x".repeat(81);
    let err = articles.insert_one(&long).unwrap_err();
    assert_eq!(err.code(), Some(121), "{err}");
    // Another program's document of the wrong shape.
    let loose = db.collection_named::<Loose>("articles").unwrap();
    let err = loose
        .insert_one(&Loose {
            id: 3,
            title: Bson::Int32(7),
            status: Bson::from("gone"),
        })
        .unwrap_err();
    assert_eq!(err.code(), Some(121), "{err}");
    assert_eq!(articles.count(odm::Filter::all()).unwrap(), 1);
}

/// A schema first declared inside a transaction deploys with its commit (on MongoDB, by a
/// `collMod` after it, since a transaction cannot run one), and an aborted transaction
/// deploys none.
#[test]
fn a_schema_first_declared_in_a_transaction_deploys_with_its_commit() {
    let db = odm::testing::database().unwrap();
    let wrong = |id| Loose {
        id,
        title: Bson::Int32(7),
        status: Bson::from("gone"),
    };
    let aborted: Result<(), Box<dyn std::error::Error>> = db.transaction(|txn| {
        txn.insert_one(&article(1))?;
        Err("changed my mind".into())
    });
    assert_eq!(aborted.unwrap_err().to_string(), "changed my mind");
    let loose = db.collection_named::<Loose>("articles").unwrap();
    loose.insert_one(&wrong(2)).unwrap();
    loose.delete_one(odm::Filter::all()).unwrap();
    db.write(|txn| txn.insert_one(&article(1)).map(drop))
        .unwrap();
    let err = loose.insert_one(&wrong(3)).unwrap_err();
    assert_eq!(err.code(), Some(121), "{err}");
    let articles = db.collection::<Article>().unwrap();
    assert_eq!(articles.count(odm::Filter::all()).unwrap(), 1);
}

#[test]
fn documents_stored_before_the_schema_are_found_with_their_paths() {
    let db = odm::testing::database().unwrap();
    let loose = db.collection_named::<Loose>("articles").unwrap();
    loose
        .insert_one(&Loose {
            id: 9,
            title: Bson::from(""),
            status: Bson::from("gone"),
        })
        .unwrap();
    let articles = db.collection::<Article>().unwrap();
    articles.insert_one(&article(1)).unwrap();
    let found = articles.schema_violations().unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].id, Bson::Int64(9));
    let paths: Vec<&str> = found[0].problems.iter().map(|p| p.path.as_str()).collect();
    for path in ["title", "status", "wordCount", "author"] {
        assert!(paths.contains(&path), "{path} in {}", found[0]);
    }
    let title = found[0]
        .problems
        .iter()
        .find(|p| p.path == "title")
        .unwrap();
    assert!(title.reason.contains("minLength"), "{title:?}");
}

#[test]
fn a_nested_failure_names_the_path_inside_the_subdocument() {
    let db = odm::testing::database().unwrap();
    let articles = db.collection::<Article>().unwrap();
    let mut bad = article(1);
    bad.author.email = Some("not an address".into());
    let err = articles.insert_one(&bad).unwrap_err();
    assert_eq!(err.code(), Some(121), "{err}");
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "notes", schema(level = "moderate", action = "warn"))]
struct Note {
    #[odm(id)]
    id: i64,
    #[odm(schema(max_length = 5))]
    text: String,
}

#[test]
fn a_warn_action_lets_a_breaking_write_through_and_the_violation_is_listed() {
    let db = odm::testing::database().unwrap();
    let notes = db.collection::<Note>().unwrap();
    notes
        .insert_one(&Note {
            id: 1,
            text: "far too long".into(),
        })
        .unwrap();
    let found = notes.schema_violations().unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].problems[0].path, "text");
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "notes", schema)]
struct StrictNote {
    #[odm(id)]
    id: i64,
    #[odm(schema(max_length = 5))]
    text: String,
}

/// The model declares the schema: opening the collection with another declaration replaces
/// the stored validator.
#[test]
fn a_changed_declaration_replaces_the_stored_validator() {
    let db = odm::testing::database().unwrap();
    let notes = db.collection::<Note>().unwrap();
    notes
        .insert_one(&Note {
            id: 1,
            text: "too long".into(),
        })
        .unwrap();
    let strict = db.collection::<StrictNote>().unwrap();
    let err = strict
        .insert_one(&StrictNote {
            id: 2,
            text: "too long".into(),
        })
        .unwrap_err();
    assert_eq!(err.code(), Some(121), "{err}");
    assert!(matches!(err, Error::Engine(_)));
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "versioned", version = 2, migrate = with_scores, schema)]
struct Versioned {
    #[odm(id)]
    id: bson::oid::ObjectId,
    scores: std::collections::HashMap<String, f64>,
    #[odm(version)]
    revision: i32,
}

/// Version 1 had no scores.
fn with_scores(mut stored: bson::Document, _from: u32) -> Result<bson::Document, String> {
    match stored.get("scores") {
        None => {
            stored.insert("scores", bson::Document::new());
            Ok(stored)
        }
        Some(Bson::Document(_)) => Ok(stored),
        Some(other) => Err(format!("scores of another shape: {other}")),
    }
}

/// A versioned model's `_v` is part of its schema; maps are objects of their values' schema.
#[test]
fn a_versioned_models_schema_requires_its_version_field() {
    let schema = Versioned::declared_schema().unwrap().json_schema;
    assert_eq!(
        schema.get_array("required").unwrap(),
        &vec![
            Bson::from("_id"),
            Bson::from("scores"),
            Bson::from("revision"),
            Bson::from("_v")
        ]
    );
    let properties = schema.get_document("properties").unwrap();
    assert_eq!(
        properties.get_document("_id").unwrap(),
        &doc! { "bsonType": "objectId" }
    );
    assert_eq!(
        properties.get_document("scores").unwrap(),
        &doc! { "bsonType": "object", "additionalProperties": { "bsonType": ["double", "int", "long"] } }
    );
    let db = odm::testing::database().unwrap();
    let versioned = db.collection::<Versioned>().unwrap();
    let mut value = Versioned {
        id: bson::oid::ObjectId::new(),
        scores: [("math".to_owned(), 1.5)].into(),
        revision: 0,
    };
    versioned.save(&mut value).unwrap();
    assert!(versioned.schema_violations().unwrap().is_empty());
}

/// A `check` function: a slug is one word.
#[allow(clippy::ptr_arg)]
fn one_word(slug: &String) -> Result<(), String> {
    if slug.contains(' ') {
        Err(format!("`{slug}` is not one word"))
    } else {
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
#[odm(schema)]
struct Link {
    #[odm(schema(check = one_word, min_length = 1))]
    slug: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "wiki", schema)]
struct WikiPage {
    #[odm(id)]
    id: i64,
    #[odm(schema(check = one_word))]
    slug: String,
    #[odm(embedded)]
    links: Vec<Link>,
    #[odm(embedded)]
    parent: Option<Link>,
    /// Not marked embedded: its values' checks run all the same.
    related: std::collections::BTreeMap<String, Link>,
}

fn wiki(id: i64, slug: &str, links: &[&str], parent: Option<&str>) -> WikiPage {
    let link = |slug: &str| Link { slug: slug.into() };
    WikiPage {
        id,
        slug: slug.into(),
        links: links.iter().copied().map(link).collect(),
        parent: parent.map(link),
        related: std::collections::BTreeMap::new(),
    }
}

/// Field `check` functions run on every write of a whole value (`insert_one`, `insert_many`, replace,
/// save, bulk), inside embedded values too, before anything is written; a refusal names the
/// path of the refused field. Operator updates are not whole values: the server's validator
/// holds there.
#[test]
fn check_functions_refuse_whole_values_with_the_refused_path() {
    let db = odm::testing::database().unwrap();
    let pages = db.collection::<WikiPage>().unwrap();
    pages
        .insert_one(&wiki(1, "home", &["about"], None))
        .unwrap();
    let refused = |err: Error| match err {
        Error::CheckFailed {
            collection,
            problem,
        } => {
            assert_eq!(collection, "wiki");
            assert!(
                problem.reason.contains("is not one word"),
                "{}",
                problem.reason
            );
            problem.path
        }
        other => panic!("not a check failure: {other}"),
    };
    let path = |page: WikiPage| refused(pages.insert_one(&page).unwrap_err());
    assert_eq!(path(wiki(2, "two words", &[], None)), "slug");
    assert_eq!(path(wiki(2, "ok", &["a", "b c"], None)), "links.1.slug");
    assert_eq!(path(wiki(2, "ok", &[], Some("up here"))), "parent.slug");
    let mut aside = wiki(2, "ok", &[], None);
    aside.related.insert(
        "see".into(),
        Link {
            slug: "see also".into(),
        },
    );
    assert_eq!(path(aside), "related.see.slug");
    let batch = [wiki(2, "fine", &[], None), wiki(3, "not fine", &[], None)];
    assert_eq!(refused(pages.insert_many(&batch).unwrap_err()), "slug");
    let bulk = vec![
        odm::WriteModel::InsertOne(wiki(4, "fine", &[], None)),
        odm::WriteModel::InsertOne(wiki(5, "ok", &["x y"], None)),
    ];
    assert_eq!(
        refused(pages.bulk_write(bulk, true).unwrap_err()),
        "links.0.slug"
    );
    let f = WikiPage::fields();
    let mut home = wiki(1, "home", &["about", "a b"], None);
    assert_eq!(
        refused(pages.replace_one(f.id.eq(1), &home).unwrap_err()),
        "links.1.slug"
    );
    assert_eq!(refused(pages.save(&mut home).unwrap_err()), "links.1.slug");
    assert_eq!(
        pages.count(odm::Filter::all()).unwrap(),
        1,
        "nothing was written"
    );
    assert_eq!(
        pages.get(1).unwrap(),
        Some(wiki(1, "home", &["about"], None))
    );
    // An enum model runs its variants' checks, through the enum and through a variant view.
    let entries = db.collection::<WikiEntry>().unwrap();
    let err = entries
        .insert_one(&WikiEntry::Page(wiki(6, "a b", &[], None)))
        .unwrap_err();
    assert_eq!(refused(err), "slug");
    let err = entries
        .variant::<WikiPage>()
        .insert_one(&wiki(6, "ok", &[], Some("c d")))
        .unwrap_err();
    assert_eq!(refused(err), "parent.slug");
    assert_eq!(
        pages.count(odm::Filter::all()).unwrap(),
        1,
        "nothing was written"
    );
    // An operator update is checked by the server's validator only, which allows a space.
    pages
        .update_one(f.id.eq(1), f.slug.set("two words"))
        .unwrap();
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "wiki")]
#[serde(tag = "kind")]
enum WikiEntry {
    Page(WikiPage),
}

/// The path of the first value `one_word` refuses in `page`, as the checks walk it: the
/// page's slug, its links in order, its parent, its related links by key.
fn first_refused(page: &WikiPage) -> Option<String> {
    let refused = |slug: &str| slug.contains(' ');
    if refused(&page.slug) {
        return Some("slug".into());
    }
    if let Some(i) = page.links.iter().position(|l| refused(&l.slug)) {
        return Some(format!("links.{i}.slug"));
    }
    if page.parent.as_ref().is_some_and(|l| refused(&l.slug)) {
        return Some("parent.slug".into());
    }
    page.related
        .iter()
        .find(|(_, l)| refused(&l.slug))
        .map(|(key, _)| format!("related.{key}.slug"))
}

fn slug() -> impl proptest::strategy::Strategy<Value = String> {
    proptest::prop_oneof![9 => "[a-z]{1,6}", 1 => "[a-z]{1,3} [a-z]{1,3}"]
}

fn link() -> impl proptest::strategy::Strategy<Value = Link> {
    use proptest::prelude::*;
    slug().prop_map(|slug| Link { slug })
}

fn wiki_page(id: i64) -> impl proptest::strategy::Strategy<Value = WikiPage> {
    use proptest::prelude::*;
    (
        slug(),
        proptest::collection::vec(link(), 0..4),
        proptest::option::of(link()),
        proptest::collection::btree_map("[a-z]{1,3}", link(), 0..3),
    )
        .prop_map(move |(slug, links, parent, related)| WikiPage {
            id,
            slug,
            links,
            parent,
            related,
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// A batch is stored whole when every value passes its checks; otherwise nothing is
    /// stored and the error names the first refused field of the first refused value.
    #[test]
    fn a_batch_is_stored_whole_or_refused_at_its_first_refused_field(
        first in wiki_page(1), second in wiki_page(2), third in wiki_page(3)
    ) {
        let pages = [first, second, third];
        let db = odm::Database::in_memory().unwrap();
        let wiki = db.collection::<WikiPage>().unwrap();
        let expected = pages.iter().find_map(first_refused);
        match (wiki.insert_many(&pages), expected) {
            (Ok(ids), None) => proptest::prop_assert_eq!(ids.len(), 3),
            (Err(Error::CheckFailed { problem, .. }), Some(path)) => {
                proptest::prop_assert_eq!(problem.path, path);
                proptest::prop_assert_eq!(wiki.count(odm::Filter::all()).unwrap(), 0);
            }
            (outcome, expected) => proptest::prop_assert!(false, "{outcome:?} against {expected:?}"),
        }
    }
}
