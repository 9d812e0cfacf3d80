//! An update's `updateDescription`, computed from the document before and after, and its
//! replay.
//!
//! Rules, as MongoDB reports them: `updatedFields` maps dotted paths to their new values (a new
//! field, a changed value, an array element past the old end); `removedFields` lists the paths
//! of fields gone; `truncatedArrays` lists arrays that became shorter, with their new size.
//! Changed sub-documents and array elements are described inside, down to the values that
//! differ; a value of another type (`1` and `1.0` included) is replaced whole.
//!
//! Replay applies removals, then truncations, then the updated fields in their order, a new
//! field going last. So a description exists only where that reproduces the new document
//! exactly, field order included: where kept fields changed order, or a new field comes before
//! a kept one, the sub-document is replaced whole; at the top level the change is reported as a
//! `replace` ([`describe`] returns `None`). A field name holding a `.` or starting with `$`
//! cannot be told apart in a dotted path, so it is treated the same way.
//!
//! A document whose kept field names stay in place is compared in step, element by element;
//! others through their listed fields (the two give the same description). The description is
//! written straight into the record being built (`describe_into`), which cuts the record back
//! to where it was when only a replacement describes the change.

use bson::{Bson, Document, RawDocument, RawDocumentBuf};

use crate::raw;

/// The `updateDescription` of the change from `old` to `new`, or `None` when only a
/// replacement describes it (see the module documentation). With it come MongoDB's
/// `disambiguatedPaths` (shown with `showExpandedEvents`), when a path needs them: for each
/// path that goes through a field whose name is a number, the path's parts, array positions
/// as integers.
///
/// It works on the stored bytes: values whose bytes are equal are skipped without decoding,
/// so a `$push` onto a bucket of fifty messages reads the one message pushed; and the values
/// described are copied as bytes into the description, never decoded.
pub fn describe(
    old: &RawDocument,
    new: &RawDocument,
) -> Option<(RawDocumentBuf, Option<RawDocumentBuf>)> {
    let mut element = Vec::new();
    let Described { ambiguous } = describe_into(old, new, "d", &mut element)?;
    // The element's type, its one-letter name and the name's NUL come before the document.
    let description = RawDocumentBuf::from_bytes(element.split_off(3)).ok()?;
    Some((description, ambiguous))
}

/// What [`describe_into`] wrote beside the description.
#[derive(Debug, PartialEq)]
pub(crate) struct Described {
    /// The `disambiguatedPaths`, when a path needs them.
    pub(crate) ambiguous: Option<RawDocumentBuf>,
}

/// [`describe`], written as a document element named `name` at the end of `out` (a change
/// record's fields), without a buffer of its own. On `None`, `out` is as it was.
pub(crate) fn describe_into(
    old: &RawDocument,
    new: &RawDocument,
    name: &str,
    out: &mut Vec<u8>,
) -> Option<Described> {
    let start = out.len();
    let description = raw::open_element(out, raw::DOCUMENT, name);
    let updated = raw::open_element(out, raw::DOCUMENT, "updatedFields");
    let mut described = Description::new(out);
    if !matches!(
        described.documents(old.as_bytes(), new.as_bytes(), &At::root()),
        Ok(true)
    ) {
        out.truncate(start);
        return None;
    }
    let Description {
        removed,
        truncated,
        ambiguous,
        ..
    } = described;
    raw::close_document(out, updated);
    // Arrays are documents whose names are the positions.
    let mut name = String::new();
    let array = raw::open_element(out, raw::ARRAY, "removedFields");
    for (i, path) in removed.iter().enumerate() {
        raw::push_string(out, position(&mut name, i), path);
    }
    raw::close_document(out, array);
    let array = raw::open_element(out, raw::ARRAY, "truncatedArrays");
    for (i, (field, size)) in truncated.iter().enumerate() {
        let entry = raw::open_element(out, raw::DOCUMENT, position(&mut name, i));
        raw::push_string(out, "field", field);
        raw::push_element(out, raw::INT32, "newSize", &size.to_le_bytes());
        raw::close_document(out, entry);
    }
    raw::close_document(out, array);
    raw::close_document(out, description);
    match ambiguous.map(|paths| RawDocumentBuf::try_from(&paths)) {
        None => Some(Described { ambiguous: None }),
        Some(Ok(paths)) => Some(Described {
            ambiguous: Some(paths),
        }),
        Some(Err(_)) => {
            out.truncate(start);
            None
        }
    }
}

/// `i` written into `name` (cleared first), as an array names its `i`th element.
fn position(name: &mut String, i: usize) -> &str {
    name.clear();
    crate::tables::push_decimal(name, i as u64);
    name
}

/// A path being described: dotted, and as its last part with the path it extends, so the
/// parts are spelled out only for a path that needs them (see [`At::ambiguous`]).
struct At<'p> {
    dotted: String,
    part: Part<'p>,
    up: Option<&'p At<'p>>,
}

#[derive(Clone, Copy)]
enum Part<'p> {
    Root,
    Field(&'p str),
    Index(usize),
}

