//! `$geoNear`: the collection's documents nearest a point first, each with its distance.
//!
//! The stage runs as a near query on the geo index it names (`key`) or the collection's one
//! geo index (a `2d` one first, as MongoDB chooses): `{key: {$near: ...}}` for a GeoJSON point
//! (metres) or a legacy pair on the plane, `$nearSphere` for a legacy pair with `spherical`
//! (radians), with `minDistance`, `maxDistance` and the `query` filter beside it. Each result
//! gets its distance, times `distanceMultiplier`, in `distanceField`, and the location it was
//! measured to in `includeLocs`. MongoDB's `uniqueDocs` has had no effect since its 2.6 and
//! has none here; its removed `limit`, `num`, `start` and `collation` are refused as it refuses
//! them.

use bson::{Bson, Document, RawDocumentBuf};

use crate::catalog::IndexMeta;
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::expr::error;
use crate::geo::{GeoCondition, GeoIndex, Near};
use crate::path::Path;

/// A parsed `$geoNear`.
#[derive(Debug, Clone)]
pub(super) struct GeoNear {
    /// The operator document of the near condition (`{$near: .., $maxDistance: ..}`).
    condition: Document,
    near: Near,
    query: Document,
    key: Option<String>,
    distance_field: Option<String>,
    multiplier: f64,
    include_locs: Option<String>,
}

fn refuse(code: i32, reason: impl std::fmt::Display) -> Error {
    Error::from(error("$geoNear", reason).with_code(ErrorCode::location(code)))
}

fn bad_value(reason: impl std::fmt::Display) -> Error {
    Error::from(error("$geoNear", reason).with_code(ErrorCode::BAD_VALUE))
}

fn distance(options: &Document, name: &str) -> Result<Option<f64>> {
    match options.get(name) {
        None => Ok(None),
        Some(value) => match crate::expr::as_f64(value) {
            Some(n) if n >= 0.0 => Ok(Some(n)),
            _ => Err(bad_value(format!("{name} must be a non-negative number"))),
        },
    }
}

