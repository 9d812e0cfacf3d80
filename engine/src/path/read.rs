//! Reading the values at a path of owned BSON: the expression rule, the join rule and the
//! plain rule (see the module documentation of `path`).

use bson::{Bson, Document, RawBsonRef, RawDocument};

use super::Path;

impl Path {
    /// The value at this path below `value`, by the expression rule (`$a.b`): through
    /// subdocuments, and through arrays element by element, giving the array of what the
    /// subdocument and array elements hold (numeric segments are field names here). The empty
    /// path gives `value` itself; `None` is missing.
    pub(crate) fn resolve(&self, value: &Bson) -> Option<Bson> {
        resolve(value, self.segments())
    }

    /// [`Path::resolve`] below a document.
    pub(crate) fn resolve_in(&self, doc: &Document) -> Option<Bson> {
        match self.segments().split_first() {
            None => Some(Bson::Document(doc.clone())),
            Some((first, rest)) => resolve(doc.get(first)?, rest),
        }
    }

    /// The value at this path through subdocuments only (an array or other value on the way
    /// gives `None`), by the plain rule of stages that name one field.
    pub fn get<'d>(&self, doc: &'d Document) -> Option<&'d Bson> {
        let (last, parents) = self.segments().split_last()?;
        let mut at = doc;
        for segment in parents {
            match at.get(segment)? {
                Bson::Document(d) => at = d,
                _ => return None,
            }
        }
        at.get(last)
    }

    /// The value at this path by the positional rule of MongoDB's tools (`mongoexport
    /// --fields l.0.x`, an upsert key of `mongoimport`): through subdocuments, and into an
    /// array by a segment that is its element's position; anything else on the way is `None`.
    pub fn get_positional<'d>(&self, doc: &'d Document) -> Option<&'d Bson> {
        let (first, rest) = self.segments().split_first()?;
        let mut at = doc.get(first)?;
        for segment in rest {
            at = match at {
                Bson::Document(d) => d.get(segment)?,
                Bson::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(at)
    }

    /// The values at this path by the join rule (`$lookup`'s `localField`, `$graphLookup`):
    /// through subdocuments, and through arrays into their subdocument elements, an array at
    /// the end counting as its elements.
    pub(crate) fn elements(&self, doc: &Document) -> Vec<Bson> {
        let mut out = Vec::new();
        if let Some((first, rest)) = self.segments().split_first()
            && let Some(v) = doc.get(first)
        {
            elements(v, rest, &mut out);
        }
        out
    }
}

/// What a read of stored bytes by the plain rule does with an array on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayOnTheWay {
    /// The path is missing there.
    Missing,
    /// The array is the answer: a shard key's reader refuses it (a path through an array has
    /// many values).
    Found,
}

impl Path {
    /// The value at this path of stored bytes through subdocuments only, by the plain rule;
    /// `arrays` says what an array on the way gives. Unreadable bytes are an error.
    pub fn get_raw<'a>(
        &self,
        doc: &'a RawDocument,
        arrays: ArrayOnTheWay,
    ) -> Result<Option<RawBsonRef<'a>>, bson::error::Error> {
        let Some((last, parents)) = self.segments().split_last() else {
            return Ok(None);
        };
        let mut at = doc;
        for segment in parents {
            match at.get(segment)? {
                Some(RawBsonRef::Document(d)) => at = d,
                Some(array @ RawBsonRef::Array(_)) if arrays == ArrayOnTheWay::Found => {
                    return Ok(Some(array));
                }
                _ => return Ok(None),
            }
        }
        at.get(last)
    }

    /// [`Path::elements`] of stored bytes (`distinct`'s values); a damaged element ends its
    /// array.
    pub(crate) fn elements_raw<'a>(&self, doc: &'a RawDocument) -> Vec<RawBsonRef<'a>> {
        let mut out = Vec::new();
        elements_raw(RawBsonRef::Document(doc), self.segments(), &mut out);
        out
    }
}

