//! MongoDB's Stable API (the "versioned API"): a command may declare `apiVersion: "1"`, with
//! `apiStrict: true` to be refused when it leaves version 1 (a command, or an aggregation
//! stage, outside it: `APIStrictError`, 323) and `apiDeprecationErrors: true` to be refused
//! when it uses what version 1 deprecates (`APIDeprecationError`, 324). Version 1 is the only
//! version; the other declarations are refused as MongoDB refuses them.
//!
//! With test commands on, MongoDB's commands for testing the API itself exist too:
//! `testVersion2` (in version 2 only), `testVersions1And2`, and `testDeprecation` (deprecated
//! in version 1).

use bson::{Bson, Document, doc};
use odm_engine::ErrorCode;

use super::{CommandError, CommandResult, Ctx};

/// The commands of API version 1 this server runs, as MongoDB's manual lists them.
const VERSION_1: [&str; 31] = [
    "abortTransaction",
    "aggregate",
    "authenticate",
    "bulkWrite",
    "collMod",
    "commitTransaction",
    "count",
    "create",
    "createIndexes",
    "delete",
    "drop",
    "dropDatabase",
    "dropIndexes",
    "endSessions",
    "explain",
    "find",
    "findAndModify",
    "getMore",
    "hello",
    "insert",
    "killCursors",
    "listCollections",
    "listDatabases",
    "listIndexes",
    "ping",
    "refreshSessions",
    "saslContinue",
    "saslStart",
    "update",
    "testVersions1And2",
    "testDeprecation",
];

/// The commands version 1 deprecates (only the one that tests deprecation).
const DEPRECATED_IN_VERSION_1: [&str; 1] = ["testDeprecation"];

/// Aggregation stages outside version 1: they report on the server rather than the data.
const STAGES_OUTSIDE_VERSION_1: [&str; 9] = [
    "$currentOp",
    "$indexStats",
    "$listLocalSessions",
    "$listSessions",
    "$listSampledQueries",
    "$planCacheStats",
    "$queryStats",
    "$collStats",
    "$shardedDataDistribution",
];

/// Checks a command's API declaration against what it asks for.
pub fn check(name: &str, command: &Document) -> Result<(), CommandError> {
    let strict = flag(command, "apiStrict")?;
    let deprecation_errors = flag(command, "apiDeprecationErrors")?;
    match command.get("apiVersion") {
        None if strict.is_some() || deprecation_errors.is_some() => {
            return Err(CommandError::new(
                ErrorCode::location(4_886_600),
                "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion",
            ));
        }
        None => return Ok(()),
        Some(Bson::String(version)) if version == "1" => {}
        Some(Bson::String(_)) => {
            return Err(CommandError::new(
                ErrorCode::API_VERSION_ERROR,
                "API version must be \"1\"",
            ));
        }
        Some(_) => {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                "BSON field 'apiVersion' is the wrong type, expected type 'string'",
            ));
        }
    }
    if strict == Some(true) {
        check_strict(name, command)?;
    }
    if deprecation_errors == Some(true) && DEPRECATED_IN_VERSION_1.contains(&name) {
        return Err(CommandError::new(
            ErrorCode::API_DEPRECATION_ERROR,
            format!(
                "Provided apiDeprecationErrors:true, but the command {name} is deprecated in API Version 1"
            ),
        ));
    }
    Ok(())
}

fn flag(command: &Document, field: &str) -> Result<Option<bool>, CommandError> {
    match command.get(field) {
        None => Ok(None),
        Some(Bson::Boolean(b)) => Ok(Some(*b)),
        Some(_) => Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            format!("BSON field '{field}' is the wrong type, expected type 'bool'"),
        )),
    }
}

fn check_strict(name: &str, command: &Document) -> Result<(), CommandError> {
    if !VERSION_1.contains(&name) {
        return Err(CommandError::new(
            ErrorCode::API_STRICT_ERROR,
            format!(
                "Provided apiStrict:true, but the command {name} is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api"
            ),
        ));
    }
    if name != "aggregate" {
        return Ok(());
    }
    let stages = command
        .get_array("pipeline")
        .map(Vec::as_slice)
        .unwrap_or_default();
    let outside = stages
        .iter()
        .filter_map(Bson::as_document)
        .filter_map(|stage| stage.keys().next())
        .find(|stage| STAGES_OUTSIDE_VERSION_1.contains(&stage.as_str()));
    match outside {
        Some(stage) => Err(CommandError::new(
            ErrorCode::API_STRICT_ERROR,
            format!("{stage} is not allowed with 'apiStrict: true' in API Version 1"),
        )),
        None => Ok(()),
    }
}

/// `testVersion2`, `testVersions1And2`, `testDeprecation`: they do nothing, and exist with test
/// commands only, for the API checks above.
pub fn test_command(_: &mut Ctx<'_>, _: &Document) -> CommandResult {
    Ok(doc! {}.into())
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::check;

    fn code(name: &str, command: bson::Document) -> Option<i32> {
        check(name, &command).err().map(|e| e.code)
    }

    #[test]
    fn declarations_are_checked_and_strict_mode_keeps_to_version_1() {
        assert_eq!(code("ping", doc! {"ping": 1}), None);
        assert_eq!(code("ping", doc! {"ping": 1, "apiVersion": "1"}), None);
        assert_eq!(code("ping", doc! {"ping": 1, "apiVersion": "2"}), Some(322));
        assert_eq!(code("ping", doc! {"ping": 1, "apiVersion": 1}), Some(14));
        assert_eq!(
            code("ping", doc! {"ping": 1, "apiStrict": true}),
            Some(4_886_600)
        );
        let strict = |name: &str| doc! {name: 1, "apiVersion": "1", "apiStrict": true};
        assert_eq!(code("distinct", strict("distinct")), Some(323));
        assert_eq!(code("find", strict("find")), None);
        let lenient = doc! {"distinct": "c", "apiVersion": "1", "apiStrict": false};
        assert_eq!(code("distinct", lenient), None);
        let sessions = doc! {
            "aggregate": 1, "apiVersion": "1", "apiStrict": true,
            "pipeline": [{"$listLocalSessions": {}}],
        };
        assert_eq!(code("aggregate", sessions), Some(323));
        let deprecated =
            doc! {"testDeprecation": 1, "apiVersion": "1", "apiDeprecationErrors": true};
        assert_eq!(code("testDeprecation", deprecated), Some(324));
        let strict_flag = doc! {"ping": 1, "apiVersion": "1", "apiStrict": "yes"};
        assert_eq!(code("ping", strict_flag), Some(14));
    }
}
