//! The shard-key advisor (S6, S17): where a collection's documents and its stream of inserts
//! would live on a cluster of N shards under each candidate shard key, simulated the way
//! MongoDB places them, before there is a cluster; and MongoDB's `analyzeShardKey` over the
//! engine's query sampling ([`odm_engine::sampling`]).
//!
//! Depends on the engine alone: the typed layer, the server and the `odm` command all use it.
//!
//! The model, per candidate key, replays the collection's documents as an insert stream (in
//! `_id` order, or in the order of a time field):
//! - **Ranged keys** start as one chunk, `[MinKey, MaxKey)`, on the first shard, as MongoDB
//!   shards an empty collection. **Hashed keys** start pre-split, as MongoDB does: two chunks
//!   per shard over the range of MongoDB's 64-bit hash ([`odm_engine::hashed`]), dealt round
//!   robin.
//! - Each insert lands in the chunk whose range holds its key. A chunk above the size bound
//!   splits at its median key (never between equal keys: a chunk of one key value cannot split
//!   and stays *jumbo*); both halves stay on the shard.
//! - After each split the balancer evens chunk counts with MongoDB's thresholds (a difference
//!   of 2 chunks under 20 chunks, 4 under 80, 8 above), moving the donor's lowest chunk, as
//!   MongoDB's balancer picks it.
//!
//! This is MongoDB's classic placement (up to 5.0): chunks split as inserts fill them, and the
//! balancer counts chunks. Since 6.0 the balancer evens data size per shard, and 7.0 no longer
//! splits chunks on insert; the places inserts go to, the hot shard of a monotonic key and the
//! spread of a hashed one, are the same under both.
//!
//! It reports, per candidate: chunks, documents and bytes per shard at the end; where each
//! insert went when it arrived, over the whole stream and over its most recent part (the
//! hottest shard's share of recent inserts is S6's test: a monotonic key sends them all to one
//! shard, a hashed key spreads them, a coarse time prefix before a random field segments them);
//! and, for sampled queries, how many a `mongos` would send to one shard, to some, or to all.
//! Documents whose key fields hold an array cannot be placed (MongoDB refuses them); they are
//! counted. A missing key field is `null`, as MongoDB places it.

mod analyze;
mod characteristics;
mod distribution;
mod svg;

pub use analyze::{
    AnalyzeError, AnalyzeOptions, ShardKeyAnalysis, Unanswered, analyze_shard_key, current_samples,
};
pub use characteristics::{
    KeyCharacteristics, KeySource, MONOTONICITY_THRESHOLD, MOST_COMMON_VALUES, Monotonicity,
    ReplyError,
};
pub use distribution::{
    NUM_RANGES, ReadDistribution, SAMPLES_PER_RANGE, Target, Targets, WriteDistribution, filter_of,
};

use std::fmt::{self, Write as _};

use bson::{Document, RawBsonRef, RawDocumentBuf};
use odm_engine::ShardKey;
use odm_engine::keys::{Direction, encode_into};
use odm_engine::path::{ArrayOnTheWay, Path};
use odm_engine::query::{Routing, route_filter};

/// MongoDB's default chunk size; the advisor scales its bound to the data (see
/// [`Advisor::chunk_bytes`]).
pub const MONGODB_CHUNK_BYTES: u64 = 128 << 20;

/// The most shards the advisor simulates.
pub const MAX_SHARDS: usize = 10_000;

/// The order of the insert stream the advisor replays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertOrder {
    /// `_id` order: the insertion order of ObjectIds and other increasing ids.
    Id,
    /// The order of a field (a creation time), then `_id`.
    Field(String),
}

/// The advisor's settings; [`Advisor::analyze`] runs it.
#[derive(Debug, Clone)]
pub struct Advisor {
    shards: usize,
    chunk_bytes: Option<u64>,
    recent: f64,
    order: InsertOrder,
    sample: Option<usize>,
}

/// Why the advisor cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdvisorError {
    #[error("the advisor simulates 1 to {MAX_SHARDS} shards, not {0}")]
    Shards(usize),
    #[error("the advisor needs at least one candidate key")]
    NoCandidates,
    #[error("the recent share of inserts must be above 0 and at most 1, not {0}")]
    RecentShare(String),
    #[error("a stored document does not read: {0}")]
    Document(String),
    #[error("there is no collection `{0}`")]
    NoCollection(String),
}

