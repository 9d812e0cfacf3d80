//! The geo query operators: `$geoWithin` (and its old name `$within`), `$geoIntersects`,
//! `$near` and `$nearSphere`, parsed from their arguments and judged against stored values.
//!
//! Which values each form reads, as in MongoDB: `$geometry` shapes and `$centerSphere` are on
//! the sphere and read GeoJSON and legacy pairs (a pair as longitude and latitude); `$box`,
//! `$polygon` and `$center` are on the plane and read points only, legacy pairs and GeoJSON
//! points. A value holding several geometries (an array of them) satisfies a condition when
//! one of them does; a `$near` distance is the nearest one's.

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};

use super::flat::{self, FlatShape};
use super::shape::{self, Geometry, Position, Stored};
use super::sphere::{Shape, Vector};
use super::{EARTH_RADIUS_METRES, GeoError};

/// The region of a `$geoWithin`.
#[derive(Debug, Clone)]
pub enum Region {
    /// A GeoJSON polygon or multipolygon (`$geometry`).
    Sphere(Shape),
    /// `$centerSphere`: a center and a radius in radians.
    Cap { center: Vector, radius: f64 },
    /// `$box`, `$polygon` or `$center`.
    Flat(FlatShape),
}

/// How a `$near` measures distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A legacy `$near`: on the plane, in the coordinates' units.
    Flat,
    /// A legacy `$nearSphere`: on the sphere, in radians.
    Radians,
    /// A GeoJSON point: on the sphere, in metres.
    Metres,
}

