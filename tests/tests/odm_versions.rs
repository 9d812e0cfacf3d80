//! Schema versions (SEEDS 002, schema design over an application's lifetime): documents carry
//! their version; reading an older one migrates it (through the previous model and `From`, or
//! through a function); `migrate()` rewrites them all; a document that cannot decode is an
//! error naming the collection and `_id`, never a panic.

use odm::Document;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "library", version = 1)]
struct BookV1 {
    #[odm(id)]
    id: i64,
    title: String,
    author: String,
}

/// Version 2: several authors.
#[derive(Debug, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "library", version = 2, from = BookV1)]
struct BookV2 {
    #[odm(id)]
    id: i64,
    title: String,
    authors: Vec<String>,
}

impl From<BookV1> for BookV2 {
    fn from(old: BookV1) -> Self {
        BookV2 {
            id: old.id,
            title: old.title,
            authors: vec![old.author],
        }
    }
}

/// Version 3: `title` is now `name`, migrated as a document.
#[derive(Debug, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "library", version = 3, migrate = rename_title)]
struct Book {
    #[odm(id)]
    id: i64,
    name: String,
    authors: Vec<String>,
}

fn rename_title(mut doc: bson::Document, from: u32) -> Result<bson::Document, String> {
    if from < 2 {
        let authors = vec![doc.get_str("author").map_err(|e| e.to_string())?.to_owned()];
        doc.remove("author");
        doc.insert("authors", authors);
    }
    let title = doc.remove("title").ok_or("no title")?;
    doc.insert("name", title);
    Ok(doc)
}

#[test]
fn older_documents_migrate_on_read_and_on_demand() {
    let db = odm::testing::database().unwrap();
    let v1 = db.collection::<BookV1>().unwrap();
    v1.insert_one(&BookV1 {
        id: 1,
        title: "Dune".into(),
        author: "Herbert".into(),
    })
    .unwrap();
    // Version 2 reads the version-1 document through From.
    let v2 = db.collection::<BookV2>().unwrap();
    assert_eq!(
        v2.get(1).unwrap(),
        Some(BookV2 {
            id: 1,
            title: "Dune".into(),
            authors: vec!["Herbert".into()],
        })
    );
    v2.insert_one(&BookV2 {
        id: 2,
        title: "Emma".into(),
        authors: vec!["Austen".into()],
    })
    .unwrap();
    // Version 3 reads both older versions through its function, lazily.
    let books = db.collection::<Book>().unwrap();
    let all = books.find(odm::Filter::all()).to_vec().unwrap();
    assert_eq!(all[0].name, "Dune");
    assert_eq!(all[1].authors, ["Austen"]);
    // A program of version 2 cannot read what version 3 writes.
    books
        .insert_one(&Book {
            id: 3,
            name: "Ulysses".into(),
            authors: vec!["Joyce".into()],
        })
        .unwrap();
    let err = v2.get(3).unwrap_err().to_string();
    assert!(err.contains("newer"), "{err}");
    // migrate() rewrites the two old documents at version 3.
    assert_eq!(books.migrate().unwrap(), 2);
    assert_eq!(books.migrate().unwrap(), 0);
    let stored = books
        .aggregate()
        .stage_into::<bson::Document>(bson::doc! { "$match": { "_id": 1_i64 } })
        .to_vec()
        .unwrap();
    assert_eq!(stored[0].get_i64("_v").unwrap(), 3);
    assert_eq!(stored[0].get_str("name").unwrap(), "Dune");
}

#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "people")]
struct Person {
    #[odm(id)]
    id: i64,
    age: u32,
}

#[test]
fn a_document_that_does_not_decode_names_its_collection_and_id() {
    /// Another program's idea of the same collection.
    #[derive(Serialize, Deserialize, Document)]
    #[odm(collection = "people")]
    struct PersonAgedInWords {
        #[odm(id)]
        id: i64,
        age: String,
    }
    let db = odm::testing::database().unwrap();
    let other = db.collection::<PersonAgedInWords>().unwrap();
    other
        .insert_one(&PersonAgedInWords {
            id: 7,
            age: "old".into(),
        })
        .unwrap();
    let people = db.collection::<Person>().unwrap();
    let err = people.get(7).unwrap_err().to_string();
    assert!(err.contains("people") && err.contains('7'), "{err}");
    let err = people
        .find(odm::Filter::all())
        .to_vec()
        .unwrap_err()
        .to_string();
    assert!(err.contains("people"), "{err}");
}
