//! Update operators applied to the stored bytes, without decoding the document.
//!
//! The patterns' common updates (S1c's bucket push: `$push` an item, `$inc` the count,
//! `$min`/`$max` the span; counters; a `$set` of one field) change a few values of a document
//! that may hold hundreds. Decoding it into a `bson::Document` and encoding it back costs in
//! proportion to the whole document; editing the bytes costs in proportion to what changed:
//! new values are spliced in and the lengths of the enclosing documents (and array) adjusted.
//!
//! Rule: this path gives the bytes the decoded path ([`super::apply`]) gives, or declines.
//! [`apply`] returns `None` for anything it does not handle exactly (a positional path, `_id`,
//! a top-level `$` name, a path through an array or a scalar, `$push` with `$position` or
//! `$sort`, `$addToSet`, `$pull`, `$pullAll`, `$bit`, `$rename`, an operation that fails, a
//! value nested near the depth limit, a result over the size limit, bytes it cannot read); the
//! decoded path then applies the update and reports any error. Values are computed by the same
//! functions in both paths ([`super::apply::scalar`], [`super::apply::sliced`]), and a property
//! test (`tests::in_place_equals_decoded`) holds the two paths to the same bytes.
//!
//! One difference is deliberate: the decoded path re-encodes the whole document, so bytes the
//! `bson` crate would write otherwise (regex options out of order, a field name twice, in a
//! document inserted as raw bytes) come out canonical; this path leaves the fields it does not
//! touch as they were stored, and declines when the path itself names a field held twice.
//!
//! A document built here skips the whole-document check (it is spliced from checked values,
//! its `_id` first and unchanged), and only the indexes its update can reach are recomputed
//! (`Update::may_change`): every other field keeps its stored bytes.
//!
//! Written by hand: the `bson` crate edits decoded documents only. Elements are found with
//! [`crate::raw`].

use bson::{Bson, Document, RawDocument, RawDocumentBuf};

use super::apply::{scalar, sliced};
use std::borrow::Cow;

use super::parse::{EncodedValue, EncodedValues, Op, Operators, Segment};
use crate::document::MAX_DOCUMENT_SIZE;
use crate::nesting::{self, MAX_STORED_DEPTH};
use crate::raw::{self, ARRAY, DOCUMENT, Element};

/// The update applied to `original`'s bytes, or `None` when this path declines it (see the
/// module documentation). The result may equal `original`.
pub(super) fn apply(
    ops: &Operators,
    original: &RawDocument,
    now: bson::DateTime,
) -> Option<RawDocumentBuf> {
    let mut bytes = original.as_bytes().to_vec();
    for (_, path, op) in &ops.ops {
        let names = path
            .segments
            .iter()
            .map(|s| match s {
                Segment::Field(name) if !name.contains('\0') => Ok(name.as_str()),
                _ => Err(Decline),
            })
            .collect::<Step<Vec<&str>>>()
            .ok()?;
        one(&mut bytes, &names, op, now).ok()?;
    }
    if bytes.len() > MAX_DOCUMENT_SIZE {
        return None;
    }
    RawDocumentBuf::from_bytes(bytes).ok()
}

/// Why this path declines an update: the decoded path takes it.
struct Decline;

type Step<T> = Result<T, Decline>;

trait OrDecline<T> {
    fn or_decline(self) -> Step<T>;
}

impl<T> OrDecline<T> for Option<T> {
    fn or_decline(self) -> Step<T> {
        self.ok_or(Decline)
    }
}