/// A `$near` or `$nearSphere`.
#[derive(Debug, Clone)]
pub struct Near {
    pub point: Position,
    pub metric: Metric,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// One geo condition on a path.
#[derive(Debug, Clone)]
pub enum GeoCondition {
    Within(Region),
    Intersects(Shape),
    Near(Near),
}

fn raw_document(doc: &Document) -> Result<RawDocumentBuf, GeoError> {
    RawDocumentBuf::try_from(doc).map_err(GeoError::malformed)
}

/// A legacy point as a query writes it: an array or document of two numbers (MongoDB refuses
/// a third, which only a stored point may carry).
fn legacy_point(value: &Bson, what: &str) -> Result<Position, GeoError> {
    let length = match value {
        Bson::Array(a) => a.len(),
        Bson::Document(d) => d.len(),
        _ => 2,
    };
    if length > 2 {
        return Err(GeoError::invalid(format!(
            "Point must only contain two numeric elements: {what} is {value}"
        )));
    }
    let point = match value {
        Bson::Array(_) | Bson::Document(_) => {
            let wrapped = raw_document(&bson::doc! { "p": value.clone() })?;
            match wrapped.get("p").map_err(GeoError::malformed)? {
                Some(RawBsonRef::Array(a)) => shape::legacy_array(a)?,
                Some(RawBsonRef::Document(d)) => shape::legacy_document(d)?,
                _ => None,
            }
        }
        _ => None,
    };
    point.ok_or_else(|| GeoError::invalid(format!("{what} must be a point: two numbers")))
}

fn geojson(value: &Bson) -> Result<(Geometry, bool), GeoError> {
    let Bson::Document(doc) = value else {
        return Err(GeoError::invalid("$geometry must be a GeoJSON object"));
    };
    let strict = match doc.get("crs") {
        None => false,
        Some(crs) => strict_winding(crs)?,
    };
    let raw = raw_document(doc)?;
    let geometry = Geometry::parse(&raw, 0)?;
    if strict && !matches!(&geometry, Geometry::Polygon(rings) if rings.len() == 1) {
        return Err(GeoError::invalid(
            "Strict winding order CRS is only supported by a polygon of one loop",
        ));
    }
    Ok((geometry, strict))
}

/// A `crs` member: MongoDB's strict-winding system (the ring's left side is its interior),
/// or one of the names of plain longitude and latitude.
fn strict_winding(crs: &Bson) -> Result<bool, GeoError> {
    let name = match crs {
        Bson::Document(d) => d
            .get_document("properties")
            .ok()
            .and_then(|p| p.get_str("name").ok()),
        _ => None,
    };
    match name {
        Some("urn:x-mongodb:crs:strictwinding:EPSG:4326") => Ok(true),
        Some("EPSG:4326" | "urn:ogc:def:crs:OGC:1.3:CRS84" | "urn:ogc:def:crs:EPSG::4326") => {
            Ok(false)
        }
        _ => Err(GeoError::invalid(format!(
            "unknown coordinate reference system: {crs}"
        ))),
    }
}

fn non_negative(value: &Bson, what: &str) -> Result<f64, GeoError> {
    let n = match value {
        Bson::Double(d) => *d,
        Bson::Int32(i) => f64::from(*i),
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(i) => *i as f64,
        Bson::Decimal128(d) => d.to_string().parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    };
    if n >= 0.0 {
        Ok(n)
    } else {
        Err(GeoError::invalid(format!(
            "{what} must be a non-negative number"
        )))
    }
}

fn pair(value: &Bson, what: &str) -> Result<(Bson, f64), GeoError> {
    match value {
        Bson::Array(a) if a.len() == 2 => Ok((a[0].clone(), non_negative(&a[1], what)?)),
        _ => Err(GeoError::invalid(format!(
            "{what} requires an array of a center and a radius"
        ))),
    }
}

impl GeoCondition {
    /// `$geoWithin`'s argument: one shape operator.
    pub fn within(argument: &Bson) -> Result<GeoCondition, GeoError> {
        let Bson::Document(doc) = argument else {
            return Err(GeoError::invalid("$geoWithin needs an object"));
        };
        let mut shapes = doc.iter();
        let (Some((operator, value)), None) = (shapes.next(), shapes.next()) else {
            return Err(GeoError::invalid("$geoWithin needs exactly one shape"));
        };
        let region = match operator.as_str() {
            "$geometry" => {
                let (geometry, strict) = geojson(value)?;
                if !matches!(geometry, Geometry::Polygon(_) | Geometry::MultiPolygon(_)) {
                    return Err(GeoError::invalid(
                        "$within not supported with provided geometry: only Polygon and MultiPolygon enclose",
                    ));
                }
                Region::Sphere(Shape::new(&geometry, strict))
            }
            "$box" => match value {
                Bson::Array(corners) if corners.len() == 2 => {
                    let a = legacy_point(&corners[0], "a $box corner")?;
                    let b = legacy_point(&corners[1], "a $box corner")?;
                    Region::Flat(FlatShape::Box {
                        low: Position {
                            x: a.x.min(b.x),
                            y: a.y.min(b.y),
                        },
                        high: Position {
                            x: a.x.max(b.x),
                            y: a.y.max(b.y),
                        },
                    })
                }
                _ => return Err(GeoError::invalid("$box requires an array of two corners")),
            },
            "$polygon" => match value {
                Bson::Array(points) if points.len() >= 3 => Region::Flat(FlatShape::Polygon(
                    points
                        .iter()
                        .map(|p| legacy_point(p, "a $polygon vertex"))
                        .collect::<Result<_, _>>()?,
                )),
                _ => {
                    return Err(GeoError::invalid("Polygon must have at least 3 points"));
                }
            },
            "$center" => {
                let (center, radius) = pair(value, "$center")?;
                let center = legacy_point(&center, "a $center")?;
                Region::Flat(FlatShape::Circle { center, radius })
            }
            "$centerSphere" => {
                let (center, radius) = pair(value, "$centerSphere")?;
                let center = legacy_point(&center, "a $centerSphere")?;
                shape::check_bounds(center)?;
                Region::Cap {
                    center: Vector::at(center),
                    radius,
                }
            }
            other => return Err(GeoError::invalid(format!("unknown geo specifier: {other}"))),
        };
        Ok(GeoCondition::Within(region))
    }

    /// `$geoIntersects`'s argument: `{$geometry: ...}`.
    pub fn intersects(argument: &Bson) -> Result<GeoCondition, GeoError> {
        match argument {
            Bson::Document(d) if d.len() == 1 && d.contains_key("$geometry") => {
                let (geometry, strict) = geojson(&d["$geometry"])?;
                Ok(GeoCondition::Intersects(Shape::new(&geometry, strict)))
            }
            _ => Err(GeoError::invalid(
                "$geoIntersects needs {$geometry: <GeoJSON>}",
            )),
        }
    }

