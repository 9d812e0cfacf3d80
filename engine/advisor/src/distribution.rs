//! MongoDB's `readDistribution` and `writeDistribution` of `analyzeShardKey`: where the sampled
//! queries of a collection would go under a candidate key.
//!
//! MongoDB's method, followed here: the key's range is cut into `analyzeShardKeyNumRanges`
//! (100) ranges at split points read from a sample of the documents (10 per range, sorted by
//! the key, every tenth taken; too few distinct values is error 4952606), as if each range were
//! a chunk. Each sampled query is then targeted as a `mongos` would:
//! - **single shard**: equality on every key field (under a non-simple collation, only when no
//!   string is involved: strings then compare in the collation's order, not the key's);
//! - **scatter-gather**: nothing bounds the key's first field (no condition on it, `$ne`, a
//!   range on a hashed key), so every range;
//! - **multi-shard**: anything else (a range, a prefix, an `$in` of several values).
//!
//! `numReadsByRange` / `numWritesByRange` count, per range, the queries that reach it. Writes add
//! the writes without the full key, single (`updateOne`, `deleteOne`, findAndModify) or multi,
//! and the share of updates that change the key.
//!
//! Where this differs: MongoDB counts a key update from the diff of the document before and
//! after a sampled update; the engine samples commands, so an update counts when its text sets,
//! unsets, renames or replaces a key field (a `$set` to the same value counts; a replacement
//! counts unless its filter pins every key field to the value it writes). `let` variables and
//! `$expr` equalities do not target (MongoDB's do), and a replacement by `_id` is not re-targeted
//! by the key of the new document.

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};
use odm_engine::keys::{Direction, encode_into};
use odm_engine::query::{KeyRange, Routing, target_filter};
use odm_engine::sampling::{SampledCommand, SampledQuery};
use odm_engine::{ShardKey, hashed};
use std::ops::Bound;

use super::analyze::AnalyzeError;
use super::characteristics::{ReplyError, count_of, round_up};
use super::value_at;

/// MongoDB's `analyzeShardKeyNumRanges`.
pub const NUM_RANGES: usize = 100;

/// MongoDB's `analyzeShardKeyNumSamplesPerRange`.
pub const SAMPLES_PER_RANGE: usize = 10;

/// The ranges of a candidate key, as hypothetical chunks: `[MinKey, s1), [s1, s2), ...,
/// [sN, MaxKey)`, over the encoded key.
#[derive(Debug, Clone)]
pub struct Ranges {
    split_points: Vec<Vec<u8>>,
}

/// The encoded key of a document (a hashed field as its hash, a missing field as `null`); an
/// array in a key field is an error naming it.
pub(crate) fn encoded_key(
    key: &ShardKey,
    doc: &bson::RawDocument,
) -> Result<Vec<u8>, AnalyzeError> {
    let mut out = Vec::new();
    for path in key.paths() {
        let value = value_at(doc, path.as_str())
            .map_err(|e| AnalyzeError::Document(e.to_string()))?
            .unwrap_or(RawBsonRef::Null);
        if matches!(value, RawBsonRef::Array(_)) {
            return Err(AnalyzeError::ArrayInKey(path.as_str().to_owned()));
        }
        match key {
            ShardKey::Hashed(_) => encode_into(
                &mut out,
                RawBsonRef::Int64(hashed::hash(value)),
                Direction::Ascending,
            ),
            ShardKey::Range(_) => encode_into(&mut out, value, Direction::Ascending),
        }
    }
    Ok(out)
}