impl<'p> At<'p> {
    fn root() -> At<'static> {
        At {
            dotted: String::new(),
            part: Part::Root,
            up: None,
        }
    }

    fn field(&'p self, name: &'p str) -> At<'p> {
        self.child(Part::Field(name))
    }

    fn index(&'p self, i: usize) -> At<'p> {
        self.child(Part::Index(i))
    }

    fn child(&'p self, part: Part<'p>) -> At<'p> {
        let mut dotted = String::with_capacity(self.dotted.len() + 12);
        dotted.push_str(&self.dotted);
        if !dotted.is_empty() {
            dotted.push('.');
        }
        match part {
            Part::Field(name) => dotted.push_str(name),
            Part::Index(i) => crate::tables::push_decimal(&mut dotted, i as u64),
            Part::Root => {}
        }
        At {
            dotted,
            part,
            up: Some(self),
        }
    }

    /// The path's parts from the top: field names, and array positions as integers.
    fn parts(&self) -> Vec<Bson> {
        let mut parts = Vec::new();
        let mut at = Some(self);
        while let Some(here) = at {
            match here.part {
                Part::Field(name) => parts.push(Bson::String(name.to_owned())),
                Part::Index(i) => parts.push(Bson::Int32(i32::try_from(i).unwrap_or(i32::MAX))),
                Part::Root => {}
            }
            at = here.up;
        }
        parts.reverse();
        parts
    }

    /// Whether the dotted path reads two ways: a field named by digits looks like a position.
    fn ambiguous(&self) -> bool {
        let mut at = Some(self);
        while let Some(here) = at {
            if let Part::Field(name) = here.part
                && name.bytes().all(|b| b.is_ascii_digit())
            {
                return true;
            }
            at = here.up;
        }
        false
    }
}

/// A value as stored: its BSON type and its bytes. Two values are the same value when both
/// are equal (`1` and `1.0` differ, `0.0` and `-0.0` differ, a NaN is itself, and
/// sub-documents with their fields in another order differ).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Value<'a> {
    kind: u8,
    bytes: &'a [u8],
}

impl<'a> Value<'a> {
    fn of(container: &'a [u8], e: &raw::Element) -> Value<'a> {
        Value {
            kind: e.kind,
            bytes: e.value_bytes(container),
        }
    }
}

/// Bytes the description cannot read its way through (a damaged length, type or name): the
/// change is then reported as a replacement.
struct Unreadable;

/// A document's (or array's) fields in order, names checked as UTF-8.
fn fields(bytes: &[u8]) -> Result<Vec<(&str, Value<'_>)>, Unreadable> {
    raw::elements(bytes, 0)
        .ok_or(Unreadable)?
        .iter()
        .map(|e| {
            let name = std::str::from_utf8(e.name(bytes)).map_err(|_| Unreadable)?;
            Ok((name, Value::of(bytes, e)))
        })
        .collect()
}

/// A description as it is built. Each path is visited once, so where names are unique (as the
/// engine's own encoders write them) `updated` gets each key once; a name held twice in one
/// document can give its path twice, the later value last, as a decoded document keeps it.
struct Description<'o> {
    /// The `updatedFields` elements, encoded one after another at the end of the record being
    /// written: type, dotted path, value bytes as stored (a path joins names read up to their
    /// NUL, so it holds no NUL).
    updated: &'o mut Vec<u8>,
    removed: Vec<String>,
    truncated: Vec<(String, i32)>,
    /// The `disambiguatedPaths`, once a path needs them.
    ambiguous: Option<Document>,
}

fn plain(name: &str) -> bool {
    plain_bytes(name.as_bytes())
}

/// [`plain`] on a name's bytes.
fn plain_bytes(name: &[u8]) -> bool {
    !name.is_empty() && !name.contains(&b'.') && name[0] != b'$'
}

/// The most fields [`Description::in_step`] reads in step; a larger document takes the
/// general walk.
const IN_STEP_FIELDS: usize = 32;

impl<'o> Description<'o> {
    /// A description whose updated fields go to the end of `updated`.
    fn new(updated: &'o mut Vec<u8>) -> Self {
        Description {
            updated,
            removed: Vec::new(),
            truncated: Vec::new(),
            ambiguous: None,
        }
    }

    fn note(&mut self, at: &At<'_>) {
        if at.ambiguous() {
            self.ambiguous
                .get_or_insert_default()
                .insert(at.dotted.clone(), Bson::Array(at.parts()));
        }
    }

    fn set(&mut self, at: &At<'_>, value: Value<'_>) {
        self.note(at);
        self.updated.push(value.kind);
        self.updated.extend_from_slice(at.dotted.as_bytes());
        self.updated.push(0);
        self.updated.extend_from_slice(value.bytes);
    }

    /// Describes the document `old` -> `new` under `at`; `false` when order or names make it
    /// impossible. It decides that before it describes anything, so `false` leaves `self` as
    /// it was.
    fn documents(&mut self, old: &[u8], new: &[u8], at: &At<'_>) -> Result<bool, Unreadable> {
        if self.in_step(old, new, at)? {
            return Ok(true);
        }
        self.listed(old, new, at)
    }

