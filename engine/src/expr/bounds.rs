//! Bounds on the values expressions compute. Stored and received documents are held to
//! MongoDB's limits at the door (`nesting`); a value an expression builds is held here, while it
//! is built, so that no expression nests a value deep enough to overflow a stack that walks it
//! (a clone, a drop, a comparison, an encoding) or grows one past memory:
//!
//! - depth: [`MAX_DEPTH`] levels, counted as `nesting` counts them (MongoDB's default for what a
//!   command and the values it computes may nest); past it, `Overflow` (15);
//! - strings: [`MAX_STRING_BYTES`], the most a BSON document, and so any string in one, may
//!   hold; past it, `BSONObjectTooLarge` (10334);
//! - arrays and documents: [`MAX_CONTAINER_BYTES`] of memory, counted as this engine holds a
//!   value (every value a `Bson` of its own, plus what its strings, binaries and field names
//!   hold), so that the bound is the memory a value really takes; past it,
//!   `ExceededMemoryLimit` (146). A `$range` of about 2.3 million numbers fits.
//!
//! - what one evaluation holds at once: [`MAX_HELD_BYTES`], counted over the values held while
//!   the evaluation goes on (the evaluated arguments of every call under way, `$let`'s
//!   variables, the inputs `$map`, `$filter`, `$reduce`, `$zip` and `$sortArray` iterate,
//!   `$reduce`'s value so far, and every container being built); past it,
//!   `ExceededMemoryLimit` (146). Without it, each of a hundred arguments could hold a container
//!   just under the bound before the call refused the sum.
//!
//! Every builder of a container (`[...]`, `{...}`, `$map`, `$concatArrays`, `$setUnion`,
//! `$zip`, `$range`, `$objectToArray`, `$arrayToObject`, `$mergeObjects`, `$setField`) adds its
//! elements through a [`Built`], which measures each element once, as it joins, and refuses the
//! element that would pass a bound; string builders check their length before they allocate.
//! What an evaluation holds is counted per thread (an evaluation runs on one) by [`Held`]
//! guards, each giving back what it counted when it is dropped.
//! Measuring walks a value with an explicit stack, never by recursion.

use bson::Bson;

use super::{ExprError, error};
use crate::code::ErrorCode;

/// The deepest a computed value may nest: MongoDB's `BSONDepth::kDefaultMaxAllowableDepth`.
pub(crate) const MAX_DEPTH: usize = crate::nesting::MAX_INPUT_DEPTH;

/// The longest a computed string may be: 16 MiB, MongoDB's largest BSON document.
pub(crate) const MAX_STRING_BYTES: usize = 16 * 1024 * 1024;

/// The most memory an array or document an expression builds may take: 256 MiB, four times
/// MongoDB's limit for one `$range` (`internalQueryMaxRangeBytes`, 64 MiB), since a value here
/// takes about seven times the 16 bytes a MongoDB `Value` takes.
pub(crate) const MAX_CONTAINER_BYTES: usize = 256 * 1024 * 1024;

/// The most the values one evaluation holds at once may take: 1 GiB, four containers at their
/// bound. A value is counted once per holder: the arguments a call holds, and the container it
/// builds from them, both count.
pub(crate) const MAX_HELD_BYTES: usize = 4 * MAX_CONTAINER_BYTES;

