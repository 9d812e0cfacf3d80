//! Fields the ODM keeps on every write: `#[odm(created_at)]` and `#[odm(updated_at)]`
//! timestamps, and the `#[odm(version)]` revision that makes saves conditional.
//!
//! Rules, the same on both back ends (each write below is one command MongoDB would receive):
//! - an insert stores the time of the call in both timestamps, and the revision as the value
//!   holds it;
//! - an operator update adds `$currentDate` of `updated_at` and `$inc` of the revision by 1,
//!   and an upsert `$setOnInsert` of `created_at`, unless the update writes that field itself;
//! - a pipeline update ends with a `$set` stage doing the same with `$$NOW`;
//! - a replacement becomes a pipeline that replaces the document but keeps its stored
//!   `created_at` (or sets it, when it upserts), sets `updated_at` and increments the revision;
//! - `save`, `update_document` and `delete_document` of a model with a revision are
//!   conditional on the revision the value holds, and fail with [`Error::VersionConflict`]
//!   when another writer changed (or removed) the document since.
//!
//! A model keeping none of these fields takes none of these paths: its writes are unchanged.

use bson::{Bson, DateTime, Document, RawDocumentBuf, doc};
use odm_engine::update::UpdateModifications;

use crate::error::{Error, Result};
use crate::model::Document as Model;

/// A timestamp field's type: a BSON date, or an optional one.
pub trait Timestamp: private::Sealed {
    /// The value holding `date`.
    fn from_date(date: DateTime) -> Self;
}

impl Timestamp for DateTime {
    fn from_date(date: DateTime) -> Self {
        date
    }
}

impl Timestamp for Option<DateTime> {
    fn from_date(date: DateTime) -> Self {
        Some(date)
    }
}

/// A revision field's type: an integer BSON stores exactly.
///
/// ```
/// use odm::{Database, Document, Error};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Clone, Serialize, Deserialize, Document)]
/// #[odm(collection = "accounts")]
/// struct Account {
///     #[odm(id)]
///     id: i64,
///     balance: i64,
///     #[odm(created_at)]
///     opened: bson::DateTime,
///     #[odm(updated_at)]
///     changed: Option<bson::DateTime>,
///     #[odm(version)]
///     revision: u32,
/// }
///
/// let db = Database::in_memory()?;
/// let accounts = db.collection::<Account>()?;
/// let mut account = Account { id: 1, balance: 0, opened: bson::DateTime::MIN, changed: None, revision: 0 };
/// accounts.save(&mut account)?; // inserted at revision 1, both dates stamped
/// assert_eq!(account.revision, 1);
/// assert!(account.opened > bson::DateTime::MIN && account.changed == Some(account.opened));
///
/// // Two writers read revision 1; the first save wins, the second is refused.
/// let (mut first, mut second) = (account.clone(), account.clone());
/// first.balance += 10;
/// accounts.save(&mut first)?;
/// second.balance -= 10;
/// assert!(matches!(accounts.save(&mut second), Err(Error::VersionConflict { revision: 1, .. })));
/// let stored = accounts.get(1)?.expect("stored");
/// assert_eq!((stored.balance, stored.revision), (10, 2));
/// # Ok::<(), odm::Error>(())
/// ```
pub trait Revision: private::Sealed {
    /// The revision the value holds.
    fn revision(&self) -> i64;
    /// The value of revision `n` (saturating at the type's bounds).
    fn from_revision(n: i64) -> Self;
}

impl Revision for i32 {
    fn revision(&self) -> i64 {
        i64::from(*self)
    }
    fn from_revision(n: i64) -> Self {
        i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX })
    }
}

impl Revision for i64 {
    fn revision(&self) -> i64 {
        *self
    }
    fn from_revision(n: i64) -> Self {
        n
    }
}

impl Revision for u32 {
    fn revision(&self) -> i64 {
        i64::from(*self)
    }
    fn from_revision(n: i64) -> Self {
        u32::try_from(n).unwrap_or(if n < 0 { 0 } else { u32::MAX })
    }
}

mod private {
    pub trait Sealed {}
    impl Sealed for bson::DateTime {}
    impl Sealed for Option<bson::DateTime> {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
    impl Sealed for u32 {}
}

/// What a write stored in the kept fields, to bring the value in hand up to date
/// (`Document::keep`); `None` leaves a field as it is.
#[doc(hidden)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Kept {
    pub created_at: Option<DateTime>,
    pub updated_at: Option<DateTime>,
    pub revision: Option<i64>,
}

/// Whether the model keeps any field.
pub(crate) fn keeps<T: Model>() -> bool {
    T::CREATED_AT.is_some() || T::UPDATED_AT.is_some() || T::REVISION.is_some()
}

/// The time a write stamps, to the millisecond BSON dates hold.
pub(crate) fn now() -> DateTime {
    DateTime::now()
}

/// The stored form of an inserted model: both timestamps at `now`, and the revision
/// `revision` when given (else as the value holds it).
pub(crate) fn inserted<T: Model>(
    raw: RawDocumentBuf,
    now: DateTime,
    revision: Option<i64>,
    collection: &str,
) -> Result<RawDocumentBuf> {
    if !keeps::<T>() {
        return Ok(raw);
    }
    let mut stamped =
        Document::try_from(raw.as_ref()).map_err(|e| Error::serialize(collection, e))?;
    for path in [T::CREATED_AT, T::UPDATED_AT].into_iter().flatten() {
        stamped.insert(path, now);
    }
    if let (Some(path), Some(n)) = (T::REVISION, revision) {
        stamped.insert(path, n);
    }
    RawDocumentBuf::try_from(&stamped).map_err(|e| Error::serialize(collection, e))
}

