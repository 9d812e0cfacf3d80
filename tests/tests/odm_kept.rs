//! Fields the ODM keeps: `#[odm(created_at)]` and `#[odm(updated_at)]` timestamps, and the
//! `#[odm(version)]` revision that turns S0.3's lost update (two writers read a document, both
//! save, the second silently overwrites the first) into `Error::VersionConflict`. Each test
//! runs on the back end `odm::testing::database()` chooses; the law runs on the engine.

use bson::DateTime;
use odm::{Document, Error, ModifyOptions, Update, UpdateOptions, WriteModel};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
#[serde(rename_all = "camelCase")]
struct Post {
    #[odm(id)]
    id: i64,
    title: String,
    likes: i64,
    #[odm(created_at)]
    created_at: DateTime,
    #[odm(updated_at)]
    updated_at: Option<DateTime>,
    #[odm(version)]
    revision: u32,
}

fn post(id: i64, title: &str) -> Post {
    Post {
        id,
        title: title.into(),
        likes: 0,
        created_at: DateTime::MIN,
        updated_at: None,
        revision: 0,
    }
}

/// A moment strictly later than every date stamped so far (dates hold milliseconds).
fn later() -> DateTime {
    let before = DateTime::now();
    while DateTime::now() == before {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    DateTime::now()
}

fn stored(posts: &odm::Collection<Post>, id: i64) -> Post {
    posts.get(id).unwrap().expect("the post is stored")
}

#[test]
fn the_derive_names_the_kept_fields_as_serde_writes_them() {
    assert_eq!(Post::CREATED_AT, Some("createdAt"));
    assert_eq!(Post::UPDATED_AT, Some("updatedAt"));
    assert_eq!(Post::REVISION, Some("revision"));
}

#[test]
fn an_insert_stamps_both_timestamps_and_an_update_moves_updated_at_and_the_revision() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    let before = DateTime::now();
    posts.insert_one(&post(1, "first")).unwrap();
    let inserted = stored(&posts, 1);
    assert!(inserted.created_at >= before, "{inserted:?}");
    assert_eq!(inserted.updated_at, Some(inserted.created_at));
    assert_eq!(
        inserted.revision, 0,
        "an insert stores the value's revision"
    );

    let edit = later();
    let f = Post::fields();
    posts.update_one(f.id.eq(1), f.likes.inc(1)).unwrap();
    let updated = stored(&posts, 1);
    assert_eq!(updated.created_at, inserted.created_at);
    assert!(updated.updated_at >= Some(edit), "{updated:?}");
    assert_eq!((updated.likes, updated.revision), (1, 1));

    posts
        .update_many(f.likes.gte(0), f.title.set("renamed"))
        .unwrap();
    assert_eq!(stored(&posts, 1).revision, 2);
}

#[test]
fn an_update_that_writes_a_kept_field_itself_is_left_as_written() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    posts.insert_one(&post(1, "first")).unwrap();
    let f = Post::fields();
    let chosen = DateTime::from_millis(86_400_000);
    posts
        .update_one(
            f.id.eq(1),
            f.updated_at.set(Some(chosen)).and(f.revision.set(9)),
        )
        .unwrap();
    let stored = stored(&posts, 1);
    assert_eq!((stored.updated_at, stored.revision), (Some(chosen), 9));
}

#[test]
fn an_upsert_sets_created_at_and_a_replacement_keeps_it() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    let f = Post::fields();
    let before = DateTime::now();
    posts
        .upsert_one(f.id.eq(7), f.title.set("upserted").and(f.likes.set(0)))
        .unwrap();
    let upserted = stored(&posts, 7);
    assert!(upserted.created_at >= before, "{upserted:?}");
    assert!(upserted.updated_at >= Some(before), "{upserted:?}");
    assert_eq!(
        upserted.revision, 1,
        "the upsert's $inc starts the revision at 1"
    );

    // A replacement built from scratch carries a made-up creation time: the stored one stays.
    let edit = later();
    let replaced = posts.replace_one(f.id.eq(7), &post(7, "replaced")).unwrap();
    assert_eq!((replaced.matched, replaced.modified), (1, 1));
    let after = stored(&posts, 7);
    assert_eq!(after.title, "replaced");
    assert_eq!(after.created_at, upserted.created_at);
    assert!(after.updated_at >= Some(edit), "{after:?}");
    assert_eq!(after.revision, 2);
}

