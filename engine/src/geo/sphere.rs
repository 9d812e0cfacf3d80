//! Exact geometry on the unit sphere, where GeoJSON lives: edges are the shorter great-circle
//! arcs between their ends, and a polygon's ring bounds the smaller of the two regions it
//! divides the sphere into (MongoDB's rule when no winding order is asked for), or the region
//! on its left for a strictly wound ring.
//!
//! A point is inside a ring when the arc from it to a reference point of known side crosses
//! the ring an even number of times; the reference is a point just off the middle of the first
//! edge, on its left. Crossings are judged by the signs of determinants, as S2 judges them:
//! arcs AB and CD cross when ACB, BDA, CBD and DAC all turn the same way.

use super::GeoError;
use super::shape::{Geometry, Position};

/// A point on the unit sphere.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vector(pub [f64; 3]);

impl Vector {
    /// The point at a longitude and latitude in degrees.
    pub fn at(p: Position) -> Vector {
        let (lng, lat) = (p.x.to_radians(), p.y.to_radians());
        Vector([lat.cos() * lng.cos(), lat.cos() * lng.sin(), lat.sin()])
    }

    fn dot(self, o: Vector) -> f64 {
        self.0[0] * o.0[0] + self.0[1] * o.0[1] + self.0[2] * o.0[2]
    }

    fn cross(self, o: Vector) -> Vector {
        let (a, b) = (self.0, o.0);
        Vector([
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ])
    }

    fn norm(self) -> f64 {
        self.dot(self).sqrt()
    }

    fn scaled(self, k: f64) -> Vector {
        Vector(self.0.map(|c| c * k))
    }

    fn plus(self, o: Vector) -> Vector {
        Vector([self.0[0] + o.0[0], self.0[1] + o.0[1], self.0[2] + o.0[2]])
    }

    fn normalized(self) -> Vector {
        let n = self.norm();
        if n == 0.0 { self } else { self.scaled(1.0 / n) }
    }

    /// The antipode.
    #[must_use]
    pub fn opposite(self) -> Vector {
        self.scaled(-1.0)
    }

    /// The angle between two points, in radians: their great-circle distance.
    pub fn angle(self, o: Vector) -> f64 {
        self.cross(o).norm().atan2(self.dot(o))
    }
}

/// Which way `a`, `b`, `c` turn: 1 counterclockwise, -1 clockwise, 0 on one great circle.
fn turn(a: Vector, b: Vector, c: Vector) -> i8 {
    let det = a.dot(b.cross(c));
    if det > 0.0 {
        1
    } else if det < 0.0 {
        -1
    } else {
        0
    }
}

/// Whether arcs `ab` and `cd` cross at a point interior to both.
fn crosses(a: Vector, b: Vector, c: Vector, d: Vector) -> bool {
    let acb = turn(a, c, b);
    acb != 0 && turn(b, d, a) == acb && turn(c, b, d) == acb && turn(d, a, c) == acb
}

/// The distance in radians from `p` to the arc `ab`.
fn distance_to_arc(p: Vector, a: Vector, b: Vector) -> f64 {
    let normal = a.cross(b);
    if normal.norm() > 0.0 {
        let n = normal.normalized();
        let foot = p.plus(n.scaled(-p.dot(n)));
        if foot.norm() > 0.0 && a.cross(foot).dot(n) >= 0.0 && foot.cross(b).dot(n) >= 0.0 {
            return p.dot(n).abs().clamp(0.0, 1.0).asin();
        }
    }
    p.angle(a).min(p.angle(b))
}

/// A closed ring's vertices (the closing repeat dropped) and which side is its interior.
#[derive(Debug, Clone)]
pub struct Ring {
    vertices: Vec<Vector>,
    interior_left: bool,
    /// A point just left of the first edge's middle: inside the left region.
    reference: Vector,
}

impl Ring {
    fn new(positions: &[Position], strict_winding: bool) -> Ring {
        let mut vertices: Vec<Vector> = positions[..positions.len() - 1]
            .iter()
            .map(|&p| Vector::at(p))
            .collect();
        vertices.dedup();
        // Parsing keeps three distinct vertices; a ring built otherwise degenerates, never
        // panics.
        let a = vertices.first().copied().unwrap_or(Vector([1.0, 0.0, 0.0]));
        let b = vertices.get(1).copied().unwrap_or(a);
        let middle = a.plus(b).normalized();
        let left = a.cross(b).normalized();
        let reference = middle.plus(left.scaled(1e-9)).normalized();
        let mut ring = Ring {
            vertices,
            interior_left: true,
            reference,
        };
        ring.interior_left = strict_winding || ring.left_area() <= 2.0 * std::f64::consts::PI;
        ring
    }

