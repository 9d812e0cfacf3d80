//! The document an upsert inserts when nothing matches: seeded from the query's equality
//! conditions, then updated.
//!
//! MongoDB's rules (jstests `upsert_fields.js`, `upsert_and.js`): equality conditions at the
//! top level, under `$and` or under an `$or` with one distinct branch (`{a: 1}`,
//! `{a: {$eq: 1}}`, a one-element `$in`, each value of `$all`) give their values, dotted paths
//! (`"a.b": 1`) give subdocuments; other conditions (ranges, `$elemMatch`, `$nor`, `$or` over
//! several branches, regexes) give nothing. Two conditions on the same path, or on a path and a
//! path inside it, are an error (a two-value `$all` among them). A replacement takes only `_id`
//! from the query, which must then name `_id` whole.

use bson::{Bson, Document};

use super::parse::error;
use crate::code::ErrorCode;
use crate::error::UpdateError;
use crate::path::{Parents, Path};

/// What an upsert takes from its query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seeding {
    /// An operator or pipeline update: every equality field.
    AllFields,
    /// A replacement: `_id` only; conflicts on other fields are ignored.
    IdOnly,
}

/// The equality fields of a query as a document (`_id` first when present).
pub(crate) fn seed(query: &Document, seeding: Seeding) -> Result<Document, UpdateError> {
    let mut pairs: Vec<(String, Bson)> = Vec::new();
    collect(query, &mut pairs);
    if seeding == Seeding::IdOnly {
        pairs.retain(|(path, _)| within(path, "_id"));
        if let Some((path, _)) = pairs.iter().find(|(path, _)| path != "_id") {
            return Err(error(
                path,
                "upsert",
                format!(
                    "field at `_id` must be exactly specified, field at sub-path `{path}` found"
                ),
            )
            .with_code(ErrorCode::NOT_EXACT_VALUE_FIELD));
        }
    }
    let mut out = Document::new();
    pairs.sort_by_key(|(path, _)| !within(path, "_id"));
    for (i, (path, value)) in pairs.iter().enumerate() {
        if let Some((other, _)) = pairs[..i]
            .iter()
            .find(|(other, _)| within(other, path) || within(path, other))
        {
            let reason = if other == path {
                format!("cannot infer query fields to set, path `{path}` is matched twice")
            } else {
                format!(
                    "cannot infer query fields to set, both paths `{other}` and `{path}` are matched"
                )
            };
            return Err(error(path, "upsert", reason).with_code(ErrorCode::NOT_SINGLE_VALUE_FIELD));
        }
        // Paths that overlap were refused above, so a parent on the way is missing (and
        // created) or a document an earlier path created: never blocked, but refused if so.
        Path::new(path)
            .set(&mut out, value.clone(), Parents::Create)
            .map_err(|_| error(path, "upsert", format!("cannot create field `{path}`")))?;
    }
    Ok(out)
}

/// Whether `path` is `prefix` or lies inside it.
fn within(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

fn collect(query: &Document, out: &mut Vec<(String, Bson)>) {
    for (key, value) in query {
        match (key.as_str(), value) {
            ("$and", Bson::Array(items)) => {
                for item in items {
                    if let Bson::Document(d) = item {
                        collect(d, out);
                    }
                }
            }
            // Identical branches count once (MongoDB 8.0 removes duplicate `$or` branches).
            ("$or", Bson::Array(items)) => {
                if let Some(Bson::Document(first)) = items.first()
                    && items.iter().all(|item| item == &items[0])
                {
                    collect(first, out);
                }
            }
            _ if key.starts_with('$') => {}
            (_, Bson::Document(d)) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
                collect_operators(key, d, out);
            }
            (_, Bson::RegularExpression(_)) => {}
            (_, other) => out.push((key.clone(), other.clone())),
        }
    }
}

/// The equalities among one path's operators.
fn collect_operators(path: &str, operators: &Document, out: &mut Vec<(String, Bson)>) {
    for (op, argument) in operators {
        match (op.as_str(), argument) {
            ("$eq", value) => out.push((path.to_owned(), value.clone())),
            ("$in", Bson::Array(items)) => {
                if let [only] = items.as_slice()
                    && !matches!(only, Bson::RegularExpression(_))
                {
                    out.push((path.to_owned(), only.clone()));
                }
            }
            // `$all` is an `$and` of one equality per value; regexes and `$elemMatch` are not
            // equalities.
            ("$all", Bson::Array(items)) => {
                for item in items {
                    let elem_match =
                        matches!(item, Bson::Document(d) if d.contains_key("$elemMatch"));
                    if !elem_match && !matches!(item, Bson::RegularExpression(_)) {
                        out.push((path.to_owned(), item.clone()));
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::{Seeding, seed};

    #[test]
    fn equality_conditions_seed_the_new_document() {
        let all = |query| seed(&query, Seeding::AllFields);
        assert_eq!(
            all(doc! { "a": 1, "b.c": "x", "d": { "$gt": 3 }, "_id": 7 }).unwrap(),
            doc! { "_id": 7, "a": 1, "b": { "c": "x" } }
        );
        assert_eq!(
            all(doc! { "$and": [{ "a": { "$eq": 2 } }, { "e": { "$in": [5] } }], "$or": [{ "z": 1 }, { "z": 2 }] })
                .unwrap(),
            doc! { "a": 2, "e": 5 }
        );
        assert_eq!(
            all(doc! { "$and": [{ "$or": [{ "x": 1 }] }], "y": { "$all": [2] } }).unwrap(),
            doc! { "x": 1, "y": 2 }
        );
        assert_eq!(all(doc! { "a": 1, "a.b": 2 }).unwrap_err().code.code, 54);
        assert_eq!(
            all(doc! { "a": { "$all": [1, 2] } }).unwrap_err().code.code,
            54
        );
    }

    #[test]
    fn a_replacement_takes_only_a_whole_id() {
        let id_only = |query| seed(&query, Seeding::IdOnly);
        assert_eq!(
            id_only(doc! { "_id": 1, "x": [1, { "x": 1 }], "x.x": 1 }).unwrap(),
            doc! { "_id": 1 }
        );
        assert_eq!(
            id_only(doc! { "_id.x": 1, "_id.y": 2 })
                .unwrap_err()
                .code
                .code,
            111
        );
        assert_eq!(
            id_only(doc! { "_id": 1, "_id.x": 1 })
                .unwrap_err()
                .code
                .code,
            111
        );
    }
}
