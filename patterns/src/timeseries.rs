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

use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};
use odm::engine::query::{Explain, FindOptions};
use odm::engine::update::UpdateOptions;
use odm::engine::{Direction, IndexSpec};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::meta::{PatternError, record};

/// Samples bucketed per series and span; see the module documentation.
#[derive(Debug, Clone)]
pub struct TimeSeries<M, S> {
    db: odm::Database,
    name: String,
    span_ms: i64,
    max_count: u32,
    _types: PhantomData<fn() -> (M, S)>,
}

/// One sample read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<M, S> {
    pub meta: M,
    pub at: DateTime,
    pub value: S,
}

const SERIES: &str = "timeseries";

impl<M: Serialize + DeserializeOwned, S: Serialize + DeserializeOwned> TimeSeries<M, S> {
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
                doc! {
                    "span_ms": span_ms,
                    "max_count": i64::from(max_count),
                    "retention_s": retention.map(|r| r.as_secs() as i64),
                },
            )?;
            // Not yet on the typed layer: this pattern's documents have no model, so its
            // indexes are made on the engine transaction underneath.
            let txn = txn.engine();
            let mut specs = vec![IndexSpec::new([
                ("meta", Direction::Ascending),
                ("control.max", Direction::Ascending),
            ])];
            if let Some(retention) = retention {
                specs.push(
                    IndexSpec::ascending("control.max")
                        .map(|s| s.named("retention").expire_after(retention)),
                );
            }
            for spec in specs {
                let spec = spec.map_err(odm::engine::Error::from)?;
                if !txn
                    .list_indexes(name)
                    .iter()
                    .any(|s| s.name() == spec.name())
                {
                    txn.create_index(name, spec)?;
                }
            }
            Ok::<_, PatternError>(())
        })?;
        Ok(TimeSeries {
            db: db.clone(),
            name: name.to_owned(),
            span_ms,
            max_count: max_count.max(1),
            _types: PhantomData,
        })
    }

    /// Adds a sample to its series' bucket for its span (a new one when that is full).
    pub fn insert(&self, meta: &M, at: DateTime, value: &S) -> Result<(), PatternError> {
        let meta = self.encode(meta)?;
        let value = self.encode(value)?;
        let start = at.timestamp_millis().div_euclid(self.span_ms) * self.span_ms;
        self.db.engine().collection(&self.name).update_one(
            &doc! {
                "meta": meta,
                "control.start": DateTime::from_millis(start),
                "count": { "$lt": i64::from(self.max_count) },
            },
            &doc! {
                "$inc": { "count": 1 },
                "$push": { "samples": { "t": at, "v": value } },
                "$min": { "control.min": at },
                "$max": { "control.max": at },
            },
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
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
        let txn = self.db.engine().read()?;
        let Some(coll) = txn.collection(&self.name)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for bucket in coll.find(&filter, &FindOptions::default())? {
            let bucket = bucket?;
            let meta = bucket.get("meta").cloned().unwrap_or(Bson::Null);
            for sample in bucket
                .get_array("samples")
                .map_err(|e| self.damaged(e.to_string()))?
            {
                let Bson::Document(sample) = sample else {
                    continue;
                };
                let at = *sample
                    .get_datetime("t")
                    .map_err(|e| self.damaged(e.to_string()))?;
                if at < from || at >= to {
                    continue;
                }
                out.push(Sample {
                    meta: self.decode(meta.clone())?,
                    at,
                    value: self.decode(sample.get("v").cloned().unwrap_or(Bson::Null))?,
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
        let txn = self.db.engine().read()?;
        let coll = txn
            .collection(&self.name)?
            .ok_or_else(|| self.damaged("no samples yet".into()))?;
        Ok(coll.explain(&filter, &FindOptions::default())?)
    }

    fn range_filter(
        &self,
        meta: Option<&M>,
        from: DateTime,
        to: DateTime,
    ) -> Result<Document, PatternError> {
        // A bucket covers one span, so one that overlaps [from, to) has its latest sample
        // before `to + span`: both bounds narrow the index range.
        let before = DateTime::from_millis(to.timestamp_millis().saturating_add(self.span_ms));
        let mut filter = doc! {
            "control.max": { "$gte": from, "$lt": before },
            "control.min": { "$lt": to },
        };
        if let Some(meta) = meta {
            filter.insert("meta", self.encode(meta)?);
        }
        Ok(filter)
    }

    fn encode<T: Serialize>(&self, value: &T) -> Result<Bson, PatternError> {
        bson::serialize_to_bson(value).map_err(|e| PatternError::Refused {
            pattern: SERIES,
            name: self.name.clone(),
            reason: format!("a value does not serialize: {e}"),
        })
    }

    fn decode<T: DeserializeOwned>(&self, value: Bson) -> Result<T, PatternError> {
        bson::deserialize_from_bson(value)
            .map_err(|e| self.damaged(format!("a value does not decode: {e}")))
    }

    fn damaged(&self, reason: String) -> PatternError {
        PatternError::Damaged {
            pattern: SERIES,
            name: self.name.clone(),
            reason,
        }
    }
}

/// Counts per key and day, hours and minutes nested; see the module documentation.
#[derive(Debug, Clone)]
pub struct Counters {
    db: odm::Database,
    name: String,
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
        db.transaction(|txn| record(txn, "counters", name, Document::new()))?;
        Ok(Counters {
            db: db.clone(),
            name: name.to_owned(),
        })
    }

    /// Counts `n` events of `key` at `at`: one upsert, three increments.
    pub fn record(&self, key: &str, at: DateTime, n: i64) -> Result<(), PatternError> {
        let ms = at.timestamp_millis();
        let day = ms.div_euclid(DAY_MS);
        let minute_of_day = ms.rem_euclid(DAY_MS) / 60_000;
        let (hour, minute) = (minute_of_day / 60, minute_of_day % 60);
        self.db.engine().collection(&self.name).update_one(
            &doc! { "_id": format!("{key}/{day}") },
            &doc! {
                "$inc": {
                    "total": n,
                    format!("hours.{hour}.total"): n,
                    format!("hours.{hour}.minutes.{minute}"): n,
                },
                "$setOnInsert": { "key": key, "day": DateTime::from_millis(day * DAY_MS) },
            },
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
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
        let Some(raw) = self
            .db
            .engine()
            .collection(&self.name)
            .get(&Bson::String(format!("{key}/{day}")))?
        else {
            return Ok(counts);
        };
        let doc = Document::try_from(raw.as_ref()).map_err(|e| PatternError::Damaged {
            pattern: "counters",
            name: self.name.clone(),
            reason: e.to_string(),
        })?;
        let number = |b: &Bson| match b {
            Bson::Int32(n) => i64::from(*n),
            Bson::Int64(n) => *n,
            _ => 0,
        };
        counts.total = doc.get("total").map_or(0, number);
        if let Ok(hours) = doc.get_document("hours") {
            for (hour, entry) in hours {
                let (Ok(h), Bson::Document(entry)) = (hour.parse::<usize>(), entry) else {
                    continue;
                };
                if h >= 24 {
                    continue;
                }
                counts.hours[h] = entry.get("total").map_or(0, number);
                if let Ok(minutes) = entry.get_document("minutes") {
                    for (minute, n) in minutes {
                        if let Ok(m) = minute.parse::<usize>()
                            && m < 60
                        {
                            counts.minutes[h * 60 + m] = number(n);
                        }
                    }
                }
            }
        }
        Ok(counts)
    }
}
