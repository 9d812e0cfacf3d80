//! Geo indexes (`2dsphere`, `2d`): their definitions as MongoDB lists and refuses them, the
//! documents they refuse, near queries nearest first, and the law that a query through a geo
//! index returns what a scan judging every document returns.

use bson::{Bson, Document, doc};
use odm_engine::query::{Access, FindOptions};
use odm_engine::{Database, Error, IndexSpec};
use proptest::prelude::*;

fn index(keys: Document, options: Document) -> Result<IndexSpec, odm_engine::IndexSpecError> {
    let mut spec = doc! { "key": keys };
    spec.extend(options);
    IndexSpec::from_document(&spec)
}

fn find(db: &Database, name: &str, filter: &Document) -> Result<Vec<Document>, Error> {
    let txn = db.read().unwrap();
    let c = txn.collection(name).unwrap().unwrap();
    c.find(filter, &FindOptions::default())?.collect()
}

fn ids(docs: &[Document]) -> Vec<i64> {
    docs.iter().map(|d| d.get_i64("_id").unwrap()).collect()
}

#[test]
fn geo_index_definitions_are_listed_and_refused_as_mongodb_does() {
    let sphere = index(doc! { "loc": "2dsphere" }, doc! {}).unwrap();
    assert_eq!(sphere.name(), "loc_2dsphere");
    let listed = sphere.to_document();
    assert_eq!(listed.get_i32("2dsphereIndexVersion").unwrap(), 3);
    assert_eq!(
        listed.get_document("key").unwrap(),
        &doc! { "loc": "2dsphere" }
    );
    assert_eq!(IndexSpec::from_document(&listed).unwrap(), sphere);
    let compound = index(doc! { "loc": "2dsphere", "kind": 1 }, doc! {}).unwrap();
    assert_eq!(compound.name(), "loc_2dsphere_kind_1");
    let flat = index(
        doc! { "pos": "2d" },
        doc! { "bits": 20, "min": -10, "max": 10 },
    )
    .unwrap();
    let listed = flat.to_document();
    assert_eq!(listed.get_i32("bits").unwrap(), 20);
    assert_eq!(listed.get("max"), Some(&Bson::Double(10.0)));
    assert_eq!(IndexSpec::from_document(&listed).unwrap(), flat);

    let refused = |keys: Document, options: Document, code: i32, words: &str| {
        let err = index(keys, options).unwrap_err();
        assert_eq!(err.code().code, code, "{err}");
        assert!(err.to_string().contains(words), "{err} lacks {words}");
    };
    refused(
        doc! { "a": 1, "pos": "2d" },
        doc! {},
        16801,
        "2d has to be first",
    );
    refused(
        doc! { "pos": "2d", "loc": "2dsphere" },
        doc! {},
        16823,
        "other special",
    );
    refused(
        doc! { "loc": "2dsphere", "h": "hashed" },
        doc! {},
        16823,
        "other special",
    );
    refused(
        doc! { "loc": "2dsphere" },
        doc! { "2dsphereIndexVersion": 1 },
        67,
        "only versions",
    );
    refused(doc! { "pos": "2d" }, doc! { "bits": 40 }, 67, "bits");
    refused(
        doc! { "pos": "2d" },
        doc! { "min": 5, "max": 5 },
        67,
        "too small",
    );
    refused(doc! { "a": 1 }, doc! { "bits": 20 }, 67, "geo indexes only");
    refused(
        doc! { "loc": "2dsphere" },
        doc! { "finestIndexedLevel": 20 },
        67,
        "not supported",
    );
}

