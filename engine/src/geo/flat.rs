//! Geometry on the plane, where legacy coordinate pairs live for `2d` indexes and MongoDB's
//! legacy shapes (`$box`, `$polygon`, `$center`) are judged. Boundaries belong to their shape.

use super::shape::Position;

/// A shape on the plane a point may lie in.
#[derive(Debug, Clone, PartialEq)]
pub enum FlatShape {
    /// Its lower-left and upper-right corners.
    Box { low: Position, high: Position },
    /// Three or more vertices, closed implicitly.
    Polygon(Vec<Position>),
    /// A center and a radius in the coordinates' units.
    Circle { center: Position, radius: f64 },
}

/// The distance between two points of the plane.
pub fn distance(a: Position, b: Position) -> f64 {
    (a.x - b.x).hypot(a.y - b.y)
}

impl FlatShape {
    pub fn contains(&self, p: Position) -> bool {
        match self {
            FlatShape::Box { low, high } => {
                (low.x..=high.x).contains(&p.x) && (low.y..=high.y).contains(&p.y)
            }
            FlatShape::Circle { center, radius } => distance(*center, p) <= *radius,
            FlatShape::Polygon(vertices) => polygon_contains(vertices, p),
        }
    }
}

/// Even-odd rule, with points on an edge inside.
fn polygon_contains(vertices: &[Position], point: Position) -> bool {
    let count = vertices.len();
    let mut inside = false;
    for at in 0..count {
        let (from, to) = (vertices[at], vertices[(at + 1) % count]);
        if on_segment(from, to, point) {
            return true;
        }
        if (from.y > point.y) != (to.y > point.y) {
            let crossing = from.x + (point.y - from.y) / (to.y - from.y) * (to.x - from.x);
            if point.x < crossing {
                inside = !inside;
            }
        }
    }
    inside
}

#[allow(clippy::float_cmp)] // exact collinearity is what "on the edge" means
fn on_segment(a: Position, b: Position, p: Position) -> bool {
    let cross = (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x);
    cross == 0.0
        && (a.x.min(b.x)..=a.x.max(b.x)).contains(&p.x)
        && (a.y.min(b.y)..=a.y.max(b.y)).contains(&p.y)
}
