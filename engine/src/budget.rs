//! One memory budget per operation, and where a blocking stage goes when it passes it.
//!
//! A blocking stage counts the bytes it holds against the operation's [`Budget`]:
//! [`MEMORY_LIMIT`] (MongoDB's 100 MiB) unless a test lowers it. Past the limit:
//! - the stages that sort (`$sort`, the find's sort, `$bucketAuto`, `$sample`, and the input of
//!   `$setWindowFields`) go through the one external sort (`spill::Sorter`), `$group` writes its
//!   partial states, and `$setWindowFields` writes the partition it holds: when the operation
//!   allows disk use (the default, as MongoDB 6.0+'s `allowDiskUseByDefault`) they write what
//!   they hold to a temporary file (see `spill`) and go on with room again; without disk use they
//!   fail with MongoDB's `QueryExceededMemoryLimitNoDiskUseAllowed` (292), the partition with
//!   MongoDB's 5643011;
//! - what cannot be written out fails, disk use or not: one group's (or one `$bucketAuto`
//!   bucket's) accumulators with 146 (`ExceededMemoryLimit`); a window function's state and
//!   the values `$setWindowFields` makes ahead with 5414201; `$densify` and `$facet` with 292;
//!   `$lookup`'s joined documents with 4568, `$graphLookup`'s with 40099.
//!
//! Temporary files live in a folder of their own: beside the database's file (`<file>-spill`),
//! or under the system's temporary folder for a database in memory. Each file is removed when
//! the stage that wrote it is dropped (finished, failed or abandoned), and the folder of a
//! file-backed database is emptied when the database opens, removing what a crash left; the
//! folders of databases in memory are named with their process's id, and those of processes
//! that have ended are removed when a process first opens a database in memory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// MongoDB's limit on what one blocking stage holds in memory: 100 MiB.
pub const MEMORY_LIMIT: usize = 100 * 1024 * 1024;

/// An operation's memory budget: how much a blocking stage may hold, whether it may spill to
/// disk past that, and what its spills have written (for explain).
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    limit: usize,
    allow_disk_use: bool,
    dir: SpillDir,
    stats: Arc<SpillStats>,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::new(None, None, SpillDir::temporary())
    }
}

impl Budget {
    /// A budget of `limit` bytes (default [`MEMORY_LIMIT`]) that spills into `dir` unless
    /// `allow_disk_use` is `Some(false)`.
    pub(crate) fn new(limit: Option<usize>, allow_disk_use: Option<bool>, dir: SpillDir) -> Budget {
        Budget {
            limit: limit.unwrap_or(MEMORY_LIMIT).max(1),
            allow_disk_use: allow_disk_use.unwrap_or(true),
            dir,
            stats: Arc::default(),
        }
    }

    /// The same budget with counts of its own, for one stage (explain reports each stage's
    /// spills).
    pub(crate) fn for_stage(&self) -> Budget {
        Budget {
            stats: Arc::default(),
            ..self.clone()
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Whether `held` bytes are past the limit.
    pub(crate) fn exceeded(&self, held: usize) -> bool {
        held > self.limit
    }

    pub(crate) fn allows_disk_use(&self) -> bool {
        self.allow_disk_use
    }

    pub(crate) fn dir(&self) -> &SpillDir {
        &self.dir
    }

    /// Records one spill of `bytes` bytes.
    pub(crate) fn spilled(&self, bytes: u64) {
        self.stats.spills.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// How many spills the stages under this budget made, and the bytes they wrote.
    pub(crate) fn spill_totals(&self) -> (u64, u64) {
        (
            self.stats.spills.load(Ordering::Relaxed),
            self.stats.bytes.load(Ordering::Relaxed),
        )
    }

    /// The error of a stage past the limit that may not (or cannot) spill.
    pub(crate) fn exceeded_error(&self, stage: &str) -> Error {
        Error::AggregateMemoryExceeded {
            stage: stage.to_owned(),
            limit: self.limit,
        }
    }
}

#[derive(Debug, Default)]
struct SpillStats {
    spills: AtomicU64,
    bytes: AtomicU64,
}

/// How the temporary folder of a process's databases in memory begins; the process's id
/// follows.
const TEMPORARY_PREFIX: &str = "odm-spill-";

/// Removes from `parent` the temporary folders of processes that no longer run: what a crashed
/// process spilled for its databases in memory, which nothing else would ever remove. A folder
/// is removed only when its process is known to be gone (Linux's `/proc` says so); this
/// process's own folder goes too, since the sweep runs before this process spills anything.
/// Elsewhere nothing is removed, as nothing can tell a live process from a dead one.
fn sweep_orphans(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(TEMPORARY_PREFIX))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || process_is_gone(pid) {
            // A folder another sweep removes first, or one that cannot be removed, is left.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether no process `pid` runs, as far as this system can tell (only Linux can).
fn process_is_gone(pid: u32) -> bool {
    cfg!(target_os = "linux")
        && Path::new("/proc").exists()
        && !Path::new("/proc").join(pid.to_string()).exists()
}

/// The folder temporary files are written into.
#[derive(Debug, Clone)]
pub(crate) struct SpillDir(Arc<PathBuf>);

impl SpillDir {
    /// The folder of a database in memory: one per process under the system's temporary
    /// folder, named with the process's id. The first such folder a process asks for sweeps
    /// away the folders of processes that are gone (see [`sweep_orphans`]).
    pub(crate) fn temporary() -> SpillDir {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        let parent = std::env::temp_dir();
        SWEPT.call_once(|| sweep_orphans(&parent));
        let name = format!("{TEMPORARY_PREFIX}{}", std::process::id());
        SpillDir(Arc::new(parent.join(name)))
    }

    /// The folder of the database file at `file`: `<file>-spill` beside it. What it holds was
    /// left by an earlier process (a crash) and is removed now.
    pub(crate) fn beside(file: &Path) -> Result<SpillDir> {
        let mut name = file.file_name().unwrap_or_default().to_owned();
        name.push("-spill");
        let dir = file.with_file_name(name);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::Io {
                    path: dir.display().to_string(),
                    source: e,
                });
            }
            _ => {}
        }
        Ok(SpillDir(Arc::new(dir)))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Removes the folder if nothing is in it (a database file closing).
    pub(crate) fn remove_if_empty(&self) {
        let _ = std::fs::remove_dir(self.path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_sweep_removes_the_folders_of_ended_processes_and_keeps_the_rest() {
        let parent = std::env::temp_dir().join(format!("odm-sweep-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&parent);
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let ended = child.id();
        child.wait().expect("wait");
        let folder = |name: String| {
            let dir = parent.join(name);
            std::fs::create_dir_all(&dir).expect("create");
            std::fs::write(dir.join("run"), b"spilled").expect("write");
            dir
        };
        let orphan = folder(format!("{TEMPORARY_PREFIX}{ended}"));
        let own = folder(format!("{TEMPORARY_PREFIX}{}", std::process::id()));
        let running = folder(format!("{TEMPORARY_PREFIX}1"));
        let unrelated = folder(format!("{TEMPORARY_PREFIX}x"));
        let other = folder("elsewhere".to_owned());

        sweep_orphans(&parent);

        assert!(!orphan.exists(), "an ended process's folder is removed");
        assert!(!own.exists(), "this process's own leftover is removed");
        assert!(running.exists(), "a running process's folder stays");
        assert!(unrelated.exists() && other.exists(), "other folders stay");
        std::fs::remove_dir_all(&parent).expect("clean up");
    }
}