fn elements_raw<'a>(value: RawBsonRef<'a>, path: &[String], out: &mut Vec<RawBsonRef<'a>>) {
    let Some((first, rest)) = path.split_first() else {
        match value {
            RawBsonRef::Array(a) => out.extend(a.into_iter().map_while(Result::ok)),
            other => out.push(other),
        }
        return;
    };
    match value {
        RawBsonRef::Document(d) => {
            if let Ok(Some(child)) = d.get(first) {
                elements_raw(child, rest, out);
            }
        }
        RawBsonRef::Array(a) => {
            for element in a.into_iter().map_while(Result::ok) {
                if let RawBsonRef::Document(_) = element {
                    elements_raw(element, path, out);
                }
            }
        }
        _ => {}
    }
}

fn resolve(value: &Bson, path: &[String]) -> Option<Bson> {
    let Some((first, rest)) = path.split_first() else {
        return Some(value.clone());
    };
    match value {
        Bson::Document(d) => resolve(d.get(first)?, rest),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter(|e| matches!(e, Bson::Document(_) | Bson::Array(_)))
                .filter_map(|e| resolve(e, path))
                .collect(),
        )),
        _ => None,
    }
}

fn elements(v: &Bson, path: &[String], out: &mut Vec<Bson>) {
    match (path.split_first(), v) {
        (None, Bson::Array(items)) => out.extend(items.iter().cloned()),
        (None, value) => out.push(value.clone()),
        (Some((first, rest)), Bson::Document(d)) => {
            if let Some(child) = d.get(first) {
                elements(child, rest, out);
            }
        }
        (Some(_), Bson::Array(items)) => {
            for item in items {
                if matches!(item, Bson::Document(_)) {
                    elements(item, path, out);
                }
            }
        }
        (Some(_), _) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    #[test]
    fn the_rules_differ_on_arrays() {
        let d = doc! { "a": [{ "b": 1 }, { "b": [2, 3] }, 4, { "c": 5 }], "x": { "y": 6 } };
        let path = Path::new("a.b");
        // Expressions map over the array, keeping nested arrays whole.
        assert_eq!(path.resolve_in(&d), Some(bson!([1, [2, 3]])));
        // Joins flatten the array at the end of the path, from documents and from bytes alike.
        assert_eq!(path.elements(&d), vec![bson!(1), bson!(2), bson!(3)]);
        let raw = bson::RawDocumentBuf::try_from(&d).unwrap();
        let from_bytes: Vec<Bson> = path
            .elements_raw(&raw)
            .into_iter()
            .map(|v| Bson::try_from(bson::RawBson::from(v)).unwrap())
            .collect();
        assert_eq!(from_bytes, path.elements(&d));
        // The plain rule stops at arrays.
        assert_eq!(path.get(&d), None);
        assert_eq!(Path::new("x.y").get(&d), Some(&bson!(6)));
        assert_eq!(Path::empty().resolve(&bson!(7)), Some(bson!(7)));
        // Numeric segments are field names to an expression.
        assert_eq!(Path::new("a.0").resolve_in(&d), Some(bson!([])));
        // The tools' positional rule takes them as positions, and only in arrays.
        assert_eq!(Path::new("a.1.b.0").get_positional(&d), Some(&bson!(2)));
        assert_eq!(Path::new("a.2").get_positional(&d), Some(&bson!(4)));
        assert_eq!(Path::new("a.9").get_positional(&d), None);
        assert_eq!(Path::new("a.b").get_positional(&d), None);
        assert_eq!(Path::new("x.0").get_positional(&d), None);
        // Stored bytes by the plain rule: an array on the way is missing, or the answer.
        let found = |path: &str, arrays| {
            Path::new(path)
                .get_raw(&raw, arrays)
                .unwrap()
                .map(|v| Bson::try_from(bson::RawBson::from(v)).unwrap())
        };
        assert_eq!(found("x.y", ArrayOnTheWay::Missing), Some(bson!(6)));
        assert_eq!(found("a.b", ArrayOnTheWay::Missing), None);
        assert_eq!(found("a.b", ArrayOnTheWay::Found), d.get("a").cloned());
        assert_eq!(found("x.y.z", ArrayOnTheWay::Found), None);
    }
}
