//! S7 (library): books with an embedded publisher, a subjects array and embedded reviews;
//! declared indexes on `slug` (unique), `subjects` (multikey) and `publisher.name`; typed
//! finds, updates and explain showing which index serves.

use bson::oid::ObjectId;
use odm::{Document, Embedded, Filter, ModifyOptions, Push, Sort, WriteModel};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Publisher {
    name: String,
    #[serde(rename = "founded_in")]
    founded: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Review {
    user: String,
    stars: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "books", index(keys("publisher.name" = 1)))]
#[serde(rename_all = "camelCase")]
struct Book {
    #[odm(id)]
    id: ObjectId,
    #[odm(index(unique))]
    slug: String,
    title: String,
    #[odm(index)]
    subjects: Vec<String>,
    #[odm(embedded)]
    publisher: Publisher,
    #[odm(embedded)]
    reviews: Vec<Review>,
    page_count: i32,
}

/// A row of the books-per-publisher report.
#[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
struct PerPublisher {
    publisher: String,
    books: u32,
}

fn book(slug: &str, subjects: &[&str], publisher: &str, pages: i32) -> Book {
    Book {
        id: ObjectId::new(),
        slug: slug.to_owned(),
        title: slug.replace('-', " "),
        subjects: subjects.iter().map(|s| (*s).to_owned()).collect(),
        publisher: Publisher {
            name: publisher.to_owned(),
            founded: 1950,
        },
        reviews: Vec::new(),
        page_count: pages,
    }
}

#[test]
fn s7_library_books_by_typed_queries_over_declared_indexes() {
    let db = odm::testing::database().unwrap();
    let books = db.collection::<Book>().unwrap();
    let mongo = book(
        "mongodb-the-definitive-guide",
        &["databases", "nosql"],
        "O'Reilly",
        432,
    );
    let rust = book(
        "programming-rust",
        &["programming", "rust"],
        "O'Reilly",
        735,
    );
    let sql = book("sql-antipatterns", &["databases", "sql"], "Pragmatic", 352);
    books.insert_many([&mongo, &rust, &sql]).unwrap();

    // The declared indexes exist under serde's names.
    let plan = books.sync_indexes(false).unwrap();
    assert_eq!(plan.unchanged, ["slug_1", "subjects_1", "publisher.name_1"]);
    assert!(
        plan.created.is_empty() && plan.undeclared.is_empty(),
        "{plan}"
    );

    let f = Book::fields();
    let found = books.find_one(f.slug.eq("programming-rust")).unwrap();
    assert_eq!(found.as_ref(), Some(&rust));
    assert_eq!(books.get(rust.id).unwrap(), Some(rust.clone()));

    // Multikey: a value in the subjects array, served by subjects_1.
    let databases = books.find(f.subjects.contains("databases"));
    let explain = books
        .find(f.subjects.contains("databases"))
        .explain()
        .unwrap();
    assert_eq!(explain.index_used(), Some("subjects_1"), "{explain}");
    let mut slugs: Vec<String> = databases
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|b| b.slug)
        .collect();
    slugs.sort();
    assert_eq!(slugs, ["mongodb-the-definitive-guide", "sql-antipatterns"]);

    // A path into the embedded publisher, served by its index, sorted by a renamed field.
    let oreilly = books
        .find(f.publisher.name.eq("O'Reilly"))
        .sort(Sort::desc(&f.page_count));
    assert_eq!(
        books
            .find(f.publisher.name.eq("O'Reilly"))
            .explain()
            .unwrap()
            .index_used(),
        Some("publisher.name_1")
    );
    let titles: Vec<i32> = oreilly
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|b| b.page_count)
        .collect();
    assert_eq!(titles, [735, 432]);
    assert_eq!(f.page_count.path(), "pageCount");
    assert_eq!(f.publisher.founded.path(), "publisher.founded_in");

    // Reviews: push typed elements, keep the five best, query with $elemMatch.
    let review = |user: &str, stars| Review {
        user: user.to_owned(),
        stars,
    };
    books
        .update_one(
            f.id.eq(sql.id),
            f.reviews.push_with(
                Push::each([review("ann", 5), review("bob", 2), review("cy", 4)])
                    .sort_by(&Review::fields().stars, false)
                    .slice(2),
            ),
        )
        .unwrap();
    let stored = books.get(sql.id).unwrap().unwrap();
    assert_eq!(stored.reviews, [review("ann", 5), review("cy", 4)]);
    let r = Review::fields();
    let well_reviewed = books
        .find(f.reviews.elem_match(r.stars.gte(4).and(r.user.eq("cy"))))
        .to_vec()
        .unwrap();
    assert_eq!(well_reviewed.len(), 1);

    // Typed updates keep indexes in step; a duplicate slug is refused.
    let result = books
        .update_many(f.subjects.contains("databases"), f.page_count.inc(1))
        .unwrap();
    assert_eq!((result.matched, result.modified), (2, 2));
    let err = books
        .update_one(f.id.eq(rust.id), f.slug.set("sql-antipatterns"))
        .unwrap_err();
    assert!(err.to_string().contains("duplicate key"), "{err}");
    assert_eq!(books.count(Filter::all()).unwrap(), 3);
    if let Some(engine) = db.engine() {
        assert!(engine.verify().unwrap().is_clean());
    }
}

