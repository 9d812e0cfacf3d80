//! The MongoDB back end: a [`Database`](crate::Database) whose collections live on a MongoDB
//! deployment (a standalone server, a replica set, a `mongos`, or `odm serve`), reached
//! through the official driver's async client. Every operation is an `async fn`; the sync API
//! waits for it on the client's runtime ([`runtime`]), and the async API awaits it.
//!
//! Every operation is sent as the command document the engine's operation describes
//! ([`commands`]): the same filters, updates, sorts and pipelines run on both back ends.
//! Replies are read back into the engine's result types ([`UpdateResult`], [`BulkResult`],
//! [`Explain`]), and a server's refusal into the engine's error of the same condition
//! (a duplicate key is [`odm_engine::Error::DuplicateKey`] on both back ends; any other code
//! is [`odm_engine::Error::Reported`], with the server's code and message).
//!
//! Sessions: a typed write of one operation runs alone (MongoDB makes each one atomic);
//! [`Database::write`](crate::Database::write) and the writes the typed API promises whole
//! (`insert_many`, `update_many`) run in a driver transaction, which needs a replica set or a
//! `mongos`. A standalone server refuses them with [`crate::Error::TransactionsUnsupported`],
//! except the promised-whole writes, which then apply document by document, as MongoDB's own
//! do. A collection first synced inside a transaction gets its missing indexes inside it
//! (MongoDB allows that on a collection the transaction creates); `shardCollection` never runs
//! in one, so its shard key deploys after the commit.
//!
//! Called from async code, the sync API works (holding up the calling task's thread for the
//! round trip, as any blocking call does), except where [`runtime`] says it cannot.

mod runtime;

use odm_engine::commands;

use std::future::Future;

use bson::{Bson, Document, RawDocumentBuf, doc};
use mongodb::{Client, ClientSession};
use odm_engine::aggregate::{AggregateExplain, AggregateOptions};
use odm_engine::query::{Explain, FindOptions};
use odm_engine::update::{
    BulkResult, BulkWrite, DeleteOptions, FindAndModify, Modify, OpResult, UpdateOptions,
    UpdateResult, WriteOp,
};
use odm_engine::{IndexSpec, ShardKey};

use crate::error::{Error, Result};

pub(crate) use runtime::Runtime;

/// A connection to a MongoDB deployment and the database the URI names.
pub(crate) struct Remote {
    client: Client,
    database: mongodb::Database,
    /// Where the client's futures run, and the sync API waits for them.
    runtime: Runtime,
    /// The deployment runs transactions: a replica set member or a `mongos`.
    pub(crate) transactions: bool,
    /// The server is a `mongos`: declared shard keys deploy through `shardCollection`.
    pub(crate) mongos: bool,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("database", &self.database.name())
            .field("mongos", &self.mongos)
            .finish_non_exhaustive()
    }
}

/// The driver's failure as the typed layer's error: a server's refusal keeps its code.
pub(crate) fn driver_error(e: mongodb::error::Error) -> Error {
    use mongodb::error::ErrorKind;
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Error::Engine(reported(c.code, &c.code_name, &c.message, None)),
        _ => Error::Driver {
            reason: e.to_string(),
            transient: e.contains_label("TransientTransactionError"),
        },
    }
}

/// A server's refusal as the engine's error of the same condition.
fn reported(
    code: i32,
    code_name: &str,
    message: &str,
    detail: Option<(&str, &Document)>,
) -> odm_engine::Error {
    if code == odm_engine::ErrorCode::DUPLICATE_KEY.code {
        // MongoDB's message: "E11000 duplicate key error collection: db.c index: name_1 dup
        // key: { name: \"x\" }"; `keyPattern` and `keyValue` come beside it in a write error.
        let after = |marker: &str| message.split_once(marker).map(|(_, rest)| rest);
        let index = after(" index: ")
            .map(|rest| {
                rest.split(" dup key")
                    .next()
                    .unwrap_or(rest)
                    .trim()
                    .to_owned()
            })
            .unwrap_or_default();
        let key = after("dup key: ").unwrap_or_default().to_owned();
        let collection = after("collection: ")
            .and_then(|rest| rest.split_whitespace().next())
            .map(|ns| ns.split_once('.').map_or(ns, |(_, c)| c).to_owned())
            .or_else(|| detail.map(|(c, _)| c.to_owned()))
            .unwrap_or_default();
        let field = |name: &str| {
            detail
                .and_then(|(_, d)| d.get_document(name).ok())
                .cloned()
                .unwrap_or_default()
        };
        return odm_engine::Error::DuplicateKey {
            collection,
            index,
            key,
            key_pattern: Box::new(field("keyPattern")),
            key_value: Box::new(field("keyValue")),
        };
    }
    odm_engine::Error::Reported {
        code,
        code_name: code_name.to_owned(),
        message: message.to_owned(),
    }
}

