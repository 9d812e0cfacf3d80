//! `TimeSeries<M, S>` and `Counters`: measurements over time.
//!
//! `TimeSeries` buckets the samples of each series (its metadata `M`) by time span, as
//! MongoDB's time-series collections do: a bucket covers one aligned span and closes at it, or
//! at a count of samples; it records the earliest and latest time it holds (`control.min`,
//! `control.max`), so a range query reads only buckets that overlap the range, through the
//! index `(meta, control.max)`. Retention is a TTL index on `control.max`: a bucket expires once
//! its newest sample is older than the retention.
//!
//! `Counters` (S13, solution B) pre-aggregates counts per key and day, with hours inside the day
//! and minutes inside their hour, so that one upsert with three `$inc`s records an event and an
//! update never walks 1,440 minute fields.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime};
use odm::engine::query::Explain;
use odm::{Collection, Document, Embedded, Filter, Index, IntoValue};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// A bucket's span and the times it holds (MongoDB's `control` of a time-series bucket).
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Control {
    /// The start of the aligned span the bucket covers.
    start: DateTime,
    min: DateTime,
    max: DateTime,
}

/// One stored sample: its time and value.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Point<S> {
    t: DateTime,
    v: S,
}

/// A sample written from a borrowed value, stored exactly as [`Point`] is.
#[derive(Serialize)]
struct PointRef<'s, S> {
    t: DateTime,
    v: &'s S,
}

impl<S: Serialize> IntoValue<Point<S>> for PointRef<'_, S> {
    fn into_bson(self) -> Result<Bson, String> {
        bson::serialize_to_bson(&self).map_err(|e| e.to_string())
    }
}

/// The samples of one series (`meta`) within one span, at most the series' `max_count`.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "timeseries", index(keys(meta = 1, "control.max" = 1)))]
struct SeriesBucket<M, S> {
    #[odm(id)]
    id: ObjectId,
    meta: M,
    #[odm(embedded)]
    control: Control,
    count: i64,
    #[odm(embedded)]
    samples: Vec<Point<S>>,
}

/// Samples bucketed per series and span; see the module documentation.
///
/// ```
/// use std::time::Duration;
/// use bson::DateTime;
/// use odm_patterns::TimeSeries;
///
/// let db = odm::Database::in_memory()?;
/// let temps: TimeSeries<String, f64> =
///     TimeSeries::open(&db, "temps", Duration::from_secs(3_600), 1_000, None)?;
/// for minute in 0..90 {
///     let at = DateTime::from_millis(minute * 60_000);
///     temps.insert(&"kitchen".to_owned(), at, &(20.0 + minute as f64 / 10.0))?;
/// }
/// let from = DateTime::from_millis(30 * 60_000);
/// let to = DateTime::from_millis(40 * 60_000);
/// let samples = temps.range(Some(&"kitchen".to_owned()), from, to)?;
/// assert_eq!(samples.len(), 10);
/// assert_eq!(samples[0].value, 23.0);
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TimeSeries<M, S> {
    buckets: Collection<SeriesBucket<M, S>>,
    /// The same buckets with the metadata left as BSON: a sample read back carries its
    /// series' metadata, decoded from the bucket's for each sample (so `M` need not be `Clone`).
    read: Collection<SeriesBucket<Bson, S>>,
    span_ms: i64,
    max_count: u32,
}

/// One sample read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<M, S> {
    pub meta: M,
    pub at: DateTime,
    pub value: S,
}

const SERIES: &str = "timeseries";