#[test]
// Long on purpose: one S7 scenario told in order; each step reads the state the one before left.
#[allow(clippy::too_many_lines)]
fn s7_library_replaces_and_bulk_writes_typed_models() {
    let db = odm::testing::database().unwrap();
    let books = db.collection::<Book>().unwrap();
    let f = Book::fields();
    let first = book("a-first-book", &["databases"], "Pragmatic", 100);
    books.insert_one(&first).unwrap();

    // find_one_and_replace returns the document before, or after, the replacement.
    let mut second_edition = first.clone();
    second_edition.page_count = 150;
    let before = books
        .find_one_and_replace(
            f.slug.eq("a-first-book"),
            &second_edition,
            &ModifyOptions::default(),
        )
        .unwrap();
    assert_eq!(before, Some(first.clone()));
    let mut third_edition = first.clone();
    third_edition.page_count = 200;
    let after = books
        .find_one_and_replace(
            f.slug.eq("a-first-book"),
            &third_edition,
            &ModifyOptions {
                return_after: true,
                ..ModifyOptions::default()
            },
        )
        .unwrap();
    assert_eq!(after, Some(third_edition.clone()));
    // No match and no upsert: nothing returned, nothing written.
    let missing = book("missing", &[], "Nobody", 1);
    let none = books
        .find_one_and_replace(f.slug.eq("missing"), &missing, &ModifyOptions::default())
        .unwrap();
    assert_eq!(none, None);
    assert_eq!(books.count(Filter::all()).unwrap(), 1);

    // An ordered bulk stops at its first failure (a duplicate slug at position 2) and reports
    // it by position; the operations before it are committed.
    let rust = book("programming-rust", &["rust"], "O'Reilly", 735);
    let duplicate = book("programming-rust", &["rust"], "Elsewhere", 1);
    let never = book("never-inserted", &[], "Nobody", 1);
    let result = books
        .bulk_write(
            [
                WriteModel::InsertOne(rust.clone()),
                WriteModel::UpdateOne {
                    filter: f.slug.eq("a-first-book"),
                    update: f.page_count.inc(1),
                    upsert: false,
                },
                WriteModel::InsertOne(duplicate.clone()),
                WriteModel::InsertOne(never.clone()),
            ],
            true,
        )
        .unwrap();
    assert_eq!(
        (result.inserted, result.matched, result.modified),
        (1, 1, 1)
    );
    assert_eq!(result.failures.len(), 1);
    assert_eq!(result.failures[0].0, 2);
    assert!(result.failures[0].1.to_string().contains("duplicate key"));
    assert_eq!(books.get(never.id).unwrap(), None);
    assert_eq!(books.get(first.id).unwrap().unwrap().page_count, 201);

    // Unordered: goes on past the failure; upserts, replaces and deletes by position.
    let upserted = book("upserted", &["sql"], "Pragmatic", 10);
    let result = books
        .bulk_write(
            [
                WriteModel::InsertOne(duplicate),
                WriteModel::ReplaceOne {
                    filter: f.slug.eq("upserted"),
                    replacement: upserted.clone(),
                    upsert: true,
                },
                WriteModel::UpdateMany {
                    filter: f.publisher.name.eq("Pragmatic"),
                    update: f.title.set("pragmatic"),
                },
                WriteModel::DeleteOne(f.slug.eq("programming-rust")),
                WriteModel::DeleteMany(f.page_count.lt(0)),
            ],
            false,
        )
        .unwrap();
    assert_eq!(result.failures.len(), 1);
    assert_eq!(result.failures[0].0, 0);
    assert_eq!(
        result.upserted_ids,
        [(1, bson::Bson::ObjectId(upserted.id))]
    );
    assert_eq!((result.matched, result.modified, result.deleted), (2, 2, 1));
    let titles: Vec<String> = books
        .find(Filter::all())
        .sort(Sort::asc(&f.slug))
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|b| format!("{}:{}", b.slug, b.title))
        .collect();
    assert_eq!(titles, ["a-first-book:pragmatic", "upserted:pragmatic"]);

    // A collation makes the typed equality case-insensitive (strength 2).
    let pragmatic = books
        .find(f.publisher.name.eq("PRAGMATIC"))
        .collation(bson::doc! { "locale": "en", "strength": 2 })
        .to_vec()
        .unwrap();
    assert_eq!(pragmatic.len(), 2);
    assert!(
        books
            .find(f.publisher.name.eq("PRAGMATIC"))
            .to_vec()
            .unwrap()
            .is_empty()
    );

    // A pipeline update computes from the document's own fields.
    books
        .update_many(
            f.publisher.name.eq("Pragmatic"),
            odm::Update::pipeline(vec![bson::doc! {
                "$set": { "pageCount": { "$multiply": ["$pageCount", 2] } }
            }]),
        )
        .unwrap();
    assert_eq!(books.get(first.id).unwrap().unwrap().page_count, 402);
    let combined = odm::Update::pipeline(Vec::new()).and(f.page_count.inc(1));
    let err = books.update_many(Filter::all(), combined).unwrap_err();
    assert!(
        matches!(&err, odm::Error::Serialize { source, .. }
            if matches!(**source, odm::BuildError::PipelineCombined)),
        "{err:?}"
    );

    // An aggregation over the typed collection: books per publisher, most first.
    books
        .insert_one(&book("rust-in-action", &["rust"], "Manning", 456))
        .unwrap();
    let p = PerPublisher::fields();
    let per_publisher = books
        .aggregate()
        .group(odm::Group::by(&p.publisher, &f.publisher.name).count(&p.books))
        .sort(Sort::desc(&p.books).then_asc(&p.publisher))
        .to_vec()
        .unwrap();
    assert_eq!(
        per_publisher,
        [
            PerPublisher {
                publisher: "Pragmatic".into(),
                books: 2
            },
            PerPublisher {
                publisher: "Manning".into(),
                books: 1
            },
        ]
    );
    // The same through raw stages, the escape hatch.
    let raw = books
        .aggregate()
        .stage(bson::doc! { "$group": { "_id": "$publisher.name", "books": { "$sum": 1 } } })
        .stage_into::<bson::Document>(bson::doc! { "$sort": { "books": -1, "_id": 1 } })
        .to_vec()
        .unwrap();
    assert_eq!(
        raw,
        [
            bson::doc! { "_id": "Pragmatic", "books": 2 },
            bson::doc! { "_id": "Manning", "books": 1 },
        ]
    );
    if let Some(engine) = db.engine() {
        assert!(engine.verify().unwrap().is_clean());
    }
}

