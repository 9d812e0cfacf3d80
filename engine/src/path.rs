//! Dotted field paths (`publisher.name`, `authors.0.name`) and the values an index key path
//! takes in a document.
//!
//! Index semantics, as MongoDB generates keys:
//! - a missing field, or a path that runs into a scalar, gives `null`;
//! - an array at the end of the path gives one value per element (an empty array gives
//!   `undefined`), and nested arrays stay whole: `[[1, 2]]` gives the value `[1, 2]`;
//! - an array in the middle of the path is traversed: a numeric next segment selects a position,
//!   otherwise every subdocument element continues the path (a subdocument lacking the field
//!   gives `null`, scalar elements give nothing, and an array that gives nothing gives `null`).

use std::fmt;

use bson::{RawArray, RawBsonRef, RawDocument};

use crate::error::IndexSpecError;

/// A validated dotted path: one or more non-empty segments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path {
    dotted: String,
    segments: Vec<String>,
}

impl Path {
    pub fn parse(dotted: &str) -> Result<Path, IndexSpecError> {
        let segments: Vec<String> = dotted.split('.').map(str::to_owned).collect();
        if segments.iter().any(String::is_empty) {
            return Err(IndexSpecError::EmptyPath {
                path: dotted.to_owned(),
            });
        }
        if segments.iter().any(|s| s.starts_with('$')) {
            return Err(IndexSpecError::DollarPath {
                path: dotted.to_owned(),
            });
        }
        Ok(Path {
            dotted: dotted.to_owned(),
            segments,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.dotted
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.dotted)
    }
}

/// The values one index path takes in one document.
#[derive(Debug, Default)]
pub(crate) struct KeyValues<'a> {
    pub(crate) values: Vec<RawBsonRef<'a>>,
    /// Depths (segment counts) at which the path went through an array; empty when none did.
    pub(crate) array_depths: Vec<usize>,
    /// True when the path resolved to nothing at all (every value is a stand-in `null`).
    pub(crate) missing: bool,
}

/// Collects the index values of `path` in `doc`. A malformed element (damaged bytes) is an
/// error carrying the reason.
pub(crate) fn key_values<'a>(doc: &'a RawDocument, path: &Path) -> Result<KeyValues<'a>, String> {
    let mut out = KeyValues {
        missing: true,
        ..KeyValues::default()
    };
    walk_document(doc, path.segments(), 0, &mut out)?;
    out.array_depths.sort_unstable();
    out.array_depths.dedup();
    Ok(out)
}

fn walk_document<'a>(
    doc: &'a RawDocument,
    segments: &[String],
    depth: usize,
    out: &mut KeyValues<'a>,
) -> Result<(), String> {
    match doc.get(&segments[depth]).map_err(|e| e.to_string())? {
        None => out.values.push(RawBsonRef::Null),
        Some(value) => walk_value(value, segments, depth + 1, out)?,
    }
    Ok(())
}

/// `value` is what the first `depth` segments reached.
fn walk_value<'a>(
    value: RawBsonRef<'a>,
    segments: &[String],
    depth: usize,
    out: &mut KeyValues<'a>,
) -> Result<(), String> {
    let at_end = depth == segments.len();
    match value {
        RawBsonRef::Array(array) if at_end => {
            out.array_depths.push(depth);
            out.missing = false;
            let before = out.values.len();
            for element in array {
                out.values.push(element.map_err(|e| e.to_string())?);
            }
            if out.values.len() == before {
                out.values.push(RawBsonRef::Undefined);
            }
        }
        _ if at_end => {
            out.missing = false;
            out.values.push(value);
        }
        RawBsonRef::Document(sub) => walk_document(sub, segments, depth, out)?,
        RawBsonRef::Array(array) => walk_array(array, segments, depth, out)?,
        _ => out.values.push(RawBsonRef::Null),
    }
    Ok(())
}

fn walk_array<'a>(
    array: &'a RawArray,
    segments: &[String],
    depth: usize,
    out: &mut KeyValues<'a>,
) -> Result<(), String> {
    out.array_depths.push(depth);
    let before = out.values.len();
    let position = segments[depth]
        .parse::<usize>()
        .ok()
        .filter(|_| segments[depth].bytes().all(|b| b.is_ascii_digit()));
    if let Some(position) = position {
        if let Some(element) = array.get(position).map_err(|e| e.to_string())? {
            walk_value(element, segments, depth + 1, out)?;
        }
    } else {
        for element in array {
            if let RawBsonRef::Document(sub) = element.map_err(|e| e.to_string())? {
                walk_document(sub, segments, depth, out)?;
            }
        }
    }
    if out.values.len() == before {
        out.values.push(RawBsonRef::Null);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, rawdoc};

    fn values(doc: &RawDocumentBuf, path: &str) -> Vec<String> {
        let kv = key_values(doc, &Path::parse(path).unwrap()).unwrap();
        kv.values.iter().map(|v| format!("{v:?}")).collect()
    }

    #[test]
    fn paths_are_validated() {
        assert!(Path::parse("a..b").is_err());
        assert!(Path::parse("").is_err());
        assert!(Path::parse("a.$b").is_err());
        assert_eq!(Path::parse("a.b").unwrap().segments().len(), 2);
    }

    #[test]
    fn arrays_fan_out_and_missing_is_null() {
        let doc = rawdoc! { "a": [1, 2], "b": { "c": [] }, "d": [{ "e": 1 }, { "f": 2 }, 3] };
        assert_eq!(values(&doc, "a"), ["Int32(1)", "Int32(2)"]);
        assert_eq!(values(&doc, "b.c"), ["Undefined"]);
        assert_eq!(values(&doc, "x"), ["Null"]);
        assert_eq!(values(&doc, "d.e"), ["Int32(1)", "Null"]);
        assert_eq!(values(&doc, "d.1.f"), ["Int32(2)"]);
        assert_eq!(values(&doc, "a.b"), ["Null"]);
    }

    #[test]
    fn nested_arrays_stay_whole() {
        let doc = rawdoc! { "a": [[1, 2], 3] };
        let kv = key_values(&doc, &Path::parse("a").unwrap()).unwrap();
        assert_eq!(kv.values.len(), 2);
        assert!(matches!(kv.values[0], RawBsonRef::Array(_)));
        assert_eq!(kv.array_depths, [1]);
    }
}
