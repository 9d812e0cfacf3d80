//! Read concerns on a one-member replica set, as MongoDB's.
//!
//! Rules:
//! - `level` is `local` (the default), `majority`, `available`, `linearizable` or `snapshot`.
//!   On one member that applies every write before it answers, the first four read the same
//!   data: everything committed.
//! - `snapshot` needs replica-set mode; outside a transaction it serves `find`, `aggregate`
//!   and `distinct` only. It reads the state at `atClusterTime`, or at a time the reply names
//!   (`atClusterTime` in the cursor, or beside `distinct`'s values), which the driver then
//!   sends with the session's next reads. This engine keeps no older versions of documents:
//!   a read at a time before the database's last commit is `SnapshotTooOld` (239), never later
//!   data. A read at a time after the current cluster time is refused (72).
//! - `afterClusterTime` asks for a state at least that recent: every time this member handed
//!   out is already applied, so it never waits. It does not go with `available`,
//!   `linearizable` or `atClusterTime` (72).
//! - Inside a transaction only its first command names a read concern (72 after), and only
//!   `local`, `majority` or `snapshot`.

use bson::{Bson, Document, Timestamp};
use odm_engine::ErrorCode;

use super::{CommandError, Ctx};

/// A read concern's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Local,
    Majority,
    Available,
    Linearizable,
    Snapshot,
}

/// A command's `readConcern`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadConcern {
    pub level: Level,
    pub at_cluster_time: Option<Timestamp>,
    pub after_cluster_time: Option<Timestamp>,
}

fn invalid(message: impl Into<String>) -> CommandError {
    CommandError::new(ErrorCode::INVALID_OPTIONS, message)
}

/// Parses and checks a command's `readConcern`; `None` when it names none.
pub fn parse(
    ctx: &Ctx<'_>,
    command: &Document,
    name: &str,
) -> Result<Option<ReadConcern>, CommandError> {
    let Some(value) = command.get("readConcern") else {
        return Ok(None);
    };
    let Bson::Document(spec) = value else {
        return Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            "BSON field 'readConcern' is the wrong type, expected type 'object'",
        ));
    };
    let mut concern = ReadConcern {
        level: Level::Local,
        at_cluster_time: None,
        after_cluster_time: None,
    };
    let mut level_given = false;
    for (field, value) in spec {
        match (field.as_str(), value) {
            ("level", Bson::String(level)) => {
                concern.level = level_of(level)?;
                level_given = true;
            }
            ("atClusterTime", Bson::Timestamp(t)) => concern.at_cluster_time = Some(*t),
            ("afterClusterTime", Bson::Timestamp(t)) => concern.after_cluster_time = Some(*t),
            ("level" | "atClusterTime" | "afterClusterTime", _) => {
                return Err(CommandError::new(
                    ErrorCode::TYPE_MISMATCH,
                    format!("BSON field 'readConcern.{field}' is the wrong type"),
                ));
            }
            // Fields a driver or a router may carry, with no effect on one member.
            ("provenance" | "afterOpTime", _) => {}
            _ => {
                return Err(CommandError::new(
                    ErrorCode::location(40415),
                    format!("BSON field 'readConcern.{field}' is an unknown field."),
                ));
            }
        }
    }
    if matches!(name, "getMore" | "killCursors") {
        // A cursor reads under the concern of the command that opened it. MongoDB accepts any
        // here, and drivers repeat a snapshot session's on `getMore`.
        return Ok(None);
    }
    if level_given
        && concern.level != Level::Majority
        && name == "aggregate"
        && stage_is(command, false, &["$changeStream"])
    {
        return Err(invalid(format!(
            "Aggregation stage $changeStream cannot run with a readConcern other than 'majority'. Current readConcern: {}",
            level_name(concern.level)
        )));
    }
    check(ctx, command, name, concern)?;
    Ok(Some(concern))
}

/// Whether an aggregation's first stage (or its last, when `last`) is one of `names`.
fn stage_is(command: &Document, last: bool, names: &[&str]) -> bool {
    let stages = command
        .get_array("pipeline")
        .map(Vec::as_slice)
        .unwrap_or_default();
    let stage = if last { stages.last() } else { stages.first() };
    stage
        .and_then(Bson::as_document)
        .and_then(|s| s.keys().next())
        .is_some_and(|name| names.contains(&name.as_str()))
}

/// A level as MongoDB spells it.
fn level_name(level: Level) -> &'static str {
    match level {
        Level::Local => "local",
        Level::Majority => "majority",
        Level::Available => "available",
        Level::Linearizable => "linearizable",
        Level::Snapshot => "snapshot",
    }
}

