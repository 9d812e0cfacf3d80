//! Geospatial values and queries: [`GeoPoint`] and [`Geometry`] (GeoJSON as MongoDB stores it),
//! the traits that say which fields a geo index may cover, and the typed operators: `near`,
//! `within`, `within_radius`, `intersects` on the sphere, `near_flat` and `within_box` on
//! the plane of a `2d` index, and the `$geoNear` stage ([`GeoNear`]).
//!
//! Distances on the sphere are metres (MongoDB's, over a radius of 6,378,100 m); on the plane,
//! the units of the coordinates. The engine judges the geometry: a polygon that is not closed
//! or crosses itself is refused there with MongoDB's error, on both back ends.

use bson::{Bson, Document, doc};
use serde::{Deserialize, Serialize};

use crate::error::BuildError;
use crate::field::Field;
use crate::filter::Filter;

/// A GeoJSON point, stored as `{type: "Point", coordinates: [lng, lat]}`.
///
/// ```
/// use odm::GeoPoint;
///
/// let boulder = GeoPoint::new(-105.27, 40.01);
/// assert_eq!(
///     bson::serialize_to_document(&boulder).unwrap(),
///     bson::doc! { "type": "Point", "coordinates": [-105.27, 40.01] }
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Geometry", into = "Geometry")]
pub struct GeoPoint {
    pub lng: f64,
    pub lat: f64,
}

impl GeoPoint {
    /// The point at longitude `lng` and latitude `lat`, in degrees (GeoJSON's order).
    pub fn new(lng: f64, lat: f64) -> Self {
        GeoPoint { lng, lat }
    }

    fn position(self) -> [f64; 2] {
        [self.lng, self.lat]
    }
}

impl From<GeoPoint> for Geometry {
    fn from(point: GeoPoint) -> Self {
        Geometry::Point {
            coordinates: point.position(),
        }
    }
}

impl TryFrom<Geometry> for GeoPoint {
    type Error = String;

    fn try_from(geometry: Geometry) -> Result<Self, String> {
        match geometry {
            Geometry::Point {
                coordinates: [lng, lat],
            } => Ok(GeoPoint { lng, lat }),
            other => Err(format!(
                "expected a GeoJSON Point, found a {}",
                other.kind()
            )),
        }
    }
}

/// A GeoJSON geometry of any of MongoDB's types. Positions are `[lng, lat]`; a polygon's first
/// ring is its shell, the others its holes, each closed (its last position its first). A
/// stored position with a third number (an altitude, which GeoJSON allows) does not decode
/// into this type.
///
/// ```
/// use odm::Geometry;
///
/// let square = Geometry::rectangle([0.0, 0.0], [1.0, 1.0]);
/// assert_eq!(
///     bson::serialize_to_document(&square).unwrap(),
///     bson::doc! { "type": "Polygon", "coordinates": [[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]] }
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Geometry {
    Point {
        coordinates: [f64; 2],
    },
    LineString {
        coordinates: Vec<[f64; 2]>,
    },
    Polygon {
        coordinates: Vec<Vec<[f64; 2]>>,
    },
    MultiPoint {
        coordinates: Vec<[f64; 2]>,
    },
    MultiLineString {
        coordinates: Vec<Vec<[f64; 2]>>,
    },
    MultiPolygon {
        coordinates: Vec<Vec<Vec<[f64; 2]>>>,
    },
    GeometryCollection {
        geometries: Vec<Geometry>,
    },
}

impl Geometry {
    /// The polygon whose shell is `ring`, closed here when its last position is not its first.
    // GeoJSON closes a ring by repeating its first position exactly: equality is the rule.
    #[allow(clippy::float_cmp)]
    pub fn polygon(ring: impl IntoIterator<Item = [f64; 2]>) -> Self {
        let mut ring: Vec<[f64; 2]> = ring.into_iter().collect();
        if let (Some(first), Some(last)) = (ring.first().copied(), ring.last())
            && first != *last
        {
            ring.push(first);
        }
        Geometry::Polygon {
            coordinates: vec![ring],
        }
    }

    /// The polygon between the south-west corner `sw` and the north-east corner `ne`, its edges
    /// arcs of the sphere between the corners.
    pub fn rectangle(sw: [f64; 2], ne: [f64; 2]) -> Self {
        Geometry::polygon([sw, [ne[0], sw[1]], ne, [sw[0], ne[1]]])
    }

    /// The GeoJSON type's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Geometry::Point { .. } => "Point",
            Geometry::LineString { .. } => "LineString",
            Geometry::Polygon { .. } => "Polygon",
            Geometry::MultiPoint { .. } => "MultiPoint",
            Geometry::MultiLineString { .. } => "MultiLineString",
            Geometry::MultiPolygon { .. } => "MultiPolygon",
            Geometry::GeometryCollection { .. } => "GeometryCollection",
        }
    }

    fn to_bson(&self) -> Result<Bson, bson::error::Error> {
        bson::serialize_to_bson(self)
    }
}

