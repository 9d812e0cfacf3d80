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

use std::marker::PhantomData;

use bson::{Bson, DateTime, Document, doc};
use odm::engine::query::{Explain, FindOptions};
use odm::engine::update::UpdateOptions;
use odm::engine::{Direction, IndexSpec};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::meta::{PatternError, record};

/// One event and its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Event<E> {
    pub at: DateTime,
    pub data: E,
}

fn encode<E: Serialize>(
    pattern: &'static str,
    name: &str,
    at: DateTime,
    data: &E,
) -> Result<Document, PatternError> {
    let data = bson::serialize_to_bson(data).map_err(|e| PatternError::Refused {
        pattern,
        name: name.to_owned(),
        reason: format!("the event does not serialize: {e}"),
    })?;
    Ok(doc! { "at": at, "data": data })
}

fn decode<E: DeserializeOwned>(
    pattern: &'static str,
    name: &str,
    stored: &Bson,
) -> Result<Event<E>, PatternError> {
    let damaged = |reason: String| PatternError::Damaged {
        pattern,
        name: name.to_owned(),
        reason,
    };
    let Bson::Document(d) = stored else {
        return Err(damaged("an event is not a document".into()));
    };
    Ok(Event {
        at: *d.get_datetime("at").map_err(|e| damaged(e.to_string()))?,
        data: bson::deserialize_from_bson(d.get("data").cloned().unwrap_or(Bson::Null))
            .map_err(|e| damaged(format!("an event does not decode: {e}")))?,
    })
}

fn ensure_index(
    txn: &mut odm::engine::WriteTxn<'_>,
    name: &str,
    spec: IndexSpec,
) -> Result<(), PatternError> {
    if !txn
        .list_indexes(name)
        .iter()
        .any(|s| s.name() == spec.name())
    {
        txn.create_index(name, spec)?;
    }
    Ok(())
}

fn spec(keys: &[(&str, Direction)]) -> Result<IndexSpec, PatternError> {
    IndexSpec::new(keys.iter().copied())
        .map_err(|e| PatternError::Odm(odm::engine::Error::from(e).into()))
}

/// S2a: events in buckets of up to `bucket_size` per owner; see the module documentation.
#[derive(Debug, Clone)]
pub struct History<E> {
    db: odm::Database,
    name: String,
    bucket_size: u32,
    _event: PhantomData<fn() -> E>,
}

impl<E: Serialize + DeserializeOwned> History<E> {
    pub fn open(db: &odm::Database, name: &str, bucket_size: u32) -> Result<Self, PatternError> {
        let bucket_size = bucket_size.max(1);
        db.transaction(|txn| {
            record(
                txn,
                "history",
                name,
                doc! { "bucket_size": i64::from(bucket_size) },
            )?;
            // Not yet on the typed layer: this pattern's documents have no model, so its
            // indexes are made on the engine transaction underneath.
            let txn = txn.engine();
            ensure_index(
                txn,
                name,
                spec(&[
                    ("owner", Direction::Ascending),
                    ("count", Direction::Ascending),
                ])?,
            )?;
            ensure_index(
                txn,
                name,
                spec(&[
                    ("owner", Direction::Ascending),
                    ("entries.at", Direction::Ascending),
                ])?,
            )
        })?;
        Ok(History {
            db: db.clone(),
            name: name.to_owned(),
            bucket_size,
            _event: PhantomData,
        })
    }

    /// Adds an event to the owner's open bucket (a new bucket when it is full).
    pub fn record(&self, owner: &str, at: DateTime, data: &E) -> Result<(), PatternError> {
        let event = encode("history", &self.name, at, data)?;
        let result = self.db.engine().collection(&self.name).update_one(
            &doc! { "owner": owner, "count": { "$lt": i64::from(self.bucket_size) } },
            &doc! {
                "$inc": { "count": 1 },
                "$push": { "entries": event },
                "$min": { "first": at },
                "$max": { "last": at },
            },
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
        )?;
        let _ = result;
        Ok(())
    }

