//! Views, as MongoDB keeps them: a read-only namespace defined by a source (`viewOn`, a
//! collection or another view) and a pipeline, stored in the database's `system.views`
//! collection as `{_id: "<db>.<view>", viewOn, pipeline, collation}`.
//!
//! Rules, as MongoDB's:
//! - A name is a collection's or a view's, never both (`create` answers 48).
//! - A read of a view runs the views' pipelines, innermost first, on the collection at the
//!   bottom, then the read: `find` as `$match`, `$sort`, `$skip`, `$limit`, `$project`;
//!   `count` and `distinct` over what that gives; `aggregate` with its own pipeline after.
//!   Cursors carry the view's namespace.
//! - A chain of views is at most [`MAX_DEPTH`] deep (150 past it); a view on itself, directly
//!   or through others, is refused (145).
//! - A view takes no write and no index: 166 (`CommandNotSupportedOnView`).
//! - A view's pipeline cannot hold `$out` or `$merge`.
//!
//! - A view has a default collation, its `collation` or else binary strings (it does not take
//!   its source collection's): its pipeline and every read of it run under it, a read that
//!   names another is refused (167), and a view on a view has that view's.
//!
//! Left out: views read by `$lookup`, `$graphLookup` or `$unionWith` inside another pipeline
//! (they read a view's name as a collection that does not exist).

use std::sync::Arc;

use bson::{Bson, Document, doc};
use odm_engine::collation::Collation;
use odm_engine::{Database, ErrorCode};

use super::{CommandError, Ctx};

/// Where a database keeps its views.
pub const VIEWS_COLLECTION: &str = "system.views";
/// MongoDB's bound on a chain of views.
pub const MAX_DEPTH: usize = 20;

/// A view resolved down to the collection it reads.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The collection at the bottom of the chain.
    pub collection: String,
    /// The views' pipelines, innermost first, as one.
    pub pipeline: Vec<Document>,
    /// The view's default collation, as stored; `None`: binary strings.
    pub collation: Option<Document>,
}

/// A view's definition as stored.
#[derive(Debug, Clone)]
pub struct Definition {
    pub name: String,
    pub view_on: String,
    pub pipeline: Vec<Document>,
    pub collation: Option<Document>,
}

/// The collation a read of `view` runs under: the view's (binary strings when it has none),
/// which a read may name again but not replace (167).
pub fn read_collation(
    view: &Resolved,
    requested: Option<&Document>,
) -> Result<Document, CommandError> {
    let own = view.collation.clone();
    if let Some(requested) = requested.filter(|r| !r.is_empty()) {
        let parse = |spec: &Document| Collation::parse(spec).map_err(odm_engine::Error::from);
        let mine = own.as_ref().map(parse).transpose()?.flatten();
        if parse(requested)? != mine {
            return Err(CommandError::new(
                ErrorCode::OPTION_NOT_SUPPORTED_ON_VIEW,
                "Cannot override a view's default collation",
            ));
        }
    }
    Ok(own.unwrap_or_else(|| doc! {"locale": "simple"}))
}

/// The definition of view `name` of `db` (named `db_name`), if it is one.
pub fn definition(
    db: &Database,
    db_name: &str,
    name: &str,
) -> Result<Option<Definition>, CommandError> {
    // Most commands name a collection, or a database without views: no snapshot for them.
    if !db.has_collection(VIEWS_COLLECTION) || db.has_collection(name) {
        return Ok(None);
    }
    let txn = db.read()?;
    if txn.collection_options(name).is_some() {
        return Ok(None);
    }
    let Some(views) = txn.collection(VIEWS_COLLECTION)? else {
        return Ok(None);
    };
    let Some(stored) = views.get(&Bson::String(format!("{db_name}.{name}")))? else {
        return Ok(None);
    };
    let stored = stored.decode::<Document>()?;
    parse(name, &stored).map(Some)
}