/// An update of the model with the kept fields' changes added (see the module's rules).
pub(crate) fn updated<T: Model>(
    update: UpdateModifications,
    upsert: bool,
    now: DateTime,
) -> UpdateModifications {
    if !keeps::<T>() {
        return update;
    }
    match update {
        UpdateModifications::Document(operators) => {
            UpdateModifications::Document(operators_kept::<T>(operators, upsert, now))
        }
        UpdateModifications::Pipeline(mut stages) => {
            stages.push(doc! { "$set": pipeline_kept::<T>(Bson::from("$$NOW")) });
            UpdateModifications::Pipeline(stages)
        }
    }
}

/// `$currentDate`, `$inc` and, for an upsert, `$setOnInsert` of the kept fields the operators
/// do not write themselves.
fn operators_kept<T: Model>(mut operators: Document, upsert: bool, now: DateTime) -> Document {
    let mut add = |operator: &str, path: &str, value: Bson| {
        if writes(&operators, path) {
            return;
        }
        match operators.get_mut(operator) {
            Some(Bson::Document(fields)) => {
                fields.insert(path, value);
            }
            _ => {
                operators.insert(operator, doc! { path: value });
            }
        }
    };
    if let Some(path) = T::UPDATED_AT {
        add("$currentDate", path, Bson::Boolean(true));
    }
    if let Some(path) = T::REVISION {
        add("$inc", path, Bson::Int64(1));
    }
    if let (Some(path), true) = (T::CREATED_AT, upsert) {
        add("$setOnInsert", path, Bson::DateTime(now));
    }
    operators
}

/// Whether any operator writes `path`, a part of it or a field inside it.
fn writes(operators: &Document, path: &str) -> bool {
    operators
        .values()
        .filter_map(Bson::as_document)
        .any(|fields| {
            fields.keys().any(|written| {
                written == path
                    || written
                        .strip_prefix(path)
                        .is_some_and(|rest| rest.starts_with('.'))
                    || path
                        .strip_prefix(written.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            })
        })
}

/// The kept fields as expressions over the document being updated: `created_at` kept (or
/// `now`, for a new document), `updated_at` `now`, the revision one more. `now` is `$$NOW`, or
/// the date of the call when the caller brings its value up to date with it.
fn pipeline_kept<T: Model>(now: Bson) -> Document {
    let mut fields = Document::new();
    if let Some(path) = T::CREATED_AT {
        fields.insert(path, doc! { "$ifNull": [format!("${path}"), now.clone()] });
    }
    if let Some(path) = T::UPDATED_AT {
        fields.insert(path, now);
    }
    if let Some(path) = T::REVISION {
        fields.insert(
            path,
            doc! { "$add": [{ "$ifNull": [format!("${path}"), 0_i64] }, 1_i64] },
        );
    }
    fields
}

/// A replacement of a model that keeps fields, as the pipeline update that replaces the
/// document and keeps them, stamped `now` (see the module's rules); `None` for a model keeping
/// none.
pub(crate) fn replacing<T: Model>(
    replacement: &Document,
    now: DateTime,
) -> Option<UpdateModifications> {
    if !keeps::<T>() {
        return None;
    }
    let merged = doc! {
        "$mergeObjects": [
            { "$literal": replacement.clone() },
            pipeline_kept::<T>(Bson::DateTime(now)),
        ],
    };
    Some(UpdateModifications::Pipeline(vec![
        doc! { "$replaceWith": merged },
    ]))
}

/// Whether a prepared update must be stamped again at the call: an upsert of operators on a
/// model with `created_at`, whose `$setOnInsert` holds the time of the call.
pub(crate) fn stamped_per_call<T: Model>(update: &UpdateModifications, upsert: bool) -> bool {
    upsert && T::CREATED_AT.is_some() && matches!(update, UpdateModifications::Document(_))
}

/// Whether `error` is the duplicate `_id` of an insert.
pub(crate) fn duplicate_id(error: &Error) -> bool {
    matches!(error, Error::Engine(odm_engine::Error::DuplicateKey { index, .. }) if index == "_id_")
}

/// The error of a conditional write of the document `filter` finds, read at `revision`.
pub(crate) fn conflict(collection: &str, filter: &Document, revision: i64) -> Error {
    Error::VersionConflict {
        collection: collection.to_owned(),
        id: filter
            .get("_id")
            .map_or_else(String::new, ToString::to_string),
        revision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_already_writing_a_path_or_a_part_of_it_is_left_alone() {
        let operators = doc! { "$set": { "a.b": 1 }, "$inc": { "n": 1 } };
        assert!(writes(&operators, "a"));
        assert!(writes(&operators, "a.b"));
        assert!(writes(&operators, "a.b.c"));
        assert!(writes(&operators, "n"));
        assert!(!writes(&operators, "ab"));
        assert!(!writes(&operators, "a.bc"));
    }

    #[test]
    fn revisions_saturate_at_the_types_bounds() {
        assert_eq!(<u32 as Revision>::from_revision(-1), 0);
        assert_eq!(<u32 as Revision>::from_revision(i64::MAX), u32::MAX);
        assert_eq!(<i32 as Revision>::from_revision(i64::MIN), i32::MIN);
        assert_eq!(<i64 as Revision>::from_revision(7).revision(), 7);
    }
}
