//! Projections: which fields a query returns.
//!
//! MongoDB's rules: a projection either includes fields (`{a: 1, "b.c": 1}`) or excludes them
//! (`{a: 0}`), never both, except that `_id` (returned unless excluded) may be excluded from an
//! inclusion. Included fields keep the document's field order; a dotted inclusion keeps the
//! path inside subdocuments and inside each subdocument of an array. `$slice` (`n`, `-n` or
//! `[skip, limit]`) trims an array and otherwise leaves the document whole; `$elemMatch` returns
//! the first matching element of an array (or omits the field), and neither sets the
//! projection's kind; `a.b.$` includes `a.b` and narrows the first array on that path to the
//! element at the position the query's match recorded (see `query::matcher`), an error when the
//! match recorded none. A nested projection document (`{a: {b: 1}}`) is the dotted one;
//! `$slice` reaches into the documents of an array, one level deep.

use crate::code::ErrorCode;
use crate::nesting::{self, MAX_INPUT_DEPTH};
use std::collections::BTreeMap;

use bson::{Bson, Document, RawDocument, RawDocumentBuf, doc};

use super::filter::Filter;
use super::selection::Query;
use crate::error::FilterError;
use crate::path::Path;

/// Why a projection could not be applied to a document.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// The stored document does not decode.
    Unreadable(String),
    /// The document's match gives the positional projection no array element.
    Positional(FilterError),
    /// The projection asks for a text score and the query has no `$text`.
    NoTextScore,
}

/// MongoDB's refusal of `{$meta: "textScore"}` where no `$text` gives a score (40218).
pub(crate) fn no_text_score() -> FilterError {
    FilterError::new(
        "",
        "$meta",
        "query requires text score metadata, but it is not available",
    )
    .with_code(ErrorCode::location(40218))
}

impl ApplyError {
    /// The engine error for a projection of a document of `collection`.
    pub(crate) fn into_error(self, collection: &str) -> crate::error::Error {
        match self {
            ApplyError::Unreadable(reason) => {
                crate::error::Error::corrupt(format!("collection `{collection}`"), reason)
            }
            ApplyError::Positional(refusal) => crate::error::Error::InvalidFilter(refusal),
            ApplyError::NoTextScore => crate::error::Error::InvalidFilter(no_text_score()),
        }
    }
}

#[derive(Debug, Clone)]
enum Node {
    Include,
    Exclude,
    Slice {
        skip: i64,
        limit: Option<i64>,
    },
    /// `{field: {$elemMatch: ..}}` as a filter on a one-field document.
    ElemMatch(Filter),
    Children(Tree),
}

type Tree = BTreeMap<String, Node>;

/// A parsed projection.
#[derive(Debug, Clone)]
pub struct Projection {
    tree: Tree,
    /// Whether listed fields are the ones returned (otherwise the ones dropped).
    inclusive: bool,
    exclude_id: bool,
    /// The path of a positional projection (`a.b` for `a.b.$`), also included in `tree`.
    positional: Option<String>,
    /// The fields `{$meta: "textScore"}` sets to each result's text score (see
    /// [`crate::text`]); they make a projection neither inclusive nor exclusive.
    text_scores: Vec<String>,
}

fn error(path: &str, operator: &str, reason: &str) -> FilterError {
    FilterError::new(path, operator, reason)
}

/// A refusal with MongoDB's location code for it (`projection_parser.cpp`).
fn refused(path: &str, code: i32, reason: &str) -> FilterError {
    FilterError::new(path, "projection", reason).with_code(ErrorCode::location(code))
}

/// A nested projection document (`{a: {b: 1}}`) as dotted paths (`a.b: 1`).
fn flatten(
    spec: &Document,
    prefix: &str,
    out: &mut Vec<(String, Bson)>,
) -> Result<(), FilterError> {
    for (key, value) in spec {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            Bson::Document(d) if d.is_empty() => {
                return Err(refused(
                    &path,
                    51270,
                    "an empty sub-projection is not a valid value",
                ));
            }
            Bson::Document(d) if !d.keys().next().is_some_and(|k| k.starts_with('$')) => {
                if path.ends_with(".$") {
                    return Err(refused(
                        &path,
                        31271,
                        "a positional projection cannot hold a sub-object",
                    ));
                }
                flatten(d, &path, out)?;
            }
            _ => out.push((path, value.clone())),
        }
    }
    Ok(())
}

