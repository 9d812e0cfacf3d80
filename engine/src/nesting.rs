//! BSON nesting depth, counted as MongoDB counts it: the top-level document is level 1 and each
//! non-empty embedded document or array one more (empty ones add no level). Both walks keep an
//! explicit stack, so a document of any depth is measured without recursion; everything that
//! recurses over documents elsewhere (validation, keys, order, decoding, parsers) relies on one
//! of these limits having been checked at the door.

use bson::{Bson, Document, RawBsonRef, RawDocument};

/// The nesting a stored document may have: 100 levels, the limit MongoDB documents ("BSON
/// Document Nesting Depth"). The server itself refuses only past 180, leaving 20 of its own
/// 200-level parse limit for the oplog and replies; keeping to the documented limit means a
/// document stored here can always be moved to MongoDB.
pub const MAX_STORED_DEPTH: usize = 100;

/// MongoDB's `BSONDepth::kDefaultMaxAllowableDepth`: what a command may carry (filters, updates,
/// pipelines and their literal values), above the stored limit to leave room for operators.
pub const MAX_INPUT_DEPTH: usize = 200;

/// Why a raw document failed [`check_raw`].
#[derive(Debug)]
pub(crate) enum RawNestingError {
    Malformed(bson::error::Error),
    TooDeep,
}

/// Walks every element of `doc` (so malformed bytes anywhere are found) and checks that it has
/// at most `max` levels.
pub(crate) fn check_raw(doc: &RawDocument, max: usize) -> Result<(), RawNestingError> {
    let mut frames = vec![raw_values(doc)];
    while let Some(frame) = frames.last_mut() {
        let Some(value) = frame.next() else {
            frames.pop();
            continue;
        };
        let child = match value.map_err(RawNestingError::Malformed)? {
            RawBsonRef::Document(d) if !d.is_empty() => raw_values(d),
            RawBsonRef::Array(a) if !a.is_empty() => Box::new(a.into_iter()),
            RawBsonRef::JavaScriptCodeWithScope(c) if !c.scope.is_empty() => raw_values(c.scope),
            _ => continue,
        };
        if frames.len() >= max {
            return Err(RawNestingError::TooDeep);
        }
        frames.push(child);
    }
    Ok(())
}

/// Checks raw bytes from outside (a network message) before anything recursive reads them:
/// every element well formed and at most `max` levels, walked without recursion. The error
/// says which.
pub fn check_input(doc: &RawDocument, max: usize) -> Result<(), String> {
    check_raw(doc, max).map_err(|e| match e {
        RawNestingError::Malformed(e) => e.to_string(),
        RawNestingError::TooDeep => format!("nests deeper than the limit of {max} levels"),
    })
}

type RawValues<'a> = Box<dyn Iterator<Item = bson::error::Result<RawBsonRef<'a>>> + 'a>;

fn raw_values(doc: &RawDocument) -> RawValues<'_> {
    Box::new(doc.iter().map(|e| e.map(|(_, v)| v)))
}

/// Whether `doc` has more than `max` levels.
pub(crate) fn exceeds(doc: &Document, max: usize) -> bool {
    values_exceed(Values::Fields(doc.values()), max)
}

/// Whether `value`, standing where a top-level document would, has more than `max` levels (a
/// scalar has none).
pub(crate) fn value_exceeds(value: &Bson, max: usize) -> bool {
    match children(value) {
        Some(values) => values_exceed(values, max),
        None => false,
    }
}

/// Whether any of `docs` has more than `max` levels.
pub(crate) fn any_exceeds<'a>(docs: impl IntoIterator<Item = &'a Document>, max: usize) -> bool {
    docs.into_iter().any(|d| exceeds(d, max))
}

/// The message the parsers give when their input passes [`MAX_INPUT_DEPTH`].
pub(crate) fn too_deep_reason() -> String {
    format!("nests deeper than the limit of {MAX_INPUT_DEPTH} levels")
}

/// The values of one level being walked (an enum, not a boxed iterator: no allocation per
/// level).
enum Values<'a> {
    Fields(bson::document::Values<'a>),
    Items(std::slice::Iter<'a, Bson>),
}

impl<'a> Iterator for Values<'a> {
    type Item = &'a Bson;

    fn next(&mut self) -> Option<&'a Bson> {
        match self {
            Values::Fields(values) => values.next(),
            Values::Items(items) => items.next(),
        }
    }
}

fn values_exceed(top: Values<'_>, max: usize) -> bool {
    let mut frames = Vec::with_capacity(8);
    frames.push(top);
    while let Some(frame) = frames.last_mut() {
        let Some(value) = frame.next() else {
            frames.pop();
            continue;
        };
        let Some(child) = children(value) else {
            continue;
        };
        if frames.len() >= max {
            return true;
        }
        frames.push(child);
    }
    false
}

/// The values one level below `value`, for a non-empty document or array (empty ones add no
/// level).
fn children(value: &Bson) -> Option<Values<'_>> {
    match value {
        Bson::Document(d) if !d.is_empty() => Some(Values::Fields(d.values())),
        Bson::Array(a) if !a.is_empty() => Some(Values::Items(a.iter())),
        Bson::JavaScriptCodeWithScope(c) if !c.scope.is_empty() => {
            Some(Values::Fields(c.scope.values()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn nested(levels: usize) -> Document {
        let mut d = doc! { "a": 1 };
        for _ in 1..levels {
            d = doc! { "a": d };
        }
        d
    }

    #[test]
    fn levels_count_as_mongodb_counts_them() {
        assert!(!exceeds(&nested(100), 100));
        assert!(exceeds(&nested(101), 100));
        let raw = bson::RawDocumentBuf::try_from(&nested(100)).unwrap();
        assert!(check_raw(&raw, 100).is_ok());
        let raw = bson::RawDocumentBuf::try_from(&nested(101)).unwrap();
        assert!(matches!(
            check_raw(&raw, 100),
            Err(RawNestingError::TooDeep)
        ));
        // Empty documents and arrays add no level.
        let mut d = nested(100);
        d.insert("b", doc! {});
        let mut inner = doc! { "e": [] };
        for _ in 1..100 {
            inner = doc! { "x": inner };
        }
        assert!(!exceeds(&inner, 100));
        assert!(!exceeds(&d, 100));
    }
}
