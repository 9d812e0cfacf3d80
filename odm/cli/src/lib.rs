//! The `odm` command (`odm-cli`): `odm serve` (the [`odm_server`] crate behind a command
//! line) and the data tools, which move data in and out in the formats of MongoDB's tools, look
//! at and maintain a database file, and run one-shot queries.
//!
//! Depends on the engine, the server and the advisor; never on the typed layer (`odm`), which
//! the tools have no use for: they work on documents as MongoDB's tools do.
//!
//! | module | concept |
//! |---|---|
//! | `extjson` | Extended JSON read (every form `mongoimport` reads) and written (relaxed, canonical) |
//! | `clock` | calendar arithmetic for the date formats |
//! | `delimited` | CSV and TSV: typed columns in, chosen fields out |
//! | `import`, `export` | `mongoimport` and `mongoexport` over a database file |
//! | `dump` | `mongodump` and `mongorestore`'s directory layout |
//! | `maintain` | stats, verify, compact, indexes, one TTL pass |
//! | `query` | one-shot find, aggregate, explain, update, delete |
//! | `progress` | progress bars on a terminal, one summary line elsewhere |
//!
//! Rule: every failure is a [`ToolError`], one line a person can act on; the command prints it
//! and exits non-zero. Nothing here panics on what a user or a file supplies.

pub mod advise;
pub mod clock;
pub mod delimited;
pub mod dump;
pub mod export;
pub mod extjson;
pub mod import;
pub mod maintain;
pub mod progress;
pub mod query;

use std::path::Path;

use odm_engine::{Database, Error as EngineError};

/// A tool's failure: one line, said to a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError(message.into())
    }
}

impl From<EngineError> for ToolError {
    fn from(e: EngineError) -> ToolError {
        ToolError(e.to_string())
    }
}

impl From<extjson::ParseError> for ToolError {
    fn from(e: extjson::ParseError) -> ToolError {
        ToolError(format!("malformed JSON at {e}"))
    }
}

/// An I/O failure on `path`, said with the path.
pub fn io_error(path: &Path, e: &std::io::Error) -> ToolError {
    ToolError(format!("{}: {e}", path.display()))
}

/// Opens an existing database file: a missing file is an error (reading tools never create
/// one), and so are a file of another format version, a file another process holds, and a file
/// that is not a database.
pub fn open_existing(path: &Path) -> Result<Database, ToolError> {
    if !path.exists() {
        return Err(ToolError(format!(
            "{}: no such database file",
            path.display()
        )));
    }
    if path.is_dir() {
        return Err(ToolError(format!(
            "{}: is a folder, not a database file",
            path.display()
        )));
    }
    open(path)
}

/// Opens a database file, creating it when missing (the tools that load data).
pub fn open_or_create(path: &Path) -> Result<Database, ToolError> {
    if path.is_dir() {
        return Err(ToolError(format!(
            "{}: is a folder, not a database file",
            path.display()
        )));
    }
    open(path)
}

fn open(path: &Path) -> Result<Database, ToolError> {
    Database::open(path).map_err(|e| {
        let shown = path.display();
        match e {
            EngineError::Locked { .. } => ToolError(format!(
                "{shown}: the file is open in another process (stop it, or reach the data through \
                 its `odm serve`)"
            )),
            EngineError::FormatVersion { found, supported } => ToolError(format!(
                "{shown}: the file has storage format version {found}; this odm reads version \
                 {supported} (dump it with the odm that wrote it, and restore the dump here)"
            )),
            EngineError::Storage(_) | EngineError::Corrupt { .. } => ToolError(format!(
                "{shown}: not a database file, or a damaged one ({})",
                one_line(&e.to_string())
            )),
            other => ToolError(format!("{shown}: {}", one_line(&other.to_string()))),
        }
    })
}

/// The error for a collection the file does not hold, listing the ones it does.
pub fn no_collection(path: &Path, name: &str, db: &Database) -> ToolError {
    let names = db.list_collections();
    let held = if names.is_empty() {
        "no collections".to_owned()
    } else {
        names.join(", ")
    };
    ToolError(format!(
        "{}: no collection `{name}` (the file holds: {held})",
        path.display()
    ))
}

/// A message on one line.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads a JSON argument given on the command line (a filter, a sort, a pipeline...).
pub fn json_argument(flag: &str, text: &str) -> Result<bson::Bson, ToolError> {
    extjson::parse_value(text).map_err(|e| ToolError(format!("{flag}: malformed JSON at {e}")))
}

/// A JSON document argument.
pub fn document_argument(flag: &str, text: &str) -> Result<bson::Document, ToolError> {
    match json_argument(flag, text)? {
        bson::Bson::Document(d) => Ok(d),
        _ => Err(ToolError(format!(
            "{flag}: expected a JSON document `{{...}}`"
        ))),
    }
}
