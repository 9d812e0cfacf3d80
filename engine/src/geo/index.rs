//! Geo index fields: a `2dsphere` or `2d` field's options, the keys a document gives it, and
//! the ranges of keys a geo condition reads.
//!
//! A key is a cell id of the quadtree (see `cell`) as a 64-bit integer. A `2dsphere` field
//! keys a point by its finest cell and any other geometry by the cells covering its rectangle
//! of longitudes and latitudes (at most [`CELLS_PER_GEOMETRY`]); a `2d` field keys each
//! legacy pair by its cell at the level `bits` names, in the grid from `min` to `max`. A
//! condition reads, for each cell covering its region's rectangle, the cell's range (keys
//! inside it) and each of its ancestors (coarser keys of geometries holding it). The index
//! narrows; the matcher judges every document it yields exactly.

use bson::{Bson, Document, RawBsonRef, RawDocument};

use super::cell::{Cell, FINEST, Grid};
use super::query::{GeoCondition, Metric, Region};
use super::shape::{self, Position, Stored};
use super::sphere::{Shape, cap_bounds};
use super::{EARTH_RADIUS_METRES, flat::FlatShape};

/// The most cells a non-point geometry's keys name.
pub const CELLS_PER_GEOMETRY: usize = 8;

/// The most cells a query's region is covered by.
const CELLS_PER_QUERY: usize = 16;

/// The `2dsphereIndexVersion`s this engine builds; its keys are its own, the same for each.
const SPHERE_VERSIONS: [i32; 2] = [2, 3];

/// Which geo field an index has.
#[derive(Debug, Clone, PartialEq)]
pub enum GeoIndex {
    /// `2dsphere`, with the version the index was created with (3 when none was named).
    Sphere { version: i32 },
    /// `2d`: `bits` of precision (26 unless named), in the grid from `min` to `max`
    /// (-180 to 180 unless named); `named` keeps which were named, to list them.
    Flat {
        bits: u8,
        min: f64,
        max: f64,
        named: [bool; 3],
    },
}

/// Why a document's geo field cannot be indexed: MongoDB's code and words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeoKeyError {
    pub code: i32,
    pub reason: String,
}

/// Why a geo index's options are refused.
pub type OptionError = String;

impl GeoIndex {
    /// The options of an index document for a `2dsphere` (`sphere`) or `2d` field.
    pub fn from_options(sphere: bool, index: &Document) -> Result<GeoIndex, OptionError> {
        let number = |name: &str| -> Result<Option<f64>, OptionError> {
            match index.get(name) {
                None => Ok(None),
                Some(Bson::Int32(n)) => Ok(Some(f64::from(*n))),
                #[allow(clippy::cast_precision_loss)]
                Some(Bson::Int64(n)) => Ok(Some(*n as f64)),
                Some(Bson::Double(d)) if d.is_finite() => Ok(Some(*d)),
                Some(other) => Err(format!("`{name}` must be a number, found {other}")),
            }
        };
        if sphere {
            for flat_only in ["bits", "min", "max"] {
                if index.contains_key(flat_only) {
                    return Err(format!("`{flat_only}` is an option of 2d indexes"));
                }
            }
            #[allow(clippy::cast_possible_truncation)] // checked against the versions below
            let version = number("2dsphereIndexVersion")?.map_or(3, |v| v as i32);
            if !SPHERE_VERSIONS.contains(&version) {
                return Err(format!(
                    "unsupported geo index version {{ 2dsphereIndexVersion : {version} }}, only versions: [2,3] are supported"
                ));
            }
            return Ok(GeoIndex::Sphere { version });
        }
        if index.contains_key("2dsphereIndexVersion") {
            return Err("`2dsphereIndexVersion` is an option of 2dsphere indexes".into());
        }
        let (bits, min, max) = (number("bits")?, number("min")?, number("max")?);
        let named = [bits.is_some(), min.is_some(), max.is_some()];
        let bits = bits.unwrap_or(26.0);
        if !(1.0..=f64::from(FINEST)).contains(&bits) || bits.fract() != 0.0 {
            return Err(format!(
                "bits for hash must be > 0 and <= {FINEST} in this engine, but {bits} bits were specified"
            ));
        }
        let (min, max) = (min.unwrap_or(-180.0), max.unwrap_or(180.0));
        if min >= max {
            return Err("range [min, max] is too small.".into());
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 1..=26
        let bits = bits as u8;
        Ok(GeoIndex::Flat {
            bits,
            min,
            max,
            named,
        })
    }

    /// The key pattern's value for the field.
    pub fn kind(&self) -> &'static str {
        match self {
            GeoIndex::Sphere { .. } => "2dsphere",
            GeoIndex::Flat { .. } => "2d",
        }
    }

    /// Adds the options `listIndexes` shows: the version of a `2dsphere` index (always, as
    /// MongoDB writes its default in), the `2d` options that were named.
    pub fn options_into(&self, doc: &mut Document) {
        match self {
            GeoIndex::Sphere { version } => {
                doc.insert("2dsphereIndexVersion", *version);
            }
            GeoIndex::Flat {
                bits,
                min,
                max,
                named,
            } => {
                if named[0] {
                    doc.insert("bits", i32::from(*bits));
                }
                if named[1] {
                    doc.insert("min", *min);
                }
                if named[2] {
                    doc.insert("max", *max);
                }
            }
        }
    }