/// The first write error of a write command's reply, if any, as an error.
fn write_failure(collection: &str, reply: &Document) -> Option<(usize, odm_engine::Error)> {
    if let Ok(errors) = reply.get_array("writeErrors")
        && let Some(first) = errors.iter().find_map(Bson::as_document)
    {
        let index = first
            .get("index")
            .and_then(odm_engine::expr::whole_number)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(0);
        return Some((index, write_error(collection, first)));
    }
    let concern = reply.get_document("writeConcernError").ok()?;
    Some((0, write_error(collection, concern)))
}

fn write_error(collection: &str, error: &Document) -> odm_engine::Error {
    let code = error
        .get("code")
        .and_then(odm_engine::expr::whole_number)
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(0);
    reported(
        code,
        error.get_str("codeName").unwrap_or_default(),
        error.get_str("errmsg").unwrap_or_default(),
        Some((collection, error)),
    )
}

/// A document as a driver sends it (`_id` first, generated when missing), with its `_id`.
fn with_id(collection: &str, document: RawDocumentBuf) -> Result<(Bson, Document)> {
    let invalid = |source| {
        Error::Engine(odm_engine::Error::InvalidDocument {
            collection: collection.to_owned(),
            source,
        })
    };
    let document = odm_engine::with_id_first(document).map_err(invalid)?;
    let document =
        Document::try_from(document.as_ref()).map_err(|e| Error::serialize(collection, e))?;
    let id = document.get("_id").cloned().unwrap_or(Bson::Null);
    Ok((id, document))
}

/// A value of a reply read from its raw bytes.
fn value_of(raw: &bson::RawDocument, name: &str) -> Option<Bson> {
    let value = raw.get(name).ok().flatten()?;
    Bson::try_from(value).ok()
}

/// The documents a streamed cursor reads per wait for the driver, inside a runtime (where a
/// wait may cost a thread); elsewhere it reads one, so a reader that stops early never waits
/// for a batch it will not read.
const READ_AHEAD: usize = 256;

/// Commits a session's transaction, again while the outcome is unknown (a commit is safe to
/// repeat; drivers retry it on MongoDB's `UnknownTransactionCommitResult`).
pub(crate) async fn commit(session: &mut ClientSession) -> Result<()> {
    let mut attempts = 0;
    loop {
        match session.commit_transaction().await {
            Ok(()) => return Ok(()),
            Err(e) if attempts < 3 && e.contains_label("UnknownTransactionCommitResult") => {
                attempts += 1;
            }
            Err(e) => return Err(driver_error(e)),
        }
    }
}

/// The most documents, and bytes of them, one `insert` command carries: MongoDB's
/// `maxWriteBatchSize`, and well under the 16 MiB a command document may hold.
const INSERT_BATCH_DOCUMENTS: usize = 100_000;
const INSERT_BATCH_BYTES: usize = 8 << 20;

/// Where a command runs: in a session (a transaction's), or on its own.
pub(crate) type Session<'s> = Option<&'s mut ClientSession>;

impl Remote {
    /// Connects to the deployment of `uri` and the database it names (`mongodb://host/appdb`),
    /// and asks the server what it is (`hello`), on the project's own runtime.
    pub(crate) fn connect(uri: &str) -> Result<Remote> {
        let runtime = Runtime::own()?;
        runtime.wait(Remote::connect_on(uri, runtime.clone()))
    }

