//! The write-ahead log: a durable commit appends the pages it wrote to a log file and syncs
//! that, instead of syncing the scattered pages of the database file.
//!
//! Why: redb commits copy-on-write, so one small durable transaction writes a dozen pages all
//! over the file and syncs them (`strace` on `bench core`: 13 writes, 51 KB, one `fdatasync` per
//! commit). A sync of scattered pages costs several times a sync of the same bytes appended to a
//! file whose blocks already exist, which is what SQLite's WAL does.
//!
//! How: [`Wal`] is the redb storage backend the engine opens files with. A write is kept in
//! memory (the *overlay*, see `wal/overlay.rs`; reads see it there), and a copy waits for redb to
//! ask for a sync. A sync appends those copies to the log as one *group* and syncs the log, not
//! the database file, which gets the overlay's pages at the next checkpoint. Rules:
//!
//! - **A group is whole or ignored.** It carries the log's salt, a sequence number and a CRC32 of
//!   its bytes; recovery stops at the first group that fails any of them (a torn append).
//! - **Recovery** (on open, before redb sees the file) writes every whole group's pages into the
//!   database file in order, syncs it, and starts a new log. The file is then as it was at the
//!   last sync that returned, which is all redb's own recovery assumes. Writes after that sync
//!   may have reached the file in part (through a checkpoint that did not finish, a large
//!   group's direct writes, a length change, or the close), as without the log, and redb
//!   treats them so.
//! - **While the log has groups to replay, the file holds nothing they do not**: replayed over
//!   newer pages, older groups would mix two states. So the pages reach the file only at a
//!   checkpoint, after every write before it has been appended.
//! - **A checkpoint** writes the overlay's pages into the database file, each once and in the
//!   file's order, and syncs it, so every group is in it; then it writes a new header with the
//!   next salt and syncs the log: the old groups no longer match and are never replayed over
//!   newer pages. It happens after the append that takes the log past [`CHECKPOINT_BYTES`],
//!   when one sync's writes would exceed [`GROUP_BYTES`] (a bulk load: appending them would
//!   write them twice; what is pending is appended first, and the writes that follow go to the
//!   file directly until the next sync, which checkpoints), and when the database closes, so a
//!   closed database needs no log. Until a checkpoint has finished, every sync checkpoints
//!   again: once the new header may be on the disk, a group appended under the old salt may be
//!   skipped, so no sync reports success on the strength of one.
//! - **The overlay keeps its pages until the file's sync has returned**: if it fails, Linux may
//!   drop the pages from its cache, and reads still find them in memory.
//! - **A failed sync of the database file keeps the log for good** in that process: Linux may
//!   report such a failure once and later syncs as fine with the pages lost, so no checkpoint
//!   after it (not even at close) retires groups; the next open replays them.
//! - **A log that does not belong is not replayed**: a log left beside a file that no longer
//!   exists is removed when the file is created, and a log whose header does not check is cut
//!   to its header block, so no group of an earlier salt can match a new one.
//! - **The log's blocks are written before they are needed** (zeros, 1 MiB at a time): an
//!   append that grows a file costs a metadata sync as well.
//! - Writes made without a sync (redb's `Durability::None`, used by eventual commits and by
//!   group commit's followers) join the next group, so the durable commit that covers them
//!   covers their pages too.
//! - **The overlay holds no more than the log does**: the non-zero bytes of the groups since
//!   the checkpoint and of the pending group, so its memory is bounded by the two limits (plus
//!   a map entry per extent).
//! - **The file's length is changed at once**, not held back: a write past the end grows it
//!   first, so the length redb reads is the file's own.
//! - **A failed write or length change changes nothing that reads see.** The checkpoint it
//!   forced may have got part of the way (appending what was pending, writing or syncing the
//!   file): nothing reported as synced depends on that.
//!
//! The log is the database file's path, with symbolic links resolved, with `-wal` appended: a
//! file moved after a crash must move with its log, as with SQLite's. Opening takes an
//! exclusive lock on the log before recovery, so two processes of this engine never replay one
//! log; redb then locks the database file as usual (recovery writes into the file before that
//! lock, which only a program that ignores the log could contend for). The storage format
//! version moved to 5 with the log, so that builds which know nothing of it refuse the file.
//! In-memory databases and `Database::with_backend` do not use the log; `Database::with_wal`
//! puts it in front of any two backends (the power-loss tests' simulated disks).
//!
//! The state's lock is held through the log's sync and a checkpoint's sync of the file: a page
//! redb writes meanwhile (a reader evicting its cache) waits for them. Reads take only the
//! overlay's lock (for reading), so they do not wait for a sync or for a checkpoint's writes;
//! the overlay is locked for writing only to change it.