#[test]
fn documents_a_geo_index_cannot_key_are_refused_and_change_nothing() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("places");
    c.create_index(index(doc! { "loc": "2dsphere" }, doc! {}).unwrap())
        .unwrap();
    c.insert_one(&doc! { "_id": 1, "loc": { "type": "Point", "coordinates": [2.35, 48.85] } })
        .unwrap();
    // No geometry at all is no key, as in MongoDB (a geo index is sparse).
    c.insert_one(&doc! { "_id": 2 }).unwrap();
    c.insert_one(&doc! { "_id": 3, "loc": null }).unwrap();
    for (id, loc, words) in [
        (
            4,
            Bson::String("Paris".into()),
            "Point must be an array or object",
        ),
        (
            5,
            Bson::Document(doc! { "type": "Point", "coordinates": [200, 0] }),
            "out of bounds",
        ),
        (
            6,
            Bson::Document(
                doc! { "type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]] },
            ),
            "cross",
        ),
        (
            7,
            Bson::Array(vec![Bson::Int32(0), Bson::Int32(100)]),
            "out of bounds",
        ),
    ] {
        let err = c.insert_one(&doc! { "_id": id, "loc": loc }).unwrap_err();
        assert_eq!(err.code(), 16755, "{err}");
        assert!(err.to_string().contains("Can't extract geo keys"), "{err}");
        assert!(err.to_string().contains(words), "{err} lacks {words}");
    }
    assert_eq!(find(&db, "places", &doc! {}).unwrap().len(), 3);

    let c = db.collection("board");
    c.create_index(index(doc! { "pos": "2d" }, doc! { "min": 0, "max": 8 }).unwrap())
        .unwrap();
    c.insert_one(&doc! { "_id": 1, "pos": [3, 4] }).unwrap();
    let err = c.insert_one(&doc! { "_id": 2, "pos": [9, 4] }).unwrap_err();
    assert_eq!(err.code(), 13027, "{err}");
    let err = c
        .insert_one(&doc! { "_id": 3, "pos": { "type": "Point", "coordinates": [1, 1] } })
        .unwrap_err();
    assert_eq!(err.code(), 13026, "{err}");
    // A geo index over documents already stored refuses to build, as a unique one does.
    let c = db.collection("raw");
    c.insert_one(&doc! { "_id": 1, "loc": "nowhere" }).unwrap();
    let err = c
        .create_index(index(doc! { "loc": "2dsphere" }, doc! {}).unwrap())
        .unwrap_err();
    assert_eq!(err.code(), 16755, "{err}");
}

#[test]
fn near_queries_come_nearest_first_and_walk_a_few_cells() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("places");
    let mut docs = Vec::new();
    for i in 0..400i64 {
        #[allow(clippy::cast_precision_loss)]
        let (x, y) = ((i % 20) as f64 * 0.5, (i / 20) as f64 * 0.5);
        docs.push(doc! { "_id": i, "loc": { "type": "Point", "coordinates": [x, y] } });
    }
    c.insert_many(docs, true).unwrap();
    let near = doc! { "$geometry": { "type": "Point", "coordinates": [0.1, 0.1] } };
    let err = find(&db, "places", &doc! { "loc": { "$near": near.clone() } }).unwrap_err();
    assert_eq!(err.code(), 291, "{err}");
    c.create_index(index(doc! { "loc": "2dsphere" }, doc! {}).unwrap())
        .unwrap();
    let mut bounded = near.clone();
    bounded.insert("$maxDistance", 80_000.0);
    let found = find(&db, "places", &doc! { "loc": { "$near": bounded } }).unwrap();
    // Points 0.5 degrees apart: within 80 km of (0.1, 0.1) lie (0,0), (0,0.5), (0.5,0),
    // (0.5,0.5), nearest first: a degree of longitude is a little shorter off the equator, so
    // (0,0.5), 0.1 degree of longitude away at latitude 0.3, is nearer than (0.5,0).
    assert_eq!(ids(&found), [0, 20, 1, 21]);
    assert!(found.iter().all(|d| !d.contains_key("$geoDistance")));

    let txn = db.read().unwrap();
    let places = txn.collection("places").unwrap().unwrap();
    let filter = doc! { "loc": { "$geoWithin": { "$centerSphere": [[2.0, 2.0], 0.01] } } };
    let explained = places.explain(&filter, &FindOptions::default()).unwrap();
    let Access::IndexScan(scan) = &explained.winning.access else {
        panic!("a geo index scan: {:?}", explained.winning.access)
    };
    assert_eq!(scan.index, "loc_2dsphere");
    assert!(explained.docs_examined < 40, "{}", explained.docs_examined);
    assert_eq!(
        explained.returned,
        places
            .find(&filter, &FindOptions::default())
            .unwrap()
            .count() as u64
    );
    // A within query is an index scan; a near query has MongoDB's GEO_NEAR stage above it.
    assert!(explained.head.is_none());
    let near_filter = doc! { "loc": { "$near": near } };
    let explained = places
        .explain(&near_filter, &FindOptions::default())
        .unwrap();
    let tree = explained.to_document();
    let winning = tree
        .get_document("queryPlanner")
        .and_then(|p| p.get_document("winningPlan"))
        .unwrap();
    assert_eq!(
        winning.get_str("stage").unwrap(),
        "GEO_NEAR_2DSPHERE",
        "{winning}"
    );
    assert_eq!(winning.get_str("indexName").unwrap(), "loc_2dsphere");
    assert_eq!(
        winning.get_document("keyPattern").unwrap(),
        &doc! { "loc": "2dsphere" }
    );
    assert!(winning.contains_key("inputStage"), "{winning}");
}