impl Advisor {
    /// An advisor for a cluster of `shards` shards, replaying inserts in `_id` order, with the
    /// last tenth of the stream as its recent inserts.
    pub fn new(shards: usize) -> Advisor {
        Advisor {
            shards,
            chunk_bytes: None,
            recent: 0.1,
            order: InsertOrder::Id,
            sample: None,
        }
    }

    /// The size at which a chunk splits. By default a quarter of the data's size per shard, so
    /// that a sample of a collection forms chunks as the whole would at MongoDB's 128 MiB.
    #[must_use]
    pub fn chunk_bytes(mut self, bytes: u64) -> Advisor {
        self.chunk_bytes = Some(bytes.max(1));
        self
    }

    /// The share of the stream (its end) counted as recent inserts.
    #[must_use]
    pub fn recent(mut self, share: f64) -> Advisor {
        self.recent = share;
        self
    }

    #[must_use]
    pub fn order(mut self, order: InsertOrder) -> Advisor {
        self.order = order;
        self
    }

    /// Replays at most `documents` documents: an even sample of the stream, every k-th.
    #[must_use]
    pub fn sample(mut self, documents: usize) -> Advisor {
        self.sample = Some(documents.max(1));
        self
    }

    /// Simulates each candidate key over `documents` and classifies `queries` (filters).
    pub fn analyze(
        &self,
        documents: impl IntoIterator<Item = RawDocumentBuf>,
        candidates: &[ShardKey],
        queries: &[Document],
    ) -> Result<Report, AdvisorError> {
        if !(1..=MAX_SHARDS).contains(&self.shards) {
            return Err(AdvisorError::Shards(self.shards));
        }
        if candidates.is_empty() {
            return Err(AdvisorError::NoCandidates);
        }
        if !(self.recent > 0.0 && self.recent <= 1.0) {
            return Err(AdvisorError::RecentShare(self.recent.to_string()));
        }
        let mut stream: Vec<(Vec<u8>, RawDocumentBuf)> = documents
            .into_iter()
            .map(|doc| Ok((self.order_key(&doc)?, doc)))
            .collect::<Result<_, AdvisorError>>()?;
        stream.sort_by(|a, b| a.0.cmp(&b.0));
        let total = stream.len();
        if let Some(sample) = self.sample {
            stream = even_sample(&stream, sample).into_iter().cloned().collect();
        }
        let bytes: u64 = stream.iter().map(|(_, d)| d.as_bytes().len() as u64).sum();
        let chunk_bytes = self
            .chunk_bytes
            .unwrap_or_else(|| (bytes / (4 * self.shards as u64)).max(1));
        let documents: Vec<&RawDocumentBuf> = stream.iter().map(|(_, d)| d).collect();
        let recent_from = total_recent_start(documents.len(), self.recent);
        let candidates = candidates
            .iter()
            .map(|key| {
                let mut candidate =
                    simulate(key, &documents, self.shards, chunk_bytes, recent_from);
                candidate.queries = QueryMix::of(key, queries);
                candidate
            })
            .collect();
        Ok(Report {
            documents: documents.len() as u64,
            sampled_from: total as u64,
            bytes,
            shards: self.shards,
            chunk_bytes,
            recent: self.recent,
            order: self.order.clone(),
            queries: queries.len(),
            sampled: false,
            candidates,
            shapes: Vec::new(),
        })
    }

    /// Where a document comes in the insert stream.
    fn order_key(&self, doc: &RawDocumentBuf) -> Result<Vec<u8>, AdvisorError> {
        let mut key = Vec::new();
        if let InsertOrder::Field(path) = &self.order {
            encode_into(
                &mut key,
                value_at(doc, path)?.unwrap_or(RawBsonRef::Null),
                Direction::Ascending,
            );
        }
        let id = doc
            .get("_id")
            .map_err(|e| AdvisorError::Document(e.to_string()))?
            .unwrap_or(RawBsonRef::Null);
        encode_into(&mut key, id, Direction::Ascending);
        Ok(key)
    }
}

