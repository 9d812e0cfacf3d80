//! `Bucket<K, T>`: items of type `T` grouped by an owner key of type `K` into bucket documents,
//! the one implementation of bucketing that [`crate::Inbox`], [`crate::TimeSeries`],
//! [`crate::History`] and [`crate::Daily`] are built on.
//!
//! A bucket is one document: `{owner, seq, start, count, bytes, closed, control, items: [..]}`.
//! - `seq` numbers an owner's buckets from 0 in the order they were opened; `(owner, seq)` is
//!   unique, and reads walk it in either direction.
//! - A bucket closes by the policy chosen at open, whichever limit comes first: at most N items
//!   ([`BucketOptions::max_items`]), one aligned time span ([`BucketOptions::span`]: the
//!   bucket's `start` is its item times rounded down to the span), or a byte budget
//!   ([`BucketOptions::max_bytes`]; 1 MiB when no count bounds a bucket, so that a bucket never
//!   nears MongoDB's 16 MiB document limit; an item larger than the budget gets a bucket of its
//!   own). The budget counts each item's encoding and what the array adds per element, as
//!   pushed: an item that [`Bucket::update_item`] later grows is not counted again. A count
//!   chosen without a budget is trusted to keep buckets small: a push that would pass 16 MiB
//!   fails with the engine's size error and changes nothing.
//! - `count` is the number of slots used. Removing an item does not give its slot back, so a
//!   later item never lands in an older bucket and the order of the items never changes.
//! - Order: items read back in the order they were pushed, except that under a span policy an
//!   item goes to its span's bucket, so a late item for an earlier span reads with that span's
//!   items (before later spans' items pushed earlier).
//! - `control` holds summaries kept on write, as MongoDB's time-series buckets keep theirs: the
//!   earliest and latest item time ([`BucketOptions::time`]), and the minimum and maximum of
//!   each summary field ([`BucketOptions::summary`]). Reads by time or by a summary field skip
//!   the buckets whose summaries rule them out. Summaries are bounds: after a removal they may
//!   be wider than the items left, never narrower.
//!
//! Two ways to find the bucket a new item goes to, both from the source documents (S1c):
//! - **Upsert** (the default): update the owner's open bucket for the item's span if it has
//!   room (`count < N`, the budget not exceeded), found through the index
//!   `(owner, start, closed)` (or by `_id`, when the handle remembers the bucket it opened
//!   for the owner and span; a hint, checked by the same conditions); when it has none, mark
//!   it `closed` and open bucket `seq + 1` after the owner's newest. One write per item; a
//!   bucket's opening adds a read of the newest and, when the owner has buckets, the closing
//!   write. Each span has one open bucket, and a closed bucket never takes
//!   another item (even one small enough for the bytes left), so within a span items keep the
//!   order they were pushed in. Write transactions are serialised, so two writers never open two buckets.
//! - **Sequence** ([`BucketOptions::sequence`]): a counter per owner, incremented with
//!   find-and-modify, numbers the items; item `n` goes to bucket `n / N` by an upsert on
//!   `(owner, seq)`. Two writes per item (the counter and the bucket), but a bucket is found
//!   by its number alone: no index on the count, and item `n`'s bucket is known without a
//!   read. It closes buckets by count only: a span or a byte budget cannot number items.
//!
//! Indexes: `(owner, seq)` unique and `(owner, start, closed)` are declared on the model. The
//! TTL index of [`BucketOptions::retention`] (on `control.latest`) and the multikey index on
//! the items' times of [`BucketOptions::index_item_times`] depend on choices made at open, so
//! they are created there.
//!
//! [`Prepared`] is an item encoded once, its push and open-bucket updates parsed on first use,
//! for any number of owners (an inbox's fan-out). The upsert way's memory of the bucket it
//! opened per owner and span (`OpenBuckets`) is shared by a handle's clones; it is a hint
//! only: the push to it by `_id` still requires room, and a miss goes through the
//! `(owner, start, closed)` index. [`Read`] reads one owner or all: time, summary and sequence
//! ranges, both orders, pages, counts, streaming through [`Items`]; item conditions run as a
//! `$filter` in the engine, so only matching items are decoded.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime, doc};
use odm::engine::query::Explain;
use odm::{
    Collection, Document, Element, Embedded, Expr, Field, Filter, Group, Index, IntoValue,
    ModifyOptions, PreparedConditions, PreparedUpdate, Sort, Txn, Update, UpdateOptions,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// A bucket's summaries of its items, kept on write (MongoDB's `control` of a time-series
/// bucket): bounds, never narrower than the items they summarise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Control {
    /// The earliest item time ([`BucketOptions::time`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earliest: Option<DateTime>,
    /// The latest item time: the TTL index of [`BucketOptions::retention`] expires by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<DateTime>,
    /// The minimum of each summary field, nested as the field is in an item (`loc.lat` under
    /// `loc`).
    #[serde(default)]
    pub min: BTreeMap<String, Bson>,
    /// The maximum of each summary field, nested as the field is in an item.
    #[serde(default)]
    pub max: BTreeMap<String, Bson>,
}

/// One bucket as stored; see the module documentation.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(
    collection = "buckets",
    index(keys(owner = 1, seq = 1), unique),
    index(keys("owner" = 1, start = 1, closed = 1))
)]
pub struct BucketDoc<K, T> {
    #[odm(id)]
    pub id: ObjectId,
    pub owner: K,
    /// The bucket's number among its owner's, from 0, in the order they were opened.
    pub seq: i64,
    /// The start of the aligned span the bucket covers, under a span policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<DateTime>,
    /// Slots used: items pushed, removed ones included.
    pub count: i64,
    /// Encoded bytes of the items pushed, removed ones included (counted under a byte budget).
    #[serde(default)]
    pub bytes: i64,
    /// Set when an item found no room in the bucket (full, or too few bytes left) and a newer
    /// one was opened: no later item goes into it, even one small enough for the bytes left, so
    /// the order never changes. The open-bucket index holds this flag, not the count, so that
    /// its entry changes once per bucket rather than with every item.
    #[serde(default)]
    pub closed: bool,
    #[serde(default)]
    #[odm(embedded)]
    pub control: Control,
    /// The items, oldest first. (Not `embedded`: the handle must be a plain `Field` for any
    /// `T`; [`Field::element`] and [`Field::matched`] reach the items' fields.)
    pub items: Vec<T>,
}

/// The sequence way's count of items delivered to one owner.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "bucket_counters")]
struct BucketCounter<K> {
    #[odm(id)]
    owner: K,
    n: i64,
}

/// The aligned time span a bucket covers; see [`BucketOptions::span`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Spans of this length, aligned to the Unix epoch (an hour starts on the hour).
    Fixed(Duration),
    /// Calendar months in UTC (S9's monthly buckets).
    Month,
}

const MONTH_MAX_MS: i64 = 31 * 86_400_000;

impl Span {
    /// The start of the span holding `at`.
    fn start_of(self, at: DateTime) -> DateTime {
        let ms = at.timestamp_millis();
        match self {
            Span::Fixed(_) => {
                let len = self.max_ms();
                DateTime::from_millis(ms.div_euclid(len).saturating_mul(len))
            }
            Span::Month => DateTime::from_millis(month_start(ms).unwrap_or(ms)),
        }
    }

