//! Pipelines built from bytes by a grammar of the operators that make values grow, nested in
//! each other: `$reduce` (accumulating with `$concat`, `$concatArrays`, `$setUnion`, or wrapping
//! `$$value` one level deeper at each step), `$map`, `$range`, `$zip`, `$setUnion`,
//! `$concatArrays`, `$objectToArray`, and `$lookup` whose pipeline holds more of the same.
//! Random bytes read as BSON almost never spell these, so the targets that run pipelines
//! also run one built here from the same input: each choice reads one byte, and an exhausted
//! input reads zeros, which choose the smallest forms and end the recursion.
//!
//! What must hold is the engine's bounds on computed values and its time limits: every such
//! pipeline answers or fails with an error, never a panic, an overflowed stack, an allocation
//! past the bounds or a run past its time limit.

use std::time::Duration;

use bson::{Bson, Document, bson, doc};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::interrupt::Interrupt;

/// The time limit of a grown pipeline. Nesting loops of a million steps each is quadratic in
/// time though each value stays small; MongoDB's answer, and the engine's, is a time limit,
/// which these runs exercise too. Short, so that a fuzzing run (and CI's smoke run, which
/// first runs every seed) spends its time on many inputs.
pub const TIME_LIMIT: Duration = Duration::from_millis(250);

/// The options a grown pipeline runs with: its time limit.
pub fn options() -> AggregateOptions {
    AggregateOptions {
        interrupt: Some(Interrupt::within(Some(TIME_LIMIT))),
        ..AggregateOptions::default()
    }
}

/// How deep expressions nest, a level per operator.
const MAX_DEPTH: usize = 6;

/// The lengths a `$range` (and so a `$map` or `$reduce` over it) takes, one chosen by a byte:
/// mostly small, and one in six past a hundred thousand, up to past the bound on an array's
/// memory.
const LENGTHS: [i64; 18] = [
    0, 1, 3, 40, 250, 1_000, 0, 1, 3, 40, 250, 1_000, 2, 7, 100, 100_000, 1_500_000, 10_000_000,
];

/// The bytes of an input, read a choice at a time.
#[derive(Debug)]
pub struct Choices<'a> {
    bytes: &'a [u8],
}

impl<'a> Choices<'a> {
    pub fn new(bytes: &'a [u8]) -> Choices<'a> {
        Choices { bytes }
    }

    /// The next byte; zero once the input is spent.
    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// A number below `n` (which must not be zero).
    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }

    fn length(&mut self) -> i64 {
        LENGTHS[self.below(LENGTHS.len())]
    }
}

/// A pipeline of one to four stages over the fields `a` (a number), `s` (a string) and `_id`,
/// with `$lookup` joining the collection `d`.
pub fn pipeline(choices: &mut Choices<'_>) -> Vec<Document> {
    let n = 1 + choices.below(4);
    (0..n).map(|_| stage(choices, 0)).collect()
}

fn stage(c: &mut Choices<'_>, depth: usize) -> Document {
    match c.below(7) {
        0 => doc! { "$project": { "v": expr(c, depth) } },
        1 => doc! { "$addFields": { "a": expr(c, depth) } },
        2 => doc! { "$group": {
            "_id": expr(c, depth + 1),
            "p": { "$push": expr(c, depth + 1) },
            "u": { "$addToSet": expr(c, depth + 1) },
        } },
        3 if depth < 2 => doc! { "$lookup": {
            "from": "d",
            "let": { "x": expr(c, depth + 1) },
            "pipeline": [stage(c, depth + 1), stage(c, depth + 1)],
            "as": "a",
        } },
        4 => doc! { "$unwind": { "path": "$a", "preserveNullAndEmptyArrays": true } },
        5 if depth < 2 => doc! { "$facet": { "f": [stage(c, depth + 1)] } },
        _ => doc! { "$sort": { "a": 1, "_id": -1 } },
    }
}

/// An expression: a leaf once deep enough or when the input chooses one.
pub fn expr(c: &mut Choices<'_>, depth: usize) -> Bson {
    let pick = c.below(12);
    if depth >= MAX_DEPTH || pick < 3 {
        return leaf(c);
    }
    let d = depth + 1;
    match pick {
        3 => reduce(c, d),
        4 => Bson::Document(doc! { "$map": { "input": range(c), "in": expr(c, d) } }),
        5 => range(c),
        6 => Bson::Document(doc! { "$zip": {
            "inputs": [expr(c, d), range(c)],
            "useLongestLength": c.byte() % 2 == 0,
            "defaults": [expr(c, d), expr(c, d)],
        } }),
        7 => Bson::Document(doc! { "$setUnion": [expr(c, d), expr(c, d)] }),
        8 => Bson::Document(doc! { "$concatArrays": [expr(c, d), expr(c, d)] }),
        9 => Bson::Document(doc! { "$concat": [{ "$toString": expr(c, d) }, "$s"] }),
        10 => Bson::Document(doc! { "$objectToArray": { "x": expr(c, d), "y": expr(c, d) } }),
        _ => Bson::Document(doc! { "$filter": { "input": expr(c, d), "cond": expr(c, d) } }),
    }
}

/// A `$reduce` over a `$range` whose step grows `$$value`: doubling a string or an array,
/// a union with itself, or one level of nesting a step.
fn reduce(c: &mut Choices<'_>, d: usize) -> Bson {
    let input = range(c);
    let (initial, step) = match c.below(5) {
        0 => (
            Bson::from("ab"),
            bson!({ "$concat": ["$$value", "$$value"] }),
        ),
        1 => (
            Bson::Array(vec![expr(c, d)]),
            bson!({ "$concatArrays": ["$$value", "$$value"] }),
        ),
        2 => (
            Bson::Array(vec![]),
            bson!({ "$setUnion": ["$$value", ["$$value", "$$this"]] }),
        ),
        3 => (Bson::Array(vec![]), bson!(["$$value", expr(c, d)])),
        _ => (
            expr(c, d),
            bson!({ "$mergeObjects": [{ "v": "$$value" }, { "w": "$$this" }] }),
        ),
    };
    Bson::Document(doc! { "$reduce": { "input": input, "initialValue": initial, "in": step } })
}

fn range(c: &mut Choices<'_>) -> Bson {
    Bson::Document(doc! { "$range": [0, c.length()] })
}

fn leaf(c: &mut Choices<'_>) -> Bson {
    match c.below(8) {
        0 => Bson::from("$a"),
        1 => Bson::from("$s"),
        2 => Bson::from("$$ROOT"),
        3 => Bson::from("$$x"),
        4 => Bson::Int32(i32::from(c.byte())),
        5 => Bson::from("ab"),
        6 => Bson::Array(vec![]),
        _ => Bson::Document(doc! { "k": "$_id" }),
    }
}