fn string(options: &Document, name: &str, code: i32) -> Result<Option<String>> {
    match options.get(name) {
        None => Ok(None),
        Some(Bson::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(refuse(
            code,
            format!("$geoNear requires '{name}' to be a non-empty string"),
        )),
    }
}

impl GeoNear {
    pub(super) fn parse(argument: &Bson) -> Result<GeoNear> {
        let Bson::Document(options) = argument else {
            return Err(bad_value("$geoNear requires an object"));
        };
        for (name, _) in options {
            match name.as_str() {
                "near" | "distanceField" | "spherical" | "query" | "key" | "minDistance"
                | "maxDistance" | "distanceMultiplier" | "includeLocs" | "uniqueDocs" => {}
                "limit" => {
                    return Err(refuse(
                        50858,
                        "$geoNear no longer supports the 'limit' parameter. Use a $limit stage instead.",
                    ));
                }
                "num" => {
                    return Err(refuse(
                        50857,
                        "$geoNear no longer supports the 'num' parameter. Use a $limit stage instead.",
                    ));
                }
                "start" => {
                    return Err(refuse(
                        50856,
                        "$geoNear no longer supports the 'start' parameter.",
                    ));
                }
                "collation" => {
                    return Err(refuse(
                        40227,
                        "$geoNear does not accept a 'collation' option; give it to the aggregation",
                    ));
                }
                other => return Err(bad_value(format!("Unknown argument to $geoNear: {other}"))),
            }
        }
        let near = options
            .get("near")
            .ok_or_else(|| refuse(5_860_400, "$geoNear requires a 'near' argument"))?;
        let spherical = crate::expr::truthy(options.get("spherical"));
        let geojson = matches!(near, Bson::Document(d) if d.contains_key("type"));
        let mut condition = if geojson {
            let mut inner = bson::doc! { "$geometry": near.clone() };
            for (name, operator) in [
                ("minDistance", "$minDistance"),
                ("maxDistance", "$maxDistance"),
            ] {
                if let Some(d) = distance(options, name)? {
                    inner.insert(operator, d);
                }
            }
            bson::doc! { "$near": inner }
        } else {
            let operator = if spherical { "$nearSphere" } else { "$near" };
            let mut outer = bson::doc! { operator: near.clone() };
            for (name, operator) in [
                ("minDistance", "$minDistance"),
                ("maxDistance", "$maxDistance"),
            ] {
                if let Some(d) = distance(options, name)? {
                    outer.insert(operator, d);
                }
            }
            outer
        };
        let sphere = condition.contains_key("$nearSphere");
        let GeoCondition::Near(parsed) =
            GeoCondition::near(&condition, sphere).map_err(bad_value)?
        else {
            return Err(bad_value("near must be a point"));
        };
        let query = match options.get("query") {
            None => Document::new(),
            Some(Bson::Document(q)) => q.clone(),
            Some(_) => {
                return Err(Error::from(
                    error("$geoNear", "query must be an object")
                        .with_code(ErrorCode::TYPE_MISMATCH),
                ));
            }
        };
        let multiplier = distance(options, "distanceMultiplier")?.unwrap_or(1.0);
        let stage = GeoNear {
            condition: std::mem::take(&mut condition),
            near: parsed,
            query,
            key: string(options, "key", 2)?,
            distance_field: string(options, "distanceField", 16606)?,
            multiplier,
            include_locs: string(options, "includeLocs", 16607)?,
        };
        Ok(stage)
    }

    /// The field the stage searches: its `key`, or the collection's one geo index's field (a
    /// `2d` index's first, as MongoDB prefers them).
    fn key(&self, collection: &str, indexes: &[IndexMeta]) -> Result<String> {
        if let Some(key) = &self.key {
            return Ok(key.clone());
        }
        let fields = |flat: bool| -> Vec<String> {
            indexes
                .iter()
                .filter_map(|i| {
                    let (positions, kind) = i.spec.geo()?;
                    (matches!(kind, GeoIndex::Flat { .. }) == flat)
                        .then(|| positions.iter().map(|&at| i.spec.keys()[at].0.to_string()))
                })
                .flatten()
                .collect()
        };
        for (flat, kind) in [(true, "2d"), (false, "2dsphere")] {
            match fields(flat).as_slice() {
                [] => {}
                [one] => return Ok(one.clone()),
                _ => {
                    return Err(Error::from(
                        error(
                            "$geoNear",
                            format!("There is more than one {kind} index on {collection}; unsure which to use for $geoNear"),
                        )
                        .with_code(ErrorCode::INDEX_NOT_FOUND),
                    ));
                }
            }
        }
        Err(Error::from(
            error(
                "$geoNear",
                "$geoNear requires a 2d or 2dsphere index, but none were found",
            )
            .with_code(ErrorCode::INDEX_NOT_FOUND),
        ))
    }

    /// The find the stage runs: the near condition on its field, and its `query`; and the
    /// field's path.
    pub(super) fn find(&self, collection: &str, indexes: &[IndexMeta]) -> Result<(Document, Path)> {
        let key = self.key(collection, indexes)?;
        let path = Path::parse(&key).map_err(bad_value)?;
        let near = bson::doc! { key: self.condition.clone() };
        let filter = if self.query.is_empty() {
            near
        } else {
            bson::doc! { "$and": [near, self.query.clone()] }
        };
        Ok((filter, path))
    }

    /// A result with its distance and the location measured to.
    pub(super) fn annotate(&self, mut doc: Document, path: &Path) -> Result<Document> {
        if self.distance_field.is_none() && self.include_locs.is_none() {
            return Ok(doc);
        }
        let raw = RawDocumentBuf::try_from(&doc).map_err(bad_value)?;
        let Some((distance, location)) =
            crate::geo::nearest_location(&self.near, &raw, path.segments())
        else {
            return Ok(doc);
        };
        if let Some(field) = &self.distance_field {
            set_dotted(&mut doc, field, Bson::Double(distance * self.multiplier));
        }
        if let Some(field) = &self.include_locs {
            set_dotted(&mut doc, field, location);
        }
        Ok(doc)
    }
}

/// Sets `value` at a dotted path, making subdocuments on the way (a value on the way that is
/// no document is replaced, as `$addFields` replaces it).
fn set_dotted(doc: &mut Document, path: &str, value: Bson) {
    match path.split_once('.') {
        None => {
            doc.insert(path, value);
        }
        Some((first, rest)) => {
            if !matches!(doc.get(first), Some(Bson::Document(_))) {
                doc.insert(first, Document::new());
            }
            if let Some(Bson::Document(sub)) = doc.get_mut(first) {
                set_dotted(sub, rest, value);
            }
        }
    }
}