mod overlay;

use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use redb::StorageBackend;

/// The log file's header: magic, salt, CRC32 of both. Groups start after the whole block.
const MAGIC: &[u8; 8] = b"ODMWAL\x00\x01";
const HEADER_BYTES: u64 = 4096;
/// A group's fixed part: magic, salt, sequence number, body length; the CRC32 follows the body.
const GROUP_MAGIC: u32 = 0x4F44_4D47;
const GROUP_HEAD: usize = 4 + 8 + 8 + 4;
/// An entry: kind, offset (or new length), bytes stored, zero bytes that follow them.
const ENTRY_HEAD: usize = 1 + 8 + 4 + 4;
const WRITE: u8 = 1;
const SET_LEN: u8 = 2;

/// The log is checkpointed once its groups reach this size.
pub const CHECKPOINT_BYTES: u64 = 16 << 20;
/// When one sync's writes would pass this size, what is pending is appended, the log is
/// checkpointed and the writes that follow go to the database file, synced by the next sync.
pub const GROUP_BYTES: usize = 1 << 20;

/// When the log checkpoints; tests make them small to reach every path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Checkpoint after an append that takes the log (its header block included) past this
    /// many bytes.
    pub checkpoint_bytes: u64,
    /// Checkpoint instead of appending one sync's writes above this many bytes.
    pub group_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            checkpoint_bytes: CHECKPOINT_BYTES,
            group_bytes: GROUP_BYTES,
        }
    }
}

/// The log grows by zeroed blocks of this size.
const EXTEND_BYTES: u64 = 1 << 20;

/// The write-ahead log of the database file at `path`: the same path with `-wal` appended.
pub fn log_path(path: &std::path::Path) -> std::path::PathBuf {
    let mut log = path.as_os_str().to_owned();
    log.push("-wal");
    std::path::PathBuf::from(log)
}

/// A redb storage backend: the database file `main`, made durable through the log `log`.
#[derive(Debug)]
pub struct Wal<M: StorageBackend, L: StorageBackend> {
    main: M,
    log: L,
    limits: Limits,
    state: Mutex<State>,
    /// Pages written since the last checkpoint (see [`overlay`]) and not yet in the synced
    /// file. Locked after `state` when both are.
    overlay: RwLock<overlay::Overlay>,
    /// The log file's handle that holds its exclusive lock (see [`Wal::holding`]).
    held: Mutex<Option<std::fs::File>>,
}

/// What the log holds and what waits for the next sync.
#[derive(Debug)]
struct State {
    /// Groups of this log carry it; a checkpoint moves to the next.
    salt: u64,
    /// The next group's sequence number within this salt.
    sequence: u64,
    /// Where the next group goes.
    end: u64,
    /// How much of the log has blocks written (zeros or groups).
    allocated: u64,
    /// Writes and length changes since the last sync, in order: a group's body, after room for
    /// its head (empty when there are none).
    pending: Vec<u8>,
    /// Whether writes are logged, and what the next sync must do.
    mode: Mode,
    /// A group was written under this salt (whole or not): a checkpoint must retire it.
    appended: bool,
    /// The database file's length.
    len: u64,
    /// A sync of the database file failed. Linux may report such a failure once and then
    /// report later syncs as fine with the pages lost, so from then on the log is never
    /// retired in this process: the next open replays it.
    main_failed: bool,
}

/// How writes are handled until the next sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Into the overlay and the pending group; the sync appends the group.
    Logged,
    /// As `Logged`, but a checkpoint began and has not finished, so the sync checkpoints: once
    /// the new header may be on the disk, a group appended under the old salt would be skipped.
    Retiring,
    /// One sync's writes outgrew the group limit: the log was checkpointed, writes go to the
    /// file directly, and the sync checkpoints.
    Direct,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn overlay_read(overlay: &RwLock<overlay::Overlay>) -> RwLockReadGuard<'_, overlay::Overlay> {
    overlay.read().unwrap_or_else(PoisonError::into_inner)
}

