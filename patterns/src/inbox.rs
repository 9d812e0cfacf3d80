//! `Inbox<M>` (S1c): each owner's messages in buckets of `bucket_size`, newest bucket last.
//!
//! Two ways to find the bucket a message goes to, both from the source documents:
//! - [`InboxVariant::OpenBucket`]: upsert into the owner's bucket with `count < N`
//!   (`$inc count`, `$push messages`, `$setOnInsert` of a creation sequence). Write
//!   transactions are serialised, so two senders never open two buckets.
//! - [`InboxVariant::Sequence`]: a per-owner counter incremented with find-and-modify gives the
//!   message number `n`; the message goes to bucket `n / N` (an upsert by owner and sequence).
//!
//! Reading the latest messages walks the owner's buckets newest first through the index
//! `(owner, seq)`, so a page of `N` messages touches one or two buckets. A bucket keeps its
//! `count` of used slots when a message is deleted, so later messages never land in an older
//! bucket and the order of the inbox never changes. The bucket size is recorded with the
//! collection: reopening with another size is an error, never a silent reordering.

use bson::DateTime;
use bson::oid::ObjectId;
use odm::engine::query::Explain;
use odm::{
    Collection, Document, Embedded, IntoValue, ModifyOptions, Sort, Txn, Update, UpdateOptions,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// How an inbox finds the bucket of a new message; see the module documentation.
/// `OpenBucket` (S1c) pushes into the owner's bucket that still has room, found by an index on
/// `(owner, count)`; `Sequence` numbers each owner's messages with a counter and upserts into
/// bucket `n / bucket_size`.
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

impl InboxVariant {
    fn name(self) -> &'static str {
        match self {
            InboxVariant::OpenBucket => "open-bucket",
            InboxVariant::Sequence => "sequence",
        }
    }
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

/// A bucket: up to `bucket_size` envelopes of one owner, numbered `seq` from 0. `count` is the
/// number of slots used, which a deletion does not give back. `(owner, seq)` is unique: the
/// sequence variant upserts by it, and the open-bucket variant numbers each new bucket after
/// the owner's newest inside the sending transaction.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(
    collection = "inbox",
    index(keys(owner = 1, seq = -1), unique),
    index(keys(owner = 1, count = 1))
)]
struct InboxBucket<M> {
    #[odm(id)]
    id: ObjectId,
    owner: String,
    seq: i64,
    count: i32,
    #[odm(embedded)]
    messages: Vec<Envelope<M>>,
}