/// Applies one operation at the path `names` (fields only).
fn one(bytes: &mut Vec<u8>, names: &[&str], op: &Op, now: bson::DateTime) -> Step<()> {
    let &last = names.last().or_decline()?;
    let first = names[0];
    // A value at the end of a path of n fields sits n documents deep: near the limit, the
    // decoded path (and the writer's check) decides.
    if first == "_id" || first.starts_with('$') || names.len() + 2 > MAX_STORED_DEPTH {
        return Err(Decline);
    }
    let creates = match op {
        Op::Set(_)
        | Op::Inc(_)
        | Op::Mul(_)
        | Op::Min(_)
        | Op::Max(_)
        | Op::CurrentDate { .. }
        | Op::Push {
            position: None,
            sort: None,
            ..
        } => true,
        Op::Unset | Op::Pop { .. } => false,
        // Only an upsert's new document takes it, and this path updates stored ones.
        Op::SetOnInsert(_) => return Ok(()),
        _ => return Err(Decline),
    };
    let Some(containers) = containers(bytes, names, creates.then_some((op, now)))? else {
        return Ok(());
    };
    let parent = *containers.last().or_decline()?;
    let target = Target {
        found: find(bytes, parent, last)?,
        containers,
        name: last,
        level: names.len(),
    };
    match op {
        Op::Unset => match target.found {
            Some(e) => splice(bytes, &target.containers, e.start..e.end, &[]),
            None => Ok(()),
        },
        Op::Pop { first } => pop(bytes, &target, *first),
        Op::Push {
            values,
            slice,
            encoded,
            ..
        } => match target.found {
            None => create(bytes, &target, op, now),
            Some(e) if e.kind == ARRAY => {
                let pushed = encode_all(values, encoded, target.level + 1)?;
                push(bytes, target, e, &pushed, *slice)
            }
            Some(_) => Err(Decline),
        },
        _ => set(bytes, &target, op, now),
    }
}

/// The documents enclosing the field at `names`, outermost first: their lengths change with
/// it. `None` when one of them is missing: the operation is then done, after writing the rest
/// of the path as nested documents holding its new value when it `creates` one.
fn containers(
    bytes: &mut Vec<u8>,
    names: &[&str],
    creates: Option<(&Op, bson::DateTime)>,
) -> Step<Option<Vec<usize>>> {
    let (&last, parents) = names.split_last().or_decline()?;
    let mut containers = vec![0usize];
    for (depth, &name) in parents.iter().enumerate() {
        let parent = *containers.last().or_decline()?;
        match find(bytes, parent, name)? {
            Some(e) if e.kind == DOCUMENT => containers.push(e.value),
            // Through an array or a scalar: the decoded path handles (or refuses) it.
            Some(_) => return Err(Decline),
            None => {
                let Some((op, now)) = creates else {
                    return Ok(None);
                };
                let Some((kind, value)) = created(op, now, names.len())? else {
                    return Ok(None);
                };
                let mut inner = element(last, kind, &value);
                for &name in parents[depth + 1..].iter().rev() {
                    inner = element(name, DOCUMENT, &raw::document(&[&inner]));
                }
                let outer = element(name, DOCUMENT, &raw::document(&[&inner]));
                append(bytes, &containers, &outer)?;
                return Ok(None);
            }
        }
    }
    Ok(Some(containers))
}

/// The field an operation writes: the documents enclosing it (see [`containers`]), its name,
/// its level (1 at the top) and its element when it is present.
struct Target<'n> {
    containers: Vec<usize>,
    name: &'n str,
    level: usize,
    found: Option<Element>,
}

/// Writes the field `op` creates where it is missing.
fn create(bytes: &mut Vec<u8>, target: &Target<'_>, op: &Op, now: bson::DateTime) -> Step<()> {
    let Some((kind, value)) = created(op, now, target.level)? else {
        return Ok(());
    };
    append(
        bytes,
        &target.containers,
        &element(target.name, kind, &value),
    )
}

/// `$pop`: the array without its first or last element.
fn pop(bytes: &mut Vec<u8>, target: &Target<'_>, first: bool) -> Step<()> {
    match target.found {
        None => Ok(()),
        Some(e) if e.kind == ARRAY => {
            let items = elements(bytes, e.value)?;
            if items.is_empty() {
                return Ok(());
            }
            let kept = if first {
                &items[1..]
            } else {
                &items[..items.len() - 1]
            };
            let rebuilt = array(kept.iter().map(|i| (i.kind, &bytes[i.value..i.end])));
            splice(bytes, &target.containers, e.value..e.end, &rebuilt)
        }
        Some(_) => Err(Decline),
    }
}