impl<M, S> TimeSeries<M, S>
where
    M: Serialize + DeserializeOwned + 'static,
    S: Serialize + DeserializeOwned + 'static,
{
    /// Buckets of at most `max_count` samples within aligned spans of `span`; buckets whose
    /// newest sample is older than `retention` expire.
    pub fn open(
        db: &odm::Database,
        name: &str,
        span: Duration,
        max_count: u32,
        retention: Option<Duration>,
    ) -> Result<Self, PatternError> {
        let span_ms = i64::try_from(span.as_millis()).unwrap_or(i64::MAX).max(1);
        db.transaction(|txn| {
            record(
                txn,
                SERIES,
                name,
                bson::doc! {
                    "span_ms": span_ms,
                    "max_count": i64::from(max_count),
                    "retention_s": retention.map(|r| r.as_secs() as i64),
                },
            )?;
            let mut buckets = txn.collection_named::<SeriesBucket<M, S>>(name)?;
            if let Some(retention) = retention {
                // The retention is chosen at run time, so the TTL index is made here rather
                // than declared on the model (kept as it is when it exists with this retention).
                let f = SeriesBucket::<M, S>::fields();
                buckets.create_index(
                    Index::asc(&f.control.max)
                        .named("retention")
                        .expire_after(retention),
                )?;
            }
            Ok::<_, PatternError>(())
        })?;
        Ok(TimeSeries {
            buckets: db.collection_named(name)?,
            read: db.collection_named(name)?,
            span_ms,
            max_count: max_count.max(1),
        })
    }

    /// Adds a sample to its series' bucket for its span (a new one when that is full).
    pub fn insert(&self, meta: &M, at: DateTime, value: &S) -> Result<(), PatternError> {
        let f = SeriesBucket::<M, S>::fields();
        let start = at.timestamp_millis().div_euclid(self.span_ms) * self.span_ms;
        self.buckets.upsert_one(
            f.meta
                .eq(meta)
                .and(f.control.start.eq(DateTime::from_millis(start)))
                .and(f.count.lt(i64::from(self.max_count))),
            f.count
                .inc(1)
                .and(f.samples.push(PointRef { t: at, v: value }))
                .and(f.control.min.min(at))
                .and(f.control.max.max(at)),
        )?;
        Ok(())
    }

    /// The samples with `from <= t < to`, of one series or of all, in time order.
    pub fn range(
        &self,
        meta: Option<&M>,
        from: DateTime,
        to: DateTime,
    ) -> Result<Vec<Sample<M, S>>, PatternError> {
        let filter = self.range_filter(meta, from, to)?;
        let mut out = Vec::new();
        for bucket in self.read.find(filter).to_vec()? {
            for point in bucket.samples {
                if point.t < from || point.t >= to {
                    continue;
                }
                let meta = bson::deserialize_from_bson(bucket.meta.clone()).map_err(|e| {
                    self.damaged(format!("a series' metadata does not decode: {e}"))
                })?;
                out.push(Sample {
                    meta,
                    at: point.t,
                    value: point.v,
                });
            }
        }
        out.sort_by_key(|s| s.at);
        Ok(out)
    }

    /// How [`TimeSeries::range`] reads: the buckets that overlap the range.
    pub fn explain_range(
        &self,
        meta: Option<&M>,
        from: DateTime,
        to: DateTime,
    ) -> Result<Explain, PatternError> {
        let filter = self.range_filter(meta, from, to)?;
        Ok(self.read.find(filter).explain()?)
    }

    fn range_filter(
        &self,
        meta: Option<&M>,
        from: DateTime,
        to: DateTime,
    ) -> Result<Filter<SeriesBucket<Bson, S>>, PatternError> {
        let f = SeriesBucket::<Bson, S>::fields();
        // A bucket covers one span, so one that overlaps [from, to) has its latest sample
        // before `to + span`: both bounds narrow the index range.
        let before = DateTime::from_millis(to.timestamp_millis().saturating_add(self.span_ms));
        let mut filter = f
            .control
            .max
            .gte(from)
            .and(f.control.max.lt(before))
            .and(f.control.min.lt(to));
        if let Some(meta) = meta {
            let meta = bson::serialize_to_bson(meta).map_err(|e| PatternError::Refused {
                pattern: SERIES,
                name: self.buckets.name().to_owned(),
                reason: format!("a value does not serialize: {e}"),
            })?;
            filter = filter.and(f.meta.eq(meta));
        }
        Ok(filter)
    }

    fn damaged(&self, reason: String) -> PatternError {
        PatternError::Damaged {
            pattern: SERIES,
            name: self.buckets.name().to_owned(),
            reason,
        }
    }
}