/// A document's geometry, drawn from every kind a geo field holds.
fn geometry() -> impl Strategy<Value = Bson> {
    let lng = -20.0f64..20.0;
    let lat = -20.0f64..20.0;
    prop_oneof![
        4 => (lng.clone(), lat.clone()).prop_map(|(x, y)| Bson::Document(doc! { "type": "Point", "coordinates": [x, y] })),
        2 => (lng.clone(), lat.clone()).prop_map(|(x, y)| Bson::Array(vec![Bson::Double(x), Bson::Double(y)])),
        1 => (lng.clone(), lat.clone(), 0.1f64..3.0, 0.1f64..3.0).prop_map(|(x, y, w, h)| Bson::Document(doc! {
            "type": "LineString", "coordinates": [[x, y], [x + w, y + h]] })),
        1 => (lng, lat, 0.1f64..3.0).prop_map(|(x, y, s)| Bson::Document(doc! {
            "type": "Polygon", "coordinates": [[[x, y], [x + s, y], [x + s, y + s], [x, y + s], [x, y]]] })),
        1 => Just(Bson::Null),
    ]
}

/// A geo condition of every kind a `2dsphere` index serves.
fn condition() -> impl Strategy<Value = Document> {
    let point = (-25.0f64..25.0, -25.0f64..25.0);
    prop_oneof![
        (point.clone(), 0.0f64..0.3).prop_map(|((x, y), r)| doc! { "$geoWithin": { "$centerSphere": [[x, y], r] } }),
        (point.clone(), 0.5f64..15.0).prop_map(|((x, y), s)| doc! { "$geoWithin": { "$geometry": {
            "type": "Polygon", "coordinates": [[[x, y], [x + s, y], [x + s / 2.0, y + s], [x, y]]] } } }),
        (point.clone(), 0.5f64..15.0).prop_map(|((x, y), s)| doc! { "$geoIntersects": { "$geometry": {
            "type": "Polygon", "coordinates": [[[x, y], [x + s, y], [x + s, y + s], [x, y + s], [x, y]]] } } }),
        (point.clone(), 0.5f64..10.0).prop_map(|((x, y), s)| doc! { "$geoIntersects": { "$geometry": {
            "type": "LineString", "coordinates": [[x, y], [x + s, y + s / 3.0]] } } }),
        (point.clone(), 1_000.0f64..2_000_000.0).prop_map(|((x, y), m)| doc! { "$near": {
            "$geometry": { "type": "Point", "coordinates": [x, y] }, "$maxDistance": m } }),
        (point, 0.0f64..0.2).prop_map(|((x, y), r)| doc! { "$nearSphere": [x, y], "$maxDistance": r }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Law: a geo query answered through a `2dsphere` index returns what a scan judging every
    /// document with exact spherical geometry returns (the same documents; for a near query
    /// in the same order of distance).
    #[test]
    fn a_geo_index_returns_what_a_scan_returns(
        geometries in proptest::collection::vec(geometry(), 1..60),
        condition in condition(),
    ) {
        let db = Database::in_memory().unwrap();
        let indexed = db.collection("indexed");
        indexed.create_index(index(doc! { "loc": "2dsphere" }, doc! {}).unwrap()).unwrap();
        let docs: Vec<Document> = geometries
            .iter()
            .enumerate()
            .map(|(i, g)| doc! { "_id": i as i64, "loc": g.clone() })
            .collect();
        indexed.insert_many(docs.clone(), true).unwrap();
        let filter = doc! { "loc": condition.clone() };
        let through_index = find(&db, "indexed", &filter).unwrap();
        let txn = db.read().unwrap();
        let c = txn.collection("indexed").unwrap().unwrap();
        let options = FindOptions { hint: Some(Bson::Document(doc! { "$natural": 1 })), ..FindOptions::default() };
        let near = condition.contains_key("$near") || condition.contains_key("$nearSphere");
        if near {
            // A scan has no distance order of its own: the same reach as a `$centerSphere`
            // judges which documents come, and distances computed here judge their order.
            let all: Vec<Document> = c.find(&doc! {}, &FindOptions::default()).unwrap().map(Result::unwrap).collect();
            let points_only = all.iter().all(|d| point_of(d).is_some() || d.get("loc") == Some(&Bson::Null));
            let (center, _) = reach(&condition);
            let distances: Vec<f64> = through_index.iter().filter_map(|d| point_of(d).map(|p| haversine(center, p))).collect();
            prop_assert!(distances.windows(2).all(|w| w[0] <= w[1] + 1e-12), "{:?}", distances);
            if points_only {
                let mut judged = ids(&through_index);
                judged.sort_unstable();
                let (center, radius) = reach(&condition);
                let within = doc! { "$geoWithin": { "$centerSphere": [[center.0, center.1], radius] } };
                let mut expected: Vec<i64> = ids(&c
                    .find(&doc! { "loc": within }, &options)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect::<Vec<_>>());
                expected.sort_unstable();
                prop_assert_eq!(judged, expected);
            }
        } else {
            let scanned: Vec<Document> = c.find(&filter, &options).unwrap().map(Result::unwrap).collect();
            let (mut found, mut expected) = (ids(&through_index), ids(&scanned));
            found.sort_unstable();
            expected.sort_unstable();
            prop_assert_eq!(found, expected);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Law: through a compound index whose ordinary keys come before its geo key, a query
    /// binding them by equality returns what a scan returns, and reads that index.
    #[test]
    fn a_compound_geo_index_under_an_equality_returns_what_a_scan_returns(
        placed in proptest::collection::vec((geometry(), proptest::option::of(0..3i32)), 1..60),
        condition in condition().prop_filter("not near", |c| !c.contains_key("$near") && !c.contains_key("$nearSphere")),
        kind in proptest::option::of(0..3i32),
    ) {
        let db = Database::in_memory().unwrap();
        let c = db.collection("compound");
        c.create_index(index(doc! { "kind": 1, "loc": "2dsphere" }, doc! {}).unwrap()).unwrap();
        let docs: Vec<Document> = placed
            .iter()
            .enumerate()
            .map(|(i, (g, k))| {
                let mut d = doc! { "_id": i as i64, "loc": g.clone() };
                if let Some(k) = k {
                    d.insert("kind", *k);
                }
                d
            })
            .collect();
        c.insert_many(docs, true).unwrap();
        // `kind: null` matches the documents without one, as their keys hold null.
        let filter = doc! { "kind": kind.map_or(Bson::Null, Bson::Int32), "loc": condition };
        let txn = db.read().unwrap();
        let read = txn.collection("compound").unwrap().unwrap();
        let explained = read.explain(&filter, &FindOptions::default()).unwrap();
        prop_assert_eq!(explained.index_used(), Some("kind_1_loc_2dsphere"));
        let mut found = ids(&find(&db, "compound", &filter).unwrap());
        let options = FindOptions { hint: Some(Bson::Document(doc! { "$natural": 1 })), ..FindOptions::default() };
        let mut expected = ids(&read.find(&filter, &options).unwrap().map(Result::unwrap).collect::<Vec<_>>());
        found.sort_unstable();
        expected.sort_unstable();
        prop_assert_eq!(found, expected);
    }
}

#[test]
fn a_near_query_bound_by_an_equality_reads_the_compound_index_nearest_first() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("shops");
    c.create_index(index(doc! { "kind": 1, "loc": "2dsphere" }, doc! {}).unwrap())
        .unwrap();
    let mut docs = Vec::new();
    for i in 0..200i64 {
        #[allow(clippy::cast_precision_loss)]
        let x = i as f64 * 0.01;
        let kind = if i % 4 == 0 { "cafe" } else { "shop" };
        docs.push(
            doc! { "_id": i, "kind": kind, "loc": { "type": "Point", "coordinates": [x, 0.0] } },
        );
    }
    c.insert_many(docs, true).unwrap();
    let filter = doc! { "kind": "cafe", "loc": { "$near": {
        "$geometry": { "type": "Point", "coordinates": [1.0, 0.0] }, "$maxDistance": 6_000.0,
    } } };
    let found = find(&db, "shops", &filter).unwrap();
    // Cafes every 0.04 degrees (4.45 km): 100 at 1.0, then 96 and 104 at 0.04 degrees.
    assert_eq!(&ids(&found)[..1], [100]);
    let mut rest = ids(&found)[1..].to_vec();
    rest.sort_unstable();
    assert_eq!(rest, [96, 104]);
    let txn = db.read().unwrap();
    let explained = txn
        .collection("shops")
        .unwrap()
        .unwrap()
        .explain(&filter, &FindOptions::default())
        .unwrap();
    assert_eq!(explained.index_used(), Some("kind_1_loc_2dsphere"));
    assert!(explained.docs_examined <= 10, "{}", explained.docs_examined);
}

/// The center and reach in radians of a near query with a maximum distance.
fn reach(condition: &Document) -> ((f64, f64), f64) {
    let pair = |a: &bson::Array| (a[0].as_f64().unwrap(), a[1].as_f64().unwrap());
    if let Ok(near) = condition.get_document("$near") {
        let point = pair(
            near.get_document("$geometry")
                .unwrap()
                .get_array("coordinates")
                .unwrap(),
        );
        return (point, near.get_f64("$maxDistance").unwrap() / 6_378_100.0);
    }
    (
        pair(condition.get_array("$nearSphere").unwrap()),
        condition.get_f64("$maxDistance").unwrap(),
    )
}

/// A stored point, GeoJSON or legacy pair.
fn point_of(doc: &Document) -> Option<(f64, f64)> {
    let coordinates = match doc.get("loc")? {
        Bson::Array(a) => a,
        Bson::Document(d) if d.get_str("type").ok() == Some("Point") => {
            d.get_array("coordinates").ok()?
        }
        _ => return None,
    };
    Some((coordinates[0].as_f64()?, coordinates[1].as_f64()?))
}

/// The haversine distance in radians, a formula the engine does not use.
fn haversine(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (la1, la2) = (a.1.to_radians(), b.1.to_radians());
    let h = ((la2 - la1) / 2.0).sin().powi(2)
        + la1.cos() * la2.cos() * ((b.0 - a.0).to_radians() / 2.0).sin().powi(2);
    2.0 * h.sqrt().min(1.0).asin()
}

#[test]
fn a_small_query_finds_the_large_geometry_around_it() {
    // A large polygon is keyed by coarse cells; a small query's cells are finer, so the walk
    // must read their ancestors too.
    let db = Database::in_memory().unwrap();
    let c = db.collection("regions");
    c.create_index(index(doc! { "area": "2dsphere" }, doc! {}).unwrap())
        .unwrap();
    let square =
        doc! { "type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]] };
    let line = doc! { "type": "LineString", "coordinates": [[-30, -30], [-20, -25]] };
    c.insert_many(
        vec![
            doc! { "_id": 1_i64, "area": square },
            doc! { "_id": 2_i64, "area": line },
        ],
        true,
    )
    .unwrap();
    let tiny =
        doc! { "type": "Polygon", "coordinates": [[[5, 5], [5.001, 5], [5.001, 5.001], [5, 5]]] };
    let found = find(
        &db,
        "regions",
        &doc! { "area": { "$geoIntersects": { "$geometry": tiny } } },
    )
    .unwrap();
    assert_eq!(ids(&found), [1]);
    let cap = doc! { "area": { "$geoWithin": { "$centerSphere": [[-25, -27.5], 0.2] } } };
    assert_eq!(ids(&find(&db, "regions", &cap).unwrap()), [2]);
    let near = doc! { "area": { "$nearSphere": [5, 5], "$maxDistance": 0.0001 } };
    assert_eq!(ids(&find(&db, "regions", &near).unwrap()), [1]);
}

fn aggregate(db: &Database, name: &str, pipeline: &[Document]) -> Result<Vec<Document>, Error> {
    let txn = db.read().unwrap();
    let c = txn.collection(name).unwrap().unwrap();
    c.aggregate(
        pipeline,
        &odm_engine::aggregate::AggregateOptions::default(),
    )
}

#[test]
fn geo_near_stages_return_the_nearest_with_their_distances() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("cafes");
    let cafes = [
        (1_i64, -73.97, 40.77, "park"),
        (2, -73.88, 40.78, "airport"),
        (3, -73.98, 40.75, "midtown"),
        (4, -74.01, 40.71, "downtown"),
    ];
    for (id, x, y, kind) in cafes {
        c.insert_one(
            &doc! { "_id": id, "kind": kind, "loc": { "type": "Point", "coordinates": [x, y] } },
        )
        .unwrap();
    }
    let stage = doc! { "$geoNear": {
        "near": { "type": "Point", "coordinates": [-73.98, 40.76] },
        "distanceField": "dist.km", "distanceMultiplier": 0.001,
        "maxDistance": 10_000, "query": { "kind": { "$ne": "downtown" } },
        "includeLocs": "dist.location",
    } };
    let err = aggregate(&db, "cafes", std::slice::from_ref(&stage)).unwrap_err();
    assert_eq!(err.code(), 27, "{err}");
    assert!(
        err.to_string().contains("requires a 2d or 2dsphere index"),
        "{err}"
    );
    c.create_index(index(doc! { "loc": "2dsphere" }, doc! {}).unwrap())
        .unwrap();
    let found = aggregate(&db, "cafes", std::slice::from_ref(&stage)).unwrap();
    assert_eq!(ids(&found), [3, 1, 2]);
    let mut last = 0.0;
    for doc in &found {
        let dist = doc.get_document("dist").unwrap();
        let km = dist.get_f64("km").unwrap();
        assert!(km >= last && km < 10.0, "{km}");
        last = km;
        assert_eq!(
            dist.get_document("location").unwrap(),
            doc.get_document("loc").unwrap()
        );
    }
    // Midtown is 0.01 degree of latitude away: 6378.1 km times that angle.
    let expected = 6_378.1 * 0.01f64.to_radians();
    let km = found[0]
        .get_document("dist")
        .unwrap()
        .get_f64("km")
        .unwrap();
    assert!((km - expected).abs() < 1e-9, "{km} {expected}");

    // A legacy pair, spherical: radians.
    let radians = aggregate(
        &db,
        "cafes",
        &[doc! { "$geoNear": { "near": [-73.98, 40.76], "spherical": true, "distanceField": "d" } }, doc! { "$limit": 1 }],
    )
    .unwrap();
    let d = radians[0].get_f64("d").unwrap();
    assert!((d - 0.01f64.to_radians()).abs() < 1e-12, "{d}");
    // Not spherical, a legacy pair: the plane, which a 2dsphere index does not measure.
    let err = aggregate(
        &db,
        "cafes",
        &[doc! { "$geoNear": { "near": [-73.98, 40.76], "distanceField": "d" } }],
    )
    .unwrap_err();
    assert_eq!(err.code(), 291, "{err}");

    let refused = |pipeline: &[Document], code: i32| {
        let err = aggregate(&db, "cafes", pipeline).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
    };
    refused(&[doc! { "$match": {} }, stage.clone()], 40602);
    refused(
        &[doc! { "$geoNear": { "near": [0, 0], "distanceField": "d", "limit": 5 } }],
        50858,
    );
    refused(&[doc! { "$geoNear": { "distanceField": "d" } }], 5_860_400);
    refused(
        &[doc! { "$geoNear": { "near": [0, 0], "distanceField": 5 } }],
        16606,
    );
    c.create_index(index(doc! { "area": "2dsphere" }, doc! {}).unwrap())
        .unwrap();
    let err = aggregate(&db, "cafes", std::slice::from_ref(&stage)).unwrap_err();
    assert!(
        err.to_string().contains("more than one 2dsphere index"),
        "{err}"
    );
    let mut keyed = stage.get_document("$geoNear").unwrap().clone();
    keyed.insert("key", "loc");
    assert_eq!(
        ids(&aggregate(&db, "cafes", &[doc! { "$geoNear": keyed }]).unwrap()),
        [3, 1, 2]
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Law: a near query with a limit (which reads only as far as its results reach) returns
    /// the first results of the same query without one, on a 2dsphere and on a 2d index.
    #[test]
    fn a_limited_near_query_is_the_start_of_the_unlimited_one(
        points in proptest::collection::vec((-30.0f64..30.0, -30.0f64..30.0), 1..80),
        center in (-30.0f64..30.0, -30.0f64..30.0),
        skip in 0u64..4,
        limit in 1u64..15,
        flat: bool,
    ) {
        let db = Database::in_memory().unwrap();
        let c = db.collection("points");
        let kind = if flat { "2d" } else { "2dsphere" };
        c.create_index(index(doc! { "loc": kind }, doc! {}).unwrap()).unwrap();
        let docs: Vec<Document> = points
            .iter()
            .enumerate()
            .map(|(i, (x, y))| doc! { "_id": i as i64, "loc": [x, y] })
            .collect();
        c.insert_many(docs, true).unwrap();
        let operator = if flat { "$near" } else { "$nearSphere" };
        let filter = doc! { "loc": { operator: [center.0, center.1] } };
        let txn = db.read().unwrap();
        let c = txn.collection("points").unwrap().unwrap();
        let all: Vec<Document> = c.find(&filter, &FindOptions::default()).unwrap().map(Result::unwrap).collect();
        let options = FindOptions { skip, limit: Some(limit), ..FindOptions::default() };
        let some: Vec<Document> = c.find(&filter, &options).unwrap().map(Result::unwrap).collect();
        let expected: Vec<i64> = ids(&all).into_iter().skip(skip as usize).take(limit as usize).collect();
        prop_assert_eq!(ids(&some), expected);
    }
}

fn places_with_index() -> Database {
    let db = Database::in_memory().unwrap();
    let c = db.collection("places");
    c.create_index(index(doc! { "loc": "2dsphere" }, doc! {}).unwrap())
        .unwrap();
    for (id, x) in [(1_i64, 0.3), (2, 0.1), (3, 0.2)] {
        c.insert_one(&doc! { "_id": id, "kind": "cafe", "loc": { "type": "Point", "coordinates": [x, 0.0] } })
            .unwrap();
    }
    db
}

#[test]
fn a_near_under_nested_ands_is_still_the_near_query() {
    let db = places_with_index();
    let near =
        doc! { "loc": { "$near": { "$geometry": { "type": "Point", "coordinates": [0, 0] } } } };
    let nested = doc! { "kind": "cafe", "$and": [{ "$and": [near.clone()] }] };
    assert_eq!(ids(&find(&db, "places", &nested).unwrap()), [2, 3, 1]);
    let bare = Database::in_memory().unwrap();
    bare.collection("places")
        .insert_one(&doc! { "_id": 1, "loc": [0, 0] })
        .unwrap();
    let err = find(&bare, "places", &nested).unwrap_err();
    assert_eq!(err.code(), 291, "{err}");
}

#[test]
fn degenerate_geometries_are_refused_without_panicking() {
    let db = places_with_index();
    let c = db.collection("places");
    let empty = doc! { "type": "MultiPolygon", "coordinates": [] };
    let err = c
        .insert_one(&doc! { "_id": 9, "loc": empty.clone() })
        .unwrap_err();
    assert_eq!(err.code(), 16755, "{err}");
    let err = find(
        &db,
        "places",
        &doc! { "loc": { "$geoWithin": { "$geometry": empty } } },
    )
    .unwrap_err();
    assert_eq!(err.code(), 2, "{err}");
    // Three positions that are one point of the sphere in double precision.
    let tiny = doc! { "type": "Polygon", "coordinates": [[[0.0, 0.0], [5e-324, 0.0], [1e-323, 0.0], [0.0, 0.0]]] };
    let err = c
        .insert_one(&doc! { "_id": 10, "loc": tiny.clone() })
        .unwrap_err();
    assert_eq!(err.code(), 16755, "{err}");
    let err = find(
        &db,
        "places",
        &doc! { "loc": { "$geoIntersects": { "$geometry": tiny } } },
    )
    .unwrap_err();
    assert!(err.to_string().contains("3 different vertices"), "{err}");
    let err = find(
        &db,
        "places",
        &doc! { "loc": { "$geoWithin": { "$box": [[0, 0], [f64::NAN, 1]] } } },
    )
    .unwrap_err();
    assert_eq!(err.code(), 2, "{err}");
}

#[test]
fn a_geo_near_head_feeds_a_group_its_distances_in_order() {
    let db = places_with_index();
    db.collection("places")
        .create_index(IndexSpec::ascending("kind").unwrap())
        .unwrap();
    let grouped = aggregate(
        &db,
        "places",
        &[
            doc! { "$geoNear": { "near": { "type": "Point", "coordinates": [0, 0] }, "distanceField": "d" } },
            doc! { "$group": { "_id": "$kind", "nearest": { "$first": "$_id" }, "far": { "$max": "$d" } } },
        ],
    )
    .unwrap();
    assert_eq!(grouped.len(), 1);
    assert_eq!(grouped[0].get_i64("nearest").unwrap(), 2);
    let far = grouped[0].get_f64("far").unwrap();
    assert!(
        (far - 6_378_100.0 * 0.3f64.to_radians()).abs() < 1e-6,
        "{far}"
    );
}

#[test]
fn a_point_touching_a_shape_within_rounding_is_found_through_the_index() {
    let db = Database::in_memory().unwrap();
    let c = db.collection("points");
    c.insert_one(&doc! { "_id": 1_i64, "loc": [-4e-14, 2.0] })
        .unwrap();
    let square =
        doc! { "type": "Polygon", "coordinates": [[[0, 0], [5, 0], [5, 5], [0, 5], [0, 0]]] };
    let filter = doc! { "loc": { "$geoIntersects": { "$geometry": square } } };
    let scanned = ids(&find(&db, "points", &filter).unwrap());
    assert_eq!(
        scanned,
        [1],
        "the matcher counts the point as touching the edge"
    );
    c.create_index(index(doc! { "loc": "2dsphere" }, doc! {}).unwrap())
        .unwrap();
    assert_eq!(ids(&find(&db, "points", &filter).unwrap()), scanned);
}
