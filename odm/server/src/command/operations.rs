//! Finding and stopping work: `currentOp` (and the `$currentOp` stage), `killOp`,
//! `killSessions`, `killAllSessions` and `killAllSessionsByPattern` over the registry of running
//! operations (`crate::operations`), the cursors and the sessions.
//!
//! Rules, as MongoDB's: these run on the `admin` database (`Unauthorized` elsewhere);
//! `currentOp` lists active operations, and with `$all: true` the idle connections too,
//! filtered by the query its other fields make; the stage lists the same with
//! `idleConnections: true`, and also idle sessions (`idleSessions`, on by default) and idle
//! cursors (`idleCursors`); `killOp`
//! marks an operation killed and answers at once (the operation fails with `Interrupted` at its
//! next check); killing a session kills its running operations, closes its cursors and aborts
//! its transaction. `killAllSessionsByPattern` selects sessions by `lsid`, by owner (`users`),
//! by the roles the owner holds (`roles`, read from the users' documents) and by the owner's
//! digest (`uid`: SHA-256 of `user@db`, of nothing for sessions without a user).

use bson::{Bson, Document, doc};
use odm_engine::ErrorCode;
use odm_engine::query::Filter;

use super::{Args, CommandError, CommandResult, Ctx};
use crate::auth::Roles;
use crate::session::SessionId;

/// The fields of a command that are not `currentOp`'s filter.
const NOT_FILTER: [&str; 14] = [
    "currentOp",
    "$ownOps",
    "$all",
    "$db",
    "lsid",
    "$clusterTime",
    "$readPreference",
    "comment",
    "maxTimeMS",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "txnNumber",
    "autocommit",
];

fn admin_only(ctx: &Ctx<'_>, name: &str) -> Result<(), CommandError> {
    if ctx.db == "admin" {
        return Ok(());
    }
    Err(CommandError::new(
        ErrorCode::UNAUTHORIZED,
        format!("{name} may only be run against the admin database."),
    ))
}

/// The operations running now, as `currentOp`'s `inprog` entries, and with `idle` the open
/// connections that run none: only the caller's user's when `own` (with authentication on).
pub fn current(ctx: &Ctx<'_>, own: bool, idle: bool) -> Vec<Document> {
    let own = own && ctx.server.config.auth;
    let running = ctx.server.operations.list();
    let mut listed: Vec<Document> = running
        .iter()
        .filter(|op| !own || op.user == ctx.conn.user)
        .map(|op| op.to_document())
        .collect();
    if idle {
        let busy: Vec<u64> = running.iter().map(|op| op.connection_id).collect();
        let user = own.then_some(&ctx.conn.user);
        listed.extend(ctx.server.connections.idle(&busy, user));
    }
    listed
}

pub fn current_op(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    admin_only(ctx, "currentOp")?;
    let args = Args::new(command, "currentOp");
    let all = args.flag("$all")?;
    let own = args.flag("$ownOps")?;
    let mut query = command.clone();
    for field in NOT_FILTER {
        query.remove(field);
    }
    let filter =
        Filter::parse(&query).map_err(|e| CommandError::from(odm_engine::Error::from(e)))?;
    let mut inprog = Vec::new();
    for op in current(ctx, own, all) {
        let raw = super::encode(&op)?;
        if filter.matches(&raw) {
            inprog.push(op);
        }
    }
    Ok(doc! {"inprog": inprog}.into())
}

/// What a `$currentOp` stage lists besides running operations: MongoDB's four switches.
#[derive(Debug, Clone, Copy)]
#[allow(clippy::struct_excessive_bools)]
struct Listing {
    all_users: bool,
    idle_connections: bool,
    idle_sessions: bool,
    idle_cursors: bool,
}

/// The documents of a `$currentOp` stage, with its options checked: running operations, with
/// `idleConnections: true` the connections that run none, unless `idleSessions: false` the
/// sessions holding a transaction between commands, and with `idleCursors: true` the cursors
/// waiting for a `getMore`.
pub fn current_op_stage(ctx: &Ctx<'_>, spec: &Bson) -> Result<Vec<Document>, CommandError> {
    if ctx.db != "admin" {
        return Err(CommandError::new(
            ErrorCode::INVALID_NAMESPACE,
            "$currentOp must be run against the 'admin' database with {aggregate: 1}",
        ));
    }
    let listing = stage_options(spec)?;
    let mut docs = current(ctx, !listing.all_users, listing.idle_connections);
    let own = !listing.all_users && ctx.server.config.auth;
    if listing.idle_sessions {
        let running: Vec<SessionId> = ctx
            .server
            .operations
            .list()
            .iter()
            .filter_map(|op| op.session)
            .collect();
        for (id, txn_number, user) in ctx.server.sessions.in_transaction() {
            if running.contains(&id) || (own && user != ctx.conn.user) {
                continue;
            }
            docs.push(doc! {
                "type": "idleSession",
                "active": false,
                "lsid": id.to_lsid(),
                "transaction": {"parameters": {"txnNumber": txn_number, "autocommit": false}},
            });
        }
    }
    if listing.idle_cursors {
        for (cursor_id, ns, session, idle) in ctx.server.cursors.idle() {
            let mut entry = doc! {
                "type": "idleCursor",
                "active": false,
                "ns": ns,
                "cursor": {
                    "cursorId": cursor_id,
                    "idleMillis": i64::try_from(idle.as_millis()).unwrap_or(i64::MAX),
                },
            };
            if let Some(session) = session {
                entry.insert("lsid", session.to_lsid());
            }
            docs.push(entry);
        }
    }
    Ok(docs)
}