    /// Connects as [`Remote::connect`] does, with a client of `runtime`, which must be the
    /// runtime this future runs on.
    pub(crate) async fn connect_on(uri: &str, runtime: Runtime) -> Result<Remote> {
        let client = Client::with_uri_str(uri).await.map_err(driver_error)?;
        let database = client.default_database().ok_or_else(|| Error::Driver {
            reason: format!(
                "the connection string names no database (as in mongodb://host/appdb): {}",
                redacted(uri)
            ),
            transient: false,
        })?;
        let hello = client
            .database("admin")
            .run_command(doc! { "hello": 1 })
            .await
            .map_err(driver_error)?;
        let mongos = hello.get_str("msg").is_ok_and(|m| m == "isdbgrid");
        let transactions = mongos || hello.contains_key("setName");
        Ok(Remote {
            client,
            database,
            runtime,
            transactions,
            mongos,
        })
    }

    /// Runs `work` on the client's runtime, blocking the calling thread until it ends: the
    /// sync API's way to the server (see [`runtime`]).
    pub(crate) fn wait<R: Send>(&self, work: impl Future<Output = Result<R>> + Send) -> Result<R> {
        self.runtime.wait(work)
    }

    /// A session for a transaction, started; a standalone server cannot run one.
    pub(crate) async fn start_transaction(&self) -> Result<ClientSession> {
        if !self.transactions {
            return Err(Error::TransactionsUnsupported);
        }
        let mut session = self.client.start_session().await.map_err(driver_error)?;
        session.start_transaction().await.map_err(driver_error)?;
        Ok(session)
    }

    /// Runs a command on the database; a reply with write errors is the first one's error.
    async fn command(
        &self,
        session: Session<'_>,
        collection: &str,
        command: Document,
    ) -> Result<Document> {
        let action = self.database.run_command(command);
        let reply = match session {
            Some(session) => action.session(session).await,
            None => action.await,
        }
        .map_err(driver_error)?;
        if let Some((_, e)) = write_failure(collection, &reply) {
            return Err(e.into());
        }
        Ok(reply)
    }

    /// Runs a command that answers with a cursor, and reads it to the end.
    async fn cursor(&self, session: Session<'_>, command: Document) -> Result<Vec<RawDocumentBuf>> {
        let action = self.database.run_cursor_command(command);
        let mut out = Vec::new();
        if let Some(session) = session {
            let mut cursor = action.session(&mut *session).await.map_err(driver_error)?;
            while cursor.advance(session).await.map_err(driver_error)? {
                out.push(cursor.current().to_owned());
            }
        } else {
            let mut cursor = action.await.map_err(driver_error)?;
            while cursor.advance().await.map_err(driver_error)? {
                out.push(cursor.current().to_owned());
            }
        }
        Ok(out)
    }

