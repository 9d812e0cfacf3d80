//! Geometries as documents hold them and queries name them: GeoJSON objects, and MongoDB's
//! legacy coordinate pairs (`[x, y]` or `{x: .., y: ..}`), parsed and checked as MongoDB
//! checks them before anything is indexed or compared.

use bson::{RawArray, RawBsonRef, RawDocument};

use super::GeoError;

/// A position: longitude and latitude in degrees for GeoJSON, `x` and `y` for a legacy pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Position {
    pub x: f64,
    pub y: f64,
}

/// A GeoJSON geometry. Rings are closed (the last position repeats the first) as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Geometry {
    Point(Position),
    LineString(Vec<Position>),
    /// The shell, then the holes.
    Polygon(Vec<Vec<Position>>),
    MultiPoint(Vec<Position>),
    MultiLineString(Vec<Vec<Position>>),
    MultiPolygon(Vec<Vec<Vec<Position>>>),
    GeometryCollection(Vec<Geometry>),
}

/// A value a geospatial condition or index reads from a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// A GeoJSON object: spherical geometry, longitude and latitude in degrees.
    GeoJson(Geometry),
    /// A legacy coordinate pair: a point on the plane for `2d`, or on the sphere for
    /// spherical queries when it lies within longitude and latitude bounds.
    Legacy(Position),
}

/// The most nesting a geometry collection may have; deeper ones are refused, not walked.
const MAX_COLLECTION_DEPTH: usize = 16;

impl Position {
    /// The square of half-side `r` around this position, as its low and high corners.
    pub fn around(self, r: f64) -> (Position, Position) {
        (
            Position {
                x: self.x - r,
                y: self.y - r,
            },
            Position {
                x: self.x + r,
                y: self.y + r,
            },
        )
    }
}

impl Stored {
    /// The geometries one value at the end of a path holds: a GeoJSON object or a legacy pair,
    /// or an array of them. `Ok(None)` for a value that is neither (MongoDB's geo conditions
    /// do not match it; a geo index refuses it).
    pub fn read(value: RawBsonRef<'_>) -> Result<Option<Vec<Stored>>, GeoError> {
        if let Some(one) = Self::read_one(value)? {
            return Ok(Some(vec![one]));
        }
        let RawBsonRef::Array(array) = value else {
            return Ok(None);
        };
        let mut all = Vec::new();
        for element in array {
            let element = element.map_err(GeoError::malformed)?;
            match Self::read_one(element)? {
                Some(one) => all.push(one),
                None => return Ok(None),
            }
        }
        Ok((!all.is_empty()).then_some(all))
    }

    fn read_one(value: RawBsonRef<'_>) -> Result<Option<Stored>, GeoError> {
        match value {
            RawBsonRef::Document(doc) if doc.get("type").ok().flatten().is_some() => {
                Geometry::parse(doc, 0).map(|g| Some(Stored::GeoJson(g)))
            }
            RawBsonRef::Document(doc) => Ok(legacy_document(doc)?.map(Stored::Legacy)),
            RawBsonRef::Array(array) => Ok(legacy_array(array)?.map(Stored::Legacy)),
            _ => Ok(None),
        }
    }

    /// The point this value is, if it is one (a GeoJSON point or a legacy pair).
    pub fn point(&self) -> Option<Position> {
        match self {
            Stored::GeoJson(Geometry::Point(p)) | Stored::Legacy(p) => Some(*p),
            Stored::GeoJson(_) => None,
        }
    }
}

/// A legacy pair written as an array: its first two elements, both numbers; more are
/// ignored, as MongoDB ignores them.
pub(crate) fn legacy_array(array: &RawArray) -> Result<Option<Position>, GeoError> {
    let mut numbers = array.into_iter();
    let (Some(x), Some(y)) = (numbers.next(), numbers.next()) else {
        return Ok(None);
    };
    let (x, y) = (
        x.map_err(GeoError::malformed)?,
        y.map_err(GeoError::malformed)?,
    );
    Ok(finite(number(x), number(y)))
}