/// `$currentOp`'s options, MongoDB's five, each a boolean.
fn stage_options(spec: &Bson) -> Result<Listing, CommandError> {
    let Bson::Document(spec) = spec else {
        return Err(CommandError::new(
            ErrorCode::FAILED_TO_PARSE,
            "$currentOp options must be specified in an object",
        ));
    };
    let mut listing = Listing {
        all_users: false,
        idle_connections: false,
        idle_sessions: true,
        idle_cursors: false,
    };
    for (key, value) in spec {
        let Bson::Boolean(on) = value else {
            return Err(CommandError::new(
                ErrorCode::FAILED_TO_PARSE,
                format!("The '{key}' parameter of the $currentOp stage must be a boolean value"),
            ));
        };
        match key.as_str() {
            "allUsers" => listing.all_users = *on,
            "idleSessions" => listing.idle_sessions = *on,
            "idleCursors" => listing.idle_cursors = *on,
            // Every operation of a single server is local (the option is for mongos).
            "localOps" => {}
            "idleConnections" => listing.idle_connections = *on,
            other => {
                return Err(CommandError::new(
                    ErrorCode::FAILED_TO_PARSE,
                    format!("Unrecognized option '{other}' in $currentOp stage."),
                ));
            }
        }
    }
    Ok(listing)
}

pub fn kill_op(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    admin_only(ctx, "killOp")?;
    let args = Args::new(command, "killOp");
    let op = args.get("op").ok_or_else(|| args.missing("op"))?;
    let opid = odm_engine::expr::whole_number(op)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                format!("Did not provide \"op\" field as a valid opid: {op}"),
            )
        })?;
    ctx.server.operations.kill(opid);
    Ok(doc! {"info": "attempting to kill op"}.into())
}

/// Kills the sessions `ids`: their operations, their cursors, their transactions.
fn kill_listed(ctx: &Ctx<'_>, ids: &[SessionId]) {
    let chosen = |id: SessionId| ids.contains(&id);
    ctx.server.operations.kill_sessions(chosen);
    ctx.server.cursors.kill_sessions(chosen);
    ctx.server.sessions.end_matching(|id, _| chosen(id));
}

pub fn kill_sessions(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "killSessions");
    let listed = args.documents("killSessions")?.unwrap_or_default();
    // Every id is checked before any session ends: a malformed list changes nothing.
    let ids = listed
        .iter()
        .map(|lsid| SessionId::from_lsid(lsid))
        .collect::<Result<Vec<_>, _>>()?;
    kill_listed(ctx, &ids);
    Ok(Document::new().into())
}

/// A `{user, db}` of `killAllSessions` (or of a pattern's `users`).
fn user_of(entry: &Bson) -> Result<(String, String), CommandError> {
    match entry {
        Bson::Document(d) => match (d.get_str("db"), d.get_str("user")) {
            (Ok(db), Ok(user)) => Ok((db.to_owned(), user.to_owned())),
            _ => Err(CommandError::new(
                ErrorCode::IDL_FAILED_TO_PARSE,
                "a user to kill the sessions of is {user: <name>, db: <database>}",
            )),
        },
        _ => Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            "a user to kill the sessions of must be an object",
        )),
    }
}

/// `killAllSessions: [{user, db}, ...]`: the sessions of those users, every session for an
/// empty list.
pub fn kill_all_sessions(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "killAllSessions");
    let users = args
        .array("killAllSessions")?
        .ok_or_else(|| args.missing("killAllSessions"))?
        .iter()
        .map(user_of)
        .collect::<Result<Vec<_>, _>>()?;
    let pattern = Pattern {
        users: (!users.is_empty()).then_some(users),
        ..Pattern::default()
    };
    kill_patterns(ctx, &[pattern])?;
    Ok(Document::new().into())
}

/// A `killAllSessionsByPattern` pattern: the sessions that every field it has selects (of these
/// users, of users with one of these roles, of the owner with this digest, this one session).
#[derive(Debug, Default)]
struct Pattern {
    users: Option<Vec<(String, String)>>,
    roles: Option<Vec<(String, String)>>,
    uid: Option<[u8; 32]>,
    lsid: Option<SessionId>,
}

