//! Typed schema patterns over `odm`: the designs of the source documents as one line of
//! application code each. Each pattern declares its documents as `#[derive(Document)]` models
//! and works through `odm`'s typed collections, filters, updates and sorts.
//!
//! - [`Inbox`] (S1c): fan-out on write into buckets of N messages per owner, by upserting into
//!   the open bucket or by a per-owner sequence counter. Choose it when reads of a recent
//!   inbox dominate: a read touches one or two documents instead of one per message.
//!
//! - [`History`], [`Window`], [`Daily`] (S2): events with retention, in buckets by count with
//!   range queries and removal by date, in a fixed window, or one document per day expired by
//!   a TTL index.
//! - [`TimeSeries`] (time-series buckets with min and max times, retention by TTL) and
//!   [`Counters`] (S13: per day, hours and minutes nested, one upsert per event).
//! - [`Queue`] (S10): a priority work queue with timeouts, taken with find-and-modify.
//! - [`Tree`] (S5): a hierarchy with parent, ancestors and materialized path; all descendants
//!   in one indexed query (multikey `ancestors` or an anchored regex on `path`), subtrees moved
//!   and deleted atomically.
//! - [`Identity`] (S4b): a document per identity under a unique index; sign-in by any of a
//!   user's identities in two reads, registration all or nothing.
//! - [`AttributeArray`] (S3b): user-defined attributes as `{k, v}` pairs under one compound
//!   multikey index, queried by equality or range through `$elemMatch`.
//!
//! Each pattern records its parameters in the `patterns_meta` collection, so that reopening it
//! with other parameters is an error instead of a silent reordering of stored data.

mod attributes;
mod history;
mod identity;
mod inbox;
mod meta;
mod queue;
mod timeseries;
mod tree;

pub use attributes::{AttributeArray, Condition};
pub use history::{Daily, Event, History, Window};
pub use identity::Identity;
pub use inbox::{Envelope, Inbox, InboxVariant};
pub use meta::PatternError;
pub use queue::Queue;
pub use timeseries::{Counters, DayCounts, Sample, TimeSeries};
pub use tree::{Node, Tree, TreeVariant};