    /// The end (exclusive) of the span that starts at `start`.
    fn end_of(self, start: DateTime) -> DateTime {
        let ms = start.timestamp_millis();
        match self {
            Span::Fixed(_) => DateTime::from_millis(ms.saturating_add(self.max_ms())),
            // Past the longest month from its first day lies the next month.
            Span::Month => self.start_of(DateTime::from_millis(ms.saturating_add(MONTH_MAX_MS))),
        }
    }

    /// The longest span, in milliseconds (at least 1).
    fn max_ms(self) -> i64 {
        match self {
            Span::Fixed(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1),
            Span::Month => MONTH_MAX_MS,
        }
    }

    fn describe(self) -> String {
        match self {
            Span::Fixed(_) => format!("{}ms", self.max_ms()),
            Span::Month => "month".to_owned(),
        }
    }
}

/// The first millisecond of the UTC calendar month holding `ms`; `None` outside the dates a
/// calendar can name.
fn month_start(ms: i64) -> Option<i64> {
    use jiff::tz::TimeZone;
    let at = jiff::Timestamp::from_millisecond(ms).ok()?;
    let first = at.to_zoned_datetime(TimeZone::UTC).date().first_of_month();
    Some(
        first
            .to_zoned_datetime(TimeZone::UTC)
            .ok()?
            .timestamp()
            .as_millisecond(),
    )
}

/// Bytes an array adds per element besides the element's own encoding (its type byte and its
/// index as a C string), counted against a byte budget.
const ELEMENT_OVERHEAD: i64 = 12;

/// The byte budget of a bucket unless one is chosen.
pub const DEFAULT_MAX_BYTES: u32 = 1 << 20;
/// The largest byte budget: with its other fields and one more item a bucket stays well under
/// the 16 MiB document limit.
pub const MAX_BYTES_LIMIT: u32 = 8 << 20;

/// How a [`Bucket`] closes its buckets, finds the open one, and what it summarises; see the
/// module documentation.
pub struct BucketOptions<T> {
    max_items: Option<u32>,
    max_bytes: Option<u32>,
    span: Option<Span>,
    time: Option<Field<T, DateTime>>,
    summaries: Vec<String>,
    sequence: bool,
    index_item_times: bool,
    retention: Option<Duration>,
    _item: PhantomData<fn() -> T>,
}

impl<T> Clone for BucketOptions<T> {
    fn clone(&self) -> Self {
        BucketOptions {
            max_items: self.max_items,
            max_bytes: self.max_bytes,
            span: self.span,
            time: self.time.clone(),
            summaries: self.summaries.clone(),
            sequence: self.sequence,
            index_item_times: self.index_item_times,
            retention: self.retention,
            _item: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for BucketOptions<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BucketOptions({})", self.parameters())
    }
}

impl<T> Default for BucketOptions<T> {
    fn default() -> Self {
        BucketOptions::new()
    }
}

impl<T> BucketOptions<T> {
    /// Buckets closed by the default byte budget only, found by upsert, with no summaries.
    pub fn new() -> Self {
        BucketOptions {
            max_items: None,
            max_bytes: None,
            span: None,
            time: None,
            summaries: Vec::new(),
            sequence: false,
            index_item_times: false,
            retention: None,
            _item: PhantomData,
        }
    }

    /// A bucket closes at `n` items.
    #[must_use]
    pub fn max_items(mut self, n: u32) -> Self {
        self.max_items = Some(n);
        self
    }

    /// A bucket closes before its items' encoded size would pass `bytes`
    /// (at most [`MAX_BYTES_LIMIT`]).
    #[must_use]
    pub fn max_bytes(mut self, bytes: u32) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    /// A bucket holds the items of one aligned span of `time` (which becomes the item time).
    #[must_use]
    pub fn span(mut self, span: Span, time: &Field<T, DateTime>) -> Self {
        self.span = Some(span);
        self.time(time)
    }

    /// The item's time: each bucket keeps the earliest and latest (`control.earliest`,
    /// `control.latest`), and reads can ask for a range of time.
    #[must_use]
    pub fn time(mut self, time: &Field<T, DateTime>) -> Self {
        self.time = Some(time.clone());
        self
    }

    /// Keep the minimum and maximum of `field` in each bucket (`control.min`, `control.max`),
    /// so that [`Read::between`] skips buckets by them.
    #[must_use]
    pub fn summary<V>(mut self, field: &Field<T, V>) -> Self {
        self.summaries.push(field.path().to_owned());
        self
    }

    /// Find the open bucket by a counter per owner instead of an upsert (closes by count only).
    #[must_use]
    pub fn sequence(mut self) -> Self {
        self.sequence = true;
        self
    }

    /// A multikey index on the items' times (S2a): a range of time reads exactly the buckets
    /// holding an item in it, for one index entry per item.
    #[must_use]
    pub fn index_item_times(mut self) -> Self {
        self.index_item_times = true;
        self
    }

    /// Buckets whose latest item is older than `retention` expire (a TTL index).
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// Why these options cannot work, if they cannot.
    fn problem(&self) -> Option<String> {
        if self.max_items == Some(0) {
            return Some("a bucket must hold at least one item".to_owned());
        }
        if let Some(bytes) = self.max_bytes
            && !(1..=MAX_BYTES_LIMIT).contains(&bytes)
        {
            return Some(format!(
                "the byte budget {bytes} is outside 1..={MAX_BYTES_LIMIT}"
            ));
        }
        if self.time.is_none() && (self.retention.is_some() || self.index_item_times) {
            return Some("retention and an index on item times need an item time".to_owned());
        }
        if self.sequence
            && (self.max_items.is_none() || self.span.is_some() || self.max_bytes.is_some())
        {
            return Some(
                "the sequence way numbers items, so it closes buckets by a count of items only"
                    .to_owned(),
            );
        }
        let mut paths: Vec<&str> = self
            .summaries
            .iter()
            .map(String::as_str)
            .chain(self.time.as_ref().map(Field::path))
            .collect();
        if let Some(bad) = paths
            .iter()
            .find(|p| p.is_empty() || p.starts_with('$') || p.split('.').any(str::is_empty))
        {
            return Some(format!("`{bad}` cannot be summarised"));
        }
        if let Some((a, b)) = self.summaries.iter().find_map(|a| {
            self.summaries
                .iter()
                .find(|b| b.starts_with(&format!("{a}.")))
                .map(|b| (a, b))
        }) {
            return Some(format!(
                "`{a}` and `{b}` cannot both be summarised: one holds the other"
            ));
        }
        paths.sort_unstable();
        if let Some(twice) = paths
            .windows(2)
            .find_map(|w| (w[0] == w[1]).then_some(w[0]))
        {
            return Some(format!("`{twice}` is summarised twice"));
        }
        None
    }

    /// The parameters recorded with the data: reopening with others is an error.
    fn parameters(&self) -> bson::Document {
        doc! {
            "layout": 1,
            "way": if self.sequence { "sequence" } else { "upsert" },
            "max_items": self.max_items.map(i64::from),
            "max_bytes": self.max_bytes.map(i64::from),
            "span": self.span.map(Span::describe),
            "time": self.time.as_ref().map(Field::path),
            "summaries": self.summaries.clone(),
            "index_item_times": self.index_item_times,
            "retention_s": self.retention.map(|r| r.as_secs() as i64),
        }
    }