/// A `{role, db}` of a pattern's `roles`.
fn role_of(entry: &Bson) -> Result<(String, String), CommandError> {
    match entry {
        Bson::Document(d) => match (d.get_str("role"), d.get_str("db")) {
            (Ok(role), Ok(db)) => Ok((role.to_owned(), db.to_owned())),
            _ => Err(CommandError::new(
                ErrorCode::IDL_FAILED_TO_PARSE,
                "a role to kill the sessions of is {role: <name>, db: <database>}",
            )),
        },
        _ => Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            "a role to kill the sessions of must be an object",
        )),
    }
}

/// A pattern's `uid`: the SHA-256 digest of an owner's name, as binary data of 32 bytes.
fn digest_of(value: &Bson) -> Result<[u8; 32], CommandError> {
    let Bson::Binary(binary) = value else {
        return Err(CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            "a session pattern's uid must be binary data",
        ));
    };
    <[u8; 32]>::try_from(binary.bytes.as_slice()).map_err(|_| {
        CommandError::new(
            ErrorCode::BAD_VALUE,
            format!(
                "Unsupported SHA256Block hash length: {} (a uid is 32 bytes)",
                binary.bytes.len()
            ),
        )
    })
}

impl Pattern {
    fn parse(entry: &Bson) -> Result<Pattern, CommandError> {
        let Bson::Document(d) = entry else {
            return Err(CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                "a session pattern must be an object",
            ));
        };
        let mut pattern = Pattern::default();
        for (key, value) in d {
            match (key.as_str(), value) {
                ("users", Bson::Array(users)) => {
                    pattern.users = Some(users.iter().map(user_of).collect::<Result<_, _>>()?);
                }
                ("roles", Bson::Array(roles)) => {
                    pattern.roles = Some(roles.iter().map(role_of).collect::<Result<_, _>>()?);
                }
                ("uid", uid) => pattern.uid = Some(digest_of(uid)?),
                ("lsid", Bson::Document(lsid)) => {
                    pattern.lsid = Some(SessionId::from_lsid(lsid)?);
                }
                ("users" | "roles" | "lsid", _) => {
                    return Err(CommandError::new(
                        ErrorCode::TYPE_MISMATCH,
                        format!(
                            "a session pattern's {key} must be an {}",
                            if key == "lsid" { "object" } else { "array" }
                        ),
                    ));
                }
                _ => {
                    return Err(CommandError::new(
                        ErrorCode::IDL_FAILED_TO_PARSE,
                        format!("BSON field 'KillAllSessionsByPattern.{key}' is an unknown field."),
                    ));
                }
            }
        }
        Ok(pattern)
    }

    /// Whether the pattern selects session `id` of `user`; `roles` holds every user's roles.
    fn selects(&self, id: SessionId, user: Option<&(String, String)>, roles: &Roles) -> bool {
        let has_role = |wanted: &Vec<(String, String)>| {
            user.and_then(|u| roles.get(u))
                .is_some_and(|granted| granted.iter().any(|r| wanted.contains(r)))
        };
        self.lsid.is_none_or(|l| l == id)
            && self
                .users
                .as_ref()
                .is_none_or(|users| user.is_some_and(|u| users.contains(u)))
            && self.roles.as_ref().is_none_or(has_role)
            && self
                .uid
                .is_none_or(|uid| uid == crate::auth::user_digest(user))
    }
}

/// `killAllSessionsByPattern: [pattern, ...]`: the sessions any pattern selects, every
/// session for an empty list.
pub fn kill_all_sessions_by_pattern(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "killAllSessionsByPattern");
    let mut patterns = args
        .array("killAllSessionsByPattern")?
        .ok_or_else(|| args.missing("killAllSessionsByPattern"))?
        .iter()
        .map(Pattern::parse)
        .collect::<Result<Vec<_>, _>>()?;
    if patterns.is_empty() {
        patterns.push(Pattern::default());
    }
    kill_patterns(ctx, &patterns)?;
    Ok(Document::new().into())
}

fn kill_patterns(ctx: &Ctx<'_>, patterns: &[Pattern]) -> Result<(), CommandError> {
    let roles = if patterns.iter().any(|p| p.roles.is_some()) {
        crate::auth::roles_by_user(&ctx.server.storage)?
    } else {
        Roles::new()
    };
    let ended = ctx
        .server
        .sessions
        .end_matching(|id, user| patterns.iter().any(|p| p.selects(id, user, &roles)));
    let chosen = |id: SessionId| ended.contains(&id);
    ctx.server.operations.kill_sessions(chosen);
    ctx.server.cursors.kill_sessions(chosen);
    Ok(())
}
