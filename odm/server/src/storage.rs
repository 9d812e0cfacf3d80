//! Where the server keeps its databases: one engine database file per MongoDB database, named
//! `<name>.odm` in the served folder (or, for tests, each in memory). A database exists once
//! something was written to it; reads of a missing one see nothing and create nothing, as in
//! MongoDB. `dropDatabase` empties a database's file but keeps it, with its change log, so that
//! change streams see the drop and can resume across it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bson::{Bson, doc};
use odm_engine::Database;

use super::command::CommandError;
use odm_engine::ErrorCode;

/// The extension of a database file.
pub const EXTENSION: &str = "odm";

/// The MongoDB release whose features the server offers (`featureCompatibilityVersion`).
pub const FEATURE_COMPATIBILITY_VERSION: &str = "8.0";

/// The `admin` collection holding it, under this `_id`.
const SYSTEM_VERSION: &str = "system.version";
const FCV_DOCUMENT_ID: &str = "featureCompatibilityVersion";

/// The databases of a server.
#[derive(Debug)]
pub struct Storage {
    /// `None`: every database in memory.
    root: Option<PathBuf>,
    open: Mutex<BTreeMap<String, Arc<Database>>>,
    /// Set by [`Storage::close`]: no database opens again.
    closed: AtomicBool,
}

impl Storage {
    /// Databases in files under `root` (which must be a folder).
    pub fn in_folder(root: PathBuf) -> Storage {
        Storage {
            root: Some(root),
            open: Mutex::new(BTreeMap::new()),
            closed: AtomicBool::new(false),
        }
    }

    /// Databases in memory, gone when the server stops.
    pub fn in_memory() -> Storage {
        Storage {
            root: None,
            open: Mutex::new(BTreeMap::new()),
            closed: AtomicBool::new(false),
        }
    }

    /// Whether databases live in memory only.
    pub fn is_in_memory(&self) -> bool {
        self.root.is_none()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Database>>> {
        // A panic while the map was locked left it consistent: every change is one insert or
        // remove.
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn path_of(&self, name: &str) -> Option<PathBuf> {
        self.root
            .as_ref()
            .map(|root| root.join(format!("{name}.{EXTENSION}")))
    }

    /// The database `name` if it exists.
    pub fn get(&self, name: &str) -> Result<Option<Arc<Database>>, CommandError> {
        check_name(name)?;
        let mut open = self.lock();
        self.check_open()?;
        if let Some(db) = open.get(name) {
            return Ok(Some(db.clone()));
        }
        match self.path_of(name) {
            Some(path) if path.exists() => {
                let db = Arc::new(Database::open(&path).map_err(CommandError::from)?);
                open.insert(name.to_owned(), db.clone());
                Ok(Some(db))
            }
            _ => Ok(None),
        }
    }

    /// The database `name`, created when missing.
    pub fn get_or_create(&self, name: &str) -> Result<Arc<Database>, CommandError> {
        if let Some(db) = self.get(name)? {
            return Ok(db);
        }
        let mut open = self.lock();
        self.check_open()?;
        if let Some(db) = open.get(name) {
            return Ok(db.clone());
        }
        let db = match self.path_of(name) {
            Some(path) => Database::open(&path),
            None => Database::in_memory(),
        }
        .map_err(CommandError::from)?;
        let db = Arc::new(db);
        open.insert(name.to_owned(), db.clone());
        Ok(db)
    }

    /// Writes MongoDB's `admin.system.version`, holding the feature compatibility version,
    /// unless it is there: a MongoDB server always has it, so `admin` is always listed, and
    /// tools read the version from it.
    pub fn record_feature_compatibility_version(&self) -> Result<(), CommandError> {
        let admin = self.get_or_create("admin")?;
        let id = Bson::from(FCV_DOCUMENT_ID);
        admin.write(|t| -> Result<(), CommandError> {
            if t.get(SYSTEM_VERSION, &id)?.is_none() {
                t.insert_one(
                    SYSTEM_VERSION,
                    &doc! {"_id": FCV_DOCUMENT_ID, "version": FEATURE_COMPATIBILITY_VERSION},
                )?;
            }
            Ok(())
        })
    }

    /// Writes the sampled queries waiting in memory of every open database; a database that
    /// cannot write them now keeps them for its next commit.
    pub fn flush_sampled_queries(&self) {
        let open: Vec<Arc<Database>> = self.lock().values().cloned().collect();
        for db in open {
            let _ = db.flush_sampled_queries();
        }
    }

    /// Refuses once the databases were closed: the server is shutting down.
    fn check_open(&self) -> Result<(), CommandError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(CommandError::new(
                ErrorCode::SHUTDOWN_IN_PROGRESS,
                "The server is shutting down",
            ));
        }
        Ok(())
    }

