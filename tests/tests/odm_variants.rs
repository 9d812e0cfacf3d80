//! Enum models (S14, single-collection inheritance): books and series volumes in one
//! collection, stored with a discriminator; the volume's index partial on it; variant views
//! that imply it in every filter and return the variant's own type. Each test runs on the back
//! end `odm::testing::database()` chooses.

use bson::doc;
use odm::{Document, Embedded, Filter, Variant};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Book {
    #[odm(id)]
    id: i64,
    title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(
    collection = "items",
    index(keys(series_title = 1, volume = 1), unique)
)]
struct SeriesVolume {
    #[odm(id)]
    id: i64,
    title: String,
    series_title: String,
    volume: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "items", shared(title: String))]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    Book(Book),
    #[serde(rename = "series")]
    SeriesVolume(SeriesVolume),
}

fn volume(id: i64, series: &str, n: i32) -> SeriesVolume {
    SeriesVolume {
        id,
        title: format!("{series} {n}"),
        series_title: series.into(),
        volume: n,
    }
}

fn shelf() -> (odm::Database, odm::Collection<Item>) {
    let db = odm::testing::database().unwrap();
    let items = db.collection::<Item>().unwrap();
    items
        .insert_many(&[
            Item::Book(Book {
                id: 1,
                title: "Dune".into(),
            }),
            Item::SeriesVolume(volume(2, "Foundation", 1)),
        ])
        .unwrap();
    items
        .variant::<SeriesVolume>()
        .insert_one(&volume(3, "Foundation", 2))
        .unwrap();
    (db, items)
}

#[test]
fn the_discriminator_is_serdes_tag_and_each_variant_knows_its_value() {
    assert_eq!(<Book as Variant<Item>>::TAG_FIELD, "type");
    assert_eq!(<Book as Variant<Item>>::TAG, "book");
    assert_eq!(<SeriesVolume as Variant<Item>>::TAG, "series");
    assert_eq!(Item::COLLECTION, "items");
    assert_eq!(Item::ID_FIELD, "id");
    let f = Item::fields();
    assert_eq!((f.tag.path(), f.id.path()), ("type", "_id"));
    assert_eq!(f.series_volume.series_title.path(), "series_title");
}

#[test]
fn documents_of_both_shapes_are_stored_with_their_discriminator_and_read_back() {
    let (_db, items) = shelf();
    let all = items
        .find(Filter::all())
        .sort(odm::Sort::asc(&Item::fields().id))
        .to_vec()
        .unwrap();
    assert!(matches!(&all[0], Item::Book(b) if b.title == "Dune"));
    assert!(matches!(&all[2], Item::SeriesVolume(v) if v.volume == 2));
    let f = Item::fields();
    assert_eq!(items.count(f.tag.eq("series")).unwrap(), 2);
    assert_eq!(items.count(f.tag.eq("book")).unwrap(), 1);
    // The variant view's insert wrote the discriminator as the enum does.
    assert_eq!(
        items.get(3).unwrap(),
        Some(Item::SeriesVolume(volume(3, "Foundation", 2)))
    );
    // Every variant's id is the enum's.
    assert_eq!(*all[1].document_id(), 2);
}