/// `$push` onto the array `e`: the new elements appended, or with `$slice` the array rebuilt
/// from the elements it keeps.
fn push(
    bytes: &mut Vec<u8>,
    target: Target<'_>,
    e: Element,
    pushed: &[EncodedValue],
    slice: Option<i64>,
) -> Step<()> {
    match slice {
        None => {
            let held = raw::count(bytes, e.value).or_decline()?;
            let mut tail = Vec::new();
            for (i, (kind, value)) in pushed.iter().enumerate() {
                tail.extend(element(&(held + i).to_string(), *kind, value));
            }
            let at = end_of(bytes, e.value)?;
            let mut enclosing = target.containers;
            enclosing.push(e.value);
            splice(bytes, &enclosing, at..at, &tail)
        }
        Some(n) => {
            let all: Vec<(u8, &[u8])> = elements(bytes, e.value)?
                .iter()
                .map(|i| (i.kind, &bytes[i.value..i.end]))
                .chain(pushed.iter().map(|(k, v)| (*k, v.as_slice())))
                .collect();
            let kept = sliced(all.len(), n);
            let rebuilt = array(all[kept].iter().copied());
            splice(bytes, &target.containers, e.value..e.end, &rebuilt)
        }
    }
}

/// An operator computing one value from the current one (`$set`, `$inc`, `$min`, ...), by
/// the decoded path's [`scalar`], written over the field or appended.
fn set(bytes: &mut Vec<u8>, target: &Target<'_>, op: &Op, now: bson::DateTime) -> Step<()> {
    let current = target.found.map(|e| decode(bytes, e)).transpose()?;
    let Some(value) = scalar(op, current.as_ref(), now).map_err(|_| Decline)? else {
        return Ok(());
    };
    let (kind, value) = encode(&value, target.level)?;
    match target.found {
        Some(e) => {
            splice(bytes, &target.containers, e.value..e.end, &value)?;
            bytes[e.start] = kind;
            Ok(())
        }
        None => append(
            bytes,
            &target.containers,
            &element(target.name, kind, &value),
        ),
    }
}

/// The value an operation writes where nothing was, encoded for a field at `level` (the
/// path's length); `None` when it writes nothing there.
fn created(op: &Op, now: bson::DateTime, level: usize) -> Step<Option<(u8, Vec<u8>)>> {
    match op {
        Op::Push {
            values,
            slice,
            encoded,
            ..
        } => {
            let pushed = encode_all(values, encoded, level + 1)?;
            let kept = slice.map_or(0..pushed.len(), |n| sliced(pushed.len(), n));
            let items = pushed[kept].iter().map(|(k, v)| (*k, v.as_slice()));
            Ok(Some((ARRAY, array(items))))
        }
        _ => match scalar(op, None, now).map_err(|_| Decline)? {
            Some(value) => encode(&value, level).map(Some),
            None => Ok(None),
        },
    }
}

/// The element named `name`; declined when the document holds the name twice (the decoded
/// path keeps one of them, so no edit of the bytes could give its result).
fn find(bytes: &[u8], container: usize, name: &str) -> Step<Option<Element>> {
    let (mut found, mut twice) = (None, false);
    raw::each(bytes, container, |e| {
        if e.name(bytes) == name.as_bytes() {
            twice |= found.is_some();
            found = found.or(Some(e));
        }
    })
    .or_decline()?;
    if twice {
        return Err(Decline);
    }
    Ok(found)
}

/// `values` encoded for elements at `level`, by [`encode`]: the first document an update
/// reaches encodes them and keeps them in `cache` (with the level, which the operation's path
/// fixes), and the next documents reuse them.
fn encode_all<'o>(
    values: &[Bson],
    cache: &'o EncodedValues,
    level: usize,
) -> Step<Cow<'o, [EncodedValue]>> {
    let fresh = || {
        values
            .iter()
            .map(|v| encode(v, level))
            .collect::<Step<Vec<_>>>()
            .ok()
    };
    let (at, kept) = cache.0.get_or_init(|| (level, fresh()));
    if *at != level {
        return fresh().map(Cow::Owned).or_decline();
    }
    kept.as_deref().map(Cow::Borrowed).or_decline()
}

fn elements(bytes: &[u8], container: usize) -> Step<Vec<Element>> {
    raw::elements(bytes, container).or_decline()
}

fn end_of(bytes: &[u8], container: usize) -> Step<usize> {
    raw::end_of(bytes, container).or_decline()
}

/// The value of `e`, decoded.
fn decode(bytes: &[u8], e: Element) -> Step<Bson> {
    raw::with_value(bytes, &e, |v| Bson::try_from(v))
        .or_decline()?
        .map_err(|_| Decline)
}

