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
//!
//! [`Subscription`] is an owner's live delivery over a change stream of the buckets: new
//! buckets recognised by owner, known ones by `_id`, and the pushed messages read from each
//! update's description.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime, doc};
use odm::engine::query::Explain;
use odm::{Document, Embedded, Events, IntoValue};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::bucket::{Bucket, BucketDoc, BucketOptions};
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
/// fields in the same order, a law the tests hold), so that sending needs no copy of the
/// message.
struct EnvelopeRef<'m, M> {
    id: ObjectId,
    from: &'m str,
    sent: DateTime,
    read: bool,
    message: &'m M,
}

impl<M: Serialize> IntoValue<Envelope<M>> for EnvelopeRef<'_, M> {
    /// Written field by field, as serde writes [`Envelope`]: serde would write the id and the
    /// date through `$oid` and `$date` documents and read those back, most of the cost of
    /// preparing a message.
    fn into_bson(self) -> Result<bson::Bson, bson::error::Error> {
        let message = bson::serialize_to_bson(self.message)?;
        Ok(Bson::Document(doc! {
            "id": self.id,
            "from": self.from,
            "sent": self.sent,
            "read": self.read,
            "message": message,
        }))
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

/// An owner's live delivery: new messages as they are committed, read from the change log
/// (see [`Inbox::subscribe`]).
pub struct Subscription<M> {
    inbox: Inbox<M>,
    owner: String,
    stream: odm::ChangeStream<BucketDoc<String, Envelope<M>>>,
    /// The owner's buckets and the slots each had when last seen.
    counts: HashMap<ObjectId, i64>,
    /// Messages read from an event, not yet handed out.
    ready: VecDeque<Envelope<M>>,
}

impl<M> std::fmt::Debug for Subscription<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("owner", &self.owner)
            .field("buckets", &self.counts.len())
            .field("ready", &self.ready.len())
            .finish_non_exhaustive()
    }
}

impl<M: Serialize + DeserializeOwned + Send + 'static> Inbox<M> {
    /// Live delivery (S1): the owner's new messages as they arrive, instead of polling
    /// [`Inbox::latest`]. The subscription reads the change log, so it makes no sender wait,
    /// and it sees only the owner's buckets: a new bucket's insert (filtered by owner), and
    /// updates of the buckets it knows (filtered by bucket `_id`, no document looked up).
    /// Messages sent before the call are not delivered.
    pub fn subscribe(&self, owner: &str) -> Result<Subscription<M>, PatternError> {
        let b = BucketDoc::<String, Envelope<M>>::fields();
        // The stream opens first, so that nothing sent between the read and the stream is
        // missed: a message the read already counted is skipped by its slot.
        let stream = self.buckets.collection().watch().open()?;
        let counts = self
            .buckets
            .collection()
            .find(b.owner.eq(owner.to_owned()))
            .to_vec()?
            .into_iter()
            .map(|bucket| (bucket.id, bucket.count))
            .collect();
        let mut subscription = Subscription {
            inbox: self.clone(),
            owner: owner.to_owned(),
            stream,
            counts,
            ready: VecDeque::new(),
        };
        subscription.refilter(None)?;
        Ok(subscription)
    }
}

