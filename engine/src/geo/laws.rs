//! Laws of the sphere's geometry, checked against formulas written independently of it:
//! the haversine distance, and the radii of regular spherical polygons.

use proptest::prelude::*;

use super::query::GeoCondition;
use super::shape::{Geometry, Position};
use super::sphere::{Shape, Vector};

/// The haversine great-circle distance in radians, a formula the module does not use.
fn haversine(a: Position, b: Position) -> f64 {
    let (la1, la2) = (a.y.to_radians(), b.y.to_radians());
    let dlat = la2 - la1;
    let dlng = (b.x - a.x).to_radians();
    let h = (dlat / 2.0).sin().powi(2) + la1.cos() * la2.cos() * (dlng / 2.0).sin().powi(2);
    2.0 * h.sqrt().min(1.0).asin()
}

/// The point `distance` radians from `from` along the bearing `bearing` (radians from north).
fn destination(from: Position, bearing: f64, distance: f64) -> Position {
    let (lat1, lng1) = (from.y.to_radians(), from.x.to_radians());
    let lat2 = (lat1.sin() * distance.cos() + lat1.cos() * distance.sin() * bearing.cos()).asin();
    let lng2 = lng1
        + (bearing.sin() * distance.sin() * lat1.cos())
            .atan2(distance.cos() - lat1.sin() * lat2.sin());
    let lng = (lng2.to_degrees() + 540.0).rem_euclid(360.0) - 180.0;
    Position {
        x: lng,
        y: lat2.to_degrees(),
    }
}

/// A regular polygon of `n` vertices `radius` radians from `center`, wound either way.
fn regular(center: Position, radius: f64, n: usize, turn: f64, clockwise: bool) -> Vec<Position> {
    let mut ring: Vec<Position> = (0..n)
        .map(|i| {
            #[allow(clippy::cast_precision_loss)]
            let bearing = turn + std::f64::consts::TAU * i as f64 / n as f64;
            destination(center, bearing, radius)
        })
        .collect();
    if clockwise {
        ring.reverse();
    }
    ring.push(ring[0]);
    ring
}

fn position() -> impl Strategy<Value = Position> {
    (-180.0f64..180.0, -80.0f64..80.0).prop_map(|(x, y)| Position { x, y })
}

proptest! {
    /// A point is within a `$centerSphere` cap exactly when its haversine distance from the
    /// center is at most the radius.
    #[test]
    fn a_cap_holds_the_points_no_farther_than_its_radius(
        center in position(), p in position(), radius in 0.0f64..3.0,
    ) {
        let d = haversine(center, p);
        prop_assume!((d - radius).abs() > 1e-9);
        let inside = Shape::point(p).within_cap(Vector::at(center), radius);
        prop_assert_eq!(inside, d <= radius);
        prop_assert!((Shape::point(p).distance(Vector::at(center)) - d).abs() < 1e-9);
    }

    /// A regular polygon holds every point nearer its center than its inradius and none
    /// farther than its circumradius, whichever way its ring is wound (the interior is the
    /// smaller region); a point intersects the polygon exactly when the polygon holds it.
    #[test]
    fn a_regular_polygon_holds_its_incircle_and_nothing_past_its_circumcircle(
        center in position(),
        radius in 0.0005f64..1.2,
        n in 3usize..12,
        turn in 0.0f64..6.3,
        clockwise: bool,
        bearing in 0.0f64..6.3,
        fraction in 0.0f64..3.0,
    ) {
        let ring = regular(center, radius, n, turn, clockwise);
        let polygon = Geometry::Polygon(vec![ring]);
        let shape = Shape::new(&polygon, false);
        #[allow(clippy::cast_precision_loss)]
        let inradius = (radius.tan() * (std::f64::consts::PI / n as f64).cos()).atan();
        let distance = fraction * radius;
        let p = destination(center, bearing, distance);
        let point = Shape::point(p);
        if distance < inradius * (1.0 - 1e-6) {
            prop_assert!(point.within(&shape));
        } else if distance > radius * (1.0 + 1e-6) {
            prop_assert!(!point.within(&shape));
        }
        prop_assert_eq!(point.intersects(&shape), point.within(&shape));
        prop_assert_eq!(shape.intersects(&point), point.intersects(&shape));
    }

    /// A hole takes its points out of the polygon.
    #[test]
    fn a_hole_is_outside(center in position(), radius in 0.001f64..0.5, n in 3usize..9) {
        let shell = regular(center, radius, n, 0.0, false);
        let hole = regular(center, radius / 4.0, n, 0.1, true);
        let polygon = Shape::new(&Geometry::Polygon(vec![shell, hole]), false);
        prop_assert!(!Shape::point(center).within(&polygon));
        let between = destination(center, 0.05, radius / 2.0);
        prop_assert!(Shape::point(between).within(&polygon));
    }
}

#[test]
fn the_zip_code_example_of_the_manual_has_its_distances() {
    // Distances of MongoDB's radius: 1 degree of a great circle is 111,318.8 m.
    let near = GeoCondition::near(
        &bson::doc! { "$near": { "$geometry": { "type": "Point", "coordinates": [0.0, 0.0] } } },
        false,
    )
    .unwrap();
    let GeoCondition::Near(near) = near else {
        panic!("a near condition")
    };
    let stored = super::Stored::read(bson::rawdoc! { "p": [1.0, 0.0] }.get("p").unwrap().unwrap())
        .unwrap()
        .unwrap();
    let metres = near.distance(&stored).unwrap();
    assert!(
        (metres - 6_378_100.0 * 1f64.to_radians()).abs() < 1e-6,
        "{metres}"
    );
}
