//! S4b identities and S3b attributes.

use bson::Bson;
use odm::{Database, Document};
use odm_patterns::{AttributeArray, Condition, Identity, PatternError};
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
    let db = Database::in_memory().unwrap();
    let users = db.collection::<User>().unwrap();
    users
        .insert_one(&User {
            id: 1,
            name: "Ann".into(),
        })
        .unwrap();
    let ids = Identity::open(&db, "identities").unwrap();
    ids.register(1_i64, &[("username", "ann"), ("email", "ann@x.org")])
        .unwrap();
    // Two reads: the identity, then the user.
    let ann = ids.lookup(&users, "email", "ann@x.org").unwrap().unwrap();
    assert_eq!(ann.name, "Ann");
    assert_eq!(
        ids.user_of("username", "ann").unwrap(),
        Some(Bson::Int64(1))
    );
    // A second user claiming one of Ann's identities gets none of them.
    let err = ids
        .register(2_i64, &[("twitter", "@bob"), ("email", "ann@x.org")])
        .unwrap_err();
    assert!(err.to_string().contains("duplicate key"), "{err}");
    assert_eq!(ids.user_of("twitter", "@bob").unwrap(), None);
    ids.add(1_i64, "twitter", "@ann").unwrap();
    assert!(ids.remove("username", "ann").unwrap());
    assert_eq!(
        ids.of_user(1_i64).unwrap(),
        [
            ("email".to_owned(), "ann@x.org".to_owned()),
            ("twitter".to_owned(), "@ann".to_owned())
        ]
    );
    assert!(matches!(
        ids.add(2_i64, "twitter", "@ann"),
        Err(PatternError::Odm(_))
    ));
}

#[test]
fn attributes_are_queried_through_one_index() {
    let db = Database::in_memory().unwrap();
    let files = AttributeArray::open(&db, "files").unwrap();
    files.put(1, "type", &"text").unwrap();
    files.put(1, "size", &64).unwrap();
    files.put(2, "type", &"image").unwrap();
    files.put(2, "size", &4096).unwrap();
    files.put(3, "size", &20000).unwrap();
    files.put(3, "size", &100).unwrap(); // replaces, does not add
    assert_eq!(files.get::<i32>(3, "size").unwrap(), Some(100));
    assert_eq!(
        files.get::<String>(1, "type").unwrap().as_deref(),
        Some("text")
    );
    assert_eq!(files.get::<String>(1, "owner").unwrap(), None);
    // S3a's query, `size > 64 and <= 16384`, on any attribute through the same index.
    let range = Condition::Range {
        above: Some((Bson::Int32(64), false)),
        below: Some((Bson::Int32(16384), true)),
    };
    assert_eq!(
        files.find("size", &range).unwrap(),
        [Bson::Int32(2), Bson::Int32(3)]
    );
    let explain = files.explain_find("size", &range).unwrap();
    assert_eq!(
        explain.index_used(),
        Some("attrs.k_1_attrs.v_1"),
        "{explain}"
    );
    assert_eq!(
        files
            .find("type", &Condition::Eq(Bson::from("image")))
            .unwrap(),
        [Bson::Int32(2)]
    );
    assert!(files.remove(1, "type").unwrap());
    assert!(
        files
            .find("type", &Condition::Eq(Bson::from("text")))
            .unwrap()
            .is_empty()
    );
}
