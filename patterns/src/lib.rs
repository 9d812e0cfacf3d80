//! Typed schema patterns over `odm`: the designs of the source documents as one line of
//! application code each.
//!
//! - [`Inbox`] (S1c): fan-out on write into buckets of N messages per owner, by upserting into
//!   the open bucket or by a per-owner sequence counter. Choose it when reads of a recent
//!   inbox dominate: a read touches one or two documents instead of one per message.
//!
//! Each pattern records its parameters in the `patterns_meta` collection, so that reopening it
//! with other parameters is an error instead of a silent reordering of stored data.

mod inbox;
mod meta;

pub use inbox::{Envelope, Inbox, InboxVariant};
pub use meta::PatternError;
