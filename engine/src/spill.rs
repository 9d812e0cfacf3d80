//! Temporary files of sorted runs, and the external merge sort built on them.
//!
//! A [`SpillFile`] holds runs one after the other: each run is BSON documents back to back
//! (every document starts with its own length), written sorted. A [`Merge`] reads every run
//! of a file at once, each through a small buffer, and yields their documents in order: a heap
//! of run heads, ties going to the earlier run, so that a sort that writes runs in input order
//! is stable. Bytes read back are checked (lengths within the run, documents well formed to
//! the last element) and bad ones are an error, never a panic. The file is removed when the
//! [`SpillFile`] (or the merge that owns it) is dropped.
//!
//! [`Sorter`] is the external sort of `$sort` and the find's blocking sort: documents are held
//! while they fit the [`Budget`]; past it they are sorted and written as a run, and the end
//! merges the runs.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::budget::{Budget, SpillDir};
use crate::error::{Error, Result};

/// The largest document a run may hold: a state of `$group` can pass the 16 MiB of a stored
/// document, never this.
const MAX_RECORD: usize = 1 << 30;

/// How deep a document read back may nest before it is refused as damaged.
const MAX_DEPTH: usize = 256;

static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// A document with the value it sorts by, as one document `{k: key, d: doc}` that a
/// [`Sorter`] holds, writes and reads back like any other (see [`key_of`], [`unkeyed`]).
/// A document that does not encode is `stage`'s error.
pub(crate) fn keyed(stage: &str, key: Bson, doc: Document) -> Result<RawDocumentBuf> {
    RawDocumentBuf::try_from(&bson::doc! { "k": key, "d": doc })
        .map_err(|e| Error::from(crate::expr::error(stage, e)))
}

/// The key of a record made by [`keyed`] (null if it has none).
pub(crate) fn key_of(record: &RawDocument) -> RawBsonRef<'_> {
    record.get("k").ok().flatten().unwrap_or(RawBsonRef::Null)
}

/// The key and the document of a record made by [`keyed`].
pub(crate) fn unkeyed(record: &RawDocument) -> Result<(Bson, Document)> {
    let bad = || Error::corrupt("sort record", "not a key and a document");
    let mut fields = Document::try_from(record).map_err(|_| bad())?;
    let key = fields.remove("k").unwrap_or(Bson::Null);
    match fields.remove("d") {
        Some(Bson::Document(doc)) => Ok((key, doc)),
        _ => Err(bad()),
    }
}

/// A temporary file of sorted runs; removed when dropped.
pub(crate) struct SpillFile {
    path: PathBuf,
    writer: Option<BufWriter<File>>,
    /// Each run's start and length in bytes.
    runs: Vec<(u64, u64)>,
    written: u64,
}