/// A point of two finite numbers; none for NaN or an infinity, which no point has.
fn finite(x: Option<f64>, y: Option<f64>) -> Option<Position> {
    let (x, y) = (x?, y?);
    (x.is_finite() && y.is_finite()).then_some(Position { x, y })
}

/// A legacy pair written as a document: its first two fields, both numbers, whatever their
/// names (`{lng: .., lat: ..}`, `{x: .., y: ..}`).
pub(crate) fn legacy_document(doc: &RawDocument) -> Result<Option<Position>, GeoError> {
    let mut fields = doc.into_iter();
    let (Some(x), Some(y)) = (fields.next(), fields.next()) else {
        return Ok(None);
    };
    let (x, y) = (
        x.map_err(GeoError::malformed)?,
        y.map_err(GeoError::malformed)?,
    );
    Ok(finite(number(x.1), number(y.1)))
}

pub(crate) fn number(value: RawBsonRef<'_>) -> Option<f64> {
    match value {
        RawBsonRef::Double(d) => Some(d),
        RawBsonRef::Int32(i) => Some(f64::from(i)),
        #[allow(clippy::cast_precision_loss)]
        RawBsonRef::Int64(i) => Some(i as f64),
        RawBsonRef::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

impl Geometry {
    /// Parses a GeoJSON object, checking it as MongoDB does: known type, coordinates of the
    /// type's shape, positions within longitude and latitude bounds, line strings of two or
    /// more distinct positions, closed rings of four or more positions without crossing edges.
    pub fn parse(doc: &RawDocument, depth: usize) -> Result<Geometry, GeoError> {
        let Some(RawBsonRef::String(kind)) = doc.get("type").map_err(GeoError::malformed)? else {
            return Err(GeoError::invalid("GeoJSON type must be a string"));
        };
        if kind == "GeometryCollection" {
            return collection(doc, depth);
        }
        let Some(RawBsonRef::Array(coordinates)) =
            doc.get("coordinates").map_err(GeoError::malformed)?
        else {
            return Err(GeoError::invalid(format!(
                "GeoJSON coordinates must be an array of coordinates for a {kind}"
            )));
        };
        let geometry = match kind {
            "Point" => Geometry::Point(position(RawBsonRef::Array(coordinates))?),
            "LineString" => Geometry::LineString(line(coordinates)?),
            "Polygon" => Geometry::Polygon(polygon(coordinates)?),
            "MultiPoint" => Geometry::MultiPoint(each(coordinates, position)?),
            "MultiLineString" => Geometry::MultiLineString(each(coordinates, |v| line(array(v)?))?),
            "MultiPolygon" => Geometry::MultiPolygon(each(coordinates, |v| polygon(array(v)?))?),
            other => return Err(GeoError::invalid(format!("unknown GeoJSON type: {other}"))),
        };
        let empty = match &geometry {
            Geometry::MultiPoint(p) => p.is_empty(),
            Geometry::MultiLineString(l) => l.is_empty(),
            Geometry::MultiPolygon(p) => p.is_empty(),
            _ => false,
        };
        if empty {
            return Err(GeoError::invalid(format!(
                "{kind} coordinates must have at least 1 element"
            )));
        }
        Ok(geometry)
    }
}

fn collection(doc: &RawDocument, depth: usize) -> Result<Geometry, GeoError> {
    if depth >= MAX_COLLECTION_DEPTH {
        return Err(GeoError::invalid(format!(
            "GeometryCollection nested deeper than {MAX_COLLECTION_DEPTH} levels"
        )));
    }
    let Some(RawBsonRef::Array(geometries)) = doc.get("geometries").map_err(GeoError::malformed)?
    else {
        return Err(GeoError::invalid(
            "GeometryCollection geometries must be an array",
        ));
    };
    let mut all = Vec::new();
    for g in geometries {
        match g.map_err(GeoError::malformed)? {
            RawBsonRef::Document(d) => all.push(Geometry::parse(d, depth + 1)?),
            _ => return Err(GeoError::invalid("Element of geometries is not an object")),
        }
    }
    if all.is_empty() {
        return Err(GeoError::invalid(
            "GeometryCollection geometries must have at least 1 element",
        ));
    }
    Ok(Geometry::GeometryCollection(all))
}

fn array(value: RawBsonRef<'_>) -> Result<&RawArray, GeoError> {
    match value {
        RawBsonRef::Array(a) => Ok(a),
        _ => Err(GeoError::invalid("GeoJSON coordinates must be arrays")),
    }
}

fn each<T>(
    values: &RawArray,
    mut f: impl FnMut(RawBsonRef<'_>) -> Result<T, GeoError>,
) -> Result<Vec<T>, GeoError> {
    let mut out = Vec::new();
    for value in values {
        out.push(f(value.map_err(GeoError::malformed)?)?);
    }
    Ok(out)
}

/// A GeoJSON position: two finite numbers (more, such as an altitude, are allowed and
/// ignored), longitude within [-180, 180] and latitude within [-90, 90].
fn position(value: RawBsonRef<'_>) -> Result<Position, GeoError> {
    let numbers = each(array(value)?, |v| {
        number(v).ok_or_else(|| GeoError::invalid("Point must only contain numeric elements"))
    })?;
    let [x, y, ..] = numbers[..] else {
        return Err(GeoError::invalid("Point must contain at least two numbers"));
    };
    if !x.is_finite() || !y.is_finite() {
        return Err(GeoError::invalid(
            "Point coordinates must be finite numbers",
        ));
    }
    let p = Position { x, y };
    check_bounds(p)?;
    Ok(p)
}

/// Whether a position lies on the sphere: longitude and latitude within bounds.
pub(crate) fn check_bounds(p: Position) -> Result<(), GeoError> {
    if (-180.0..=180.0).contains(&p.x) && (-90.0..=90.0).contains(&p.y) {
        Ok(())
    } else {
        Err(GeoError::invalid(format!(
            "Longitude/latitude is out of bounds, lng: {} lat: {}",
            p.x, p.y
        )))
    }
}

fn line(values: &RawArray) -> Result<Vec<Position>, GeoError> {
    let positions = each(values, position)?;
    let mut distinct = positions.clone();
    distinct.dedup();
    if distinct.len() < 2 {
        return Err(GeoError::invalid(format!(
            "GeoJSON LineString must have at least 2 vertices, instead got {} vertices",
            distinct.len()
        )));
    }
    Ok(positions)
}

fn polygon(values: &RawArray) -> Result<Vec<Vec<Position>>, GeoError> {
    let rings = each(values, |v| ring(array(v)?))?;
    if rings.is_empty() {
        return Err(GeoError::invalid("Polygon has no loops"));
    }
    super::sphere::check_polygon(&rings)?;
    Ok(rings)
}

/// A closed ring of four or more positions, three of them distinct.
fn ring(values: &RawArray) -> Result<Vec<Position>, GeoError> {
    let positions = each(values, position)?;
    if positions.len() < 4 {
        return Err(GeoError::invalid(
            "Loop must have at least 4 vertices (3 distinct, the last repeating the first)",
        ));
    }
    if positions.first() != positions.last() {
        return Err(GeoError::invalid(
            "Loop is not closed, first vertex does not equal last vertex",
        ));
    }
    let mut distinct: Vec<Position> = Vec::with_capacity(3);
    for p in &positions {
        if distinct.len() < 3 && !distinct.contains(p) {
            distinct.push(*p);
        }
    }
    // Distinct as points of the sphere too: positions closer than a double's precision there
    // are one vertex.
    let mut on_sphere: Vec<super::sphere::Vector> = Vec::with_capacity(3);
    for p in &positions {
        let v = super::sphere::Vector::at(*p);
        if on_sphere.len() < 3 && !on_sphere.contains(&v) {
            on_sphere.push(v);
        }
    }
    if distinct.len() < 3 || on_sphere.len() < 3 {
        return Err(GeoError::invalid(
            "Loop must have at least 3 different vertices",
        ));
    }
    Ok(positions)
}