    fn grid(&self) -> Grid {
        match self {
            GeoIndex::Sphere { .. } => Grid::SPHERE,
            GeoIndex::Flat { min, max, .. } => Grid {
                low: Position { x: *min, y: *min },
                high: Position { x: *max, y: *max },
            },
        }
    }

    /// The keys of one document's geo field: the cell ids of each geometry its values hold,
    /// sorted and without repeats; none when it holds nothing (no field, `null`, an empty
    /// array or document), which a geo index skips as a sparse one would.
    pub fn keys(&self, doc: &RawDocument, path: &[String]) -> Result<Vec<i64>, GeoKeyError> {
        let mut values = Vec::new();
        leaves(doc, path, &mut values).map_err(|e| GeoKeyError {
            code: 2,
            reason: e.to_string(),
        })?;
        let mut cells = Vec::new();
        for value in values {
            if is_empty(value) {
                continue;
            }
            match self {
                GeoIndex::Sphere { .. } => sphere_cells(value, &mut cells)?,
                GeoIndex::Flat { .. } => self.flat_cells(value, &mut cells)?,
            }
        }
        let mut ids: Vec<i64> = cells.into_iter().map(Cell::id).collect();
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    fn flat_cells(&self, value: RawBsonRef<'_>, out: &mut Vec<Cell>) -> Result<(), GeoKeyError> {
        let GeoIndex::Flat { bits, min, max, .. } = self else {
            return Ok(());
        };
        let refused = |code: i32, reason: String| GeoKeyError { code, reason };
        let Ok(Some(stored)) = Stored::read(value) else {
            return match value {
                RawBsonRef::Document(_) | RawBsonRef::Array(_) => Err(refused(
                    16804,
                    "location object expected, location array not in correct format".into(),
                )),
                _ => Ok(()),
            };
        };
        for one in stored {
            let Stored::Legacy(p) = one else {
                return Err(refused(
                    13026,
                    "geo values must be 'legacy coordinate pairs' for 2d indexes".into(),
                ));
            };
            let inside = |v: f64| (*min..=*max).contains(&v);
            if !inside(p.x) || !inside(p.y) {
                return Err(refused(
                    13027,
                    format!("point not in interval of [ {min}, {max} ]"),
                ));
            }
            out.push(self.grid().leaf(p).parent(*bits));
        }
        Ok(())
    }

    /// The ranges of keys (inclusive, in id order, merged) that hold every document
    /// `condition` may match; `None` when this index cannot serve it (a flat shape on a
    /// `2dsphere` index, a GeoJSON one on a `2d` index).
    pub fn ranges(&self, condition: &GeoCondition) -> Option<Vec<(i64, i64)>> {
        let (low, high) = match (self, condition) {
            (GeoIndex::Sphere { .. }, GeoCondition::Within(Region::Sphere(shape)))
            | (GeoIndex::Sphere { .. }, GeoCondition::Intersects(shape)) => shape.bounds(),
            (_, GeoCondition::Within(Region::Cap { center, radius })) => {
                cap_bounds(center.position(), *radius)
            }
            (GeoIndex::Flat { .. }, GeoCondition::Within(Region::Flat(shape))) => {
                flat_bounds(shape)
            }
            (_, GeoCondition::Near(near)) => match (self, near.metric) {
                (GeoIndex::Flat { .. }, Metric::Metres)
                | (GeoIndex::Sphere { .. }, Metric::Flat) => {
                    return None;
                }
                (_, _) if near.max.is_none() => {
                    return Some(vec![(1, Cell::ROOT.range_max().id())]);
                }
                (_, Metric::Flat) => near.point.around(near.max.unwrap_or(0.0)),
                (_, Metric::Radians) => cap_bounds(near.point, near.max.unwrap_or(0.0)),
                (_, Metric::Metres) => {
                    cap_bounds(near.point, near.max.unwrap_or(0.0) / EARTH_RADIUS_METRES)
                }
            },
            _ => return None,
        };
        Some(self.cover(low, high))
    }

    fn cover(&self, low: Position, high: Position) -> Vec<(i64, i64)> {
        let grid = self.grid();
        // Widened by a billionth of the grid: the matcher counts points within floating-point
        // error of a shape as touching it, and rounding must not put them in a cell not read.
        let margin = |low: f64, high: f64| (high - low) * 1e-9;
        let (mx, my) = (
            margin(grid.low.x, grid.high.x),
            margin(grid.low.y, grid.high.y),
        );
        let (low, high) = (
            Position {
                x: low.x - mx,
                y: low.y - my,
            },
            Position {
                x: high.x + mx,
                y: high.y + my,
            },
        );
        let clip = |p: Position| Position {
            x: p.x.clamp(grid.low.x, grid.high.x),
            y: p.y.clamp(grid.low.y, grid.high.y),
        };
        let mut ranges = Vec::new();
        for cell in grid.cover(clip(low), clip(high), CELLS_PER_QUERY) {
            ranges.push((cell.range_min().id(), cell.range_max().id()));
            ranges.extend(cell.ancestors().map(|a| (a.id(), a.id())));
            ranges.push((cell.id(), cell.id()));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        merged
    }
}

/// A flat shape's rectangle.
fn flat_bounds(shape: &FlatShape) -> (Position, Position) {
    match shape {
        FlatShape::Box { low, high } => (*low, *high),
        FlatShape::Circle { center, radius } => center.around(*radius),
        FlatShape::Polygon(vertices) => vertices.iter().fold(
            (
                Position {
                    x: f64::INFINITY,
                    y: f64::INFINITY,
                },
                Position {
                    x: f64::NEG_INFINITY,
                    y: f64::NEG_INFINITY,
                },
            ),
            |(low, high), p| {
                (
                    Position {
                        x: low.x.min(p.x),
                        y: low.y.min(p.y),
                    },
                    Position {
                        x: high.x.max(p.x),
                        y: high.y.max(p.y),
                    },
                )
            },
        ),
    }
}

/// Whether a value holds no geometry: `null`, undefined, an empty array or document.
fn is_empty(value: RawBsonRef<'_>) -> bool {
    match value {
        RawBsonRef::Null | RawBsonRef::Undefined => true,
        RawBsonRef::Array(a) => a.into_iter().next().is_none(),
        RawBsonRef::Document(d) => d.into_iter().next().is_none(),
        _ => false,
    }
}

/// The cells of one `2dsphere` value; MongoDB's 16755 when it holds no valid geometry.
fn sphere_cells(value: RawBsonRef<'_>, out: &mut Vec<Cell>) -> Result<(), GeoKeyError> {
    let refused = |reason: String| GeoKeyError {
        code: 16755,
        reason,
    };
    let stored = match Stored::read(value) {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            return Err(refused(format!(
                "Point must be an array or object, instead got type {}",
                crate::expr::type_alias(Bson::try_from(value).ok().as_ref())
            )));
        }
        Err(e) => return Err(refused(e.to_string())),
    };
    for one in stored {
        let shape = match one {
            Stored::Legacy(p) => {
                shape::check_bounds(p).map_err(|e| refused(e.to_string()))?;
                Shape::point(p)
            }
            Stored::GeoJson(g) => Shape::new(&g, false),
        };
        if shape.is_points() {
            out.extend(
                shape
                    .points()
                    .iter()
                    .map(|&v| Grid::SPHERE.leaf(v.position())),
            );
        } else {
            let (low, high) = shape.bounds();
            out.extend(Grid::SPHERE.cover(low, high, CELLS_PER_GEOMETRY));
        }
    }
    Ok(())
}

/// The values at the end of a path, arrays on the way entered (each subdocument element) but
/// the last value taken whole: a legacy pair is an array.
fn leaves<'a>(
    doc: &'a RawDocument,
    path: &[String],
    out: &mut Vec<RawBsonRef<'a>>,
) -> bson::error::Result<()> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(());
    };
    let Some(value) = doc.get(first)? else {
        return Ok(());
    };
    if rest.is_empty() {
        out.push(value);
        return Ok(());
    }
    match value {
        RawBsonRef::Document(sub) => leaves(sub, rest, out),
        RawBsonRef::Array(array) => {
            for element in array {
                if let RawBsonRef::Document(sub) = element? {
                    leaves(sub, rest, out)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The distance from a near point to the nearest location a document holds at a path, and
/// that location as stored (an element of an array of locations, or the value itself).
pub fn nearest_location(
    near: &super::Near,
    doc: &RawDocument,
    path: &[String],
) -> Option<(f64, Bson)> {
    let mut values = Vec::new();
    leaves(doc, path, &mut values).ok()?;
    let mut best: Option<(f64, RawBsonRef<'_>)> = None;
    for value in values {
        let whole = Stored::read(value)
            .ok()
            .flatten()
            .is_some_and(|s| s.len() == 1);
        let locations: Vec<RawBsonRef<'_>> = match value {
            RawBsonRef::Array(array) if !whole => {
                array.into_iter().filter_map(Result::ok).collect()
            }
            other => vec![other],
        };
        for location in locations {
            if let Some(d) = near.distance_of(location)
                && best.is_none_or(|(b, _)| d < b)
            {
                best = Some((d, location));
            }
        }
    }
    let (distance, location) = best?;
    Some((distance, Bson::try_from(location).ok()?))
}

/// The distance from a near point to the nearest geometry a document holds at a path.
pub fn document_distance(near: &super::Near, doc: &RawDocument, path: &[String]) -> Option<f64> {
    let mut values = Vec::new();
    leaves(doc, path, &mut values).ok()?;
    values
        .into_iter()
        .filter_map(|v| near.distance_of(v))
        .fold(None, |best: Option<f64>, d| {
            Some(best.map_or(d, |b| b.min(d)))
        })
}
