//! Histories with retention (S2): events of an owner kept three ways.
//!
//! - [`History`] (S2a): buckets of up to N events per owner, each bucket recording its first
//!   and last time so that a time range query reads only the buckets that overlap it (an
//!   `$elemMatch` on the events finds them); events older than a date are removed with
//!   `$pull`, emptied buckets are deleted, and `compact` repacks an owner's events into full
//!   buckets.
//! - [`Window`] (S2b): one document per owner holding the newest N events, kept by `$push` with
//!   `$each`, `$sort` and `$slice` in one update.
//! - [`Daily`] (S2c): one document per owner per day under a TTL index on its last
//!   modification, so that whole days expire on their own while an active day stays alive.

use bson::DateTime;
use bson::oid::ObjectId;
use odm::engine::query::Explain;
use odm::{Collection, Document, Embedded, Filter, Index, IntoValue, Push, Sort, UpdateOptions};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// One event and its time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Event<E> {
    pub at: DateTime,
    pub data: E,
}

/// An event written from borrowed data, stored exactly as [`Event`] is.
#[derive(Serialize)]
struct EventRef<'e, E> {
    at: DateTime,
    data: &'e E,
}

impl<E: Serialize> IntoValue<Event<E>> for EventRef<'_, E> {
    fn into_bson(self) -> Result<bson::Bson, String> {
        bson::serialize_to_bson(&self).map_err(|e| e.to_string())
    }
}

/// A bucket of S2a: up to `bucket_size` events of one owner, with the times of its first and
/// last (so that a range reads only the buckets overlapping it).
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(
    collection = "history",
    index(keys(owner = 1, count = 1)),
    index(keys(owner = 1, "entries.at" = 1))
)]
struct HistoryBucket<E> {
    #[odm(id)]
    id: ObjectId,
    owner: String,
    count: i64,
    first: DateTime,
    last: DateTime,
    #[odm(embedded)]
    entries: Vec<Event<E>>,
}

/// S2a: events in buckets of up to `bucket_size` per owner; see the module documentation.
///
/// ```
/// use bson::DateTime;
/// use odm_patterns::History;
///
/// let db = odm::Database::in_memory()?;
/// let logins: History<String> = History::open(&db, "logins", 100)?;
/// let at = |ms| DateTime::from_millis(ms);
/// for (ms, place) in [(1_000, "home"), (2_000, "office"), (3_000, "train")] {
///     logins.record("ann", at(ms), &place.to_owned())?;
/// }
/// let morning = logins.range("ann", at(1_500), at(3_000))?;
/// assert_eq!(morning.len(), 1);
/// assert_eq!(morning[0].data, "office");
/// logins.remove_before(at(2_500))?; // retention
/// assert_eq!(logins.range("ann", at(0), at(10_000))?.len(), 1);
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug, Clone)]
pub struct History<E> {
    buckets: Collection<HistoryBucket<E>>,
    bucket_size: u32,
}

