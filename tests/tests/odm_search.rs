//! Typed text and geospatial search: the declared indexes deploy and read back as declared,
//! the typed operators answer what formulas computed here (haversine distances, coordinate
//! comparisons) say they should, and text search ranks by the declared weights. Each test runs
//! on the back end `odm::testing::database()` chooses, so the same typed calls are checked on
//! the engine and, through `tests/wire/backends.sh`, on MongoDB.

use odm::{Document, Embedded, Filter, GeoNear, GeoPoint, Geometry, Language, Sort, text};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// MongoDB's Earth radius, metres.
const RADIUS: f64 = 6_378_100.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "places", index(keys(kind = 1, at = "2dsphere")))]
struct Place {
    #[odm(id)]
    id: i64,
    kind: String,
    #[odm(index(geo))]
    at: GeoPoint,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "regions")]
struct Region {
    #[odm(id)]
    id: i64,
    #[odm(index(geo))]
    area: Geometry,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "pins")]
struct Pin {
    #[odm(id)]
    id: i64,
    #[odm(index(flat))]
    xy: [f64; 2],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(
    collection = "articles",
    index(text(title = 10, body, tags = 2), default_language = English, language_override = "lang")
)]
struct Article {
    #[odm(id)]
    id: i64,
    title: String,
    body: String,
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lang: Option<String>,
}

/// A place with its distance from the query's point.
#[derive(Debug, Serialize, Deserialize, Embedded)]
struct Distanced {
    #[serde(rename = "_id")]
    id: i64,
    kind: String,
    metres: f64,
    nearest: GeoPoint,
}

/// A pin with its distance on the plane and its pair.
#[derive(Debug, Serialize, Deserialize, Embedded)]
struct Placed {
    #[serde(rename = "_id")]
    id: i64,
    distance: f64,
    xy: [f64; 2],
}

/// A note in Spanish by its index's default language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "notas", index(text(body), default_language = Spanish))]
struct Nota {
    #[odm(id)]
    id: i64,
    body: String,
}

/// An article with its text score.
#[derive(Debug, Serialize, Deserialize, Embedded)]
struct Scored {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    score: f64,
}

fn haversine(a: GeoPoint, b: GeoPoint) -> f64 {
    let (la1, la2) = (a.lat.to_radians(), b.lat.to_radians());
    let h = ((la2 - la1) / 2.0).sin().powi(2)
        + la1.cos() * la2.cos() * ((b.lng - a.lng).to_radians() / 2.0).sin().powi(2);
    2.0 * h.sqrt().asin() * RADIUS
}

fn place(id: i64, kind: &str, lng: f64, lat: f64) -> Place {
    Place {
        id,
        kind: kind.into(),
        at: GeoPoint::new(lng, lat),
    }
}

fn ids<T>(values: &[T], id: impl Fn(&T) -> i64) -> Vec<i64> {
    values.iter().map(id).collect()
}

#[test]
fn declared_text_and_geo_indexes_read_back_as_declared() {
    let db = odm::testing::database().unwrap();
    for plan in [
        db.collection::<Place>()
            .unwrap()
            .sync_indexes(false)
            .unwrap(),
        db.collection::<Region>()
            .unwrap()
            .sync_indexes(false)
            .unwrap(),
        db.collection::<Pin>().unwrap().sync_indexes(false).unwrap(),
        db.collection::<Article>()
            .unwrap()
            .sync_indexes(false)
            .unwrap(),
    ] {
        assert!(plan.created.is_empty(), "{plan}");
        assert!(plan.undeclared.is_empty(), "{plan}");
    }
    let places = db
        .collection::<Place>()
        .unwrap()
        .sync_indexes(false)
        .unwrap();
    assert!(
        places.unchanged.contains(&"at_2dsphere".to_owned()),
        "{places}"
    );
    assert!(
        places.unchanged.contains(&"kind_1_at_2dsphere".to_owned()),
        "{places}"
    );
    let articles = db
        .collection::<Article>()
        .unwrap()
        .sync_indexes(false)
        .unwrap();
    assert!(
        articles
            .unchanged
            .contains(&"title_text_body_text_tags_text".to_owned()),
        "{articles}"
    );
}

