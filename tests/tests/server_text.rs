//! Text search over the wire, as drivers and ODMs use it (issue 50): `createIndexes` with a text
//! key pattern and its options, `listIndexes` in MongoDB's stored form, `find` with `$text`, a
//! projected and sorted `textScore`, `count`, `aggregate`, `explain`'s `TEXT_MATCH` stage, and
//! MongoDB's error codes.

use std::time::Duration;

use bson::{Document, doc};
use mongodb::IndexModel;
use mongodb::error::ErrorKind;
use mongodb::options::{ClientOptions, IndexOptions};
use mongodb::sync::{Client, Collection};
use odm_server::{Config, Server, ServerHandle, Storage};

fn start() -> ServerHandle {
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..Config::default()
    };
    Server::bind(Storage::in_memory(), config)
        .expect("binds")
        .spawn()
}

fn articles(server: &ServerHandle) -> (Client, Collection<Document>) {
    let mut options = ClientOptions::parse(server.uri()).run().unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(5));
    let client = Client::with_options(options).unwrap();
    let c = client.database("blog").collection::<Document>("articles");
    c.insert_many([
        doc! { "_id": 1, "title": "Coffee", "body": "brewing coffee at home", "lang": "en" },
        doc! { "_id": 2, "title": "Tea", "body": "coffee is not tea" },
        doc! { "_id": 3, "title": "Café", "body": "el café de la mañana", "lang": "es" },
        doc! { "_id": 4, "title": "Cake", "body": "baking a cake" },
    ])
    .run()
    .unwrap();
    let index = IndexModel::builder()
        .keys(doc! { "title": "text", "body": "text" })
        .options(
            IndexOptions::builder()
                .weights(doc! { "title": 10 })
                .language_override("lang".to_owned())
                .build(),
        )
        .build();
    c.create_index(index).run().unwrap();
    (client, c)
}

fn code_of(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        _ => None,
    }
}

#[test]
fn text_indexes_are_created_and_listed_as_mongodb_lists_them() {
    let server = start();
    let (client, _) = articles(&server);
    let reply = client
        .database("blog")
        .run_command(doc! { "listIndexes": "articles" })
        .run()
        .unwrap();
    let listed = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap();
    let options = listed
        .iter()
        .filter_map(bson::Bson::as_document)
        .find(|i| {
            i.get_document("key")
                .is_ok_and(|k| k == &doc! { "_fts": "text", "_ftsx": 1 })
        })
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(options.get_str("name").unwrap(), "title_text_body_text");
    assert_eq!(
        options.get_document("weights").unwrap(),
        &doc! { "body": 1, "title": 10 }
    );
    assert_eq!(options.get_str("language_override").unwrap(), "lang");
    assert_eq!(options.get_i32("textIndexVersion").unwrap(), 3);
}

#[test]
fn finds_counts_and_aggregations_with_scores() {
    let server = start();
    let (_, c) = articles(&server);
    let found: Vec<Document> = c
        .find(doc! { "$text": { "$search": "coffee" } })
        .projection(doc! { "score": { "$meta": "textScore" }, "body": 0 })
        .sort(doc! { "score": { "$meta": "textScore" } })
        .run()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let ids: Vec<i32> = found.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    // The title weighs 10: document 1 first.
    assert_eq!(ids, [1, 2]);
    assert!(found[0].get_f64("score").unwrap() > 10.0, "{found:?}");
    assert_eq!(
        c.count_documents(doc! { "$text": { "$search": "café", "$language": "es" } })
            .run()
            .unwrap(),
        1
    );
    let grouped: Vec<Document> = c
        .aggregate([
            doc! { "$match": { "$text": { "$search": "coffee cake" } } },
            doc! { "$group": { "_id": null, "n": { "$sum": 1 }, "best": { "$max": { "$meta": "textScore" } } } },
        ])
        .run()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(grouped[0].get_i32("n").unwrap(), 3, "{grouped:?}");
}

#[test]
fn explain_shows_the_text_match_stage() {
    let server = start();
    let (client, _) = articles(&server);
    let db = client.database("blog");
    let explained = db
        .run_command(doc! {
            "explain": { "find": "articles", "filter": { "$text": { "$search": "coffee -tea" } } },
            "verbosity": "executionStats",
        })
        .run()
        .unwrap();
    let plan = explained
        .get_document("queryPlanner")
        .and_then(|p| p.get_document("winningPlan"))
        .unwrap();
    assert_eq!(plan.get_str("stage").unwrap(), "TEXT_MATCH", "{plan}");
    assert_eq!(
        plan.get_document("parsedTextQuery").unwrap(),
        &doc! { "terms": ["coffe"], "negatedTerms": ["tea"], "phrases": [], "negatedPhrases": [] }
    );
}

#[test]
fn mongodb_codes_over_the_wire() {
    let server = start();
    let (client, c) = articles(&server);
    let plain = client.database("blog").collection::<Document>("plain");
    plain.insert_one(doc! { "a": "x" }).run().unwrap();
    let no_index = plain
        .find_one(doc! { "$text": { "$search": "x" } })
        .run()
        .unwrap_err();
    assert_eq!(code_of(&no_index), Some(27), "{no_index}");
    let second = c
        .create_index(
            IndexModel::builder()
                .keys(doc! { "x": 1, "title": "text" })
                .build(),
        )
        .run()
        .unwrap_err();
    assert_eq!(code_of(&second), Some(67), "{second}");
    let late = c
        .aggregate([
            doc! { "$skip": 0 },
            doc! { "$match": { "$text": { "$search": "x" } } },
        ])
        .run()
        .unwrap_err();
    assert_eq!(code_of(&late), Some(17313), "{late}");
    let refused = c
        .insert_one(doc! { "title": "x", "lang": "klingon" })
        .run()
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("language override unsupported"),
        "{refused}"
    );
}