/// Types a `2dsphere` index covers and the sphere's operators query: points and GeoJSON
/// geometries, legacy coordinate pairs, and options and arrays of them. A type of one's own
/// may implement it when it serializes as one of these.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a location: a `2dsphere` index and the sphere's operators need an `odm::GeoPoint`, an `odm::Geometry` or a legacy pair `[f64; 2]`",
    label = "not a point or geometry"
)]
pub trait Located {
    /// One location as `$geoNear`'s `includeLocs` returns it: the stored form of the nearest
    /// one (an array's element, an option's value).
    type One;
}
impl Located for GeoPoint {
    type One = GeoPoint;
}
impl Located for Geometry {
    type One = Geometry;
}
impl Located for [f64; 2] {
    type One = [f64; 2];
}
impl<T: Located> Located for Option<T> {
    type One = T::One;
}
impl<T: Located> Located for Vec<T> {
    type One = T::One;
}

/// Types a `2d` index covers and the plane's operators query: legacy coordinate pairs (a `2d`
/// index does not read GeoJSON), and options and arrays of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a coordinate pair: a `2d` index and the plane's operators need `[f64; 2]`",
    label = "not a legacy coordinate pair"
)]
pub trait Planar {}
impl Planar for [f64; 2] {}
impl<T: Planar> Planar for Option<T> {}
impl<T: Planar> Planar for Vec<T> {}

/// Compile-time checks the derive makes on the fields of geo indexes.
#[doc(hidden)]
pub fn sphere_key<R, V: Located>(field: &Field<R, V>) -> &str {
    field.path()
}
#[doc(hidden)]
pub fn flat_key<R, V: Planar>(field: &Field<R, V>) -> &str {
    field.path()
}

/// A near condition on the field of values `V`: the documents whose location lies within the
/// distances, nearest first. As a filter it is `$near`, which MongoDB takes in a find only (not
/// in a count, a `$match`, an `$or` or a `$geoNear`'s query); it is also the `near` of a
/// [`GeoNear`] stage. The field needs an index of the near's kind: `2dsphere` for
/// [`Field::near`], `2d` for [`Field::near_flat`] (the types say what a field holds, not how
/// it is indexed; the wrong index is refused at run time with error 291).
#[derive(Debug, Clone)]
pub struct Near<R, V> {
    field: Field<R, V>,
    center: Center,
    min: Option<f64>,
    max: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
enum Center {
    /// A GeoJSON point: distances in metres on the sphere.
    Sphere(GeoPoint),
    /// A legacy pair on the plane of a `2d` index: distances in its units.
    Flat([f64; 2]),
}

impl<R, V> Near<R, V> {
    /// Only documents at least `distance` away (metres on the sphere).
    #[must_use]
    pub fn min_distance(mut self, distance: f64) -> Self {
        self.min = Some(distance);
        self
    }

    /// Only documents at most `distance` away (metres on the sphere).
    #[must_use]
    pub fn max_distance(mut self, distance: f64) -> Self {
        self.max = Some(distance);
        self
    }

    /// The `$near` condition as MongoDB writes it for the center's kind.
    fn condition(&self) -> Document {
        // The distances go inside the GeoJSON form's operator, beside the legacy form's.
        let mut bounded = match self.center {
            Center::Sphere(point) => {
                doc! { "$geometry": { "type": "Point", "coordinates": point.position().to_vec() } }
            }
            Center::Flat(pair) => doc! { "$near": pair.to_vec() },
        };
        if let Some(min) = self.min {
            bounded.insert("$minDistance", min);
        }
        if let Some(max) = self.max {
            bounded.insert("$maxDistance", max);
        }
        match self.center {
            Center::Sphere(_) => doc! { "$near": bounded },
            Center::Flat(_) => bounded,
        }
    }
}

impl<R, V> From<Near<R, V>> for Filter<R> {
    fn from(near: Near<R, V>) -> Self {
        Filter::raw(doc! { near.field.path(): near.condition() })
    }
}

impl<R, V: Located> Field<R, V> {
    /// The documents whose location is nearest `point`, nearest first (`$near` with a
    /// GeoJSON point; needs a `2dsphere` index on the field). Bound it with
    /// [`Near::max_distance`], in metres.
    pub fn near(&self, point: GeoPoint) -> Near<R, V> {
        Near {
            field: self.clone(),
            center: Center::Sphere(point),
            min: None,
            max: None,
        }
    }

    /// The documents whose location lies wholly within `region` (`$geoWithin` with
    /// `$geometry`; MongoDB takes a `Polygon` or a `MultiPolygon` and refuses another type).
    pub fn within(&self, region: impl Into<Geometry>) -> Filter<R> {
        self.geo_condition("$geoWithin", &region.into())
    }

