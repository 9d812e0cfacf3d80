//! MongoDB's `analyzeShardKey` on an embedded collection: a candidate key's characteristics
//! ([`super::characteristics`]) and, from the collection's sampled queries, its read and write
//! distribution ([`super::distribution`]), with MongoDB's arguments, rules, errors and output.
//!
//! The rules of the command itself:
//! - `keyCharacteristics` and `readWriteDistribution` (both on by default) cannot both be off;
//!   `sampleRate` (in (0, 1]) and `sampleSize` (above 0) choose how many documents the
//!   characteristics read, never both;
//! - the characteristics need a supporting index: one whose fields start with the key's fields
//!   (`1` or `"hashed"` alike), not sparse, partial or multikey. Without one they are left out
//!   when the distribution is asked for, and an error otherwise;
//! - an empty collection has no characteristics (an error); a missing one is
//!   `NamespaceNotFound`.

use std::fmt;

use bson::Document;
use odm_engine::sampling::SampledQuery;
use odm_engine::{ErrorCode, IndexSpec, ShardKey};

use super::characteristics::{
    KeyCharacteristics, KeySource, MOST_COMMON_VALUES, ReplyError, key_characteristics, key_values,
};
use super::distribution::{
    NUM_RANGES, Ranges, ReadDistribution, SAMPLES_PER_RANGE, WriteDistribution, distributions,
    encoded_key,
};

/// Why `analyzeShardKey` cannot answer; each with MongoDB's code (see [`AnalyzeError::code`]).
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("The namespace does not exist")]
    NamespaceNotFound,
    #[error("{0}")]
    InvalidOptions(String),
    #[error("{0}")]
    BadValue(String),
    #[error("The shard key contains an array field '{0}'")]
    ArrayInKey(String),
    #[error("Cannot analyze the characteristics of a shard key for an empty collection")]
    EmptyCollection,
    #[error(
        "Cannot analyze the characteristics of a shard key that does not have a supporting index"
    )]
    NoSupportingIndex,
    #[error(
        "The shard key provided does not have enough cardinality to make the required number of chunks of {wanted}, it can only make {possible} chunks"
    )]
    NotEnoughCardinality { wanted: usize, possible: usize },
    /// A stored document that does not read.
    #[error("a stored document does not read: {0}")]
    Document(String),
    #[error(transparent)]
    Engine(#[from] odm_engine::Error),
}

/// Why `analyzeShardKey` gave a candidate of the advisor no answer: the refusal's message and
/// MongoDB's code (an [`AnalyzeError`] kept in a form a report can be cloned with).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({})", code.name())]
pub struct Unanswered {
    pub message: String,
    pub code: ErrorCode,
}

impl From<AnalyzeError> for Unanswered {
    fn from(e: AnalyzeError) -> Unanswered {
        Unanswered {
            message: e.to_string(),
            code: e.code(),
        }
    }
}

impl AnalyzeError {
    /// MongoDB's code for the condition.
    pub fn code(&self) -> ErrorCode {
        match self {
            AnalyzeError::NamespaceNotFound => ErrorCode::NAMESPACE_NOT_FOUND,
            AnalyzeError::InvalidOptions(_) => ErrorCode::INVALID_OPTIONS,
            AnalyzeError::BadValue(_) | AnalyzeError::ArrayInKey(_) => ErrorCode::BAD_VALUE,
            AnalyzeError::EmptyCollection | AnalyzeError::NoSupportingIndex => {
                ErrorCode::ILLEGAL_OPERATION
            }
            AnalyzeError::NotEnoughCardinality { .. } => ErrorCode::location(4_952_606),
            AnalyzeError::Engine(e) => e.error_code(),
            AnalyzeError::Document(_) => ErrorCode::INTERNAL_ERROR,
        }
    }
}

/// `analyzeShardKey`'s options.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeOptions {
    pub key_characteristics: bool,
    pub read_write_distribution: bool,
    pub sample_rate: Option<f64>,
    pub sample_size: Option<i64>,
    /// MongoDB's server parameter `analyzeShardKeyNumRanges` (2 to 10,000; 100).
    pub num_ranges: usize,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            key_characteristics: true,
            read_write_distribution: true,
            sample_rate: None,
            sample_size: None,
            num_ranges: NUM_RANGES,
        }
    }
}

