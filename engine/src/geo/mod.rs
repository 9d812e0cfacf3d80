//! Geospatial search: MongoDB's `2dsphere` and `2d` indexes and its geo query operators.
//!
//! - `shape`: geometries as documents hold them (GeoJSON, legacy coordinate pairs), parsed
//!   and checked;
//! - `sphere`: exact geometry on the sphere (containment, intersection, distance);
//! - `flat`: geometry on the plane, for legacy pairs and MongoDB's legacy shapes;
//! - `cell`: the quadtree whose cells index keys name;
//! - `index`: geo index fields: options, keys, the key ranges a condition reads;
//! - `query`: the operators (`$geoWithin`, `$geoIntersects`, `$near`, `$nearSphere`) parsed
//!   and judged against stored values.
//!
//! A geo condition is always judged exactly, by the matcher; an index only narrows the
//! documents it is judged on.

mod cell;
mod flat;
mod index;
#[cfg(test)]
mod laws;
mod query;
mod shape;
mod sphere;

pub use cell::{Cell, FINEST, Grid};
pub use flat::FlatShape;
pub use index::{CELLS_PER_GEOMETRY, GeoIndex, GeoKeyError, document_distance, nearest_location};

pub use query::{GeoCondition, Metric, Near, Region};
pub use shape::{Geometry, Position, Stored};
pub use sphere::{Shape, Vector};

/// The field a near query's documents carry their distance in while they are sorted nearest
/// first; no stored document has it (a top-level name never starts with `$`), and results have
/// it removed.
pub const DISTANCE_FIELD: &str = "$geoDistance";

/// [`DISTANCE_FIELD`] as a raw document's key.
pub(crate) const DISTANCE_KEY: &bson::raw::CStr = bson::raw::cstr!("$geoDistance");

/// The Earth's radius in metres MongoDB turns radians into metres with.
pub const EARTH_RADIUS_METRES: f64 = 6_378_100.0;

/// Why a value is no geometry, or a geo condition is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeoError {
    /// A geometry MongoDB would refuse: its words, as its error 16755 and query errors
    /// carry them.
    #[error("{0}")]
    Invalid(String),
    /// The document's bytes are damaged.
    #[error("damaged document: {0}")]
    Malformed(String),
}

impl GeoError {
    pub(crate) fn invalid(reason: impl Into<String>) -> GeoError {
        GeoError::Invalid(reason.into())
    }

    pub(crate) fn malformed(e: impl std::fmt::Display) -> GeoError {
        GeoError::Malformed(e.to_string())
    }
}