impl<E: Serialize + DeserializeOwned + 'static> History<E> {
    pub fn open(db: &odm::Database, name: &str, bucket_size: u32) -> Result<Self, PatternError> {
        let bucket_size = bucket_size.max(1);
        db.transaction(|txn| {
            record(
                txn,
                "history",
                name,
                bson::doc! { "bucket_size": i64::from(bucket_size) },
            )?;
            txn.collection_named::<HistoryBucket<E>>(name)?;
            Ok::<_, PatternError>(())
        })?;
        Ok(History {
            buckets: db.collection_named(name)?,
            bucket_size,
        })
    }

    /// Adds an event to the owner's open bucket (a new bucket when it is full).
    pub fn record(&self, owner: &str, at: DateTime, data: &E) -> Result<(), PatternError> {
        let f = HistoryBucket::<E>::fields();
        self.buckets.upsert_one(
            f.owner
                .eq(owner)
                .and(f.count.lt(i64::from(self.bucket_size))),
            f.count
                .inc(1)
                .and(f.entries.push(EventRef { at, data }))
                .and(f.first.min(at))
                .and(f.last.max(at)),
        )?;
        Ok(())
    }

    /// The owner's events with `from <= at < to`, oldest first, from the buckets that hold one.
    pub fn range(
        &self,
        owner: &str,
        from: DateTime,
        to: DateTime,
    ) -> Result<Vec<Event<E>>, PatternError> {
        let mut out: Vec<Event<E>> = self
            .buckets
            .find(range_filter(owner, from, to))
            .to_vec()?
            .into_iter()
            .flat_map(|bucket| bucket.entries)
            .filter(|event| event.at >= from && event.at < to)
            .collect();
        out.sort_by_key(|e| e.at);
        Ok(out)
    }

    /// How [`History::range`] finds its buckets.
    pub fn explain_range(
        &self,
        owner: &str,
        from: DateTime,
        to: DateTime,
    ) -> Result<Explain, PatternError> {
        Ok(self.buckets.find(range_filter(owner, from, to)).explain()?)
    }

    /// Removes every event before `cutoff` (legal retention) and deletes the buckets left
    /// empty, in one transaction; returns how many buckets were deleted.
    pub fn remove_before(&self, cutoff: DateTime) -> Result<u64, PatternError> {
        let f = HistoryBucket::<E>::fields();
        let e = Event::<E>::fields();
        Ok(self.buckets.database().write(|txn| {
            let mut buckets = txn.collection_named::<HistoryBucket<E>>(self.buckets.name())?;
            buckets.update_many(
                f.first.lt(cutoff),
                f.entries.pull_where(e.at.lt(cutoff)),
                &UpdateOptions::default(),
            )?;
            buckets.delete_many(f.entries.size(0))
        })?)
    }

    /// Repacks an owner's events into full buckets, oldest first (after removals left gaps).
    /// Returns the number of buckets afterwards.
    pub fn compact(&self, owner: &str) -> Result<u64, PatternError> {
        let f = HistoryBucket::<E>::fields();
        Ok(self.buckets.database().write(|txn| {
            let mut buckets = txn.collection_named::<HistoryBucket<E>>(self.buckets.name())?;
            let mut events: Vec<Event<E>> = buckets
                .find(f.owner.eq(owner))
                .to_vec()?
                .into_iter()
                .flat_map(|bucket| bucket.entries)
                .collect();
            events.sort_by_key(|e| e.at);
            buckets.delete_many(f.owner.eq(owner))?;
            let mut count = 0;
            let size = self.bucket_size as usize;
            while !events.is_empty() {
                let rest = events.split_off(size.min(events.len()));
                let chunk = std::mem::replace(&mut events, rest);
                buckets.insert_one(&HistoryBucket {
                    id: ObjectId::new(),
                    owner: owner.to_owned(),
                    count: chunk.len() as i64,
                    first: chunk[0].at,
                    last: chunk[chunk.len() - 1].at,
                    entries: chunk,
                })?;
                count += 1;
            }
            Ok(count)
        })?)
    }
}

/// Buckets of `owner` holding an event in `[from, to)`.
fn range_filter<E>(owner: &str, from: DateTime, to: DateTime) -> Filter<HistoryBucket<E>>
where
    E: Serialize + DeserializeOwned + 'static,
{
    let f = HistoryBucket::<E>::fields();
    let e = Event::<E>::fields();
    f.owner
        .eq(owner)
        .and(f.entries.elem_match(e.at.gte(from).and(e.at.lt(to))))
}

/// S2b's document: the newest events of one owner.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "window")]
struct WindowOf<E> {
    #[odm(id)]
    owner: String,
    #[odm(embedded)]
    entries: Vec<Event<E>>,
}

/// S2b: the newest `size` events of each owner in one document; see the module documentation.
///
/// ```
/// use bson::DateTime;
/// use odm_patterns::Window;
///
/// let db = odm::Database::in_memory()?;
/// let recent: Window<i32> = Window::open(&db, "recent", 2)?;
/// let events: Vec<(DateTime, i32)> = (1..=3).map(|i| (DateTime::from_millis(i), i as i32)).collect();
/// recent.record("ann", &events)?;
/// let kept: Vec<i32> = recent.events("ann")?.into_iter().map(|e| e.data).collect();
/// assert_eq!(kept, [2, 3]); // the newest two, oldest first
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Window<E> {
    windows: Collection<WindowOf<E>>,
    size: u32,
}