fn parse(name: &str, stored: &Document) -> Result<Definition, CommandError> {
    let corrupt = || {
        CommandError::new(
            ErrorCode::INVALID_VIEW_DEFINITION,
            format!("the definition of view {name} in {VIEWS_COLLECTION} is malformed"),
        )
    };
    let view_on = stored.get_str("viewOn").map_err(|_| corrupt())?.to_owned();
    let pipeline = match stored.get("pipeline") {
        None => Vec::new(),
        Some(Bson::Array(stages)) => stages
            .iter()
            .map(|s| s.as_document().cloned().ok_or_else(corrupt))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(corrupt()),
    };
    let collation = match stored.get("collation") {
        None => None,
        Some(Bson::Document(c)) => Some(c.clone()),
        Some(_) => return Err(corrupt()),
    };
    Ok(Definition {
        name: name.to_owned(),
        view_on,
        pipeline,
        collation,
    })
}

/// `name` of `ctx.db` resolved to the collection it reads, when it is a view.
pub fn resolve(ctx: &Ctx<'_>, name: &str) -> Result<Option<Resolved>, CommandError> {
    let Some(db) = ctx.server.storage.get(&ctx.db)? else {
        return Ok(None);
    };
    resolve_in(&db, &ctx.db, name)
}

fn resolve_in(db: &Database, db_name: &str, name: &str) -> Result<Option<Resolved>, CommandError> {
    let Some(mut view) = definition(db, db_name, name)? else {
        return Ok(None);
    };
    let collation = view.collation.clone();
    let mut pipelines = vec![view.pipeline.clone()];
    let mut seen = vec![name.to_owned()];
    loop {
        if seen.contains(&view.view_on) {
            return Err(CommandError::new(
                ErrorCode::GRAPH_CONTAINS_CYCLE,
                format!(
                    "View cycle detected: {} -> {}",
                    seen.join(" -> "),
                    view.view_on
                ),
            ));
        }
        match definition(db, db_name, &view.view_on)? {
            None => break,
            Some(inner) => {
                if seen.len() >= MAX_DEPTH {
                    return Err(CommandError::new(
                        ErrorCode::VIEW_DEPTH_LIMIT_EXCEEDED,
                        format!(
                            "View depth too deep or view cycle detected. Maximum depth is {MAX_DEPTH}"
                        ),
                    ));
                }
                seen.push(inner.name.clone());
                pipelines.push(inner.pipeline.clone());
                view = inner;
            }
        }
    }
    Ok(Some(Resolved {
        collection: view.view_on,
        pipeline: pipelines.into_iter().rev().flatten().collect(),
        collation,
    }))
}

/// Refuses a write or an index on `name` when it is a view (166).
pub fn refuse_view(ctx: &Ctx<'_>, name: &str) -> Result<(), CommandError> {
    let Some(db) = ctx.server.storage.get(&ctx.db)? else {
        return Ok(());
    };
    if definition(&db, &ctx.db, name)?.is_some() {
        return Err(not_a_collection(&ctx.db, name));
    }
    Ok(())
}

/// MongoDB's answer to what a view cannot do.
pub fn not_a_collection(db: &str, name: &str) -> CommandError {
    CommandError::new(
        ErrorCode::COMMAND_NOT_SUPPORTED_ON_VIEW,
        format!("Namespace {db}.{name} is a view, not a collection"),
    )
}

