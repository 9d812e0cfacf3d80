//! Transactions for async code: the sync transaction held by a thread of its own, which runs
//! the operations the async closure sends it, one at a time, in order.
//!
//! A sync [`crate::Txn`] borrows its database for its whole life, so it cannot cross an
//! `.await`; the thread owns it instead, and the closure's [`Txn`] is a handle that sends it
//! work. The closure's outcome decides the end: `Ok` commits, `Err` aborts. At most
//! [`pool_size`](super::pool_size) transactions hold a thread at once; the others wait for a
//! turn without one.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bson::Bson;
use tokio::sync::{Semaphore, oneshot};

use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::model::Document;
use crate::update::Update;
use crate::{UpdateOptions, UpdateResult};

use super::pool::pool_size;
use crate::cursor::spawn_query_thread;

/// How long [`super::Database::transaction`] goes on retrying a transaction that failed
/// with a transient conflict: the driver's `with_transaction` limit.
pub const TRANSACTION_RETRY_WINDOW: Duration = Duration::from_mins(2);

type Work = Box<dyn for<'t, 'db> FnOnce(&mut crate::Txn<'t, 'db>) + Send>;

/// What the transaction's thread is told.
enum Message {
    Run(Work),
    End { commit: bool },
}

/// A transaction's handle inside [`super::Database::transaction`]'s closure; cheap to clone.
/// Each method runs the sync [`crate::Txn`]'s method of the same name in the transaction.
/// Once the closure's future has ended, the transaction has too, and a kept handle's
/// operations fail with [`Error::TransactionEnded`].
#[derive(Clone, Debug)]
pub struct Txn {
    work: mpsc::Sender<Message>,
}

/// Why the transaction's thread leaves the sync transaction: the caller's abort, or a failure.
enum Ended {
    Aborted,
    Failed(Error),
}

impl From<Error> for Ended {
    fn from(e: Error) -> Self {
        Ended::Failed(e)
    }
}

/// Transactions holding a thread at once.
fn turns() -> &'static Semaphore {
    static TURNS: std::sync::OnceLock<Semaphore> = std::sync::OnceLock::new();
    TURNS.get_or_init(|| Semaphore::new(pool_size()))
}

pub(super) async fn transaction<R, F, Fut>(db: &crate::Database, mut f: F) -> Result<R>
where
    F: FnMut(Txn) -> Fut,
    Fut: Future<Output = Result<R>>,
{
    let started = Instant::now();
    loop {
        let outcome = attempt(db, &mut f).await;
        match outcome {
            Err(e) if e.is_transient() && started.elapsed() < TRANSACTION_RETRY_WINDOW => {}
            outcome => return outcome,
        }
    }
}

/// One run of `f` in a transaction of its own.
async fn attempt<R, F, Fut>(db: &crate::Database, f: &mut F) -> Result<R>
where
    F: FnMut(Txn) -> Fut,
    Fut: Future<Output = Result<R>>,
{
    // The semaphore is never closed, so a permit always comes.
    let _turn = turns().acquire().await.ok();
    let (work, queue) = mpsc::channel::<Message>();
    let (ended, outcome) = oneshot::channel::<Result<()>>();
    let db = db.clone();
    spawn_query_thread("transaction", move || {
        let result = db.transaction(|txn| {
            loop {
                match queue.recv() {
                    Ok(Message::Run(work)) => work(txn),
                    Ok(Message::End { commit: true }) => return Ok(()),
                    // Told to abort, or every handle dropped (the caller's future was).
                    Ok(Message::End { commit: false }) | Err(_) => return Err(Ended::Aborted),
                }
            }
        });
        let _ = ended.send(match result {
            Ok(()) | Err(Ended::Aborted) => Ok(()),
            Err(Ended::Failed(e)) => Err(e),
        });
    })?;
    let txn = Txn { work };
    let result = f(txn.clone()).await;
    let commit = result.is_ok();
    let _ = txn.work.send(Message::End { commit });
    let ending = outcome
        .await
        .unwrap_or_else(|_| Err(Error::TransactionEnded));
    match result {
        // The commit's own failure (a conflict found at commit) is the transaction's.
        Ok(value) => ending.map(|()| value),
        // The closure's error says why; the abort's own outcome adds nothing.
        Err(e) => Err(e),
    }
}

impl Txn {
    /// Runs `work` in the transaction, with the sync API.
    pub async fn run<R: Send + 'static>(
        &self,
        work: impl for<'t, 'db> FnOnce(&mut crate::Txn<'t, 'db>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let (answer, answered) = oneshot::channel();
        let job: Work = Box::new(move |txn| {
            let _ = answer.send(catch_unwind(AssertUnwindSafe(|| work(txn))));
        });
        self.work
            .send(Message::Run(job))
            .map_err(|_| Error::TransactionEnded)?;
        match answered.await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => resume_unwind(panic),
            Err(_) => Err(Error::TransactionEnded),
        }
    }

    pub async fn insert_one<T: Document + Send + Sync + 'static>(&self, value: T) -> Result<Bson> {
        self.run(move |txn| txn.insert_one(&value)).await
    }

    pub async fn insert_many<T: Document + Send + Sync + 'static>(
        &self,
        values: Vec<T>,
    ) -> Result<Vec<Bson>> {
        self.run(move |txn| txn.insert_many(&values)).await
    }

    pub async fn get<T: Document + Send + Sync + 'static>(
        &self,
        id: impl Into<Bson>,
    ) -> Result<Option<T>> {
        let id = id.into();
        self.run(move |txn| txn.get::<T>(&id)).await
    }

    /// The first match, as this transaction sees the collection.
    pub async fn find_one<T: Document + Send + Sync + 'static>(
        &self,
        filter: impl Into<Filter<T>>,
    ) -> Result<Option<T>> {
        let filter = filter.into();
        self.run(move |txn| txn.collection::<T>()?.find_one(filter))
            .await
    }

    /// Every match, as this transaction sees the collection.
    pub async fn find<T: Document + Send + Sync + 'static>(
        &self,
        filter: impl Into<Filter<T>>,
    ) -> Result<Vec<T>> {
        let filter = filter.into();
        self.run(move |txn| txn.collection::<T>()?.find(filter).to_vec())
            .await
    }

    pub async fn update_one<T: Document + Send + Sync + 'static>(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |txn| txn.update_one(filter, update, &UpdateOptions::default()))
            .await
    }

    pub async fn update_many<T: Document + Send + Sync + 'static>(
        &self,
        filter: impl Into<Filter<T>>,
        update: impl Into<Update<T>>,
    ) -> Result<UpdateResult> {
        let (filter, update) = (filter.into(), update.into());
        self.run(move |txn| txn.update_many(filter, update, &UpdateOptions::default()))
            .await
    }

    pub async fn replace_one<T: Document + Send + Sync + 'static>(
        &self,
        filter: impl Into<Filter<T>>,
        value: T,
    ) -> Result<UpdateResult> {
        let filter = filter.into();
        self.run(move |txn| txn.replace_one(filter, &value, false))
            .await
    }

    pub async fn delete_one<T: Document + Send + Sync + 'static>(
        &self,
        filter: impl Into<Filter<T>>,
    ) -> Result<u64> {
        let filter = filter.into();
        self.run(move |txn| txn.delete_one(filter)).await
    }

    pub async fn delete_many<T: Document + Send + Sync + 'static>(
        &self,
        filter: impl Into<Filter<T>>,
    ) -> Result<u64> {
        let filter = filter.into();
        self.run(move |txn| txn.delete_many(filter)).await
    }
}