impl<E: Serialize + DeserializeOwned + 'static> Window<E> {
    pub fn open(db: &odm::Database, name: &str, size: u32) -> Result<Self, PatternError> {
        db.transaction(|txn| {
            record(txn, "window", name, bson::doc! { "size": i64::from(size) })?;
            txn.collection_named::<WindowOf<E>>(name)?;
            Ok::<_, PatternError>(())
        })?;
        Ok(Window {
            windows: db.collection_named(name)?,
            size,
        })
    }

    /// Adds events; the window keeps the newest `size`, in time order, in one update.
    pub fn record(&self, owner: &str, events: &[(DateTime, E)]) -> Result<(), PatternError> {
        let f = WindowOf::<E>::fields();
        let each = events.iter().map(|(at, data)| EventRef { at: *at, data });
        let keep = i32::try_from(self.size).unwrap_or(i32::MAX);
        self.windows.upsert_one(
            f.owner.eq(owner),
            f.entries.push_with(
                Push::each(each)
                    .sort_by(&Event::<E>::fields().at, true)
                    .slice(-keep),
            ),
        )?;
        Ok(())
    }

    /// The owner's window, oldest first.
    pub fn events(&self, owner: &str) -> Result<Vec<Event<E>>, PatternError> {
        Ok(self
            .windows
            .get(owner)?
            .map(|window| window.entries)
            .unwrap_or_default())
    }
}

/// S2c's document: the events of one owner on one day.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "daily", index(keys(owner = 1, day = 1)))]
struct DayEvents<E> {
    #[odm(id)]
    id: ObjectId,
    owner: String,
    day: DateTime,
    /// The latest event's time: the TTL index expires the day this long after it.
    modified: DateTime,
    #[odm(embedded)]
    entries: Vec<Event<E>>,
}

/// S2c: one document per owner per day, expired whole by a TTL index on its last
/// modification; see the module documentation.
///
/// ```
/// use bson::DateTime;
/// use odm_patterns::Daily;
///
/// let db = odm::Database::in_memory()?;
/// let days: Daily<String> = Daily::open(&db, "activity", std::time::Duration::from_secs(30 * 86_400))?;
/// days.record("ann", DateTime::from_millis(1_000), &"login".to_owned())?;
/// days.record("ann", DateTime::from_millis(90_000_000), &"login".to_owned())?;
/// assert_eq!(days.days("ann")?.len(), 2); // two days on record
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Daily<E> {
    days: Collection<DayEvents<E>>,
}

const DAY_MS: i64 = 86_400_000;

impl<E: Serialize + DeserializeOwned + 'static> Daily<E> {
    /// Days expire `retention` after their last modification.
    pub fn open(
        db: &odm::Database,
        name: &str,
        retention: std::time::Duration,
    ) -> Result<Self, PatternError> {
        db.transaction(|txn| {
            record(
                txn,
                "daily",
                name,
                bson::doc! { "retention_s": retention.as_secs() as i64 },
            )?;
            // The retention is chosen at run time, so the TTL index is made here rather than
            // declared on the model (kept as it is when it exists with this retention).
            let f = DayEvents::<E>::fields();
            txn.collection_named::<DayEvents<E>>(name)?
                .create_index(Index::asc(&f.modified).expire_after(retention))?;
            Ok::<_, PatternError>(())
        })?;
        Ok(Daily {
            days: db.collection_named(name)?,
        })
    }

    /// Adds an event to the owner's document of its day, refreshing the day's modification.
    pub fn record(&self, owner: &str, at: DateTime, data: &E) -> Result<(), PatternError> {
        let f = DayEvents::<E>::fields();
        let day = DateTime::from_millis(at.timestamp_millis().div_euclid(DAY_MS) * DAY_MS);
        self.days.upsert_one(
            f.owner.eq(owner).and(f.day.eq(day)),
            f.entries
                .push(EventRef { at, data })
                .and(f.modified.max(at)),
        )?;
        Ok(())
    }

    /// The owner's days on record, oldest first.
    pub fn days(&self, owner: &str) -> Result<Vec<DateTime>, PatternError> {
        let f = DayEvents::<E>::fields();
        Ok(self
            .days
            .find(f.owner.eq(owner))
            .sort(Sort::asc(&f.day))
            .to_vec()?
            .into_iter()
            .map(|day| day.day)
            .collect())
    }
}
