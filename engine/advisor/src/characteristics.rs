//! MongoDB's `keyCharacteristics` of `analyzeShardKey` (7.0), computed on an embedded
//! collection: how many documents, their average size, whether the key is unique, how many
//! distinct values it has and the most common ones with their frequencies, and its
//! monotonicity.
//!
//! MongoDB's rules, followed here:
//! - a missing key field counts as `null` (a B-tree index stores it so); an array in a key field
//!   cannot be in a shard key, and is an error naming the field;
//! - the key is unique when its supporting index is unique and has exactly the key's fields;
//! - monotonicity is Pearson's correlation between the order of the key (an index's order, equal
//!   keys by record) and the order of the records, "monotonic" from 0.7 in absolute value
//!   (`analyzeShardKeyMonotonicityCorrelationCoefficientThreshold`), so a decreasing key is
//!   monotonic too. A hashed key is "not monotonic" with coefficient 0, and so is a key with one
//!   value; without an index that starts with the key value for value, it is "unknown".
//!
//! Record order: the engine stores documents by `_id`, as MongoDB's clustered collections do,
//! and keeps no record ids of insertion. When every `_id` is an ObjectId (as drivers and the
//! typed layer make them, from the time and a counter), `_id` order is insertion order and
//! monotonicity is measured against it; otherwise it is "unknown", as MongoDB answers for a
//! clustered collection.

use bson::{Bson, Document, RawBsonRef};
use odm_engine::ShardKey;

use super::analyze::AnalyzeError;
use super::value_at;

/// MongoDB's `analyzeShardKeyMonotonicityCorrelationCoefficientThreshold`.
pub const MONOTONICITY_THRESHOLD: f64 = 0.7;

/// MongoDB's `analyzeShardKeyNumMostCommonValues`.
pub const MOST_COMMON_VALUES: usize = 5;

/// `keyCharacteristics`, field for field.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyCharacteristics {
    pub num_docs_total: u64,
    pub num_docs_sampled: u64,
    pub avg_doc_size_bytes: u64,
    pub is_unique: bool,
    pub num_distinct_values: u64,
    /// The most common key values (a document of the key's fields) and how many documents
    /// hold each, most frequent first.
    pub most_common_values: Vec<(Document, u64)>,
    /// `recordIdCorrelationCoefficient`; `None` exactly when the type is unknown.
    pub correlation: Option<f64>,
    pub monotonicity: Monotonicity,
}

/// `monotonicity.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Monotonicity {
    Monotonic,
    NotMonotonic,
    Unknown,
}

impl Monotonicity {
    pub fn as_str(self) -> &'static str {
        match self {
            Monotonicity::Monotonic => "monotonic",
            Monotonicity::NotMonotonic => "not monotonic",
            Monotonicity::Unknown => "unknown",
        }
    }
}

/// What the characteristics are computed from, besides the keys read.
#[derive(Debug, Clone, Copy)]
pub struct KeySource {
    /// The collection's document count and average size (all documents, not the sample).
    pub num_docs_total: u64,
    pub avg_doc_size_bytes: u64,
    /// Whether the supporting index is unique and has exactly the key's fields.
    pub is_unique: bool,
    /// Whether an index starts with the key value for value (`{a: 1}` for a ranged `{a: 1}`,
    /// not `{a: "hashed"}`), so that key order can be compared with record order.
    pub ordered_index: bool,
    /// Whether record order is insertion order: the engine stores documents by `_id`, and
    /// `_id` order is insertion order when every `_id` is an ObjectId.
    pub record_order: bool,
}

/// The characteristics of `key` from `keyed`: the encoded key (a hashed field as its hash) and
/// record position of each document read. `values_at` gives, for record positions, the key's
/// values in those documents (for the most common values, which show the values, not hashes).
pub fn key_characteristics(
    source: &KeySource,
    mut keyed: Vec<(Vec<u8>, usize)>,
    key: &ShardKey,
    values_at: impl FnOnce(&[usize]) -> Result<Vec<Document>, AnalyzeError>,
) -> Result<KeyCharacteristics, AnalyzeError> {
    let sampled = keyed.len() as u64;
    // Index order: by key, equal keys by record.
    keyed.sort_unstable();
    // Each distinct key: its first record and how many documents hold it.
    let mut groups: Vec<(usize, u64)> = Vec::new();
    let mut previous: Option<&[u8]> = None;
    for (encoded, position) in &keyed {
        match groups.last_mut() {
            Some(last) if previous == Some(encoded.as_slice()) => last.1 += 1,
            _ => groups.push((*position, 1)),
        }
        previous = Some(encoded);
    }
    let num_distinct_values = groups.len() as u64;
    // Most frequent first; among equals, the key's order (a stable sort keeps it).
    groups.sort_by_key(|g| std::cmp::Reverse(g.1));
    groups.truncate(MOST_COMMON_VALUES);
    let positions: Vec<usize> = groups.iter().map(|g| g.0).collect();
    let values = values_at(&positions)?;
    let most_common_values = values.into_iter().zip(groups.iter().map(|g| g.1)).collect();
    let (correlation, monotonicity) = match key {
        // MongoDB: without record ids of insertion (a clustered collection), unknown.
        _ if !source.record_order => (None, Monotonicity::Unknown),
        // A hashed first field is never monotonic, coefficient 0.
        ShardKey::Hashed(_) => (Some(0.0), Monotonicity::NotMonotonic),
        ShardKey::Range(_) if !source.ordered_index => (None, Monotonicity::Unknown),
        ShardKey::Range(_) if num_distinct_values <= 1 => (Some(0.0), Monotonicity::NotMonotonic),
        ShardKey::Range(_) => match correlation(keyed.iter().map(|(_, position)| *position)) {
            Some(c) if c.abs() >= MONOTONICITY_THRESHOLD => (Some(c), Monotonicity::Monotonic),
            Some(c) => (Some(c), Monotonicity::NotMonotonic),
            None => (None, Monotonicity::Unknown),
        },
    };
    Ok(KeyCharacteristics {
        num_docs_total: source.num_docs_total.max(sampled),
        num_docs_sampled: sampled,
        avg_doc_size_bytes: source.avg_doc_size_bytes,
        is_unique: source.is_unique,
        num_distinct_values,
        most_common_values,
        correlation: correlation.map(round_up),
        monotonicity,
    })
}