thread_local! {
    /// What the evaluation running on this thread holds now (see [`Held`]).
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Values an evaluation step holds while the evaluation goes on, counted in what its thread
/// holds and given back when the guard is dropped.
#[derive(Debug)]
pub(crate) struct Held {
    op: &'static str,
    bytes: usize,
}

impl Held {
    pub(crate) fn new(op: &'static str) -> Held {
        Held { op, bytes: 0 }
    }

    /// Counts `value` as held; refuses it when the thread would hold more than
    /// [`MAX_HELD_BYTES`]. A number or another fixed-size value is not counted: only values
    /// that hold memory of their own (strings, binaries, arrays, documents) can add up.
    pub(crate) fn hold(&mut self, value: &Bson) -> Result<(), ExprError> {
        if !matches!(
            value,
            Bson::String(_) | Bson::Binary(_) | Bson::Array(_) | Bson::Document(_)
        ) {
            return Ok(());
        }
        let left = MAX_HELD_BYTES.saturating_sub(HELD.get());
        let measure =
            measure_within(value, usize::MAX, left).map_err(|_| holds_too_much(self.op))?;
        self.charge(measure.bytes)
    }

    /// Counts the elements of an array being iterated as held, each as a value of its own.
    pub(crate) fn hold_all(&mut self, items: &[Bson]) -> Result<(), ExprError> {
        for item in items {
            let left = MAX_HELD_BYTES.saturating_sub(HELD.get());
            let measure =
                measure_within(item, usize::MAX, left).map_err(|_| holds_too_much(self.op))?;
            self.charge(measure.bytes)?;
        }
        Ok(())
    }

    /// Counts `bytes` more as held.
    fn charge(&mut self, bytes: usize) -> Result<(), ExprError> {
        let held = HELD.get().saturating_add(bytes);
        if held > MAX_HELD_BYTES {
            return Err(holds_too_much(self.op));
        }
        HELD.set(held);
        self.bytes += bytes;
        Ok(())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.set(HELD.get().saturating_sub(self.bytes));
    }
}

/// What one value takes whatever it holds.
const VALUE_BYTES: usize = std::mem::size_of::<Bson>();

/// What a document's field takes besides its value: the name's bytes are added to this (the
/// name's own header, its hash and its slot in the document's index).
const FIELD_BYTES: usize = std::mem::size_of::<String>() + 16;

/// What a value measures in memory (bytes) and its nesting (0 for a scalar, 1 for a container
/// of scalars, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measure {
    pub(crate) bytes: usize,
    pub(crate) depth: usize,
}

/// Why a measure stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exceeded {
    Depth,
    Bytes,
}

/// Measures `value`, stopping as soon as its depth passes `max_depth` or its bytes
/// `max_bytes`: a value past a bound costs no more than the bound to measure.
fn measure_within(value: &Bson, max_depth: usize, max_bytes: usize) -> Result<Measure, Exceeded> {
    // Each entry is a container being walked: its remaining elements and its depth.
    enum Open<'v> {
        Array(std::iter::Enumerate<std::slice::Iter<'v, Bson>>),
        Document(bson::document::Iter<'v>),
    }
    let mut bytes = 0usize;
    let mut deepest = 0usize;
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            bytes += VALUE_BYTES + heap_bytes(value);
            match value {
                Bson::Array(items) => stack.push(Open::Array(items.iter().enumerate())),
                Bson::Document(doc) => stack.push(Open::Document(doc.iter())),
                _ => {}
            }
            deepest = deepest.max(stack.len());
            if deepest > max_depth {
                return Err(Exceeded::Depth);
            }
            if bytes > max_bytes {
                return Err(Exceeded::Bytes);
            }
        }
        let Some(top) = stack.last_mut() else { break };
        match top {
            Open::Array(items) => match items.next() {
                Some((_, item)) => next = Some(item),
                None => {
                    stack.pop();
                }
            },
            Open::Document(fields) => match fields.next() {
                Some((name, item)) => {
                    bytes += FIELD_BYTES + name.len();
                    next = Some(item);
                }
                None => {
                    stack.pop();
                }
            },
        }
    }
    Ok(Measure {
        bytes,
        depth: deepest,
    })
}

/// What a value holds outside itself, its elements aside: a string's or a binary's bytes.
fn heap_bytes(value: &Bson) -> usize {
    match value {
        Bson::String(s) | Bson::JavaScriptCode(s) | Bson::Symbol(s) => s.len(),
        Bson::Binary(b) => b.bytes.len(),
        Bson::RegularExpression(r) => r.pattern.len() + r.options.len(),
        Bson::JavaScriptCodeWithScope(c) => c.code.len() + c.scope.len() * FIELD_BYTES,
        _ => 0,
    }
}

