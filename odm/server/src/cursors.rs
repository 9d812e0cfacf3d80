//! Server-side cursors. A find or an aggregation answers its first batch at once; when results
//! remain, a cursor keeps them for `getMore` until they run out, `killCursors` closes it, or it
//! stays unused past the idle timeout (MongoDB's 10 minutes).
//!
//! A cursor over the engine reads one snapshot, whose iterator borrows it: so a live cursor is
//! a thread that owns the snapshot and hands over batches on request (the connection thread
//! that asks may change from one `getMore` to the next, as drivers pool connections). A query
//! that cannot outgrow its first batch runs inline, without that thread. Results computed
//! inside a transaction are buffered instead; their bytes count against a bound, and so does
//! the number of open cursors.
//!
//! A batch holds at most the requested number of documents and stops before 16 MiB; a batch
//! that may hold any holds at least one, however large.
//!
//! A cursor's work runs under the interrupt of the command that asks for it (see
//! `operations`): the opening command's, then each `getMore`'s, entered on the cursor's thread
//! for each batch. The opening command's `maxTimeMS` covers the cursor's whole work, as in
//! MongoDB: each `getMore` runs on what the ones before left, and an expiry ends the cursor.
//! A cursor belongs to the session that opened it, and `killSessions` closes it.
//!
//! A change stream's cursor (see `command::change_stream`) keeps its stream instead: it never
//! runs out, `getMore` waits for new events, and dropping the namespace it watches does not
//! close it (it must deliver the `drop` and `invalidate` events).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bson::RawDocumentBuf;
use odm_engine::interrupt::Interrupt;
use odm_engine::{Database, ErrorCode, ReadCollection};

use super::command::CommandError;
use super::command::change_stream::StreamCursor;
use super::command::tailable::TailCursor;
use super::session::SessionId;
use super::storage::Storage;
use super::{Config, Shared};

/// The most bytes of documents in one batch.
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;
/// MongoDB's default size of a first batch.
pub const DEFAULT_FIRST_BATCH: usize = 101;

/// Results, one at a time.
pub type Results<'t> = Box<dyn Iterator<Item = Result<RawDocumentBuf, CommandError>> + 't>;

/// Opens a query's results over a collection of a snapshot; runs on the thread that keeps the
/// cursor.
pub type Open =
    Box<dyn for<'c, 't> FnOnce(&'c ReadCollection<'t>) -> Result<Results<'c>, CommandError> + Send>;

/// One batch and whether the results are over.
#[derive(Debug, Default)]
pub struct Batch {
    pub docs: Vec<RawDocumentBuf>,
    pub exhausted: bool,
}

/// The open cursors of a server.
#[derive(Debug)]
pub struct Cursors {
    open: Mutex<HashMap<i64, Entry>>,
    /// Cursors a `getMore` is using right now (taken out of `open`), with their namespace and
    /// a flag `killCursors` sets: the `getMore` then stops waiting and the cursor is gone.
    busy: Mutex<HashMap<i64, Busy>>,
    buffered_bytes: AtomicUsize,
    max_open: usize,
    max_bytes: usize,
    timeout: Duration,
}

/// A cursor a `getMore` is using: its namespace, the flag `killCursors` sets, and the
/// `getMore`'s interrupt, which `killCursors` kills so that the work stops at its next check.
type Busy = (String, Arc<AtomicBool>, Interrupt);

#[derive(Debug)]
struct Entry {
    /// `db.collection`, which `getMore` must name.
    ns: String,
    last_used: Instant,
    source: Source,
    /// The session that opened the cursor (`killSessions` closes it).
    session: Option<SessionId>,
    /// What the opening command's `maxTimeMS` left: each `getMore` runs within it and
    /// leaves the rest, so that the limit covers the cursor's whole work, as in MongoDB.
    time_left: Option<Duration>,
    /// Opened with `noCursorTimeout`: the idle timeout does not close it (its session's end,
    /// `killCursors` and the bound on open cursors still do).
    no_timeout: bool,
}

#[derive(Debug)]
enum Source {
    Buffered {
        docs: VecDeque<RawDocumentBuf>,
        bytes: usize,
    },
    Live(Live),
    Stream(Box<StreamCursor>),
    /// A tailable cursor over a capped collection (see `command::tailable`).
    Tail(Box<TailCursor>),
}