#[test]
fn typed_operators_write_the_manuals_documents() {
    let f = Place::fields();
    let p = GeoPoint::new(-73.97, 40.77);
    let near: Filter<Place> = f.at.near(p).min_distance(10.0).max_distance(500.0).into();
    assert_eq!(
        near.to_document(),
        &bson::doc! { "at": { "$near": {
            "$geometry": { "type": "Point", "coordinates": [-73.97, 40.77] },
            "$minDistance": 10.0, "$maxDistance": 500.0,
        } } }
    );
    assert_eq!(
        f.at.within_radius(p, RADIUS).to_document(),
        &bson::doc! { "at": { "$geoWithin": { "$centerSphere": [[-73.97, 40.77], 1.0] } } }
    );
    let line = Geometry::LineString {
        coordinates: vec![[0.0, 0.0], [1.0, 1.0]],
    };
    assert_eq!(
        f.at.intersects(line).to_document(),
        &bson::doc! { "at": { "$geoIntersects": { "$geometry": {
            "type": "LineString", "coordinates": [[0.0, 0.0], [1.0, 1.0]],
        } } } }
    );
    let g = Pin::fields();
    let flat: Filter<Pin> = g.xy.near_flat([1.0, 2.0]).max_distance(3.0).into();
    assert_eq!(
        flat.to_document(),
        &bson::doc! { "xy": { "$near": [1.0, 2.0], "$maxDistance": 3.0 } }
    );
    let search: Filter<Article> = text("\"hot tea\" -milk")
        .language(Language::Spanish)
        .case_sensitive()
        .diacritic_sensitive()
        .into();
    assert_eq!(
        search.to_document(),
        &bson::doc! { "$text": {
            "$search": "\"hot tea\" -milk", "$language": "spanish",
            "$caseSensitive": true, "$diacriticSensitive": true,
        } }
    );
}