/// A new temporary file in `dir`, opened to write and read, and its path.
fn create_file(dir: &SpillDir) -> Result<(PathBuf, File)> {
    let io = |path: &std::path::Path| {
        let path = path.display().to_string();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(dir.path()).map_err(io(dir.path()))?;
    let n = NEXT_FILE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.path().join(format!("{}-{n}.bson", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(io(&path))?;
    Ok((path, file))
}

impl SpillFile {
    pub(crate) fn create(dir: &SpillDir) -> Result<SpillFile> {
        let (path, file) = create_file(dir)?;
        Ok(SpillFile {
            path,
            writer: Some(BufWriter::with_capacity(1 << 16, file)),
            runs: Vec::new(),
            written: 0,
        })
    }

    fn io_error(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Appends one run of `docs`, which must already be in order; returns its bytes.
    pub(crate) fn write_run<'d>(
        &mut self,
        docs: impl IntoIterator<Item = &'d RawDocument>,
    ) -> Result<u64> {
        self.write_each(docs.into_iter().map(Ok))
    }

    /// Appends one run of documents made one at a time (each dropped once written), which
    /// must come in order; the first error stops the run. Returns its bytes.
    pub(crate) fn write_each<D: AsRef<RawDocument>>(
        &mut self,
        docs: impl Iterator<Item = Result<D>>,
    ) -> Result<u64> {
        let start = self.written;
        let Some(writer) = self.writer.as_mut() else {
            return Err(Error::corrupt("spill file", "written after it was read"));
        };
        let mut bytes = 0u64;
        let mut failed = None;
        for doc in docs {
            let doc = doc?;
            let doc = doc.as_ref();
            if let Err(e) = writer.write_all(doc.as_bytes()) {
                failed = Some(e);
                break;
            }
            bytes += doc.as_bytes().len() as u64;
        }
        if let Some(e) = failed {
            return Err(self.io_error(e));
        }
        self.written += bytes;
        self.runs.push((start, bytes));
        Ok(bytes)
    }

    pub(crate) fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Every run merged under `compare`, each read through a buffer of about `buffer` bytes.
    pub(crate) fn merge<C>(mut self, compare: C, buffer: usize) -> Result<Merge<C>>
    where
        C: Fn(&RawDocument, &RawDocument) -> Ordering,
    {
        let file = match self.writer.take() {
            Some(writer) => writer
                .into_inner()
                .map_err(|e| self.io_error(e.into_error()))?,
            None => return Err(Error::corrupt("spill file", "merged twice")),
        };
        let file = Rc::new(RefCell::new(file));
        let buffer = buffer.clamp(4096, 1 << 16);
        let mut runs = self
            .runs
            .iter()
            .map(|&(start, len)| Run {
                file: file.clone(),
                at: start,
                end: start + len,
                buffer: Vec::new(),
                used: 0,
                size: buffer,
            })
            .collect::<Vec<_>>();
        let mut heads = Vec::with_capacity(runs.len());
        for (i, run) in runs.iter_mut().enumerate() {
            if let Some(doc) = run.next_doc().map_err(|e| self.io_error(e))? {
                heads.push((doc, i));
            }
        }
        let mut merge = Merge {
            runs,
            heap: heads,
            compare,
            spill: self,
            failed: false,
        };
        merge.heapify();
        Ok(merge)
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        self.writer = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Documents written one after another to a temporary file and read back by position: the
/// part of a `$setWindowFields` partition past the budget. Each document's offset is kept in
/// memory; a document read back is checked as a run's are. Removed when dropped.
pub(crate) struct DocumentFile {
    path: PathBuf,
    file: RefCell<File>,
    /// Each document's start; the next one starts at `end`.
    offsets: Vec<u64>,
    end: u64,
}

impl DocumentFile {
    pub(crate) fn create(dir: &SpillDir) -> Result<DocumentFile> {
        let (path, file) = create_file(dir)?;
        Ok(DocumentFile {
            path,
            file: RefCell::new(file),
            offsets: Vec::new(),
            end: 0,
        })
    }

    fn io_error(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.display().to_string(),
            source,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Appends the documents `docs` makes one at a time (each dropped once written); the
    /// first error stops. Returns the bytes written.
    pub(crate) fn append<D: AsRef<RawDocument>>(
        &mut self,
        docs: impl Iterator<Item = Result<D>>,
    ) -> Result<u64> {
        let start = self.end;
        let mut at = start;
        let mut file = self.file.borrow_mut();
        file.seek(SeekFrom::Start(start))
            .map_err(|e| self.io_error(e))?;
        let mut writer = BufWriter::with_capacity(1 << 16, &mut *file);
        for doc in docs {
            let doc = doc?;
            let bytes = doc.as_ref().as_bytes();
            writer.write_all(bytes).map_err(|e| self.io_error(e))?;
            self.offsets.push(at);
            at += bytes.len() as u64;
        }
        writer.flush().map_err(|e| self.io_error(e))?;
        self.end = at;
        Ok(at - start)
    }

    /// The document at position `i`.
    pub(crate) fn get(&self, i: usize) -> Result<RawDocumentBuf> {
        let Some(&at) = self.offsets.get(i) else {
            return Err(Error::corrupt(
                "spill file",
                "a position past its documents",
            ));
        };
        let end = self.offsets.get(i + 1).copied().unwrap_or(self.end);
        let len = usize::try_from(end - at).unwrap_or(usize::MAX);
        if !(5..=MAX_RECORD).contains(&len) {
            return Err(Error::corrupt(
                "spill file",
                "a document length out of bounds",
            ));
        }
        let mut bytes = vec![0; len];
        let read = {
            let mut file = self.file.borrow_mut();
            file.seek(SeekFrom::Start(at))
                .and_then(|_| file.read_exact(&mut bytes))
        };
        read.map_err(|e| self.io_error(e))?;
        let doc = RawDocumentBuf::from_bytes(bytes)
            .ok()
            .filter(|d| well_formed(d, 0))
            .ok_or_else(|| self.io_error(Run::bad("a document that does not parse")))?;
        Ok(doc)
    }
}

impl Drop for DocumentFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One run being read back.
struct Run {
    file: Rc<RefCell<File>>,
    /// The file offset of the first byte not yet in `buffer`.
    at: u64,
    end: u64,
    buffer: Vec<u8>,
    used: usize,
    size: usize,
}

impl Run {
    fn bad(reason: &str) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, reason.to_owned())
    }

    /// `n` more bytes of the run.
    fn take(&mut self, n: usize) -> std::io::Result<Vec<u8>> {
        let buffered = self.buffer.len() - self.used;
        let left = buffered as u64 + (self.end - self.at);
        if n as u64 > left {
            return Err(Run::bad("a document runs past the end of its run"));
        }
        let mut out = Vec::with_capacity(n);
        let from_buffer = n.min(buffered);
        out.extend_from_slice(&self.buffer[self.used..self.used + from_buffer]);
        self.used += from_buffer;
        if out.len() < n {
            let need = n - out.len();
            let fill = need.max(self.size).min((self.end - self.at) as usize);
            let mut chunk = vec![0; fill];
            let mut file = self.file.borrow_mut();
            file.seek(SeekFrom::Start(self.at))?;
            file.read_exact(&mut chunk)?;
            self.at += fill as u64;
            out.extend_from_slice(&chunk[..need]);
            self.buffer = chunk;
            self.used = need;
        }
        Ok(out)
    }

    fn next_doc(&mut self) -> std::io::Result<Option<RawDocumentBuf>> {
        if self.used == self.buffer.len() && self.at == self.end {
            return Ok(None);
        }
        let mut bytes = self.take(4)?;
        let len = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let len = usize::try_from(len).map_err(|_| Run::bad("a negative document length"))?;
        if !(5..=MAX_RECORD).contains(&len) {
            return Err(Run::bad("a document length out of bounds"));
        }
        bytes.extend(self.take(len - 4)?);
        let doc = RawDocumentBuf::from_bytes(bytes).map_err(|e| Run::bad(&e.to_string()))?;
        if !well_formed(&doc, 0) {
            return Err(Run::bad("a document that does not parse"));
        }
        Ok(Some(doc))
    }
}

/// Whether every element of `doc`, nested ones included, parses.
fn well_formed(doc: &RawDocument, depth: usize) -> bool {
    depth <= MAX_DEPTH
        && doc.iter().all(|element| match element {
            Ok((_, value)) => value_well_formed(value, depth),
            Err(_) => false,
        })
}

fn value_well_formed(value: RawBsonRef<'_>, depth: usize) -> bool {
    match value {
        RawBsonRef::Document(d) => well_formed(d, depth + 1),
        RawBsonRef::Array(a) => {
            depth < MAX_DEPTH
                && a.into_iter().all(|v| match v {
                    Ok(v) => value_well_formed(v, depth + 1),
                    Err(_) => false,
                })
        }
        RawBsonRef::JavaScriptCodeWithScope(c) => well_formed(c.scope, depth + 1),
        _ => true,
    }
}

/// The documents of every run of a file, in order (ties to the earlier run); see the module
/// documentation. Owns the file, which goes when the merge does.
pub(crate) struct Merge<C> {
    runs: Vec<Run>,
    /// The head of each run not yet exhausted, with its run: a binary heap, least first.
    heap: Vec<(RawDocumentBuf, usize)>,
    compare: C,
    spill: SpillFile,
    failed: bool,
}

impl<C> Merge<C>
where
    C: Fn(&RawDocument, &RawDocument) -> Ordering,
{
    fn less(&self, a: usize, b: usize) -> bool {
        let (da, ra) = &self.heap[a];
        let (db, rb) = &self.heap[b];
        (self.compare)(da, db).then(ra.cmp(rb)) == Ordering::Less
    }

    fn heapify(&mut self) {
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.heap.len() && self.less(l, least) {
                least = l;
            }
            if r < self.heap.len() && self.less(r, least) {
                least = r;
            }
            if least == i {
                return;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    /// The next document and the run it comes from.
    pub(crate) fn next_with_run(&mut self) -> Result<Option<(RawDocumentBuf, usize)>> {
        if self.heap.is_empty() {
            return Ok(None);
        }
        let run = self.heap[0].1;
        let next = self.runs[run]
            .next_doc()
            .map_err(|e| self.spill.io_error(e))?;
        let top = match next {
            Some(doc) => std::mem::replace(&mut self.heap[0], (doc, run)),
            None => self.heap.swap_remove(0),
        };
        self.sift_down(0);
        Ok(Some(top))
    }
}

impl<C> Iterator for Merge<C>
where
    C: Fn(&RawDocument, &RawDocument) -> Ordering,
{
    type Item = Result<RawDocumentBuf>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = self.next_with_run().transpose()?;
        self.failed = result.is_err();
        Some(result.map(|(doc, _)| doc))
    }
}

/// An external merge sort of documents under a budget; see the module documentation.
pub(crate) struct Sorter<C> {
    budget: Budget,
    stage: &'static str,
    compare: C,
    held: Vec<RawDocumentBuf>,
    bytes: usize,
    /// At most this many documents are wanted (a sort with a limit): runs keep no more.
    keep: Option<usize>,
    /// With `keep`, the last document kept when `held` was last cut to `keep`: one that does
    /// not sort before it cannot be among the first `keep` (a tie goes to the earlier).
    cutoff: Option<RawDocumentBuf>,
    spill: Option<SpillFile>,
}

/// A sort's results: from memory, or merged from its runs.
pub(crate) enum Sorted<C> {
    Memory(std::vec::IntoIter<RawDocumentBuf>),
    Merged(std::iter::Take<Merge<C>>),
}

impl<C> Iterator for Sorted<C>
where
    C: Fn(&RawDocument, &RawDocument) -> Ordering,
{
    type Item = Result<RawDocumentBuf>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Sorted::Memory(docs) => docs.next().map(Ok),
            Sorted::Merged(merge) => merge.next(),
        }
    }
}

impl<C> Sorter<C>
where
    C: Fn(&RawDocument, &RawDocument) -> Ordering + Clone,
{
    /// A sort under `compare` for `stage` (named in errors), keeping the first `keep` when
    /// given.
    pub(crate) fn new(
        budget: Budget,
        stage: &'static str,
        compare: C,
        keep: Option<usize>,
    ) -> Self {
        Sorter {
            budget,
            stage,
            compare,
            held: Vec::new(),
            bytes: 0,
            keep,
            cutoff: None,
            spill: None,
        }
    }

    pub(crate) fn push(&mut self, doc: RawDocumentBuf) -> Result<()> {
        if let Some(cutoff) = &self.cutoff
            && (self.compare)(&doc, cutoff) != Ordering::Less
        {
            return Ok(());
        }
        self.bytes += doc.as_bytes().len();
        self.held.push(doc);
        if let Some(k) = self.keep
            && self.held.len() >= k.saturating_mul(2).max(64)
        {
            self.cut_to(k);
        }
        if self.budget.exceeded(self.bytes)
            && let Some(k) = self.keep
            && self.held.len() > k
        {
            self.cut_to(k);
        }
        if self.budget.exceeded(self.bytes) {
            if !self.budget.allows_disk_use() {
                return Err(self.budget.exceeded_error(self.stage));
            }
            self.write_run()?;
        }
        Ok(())
    }

    /// Keeps the first `k` held documents, the last of them the new cutoff.
    fn cut_to(&mut self, k: usize) {
        self.sort_held();
        self.held.truncate(k);
        self.bytes = self.held.iter().map(|d| d.as_bytes().len()).sum();
        if self.held.len() == k {
            self.cutoff = self.held.last().cloned();
        }
    }

    fn sort_held(&mut self) {
        // Stable: equal documents keep their input order.
        let compare = &self.compare;
        self.held.sort_by(|a, b| compare(a, b));
    }

    fn write_run(&mut self) -> Result<()> {
        match self.keep {
            Some(k) => self.cut_to(k),
            None => self.sort_held(),
        }
        if self.spill.is_none() {
            self.spill = Some(SpillFile::create(self.budget.dir())?);
        }
        let Some(spill) = self.spill.as_mut() else {
            return Ok(());
        };
        let bytes = spill.write_run(self.held.iter().map(AsRef::as_ref))?;
        self.budget.spilled(bytes);
        self.held.clear();
        self.bytes = 0;
        Ok(())
    }

    /// Whether the sort has written to disk.
    pub(crate) fn spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// The documents in order.
    pub(crate) fn finish(mut self) -> Result<Sorted<C>> {
        let keep = self.keep.unwrap_or(usize::MAX);
        if self.spill.is_none() {
            self.sort_held();
            self.held.truncate(keep);
            return Ok(Sorted::Memory(std::mem::take(&mut self.held).into_iter()));
        }
        if !self.held.is_empty() {
            self.write_run()?;
        }
        let Some(spill) = self.spill.take() else {
            return Ok(Sorted::Memory(Vec::new().into_iter()));
        };
        let buffer = self.budget.limit() / (2 * spill.runs().max(1));
        Ok(Sorted::Merged(
            spill.merge(self.compare.clone(), buffer)?.take(keep),
        ))
    }
}