fn level_of(level: &str) -> Result<Level, CommandError> {
    Ok(match level {
        "local" => Level::Local,
        "majority" => Level::Majority,
        "available" => Level::Available,
        "linearizable" => Level::Linearizable,
        "snapshot" => Level::Snapshot,
        other => {
            return Err(CommandError::bad_value(format!(
                "Enumeration value '{other}' for field 'readConcern.level' is not a valid value."
            )));
        }
    })
}

fn check(
    ctx: &Ctx<'_>,
    command: &Document,
    name: &str,
    concern: ReadConcern,
) -> Result<(), CommandError> {
    if concern.level == Level::Linearizable
        && name == "aggregate"
        && stage_is(command, true, &["$out", "$merge"])
    {
        return Err(invalid(
            "cannot specify readConcern level linearizable with an aggregation that writes ($out or $merge)",
        ));
    }
    let in_transaction = command.get("autocommit") == Some(&Bson::Boolean(false));
    if in_transaction && command.get("startTransaction") != Some(&Bson::Boolean(true)) {
        return Err(invalid(
            "Only the first command in a transaction may specify a readConcern",
        ));
    }
    if concern.at_cluster_time.is_some() && concern.level != Level::Snapshot {
        return Err(invalid(
            "readConcern.atClusterTime can only be used with level snapshot",
        ));
    }
    if concern.after_cluster_time.is_some() {
        if concern.at_cluster_time.is_some() {
            return Err(invalid(
                "readConcern.afterClusterTime and atClusterTime cannot be given together",
            ));
        }
        if matches!(concern.level, Level::Available | Level::Linearizable) {
            return Err(invalid(format!(
                "readConcern.afterClusterTime is not allowed with level {}",
                level_name(concern.level)
            )));
        }
    }
    if in_transaction
        && !matches!(
            concern.level,
            Level::Local | Level::Majority | Level::Snapshot
        )
    {
        return Err(invalid(format!(
            "The readConcern level {} is not allowed in a transaction",
            level_name(concern.level)
        )));
    }
    if concern.level == Level::Snapshot {
        if !ctx.server.is_replica_set() {
            return Err(CommandError::new(
                ErrorCode::ILLEGAL_OPERATION,
                "readConcern level snapshot needs a replica set (start the server with --replica-set)",
            ));
        }
        if !in_transaction && !matches!(name, "find" | "aggregate" | "distinct") {
            return Err(invalid(format!(
                "readConcern level snapshot is only valid in multi-document transactions or for find, aggregate, and distinct, not {name}"
            )));
        }
    }
    if let Some(at) = concern.at_cluster_time {
        let now = ctx.server.clock.tick();
        if (at.time, at.increment) > (now.time, now.increment) {
            return Err(invalid(format!(
                "readConcern.atClusterTime {at} is after the current cluster time {now}"
            )));
        }
    }
    Ok(())
}

/// For a snapshot read of `ctx.db`: the time it reads at (its `atClusterTime`, or now), after
/// checking that the database has not changed since (239 if it has).
pub fn snapshot_time(
    ctx: &Ctx<'_>,
    concern: &ReadConcern,
) -> Result<Option<Timestamp>, CommandError> {
    if concern.level != Level::Snapshot {
        return Ok(None);
    }
    let at = concern
        .at_cluster_time
        .unwrap_or_else(|| ctx.server.clock.tick());
    unchanged_since(ctx, at)?;
    Ok(Some(at))
}

/// Refuses a read at `at` when the database has committed since: its older state is gone.
pub fn unchanged_since(ctx: &Ctx<'_>, at: Timestamp) -> Result<(), CommandError> {
    let Some(db) = ctx.server.storage.get(&ctx.db)? else {
        return Ok(());
    };
    if !db.change_log().enabled {
        return Err(CommandError::new(
            ErrorCode::SNAPSHOT_TOO_OLD,
            "this database records no commit times (its change log is off): no snapshot read can be checked",
        ));
    }
    let last = db.read()?.last_commit_time()?;
    if let Some(last) = last
        && (last.time, last.increment) > (at.time, at.increment)
    {
        return Err(CommandError::new(
            ErrorCode::SNAPSHOT_TOO_OLD,
            format!(
                "Read timestamp {at} is older than the oldest available timestamp {last}: this server keeps no earlier versions of documents"
            ),
        ));
    }
    Ok(())
}
