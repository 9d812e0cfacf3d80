//! `Identity` (S4b): a document per identity, `{identifier: {kind: value}, user}`, under a
//! unique index on `identifier`, so that a user can sign in by any of several identities
//! (username, email, social handles) and no identity belongs to two users.
//!
//! Looking a user up by an identity is two reads (the identity, then the user); registering a
//! user with several identities is all or nothing. On a cluster sharded by `identifier`, both
//! the lookup and the uniqueness check reach one shard, which the single-document design
//! (S4a, an index per identity field on the user) cannot offer.

use std::collections::BTreeMap;

use bson::oid::ObjectId;
use odm::{Collection, Document};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// One stored identity: `identifier` is `{kind: value}` (one entry), unique across users;
/// `user` is the user's id, of the type the user model's id has.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "identities")]
struct IdentityDoc<Id> {
    #[odm(id)]
    id: ObjectId,
    #[odm(index(unique))]
    identifier: BTreeMap<String, String>,
    #[odm(index)]
    user: Id,
}

impl<Id> IdentityDoc<Id> {
    fn new(kind: &str, value: &str, user: Id) -> IdentityDoc<Id> {
        IdentityDoc {
            id: ObjectId::new(),
            identifier: identifier(kind, value),
            user,
        }
    }
}

fn identifier(kind: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(kind.to_owned(), value.to_owned())])
}

/// The identities of users, in one collection; `Id` is the type of the user model's id. See
/// the module documentation.
///
/// ```
/// use odm_patterns::Identity;
///
/// let db = odm::Database::in_memory()?;
/// let ids: Identity<i64> = Identity::open(&db, "identities")?;
/// ids.register(1, &[("email", "ann@example.com"), ("github", "ann")])?;
/// assert_eq!(ids.user_of("github", "ann")?, Some(1));
/// // An identity belongs to one user: registering it again changes nothing.
/// assert!(ids.register(2, &[("phone", "555"), ("github", "ann")]).is_err());
/// assert_eq!(ids.user_of("phone", "555")?, None);
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug)]
pub struct Identity<Id> {
    identities: Collection<IdentityDoc<Id>>,
}

impl<Id> Clone for Identity<Id> {
    fn clone(&self) -> Self {
        Identity {
            identities: self.identities.clone(),
        }
    }
}

const PATTERN: &str = "identities";

impl<Id: Serialize + DeserializeOwned + Clone + 'static> Identity<Id> {
    pub fn open(db: &odm::Database, name: &str) -> Result<Self, PatternError> {
        db.transaction(|txn| {
            record(txn, PATTERN, name, bson::Document::new())?;
            txn.collection_named::<IdentityDoc<Id>>(name)?;
            Ok::<_, PatternError>(())
        })?;
        Ok(Identity {
            identities: db.collection_named(name)?,
        })
    }

    /// Registers a user with all of `identities` (`(kind, value)`), or with none when one of
    /// them belongs to someone already (`DuplicateKey` naming it).
    pub fn register(&self, user: Id, identities: &[(&str, &str)]) -> Result<(), PatternError> {
        let all: Vec<IdentityDoc<Id>> = identities
            .iter()
            .map(|(kind, value)| IdentityDoc::new(kind, value, user.clone()))
            .collect();
        self.identities.insert_many(&all)?;
        Ok(())
    }

    /// Adds one identity to a user.
    pub fn add(&self, user: Id, kind: &str, value: &str) -> Result<(), PatternError> {
        self.identities
            .insert_one(&IdentityDoc::new(kind, value, user))?;
        Ok(())
    }

    /// Removes an identity; `false` when there was none.
    pub fn remove(&self, kind: &str, value: &str) -> Result<bool, PatternError> {
        let f = IdentityDoc::<Id>::fields();
        Ok(self
            .identities
            .delete_one(f.identifier.eq(identifier(kind, value)))?
            > 0)
    }

    /// The user an identity belongs to (the first of the two reads of a lookup).
    pub fn user_of(&self, kind: &str, value: &str) -> Result<Option<Id>, PatternError> {
        let f = IdentityDoc::<Id>::fields();
        let found = self
            .identities
            .find_one(f.identifier.eq(identifier(kind, value)))?;
        Ok(found.map(|identity| identity.user))
    }

    /// The user an identity belongs to, read from its model's collection (two reads).
    pub fn lookup<U: Document>(
        &self,
        users: &Collection<U>,
        kind: &str,
        value: &str,
    ) -> Result<Option<U>, PatternError> {
        let Some(id) = self.user_of(kind, value)? else {
            return Ok(None);
        };
        let id = bson::serialize_to_bson(&id).map_err(|e| PatternError::Refused {
            pattern: PATTERN,
            name: self.identities.name().to_owned(),
            reason: format!("a user id does not serialize: {e}"),
        })?;
        Ok(users.get(id)?)
    }

    /// A user's identities, as `(kind, value)`.
    pub fn of_user(&self, user: &Id) -> Result<Vec<(String, String)>, PatternError> {
        let f = IdentityDoc::<Id>::fields();
        let mut out: Vec<(String, String)> = self
            .identities
            .find(f.user.eq(user))
            .to_vec()?
            .into_iter()
            .flat_map(|identity| identity.identifier)
            .collect();
        out.sort();
        Ok(out)
    }
}