impl Ranges {
    /// Split points for `num_ranges` ranges from `keys`: the encoded keys of an even sample
    /// of `num_ranges * 10` documents (see [`SAMPLES_PER_RANGE`]), sorted here, every tenth.
    pub fn from_keys(mut keys: Vec<Vec<u8>>, num_ranges: usize) -> Result<Ranges, AnalyzeError> {
        keys.sort();
        let mut split_points: Vec<Vec<u8>> = Vec::new();
        let mut picks: Vec<&Vec<u8>> = keys
            .iter()
            .skip(SAMPLES_PER_RANGE - 1)
            .step_by(SAMPLES_PER_RANGE)
            .collect();
        // The end of the stream gives its last key too.
        if let Some(last) = keys.last()
            && !keys.len().is_multiple_of(SAMPLES_PER_RANGE)
        {
            picks.push(last);
        }
        for pick in picks {
            if split_points.len() == num_ranges - 1 {
                break;
            }
            if split_points.last() != Some(pick) {
                split_points.push(pick.clone());
            }
        }
        if split_points.len() < num_ranges - 1 {
            return Err(AnalyzeError::NotEnoughCardinality {
                wanted: num_ranges,
                possible: split_points.len() + 1,
            });
        }
        Ok(Ranges { split_points })
    }

    fn len(&self) -> usize {
        self.split_points.len() + 1
    }

    /// The ranges `intervals` reach, in order, each once.
    fn touched(&self, intervals: &[KeyRange]) -> Vec<usize> {
        let below = |bytes: &[u8], inclusive: bool| {
            self.split_points.partition_point(|sp| {
                if inclusive {
                    sp.as_slice() <= bytes
                } else {
                    sp.as_slice() < bytes
                }
            })
        };
        let mut hit = vec![false; self.len()];
        for (lo, hi) in intervals {
            let first = match lo {
                Bound::Unbounded => 0,
                Bound::Included(b) | Bound::Excluded(b) => below(b, true),
            };
            let last = match hi {
                Bound::Unbounded => self.len() - 1,
                Bound::Included(b) => below(b, true),
                Bound::Excluded(b) => below(b, false),
            };
            for h in hit.iter_mut().take(last + 1).skip(first) {
                *h = true;
            }
        }
        (0..self.len()).filter(|&i| hit[i]).collect()
    }
}

/// How a query is targeted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    SingleShard,
    MultiShard,
    ScatterGather,
}

/// The targeting of a filter under `key` over `ranges`, with the ranges it reaches; `None` for
/// a filter that does not parse (the command was refused, and MongoDB would not have sampled
/// it).
pub fn target(
    key: &ShardKey,
    ranges: &Ranges,
    filter: &Document,
    collation: Option<&Document>,
) -> Option<(Target, Vec<usize>)> {
    let all = || (0..ranges.len()).collect::<Vec<_>>();
    let collated = collation.is_some_and(|c| {
        !(c.is_empty() || (c.len() == 1 && c.get_str("locale").is_ok_and(|l| l == "simple")))
    });
    let (routing, intervals) = target_filter(key, filter, collated).ok()?;
    let plain = if collated {
        target_filter(key, filter, false).map_or(Routing::Broadcast, |(r, _)| r)
    } else {
        routing
    };
    let target = match (plain, routing) {
        (Routing::Broadcast, _) => Target::ScatterGather,
        (_, Routing::SingleShard) => Target::SingleShard,
        // Under a collation, strings bound nothing: what would be one key is several.
        _ => Target::MultiShard,
    };
    let reached = match (target, intervals) {
        (Target::ScatterGather, _) | (_, None) => all(),
        (_, Some(intervals)) => ranges.touched(&intervals),
    };
    Some((target, reached))
}

/// The counts both distributions share.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    pub single_shard: u64,
    pub multi_shard: u64,
    pub scatter_gather: u64,
    /// Per range, the queries that reach it.
    pub by_range: Vec<u64>,
}

impl Targets {
    fn new(ranges: usize) -> Targets {
        Targets {
            by_range: vec![0; ranges],
            ..Targets::default()
        }
    }

    fn add(&mut self, target: Target, reached: &[usize]) {
        match target {
            Target::SingleShard => self.single_shard += 1,
            Target::MultiShard => self.multi_shard += 1,
            Target::ScatterGather => self.scatter_gather += 1,
        }
        for &r in reached {
            self.by_range[r] += 1;
        }
    }

    fn total(&self) -> u64 {
        self.single_shard + self.multi_shard + self.scatter_gather
    }