    /// [`Description::documents`] on the documents' fields listed: any names, in any order.
    fn listed(&mut self, old: &[u8], new: &[u8], at: &At<'_>) -> Result<bool, Unreadable> {
        let (old, new) = (fields(old)?, fields(new)?);
        if !old.iter().chain(&new).all(|(k, _)| plain(k)) {
            return Ok(false);
        }
        // The usual update keeps every name in its place: only values can differ. (With a name
        // held twice, the walk below compares each new field with the name's first old one.)
        let unique = || {
            old.iter()
                .enumerate()
                .all(|(i, (k, _))| old[..i].iter().all(|(o, _)| o != k))
        };
        if old.len() == new.len() && old.iter().zip(&new).all(|((o, _), (n, _))| o == n) && unique()
        {
            for ((k, o), (_, v)) in old.iter().zip(&new) {
                if o != v {
                    self.value(*o, *v, &at.field(k))?;
                }
            }
            return Ok(true);
        }
        let in_old = |k: &str| old.iter().find(|(o, _)| *o == k).map(|(_, v)| *v);
        let in_new = |k: &str| new.iter().any(|(n, _)| *n == k);
        let kept_old = old.iter().filter(|(k, _)| in_new(k)).map(|(k, _)| *k);
        let kept_new = new
            .iter()
            .filter(|(k, _)| in_old(k).is_some())
            .map(|(k, _)| *k);
        if !kept_old.eq(kept_new) {
            return Ok(false);
        }
        let mut added_seen = false;
        for (k, _) in &new {
            if in_old(k).is_none() {
                added_seen = true;
            } else if added_seen {
                return Ok(false);
            }
        }
        for (k, _) in old.iter().filter(|(k, _)| !in_new(k)) {
            let field = at.field(k);
            self.note(&field);
            self.removed.push(field.dotted);
        }
        for (k, v) in &new {
            match in_old(k) {
                None => self.set(&at.field(k), *v),
                // Equal values are skipped before their path is spelled out.
                Some(o) if o == *v => {}
                Some(o) => self.value(o, *v, &at.field(k))?,
            }
        }
        Ok(true)
    }

    /// [`Description::documents`] for the usual update, which keeps every name in its place
    /// (names plain and each held once, at most [`IN_STEP_FIELDS`] of them): both documents'
    /// elements are read in step, without listing their fields, and only values that differ
    /// are described. `false`, having described nothing, when the names are not so; the
    /// general walk then decides (and gives the same answer where both apply).
    fn in_step(&mut self, old: &[u8], new: &[u8], at: &At<'_>) -> Result<bool, Unreadable> {
        let old_end = raw::end_of(old, 0).ok_or(Unreadable)?;
        let new_end = raw::end_of(new, 0).ok_or(Unreadable)?;
        let mut olds = [None; IN_STEP_FIELDS];
        let mut news = [None; IN_STEP_FIELDS];
        let (mut o_at, mut n_at, mut n) = (4, 4, 0);
        while o_at < old_end || n_at < new_end {
            if o_at >= old_end || n_at >= new_end || n == IN_STEP_FIELDS {
                return Ok(false);
            }
            let o = raw::element_at(old, o_at, old_end).ok_or(Unreadable)?;
            let e = raw::element_at(new, n_at, new_end).ok_or(Unreadable)?;
            let name = o.name(old);
            if !raw::utf8(name) || !raw::utf8(e.name(new)) {
                return Err(Unreadable);
            }
            let held_before = olds[..n]
                .iter()
                .flatten()
                .any(|p: &raw::Element| p.name(old) == name);
            if name != e.name(new) || !plain_bytes(name) || held_before {
                return Ok(false);
            }
            (olds[n], news[n]) = (Some(o), Some(e));
            (o_at, n_at, n) = (o.end, e.end, n + 1);
        }
        for (o, e) in olds[..n].iter().flatten().zip(news[..n].iter().flatten()) {
            let (before, after) = (Value::of(old, o), Value::of(new, e));
            if before != after {
                let name = std::str::from_utf8(e.name(new)).map_err(|_| Unreadable)?;
                self.value(before, after, &at.field(name))?;
            }
        }
        Ok(true)
    }

    fn value(&mut self, old: Value<'_>, new: Value<'_>, at: &At<'_>) -> Result<(), Unreadable> {
        if old == new {
            return Ok(());
        }
        match (old.kind, new.kind) {
            (raw::DOCUMENT, raw::DOCUMENT) => {
                if !self.documents(old.bytes, new.bytes, at)? {
                    self.set(at, new);
                }
            }
            (raw::ARRAY, raw::ARRAY) => {
                if !self.appended(old.bytes, new.bytes, at) {
                    self.elementwise(old.bytes, new.bytes, at)?;
                }
            }
            _ => self.set(at, new),
        }
        Ok(())
    }