impl Source {
    /// Whether a `getMore` may wait for results (and so take a `maxTimeMS`).
    fn awaits(&self) -> bool {
        match self {
            Source::Stream(_) => true,
            Source::Tail(tail) => tail.awaits(),
            Source::Buffered { .. } | Source::Live(_) => false,
        }
    }
}

/// What `getMore` answers: a batch, whether the cursor is done, and a change stream's
/// `postBatchResumeToken`.
#[derive(Debug)]
pub struct More {
    pub docs: Vec<RawDocumentBuf>,
    pub exhausted: bool,
    pub resume_token: Option<bson::Document>,
}

/// A cursor's thread: asked for batches of at most `n` documents, each under the interrupt of
/// the `getMore` asking.
#[derive(Debug)]
struct Live {
    requests: SyncSender<(usize, Option<Interrupt>)>,
    batches: Receiver<Result<Batch, CommandError>>,
}

impl Cursors {
    pub fn new(config: &Config) -> Cursors {
        Cursors {
            open: Mutex::new(HashMap::new()),
            busy: Mutex::new(HashMap::new()),
            buffered_bytes: AtomicUsize::new(0),
            max_open: config.max_cursors,
            max_bytes: config.max_cursor_bytes,
            timeout: config.cursor_timeout,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<i64, Entry>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn open_count(&self) -> usize {
        self.lock().len()
    }

    fn check_room(&self, bytes: usize) -> Result<(), CommandError> {
        if self.open_count() >= self.max_open {
            return Err(CommandError::new(
                ErrorCode::EXCEEDED_MEMORY_LIMIT,
                format!(
                    "too many open cursors: the server keeps at most {}; close cursors or let them finish",
                    self.max_open
                ),
            ));
        }
        if self.buffered_bytes.load(Ordering::Relaxed) + bytes > self.max_bytes {
            return Err(CommandError::new(
                ErrorCode::EXCEEDED_MEMORY_LIMIT,
                format!(
                    "open cursors would hold more than {} bytes of results",
                    self.max_bytes
                ),
            ));
        }
        Ok(())
    }

    /// How many more bytes of results open cursors may hold.
    pub fn room(&self) -> usize {
        self.max_bytes
            .saturating_sub(self.buffered_bytes.load(Ordering::Relaxed))
    }

    /// Keeps a cursor under a random id, as MongoDB's are: positive, never 0 (which means
    /// "no cursor"), unused.
    fn insert(
        &self,
        ns: String,
        source: Source,
        session: Option<SessionId>,
    ) -> Result<i64, CommandError> {
        let mut open = self.lock();
        let id = loop {
            let random = getrandom::u64().map_err(|e| {
                CommandError::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("no randomness for a cursor id: {e}"),
                )
            })?;
            let id = (random >> 1) as i64;
            if id != 0 && !open.contains_key(&id) {
                break id;
            }
        };
        // A change stream's or tailable cursor's `getMore` waits its own `maxTimeMS`; the
        // opening command's limit is not the cursor's.
        let time_left = match source {
            Source::Stream(_) | Source::Tail(_) => None,
            _ => Interrupt::current().and_then(|i| i.remaining()),
        };
        open.insert(
            id,
            Entry {
                ns,
                last_used: Instant::now(),
                source,
                session,
                time_left,
                no_timeout: false,
            },
        );
        Ok(id)
    }

    /// Exempts cursor `id` from the idle timeout (a find's `noCursorTimeout`).
    pub fn keep_without_timeout(&self, id: i64) {
        if let Some(entry) = self.lock().get_mut(&id) {
            entry.no_timeout = true;
        }
    }

    /// Keeps results computed in advance (inside a transaction); the first batch is taken from
    /// them here. Returns the batch and the cursor id (0 when nothing remains).
    pub fn buffered(
        &self,
        ns: String,
        docs: Vec<RawDocumentBuf>,
        first_batch: usize,
        session: Option<SessionId>,
    ) -> Result<(Vec<RawDocumentBuf>, i64), CommandError> {
        let mut docs: VecDeque<RawDocumentBuf> = docs.into();
        let batch = take_batch(&mut docs, first_batch);
        if docs.is_empty() {
            return Ok((batch, 0));
        }
        let bytes = docs.iter().map(|d| d.as_bytes().len()).sum();
        self.check_room(bytes)?;
        self.buffered_bytes.fetch_add(bytes, Ordering::Relaxed);
        Ok((
            batch,
            self.insert(ns, Source::Buffered { docs, bytes }, session)?,
        ))
    }

    /// Runs a query on a cursor thread of its own; the first batch and the cursor id (0 when
    /// the results fit in it, and then the thread has ended).
    pub fn live(
        &self,
        db: Arc<Database>,
        ns: String,
        collection: String,
        open: Open,
        first_batch: usize,
        session: Option<SessionId>,
    ) -> Result<(Vec<RawDocumentBuf>, i64), CommandError> {
        self.check_room(0)?;
        let (requests, incoming) = sync_channel::<(usize, Option<Interrupt>)>(1);
        // The opening command's interrupt goes with its work to the cursor's thread.
        let interrupt = Interrupt::current();
        let (outgoing, batches) = sync_channel::<Result<Batch, CommandError>>(1);
        std::thread::Builder::new()
            .name("odm-cursor".into())
            .stack_size(odm_engine::QUERY_THREAD_STACK_BYTES)
            .spawn(move || {
                let _entered = interrupt.as_ref().map(Interrupt::enter);
                cursor_thread(&db, &collection, open, first_batch, &incoming, &outgoing);
            })
            .map_err(|e| {
                CommandError::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("cannot start a cursor: {e}"),
                )
            })?;
        let first = batches.recv().map_err(|_| thread_gone())??;
        if first.exhausted {
            return Ok((first.docs, 0));
        }
        let id = self.insert(ns, Source::Live(Live { requests, batches }), session)?;
        Ok((first.docs, id))
    }