    /// The percentages of `total` and the counts by range, as MongoDB names them for `kind`
    /// (`Reads`, `Writes`); [`targets_from`] reads them back.
    fn insert_into(&self, d: &mut Document, total: u64, kind: &str) {
        d.insert(
            format!("percentageOfSingleShard{kind}"),
            percent(self.single_shard, total),
        );
        d.insert(
            format!("percentageOfMultiShard{kind}"),
            percent(self.multi_shard, total),
        );
        d.insert(
            format!("percentageOfScatterGather{kind}"),
            percent(self.scatter_gather, total),
        );
        d.insert(format!("num{kind}ByRange"), by_range(self));
    }
}

/// `readDistribution`: sampled reads by command and their targeting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadDistribution {
    pub find: u64,
    pub aggregate: u64,
    pub count: u64,
    pub distinct: u64,
    pub targets: Targets,
}

/// `writeDistribution`: sampled writes by command, their targeting, the updates of the key and
/// the writes without the key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteDistribution {
    pub update: u64,
    pub delete: u64,
    pub find_and_modify: u64,
    pub targets: Targets,
    pub shard_key_updates: u64,
    pub single_writes_without_shard_key: u64,
    pub multi_writes_without_shard_key: u64,
}

/// A percentage as MongoDB reports it: rounded up at the tenth decimal.
fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        round_up(part as f64 / whole as f64 * 100.0)
    }
}

