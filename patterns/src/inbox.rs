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

use std::marker::PhantomData;

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};
use odm::engine::query::{Explain, FindOptions};
use odm::engine::update::{FindAndModify, ReturnDocument, UpdateOptions};
use odm::engine::{Direction, IndexSpec, WriteTxn};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::meta::{PatternError, record};

/// How an inbox finds the bucket of a new message; see the module documentation.
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

/// One delivered message.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope<M> {
    pub id: ObjectId,
    pub from: String,
    pub sent: DateTime,
    pub read: bool,
    pub message: M,
}

/// Buckets of messages per owner; see the module documentation.
#[derive(Debug, Clone)]
pub struct Inbox<M> {
    db: odm::Database,
    /// The buckets' collection.
    name: String,
    bucket_size: u32,
    variant: InboxVariant,
    _message: PhantomData<fn() -> M>,
}

const PATTERN: &str = "inbox";

impl<M: Serialize + DeserializeOwned> Inbox<M> {
    /// Opens (or creates) the inbox stored in collection `name`. Reopening with another bucket
    /// size or variant is [`PatternError::ParametersChanged`].
    pub fn open(
        db: &odm::Database,
        name: &str,
        bucket_size: u32,
        variant: InboxVariant,
    ) -> Result<Self, PatternError> {
        let inbox = Inbox {
            db: db.clone(),
            name: name.to_owned(),
            bucket_size: bucket_size.max(1),
            variant,
            _message: PhantomData,
        };
        let parameters = doc! {
            "bucket_size": i64::from(inbox.bucket_size),
            "variant": variant.name(),
        };
        db.engine().write(|txn| {
            record(txn, PATTERN, name, parameters)?;
            for spec in inbox.indexes()? {
                if !txn
                    .list_indexes(name)
                    .iter()
                    .any(|s| s.name() == spec.name())
                {
                    txn.create_index(name, spec)?;
                }
            }
            Ok::<_, PatternError>(())
        })?;
        Ok(inbox)
    }

    fn indexes(&self) -> Result<Vec<IndexSpec>, PatternError> {
        let specs = [
            IndexSpec::new([
                ("owner", Direction::Ascending),
                ("seq", Direction::Descending),
            ]),
            IndexSpec::new([
                ("owner", Direction::Ascending),
                ("count", Direction::Ascending),
            ]),
        ];
        let mut out = Vec::new();
        for spec in specs {
            out.push(spec.map_err(|e| PatternError::Odm(odm::engine::Error::from(e).into()))?);
        }
        if self.variant == InboxVariant::Sequence {
            // One bucket per owner and sequence number.
            out[0] = out[0].clone().unique();
        }
        Ok(out)
    }

    /// The collection holding the per-owner counters of the sequence variant.
    fn counters(&self) -> String {
        format!("{}_counters", self.name)
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
        let mut prepared = Vec::new();
        for (from, to, message) in messages {
            prepared.push((to, self.envelope_of(from, message)?));
        }
        self.db.engine().write(|txn| {
            let mut ids = Vec::with_capacity(prepared.len());
            for (to, (id, envelope)) in &prepared {
                for owner in *to {
                    self.deliver(txn, owner, envelope)?;
                }
                ids.push(*id);
            }
            Ok::<_, PatternError>(ids)
        })
    }

    fn envelope_of(&self, from: &str, message: &M) -> Result<(ObjectId, Document), PatternError> {
        let body = bson::serialize_to_bson(message).map_err(|e| PatternError::Damaged {
            pattern: PATTERN,
            name: self.name.clone(),
            reason: format!("the message does not serialize: {e}"),
        })?;
        let id = ObjectId::new();
        Ok((
            id,
            doc! { "id": id, "from": from, "sent": DateTime::now(), "read": false, "message": body },
        ))
    }