/// Checks a positional path (`a.b.$`) and returns the projected field (`a.b`).
fn positional_field<'p>(path: &'p str, value: &Bson) -> Result<&'p str, FilterError> {
    let field = path.strip_suffix(".$").unwrap_or(path);
    if field.is_empty() || field.split('.').any(str::is_empty) {
        return Err(refused(
            path,
            5_392_900,
            "a positional projection needs a field path before `.$`",
        ));
    }
    if field.split('.').any(|s| s == "$") {
        return Err(refused(
            path,
            31394,
            "a positional operator may only end a path (a.b.$); remove what follows the `$`",
        ));
    }
    match value {
        Bson::Document(_) => Err(refused(
            path,
            31271,
            "a positional projection cannot take an operator",
        )),
        other => match truthy(other) {
            Some(true) => Ok(field),
            _ => Err(refused(
                path,
                31395,
                "a positional projection cannot exclude array elements",
            )),
        },
    }
}

fn truthy(v: &Bson) -> Option<bool> {
    match v {
        Bson::Boolean(b) => Some(*b),
        Bson::Int32(i) => Some(*i != 0),
        Bson::Int64(i) => Some(*i != 0),
        Bson::Double(d) => Some(*d != 0.0),
        _ => None,
    }
}

impl Projection {
    pub fn parse(spec: &Document) -> Result<Projection, FilterError> {
        check_depth(spec)?;
        let mut entries = Vec::new();
        flatten(spec, "", &mut entries)?;
        let mut tree = Tree::new();
        let mut mode: Option<bool> = None;
        let mut exclude_id = false;
        let mut include_id = false;
        let mut positional: Option<String> = None;
        let mut elem_match = false;
        let mut text_scores = Vec::new();
        for (path, value) in &entries {
            let path = path.as_str();
            if let Some(scored) = parse_meta(path, value)? {
                text_scores.push(scored);
                continue;
            }
            if path.split('.').any(|s| s == "$") {
                let field = positional_field(path, value)?;
                if positional.is_some() {
                    return Err(refused(
                        path,
                        31276,
                        "a projection holds at most one positional operator",
                    ));
                }
                if elem_match {
                    return Err(refused(
                        path,
                        31256,
                        "a positional projection cannot follow $elemMatch",
                    ));
                }
                if mode == Some(false) {
                    return Err(refused(
                        path,
                        31254,
                        "cannot mix a positional projection with exclusions",
                    ));
                }
                mode = Some(true);
                positional = Some(field.to_owned());
                insert(&mut tree, field, Node::Include)?;
                continue;
            }
            let node = match value {
                Bson::Document(op) => parse_operator(path, op)?,
                other => match truthy(other) {
                    Some(true) => Node::Include,
                    Some(false) => Node::Exclude,
                    None => {
                        return Err(error(
                            path,
                            "projection",
                            "expects 0, 1, true, false or an operator",
                        ));
                    }
                },
            };
            if let Node::ElemMatch(_) = node {
                if positional.is_some() {
                    return Err(refused(
                        path,
                        31255,
                        "$elemMatch cannot follow a positional projection",
                    ));
                }
                elem_match = true;
            }
            if path == "_id" {
                match node {
                    Node::Exclude => exclude_id = true,
                    Node::Include => include_id = true,
                    _ => insert(&mut tree, path, node)?,
                }
                continue;
            }
            let inclusive = match node {
                Node::Include => Some(true),
                Node::Exclude => Some(false),
                _ => None,
            };
            if let Some(inclusive) = inclusive {
                if mode.is_some_and(|m| m != inclusive) {
                    let code = if inclusive { 31253 } else { 31254 };
                    return Err(refused(path, code, "cannot mix inclusion and exclusion"));
                }
                mode = Some(inclusive);
            }
            insert(&mut tree, path, node)?;
        }
        // `$elemMatch` alone returns `_id` and the field, like an inclusion; so does `_id: 1`
        // alone, which returns nothing but `_id`.
        let inclusive = mode.unwrap_or(elem_match || include_id);
        Ok(Projection {
            tree,
            inclusive,
            exclude_id,
            positional,
            text_scores,
        })
    }

    /// Whether it projects the text score, which only a `$text` query gives.
    pub(crate) fn needs_text_score(&self) -> bool {
        !self.text_scores.is_empty()
    }