#[test]
fn a_value_with_dollar_strings_is_replaced_literally() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    posts.insert_one(&post(1, "first")).unwrap();
    let f = Post::fields();
    posts.replace_one(f.id.eq(1), &post(1, "$title")).unwrap();
    assert_eq!(stored(&posts, 1).title, "$title");
}

/// S0.3's lost update, caught: two writers read revision 0; the first save stores revision 1,
/// the second is refused and changes nothing; read again, it saves.
#[test]
fn a_save_from_a_stale_read_is_a_version_conflict() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    posts.insert_one(&post(1, "first")).unwrap();
    let mut ann = stored(&posts, 1);
    let mut bob = stored(&posts, 1);

    ann.likes = 10;
    posts.save(&mut ann).unwrap();
    assert_eq!(
        ann.revision, 1,
        "save brings the value to the stored revision"
    );
    assert_eq!(ann, stored(&posts, 1), "and to the stored timestamps");

    bob.title = "bob's".into();
    let err = posts.save(&mut bob).unwrap_err();
    assert!(
        matches!(&err, Error::VersionConflict { revision: 0, collection, .. } if collection == "posts"),
        "{err}"
    );
    assert_eq!(bob.revision, 0, "a refused save leaves the value as it was");
    assert_eq!(stored(&posts, 1).likes, 10);
    assert_eq!(stored(&posts, 1).title, "first");

    let mut bob = stored(&posts, 1);
    bob.title = "bob's".into();
    posts.save(&mut bob).unwrap();
    let last = stored(&posts, 1);
    assert_eq!(
        (last.likes, last.title.as_str(), last.revision),
        (10, "bob's", 2)
    );
}

#[test]
fn a_new_value_saved_from_two_copies_is_inserted_once() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    let mut first = post(3, "new");
    let mut copy = first.clone();
    let before = DateTime::now();
    let inserted = posts.save(&mut first).unwrap();
    assert_eq!(inserted.upserted_id, Some(bson::Bson::Int64(3)));
    assert_eq!(first.revision, 1);
    assert!(first.created_at >= before);
    assert_eq!(first, stored(&posts, 3));
    let err = posts.save(&mut copy).unwrap_err();
    assert!(matches!(err, Error::VersionConflict { .. }), "{err}");
    assert_eq!(stored(&posts, 3), first);

    // Saved again from the value in hand: replaced, created_at kept.
    let created = first.created_at;
    let edit = later();
    first.likes = 1;
    posts.save(&mut first).unwrap();
    let after = stored(&posts, 3);
    assert_eq!(after, first);
    assert_eq!((after.revision, after.created_at), (2, created));
    assert!(after.updated_at >= Some(edit));
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "pages", index(keys(slug = 1), unique))]
struct Page {
    #[odm(id)]
    id: i64,
    slug: String,
    #[odm(created_at)]
    created_at: DateTime,
    #[odm(version)]
    revision: u32,
}