/// Typed finds stream: `Find::iter` decodes matches as they are pulled, from one snapshot, and
/// stops reading when dropped.
#[test]
fn s7_typed_finds_stream_from_one_snapshot() {
    let db = odm::testing::database().unwrap();
    let books = db.collection::<Book>().unwrap();
    let all: Vec<Book> = (0..500)
        .map(|i| book(&format!("book-{i:03}"), &["databases"], "O'Reilly", i))
        .collect();
    books.insert_many(&all).unwrap();
    let f = books.fields();
    let mut stream = books
        .find(f.subjects.contains("databases"))
        .sort(Sort::asc(&f.page_count))
        .iter()
        .unwrap();
    // Writes after the stream began are not seen by it: one snapshot.
    books
        .insert_one(&book("late", &["databases"], "O'Reilly", -1))
        .unwrap();
    let first = stream.next().unwrap().unwrap();
    assert_eq!(first.page_count, 0);
    let rest: Vec<i32> = stream.map(|b| b.unwrap().page_count).collect();
    assert_eq!(rest.len(), 499);
    assert!(rest.windows(2).all(|w| w[0] < w[1]));
    // Dropping a stream part way stops its reader.
    let mut partial = books.find(Filter::all()).iter().unwrap();
    assert!(partial.next().is_some());
    drop(partial);
    assert_eq!(books.find(Filter::all()).iter().unwrap().count(), 501);
}