    /// The paths of a pure inclusion (no `$slice`, `$elemMatch` or positional `$`) and whether
    /// it returns `_id`; `None` for any other projection.
    pub(crate) fn included_paths(&self) -> Option<(Vec<String>, bool)> {
        fn walk(tree: &Tree, prefix: &str, out: &mut Vec<String>) -> Option<()> {
            for (key, node) in tree {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                match node {
                    Node::Include => out.push(path),
                    Node::Children(sub) => walk(sub, &path, out)?,
                    _ => return None,
                }
            }
            Some(())
        }
        if !self.inclusive || self.positional.is_some() {
            return None;
        }
        let mut paths = Vec::new();
        walk(&self.tree, "", &mut paths)?;
        Some((paths, !self.exclude_id))
    }

    /// The projection of `raw`, a match of `query` (whose match gives the positional `$` its
    /// element).
    pub(crate) fn apply(&self, raw: &RawDocument, query: &Query) -> Result<Document, ApplyError> {
        let doc = Document::try_from(raw).map_err(|e| ApplyError::Unreadable(e.to_string()))?;
        let mut out = if self.inclusive {
            let mut out = Document::new();
            if !self.exclude_id
                && let Some(id) = doc.get("_id")
            {
                out.insert("_id", id.clone());
            }
            include(&self.tree, &doc, &mut out, "");
            out
        } else {
            let mut out = doc.clone();
            if self.exclude_id {
                out.remove("_id");
            }
            exclude(&self.tree, &mut out, "", true);
            out
        };
        if let Some(path) = &self.positional {
            let position = || query.matched_position(raw);
            narrow_first_array(&mut out, path, position).map_err(ApplyError::Positional)?;
        }
        if self.inclusive {
            // Field order follows the stored document, `_id` first.
            let order: Vec<String> = doc.keys().cloned().collect();
            let mut sorted = Document::new();
            for key in order {
                if let Some(v) = out.remove(&key) {
                    sorted.insert(key, v);
                }
            }
            out = sorted;
        }
        if !self.text_scores.is_empty() {
            let text = query.text.as_ref().ok_or(ApplyError::NoTextScore)?;
            let score = text
                .score(raw)
                .map_err(|e| ApplyError::Unreadable(e.to_string()))?;
            for path in &self.text_scores {
                // The score replaces what the document holds there, as in MongoDB.
                Path::new(path)
                    .set(
                        &mut out,
                        Bson::Double(score),
                        crate::path::Parents::Overwrite,
                    )
                    .map_err(|_| {
                        ApplyError::Unreadable(format!("the text score cannot be set at `{path}`"))
                    })?;
            }
        }
        Ok(out)
    }
}

/// A projection nested past the input depth limit is refused before it is read.
fn check_depth(spec: &Document) -> Result<(), FilterError> {
    if nesting::exceeds(spec, MAX_INPUT_DEPTH) {
        return Err(
            FilterError::new("", "projection", nesting::too_deep_reason())
                .with_code(ErrorCode::OVERFLOW),
        );
    }
    Ok(())
}

/// `{$meta: "textScore"}`, the one `$meta` a find projects: the path it sets; `None` for a
/// value that is no `$meta`.
fn parse_meta(path: &str, value: &Bson) -> Result<Option<String>, FilterError> {
    let Bson::Document(op) = value else {
        return Ok(None);
    };
    if op.keys().next().is_none_or(|k| k != "$meta") {
        return Ok(None);
    }
    match (op.len(), op.get("$meta")) {
        (1, Some(Bson::String(kind))) if kind == "textScore" => Ok(Some(path.to_owned())),
        (1, Some(Bson::String(kind))) => Err(error(
            path,
            "$meta",
            &format!("unsupported $meta \"{kind}\": this engine gives \"textScore\""),
        )
        .with_code(ErrorCode::location(17308))),
        _ => Err(error(path, "$meta", "expects the string \"textScore\"")),
    }
}