    /// Keeps a change stream (whose first batch was read) under a new cursor id.
    pub fn stream(
        &self,
        ns: String,
        stream: StreamCursor,
        first: Vec<RawDocumentBuf>,
        session: Option<SessionId>,
    ) -> Result<(Vec<RawDocumentBuf>, i64), CommandError> {
        self.check_room(0)?;
        let id = self.insert(ns, Source::Stream(Box::new(stream)), session)?;
        Ok((first, id))
    }

    /// Keeps a tailable cursor (whose first batch was read) under a new cursor id.
    pub fn tail(
        &self,
        ns: String,
        tail: TailCursor,
        session: Option<SessionId>,
    ) -> Result<i64, CommandError> {
        self.check_room(0)?;
        self.insert(ns, Source::Tail(Box::new(tail)), session)
    }

    /// The next batch of cursor `id`, which must belong to `ns`; a change stream or an
    /// `awaitData` tailable cursor waits up to `wait` for its first result, reading the
    /// databases of `storage`. Only those await data: `wait` for another cursor is `BadValue`,
    /// as MongoDB refuses a `getMore`'s `maxTimeMS` on a cursor that does not await.
    /// Whether cursor `id` runs under its opening command's `maxTimeMS`.
    pub fn time_limited(&self, id: i64) -> bool {
        self.lock().get(&id).is_some_and(|e| e.time_left.is_some())
    }

    pub fn get_more(
        &self,
        id: i64,
        ns: &str,
        limit: usize,
        storage: &Storage,
        wait: Option<Duration>,
    ) -> Result<More, CommandError> {
        // Lock order: `open`, then `busy`; a cursor moves between them under the `open` lock,
        // so that `kill` always finds it in one of them.
        let killed = Arc::new(AtomicBool::new(false));
        let (mut entry, interrupt) = {
            let mut open = self.lock();
            let entry = match open.get(&id) {
                None => {
                    return Err(CommandError::new(
                        ErrorCode::CURSOR_NOT_FOUND,
                        format!("cursor id {id} not found"),
                    ));
                }
                Some(entry) if entry.ns != ns => {
                    return Err(CommandError::new(
                        ErrorCode::UNAUTHORIZED,
                        format!(
                            "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
                            entry.ns
                        ),
                    ));
                }
                Some(entry) if wait.is_some() && !entry.source.awaits() => {
                    return Err(CommandError::bad_value(
                        "cannot set maxTimeMS on getMore command for a non-awaitData cursor",
                    ));
                }
                Some(_) => open.remove(&id).expect("present"),
            };
            // The `getMore`'s kill flag, with what the cursor's time limit left.
            let interrupt = Interrupt::current()
                .unwrap_or_default()
                .until(entry.time_left.and_then(|l| Instant::now().checked_add(l)));
            self.lock_busy()
                .insert(id, (entry.ns.clone(), killed.clone(), interrupt.clone()));
            (entry, interrupt)
        };
        let outcome = {
            let _entered = interrupt.enter();
            self.next_batch(&mut entry, limit, storage, wait, &killed)
        };
        entry.time_left = interrupt.remaining();
        let mut open = self.lock();
        self.lock_busy().remove(&id);
        if killed.load(Ordering::Acquire) {
            self.release(&entry);
            return Err(CommandError::new(
                ErrorCode::CURSOR_KILLED,
                format!("cursor id {id} was killed while a getMore was using it"),
            ));
        }
        let more = match outcome {
            Ok(more) => more,
            Err(e) => {
                self.release(&entry);
                return Err(e);
            }
        };
        if more.exhausted {
            self.release(&entry);
        } else {
            entry.last_used = Instant::now();
            open.insert(id, entry);
        }
        Ok(more)
    }