#[test]
fn s7_a_prepared_update_applies_as_the_update_it_was_made_from() {
    let db = odm::testing::database().unwrap();
    let books = db.collection::<Book>().unwrap();
    let f = Book::fields();
    for (slug, publisher) in [
        ("one", "Pragmatic"),
        ("two", "Pragmatic"),
        ("three", "Manning"),
    ] {
        books
            .insert_one(&book(slug, &["databases"], publisher, 100))
            .unwrap();
    }
    let review = Review {
        user: "ann".to_owned(),
        stars: 4,
    };
    // One parse, then three documents updated with it: two one at a time, one by update_many.
    let reviewed = books
        .prepare_update(f.reviews.push(review.clone()).and(f.page_count.inc(10)))
        .unwrap();
    db.transaction(|txn| {
        let mut books = txn.collection::<Book>()?;
        let none = odm::UpdateOptions::default();
        assert_eq!(
            books
                .update_one_prepared(f.slug.eq("one"), &reviewed, &none)?
                .modified,
            1
        );
        assert_eq!(
            books
                .update_one_prepared(f.slug.eq("one"), &reviewed, &none)?
                .modified,
            1
        );
        let manning = f.publisher.name.eq("Manning");
        assert_eq!(
            books
                .update_many_prepared(manning, &reviewed, &none)?
                .modified,
            1
        );
        assert_eq!(
            books
                .update_one_prepared(f.slug.eq("none"), &reviewed, &none)?
                .matched,
            0
        );
        Ok::<_, odm::Error>(())
    })
    .unwrap();
    let pages_and_reviews = |slug: &str| {
        let b = books.find_one(f.slug.eq(slug)).unwrap().unwrap();
        (b.page_count, b.reviews.len())
    };
    assert_eq!(pages_and_reviews("one"), (120, 2));
    assert_eq!(pages_and_reviews("two"), (100, 0));
    assert_eq!(pages_and_reviews("three"), (110, 1));
    let three = books.find_one(f.slug.eq("three")).unwrap().unwrap();
    assert_eq!(three.reviews, [review]);

    // Array filters belong to the parse: beside a prepared update they are refused, on either
    // back end, and nothing changes.
    let with_filters = odm::UpdateOptions {
        array_filters: vec![bson::doc! {"r.stars": {"$gte": 1}}],
        ..odm::UpdateOptions::default()
    };
    let refused = db
        .transaction(|txn| {
            txn.collection::<Book>()?.update_one_prepared(
                f.slug.eq("two"),
                &reviewed,
                &with_filters,
            )
        })
        .unwrap_err();
    assert!(refused.to_string().contains("arrayFilters"), "{refused}");
    assert_eq!(pages_and_reviews("two"), (100, 0));

    // An update that could never apply is refused when prepared, naming its fault.
    let conflicting = books
        .prepare_update(f.page_count.inc(1).and(f.page_count.set(3)))
        .unwrap_err();
    assert!(
        conflicting.to_string().contains("pageCount"),
        "{conflicting}"
    );
}

#[test]
fn s7_updates_by_id_under_prepared_conditions_apply_where_the_conditions_hold() {
    let db = odm::testing::database().unwrap();
    let books = db.collection::<Book>().unwrap();
    let f = Book::fields();
    let short = book("short", &["databases"], "Pragmatic", 100);
    let long = book("long", &["databases"], "Pragmatic", 400);
    for b in [&short, &long] {
        books.insert_one(b).unwrap();
    }
    // Books under 150 pages grow by 100, each at most once here: the conditions are parsed
    // once and judged again at every update.
    let under = books.prepare_conditions(f.page_count.lt(150)).unwrap();
    let grow = books.prepare_update(f.page_count.inc(100)).unwrap();
    let none = odm::UpdateOptions::default();
    let replies = db
        .transaction(|txn| {
            let mut books = txn.collection::<Book>()?;
            let mut replies = Vec::new();
            for id in [short.id, short.id, long.id, ObjectId::new()] {
                let r = books.update_one_by_id_prepared(id, &under, &grow, &none)?;
                replies.push((r.matched, r.modified));
            }
            Ok::<_, odm::Error>(replies)
        })
        .unwrap();
    assert_eq!(replies, [(1, 1), (0, 0), (0, 0), (0, 0)]);
    let pages = |id: ObjectId| books.get(id).unwrap().unwrap().page_count;
    assert_eq!((pages(short.id), pages(long.id)), (200, 400));

    // With `upsert`, a missing id is inserted as the filter `{_id, ..conditions}` seeds it.
    let fresh = ObjectId::new();
    let titled = books
        .prepare_conditions(f.slug.eq("fresh").and(f.page_count.lt(150)))
        .unwrap();
    let upsert = odm::UpdateOptions {
        upsert: true,
        ..odm::UpdateOptions::default()
    };
    let set_title = books.prepare_update(f.title.set("Fresh")).unwrap();
    let inserted = db
        .transaction(|txn| {
            txn.collection::<Book>()?
                .update_one_by_id_prepared(fresh, &titled, &set_title, &upsert)
        })
        .unwrap();
    assert_eq!(inserted.upserted_id, Some(bson::Bson::ObjectId(fresh)));
    let seeded =
        f.id.eq(fresh)
            .and(f.slug.eq("fresh"))
            .and(f.title.eq("Fresh"));
    assert_eq!(books.count(seeded).unwrap(), 1);

    // Conditions may not name the id: it comes with each update.
    let refused = books.prepare_conditions(f.id.eq(fresh)).unwrap_err();
    assert!(refused.to_string().contains("_id"), "{refused}");
}