impl Advisor {
    /// The advisor over a collection of an engine database, in one report with MongoDB's
    /// `analyzeShardKey` of each candidate: its documents replayed, and its sampled queries
    /// (see [`odm_engine::sampling`]) routed, shape by shape, unless `queries` are given.
    pub fn analyze_collection(
        &self,
        db: &odm_engine::Database,
        collection: &str,
        candidates: &[ShardKey],
        queries: Option<&[Document]>,
        options: &AnalyzeOptions,
    ) -> Result<Report, AdvisorError> {
        let engine_error = |e: odm_engine::Error| AdvisorError::Document(e.to_string());
        let named: Vec<(&'static str, Document)> = if let Some(given) = queries {
            given.iter().map(|f| ("query", f.clone())).collect()
        } else {
            current_samples(db, collection)
                .map_err(|e| AdvisorError::Document(e.to_string()))?
                .iter()
                .map(|s| (s.command.as_str(), filter_of(s)))
                .collect()
        };
        let filters: Vec<Document> = named.iter().map(|(_, f)| f.clone()).collect();
        let documents = collection_documents(db, collection)
            .map_err(engine_error)?
            .ok_or_else(|| AdvisorError::NoCollection(collection.to_owned()))?;
        let mut report = self.analyze(documents, candidates, &filters)?;
        report.sampled = queries.is_none();
        report.shapes = QueryShape::group(&named, candidates);
        for candidate in &mut report.candidates {
            candidate.analysis = Some(
                analyze_shard_key(db, collection, &candidate.key, options)
                    .map_err(Unanswered::from),
            );
        }
        Ok(report)
    }
}

/// Sampled queries of one shape: a command and its filter with every value replaced by its
/// type (`{x: {$gte: "?number"}}`), how many, and how each candidate key routes them.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryShape {
    pub command: &'static str,
    pub shape: Document,
    pub count: usize,
    /// Per candidate, in the report's order; `None`: the filter does not parse.
    pub routing: Vec<Option<Routing>>,
}

impl QueryShape {
    fn group(queries: &[(&'static str, Document)], candidates: &[ShardKey]) -> Vec<QueryShape> {
        let mut shapes: Vec<QueryShape> = Vec::new();
        for (command, filter) in queries {
            let shape = query_shape(filter);
            if let Some(known) = shapes
                .iter_mut()
                .find(|s| s.command == *command && s.shape == shape)
            {
                known.count += 1;
                continue;
            }
            shapes.push(QueryShape {
                command,
                shape,
                count: 1,
                routing: candidates
                    .iter()
                    .map(|key| route_filter(key, filter).ok())
                    .collect(),
            });
        }
        shapes.sort_by_key(|s| std::cmp::Reverse(s.count));
        shapes
    }
}

/// A filter with each value replaced by `?` and its type, operators and fields kept.
pub fn query_shape(filter: &Document) -> Document {
    fn value(v: &bson::Bson) -> bson::Bson {
        match v {
            bson::Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
                bson::Bson::Document(query_shape(d))
            }
            bson::Bson::Array(items)
                if items.iter().all(|i| matches!(i, bson::Bson::Document(_)))
                    && !items.is_empty() =>
            {
                bson::Bson::Array(items.iter().map(value_or_shape).collect())
            }
            other => bson::Bson::String(format!("?{}", type_name(other))),
        }
    }
    fn value_or_shape(v: &bson::Bson) -> bson::Bson {
        match v {
            bson::Bson::Document(d) => bson::Bson::Document(query_shape(d)),
            other => value(other),
        }
    }
    fn type_name(v: &bson::Bson) -> &'static str {
        match v {
            bson::Bson::Double(_)
            | bson::Bson::Int32(_)
            | bson::Bson::Int64(_)
            | bson::Bson::Decimal128(_) => "number",
            bson::Bson::String(_) => "string",
            bson::Bson::Array(_) => "array",
            bson::Bson::Document(_) => "object",
            bson::Bson::Boolean(_) => "bool",
            bson::Bson::Null => "null",
            bson::Bson::ObjectId(_) => "objectId",
            bson::Bson::DateTime(_) => "date",
            bson::Bson::RegularExpression(_) => "regex",
            bson::Bson::Binary(_) => "binData",
            _ => "value",
        }
    }
    filter.iter().map(|(k, v)| (k.clone(), value(v))).collect()
}

