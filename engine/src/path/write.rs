//! Writing at a path of an owned document by the plain rule: through subdocuments, with the
//! caller's choice of what a missing parent, or a parent that is not a document, means
//! ([`Parents`]).

use bson::{Bson, Document};

use super::Path;

/// What a write does on the way to a path's last field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parents {
    /// Only through existing subdocuments; anything else stops the write.
    Existing,
    /// Missing parents become empty subdocuments; an array or another value stops the write.
    Create,
    /// Missing parents, and parents that are not documents, become empty subdocuments.
    Overwrite,
}

/// Why a write stopped on the way.
#[derive(Debug, Clone, PartialEq)]
pub enum Blocked {
    /// A parent is missing.
    Missing,
    /// A parent is an array.
    Array,
    /// A parent is this value, neither a document nor an array.
    Value(Bson),
}

impl Path {
    /// Sets `value` at this path.
    pub fn set(&self, doc: &mut Document, value: Bson, parents: Parents) -> Result<(), Blocked> {
        let Some((last, _)) = self.segments().split_last() else {
            return Ok(());
        };
        parent_mut(doc, self.segments(), parents)?.insert(last.clone(), value);
        Ok(())
    }

    /// Removes the value at this path, through existing subdocuments, and gives it back.
    pub(crate) fn remove(&self, doc: &mut Document) -> Result<Option<Bson>, Blocked> {
        let Some((last, _)) = self.segments().split_last() else {
            return Ok(None);
        };
        Ok(parent_mut(doc, self.segments(), Parents::Existing)?.remove(last))
    }

    /// Puts `value` at this path in place of what it held (keeping the field's position in
    /// its document), through existing subdocuments, and gives back what it held.
    pub(crate) fn replace(&self, doc: &mut Document, value: Bson) -> Result<Option<Bson>, Blocked> {
        let Some((last, _)) = self.segments().split_last() else {
            return Ok(None);
        };
        Ok(parent_mut(doc, self.segments(), Parents::Existing)?.insert(last.clone(), value))
    }

    /// The first array on this path, reached through subdocuments: what a positional
    /// projection (`a.b.$`) narrows. `None` when a missing field or another value comes first,
    /// or the path ends without meeting an array.
    pub(crate) fn first_array_mut<'d>(&self, doc: &'d mut Document) -> Option<&'d mut Vec<Bson>> {
        let mut at = doc;
        for segment in self.segments() {
            match at.get_mut(segment)? {
                Bson::Document(d) => at = d,
                Bson::Array(items) => return Some(items),
                _ => return None,
            }
        }
        None
    }

    /// Removes the field at this path from every subdocument it reaches through subdocuments
    /// and through the subdocument elements of arrays (`$unset`, an exclusion).
    pub(crate) fn remove_everywhere(&self, doc: &mut Document) {
        remove_everywhere(doc, self.segments());
    }
}

/// The document that holds the last segment of `path`.
fn parent_mut<'d>(
    doc: &'d mut Document,
    path: &[String],
    parents: Parents,
) -> Result<&'d mut Document, Blocked> {
    let Some((_, ancestors)) = path.split_last() else {
        return Ok(doc);
    };
    let mut at = doc;
    for segment in ancestors {
        let make = match at.get(segment) {
            Some(Bson::Document(_)) => false,
            None if parents != Parents::Existing => true,
            Some(_) if parents == Parents::Overwrite => true,
            None => return Err(Blocked::Missing),
            Some(Bson::Array(_)) => return Err(Blocked::Array),
            Some(other) => return Err(Blocked::Value(other.clone())),
        };
        if make {
            at.insert(segment.clone(), Document::new());
        }
        match at.get_mut(segment) {
            Some(Bson::Document(d)) => at = d,
            _ => unreachable!("a document was found or put at `{segment}`"),
        }
    }
    Ok(at)
}

fn remove_everywhere(doc: &mut Document, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        doc.remove(first);
        return;
    }
    match doc.get_mut(first) {
        Some(Bson::Document(d)) => remove_everywhere(d, rest),
        Some(Bson::Array(items)) => {
            for item in items {
                if let Bson::Document(d) = item {
                    remove_everywhere(d, rest);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn parents_decide_what_a_write_does_on_the_way() {
        let path = Path::new("a.b.c");
        let mut d = doc! { "a": { "b": 1 } };
        assert_eq!(
            path.set(&mut d, Bson::Int32(2), Parents::Existing),
            Err(Blocked::Value(Bson::Int32(1)))
        );
        assert_eq!(
            path.set(&mut d, Bson::Int32(2), Parents::Create),
            Err(Blocked::Value(Bson::Int32(1)))
        );
        path.set(&mut d, Bson::Int32(2), Parents::Overwrite)
            .unwrap();
        assert_eq!(d, doc! { "a": { "b": { "c": 2 } } });
        let mut d = doc! { "x": [] };
        assert_eq!(
            Path::new("x.y").set(&mut d, Bson::Null, Parents::Create),
            Err(Blocked::Array)
        );
        let mut d = doc! {};
        assert_eq!(
            Path::new("p.q").set(&mut d, Bson::Null, Parents::Existing),
            Err(Blocked::Missing)
        );
        Path::new("p.q")
            .set(&mut d, Bson::Int32(3), Parents::Create)
            .unwrap();
        assert_eq!(d, doc! { "p": { "q": 3 } });
    }

    #[test]
    fn replace_keeps_the_position_and_remove_everywhere_goes_through_arrays() {
        let mut d = doc! { "a": 1, "b": 2 };
        assert_eq!(
            Path::new("a").replace(&mut d, Bson::Null),
            Ok(Some(Bson::Int32(1)))
        );
        assert_eq!(d.keys().collect::<Vec<_>>(), ["a", "b"]);
        let mut d = doc! { "l": [{ "k": 1, "v": 2 }, 3, { "k": 4 }] };
        Path::new("l.k").remove_everywhere(&mut d);
        assert_eq!(d, doc! { "l": [{ "v": 2 }, 3, {}] });
        assert_eq!(Path::new("l.k").remove(&mut d), Err(Blocked::Array));
    }
}
