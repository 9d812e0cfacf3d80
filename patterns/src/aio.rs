//! The patterns for async code (feature `async`): [`Async<P>`] holds a pattern and runs its
//! operations on `odm`'s worker pool ([`odm::aio::run`]), so a tokio task never blocks on
//! one. Each pattern's operations have async methods of the same names taking owned values
//! (they travel to the worker); [`Async::run`] runs any other.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), odm_patterns::PatternError> {
//! use odm_patterns::aio::Async;
//! use odm_patterns::{Inbox, InboxVariant};
//!
//! let db = odm::aio::Database::in_memory().await?;
//! let inbox: Async<Inbox<String>> =
//!     Async::open(&db, |db| Inbox::open(db, "inbox", 50, InboxVariant::OpenBucket)).await?;
//! let mut feed = inbox.subscribe("ann").await?;
//! inbox.send("sam", &["ann", "bob"], "hello".into()).await?;
//! assert_eq!(inbox.latest("bob", 0, 10).await?[0].message, "hello");
//! let delivered = feed.next().await.expect("a message")?;
//! assert_eq!(delivered.message, "hello");
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use bson::DateTime;
use bson::oid::ObjectId;
use odm::Embedded;
use odm::aio::{Step, Stream};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{
    Bucket, Envelope, Event, History, Inbox, Node, PatternError, Queue, Sample, TimeSeries, Tree,
};

/// A pattern whose operations run without blocking the calling task; cheap to clone when the
/// pattern is.
#[derive(Debug, Clone)]
pub struct Async<P> {
    pattern: P,
}

impl<P: Clone + Send + Sync + 'static> Async<P> {
    /// Opens the pattern with its sync `open` on a worker.
    pub async fn open(
        db: &odm::aio::Database,
        open: impl FnOnce(&odm::Database) -> Result<P, PatternError> + Send + 'static,
    ) -> Result<Self, PatternError> {
        let db = db.blocking().clone();
        let pattern = odm::aio::run(move || open(&db)).await?;
        Ok(Async { pattern })
    }

    /// The async form of a pattern opened with the sync API.
    pub fn new(pattern: P) -> Self {
        Async { pattern }
    }

    /// The pattern, for its sync API.
    pub fn blocking(&self) -> &P {
        &self.pattern
    }

    /// Runs any operation of the pattern on a worker.
    pub async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&P) -> Result<R, PatternError> + Send + 'static,
    ) -> Result<R, PatternError> {
        let pattern = self.pattern.clone();
        odm::aio::run(move || work(&pattern)).await
    }
}

impl<M> Async<Inbox<M>>
where
    M: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// [`Inbox::send`].
    pub async fn send(
        &self,
        from: &str,
        to: &[&str],
        message: M,
    ) -> Result<ObjectId, PatternError> {
        let from = from.to_owned();
        let to: Vec<String> = to.iter().map(|&owner| owner.to_owned()).collect();
        self.run(move |inbox| {
            let to: Vec<&str> = to.iter().map(String::as_str).collect();
            inbox.send(&from, &to, &message)
        })
        .await
    }

    /// [`Inbox::latest`].
    pub async fn latest(
        &self,
        owner: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Envelope<M>>, PatternError> {
        let owner = owner.to_owned();
        self.run(move |inbox| inbox.latest(&owner, offset, limit))
            .await
    }

    /// [`Inbox::mark_read`].
    pub async fn mark_read(&self, owner: &str, id: ObjectId) -> Result<bool, PatternError> {
        let owner = owner.to_owned();
        self.run(move |inbox| inbox.mark_read(&owner, id)).await
    }

    /// [`Inbox::delete`].
    pub async fn delete(&self, owner: &str, id: ObjectId) -> Result<bool, PatternError> {
        let owner = owner.to_owned();
        self.run(move |inbox| inbox.delete(&owner, id)).await
    }

    /// [`Inbox::subscribe`] as a stream: the owner's new messages as they are committed.
    /// Dropping it stops its reader within a fraction of a second.
    pub async fn subscribe(
        &self,
        owner: &str,
    ) -> Result<Stream<Envelope<M>, PatternError>, PatternError> {
        let (inbox, owner) = (self.pattern.clone(), owner.to_owned());
        Stream::generate(
            move || inbox.subscribe(&owner),
            |feed| {
                Ok(match feed.next_timeout(odm::aio::STEP_WAIT)? {
                    Some(message) => Step::Item(message),
                    None => Step::Idle,
                })
            },
        )
        .await
    }
}

