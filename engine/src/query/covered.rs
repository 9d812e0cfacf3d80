//! Covered queries: answering from an index alone, without reading documents.
//!
//! A non-multikey index entry holds, for its one document, the values of the indexed paths
//! exactly (the key and its key types, see [`crate::keys::types_of`]): a covered scan rebuilds
//! from them a document holding just those paths, and the matcher, the sort and the projection
//! then run on it as on the stored document. That gives the same answers exactly when
//! everything they read lies inside an indexed path. So a query is covered when:
//! - the plan scans an index without a collation (whose strings are sort keys) that has never
//!   been multikey (one key per document), none of whose
//!   paths has a numeric segment and no two of whose paths nest (`a` and `a.b`);
//! - every path of the filter and of an in-memory sort lies at or under an indexed path;
//! - it returns a pure inclusion projection (no `$slice`, `$elemMatch` or positional `$`) whose
//!   every path lies at or under an indexed top-level field (a nested one, `a.b`, cannot tell
//!   `{a: {}}` from no `a`), with `_id` excluded unless indexed; or it only counts.
//!
//! Fields of a covered result come in the index's key order, not the stored document's.

use bson::{Document, RawDocumentBuf};

use super::filter::Filter;
use super::plan::{Access, Plan};
use super::projection::Projection;
use super::sort::Sort;
use crate::catalog::CollectionMeta;
use crate::keys::{self, Direction};
use crate::path::{Parents, Path};

/// What a covered scan needs to rebuild documents from index entries.
#[derive(Debug, Clone)]
pub(crate) struct Covering {
    directions: Vec<Direction>,
    paths: Vec<Path>,
}

/// What the query returns.
pub(crate) enum Output<'a> {
    /// Only how many documents match.
    Count,
    Projected(&'a Projection),
    /// Whole documents: never covered.
    Documents,
}

/// The covering of a query by its plan's index, when the rules above allow one.
pub(crate) fn covering(
    meta: &CollectionMeta,
    plan: &Plan,
    filter: &Filter,
    sort: Option<&Sort>,
    output: Output<'_>,
) -> Option<Covering> {
    let Access::IndexScan(scan) = &plan.access else {
        return None;
    };
    if matches!(output, Output::Documents) {
        return None;
    }
    let index = meta.index(&scan.index)?;
    // A hashed, text or geo index's keys hold hashes, terms or cells, and a collated one's
    // strings sort keys, not the values a covered query would return.
    if index.multikey
        || scan.multikey
        || index.spec.keys_values_differently()
        || index.spec.collation().is_some()
    {
        return None;
    }
    let paths: Vec<Path> = index.spec.keys().iter().map(|(p, _)| p.clone()).collect();
    let numeric = |s: &String| s.bytes().all(|b| b.is_ascii_digit());
    if paths.iter().any(|p| p.segments().iter().any(numeric)) {
        return None;
    }
    for (i, a) in paths.iter().enumerate() {
        if paths[i + 1..]
            .iter()
            .any(|b| a.is_prefix_of(b) || b.is_prefix_of(a))
        {
            return None;
        }
    }
    let under_index = |path: &Path| paths.iter().any(|p| p.is_prefix_of(path));
    let mut filter_paths = Vec::new();
    filter_paths_of(filter, &mut filter_paths);
    if !filter_paths.iter().all(&under_index) {
        return None;
    }
    if let Some(sort) = sort.filter(|_| !plan.provides_sort)
        && !sort.fields().iter().all(|(p, _)| under_index(p))
    {
        return None;
    }
    match output {
        // (Whole documents were refused above, before any other work.)
        Output::Documents | Output::Count => {}
        Output::Projected(projection) => {
            let (included, returns_id) = projection.included_paths()?;
            let top_level: Vec<&String> = paths
                .iter()
                .filter_map(|p| match p.segments() {
                    [only] => Some(only),
                    _ => None,
                })
                .collect();
            let covered = |path: &str| {
                top_level
                    .iter()
                    .any(|f| path.split('.').next() == Some(f.as_str()))
            };
            if !included.iter().all(|p| covered(p)) || (returns_id && !covered("_id")) {
                return None;
            }
        }
    }
    Some(Covering {
        directions: index.spec.keys().iter().map(|(_, d)| *d).collect(),
        paths,
    })
}

/// The paths a filter reads (those inside `$elemMatch` are relative to the array and read
/// nothing else).
fn filter_paths_of(filter: &Filter, out: &mut Vec<Path>) {
    match filter {
        Filter::And(fs) | Filter::Or(fs) | Filter::Nor(fs) => {
            for f in fs {
                filter_paths_of(f, out);
            }
        }
        Filter::Field(path, _) => out.push(path.clone()),
        // An expression may read any field: the empty path, which no index covers.
        // `$text` reads the text index's fields: the whole document, as an expression does.
        Filter::Expr(_) | Filter::JsonSchema(_) | Filter::Text(_) => out.push(Path::empty()),
    }
}

impl Covering {
    /// The document an index entry stands for, holding the indexed paths; `None` when the key
    /// cannot be decoded (the document is then read instead).
    pub(crate) fn build(&self, key: &[u8], types: &[u8]) -> Option<RawDocumentBuf> {
        let fields = keys::decode_with_types(key, &self.directions, types)?;
        let mut doc = Document::new();
        for (path, value) in self.paths.iter().zip(fields) {
            if let Some(value) = value {
                // Index keys on `a` and `a.b` both: the first one set wins.
                let _ = path.set(&mut doc, value, Parents::Create);
            }
        }
        RawDocumentBuf::try_from(&doc).ok()
    }
}