    /// Runs a command that answers with a cursor, as documents pulled one at a time
    /// ([`READ_AHEAD`] inside a runtime), waited for on the client's runtime.
    pub(crate) fn stream(
        &self,
        command: Document,
    ) -> Result<impl Iterator<Item = Result<RawDocumentBuf>> + Send + 'static> {
        let mut cursor = self.wait(async {
            let cursor = self.database.run_cursor_command(command).await;
            cursor.map_err(driver_error)
        })?;
        let runtime = self.runtime.clone();
        let mut ready = std::collections::VecDeque::new();
        // What follows the documents in hand: more to read (`None`), the end, or an error.
        let mut after: Option<Option<Error>> = None;
        Ok(std::iter::from_fn(move || {
            if ready.is_empty() && after.is_none() {
                let want = if Runtime::in_one() { READ_AHEAD } else { 1 };
                let read = runtime.wait(async {
                    let mut read = Vec::new();
                    while read.len() < want {
                        match cursor.advance().await {
                            Ok(true) => read.push(cursor.current().to_owned()),
                            Ok(false) => return Ok((read, Some(None))),
                            Err(e) => return Ok((read, Some(Some(driver_error(e))))),
                        }
                    }
                    Ok((read, None))
                });
                match read {
                    Ok((read, end)) => {
                        ready.extend(read);
                        after = end;
                    }
                    Err(e) => after = Some(Some(e)),
                }
            }
            match ready.pop_front() {
                Some(document) => Some(Ok(document)),
                None => after.as_mut().and_then(Option::take).map(Err),
            }
        }))
    }

    pub(crate) async fn get(
        &self,
        session: Session<'_>,
        collection: &str,
        id: &Bson,
    ) -> Result<Option<RawDocumentBuf>> {
        Ok(self
            .cursor(session, commands::get(collection, id))
            .await?
            .into_iter()
            .next())
    }

    pub(crate) async fn find(
        &self,
        session: Session<'_>,
        collection: &str,
        filter: &Document,
        options: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        self.cursor(session, commands::find(collection, filter, options))
            .await
    }

    pub(crate) async fn aggregate(
        &self,
        session: Session<'_>,
        collection: &str,
        pipeline: &[Document],
        options: &AggregateOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        self.cursor(session, commands::aggregate(collection, pipeline, options))
            .await
    }

    pub(crate) async fn count(&self, collection: &str, filter: &Document) -> Result<u64> {
        let groups = self
            .cursor(None, commands::count(collection, filter))
            .await?;
        Ok(groups
            .first()
            .and_then(|group| value_of(group, "n"))
            .and_then(|n| odm_engine::expr::whole_number(&n))
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0))
    }

    pub(crate) async fn distinct(
        &self,
        collection: &str,
        key: &str,
        filter: &Document,
    ) -> Result<Vec<Bson>> {
        let reply = self
            .command(
                None,
                collection,
                commands::distinct(collection, key, filter),
            )
            .await?;
        Ok(reply.get_array("values").cloned().unwrap_or_default())
    }

    /// The server's explain of a find, in the engine's typed form.
    pub(crate) async fn explain_find(
        &self,
        collection: &str,
        filter: &Document,
        options: &FindOptions,
        shard_key: Option<&ShardKey>,
    ) -> Result<Explain> {
        let reply = self
            .command(
                None,
                collection,
                commands::explain(commands::find(collection, filter, options)),
            )
            .await?;
        Ok(Explain::from_document(&reply, shard_key))
    }

    pub(crate) async fn explain_aggregate(
        &self,
        collection: &str,
        pipeline: &[Document],
        options: &AggregateOptions,
        shard_key: Option<&ShardKey>,
    ) -> Result<AggregateExplain> {
        let reply = self
            .command(
                None,
                collection,
                commands::explain(commands::aggregate(collection, pipeline, options)),
            )
            .await?;
        Ok(AggregateExplain::from_document(&reply, shard_key))
    }

    /// Inserts in order; the first refused document fails the call (those before it stay,
    /// unless a transaction undoes them).
    pub(crate) async fn insert(
        &self,
        mut session: Session<'_>,
        collection: &str,
        documents: Vec<RawDocumentBuf>,
    ) -> Result<Vec<Bson>> {
        let mut ids = Vec::with_capacity(documents.len());
        let mut batch = Vec::new();
        let mut bytes = 0;
        let count = documents.len();
        for (n, document) in documents.into_iter().enumerate() {
            bytes += document.as_bytes().len();
            let (id, document) = with_id(collection, document)?;
            ids.push(id);
            batch.push(Bson::Document(document));
            let last = n + 1 == count;
            if last || batch.len() >= INSERT_BATCH_DOCUMENTS || bytes >= INSERT_BATCH_BYTES {
                let sent = commands::insert(collection, std::mem::take(&mut batch), true);
                self.command(session.as_deref_mut(), collection, sent)
                    .await?;
                bytes = 0;
            }
        }
        Ok(ids)
    }

    pub(crate) async fn update(
        &self,
        session: Session<'_>,
        collection: &str,
        filter: &Document,
        update: Bson,
        options: &UpdateOptions,
        multi: bool,
    ) -> Result<UpdateResult> {
        let statement = commands::update_statement(filter, update, options, multi);
        let reply = self
            .command(
                session,
                collection,
                commands::update(collection, statement, options.let_vars.as_ref()),
            )
            .await?;
        let upserted_id = reply
            .get_array("upserted")
            .ok()
            .and_then(|u| u.first())
            .and_then(Bson::as_document)
            .and_then(|u| u.get("_id").cloned());
        let n = odm_engine::expr::count_in(&reply, "n");
        Ok(UpdateResult {
            matched: if upserted_id.is_some() {
                n.saturating_sub(1)
            } else {
                n
            },
            modified: odm_engine::expr::count_in(&reply, "nModified"),
            upserted_id,
        })
    }

    /// An update of a bulk write, as its outcome.
    async fn update_by(
        &self,
        session: Session<'_>,
        collection: &str,
        filter: &Document,
        update: &odm_engine::update::UpdateModifications,
        options: &UpdateOptions,
        multi: bool,
    ) -> Result<OpResult> {
        let update = commands::modifications(update);
        self.update(session, collection, filter, update, options, multi)
            .await
            .map(OpResult::Updated)
    }

    pub(crate) async fn delete(
        &self,
        session: Session<'_>,
        collection: &str,
        filter: &Document,
        options: &DeleteOptions,
        multi: bool,
    ) -> Result<u64> {
        let statement = commands::delete_statement(filter, options, multi);
        let reply = self
            .command(
                session,
                collection,
                commands::delete(collection, statement, options.let_vars.as_ref()),
            )
            .await?;
        Ok(odm_engine::expr::count_in(&reply, "n"))
    }

    pub(crate) async fn find_and_modify(
        &self,
        session: Session<'_>,
        collection: &str,
        filter: &Document,
        modify: &Modify,
        options: &FindAndModify,
    ) -> Result<Option<Document>> {
        let reply = self
            .command(
                session,
                collection,
                commands::find_and_modify(collection, filter, modify, options),
            )
            .await?;
        Ok(reply.get_document("value").ok().cloned())
    }

    /// Runs a bulk write operation by operation, each reported by its position: ordered
    /// stops at the first failure, unordered goes on past failures.
    pub(crate) async fn bulk_write(
        &self,
        mut session: Session<'_>,
        collection: &str,
        bulk: BulkWrite,
    ) -> Result<BulkResult> {
        let mut result = BulkResult::default();
        let in_transaction = session.is_some();
        for (position, op) in bulk.ops.into_iter().enumerate() {
            let session = session.as_deref_mut();
            let outcome = match op {
                WriteOp::InsertOne(document) => match RawDocumentBuf::try_from(&document) {
                    Ok(raw) => self
                        .insert(session, collection, vec![raw])
                        .await
                        .map(|mut ids| OpResult::Inserted(ids.pop().unwrap_or(Bson::Null))),
                    Err(e) => Err(Error::serialize(collection, e)),
                },
                WriteOp::UpdateOne {
                    filter,
                    update,
                    options,
                } => {
                    self.update_by(session, collection, &filter, &update, &options, false)
                        .await
                }
                WriteOp::UpdateMany {
                    filter,
                    update,
                    options,
                } => {
                    self.update_by(session, collection, &filter, &update, &options, true)
                        .await
                }
                WriteOp::ReplaceOne {
                    filter,
                    replacement,
                    options,
                } => self
                    .update(
                        session,
                        collection,
                        &filter,
                        Bson::Document(replacement),
                        &options,
                        false,
                    )
                    .await
                    .map(OpResult::Updated),
                WriteOp::DeleteOne { filter, options } => self
                    .delete(session, collection, &filter, &options, false)
                    .await
                    .map(OpResult::Deleted),
                WriteOp::DeleteMany { filter, options } => self
                    .delete(session, collection, &filter, &options, true)
                    .await
                    .map(OpResult::Deleted),
            };
            match outcome {
                Ok(done) => result.record(position, done),
                // In a transaction a failed write has ended it on the server: nothing after it
                // could run, so the failure ends the bulk write.
                Err(Error::Engine(e)) if e.is_per_document() && !in_transaction => {
                    result.failures.push((position, e));
                    if bulk.ordered {
                        break;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(result)
    }

    /// The collection's indexes as the server describes them; `None` when it does not exist.
    pub(crate) async fn list_indexes(&self, collection: &str) -> Result<Option<Vec<Document>>> {
        match self.cursor(None, commands::list_indexes(collection)).await {
            Ok(indexes) => indexes
                .iter()
                .map(|raw| {
                    Document::try_from(raw.as_ref()).map_err(|e| Error::Driver {
                        reason: format!("an index description that does not read: {e}"),
                        transient: false,
                    })
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Err(Error::Engine(e))
                if e.code() == odm_engine::ErrorCode::NAMESPACE_NOT_FOUND.code =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn create_collection(
        &self,
        session: Session<'_>,
        collection: &str,
    ) -> Result<()> {
        match self
            .command(session, collection, commands::create(collection))
            .await
        {
            Err(Error::Engine(e)) if e.code() == odm_engine::ErrorCode::NAMESPACE_EXISTS.code => {
                Ok(())
            }
            other => other.map(drop),
        }
    }

    pub(crate) async fn create_indexes(
        &self,
        session: Session<'_>,
        collection: &str,
        specs: &[IndexSpec],
    ) -> Result<()> {
        if specs.is_empty() {
            return Ok(());
        }
        self.command(
            session,
            collection,
            commands::create_indexes(collection, specs),
        )
        .await
        .map(drop)
    }

    /// The names of the database's collections.
    pub(crate) async fn collection_names(&self) -> Result<Vec<String>> {
        let listed = self
            .cursor(
                None,
                doc! { "listCollections": 1, "nameOnly": true, "cursor": {} },
            )
            .await?;
        let mut names: Vec<String> = listed
            .iter()
            .filter_map(|c| c.get_str("name").ok().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Drops a collection; whether it existed.
    pub(crate) async fn drop_collection(&self, collection: &str) -> Result<bool> {
        let existed = self
            .collection_names()
            .await?
            .iter()
            .any(|n| n == collection);
        self.database
            .collection::<Document>(collection)
            .drop()
            .await
            .map_err(driver_error)?;
        Ok(existed)
    }

    pub(crate) async fn drop_index(&self, collection: &str, name: &str) -> Result<()> {
        self.command(None, collection, commands::drop_index(collection, name))
            .await
            .map(drop)
    }

    /// Deploys a model's declared schema as the collection's validator (`collMod`).
    pub(crate) async fn deploy_schema(
        &self,
        collection: &str,
        schema: &crate::DeclaredSchema,
    ) -> Result<()> {
        self.command(None, collection, schema.coll_mod(collection))
            .await
            .map(drop)
    }

    /// The namespace of a collection of this database, `db.collection`.
    pub(crate) fn namespace(&self, collection: &str) -> String {
        format!("{}.{collection}", self.database.name())
    }

    /// Runs a command on `admin` (`configureQueryAnalyzer`, `analyzeShardKey`); the reply
    /// without `ok` and the cluster's bookkeeping fields.
    pub(crate) async fn admin_command(&self, command: Document) -> Result<Document> {
        let admin = self.client.database("admin");
        let mut reply = admin.run_command(command).await.map_err(driver_error)?;
        for field in [
            "ok",
            "$clusterTime",
            "operationTime",
            "electionId",
            "opTime",
        ] {
            reply.remove(field);
        }
        Ok(reply)
    }

    /// Deploys a declared shard key (see [`crate::indexes::sync_remote`]): `shardCollection`
    /// on `admin`; a deployment without the command has no shards to place documents on.
    pub(crate) async fn deploy_shard_key(&self, collection: &str, key: &ShardKey) -> Result<()> {
        let admin = self.client.database("admin");
        if self.mongos {
            let enable = doc! { "enableSharding": self.database.name() };
            admin.run_command(enable).await.map_err(driver_error)?;
        }
        let shard = commands::shard_collection(self.database.name(), collection, key);
        let sent = admin.run_command(shard).await.map_err(driver_error);
        match sent {
            Ok(_) => Ok(()),
            Err(Error::Engine(e)) if e.code() == odm_engine::ErrorCode::COMMAND_NOT_FOUND.code => {
                Ok(())
            }
            Err(Error::Engine(e))
                if e.code() == odm_engine::ErrorCode::ALREADY_INITIALIZED.code =>
            {
                Err(Error::IndexMismatch {
                    collection: collection.to_owned(),
                    index: "shard key".to_owned(),
                    declared: key.to_document().to_string(),
                    stored: e.to_string(),
                })
            }
            Err(e) => Err(e),
        }
    }
}

/// A connection string without its password, for messages.
fn redacted(uri: &str) -> String {
    match (uri.find("://"), uri.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://…@{}", &uri[..scheme], &uri[at + 1..])
        }
        _ => uri.to_owned(),
    }
}

/// A change stream's options, as [`Remote::watch`] sends them.
pub(crate) struct WatchOptions {
    pub(crate) full_document: odm_engine::changes::FullDocument,
    pub(crate) before_change: odm_engine::changes::FullDocumentBeforeChange,
    pub(crate) show_expanded_events: bool,
    pub(crate) resume_after: Option<Document>,
    pub(crate) start_after: Option<Document>,
    pub(crate) start_at: Option<bson::Timestamp>,
}

/// How long one `getMore` of a typed change stream waits on the server: short, so that
/// `try_next` stays close to a poll.
const STREAM_AWAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// The driver's change stream, with events as documents, and the runtime of its client.
pub(crate) struct RemoteStream {
    events: mongodb::change_stream::ChangeStream<Document>,
    runtime: Runtime,
}

impl RemoteStream {
    /// One `getMore` at most: the next event, if any.
    pub(crate) async fn next_if_any(&mut self) -> Result<Option<Document>> {
        self.events.next_if_any().await.map_err(driver_error)
    }

    /// [`RemoteStream::next_if_any`], waited for on the client's runtime.
    pub(crate) fn wait_next_if_any(&mut self) -> Result<Option<Document>> {
        let runtime = self.runtime.clone();
        runtime.wait(self.next_if_any())
    }

    /// The driver's resume token, as a document.
    pub(crate) fn resume_token(&self) -> Option<Document> {
        self.events
            .resume_token()
            .and_then(|t| bson::serialize_to_document(&t).ok())
    }
}

impl Remote {
    /// The driver's `watch()` on a collection, or on the database for `None`.
    pub(crate) async fn watch(
        &self,
        collection: Option<&str>,
        pipeline: Vec<Document>,
        options: &WatchOptions,
    ) -> Result<RemoteStream> {
        use mongodb::options::{FullDocumentBeforeChangeType, FullDocumentType};
        use odm_engine::changes::{FullDocument, FullDocumentBeforeChange};
        let token =
            |d: &Option<Document>| -> Result<Option<mongodb::change_stream::event::ResumeToken>> {
                d.as_ref()
                    .map(|d| {
                        bson::deserialize_from_document(d.clone()).map_err(|e| Error::Driver {
                            reason: format!("a resume token that does not read: {e}"),
                            transient: false,
                        })
                    })
                    .transpose()
            };
        let full_document = match options.full_document {
            FullDocument::Default => None,
            FullDocument::UpdateLookup => Some(FullDocumentType::UpdateLookup),
            FullDocument::WhenAvailable => Some(FullDocumentType::WhenAvailable),
            FullDocument::Required => Some(FullDocumentType::Required),
        };
        let before = match options.before_change {
            FullDocumentBeforeChange::Off => None,
            FullDocumentBeforeChange::WhenAvailable => {
                Some(FullDocumentBeforeChangeType::WhenAvailable)
            }
            FullDocumentBeforeChange::Required => Some(FullDocumentBeforeChangeType::Required),
        };
        let change_options = mongodb::options::ChangeStreamOptions::builder()
            .full_document(full_document)
            .full_document_before_change(before)
            .show_expanded_events(Some(options.show_expanded_events))
            .resume_after(token(&options.resume_after)?)
            .start_after(token(&options.start_after)?)
            .start_at_operation_time(options.start_at)
            .max_await_time(Some(STREAM_AWAIT))
            .build();
        let stream = match collection {
            Some(name) => {
                self.database
                    .collection::<Document>(name)
                    .watch()
                    .pipeline(pipeline)
                    .with_options(change_options)
                    .await
            }
            None => {
                self.database
                    .watch()
                    .pipeline(pipeline)
                    .with_options(change_options)
                    .await
            }
        }
        .map_err(driver_error)?;
        Ok(RemoteStream {
            events: stream.with_type::<Document>(),
            runtime: self.runtime.clone(),
        })
    }
}