/// `value`'s type and bytes, for a field at `level` (1 at the top); declined when a
/// document, an array or a code's scope there could pass the depth limit (the decoded path
/// then decides).
fn encode(value: &Bson, level: usize) -> Step<(u8, Vec<u8>)> {
    // Levels are counted on the value, as `check_raw` counts them on bytes: every container,
    // a code's scope included (a spliced result is not checked again).
    if matches!(
        value,
        Bson::Document(_) | Bson::Array(_) | Bson::JavaScriptCodeWithScope(_)
    ) {
        let room = MAX_STORED_DEPTH.checked_sub(level + 2).or_decline()?;
        if nesting::value_exceeds(value, room) {
            return Err(Decline);
        }
    }
    // The fixed-width values an `$inc`, `$min` or `$max` (a counter, a date) writes, by
    // their layout; the rest through the `bson` crate's encoder.
    match value {
        Bson::Int32(n) => return Ok((raw::INT32, n.to_le_bytes().to_vec())),
        Bson::Int64(n) => return Ok((raw::INT64, n.to_le_bytes().to_vec())),
        Bson::Double(x) => return Ok((raw::DOUBLE, x.to_le_bytes().to_vec())),
        Bson::DateTime(t) => {
            return Ok((raw::DATE_TIME, t.timestamp_millis().to_le_bytes().to_vec()));
        }
        Bson::Boolean(b) => return Ok((raw::BOOLEAN, vec![u8::from(*b)])),
        _ => {}
    }
    // A document (a pushed message, say) is encoded as it is, without a copy.
    if let Bson::Document(d) = value {
        let raw = RawDocumentBuf::try_from(d).map_err(|_| Decline)?;
        return Ok((DOCUMENT, raw.into_bytes()));
    }
    let mut one = Document::new();
    one.insert("", value.clone());
    let raw = RawDocumentBuf::try_from(&one).map_err(|_| Decline)?;
    let b = raw.as_bytes();
    let kind = *b.get(4).or_decline()?;
    let bytes = b.get(6..b.len().saturating_sub(1)).or_decline()?;
    Ok((kind, bytes.to_vec()))
}

/// An element's bytes: type, name, NUL, value.
fn element(name: &str, kind: u8, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + value.len() + 2);
    out.push(kind);
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    out.extend_from_slice(value);
    out
}

/// An array of `items` (type and value bytes), numbered from 0.
fn array<'a>(items: impl Iterator<Item = (u8, &'a [u8])>) -> Vec<u8> {
    let mut elements = Vec::new();
    for (i, (kind, value)) in items.enumerate() {
        elements.extend(element(&i.to_string(), kind, value));
    }
    raw::document(&[&elements])
}

/// Appends an element at the end of the innermost of `containers`.
fn append(bytes: &mut Vec<u8>, containers: &[usize], element: &[u8]) -> Step<()> {
    let at = end_of(bytes, *containers.last().or_decline()?)?;
    splice(bytes, containers, at..at, element)
}