    /// The area of the region on the ring's left, in steradians: the sum of the signed areas
    /// of the triangles fanning out from the first vertex, modulo the sphere's 4π.
    fn left_area(&self) -> f64 {
        let v0 = self.vertices[0];
        let sum: f64 = self
            .edges()
            .map(|(a, b)| {
                let det = v0.dot(a.cross(b));
                2.0 * det.atan2(1.0 + v0.dot(a) + a.dot(b) + b.dot(v0))
            })
            .sum();
        sum.rem_euclid(4.0 * std::f64::consts::PI)
    }

    fn edges(&self) -> impl Iterator<Item = (Vector, Vector)> + '_ {
        let n = self.vertices.len();
        (0..n).map(move |i| (self.vertices[i], self.vertices[(i + 1) % n]))
    }

    fn crossings(&self, from: Vector, to: Vector) -> usize {
        self.edges()
            .filter(|&(a, b)| crosses(from, to, a, b))
            .count()
    }

    /// Whether `p` lies in the ring's interior.
    pub fn contains(&self, p: Vector) -> bool {
        // The reference lies on the left; an arc to its antipode has no one great circle, so
        // take a point just right of the edge instead, whose side is the other one.
        let (reference, left) = if p.dot(self.reference) > -0.5 {
            (self.reference, true)
        } else {
            let a = self.vertices[0];
            let b = self.vertices.get(1).copied().unwrap_or(a);
            let right = a
                .plus(b)
                .normalized()
                .plus(a.cross(b).normalized().scaled(-1e-9));
            (right.normalized(), false)
        };
        let in_left = left == self.crossings(p, reference).is_multiple_of(2);
        in_left == self.interior_left
    }

    fn distance(&self, p: Vector) -> f64 {
        self.edges()
            .map(|(a, b)| distance_to_arc(p, a, b))
            .fold(f64::INFINITY, f64::min)
    }
}

/// A polygon: its shell, then its holes.
#[derive(Debug, Clone)]
pub struct Polygon {
    rings: Vec<Ring>,
}

impl Polygon {
    pub fn new(rings: &[Vec<Position>], strict_winding: bool) -> Polygon {
        Polygon {
            rings: rings.iter().map(|r| Ring::new(r, strict_winding)).collect(),
        }
    }

    pub fn contains(&self, p: Vector) -> bool {
        let (shell, holes) = self.rings.split_first().expect("a polygon has a shell");
        shell.contains(p) && !holes.iter().any(|h| h.contains(p))
    }

    fn edges(&self) -> impl Iterator<Item = (Vector, Vector)> + '_ {
        self.rings.iter().flat_map(Ring::edges)
    }

    fn vertices(&self) -> impl Iterator<Item = Vector> + '_ {
        self.rings.iter().flat_map(|r| r.vertices.iter().copied())
    }

    fn distance(&self, p: Vector) -> f64 {
        if self.contains(p) {
            return 0.0;
        }
        self.rings
            .iter()
            .map(|r| r.distance(p))
            .fold(f64::INFINITY, f64::min)
    }
}

/// MongoDB's checks of a polygon's rings beyond their own shape: no ring's edges cross each
/// other or another ring's, and each hole lies inside the shell.
pub(crate) fn check_polygon(rings: &[Vec<Position>]) -> Result<(), GeoError> {
    let polygon = Polygon::new(rings, false);
    let edges: Vec<(usize, usize, Vector, Vector)> = polygon
        .rings
        .iter()
        .enumerate()
        .flat_map(|(r, ring)| {
            ring.edges()
                .enumerate()
                .map(move |(i, (a, b))| (r, i, a, b))
        })
        .collect();
    for (x, &(ring_x, i, a, b)) in edges.iter().enumerate() {
        for &(ring_y, j, c, d) in &edges[x + 1..] {
            if crosses(a, b, c, d) {
                return Err(GeoError::invalid(if ring_x == ring_y {
                    format!("Loop {ring_x} is not valid: Edges {i} and {j} cross")
                } else {
                    format!("Loops {ring_x} and {ring_y} cross: edges {i} and {j}")
                }));
            }
        }
    }
    let (shell, holes) = polygon.rings.split_first().expect("rings were checked");
    for (h, hole) in holes.iter().enumerate() {
        if hole
            .vertices
            .iter()
            .any(|&v| !shell.contains(v) && shell.distance(v) > 0.0)
        {
            return Err(GeoError::invalid(format!(
                "Secondary loop {} is not contained by the first exterior loop",
                h + 1
            )));
        }
    }
    Ok(())
}