fn long(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn by_range(targets: &Targets) -> Vec<Bson> {
    targets
        .by_range
        .iter()
        .map(|&n| Bson::Int64(long(n)))
        .collect()
}

/// The counts of a server's distribution, read back from its percentages.
fn targets_from(d: &Document, total: u64, kind: &str) -> Targets {
    let count = |field: &str| {
        d.get_f64(field)
            .map_or(0, |p| (p * total as f64 / 100.0).round() as u64)
    };
    Targets {
        single_shard: count(&format!("percentageOfSingleShard{kind}")),
        multi_shard: count(&format!("percentageOfMultiShard{kind}")),
        scatter_gather: count(&format!("percentageOfScatterGather{kind}")),
        by_range: d
            .get_array(format!("num{kind}ByRange"))
            .map(|a| {
                a.iter()
                    .map(|n| match n {
                        Bson::Int64(n) => (*n).max(0) as u64,
                        Bson::Int32(n) => (*n).max(0) as u64,
                        _ => 0,
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

impl ReadDistribution {
    /// The typed form of a server's `readDistribution`.
    pub fn from_document(d: &Document) -> Result<ReadDistribution, ReplyError> {
        let size = d.get_document("sampleSize")?;
        let total = count_of(size, "total")?;
        Ok(ReadDistribution {
            find: count_of(size, "find")?,
            aggregate: count_of(size, "aggregate")?,
            count: count_of(size, "count")?,
            distinct: count_of(size, "distinct")?,
            targets: targets_from(d, total, "Reads"),
        })
    }

    pub fn total(&self) -> u64 {
        self.find + self.aggregate + self.count + self.distinct
    }

    /// The document MongoDB returns: `sampleSize` alone when nothing was sampled.
    pub fn to_document(&self) -> Document {
        let total = self.total();
        let mut d = bson::doc! {
            "sampleSize": {
                "total": long(total),
                "find": long(self.find),
                "aggregate": long(self.aggregate),
                "count": long(self.count),
                "distinct": long(self.distinct),
            }
        };
        if total > 0 {
            self.targets.insert_into(&mut d, total, "Reads");
        }
        d
    }
}

impl WriteDistribution {
    /// The typed form of a server's `writeDistribution`.
    pub fn from_document(d: &Document) -> Result<WriteDistribution, ReplyError> {
        let size = d.get_document("sampleSize")?;
        let total = count_of(size, "total")?;
        let count = |field: &str| {
            d.get_f64(field)
                .map_or(0, |p| (p * total as f64 / 100.0).round() as u64)
        };
        Ok(WriteDistribution {
            update: count_of(size, "update")?,
            delete: count_of(size, "delete")?,
            find_and_modify: count_of(size, "findAndModify")?,
            targets: targets_from(d, total, "Writes"),
            shard_key_updates: count("percentageOfShardKeyUpdates"),
            single_writes_without_shard_key: count("percentageOfSingleWritesWithoutShardKey"),
            multi_writes_without_shard_key: count("percentageOfMultiWritesWithoutShardKey"),
        })
    }

    pub fn total(&self) -> u64 {
        self.update + self.delete + self.find_and_modify
    }

    /// The document MongoDB returns: `sampleSize` alone when nothing was sampled.
    pub fn to_document(&self) -> Document {
        let total = self.total();
        let mut d = bson::doc! {
            "sampleSize": {
                "total": long(total),
                "update": long(self.update),
                "delete": long(self.delete),
                "findAndModify": long(self.find_and_modify),
            }
        };
        if total > 0 {
            self.targets.insert_into(&mut d, total, "Writes");
            d.insert(
                "percentageOfShardKeyUpdates",
                percent(self.shard_key_updates, total),
            );
            d.insert(
                "percentageOfSingleWritesWithoutShardKey",
                percent(self.single_writes_without_shard_key, total),
            );
            d.insert(
                "percentageOfMultiWritesWithoutShardKey",
                percent(self.multi_writes_without_shard_key, total),
            );
        }
        d
    }
}

/// One sampled write, read from its `cmd`: its filter, collation, update (none for a delete),
/// and whether it may change several documents.
struct Write<'a> {
    filter: Document,
    collation: Option<&'a Document>,
    update: Option<&'a Bson>,
    multi: bool,
}

fn write_of(sample: &SampledQuery) -> Option<Write<'_>> {
    let cmd = &sample.cmd;
    let statement = |array: &str| {
        cmd.get_array(array)
            .ok()
            .and_then(|a| a.first())
            .and_then(Bson::as_document)
    };
    match sample.command {
        SampledCommand::Update => {
            let s = statement("updates")?;
            Some(Write {
                filter: s.get_document("q").cloned().unwrap_or_default(),
                collation: s.get_document("collation").ok(),
                update: s.get("u"),
                multi: s.get_bool("multi").unwrap_or(false),
            })
        }
        SampledCommand::Delete => {
            let s = statement("deletes")?;
            let limit = s.get("limit").and_then(|l| {
                l.as_i64()
                    .or_else(|| l.as_i32().map(i64::from))
                    .or_else(|| l.as_f64().map(|f| f as i64))
            });
            Some(Write {
                filter: s.get_document("q").cloned().unwrap_or_default(),
                collation: s.get_document("collation").ok(),
                update: None,
                multi: limit == Some(0),
            })
        }
        SampledCommand::FindAndModify => Some(Write {
            filter: cmd.get_document("query").cloned().unwrap_or_default(),
            collation: cmd.get_document("collation").ok(),
            update: if cmd.get_bool("remove").unwrap_or(false) {
                None
            } else {
                cmd.get("update")
            },
            multi: false,
        }),
        _ => None,
    }
}

/// The filter of a sampled query: a read's, or its write statement's.
pub fn filter_of(sample: &SampledQuery) -> Document {
    if sample.command.is_read() {
        sample
            .cmd
            .get_document("filter")
            .cloned()
            .unwrap_or_default()
    } else {
        write_of(sample).map(|w| w.filter).unwrap_or_default()
    }
}

/// Both distributions of `samples` (the collection's, of its current incarnation) under `key`.
pub fn distributions(
    key: &ShardKey,
    ranges: &Ranges,
    samples: &[SampledQuery],
) -> (ReadDistribution, WriteDistribution) {
    let mut reads = ReadDistribution {
        targets: Targets::new(ranges.len()),
        ..ReadDistribution::default()
    };
    let mut writes = WriteDistribution {
        targets: Targets::new(ranges.len()),
        ..WriteDistribution::default()
    };
    for sample in samples {
        if sample.command.is_read() {
            let filter = sample
                .cmd
                .get_document("filter")
                .cloned()
                .unwrap_or_default();
            let collation = sample.cmd.get_document("collation").ok();
            let Some((t, reached)) = target(key, ranges, &filter, collation) else {
                continue;
            };
            reads.targets.add(t, &reached);
            match sample.command {
                SampledCommand::Find => reads.find += 1,
                SampledCommand::Aggregate => reads.aggregate += 1,
                SampledCommand::Count => reads.count += 1,
                _ => reads.distinct += 1,
            }
            continue;
        }
        let Some(write) = write_of(sample) else {
            continue;
        };
        let Some((t, reached)) = target(key, ranges, &write.filter, write.collation) else {
            continue;
        };
        match sample.command {
            SampledCommand::Update => writes.update += 1,
            SampledCommand::Delete => writes.delete += 1,
            _ => writes.find_and_modify += 1,
        }
        writes.targets.add(t, &reached);
        if t != Target::SingleShard {
            if write.multi {
                writes.multi_writes_without_shard_key += 1;
            } else {
                writes.single_writes_without_shard_key += 1;
            }
        }
        if write
            .update
            .is_some_and(|u| updates_key(key, &write.filter, u))
        {
            writes.shard_key_updates += 1;
        }
    }
    debug_assert_eq!(reads.targets.total(), reads.total());
    (reads, writes)
}

/// Whether two dotted paths name the same field or one holds the other.
fn overlap(a: &str, b: &str) -> bool {
    a == b
        || (b.len() > a.len() && b.starts_with(a) && b.as_bytes()[a.len()] == b'.')
        || (a.len() > b.len() && a.starts_with(b) && a.as_bytes()[b.len()] == b'.')
}

/// A path an update names, cut before its first positional segment (`a.$`, `a.$[]`, `a.$[i]`):
/// the part that surely changes.
fn changed_path(path: &str) -> &str {
    match path.split('.').position(|s| s.starts_with('$')) {
        Some(0) => "",
        Some(at) => {
            let end: usize = path.split('.').take(at).map(|s| s.len() + 1).sum::<usize>() - 1;
            &path[..end]
        }
        None => path,
    }
}

/// Whether `update` (operators, a pipeline or a replacement) changes a field of `key`, read
/// from its text (see the module comment).
fn updates_key(key: &ShardKey, filter: &Document, update: &Bson) -> bool {
    let paths: Vec<&str> = key
        .paths()
        .into_iter()
        .map(odm_engine::Path::as_str)
        .collect();
    let touches = |changed: &str| paths.iter().any(|p| overlap(changed_path(changed), p));
    match update {
        Bson::Array(stages) => stages.iter().any(|stage| {
            let Some(stage) = stage.as_document() else {
                return true;
            };
            stage
                .iter()
                .any(|(name, spec)| match (name.as_str(), spec) {
                    ("$set" | "$addFields", Bson::Document(fields)) => {
                        fields.keys().any(|f| touches(f))
                    }
                    ("$unset", Bson::String(f)) => touches(f),
                    ("$unset", Bson::Array(fs)) => {
                        fs.iter().any(|f| f.as_str().is_none_or(&touches))
                    }
                    // $project, $replaceRoot, $replaceWith: the document may change wholesale.
                    _ => true,
                })
        }),
        Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
            d.iter().any(|(op, fields)| {
                if op == "$setOnInsert" {
                    return false;
                }
                let Some(fields) = fields.as_document() else {
                    return false;
                };
                fields.iter().any(|(f, v)| {
                    touches(f) || (op == "$rename" && v.as_str().is_some_and(&touches))
                })
            })
        }
        Bson::Document(replacement) => {
            let raw = RawDocumentBuf::try_from(replacement).ok();
            paths.iter().any(|p| {
                let written = raw
                    .as_ref()
                    .and_then(|r| value_at(r, p).ok().flatten())
                    .and_then(|v| Bson::try_from(v).ok());
                let pinned = match filter.get(*p) {
                    Some(Bson::Document(d))
                        if d.keys().next().is_some_and(|k| k.starts_with('$')) =>
                    {
                        d.get("$eq")
                    }
                    other => other,
                };
                written.is_none() || pinned != written.as_ref()
            })
        }
        _ => false,
    }
}
