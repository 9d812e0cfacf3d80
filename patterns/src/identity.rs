//! `Identity` (S4b): a document per identity, `{identifier: {kind: value}, user}`, under a
//! unique index on `identifier`, so that a user can sign in by any of several identities
//! (username, email, social handles) and no identity belongs to two users.
//!
//! Looking a user up by an identity is two reads (the identity, then the user); registering a
//! user with several identities is all or nothing. On a cluster sharded by `identifier`, both
//! the lookup and the uniqueness check reach one shard, which the single-document design
//! (S4a, an index per identity field on the user) cannot offer.

use std::collections::BTreeMap;

use bson::Bson;
use bson::oid::ObjectId;
use odm::{Collection, Document};
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// One stored identity: `identifier` is `{kind: value}` (one entry), unique across users.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "identities")]
struct IdentityDoc {
    #[odm(id)]
    id: ObjectId,
    #[odm(index(unique))]
    identifier: BTreeMap<String, String>,
    /// The user's id, of whatever type the user model has.
    #[odm(index)]
    user: Bson,
}

impl IdentityDoc {
    fn new(kind: &str, value: &str, user: &Bson) -> IdentityDoc {
        IdentityDoc {
            id: ObjectId::new(),
            identifier: identifier(kind, value),
            user: user.clone(),
        }
    }
}

fn identifier(kind: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(kind.to_owned(), value.to_owned())])
}

/// The identities of users, in one collection; see the module documentation.
///
/// ```
/// use odm_patterns::Identity;
///
/// let db = odm::Database::in_memory()?;
/// let ids = Identity::open(&db, "identities")?;
/// ids.register(1, &[("email", "ann@example.com"), ("github", "ann")])?;
/// assert_eq!(ids.user_of("github", "ann")?, Some(bson::Bson::Int32(1)));
/// // An identity belongs to one user: registering it again changes nothing.
/// assert!(ids.register(2, &[("phone", "555"), ("github", "ann")]).is_err());
/// assert_eq!(ids.user_of("phone", "555")?, None);
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Identity {
    identities: Collection<IdentityDoc>,
}

const PATTERN: &str = "identities";

impl Identity {
    pub fn open(db: &odm::Database, name: &str) -> Result<Self, PatternError> {
        db.transaction(|txn| record(txn, PATTERN, name, bson::Document::new()))?;
        Ok(Identity {
            identities: db.collection_named(name)?,
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
        let all: Vec<IdentityDoc> = identities
            .iter()
            .map(|(kind, value)| IdentityDoc::new(kind, value, &user))
            .collect();
        self.identities.insert_many(&all)?;
        Ok(())
    }

    /// Adds one identity to a user.
    pub fn add(&self, user: impl Into<Bson>, kind: &str, value: &str) -> Result<(), PatternError> {
        self.identities
            .insert_one(&IdentityDoc::new(kind, value, &user.into()))?;
        Ok(())
    }

    /// Removes an identity; `false` when there was none.
    pub fn remove(&self, kind: &str, value: &str) -> Result<bool, PatternError> {
        let f = IdentityDoc::fields();
        Ok(self
            .identities
            .delete_one(f.identifier.eq(identifier(kind, value)))?
            > 0)
    }

    /// The user an identity belongs to (the first of the two reads of a lookup).
    pub fn user_of(&self, kind: &str, value: &str) -> Result<Option<Bson>, PatternError> {
        let f = IdentityDoc::fields();
        let found = self
            .identities
            .find_one(f.identifier.eq(identifier(kind, value)))?;
        Ok(found.map(|identity| identity.user))
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
        let f = IdentityDoc::fields();
        let mut out: Vec<(String, String)> = self
            .identities
            .find(f.user.eq(user.into()))
            .to_vec()?
            .into_iter()
            .flat_map(|identity| identity.identifier)
            .collect();
        out.sort();
        Ok(out)
    }
}