/// A save that breaks another unique index is that index's duplicate key error, not a
/// version conflict (only a duplicate `_id` means another writer saved the same new
/// document), and the value in hand keeps its revision and timestamps.
#[test]
fn a_save_that_breaks_another_unique_index_is_a_duplicate_key_and_changes_nothing() {
    let db = odm::testing::database().unwrap();
    let pages = db.collection::<Page>().unwrap();
    let page = |id, slug: &str| Page {
        id,
        slug: slug.into(),
        created_at: DateTime::MIN,
        revision: 0,
    };
    let (mut home, mut about) = (page(1, "home"), page(2, "about"));
    pages.save(&mut home).unwrap();
    pages.save(&mut about).unwrap();
    // A new page under a taken slug: the insert is refused.
    let mut twin = page(3, "home");
    let err = pages.save(&mut twin).unwrap_err();
    assert_eq!(err.code(), Some(11000), "{err}");
    assert!(!matches!(err, Error::VersionConflict { .. }), "{err}");
    assert_eq!(twin, page(3, "home"), "the value is as it was");
    // A known page renamed onto a taken slug: the replacement is refused.
    let kept = about.clone();
    about.slug = "home".into();
    let err = pages.save(&mut about).unwrap_err();
    assert_eq!(err.code(), Some(11000), "{err}");
    assert_eq!(
        (about.revision, about.created_at),
        (kept.revision, kept.created_at)
    );
    assert_eq!(pages.get(2).unwrap(), Some(kept));
    assert_eq!(pages.count(odm::Filter::all()).unwrap(), 2);
}

#[test]
fn update_document_and_delete_document_are_conditional_on_the_revision() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    posts.insert_one(&post(1, "first")).unwrap();
    let read = stored(&posts, 1);
    let f = Post::fields();
    posts.update_document(&read, f.likes.inc(1)).unwrap();
    assert_eq!(stored(&posts, 1).revision, 1);
    let err = posts.update_document(&read, f.likes.inc(1)).unwrap_err();
    assert!(matches!(err, Error::VersionConflict { .. }), "{err}");
    assert_eq!(stored(&posts, 1).likes, 1);

    let err = posts.delete_document(&read).unwrap_err();
    assert!(matches!(err, Error::VersionConflict { .. }), "{err}");
    let current = stored(&posts, 1);
    assert_eq!(posts.delete_document(&current).unwrap(), 1);
    let err = posts.delete_document(&current).unwrap_err();
    assert!(
        matches!(err, Error::VersionConflict { .. }),
        "a removed document is a conflict too: {err}"
    );
}

#[test]
fn pipeline_prepared_bulk_and_find_and_modify_writes_keep_the_fields() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    let f = Post::fields();
    posts.insert_one(&post(1, "first")).unwrap();
    let created = stored(&posts, 1).created_at;

    let edit = later();
    let pipeline = Update::pipeline(vec![
        bson::doc! { "$set": { "likes": { "$add": ["$likes", 5] } } },
    ]);
    posts.update_one(f.id.eq(1), pipeline).unwrap();
    let after = stored(&posts, 1);
    assert_eq!(
        (after.likes, after.revision, after.created_at),
        (5, 1, created)
    );
    assert!(after.updated_at >= Some(edit));

    // A prepared upsert stamps created_at at each call, not once when prepared.
    let prepared = posts
        .prepare_update(f.likes.inc(1).and(f.title.set_on_insert("prepared")))
        .unwrap();
    let upsert = UpdateOptions {
        upsert: true,
        ..UpdateOptions::default()
    };
    let first_call = later();
    db.write(|txn| {
        let mut c = txn.collection::<Post>()?;
        c.update_one_prepared(f.id.eq(2), &prepared, &upsert)?;
        c.update_one_prepared(f.id.eq(1), &prepared, &UpdateOptions::default())
    })
    .unwrap();
    let upserted = stored(&posts, 2);
    assert!(upserted.created_at >= first_call, "{upserted:?}");
    assert_eq!((upserted.likes, upserted.revision), (1, 1));
    assert_eq!(stored(&posts, 1).revision, 2);

    let result = posts
        .bulk_write(
            [
                WriteModel::InsertOne(post(3, "bulk")),
                WriteModel::UpdateOne {
                    filter: f.id.eq(3),
                    update: f.likes.inc(2),
                    upsert: false,
                },
                WriteModel::ReplaceOne {
                    filter: f.id.eq(1),
                    replacement: post(1, "replaced in bulk"),
                    upsert: false,
                },
            ],
            true,
        )
        .unwrap();
    assert_eq!((result.inserted, result.modified), (1, 2));
    let bulk = stored(&posts, 3);
    assert_eq!((bulk.likes, bulk.revision), (2, 1));
    assert!(bulk.created_at >= first_call);
    let replaced = stored(&posts, 1);
    assert_eq!((replaced.revision, replaced.created_at), (3, created));

    let after = ModifyOptions {
        return_after: true,
        ..ModifyOptions::default()
    };
    let found = posts
        .find_one_and_update(f.id.eq(3), f.likes.inc(1), &after)
        .unwrap()
        .unwrap();
    assert_eq!((found.likes, found.revision), (3, 2));
    let found = posts
        .find_one_and_replace(f.id.eq(3), &post(3, "again"), &after)
        .unwrap()
        .unwrap();
    assert_eq!((found.title.as_str(), found.revision), ("again", 3));
    assert_eq!(found.created_at, bulk.created_at);
}