/// `count` items spread evenly over `items` (all of them when there are no more): the
/// `i * len / count`-th for each `i`, so the first is always taken and the gaps differ by at
/// most one.
pub(crate) fn even_sample<T>(items: &[T], count: usize) -> Vec<&T> {
    let mut positions = EvenPositions::new(items.len(), count);
    items
        .iter()
        .enumerate()
        .filter(|(p, _)| positions.take(*p))
        .map(|(_, item)| item)
        .collect()
}

/// The positions [`even_sample`] takes, met one at a time in a stream of known length.
#[derive(Debug, Clone)]
pub(crate) struct EvenPositions {
    len: usize,
    count: usize,
    taken: usize,
}

impl EvenPositions {
    pub(crate) fn new(len: usize, count: usize) -> EvenPositions {
        EvenPositions {
            len,
            count: count.min(len),
            taken: 0,
        }
    }

    /// Whether `position` is taken; positions must come in increasing order.
    pub(crate) fn take(&mut self, position: usize) -> bool {
        // With count <= len, i * len / count strictly increases with i.
        let next = (self.taken < self.count).then(|| self.taken * self.len / self.count);
        if next == Some(position) {
            self.taken += 1;
            true
        } else {
            false
        }
    }
}

/// The position in a stream of `len` inserts where its recent part (`share` of it) starts.
fn total_recent_start(len: usize, share: f64) -> usize {
    let recent = ((len as f64) * share).ceil() as usize;
    len - recent.clamp(usize::from(len > 0), len)
}

/// The value at a dotted path of a document (`None`: missing).
fn value_at<'a>(
    doc: &'a bson::RawDocument,
    path: &str,
) -> Result<Option<RawBsonRef<'a>>, AdvisorError> {
    // A path through an array has many values: the array is returned, as an array in the key.
    Path::new(path)
        .get_raw(doc, ArrayOnTheWay::Found)
        .map_err(|e| AdvisorError::Document(e.to_string()))
}

/// The encoded shard key of a document (see [`distribution::encoded_key`]); `None` when a
/// key field holds an array (MongoDB cannot place the document).
fn shard_key_of(key: &ShardKey, doc: &RawDocumentBuf) -> Result<Option<Vec<u8>>, AdvisorError> {
    match distribution::encoded_key(key, doc) {
        Ok(encoded) => Ok(Some(encoded)),
        Err(AnalyzeError::ArrayInKey(_)) => Ok(None),
        Err(e) => Err(AdvisorError::Document(e.to_string())),
    }
}

/// A range of the key, `[min, next chunk's min)`, and the keys it holds.
struct Chunk {
    /// Encoded lower bound; empty for MinKey (below every encoded key).
    min: Vec<u8>,
    shard: usize,
    keys: Vec<(Vec<u8>, u64)>,
    bytes: u64,
    /// Holds one key value, so it cannot split; retried when its keys have doubled.
    jumbo_until: usize,
}

impl Chunk {
    fn new(min: Vec<u8>, shard: usize) -> Chunk {
        Chunk {
            min,
            shard,
            keys: Vec::new(),
            bytes: 0,
            jumbo_until: 0,
        }
    }

    /// Splits at the median by bytes, never between equal keys: the upper half, or `None`.
    fn split(&mut self) -> Option<Chunk> {
        self.keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let half = self.bytes / 2;
        let mut seen = 0;
        let median = self
            .keys
            .iter()
            .position(|(_, size)| {
                seen += size;
                seen >= half
            })
            .unwrap_or(0)
            .max(1);
        let differs = |i: &usize| self.keys[*i].0 != self.keys[*i - 1].0;
        let at = (median..self.keys.len())
            .find(differs)
            .or_else(|| (1..median).rev().find(differs))?;
        let upper = self.keys.split_off(at);
        let moved: u64 = upper.iter().map(|(_, s)| s).sum();
        self.bytes -= moved;
        // Both halves can split again, and move.
        self.jumbo_until = 0;
        Some(Chunk {
            min: upper[0].0.clone(),
            shard: self.shard,
            keys: upper,
            bytes: moved,
            jumbo_until: 0,
        })
    }
}

