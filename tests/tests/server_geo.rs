//! Geospatial search over the wire, as drivers and ODMs use it (issue 50): `createIndexes`
//! with `2dsphere` and `2d` key patterns, `listIndexes` with `2dsphereIndexVersion`, `find`
//! with `$near` (nearest first) and `$geoWithin`, `countDocuments`, `aggregate` with
//! `$geoNear`, and MongoDB's error codes for what the server refuses.

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

fn places(server: &ServerHandle) -> (Client, Collection<Document>) {
    let mut options = ClientOptions::parse(server.uri()).run().unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(5));
    let client = Client::with_options(options).unwrap();
    let c = client.database("city").collection::<Document>("places");
    c.insert_many([
        doc! { "_id": 1, "name": "Central Park", "loc": { "type": "Point", "coordinates": [-73.97, 40.77] } },
        doc! { "_id": 2, "name": "Sara D. Roosevelt Park", "loc": { "type": "Point", "coordinates": [-73.9928, 40.7193] } },
        doc! { "_id": 3, "name": "Polo Grounds", "loc": { "type": "Point", "coordinates": [-73.9375, 40.8303] } },
    ])
    .run()
    .unwrap();
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "loc": "2dsphere" })
            .build(),
    )
    .run()
    .unwrap();
    (client, c)
}

fn code_of(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => Some(w.code),
        _ => None,
    }
}

fn ids(docs: impl Iterator<Item = mongodb::error::Result<Document>>) -> Vec<i32> {
    docs.map(|d| d.unwrap().get_i32("_id").unwrap()).collect()
}

#[test]
fn geo_indexes_are_created_and_listed_as_mongodb_lists_them() {
    let server = start();
    let (client, c) = places(&server);
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "grid": "2d" })
            .options(
                IndexOptions::builder()
                    .bits(20)
                    .min(-10.0)
                    .max(10.0)
                    .build(),
            )
            .build(),
    )
    .run()
    .unwrap();
    let reply = client
        .database("city")
        .run_command(doc! { "listIndexes": "places" })
        .run()
        .unwrap();
    let listed = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap();
    let sphere = listed
        .iter()
        .filter_map(|i| i.as_document())
        .find(|i| i.get_str("name").ok() == Some("loc_2dsphere"))
        .expect("the 2dsphere index");
    assert_eq!(
        sphere.get_document("key").unwrap(),
        &doc! { "loc": "2dsphere" }
    );
    assert_eq!(sphere.get_i32("2dsphereIndexVersion").unwrap(), 3);
    let flat = listed
        .iter()
        .filter_map(|i| i.as_document())
        .find(|i| i.get_str("name").ok() == Some("grid_2d"))
        .expect("the 2d index");
    assert_eq!(flat.get_i32("bits").unwrap(), 20);
    let err = c
        .insert_one(doc! { "_id": 9, "loc": { "type": "Point", "coordinates": [0, 100] } })
        .run()
        .unwrap_err();
    assert_eq!(code_of(&err), Some(16755), "{err}");
}

#[test]
fn near_within_count_and_geo_near_answer_over_the_wire() {
    let server = start();
    let (_client, c) = places(&server);
    let near = doc! { "loc": { "$near": {
        "$geometry": { "type": "Point", "coordinates": [-73.9667, 40.78] },
        "$maxDistance": 6_500,
    } } };
    // Central Park is 1.1 km away, Polo Grounds 6.1 km, Sara D. Roosevelt Park 7.1 km.
    assert_eq!(ids(c.find(near).run().unwrap()), [1, 3]);
    let within =
        doc! { "loc": { "$geoWithin": { "$centerSphere": [[-73.9667, 40.78], 5.0 / 3963.2] } } };
    assert_eq!(c.count_documents(within).run().unwrap(), 3);
    let pipeline = [
        doc! { "$geoNear": {
            "near": { "type": "Point", "coordinates": [-73.9667, 40.78] },
            "distanceField": "dist", "spherical": true,
        } },
        doc! { "$limit": 2 },
    ];
    let docs: Vec<Document> = c
        .aggregate(pipeline)
        .run()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0].get_i32("_id").unwrap(), 1);
    assert!(docs[0].get_f64("dist").unwrap() < docs[1].get_f64("dist").unwrap());
    // A near query counted: MongoDB's driver counts through `$match`, where `$near` may not be.
    let err = c
        .count_documents(doc! { "loc": { "$nearSphere": [-73.9667, 40.78] } })
        .run()
        .unwrap_err();
    assert_eq!(code_of(&err), Some(5_626_500), "{err}");
    let err = c
        .find(doc! { "name": { "$near": [0, 0] } })
        .run()
        .and_then(Iterator::collect::<mongodb::error::Result<Vec<_>>>)
        .unwrap_err();
    assert_eq!(code_of(&err), Some(291), "{err}");
}
