//! Where an aggregation's final `$out` or `$merge` writes. MongoDB lets either name another
//! database (`$out: {db, coll}`, `$merge: {into: {db, coll}}`); the engine holds one database
//! per file and reads a target as a collection alone, so the server splits the two: the stage
//! with its `db` removed, and the database it names (the command's when it names none).

use bson::{Bson, Document};
use odm_engine::ErrorCode;

use super::CommandError;

/// When a pipeline ends in `$out` or `$merge`: the database it writes (`current`, the
/// command's, when it names none), with the stage rewritten to name its collection alone.
pub fn take_database(
    pipeline: &mut [Document],
    current: &str,
) -> Result<Option<String>, CommandError> {
    let Some(last) = pipeline.last_mut() else {
        return Ok(None);
    };
    let Some((name, arg)) = last.iter_mut().next() else {
        return Ok(None);
    };
    let database = match (name.as_str(), arg) {
        ("$out", Bson::Document(target)) => without_db(name, target)?,
        ("$merge", Bson::Document(spec)) => match spec.get_mut("into") {
            Some(Bson::Document(into)) => without_db(name, into)?,
            _ => None,
        },
        ("$out" | "$merge", _) => None,
        _ => return Ok(None),
    };
    Ok(Some(database.unwrap_or_else(|| current.to_owned())))
}

/// Removes a `{db, coll}` target's `db`, returning the database it names.
fn without_db(stage: &str, target: &mut Document) -> Result<Option<String>, CommandError> {
    match target.remove("db") {
        None => Ok(None),
        Some(Bson::String(db)) => Ok(Some(db)),
        Some(_) => Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            format!("{stage}'s target database (`db`) must be a string"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use bson::{Document, doc};

    use super::take_database;

    fn split(stage: Document) -> (Option<String>, Document) {
        let mut pipeline = vec![doc! {"$match": {}}, stage];
        let database = take_database(&mut pipeline, "here").unwrap();
        (database, pipeline.pop().unwrap())
    }

    #[test]
    fn a_named_database_is_taken_from_the_stage() {
        assert_eq!(
            split(doc! {"$out": {"db": "other", "coll": "c"}}),
            (Some("other".into()), doc! {"$out": {"coll": "c"}})
        );
        assert_eq!(
            split(doc! {"$merge": {"into": {"db": "other", "coll": "c"}, "on": "_id"}}),
            (
                Some("other".into()),
                doc! {"$merge": {"into": {"coll": "c"}, "on": "_id"}}
            )
        );
    }

    #[test]
    fn a_target_without_a_database_writes_the_commands() {
        assert_eq!(
            split(doc! {"$out": "c"}),
            (Some("here".into()), doc! {"$out": "c"})
        );
        assert_eq!(
            split(doc! {"$merge": {"into": "c"}}),
            (Some("here".into()), doc! {"$merge": {"into": "c"}})
        );
        assert_eq!(split(doc! {"$limit": 1}).0, None);
        let mut bad = vec![doc! {"$out": {"db": 1, "coll": "c"}}];
        assert!(take_database(&mut bad, "here").is_err());
    }
}