/// MongoDB's balancer threshold: the chunk-count difference that starts a migration.
fn migration_threshold(chunks: usize) -> usize {
    match chunks {
        0..20 => 2,
        20..80 => 4,
        _ => 8,
    }
}

fn simulate(
    key: &ShardKey,
    documents: &[&RawDocumentBuf],
    shards: usize,
    chunk_bytes: u64,
    recent_from: usize,
) -> Candidate {
    let mut chunks = match key {
        ShardKey::Range(_) => vec![Chunk::new(Vec::new(), 0)],
        ShardKey::Hashed(_) => {
            let count = 2 * shards as u64;
            (0..count)
                .map(|i| {
                    let mut min = Vec::new();
                    if i > 0 {
                        // Even steps over the 2^64 hash values, from i64::MIN.
                        let step = (u64::MAX / count).wrapping_add(1);
                        let bound = (i64::MIN as u64).wrapping_add(step.wrapping_mul(i)) as i64;
                        encode_into(&mut min, RawBsonRef::Int64(bound), Direction::Ascending);
                    }
                    Chunk::new(min, i as usize % shards)
                })
                .collect()
        }
    };
    let mut candidate = Candidate::new(key.clone(), shards);
    for (position, doc) in documents.iter().enumerate() {
        let Ok(Some(encoded)) = shard_key_of(key, doc) else {
            candidate.unplaceable += 1;
            continue;
        };
        let size = doc.as_bytes().len() as u64;
        // The first chunk's lower bound is MinKey (empty, below every key): some chunk holds it.
        debug_assert!(chunks[0].min.is_empty());
        let at = chunks
            .partition_point(|c| c.min <= encoded)
            .saturating_sub(1);
        let chunk = &mut chunks[at];
        chunk.keys.push((encoded, size));
        chunk.bytes += size;
        candidate.inserts[chunk.shard] += 1;
        if position >= recent_from {
            candidate.recent_inserts[chunk.shard] += 1;
        }
        if chunk.bytes > chunk_bytes && chunk.keys.len() >= chunk.jumbo_until {
            match chunk.split() {
                Some(upper) => {
                    chunks.insert(at + 1, upper);
                    candidate.splits += 1;
                    candidate.migrations += balance(&mut chunks, shards);
                }
                None => chunk.jumbo_until = chunk.keys.len() * 2,
            }
        }
    }
    for chunk in &chunks {
        candidate.chunks[chunk.shard] += 1;
        candidate.documents[chunk.shard] += chunk.keys.len() as u64;
        candidate.bytes[chunk.shard] += chunk.bytes;
        if chunk.jumbo_until > 0 && chunk.bytes > chunk_bytes {
            candidate.jumbo += 1;
        }
    }
    candidate
}

/// One balancing round: migrations until the chunk counts differ by less than the
/// threshold; returns how many chunks moved.
fn balance(chunks: &mut [Chunk], shards: usize) -> u64 {
    let mut counts = vec![0usize; shards];
    for chunk in chunks.iter() {
        counts[chunk.shard] += 1;
    }
    let threshold = migration_threshold(chunks.len());
    let mut moved = 0;
    loop {
        let (donor, most) = counts
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or((0, 0), |(i, n)| (i, *n));
        let (recipient, least) = counts
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)))
            .map_or((0, 0), |(i, n)| (i, *n));
        if most - least < threshold {
            return moved;
        }
        // The donor's lowest chunk that can move (a jumbo chunk cannot).
        let Some(chunk) = chunks
            .iter_mut()
            .find(|c| c.shard == donor && c.jumbo_until == 0)
        else {
            return moved;
        };
        chunk.shard = recipient;
        counts[donor] -= 1;
        counts[recipient] += 1;
        moved += 1;
    }
}

/// How many queries a `mongos` would send to one shard, to the shards of some ranges, or to
/// every shard, under a candidate key; filters that do not parse are counted apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryMix {
    pub single: usize,
    pub targeted: usize,
    pub broadcast: usize,
    pub invalid: usize,
}