    /// The byte budget buckets are kept under: the one chosen, or the default when no count
    /// bounds a bucket. A count chosen alone is trusted to keep buckets small (bytes are then
    /// not counted, which saves an update and a condition per item).
    fn budget(&self) -> Option<i64> {
        match (self.max_bytes, self.max_items) {
            (Some(bytes), _) => Some(i64::from(bytes)),
            (None, None) => Some(i64::from(DEFAULT_MAX_BYTES)),
            (None, Some(_)) => None,
        }
    }
}

/// The name of the multikey index on the items' times.
const ITEM_TIMES: &str = "item_times";
/// The name of the index that finds the open bucket (the model's second index).
const OPEN_INDEX: &str = "owner_1_start_1_closed_1";
/// The name of the unique index on `(owner, seq)`.
const SEQ_INDEX: &str = "owner_1_seq_1";

/// Items grouped by owner into buckets; see the module documentation.
///
/// ```
/// use bson::DateTime;
/// use odm::Embedded;
/// use odm_patterns::{Bucket, BucketOptions};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, Serialize, Deserialize, Embedded)]
/// struct Reading {
///     at: DateTime,
///     celsius: f64,
/// }
///
/// let db = odm::Database::in_memory()?;
/// let r = Reading::fields();
/// let readings: Bucket<String, Reading> = Bucket::open(
///     &db,
///     "readings",
///     BucketOptions::new().max_items(100).time(&r.at).summary(&r.celsius),
/// )?;
/// for minute in 0..250 {
///     let at = DateTime::from_millis(minute * 60_000);
///     readings.push("attic", &Reading { at, celsius: 10.0 + (minute % 30) as f64 })?;
/// }
/// assert_eq!(readings.count("attic")?, 250);
/// assert_eq!(readings.newest("attic", 0, 1)?[0].at, DateTime::from_millis(249 * 60_000));
/// // Readings of 38 degrees or more: buckets whose maximum is lower are not read.
/// let hot = readings.read("attic").between(&r.celsius, 38.0, 100.0).to_vec()?;
/// assert_eq!(hot.len(), 16);
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
pub struct Bucket<K, T> {
    buckets: Collection<BucketDoc<K, T>>,
    /// The sequence way's counters (`{name}_counters`).
    counters: Option<String>,
    options: BucketOptions<T>,
    /// The pattern the bucket serves, for records and errors.
    pattern: &'static str,
    /// The models' field handles, built once: each spells its path.
    fields: Arc<BucketDocFields<K, T>>,
    counter_fields: Arc<BucketCounterFields<K>>,
    /// The upsert way's memory of open buckets, shared by the handle's clones.
    open: Arc<OpenBuckets>,
    /// A remembered bucket's room conditions, parsed once, when buckets are found by upsert
    /// (no sequence counters) and the conditions are the same for every item (no byte
    /// budget): a push to it then reads the bucket by `_id` without a filter to build, parse
    /// or plan.
    room: Option<Arc<PreparedConditions<BucketDoc<K, T>>>>,
}

/// The open bucket each owner (and span) was last given by this handle or its clones, so that
/// the next push goes to it by `_id`: no plan, no walk of the open-bucket index. It is a hint
/// and nothing more: the push still requires the bucket to be open with room (another handle
/// or process may have closed or deleted it, or the transaction that opened it may have rolled
/// back), and on a miss the index finds the open bucket as before. It learns a bucket when it
/// opens one, and forgets it when a push to it misses; at most [`OPEN_REMEMBERED`] entries are
/// kept, and past that it starts over.
#[derive(Default)]
struct OpenBuckets(Mutex<HashMap<Vec<u8>, ObjectId>>);

/// The most (owner, span) entries [`OpenBuckets`] holds.
const OPEN_REMEMBERED: usize = 1 << 16;

impl OpenBuckets {
    /// The memory's key of an owner and a span start: the owner's index key, then the start if
    /// there is one (a bucket's items all have a span start, or none do).
    fn key<K>(owner: impl IntoValue<K>, start: Option<DateTime>) -> Option<Vec<u8>> {
        let owner = bson::RawBson::try_from(owner.into_bson().ok()?).ok()?;
        let mut key = odm::engine::keys::encode(owner.as_raw_bson_ref());
        if let Some(start) = start {
            key.extend(start.timestamp_millis().to_be_bytes());
        }
        Some(key)
    }

    fn get(&self, key: &[u8]) -> Option<ObjectId> {
        self.0.lock().ok()?.get(key).copied()
    }

    fn forget(&self, key: &[u8]) {
        if let Ok(mut open) = self.0.lock() {
            open.remove(key);
        }
    }

    fn remember(&self, key: Vec<u8>, id: ObjectId) {
        if let Ok(mut open) = self.0.lock() {
            if open.len() >= OPEN_REMEMBERED {
                open.clear();
            }
            open.insert(key, id);
        }
    }
}

/// The conditions of a bucket with room for an item of `bytes` encoded bytes: open, with
/// slots and bytes left, added to `these`. Written as one document: building it from typed
/// conditions, each a document merged into the last, costs as much as the engine's whole
/// lookup of a bucket by `_id`. (The fields are the model's own, with values of their types.)
fn with_room<K, T>(
    f: &BucketDocFields<K, T>,
    options: &BucketOptions<T>,
    mut these: bson::Document,
    bytes: i64,
) -> bson::Document {
    these.insert(f.closed.path(), false);
    if let Some(n) = options.max_items {
        these.insert(f.count.path(), doc! { "$lt": i64::from(n) });
    }
    if let Some(budget) = options.budget() {
        these.insert(f.bytes.path(), doc! { "$lte": budget - bytes });
    }
    these
}

impl<K, T> Clone for Bucket<K, T> {
    fn clone(&self) -> Self {
        Bucket {
            buckets: self.buckets.clone(),
            counters: self.counters.clone(),
            options: self.options.clone(),
            pattern: self.pattern,
            fields: self.fields.clone(),
            counter_fields: self.counter_fields.clone(),
            open: self.open.clone(),
            room: self.room.clone(),
        }
    }
}

impl<K, T> std::fmt::Debug for Bucket<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bucket({}: {})", self.pattern, self.options.parameters())
    }
}

/// An item encoded once, ready to go into any owner's bucket ([`Bucket::prepare`]).
#[derive(Clone)]
pub struct Prepared<K, T> {
    value: Bson,
    bytes: i64,
    time: Option<DateTime>,
    start: Option<DateTime>,
    summaries: Vec<(String, Bson)>,
    /// The bucket that prepared the item (its field handles, shared by its clones): the
    /// updates below are that bucket's.
    made_by: Arc<BucketDocFields<K, T>>,
    /// The update that puts the item in a bucket with room, and the one that opens a bucket
    /// for it, each parsed the first time it is needed and then reused for every owner.
    push: OnceLock<PreparedUpdate<BucketDoc<K, T>>>,
    open: OnceLock<PreparedUpdate<BucketDoc<K, T>>>,
}