/// A geometry prepared for tests on the sphere: its points, its lines, its polygons.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    points: Vec<Vector>,
    lines: Vec<Vec<Vector>>,
    polygons: Vec<Polygon>,
}

/// Two points closer than this (radians, about 6 nm on Earth) are one point: a point on a
/// line is as close as floating point puts it.
const TOUCHING: f64 = 1e-15;

impl Shape {
    pub fn point(p: Position) -> Shape {
        Shape {
            points: vec![Vector::at(p)],
            ..Shape::default()
        }
    }

    pub fn new(geometry: &Geometry, strict_winding: bool) -> Shape {
        let mut shape = Shape::default();
        shape.add(geometry, strict_winding);
        shape
    }

    fn add(&mut self, geometry: &Geometry, strict: bool) {
        let line = |ps: &[Position]| ps.iter().map(|&p| Vector::at(p)).collect::<Vec<_>>();
        match geometry {
            Geometry::Point(p) => self.points.push(Vector::at(*p)),
            Geometry::MultiPoint(ps) => self.points.extend(ps.iter().map(|&p| Vector::at(p))),
            Geometry::LineString(ps) => self.lines.push(line(ps)),
            Geometry::MultiLineString(ls) => self.lines.extend(ls.iter().map(|l| line(l))),
            Geometry::Polygon(rings) => self.polygons.push(Polygon::new(rings, strict)),
            Geometry::MultiPolygon(ps) => {
                self.polygons
                    .extend(ps.iter().map(|r| Polygon::new(r, strict)));
            }
            Geometry::GeometryCollection(all) => {
                for g in all {
                    self.add(g, strict);
                }
            }
        }
    }

    fn line_edges(&self) -> impl Iterator<Item = (Vector, Vector)> + '_ {
        self.lines
            .iter()
            .flat_map(|l| l.windows(2).map(|w| (w[0], w[1])))
    }

    fn edges(&self) -> impl Iterator<Item = (Vector, Vector)> + '_ {
        self.line_edges()
            .chain(self.polygons.iter().flat_map(Polygon::edges))
    }

    fn vertices(&self) -> impl Iterator<Item = Vector> + '_ {
        self.points
            .iter()
            .copied()
            .chain(self.lines.iter().flatten().copied())
            .chain(self.polygons.iter().flat_map(Polygon::vertices))
    }

    /// The distance in radians from `p` to the nearest point of the shape (0 inside one of its
    /// polygons).
    pub fn distance(&self, p: Vector) -> f64 {
        let points = self.points.iter().map(|&q| p.angle(q));
        let lines = self.line_edges().map(|(a, b)| distance_to_arc(p, a, b));
        let polygons = self.polygons.iter().map(|poly| poly.distance(p));
        points
            .chain(lines)
            .chain(polygons)
            .fold(f64::INFINITY, f64::min)
    }

    fn covers(&self, p: Vector) -> bool {
        self.distance(p) <= TOUCHING
    }

    /// Whether the two shapes share a point.
    pub fn intersects(&self, other: &Shape) -> bool {
        self.vertices().any(|v| other.covers(v))
            || other.vertices().any(|v| self.covers(v))
            || self
                .edges()
                .any(|(a, b)| other.edges().any(|(c, d)| crosses(a, b, c, d)))
    }

    /// Whether every point of this shape lies in `region`'s polygons.
    pub fn within(&self, region: &Shape) -> bool {
        let inside = |v: Vector| region.polygons.iter().any(|poly| poly.contains(v));
        self.vertices().all(inside)
            && !self
                .edges()
                .any(|(a, b)| region.edges().any(|(c, d)| crosses(a, b, c, d)))
            && !region
                .polygons
                .iter()
                .flat_map(|poly| poly.rings.iter().skip(1))
                .flat_map(|hole| hole.vertices.iter())
                .any(|&v| self.polygons.iter().any(|poly| poly.contains(v)))
    }

    /// Whether every point of this shape lies within `radius` radians of `center`. The
    /// farthest point of an arc from a center is the arc's nearest point to the antipode.
    pub fn within_cap(&self, center: Vector, radius: f64) -> bool {
        let far = center.opposite();
        self.vertices().all(|v| v.angle(center) <= radius)
            && self
                .edges()
                .all(|(a, b)| std::f64::consts::PI - distance_to_arc(far, a, b) <= radius)
            && !self.polygons.iter().any(|poly| poly.contains(far))
    }
}

