//! `Identities` (S4b): a document per identity, `{identifier: {kind: value}, user}`, under a
//! unique index on `identifier`, so that a user can sign in by any of several identities
//! (username, email, social handles) and no identity belongs to two users.
//!
//! Looking a user up by an identity is two reads (the identity, then the user); registering a
//! user with several identities is all or nothing. On a cluster sharded by `identifier`, both
//! the lookup and the uniqueness check reach one shard, which the single-document design
//! (S4a, an index per identity field on the user) cannot offer.

use bson::{Bson, Document, doc};
use odm::engine::IndexSpec;
use odm::engine::query::FindOptions;

use crate::meta::{PatternError, record};

/// The identities of users, in one collection; see the module documentation.
#[derive(Debug, Clone)]
pub struct Identities {
    db: odm::Database,
    name: String,
}

const PATTERN: &str = "identities";

impl Identities {
    pub fn open(db: &odm::Database, name: &str) -> Result<Self, PatternError> {
        db.engine().write(|txn| {
            record(txn, PATTERN, name, Document::new())?;
            let specs = [
                IndexSpec::ascending("identifier").map(IndexSpec::unique),
                IndexSpec::ascending("user"),
            ];
            for spec in specs {
                let spec = spec.map_err(odm::engine::Error::from)?;
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
        Ok(Identities {
            db: db.clone(),
            name: name.to_owned(),
        })
    }

    /// Registers a user with all of `identities` (`(kind, value)`), or with none when one of
    /// them belongs to someone already (`DuplicateKey` naming it).
    pub fn register(
        &self,
        user: impl Into<Bson>,
        identities: &[(&str, &str)],
    ) -> Result<(), PatternError> {
        let user = user.into();
        self.db.engine().write(|txn| {
            for (kind, value) in identities {
                txn.insert_one(&self.name, identity(kind, value, &user))?;
            }
            Ok(())
        })
    }

    /// Adds one identity to a user.
    pub fn add(&self, user: impl Into<Bson>, kind: &str, value: &str) -> Result<(), PatternError> {
        let user = user.into();
        self.db
            .engine()
            .collection(&self.name)
            .insert_one(identity(kind, value, &user))?;
        Ok(())
    }

    /// Removes an identity; `false` when there was none.
    pub fn remove(&self, kind: &str, value: &str) -> Result<bool, PatternError> {
        let filter = doc! { "identifier": { kind: value } };
        Ok(self
            .db
            .engine()
            .collection(&self.name)
            .delete_one(&filter)?
            > 0)
    }

    /// The user an identity belongs to (the first of the two reads of a lookup).
    pub fn user_of(&self, kind: &str, value: &str) -> Result<Option<Bson>, PatternError> {
        let txn = self.db.engine().read()?;
        let Some(coll) = txn.collection(&self.name)? else {
            return Ok(None);
        };
        let found = coll
            .find(
                &doc! { "identifier": { kind: value } },
                &FindOptions::default(),
            )?
            .next()
            .transpose()?;
        Ok(found.and_then(|d| d.get("user").cloned()))
    }

    /// The user an identity belongs to, read from its model's collection (two reads).
    pub fn lookup<U: odm::Document>(
        &self,
        users: &odm::Collection<U>,
        kind: &str,
        value: &str,
    ) -> Result<Option<U>, PatternError> {
        match self.user_of(kind, value)? {
            Some(id) => Ok(users.get(id)?),
            None => Ok(None),
        }
    }

    /// A user's identities, as `(kind, value)`.
    pub fn of_user(&self, user: impl Into<Bson>) -> Result<Vec<(String, String)>, PatternError> {
        let txn = self.db.engine().read()?;
        let Some(coll) = txn.collection(&self.name)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for doc in coll.find(&doc! { "user": user.into() }, &FindOptions::default())? {
            let doc = doc?;
            if let Ok(identifier) = doc.get_document("identifier")
                && let Some((kind, Bson::String(value))) = identifier.iter().next()
            {
                out.push((kind.clone(), value.clone()));
            }
        }
        out.sort();
        Ok(out)
    }
}

fn identity(kind: &str, value: &str, user: &Bson) -> Document {
    doc! { "identifier": { kind: value }, "user": user.clone() }
}
