//! Geospatial queries on MongoDB's zip code sample (`datasets/zips.json`, one coordinate pair
//! per document): the engine's answers against the same predicates computed here, by formulas
//! the engine does not use (haversine distances, comparisons of coordinates).

use bson::{Bson, Document, doc};
use odm_engine::query::FindOptions;
use odm_engine::{Database, Error};

/// MongoDB's Earth radius, metres.
const RADIUS: f64 = 6_378_100.0;

fn zips() -> (Database, Vec<(String, f64, f64)>) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/datasets/zips.json"
    );
    let text = std::fs::read_to_string(path).expect("datasets/zips.json beside the project");
    let db = Database::in_memory().unwrap();
    let c = db.collection("zips");
    let mut points = Vec::new();
    let mut docs = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let Ok(Bson::Document(doc)) = Bson::try_from(value) else {
            panic!("a zip code document: {line}")
        };
        let loc = doc.get_array("loc").unwrap();
        let (Some(x), Some(y)) = (loc[0].as_f64(), loc[1].as_f64()) else {
            continue;
        };
        points.push((doc.get_str("_id").unwrap().to_owned(), x, y));
        docs.push(doc);
    }
    // The sample repeats three `_id`s; the first of each is kept.
    let _ = c.insert_many(docs, false);
    points.sort_by(|a, b| a.0.cmp(&b.0));
    points.dedup_by(|a, b| a.0 == b.0);
    (db, points)
}

fn ids(db: &Database, filter: Document) -> Result<Vec<String>, Error> {
    let txn = db.read().unwrap();
    let c = txn.collection("zips").unwrap().unwrap();
    let mut ids: Vec<String> = c
        .find(&filter, &FindOptions::default())?
        .map(|d| d.unwrap().get_str("_id").unwrap().to_owned())
        .collect();
    ids.sort();
    Ok(ids)
}

fn haversine(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (la1, la2) = (a.1.to_radians(), b.1.to_radians());
    let h = ((la2 - la1) / 2.0).sin().powi(2)
        + la1.cos() * la2.cos() * ((b.0 - a.0).to_radians() / 2.0).sin().powi(2);
    2.0 * h.sqrt().asin()
}

#[test]
fn zip_codes_within_5_km_of_a_point_are_those_the_haversine_puts_there() {
    let (db, points) = zips();
    let center = (-73.99, 40.73);
    let radius = 5_000.0 / RADIUS;
    let expected: Vec<String> = points
        .iter()
        .filter(|(_, x, y)| haversine(center, (*x, *y)) <= radius)
        .map(|(id, ..)| id.clone())
        .collect();
    assert!(expected.len() > 10, "{}", expected.len());
    let filter =
        doc! { "loc": { "$geoWithin": { "$centerSphere": [[center.0, center.1], radius] } } };
    assert_eq!(ids(&db, filter).unwrap(), expected);
}

#[test]
fn a_box_holds_what_coordinate_comparisons_hold() {
    let (db, _) = zips();
    let within = ids(
        &db,
        doc! { "loc": { "$geoWithin": { "$box": [[-74.1, 40.6], [-73.9, 40.8]] } } },
    )
    .unwrap();
    let compared = ids(
        &db,
        doc! {
            "loc.0": { "$gte": -74.1, "$lte": -73.9 },
            "loc.1": { "$gte": 40.6, "$lte": 40.8 },
        },
    )
    .unwrap();
    assert!(within.len() > 10);
    assert_eq!(within, compared);
}

#[test]
fn a_state_polygon_holds_its_inner_zip_codes_and_intersects_what_it_holds() {
    let (db, points) = zips();
    // Colorado's corners; the edges are great-circle arcs, which bow away from the parallels
    // by a few kilometres, so only points clear of the borders are judged here.
    let colorado = doc! { "type": "Polygon", "coordinates": [[
        [-109.05, 37.0], [-102.05, 37.0], [-102.05, 41.0], [-109.05, 41.0], [-109.05, 37.0]
    ]] };
    let within = ids(
        &db,
        doc! { "loc": { "$geoWithin": { "$geometry": colorado.clone() } } },
    )
    .unwrap();
    let intersecting = ids(
        &db,
        doc! { "loc": { "$geoIntersects": { "$geometry": colorado } } },
    )
    .unwrap();
    assert_eq!(within, intersecting);
    for (id, x, y) in &points {
        let clearly_in = (-109.0..=-102.1).contains(x) && (37.2..=40.9).contains(y);
        let clearly_out = !(-109.1..=-102.0).contains(x) || !(36.9..=41.2).contains(y);
        let found = within.binary_search(id).is_ok();
        assert!(!clearly_in || found, "{id} ({x}, {y}) is inside");
        assert!(!clearly_out || !found, "{id} ({x}, {y}) is outside");
    }
    assert!(within.len() > 300, "{}", within.len());
}

