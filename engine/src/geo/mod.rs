//! Geospatial search: MongoDB's `2dsphere` and `2d` indexes and its geo query operators.
//!
//! - `shape`: geometries as documents hold them (GeoJSON, legacy coordinate pairs), parsed
//!   and checked;
//! - `sphere`: exact geometry on the sphere (containment, intersection, distance);
//! - `flat`: geometry on the plane, for legacy pairs and MongoDB's legacy shapes;
//! - `cell`: the quadtree whose cells index keys name;
//! - `query`: the operators (`$geoWithin`, `$geoIntersects`, `$near`, `$nearSphere`) parsed
//!   and judged against stored values.
//!
//! A geo condition is always judged exactly, by the matcher; an index only narrows the
//! documents it is judged on.

mod cell;
mod flat;
#[cfg(test)]
mod laws;
mod query;
mod shape;
mod sphere;

pub use cell::{Cell, FINEST, Grid};
pub use flat::FlatShape;
pub use query::{GeoCondition, Near, Region};
pub use shape::{Geometry, Position, Stored};
pub use sphere::{Shape, Vector};

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