impl AnalyzeOptions {
    fn check(&self) -> Result<(), AnalyzeError> {
        if !self.key_characteristics && !self.read_write_distribution {
            return Err(AnalyzeError::InvalidOptions(
                "Cannot skip analyzing all metrics".into(),
            ));
        }
        if self.sample_rate.is_some() && self.sample_size.is_some() {
            return Err(AnalyzeError::InvalidOptions(
                "Cannot specify both 'sampleRate' and 'sampleSize'".into(),
            ));
        }
        if let Some(rate) = self.sample_rate
            && !(rate > 0.0 && rate <= 1.0)
        {
            return Err(AnalyzeError::BadValue(format!(
                "'sampleRate' must be greater than 0 and less than or equal to 1, not {rate}"
            )));
        }
        if let Some(size) = self.sample_size {
            if size <= 0 {
                return Err(AnalyzeError::BadValue(format!(
                    "'sampleSize' must be greater than 0, not {size}"
                )));
            }
            if self.key_characteristics && size < MOST_COMMON_VALUES as i64 {
                return Err(AnalyzeError::InvalidOptions(format!(
                    "The requested number of most common values is {MOST_COMMON_VALUES} but the requested number of documents according to 'sampleSize' is {size}"
                )));
            }
        }
        if !(2..=10_000).contains(&self.num_ranges) {
            return Err(AnalyzeError::BadValue(format!(
                "the number of ranges must be from 2 to 10000, not {}",
                self.num_ranges
            )));
        }
        Ok(())
    }

    /// How many of `total` documents the characteristics read.
    fn documents_to_sample(&self, total: u64) -> u64 {
        match (self.sample_rate, self.sample_size) {
            (Some(rate), _) => ((rate * total as f64).ceil() as u64).min(total),
            (None, Some(size)) => (size as u64).min(total),
            // MongoDB's `analyzeShardKeyCharacteristicsDefaultSampleSize`.
            (None, None) => total.min(10_000_000),
        }
    }
}

/// `analyzeShardKey`'s answer for one key.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardKeyAnalysis {
    pub key: ShardKey,
    /// `None` when not asked for, or (with the distribution asked for) without a supporting
    /// index.
    pub key_characteristics: Option<KeyCharacteristics>,
    pub read_distribution: Option<ReadDistribution>,
    pub write_distribution: Option<WriteDistribution>,
}

impl ShardKeyAnalysis {
    /// The reply MongoDB gives, without `ok`.
    pub fn to_document(&self) -> Document {
        let mut d = Document::new();
        if let Some(k) = &self.key_characteristics {
            d.insert("keyCharacteristics", k.to_document());
        }
        if let Some(r) = &self.read_distribution {
            d.insert("readDistribution", r.to_document());
        }
        if let Some(w) = &self.write_distribution {
            d.insert("writeDistribution", w.to_document());
        }
        d
    }

    /// The typed form of a server's `analyzeShardKey` reply (counts read back from its
    /// percentages, which MongoDB gives to ten decimals).
    pub fn from_document(key: ShardKey, reply: &Document) -> Result<ShardKeyAnalysis, ReplyError> {
        Ok(ShardKeyAnalysis {
            key,
            key_characteristics: reply
                .get_document("keyCharacteristics")
                .ok()
                .map(KeyCharacteristics::from_document)
                .transpose()?,
            read_distribution: reply
                .get_document("readDistribution")
                .ok()
                .map(ReadDistribution::from_document)
                .transpose()?,
            write_distribution: reply
                .get_document("writeDistribution")
                .ok()
                .map(WriteDistribution::from_document)
                .transpose()?,
        })
    }
}

/// The supporting index of a key: the one with the fewest fields, a unique one among equals.
fn supporting_index<'a>(
    indexes: &'a [IndexSpec],
    multikey: impl Fn(&str) -> bool,
    key: &ShardKey,
) -> Option<&'a IndexSpec> {
    let fields: Vec<&str> = key
        .paths()
        .into_iter()
        .map(odm_engine::Path::as_str)
        .collect();
    indexes
        .iter()
        .filter(|index| {
            let names: Vec<&str> = index.keys().iter().map(|(p, _)| p.as_str()).collect();
            names.starts_with(&fields)
                && !index.is_sparse()
                && index.partial_filter().is_none()
                && !multikey(index.name())
        })
        .min_by_key(|index| (index.keys().len(), !is_unique(index)))
}

