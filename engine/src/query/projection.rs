//! Projections: which fields a query returns.
//!
//! MongoDB's rules: a projection either includes fields (`{a: 1, "b.c": 1}`) or excludes them
//! (`{a: 0}`), never both, except that `_id` (returned unless excluded) may be excluded from an
//! inclusion. Included fields keep the document's field order; a dotted inclusion keeps the
//! path inside subdocuments and inside each subdocument of an array. `$slice` (`n`, `-n` or
//! `[skip, limit]`) trims an array and otherwise leaves the document whole; `$elemMatch` returns
//! the first matching element of an array; `a.$` returns the first element of `a` that the
//! query's conditions on `a` matched.

use crate::code::ErrorCode;
use crate::nesting::{self, MAX_INPUT_DEPTH};
use std::collections::BTreeMap;

use bson::{Bson, Document, RawDocument, RawDocumentBuf};

use super::filter::{Filter, FilterError};

#[derive(Debug, Clone)]
enum Node {
    Include,
    Exclude,
    Slice { skip: i64, limit: Option<i64> },
    ElemMatch(Filter),
    Positional,
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
}

fn error(path: &str, operator: &str, reason: &str) -> FilterError {
    FilterError::new(path, operator, reason)
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
        if nesting::exceeds(spec, MAX_INPUT_DEPTH) {
            return Err(
                FilterError::new("", "projection", nesting::too_deep_reason())
                    .with_code(ErrorCode::OVERFLOW),
            );
        }
        let mut tree = Tree::new();
        let mut mode: Option<bool> = None;
        let mut exclude_id = false;
        for (path, value) in spec {
            let node = match value {
                _ if path.ends_with(".$") => match truthy(value) {
                    Some(true) => Node::Positional,
                    _ => return Err(error(path, "projection", "a positional projection takes 1")),
                },
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
            if path == "_id" {
                match node {
                    Node::Exclude => exclude_id = true,
                    Node::Include => {}
                    _ => insert(&mut tree, path, node)?,
                }
                continue;
            }
            let inclusive = match node {
                // `$elemMatch` alone returns `_id` and the field, like an inclusion.
                Node::Include | Node::Positional | Node::ElemMatch(_) => Some(true),
                Node::Exclude => Some(false),
                _ => None,
            };
            if let Some(inclusive) = inclusive {
                if mode.is_some_and(|m| m != inclusive) {
                    return Err(error(
                        path,
                        "projection",
                        "cannot mix inclusion and exclusion",
                    ));
                }
                mode = Some(inclusive);
            }
            if matches!(node, Node::Positional) {
                let parent = path.strip_suffix(".$").unwrap_or(path);
                insert(&mut tree, parent, Node::Positional)?;
            } else {
                insert(&mut tree, path, node)?;
            }
        }
        Ok(Projection {
            tree,
            inclusive: mode.unwrap_or(false),
            exclude_id,
        })
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
        if !self.inclusive {
            return None;
        }
        let mut paths = Vec::new();
        walk(&self.tree, "", &mut paths)?;
        Some((paths, !self.exclude_id))
    }

    /// Applies the projection; `filter` is the query, for positional projections.
    pub fn apply(&self, doc: &RawDocument, filter: &Filter) -> Result<Document, String> {
        let doc = Document::try_from(doc).map_err(|e| e.to_string())?;
        let mut out = if self.inclusive {
            let mut out = Document::new();
            if !self.exclude_id
                && let Some(id) = doc.get("_id")
            {
                out.insert("_id", id.clone());
            }
            include(&self.tree, &doc, &mut out, "", filter);
            out
        } else {
            let mut out = doc.clone();
            if self.exclude_id {
                out.remove("_id");
            }
            exclude(&self.tree, &mut out, filter, "");
            out
        };
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
        Ok(out)
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
                    let [skip, limit] = pair.as_slice() else {
                        return Err(error(path, "$slice", "expects a number or [skip, limit]"));
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
            let Bson::Document(d) = arg else {
                return Err(error(path, "$elemMatch", "expects a document"));
            };
            Ok(Node::ElemMatch(Filter::parse(d)?))
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
                return Err(error(path, "projection", "path collision"));
            }
            tree.insert(first.to_owned(), node);
        }
        Some(rest) => {
            let child = tree
                .entry(first.to_owned())
                .or_insert_with(|| Node::Children(Tree::new()));
            let Node::Children(sub) = child else {
                return Err(error(path, "projection", "path collision"));
            };
            insert(sub, rest, node)?;
        }
    }
    Ok(())
}

