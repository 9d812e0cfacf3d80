//! `TimeSeries<M, S>` and `Counters`: measurements over time.
//!
//! `TimeSeries` keeps the samples of each series (its metadata `M`) in a [`Bucket`] per
//! aligned span, as MongoDB's time-series collections do: a bucket covers one span and closes
//! at its end, or at a count of samples, and records the earliest and latest time it holds, so
//! a range reads only the buckets whose span overlaps it, through the index on
//! `(owner, start)`. Retention is a TTL index on the bucket's latest time: a bucket expires
//! once its newest sample is older than the retention.
//!
//! `Counters` (S13, solution B) pre-aggregates counts per key and day, with hours inside the day
//! and minutes inside their hour, so that one upsert with three `$inc`s records an event and an
//! update never walks 1,440 minute fields.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{Bson, DateTime};
use odm::engine::query::Explain;
use odm::{Collection, Document, Embedded, IntoValue};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::bucket::{Bucket, BucketOptions, Span};
use crate::meta::{PatternError, record};

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
    fn into_bson(self) -> Result<Bson, bson::error::Error> {
        bson::serialize_to_bson(&self)
    }
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
#[derive(Debug)]
pub struct TimeSeries<M, S> {
    buckets: Bucket<M, Point<S>>,
}

impl<M, S> Clone for TimeSeries<M, S> {
    fn clone(&self) -> Self {
        TimeSeries {
            buckets: self.buckets.clone(),
        }
    }
}

/// One sample read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<M, S> {
    pub meta: M,
    pub at: DateTime,
    pub value: S,
}

impl<M, S> TimeSeries<M, S>
where
    M: Serialize + DeserializeOwned + Clone + Send + 'static,
    S: Serialize + DeserializeOwned + Send + 'static,
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
        let p = Point::<S>::fields();
        let mut options = BucketOptions::new()
            .max_items(max_count.max(1))
            .span(Span::Fixed(span), &p.t);
        if let Some(retention) = retention {
            options = options.retention(retention);
        }
        Ok(TimeSeries {
            buckets: Bucket::open_as(db, "timeseries", name, options)?,
        })
    }

    /// Adds a sample to its series' bucket for its span (a new one when that is full).
    pub fn insert(&self, meta: &M, at: DateTime, value: &S) -> Result<(), PatternError> {
        self.buckets.push(meta, PointRef { t: at, v: value })
    }

    /// The samples with `from <= t < to`, of one series or of all, in time order.
    pub fn range(
        &self,
        meta: Option<&M>,
        from: DateTime,
        to: DateTime,
    ) -> Result<Vec<Sample<M, S>>, PatternError> {
        let mut out: Vec<Sample<M, S>> = self
            .of(meta)
            .time(from, to)
            .to_vec_with_owner()?
            .into_iter()
            .map(|(meta, point)| Sample {
                meta,
                at: point.t,
                value: point.v,
            })
            .collect();
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
        self.of(meta).time(from, to).explain()
    }

    /// The samples of one series, or of all.
    fn of(&self, meta: Option<&M>) -> crate::bucket::Read<'_, M, Point<S>> {
        match meta {
            Some(meta) => self.buckets.read(meta),
            None => self.buckets.read_all(),
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
