//! `profile`: reads and changes the database profiler's settings (see `profiler`).
//!
//! As MongoDB's: `profile` 0, 1 or 2 sets the database's level, any other number only reads;
//! `slowms`, `sampleRate` (0 to 1) and `filter` (a query, or `"unset"`) change when given. The
//! reply states the settings before the change: `was`, `slowms`, `sampleRate`, and `filter`
//! with a `note` when a filter was set. A level above 0 creates the database and its capped
//! `system.profile`; an existing `system.profile` that is not capped is refused.

use bson::{Bson, Document, doc};
use odm_engine::ErrorCode;

use super::args::whole_number;
use super::{Args, CommandError, CommandResult, Ctx};
use crate::profiler::{Change, ensure_collection};

pub fn profile(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "profile");
    let level = args
        .get("profile")
        .and_then(whole_number)
        .ok_or_else(|| CommandError::bad_value("profile's level must be a number"))?;
    let level = i32::try_from(level).ok().filter(|l| (0..=2).contains(l));
    let sample_rate = args.f64("sampleRate")?;
    if sample_rate.is_some_and(|r| !(0.0..=1.0).contains(&r)) {
        return Err(CommandError::bad_value(
            "'sampleRate' must be between 0.0 and 1.0 inclusive",
        ));
    }
    let filter = match args.get("filter") {
        None => None,
        Some(Bson::String(s)) if s == "unset" => Some(None),
        Some(Bson::Document(d)) => Some(Some(d.clone())),
        Some(_) => {
            return Err(CommandError::bad_value(
                "Expected an object, or the string 'unset'.",
            ));
        }
    };
    if level.is_some_and(|l| l > 0) {
        ctx.server
            .storage
            .get_or_create(&ctx.db)?
            .write(ensure_collection)?;
    }
    let change = Change {
        level,
        slow_ms: args.i64("slowms")?,
        sample_rate,
        filter,
    };
    let previous = ctx.server.profiler.change(&ctx.db, change)?;
    let mut reply = doc! {
        "was": previous.level,
        "slowms": previous.slow_ms,
        "sampleRate": previous.sample_rate,
    };
    if let Some(filter) = previous.filter {
        reply.insert("filter", filter);
        reply.insert(
            "note",
            "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines.",
        );
    }
    Ok(reply.into())
}

/// MongoDB refuses writes into `system.profile` other than the profiler's own.
pub fn refuse_profile_writes(collection: &str) -> Result<(), CommandError> {
    if collection == crate::profiler::PROFILE_COLLECTION {
        return Err(CommandError::new(
            ErrorCode::INVALID_NAMESPACE,
            format!(
                "cannot write to '{}': it is written by the profiler only",
                crate::profiler::PROFILE_COLLECTION
            ),
        ));
    }
    Ok(())
}