    fn lock_busy(&self) -> MutexGuard<'_, HashMap<i64, Busy>> {
        self.busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next batch of a cursor taken out of the table.
    fn next_batch(
        &self,
        entry: &mut Entry,
        limit: usize,
        storage: &Storage,
        wait: Option<Duration>,
        killed: &AtomicBool,
    ) -> Result<More, CommandError> {
        let mut resume_token = None;
        let (docs, exhausted) = match &mut entry.source {
            Source::Buffered { docs, bytes } => {
                let batch = take_batch(docs, limit);
                let taken: usize = batch.iter().map(|d| d.as_bytes().len()).sum();
                *bytes -= taken;
                self.buffered_bytes.fetch_sub(taken, Ordering::Relaxed);
                (batch, docs.is_empty())
            }
            Source::Live(live) => {
                live.requests
                    .send((limit, Interrupt::current()))
                    .map_err(|_| thread_gone())?;
                let batch = live.batches.recv().map_err(|_| thread_gone())??;
                (batch.docs, batch.exhausted)
            }
            Source::Tail(tail) => {
                let docs = tail.next_batch(storage, limit, wait, killed)?;
                (docs, tail.is_done())
            }
            Source::Stream(stream) => {
                // An error ends the stream's cursor, as in MongoDB (the driver resumes).
                let wait = wait.unwrap_or(super::command::change_stream::DEFAULT_AWAIT);
                let docs = stream.poll_wait(storage, limit, wait, killed)?;
                resume_token = Some(stream.position().to_document());
                (docs, stream.is_closed())
            }
        };
        Ok(More {
            docs,
            exhausted,
            resume_token,
        })
    }

    fn release(&self, entry: &Entry) {
        if let Source::Buffered { bytes, .. } = &entry.source {
            self.buffered_bytes.fetch_sub(*bytes, Ordering::Relaxed);
        }
    }

    /// Closes cursor `id` of `ns`; whether it was open. A cursor a `getMore` is using ends
    /// when that `getMore` answers, which it does at its next check (`CursorKilled`).
    pub fn kill(&self, id: i64, ns: &str) -> bool {
        let removed = {
            let mut open = self.lock();
            match open.get(&id) {
                Some(entry) if entry.ns == ns => open.remove(&id),
                Some(_) => None,
                None => {
                    if let Some((busy_ns, killed, interrupt)) = self.lock_busy().get(&id)
                        && busy_ns == ns
                    {
                        killed.store(true, Ordering::Release);
                        interrupt.kill();
                        return true;
                    }
                    None
                }
            }
        };
        match removed {
            Some(entry) => {
                self.release(&entry);
                true
            }
            None => false,
        }
    }

    /// The cursors no `getMore` is using, as `$currentOp` lists idle cursors: id, namespace,
    /// session, time since last use.
    pub fn idle(&self) -> Vec<(i64, String, Option<SessionId>, Duration)> {
        self.lock()
            .iter()
            .map(|(id, e)| (*id, e.ns.clone(), e.session, e.last_used.elapsed()))
            .collect()
    }