fn overlay_write(overlay: &RwLock<overlay::Overlay>) -> RwLockWriteGuard<'_, overlay::Overlay> {
    overlay.write().unwrap_or_else(PoisonError::into_inner)
}

fn corrupt(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

impl<M: StorageBackend, L: StorageBackend> Wal<M, L> {
    /// Recovers `main` from `log` (see the module comment) and returns the backend. A log
    /// without a valid header is new, or was torn while a checkpoint rewrote it, after the
    /// database file was synced; either way it holds nothing to replay, and it is cut to its
    /// header block so that no group of an earlier salt is left behind it.
    pub fn open(main: M, log: L, limits: Limits) -> io::Result<Self> {
        let mut log_len = log.len()?;
        let header = read_header(&log, log_len)?;
        if header.is_none() && log_len > HEADER_BYTES {
            log.set_len(HEADER_BYTES)?;
            log_len = HEADER_BYTES;
        }
        let mut salt = header.unwrap_or_else(fresh_salt);
        let mut replayed = 0u64;
        if header.is_some() {
            let mut offset = HEADER_BYTES;
            while let Some((body, next)) = read_group(&log, log_len, offset, salt, replayed)? {
                apply(&main, &body)?;
                replayed += 1;
                offset = next;
            }
        }
        if replayed > 0 {
            main.sync_data()?;
            salt = salt.wrapping_add(1);
        }
        if replayed > 0 || header.is_none() {
            write_header(&log, salt)?;
            log.sync_data()?;
        }
        let allocated = log.len()?;
        let len = main.len()?;
        Ok(Wal {
            main,
            log,
            limits,
            overlay: RwLock::new(overlay::Overlay::default()),
            state: Mutex::new(State {
                salt,
                sequence: 0,
                end: HEADER_BYTES,
                allocated,
                pending: Vec::new(),
                mode: Mode::Logged,
                appended: false,
                len,
                main_failed: false,
            }),
            held: Mutex::new(None),
        })
    }

    /// The same backend, keeping `lock` (a handle on the log file holding its exclusive lock)
    /// until the database closes, when the lock is released.
    #[must_use]
    pub fn holding(self, lock: std::fs::File) -> Self {
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(lock);
        self
    }

    /// Whether an entry for `len` bytes, `kept` of them before trailing zeros, fits in the
    /// pending group (the zeros are counted, not stored).
    fn fits(&self, state: &State, len: usize, kept: usize) -> bool {
        u32::try_from(len).is_ok()
            && state.pending.len() + ENTRY_HEAD + kept <= self.limits.group_bytes
    }

    /// Records a change for the next group; `false`, recording nothing, when the group would
    /// outgrow its limit. A write's trailing zeros are counted, not copied: redb pages are
    /// mostly free space, and zeros (73% of the bytes of a small commit's pages) would make the
    /// sync write four times what it must. `kept` is `nonzero_prefix(data)`.
    fn record(&self, state: &mut State, kind: u8, offset: u64, data: &[u8], kept: usize) -> bool {
        let kept = &data[..kept];
        let lengths = (
            u32::try_from(kept.len()),
            u32::try_from(data.len() - kept.len()),
        );
        let ((Ok(stored), Ok(zeros)), true) = (lengths, self.fits(state, data.len(), kept.len()))
        else {
            return false;
        };
        if state.pending.is_empty() {
            state.pending.resize(GROUP_HEAD, 0);
        }
        state.pending.push(kind);
        state.pending.extend_from_slice(&offset.to_le_bytes());
        state.pending.extend_from_slice(&stored.to_le_bytes());
        state.pending.extend_from_slice(&zeros.to_le_bytes());
        state.pending.extend_from_slice(kept);
        true
    }

    /// One sync's writes outgrew the group limit (a bulk load): rather than written twice,
    /// they go to the database file from now on, and the next sync checkpoints. The file may
    /// hold only what the log's groups hold while any is left to replay (replayed over newer
    /// pages, older groups would mix two states), so first what is pending is appended and a
    /// checkpoint retires the log.
    fn overflow(&self, state: &mut State) -> io::Result<()> {
        self.checkpoint(state)?;
        state.mode = Mode::Direct;
        Ok(())
    }

    /// Writes the overlay's pages into the database file, in the file's order. They stay in
    /// the overlay (the same bytes as the file's, so reads agree) until the file's sync has
    /// returned: if it fails, the pages the OS may drop are still read from memory. Writers
    /// are kept out by the state's lock, so readers need not be.
    fn spill(&self) -> io::Result<()> {
        let overlay = overlay_read(&self.overlay);
        let mut page = Vec::new();
        for (offset, kept, zeros) in overlay.extents() {
            if zeros > EXTEND_BYTES {
                // A long run of zeros is written a block at a time, as recovery writes it.
                self.main.write(offset, kept)?;
                let zeros = usize::try_from(zeros).map_err(io::Error::other)?;
                write_zeros(&self.main, offset + kept.len() as u64, zeros)?;
                continue;
            }
            page.clear();
            page.extend_from_slice(kept);
            page.resize(kept.len() + zeros as usize, 0);
            self.main.write(offset, &page)?;
        }
        Ok(())
    }

    /// Appends what is pending (the file may hold only what the log holds), writes the overlay
    /// into the database file, syncs it and starts a new log: every group is then in the file.
    /// Until a checkpoint has finished, every sync checkpoints again (see [`Mode::Retiring`]).
    fn checkpoint(&self, state: &mut State) -> io::Result<()> {
        if state.main_failed {
            return Err(io::Error::other(
                "the database file failed to sync earlier; its write-ahead log is kept for the next open to replay",
            ));
        }
        if !state.pending.is_empty() {
            self.append(state)?;
        }
        state.mode = Mode::Retiring;
        self.spill()?;
        if let Err(e) = self.main.sync_data() {
            state.main_failed = true;
            return Err(e);
        }
        overlay_write(&self.overlay).clear();
        if state.appended {
            let salt = state.salt.wrapping_add(1);
            write_header(&self.log, salt)?;
            self.log.sync_data()?;
            state.salt = salt;
            state.sequence = 0;
            state.end = HEADER_BYTES;
            state.appended = false;
        }
        state.mode = Mode::Logged;
        Ok(())
    }

    /// Appends the pending writes as one group and syncs the log. On failure they stay
    /// pending, for the next sync to append again at the same place.
    fn append(&self, state: &mut State) -> io::Result<()> {
        let length = state.pending.len();
        let body = u32::try_from(length - GROUP_HEAD).map_err(io::Error::other)?;
        let group = &mut state.pending;
        group[..4].copy_from_slice(&GROUP_MAGIC.to_le_bytes());
        group[4..12].copy_from_slice(&state.salt.to_le_bytes());
        group[12..20].copy_from_slice(&state.sequence.to_le_bytes());
        group[20..24].copy_from_slice(&body.to_le_bytes());
        let crc = crc32fast::hash(group);
        group.extend_from_slice(&crc.to_le_bytes());
        let written = self.write_group(state);
        if written.is_err() {
            state.pending.truncate(length);
        }
        written
    }

    fn write_group(&self, state: &mut State) -> io::Result<()> {
        let group = &state.pending;
        let end = state.end + group.len() as u64;
        if end > state.allocated {
            // Zeros up to the next step; one sync below covers them and the group.
            let allocated = end.div_ceil(EXTEND_BYTES) * EXTEND_BYTES;
            let count = usize::try_from(allocated - state.allocated).map_err(io::Error::other)?;
            write_zeros(&self.log, state.allocated, count)?;
            state.allocated = allocated;
        }
        state.appended = true;
        self.log.write(state.end, group)?;
        self.log.sync_data()?;
        state.end = end;
        state.sequence += 1;
        state.pending.clear();
        Ok(())
    }
}

/// A salt no earlier log of this file used: the clock, in nanoseconds.
fn fresh_salt() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

fn write_header<L: StorageBackend>(log: &L, salt: u64) -> io::Result<()> {
    let mut header = Vec::with_capacity(20);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&salt.to_le_bytes());
    let crc = crc32fast::hash(&header);
    header.extend_from_slice(&crc.to_le_bytes());
    if log.len()? < HEADER_BYTES {
        log.set_len(HEADER_BYTES)?;
    }
    log.write(0, &header)
}

