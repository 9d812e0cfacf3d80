//! `Queue<J>` (S10): a priority work queue with timeouts. A worker takes the most urgent ready
//! job with one find-and-modify (marking it taken, with the time), so two workers never take
//! the same job; finished jobs are removed; jobs taken longer ago than a timeout go back to
//! ready with one multi-update.

use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime};
use odm::{Collection, Document, ModifyOptions, Sort};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// Where a job is: waiting, or taken by a worker (since `taken_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    Ready,
    Taken,
}

/// A job and its place in the queue. `J` is the job's type when reading; pushing writes the
/// job already serialized (`J = Bson`): typed inserts take an owned model, and a pushed job is
/// borrowed.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "queue", index(keys(state = 1, priority = -1, created = 1)))]
struct Queued<J> {
    #[odm(id)]
    id: ObjectId,
    state: State,
    priority: i32,
    created: DateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    taken_at: Option<DateTime>,
    job: J,
}

/// A priority queue of jobs; see the module documentation.
///
/// ```
/// use bson::DateTime;
/// use odm_patterns::Queue;
///
/// let db = odm::Database::in_memory()?;
/// let jobs: Queue<String> = Queue::open(&db, "jobs")?;
/// let now = DateTime::from_millis(0);
/// jobs.push(&"resize".to_owned(), 1, now)?;
/// jobs.push(&"bill".to_owned(), 9, now)?;
/// let (id, job) = jobs.take(now)?.expect("two are ready");
/// assert_eq!(job, "bill"); // the higher priority first
/// assert!(jobs.complete(id)?);
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug)]
pub struct Queue<J> {
    jobs: Collection<Queued<J>>,
    /// The same collection, for writing jobs given by reference.
    pushed: Collection<Queued<Bson>>,
}

/// A handle clones without its jobs' type being `Clone`.
impl<J> Clone for Queue<J> {
    fn clone(&self) -> Self {
        Queue {
            jobs: self.jobs.clone(),
            pushed: self.pushed.clone(),
        }
    }
}

const QUEUE: &str = "queue";

impl<J: Serialize + DeserializeOwned + 'static> Queue<J> {
    pub fn open(db: &odm::Database, name: &str) -> Result<Self, PatternError> {
        db.transaction(|txn| record(txn, QUEUE, name, bson::Document::new()))?;
        Ok(Queue {
            jobs: db.collection_named(name)?,
            pushed: db.collection_named(name)?,
        })
    }

    /// Adds a ready job; higher priorities are taken first.
    pub fn push(&self, job: &J, priority: i32, now: DateTime) -> Result<ObjectId, PatternError> {
        let job = bson::serialize_to_bson(job).map_err(|e| PatternError::Refused {
            pattern: QUEUE,
            name: self.jobs.name().to_owned(),
            reason: format!("the job does not serialize: {e}"),
        })?;
        let id = ObjectId::new();
        self.pushed.insert_one(&Queued {
            id,
            state: State::Ready,
            priority,
            created: now,
            taken_at: None,
            job,
        })?;
        Ok(id)
    }

    /// Takes the most urgent ready job (oldest first among equals), marking it taken at `now`.
    pub fn take(&self, now: DateTime) -> Result<Option<(ObjectId, J)>, PatternError> {
        let f = Queued::<J>::fields();
        let taken = self.jobs.find_one_and_update(
            f.state.eq(State::Ready),
            f.state.set(State::Taken).and(f.taken_at.set(Some(now))),
            &ModifyOptions {
                sort: Some(Sort::desc(&f.priority).then_asc(&f.created)),
                return_after: true,
                ..ModifyOptions::default()
            },
        )?;
        Ok(taken.map(|queued| (queued.id, queued.job)))
    }

    /// Removes a finished job; `false` when it was not taken.
    pub fn complete(&self, id: ObjectId) -> Result<bool, PatternError> {
        let f = Queued::<J>::fields();
        Ok(self
            .jobs
            .delete_one(f.id.eq(id).and(f.state.eq(State::Taken)))?
            > 0)
    }

    /// Puts back every job taken before `now - timeout`; returns how many.
    pub fn requeue_expired(&self, now: DateTime, timeout: Duration) -> Result<u64, PatternError> {
        let cutoff = DateTime::from_millis(
            now.timestamp_millis() - i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX),
        );
        let f = Queued::<J>::fields();
        let result = self.jobs.update_many(
            f.state.eq(State::Taken).and(f.taken_at.lt(Some(cutoff))),
            f.state.set(State::Ready).and(f.taken_at.unset()),
        )?;
        Ok(result.modified)
    }
}
