//! The values an index key path takes in a document, as MongoDB generates keys:
//! - a missing field, or a path that runs into a scalar, gives `null`;
//! - an array at the end of the path gives one value per element (an empty array gives
//!   `undefined`), and nested arrays stay whole: `[[1, 2]]` gives the value `[1, 2]`;
//! - an array in the middle of the path is traversed: a numeric next segment selects a position,
//!   otherwise every subdocument element continues the path (a subdocument lacking the field
//!   gives `null`, scalar elements give nothing, and an array that gives nothing gives `null`).

use bson::{RawArray, RawBsonRef, RawDocument};

use super::Path;

/// The values one index path takes in one document.
#[derive(Debug, Default)]
pub(crate) struct KeyValues<'a> {
    pub(crate) values: Vec<RawBsonRef<'a>>,
    /// Depths (segment counts) at which the path went through an array; empty when none did.
    pub(crate) array_depths: Vec<usize>,
    /// True when the path resolved to nothing at all (every value is a stand-in `null`).
    pub(crate) missing: bool,
}

/// A document whose bytes are damaged where an index path reads them; the bson crate's reason.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub(crate) struct DamagedElement(#[from] bson::error::Error);

/// Collects the index values of `path` in `doc`. A malformed element (damaged bytes) is an
/// error carrying the reason.
pub(crate) fn key_values<'a>(
    doc: &'a RawDocument,
    path: &Path,
) -> Result<KeyValues<'a>, DamagedElement> {
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
) -> Result<(), DamagedElement> {
    match crate::raw::get(doc, &segments[depth])? {
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
) -> Result<(), DamagedElement> {
    let at_end = depth == segments.len();
    match value {
        RawBsonRef::Array(array) if at_end => {
            out.array_depths.push(depth);
            out.missing = false;
            let before = out.values.len();
            for element in array {
                out.values.push(element?);
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
) -> Result<(), DamagedElement> {
    out.array_depths.push(depth);
    let before = out.values.len();
    let position = segments[depth]
        .parse::<usize>()
        .ok()
        .filter(|_| segments[depth].bytes().all(|b| b.is_ascii_digit()));
    if let Some(position) = position {
        if let Some(element) = array.get(position)? {
            walk_value(element, segments, depth + 1, out)?;
        }
    } else {
        for element in array {
            if let RawBsonRef::Document(sub) = element? {
                walk_document(sub, segments, depth, out)?;
            }
        }
    }
    if out.values.len() == before {
        out.values.push(RawBsonRef::Null);
    }
    Ok(())
}