fn parse_operator(path: &str, op: &Document) -> Result<Node, FilterError> {
    let (name, arg) = op
        .iter()
        .next()
        .ok_or_else(|| error(path, "projection", "empty operator document"))?;
    match name.as_str() {
        "$slice" => {
            let number = |v: &Bson| -> Option<i64> {
                match v {
                    Bson::Int32(i) => Some(i64::from(*i)),
                    Bson::Int64(i) => Some(*i),
                    Bson::Double(d) if d.is_finite() => Some(d.trunc() as i64),
                    _ => None,
                }
            };
            match arg {
                Bson::Array(pair) => {
                    // MongoDB retries any other length as the `$slice` expression, whose
                    // arity check refuses it (28667).
                    let [skip, limit] = pair.as_slice() else {
                        return Err(error(path, "$slice", "expects a number or [skip, limit]")
                            .with_code(ErrorCode::location(28667)));
                    };
                    let (Some(skip), Some(limit)) = (number(skip), number(limit)) else {
                        return Err(error(path, "$slice", "skip and limit must be numbers"));
                    };
                    if limit <= 0 {
                        return Err(error(path, "$slice", "limit must be positive"));
                    }
                    Ok(Node::Slice {
                        skip,
                        limit: Some(limit),
                    })
                }
                other => {
                    let n = number(other).ok_or_else(|| {
                        error(path, "$slice", "expects a number or [skip, limit]")
                    })?;
                    Ok(if n >= 0 {
                        Node::Slice {
                            skip: 0,
                            limit: Some(n),
                        }
                    } else {
                        Node::Slice {
                            skip: n,
                            limit: None,
                        }
                    })
                }
            }
        }
        "$elemMatch" => {
            if path.contains('.') {
                return Err(refused(
                    path,
                    31275,
                    "$elemMatch cannot project a dotted path",
                ));
            }
            let Bson::Document(_) = arg else {
                return Err(refused(path, 31274, "$elemMatch expects a document"));
            };
            Ok(Node::ElemMatch(Filter::parse(
                &doc! { path: { "$elemMatch": arg.clone() } },
            )?))
        }
        other => Err(error(path, other, "unknown projection operator")),
    }
}

fn insert(tree: &mut Tree, path: &str, node: Node) -> Result<(), FilterError> {
    let (first, rest) = match path.split_once('.') {
        Some((first, rest)) if !path.ends_with(".$") || rest != "$" => (first, Some(rest)),
        _ => (path, None),
    };
    match rest {
        None => {
            if tree.contains_key(first) {
                return Err(refused(path, 31250, "path collision"));
            }
            tree.insert(first.to_owned(), node);
        }
        Some(rest) => {
            let child = tree
                .entry(first.to_owned())
                .or_insert_with(|| Node::Children(Tree::new()));
            let Node::Children(sub) = child else {
                return Err(refused(path, 31249, "path collision"));
            };
            insert(sub, rest, node)?;
        }
    }
    Ok(())
}

fn include(tree: &Tree, doc: &Document, out: &mut Document, prefix: &str) {
    for (key, node) in tree {
        let Some(value) = doc.get(key) else { continue };
        let full = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match node {
            Node::Include => {
                out.insert(key.clone(), value.clone());
            }
            Node::Children(sub) => {
                if let Some(v) = include_nested(sub, value, &full) {
                    out.insert(key.clone(), v);
                }
            }
            other => {
                if let Some(v) = special(other, value, &full) {
                    out.insert(key.clone(), v);
                }
            }
        }
    }
}

fn include_nested(tree: &Tree, value: &Bson, path: &str) -> Option<Bson> {
    match value {
        Bson::Document(d) => {
            let mut sub = Document::new();
            include(tree, d, &mut sub, path);
            // Keep the subdocument's own field order.
            let mut ordered = Document::new();
            for k in d.keys() {
                if let Some(v) = sub.remove(k) {
                    ordered.insert(k.clone(), v);
                }
            }
            Some(Bson::Document(ordered))
        }
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter_map(|i| match i {
                    Bson::Document(_) | Bson::Array(_) => include_nested(tree, i, path),
                    _ => None,
                })
                .collect(),
        )),
        _ => None,
    }
}

/// `slices`: whether `$slice` applies here (not inside an array nested in an array).
fn exclude(tree: &Tree, doc: &mut Document, prefix: &str, slices: bool) {
    for (key, node) in tree {
        let full = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match node {
            Node::Exclude => {
                doc.remove(key);
            }
            Node::Children(sub) => {
                if let Some(value) = doc.get_mut(key) {
                    exclude_nested(sub, value, &full, slices);
                }
            }
            Node::Slice { .. } if !slices => {}
            other => {
                let replaced = doc.get(key).map(|v| special(other, v, &full));
                match replaced {
                    Some(Some(v)) => {
                        doc.insert(key.clone(), v);
                    }
                    Some(None) => {
                        doc.remove(key);
                    }
                    None => {}
                }
            }
        }
    }
}

fn exclude_nested(tree: &Tree, value: &mut Bson, path: &str, slices: bool) {
    match value {
        Bson::Document(d) => exclude(tree, d, path, slices),
        Bson::Array(items) => {
            for item in items {
                let nested = matches!(item, Bson::Array(_));
                exclude_nested(tree, item, path, slices && !nested);
            }
        }
        _ => {}
    }
}