/// Replaces `range` with `new` and adjusts the length of each of `containers`, which all
/// enclose the range (so their length fields lie before it and do not move).
fn splice(
    bytes: &mut Vec<u8>,
    containers: &[usize],
    range: std::ops::Range<usize>,
    new: &[u8],
) -> Step<()> {
    let grows = new.len() as i64 - range.len() as i64;
    let length = |bytes: &[u8], c: usize| -> Step<i32> {
        let len = i64::try_from(raw::length_at(bytes, c).or_decline()?).map_err(|_| Decline)?;
        i32::try_from(len + grows).map_err(|_| Decline)
    };
    // Every new length is checked before anything changes.
    for &c in containers {
        length(bytes, c)?;
    }
    let (start, end) = (range.start, range.end);
    if bytes.len() < end || start > end {
        return Err(Decline);
    }
    if new.len() > range.len() {
        let old_len = bytes.len();
        bytes.resize(old_len + new.len() - range.len(), 0);
        bytes.copy_within(end..old_len, start + new.len());
    } else if new.len() < range.len() {
        bytes.copy_within(end.., start + new.len());
        bytes.truncate(bytes.len() - (range.len() - new.len()));
    }
    bytes[start..start + new.len()].copy_from_slice(new);
    // The length fields lie before the range: they still hold the old lengths.
    if grows != 0 {
        for &c in containers {
            let len = length(bytes, c)?;
            bytes[c..c + 4].copy_from_slice(&len.to_le_bytes());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bson::{Bson, DateTime, Document, RawDocumentBuf, doc};
    use proptest::prelude::*;

    use super::super::parse::Update;
    use super::super::write::apply_decoded;
    use crate::error::UpdateError;
    use crate::nesting::{self, MAX_STORED_DEPTH};
    use crate::query::{Query, QueryOptions};

    fn now() -> DateTime {
        DateTime::from_millis(1_700_000_000_123)
    }

    /// Both paths on one document; `(in place, decoded)`.
    fn both(
        original: &Document,
        update: &Document,
    ) -> Option<(Option<RawDocumentBuf>, Result<RawDocumentBuf, UpdateError>)> {
        let Ok(Update::Operators(ops)) = Update::parse(update, &[]) else {
            return None;
        };
        let original = RawDocumentBuf::try_from(original).expect("encodes");
        let query = Query::parse(&Document::new(), QueryOptions::default()).expect("parses");
        let in_place = super::apply(&ops, &original, now());
        let decoded = apply_decoded(&ops, &original, &query, now());
        Some((in_place, decoded))
    }

    /// The in-place result, checked against the decoded one.
    fn in_place(original: &Document, update: &Document) -> Option<Document> {
        let (in_place, decoded) = both(original, update).expect("a valid update");
        let new = in_place?;
        assert_eq!(Ok(&new), decoded.as_ref(), "{original} with {update}");
        Some(Document::try_from(new.as_ref()).expect("decodes"))
    }

    #[test]
    fn a_bucket_push_is_applied_in_place() {
        let bucket = doc! {
            "_id": 1, "owner": "u1", "count": 2,
            "control": {"earliest": DateTime::from_millis(5), "latest": DateTime::from_millis(9)},
            "items": [{"text": "a"}, {"text": "b"}],
        };
        let update = doc! {
            "$push": {"items": {"text": "c"}},
            "$inc": {"count": 1},
            "$min": {"control.earliest": DateTime::from_millis(12)},
            "$max": {"control.latest": DateTime::from_millis(12)},
        };
        let new = in_place(&bucket, &update).expect("taken in place");
        assert_eq!(new.get_i32("count").ok(), Some(3));
        assert_eq!(new.get_array("items").map(Vec::len).ok(), Some(3));
        assert_eq!(
            new.get_document("control")
                .and_then(|c| c.get_datetime("latest"))
                .ok(),
            Some(&DateTime::from_millis(12))
        );
    }

    #[test]
    fn missing_paths_are_created_as_the_decoded_path_creates_them() {
        let original = doc! {"_id": 1, "a": {"x": 1}};
        for update in [
            doc! {"$set": {"a.b.c": 5, "z": "new"}},
            doc! {"$inc": {"n.m": 2}},
            doc! {"$push": {"a.list": {"$each": [1, 2, 3], "$slice": -2}}},
            doc! {"$currentDate": {"when": {"$type": "timestamp"}}},
            doc! {"$mul": {"a.y": 3_i64}},
        ] {
            assert!(in_place(&original, &update).is_some(), "{update}");
        }
    }

    #[test]
    fn pops_slices_and_unsets_renumber_and_shrink() {
        let original = doc! {"_id": 1, "a": [1, 2, 3, 4], "b": {"c": 1, "d": 2}};
        for update in [
            doc! {"$pop": {"a": -1}},
            doc! {"$pop": {"a": 1}},
            doc! {"$push": {"a": {"$each": [5], "$slice": -3}}},
            doc! {"$push": {"a": {"$each": [], "$slice": 0}}},
            doc! {"$unset": {"b.c": ""}},
            doc! {"$unset": {"zz": "", "b.zz": ""}},
            doc! {"$set": {"b.d": "a longer value than before"}},
        ] {
            assert!(in_place(&original, &update).is_some(), "{update}");
        }
    }

    #[test]
    fn what_it_cannot_do_exactly_is_declined() {
        let original = doc! {"_id": 1, "a": [{"b": 1}], "s": "text", "n": 1};
        for update in [
            doc! {"$set": {"a.0.b": 2}},
            doc! {"$set": {"a.$[].b": 2}},
            doc! {"$set": {"s.x": 1}},
            doc! {"$inc": {"s": 1}},
            doc! {"$push": {"s": 1}},
            doc! {"$push": {"a": {"$each": [1], "$position": 0}}},
            doc! {"$addToSet": {"a": 1}},
            doc! {"$rename": {"n": "m"}},
            doc! {"$set": {"_id": 1}},
            doc! {"$set": {"$top": 1}},
            doc! {"$inc": {"n": i64::MAX}, "$set": {"z": 1}},
        ] {
            let (taken, _) = both(&original, &update).expect("a valid update");
            assert!(taken.is_none(), "{update} was taken in place");
        }
    }

    #[test]
    fn paths_near_the_depth_limit_are_left_to_the_decoded_path() {
        let deep = vec!["a"; 99].join(".");
        let (taken, decoded) = both(&doc! {"_id": 1}, &doc! {"$set": {deep: 1}}).expect("valid");
        assert!(taken.is_none());
        assert!(
            decoded.is_ok(),
            "the depth limit is the writer's to enforce"
        );
    }

    /// A document `depth` levels deep.
    fn nested(depth: usize) -> Document {
        (1..depth).fold(doc! {"x": 1}, |inner, _| doc! {"x": inner})
    }

    #[test]
    fn values_near_the_depth_limit_are_left_to_the_decoded_path() {
        let original = doc! {"_id": 1, "arr": [1], "s": {"t": 1}};
        for depth in 1..=MAX_STORED_DEPTH {
            for update in [
                doc! {"$set": {"a": nested(depth)}},
                doc! {"$set": {"s.u": nested(depth)}},
                doc! {"$push": {"arr": nested(depth)}},
                doc! {"$set": {"code": Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
                    code: "f()".into(),
                    scope: nested(depth),
                })}},
            ] {
                let (taken, decoded) = both(&original, &update).expect("a valid update");
                if let Some(new) = taken {
                    assert_eq!(Ok(&new), decoded.as_ref(), "depth {depth}: {update}");
                    assert!(
                        nesting::check_raw(&new, MAX_STORED_DEPTH).is_ok(),
                        "depth {depth}: {update} was taken in place past the limit"
                    );
                } else {
                    assert!(depth > 90, "depth {depth}: {update} was declined");
                }
            }
        }
    }

    #[test]
    fn a_field_named_twice_on_the_path_is_declined() {
        let mut original = RawDocumentBuf::new();
        original.append(bson::cstr!("_id"), 1);
        original.append(bson::cstr!("a"), 1);
        original.append(bson::cstr!("a"), 2);
        let Ok(Update::Operators(ops)) = Update::parse(&doc! {"$inc": {"a": 1}}, &[]) else {
            panic!("a valid update");
        };
        assert!(super::apply(&ops, &original, now()).is_none());
        // A field named twice elsewhere is left as stored.
        let Ok(Update::Operators(ops)) = Update::parse(&doc! {"$set": {"b": 1}}, &[]) else {
            panic!("a valid update");
        };
        let new = super::apply(&ops, &original, now()).expect("taken in place");
        let names: Vec<String> = new
            .iter()
            .map(|e| e.expect("readable").0.as_str().to_owned())
            .collect();
        assert_eq!(names, ["_id", "a", "a", "b"]);
    }

    #[test]
    fn a_result_over_the_size_limit_is_left_to_the_decoded_path() {
        let big = "x".repeat(9 * 1024 * 1024);
        let original = doc! {"_id": 1, "a": big.clone()};
        let (taken, decoded) = both(&original, &doc! {"$set": {"b": big}}).expect("valid");
        assert!(taken.is_none());
        assert!(decoded.is_ok(), "the size limit is the writer's to enforce");
    }

    fn name() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["a", "b", "c", "n", "0", "1"]).prop_map(String::from)
    }

    fn scalar() -> impl Strategy<Value = Bson> {
        prop_oneof![
            any::<i32>().prop_map(Bson::Int32),
            prop_oneof![
                any::<i64>(),
                i64::from(i32::MAX) - 2..i64::from(i32::MAX) + 2,
            ]
            .prop_map(Bson::Int64),
            (-1e6f64..1e6).prop_map(Bson::Double),
            Just(Bson::Double(f64::NAN)),
            "[a-z]{0,5}".prop_map(Bson::String),
            any::<bool>().prop_map(Bson::Boolean),
            Just(Bson::Null),
            (0i64..4_000_000_000_000).prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms))),
        ]
    }

    fn value() -> impl Strategy<Value = Bson> {
        scalar().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
                prop::collection::vec((name(), inner), 0..4)
                    .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
            ]
        })
    }

    fn document() -> impl Strategy<Value = Document> {
        prop::collection::vec((name(), value()), 0..6).prop_map(|fields| {
            let mut d = doc! {"_id": 7};
            d.extend(fields);
            d
        })
    }

    fn path() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "a", "b", "c", "n", "a.b", "a.c", "a.b.c", "b.a", "c.0", "0", "a.0", "z", "z.y",
        ])
        .prop_map(String::from)
    }

    fn number() -> impl Strategy<Value = Bson> {
        prop_oneof![
            (-5i32..5).prop_map(Bson::Int32),
            prop_oneof![-5i64..5, Just(i64::MAX)].prop_map(Bson::Int64),
            (-5f64..5.0).prop_map(Bson::Double),
            Just(Bson::String("x".into())),
        ]
    }

    fn operation() -> impl Strategy<Value = (&'static str, String, Bson)> {
        let push = prop_oneof![
            value(),
            (
                prop::collection::vec(value(), 0..3),
                prop::option::of(-3i32..3)
            )
                .prop_map(|(each, slice)| {
                    let mut d = doc! {"$each": each};
                    if let Some(n) = slice {
                        d.insert("$slice", n);
                    }
                    Bson::Document(d)
                }),
        ];
        prop_oneof![
            (path(), value()).prop_map(|(p, v)| ("$set", p, v)),
            (path(), number()).prop_map(|(p, v)| ("$inc", p, v)),
            (path(), number()).prop_map(|(p, v)| ("$mul", p, v)),
            (path(), value()).prop_map(|(p, v)| ("$min", p, v)),
            (path(), value()).prop_map(|(p, v)| ("$max", p, v)),
            path().prop_map(|p| ("$unset", p, Bson::String(String::new()))),
            (path(), push).prop_map(|(p, v)| ("$push", p, v)),
            (path(), prop_oneof![Just(1), Just(-1)]).prop_map(|(p, v)| ("$pop", p, Bson::Int32(v))),
            path().prop_map(|p| ("$currentDate", p, Bson::Boolean(true))),
            (path(), value()).prop_map(|(p, v)| ("$setOnInsert", p, v)),
        ]
    }

    /// The update document of generated operations, grouped by operator.
    fn update_of(operations: Vec<(&str, String, Bson)>) -> Document {
        let mut update = Document::new();
        for (operator, path, operand) in operations {
            if !update.contains_key(operator) {
                update.insert(operator, Document::new());
            }
            if let Ok(fields) = update.get_document_mut(operator) {
                fields.insert(path, operand);
            }
        }
        update
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Law: wherever the in-place path takes an update, its bytes are the decoded path's.
        #[test]
        fn in_place_equals_decoded(
            original in document(),
            operations in prop::collection::vec(operation(), 1..4),
        ) {
            let update = update_of(operations);
            if let Some((Some(taken), decoded)) = both(&original, &update) {
                prop_assert_eq!(Ok(taken), decoded, "{} with {}", original, update);
            }
        }

        /// Law: an update parsed once and applied to one document after another (its encoded
        /// values kept from the first) gives each the bytes a fresh parse gives it.
        #[test]
        fn a_parsed_update_reused_gives_what_a_fresh_parse_gives(
            documents in prop::collection::vec(document(), 2..5),
            operations in prop::collection::vec(operation(), 1..4),
        ) {
            let update = update_of(operations);
            let Ok(Update::Operators(reused)) = Update::parse(&update, &[]) else {
                return Ok(());
            };
            for document in &documents {
                let Ok(Update::Operators(fresh)) = Update::parse(&update, &[]) else {
                    unreachable!("the same update parsed before");
                };
                let original = RawDocumentBuf::try_from(document).expect("encodes");
                prop_assert_eq!(
                    super::apply(&reused, &original, now()),
                    super::apply(&fresh, &original, now()),
                    "{} with {}", document, update
                );
            }
        }
    }
}