/// `create` with `viewOn`: checks the definition (a source name, a pipeline without `$out`
/// or `$merge`, no cycle) and stores it.
pub fn create(ctx: &Ctx<'_>, name: &str, command: &Document) -> Result<(), CommandError> {
    let view_on = match command.get("viewOn") {
        Some(Bson::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                "'viewOn' must be the name of a collection or a view",
            ));
        }
    };
    let pipeline: Vec<Document> = match command.get("pipeline") {
        None => Vec::new(),
        Some(Bson::Array(stages)) => stages
            .iter()
            .map(|s| {
                s.as_document().cloned().ok_or_else(|| {
                    CommandError::new(
                        ErrorCode::TYPE_MISMATCH,
                        "a view's pipeline holds stage documents",
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                "'pipeline' must be an array",
            ));
        }
    };
    if let Some(stage) = pipeline
        .iter()
        .filter_map(|s| s.keys().next())
        .find(|n| matches!(n.as_str(), "$out" | "$merge"))
    {
        return Err(CommandError::new(
            ErrorCode::OPTION_NOT_SUPPORTED_ON_VIEW,
            format!("The aggregation stage {stage} is not allowed in a view definition"),
        ));
    }
    odm_engine::aggregate::AggregateOptions::default().check(&pipeline)?;
    let db = ctx.server.storage.get_or_create(&ctx.db)?;
    if db.read()?.collection_options(name).is_some() || definition(&db, &ctx.db, name)?.is_some() {
        return Err(CommandError::new(
            ErrorCode::NAMESPACE_EXISTS,
            format!("Collection {}.{name} already exists.", ctx.db),
        ));
    }
    let collation = view_collation(&db, &ctx.db, &view_on, command)?;
    let id = format!("{}.{name}", ctx.db);
    let mut stored = doc! {"_id": &id, "viewOn": &view_on, "pipeline": pipeline};
    if let Some(collation) = collation {
        stored.insert("collation", collation);
    }
    db.write(|t| t.insert_one(VIEWS_COLLECTION, &stored).map(std::mem::drop))?;
    // A view that reaches itself is removed again and refused.
    if let Err(e) = resolve_in(&db, &ctx.db, name) {
        db.write(|t| {
            t.delete_by_id(VIEWS_COLLECTION, &Bson::String(id.clone()))
                .map(std::mem::drop)
        })?;
        return Err(e);
    }
    Ok(())
}

/// The default collation a new view keeps (MongoDB's form of it, every field filled in;
/// `None` for binary strings): the one `create` names, which must be that of the view it reads
/// if it reads one (167).
fn view_collation(
    db: &Database,
    db_name: &str,
    view_on: &str,
    command: &Document,
) -> Result<Option<Document>, CommandError> {
    let given = match command.get("collation") {
        None => None,
        Some(Bson::Document(spec)) => Collation::parse(spec).map_err(odm_engine::Error::from)?,
        Some(_) => {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                "BSON field 'collation' is the wrong type, expected type 'object'",
            ));
        }
    };
    if let Some(inner) = definition(db, db_name, view_on)? {
        let theirs = match &inner.collation {
            Some(spec) => Collation::parse(spec).map_err(odm_engine::Error::from)?,
            None => None,
        };
        if theirs != given {
            return Err(CommandError::new(
                ErrorCode::OPTION_NOT_SUPPORTED_ON_VIEW,
                format!(
                    "View {db_name}.{view_on} has a different default collation than the view being created"
                ),
            ));
        }
    }
    Ok(given.map(|c| c.normalized().clone()))
}

/// Drops view `name` of `db`; whether it was one.
pub fn drop(db: &Arc<Database>, db_name: &str, name: &str) -> Result<bool, CommandError> {
    if definition(db, db_name, name)?.is_none() {
        return Ok(false);
    }
    let id = Bson::String(format!("{db_name}.{name}"));
    db.write(|t| t.delete_by_id(VIEWS_COLLECTION, &id).map(std::mem::drop))?;
    Ok(true)
}

/// Every view of `db`, in name order.
pub fn list(db: &Database, db_name: &str) -> Result<Vec<Definition>, CommandError> {
    let txn = db.read()?;
    let Some(views) = txn.collection(VIEWS_COLLECTION)? else {
        return Ok(Vec::new());
    };
    let prefix = format!("{db_name}.");
    let mut out = Vec::new();
    for stored in views.scan()? {
        let stored = stored?.decode::<Document>()?;
        let Some(name) = stored
            .get_str("_id")
            .ok()
            .and_then(|id| id.strip_prefix(&prefix))
        else {
            continue;
        };
        out.push(parse(name, &stored)?);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// A `find`'s options as the stages that follow a view's pipeline.
pub fn find_stages(options: &odm_engine::query::FindOptions, filter: &Document) -> Vec<Document> {
    let mut stages = Vec::new();
    if !filter.is_empty() {
        stages.push(doc! {"$match": filter.clone()});
    }
    if let Some(sort) = &options.sort {
        stages.push(doc! {"$sort": sort.clone()});
    }
    if options.skip > 0 {
        stages.push(doc! {"$skip": i64::try_from(options.skip).unwrap_or(i64::MAX)});
    }
    if let Some(limit) = options.limit {
        stages.push(doc! {"$limit": i64::try_from(limit).unwrap_or(i64::MAX)});
    }
    if let Some(projection) = &options.projection {
        stages.push(doc! {"$project": projection.clone()});
    }
    stages
}
