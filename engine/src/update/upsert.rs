//! The document an upsert inserts when nothing matches: seeded from the query's equality
//! conditions, then updated.
//!
//! MongoDB's rules: equality conditions at the top level or under `$and` (`{a: 1}`,
//! `{a: {$eq: 1}}`, a one-element `$in`) give their values, dotted paths (`"a.b": 1`) give
//! subdocuments; other conditions (ranges, `$or`, regexes) give nothing. Two conditions on
//! the same path, or on a path and a path inside it, are an error.

use bson::{Bson, Document};

use super::parse::{UpdateError, error};

/// The equality fields of a query as a document (`_id` first when present).
pub(crate) fn seed(query: &Document) -> Result<Document, UpdateError> {
    let mut pairs: Vec<(String, Bson)> = Vec::new();
    collect(query, &mut pairs);
    let mut out = Document::new();
    pairs.sort_by_key(|(path, _)| path != "_id");
    for (i, (path, value)) in pairs.iter().enumerate() {
        for (other, _) in &pairs[..i] {
            let nested = |a: &str, b: &str| a == b || b.starts_with(&format!("{a}."));
            if nested(other, path) || nested(path, other) {
                return Err(error(
                    path,
                    "upsert",
                    format!(
                        "cannot infer the new document: `{other}` and `{path}` both set by the query"
                    ),
                ));
            }
        }
        set_dotted(&mut out, path, value.clone())
            .map_err(|reason| error(path, "upsert", reason))?;
    }
    Ok(out)
}

fn collect(query: &Document, out: &mut Vec<(String, Bson)>) {
    for (key, value) in query {
        if key == "$and" {
            if let Bson::Array(items) = value {
                for item in items {
                    if let Bson::Document(d) = item {
                        collect(d, out);
                    }
                }
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        match value {
            Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
                if let Some(v) = d.get("$eq") {
                    out.push((key.clone(), v.clone()));
                } else if let Some(Bson::Array(items)) = d.get("$in")
                    && let [only] = items.as_slice()
                    && !matches!(only, Bson::RegularExpression(_))
                {
                    out.push((key.clone(), only.clone()));
                }
            }
            Bson::RegularExpression(_) => {}
            other => out.push((key.clone(), other.clone())),
        }
    }
}

fn set_dotted(doc: &mut Document, path: &str, value: Bson) -> Result<(), String> {
    let mut segments: Vec<&str> = path.split('.').collect();
    let last = segments.pop().unwrap_or_default();
    let mut at = doc;
    for segment in segments {
        if !at.contains_key(segment) {
            at.insert(segment, Document::new());
        }
        match at.get_mut(segment) {
            Some(Bson::Document(d)) => at = d,
            _ => return Err(format!("cannot create field `{last}` under `{segment}`")),
        }
    }
    at.insert(last, value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::seed;

    #[test]
    fn equality_conditions_seed_the_new_document() {
        assert_eq!(
            seed(&doc! { "a": 1, "b.c": "x", "d": { "$gt": 3 }, "_id": 7 }).unwrap(),
            doc! { "_id": 7, "a": 1, "b": { "c": "x" } }
        );
        assert_eq!(
            seed(&doc! { "$and": [{ "a": { "$eq": 2 } }, { "e": { "$in": [5] } }], "$or": [{ "z": 1 }] })
                .unwrap(),
            doc! { "a": 2, "e": 5 }
        );
        assert!(seed(&doc! { "a": 1, "a.b": 2 }).is_err());
    }
}