/// An array or document being built by `op`, element by element, within the bounds.
#[derive(Debug)]
pub(crate) struct Built {
    op: &'static str,
    bytes: usize,
    depth: usize,
    /// The elements joined so far, as the evaluation holds them.
    held: Held,
}

impl Built {
    pub(crate) fn new(op: &'static str) -> Built {
        Built {
            op,
            bytes: VALUE_BYTES,
            depth: 1,
            held: Held::new(op),
        }
    }

    /// Counts `value` as the next element (named `name`, or at the next array position);
    /// refuses it when the container would pass a bound.
    pub(crate) fn add(&mut self, name: Option<&str>, value: &Bson) -> Result<(), ExprError> {
        let left = MAX_CONTAINER_BYTES.saturating_sub(self.bytes);
        let measure = measure_within(value, MAX_DEPTH - 1, left).map_err(|e| match e {
            Exceeded::Depth => too_deep(self.op),
            Exceeded::Bytes => too_large(self.op),
        })?;
        let field = name.map_or(0, |name| FIELD_BYTES + name.len());
        self.bytes += field + measure.bytes;
        self.depth = self.depth.max(1 + measure.depth);
        if self.bytes > MAX_CONTAINER_BYTES {
            return Err(too_large(self.op));
        }
        self.held.charge(field + measure.bytes)
    }

    /// Counts every element of `items`, at the next positions.
    pub(crate) fn add_all<'v>(
        &mut self,
        items: impl IntoIterator<Item = &'v Bson>,
    ) -> Result<(), ExprError> {
        items.into_iter().try_for_each(|item| self.add(None, item))
    }
}