/// The header's salt, or `None` when the log is empty or its header does not check.
fn read_header<L: StorageBackend>(log: &L, len: u64) -> io::Result<Option<u64>> {
    if len < HEADER_BYTES {
        return Ok(None);
    }
    let mut header = [0u8; 20];
    log.read(0, &mut header)?;
    let crc = u32::from_le_bytes(header[16..20].try_into().expect("4 bytes"));
    if &header[..8] != MAGIC || crc32fast::hash(&header[..16]) != crc {
        return Ok(None);
    }
    Ok(Some(u64::from_le_bytes(
        header[8..16].try_into().expect("8 bytes"),
    )))
}

/// The body of the group at `offset` and where the next one starts, or `None` when there is no
/// whole group `sequence` of this salt there (the end of the log, or a torn append).
fn read_group<L: StorageBackend>(
    log: &L,
    len: u64,
    offset: u64,
    salt: u64,
    sequence: u64,
) -> io::Result<Option<(Vec<u8>, u64)>> {
    if offset + GROUP_HEAD as u64 + 4 > len {
        return Ok(None);
    }
    let mut head = [0u8; GROUP_HEAD];
    log.read(offset, &mut head)?;
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let magic = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
    let body = u32::from_le_bytes(head[20..24].try_into().expect("4 bytes"));
    if magic != GROUP_MAGIC || word(4) != salt || word(12) != sequence {
        return Ok(None);
    }
    let next = offset + GROUP_HEAD as u64 + u64::from(body) + 4;
    if next > len {
        return Ok(None);
    }
    let mut group = vec![0u8; GROUP_HEAD + body as usize + 4];
    log.read(offset, &mut group)?;
    let (bytes, crc) = group.split_at(GROUP_HEAD + body as usize);
    if crc32fast::hash(bytes) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Ok(None);
    }
    Ok(Some((bytes[GROUP_HEAD..].to_vec(), next)))
}