    /// Puts one envelope into the owner's current bucket.
    fn deliver(
        &self,
        txn: &mut WriteTxn<'_>,
        owner: &str,
        envelope: &Document,
    ) -> Result<(), PatternError> {
        let size = i64::from(self.bucket_size);
        let push = doc! { "$inc": { "count": 1 }, "$push": { "messages": envelope } };
        let upsert = UpdateOptions {
            upsert: true,
            ..UpdateOptions::default()
        };
        match self.variant {
            InboxVariant::OpenBucket => {
                // The open bucket, or a new one numbered after the owner's newest.
                let open = doc! { "owner": owner, "count": { "$lt": size } };
                let updated =
                    txn.update_one(&self.name, &open, &push, &UpdateOptions::default())?;
                if updated.matched == 0 {
                    let newest = txn.find_one(
                        &self.name,
                        &doc! { "owner": owner },
                        Some(&doc! { "seq": -1 }),
                    )?;
                    let seq = newest
                        .and_then(|b| b.get_i64("seq").ok())
                        .map_or(0, |s| s + 1);
                    txn.insert_one(
                        &self.name,
                        doc! { "owner": owner, "seq": seq, "count": 1, "messages": [envelope.clone()] },
                    )?;
                }
            }
            InboxVariant::Sequence => {
                let counter = txn.find_one_and_update(
                    &self.counters(),
                    &doc! { "_id": owner },
                    &doc! { "$inc": { "n": 1_i64 } },
                    &FindAndModify {
                        upsert: true,
                        return_document: ReturnDocument::After,
                        ..FindAndModify::default()
                    },
                )?;
                let n = counter
                    .and_then(|c| c.get_i64("n").ok())
                    .ok_or_else(|| self.damaged("the counter has no count"))?;
                let seq = (n - 1) / size;
                txn.update_one(
                    &self.name,
                    &doc! { "owner": owner, "seq": seq },
                    &push,
                    &upsert,
                )?;
            }
        }
        Ok(())
    }

    /// The owner's messages, newest first: `limit` of them after skipping `offset`.
    pub fn latest(
        &self,
        owner: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Envelope<M>>, PatternError> {
        let txn = self.db.engine().read()?;
        let Some(buckets) = txn.collection(&self.name)? else {
            return Ok(Vec::new());
        };
        let options = FindOptions {
            sort: Some(doc! { "seq": -1 }),
            ..FindOptions::default()
        };
        let mut out = Vec::with_capacity(limit);
        let mut to_skip = offset;
        // Buckets stream newest first; stop as soon as the page is full.
        for bucket in buckets.find(&doc! { "owner": owner }, &options)? {
            let bucket = bucket?;
            let messages = bucket
                .get_array("messages")
                .map_err(|e| self.damaged(&e.to_string()))?;
            for message in messages.iter().rev() {
                if out.len() == limit {
                    return Ok(out);
                }
                if to_skip > 0 {
                    to_skip -= 1;
                    continue;
                }
                out.push(self.envelope(message)?);
            }
            if out.len() == limit {
                break;
            }
        }
        Ok(out)
    }

    /// How reading the latest `limit` messages runs: the buckets it needs, through the index.
    pub fn explain_latest(&self, owner: &str, limit: usize) -> Result<Explain, PatternError> {
        let txn = self.db.engine().read()?;
        let buckets = txn
            .collection(&self.name)?
            .ok_or_else(|| self.damaged("the inbox has no buckets yet"))?;
        let needed = limit.div_ceil(self.bucket_size as usize) + 1;
        let options = FindOptions {
            sort: Some(doc! { "seq": -1 }),
            limit: Some(needed as u64),
            ..FindOptions::default()
        };
        Ok(buckets.explain(&doc! { "owner": owner }, &options)?)
    }

    /// Marks a message read; `false` when the owner has no such message.
    pub fn mark_read(&self, owner: &str, id: ObjectId) -> Result<bool, PatternError> {
        let result = self.db.engine().collection(&self.name).update_one(
            &doc! { "owner": owner, "messages.id": id },
            &doc! { "$set": { "messages.$.read": true } },
            &UpdateOptions::default(),
        )?;
        Ok(result.matched > 0)
    }

    /// Deletes a message from the owner's inbox; `false` when there was none. The bucket keeps
    /// its count of used slots, so the inbox order never changes.
    pub fn delete(&self, owner: &str, id: ObjectId) -> Result<bool, PatternError> {
        let result = self.db.engine().collection(&self.name).update_one(
            &doc! { "owner": owner, "messages.id": id },
            &doc! { "$pull": { "messages": { "id": id } } },
            &UpdateOptions::default(),
        )?;
        Ok(result.modified > 0)
    }

    fn envelope(&self, stored: &Bson) -> Result<Envelope<M>, PatternError> {
        let Bson::Document(d) = stored else {
            return Err(self.damaged("a message is not a document"));
        };
        let damaged = |what: &str| self.damaged(&format!("a message has no valid {what}"));
        let message = d.get("message").cloned().ok_or_else(|| damaged("body"))?;
        Ok(Envelope {
            id: d.get_object_id("id").map_err(|_| damaged("id"))?,
            from: d.get_str("from").map_err(|_| damaged("sender"))?.to_owned(),
            sent: *d.get_datetime("sent").map_err(|_| damaged("date"))?,
            read: d.get_bool("read").unwrap_or(false),
            message: bson::deserialize_from_bson(message)
                .map_err(|e| self.damaged(&format!("a message does not decode: {e}")))?,
        })
    }

    fn damaged(&self, reason: &str) -> PatternError {
        PatternError::Damaged {
            pattern: PATTERN,
            name: self.name.clone(),
            reason: reason.to_owned(),
        }
    }
}
