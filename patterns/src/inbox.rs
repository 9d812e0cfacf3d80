//! `Inbox<M>` (S1c): each owner's messages in buckets of `bucket_size`, a [`Bucket`] of
//! [`Envelope`]s per owner.
//!
//! The two ways to find the bucket a message goes to are the bucket's (see [`Bucket`]):
//! [`InboxVariant::OpenBucket`] upserts into the owner's bucket with room, and
//! [`InboxVariant::Sequence`] numbers each owner's messages with a counter. Reading the latest
//! messages walks the owner's buckets newest first through the index `(owner, seq)`, so a page
//! of `bucket_size` messages touches one or two buckets. A deleted message keeps its slot, so
//! later messages never land in an older bucket and the order of the inbox never changes. The
//! bucket size is recorded with the collection: reopening with another size is an error, never
//! a silent reordering.

use bson::DateTime;
use bson::oid::ObjectId;
use odm::engine::query::Explain;
use odm::{Embedded, IntoValue};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::bucket::{Bucket, BucketOptions};
use crate::meta::PatternError;

/// How an inbox finds the bucket of a new message; see the module documentation.
/// `OpenBucket` (S1c) pushes into the owner's open bucket while it has room (the bucket's upsert
/// way); `Sequence` numbers each owner's messages with a counter and upserts into bucket
/// `n / bucket_size` (the bucket's sequence way).
///
/// ```
/// use odm_patterns::{Inbox, InboxVariant};
///
/// let db = odm::Database::in_memory()?;
/// let inbox: Inbox<u32> = Inbox::open(&db, "numbered", 2, InboxVariant::Sequence)?;
/// for n in 0..5 {
///     inbox.send("sam", &["ann"], &n)?;
/// }
/// let newest: Vec<u32> = inbox.latest("ann", 0, 3)?.into_iter().map(|e| e.message).collect();
/// assert_eq!(newest, [4, 3, 2]);
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxVariant {
    OpenBucket,
    Sequence,
}

/// One delivered message, as a bucket stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Envelope<M> {
    pub id: ObjectId,
    pub from: String,
    pub sent: DateTime,
    pub read: bool,
    pub message: M,
}

/// An envelope written from a borrowed message, stored exactly as [`Envelope`] is (the same
/// fields in the same order), so that sending needs no copy of the message.
#[derive(Serialize)]
struct EnvelopeRef<'m, M> {
    id: ObjectId,
    from: &'m str,
    sent: DateTime,
    read: bool,
    message: &'m M,
}

impl<M: Serialize> IntoValue<Envelope<M>> for EnvelopeRef<'_, M> {
    fn into_bson(self) -> Result<bson::Bson, String> {
        bson::serialize_to_bson(&self).map_err(|e| e.to_string())
    }
}

/// Buckets of messages per owner; see the module documentation.
///
/// ```
/// use odm_patterns::{Inbox, InboxVariant};
///
/// let db = odm::Database::in_memory()?;
/// let inbox: Inbox<String> = Inbox::open(&db, "inbox", 50, InboxVariant::OpenBucket)?;
/// let hello = inbox.send("sam", &["ann", "bob"], &"hello".to_owned())?;
/// inbox.send("sam", &["ann"], &"again".to_owned())?;
/// let latest = inbox.latest("ann", 0, 10)?; // newest first
/// assert_eq!(latest[0].message, "again");
/// assert!(inbox.mark_read("ann", hello)?);
/// assert!(inbox.delete("bob", hello)?);
/// assert!(inbox.latest("bob", 0, 10)?.is_empty());
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug)]
pub struct Inbox<M> {
    buckets: Bucket<String, Envelope<M>>,
    bucket_size: u32,
}

impl<M> Clone for Inbox<M> {
    fn clone(&self) -> Self {
        Inbox {
            buckets: self.buckets.clone(),
            bucket_size: self.bucket_size,
        }
    }
}

impl<M: Serialize + DeserializeOwned + Send + 'static> Inbox<M> {
    /// Opens (or creates) the inbox stored in collection `name`. Reopening with another bucket
    /// size or variant is [`PatternError::ParametersChanged`].
    pub fn open(
        db: &odm::Database,
        name: &str,
        bucket_size: u32,
        variant: InboxVariant,
    ) -> Result<Self, PatternError> {
        let bucket_size = bucket_size.max(1);
        let options = BucketOptions::new().max_items(bucket_size);
        let options = match variant {
            InboxVariant::OpenBucket => options,
            InboxVariant::Sequence => options.sequence(),
        };
        Ok(Inbox {
            buckets: Bucket::open_as(db, "inbox", name, options)?,
            bucket_size,
        })
    }

    pub fn bucket_size(&self) -> u32 {
        self.bucket_size
    }

    /// The buckets the inbox is stored in, for reads of their own.
    pub fn buckets(&self) -> &Bucket<String, Envelope<M>> {
        &self.buckets
    }

    /// Delivers `message` from `from` to every recipient, atomically: all or none.
    pub fn send(&self, from: &str, to: &[&str], message: &M) -> Result<ObjectId, PatternError> {
        let ids = self.send_all([(from, to, message)])?;
        ids.into_iter()
            .next()
            .ok_or_else(|| self.buckets.damaged("no message was sent".to_owned()))
    }

    /// Delivers several messages in one transaction (faster than one each; all or none).
    pub fn send_all<'m>(
        &self,
        messages: impl IntoIterator<Item = (&'m str, &'m [&'m str], &'m M)>,
    ) -> Result<Vec<ObjectId>, PatternError>
    where
        M: 'm,
    {
        // Each message is encoded once, then given to every recipient.
        let mut prepared = Vec::new();
        for (from, to, message) in messages {
            let id = ObjectId::new();
            let envelope = EnvelopeRef {
                id,
                from,
                sent: DateTime::now(),
                read: false,
                message,
            };
            prepared.push((to, id, self.buckets.prepare(envelope)?));
        }
        self.buckets.collection().database().transaction(|txn| {
            let mut ids = Vec::with_capacity(prepared.len());
            for (to, id, envelope) in &prepared {
                for owner in *to {
                    self.buckets.push_prepared(txn, *owner, envelope)?;
                }
                ids.push(*id);
            }
            Ok(ids)
        })
    }

    /// The owner's messages, newest first: `limit` of them after skipping `offset`.
    pub fn latest(
        &self,
        owner: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Envelope<M>>, PatternError> {
        self.buckets.newest(owner, offset as u64, limit as u64)
    }

    /// How reading the latest `limit` messages runs: the buckets it needs, through the index.
    pub fn explain_latest(&self, owner: &str, limit: usize) -> Result<Explain, PatternError> {
        self.buckets
            .read(owner)
            .newest_first()
            .limit(limit as u64)
            .explain()
    }

    /// Marks a message read; `false` when the owner has no such message.
    pub fn mark_read(&self, owner: &str, id: ObjectId) -> Result<bool, PatternError> {
        self.buckets
            .update_item(owner, Envelope::<M>::fields().id.eq(id), |m| {
                m.read.set(true)
            })
    }

    /// Deletes a message from the owner's inbox; `false` when there was none. The bucket keeps
    /// its count of used slots, so the inbox order never changes.
    pub fn delete(&self, owner: &str, id: ObjectId) -> Result<bool, PatternError> {
        let removed = self
            .buckets
            .remove(owner, Envelope::<M>::fields().id.eq(id))?;
        Ok(removed > 0)
    }
}