/// Writes `count` zeros at `offset` of `file`, a bounded block at a time.
fn write_zeros<F: StorageBackend>(file: &F, mut offset: u64, mut count: usize) -> io::Result<()> {
    let block = vec![0u8; count.min(64 << 10)];
    while count > 0 {
        let n = count.min(block.len());
        file.write(offset, &block[..n])?;
        offset += n as u64;
        count -= n;
    }
    Ok(())
}

/// How many bytes of `data` come before its trailing zeros. Compared 64 at a time, by an OR
/// the compiler turns into vector instructions: a page is mostly zeros, and a byte at a time
/// cost 2,900 instructions a page (callgrind, durable single inserts).
fn nonzero_prefix(data: &[u8]) -> usize {
    let mut end = data.len();
    while end >= 64 && data[end - 64..end].iter().fold(0, |any, &b| any | b) == 0 {
        end -= 64;
    }
    while end > 0 && data[end - 1] == 0 {
        end -= 1;
    }
    end
}

/// Replays a group's entries on the database file, in order. A group whose CRC checked but
/// whose entries do not parse was written by something else: refused, not guessed at.
fn apply<M: StorageBackend>(main: &M, mut body: &[u8]) -> io::Result<()> {
    while !body.is_empty() {
        if body.len() < ENTRY_HEAD {
            return Err(corrupt(
                "write-ahead log: a truncated entry in a whole group",
            ));
        }
        let kind = body[0];
        let offset = u64::from_le_bytes(body[1..9].try_into().expect("8 bytes"));
        let length = u32::from_le_bytes(body[9..13].try_into().expect("4 bytes")) as usize;
        let zeros = u32::from_le_bytes(body[13..17].try_into().expect("4 bytes")) as usize;
        let rest = &body[ENTRY_HEAD..];
        match kind {
            WRITE if rest.len() >= length => {
                main.write(offset, &rest[..length])?;
                write_zeros(main, offset + length as u64, zeros)?;
                body = &rest[length..];
            }
            SET_LEN if length == 0 && zeros == 0 => {
                main.set_len(offset)?;
                body = rest;
            }
            _ => {
                return Err(corrupt(
                    "write-ahead log: an entry of unknown kind or length",
                ));
            }
        }
    }
    Ok(())
}

