//! `Writer`: where a typed transaction's operations go, the engine's write transaction or a
//! MongoDB session. Each operation takes and returns the engine's documents and result types,
//! so [`crate::TxnCollection`] is written once for both back ends.

use std::borrow::Cow;

use bson::{Bson, Document, RawDocumentBuf};
use odm_engine::query::FindOptions;
use odm_engine::sampling::SampledCommand;
use odm_engine::update::{
    BulkResult, BulkWrite, FindAndModify, Modify, UpdateModifications, UpdateOptions, UpdateResult,
};
use odm_engine::update::{DeleteOptions, WriteOp};
use odm_engine::{IndexSpec, WriteTxn};

use crate::error::Result;
use odm_engine::commands;

/// The back end of one typed transaction.
pub(crate) enum Writer<'t, 'db> {
    Embedded(&'t mut WriteTxn<'db>),
    /// A MongoDB deployment, in a driver transaction's session, or each command on its own.
    #[cfg(feature = "mongodb")]
    Remote {
        remote: &'t crate::remote::Remote,
        session: Option<&'t mut mongodb::ClientSession>,
    },
}

impl<'db> Writer<'_, 'db> {
    /// The same back end, borrowed for a shorter time.
    pub(crate) fn reborrow(&mut self) -> Writer<'_, 'db> {
        match self {
            Writer::Embedded(txn) => Writer::Embedded(txn),
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => Writer::Remote {
                remote,
                session: session.as_deref_mut(),
            },
        }
    }

    /// The engine transaction, on the embedded back end.
    pub(crate) fn engine(&mut self) -> Option<&mut WriteTxn<'db>> {
        match self {
            Writer::Embedded(txn) => Some(txn),
            #[cfg(feature = "mongodb")]
            Writer::Remote { .. } => None,
        }
    }

    /// Inserts in order; the first refused document fails the call.
    pub(crate) fn insert(
        &mut self,
        collection: &str,
        documents: Vec<RawDocumentBuf>,
    ) -> Result<Vec<Bson>> {
        match self {
            Writer::Embedded(txn) => {
                if let [_] = documents.as_slice() {
                    let document = documents.into_iter().next().unwrap_or_default();
                    return Ok(vec![txn.insert_one(collection, document)?]);
                }
                let mut result = txn.insert_many(collection, documents, true)?;
                if !result.failures.is_empty() {
                    return Err(result.failures.swap_remove(0).1.into());
                }
                Ok(result.inserted.into_iter().map(|(_, id)| id).collect())
            }
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => {
                remote.wait(remote.insert(session.as_deref_mut(), collection, documents))
            }
        }
    }

    pub(crate) fn get(&mut self, collection: &str, id: &Bson) -> Result<Option<RawDocumentBuf>> {
        match self {
            Writer::Embedded(txn) => {
                crate::database::sample_get(txn.database(), collection, id);
                Ok(txn.get(collection, id)?)
            }
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => {
                remote.wait(remote.get(session.as_deref_mut(), collection, id))
            }
        }
    }

    pub(crate) fn find(
        &mut self,
        collection: &str,
        filter: &Document,
        options: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        match self {
            Writer::Embedded(txn) => {
                crate::database::sample_read(
                    txn.database(),
                    collection,
                    SampledCommand::Find,
                    filter,
                    options.collation.as_ref(),
                    options.let_vars.as_ref(),
                );
                Ok(txn.find_with(collection, filter, options)?)
            }
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => {
                remote.wait(remote.find(session.as_deref_mut(), collection, filter, options))
            }
        }
    }

    /// Updates the first match, or every match with `multi`.
    pub(crate) fn update(
        &mut self,
        collection: &str,
        filter: &Document,
        update: UpdateModifications,
        options: &UpdateOptions,
        multi: bool,
    ) -> Result<UpdateResult> {
        if let Some(txn) = self.engine() {
            sample_update(
                txn,
                collection,
                filter,
                || commands::modifications(&update),
                options,
                multi,
            );
        }
        match self {
            Writer::Embedded(txn) if multi => {
                Ok(txn.update_many(collection, filter, update, options)?)
            }
            Writer::Embedded(txn) => Ok(txn.update_one(collection, filter, update, options)?),
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => remote.wait(remote.update(
                session.as_deref_mut(),
                collection,
                filter,
                commands::modifications(&update),
                options,
                multi,
            )),
        }
    }

    /// [`Writer::update`] with an update parsed once (see [`crate::PreparedUpdate`]).
    pub(crate) fn update_prepared<R>(
        &mut self,
        collection: &str,
        filter: &Document,
        update: &crate::PreparedUpdate<R>,
        options: &UpdateOptions,
        multi: bool,
    ) -> Result<UpdateResult> {
        let (modifications, parsed) = update.parts();
        odm_engine::update::parsed_alone(options)?;
        if let Some(txn) = self.engine() {
            sample_update(
                txn,
                collection,
                filter,
                || commands::modifications(modifications),
                options,
                multi,
            );
        }
        match self {
            Writer::Embedded(txn) if multi => {
                Ok(txn.update_many_parsed(collection, filter, parsed, options)?)
            }
            Writer::Embedded(txn) => {
                Ok(txn.update_one_parsed(collection, filter, parsed, options)?)
            }
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => remote.wait(remote.update(
                session.as_deref_mut(),
                collection,
                filter,
                commands::modifications(modifications),
                options,
                multi,
            )),
        }
    }

    /// [`Writer::update_prepared`] of one document by id, under conditions parsed once (see
    /// [`crate::PreparedConditions`]).
    pub(crate) fn update_by_id_prepared<R>(
        &mut self,
        collection: &str,
        id: &Bson,
        conditions: &crate::PreparedConditions<R>,
        update: &crate::PreparedUpdate<R>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        let (modifications, parsed) = update.parts();
        odm_engine::update::parsed_alone(options)?;
        let conditions = conditions.parsed();
        match self {
            Writer::Embedded(txn) => {
                sample_update_of(
                    txn,
                    collection,
                    || Cow::Owned(conditions.filter(id)),
                    || commands::modifications(modifications),
                    options,
                    false,
                );
                Ok(txn.update_one_by_id_parsed(collection, id, conditions, parsed, options)?)
            }
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => remote.wait(remote.update(
                session.as_deref_mut(),
                collection,
                &conditions.filter(id),
                commands::modifications(modifications),
                options,
                false,
            )),
        }
    }

    pub(crate) fn replace_one(
        &mut self,
        collection: &str,
        filter: &Document,
        replacement: &Document,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        match self {
            Writer::Embedded(txn) => {
                sample_replace(txn, collection, filter, replacement, options);
                Ok(txn.replace_one(collection, filter, replacement, options)?)
            }
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => remote.wait(remote.update(
                session.as_deref_mut(),
                collection,
                filter,
                Bson::Document(replacement.clone()),
                options,
                false,
            )),
        }
    }

    /// Deletes the first match, or every match with `multi`.
    pub(crate) fn delete(
        &mut self,
        collection: &str,
        filter: &Document,
        multi: bool,
    ) -> Result<u64> {
        if let Some(txn) = self.engine() {
            sample_delete(txn, collection, filter, &DeleteOptions::default(), multi);
        }
        match self {
            Writer::Embedded(txn) if multi => Ok(txn.delete_many(collection, filter)?),
            Writer::Embedded(txn) => Ok(txn.delete_one(collection, filter)?),
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => remote.wait(remote.delete(
                session.as_deref_mut(),
                collection,
                filter,
                &odm_engine::update::DeleteOptions::default(),
                multi,
            )),
        }
    }

    /// Updates, replaces or deletes the first match and returns it, before or after.
    pub(crate) fn find_and_modify(
        &mut self,
        collection: &str,
        filter: &Document,
        modify: Modify,
        options: &FindAndModify,
    ) -> Result<Option<Document>> {
        if let Some(txn) = self.engine() {
            txn.database()
                .sample_query(collection, SampledCommand::FindAndModify, |id| {
                    commands::sampled_find_and_modify(
                        commands::find_and_modify(collection, filter, &modify, options),
                        id,
                    )
                });
        }
        match self {
            Writer::Embedded(txn) => Ok(match modify {
                Modify::Update(update) => {
                    txn.find_one_and_update(collection, filter, update, options)?
                }
                Modify::Replace(replacement) => {
                    txn.find_one_and_replace(collection, filter, &replacement, options)?
                }
                Modify::Delete => txn.find_one_and_delete(collection, filter, options)?,
            }),
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => remote.wait(remote.find_and_modify(
                session.as_deref_mut(),
                collection,
                filter,
                &modify,
                options,
            )),
        }
    }

    /// Creates an index, or keeps it when it exists with the same definition.
    pub(crate) fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<String> {
        match self {
            Writer::Embedded(txn) => Ok(txn.create_index(collection, spec)?),
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => {
                let name = spec.name().to_owned();
                remote.wait(remote.create_indexes(
                    session.as_deref_mut(),
                    collection,
                    std::slice::from_ref(&spec),
                ))?;
                Ok(name)
            }
        }
    }

    pub(crate) fn bulk_write(&mut self, collection: &str, bulk: BulkWrite) -> Result<BulkResult> {
        match self {
            Writer::Embedded(txn) => {
                // Each update and delete is sampled as the statement MongoDB receives.
                for op in &bulk.ops {
                    match op {
                        WriteOp::InsertOne(_) => {}
                        WriteOp::UpdateOne {
                            filter,
                            update,
                            options,
                        }
                        | WriteOp::UpdateMany {
                            filter,
                            update,
                            options,
                        } => sample_update(
                            txn,
                            collection,
                            filter,
                            || commands::modifications(update),
                            options,
                            matches!(op, WriteOp::UpdateMany { .. }),
                        ),
                        WriteOp::ReplaceOne {
                            filter,
                            replacement,
                            options,
                        } => sample_replace(txn, collection, filter, replacement, options),
                        WriteOp::DeleteOne { filter, options }
                        | WriteOp::DeleteMany { filter, options } => sample_delete(
                            txn,
                            collection,
                            filter,
                            options,
                            matches!(op, WriteOp::DeleteMany { .. }),
                        ),
                    }
                }
                Ok(txn.bulk_write(collection, bulk)?)
            }
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => {
                remote.wait(remote.bulk_write(session.as_deref_mut(), collection, bulk))
            }
        }
    }

    /// Replaces the document stored under `id` (a schema migration's rewrite).
    pub(crate) fn replace_by_id(
        &mut self,
        collection: &str,
        id: &Bson,
        document: RawDocumentBuf,
    ) -> Result<()> {
        match self {
            Writer::Embedded(txn) => Ok(txn.replace_by_id(collection, id, document).map(drop)?),
            #[cfg(feature = "mongodb")]
            Writer::Remote { remote, session } => {
                let replacement = Document::try_from(document.as_ref())
                    .map_err(|e| crate::Error::serialize(collection, e))?;
                remote.wait(remote.update(
                    session.as_deref_mut(),
                    collection,
                    &bson::doc! { "_id": id.clone() },
                    Bson::Document(replacement),
                    &UpdateOptions::default(),
                    false,
                ))?;
                Ok(())
            }
        }
    }
}