    /// Closes every database (the server is stopping): writes their sampled queries, then
    /// closes each file once nothing else holds it, waiting up to `wait` for a command still
    /// using one; a database still in use after that closes when its last user lets go (or,
    /// if the process exits first, recovers from its log on the next open). Nothing opens
    /// again afterwards. The names of the databases left in use.
    pub fn close(&self, wait: Duration) -> Vec<String> {
        let open = {
            let mut open = self.lock();
            self.closed.store(true, Ordering::Release);
            std::mem::take(&mut *open)
        };
        let until = Instant::now() + wait;
        let mut busy = Vec::new();
        for (name, db) in open {
            let _ = db.flush_sampled_queries();
            while Arc::strong_count(&db) > 1 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if Arc::strong_count(&db) > 1 {
                busy.push(name);
            }
            // The last handle closes the file: the log is checkpointed into it.
            drop(db);
        }
        busy
    }

    /// The databases open now.
    pub fn open_databases(&self) -> Vec<Arc<Database>> {
        self.lock().values().cloned().collect()
    }

    /// The names of the databases, in order.
    pub fn names(&self) -> Result<Vec<String>, CommandError> {
        let mut names: Vec<String> = self.lock().keys().cloned().collect();
        if let Some(root) = &self.root {
            let entries = std::fs::read_dir(root).map_err(|e| {
                CommandError::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("cannot list the served folder: {e}"),
                )
            })?;
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == EXTENSION)
                    && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
                    && check_name(stem).is_ok()
                    && !names.iter().any(|n| n == stem)
                {
                    names.push(stem.to_owned());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    /// The bytes used and the bytes in all of the filesystem that holds a database's folder,
    /// as `dbStats` reports them; (0, 0) in memory or when the filesystem cannot be read.
    pub fn filesystem(&self, name: &str) -> (u64, u64) {
        let Some(folder) = self
            .path_of(name)
            .and_then(|p| p.parent().map(Path::to_path_buf))
        else {
            return (0, 0);
        };
        match rustix::fs::statvfs(&folder) {
            Ok(fs) => {
                let total = fs.f_blocks.saturating_mul(fs.f_frsize);
                let free = fs.f_bfree.saturating_mul(fs.f_frsize);
                (total.saturating_sub(free), total)
            }
            Err(_) => (0, 0),
        }
    }

    /// The size of a database's file in bytes (0 in memory).
    pub fn size_on_disk(&self, name: &str) -> u64 {
        self.path_of(name)
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len())
    }
}

/// MongoDB's rules for a database name: not empty, under 64 bytes, none of `/\. "$*<>:|?` and
/// no NUL.
pub fn check_name(name: &str) -> Result<(), CommandError> {
    let bad = name.is_empty()
        || name.len() >= 64
        || name.chars().any(|c| {
            matches!(
                c,
                '/' | '\\' | '.' | ' ' | '"' | '$' | '*' | '<' | '>' | ':' | '|' | '?' | '\0'
            )
        });
    if bad {
        return Err(CommandError::new(
            ErrorCode::INVALID_NAMESPACE,
            format!("Invalid database name: '{name}'"),
        ));
    }
    Ok(())
}