impl<M: StorageBackend, L: StorageBackend> StorageBackend for Wal<M, L> {
    fn len(&self) -> io::Result<u64> {
        self.main.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let overlay = overlay_read(&self.overlay);
        if overlay.is_empty() {
            return self.main.read(offset, out);
        }
        if !overlay.covers(offset, out.len()) {
            self.main.read(offset, out)?;
        }
        overlay.read(offset, out);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = lock(&self.state);
        if state.mode != Mode::Direct && !self.fits(&state, 0, 0) {
            self.overflow(&mut state)?;
        }
        self.main.set_len(len)?;
        state.len = len;
        overlay_write(&self.overlay).set_len(len);
        if state.mode != Mode::Direct {
            let recorded = self.record(&mut state, SET_LEN, len, &[], 0);
            debug_assert!(recorded, "an entry that fits is recorded");
        }
        Ok(())
    }

    /// Appends what is pending and syncs the log; checkpoints once the log has passed its
    /// limit. A checkpoint that fails after the append does not fail this sync, whose writes
    /// the log holds: the next sync checkpoints again (and fails, if the file did not sync).
    fn sync_data(&self) -> io::Result<()> {
        let mut state = lock(&self.state);
        if state.main_failed || state.mode != Mode::Logged {
            return self.checkpoint(&mut state);
        }
        if state.pending.is_empty() {
            return Ok(());
        }
        self.append(&mut state)?;
        if state.end > self.limits.checkpoint_bytes {
            // The group is durable; the checkpoint's failure is reported by the next sync.
            let _ = self.checkpoint(&mut state);
        }
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            // Writes nothing and, unlike a longer write, does not grow a file.
            return Ok(());
        }
        let mut state = lock(&self.state);
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or_else(|| io::Error::other("a write past the largest file offset"))?;
        let kept = nonzero_prefix(data);
        // Whatever fails first, a failed write changes nothing.
        if state.mode != Mode::Direct && !self.fits(&state, data.len(), kept) {
            self.overflow(&mut state)?;
        }
        if state.mode == Mode::Direct {
            // The log holds no group to replay and the overlay is empty (see `overflow`): the
            // pages go to the file, which a write past its end grows, and the next sync syncs
            // it.
            debug_assert!(overlay_read(&self.overlay).is_empty());
            self.main.write(offset, data)?;
            state.len = state.len.max(end);
            return Ok(());
        }
        if end > state.len {
            self.main.set_len(end)?;
            state.len = end;
        }
        let recorded = self.record(&mut state, WRITE, offset, data, kept);
        debug_assert!(recorded, "an entry that fits is recorded");
        overlay_write(&self.overlay).write(offset, data, kept);
        Ok(())
    }

    /// Checkpoints, so that a closed database's file is whole without its log (unless a sync
    /// of the file failed: then the log stays for the next open), and releases the log's lock.
    fn close(&self) -> io::Result<()> {
        let mut state = lock(&self.state);
        let checkpointed = if state.main_failed {
            Ok(())
        } else {
            self.checkpoint(&mut state)
        };
        let main = self.main.close();
        let log = self.log.close();
        let held = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let unlocked = held.map_or(Ok(()), |file| file.unlock());
        checkpointed.and(main).and(log).and(unlocked)
    }

    fn try_lock_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.main.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.main.try_lock_shared_range(start, end)
    }

    fn lock_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        self.main.lock_range(start, end)
    }

    fn lock_shared_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        self.main.lock_shared_range(start, end)
    }

    fn unlock_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        self.main.unlock_range(start, end)
    }

    fn query_lock_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.main.query_lock_range(start, end)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nonzero_prefix_ends_after_the_last_nonzero_byte() {
        for len in [0, 1, 7, 63, 64, 65, 127, 128, 200, 4096] {
            assert_eq!(super::nonzero_prefix(&vec![0; len]), 0);
            for last in (0..len).step_by(7).chain(len.checked_sub(1)) {
                let mut data = vec![0u8; len];
                data[last] = 1;
                if last > 3 {
                    data[last - 3] = 9;
                }
                assert_eq!(
                    super::nonzero_prefix(&data),
                    last + 1,
                    "len {len}, last {last}"
                );
            }
        }
    }
}
