//! [`Path`]: the one dotted field path of the engine (`publisher.name`, `authors.0.name`), as
//! filters, sorts, index and shard keys, expressions, stages and updates name fields, and the
//! rules by which each of them walks a document along it.
//!
//! MongoDB walks a path differently in each context, and each rule is written once, here:
//! - index keys (`keys`): arrays give one key per element, a numeric segment selects a
//!   position, missing gives `null` (see `key_values`);
//! - expressions (`read`, `Path::resolve`): an array maps the rest of the path over its
//!   elements and gives the array of what they hold; numeric segments are field names;
//! - joins (`read`, `Path::elements`): the values found through subdocuments and arrays,
//!   an array counting as its elements (`$lookup`, `$graphLookup`);
//! - plain reads and writes of stages and updates (`read`, `write`): through subdocuments
//!   only, with what to do about a missing parent or one that is not a document
//!   ([`Parents`]) named by the caller.
//!
//! The query matcher (`query::matcher`, which also records the array position the positional
//! `$` needs) and update operators (`update::apply`, which resolve `$`, `$[]` and `$[id]` to
//! concrete positions) walk raw documents with rules of their own, over the same [`Path`].

mod keys;
mod read;
mod write;

pub(crate) use keys::{DamagedElement, KeyValues, key_values};
pub use read::ArrayOnTheWay;
pub use write::{Blocked, Parents};

use std::fmt;

use crate::error::IndexSpecError;

/// A validated dotted path: one or more non-empty segments.
///
/// Most paths name one field, and a path is made for each condition of each filter parsed: a
/// path of one segment keeps it as its dotted name (one allocation, not three), and only a
/// path of several keeps them apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Path {
    dotted: String,
    /// The segments of a path of two or more; empty otherwise (the one segment is `dotted`).
    several: Vec<String>,
    /// Whether this is the empty path, of no segment at all ([`Path::empty`]).
    root: bool,
}

impl Ord for Path {
    /// By the dotted name, then the segments (as when both were kept).
    fn cmp(&self, other: &Path) -> std::cmp::Ordering {
        (self.as_str(), self.segments()).cmp(&(other.as_str(), other.segments()))
    }
}

impl PartialOrd for Path {
    fn partial_cmp(&self, other: &Path) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Path {
    /// Any dotted name split at its dots, as a filter takes it (a name no document holds, such
    /// as `a..b`, matches nothing rather than failing).
    pub fn new(dotted: &str) -> Path {
        let several = if dotted.contains('.') {
            dotted.split('.').map(str::to_owned).collect()
        } else {
            Vec::new()
        };
        Path {
            dotted: dotted.to_owned(),
            several,
            root: false,
        }
    }

    /// The empty path: the value itself (`$$ROOT`, `$$CURRENT` without a field).
    pub fn empty() -> Path {
        Path {
            dotted: String::new(),
            several: Vec::new(),
            root: true,
        }
    }

    /// Whether this is the empty path, which names the value itself.
    pub fn is_empty(&self) -> bool {
        self.root
    }

    /// Whether `other` is this path or lies inside it (`a` is a prefix of `a` and `a.b`, not
    /// of `ab`).
    pub fn is_prefix_of(&self, other: &Path) -> bool {
        let (mine, theirs) = (self.segments(), other.segments());
        mine.len() <= theirs.len() && theirs[..mine.len()] == *mine
    }

    /// A field path as expressions and stages name one: not empty, no empty segment, not
    /// starting with `$` (a later segment may: MongoDB 5.0 allows `$`-prefixed field names).
    /// `None` when it is not one; each caller refuses it with its own error.
    pub fn checked(dotted: &str) -> Option<Path> {
        let valid =
            !dotted.is_empty() && !dotted.starts_with('$') && !dotted.split('.').any(str::is_empty);
        valid.then(|| Path::new(dotted))
    }

    /// A path that names a field: non-empty segments, none starting with `$` (index keys,
    /// sort keys, shard keys).
    pub fn parse(dotted: &str) -> Result<Path, IndexSpecError> {
        if dotted.split('.').any(str::is_empty) {
            return Err(IndexSpecError::EmptyPath {
                path: dotted.to_owned(),
            });
        }
        if dotted.split('.').any(|s| s.starts_with('$')) {
            return Err(IndexSpecError::DollarPath {
                path: dotted.to_owned(),
            });
        }
        Ok(Path::new(dotted))
    }

    pub fn as_str(&self) -> &str {
        &self.dotted
    }

    pub fn segments(&self) -> &[String] {
        if !self.several.is_empty() {
            &self.several
        } else if self.root {
            &[]
        } else {
            std::slice::from_ref(&self.dotted)
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.dotted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawBsonRef, RawDocumentBuf, rawdoc};

    fn values(doc: &RawDocumentBuf, path: &str) -> Vec<String> {
        let kv = key_values(doc, &Path::parse(path).unwrap()).unwrap();
        kv.values.iter().map(|v| format!("{v:?}")).collect()
    }

    /// The two parts the path was kept as before one-segment paths kept one: its dotted name
    /// and its segments, each its own string.
    fn as_kept_apart(path: &Path) -> (String, Vec<String>) {
        (path.as_str().to_owned(), path.segments().to_vec())
    }

    proptest::proptest! {
        /// Law: a path's segments are its dotted name split at the dots, whether it has one
        /// or several; and paths compare, hash-equal and order as their name and segments do.
        #[test]
        fn segments_are_the_name_split_at_its_dots(a in "[ab.$]{0,5}", b in "[ab.$]{0,5}") {
            let (p, q) = (Path::new(&a), Path::new(&b));
            let split: Vec<String> = a.split('.').map(str::to_owned).collect();
            proptest::prop_assert_eq!(p.segments(), split.as_slice());
            proptest::prop_assert!(!p.is_empty());
            proptest::prop_assert_eq!(p == q, as_kept_apart(&p) == as_kept_apart(&q));
            if p == q {
                let hash = |path: &Path| {
                    use std::hash::{BuildHasher, BuildHasherDefault};
                    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                        .hash_one(path)
                };
                proptest::prop_assert_eq!(hash(&p), hash(&q));
            }
            proptest::prop_assert_eq!(p.cmp(&q), as_kept_apart(&p).cmp(&as_kept_apart(&q)));
            if let Ok(parsed) = Path::parse(&a) {
                proptest::prop_assert_eq!(&parsed, &p);
            }
        }
    }

    #[test]
    fn the_empty_path_has_no_segment_and_differs_from_an_empty_name() {
        let (root, blank) = (Path::empty(), Path::new(""));
        assert!(root.is_empty() && root.segments().is_empty());
        assert_eq!(blank.segments(), [String::new()]);
        assert_ne!(root, blank);
        assert_eq!(root.cmp(&blank), std::cmp::Ordering::Less);
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