/// Points spread over a few hundred kilometres around Denver, as (lng, lat).
fn points() -> impl Strategy<Value = Vec<(f64, f64)>> {
    proptest::collection::vec((-107.0..-103.0f64, 38.0..42.0f64), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Law: `near(p).max_distance(m)` returns exactly the places within `m` metres of `p` by
    /// the haversine formula, nearest first, and `within_radius` the same set.
    #[test]
    fn near_is_the_haversine_ball_nearest_first(
        spots in points(),
        center in (-107.0..-103.0f64, 38.0..42.0f64),
        max in 1_000.0..300_000.0f64,
    ) {
        let center = GeoPoint::new(center.0, center.1);
        let distance = |&(lng, lat): &(f64, f64)| haversine(center, GeoPoint::new(lng, lat));
        // A place within a millimetre of the bound may fall either side of it in rounding.
        prop_assume!(spots.iter().all(|s| (distance(s) - max).abs() > 1e-3));
        let db = odm::testing::database().unwrap();
        let places = db.collection::<Place>().unwrap();
        let stored: Vec<Place> = spots
            .iter()
            .enumerate()
            .map(|(i, &(lng, lat))| place(i as i64, "spot", lng, lat))
            .collect();
        places.insert_many(&stored).unwrap();
        let f = Place::fields();
        let found = places.find(f.at.near(center).max_distance(max)).to_vec().unwrap();
        let mut expected: Vec<i64> = (0..spots.len())
            .filter(|&i| distance(&spots[i]) <= max)
            .map(|i| i as i64)
            .collect();
        let mut got = ids(&found, |p| p.id);
        let distances: Vec<f64> = found.iter().map(|p| haversine(center, p.at)).collect();
        prop_assert!(distances.windows(2).all(|w| w[0] <= w[1] + 1e-6), "not nearest first: {distances:?}");
        got.sort_unstable();
        expected.sort_unstable();
        prop_assert_eq!(&got, &expected);
        let mut within = ids(&places.find(f.at.within_radius(center, max)).to_vec().unwrap(), |p| p.id);
        within.sort_unstable();
        prop_assert_eq!(within, expected);
    }
}

#[test]
fn within_and_intersects_answer_for_points_and_polygons() {
    let db = odm::testing::database().unwrap();
    let places = db.collection::<Place>().unwrap();
    places
        .insert_many(&[
            place(1, "cafe", 0.5, 0.5),
            place(2, "cafe", 1.5, 0.5),
            place(3, "park", 0.2, 0.9),
        ])
        .unwrap();
    let f = Place::fields();
    let square = Geometry::rectangle([0.0, 0.0], [1.0, 1.0]);
    let inside = places
        .find(f.at.within(square.clone()).and(f.kind.eq("cafe")))
        .to_vec()
        .unwrap();
    assert_eq!(ids(&inside, |p| p.id), [1]);

    let regions = db.collection::<Region>().unwrap();
    let triangle = Geometry::polygon([[10.0, 10.0], [12.0, 10.0], [11.0, 12.0]]);
    regions
        .insert_many(&[
            Region {
                id: 1,
                area: square,
            },
            Region {
                id: 2,
                area: triangle,
            },
            Region {
                id: 3,
                area: GeoPoint::new(30.0, 30.0).into(),
            },
        ])
        .unwrap();
    let r = Region::fields();
    // A road from the square's middle eastward crosses the square only.
    let road = Geometry::LineString {
        coordinates: vec![[0.5, 0.5], [5.0, 0.5]],
    };
    let crossed = regions.find(r.area.intersects(road)).to_vec().unwrap();
    assert_eq!(ids(&crossed, |x| x.id), [1]);
    let big = Geometry::rectangle([5.0, 5.0], [35.0, 35.0]);
    let mut held = ids(&regions.find(r.area.within(big)).to_vec().unwrap(), |x| {
        x.id
    });
    held.sort_unstable();
    assert_eq!(held, [2, 3]);
}

#[test]
fn geo_near_puts_each_distance_in_the_output_type() {
    let db = odm::testing::database().unwrap();
    let places = db.collection::<Place>().unwrap();
    let here = GeoPoint::new(-105.0, 40.0);
    places
        .insert_many(&[
            place(1, "cafe", -105.0, 40.01),
            place(2, "park", -105.0, 40.02),
            place(3, "cafe", -105.0, 40.5),
            place(4, "cafe", -105.0, 40.03),
        ])
        .unwrap();
    let (f, d) = (Place::fields(), Distanced::fields());
    let stage = GeoNear::new(f.at.near(here).max_distance(10_000.0), &d.metres)
        .query(f.kind.eq("cafe"))
        .include_locations(&d.nearest);
    let found: Vec<Distanced> = places.aggregate().geo_near(stage).to_vec().unwrap();
    assert_eq!(ids(&found, |x| x.id), [1, 4]);
    // Filters before the stage join its query, since MongoDB takes `$geoNear` first only.
    let stage = GeoNear::new(f.at.near(here).max_distance(10_000.0), &d.metres)
        .query(f.kind.eq("cafe"))
        .include_locations(&d.nearest);
    let filtered: Vec<Distanced> = places
        .aggregate()
        .filter(f.id.gt(1))
        .geo_near(stage)
        .to_vec()
        .unwrap();
    assert_eq!(ids(&filtered, |x| x.id), [4]);
    for row in &found {
        let expected = haversine(here, row.nearest);
        assert!((row.metres - expected).abs() < 0.5, "{row:?} vs {expected}");
        assert_eq!(row.kind, "cafe");
    }
    let km = GeoNear::new(f.at.near(here).min_distance(2_000.0), &d.metres)
        .distance_multiplier(0.001)
        .include_locations(&d.nearest);
    let far: Vec<Distanced> = places.aggregate().geo_near(km).limit(1).to_vec().unwrap();
    assert_eq!(ids(&far, |x| x.id), [2]);
    assert!((far[0].metres - haversine(here, far[0].nearest) / 1000.0).abs() < 1e-3);
}

#[test]
fn flat_pairs_are_queried_on_the_plane() {
    let db = odm::testing::database().unwrap();
    let pins = db.collection::<Pin>().unwrap();
    pins.insert_many(&[
        Pin {
            id: 1,
            xy: [0.0, 0.0],
        },
        Pin {
            id: 2,
            xy: [3.0, 4.0],
        },
        Pin {
            id: 3,
            xy: [1.0, 1.0],
        },
        Pin {
            id: 4,
            xy: [10.0, 0.0],
        },
    ])
    .unwrap();
    let g = Pin::fields();
    let near = pins
        .find(g.xy.near_flat([0.0, 0.0]).max_distance(5.0))
        .to_vec()
        .unwrap();
    assert_eq!(ids(&near, |p| p.id), [1, 3, 2]);
    let p = Placed::fields();
    let stage = GeoNear::new(g.xy.near_flat([0.0, 0.0]).min_distance(1.0), &p.distance)
        .include_locations(&p.xy);
    let placed: Vec<Placed> = pins.aggregate().geo_near(stage).to_vec().unwrap();
    assert_eq!(ids(&placed, |x| x.id), [3, 2, 4]);
    for row in &placed {
        assert!(
            (row.distance - row.xy[0].hypot(row.xy[1])).abs() < 1e-9,
            "{row:?}"
        );
    }
    let mut boxed = ids(
        &pins
            .find(g.xy.within_box([0.0, 0.0], [3.0, 4.0]))
            .to_vec()
            .unwrap(),
        |p| p.id,
    );
    boxed.sort_unstable();
    assert_eq!(boxed, [1, 2, 3]);
}

#[test]
fn an_invalid_geometry_is_refused_with_16755_and_nothing_is_stored() {
    let db = odm::testing::database().unwrap();
    let regions = db.collection::<Region>().unwrap();
    // A bow tie: its edges cross.
    let bow_tie = Geometry::polygon([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]);
    let error = regions
        .insert_one(&Region {
            id: 1,
            area: bow_tie,
        })
        .unwrap_err();
    assert_eq!(error.code(), Some(16755), "{error}");
    // An open ring, its last position not its first.
    let open = Geometry::Polygon {
        coordinates: vec![vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]],
    };
    let error = regions
        .insert_one(&Region { id: 2, area: open })
        .unwrap_err();
    assert_eq!(error.code(), Some(16755), "{error}");
    assert_eq!(regions.count(Filter::all()).unwrap(), 0);
}

