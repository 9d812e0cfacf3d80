//! Comparing expected and actual values: numbers by value (`1`, `1.0` and `NumberLong(1)` are
//! equal), documents ignoring field order unless strict, arrays in order; plus the unified
//! format's `$$exists`, `$$type` and `$$unsetOrMatches` operators.

use bson::{Bson, Document};

/// Whether `actual` matches `expected`. `extra_fields` allows fields in actual documents that
/// the expectation does not name: the unified format allows them in root documents, and the
/// documents of a root array (a cursor's results) count as root.
pub fn values_match(expected: &Bson, actual: Option<&Bson>, extra_fields: bool) -> bool {
    if let Bson::Document(e) = expected
        && let Some((op, arg)) = e.iter().next()
        && e.len() == 1
        && op.starts_with("$$")
    {
        return special(op, arg, actual);
    }
    let Some(actual) = actual else { return false };
    match (expected, actual) {
        (Bson::Document(e), Bson::Document(a)) => documents_match(e, a, extra_fields),
        (Bson::Array(e), Bson::Array(a)) => {
            e.len() == a.len()
                && e.iter()
                    .zip(a)
                    .all(|(x, y)| values_match(x, Some(y), extra_fields))
        }
        (e, a) => match (integer(e), integer(a), number(e), number(a)) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => {
                x.partial_cmp(&y) == Some(std::cmp::Ordering::Equal) || (x.is_nan() && y.is_nan())
            }
            _ => e == a,
        },
    }
}

fn documents_match(expected: &Document, actual: &Document, extra_fields: bool) -> bool {
    let named = expected
        .iter()
        .all(|(k, v)| values_match(v, actual.get(k), false));
    named && (extra_fields || actual.keys().all(|k| expected.contains_key(k)))
}

fn special(op: &str, arg: &Bson, actual: Option<&Bson>) -> bool {
    match op {
        "$$exists" => actual.is_some() == matches!(arg, Bson::Boolean(true)),
        "$$unsetOrMatches" => actual.is_none() || values_match(arg, actual, true),
        "$$type" => {
            let names: Vec<&str> = match arg {
                Bson::String(s) => vec![s.as_str()],
                Bson::Array(a) => a.iter().filter_map(Bson::as_str).collect(),
                _ => Vec::new(),
            };
            actual.is_some_and(|a| {
                names
                    .iter()
                    .any(|n| type_name(a) == *n || (*n == "number" && number(a).is_some()))
            })
        }
        _ => false,
    }
}

fn type_name(v: &Bson) -> &'static str {
    match v {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::Int32(_) => "int",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::Timestamp(_) => "timestamp",
        Bson::RegularExpression(_) => "regex",
        _ => "other",
    }
}

fn integer(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        _ => None,
    }
}

fn number(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    }
}

/// A document with fields sorted by name at every level, for order-insensitive comparison.
pub fn normalize(v: &Bson) -> Bson {
    match v {
        Bson::Document(d) => {
            let mut pairs: Vec<(String, Bson)> =
                d.iter().map(|(k, v)| (k.clone(), normalize(v))).collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Bson::Document(pairs.into_iter().collect())
        }
        Bson::Array(a) => Bson::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}
