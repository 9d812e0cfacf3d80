//! Typed schema patterns over `odm`: the designs of the source documents as one line of
//! application code each. Each pattern declares its documents as `#[derive(Document)]` models
//! and works through `odm`'s typed collections, filters, updates and sorts.
//!
//! Depends on the typed layer (`odm`) alone, and on the engine's public types only through its
//! re-export `odm::engine`, so that each pattern runs the same on both back ends; never on the
//! server or the tools.
//!
//! - [`Bucket`]: items of the user's type grouped by an owner key into bucket documents, closed
//!   at N items, at the end of an aligned time span or at a byte budget; the open bucket found by
//!   an upsert or a per-owner sequence; summaries (earliest and latest time, min and max of
//!   chosen fields) that let reads skip buckets. The patterns below that bucket are built on it,
//!   and an application writes its own in a few lines (the `reviews` example, S9).
//! - [`Inbox`] (S1c): fan-out on write into buckets of N messages per owner. Choose it when
//!   reads of a recent inbox dominate: a read touches one or two documents instead of one per
//!   message.
//! - [`History`], [`Window`], [`Daily`] (S2): events with retention, in buckets by count with
//!   range queries and removal by date, in a fixed window, or in a bucket per day expired by a
//!   TTL index.
//! - [`TimeSeries`] (time-series buckets by span with their times, retention by TTL) and
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
//! | [`Bucket`] | S1c, S2a, S2c, S9, time series | a bucket per owner: `{owner, seq, start, count, bytes, closed, control: {earliest, latest, min, max}, items: [T]}`; the sequence way adds a counter per owner | `(owner, seq)` unique, `(owner, start, closed)`; chosen at open: a TTL index on `control.latest`, a multikey index on the items' times | one update of the open bucket, found by the index or by `_id` when the handle opened it (the counter too in the sequence way); opening a bucket adds a read of the newest and, when the owner has buckets, the closing write | a page reads one or two buckets; a range of time or of a summary field reads only the buckets whose summaries overlap it |
//! | [`Inbox`] | S1c | a [`Bucket`] of `{id, from, sent, read, message}` envelopes per owner, `bucket_size` each | the bucket's | a send is one bucket update per recipient (plus a counter update in the sequence variant), all in one transaction | the newest page reads the one or two newest buckets |
//! | [`History`] | S2a | a [`Bucket`] of up to N `{at, data}` events per owner | the bucket's, and `(owner, items.at)` multikey | one bucket update | a time range reads the buckets holding an event in it, through `items.at` (S2a's `$elemMatch`) |
//! | [`Window`] | S2b | one document per owner holding its newest N events | none | one upsert: `$push` with `$each`, `$sort` and `$slice` | one document |
//! | [`Daily`] | S2c | a [`Bucket`] per owner and day (a span of one day) | the bucket's; a TTL index on `control.latest` with the retention chosen at open | one bucket update; its latest time keeps the day alive | a day reads its one or few buckets, through the span |
//! | [`TimeSeries`] | time-series buckets | a [`Bucket`] of `{t, v}` samples per series and aligned span, at most N each | the bucket's; an optional TTL index (`retention`) | one bucket update (`control` kept on write) | a range reads the buckets whose span overlaps it, through `(owner, start)` |
//! | [`Counters`] | S13 | one document per key and day: `{key, day, total, hours: {"7": {total, minutes: {"15": n}}}}` | none | one `$inc` upsert of the total, the hour and the minute | one document per day |
//! | [`Queue`] | S10 | one document per job: `{state, priority, created, taken_at, job}` | `(state, priority -1, created)` | a push is one insert; a take is one find-and-modify | a take reads the first entry of the index |
//! | [`Tree`] | S5 | one document per node: `{_id, parent, ancestors, path, data}` | `parent`; `ancestors` or `path`, by the variant chosen at open | an insert writes one node; a move rewrites the subtree in one transaction | children by `parent`, descendants in one indexed query |
//! | [`Identity`] | S4b | one document per identity: `{identifier: {kind: value}, user}` | `identifier` unique, `user` | a registration inserts every identity in one transaction | a sign-in reads the identity, then the user |
//! | [`AttributeArray`] | S3b | the user's document with `attrs: [{k, v}]` | `(attrs.k, attrs.v)`, multikey | one update of the array | equality or a range on one attribute through `$elemMatch`, over the one index |
//!
//! Each pattern records its parameters in the `patterns_meta` collection, so that reopening it
//! with other parameters is an error instead of a silent reordering of stored data.
//!
//! How the patterns use `odm`: each declares its documents as models (generic over the user's
//! types where they hold user data, with their indexes on the model), opens them with
//! `collection_named` under the name the user gives, and reads and writes through typed
//! collections, transactions, filters, updates and sorts. Values the user lends (`&M`) are
//! written through `IntoValue` views that serialize as the model's type. Indexes that depend on
//! choices made at open (a TTL retention, the tree variant's index, the multikey index on
//! bucket item times) are created there with the typed `Index`. Conditions between fields and
//! on the items inside a bucket are typed expressions (`odm::Expr`: the `$filter` of a bucket
//! read, the summaries' `$expr`), and the inbox's live delivery selects its change events
//! with `odm::Events`. Raw `doc!` is left for the recorded parameters and the conditions a
//! bucket push repeats per delivery (a bucket with room): written as one document, because
//! building them from typed conditions cost as much as the engine's lookup.

#[cfg(feature = "async")]
pub mod aio;
mod attributes;
mod bucket;
mod history;
mod identity;
mod inbox;
mod meta;
mod queue;
mod timeseries;
mod tree;

pub use attributes::{Attr, AttributeArray, Condition};
pub use bucket::{
    Bucket, BucketDoc, BucketOptions, Control, DEFAULT_MAX_BYTES, Items, MAX_BYTES_LIMIT, Prepared,
    Read, Span,
};
pub use history::{Daily, Event, History, Window};
pub use identity::Identity;
pub use inbox::{Envelope, Inbox, InboxVariant, Subscription};
pub use meta::PatternError;
pub use queue::Queue;
pub use timeseries::{Counters, DayCounts, Sample, TimeSeries};
pub use tree::{Node, Tree, TreeVariant};