    /// A `$near` or `$nearSphere` (`sphere`) from the operator document holding it, whose
    /// sibling `$minDistance` and `$maxDistance` bound a legacy point's distances.
    pub fn near(operators: &Document, sphere: bool) -> Result<GeoCondition, GeoError> {
        let operator = if sphere { "$nearSphere" } else { "$near" };
        let legacy_metric = if sphere {
            Metric::Radians
        } else {
            Metric::Flat
        };
        let mut near = match &operators[operator] {
            Bson::Document(d) if d.contains_key("$geometry") => {
                let near = geojson_near(&d["$geometry"])?;
                bounded(near, d, &["$geometry"])?
            }
            Bson::Document(d) if d.contains_key("type") => {
                geojson_near(&Bson::Document(d.clone()))?
            }
            // `[x, y, maxDistance]`: the legacy form's third element bounds the distance.
            Bson::Array(a) if a.len() == 3 => Near {
                point: legacy_point(&Bson::Array(a[..2].to_vec()), operator)?,
                metric: legacy_metric,
                min: None,
                max: Some(non_negative(&a[2], "$maxDistance")?),
            },
            legacy => Near {
                point: legacy_point(legacy, operator)?,
                metric: legacy_metric,
                min: None,
                max: None,
            },
        };
        near = bounded(near, operators, &[operator])?;
        if near.metric == Metric::Radians {
            shape::check_bounds(near.point).map_err(|_| {
                GeoError::invalid("Legacy point is out of bounds for spherical query")
            })?;
        }
        Ok(GeoCondition::Near(near))
    }

    /// Whether a value at the end of a path satisfies the condition.
    pub fn matches(&self, value: RawBsonRef<'_>) -> bool {
        let Ok(Some(stored)) = Stored::read(value) else {
            return false;
        };
        match self {
            GeoCondition::Near(near) => near.distance(&stored).is_some_and(|d| {
                near.min.is_none_or(|m| d >= m) && near.max.is_none_or(|m| d <= m)
            }),
            _ => stored.iter().any(|one| self.holds(one)),
        }
    }

    fn holds(&self, stored: &Stored) -> bool {
        match self {
            GeoCondition::Within(Region::Flat(shape)) => {
                stored.point().is_some_and(|p| shape.contains(p))
            }
            GeoCondition::Within(Region::Sphere(region)) => {
                spherical(stored).is_some_and(|s| s.within(region))
            }
            GeoCondition::Within(Region::Cap { center, radius }) => {
                spherical(stored).is_some_and(|s| s.within_cap(*center, *radius))
            }
            GeoCondition::Intersects(shape) => {
                spherical(stored).is_some_and(|s| s.intersects(shape))
            }
            GeoCondition::Near(_) => false,
        }
    }
}

/// A stored value on the sphere: GeoJSON as it is, a legacy pair within longitude and
/// latitude bounds as a point.
fn spherical(stored: &Stored) -> Option<Shape> {
    match stored {
        Stored::GeoJson(g) => Some(Shape::new(g, false)),
        Stored::Legacy(p) => shape::check_bounds(*p).ok().map(|()| Shape::point(*p)),
    }
}

fn geojson_near(value: &Bson) -> Result<Near, GeoError> {
    match geojson(value)?.0 {
        Geometry::Point(point) => Ok(Near {
            point,
            metric: Metric::Metres,
            min: None,
            max: None,
        }),
        _ => Err(GeoError::invalid(
            "$near requires a point, given a geometry of another type",
        )),
    }
}

/// `near` with the `$minDistance` and `$maxDistance` of `doc` (other fields than `skip` are
/// refused).
fn bounded(mut near: Near, doc: &Document, skip: &[&str]) -> Result<Near, GeoError> {
    for (key, value) in doc {
        match key.as_str() {
            "$maxDistance" => near.max = Some(non_negative(value, "$maxDistance")?),
            "$minDistance" => near.min = Some(non_negative(value, "$minDistance")?),
            other if skip.contains(&other) => {}
            other => {
                return Err(GeoError::invalid(format!(
                    "invalid argument in geo near query: {other}"
                )));
            }
        }
    }
    Ok(near)
}

impl Near {
    /// The distance from the near point to the nearest of the stored geometries, in the
    /// near's metric; `None` when none can be measured so (a non-point on the plane, a legacy
    /// pair off the sphere).
    pub fn distance(&self, stored: &[Stored]) -> Option<f64> {
        let origin = Vector::at(self.point);
        stored
            .iter()
            .filter_map(|one| match self.metric {
                Metric::Flat => one.point().map(|p| flat::distance(self.point, p)),
                Metric::Radians => spherical(one).map(|s| s.distance(origin)),
                Metric::Metres => spherical(one).map(|s| s.distance(origin) * EARTH_RADIUS_METRES),
            })
            .fold(None, |best: Option<f64>, d| {
                Some(best.map_or(d, |b| b.min(d)))
            })
    }

    /// The distance of the document value at the end of a path, if it holds geometry.
    pub fn distance_of(&self, value: RawBsonRef<'_>) -> Option<f64> {
        self.distance(&Stored::read(value).ok()??)
    }
}
