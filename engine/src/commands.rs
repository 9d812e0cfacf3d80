//! The command documents of typed operations, built from the same operations the engine
//! takes: a typed find, update or index becomes the one document a MongoDB server would
//! receive from any driver. The MongoDB back end sends them; on the engine, the query analyzer
//! samples them (see [`crate::sampling`]). Pure functions, so each is tested without a
//! server.

use crate::aggregate::AggregateOptions;
use crate::interrupt::Interrupt;
use crate::query::FindOptions;
use crate::update::{
    DeleteOptions, FindAndModify, Modify, ReturnDocument, UpdateModifications, UpdateOptions,
};
use crate::{IndexSpec, ShardKey};
use bson::{Bson, Document, doc};

/// A 64-bit count as MongoDB's commands take it.
fn long(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `maxTimeMS`: what the interrupt's deadline leaves, at least 1 ms (0 would mean no limit).
fn put_max_time(command: &mut Document, interrupt: Option<&Interrupt>) {
    if let Some(left) = interrupt.and_then(Interrupt::remaining) {
        let ms = i64::try_from(left.as_millis()).unwrap_or(i64::MAX).max(1);
        command.insert("maxTimeMS", ms);
    }
}

fn put(command: &mut Document, name: &str, value: Option<impl Into<Bson>>) {
    if let Some(value) = value {
        command.insert(name, value.into());
    }
}

/// `find`, returning documents in batches.
pub fn find(collection: &str, filter: &Document, options: &FindOptions) -> Document {
    let mut command = doc! { "find": collection, "filter": filter.clone() };
    put(&mut command, "sort", options.sort.clone());
    put(&mut command, "projection", options.projection.clone());
    if options.skip > 0 {
        command.insert("skip", long(options.skip));
    }
    if let Some(limit) = options.limit.filter(|&l| l > 0) {
        command.insert("limit", long(limit));
    }
    put(&mut command, "hint", options.hint.clone());
    put(&mut command, "collation", options.collation.clone());
    put(&mut command, "let", options.let_vars.clone());
    put_max_time(&mut command, options.interrupt.as_ref());
    put(&mut command, "allowDiskUse", options.allow_disk_use);
    put(&mut command, "min", options.keys.min.clone());
    put(&mut command, "max", options.keys.max.clone());
    put(
        &mut command,
        "returnKey",
        options.keys.return_key.then_some(true),
    );
    put(
        &mut command,
        "showRecordId",
        options.keys.show_record_id.then_some(true),
    );
    command
}

/// The document stored under `id`: a find of one, in one batch.
pub fn get(collection: &str, id: &Bson) -> Document {
    doc! {
        "find": collection,
        "filter": { "_id": id.clone() },
        "limit": 1_i64,
        "singleBatch": true,
    }
}

/// `aggregate` with a cursor.
pub fn aggregate(collection: &str, pipeline: &[Document], options: &AggregateOptions) -> Document {
    let mut command = doc! { "aggregate": collection, "pipeline": pipeline.to_vec(), "cursor": {} };
    put(&mut command, "hint", options.hint.clone());
    put(&mut command, "collation", options.collation.clone());
    put(&mut command, "let", options.let_vars.clone());
    put_max_time(&mut command, options.interrupt.as_ref());
    put(&mut command, "allowDiskUse", options.allow_disk_use);
    command
}

/// How many documents match, as drivers count them (`countDocuments`): an aggregation, which
/// unlike the `count` command runs in a transaction and counts exactly on a sharded cluster.
pub fn count(collection: &str, filter: &Document) -> Document {
    aggregate(
        collection,
        &[
            doc! { "$match": filter.clone() },
            doc! { "$group": { "_id": 1, "n": { "$sum": 1 } } },
        ],
        &AggregateOptions::default(),
    )
}

pub fn distinct(collection: &str, key: &str, filter: &Document) -> Document {
    doc! { "distinct": collection, "key": key, "query": filter.clone() }
}

/// `explain` of a command, with what running it examined.
pub fn explain(command: Document) -> Document {
    doc! { "explain": command, "verbosity": "executionStats" }
}

pub fn insert(collection: &str, documents: Vec<Bson>, ordered: bool) -> Document {
    doc! { "insert": collection, "documents": documents, "ordered": ordered }
}

/// The update statement of `update` (`u` is the operators, a pipeline or a replacement).
pub fn update_statement(
    filter: &Document,
    update: Bson,
    options: &UpdateOptions,
    multi: bool,
) -> Document {
    let mut statement =
        doc! { "q": filter.clone(), "u": update, "upsert": options.upsert, "multi": multi };
    if !options.array_filters.is_empty() {
        statement.insert("arrayFilters", options.array_filters.clone());
    }
    put(&mut statement, "hint", options.hint.clone());
    put(&mut statement, "collation", options.collation.clone());
    if !multi {
        put(&mut statement, "sort", options.sort.clone());
    }
    statement
}

/// The `u` of an update: operators, or a pipeline.
pub fn modifications(update: &UpdateModifications) -> Bson {
    match update {
        UpdateModifications::Document(d) => Bson::Document(d.clone()),
        UpdateModifications::Pipeline(stages) => {
            Bson::Array(stages.iter().cloned().map(Bson::Document).collect())
        }
    }
}

pub fn update(collection: &str, statement: Document, let_vars: Option<&Document>) -> Document {
    let mut command = doc! { "update": collection, "updates": [statement], "ordered": true };
    put(&mut command, "let", let_vars.cloned());
    command
}

/// The delete statement of `delete`: `limit` 1 deletes the first match, 0 every match.
pub fn delete_statement(filter: &Document, options: &DeleteOptions, multi: bool) -> Document {
    let mut statement = doc! { "q": filter.clone(), "limit": i32::from(!multi) };
    put(&mut statement, "hint", options.hint.clone());
    put(&mut statement, "collation", options.collation.clone());
    statement
}

pub fn delete(collection: &str, statement: Document, let_vars: Option<&Document>) -> Document {
    let mut command = doc! { "delete": collection, "deletes": [statement], "ordered": true };
    put(&mut command, "let", let_vars.cloned());
    command
}

pub fn find_and_modify(
    collection: &str,
    filter: &Document,
    modify: &Modify,
    options: &FindAndModify,
) -> Document {
    let mut command = doc! { "findAndModify": collection, "query": filter.clone() };
    put(&mut command, "sort", options.sort.clone());
    match modify {
        Modify::Delete => {
            command.insert("remove", true);
        }
        Modify::Update(update) => {
            command.insert("update", modifications(update));
        }
        Modify::Replace(replacement) => {
            command.insert("update", replacement.clone());
        }
    }
    if !matches!(modify, Modify::Delete) {
        command.insert("new", options.return_document == ReturnDocument::After);
        command.insert("upsert", options.upsert);
    }
    put(&mut command, "fields", options.projection.clone());
    if !options.array_filters.is_empty() {
        command.insert("arrayFilters", options.array_filters.clone());
    }
    put(&mut command, "hint", options.hint.clone());
    put(&mut command, "collation", options.collation.clone());
    put(&mut command, "let", options.let_vars.clone());
    command
}

/// A findAndModify as MongoDB samples it: its `sampleId`, without the projection.
pub fn sampled_find_and_modify(mut command: Document, sample_id: bson::Uuid) -> Document {
    command.remove("fields");
    command.insert("sampleId", sample_id);
    command
}

/// `createIndexes` of declared indexes, each described as `listIndexes` shows it.
pub fn create_indexes(collection: &str, specs: &[IndexSpec]) -> Document {
    let indexes: Vec<Document> = specs.iter().map(IndexSpec::to_document).collect();
    doc! { "createIndexes": collection, "indexes": indexes }
}

pub fn drop_index(collection: &str, name: &str) -> Document {
    doc! { "dropIndexes": collection, "index": name }
}

pub fn list_indexes(collection: &str) -> Document {
    doc! { "listIndexes": collection, "cursor": {} }
}

pub fn create(collection: &str) -> Document {
    doc! { "create": collection }
}

/// `shardCollection` (run on `admin` through a `mongos`) for a declared shard key: ranged
/// (`{a: 1, b: 1}`) or hashed (`{a: "hashed"}`).
pub fn shard_collection(database: &str, collection: &str, key: &ShardKey) -> Document {
    doc! { "shardCollection": format!("{database}.{collection}"), "key": key.to_document() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;

    #[test]
    fn a_find_carries_every_option_it_has_and_no_other() {
        let bare = find("c", &doc! { "a": 1 }, &FindOptions::default());
        assert_eq!(bare, doc! { "find": "c", "filter": { "a": 1 } });
        let options = FindOptions {
            sort: Some(doc! { "b": -1 }),
            projection: Some(doc! { "b": 1 }),
            skip: 5,
            limit: Some(10),
            hint: Some(Bson::String("b_-1".into())),
            let_vars: Some(doc! { "x": 1 }),
            collation: Some(doc! { "locale": "en", "strength": 2 }),
            interrupt: None,
            allow_disk_use: Some(false),
            memory_limit: None,
            keys: crate::query::KeyOptions {
                min: Some(doc! { "b": 1 }),
                max: Some(doc! { "b": 9 }),
                return_key: true,
                show_record_id: true,
            },
        };
        assert_eq!(
            find("c", &doc! {}, &options),
            doc! {
                "find": "c", "filter": {}, "sort": { "b": -1 }, "projection": { "b": 1 },
                "skip": 5_i64, "limit": 10_i64, "hint": "b_-1",
                "collation": { "locale": "en", "strength": 2 }, "let": { "x": 1 },
                "allowDiskUse": false, "min": { "b": 1 }, "max": { "b": 9 },
                "returnKey": true, "showRecordId": true,
            }
        );
    }

    #[test]
    fn a_deadline_is_sent_as_the_time_it_leaves() {
        let interrupt =
            crate::interrupt::Interrupt::within(Some(std::time::Duration::from_secs(9)));
        let options = FindOptions {
            interrupt: Some(interrupt.clone()),
            ..FindOptions::default()
        };
        let ms = find("c", &doc! {}, &options).get_i64("maxTimeMS").unwrap();
        assert!((8_000..=9_000).contains(&ms), "{ms}");
        let aggregate_options = AggregateOptions {
            interrupt: Some(interrupt),
            ..AggregateOptions::default()
        };
        let command = aggregate("c", &[], &aggregate_options);
        assert!(command.get_i64("maxTimeMS").is_ok(), "{command}");
        let past = FindOptions {
            interrupt: Some(crate::interrupt::Interrupt::with_deadline(
                std::time::Instant::now(),
            )),
            ..FindOptions::default()
        };
        assert_eq!(
            find("c", &doc! {}, &past).get_i64("maxTimeMS").ok(),
            Some(1),
            "never 0, no limit"
        );
        assert!(!find("c", &doc! {}, &FindOptions::default()).contains_key("maxTimeMS"));
    }

    #[test]
    fn updates_and_deletes_say_whether_they_touch_one_or_many() {
        let options = UpdateOptions {
            upsert: true,
            array_filters: vec![doc! { "e.x": 1 }],
            sort: Some(doc! { "t": 1 }),
            ..UpdateOptions::default()
        };
        let one = update_statement(
            &doc! { "a": 1 },
            Bson::Document(doc! { "$set": { "b": 2 } }),
            &options,
            false,
        );
        assert_eq!(
            one,
            doc! {
                "q": { "a": 1 }, "u": { "$set": { "b": 2 } }, "upsert": true, "multi": false,
                "arrayFilters": [{ "e.x": 1 }], "sort": { "t": 1 },
            }
        );
        // A sort chooses the one document an update of one touches; many take no sort.
        let many = update_statement(&doc! {}, Bson::Document(doc! {}), &options, true);
        assert!(!many.contains_key("sort") && many.get_bool("multi").unwrap());
        let pipeline = modifications(&UpdateModifications::Pipeline(vec![
            doc! { "$set": { "a": 1 } },
        ]));
        assert_eq!(
            pipeline,
            Bson::Array(vec![Bson::Document(doc! { "$set": { "a": 1 } })])
        );
        assert_eq!(
            delete_statement(&doc! {}, &DeleteOptions::default(), false)
                .get_i32("limit")
                .unwrap(),
            1
        );
        assert_eq!(
            delete_statement(&doc! {}, &DeleteOptions::default(), true)
                .get_i32("limit")
                .unwrap(),
            0
        );
    }

    #[test]
    fn find_and_modify_removes_or_updates_and_returns_before_or_after() {
        let after = FindAndModify {
            return_document: ReturnDocument::After,
            upsert: true,
            sort: Some(doc! { "n": 1 }),
            ..FindAndModify::default()
        };
        let update = Modify::Update(UpdateModifications::Document(doc! { "$inc": { "n": 1 } }));
        assert_eq!(
            find_and_modify("c", &doc! { "k": 1 }, &update, &after),
            doc! {
                "findAndModify": "c", "query": { "k": 1 }, "sort": { "n": 1 },
                "update": { "$inc": { "n": 1 } }, "new": true, "upsert": true,
            }
        );
        let remove = find_and_modify("c", &doc! {}, &Modify::Delete, &FindAndModify::default());
        assert_eq!(
            remove,
            doc! { "findAndModify": "c", "query": {}, "remove": true }
        );
    }

    #[test]
    fn declared_indexes_deploy_with_every_option_and_shard_keys_ranged_or_hashed() {
        let ttl = IndexSpec::new([("seen", Direction::Ascending)])
            .unwrap()
            .expire_after(std::time::Duration::from_hours(1));
        let unique = IndexSpec::new([
            ("owner", Direction::Ascending),
            ("seq", Direction::Descending),
        ])
        .unwrap()
        .unique()
        .named("owner_seq");
        let partial = IndexSpec::ascending("email")
            .unwrap()
            .sparse()
            .partial(doc! { "email": { "$exists": true } })
            .unwrap();
        let hashed = IndexSpec::hashed("user").unwrap();
        let command = create_indexes("c", &[ttl, unique, partial, hashed]);
        assert_eq!(
            command,
            doc! { "createIndexes": "c", "indexes": [
                { "v": 2, "key": { "seen": 1 }, "name": "seen_1", "expireAfterSeconds": 3600_i64 },
                { "v": 2, "key": { "owner": 1, "seq": -1 }, "name": "owner_seq", "unique": true },
                { "v": 2, "key": { "email": 1 }, "name": "email_1", "sparse": true,
                  "partialFilterExpression": { "email": { "$exists": true } } },
                { "v": 2, "key": { "user": "hashed" }, "name": "user_hashed" },
            ] }
        );
        // What createIndexes sends reads back as the same index (the listIndexes diff).
        for index in command.get_array("indexes").unwrap() {
            let index = index.as_document().unwrap();
            let spec = IndexSpec::from_document(index).unwrap();
            assert_eq!(&spec.to_document(), index);
        }
        let ranged = ShardKey::range(["region", "id"]).unwrap();
        assert_eq!(
            shard_collection("app", "users", &ranged),
            doc! { "shardCollection": "app.users", "key": { "region": 1, "id": 1 } }
        );
        let hashed = ShardKey::hashed("user").unwrap();
        assert_eq!(
            shard_collection("app", "events", &hashed),
            doc! { "shardCollection": "app.events", "key": { "user": "hashed" } }
        );
    }

    #[test]
    fn counts_run_as_an_aggregation_that_works_in_transactions() {
        assert_eq!(
            count("c", &doc! { "a": 1 }),
            doc! { "aggregate": "c", "pipeline": [
                { "$match": { "a": 1 } }, { "$group": { "_id": 1, "n": { "$sum": 1 } } },
            ], "cursor": {} }
        );
    }
}