/// One hour of a day's counts: its total, and its minutes by number (`"0"`..`"59"`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Embedded)]
struct Hour {
    #[serde(default)]
    total: i64,
    #[serde(default)]
    minutes: BTreeMap<String, i64>,
}

/// One key's counts for one day, under `"{key}/{day number}"`; hours by number (`"0"`..`"23"`).
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "counters")]
struct DayOf {
    #[odm(id)]
    id: String,
    key: String,
    day: DateTime,
    #[serde(default)]
    total: i64,
    #[serde(default)]
    hours: BTreeMap<String, Hour>,
}

/// Counts per key and day, hours and minutes nested; see the module documentation.
///
/// ```
/// use bson::DateTime;
/// use odm_patterns::Counters;
///
/// let db = odm::Database::in_memory()?;
/// let views = Counters::open(&db, "views")?;
/// let at = DateTime::from_millis(3 * 3_600_000 + 5 * 60_000); // 03:05 on day 0
/// views.record("/home", at, 2)?;
/// views.record("/home", at, 1)?;
/// let day = views.day("/home", at)?;
/// assert_eq!((day.total, day.hours[3], day.minutes[3 * 60 + 5]), (3, 3, 3));
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Counters {
    days: Collection<DayOf>,
}

/// One key's counts for one day.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayCounts {
    pub total: i64,
    /// Per hour of the day (UTC).
    pub hours: [i64; 24],
    /// Per minute of the day (UTC), `minutes[h * 60 + m]`.
    pub minutes: Vec<i64>,
}

const DAY_MS: i64 = 86_400_000;

impl Counters {
    pub fn open(db: &odm::Database, name: &str) -> Result<Self, PatternError> {
        db.transaction(|txn| {
            record(txn, "counters", name, bson::Document::new())?;
            txn.collection_named::<DayOf>(name)?;
            Ok::<_, PatternError>(())
        })?;
        Ok(Counters {
            days: db.collection_named(name)?,
        })
    }

    /// Counts `n` events of `key` at `at`: one upsert, three increments.
    pub fn record(&self, key: &str, at: DateTime, n: i64) -> Result<(), PatternError> {
        let ms = at.timestamp_millis();
        let day = ms.div_euclid(DAY_MS);
        let minute_of_day = ms.rem_euclid(DAY_MS) / 60_000;
        let (hour, minute) = (minute_of_day / 60, minute_of_day % 60);
        let f = DayOf::fields();
        let hour = f.hours.key(&hour.to_string()).fields();
        self.days.upsert_one(
            f.id.eq(format!("{key}/{day}")),
            f.total
                .inc(n)
                .and(hour.total.inc(n))
                .and(hour.minutes.key(&minute.to_string()).inc(n))
                .and(f.key.set_on_insert(key))
                .and(f.day.set_on_insert(DateTime::from_millis(day * DAY_MS))),
        )?;
        Ok(())
    }

    /// The counts of `key` on the day holding `at`.
    pub fn day(&self, key: &str, at: DateTime) -> Result<DayCounts, PatternError> {
        let day = at.timestamp_millis().div_euclid(DAY_MS);
        let mut counts = DayCounts {
            minutes: vec![0; 1_440],
            ..DayCounts::default()
        };
        let Some(stored) = self.days.get(format!("{key}/{day}"))? else {
            return Ok(counts);
        };
        counts.total = stored.total;
        for (hour, entry) in &stored.hours {
            let Ok(h) = hour.parse::<usize>() else {
                continue;
            };
            if h >= 24 {
                continue;
            }
            counts.hours[h] = entry.total;
            for (minute, n) in &entry.minutes {
                if let Ok(m) = minute.parse::<usize>()
                    && m < 60
                {
                    counts.minutes[h * 60 + m] = *n;
                }
            }
        }
        Ok(counts)
    }
}