impl<K, T> std::fmt::Debug for Prepared<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("value", &self.value)
            .field("bytes", &self.bytes)
            .field("time", &self.time)
            .field("start", &self.start)
            .field("summaries", &self.summaries)
            .finish_non_exhaustive()
    }
}

/// A prepared item's value, written as it was encoded.
struct Encoded<'p>(&'p Bson);

impl<T> IntoValue<T> for Encoded<'_> {
    fn into_bson(self) -> Result<Bson, bson::error::Error> {
        Ok(self.0.clone())
    }
}

/// The value at a dotted path of a document, through subdocuments only.
fn lookup<'d>(doc: &'d bson::Document, path: &str) -> Option<&'d Bson> {
    odm::engine::Path::new(path).get(doc)
}

impl<K, T> Bucket<K, T>
where
    K: Serialize + DeserializeOwned + Send + 'static,
    T: Embedded + Send + 'static,
{
    /// Opens (or creates) the buckets stored in collection `name`. Reopening with other
    /// options is [`PatternError::ParametersChanged`]; options that cannot work together are
    /// [`PatternError::Refused`].
    pub fn open(
        db: &odm::Database,
        name: &str,
        options: BucketOptions<T>,
    ) -> Result<Self, PatternError> {
        Self::open_as(db, "bucket", name, options)
    }

    /// [`Bucket::open`] for a pattern built on buckets: its records and errors carry its name.
    pub(crate) fn open_as(
        db: &odm::Database,
        pattern: &'static str,
        name: &str,
        options: BucketOptions<T>,
    ) -> Result<Self, PatternError> {
        if let Some(reason) = options.problem() {
            return Err(PatternError::Refused {
                pattern,
                name: name.to_owned(),
                reason,
            });
        }
        let counters = options.sequence.then(|| format!("{name}_counters"));
        let f = BucketDoc::<K, T>::fields();
        db.transaction(|txn| record(txn, pattern, name, options.parameters()))?;
        let buckets: Collection<BucketDoc<K, T>> = db.collection_named(name)?;
        // Indexes that depend on the options, so the model cannot declare them (kept as they
        // are when they exist as asked); after the transaction, as MongoDB creates an index
        // inside one only on a collection the transaction created.
        if let Some(time) = &options.time {
            if options.index_item_times {
                buckets.create_index(
                    Index::asc(&f.owner)
                        .then_asc(&f.items.element(time))
                        .named(ITEM_TIMES),
                )?;
            }
            if let Some(retention) = options.retention {
                buckets.create_index(
                    Index::asc(&f.control.latest)
                        .named("retention")
                        .expire_after(retention),
                )?;
            }
        }
        if let Some(counters) = &counters {
            db.collection_named::<BucketCounter<K>>(counters)?;
        }
        let room = match options.budget() {
            None if counters.is_none() => Some(Arc::new(buckets.prepare_conditions(with_room(
                &f,
                &options,
                bson::Document::new(),
                0,
            ))?)),
            _ => None,
        };
        Ok(Bucket {
            buckets,
            counters,
            options,
            pattern,
            fields: Arc::new(f),
            counter_fields: Arc::new(BucketCounter::<K>::fields()),
            open: Arc::default(),
            room,
        })
    }

    /// The collection of the buckets, for queries of their own.
    pub fn collection(&self) -> &Collection<BucketDoc<K, T>> {
        &self.buckets
    }

    /// The largest number of items in a bucket, if the policy has one.
    pub fn max_items(&self) -> Option<u32> {
        self.options.max_items
    }

    /// Encodes an item once, to push it to any number of owners ([`Bucket::push_prepared`]).
    pub fn prepare(&self, item: impl IntoValue<T>) -> Result<Prepared<K, T>, PatternError> {
        let value = item
            .into_bson()
            .map_err(|e| self.refused(format!("an item does not serialize: {e}")))?;
        let Bson::Document(doc) = &value else {
            return Err(self.refused("an item must be stored as a document".to_owned()));
        };
        // The item's encoding, and what the array adds per element: a type byte and the
        // element's index as a C string (at most 10 digits and a NUL for any real bucket).
        let bytes = doc
            .to_vec()
            .map_err(|e| self.refused(format!("an item does not encode: {e}")))?
            .len() as i64
            + ELEMENT_OVERHEAD;
        let time = match self.options.time.as_ref().map(Field::path) {
            None => None,
            Some(path) => match lookup(doc, path) {
                Some(Bson::DateTime(t)) => Some(*t),
                _ => {
                    return Err(self.refused(format!("the item has no date at `{path}`")));
                }
            },
        };
        let start = match (self.options.span, time) {
            (Some(span), Some(t)) => Some(span.start_of(t)),
            _ => None,
        };
        let summaries = self
            .options
            .summaries
            .iter()
            .filter_map(|path| Some((path.clone(), lookup(doc, path)?.clone())))
            .collect();
        Ok(Prepared {
            value,
            bytes,
            time,
            start,
            summaries,
            made_by: self.fields.clone(),
            push: OnceLock::new(),
            open: OnceLock::new(),
        })
    }

    /// Adds an item to the owner's open bucket (a new bucket when none has room).
    pub fn push(
        &self,
        owner: impl IntoValue<K> + Copy,
        item: impl IntoValue<T>,
    ) -> Result<(), PatternError> {
        let prepared = self.prepare(item)?;
        self.buckets
            .database()
            .transaction(|txn| self.push_prepared(txn, owner, &prepared))
    }

    /// Adds a prepared item to the owner's open bucket inside a transaction, so that several
    /// owners' pushes commit together.
    pub fn push_prepared(
        &self,
        txn: &mut Txn<'_, '_>,
        owner: impl IntoValue<K> + Copy,
        item: &Prepared<K, T>,
    ) -> Result<(), PatternError> {
        self.place(txn, owner, item).map(|_| ())
    }

    /// Puts a prepared item in the owner's open bucket; `true` when that bucket was opened for
    /// it.
    fn place(
        &self,
        txn: &mut Txn<'_, '_>,
        owner: impl IntoValue<K> + Copy,
        item: &Prepared<K, T>,
    ) -> Result<bool, PatternError> {
        let f = &*self.fields;
        let upsert = UpdateOptions {
            upsert: true,
            ..UpdateOptions::default()
        };
        // The upsert way remembers the bucket it opens for the owner (see `OpenBuckets`).
        let remembered = match self.counters {
            None => OpenBuckets::key(owner, item.start),
            Some(_) => None,
        };
        let seq = if let (Some(counters), Some(n)) = (&self.counters, self.options.max_items) {
            let c = &*self.counter_fields;
            let counter = txn
                .collection_named::<BucketCounter<K>>(counters)?
                .find_one_and_update(
                    c.owner.eq(owner),
                    c.n.inc(1),
                    &ModifyOptions {
                        upsert: true,
                        return_after: true,
                        ..ModifyOptions::default()
                    },
                )?;
            let Some(counter) = counter else {
                return Err(self.damaged("a counter was not written".to_owned()));
            };
            (counter.n - 1) / i64::from(n)
        } else {
            let with_room =
                |these: bson::Document| Filter::raw(with_room(f, &self.options, these, item.bytes));
            let mut buckets = txn.collection_named::<BucketDoc<K, T>>(self.buckets.name())?;
            let push = self.prepared(item, &item.push, || Ok(self.write(item)))?;
            // The remembered bucket, by `_id` (its owner and span never change): under the
            // room conditions parsed at open when they hold for every item, else under a
            // filter written for this item. The `_id` condition is written directly: serde
            // writes an ObjectId through a `$oid` document, which costs as much here as the
            // rest of the filter.
            let open = remembered.as_deref().and_then(|key| self.open.get(key));
            if let Some(id) = open {
                let none = UpdateOptions::default();
                let updated = if let Some(room) = &self.room {
                    buckets.update_one_by_id_prepared(id, room, &push, &none)?
                } else {
                    let by_id = with_room(doc! { f.id.path(): id });
                    buckets.update_one_prepared(by_id, &push, &none)?
                };
                if updated.matched > 0 {
                    return Ok(false);
                }
                // Full, closed, gone or never committed: the index decides from here.
                if let Some(key) = remembered.as_deref() {
                    self.open.forget(key);
                }
            }
            // The owner's one open bucket for the item's span, if it has room.
            let span = || f.owner.eq(owner).and(f.start.eq(item.start));
            // The index that finds it, named: the update needs no plan ranking.
            let by_index = UpdateOptions {
                hint: Some(Bson::String(OPEN_INDEX.to_owned())),
                ..UpdateOptions::default()
            };
            let room = span().and(with_room(bson::Document::new()));
            let updated = buckets.update_one_prepared(room, &push, &by_index)?;
            if updated.matched > 0 {
                return Ok(false);
            }
            // It has no room: close it, and open the next. An owner without buckets has none
            // to close.
            let newest = buckets
                .find(f.owner.eq(owner))
                .sort(Sort::desc(&f.seq))
                .first()?;
            if newest.is_some() {
                let open_in_span = span().and(f.closed.eq(false));
                buckets.update_many(open_in_span, f.closed.set(true), &UpdateOptions::default())?;
            }
            newest.map_or(0, |b| b.seq + 1)
        };
        let open = self.prepared(item, &item.open, || {
            let write = self.write(item).and(f.closed.set_on_insert(false));
            Ok(match item.start {
                Some(start) => write.and(f.start.set_on_insert(Some(start))),
                None => write,
            })
        })?;
        let mut buckets = txn.collection_named::<BucketDoc<K, T>>(self.buckets.name())?;
        let placed =
            buckets.update_one_prepared(f.owner.eq(owner).and(f.seq.eq(seq)), &open, &upsert)?;
        if let (Some(key), Some(Bson::ObjectId(id))) = (remembered, &placed.upserted_id) {
            self.open.remember(key, *id);
        }
        Ok(placed.upserted_id.is_some())
    }

    /// One of an item's updates, parsed once: kept in `cell` when this bucket prepared the
    /// item; for another bucket, made afresh with this bucket's options (the item's own
    /// values, its time, span start, summaries and size, stay as the preparing bucket read
    /// them).
    fn prepared<'p>(
        &self,
        item: &'p Prepared<K, T>,
        cell: &'p OnceLock<PreparedUpdate<BucketDoc<K, T>>>,
        make: impl FnOnce() -> Result<Update<BucketDoc<K, T>>, PatternError>,
    ) -> Result<Cow<'p, PreparedUpdate<BucketDoc<K, T>>>, PatternError> {
        if !Arc::ptr_eq(&item.made_by, &self.fields) {
            return Ok(Cow::Owned(self.buckets.prepare_update(make()?)?));
        }
        if let Some(update) = cell.get() {
            return Ok(Cow::Borrowed(update));
        }
        let update = self.buckets.prepare_update(make()?)?;
        Ok(Cow::Borrowed(cell.get_or_init(|| update)))
    }

    /// The update that adds one item: its push, the counts and the summaries.
    fn write(&self, item: &Prepared<K, T>) -> Update<BucketDoc<K, T>> {
        let f = &*self.fields;
        let mut write = f.items.push(Encoded(&item.value)).and(f.count.inc(1));
        if self.options.budget().is_some() {
            write = write.and(f.bytes.inc(item.bytes));
        }
        if let Some(t) = item.time {
            write = write
                .and(f.control.earliest.min(Some(t)))
                .and(f.control.latest.max(Some(t)));
        }
        for (path, value) in &item.summaries {
            write = write
                .and(f.control.min.key(path).min(value.clone()))
                .and(f.control.max.key(path).max(value.clone()));
        }
        write
    }

    /// The items of one owner; see [`Read`].
    pub fn read(&self, owner: impl IntoValue<K> + Copy) -> Read<'_, K, T> {
        let f = &*self.fields;
        Read::new(self, f.owner.eq(owner), true)
    }

    /// The items of every owner, owner by owner; see [`Read`].
    pub fn read_all(&self) -> Read<'_, K, T> {
        Read::new(self, Filter::all(), false)
    }

    /// The owner's items newest first: `limit` of them after skipping `skip`.
    pub fn newest(
        &self,
        owner: impl IntoValue<K> + Copy,
        skip: u64,
        limit: u64,
    ) -> Result<Vec<T>, PatternError> {
        self.read(owner)
            .newest_first()
            .skip(skip)
            .limit(limit)
            .to_vec()
    }

    /// The number of the owner's items.
    pub fn count(&self, owner: impl IntoValue<K> + Copy) -> Result<u64, PatternError> {
        self.read(owner).count()
    }

    /// The starts of the owner's spans that hold a bucket, oldest first (under a span policy).
    pub fn spans(&self, owner: impl IntoValue<K> + Copy) -> Result<Vec<DateTime>, PatternError> {
        let f = &*self.fields;
        let mut starts: Vec<DateTime> = self
            .buckets
            .distinct(&f.start, f.owner.eq(owner))?
            .into_iter()
            .filter_map(|start| match start {
                Bson::DateTime(t) => Some(t),
                _ => None,
            })
            .collect();
        starts.sort();
        Ok(starts)
    }

    /// Changes the first of the owner's items that `matching` selects: `change` gets the
    /// handles on that item (`items.$`). An update of the item time or of a summary field is
    /// refused (the summaries would no longer bound the items). `false` when none matched.
    pub fn update_item(
        &self,
        owner: impl IntoValue<K> + Copy,
        matching: Filter<T>,
        change: impl FnOnce(T::Fields<BucketDoc<K, T>, T>) -> Update<BucketDoc<K, T>>,
    ) -> Result<bool, PatternError> {
        let f = &*self.fields;
        let update = change(f.items.matched().fields());
        self.check_item_update(&update)?;
        let result = self
            .buckets
            .update_one(f.owner.eq(owner).and(f.items.elem_match(matching)), update)?;
        Ok(result.matched > 0)
    }

    /// Refuses an item update that writes outside the matched item or rewrites a field the
    /// summaries are kept of.
    fn check_item_update(&self, update: &Update<BucketDoc<K, T>>) -> Result<(), PatternError> {
        if update.to_pipeline().is_some() {
            return Err(self.refused("an item update cannot be a pipeline".to_owned()));
        }
        let guarded: Vec<&str> = self
            .options
            .summaries
            .iter()
            .map(String::as_str)
            .chain(self.options.time.as_ref().map(Field::path))
            .collect();
        for (_, fields) in update.to_document() {
            let Bson::Document(fields) = fields else {
                continue;
            };
            for path in fields.keys() {
                let Some(field) = path.strip_prefix("items.$.") else {
                    return Err(self.refused(format!(
                        "an item update writes `{path}`, outside the matched item"
                    )));
                };
                let overlaps = |g: &str| {
                    field == g
                        || field.starts_with(&format!("{g}."))
                        || g.starts_with(&format!("{field}."))
                };
                if let Some(g) = guarded.iter().find(|g| overlaps(g)) {
                    return Err(self.refused(format!(
                        "an item update writes `{field}`, which the buckets summarise (`{g}`)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Removes the owner's items that `matching` selects (`$pull`); returns the number of
    /// buckets changed. The buckets keep their count of used slots, so the order never changes.
    pub fn remove(
        &self,
        owner: impl IntoValue<K> + Copy,
        matching: Filter<T>,
    ) -> Result<u64, PatternError> {
        let f = &*self.fields;
        let result = self.buckets.update_many(
            f.owner.eq(owner).and(f.items.elem_match(matching.clone())),
            f.items.pull_where(matching),
        )?;
        Ok(result.modified)
    }

    /// Deletes the owner's buckets numbered below `seq` (whole buckets); returns how many.
    pub fn delete_buckets_below(
        &self,
        owner: impl IntoValue<K> + Copy,
        seq: i64,
    ) -> Result<u64, PatternError> {
        let f = &*self.fields;
        Ok(self
            .buckets
            .delete_many(f.owner.eq(owner).and(f.seq.lt(seq)))?)
    }

    /// Deletes the buckets, of one owner or of all, whose every item is older than `cutoff`
    /// (whole buckets, by their latest time); returns how many.
    pub fn delete_buckets_before(
        &self,
        owner: Option<&K>,
        cutoff: DateTime,
    ) -> Result<u64, PatternError> {
        let filter = Self::owned_by(owner).and(self.older_than(cutoff)?);
        Ok(self.buckets.delete_many(filter)?)
    }

    /// Removes every item older than `cutoff`, of one owner or of all, in one transaction:
    /// whole buckets go, the items of buckets that straddle the cutoff are pulled, and the
    /// buckets left empty are deleted. Returns how many buckets were deleted.
    pub fn remove_before(&self, owner: Option<&K>, cutoff: DateTime) -> Result<u64, PatternError> {
        let f = &*self.fields;
        let older = self.older_than(cutoff)?;
        let item_older = self.time_field()?.lt(cutoff);
        let owned = Self::owned_by(owner);
        Ok(self.buckets.database().write(|txn| {
            let mut buckets = txn.collection_named::<BucketDoc<K, T>>(self.buckets.name())?;
            let mut deleted = buckets.delete_many(owned.clone().and(older))?;
            buckets.update_many(
                owned.clone().and(f.control.earliest.lt(Some(cutoff))),
                f.items.pull_where(item_older),
                &UpdateOptions::default(),
            )?;
            deleted += buckets.delete_many(owned.and(f.items.size(0)))?;
            Ok(deleted)
        })?)
    }

    /// Repacks the owner's items into as few buckets as the policy allows, in their order
    /// (after removals left gaps), in one transaction; returns the number of buckets. The
    /// owner's items are held in memory meanwhile.
    pub fn compact(&self, owner: impl IntoValue<K> + Copy) -> Result<u64, PatternError> {
        let f = &*self.fields;
        self.buckets.database().transaction(|txn| {
            let mut buckets = txn.collection_named::<BucketDoc<K, T>>(self.buckets.name())?;
            let items: Vec<T> = buckets
                .find(f.owner.eq(owner))
                .sort(Sort::asc(&f.seq))
                .to_vec()?
                .into_iter()
                .flat_map(|bucket| bucket.items)
                .collect();
            buckets.delete_many(f.owner.eq(owner))?;
            if let Some(counters) = &self.counters {
                let c = &*self.counter_fields;
                txn.collection_named::<BucketCounter<K>>(counters)?
                    .delete_one(c.owner.eq(owner))?;
            }
            // Every bucket of the owner's now is one opened by these pushes.
            let mut opened = 0;
            for item in &items {
                let prepared = self.prepare(item)?;
                opened += u64::from(self.place(txn, owner, &prepared)?);
            }
            Ok(opened)
        })
    }

    fn owned_by(owner: Option<&K>) -> Filter<BucketDoc<K, T>> {
        match owner {
            Some(owner) => BucketDoc::<K, T>::fields().owner.eq(owner),
            None => Filter::all(),
        }
    }

    /// Buckets whose latest item is older than `cutoff`.
    fn older_than(&self, cutoff: DateTime) -> Result<Filter<BucketDoc<K, T>>, PatternError> {
        self.time_field()?;
        Ok(self.fields.control.latest.lt(Some(cutoff)))
    }

    fn time_field(&self) -> Result<&Field<T, DateTime>, PatternError> {
        self.options.time.as_ref().ok_or_else(|| {
            self.refused("the items have no declared time (BucketOptions::time or span)".to_owned())
        })
    }

    pub(crate) fn refused(&self, reason: String) -> PatternError {
        PatternError::Refused {
            pattern: self.pattern,
            name: self.buckets.name().to_owned(),
            reason,
        }
    }

    pub(crate) fn damaged(&self, reason: String) -> PatternError {
        PatternError::Damaged {
            pattern: self.pattern,
            name: self.buckets.name().to_owned(),
            reason,
        }
    }
}

/// A read of items: which buckets, which of their items, in which order; built by
/// [`Bucket::read`] or [`Bucket::read_all`].
///
/// Items come bucket by bucket in `seq` order, and in each bucket in array order, oldest first
/// unless [`Read::newest_first`] (for every owner, owner by owner): the order they were pushed
/// in, spans aside (see the module documentation). Conditions on items ([`Read::time`],
/// [`Read::between`]) skip the buckets whose summaries rule them out, then keep the matching
/// items of the rest (a `$filter` the engine runs, so that only those are decoded).
pub struct Read<'b, K, T> {
    bucket: &'b Bucket<K, T>,
    filter: Filter<BucketDoc<K, T>>,
    /// Conditions on one item, which `$filter` keeps the items by.
    conditions: Vec<Expr<Element<T>, bool>>,
    one_owner: bool,
    hint: Option<&'static str>,
    newest_first: bool,
    skip: u64,
    limit: Option<u64>,
    error: Option<PatternError>,
}

impl<K, T> std::fmt::Debug for Read<'_, K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Read")
            .field("filter", &self.filter)
            .field("conditions", &self.conditions)
            .field("newest_first", &self.newest_first)
            .field("skip", &self.skip)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl<'b, K, T> Read<'b, K, T>
where
    K: Serialize + DeserializeOwned + Send + 'static,
    T: Embedded + Send + 'static,
{
    fn new(bucket: &'b Bucket<K, T>, filter: Filter<BucketDoc<K, T>>, one_owner: bool) -> Self {
        Read {
            bucket,
            filter,
            conditions: Vec::new(),
            one_owner,
            // One owner's buckets in `seq` order; a condition on time may choose better.
            hint: one_owner.then_some(SEQ_INDEX),
            newest_first: false,
            skip: 0,
            limit: None,
            error: None,
        }
    }

    /// Items with `from <= time < to`. The buckets read are those whose time summaries overlap
    /// the range, bounded through an index: the span's start under a span policy, the items'
    /// times with [`BucketOptions::index_item_times`], else the owner's buckets.
    #[must_use]
    pub fn time(mut self, from: DateTime, to: DateTime) -> Self {
        let f = BucketDoc::<K, T>::fields();
        let time = match self.bucket.time_field() {
            Ok(time) => time.clone(),
            Err(e) => {
                self.error = Some(e);
                return self;
            }
        };
        let options = &self.bucket.options;
        let mut filter = f
            .control
            .latest
            .gte(Some(from))
            .and(f.control.earliest.lt(Some(to)));
        if let Some(span) = options.span {
            // A bucket starts at most one span before its items.
            let after = match from.timestamp_millis().checked_sub(span.max_ms()) {
                Some(after) => f.start.gt(Some(DateTime::from_millis(after))),
                // Near the first instant a span's start saturates at it.
                None => f.start.gte(Some(DateTime::MIN)),
            };
            filter = filter.and(after).and(f.start.lt(Some(to)));
            self.hint = self.one_owner.then_some(OPEN_INDEX);
        } else if options.index_item_times {
            filter = filter.and(f.items.elem_match(time.gte(from).and(time.lt(to))));
            self.hint = self.one_owner.then_some(ITEM_TIMES);
        }
        self.filter = std::mem::take(&mut self.filter).and(filter);
        let item = Element::field(&time);
        self.conditions.push(item.clone().gte(Expr::value(from)));
        self.conditions.push(item.lt(Expr::value(to)));
        self
    }

    /// The items of the span holding `at` (under a span policy): a day's, a month's.
    #[must_use]
    pub fn span(mut self, at: DateTime) -> Self {
        if let Some(span) = self.bucket.options.span {
            let start = span.start_of(at);
            return self.time(start, span.end_of(start));
        }
        self.error = Some(
            self.bucket
                .refused("the buckets have no span (BucketOptions::span)".to_owned()),
        );
        self
    }

    /// Items whose `field` is within `low..=high`. When `field` is a summary field, buckets
    /// whose minimum and maximum rule the range out are skipped.
    #[must_use]
    pub fn between<V: Serialize>(mut self, field: &Field<T, V>, low: V, high: V) -> Self {
        let (low_bson, high_bson) = match (
            bson::serialize_to_bson(&low),
            bson::serialize_to_bson(&high),
        ) {
            (Ok(low), Ok(high)) => (low, high),
            (Err(e), _) | (_, Err(e)) => {
                self.error = Some(
                    self.bucket
                        .refused(format!("a bound does not serialize: {e}")),
                );
                return self;
            }
        };
        let path = field.path();
        if self.bucket.options.summaries.iter().any(|s| s == path) {
            // Compared in BSON's total order, the order `$min` and `$max` kept the summaries
            // in and the item conditions below use: a bucket skipped holds no item in range,
            // whatever the types (a null, a NaN, a string among numbers).
            // Constants are `$literal`s: a bound that is a string starting with `$` is that
            // string, not a path.
            let control = BucketDoc::<K, T>::fields().control;
            let max = control.max.key(path).expr();
            let min = control.min.key(path).expr();
            let skip = max
                .gte(Expr::value(low_bson))
                .and(min.lte(Expr::value(high_bson)));
            self.filter = std::mem::take(&mut self.filter).and(Filter::expr(skip));
        }
        let item = Element::field(field);
        self.conditions.push(item.clone().gte(Expr::value(low)));
        self.conditions.push(item.lte(Expr::value(high)));
        self
    }

    /// The buckets numbered `from <= seq < to` only.
    #[must_use]
    pub fn seq(mut self, from: i64, to: i64) -> Self {
        let f = BucketDoc::<K, T>::fields();
        self.filter = std::mem::take(&mut self.filter).and(f.seq.gte(from).and(f.seq.lt(to)));
        self
    }

    /// Newest items first.
    #[must_use]
    pub fn newest_first(mut self) -> Self {
        self.newest_first = true;
        self
    }

    /// Oldest items first (the default).
    #[must_use]
    pub fn oldest_first(mut self) -> Self {
        self.newest_first = false;
        self
    }

    /// Skips the first `n` items.
    #[must_use]
    pub fn skip(mut self, n: u64) -> Self {
        self.skip = n;
        self
    }

    /// At most `n` items.
    #[must_use]
    pub fn limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    fn sort(&self) -> Sort<BucketDoc<K, T>> {
        let f = BucketDoc::<K, T>::fields();
        match (self.one_owner, self.newest_first) {
            (true, false) => Sort::asc(&f.seq),
            (true, true) => Sort::desc(&f.seq),
            (false, false) => Sort::asc(&f.owner).then_asc(&f.seq),
            (false, true) => Sort::desc(&f.owner).then_desc(&f.seq),
        }
    }

    /// The query for the buckets to read (those `after` a bucket already read, if given), in
    /// the read's order, through its index.
    fn find(&self, after: Option<Filter<BucketDoc<K, T>>>) -> odm::Find<BucketDoc<K, T>> {
        let filter = match after {
            Some(after) => self.filter.clone().and(after),
            None => self.filter.clone(),
        };
        let find = self.bucket.buckets.find(filter).sort(self.sort());
        match self.hint {
            Some(hint) => find.hint(hint),
            None => find,
        }
    }

    /// The buckets after `last` in the read's order, `(owner, seq)`: a batch goes on where the
    /// previous one ended, whatever was written or deleted between them.
    fn after(&self, last: &BucketDoc<K, T>) -> Filter<BucketDoc<K, T>> {
        let f = BucketDoc::<K, T>::fields();
        let later_seq = beyond(&f.seq, last.seq, self.newest_first);
        if self.one_owner {
            return later_seq;
        }
        beyond(&f.owner, &last.owner, self.newest_first).or(f.owner.eq(&last.owner).and(later_seq))
    }

    /// At most `limit` buckets to read (after `after`), their items filtered.
    fn buckets(
        &self,
        after: Option<Filter<BucketDoc<K, T>>>,
        limit: Option<u64>,
    ) -> Result<Vec<BucketDoc<K, T>>, PatternError> {
        if self.conditions.is_empty() {
            let find = self.find(after);
            return Ok(match limit {
                Some(limit) => find.limit(limit),
                None => find,
            }
            .to_vec()?);
        }
        Ok(self.aggregate(after, limit).to_vec()?)
    }

    /// The buckets' aggregation head: the bucket query as `$match` (and the index to use).
    fn head(&self, after: Option<Filter<BucketDoc<K, T>>>) -> odm::Aggregate<BucketDoc<K, T>> {
        let filter = match after {
            Some(after) => self.filter.clone().and(after),
            None => self.filter.clone(),
        };
        let aggregate = self.bucket.buckets.aggregate().filter(filter);
        match self.hint {
            Some(hint) => aggregate.hint(hint),
            None => aggregate,
        }
    }

    /// The buckets as an aggregation that keeps only the matching items of each.
    fn aggregate(
        &self,
        after: Option<Filter<BucketDoc<K, T>>>,
        limit: Option<u64>,
    ) -> odm::Aggregate<BucketDoc<K, T>> {
        let mut aggregate = self.head(after).sort(self.sort());
        if let Some(limit) = limit {
            aggregate = aggregate.limit(limit);
        }
        let items = &BucketDoc::<K, T>::fields().items;
        aggregate.set_expr(items, self.matching(items))
    }

    /// The items of a bucket that meet the read's conditions.
    fn matching(&self, items: &Field<BucketDoc<K, T>, Vec<T>>) -> Expr<BucketDoc<K, T>, Vec<T>> {
        if self.conditions.is_empty() {
            return items.expr();
        }
        items
            .expr()
            .filter_where(Expr::all_of(self.conditions.iter().cloned()))
    }

    fn check(&mut self) -> Result<(), PatternError> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The items, with the owner of each.
    pub fn to_vec_with_owner(mut self) -> Result<Vec<(K, T)>, PatternError>
    where
        K: Clone,
    {
        self.check()?;
        let mut out = Vec::new();
        self.collect(
            |bucket, items, out: &mut Vec<(K, T)>| {
                out.extend(items.map(|item| (bucket.clone(), item)));
            },
            &mut out,
        )?;
        Ok(out)
    }

    /// The items.
    pub fn to_vec(mut self) -> Result<Vec<T>, PatternError> {
        self.check()?;
        let mut out = Vec::new();
        self.collect(|_, items, out: &mut Vec<T>| out.extend(items), &mut out)?;
        Ok(out)
    }

    /// Reads buckets in batches until `skip + limit` items are in hand: a page of the bucket
    /// size reads one or two buckets when none lost an item to a removal, more only when some
    /// did. Each batch continues after the last bucket read (not by an offset), so a bucket
    /// opened or deleted meanwhile neither repeats nor hides items. Without a limit, every
    /// bucket in one read.
    fn collect<O>(
        &self,
        mut put: impl FnMut(&K, ItemsOf<T>, &mut Vec<O>),
        out: &mut Vec<O>,
    ) -> Result<(), PatternError> {
        let Some(limit) = self.limit else {
            let mut to_skip = self.skip;
            for bucket in self.buckets(None, None)? {
                let items = self.ordered(bucket.items, &mut to_skip, u64::MAX);
                put(&bucket.owner, items, out);
            }
            return Ok(());
        };
        let wanted = self.skip.saturating_add(limit);
        // Without a count per bucket, start small: the doubling finds the size.
        let mut batch = match self.bucket.options.max_items {
            Some(n) => wanted.div_ceil(u64::from(n)).saturating_add(1),
            None => 2,
        };
        let mut after = None;
        let mut to_skip = self.skip;
        loop {
            let buckets = self.buckets(after.take(), Some(batch))?;
            let last_batch = (buckets.len() as u64) < batch;
            for bucket in buckets {
                let room = limit - out.len() as u64;
                if room == 0 {
                    return Ok(());
                }
                after = Some(self.after(&bucket));
                let items = self.ordered(bucket.items, &mut to_skip, room);
                put(&bucket.owner, items, out);
            }
            if out.len() as u64 >= limit || last_batch {
                return Ok(());
            }
            batch = batch.saturating_mul(2);
        }
    }

    /// One bucket's items in the read's order, after skipping what is left to skip, at most
    /// `room` of them.
    fn ordered(&self, mut items: Vec<T>, to_skip: &mut u64, room: u64) -> ItemsOf<T> {
        if self.newest_first {
            items.reverse();
        }
        let skipped = (*to_skip).min(items.len() as u64);
        *to_skip -= skipped;
        items
            .into_iter()
            .skip(skipped as usize)
            .take(usize::try_from(room).unwrap_or(usize::MAX))
    }

    /// The items one at a time, from one snapshot, the buckets streamed (never all in memory).
    #[allow(clippy::iter_not_returning_iterator)]
    pub fn iter(mut self) -> Result<Items<T>, PatternError> {
        self.check()?;
        let cursor = if self.conditions.is_empty() {
            self.find(None).iter()?
        } else {
            self.aggregate(None, None).iter()?
        };
        Ok(Items {
            buckets: Box::new(cursor.map(|b| b.map(|b| b.items))),
            current: Vec::new().into_iter(),
            newest_first: self.newest_first,
            to_skip: self.skip,
            left: self.limit.unwrap_or(u64::MAX),
        })
    }

    /// The number of matching items (skip and limit aside).
    pub fn count(mut self) -> Result<u64, PatternError> {
        self.check()?;
        let items = self.matching(&BucketDoc::<K, T>::fields().items);
        let total = self
            .head(None)
            .group(Group::all().sum_expr(&Total::fields().n, items.size()))
            .first()?;
        Ok(total.map_or(0, |t| u64::try_from(t.n).unwrap_or(0)))
    }

    /// How the buckets are found: the bucket query's plan, limited to the buckets a page
    /// needs when the read has a limit and the buckets a count.
    pub fn explain(mut self) -> Result<Explain, PatternError> {
        self.check()?;
        let find = self.find(None);
        let find = match (self.limit, self.bucket.options.max_items) {
            (Some(limit), Some(n)) => find.limit(
                self.skip
                    .saturating_add(limit)
                    .div_ceil(u64::from(n))
                    .saturating_add(1),
            ),
            _ => find,
        };
        Ok(find.explain()?)
    }
}

/// Past `value` in a read's order: below it newest first, above it oldest first.
fn beyond<R, V: Serialize>(
    field: &Field<R, V>,
    value: impl IntoValue<V>,
    newest_first: bool,
) -> Filter<R> {
    if newest_first {
        field.lt(value)
    } else {
        field.gt(value)
    }
}

/// One bucket's items in a read's order.
type ItemsOf<T> = std::iter::Take<std::iter::Skip<std::vec::IntoIter<T>>>;

/// The result of a count's `$group`.
#[derive(Serialize, Deserialize, Embedded)]
struct Total {
    n: i64,
}

/// Items streamed from their buckets ([`Read::iter`]).
pub struct Items<T> {
    buckets: Box<dyn Iterator<Item = odm::Result<Vec<T>>> + Send>,
    current: std::vec::IntoIter<T>,
    newest_first: bool,
    to_skip: u64,
    left: u64,
}

impl<T> std::fmt::Debug for Items<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Items(left {})", self.left)
    }
}

impl<T> Iterator for Items<T> {
    type Item = Result<T, PatternError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.left == 0 {
                return None;
            }
            if let Some(item) = self.current.next() {
                if self.to_skip > 0 {
                    self.to_skip -= 1;
                    continue;
                }
                self.left -= 1;
                return Some(Ok(item));
            }
            match self.buckets.next()? {
                Ok(mut items) => {
                    if self.newest_first {
                        items.reverse();
                    }
                    self.current = items.into_iter();
                }
                Err(e) => return Some(Err(e.into())),
            }
        }
    }
}