    /// Closes every cursor of the sessions `chosen` selects; a cursor a `getMore` is using ends
    /// when that `getMore` answers (the `getMore` itself is killed through its operation).
    pub fn kill_sessions(&self, chosen: impl Fn(SessionId) -> bool) {
        let removed: Vec<Entry> = {
            let mut open = self.lock();
            let ids: Vec<i64> = open
                .iter()
                .filter(|(_, e)| e.session.is_some_and(&chosen))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| open.remove(id)).collect()
        };
        for entry in &removed {
            self.release(entry);
        }
    }

    /// Closes every cursor of `ns`, or of a database (`ns` ending in `.`).
    pub fn kill_namespace(&self, ns: &str) {
        let removed: Vec<Entry> = {
            let mut open = self.lock();
            let ids: Vec<i64> = open
                .iter()
                .filter(|(_, e)| !matches!(e.source, Source::Stream(_)))
                .filter(|(_, e)| e.ns == ns || (ns.ends_with('.') && e.ns.starts_with(ns)))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| open.remove(id)).collect()
        };
        for entry in &removed {
            self.release(entry);
        }
    }

    /// Closes every cursor (the server is stopping); a cursor a `getMore` is using ends when
    /// that `getMore` answers.
    pub fn close_all(&self) {
        let removed: Vec<Entry> = std::mem::take(&mut *self.lock()).into_values().collect();
        for entry in &removed {
            self.release(entry);
        }
    }

    /// Closes the cursors unused for longer than the idle timeout; how many.
    pub fn reap(&self) -> usize {
        let now = Instant::now();
        let removed: Vec<Entry> = {
            let mut open = self.lock();
            let ids: Vec<i64> = open
                .iter()
                .filter(|(_, e)| !e.no_timeout && now.duration_since(e.last_used) > self.timeout)
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| open.remove(id)).collect()
        };
        for entry in &removed {
            self.release(entry);
        }
        removed.len()
    }
}

fn thread_gone() -> CommandError {
    CommandError::new(ErrorCode::CURSOR_NOT_FOUND, "the cursor's reader ended")
}

/// The one rule every reply batch follows (cursors' first batches and `getMore`s, change
/// streams): at least one document, then documents while the batch stays within
/// [`MAX_BATCH_BYTES`], so that a reply stays under MongoDB's message bound.
#[derive(Debug, Default)]
pub struct BatchBytes {
    bytes: usize,
    count: usize,
}

impl BatchBytes {
    /// Whether a document of `size` bytes joins the batch; counts it if it does.
    pub fn admit(&mut self, size: usize) -> bool {
        if self.count > 0 && self.bytes + size > MAX_BATCH_BYTES {
            return false;
        }
        self.bytes += size;
        self.count += 1;
        true
    }
}

/// How an awaiting cursor (a change stream's, a tailable `awaitData` one) waits for results:
/// `poll` until it gives some, `done` says the cursor is over, `killed` is set or `wait` has
/// passed, sleeping between polls until a commit; a `killOp` of the `getMore` ends the wait
/// with `Interrupted`.
pub fn await_results(
    wait: Duration,
    killed: &AtomicBool,
    mut poll: impl FnMut() -> Result<Vec<RawDocumentBuf>, CommandError>,
    done: impl Fn() -> bool,
) -> Result<Vec<RawDocumentBuf>, CommandError> {
    use odm_engine::changes::clock;
    let deadline = Instant::now() + wait;
    loop {
        let seen = clock::commits();
        let batch = poll()?;
        if !batch.is_empty() || done() || killed.load(Ordering::Acquire) {
            return Ok(batch);
        }
        odm_engine::interrupt::check_now()
            .map_err(|stopped| CommandError::from(odm_engine::Error::from(stopped)))?;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(batch);
        }
        clock::wait_for_commit(seen, left.min(Duration::from_millis(250)));
    }
}

/// Takes a batch from buffered documents.
fn take_batch(docs: &mut VecDeque<RawDocumentBuf>, limit: usize) -> Vec<RawDocumentBuf> {
    let mut batch = Vec::new();
    let mut bytes = BatchBytes::default();
    while batch.len() < limit {
        let Some(next) = docs.front() else { break };
        if !bytes.admit(next.as_bytes().len()) {
            break;
        }
        batch.push(docs.pop_front().expect("peeked"));
    }
    batch
}