impl QueryMix {
    fn of(key: &ShardKey, queries: &[Document]) -> QueryMix {
        let mut mix = QueryMix::default();
        for query in queries {
            match route_filter(key, query) {
                Ok(Routing::SingleShard) => mix.single += 1,
                Ok(Routing::Targeted) => mix.targeted += 1,
                Ok(Routing::Broadcast) => mix.broadcast += 1,
                Err(_) => mix.invalid += 1,
            }
        }
        mix
    }

    fn total(&self) -> usize {
        self.single + self.targeted + self.broadcast
    }
}

/// One candidate key's simulated placement; every vector is indexed by shard.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub key: ShardKey,
    pub chunks: Vec<usize>,
    pub documents: Vec<u64>,
    pub bytes: Vec<u64>,
    /// Where each insert went when it arrived.
    pub inserts: Vec<u64>,
    /// The same for the recent part of the stream.
    pub recent_inserts: Vec<u64>,
    pub splits: u64,
    pub migrations: u64,
    /// Chunks over the bound that could not split (one key value).
    pub jumbo: usize,
    /// Documents with an array in a key field, which MongoDB cannot place.
    pub unplaceable: u64,
    pub queries: QueryMix,
    /// MongoDB's `analyzeShardKey` of the key (by [`Advisor::analyze_collection`]), or why
    /// it has no answer.
    pub analysis: Option<Result<ShardKeyAnalysis, Unanswered>>,
}

impl Candidate {
    fn new(key: ShardKey, shards: usize) -> Candidate {
        Candidate {
            key,
            chunks: vec![0; shards],
            documents: vec![0; shards],
            bytes: vec![0; shards],
            inserts: vec![0; shards],
            recent_inserts: vec![0; shards],
            splits: 0,
            migrations: 0,
            jumbo: 0,
            unplaceable: 0,
            queries: QueryMix::default(),
            analysis: None,
        }
    }

    /// The shard that took the most recent inserts, and its share of them (0 to 1).
    pub fn hottest_recent(&self) -> (usize, f64) {
        let (shard, most) = self
            .recent_inserts
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or((0, 0), |(i, n)| (i, *n));
        (shard, share(most, self.recent_inserts.iter().sum()))
    }