fn include(tree: &Tree, doc: &Document, out: &mut Document, prefix: &str, filter: &Filter) {
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
                if let Some(v) = include_nested(sub, value, &full, filter) {
                    out.insert(key.clone(), v);
                }
            }
            other => {
                if let Some(v) = special(other, value, &full, filter) {
                    out.insert(key.clone(), v);
                }
            }
        }
    }
}

fn include_nested(tree: &Tree, value: &Bson, path: &str, filter: &Filter) -> Option<Bson> {
    match value {
        Bson::Document(d) => {
            let mut sub = Document::new();
            include(tree, d, &mut sub, path, filter);
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
                    Bson::Document(_) | Bson::Array(_) => include_nested(tree, i, path, filter),
                    _ => None,
                })
                .collect(),
        )),
        _ => None,
    }
}

fn exclude(tree: &Tree, doc: &mut Document, filter: &Filter, prefix: &str) {
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
                    exclude_nested(sub, value, filter, &full);
                }
            }
            other => {
                let replaced = doc.get(key).map(|v| special(other, v, &full, filter));
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

fn exclude_nested(tree: &Tree, value: &mut Bson, filter: &Filter, path: &str) {
    match value {
        Bson::Document(d) => exclude(tree, d, filter, path),
        Bson::Array(items) => {
            for item in items {
                exclude_nested(tree, item, filter, path);
            }
        }
        _ => {}
    }
}

/// `$slice`, `$elemMatch` and positional projections of one field; `None` drops the field.
fn special(node: &Node, value: &Bson, path: &str, filter: &Filter) -> Option<Bson> {
    match node {
        Node::Slice { skip, limit } => match value {
            Bson::Array(items) => Some(Bson::Array(slice(items, *skip, *limit))),
            other => Some(other.clone()),
        },
        Node::ElemMatch(f) => {
            let Bson::Array(items) = value else {
                return None;
            };
            items
                .iter()
                .find(|item| match item {
                    Bson::Document(d) => {
                        RawDocumentBuf::try_from(d).is_ok_and(|raw| f.matches(&raw))
                    }
                    _ => false,
                })
                .map(|item| Bson::Array(vec![item.clone()]))
        }
        Node::Positional => {
            let Bson::Array(items) = value else {
                return Some(value.clone());
            };
            items
                .iter()
                .find(|item| element_matches_query(path, item, filter))
                .map(|item| Bson::Array(vec![item.clone()]))
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

/// Whether one array element, standing alone at `path`, satisfies the query's conditions on
/// that path (for `a.$`).
pub(crate) fn element_matches_query(path: &str, element: &Bson, filter: &Filter) -> bool {
    let conditions = conditions_on(filter, path);
    if conditions.is_empty() {
        return false;
    }
    let mut probe = Document::new();
    set_path(&mut probe, path, Bson::Array(vec![element.clone()]));
    let Ok(raw) = RawDocumentBuf::try_from(&probe) else {
        return false;
    };
    conditions.iter().all(|c| c.matches(&raw))
}

fn conditions_on(filter: &Filter, path: &str) -> Vec<Filter> {
    match filter {
        Filter::And(parts) => parts.iter().flat_map(|p| conditions_on(p, path)).collect(),
        Filter::Collated(_, inner) => conditions_on(inner, path),
        Filter::Field(field, _)
            if field.as_str() == path || field.as_str().starts_with(&format!("{path}.")) =>
        {
            vec![filter.clone()]
        }
        _ => Vec::new(),
    }
}

fn set_path(doc: &mut Document, path: &str, value: Bson) {
    match path.split_once('.') {
        None => {
            doc.insert(path, value);
        }
        Some((first, rest)) => {
            let mut sub = Document::new();
            set_path(&mut sub, rest, value);
            doc.insert(first, sub);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc};

    fn project(spec: Document, doc: RawDocumentBuf, filter: Document) -> Document {
        Projection::parse(&spec)
            .unwrap()
            .apply(&doc, &Filter::parse(&filter).unwrap())
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