#[test]
fn a_variant_view_implies_the_discriminator_and_returns_the_variants_type() {
    let (_db, items) = shelf();
    let volumes = items.variant::<SeriesVolume>();
    let books = items.variant::<Book>();
    let v = Item::fields().series_volume;
    let found: Vec<SeriesVolume> = volumes
        .find(v.series_title.eq("Foundation"))
        .sort(odm::Sort::desc(&v.volume))
        .to_vec()
        .unwrap();
    assert_eq!(found.iter().map(|v| v.volume).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(found.len(), 2);
    // A title filter through the book view never sees volumes, whose titles also match.
    let b = Item::fields().book;
    assert_eq!(books.count(b.title.starts_with("Foundation")).unwrap(), 0);
    assert_eq!(volumes.count(Filter::all()).unwrap(), 2);
    assert_eq!(
        books.find_one(Filter::all()).unwrap().unwrap().title,
        "Dune"
    );

    volumes
        .update_many(
            v.series_title.eq("Foundation"),
            v.title.set("Foundation (reissued)"),
        )
        .unwrap();
    assert_eq!(books.find_one(b.id.eq(1)).unwrap().unwrap().title, "Dune");
    assert_eq!(volumes.delete_many(Filter::all()).unwrap(), 2);
    assert_eq!(items.count(Filter::all()).unwrap(), 1);
}

/// A field every variant has, declared `shared`, has a handle on the enum: filters, sorts
/// and updates through it reach documents of every variant; variant views sort and page by
/// their own fields.
#[test]
fn shared_fields_reach_every_variant_and_views_sort_and_page() {
    let (_db, items) = shelf();
    let f = Item::fields();
    assert_eq!(f.title.path(), "title");
    let titled: Vec<i64> = items
        .find(f.title.gte("Dune"))
        .sort(odm::Sort::desc(&f.title))
        .to_vec()
        .unwrap()
        .iter()
        .map(|item| match item {
            Item::Book(book) => book.id,
            Item::SeriesVolume(volume) => volume.id,
        })
        .collect();
    assert_eq!(titled, [3, 2, 1]);
    let renamed = items
        .update_many(f.title.starts_with("Foundation"), f.title.set("F"))
        .unwrap();
    assert_eq!(renamed.modified, 2);
    let volumes = items.variant::<SeriesVolume>();
    let v = f.series_volume;
    let second = volumes
        .find(Filter::all())
        .sort(odm::Sort::asc(&v.volume))
        .skip(1)
        .limit(5)
        .to_vec()
        .unwrap();
    assert_eq!(
        second
            .iter()
            .map(|v| (v.id, v.title.as_str()))
            .collect::<Vec<_>>(),
        [(3, "F")]
    );
    let streamed: Vec<i32> = volumes
        .find(Filter::all())
        .sort(odm::Sort::desc(&v.volume))
        .iter()
        .unwrap()
        .map(|v| v.unwrap().volume)
        .collect();
    assert_eq!(streamed, [2, 1]);
    let plan = volumes
        .find(v.series_title.eq("Foundation"))
        .explain()
        .unwrap();
    assert_eq!(plan.returned, 2);
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
struct PerSeries {
    series: String,
    volumes: i64,
}

/// A variant's aggregation sees only its documents, takes the variant's handles, reads the
/// variant's type, and groups by its fields; a stage that turns a document into another
/// variant is an error naming it.
#[test]
fn a_variant_aggregation_reads_the_variant_and_groups_by_its_fields() {
    let (_db, items) = shelf();
    let volumes = items.variant::<SeriesVolume>();
    let v = Item::fields().series_volume;
    let later: Vec<SeriesVolume> = volumes
        .aggregate()
        .filter(v.volume.gte(2))
        .to_vec()
        .unwrap();
    assert_eq!(later, [volume(3, "Foundation", 2)]);
    let p = PerSeries::fields();
    let per = volumes
        .aggregate()
        .group(odm::Group::by(&p.series, &v.series_title).count(&p.volumes))
        .to_vec()
        .unwrap();
    let foundation = PerSeries {
        series: "Foundation".into(),
        volumes: 2,
    };
    assert_eq!(per, [foundation]);
    assert_eq!(items.variant::<Book>().aggregate().count().unwrap(), 1);
    let err = volumes
        .aggregate()
        .stage(doc! { "$set": { "type": "book" } })
        .to_vec()
        .unwrap_err();
    assert!(matches!(err, odm::Error::AggregateOutput { .. }), "{err}");
    assert!(
        err.to_string().contains("not of the variant `series`"),
        "{err}"
    );
}

/// A variant view's find-and-modify: by the variant's handles and order, never touching
/// another variant; an upsert stores the discriminator, so the enum reads the new document
/// as that variant.
#[test]
fn a_variant_views_find_and_modify_keeps_to_its_variant() {
    let (_db, items) = shelf();
    let volumes = items.variant::<SeriesVolume>();
    let v = Item::fields().series_volume;
    let last = odm::ModifyOptions {
        sort: Some(odm::Sort::desc(&v.volume)),
        return_after: true,
        ..odm::ModifyOptions::default()
    };
    let renamed = volumes
        .find_one_and_update(Filter::all(), v.title.set("Second"), &last)
        .unwrap();
    assert_eq!(renamed.map(|v| (v.id, v.title)), Some((3, "Second".into())));
    let upsert = odm::ModifyOptions {
        upsert: true,
        return_after: true,
        ..odm::ModifyOptions::default()
    };
    let new = volumes
        .find_one_and_update(
            v.id.eq(7).and(v.series_title.eq("Dune")),
            v.title.set("Dune 1").and(v.volume.set(1)),
            &upsert,
        )
        .unwrap();
    assert_eq!(new, Some(volume(7, "Dune", 1)));
    assert!(matches!(items.get(7).unwrap(), Some(Item::SeriesVolume(_))));
    // The book matches no filter of the volumes' view.
    let books = items.variant::<Book>();
    let none = volumes
        .find_one_and_delete(v.id.eq(1), &odm::ModifyOptions::default())
        .unwrap();
    assert_eq!(none, None);
    assert_eq!(books.count(Filter::all()).unwrap(), 1);
    let gone = volumes
        .find_one_and_delete(v.id.eq(7), &odm::ModifyOptions::default())
        .unwrap();
    assert_eq!(gone.map(|v| v.id), Some(7));
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "papers")]
struct Memo {
    #[odm(id)]
    id: i64,
    title: String,
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "papers")]
struct Note {
    #[odm(id)]
    id: i64,
    #[serde(rename = "heading")]
    title: String,
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "papers", shared(title: String))]
#[serde(tag = "type")]
enum Paper {
    Memo(Memo),
    Note(Note),
}