    /// The owner's events with `from <= at < to`, oldest first, from the buckets that hold one.
    pub fn range(
        &self,
        owner: &str,
        from: DateTime,
        to: DateTime,
    ) -> Result<Vec<Event<E>>, PatternError> {
        let txn = self.db.engine().read()?;
        let Some(coll) = txn.collection(&self.name)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for bucket in coll.find(&range_filter(owner, from, to), &FindOptions::default())? {
            let bucket = bucket?;
            for stored in bucket
                .get_array("entries")
                .map_err(|e| self.damaged(e.to_string()))?
            {
                let event: Event<E> = decode("history", &self.name, stored)?;
                if event.at >= from && event.at < to {
                    out.push(event);
                }
            }
        }
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
        let txn = self.db.engine().read()?;
        let coll = txn
            .collection(&self.name)?
            .ok_or_else(|| self.damaged("no events yet".into()))?;
        Ok(coll.explain(&range_filter(owner, from, to), &FindOptions::default())?)
    }

    /// Removes every event before `cutoff` (legal retention) and deletes the buckets left
    /// empty, in one transaction; returns how many buckets were deleted.
    pub fn remove_before(&self, cutoff: DateTime) -> Result<u64, PatternError> {
        Ok(self.db.engine().write(|txn| {
            txn.update_many(
                &self.name,
                &doc! { "first": { "$lt": cutoff } },
                &doc! { "$pull": { "entries": { "at": { "$lt": cutoff } } } },
                &UpdateOptions::default(),
            )?;
            txn.delete_many(&self.name, &doc! { "entries": { "$size": 0 } })
        })?)
    }

    /// Repacks an owner's events into full buckets, oldest first (after removals left gaps).
    /// Returns the number of buckets afterwards.
    pub fn compact(&self, owner: &str) -> Result<u64, PatternError> {
        let mut events: Vec<Bson> = Vec::new();
        self.db.engine().write(|txn| {
            for bucket in txn.find(&self.name, &doc! { "owner": owner }, None, None)? {
                events.extend(bucket.get_array("entries").cloned().unwrap_or_default());
            }
            events.sort_by_key(|e| match e {
                Bson::Document(d) => d.get_datetime("at").map_or(0, |d| d.timestamp_millis()),
                _ => 0,
            });
            txn.delete_many(&self.name, &doc! { "owner": owner })?;
            let mut buckets = 0;
            for chunk in events.chunks(self.bucket_size as usize) {
                let at = |e: &Bson| match e {
                    Bson::Document(d) => d.get("at").cloned().unwrap_or(Bson::Null),
                    _ => Bson::Null,
                };
                txn.insert_one(
                    &self.name,
                    doc! {
                        "owner": owner,
                        "count": chunk.len() as i64,
                        "first": at(&chunk[0]),
                        "last": at(&chunk[chunk.len() - 1]),
                        "entries": chunk.to_vec(),
                    },
                )?;
                buckets += 1;
            }
            Ok::<_, PatternError>(buckets)
        })
    }

    fn damaged(&self, reason: String) -> PatternError {
        PatternError::Damaged {
            pattern: "history",
            name: self.name.clone(),
            reason,
        }
    }
}

/// Buckets of `owner` holding an event in `[from, to)`.
fn range_filter(owner: &str, from: DateTime, to: DateTime) -> Document {
    doc! { "owner": owner, "entries": { "$elemMatch": { "at": { "$gte": from, "$lt": to } } } }
}

/// S2b: the newest `size` events of each owner in one document; see the module documentation.
#[derive(Debug, Clone)]
pub struct Window<E> {
    db: odm::Database,
    name: String,
    size: u32,
    _event: PhantomData<fn() -> E>,
}

impl<E: Serialize + DeserializeOwned> Window<E> {
    pub fn open(db: &odm::Database, name: &str, size: u32) -> Result<Self, PatternError> {
        db.transaction(|txn| record(txn, "window", name, doc! { "size": i64::from(size) }))?;
        Ok(Window {
            db: db.clone(),
            name: name.to_owned(),
            size,
            _event: PhantomData,
        })
    }

