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
//! | pattern | scenarios | documents | indexes (besides `_id`) | a write | a read |
//! |---|---|---|---|---|---|
//! | [`Inbox`] | S1c | a bucket per owner and sequence number: `{owner, seq, count, messages: [{id, from, sent, read, message}]}`; the sequence variant adds a counter per owner | `(owner, seq -1)` unique, `(owner, count)` | a send is one upsert per recipient into the open bucket (plus a counter update in the sequence variant), in one transaction | the newest page reads the one or two newest buckets |
//! | [`History`] | S2a | buckets of up to N events per owner: `{owner, count, first, last, entries: [{at, data}]}` | `(owner, count)`, `(owner, entries.at)` | one upsert into the open bucket | a time range reads the buckets holding it, through `entries.at` |
//! | [`Window`] | S2b | one document per owner holding its newest N events | none | one upsert: `$push` with `$each`, `$sort` and `$slice` | one document |
//! | [`Daily`] | S2c | one document per owner and day: `{owner, day, modified, entries}` | `(owner, day)`; a TTL index on `modified` with the retention chosen at open | one upsert into the day's document | one document per day asked for |
//! | [`TimeSeries`] | time-series buckets | a bucket per series and span: `{meta, control: {start, min, max}, count, samples: [{t, v}]}` | `(meta, control.max)`; an optional TTL index (`retention`) | one upsert into the open bucket (`control` kept on write) | a range reads the buckets whose `control` overlaps it |
//! | [`Counters`] | S13 | one document per key and day: `{key, day, total, hours: {"7": {total, minutes: {"15": n}}}}` | none | one `$inc` upsert of the total, the hour and the minute | one document per day |
//! | [`Queue`] | S10 | one document per job: `{state, priority, created, taken_at, job}` | `(state, priority -1, created)` | a push is one insert; a take is one find-and-modify | a take reads the first entry of the index |
//! | [`Tree`] | S5 | one document per node: `{_id, parent, ancestors, path, data}` | `parent`; `ancestors` or `path`, by the variant chosen at open | an insert writes one node; a move rewrites the subtree in one transaction | children by `parent`, descendants in one indexed query |
//! | [`Identity`] | S4b | one document per identity: `{identifier: {kind: value}, user}` | `identifier` unique, `user` | a registration inserts every identity in one transaction | a sign-in reads the identity, then the user |
//! | [`AttributeArray`] | S3b | the user's document with `attrs: [{k, v}]` | `(attrs.k, attrs.v)`, multikey | one update of the array | equality or a range on one attribute through `$elemMatch`, over the one index |
//!
//! Each pattern records its parameters in the `patterns_meta` collection, so that reopening it
//! with other parameters is an error instead of a silent reordering of stored data.

mod attributes;
mod bucket;
mod history;
mod identity;
mod inbox;
mod meta;
mod queue;
mod timeseries;
mod tree;

pub use attributes::{AttributeArray, Condition};
pub use bucket::{
    Bucket, BucketDoc, BucketOptions, Control, DEFAULT_MAX_BYTES, Items, MAX_BYTES_LIMIT, Prepared,
    Read, Span,
};
pub use history::{Daily, Event, History, Window};
pub use identity::Identity;
pub use inbox::{Envelope, Inbox, InboxVariant};
pub use meta::PatternError;
pub use queue::Queue;
pub use timeseries::{Counters, DayCounts, Sample, TimeSeries};
pub use tree::{Node, Tree, TreeVariant};