    /// The change from the array `ob` to `nb`, element by element. Elements are compared as
    /// bytes and walked into only where they differ.
    fn elementwise(&mut self, ob: &[u8], nb: &[u8], at: &At<'_>) -> Result<(), Unreadable> {
        let old_items = raw::elements(ob, 0).ok_or(Unreadable)?;
        let new_items = raw::elements(nb, 0).ok_or(Unreadable)?;
        if new_items.len() < old_items.len() {
            self.note(at);
            self.truncated.push((
                at.dotted.clone(),
                i32::try_from(new_items.len()).unwrap_or(i32::MAX),
            ));
        }
        for (i, e) in new_items.iter().enumerate() {
            let new = Value::of(nb, e);
            match old_items.get(i).map(|b| Value::of(ob, b)) {
                Some(old) if old == new => {}
                Some(old) => self.value(old, new, &at.index(i))?,
                None => self.set(&at.index(i), new),
            }
        }
        Ok(())
    }

    /// [`Description::elementwise`] for an array that only added elements at the end (a
    /// `$push`): the old elements' bytes begin the new array's, so the old ones are only
    /// counted (not compared one by one) and the elements after them alone are read. `false`
    /// when the bytes do not show an append.
    fn appended(&mut self, ob: &[u8], nb: &[u8], at: &At<'_>) -> bool {
        // An array's bytes: its length, its elements, a NUL. The same bytes read as the same
        // elements, so the new array's elements past the old ones start where they end.
        let Some(kept) = ob.len().checked_sub(1).and_then(|end| ob.get(4..end)) else {
            return false;
        };
        if nb.len() <= ob.len() || !nb.get(4..).is_some_and(|n| n.starts_with(kept)) {
            return false;
        }
        let (Some(first), Some(end)) = (raw::count(ob, 0), raw::end_of(nb, 0)) else {
            return false;
        };
        let mut added = Vec::new();
        if raw::each_between(nb, 4 + kept.len(), end, |e| added.push(e)).is_none() {
            return false;
        }
        for (i, e) in added.iter().enumerate() {
            self.set(&at.index(first + i), Value::of(nb, e));
        }
        true
    }
}

/// Why a description could not be applied to a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot apply the update description at `{path}`: {reason}")]
pub struct ReplayError {
    pub path: String,
    pub reason: String,
}

/// Applies an `updateDescription` to the document before the change, giving the document
/// after it (see the module documentation for the order).
pub fn apply(doc: &mut Document, description: &Document) -> Result<(), ReplayError> {
    if let Ok(removed) = description.get_array("removedFields") {
        for path in removed {
            let path = path
                .as_str()
                .ok_or_else(|| fail("", "a removed field is not a string"))?;
            match split(path) {
                (None, last) => {
                    doc.remove(last);
                }
                (Some(parent), last) => {
                    if let Some(Bson::Document(d)) = walk(doc, parent, false, path)? {
                        d.remove(last);
                    }
                }
            }
        }
    }
    if let Ok(truncated) = description.get_array("truncatedArrays") {
        for entry in truncated {
            let entry = entry
                .as_document()
                .ok_or_else(|| fail("", "a truncated array is not a document"))?;
            let path = entry
                .get_str("field")
                .map_err(|_| fail("", "a truncated array has no field"))?;
            let size = entry
                .get("newSize")
                .and_then(crate::expr::as_i64)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| fail(path, "newSize is not a size"))?;
            match walk(doc, path, false, path)? {
                Some(Bson::Array(a)) => a.truncate(size),
                _ => return Err(fail(path, "not an array")),
            }
        }
    }
    if let Ok(updated) = description.get_document("updatedFields") {
        for (path, value) in updated {
            let (parent, last) = split(path);
            let Some(parent) = parent else {
                doc.insert(last, value.clone());
                continue;
            };
            match walk(doc, parent, true, path)? {
                Some(Bson::Document(d)) => {
                    d.insert(last, value.clone());
                }
                Some(Bson::Array(a)) => {
                    let i: usize = last.parse().map_err(|_| fail(path, "not an array index"))?;
                    match i.cmp(&a.len()) {
                        std::cmp::Ordering::Less => a[i] = value.clone(),
                        std::cmp::Ordering::Equal => a.push(value.clone()),
                        std::cmp::Ordering::Greater => {
                            return Err(fail(path, "an index past the array's end"));
                        }
                    }
                }
                _ => return Err(fail(path, "its parent is not a document or an array")),
            }
        }
    }
    Ok(())
}