/// A model keeping no field writes exactly the document its value serializes to.
#[test]
fn a_model_without_kept_fields_is_stored_as_it_serializes() {
    #[derive(Debug, PartialEq, Serialize, Deserialize, Document)]
    #[odm(collection = "plain")]
    struct Plain {
        #[odm(id)]
        id: i64,
        edited: Option<DateTime>,
        revision: u32,
    }
    assert_eq!(
        (Plain::CREATED_AT, Plain::UPDATED_AT, Plain::REVISION),
        (None, None, None)
    );
    let db = odm::testing::database().unwrap();
    let plain = db.collection::<Plain>().unwrap();
    let mut value = Plain {
        id: 1,
        edited: None,
        revision: 4,
    };
    plain.save(&mut value).unwrap();
    plain.save(&mut value).unwrap();
    let f = Plain::fields();
    plain.update_one(f.id.eq(1), f.revision.set(4)).unwrap();
    assert_eq!(
        plain.get(1).unwrap(),
        Some(Plain {
            id: 1,
            edited: None,
            revision: 4
        })
    );
}

/// One step of the law below: writer `0..3` reads, edits or saves its copy of one document.
#[derive(Debug, Clone)]
enum Step {
    Read(usize),
    Edit(usize, i64),
    Save(usize),
    Update(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..3_usize).prop_map(Step::Read),
        (0..3_usize, -5..5_i64).prop_map(|(w, n)| Step::Edit(w, n)),
        (0..3_usize).prop_map(Step::Save),
        (0..3_usize).prop_map(Step::Update),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// No lost update: a save or document update succeeds exactly when the document is still
    /// at the revision its writer read, each success increments the revision by one, and the
    /// stored document is always the last successful writer's.
    #[test]
    fn every_write_of_a_known_document_is_conditional_on_its_revision(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        let db = odm::Database::in_memory().unwrap();
        let posts = db.collection::<Post>().unwrap();
        posts.insert_one(&post(1, "law")).unwrap();
        let mut copies: Vec<Post> = (0..3).map(|_| stored(&posts, 1)).collect();
        // The model: the stored likes and revision.
        let (mut likes, mut revision) = (0_i64, 0_u32);
        let f = Post::fields();
        for step in steps {
            match step {
                Step::Read(w) => copies[w] = stored(&posts, 1),
                Step::Edit(w, n) => copies[w].likes += n,
                Step::Save(w) => {
                    let fresh = copies[w].revision == revision;
                    let result = posts.save(&mut copies[w]);
                    prop_assert_eq!(result.is_ok(), fresh, "{:?}", result);
                    if fresh {
                        likes = copies[w].likes;
                        revision += 1;
                        prop_assert_eq!(copies[w].revision, revision);
                    } else {
                        let conflict = matches!(result, Err(Error::VersionConflict { .. }));
                        prop_assert!(conflict, "{:?}", result);
                    }
                }
                Step::Update(w) => {
                    let fresh = copies[w].revision == revision;
                    let result = posts.update_document(&copies[w], f.likes.inc(1));
                    prop_assert_eq!(result.is_ok(), fresh, "{:?}", result);
                    if fresh {
                        likes += 1;
                        revision += 1;
                    }
                }
            }
            let now = stored(&posts, 1);
            prop_assert_eq!((now.likes, now.revision), (likes, revision));
        }
    }
}