/// A shared field that serde stores under two names cannot be one handle: opening the
/// collection names both and creates nothing.
#[test]
fn a_shared_field_stored_under_two_names_is_refused_at_open() {
    let db = odm::testing::database().unwrap();
    let err = db.collection::<Paper>().unwrap_err();
    assert!(
        matches!(err, odm::Error::InconsistentModel { ref collection, .. } if collection == "papers"),
        "{err}"
    );
    // Syncing its indexes is refused too, so a later open cannot skip the check.
    let err = db.sync_indexes::<Paper>(false).unwrap_err();
    assert!(matches!(err, odm::Error::InconsistentModel { .. }), "{err}");
    assert!(db.collection::<Paper>().is_err());
    let message = err.to_string();
    assert!(
        message.contains("`title`") && message.contains("`heading`"),
        "{message}"
    );
    assert!(
        !db.collection_names()
            .unwrap()
            .contains(&"papers".to_owned())
    );
}

#[test]
fn a_variants_index_is_partial_on_its_discriminator() {
    let (db, items) = shelf();
    let specs = Item::indexes();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].name(), "series_title_1_volume_1_series");
    assert_eq!(
        specs[0].partial_filter().map(|p| p.document().clone()),
        Some(doc! { "type": "series" })
    );
    // Unique among volumes only: a volume of the same series and number is refused...
    let err = items
        .variant::<SeriesVolume>()
        .insert_one(&volume(4, "Foundation", 1))
        .unwrap_err();
    assert_eq!(err.code(), Some(11000), "{err}");
    // ... and books, which have neither field, are not in the index at all.
    items
        .insert_one(&Item::Book(Book {
            id: 5,
            title: "Emma".into(),
        }))
        .unwrap();
    let plan = db.sync_indexes::<Item>(false).unwrap();
    assert!(plan.created.is_empty(), "{plan}");
}