fn library(db: &odm::Database) -> odm::Collection<Article> {
    let articles = db.collection::<Article>().unwrap();
    let article = |id, title: &str, body: &str, tags: &[&str], lang: Option<&str>| Article {
        id,
        title: title.into(),
        body: body.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        lang: lang.map(str::to_owned),
    };
    articles
        .insert_many(&[
            article(
                1,
                "Brewing tea",
                "Water just off the boil.",
                &["drinks"],
                None,
            ),
            article(
                2,
                "Gardens",
                "Tea plants grow on hillsides.",
                &["plants"],
                None,
            ),
            article(
                3,
                "Coffee",
                "Roasted beans, milk and crème.",
                &["tea"],
                None,
            ),
            article(4, "Cafés", "El té verde es bueno.", &[], Some("es")),
            article(5, "Iced tea with milk", "Sweet and cold.", &[], None),
        ])
        .unwrap();
    articles
}

#[test]
fn text_search_ranks_by_the_declared_weights() {
    let db = odm::testing::database().unwrap();
    let articles = library(&db);
    let ranked = articles
        .find(text("tea"))
        .sort(Sort::text_score())
        .to_vec()
        .unwrap();
    // Titles weigh 10, tags 2, bodies 1; article 4 is Spanish (`té`, not `tea`).
    let order = ids(&ranked, |a| a.id);
    assert_eq!(order.len(), 4, "{order:?}");
    assert!(
        order[..2].contains(&1) && order[..2].contains(&5),
        "{order:?}"
    );
    assert_eq!(&order[2..], [3, 2], "{order:?}");

    let a = Article::fields();
    // A text filter after another joins it: MongoDB takes `$text` in the first stage only.
    let scored: Vec<Scored> = articles
        .aggregate()
        .filter(a.id.lt(3))
        .filter(text("tea -milk"))
        .text_score(&Scored::fields().score)
        .sort(Sort::desc(&Scored::fields().score))
        .to_vec()
        .unwrap();
    assert_eq!(ids(&scored, |s| s.id), [1, 2]);
    assert!(scored[0].score > scored[1].score, "{scored:?}");
    assert!(scored[0].title.contains("tea"));
}

#[test]
fn text_search_reads_each_documents_language_and_the_querys() {
    let db = odm::testing::database().unwrap();
    let articles = library(&db);
    // Article 4 names its language in `lang`, the declared override: Spanish stems and stop
    // words, so `té` is found with a Spanish query and `es` is no word of it.
    let spanish = articles
        .find(text("té").language(Language::Spanish))
        .to_vec()
        .unwrap();
    assert_eq!(ids(&spanish, |a| a.id), [4]);
    // `creme` is `crème` with its diacritic folded, unless the search keeps diacritics.
    let folded = articles.find(text("creme")).to_vec().unwrap();
    assert_eq!(ids(&folded, |a| a.id), [3]);
    let kept = articles
        .find(text("creme").diacritic_sensitive())
        .to_vec()
        .unwrap();
    assert!(kept.is_empty());
    let phrase = articles.find(text("\"with milk\"")).to_vec().unwrap();
    assert_eq!(ids(&phrase, |a| a.id), [5]);
    let cased = articles
        .find(text("Coffee").case_sensitive())
        .to_vec()
        .unwrap();
    assert_eq!(ids(&cased, |a| a.id), [3]);
    assert!(
        articles
            .find(text("coffee").case_sensitive())
            .to_vec()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_text_index_reads_its_default_language() {
    let db = odm::testing::database().unwrap();
    let notas = db.collection::<Nota>().unwrap();
    notas
        .insert_many(&[
            Nota {
                id: 1,
                body: "El gato duerme.".into(),
            },
            Nota {
                id: 2,
                body: "Los gatos cantan.".into(),
            },
        ])
        .unwrap();
    // `el` is a Spanish stop word, not an English one: the index has no term for it.
    assert!(notas.find(text("el")).to_vec().unwrap().is_empty());
    let mut cats = ids(&notas.find(text("gato")).to_vec().unwrap(), |n| n.id);
    cats.sort_unstable();
    assert_eq!(cats, [1, 2]);
}
