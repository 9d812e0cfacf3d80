//! The fields each command takes, as MongoDB's IDL declares them: a command carrying a field
//! that is neither its own nor a generic argument (`lsid`, `$db`, `$clusterTime`, `comment`,
//! ...; see `args::GENERIC_ARGUMENTS`) is refused with 40415, naming the field, so
//! that a misspelt option (`{find: "c", fliter: {...}}`) fails instead of being ignored.
//!
//! A field listed here is one MongoDB accepts; a handler refuses by name those it does not
//! implement (find's `min`, say), so that every field is read or refused, never ignored. A
//! command not listed here checks its own fields (`collMod`, `setParameter`) or
//! takes none that change what it does (`ping`, `hello`'s driver metadata).

use bson::Document;
use odm_engine::ErrorCode;

use super::CommandError;

/// (command, its fields). Fields that do nothing on one node are listed and ignored as MongoDB
/// ignores them there: `allowPartialResults` (shards), `oplogReplay` (deprecated, a no-op
/// since 4.4), `readOnce` and `includeQueryStatsMetrics` (hints to the storage engine and the
/// query stats), `commitQuorum` (one member), `authorizedCollections` and
/// `authorizedDatabases` (what a user sees, which without roles is everything).
const FIELDS: &[(&str, &[&str])] = &[
    ("fsync", &["lock", "forBackup"]),
    (
        "find",
        &[
            "filter",
            "projection",
            "sort",
            "hint",
            "skip",
            "limit",
            "batchSize",
            "singleBatch",
            "max",
            "min",
            "returnKey",
            "showRecordId",
            "tailable",
            "awaitData",
            "oplogReplay",
            "noCursorTimeout",
            "allowPartialResults",
            "collation",
            "allowDiskUse",
            "let",
            "readOnce",
            "includeQueryStatsMetrics",
        ],
    ),
    (
        "getMore",
        &[
            "collection",
            "batchSize",
            "term",
            "lastKnownCommittedOpTime",
            "includeQueryStatsMetrics",
        ],
    ),
    ("killCursors", &["cursors"]),
    (
        "aggregate",
        &[
            "pipeline",
            "explain",
            "allowDiskUse",
            "cursor",
            "hint",
            "bypassDocumentValidation",
            "collation",
            "let",
            "includeQueryStatsMetrics",
        ],
    ),
    (
        "count",
        &[
            "query",
            "limit",
            "skip",
            "hint",
            "collation",
            "fields",
            "sampleId",
        ],
    ),
    (
        "distinct",
        &["key", "query", "collation", "hint", "sampleId"],
    ),
    (
        "insert",
        &["documents", "ordered", "bypassDocumentValidation"],
    ),
    (
        "update",
        &["updates", "ordered", "bypassDocumentValidation", "let"],
    ),
    (
        "delete",
        &["deletes", "ordered", "bypassDocumentValidation", "let"],
    ),
    ("findAndModify", FIND_AND_MODIFY),
    ("findandmodify", FIND_AND_MODIFY),
    ("createIndexes", &["indexes", "commitQuorum"]),
    ("dropIndexes", &["index"]),
    ("deleteIndexes", &["index"]),
    (
        "listIndexes",
        &["cursor", "includeBuildUUIDs", "includeIndexBuildInfo"],
    ),
    (
        "listCollections",
        &[
            "filter",
            "nameOnly",
            "authorizedCollections",
            "cursor",
            "includePendingDrops",
        ],
    ),
    (
        "listDatabases",
        &["filter", "nameOnly", "authorizedDatabases"],
    ),
    (
        "create",
        &[
            "capped",
            "size",
            "max",
            "autoIndexId",
            "idIndex",
            "storageEngine",
            "validator",
            "validationLevel",
            "validationAction",
            "indexOptionDefaults",
            "viewOn",
            "pipeline",
            "collation",
            "timeseries",
            "expireAfterSeconds",
            "clusteredIndex",
            "changeStreamPreAndPostImages",
            "encryptedFields",
            "flags",
            "temp",
            "recordPreImages",
        ],
    ),
    ("convertToCapped", &["size"]),
    ("profile", &["slowms", "sampleRate", "filter"]),
    ("cloneCollectionAsCapped", &["toCollection", "size"]),
    ("drop", &[]),
    ("dropDatabase", &[]),
    ("dbStats", &["scale", "freeStorage"]),
    ("collStats", &["scale", "verbose"]),
    ("explain", &["verbosity"]),
    ("killOp", &["op"]),
    ("endSessions", &[]),
    ("refreshSessions", &[]),
    ("commitTransaction", &["recoveryToken"]),
    ("abortTransaction", &["recoveryToken"]),
];

const FIND_AND_MODIFY: &[&str] = &[
    "query",
    "fields",
    "sort",
    "remove",
    "update",
    "new",
    "upsert",
    "bypassDocumentValidation",
    "collation",
    "arrayFilters",
    "hint",
    "let",
];

/// Refuses a field `command` (named `name`) does not take, when the command is listed.
pub fn check(name: &str, command: &Document) -> Result<(), CommandError> {
    let Some((_, fields)) = FIELDS.iter().find(|(n, _)| *n == name) else {
        return Ok(());
    };
    for field in command.keys().skip(1) {
        if !fields.contains(&field.as_str()) && !super::args::is_generic_argument(field) {
            return Err(CommandError::new(
                ErrorCode::location(40415),
                format!("BSON field '{name}.{field}' is an unknown field."),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bson::doc;

    #[test]
    fn an_unknown_field_is_refused_by_name_and_generic_ones_pass() {
        let misspelt = doc! {"find": "c", "fliter": {}};
        let e = super::check("find", &misspelt).unwrap_err();
        assert_eq!(e.code, 40415);
        assert!(e.message.contains("find.fliter"), "{}", e.message);
        let generic = doc! {"find": "c", "filter": {}, "lsid": {}, "$db": "d", "comment": "x"};
        assert!(super::check("find", &generic).is_ok());
        assert!(super::check("notListed", &misspelt).is_ok());
    }
}