/// Whether an index holds each key once: a unique one, or `_id_`.
fn is_unique(index: &IndexSpec) -> bool {
    index.is_unique() || index.name() == odm_engine::ID_INDEX_NAME
}

/// Whether an index starts with the key value for value (ascending fields, unhashed; or the
/// hashed field hashed), usable to compare key order with record order.
fn ordered_index(indexes: &[IndexSpec], multikey: impl Fn(&str) -> bool, key: &ShardKey) -> bool {
    let ShardKey::Range(fields) = key else {
        return false;
    };
    indexes.iter().any(|index| {
        index.keys().len() >= fields.len()
            && fields.iter().zip(index.keys()).enumerate().all(
                |(i, ((path, dir), (ipath, idir)))| {
                    path == ipath && dir == idir && index.hashed_field() != Some(i)
                },
            )
            && !index.is_sparse()
            && index.partial_filter().is_none()
            && !multikey(index.name())
    })
}

/// `analyzeShardKey` of `key` on `collection` of `db`.
pub fn analyze_shard_key(
    db: &odm_engine::Database,
    collection: &str,
    key: &ShardKey,
    options: &AnalyzeOptions,
) -> Result<ShardKeyAnalysis, AnalyzeError> {
    options.check()?;
    // The samples first: listing them writes those waiting, which needs no open snapshot.
    let samples = if options.read_write_distribution {
        current_samples(db, collection)?
    } else {
        Vec::new()
    };
    let txn = db.read()?;
    let coll = txn
        .collection(collection)?
        .ok_or(AnalyzeError::NamespaceNotFound)?;
    let total = coll.len()?;
    if options.key_characteristics && total == 0 {
        return Err(AnalyzeError::EmptyCollection);
    }
    let indexes = txn.list_indexes(collection);
    let multikey = |name: &str| txn.is_multikey(collection, name);
    let support = supporting_index(&indexes, multikey, key).filter(|_| options.key_characteristics);
    if options.key_characteristics && support.is_none() && !options.read_write_distribution {
        return Err(AnalyzeError::NoSupportingIndex);
    }
    // One pass in record (`_id`) order, keeping only the keys of the documents each part
    // reads: an even sample for the characteristics, `num_ranges * 10` for the split points.
    let len = usize::try_from(total).unwrap_or(usize::MAX);
    let mut for_characteristics = super::EvenPositions::new(
        len,
        if support.is_some() {
            usize::try_from(options.documents_to_sample(total)).unwrap_or(usize::MAX)
        } else {
            0
        },
    );
    let mut for_ranges = super::EvenPositions::new(
        len,
        if options.read_write_distribution {
            options.num_ranges * SAMPLES_PER_RANGE
        } else {
            0
        },
    );
    let mut keyed: Vec<(Vec<u8>, usize)> = Vec::new();
    let mut split_keys: Vec<Vec<u8>> = Vec::new();
    let (mut bytes, mut object_ids) = (0u64, true);
    for (position, doc) in coll.scan()?.enumerate() {
        let doc = doc?;
        let raw = doc.as_raw()?;
        bytes += doc.bytes().len() as u64;
        object_ids &= matches!(raw.get("_id"), Ok(Some(bson::RawBsonRef::ObjectId(_))));
        if for_characteristics.take(position) {
            keyed.push((encoded_key(key, raw)?, position));
        }
        if for_ranges.take(position) {
            split_keys.push(encoded_key(key, raw)?);
        }
    }
    let key_characteristics = match support {
        Some(index) => {
            let source = KeySource {
                num_docs_total: total,
                avg_doc_size_bytes: bytes.checked_div(total).unwrap_or(0),
                is_unique: is_unique(index) && index.keys().len() == key.paths().len(),
                ordered_index: ordered_index(&indexes, multikey, key),
                record_order: object_ids,
            };
            // The most common values are shown as stored, not as hashes: read them back.
            let values_at = |positions: &[usize]| {
                let mut found: Vec<Option<Document>> = vec![None; positions.len()];
                for (position, doc) in coll.scan()?.enumerate() {
                    if let Some(at) = positions.iter().position(|p| *p == position) {
                        found[at] = Some(key_values(key, doc?.as_raw()?)?);
                    }
                }
                Ok(found.into_iter().map(Option::unwrap_or_default).collect())
            };
            Some(key_characteristics(&source, keyed, key, values_at)?)
        }
        None => None,
    };
    let (read_distribution, write_distribution) = if options.read_write_distribution {
        let ranges = Ranges::from_keys(split_keys, options.num_ranges)?;
        let (reads, writes) = distributions(key, &ranges, &samples);
        (Some(reads), Some(writes))
    } else {
        (None, None)
    };
    Ok(ShardKeyAnalysis {
        key: key.clone(),
        key_characteristics,
        read_distribution,
        write_distribution,
    })
}