    /// How many shards took at least a twentieth of the recent inserts.
    pub fn recent_segments(&self) -> usize {
        let total: u64 = self.recent_inserts.iter().sum();
        self.recent_inserts
            .iter()
            .filter(|&&n| total > 0 && n * 20 >= total)
            .count()
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The advisor's findings for every candidate key.
#[derive(Debug, Clone)]
pub struct Report {
    /// Documents replayed, of `sampled_from`.
    pub documents: u64,
    pub sampled_from: u64,
    pub bytes: u64,
    pub shards: usize,
    pub chunk_bytes: u64,
    pub recent: f64,
    pub order: InsertOrder,
    pub queries: usize,
    /// Whether the queries are the collection's sampled ones.
    pub sampled: bool,
    pub candidates: Vec<Candidate>,
    /// The queries grouped by shape, most frequent first (by
    /// [`Advisor::analyze_collection`]).
    pub shapes: Vec<QueryShape>,
}

impl Report {
    /// The report drawn as an SVG picture: per candidate, the share of documents and of recent
    /// inserts on each shard.
    pub fn to_svg(&self) -> String {
        svg::draw(self)
    }
}

fn percents(values: &[u64]) -> String {
    let total: u64 = values.iter().sum();
    values
        .iter()
        .map(|&v| format!("{:>3.0}", 100.0 * share(v, total)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn size(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_header(f)?;
        self.write_table(f)?;
        self.write_notes(f)?;
        self.write_analyses(f)?;
        self.write_shapes(f)
    }
}

/// The sections of the report's text, in order.
impl Report {
    /// What was replayed, and how.
    fn write_header(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let order = match &self.order {
            InsertOrder::Id => "_id".to_owned(),
            InsertOrder::Field(field) => format!("`{field}`"),
        };
        write!(
            f,
            "{} documents ({}) replayed in {order} order",
            self.documents,
            size(self.bytes)
        )?;
        if self.sampled_from > self.documents {
            write!(f, " (an even sample of {})", self.sampled_from)?;
        }
        writeln!(
            f,
            " over {} shards; chunks split above {} (MongoDB: {} on the whole collection); recent inserts: the last {:.0}%",
            self.shards,
            size(self.chunk_bytes),
            size(MONGODB_CHUNK_BYTES),
            100.0 * self.recent
        )
    }

    /// A row per candidate.
    fn write_table(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "percentages per shard, in shard order\n")?;
        writeln!(
            f,
            "key                           chunks  moves  documents %              all inserts %            recent inserts %         hottest recent  queries single/targeted/broadcast"
        )?;
        for c in &self.candidates {
            let (hot, hot_share) = c.hottest_recent();
            writeln!(
                f,
                "{:<28} {:>7} {:>6}  {:<24} {:<24} {:<24} {:>5.0}% shard {:<2}  {}",
                c.key.to_document().to_string(),
                c.chunks.iter().sum::<usize>(),
                c.migrations,
                percents(&c.documents),
                percents(&c.inserts),
                percents(&c.recent_inserts),
                100.0 * hot_share,
                hot,
                self.routed(c)
            )?;
        }
        Ok(())
    }

    /// The table's last column: how the queries route under the candidate.
    fn routed(&self, c: &Candidate) -> String {
        if self.queries == 0 {
            return "no queries given".to_owned();
        }
        let total = c.queries.total() as u64;
        let mut text = format!(
            "{:.0}% / {:.0}% / {:.0}%",
            100.0 * share(c.queries.single as u64, total),
            100.0 * share(c.queries.targeted as u64, total),
            100.0 * share(c.queries.broadcast as u64, total)
        );
        if c.queries.invalid > 0 {
            let _ = write!(text, " ({} did not parse)", c.queries.invalid);
        }
        text
    }

    /// A line per candidate with chunks that cannot split or documents that cannot be placed.
    fn write_notes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.candidates {
            let mut notes = Vec::new();
            if c.jumbo > 0 {
                notes.push(format!(
                    "{} jumbo chunk(s) of one key value that cannot split",
                    c.jumbo
                ));
            }
            if c.unplaceable > 0 {
                notes.push(format!(
                    "{} document(s) with an array in a key field, which MongoDB cannot place",
                    c.unplaceable
                ));
            }
            if !notes.is_empty() {
                writeln!(f, "{}: {}", c.key.to_document(), notes.join("; "))?;
            }
        }
        Ok(())
    }

    /// MongoDB's `analyzeShardKey` answers, when asked.
    fn write_analyses(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.candidates.iter().any(|c| c.analysis.is_some()) {
            return Ok(());
        }
        writeln!(f, "\nMongoDB's analyzeShardKey, per candidate:")?;
        for c in &self.candidates {
            match &c.analysis {
                Some(Ok(analysis)) => write!(f, "{analysis}")?,
                Some(Err(reason)) => writeln!(
                    f,
                    "analyzeShardKey {}\n  no answer: {reason}",
                    c.key.to_document()
                )?,
                None => {}
            }
        }
        Ok(())
    }

    /// The query shapes, and where each candidate routes them.
    fn write_shapes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shapes.is_empty() {
            return Ok(());
        }
        let source = if self.sampled {
            "sampled queries"
        } else {
            "queries"
        };
        writeln!(
            f,
            "\n{source} by shape, and where each candidate routes them (in candidate order):"
        )?;
        for shape in &self.shapes {
            let routes: Vec<&str> = shape
                .routing
                .iter()
                .map(|r| r.map_or("invalid", Routing::as_str))
                .collect();
            writeln!(
                f,
                "{:>6} x {:<14} {:<44} {}",
                shape.count,
                shape.command,
                shape.shape.to_string(),
                routes.join(" | ")
            )?;
        }
        Ok(())
    }
}

/// Reads every document of an engine collection, in `_id` order, for [`Advisor::analyze`].
pub fn collection_documents(
    db: &odm_engine::Database,
    collection: &str,
) -> odm_engine::Result<Option<Vec<RawDocumentBuf>>> {
    let txn = db.read()?;
    let Some(coll) = txn.collection(collection)? else {
        return Ok(None);
    };
    let options = odm_engine::query::FindOptions::default();
    coll.find_raw(&bson::doc! {}, &options)?
        .collect::<odm_engine::Result<Vec<_>>>()
        .map(Some)
}