/// Offers an update statement the typed layer runs on the engine to the collection's query
/// analyzer (see [`odm_engine::sampling`]): the `update` command MongoDB would receive for it.
fn sample_update(
    txn: &WriteTxn<'_>,
    collection: &str,
    filter: &Document,
    update: impl FnOnce() -> Bson,
    options: &UpdateOptions,
    multi: bool,
) {
    sample_update_of(
        txn,
        collection,
        || Cow::Borrowed(filter),
        update,
        options,
        multi,
    );
}

/// [`sample_update`] of a filter written out only when the statement is sampled.
fn sample_update_of<'f>(
    txn: &WriteTxn<'_>,
    collection: &str,
    filter: impl FnOnce() -> Cow<'f, Document>,
    update: impl FnOnce() -> Bson,
    options: &UpdateOptions,
    multi: bool,
) {
    // The update is copied only when the statement is sampled, not on every write.
    txn.database()
        .sample_query(collection, SampledCommand::Update, |id| {
            let mut statement = commands::update_statement(&filter(), update(), options, multi);
            statement.insert("sampleId", id);
            commands::update(collection, statement, options.let_vars.as_ref())
        });
}

/// The same for a replacement: an update statement whose `u` is the new document.
fn sample_replace(
    txn: &WriteTxn<'_>,
    collection: &str,
    filter: &Document,
    replacement: &Document,
    options: &UpdateOptions,
) {
    let update = || Bson::Document(replacement.clone());
    sample_update(txn, collection, filter, update, options, false);
}

/// The same for a delete statement.
fn sample_delete(
    txn: &WriteTxn<'_>,
    collection: &str,
    filter: &Document,
    options: &DeleteOptions,
    multi: bool,
) {
    txn.database()
        .sample_query(collection, SampledCommand::Delete, |id| {
            let mut statement = commands::delete_statement(filter, options, multi);
            statement.insert("sampleId", id);
            commands::delete(collection, statement, options.let_vars.as_ref())
        });
}