/// The samples of the collection as it is now: a dropped collection's of the same name are not
/// its own (MongoDB matches samples by collection UUID).
pub fn current_samples(
    db: &odm_engine::Database,
    collection: &str,
) -> Result<Vec<SampledQuery>, AnalyzeError> {
    let Some(analyzer) = db.query_analyzer(collection) else {
        return Ok(Vec::new());
    };
    // By UUID alone: samples taken before a rename carry the old name.
    Ok(db
        .sampled_queries(None)?
        .into_iter()
        .filter(|s| s.collection_uuid == analyzer.collection_uuid)
        .collect())
}

impl fmt::Display for ShardKeyAnalysis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "analyzeShardKey {}", self.key.to_document())?;
        match &self.key_characteristics {
            Some(k) => {
                write!(
                    f,
                    "  keyCharacteristics: {} documents ({} read), {} distinct values, unique: {}, monotonicity: {}",
                    k.num_docs_total,
                    k.num_docs_sampled,
                    k.num_distinct_values,
                    k.is_unique,
                    k.monotonicity.as_str()
                )?;
                if let Some(c) = k.correlation {
                    write!(f, " (correlation {c:.3})")?;
                }
                writeln!(f)?;
                if k.most_common_values.iter().all(|(_, n)| *n <= 1) {
                    writeln!(f, "  mostCommonValues: every value once")?;
                } else {
                    let common: Vec<String> = k
                        .most_common_values
                        .iter()
                        .map(|(v, n)| format!("{v} x{n}"))
                        .collect();
                    writeln!(f, "  mostCommonValues: {}", common.join(", "))?;
                }
            }
            None => writeln!(f, "  keyCharacteristics: none (no supporting index)")?,
        }
        let pct = |part: u64, whole: u64| {
            if whole == 0 {
                0.0
            } else {
                100.0 * part as f64 / whole as f64
            }
        };
        if self
            .read_distribution
            .as_ref()
            .is_some_and(|r| r.total() == 0)
        {
            writeln!(f, "  reads:  none sampled")?;
        }
        if let Some(r) = self.read_distribution.as_ref().filter(|r| r.total() > 0) {
            let t = &r.targets;
            writeln!(
                f,
                "  reads:  {} sampled; single shard {:.1}%, multi-shard {:.1}%, scatter-gather {:.1}%",
                r.total(),
                pct(t.single_shard, r.total()),
                pct(t.multi_shard, r.total()),
                pct(t.scatter_gather, r.total())
            )?;
        }
        if self
            .write_distribution
            .as_ref()
            .is_some_and(|w| w.total() == 0)
        {
            writeln!(f, "  writes: none sampled")?;
        }
        if let Some(w) = self.write_distribution.as_ref().filter(|w| w.total() > 0) {
            let t = &w.targets;
            writeln!(
                f,
                "  writes: {} sampled; single shard {:.1}%, multi-shard {:.1}%, scatter-gather {:.1}%; key updates {:.1}%, single writes without the key {:.1}%, multi writes without the key {:.1}%",
                w.total(),
                pct(t.single_shard, w.total()),
                pct(t.multi_shard, w.total()),
                pct(t.scatter_gather, w.total()),
                pct(w.shard_key_updates, w.total()),
                pct(w.single_writes_without_shard_key, w.total()),
                pct(w.multi_writes_without_shard_key, w.total())
            )?;
        }
        Ok(())
    }
}