    /// Adds events; the window keeps the newest `size`, in time order, in one update.
    pub fn record(&self, owner: &str, events: &[(DateTime, E)]) -> Result<(), PatternError> {
        let each = events
            .iter()
            .map(|(at, data)| encode("window", &self.name, *at, data).map(Bson::Document))
            .collect::<Result<Vec<_>, _>>()?;
        self.db.engine().collection(&self.name).update_one(
            &doc! { "_id": owner },
            &doc! { "$push": { "entries": {
                "$each": each, "$sort": { "at": 1 }, "$slice": -i64::from(self.size),
            } } },
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
        )?;
        Ok(())
    }

    /// The owner's window, oldest first.
    pub fn events(&self, owner: &str) -> Result<Vec<Event<E>>, PatternError> {
        let Some(raw) = self
            .db
            .engine()
            .collection(&self.name)
            .get(&Bson::from(owner))?
        else {
            return Ok(Vec::new());
        };
        let doc = Document::try_from(raw.as_ref()).map_err(|e| PatternError::Damaged {
            pattern: "window",
            name: self.name.clone(),
            reason: e.to_string(),
        })?;
        doc.get_array("entries").map_or_else(
            |_| Ok(Vec::new()),
            |entries| {
                entries
                    .iter()
                    .map(|e| decode("window", &self.name, e))
                    .collect()
            },
        )
    }
}

/// S2c: one document per owner per day, expired whole by a TTL index on its last
/// modification; see the module documentation.
#[derive(Debug, Clone)]
pub struct Daily<E> {
    db: odm::Database,
    name: String,
    _event: PhantomData<fn() -> E>,
}

const DAY_MS: i64 = 86_400_000;

impl<E: Serialize + DeserializeOwned> Daily<E> {
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
                doc! { "retention_s": retention.as_secs() as i64 },
            )?;
            // Not yet on the typed layer: this pattern's documents have no model, so its
            // indexes are made on the engine transaction underneath.
            let txn = txn.engine();
            let ttl = IndexSpec::ascending("modified")
                .map_err(odm::engine::Error::from)?
                .expire_after(retention);
            ensure_index(txn, name, ttl)?;
            ensure_index(
                txn,
                name,
                spec(&[
                    ("owner", Direction::Ascending),
                    ("day", Direction::Ascending),
                ])?,
            )
        })?;
        Ok(Daily {
            db: db.clone(),
            name: name.to_owned(),
            _event: PhantomData,
        })
    }

    /// Adds an event to the owner's document of its day, refreshing the day's modification.
    pub fn record(&self, owner: &str, at: DateTime, data: &E) -> Result<(), PatternError> {
        let event = encode("daily", &self.name, at, data)?;
        let day = DateTime::from_millis(at.timestamp_millis().div_euclid(DAY_MS) * DAY_MS);
        self.db.engine().collection(&self.name).update_one(
            &doc! { "owner": owner, "day": day },
            &doc! { "$push": { "entries": event }, "$max": { "modified": at } },
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
        )?;
        Ok(())
    }

    /// The owner's days on record, oldest first.
    pub fn days(&self, owner: &str) -> Result<Vec<DateTime>, PatternError> {
        let txn = self.db.engine().read()?;
        let Some(coll) = txn.collection(&self.name)? else {
            return Ok(Vec::new());
        };
        let options = FindOptions {
            sort: Some(doc! { "day": 1 }),
            ..FindOptions::default()
        };
        coll.find(&doc! { "owner": owner }, &options)?
            .map(|d| {
                let d = d?;
                d.get_datetime("day")
                    .copied()
                    .map_err(|e| PatternError::Damaged {
                        pattern: "daily",
                        name: self.name.clone(),
                        reason: e.to_string(),
                    })
            })
            .collect()
    }
}
