//! `Cursor<T>`: typed results pulled one at a time, for finds and aggregations alike.
//!
//! A cursor of the engine borrows its snapshot, so the two cannot travel together inside an
//! iterator the caller owns. A reader thread therefore holds the snapshot and the engine's
//! cursor, decodes each result and hands it over through a bounded channel: at most
//! [`STREAM_BUFFER`] results wait in memory, however many there are. The thread starts at the
//! first pull, and dropping the cursor stops it at its next send.
//!
//! What the reader runs is a [`Producer`]: the async API takes it out of the cursor
//! ([`Cursor::into_producer`]) and runs it with a sink of its own, so that both APIs read
//! results by one implementation.
//!
//! On the MongoDB back end the driver's cursor already pulls one batch at a time and owns
//! what it needs, so the cursor wraps it directly.

use odm_engine::ReadTxn;

use crate::error::Result;

/// How many results a [`Cursor`] reads ahead of its caller.
pub const STREAM_BUFFER: usize = 64;

/// Results pulled one at a time; see [`crate::Find::iter`] and [`crate::Aggregate::iter`].
///
/// ```
/// use odm::{Database, Document, Filter};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "logs")]
/// struct Log {
///     #[odm(id)]
///     id: i64,
///     level: String,
/// }
///
/// let db = Database::in_memory()?;
/// let logs = db.collection::<Log>()?;
/// let all: Vec<Log> = (0..10_000).map(|id| Log { id, level: "info".into() }).collect();
/// logs.insert_many(&all)?;
/// // Only the first three are decoded; dropping the cursor stops its reader.
/// let first: Vec<i64> = logs
///     .find(Filter::all())
///     .iter()?
///     .take(3)
///     .map(|log| log.map(|log| log.id))
///     .collect::<odm::Result<_>>()?;
/// assert_eq!(first, [0, 1, 2]);
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Cursor<T> {
    /// What the reader thread will run, until the first pull starts it.
    pending: Option<Producer<T>>,
    /// `None` once dropped, so that the reader stops before it is joined.
    receiver: Option<std::sync::mpsc::Receiver<Result<T>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    /// Results pulled straight from a source that owns its state (a server's cursor).
    direct: Option<Box<dyn Iterator<Item = Result<T>> + Send>>,
}

impl<T> std::fmt::Debug for Cursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("pending", &self.pending.is_some())
            .field("receiver", &self.receiver.is_some())
            .field("reader", &self.reader.is_some())
            .field("direct", &self.direct.is_some())
            .finish()
    }
}

/// Produces a cursor's results: gives each to the sink, which answers whether the reader
/// still wants more; stops when it answers no.
pub(crate) type Producer<T> = Box<dyn FnOnce(&mut dyn FnMut(Result<T>) -> bool) + Send>;

impl<T: Send + 'static> Cursor<T> {
    /// A cursor whose reader thread will own `snapshot` and run `produce` in it; `produce`
    /// gives each result to its sink, which answers whether the caller still wants more. An
    /// error `produce` returns becomes the last item.
    pub(crate) fn spawn(
        snapshot: ReadTxn,
        produce: impl FnOnce(&ReadTxn, &mut dyn FnMut(Result<T>) -> bool) -> Result<()> + Send + 'static,
    ) -> Self {
        let producer: Producer<T> = Box::new(move |sink| {
            if let Err(e) = produce(&snapshot, &mut *sink) {
                sink(Err(e));
            }
        });
        Cursor {
            pending: Some(producer),
            receiver: None,
            reader: None,
            direct: None,
        }
    }

    /// Results pulled straight from `source`, which owns what it reads from.
    pub(crate) fn over(source: impl Iterator<Item = Result<T>> + Send + 'static) -> Self {
        Cursor {
            pending: None,
            receiver: None,
            reader: None,
            direct: Some(Box::new(source)),
        }
    }

    /// What is left of the results, as a producer for a reader of the caller's own.
    #[cfg(feature = "async")]
    pub(crate) fn into_producer(mut self) -> Producer<T> {
        if let Some(producer) = self.pending.take() {
            return producer;
        }
        let mut rest = std::mem::replace(&mut self, Cursor::over(std::iter::empty()));
        Box::new(move |sink| {
            for item in rest.by_ref() {
                if !sink(item) {
                    return;
                }
            }
        })
    }

    /// Starts the reader thread on the pending producer.
    fn start(&mut self, producer: Producer<T>) {
        let (sender, receiver) = std::sync::mpsc::sync_channel(STREAM_BUFFER);
        let spawned = spawn_query_thread("reader", move || {
            // A send fails once the cursor is dropped: nobody wants more.
            producer(&mut |item| sender.send(item).is_ok());
        });
        match spawned {
            Ok(reader) => {
                self.receiver = Some(receiver);
                self.reader = Some(reader);
            }
            // No thread, no results: the cursor's one item says why.
            Err(e) => *self = Cursor::over(std::iter::once(Err(e))),
        }
    }
}

/// Runs `body` on a thread of its own, named `odm-<what>`, with the stack that queries over
/// deeply nested documents need ([`odm_engine::QUERY_THREAD_STACK_BYTES`]): every thread the
/// typed layer starts to run engine work (cursor readers, the async API's workers).
pub(crate) fn spawn_query_thread(
    what: &'static str,
    body: impl FnOnce() + Send + 'static,
) -> Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("odm-{what}"))
        .stack_size(odm_engine::QUERY_THREAD_STACK_BYTES)
        .spawn(body)
        .map_err(|source| odm_engine::Error::ThreadUnavailable { what, source }.into())
}

impl<T: Send + 'static> Iterator for Cursor<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        if let Some(producer) = self.pending.take() {
            self.start(producer);
        }
        if let Some(direct) = &mut self.direct {
            return direct.next();
        }
        self.receiver.as_ref()?.recv().ok()
    }
}

impl<T> Drop for Cursor<T> {
    fn drop(&mut self) {
        self.receiver = None;
        if let Some(reader) = self.reader.take() {
            // The reader's next send fails and it returns; a panic in it was already reported.
            let _ = reader.join();
        }
    }
}
