//! Lifecycle hooks: code a model runs around the writes of a known document.
//!
//! A model declares `#[odm(hooks)]` and implements [`Hooks`]; the derive then hands each
//! write of a value to the hooks (forgetting the impl is a compile error). Before-hooks may
//! refuse the write, which is then [`Error::Refused`] and writes nothing; validation that
//! needs the whole value belongs there (a field's own rule is a schema `check` function, run
//! right after the before-hooks, see [`crate::Schema::check`]). After-hooks run once the write
//! succeeded in its transaction.
//!
//! What the hooks see, and what they cannot: only writes that carry a value of the model.
//!
//! | write | hooks |
//! |---|---|
//! | `insert_one`, `insert_many`, `WriteModel::InsertOne` | `before_insert`, `after_insert` |
//! | `replace_one`, `find_one_and_replace`, `WriteModel::ReplaceOne` | `before_replace`, `after_replace` |
//! | `save` | `before_save` (which may change the value), `after_save` |
//! | `delete_document` | `before_delete`, `after_delete` |
//!
//! Operator and pipeline updates (`update_one`, `update_many`, `update_document`,
//! `find_one_and_update`, bulk updates) and deletes by filter (`delete_one`, `delete_many`,
//! `find_one_and_delete`) never hold the documents they change in the program, so no hook
//! runs for them, as Mongoose's document middleware does not run for its query middleware;
//! nor for writes by other programs, over the wire or by the raw engine. Inside
//! [`Database::write`](crate::Database::write) an after-hook runs when its write succeeded,
//! before the transaction commits: a transaction that then aborts does not call it back.

use bson::Bson;

use crate::error::{Error, Result};
use crate::model::Document;

/// Code run around the writes of a model's values; every method does nothing unless
/// implemented. A before-hook's `Err` refuses the write with its reason.
///
/// ```
/// use odm::{Database, Document, Error, Hooks};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "users", hooks)]
/// struct User {
///     #[odm(id)]
///     id: i64,
///     email: String,
/// }
///
/// impl Hooks for User {
///     fn before_insert(&self) -> Result<(), String> {
///         self.email.contains('@').then_some(()).ok_or_else(|| format!("`{}` is not an email address", self.email))
///     }
///     fn before_save(&mut self) -> Result<(), String> {
///         self.email = self.email.trim().to_lowercase();
///         self.before_insert()
///     }
/// }
///
/// let db = Database::in_memory()?;
/// let users = db.collection::<User>()?;
/// let refused = users.insert_one(&User { id: 1, email: "nobody".into() }).unwrap_err();
/// assert!(matches!(&refused, Error::Refused { hook: "before_insert", .. }), "{refused}");
/// let mut ann = User { id: 1, email: " Ann@Example.org ".into() };
/// users.save(&mut ann)?;
/// assert_eq!(users.get(1)?.unwrap().email, "ann@example.org");
/// # Ok::<(), odm::Error>(())
/// ```
pub trait Hooks {
    fn before_insert(&self) -> Result<(), String> {
        Ok(())
    }
    /// After the insert; `id` is the stored `_id`.
    fn after_insert(&self, id: &Bson) {
        let _ = id;
    }
    fn before_replace(&self) -> Result<(), String> {
        Ok(())
    }
    fn after_replace(&self) {}
    /// Before a save, with the value to change (normalize, fill in) before it is stored.
    fn before_save(&mut self) -> Result<(), String> {
        Ok(())
    }
    fn after_save(&self) {}
    fn before_delete(&self) -> Result<(), String> {
        Ok(())
    }
    /// After `delete_document` removed the document (not when it found none).
    fn after_delete(&self) {}
}

/// The write a hook runs around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    Insert,
    Replace,
    Delete,
}

/// Runs the before-hook of `write` on `value`, if its model has hooks.
pub(crate) fn before<T: Document>(value: &T, write: Write, collection: &str) -> Result<()> {
    if let Some(hooks) = value.hooks() {
        let (hook, outcome) = match write {
            Write::Insert => ("before_insert", hooks.before_insert()),
            Write::Replace => ("before_replace", hooks.before_replace()),
            Write::Delete => ("before_delete", hooks.before_delete()),
        };
        outcome.map_err(|reason| refused(collection, hook, reason))?;
    }
    match write {
        Write::Insert | Write::Replace => checked(value, collection),
        Write::Delete => Ok(()),
    }
}

/// The value's field checks, run after its before-hooks (which may still change it).
fn checked<T: Document>(value: &T, collection: &str) -> Result<()> {
    value.check_fields().map_err(|problem| Error::CheckFailed {
        collection: collection.to_owned(),
        problem,
    })
}

/// Runs the after-hook of `write` on `value`, if its model has hooks; `id` for inserts.
pub(crate) fn after<T: Document>(value: &T, write: Write, id: &Bson) {
    if let Some(hooks) = value.hooks() {
        match write {
            Write::Insert => hooks.after_insert(id),
            Write::Replace => hooks.after_replace(),
            Write::Delete => hooks.after_delete(),
        }
    }
}

/// Runs `before_save` on `value`, if its model has hooks.
pub(crate) fn before_save<T: Document>(value: &mut T, collection: &str) -> Result<()> {
    if let Some(hooks) = value.hooks_mut() {
        hooks
            .before_save()
            .map_err(|reason| refused(collection, "before_save", reason))?;
    }
    checked(value, collection)
}

/// Runs `after_save` on `value`, if its model has hooks.
pub(crate) fn after_save<T: Document>(value: &T) {
    if let Some(hooks) = value.hooks() {
        hooks.after_save();
    }
}

fn refused(collection: &str, hook: &'static str, reason: String) -> Error {
    Error::Refused {
        collection: collection.to_owned(),
        hook,
        reason,
    }
}