fn fail(path: &str, reason: &str) -> ReplayError {
    ReplayError {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

/// `"a.b.c"` -> (`Some("a.b")`, `"c"`); `"a"` -> (`None`, `"a"`).
fn split(path: &str) -> (Option<&str>, &str) {
    match path.rsplit_once('.') {
        Some((parent, last)) => (Some(parent), last),
        None => (None, path),
    }
}

/// The value at the dotted `path`, creating missing sub-documents when `create` is set;
/// `None` when it is missing. `whole` is the path being applied, for errors.
fn walk<'d>(
    doc: &'d mut Document,
    path: &str,
    create: bool,
    whole: &str,
) -> Result<Option<&'d mut Bson>, ReplayError> {
    let mut parts = path.split('.');
    let first = parts.next().unwrap_or_default();
    if create && !doc.contains_key(first) {
        doc.insert(first, Document::new());
    }
    let mut current = doc.get_mut(first);
    for part in parts {
        current = match current {
            Some(Bson::Document(d)) => {
                if create && !d.contains_key(part) {
                    d.insert(part, Document::new());
                }
                d.get_mut(part)
            }
            Some(Bson::Array(a)) => {
                let i: usize = part
                    .parse()
                    .map_err(|_| fail(whole, "not an array index"))?;
                a.get_mut(i)
            }
            _ => None,
        };
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawBsonRef, doc};
    use proptest::prelude::*;

    fn raw(d: &Document) -> RawDocumentBuf {
        RawDocumentBuf::try_from(d).unwrap()
    }

    fn describe(old: &Document, new: &Document) -> Option<(Document, Document)> {
        let (description, ambiguous) = super::describe(&raw(old), &raw(new))?;
        let ambiguous = ambiguous.map_or_else(Document::new, |a| Document::try_from(a).unwrap());
        Some((Document::try_from(description).unwrap(), ambiguous))
    }

    /// A description written into a record's buffer is the element of what `describe` gives,
    /// after what the buffer held; where only a replacement describes the change, the buffer
    /// is left as it was.
    #[test]
    fn a_description_written_into_a_record_is_the_element_of_the_description() {
        let cases = [
            (
                doc! {"a": 1, "b": [1, 2], "c": {"d": 1}},
                doc! {"a": 2, "b": [1], "c": {"d": 1, "e": 2}},
            ),
            (doc! {"a": 1, "b": 2}, doc! {"a": 1}),
            (doc! {"x": {"0": 1}}, doc! {"x": {"0": 2}}),
            (doc! {"a": 1, "b": 2}, doc! {"b": 2, "a": 1}),
        ];
        for (old, new) in cases {
            let (old, new) = (raw(&old), raw(&new));
            let mut out = b"kept".to_vec();
            let written = describe_into(&old, &new, "updateDescription", &mut out);
            if let Some((description, ambiguous)) = super::describe(&old, &new) {
                let mut expected = b"kept".to_vec();
                raw::push_element(
                    &mut expected,
                    raw::DOCUMENT,
                    "updateDescription",
                    description.as_bytes(),
                );
                assert_eq!(out, expected);
                assert_eq!(written, Some(Described { ambiguous }));
            } else {
                assert_eq!(out, b"kept");
                assert_eq!(written, None);
            }
        }
    }

    /// A description's bytes are those the bson crate writes for the same description: its
    /// three fields in order, arrays named by position, `newSize` an Int32.
    #[test]
    fn a_description_is_encoded_as_bson_encodes_it() {
        let old = raw(&doc! {"a": 1, "b": [1, 2, 3], "c": {"d": 1}, "e": 5});
        let new = raw(&doc! {"a": 2, "b": [1], "c": {"d": 1, "f": 2}});
        let (description, _) = super::describe(&old, &new).unwrap();
        let expected = raw(&doc! {
            "updatedFields": {"a": 2, "c.f": 2},
            "removedFields": ["e"],
            "truncatedArrays": [{"field": "b", "newSize": 1_i32}],
        });
        assert_eq!(description.as_bytes(), expected.as_bytes());
    }

    /// Bytes it cannot read, met after a change was already written into the record, leave
    /// the record as it was.
    #[test]
    fn a_description_that_fails_midway_leaves_the_record_as_it_was() {
        // `z.q` changes too, but its name is not UTF-8: read after `a` was described.
        let damaged = |d: Document| {
            let mut bytes = raw(&d).into_bytes();
            let at = bytes.windows(3).position(|w| w == b"\x10q\x00").unwrap();
            bytes[at + 1] = 0xFF;
            RawDocumentBuf::from_bytes(bytes).unwrap()
        };
        let old = damaged(doc! {"a": 1, "z": {"q": 1}});
        let new = damaged(doc! {"a": 2, "z": {"q": 2}});
        let mut out = b"kept".to_vec();
        assert_eq!(
            describe_into(&old, &new, "updateDescription", &mut out),
            None
        );
        assert_eq!(out, b"kept");
    }

    /// Describes, replays, and compares as bytes (`Document`'s `==` ignores field order).
    fn round_trip(old: Document, new: Document) -> Option<Document> {
        let (d, _) = describe(&old, &new)?;
        let mut replayed = old.clone();
        apply(&mut replayed, &d).unwrap();
        assert_eq!(raw(&replayed), raw(&new), "replaying {d} gave {replayed}");
        Some(d)
    }

    #[test]
    fn set_unset_and_new_fields() {
        let d = round_trip(
            doc! {"_id": 1, "a": 1, "b": {"c": 2, "d": 3}, "gone": true},
            doc! {"_id": 1, "a": 2, "b": {"c": 2, "d": 4, "e": 5}, "new": "x"},
        )
        .unwrap();
        assert_eq!(
            d,
            doc! {
                "updatedFields": {"a": 2, "b.d": 4, "b.e": 5, "new": "x"},
                "removedFields": ["gone"],
                "truncatedArrays": [],
            }
        );
    }

    #[test]
    fn arrays_grow_shrink_and_change_inside() {
        let d = round_trip(
            doc! {"_id": 1, "a": [1, 2, 3], "b": [{"x": 1}, 2], "c": [1]},
            doc! {"_id": 1, "a": [1, 2], "b": [{"x": 2}, 2], "c": [1, 2]},
        )
        .unwrap();
        assert_eq!(
            d,
            doc! {
                "updatedFields": {"b.0.x": 2, "c.1": 2},
                "removedFields": [],
                "truncatedArrays": [{"field": "a", "newSize": 2}],
            }
        );
    }

    #[test]
    fn a_type_change_replaces_the_value() {
        let d = round_trip(doc! {"_id": 1, "a": 1}, doc! {"_id": 1, "a": 1.0}).unwrap();
        assert_eq!(d.get_document("updatedFields").unwrap(), &doc! {"a": 1.0});
    }

    #[test]
    fn reordered_fields_are_a_replacement_at_the_top() {
        assert_eq!(
            describe(
                &doc! {"_id": 1, "a": 1, "b": 2},
                &doc! {"_id": 1, "b": 2, "a": 1}
            ),
            None
        );
        assert!(describe(&doc! {"_id": 1, "a": 1}, &doc! {"_id": 1, "n": 0, "a": 1}).is_none());
        // Inside, the sub-document is set whole.
        let d = round_trip(
            doc! {"_id": 1, "s": {"a": 1, "b": 2}},
            doc! {"_id": 1, "s": {"b": 2, "a": 1}},
        )
        .unwrap();
        assert_eq!(
            d.get_document("updatedFields").unwrap(),
            &doc! {"s": {"b": 2, "a": 1}}
        );
    }

    #[test]
    fn dotted_names_are_replaced_whole() {
        let d = round_trip(
            doc! {"_id": 1, "s": {"a.b": 1}},
            doc! {"_id": 1, "s": {"a.b": 2}},
        )
        .unwrap();
        assert_eq!(
            d.get_document("updatedFields").unwrap(),
            &doc! {"s": {"a.b": 2}}
        );
        assert!(describe(&doc! {"a.b": 1}, &doc! {"a.b": 2}).is_none());
    }

    fn value() -> impl Strategy<Value = Bson> {
        let leaf = prop_oneof![
            any::<i32>().prop_map(Bson::Int32),
            "[a-z]{0,12}".prop_map(Bson::String),
            any::<bool>().prop_map(Bson::Boolean),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Bson::Array),
                inner.prop_map(|v| Bson::Document(doc! {"x": v})),
            ]
        })
    }

    proptest! {
        /// Law: a push onto an array (at the top, in a sub-document, or in an array's element)
        /// is described by the new elements alone, each at its position, and replays to the new
        /// document.
        #[test]
        fn a_push_is_described_by_its_new_elements(
            old in prop::collection::vec(value(), 0..60),
            pushed in prop::collection::vec(value(), 1..4),
            depth in 0..3usize,
        ) {
            let mut new = old.clone();
            new.extend(pushed.iter().cloned());
            let wrap = |items: Vec<Bson>| match depth {
                0 => doc! {"_id": 1, "a": items},
                1 => doc! {"_id": 1, "s": {"a": items}},
                _ => doc! {"_id": 1, "l": [{"a": items}]},
            };
            let path = ["a", "s.a", "l.0.a"][depth];
            let d = round_trip(wrap(old.clone()), wrap(new)).unwrap();
            let mut expected = Document::new();
            for (i, v) in pushed.into_iter().enumerate() {
                expected.insert(format!("{path}.{}", old.len() + i), v);
            }
            prop_assert_eq!(
                d,
                doc! {"updatedFields": expected, "removedFields": [], "truncatedArrays": []}
            );
        }
    }

    /// An array and what it becomes: its first elements kept, the rest replaced, more added
    /// or fewer.
    fn array_change() -> impl Strategy<Value = (Vec<Bson>, Vec<Bson>)> {
        (
            prop::collection::vec(value(), 0..12),
            0..14usize,
            prop::collection::vec(value(), 0..4),
        )
            .prop_map(|(old, keep, tail)| {
                let mut new: Vec<Bson> = old.iter().take(keep).cloned().collect();
                new.extend(tail);
                (old, new)
            })
    }

    proptest! {
        /// Law: whatever an array becomes, the description replays to the new document.
        #[test]
        fn any_change_of_an_array_replays((old, new) in array_change()) {
            let described = round_trip(doc! {"_id": 1, "a": old}, doc! {"_id": 1, "a": new});
            prop_assert!(described.is_some());
        }
    }

    /// A document and what it becomes: each field kept, changed or removed, new fields added
    /// at the end, and the whole possibly in reverse order. Names include a number.
    fn document_change() -> impl Strategy<Value = (Document, Document, bool)> {
        let names = ["a", "b", "1", "c"];
        (
            prop::collection::vec((value(), 0..3u8, value()), 4),
            prop::collection::vec(value(), 0..3),
            any::<bool>(),
        )
            .prop_map(move |(fields, added, reverse)| {
                let (mut old, mut new) =
                    (doc! {"_id": 1}, vec![("_id".to_owned(), Bson::Int32(1))]);
                for (name, (before, op, after)) in names.iter().zip(fields) {
                    old.insert(*name, before.clone());
                    match op {
                        0 => new.push((name.to_string(), before)),
                        1 => new.push((name.to_string(), after)),
                        _ => {}
                    }
                }
                for (i, v) in added.into_iter().enumerate() {
                    new.push((format!("n{i}"), v));
                }
                if reverse {
                    new.reverse();
                }
                let in_order = !reverse || new.len() < 2;
                (old, new.into_iter().collect(), in_order)
            })
    }

    proptest! {
        /// Laws: whatever a document becomes, a description replays to the new document; there
        /// is one exactly where its kept fields stay in order with new ones after them; it
        /// names only fields whose value changed; and a path through a field named by digits
        /// comes with its parts.
        #[test]
        fn any_change_of_a_document_replays((old, new, in_order) in document_change()) {
            let parts = describe(&old, &new).map(|(_, ambiguous)| ambiguous);
            let described = round_trip(old.clone(), new.clone());
            prop_assert_eq!(described.is_some(), in_order);
            let (Some(d), Some(ambiguous)) = (described, parts) else {
                return Ok(());
            };
            let updated = d.get_document("updatedFields").unwrap().keys().cloned();
            let removed = d.get_array("removedFields").unwrap().iter();
            let removed = removed.map(|p| p.as_str().unwrap().to_owned());
            let truncated = d.get_array("truncatedArrays").unwrap().iter();
            let truncated = truncated.map(|t| {
                t.as_document().unwrap().get_str("field").unwrap().to_owned()
            });
            let paths: Vec<String> = updated.chain(removed).chain(truncated).collect();
            for path in &paths {
                let top = path.split('.').next().unwrap();
                prop_assert!(old.get(top) != new.get(top), "{} is unchanged", top);
                let named_by_digits = path
                    .split('.')
                    .any(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
                // Only a field's digits are ambiguous; an array position alone is not.
                if ambiguous.contains_key(path) {
                    prop_assert!(named_by_digits, "{} has no part named by digits", path);
                    let spelled: Vec<String> = ambiguous
                        .get_array(path)
                        .unwrap()
                        .iter()
                        .map(|p| match p {
                            Bson::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect();
                    prop_assert_eq!(&spelled.join("."), path);
                }
            }
            for key in ambiguous.keys() {
                prop_assert!(paths.contains(key), "{} is not a described path", key);
            }
            if paths.iter().any(|p| p.split('.').next() == Some("1")) {
                prop_assert!(!ambiguous.is_empty(), "a path through field 1 has no parts");
            }
        }
    }

    /// A document and what it becomes with its names kept in place (values changed, nested
    /// documents changed inside), or, now and then, one name changed or moved; names include
    /// ones no dotted path can hold.
    fn kept_names() -> impl Strategy<Value = (Document, Document)> {
        let name = prop::sample::select(vec!["a", "b", "1", "c", "x", "$d", "e.f", ""]);
        (
            prop::collection::vec((name, value(), prop::option::of(value())), 0..6),
            0..8u8,
        )
            .prop_map(|(fields, twist)| {
                let (mut old, mut new) = (doc! {"_id": 1}, doc! {"_id": 1});
                for (name, before, after) in fields {
                    old.insert(name, before.clone());
                    // A sub-document changed inside keeps its own names.
                    let after = match (&before, after) {
                        (Bson::Document(d), Some(Bson::Int32(n))) => {
                            let mut d = d.clone();
                            d.insert("n", n);
                            Bson::Document(d)
                        }
                        (_, after) => after.unwrap_or(before),
                    };
                    new.insert(name, after);
                }
                match twist {
                    0 if new.len() > 1 => {
                        let last = new.keys().last().cloned().unwrap();
                        let value = new.remove(&last).unwrap();
                        new.insert("renamed", value);
                    }
                    1 if new.len() > 2 => {
                        let first = new.keys().nth(1).cloned().unwrap();
                        let value = new.remove(&first).unwrap();
                        new.insert(first, value);
                    }
                    _ => {}
                }
                (old, new)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Law: reading two documents in step, where it applies, describes what the walk over
        /// their listed fields describes (or fails where it fails); where it does not apply, it
        /// describes nothing.
        #[test]
        fn reading_in_step_describes_what_the_listed_walk_does((old, new) in kept_names()) {
            let (old, new) = (raw(&old), raw(&new));
            let root = At::root();
            let (mut fast_out, mut walk_out) = (Vec::new(), Vec::new());
            let mut fast = Description::new(&mut fast_out);
            let mut walk = Description::new(&mut walk_out);
            let listed = walk.listed(old.as_bytes(), new.as_bytes(), &root).ok();
            match fast.in_step(old.as_bytes(), new.as_bytes(), &root) {
                Ok(true) => {
                    prop_assert_eq!(listed, Some(true));
                    prop_assert_eq!(&fast.updated, &walk.updated);
                    prop_assert_eq!(&fast.removed, &walk.removed);
                    prop_assert_eq!(&fast.truncated, &walk.truncated);
                    prop_assert_eq!(&fast.ambiguous, &walk.ambiguous);
                }
                Ok(false) => {
                    prop_assert!(fast.updated.is_empty() && fast.removed.is_empty());
                    prop_assert!(fast.truncated.is_empty() && fast.ambiguous.is_none());
                }
                Err(Unreadable) => prop_assert_eq!(listed, None),
            }
        }
    }

    /// More fields than are read in step: the listed walk describes them.
    #[test]
    fn a_document_of_many_fields_is_described_by_the_listed_walk() {
        let many = |changed: i32| -> Document {
            (0..40)
                .map(|i| {
                    (
                        format!("f{i}"),
                        Bson::Int32(if i == 39 { changed } else { i }),
                    )
                })
                .collect()
        };
        let (old, new) = (raw(&many(0)), raw(&many(1)));
        let mut out = Vec::new();
        let mut fast = Description::new(&mut out);
        assert!(matches!(
            fast.in_step(old.as_bytes(), new.as_bytes(), &At::root()),
            Ok(false)
        ));
        assert_eq!(
            round_trip(many(0), many(1))
                .unwrap()
                .get_document("updatedFields")
                .unwrap(),
            &doc! {"f39": 1}
        );
    }

    /// Describes the array change `old` -> `new` under `a` by `appended` (`None` when it
    /// declines) and by `elementwise`.
    fn both_ways(old: &[Bson], new: &[Bson]) -> (Option<Vec<u8>>, Vec<u8>) {
        let wrap = |items: &[Bson]| raw(&doc! {"a": items.to_vec()});
        let (o, n) = (wrap(old), wrap(new));
        let (Some(Ok(RawBsonRef::Array(o))), Some(Ok(RawBsonRef::Array(n)))) =
            (o.get("a").transpose(), n.get("a").transpose())
        else {
            panic!("arrays");
        };
        let root = At::root();
        let at = root.field("a");
        let (mut fast_out, mut walk_out) = (Vec::new(), Vec::new());
        let mut fast = Description::new(&mut fast_out);
        let appended = fast.appended(o.as_bytes(), n.as_bytes(), &at);
        let mut walk = Description::new(&mut walk_out);
        assert!(walk.elementwise(o.as_bytes(), n.as_bytes(), &at).is_ok());
        (appended.then_some(fast_out), walk_out)
    }

    proptest! {
        /// Law: the append path is taken for every append, and only for appends, and there
        /// describes what the element-by-element walk describes.
        #[test]
        fn the_append_path_describes_what_the_element_walk_does((old, new) in array_change()) {
            let (fast, walk) = both_ways(&old, &new);
            // Kept elements are compared as bytes: `1` and `1.0` are not the same element.
            let bytes = |items: &[Bson]| raw(&doc! {"a": items.to_vec()});
            let appended = new.len() > old.len() && bytes(&new[..old.len()]) == bytes(&old);
            prop_assert_eq!(fast.is_some(), appended);
            if let Some(fast) = fast {
                prop_assert_eq!(fast, walk);
            }
        }
    }

    /// An element added under a name that is not its position is described at its position,
    /// as `bson` reads arrays.
    #[test]
    fn an_added_element_misnamed_is_described_at_its_position() {
        let old = raw(&doc! {"a": [1]});
        let mut new = raw(&doc! {"a": [1, 2]}).into_bytes();
        let at = new
            .windows(3)
            .position(|w| w == b"\x101\x00")
            .expect("the second element");
        new[at + 1] = b'7';
        let new = RawDocumentBuf::from_bytes(new).unwrap();
        let (d, _) = super::describe(&old, &new).unwrap();
        let d = Document::try_from(d).unwrap();
        assert_eq!(d.get_document("updatedFields").unwrap(), &doc! {"a.1": 2});
    }

    /// A name held twice (raw inserts can store one) replays to what a decoded document
    /// reads, the later value.
    #[test]
    fn a_name_held_twice_replays_as_a_decoded_document_reads_it() {
        let twice = |first: i32, second: i32| {
            let mut d = RawDocumentBuf::new();
            d.append(bson::cstr!("_id"), 1);
            d.append(bson::cstr!("a"), first);
            d.append(bson::cstr!("a"), second);
            d
        };
        let (old, new) = (twice(1, 2), twice(5, 2));
        let (d, _) = super::describe(&old, &new).unwrap();
        let mut replayed = Document::try_from(old.as_ref()).unwrap();
        apply(&mut replayed, &Document::try_from(d).unwrap()).unwrap();
        assert_eq!(replayed, Document::try_from(new.as_ref()).unwrap());
    }

    #[test]
    fn numeric_field_names_are_disambiguated() {
        let old = doc! {"_id": 1, "a": {"1": 1}, "b": [{"1": 1}], "c": [1]};
        let new = doc! {"_id": 1, "a": {"1": 2}, "b": [{"1": 2}], "c": [2]};
        let (_, ambiguous) = describe(&old, &new).unwrap();
        assert_eq!(
            ambiguous,
            doc! {"a.1": ["a", "1"], "b.0.1": ["b", 0, "1"]},
            "an array position alone is not ambiguous"
        );
    }
}