/// `$slice`, `$elemMatch` and positional projections of one field; `None` drops the field.
fn special(node: &Node, value: &Bson, path: &str) -> Option<Bson> {
    match node {
        Node::Slice { skip, limit } => match value {
            Bson::Array(items) => Some(Bson::Array(slice(items, *skip, *limit))),
            other => Some(other.clone()),
        },
        Node::ElemMatch(f) => {
            let Bson::Array(items) = value else {
                return None;
            };
            let field = path.rsplit('.').next().unwrap_or(path);
            let probe = RawDocumentBuf::try_from(&doc! { field: value.clone() }).ok()?;
            let position = f.matched_position_in(&probe, None)?;
            Some(Bson::Array(vec![items.get(position)?.clone()]))
        }
        _ => Some(value.clone()),
    }
}

fn slice(items: &[Bson], skip: i64, limit: Option<i64>) -> Vec<Bson> {
    let len = items.len() as i64;
    let start = if skip < 0 {
        (len + skip).max(0)
    } else {
        skip.min(len)
    };
    let end = limit.map_or(len, |l| start.saturating_add(l).min(len));
    items[start as usize..end as usize].to_vec()
}

/// Replaces the first array on `path` in `out` by its element at the recorded position
/// (MongoDB's `applyFindPositionalProjection`); a path that meets no array is left as it is.
fn narrow_first_array(
    out: &mut Document,
    path: &str,
    position: impl FnOnce() -> Option<usize>,
) -> Result<(), FilterError> {
    let positional = |code: i32, reason: &str| {
        FilterError::new(&format!("{path}.$"), "projection", reason)
            .with_code(ErrorCode::location(code))
    };
    let Some(items) = Path::new(path).first_array_mut(out) else {
        return Ok(());
    };
    let Some(i) = position() else {
        return Err(positional(
            51246,
            "positional operator '.$' couldn't find a matching element in the array",
        ));
    };
    let Some(element) = items.get(i).cloned() else {
        return Err(positional(
            51247,
            "positional operator '.$' element mismatch",
        ));
    };
    *items = vec![element];
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc};

    fn project(spec: Document, doc: RawDocumentBuf, filter: Document) -> Document {
        Projection::parse(&spec)
            .unwrap()
            .apply(&doc, &Query::of_filter(Filter::parse(&filter).unwrap()))
            .unwrap()
    }

    #[test]
    fn inclusion_exclusion_and_id() {
        let d = rawdoc! { "_id": 1, "a": 1, "b": { "c": 2, "d": 3 }, "e": [{ "c": 1, "x": 0 }, 5] };
        assert_eq!(
            project(doc! { "a": 1 }, d.clone(), doc! {}),
            doc! { "_id": 1, "a": 1 }
        );
        assert_eq!(
            project(doc! { "a": 1, "_id": 0 }, d.clone(), doc! {}),
            doc! { "a": 1 }
        );
        assert_eq!(
            project(doc! { "b.c": 1, "e.c": 1 }, d.clone(), doc! {}),
            doc! { "_id": 1, "b": { "c": 2 }, "e": [{ "c": 1 }] }
        );
        assert_eq!(
            project(doc! { "b.d": 0, "e": 0 }, d.clone(), doc! {}),
            doc! { "_id": 1, "a": 1, "b": { "c": 2 } }
        );
        assert!(Projection::parse(&doc! { "a": 1, "b": 0 }).is_err());
    }

    #[test]
    fn slice_elem_match_and_positional() {
        let d =
            rawdoc! { "_id": 1, "c": [1, 2, 3, 4, 5], "s": [{ "k": 1 }, { "k": 2 }, { "k": 3 }] };
        assert_eq!(
            project(doc! { "c": { "$slice": 2 } }, d.clone(), doc! {})
                .get_array("c")
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            project(doc! { "c": { "$slice": -2 } }, d.clone(), doc! {})
                .get_array("c")
                .unwrap(),
            &vec![Bson::Int32(4), Bson::Int32(5)]
        );
        assert_eq!(
            project(doc! { "c": { "$slice": [1, 2] } }, d.clone(), doc! {})
                .get_array("c")
                .unwrap(),
            &vec![Bson::Int32(2), Bson::Int32(3)]
        );
        assert_eq!(
            project(
                doc! { "s": { "$elemMatch": { "k": { "$gt": 1 } } } },
                d.clone(),
                doc! {}
            ),
            doc! { "_id": 1, "s": [{ "k": 2 }] }
        );
        assert_eq!(
            project(doc! { "s.$": 1 }, d.clone(), doc! { "s.k": { "$gte": 3 } }),
            doc! { "_id": 1, "s": [{ "k": 3 }] }
        );
    }
}