/// Fills a batch from results; `exhausted` when nothing follows it.
pub fn fill(
    results: &mut std::iter::Peekable<Results<'_>>,
    limit: usize,
) -> Result<Batch, CommandError> {
    let mut docs = Vec::new();
    let mut bytes = BatchBytes::default();
    while docs.len() < limit {
        let size = match results.peek() {
            None => break,
            Some(Err(_)) => return Err(results.next().expect("peeked").expect_err("an error")),
            Some(Ok(doc)) => doc.as_bytes().len(),
        };
        if !bytes.admit(size) {
            break;
        }
        docs.push(results.next().expect("peeked")?);
    }
    let exhausted = match results.peek() {
        None => true,
        Some(Err(_)) => return Err(results.next().expect("peeked").expect_err("an error")),
        Some(Ok(_)) => false,
    };
    Ok(Batch { docs, exhausted })
}

/// Runs a query on the calling thread when it cannot outgrow one batch: the batch, the rest
/// dropped.
pub fn inline(
    db: &Database,
    collection: &str,
    open: Open,
    limit: usize,
) -> Result<Vec<RawDocumentBuf>, CommandError> {
    let txn = db.read()?;
    let Some(collection) = txn.collection(collection)? else {
        return Ok(Vec::new());
    };
    let mut results = open(&collection)?.peekable();
    Ok(fill(&mut results, limit)?.docs)
}

fn cursor_thread(
    db: &Database,
    collection: &str,
    open: Open,
    first_batch: usize,
    requests: &Receiver<(usize, Option<Interrupt>)>,
    batches: &SyncSender<Result<Batch, CommandError>>,
) {
    let txn = match db.read() {
        Ok(txn) => txn,
        Err(e) => {
            let _ = batches.send(Err(e.into()));
            return;
        }
    };
    let collection = match txn.collection(collection) {
        Ok(Some(c)) => c,
        Ok(None) => {
            let _ = batches.send(Ok(Batch {
                docs: Vec::new(),
                exhausted: true,
            }));
            return;
        }
        Err(e) => {
            let _ = batches.send(Err(e.into()));
            return;
        }
    };
    let mut results = match open(&collection) {
        Ok(results) => results.peekable(),
        Err(e) => {
            let _ = batches.send(Err(e));
            return;
        }
    };
    let mut limit = first_batch;
    let mut interrupt = None;
    loop {
        let batch = {
            let _entered = interrupt.as_ref().map(Interrupt::enter);
            fill(&mut results, limit)
        };
        let last = !matches!(&batch, Ok(b) if !b.exhausted);
        if batches.send(batch).is_err() || last {
            return;
        }
        // The cursor was killed, timed out or dropped when the sender is gone.
        match requests.recv() {
            Ok((n, asking)) => (limit, interrupt) = (n, asking),
            Err(_) => return,
        }
    }
}

/// Writes the sampled queries waiting in memory (see [`odm_engine::sampling`]) every few
/// seconds, so that a server that only reads keeps them too. A thread of its own: a write
/// waits for any open transaction, and the cursor reaper must not.
pub(super) fn start_sample_writer(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    let shared = shared.clone();
    std::thread::Builder::new()
        .name("odm-sample-writer".into())
        .spawn(move || {
            let mut waited = Duration::ZERO;
            while !shared.is_stopping() {
                std::thread::sleep(Duration::from_millis(500));
                waited += Duration::from_millis(500);
                if waited >= Duration::from_secs(5) {
                    waited = Duration::ZERO;
                    shared.storage.flush_sampled_queries();
                }
            }
        })
        .ok()
}

/// Closes idle cursors every second until the server stops.
pub(super) fn start_reaper(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    let shared = shared.clone();
    std::thread::Builder::new()
        .name("odm-cursor-reaper".into())
        .spawn(move || {
            while !shared.is_stopping() {
                std::thread::sleep(Duration::from_millis(500));
                shared.cursors.reap();
                shared.sessions.expire();
            }
        })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::{BatchBytes, MAX_BATCH_BYTES};

    #[test]
    fn a_batch_takes_one_document_of_any_size_then_stops_at_the_bound() {
        let mut huge = BatchBytes::default();
        assert!(
            huge.admit(MAX_BATCH_BYTES + 1),
            "the first document always goes"
        );
        assert!(!huge.admit(1), "nothing follows one past the bound");

        let mut exact = BatchBytes::default();
        assert!(exact.admit(MAX_BATCH_BYTES - 10));
        assert!(exact.admit(10), "a batch may reach the bound exactly");
        assert!(!exact.admit(1));

        let mut refused = BatchBytes::default();
        assert!(refused.admit(MAX_BATCH_BYTES - 10));
        assert!(!refused.admit(11));
        assert!(refused.admit(10), "a refused document is not counted");
    }
}