/// The sequence variant's counter of messages delivered to one owner.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "inbox_counters")]
struct InboxCounter {
    #[odm(id)]
    owner: String,
    n: i64,
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
#[derive(Debug, Clone)]
pub struct Inbox<M> {
    buckets: Collection<InboxBucket<M>>,
    /// The collection holding the per-owner counters of the sequence variant.
    counters: String,
    bucket_size: u32,
    variant: InboxVariant,
}

const PATTERN: &str = "inbox";

/// A message ready to deliver: its recipients, its id and its `$push`.
type Prepared<'m, M> = (&'m [&'m str], ObjectId, Update<InboxBucket<M>>);

impl<M: Serialize + DeserializeOwned + 'static> Inbox<M> {
    /// Opens (or creates) the inbox stored in collection `name`. Reopening with another bucket
    /// size or variant is [`PatternError::ParametersChanged`].
    pub fn open(
        db: &odm::Database,
        name: &str,
        bucket_size: u32,
        variant: InboxVariant,
    ) -> Result<Self, PatternError> {
        let bucket_size = bucket_size.max(1);
        let parameters = bson::doc! {
            "bucket_size": i64::from(bucket_size),
            "variant": variant.name(),
        };
        let counters = format!("{name}_counters");
        // The parameters, the buckets and the counters, declared in one transaction.
        db.transaction(|txn| {
            record(txn, PATTERN, name, parameters)?;
            txn.collection_named::<InboxBucket<M>>(name)?;
            if variant == InboxVariant::Sequence {
                txn.collection_named::<InboxCounter>(&counters)?;
            }
            Ok::<_, PatternError>(())
        })?;
        Ok(Inbox {
            buckets: db.collection_named(name)?,
            counters,
            bucket_size,
            variant,
        })
    }

    pub fn bucket_size(&self) -> u32 {
        self.bucket_size
    }

    /// Delivers `message` from `from` to every recipient, atomically: all or none.
    pub fn send(&self, from: &str, to: &[&str], message: &M) -> Result<ObjectId, PatternError> {
        let ids = self.send_all([(from, to, message)])?;
        ids.into_iter()
            .next()
            .ok_or_else(|| self.damaged("no message was sent"))
    }

    /// Delivers several messages in one transaction (faster than one each; all or none).
    pub fn send_all<'m>(
        &self,
        messages: impl IntoIterator<Item = (&'m str, &'m [&'m str], &'m M)>,
    ) -> Result<Vec<ObjectId>, PatternError>
    where
        M: 'm,
    {
        let f = InboxBucket::<M>::fields();
        // Each message's `$push` is written once, then given to every recipient.
        let prepared: Vec<Prepared<'_, M>> = messages
            .into_iter()
            .map(|(from, to, message)| {
                let id = ObjectId::new();
                let envelope = EnvelopeRef {
                    id,
                    from,
                    sent: DateTime::now(),
                    read: false,
                    message,
                };
                (to, id, f.messages.push(envelope))
            })
            .collect();
        self.buckets.database().transaction(|txn| {
            let mut ids = Vec::with_capacity(prepared.len());
            for (to, id, push) in &prepared {
                for owner in *to {
                    self.deliver(txn, owner, push)?;
                }
                ids.push(*id);
            }
            Ok(ids)
        })
    }

    /// Puts one envelope (its `$push`) into the owner's current bucket.
    fn deliver(
        &self,
        txn: &mut Txn<'_, '_>,
        owner: &str,
        push: &Update<InboxBucket<M>>,
    ) -> Result<(), PatternError> {
        let f = InboxBucket::<M>::fields();
        let size = i32::try_from(self.bucket_size).unwrap_or(i32::MAX);
        let push = push.clone().and(f.count.inc(1));
        let name = self.buckets.name();
        match self.variant {
            InboxVariant::OpenBucket => {
                let mut buckets = txn.collection_named::<InboxBucket<M>>(name)?;
                // The open bucket, or a new one numbered after the owner's newest.
                let open = f.owner.eq(owner).and(f.count.lt(size));
                let updated = buckets.update_one(open, push.clone(), &UpdateOptions::default())?;
                if updated.matched == 0 {
                    let newest = buckets
                        .find(f.owner.eq(owner))
                        .sort(Sort::desc(&f.seq))
                        .first()?;
                    let seq = newest.map_or(0, |b| b.seq + 1);
                    buckets.update_one(
                        f.owner.eq(owner).and(f.seq.eq(seq)),
                        push,
                        &UpdateOptions {
                            upsert: true,
                            ..UpdateOptions::default()
                        },
                    )?;
                }
            }
            InboxVariant::Sequence => {
                let c = InboxCounter::fields();
                let counter = txn
                    .collection_named::<InboxCounter>(&self.counters)?
                    .find_one_and_update(
                        c.owner.eq(owner),
                        c.n.inc(1),
                        &ModifyOptions {
                            upsert: true,
                            return_after: true,
                            ..ModifyOptions::default()
                        },
                    )?;
                let Some(counter) = counter else {
                    return Err(self.damaged("the counter was not written"));
                };
                let seq = (counter.n - 1) / i64::from(size);
                txn.collection_named::<InboxBucket<M>>(name)?.update_one(
                    f.owner.eq(owner).and(f.seq.eq(seq)),
                    push,
                    &UpdateOptions {
                        upsert: true,
                        ..UpdateOptions::default()
                    },
                )?;
            }
        }
        Ok(())
    }

    /// The owner's buckets newest first, at most `limit` after skipping `skip` of them.
    fn buckets_of(&self, owner: &str) -> odm::Find<InboxBucket<M>> {
        let f = InboxBucket::<M>::fields();
        self.buckets
            .find(f.owner.eq(owner))
            .sort(Sort::desc(&f.seq))
    }

    /// The owner's messages, newest first: `limit` of them after skipping `offset`.
    pub fn latest(
        &self,
        owner: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Envelope<M>>, PatternError> {
        let mut out = Vec::with_capacity(limit);
        let mut to_skip = offset;
        let mut read = 0_u64;
        // The buckets a full page needs when none lost a message to a deletion; more are read
        // only when some did.
        let mut batch = ((offset + limit).div_ceil(self.bucket_size as usize) + 1) as u64;
        loop {
            let buckets = self.buckets_of(owner).skip(read).limit(batch).to_vec()?;
            let last_batch = (buckets.len() as u64) < batch;
            read += buckets.len() as u64;
            for bucket in buckets {
                for envelope in bucket.messages.into_iter().rev() {
                    if out.len() == limit {
                        return Ok(out);
                    }
                    if to_skip > 0 {
                        to_skip -= 1;
                        continue;
                    }
                    out.push(envelope);
                }
            }
            if out.len() == limit || last_batch {
                return Ok(out);
            }
            batch *= 2;
        }
    }

    /// How reading the latest `limit` messages runs: the buckets it needs, through the index.
    pub fn explain_latest(&self, owner: &str, limit: usize) -> Result<Explain, PatternError> {
        let needed = limit.div_ceil(self.bucket_size as usize) + 1;
        Ok(self.buckets_of(owner).limit(needed as u64).explain()?)
    }

    /// Marks a message read; `false` when the owner has no such message.
    pub fn mark_read(&self, owner: &str, id: ObjectId) -> Result<bool, PatternError> {
        let f = InboxBucket::<M>::fields();
        let result = self.buckets.update_one(
            f.owner.eq(owner).and(f.messages.id.eq(id)),
            f.messages.matched().read.set(true),
        )?;
        Ok(result.matched > 0)
    }

    /// Deletes a message from the owner's inbox; `false` when there was none. The bucket keeps
    /// its count of used slots, so the inbox order never changes.
    pub fn delete(&self, owner: &str, id: ObjectId) -> Result<bool, PatternError> {
        let f = InboxBucket::<M>::fields();
        let result = self.buckets.update_one(
            f.owner.eq(owner).and(f.messages.id.eq(id)),
            f.messages.pull_where(Envelope::<M>::fields().id.eq(id)),
        )?;
        Ok(result.modified > 0)
    }

    fn damaged(&self, reason: &str) -> PatternError {
        PatternError::Damaged {
            pattern: PATTERN,
            name: self.buckets.name().to_owned(),
            reason: reason.to_owned(),
        }
    }
}