/// Checks a whole value `op` computed (a container it built some other way).
pub(crate) fn check(op: &'static str, value: &Bson) -> Result<(), ExprError> {
    match value {
        Bson::String(s) => check_string_len(op, s.len()),
        Bson::Array(_) | Bson::Document(_) => {
            measure_within(value, MAX_DEPTH, MAX_CONTAINER_BYTES).map_err(|e| match e {
                Exceeded::Depth => too_deep(op),
                Exceeded::Bytes => too_large(op),
            })?;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Refuses a string of `len` bytes before it is built.
pub(crate) fn check_string_len(op: &'static str, len: usize) -> Result<(), ExprError> {
    if len > MAX_STRING_BYTES {
        return Err(error(
            op,
            format!(
                "the string it computes would be {len} bytes, over the {MAX_STRING_BYTES}-byte \
                 limit of a BSON string"
            ),
        )
        .with_code(ErrorCode::BSON_OBJECT_TOO_LARGE));
    }
    Ok(())
}

/// Refuses a `$range` of `count` elements before it is built: each element is one number, so
/// the array's memory is known from the count alone.
pub(crate) fn check_range_len(op: &'static str, count: i64) -> Result<(), ExprError> {
    let count = usize::try_from(count).unwrap_or(0);
    let bytes = count.saturating_add(1).saturating_mul(VALUE_BYTES);
    if bytes > MAX_CONTAINER_BYTES {
        return Err(too_large(op));
    }
    Ok(())
}

fn too_deep(op: &str) -> ExprError {
    error(
        op,
        format!("the value it computes would nest deeper than {MAX_DEPTH} levels"),
    )
    .with_code(ErrorCode::OVERFLOW)
}

fn too_large(op: &str) -> ExprError {
    error(
        op,
        format!(
            "the value it computes would take more than {MAX_CONTAINER_BYTES} bytes of memory, \
             the most one computed value may take"
        ),
    )
    .with_code(ErrorCode::EXCEEDED_MEMORY_LIMIT)
}

fn holds_too_much(op: &str) -> ExprError {
    error(
        op,
        format!(
            "the values its evaluation holds at once would take more than {MAX_HELD_BYTES} \
             bytes of memory"
        ),
    )
    .with_code(ErrorCode::EXCEEDED_MEMORY_LIMIT)
}

#[cfg(test)]
mod tests {
    use bson::{Bson, bson};

    use super::*;

    #[test]
    fn measures_count_each_value_and_what_it_holds() {
        let flat = Bson::Array((0..1000).map(Bson::Int32).collect());
        let measure = measure_within(&flat, usize::MAX, usize::MAX).unwrap();
        assert_eq!(measure.bytes, 1001 * VALUE_BYTES);
        assert_eq!(measure.depth, 1);
        let text = bson!({ "name": "abcdef" });
        let measure = measure_within(&text, usize::MAX, usize::MAX).unwrap();
        assert_eq!(measure.bytes, 2 * VALUE_BYTES + FIELD_BYTES + 4 + 6);
        let nested = bson!({ "a": [[{ "b": 1 }]] });
        assert_eq!(measure_within(&nested, 10, usize::MAX).unwrap().depth, 4);
        assert_eq!(measure_within(&bson!(7), 10, usize::MAX).unwrap().depth, 0);
        // A value past a bound stops the walk there.
        assert_eq!(
            measure_within(&flat, 10, 100 * VALUE_BYTES),
            Err(Exceeded::Bytes)
        );
    }

    #[test]
    fn a_deep_value_is_measured_without_recursion_and_stops_at_the_bound() {
        let mut deep = Bson::Int32(0);
        for _ in 0..100_000 {
            deep = Bson::Array(vec![deep]);
        }
        assert_eq!(
            measure_within(&deep, MAX_DEPTH, usize::MAX),
            Err(Exceeded::Depth)
        );
        let mut built = Built::new("$reduce");
        assert_eq!(built.add(None, &deep).unwrap_err().code.code, 15);
        // Drop the deep value without recursion either.
        let mut value = deep;
        while let Bson::Array(mut items) = value {
            value = items.pop().unwrap_or(Bson::Null);
        }
    }

    #[test]
    fn containers_stop_at_their_bound_as_elements_join() {
        let chunk = Bson::String("x".repeat(1 << 20));
        let mut built = Built::new("$concatArrays");
        let mut joined = 0;
        let refused = loop {
            match built.add(None, &chunk) {
                Ok(()) => joined += 1,
                Err(e) => break e,
            }
        };
        // Each element takes its value and its megabyte of text.
        let each = VALUE_BYTES + (1 << 20);
        assert_eq!(joined, (MAX_CONTAINER_BYTES - VALUE_BYTES) / each);
        assert_eq!(refused.code.code, 146);
        assert_eq!(
            check_string_len("$concat", MAX_STRING_BYTES + 1)
                .unwrap_err()
                .code
                .code,
            10334
        );
        assert!(check_string_len("$concat", MAX_STRING_BYTES).is_ok());
    }

    #[test]
    fn what_an_evaluation_holds_stops_at_its_bound_and_is_given_back() {
        let held_now = || HELD.get();
        let start = held_now();
        // One string of 16 MiB, held again and again: counting needs no more memory than it.
        let chunk = Bson::String("x".repeat(MAX_STRING_BYTES));
        let each = VALUE_BYTES + MAX_STRING_BYTES;
        let mut outer = Held::new("$let");
        let mut inner = Held::new("$concatArrays");
        let mut counted = 0;
        let refused = loop {
            let holder = if counted % 2 == 0 {
                &mut outer
            } else {
                &mut inner
            };
            match holder.hold(&chunk) {
                Ok(()) => counted += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(counted, MAX_HELD_BYTES / each, "holders count together");
        assert_eq!(refused.code.code, 146);
        assert_eq!(held_now(), start + counted * each);
        drop(inner);
        assert_eq!(held_now(), start + counted.div_ceil(2) * each);
        // Numbers are not counted.
        outer.hold(&Bson::Int64(1)).unwrap();
        drop(outer);
        assert_eq!(held_now(), start, "everything is given back");
    }
}