impl<M: Serialize + DeserializeOwned + Send + 'static> Subscription<M> {
    /// The next message if one was delivered, without waiting.
    pub fn try_next(&mut self) -> Result<Option<Envelope<M>>, PatternError> {
        self.next_within(Duration::ZERO)
    }

    /// The next message, waiting up to `timeout` for one.
    pub fn next_timeout(&mut self, timeout: Duration) -> Result<Option<Envelope<M>>, PatternError> {
        self.next_within(timeout)
    }

    fn next_within(&mut self, timeout: Duration) -> Result<Option<Envelope<M>>, PatternError> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(message) = self.ready.pop_front() {
                return Ok(Some(message));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Some(event) = self.stream.next_timeout(left)? else {
                return Ok(None);
            };
            self.take(event)?;
            if left.is_zero() && self.ready.is_empty() {
                return Ok(None);
            }
        }
    }

    /// The stream's filter: inserts of the owner's new buckets, updates of the known ones;
    /// resumes after `token` (the event that added a bucket), or where the stream stood.
    fn refilter(&mut self, token: Option<odm::ResumeToken>) -> Result<(), PatternError> {
        let f = BucketDoc::<String, Envelope<M>>::fields();
        let events = Events::inserted(f.owner.eq(&self.owner))
            .or(Events::updated(self.counts.keys().copied()));
        // After the event that changed the filter, or where the stream stands.
        let watch = self.inbox.buckets.collection().watch().events(events);
        self.stream = match token.or_else(|| self.stream.resume_token()) {
            Some(token) => watch.resume_after(token),
            None => watch,
        }
        .open()?;
        Ok(())
    }

    /// The new messages of one event: a new bucket's items, or the items pushed by an update
    /// (its slot count grew by `k`: the `k` highest positions it wrote, since pushes append).
    fn take(
        &mut self,
        event: odm::ChangeEvent<BucketDoc<String, Envelope<M>>>,
    ) -> Result<(), PatternError> {
        match event.operation_type {
            odm::OperationType::Insert => {
                if let Some(bucket) = event.full_document {
                    // A bucket the subscription's first read already counted delivers only
                    // what that read had not seen.
                    let seen = self.counts.get(&bucket.id).copied().unwrap_or(0);
                    let seen = usize::try_from(seen).unwrap_or(0);
                    self.counts.insert(bucket.id, bucket.count.max(seen as i64));
                    self.ready.extend(bucket.items.into_iter().skip(seen));
                    self.refilter(Some(event.token))?;
                }
            }
            odm::OperationType::Update => {
                let id = event
                    .document_key
                    .as_ref()
                    .and_then(|k| k.get_object_id("_id").ok());
                let (Some(id), Some(description)) = (id, event.update_description) else {
                    return Ok(());
                };
                let Ok(new_count) = description.updated_fields.get_i64("count") else {
                    return Ok(());
                };
                let old_count = self.counts.get(&id).copied().unwrap_or(0);
                if new_count <= old_count {
                    return Ok(());
                }
                self.counts.insert(id, new_count);
                let pushed = usize::try_from(new_count - old_count).unwrap_or(0);
                let mut written: Vec<(usize, &Bson)> = description
                    .updated_fields
                    .iter()
                    .filter_map(|(path, value)| {
                        let position = path.strip_prefix("items.")?.parse().ok()?;
                        Some((position, value))
                    })
                    .collect();
                written.sort_by_key(|(position, _)| *position);
                let start = written.len().saturating_sub(pushed);
                for (_, value) in &written[start..] {
                    let message = bson::deserialize_from_bson((*value).clone()).map_err(|e| {
                        self.inbox
                            .buckets
                            .damaged(format!("a pushed message does not decode: {e}"))
                    })?;
                    self.ready.push_back(message);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use bson::oid::ObjectId;
    use bson::{Bson, DateTime};
    use odm::IntoValue;
    use proptest::prelude::*;
    use serde::Serialize;

    use super::{Envelope, EnvelopeRef};

    /// Both ways of writing one envelope, encoded (so that field order counts): field by
    /// field, and by serde from the model.
    fn both<M: Serialize + Clone>(
        id: [u8; 12],
        from: &str,
        sent: i64,
        read: bool,
        message: &M,
    ) -> (Vec<u8>, Vec<u8>) {
        let (id, sent) = (ObjectId::from_bytes(id), DateTime::from_millis(sent));
        let by_fields = IntoValue::<Envelope<M>>::into_bson(EnvelopeRef {
            id,
            from,
            sent,
            read,
            message,
        })
        .expect("writes");
        let by_serde = bson::serialize_to_bson(&Envelope {
            id,
            from: from.to_owned(),
            sent,
            read,
            message: message.clone(),
        })
        .expect("writes");
        let encoded = |b: Bson| match b {
            Bson::Document(d) => d.to_vec().expect("encodes"),
            other => panic!("an envelope is a document, not {other}"),
        };
        (encoded(by_fields), encoded(by_serde))
    }

    proptest! {
        /// Law: an envelope written field by field is the one serde writes from the model.
        #[test]
        fn an_envelope_written_by_fields_is_the_models(
            id in any::<[u8; 12]>(),
            from in ".{0,12}",
            sent in any::<i64>(),
            read in any::<bool>(),
            text in ".{0,20}",
            numbers in prop::collection::vec(any::<i32>(), 0..4),
        ) {
            let (a, b) = both(id, &from, sent, read, &text);
            prop_assert_eq!(a, b);
            let (a, b) = both(id, &from, sent, read, &numbers);
            prop_assert_eq!(a, b);
        }
    }
}