impl Shape {
    /// Whether the shape is points only.
    pub fn is_points(&self) -> bool {
        self.lines.is_empty() && self.polygons.is_empty()
    }

    /// Its points.
    pub fn points(&self) -> &[Vector] {
        &self.points
    }

    /// A rectangle of longitudes and latitudes holding every point of the shape: its vertices'
    /// extremes, widened where an edge bows past them toward a pole, to the full longitude
    /// range when an edge crosses the antimeridian, and to the pole a polygon holds.
    pub fn bounds(&self) -> (Position, Position) {
        let mut low = Position { x: 180.0, y: 90.0 };
        let mut high = Position {
            x: -180.0,
            y: -90.0,
        };
        let mut take = |v: Vector| {
            let p = v.position();
            low = Position {
                x: low.x.min(p.x),
                y: low.y.min(p.y),
            };
            high = Position {
                x: high.x.max(p.x),
                y: high.y.max(p.y),
            };
        };
        self.vertices().for_each(&mut take);
        let mut full_longitude = false;
        for (a, b) in self.edges() {
            let (pa, pb) = (a.position(), b.position());
            full_longitude |= (pa.x - pb.x).abs() > 180.0;
            for pole in [Vector([0.0, 0.0, 1.0]), Vector([0.0, 0.0, -1.0])] {
                if let Some(extreme) = arc_extreme(a, b, pole) {
                    take(extreme);
                }
            }
        }
        for (pole, latitude) in [
            (Vector([0.0, 0.0, 1.0]), 90.0),
            (Vector([0.0, 0.0, -1.0]), -90.0),
        ] {
            if self.polygons.iter().any(|p| p.contains(pole)) {
                low.y = low.y.min(latitude);
                high.y = high.y.max(latitude);
                full_longitude = true;
            }
        }
        if full_longitude || low.y <= -90.0 || high.y >= 90.0 {
            low.x = -180.0;
            high.x = 180.0;
        }
        (low, high)
    }
}

/// The point of arc `ab` nearest `pole` when it lies inside the arc (not at an end).
fn arc_extreme(a: Vector, b: Vector, pole: Vector) -> Option<Vector> {
    let normal = a.cross(b);
    if normal.norm() == 0.0 {
        return None;
    }
    let n = normal.normalized();
    let foot = pole.plus(n.scaled(-pole.dot(n)));
    if foot.norm() == 0.0 {
        return None;
    }
    let foot = foot.normalized();
    (a.cross(foot).dot(n) > 0.0 && foot.cross(b).dot(n) > 0.0).then_some(foot)
}

impl Vector {
    /// Its longitude and latitude in degrees.
    pub fn position(self) -> Position {
        let [x, y, z] = self.0;
        Position {
            x: y.atan2(x).to_degrees(),
            y: z.clamp(-1.0, 1.0).asin().to_degrees(),
        }
    }
}

/// The rectangle of longitudes and latitudes holding a cap of `radius` radians around
/// `center`: the full longitude range when it reaches a pole or crosses the antimeridian.
pub(crate) fn cap_bounds(center: Position, radius: f64) -> (Position, Position) {
    let r = radius.to_degrees();
    let (south, north) = ((center.y - r).max(-90.0), (center.y + r).min(90.0));
    let sin_r = radius.sin();
    let cos_lat = center.y.to_radians().cos();
    let full = Position {
        x: -180.0,
        y: south,
    };
    let full_high = Position { x: 180.0, y: north };
    if radius >= std::f64::consts::FRAC_PI_2 || north >= 90.0 || south <= -90.0 || sin_r >= cos_lat
    {
        return (full, full_high);
    }
    let dlng = (sin_r / cos_lat).asin().to_degrees();
    if center.x - dlng < -180.0 || center.x + dlng > 180.0 {
        return (full, full_high);
    }
    (
        Position {
            x: center.x - dlng,
            y: south,
        },
        Position {
            x: center.x + dlng,
            y: north,
        },
    )
}
