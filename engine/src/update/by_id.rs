//! Updates of one document named by its `_id`, under conditions parsed once.
//!
//! A hot loop often updates documents it knows by `_id`, each under the same conditions: an
//! optimistic write's version check, a bucket's room (`{closed: false, count: {$lt: 50}}`, S1c).
//! Written as a filter, each call builds `{_id: .., ..conditions}` and the engine parses it and
//! plans it again, which for a bucket push costs about as much as reading the bucket. Here the
//! conditions are parsed once ([`IdConditions`]), and each call reads the document by its key
//! and judges it by them.
//!
//! Rule: [`WriteTxn::update_one_by_id_parsed`] does what [`WriteTxn::update_one_parsed`] does
//! with the filter [`IdConditions::filter`] makes (`{_id: id}` followed by the conditions): the
//! same document updated, the same result, the same index uses counted. The key read stands
//! for the `_id` condition only where the planner would read that key too and no option
//! changes the reading (an `_id` of a plain scalar type, no upsert, hint, sort, collation or
//! `let`); any other call runs as that filter. A property test
//! (`plan_vs_scan::updates_by_id_under_conditions_equal_the_filter_they_make`) holds the two to
//! the same replies and contents.

use bson::{Bson, Document, RawBson};

use super::parse::{Update, error};
use super::write::{UpdateOptions, UpdateResult};
use crate::db::WriteTxn;
use crate::error::Result;
use crate::query::{Query, QueryOptions};

/// Conditions parsed once, for updates of one document by `_id` (see the module
/// documentation). They may not hold a top-level `_id` condition: the `_id` is given with each
/// call. They are parsed without `let` variables, so an `$expr` in them cannot name one (a
/// call's [`UpdateOptions::let_vars`] serve the rest of the update, and make the call run as
/// the filter).
#[derive(Debug, Clone)]
pub struct IdConditions {
    /// As given: the fallback filter and the MongoDB back end's filter are made from it.
    conditions: Document,
    /// As the matcher judges them.
    query: Query,
}

impl IdConditions {
    /// Parses `conditions` (a filter without a top-level `_id`); a malformed filter is refused
    /// here, as a filter is refused before anything runs.
    pub fn parse(conditions: &Document) -> Result<IdConditions> {
        if conditions.contains_key("_id") {
            return Err(error(
                "_id",
                "conditions",
                "the `_id` is given with each update, not among the conditions",
            )
            .into());
        }
        let query = Query::parse(
            conditions,
            QueryOptions {
                limit: Some(1),
                ..QueryOptions::default()
            },
        )?;
        Ok(IdConditions {
            conditions: conditions.clone(),
            query,
        })
    }

    /// The conditions as given.
    pub fn conditions(&self) -> &Document {
        &self.conditions
    }

    /// The filter an update of the document `id` under these conditions stands for:
    /// `{_id: id}` followed by the conditions.
    pub fn filter(&self, id: &Bson) -> Document {
        let mut filter = Document::new();
        filter.insert("_id", id.clone());
        filter.extend(self.conditions.clone());
        filter
    }
}

/// The `_id` as a key to read, when reading that key is what the filter `{_id: id}` does: a
/// scalar of a type the filter compares by value. A document would be read as operators, an
/// array or a regex matches otherwise, and null also matches a missing `_id`.
fn key_value(id: &Bson) -> Option<RawBson> {
    match id {
        Bson::ObjectId(_)
        | Bson::String(_)
        | Bson::Int32(_)
        | Bson::Int64(_)
        | Bson::Double(_)
        | Bson::Decimal128(_)
        | Bson::DateTime(_)
        | Bson::Boolean(_)
        | Bson::Timestamp(_)
        | Bson::Binary(_) => RawBson::try_from(id.clone()).ok(),
        _ => None,
    }
}

impl WriteTxn<'_> {
    /// Applies `update` (parsed once, as for [`WriteTxn::update_one_parsed`]) to the document
    /// whose `_id` is `id`, if it meets `conditions`: the same as
    /// [`WriteTxn::update_one_parsed`] with the filter `conditions.filter(id)`, without
    /// building or parsing that filter (see the module documentation).
    pub fn update_one_by_id_parsed(
        &mut self,
        collection: &str,
        id: &Bson,
        conditions: &IdConditions,
        update: &Update,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        // A collection's default collation may equate `_id`s whose keys differ.
        let collated = self
            .collection_meta(collection, false)?
            .is_some_and(|meta| meta.options.collation.is_some());
        let plain = !options.upsert
            && options.hint.is_none()
            && options.sort.is_none()
            && options.let_vars.is_none()
            && options.collation.is_none()
            && !collated;
        let key = key_value(id).filter(|_| plain);
        let Some(key) = key else {
            return self.update_one_parsed(collection, &conditions.filter(id), update, options);
        };
        self.update_parsed_by_key(collection, key, &conditions.query, update, options)
    }
}
