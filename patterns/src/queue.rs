//! `Queue<J>` (S10): a priority work queue with timeouts. A worker takes the most urgent ready
//! job with one find-and-modify (marking it taken, with the time), so two workers never take
//! the same job; finished jobs are removed; jobs taken longer ago than a timeout go back to
//! ready with one multi-update.

use std::marker::PhantomData;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime, doc};
use odm::engine::update::{FindAndModify, ReturnDocument, UpdateOptions};
use odm::engine::{Direction, IndexSpec};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::meta::{PatternError, record};

/// A priority queue of jobs; see the module documentation.
#[derive(Debug, Clone)]
pub struct Queue<J> {
    db: odm::Database,
    name: String,
    _job: PhantomData<fn() -> J>,
}

const QUEUE: &str = "queue";

impl<J: Serialize + DeserializeOwned> Queue<J> {
    pub fn open(db: &odm::Database, name: &str) -> Result<Self, PatternError> {
        db.engine().write(|txn| {
            record(txn, QUEUE, name, bson::Document::new())?;
            let spec = IndexSpec::new([
                ("state", Direction::Ascending),
                ("priority", Direction::Descending),
                ("created", Direction::Ascending),
            ])
            .map_err(odm::engine::Error::from)?;
            if !txn
                .list_indexes(name)
                .iter()
                .any(|s| s.name() == spec.name())
            {
                txn.create_index(name, spec)?;
            }
            Ok::<_, PatternError>(())
        })?;
        Ok(Queue {
            db: db.clone(),
            name: name.to_owned(),
            _job: PhantomData,
        })
    }

    /// Adds a ready job; higher priorities are taken first.
    pub fn push(&self, job: &J, priority: i32, now: DateTime) -> Result<ObjectId, PatternError> {
        let job = bson::serialize_to_bson(job).map_err(|e| PatternError::Refused {
            pattern: QUEUE,
            name: self.name.clone(),
            reason: format!("the job does not serialize: {e}"),
        })?;
        let id = ObjectId::new();
        self.db.engine().collection(&self.name).insert_one(doc! {
            "_id": id, "state": "ready", "priority": priority, "created": now, "job": job,
        })?;
        Ok(id)
    }

    /// Takes the most urgent ready job (oldest first among equals), marking it taken at `now`.
    pub fn take(&self, now: DateTime) -> Result<Option<(ObjectId, J)>, PatternError> {
        let taken = self
            .db
            .engine()
            .collection(&self.name)
            .find_one_and_update(
                &doc! { "state": "ready" },
                &doc! { "$set": { "state": "taken", "taken_at": now } },
                &FindAndModify {
                    sort: Some(doc! { "priority": -1, "created": 1 }),
                    return_document: ReturnDocument::After,
                    ..FindAndModify::default()
                },
            )?;
        let Some(doc) = taken else {
            return Ok(None);
        };
        let damaged = |reason: String| PatternError::Damaged {
            pattern: QUEUE,
            name: self.name.clone(),
            reason,
        };
        let id = doc
            .get_object_id("_id")
            .map_err(|e| damaged(e.to_string()))?;
        let job = bson::deserialize_from_bson(doc.get("job").cloned().unwrap_or(Bson::Null))
            .map_err(|e| damaged(format!("the job does not decode: {e}")))?;
        Ok(Some((id, job)))
    }

    /// Removes a finished job; `false` when it was not taken.
    pub fn complete(&self, id: ObjectId) -> Result<bool, PatternError> {
        Ok(self
            .db
            .engine()
            .collection(&self.name)
            .delete_one(&doc! { "_id": id, "state": "taken" })?
            > 0)
    }

    /// Puts back every job taken before `now - timeout`; returns how many.
    pub fn requeue_expired(&self, now: DateTime, timeout: Duration) -> Result<u64, PatternError> {
        let cutoff = DateTime::from_millis(
            now.timestamp_millis() - i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX),
        );
        let result = self.db.engine().collection(&self.name).update_many(
            &doc! { "state": "taken", "taken_at": { "$lt": cutoff } },
            &doc! { "$set": { "state": "ready" }, "$unset": { "taken_at": "" } },
            &UpdateOptions::default(),
        )?;
        Ok(result.modified)
    }
}