    /// The documents whose location lies within `metres` of `center` on the sphere
    /// (`$geoWithin` with `$centerSphere`, its radius in radians).
    pub fn within_radius(&self, center: GeoPoint, metres: f64) -> Filter<R> {
        let radians = metres / EARTH_RADIUS_METRES;
        Filter::raw(doc! {
            self.path(): { "$geoWithin": { "$centerSphere": [center.position().to_vec(), radians] } }
        })
    }

    /// The documents whose location shares a point with `geometry` (`$geoIntersects`).
    pub fn intersects(&self, geometry: impl Into<Geometry>) -> Filter<R> {
        self.geo_condition("$geoIntersects", &geometry.into())
    }

    fn geo_condition(&self, operator: &str, geometry: &Geometry) -> Filter<R> {
        match geometry.to_bson() {
            Ok(geometry) => {
                Filter::raw(doc! { self.path(): { operator: { "$geometry": geometry } } })
            }
            Err(source) => Filter::failed(BuildError::UnwritableAt {
                path: self.path().to_owned(),
                source,
            }),
        }
    }
}

impl<R, V: Planar> Field<R, V> {
    /// The documents whose pair is nearest `pair` on the plane of a `2d` index, nearest first
    /// (legacy `$near`); [`Near::max_distance`] is in the coordinates' units.
    pub fn near_flat(&self, pair: [f64; 2]) -> Near<R, V> {
        Near {
            field: self.clone(),
            center: Center::Flat(pair),
            min: None,
            max: None,
        }
    }

    /// The documents whose pair lies within the box between the corners (`$geoWithin` with
    /// `$box`; the edges count as inside).
    pub fn within_box(&self, low: [f64; 2], high: [f64; 2]) -> Filter<R> {
        Filter::raw(doc! {
            self.path(): { "$geoWithin": { "$box": [low.to_vec(), high.to_vec()] } }
        })
    }
}

/// MongoDB's radius of the Earth for `$centerSphere` and spherical distances, in metres.
pub const EARTH_RADIUS_METRES: f64 = 6_378_100.0;

/// The `$geoNear` stage of [`crate::Aggregate::geo_near`]: documents nearest first, each with
/// its distance in the output type's field `distance` (metres for a GeoJSON point, the
/// plane's units for a flat one), the output type holding the input's fields beside it.
#[derive(Debug)]
pub struct GeoNear<R, V, Out> {
    near: Near<R, V>,
    distance: Field<Out, f64>,
    query: Option<Filter<R>>,
    multiplier: Option<f64>,
    locations: Option<Field<Out, ()>>,
}

impl<R, V, Out> GeoNear<R, V, Out> {
    pub fn new(near: Near<R, V>, distance: &Field<Out, f64>) -> Self {
        GeoNear {
            near,
            distance: distance.clone(),
            query: None,
            multiplier: None,
            locations: None,
        }
    }

    /// Only documents `filter` matches (`query`).
    #[must_use]
    pub fn query(mut self, filter: Filter<R>) -> Self {
        self.query = Some(filter);
        self
    }

    /// Distances multiplied by `factor` (`distanceMultiplier`: `0.001` for kilometres).
    #[must_use]
    pub fn distance_multiplier(mut self, factor: f64) -> Self {
        self.multiplier = Some(factor);
        self
    }

    /// Each document's nearest location, as stored, in the output's field `into`
    /// (`includeLocs`).
    #[must_use]
    pub fn include_locations(mut self, into: &Field<Out, V::One>) -> Self
    where
        V: Located,
    {
        self.locations = Some(into.at_same_path());
        self
    }

    /// The stage document, its query the conjunction of `before` (the `$match` stages a
    /// pipeline had before it) and its own; or the first value that could not be written.
    pub(crate) fn into_stage(self, before: Vec<Document>) -> Result<Document, BuildError> {
        let near = self.near;
        let (point, spherical) = match near.center {
            Center::Sphere(point) => (
                bson::serialize_to_bson(&point).map_err(BuildError::Unwritable)?,
                true,
            ),
            Center::Flat(pair) => (Bson::from(pair.to_vec()), false),
        };
        let mut stage = doc! {
            "near": point,
            "distanceField": self.distance.path(),
            "key": near.field.path(),
            "spherical": spherical,
        };
        if let Some(min) = near.min {
            stage.insert("minDistance", min);
        }
        if let Some(max) = near.max {
            stage.insert("maxDistance", max);
        }
        let mut queries = before;
        if let Some(query) = self.query {
            queries.push(query.into_document()?);
        }
        match queries.len() {
            0 => {}
            1 => {
                stage.insert("query", queries.remove(0));
            }
            _ => {
                stage.insert("query", doc! { "$and": queries });
            }
        }
        if let Some(factor) = self.multiplier {
            stage.insert("distanceMultiplier", factor);
        }
        if let Some(locations) = self.locations {
            stage.insert("includeLocs", locations.path());
        }
        Ok(doc! { "$geoNear": stage })
    }
}
