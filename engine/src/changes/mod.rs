//! Change streams: every committed write recorded in a change log inside the database file,
//! read back as MongoDB's change events.
//!
//! - `clock`: the process's cluster time, which orders commits and answers `operationTime`;
//! - `log`: the log's table, its bounds, and a transaction's side of it;
//! - `record`: what each kind of change records;
//! - `diff`: an update's `updateDescription`, and its replay;
//! - `token`: resume tokens;
//! - `stream`: a stream's scope, options and batches of events.
//!
//! The log is written in the same redb transaction as the changes it records, so it holds
//! exactly the committed changes, in commit order, and survives restarts with the data.

pub mod clock;
pub mod diff;
pub(crate) mod log;
pub(crate) mod record;
mod stream;
mod token;

pub(crate) use log::TxnChanges;
pub use log::{ChangeLogOptions, DEFAULT_MAX_BYTES};
pub use stream::{
    ChangeStream, ChangeStreamOptions, FullDocument, FullDocumentBeforeChange, Scope, Start,
    check_pipeline, stable_time,
};
pub use token::ResumeToken;
