//! S4b identities and S3b attributes.

use bson::Bson;
use odm::Document;
use odm_patterns::{Attr, AttributeArray, Condition, Identity, PatternError};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct User {
    #[odm(id)]
    id: i64,
    name: String,
}

#[test]
fn identities_sign_in_by_any_and_register_all_or_nothing() {
    let db = odm::testing::database().unwrap();
    let users = db.collection::<User>().unwrap();
    users
        .insert_one(&User {
            id: 1,
            name: "Ann".into(),
        })
        .unwrap();
    let ids: Identity<i64> = Identity::open(&db, "identities").unwrap();
    ids.register(1, &[("username", "ann"), ("email", "ann@x.org")])
        .unwrap();
    // Two reads: the identity, then the user.
    let ann = ids.lookup(&users, "email", "ann@x.org").unwrap().unwrap();
    assert_eq!(ann.name, "Ann");
    assert_eq!(ids.user_of("username", "ann").unwrap(), Some(1));
    // A second user claiming one of Ann's identities gets none of them.
    let err = ids
        .register(2, &[("twitter", "@bob"), ("email", "ann@x.org")])
        .unwrap_err();
    assert!(err.to_string().contains("duplicate key"), "{err}");
    assert_eq!(ids.user_of("twitter", "@bob").unwrap(), None);
    ids.add(1, "twitter", "@ann").unwrap();
    assert!(ids.remove("username", "ann").unwrap());
    assert_eq!(
        ids.of_user(&1).unwrap(),
        [
            ("email".to_owned(), "ann@x.org".to_owned()),
            ("twitter".to_owned(), "@ann".to_owned())
        ]
    );
    assert!(matches!(
        ids.add(2, "twitter", "@ann"),
        Err(PatternError::Odm(_))
    ));
}

/// A file of the application's own model, with its attributes in `attrs`.
#[derive(Debug, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "files")]
struct File {
    #[odm(id)]
    id: i32,
    name: String,
    #[serde(default)]
    #[odm(embedded)]
    attrs: Vec<Attr>,
}

#[test]
fn attributes_are_queried_through_one_index() {
    let db = odm::testing::database().unwrap();
    let f = File::fields();
    let files = db.collection::<File>().unwrap();
    for (id, name) in [(1, "notes.txt"), (2, "cat.png"), (3, "song.ogg")] {
        files
            .insert_one(&File {
                id,
                name: name.into(),
                attrs: Vec::new(),
            })
            .unwrap();
    }
    let attrs = AttributeArray::open(&db, "files", &f.attrs).unwrap();
    attrs.put(f.id.eq(1), "type", &"text").unwrap();
    attrs.put(f.id.eq(1), "size", &64).unwrap();
    attrs.put(f.id.eq(2), "type", &"image").unwrap();
    attrs.put(f.id.eq(2), "size", &4096).unwrap();
    attrs.put(f.id.eq(3), "size", &20000).unwrap();
    attrs.put(f.id.eq(3), "size", &100).unwrap(); // replaces, does not add
    assert!(!attrs.put(f.id.eq(9), "size", &1).unwrap(), "no such file");
    assert_eq!(attrs.get::<i32>(f.id.eq(3), "size").unwrap(), Some(100));
    assert_eq!(
        attrs.get::<String>(f.id.eq(1), "type").unwrap().as_deref(),
        Some("text")
    );
    assert_eq!(attrs.get::<String>(f.id.eq(1), "owner").unwrap(), None);
    // The application's own fields are kept.
    assert_eq!(files.get(3).unwrap().unwrap().name, "song.ogg");
    // S3a's query, `size > 64 and <= 16384`, on any attribute through the same index.
    let range = Condition::Range {
        above: Some((Bson::Int32(64), false)),
        below: Some((Bson::Int32(16384), true)),
    };
    let found: Vec<String> = attrs
        .find("size", &range)
        .sort(odm::Sort::asc(&f.id))
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|file| file.name)
        .collect();
    assert_eq!(found, ["cat.png", "song.ogg"]);
    let explain = attrs.explain_find("size", &range).unwrap();
    assert_eq!(
        explain.index_used(),
        Some("attrs.k_1_attrs.v_1"),
        "{explain}"
    );
    // The attribute's condition combines with conditions on the model's own fields.
    let images = files
        .count(
            attrs
                .filter("type", &Condition::Eq(Bson::from("image")))
                .and(f.name.eq("cat.png")),
        )
        .unwrap();
    assert_eq!(images, 1);
    assert!(attrs.remove(f.id.eq(1), "type").unwrap());
    assert_eq!(
        attrs
            .find("type", &Condition::Eq(Bson::from("text")))
            .to_vec()
            .unwrap(),
        []
    );
}