impl<K, T> Async<Bucket<K, T>>
where
    K: Serialize + DeserializeOwned + Send + Sync + 'static,
    T: Embedded + Serialize + Send + Sync + 'static,
{
    /// [`Bucket::push`].
    pub async fn push(&self, owner: K, item: T) -> Result<(), PatternError> {
        self.run(move |buckets| buckets.push(&owner, item)).await
    }

    /// [`Bucket::newest`].
    pub async fn newest(&self, owner: K, skip: u64, limit: u64) -> Result<Vec<T>, PatternError> {
        self.run(move |buckets| buckets.newest(&owner, skip, limit))
            .await
    }

    /// [`Bucket::count`].
    pub async fn count(&self, owner: K) -> Result<u64, PatternError> {
        self.run(move |buckets| buckets.count(&owner)).await
    }
}

impl<E> Async<History<E>>
where
    E: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// [`History::record`].
    pub async fn record(&self, owner: &str, at: DateTime, data: E) -> Result<(), PatternError> {
        let owner = owner.to_owned();
        self.run(move |history| history.record(&owner, at, &data))
            .await
    }

    /// [`History::range`].
    pub async fn range(
        &self,
        owner: &str,
        from: DateTime,
        to: DateTime,
    ) -> Result<Vec<Event<E>>, PatternError> {
        let owner = owner.to_owned();
        self.run(move |history| history.range(&owner, from, to))
            .await
    }

    /// [`History::remove_before`].
    pub async fn remove_before(&self, cutoff: DateTime) -> Result<u64, PatternError> {
        self.run(move |history| history.remove_before(cutoff)).await
    }
}

impl<M, S> Async<TimeSeries<M, S>>
where
    M: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    S: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// [`TimeSeries::insert`].
    pub async fn insert(&self, meta: M, at: DateTime, value: S) -> Result<(), PatternError> {
        self.run(move |series| series.insert(&meta, at, &value))
            .await
    }

    /// [`TimeSeries::range`].
    pub async fn range(
        &self,
        meta: Option<M>,
        from: DateTime,
        to: DateTime,
    ) -> Result<Vec<Sample<M, S>>, PatternError> {
        self.run(move |series| series.range(meta.as_ref(), from, to))
            .await
    }
}

impl<J> Async<Queue<J>>
where
    J: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// [`Queue::push`].
    pub async fn push(
        &self,
        job: J,
        priority: i32,
        now: DateTime,
    ) -> Result<ObjectId, PatternError> {
        self.run(move |queue| queue.push(&job, priority, now)).await
    }

    /// [`Queue::take`].
    pub async fn take(&self, now: DateTime) -> Result<Option<(ObjectId, J)>, PatternError> {
        self.run(move |queue| queue.take(now)).await
    }

    /// [`Queue::complete`].
    pub async fn complete(&self, id: ObjectId) -> Result<bool, PatternError> {
        self.run(move |queue| queue.complete(id)).await
    }

    /// [`Queue::requeue_expired`].
    pub async fn requeue_expired(
        &self,
        now: DateTime,
        timeout: Duration,
    ) -> Result<u64, PatternError> {
        self.run(move |queue| queue.requeue_expired(now, timeout))
            .await
    }
}

impl<N> Async<Tree<N>>
where
    N: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// [`Tree::insert`].
    pub async fn insert(
        &self,
        id: &str,
        parent: Option<&str>,
        data: N,
    ) -> Result<(), PatternError> {
        let (id, parent) = (id.to_owned(), parent.map(str::to_owned));
        self.run(move |tree| tree.insert(&id, parent.as_deref(), &data))
            .await
    }

    /// [`Tree::get`].
    pub async fn get(&self, id: &str) -> Result<Option<Node<N>>, PatternError> {
        let id = id.to_owned();
        self.run(move |tree| tree.get(&id)).await
    }

    /// [`Tree::children`].
    pub async fn children(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        let id = id.to_owned();
        self.run(move |tree| tree.children(&id)).await
    }

    /// [`Tree::descendants`].
    pub async fn descendants(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        let id = id.to_owned();
        self.run(move |tree| tree.descendants(&id)).await
    }

    /// [`Tree::ancestors`].
    pub async fn ancestors(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        let id = id.to_owned();
        self.run(move |tree| tree.ancestors(&id)).await
    }

    /// [`Tree::move_subtree`].
    pub async fn move_subtree(&self, id: &str, parent: Option<&str>) -> Result<u64, PatternError> {
        let (id, parent) = (id.to_owned(), parent.map(str::to_owned));
        self.run(move |tree| tree.move_subtree(&id, parent.as_deref()))
            .await
    }

    /// [`Tree::delete_subtree`].
    pub async fn delete_subtree(&self, id: &str) -> Result<u64, PatternError> {
        let id = id.to_owned();
        self.run(move |tree| tree.delete_subtree(&id)).await
    }
}
