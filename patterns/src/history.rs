//! Histories with retention (S2): events of an owner kept three ways.
//!
//! - [`History`] (S2a): a [`Bucket`] of up to N events per owner. A multikey index on the
//!   events' times lets a time range read only the buckets holding an event in it (S2a's
//!   `$elemMatch`); events older than a date are removed with `$pull`, emptied buckets are
//!   deleted, and `compact` repacks an owner's events into full buckets.
//! - [`Window`] (S2b): one document per owner holding the newest N events, kept by `$push` with
//!   `$each`, `$sort` and `$slice` in one update.
//! - [`Daily`] (S2c): a [`Bucket`] per owner per day (a span of one day) under a TTL index on
//!   its latest event, so that whole days expire on their own while an active day stays alive.

use std::time::Duration;

use bson::DateTime;
use odm::engine::query::Explain;
use odm::{Collection, Document, Embedded, IntoValue, Push};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::bucket::{Bucket, BucketOptions, Span};
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
    fn into_bson(self) -> Result<bson::Bson, bson::error::Error> {
        bson::serialize_to_bson(&self)
    }
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
#[derive(Debug)]
pub struct History<E> {
    buckets: Bucket<String, Event<E>>,
}

impl<E> Clone for History<E> {
    fn clone(&self) -> Self {
        History {
            buckets: self.buckets.clone(),
        }
    }
}

impl<E: Serialize + DeserializeOwned + Send + 'static> History<E> {
    pub fn open(db: &odm::Database, name: &str, bucket_size: u32) -> Result<Self, PatternError> {
        let options = BucketOptions::new()
            .max_items(bucket_size.max(1))
            .time(&Event::<E>::fields().at)
            .index_item_times();
        Ok(History {
            buckets: Bucket::open_as(db, "history", name, options)?,
        })
    }

    /// Adds an event to the owner's open bucket (a new bucket when it is full).
    pub fn record(&self, owner: &str, at: DateTime, data: &E) -> Result<(), PatternError> {
        self.buckets.push(owner, EventRef { at, data })
    }

    /// The owner's events with `from <= at < to`, oldest first, from the buckets that hold one
    /// (found through the index on the events' times, S2a's `$elemMatch`).
    pub fn range(
        &self,
        owner: &str,
        from: DateTime,
        to: DateTime,
    ) -> Result<Vec<Event<E>>, PatternError> {
        let mut out = self.buckets.read(owner).time(from, to).to_vec()?;
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
        self.buckets.read(owner).time(from, to).explain()
    }

    /// Removes every event before `cutoff` (legal retention) and deletes the buckets left
    /// empty, in one transaction; returns how many buckets were deleted.
    pub fn remove_before(&self, cutoff: DateTime) -> Result<u64, PatternError> {
        self.buckets.remove_before(None, cutoff)
    }

    /// Repacks an owner's events into full buckets, in the order they were recorded (after
    /// removals left gaps). Returns the number of buckets afterwards.
    pub fn compact(&self, owner: &str) -> Result<u64, PatternError> {
        self.buckets.compact(owner)
    }
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

/// S2c: one bucket per owner per day, expired whole by a TTL index on its latest event (a
/// last modification keeps an active day alive); see the module documentation.
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
#[derive(Debug)]
pub struct Daily<E> {
    days: Bucket<String, Event<E>>,
}

impl<E> Clone for Daily<E> {
    fn clone(&self) -> Self {
        Daily {
            days: self.days.clone(),
        }
    }
}

impl<E: Serialize + DeserializeOwned + Send + 'static> Daily<E> {
    /// Days expire `retention` after their last event.
    pub fn open(db: &odm::Database, name: &str, retention: Duration) -> Result<Self, PatternError> {
        let options = BucketOptions::new()
            .span(
                Span::Fixed(Duration::from_hours(24)),
                &Event::<E>::fields().at,
            )
            .retention(retention);
        Ok(Daily {
            days: Bucket::open_as(db, "daily", name, options)?,
        })
    }

    /// Adds an event to the owner's bucket of its day, which its time keeps alive.
    pub fn record(&self, owner: &str, at: DateTime, data: &E) -> Result<(), PatternError> {
        self.days.push(owner, EventRef { at, data })
    }

    /// The owner's events of the day holding `at`, in the order they were recorded.
    pub fn day(&self, owner: &str, at: DateTime) -> Result<Vec<Event<E>>, PatternError> {
        self.days.read(owner).span(at).to_vec()
    }

    /// The owner's days on record, oldest first.
    pub fn days(&self, owner: &str) -> Result<Vec<DateTime>, PatternError> {
        self.days.spans(owner)
    }
}