/// The key's values in a document, a missing field as `null` (MongoDB's B-tree stores it so).
pub(crate) fn key_values(
    key: &ShardKey,
    doc: &bson::RawDocument,
) -> Result<Document, AnalyzeError> {
    let mut values = Document::new();
    for path in key.paths() {
        let value = value_at(doc, path.as_str())
            .map_err(|e| AnalyzeError::Document(e.to_string()))?
            .unwrap_or(RawBsonRef::Null);
        let value = Bson::try_from(value).map_err(|e| AnalyzeError::Document(e.to_string()))?;
        values.insert(path.as_str(), value);
    }
    Ok(values)
}

/// Pearson's coefficient between the positions 0, 1, 2, ... (the key's order) and the record
/// positions read in that order; `None` below two documents.
fn correlation(records: impl ExactSizeIterator<Item = usize>) -> Option<f64> {
    let n = records.len();
    if n < 2 {
        return None;
    }
    let records: Vec<f64> = records.map(|r| r as f64).collect();
    // The record positions of a sample are not 0..n: their own mean and variance.
    let mean_x = (n as f64 - 1.0) / 2.0;
    let mean_y = records.iter().sum::<f64>() / n as f64;
    let (mut cov, mut var_x, mut var_y) = (0.0, 0.0, 0.0);
    for (i, y) in records.iter().enumerate() {
        let (dx, dy) = (i as f64 - mean_x, y - mean_y);
        cov += dx * dy;
        var_x += dx * dx;
        var_y += dy * dy;
    }
    if var_y == 0.0 {
        return None;
    }
    Some((cov / (var_x * var_y).sqrt()).clamp(-1.0, 1.0))
}

/// MongoDB rounds its ratios up at the tenth decimal.
pub(crate) fn round_up(value: f64) -> f64 {
    (value * 1e10).ceil() / 1e10
}

/// Why a server's `analyzeShardKey` reply does not read as the typed analysis.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// The count `field` is missing or not a number.
    #[error("no count `{0}`")]
    NoCount(String),
    /// A document or array field is missing or of another type; the bson crate's reason.
    #[error(transparent)]
    Field(#[from] bson::error::Error),
}

/// A count of a reply: any BSON number.
pub(crate) fn count_of(d: &Document, field: &str) -> Result<u64, ReplyError> {
    match d.get(field) {
        Some(Bson::Int64(n)) => Ok((*n).max(0) as u64),
        Some(Bson::Int32(n)) => Ok((*n).max(0) as u64),
        Some(Bson::Double(n)) => Ok(n.max(0.0) as u64),
        _ => Err(ReplyError::NoCount(field.to_owned())),
    }
}

impl KeyCharacteristics {
    /// The typed form of a server's `keyCharacteristics`.
    pub fn from_document(d: &Document) -> Result<KeyCharacteristics, ReplyError> {
        let monotonicity = d.get_document("monotonicity")?;
        let kind = match monotonicity.get_str("type").unwrap_or("unknown") {
            "monotonic" => Monotonicity::Monotonic,
            "not monotonic" => Monotonicity::NotMonotonic,
            _ => Monotonicity::Unknown,
        };
        let most_common_values = d
            .get_array("mostCommonValues")?
            .iter()
            .filter_map(Bson::as_document)
            .map(|v| Ok((v.get_document("value")?.clone(), count_of(v, "frequency")?)))
            .collect::<Result<_, ReplyError>>()?;
        Ok(KeyCharacteristics {
            num_docs_total: count_of(d, "numDocsTotal")?,
            num_docs_sampled: count_of(d, "numDocsSampled")?,
            avg_doc_size_bytes: count_of(d, "avgDocSizeBytes")?,
            is_unique: d.get_bool("isUnique").unwrap_or(false),
            num_distinct_values: count_of(d, "numDistinctValues")?,
            most_common_values,
            correlation: monotonicity.get_f64("recordIdCorrelationCoefficient").ok(),
            monotonicity: kind,
        })
    }

    /// The `keyCharacteristics` document as `analyzeShardKey` returns it.
    pub fn to_document(&self) -> Document {
        let most_common: Vec<Bson> = self
            .most_common_values
            .iter()
            .map(|(value, frequency)| {
                Bson::Document(bson::doc! {
                    "value": value.clone(),
                    "frequency": i64::try_from(*frequency).unwrap_or(i64::MAX),
                })
            })
            .collect();
        let mut monotonicity = bson::doc! {};
        if let Some(c) = self.correlation {
            monotonicity.insert("recordIdCorrelationCoefficient", c);
        }
        monotonicity.insert("type", self.monotonicity.as_str());
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        bson::doc! {
            "numDocsTotal": count(self.num_docs_total),
            "avgDocSizeBytes": count(self.avg_doc_size_bytes),
            "numDocsSampled": count(self.num_docs_sampled),
            "isUnique": self.is_unique,
            "numDistinctValues": count(self.num_distinct_values),
            "mostCommonValues": most_common,
            "monotonicity": monotonicity,
        }
    }
}