#[test]
fn a_near_query_without_a_geo_index_is_refused_as_mongodb_refuses_it() {
    let (db, _) = zips();
    let err = ids(
        &db,
        doc! { "loc": { "$near": { "$geometry": { "type": "Point", "coordinates": [-73.99, 40.73] } } } },
    )
    .unwrap_err();
    assert_eq!(err.code(), 291, "{err}");
    assert!(
        err.to_string()
            .contains("unable to find index for $geoNear query")
    );
    let err = ids(
        &db,
        doc! { "$or": [ { "loc": { "$near": [-73.99, 40.73] } }, { "pop": 1 } ] },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("geoNear must be top-level expr"),
        "{err}"
    );
    let txn = db.read().unwrap();
    let c = txn.collection("zips").unwrap().unwrap();
    let err = c
        .aggregate(
            &[doc! { "$match": { "loc": { "$nearSphere": [-73.99, 40.73] } } }],
            &odm_engine::aggregate::AggregateOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), 5_626_500, "{err}");
}

#[test]
fn malformed_geometries_and_shapes_are_refused_with_their_reason() {
    let (db, _) = zips();
    let refused = |shape: Bson, words: &str| {
        let err = ids(&db, doc! { "loc": { "$geoWithin": shape } }).unwrap_err();
        assert_eq!(err.code(), 2, "{err}");
        assert!(err.to_string().contains(words), "{err} lacks {words}");
    };
    let open_ring = doc! { "$geometry": { "type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]] } };
    refused(Bson::Document(open_ring), "Loop is not closed");
    let bow_tie = doc! { "$geometry": { "type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]] } };
    refused(Bson::Document(bow_tie), "cross");
    let out_of_bounds = doc! { "$geometry": { "type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 91], [0, 0]]] } };
    refused(Bson::Document(out_of_bounds), "out of bounds");
    let a_line = doc! { "$geometry": { "type": "LineString", "coordinates": [[0, 0], [1, 1]] } };
    refused(
        Bson::Document(a_line),
        "not supported with provided geometry",
    );
    refused(
        Bson::Document(doc! { "$polygon": [[0, 0], [1, 1]] }),
        "at least 3 points",
    );
    refused(
        Bson::Document(doc! { "$center": [[0, 0], -1] }),
        "non-negative",
    );
    refused(
        Bson::Document(doc! { "$circle": [[0, 0], 1] }),
        "unknown geo specifier",
    );
}

fn nearest(db: &Database, filter: Document, limit: u64) -> Vec<String> {
    let txn = db.read().unwrap();
    let c = txn.collection("zips").unwrap().unwrap();
    let options = FindOptions {
        limit: Some(limit),
        ..FindOptions::default()
    };
    c.find(&filter, &options)
        .unwrap()
        .map(|d| d.unwrap().get_str("_id").unwrap().to_owned())
        .collect()
}

#[test]
fn the_nearest_ten_zip_codes_are_those_the_haversine_ranks_first() {
    let (db, points) = zips();
    let c = db.collection("zips");
    c.create_index(odm_engine::IndexSpec::from_keys_document(&doc! { "loc": "2dsphere" }).unwrap())
        .unwrap();
    let center = (-73.99, 40.73);
    let mut ranked: Vec<(f64, String)> = points
        .iter()
        .map(|(id, x, y)| (haversine(center, (*x, *y)), id.clone()))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let expected: Vec<String> = ranked.iter().take(10).map(|(_, id)| id.clone()).collect();
    let geojson = doc! { "loc": { "$near": { "$geometry": { "type": "Point", "coordinates": [center.0, center.1] } } } };
    assert_eq!(nearest(&db, geojson, 10), expected);
    let legacy = doc! { "loc": { "$nearSphere": [center.0, center.1] } };
    assert_eq!(nearest(&db, legacy, 10), expected);
    // Within 5 km through the index: the haversine's answer again.
    let radius = 5_000.0 / RADIUS;
    let mut within: Vec<String> = ranked
        .iter()
        .take_while(|(d, _)| *d <= radius)
        .map(|(_, id)| id.clone())
        .collect();
    within.sort();
    let filter =
        doc! { "loc": { "$geoWithin": { "$centerSphere": [[center.0, center.1], radius] } } };
    assert_eq!(ids(&db, filter).unwrap(), within);
}

#[test]
fn a_flat_index_ranks_by_distance_on_the_plane() {
    let (db, points) = zips();
    db.collection("zips")
        .create_index(odm_engine::IndexSpec::from_keys_document(&doc! { "loc": "2d" }).unwrap())
        .unwrap();
    let center = (-73.99, 40.73);
    let mut ranked: Vec<(f64, String)> = points
        .iter()
        .map(|(id, x, y)| ((x - center.0).hypot(y - center.1), id.clone()))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let expected: Vec<String> = ranked.iter().take(10).map(|(_, id)| id.clone()).collect();
    let filter = doc! { "loc": { "$near": [center.0, center.1], "$maxDistance": 1.0 } };
    assert_eq!(nearest(&db, filter, 10), expected);
    let boxed = ids(
        &db,
        doc! { "loc": { "$geoWithin": { "$box": [[-74.1, 40.6], [-73.9, 40.8]] } } },
    )
    .unwrap();
    let compared = ids(
        &db,
        doc! { "loc.0": { "$gte": -74.1, "$lte": -73.9 }, "loc.1": { "$gte": 40.6, "$lte": 40.8 } },
    )
    .unwrap();
    assert_eq!(boxed, compared);
}
