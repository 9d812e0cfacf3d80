//! The handshake and what clients and tools ask about the server: `hello` (and its legacy
//! names), `buildInfo`, `getCmdLineOpts`, `getParameter`, `serverStatus`, `hostInfo`,
//! `whatsmyuri`, `connectionStatus`, `getLog`, `listCommands`, and the session commands that
//! need no transaction (`endSessions`, `refreshSessions`; killing sessions is in `operations`).

use std::sync::atomic::Ordering;

use bson::{Bson, DateTime, Document, doc};

use super::{Args, COMMANDS, CommandResult, Ctx};
use crate::compression;
use crate::wire::{MAX_DOCUMENT_SIZE, MAX_MESSAGE_SIZE};

/// The MongoDB release whose behaviour the server follows, and its wire version.
pub const VERSION: &str = "8.0.0";
pub const VERSION_ARRAY: [i32; 4] = [8, 0, 0, 0];
pub const MAX_WIRE_VERSION: i32 = 25;
/// MongoDB's `maxWriteBatchSize`.
pub const MAX_WRITE_BATCH_SIZE: i32 = 100_000;
/// MongoDB's `logicalSessionTimeoutMinutes`.
pub const SESSION_TIMEOUT_MINUTES: i32 = 30;

/// The application name a handshake's `client` metadata gives.
pub fn app_name(command: &Document) -> Option<&str> {
    command
        .get_document("client")
        .and_then(|c| c.get_document("application"))
        .and_then(|a| a.get_str("name"))
        .ok()
}

pub fn hello(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "hello");
    let legacy = !command.contains_key("hello");
    await_topology_change(ctx, &args)?;
    if let Some(app) = app_name(command) {
        ctx.conn.app_name = Some(app.to_owned());
        ctx.server.connections.describe(ctx.conn);
    }
    let mut reply = Document::new();
    if args.flag("helloOk")? {
        reply.insert("helloOk", true);
    }
    if legacy {
        reply.insert("ismaster", true);
    } else {
        reply.insert("isWritablePrimary", true);
    }
    reply.insert("topologyVersion", ctx.server.topology_version());
    if let Some(name) = &ctx.server.config.replica_set {
        let me = ctx.server.address.clone();
        reply.insert("hosts", vec![me.clone()]);
        reply.insert("setName", name.clone());
        reply.insert("setVersion", 1);
        reply.insert("secondary", false);
        reply.insert("primary", me.clone());
        reply.insert("me", me);
        reply.insert(
            "electionId",
            bson::oid::ObjectId::from_bytes([0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1]),
        );
        let now = DateTime::now();
        let op_time = doc! {"ts": ctx.server.clock.tick(), "t": 1i64};
        reply.insert(
            "lastWrite",
            doc! {
                "opTime": op_time.clone(),
                "lastWriteDate": now,
                "majorityOpTime": op_time,
                "majorityWriteDate": now,
            },
        );
    }
    reply.insert("maxBsonObjectSize", MAX_DOCUMENT_SIZE as i32);
    reply.insert("maxMessageSizeBytes", MAX_MESSAGE_SIZE as i32);
    reply.insert("maxWriteBatchSize", MAX_WRITE_BATCH_SIZE);
    reply.insert("localTime", DateTime::now());
    reply.insert("logicalSessionTimeoutMinutes", SESSION_TIMEOUT_MINUTES);
    reply.insert("connectionId", ctx.conn.id as i64);
    reply.insert("minWireVersion", 0);
    reply.insert("maxWireVersion", MAX_WIRE_VERSION);
    reply.insert("readOnly", false);
    if let Some(offered) = args.array("compression")? {
        let names: Vec<String> = offered
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        ctx.conn.compressors = compression::negotiate(&names, &ctx.server.config.compressors);
        let agreed: Vec<&str> = ctx.conn.compressors.iter().map(|c| c.name()).collect();
        reply.insert("compression", agreed);
    }
    if let Some(user) = args.str("saslSupportedMechs")?
        && crate::auth::user_exists(&ctx.server.storage, user)
    {
        reply.insert("saslSupportedMechs", vec!["SCRAM-SHA-256"]);
    }
    if let Some(first) = args.doc("speculativeAuthenticate")?
        && let Some(reply_doc) = crate::auth::speculative(ctx, first)
    {
        reply.insert("speculativeAuthenticate", reply_doc);
    }
    Ok(reply.into())
}

/// A streaming monitor's `hello` names the topology version it knows and how long it may
/// wait: as MongoDB does while nothing changes, the reply waits that long (drivers would
/// otherwise ask again at once, in a loop). The topology of one server never changes.
fn await_topology_change(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<(), super::CommandError> {
    if ctx.conn.streamed {
        return Ok(());
    }
    let (Some(known), Some(wait)) = (args.doc("topologyVersion")?, args.i64("maxAwaitTimeMS")?)
    else {
        return Ok(());
    };
    let same = known.get_object_id("processId").ok() == Some(ctx.server.process_id);
    if !same {
        return Ok(());
    }
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_millis(wait.clamp(0, 60_000) as u64);
    while std::time::Instant::now() < deadline && !ctx.server.is_stopping() {
        std::thread::sleep(
            std::time::Duration::from_millis(50).min(deadline - std::time::Instant::now()),
        );
    }
    Ok(())
}

pub fn ping(_: &mut Ctx<'_>, _: &Document) -> CommandResult {
    Ok(Document::new().into())
}

pub fn build_info(_: &mut Ctx<'_>, _: &Document) -> CommandResult {
    Ok(doc! {
        "version": VERSION,
        "gitVersion": "odm",
        "versionArray": VERSION_ARRAY.to_vec(),
        "bits": 64,
        "debug": false,
        "maxBsonObjectSize": MAX_DOCUMENT_SIZE as i32,
        "storageEngines": ["odm"],
        "javascriptEngine": "none",
        "modules": [],
        "openssl": {"running": "rustls"},
        "buildEnvironment": {"target_os": std::env::consts::OS, "target_arch": std::env::consts::ARCH},
        "odm": {"version": env!("CARGO_PKG_VERSION")},
    }
    .into())
}

pub fn get_cmd_line_opts(ctx: &mut Ctx<'_>, _: &Document) -> CommandResult {
    let config = &ctx.server.config;
    let mut net =
        doc! {"bindIp": config.bind.ip().to_string(), "port": i32::from(config.bind.port())};
    if config.tls.is_some() {
        net.insert("tls", doc! {"mode": "requireTLS"});
    }
    let mut parsed = doc! {"net": net};
    if let Some(name) = &config.replica_set {
        parsed.insert("replication", doc! {"replSet": name});
    }
    if config.auth {
        parsed.insert("security", doc! {"authorization": "enabled"});
    }
    Ok(doc! {"argv": config.argv.clone(), "parsed": parsed}.into())
}

/// The parameters `getParameter` knows, with their values.
fn parameters(ctx: &Ctx<'_>) -> Document {
    doc! {
        "featureCompatibilityVersion": {"version": crate::storage::FEATURE_COMPATIBILITY_VERSION},
        "authenticationMechanisms": ["SCRAM-SHA-256"],
        "enableTestCommands": ctx.server.config.test_commands,
        "transactionLifetimeLimitSeconds": ctx.server.config.transaction_lifetime.as_secs() as i32,
        "cursorTimeoutMillis": ctx.server.config.cursor_timeout.as_millis() as i64,
        "maxBSONDepth": odm_engine::MAX_STORED_DEPTH as i32,
        "internalQueryMaxBlockingSortMemoryUsageBytes": odm_engine::query::SORT_MEMORY_LIMIT as i64,
        "requireApiVersion": false,
        "ttlMonitorEnabled": ctx.server.ttl.enabled(),
        "ttlMonitorSleepSecs": i32::try_from(ctx.server.ttl.sleep_secs()).unwrap_or(i32::MAX),
    }
}

/// `setParameter` on `admin`: the parameters this server can change while it runs (the TTL
/// monitor's); any other is refused by name, and nothing changes when one is refused.
pub fn set_parameter(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    if ctx.db != "admin" {
        return Err(super::CommandError::new(
            odm_engine::ErrorCode::UNAUTHORIZED,
            "setParameter may only be run against the admin database.",
        ));
    }
    let known = parameters(ctx);
    let mut changes: Vec<(&str, &Bson)> = Vec::new();
    for (name, value) in command.iter().skip(1) {
        if super::args::is_generic_argument(name) {
            continue;
        }
        let settable = matches!(name.as_str(), "ttlMonitorEnabled" | "ttlMonitorSleepSecs");
        if !settable {
            let reason = if known.contains_key(name) {
                format!("parameter `{name}` cannot be set at runtime by this server")
            } else {
                format!(
                    "attempted to set unrecognized parameter [{name}], use help:true to see options"
                )
            };
            return Err(super::CommandError::new(
                odm_engine::ErrorCode::INVALID_OPTIONS,
                reason,
            ));
        }
        changes.push((name.as_str(), value));
    }
    if changes.is_empty() {
        return Err(super::CommandError::new(
            odm_engine::ErrorCode::INVALID_OPTIONS,
            "no option found to set, use help:true to see options",
        ));
    }
    let ttl = &ctx.server.ttl;
    let mut reply = Document::new();
    let mut apply: Vec<Box<dyn FnOnce()>> = Vec::new();
    for (name, value) in changes {
        if name == "ttlMonitorEnabled" {
            let Bson::Boolean(on) = value else {
                return Err(super::CommandError::bad_value(
                    "ttlMonitorEnabled must be a boolean",
                ));
            };
            reply.insert("was", ttl.enabled());
            let on = *on;
            apply.push(Box::new(move || ttl.set_enabled(on)));
        } else {
            let secs = super::args::whole_number(value)
                .and_then(|n| u64::try_from(n).ok())
                .filter(|&n| (1..=i64::from(i32::MAX) as u64).contains(&n))
                .ok_or_else(|| {
                    super::CommandError::bad_value(
                        "ttlMonitorSleepSecs must be a whole number of seconds, at least 1",
                    )
                })?;
            reply.insert("was", i32::try_from(ttl.sleep_secs()).unwrap_or(i32::MAX));
            apply.push(Box::new(move || ttl.set_sleep_secs(secs)));
        }
    }
    for change in apply {
        change();
    }
    Ok(reply.into())
}

pub fn get_parameter(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let all = parameters(ctx);
    let everything = matches!(command.get("getParameter"), Some(Bson::String(s)) if s == "*")
        || matches!(command.get("getParameter"), Some(Bson::Document(d)) if d.get_bool("allParameters").unwrap_or(false));
    if everything {
        return Ok(all.into());
    }
    let mut reply = Document::new();
    for (name, _) in command.iter().skip(1) {
        if let Some(value) = all.get(name) {
            reply.insert(name, value.clone());
        }
    }
    if reply.is_empty() {
        return Err(super::CommandError::new(
            odm_engine::ErrorCode::INVALID_OPTIONS,
            "no option found to get",
        ));
    }
    Ok(reply.into())
}

pub fn server_status(ctx: &mut Ctx<'_>, _: &Document) -> CommandResult {
    let s = &ctx.server.stats;
    let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed) as i64;
    let current = n(&s.connections_current);
    let max = ctx.server.config.max_connections as i64;
    let mut reply = doc! {
        "host": hostname(),
        "version": VERSION,
        "process": "odm",
        "pid": i64::from(std::process::id()),
        "uptime": ctx.server.started.elapsed().as_secs_f64(),
        "uptimeMillis": ctx.server.started.elapsed().as_millis() as i64,
        "localTime": DateTime::now(),
        "connections": {"current": current, "available": (max - current).max(0), "totalCreated": n(&s.connections_total)},
        "network": {"bytesIn": n(&s.bytes_in), "bytesOut": n(&s.bytes_out), "numRequests": n(&s.requests)},
        "opcounters": {
            "insert": n(&s.op_insert), "query": n(&s.op_query), "update": n(&s.op_update),
            "delete": n(&s.op_delete), "getmore": n(&s.op_getmore), "command": n(&s.op_command),
        },
        "metrics": {
            "cursor": {"open": {"total": ctx.server.cursors.open_count() as i64}},
            "ttl": ctx.server.ttl.metrics(),
        },
        "storageEngine": {"name": "odm", "supportsCommittedReads": true, "persistent": true},
        "transactions": s.transactions.to_document(),
    };
    if let Some(name) = &ctx.server.config.replica_set {
        reply.insert("repl", doc! {"setName": name, "isWritablePrimary": true, "hosts": [ctx.server.address.clone()]});
    }
    Ok(reply.into())
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

pub fn host_info(_: &mut Ctx<'_>, _: &Document) -> CommandResult {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as i32;
    Ok(doc! {
        "system": {"currentTime": DateTime::now(), "hostname": hostname(), "cpuAddrSize": 64, "numCores": cores, "cpuArch": std::env::consts::ARCH},
        "os": {"type": std::env::consts::OS, "name": std::env::consts::OS},
        "extra": {},
    }
    .into())
}

pub fn whatsmyuri(ctx: &mut Ctx<'_>, _: &Document) -> CommandResult {
    Ok(doc! {"you": ctx.conn.peer.clone()}.into())
}

pub fn connection_status(ctx: &mut Ctx<'_>, _: &Document) -> CommandResult {
    let users: Vec<Document> = ctx
        .conn
        .user
        .iter()
        .map(|(db, user)| doc! {"user": user, "db": db})
        .collect();
    let roles: Vec<Document> = ctx
        .conn
        .user
        .iter()
        .map(|(db, _)| doc! {"role": "root", "db": db})
        .collect();
    Ok(doc! {"authInfo": {"authenticatedUsers": users, "authenticatedUserRoles": roles}}.into())
}

/// `getLog`: the log names (`"*"`), or a log's lines (see [`crate::log`]).
pub fn get_log(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    match command.get("getLog") {
        Some(Bson::String(s)) if s == "*" => {
            Ok(doc! {"names": ["global", "startupWarnings"]}.into())
        }
        Some(Bson::String(name)) => match ctx.server.log.get(name) {
            Some((written, lines)) => Ok(doc! {
                "totalLinesWritten": i64::try_from(written).unwrap_or(i64::MAX),
                "log": lines,
            }
            .into()),
            None => Err(super::CommandError::bad_value(format!(
                "No log named '{name}'"
            ))),
        },
        _ => Err(super::CommandError::bad_value(
            "getLog takes a log name or \"*\"",
        )),
    }
}

pub fn list_commands(ctx: &mut Ctx<'_>, _: &Document) -> CommandResult {
    let mut commands = Document::new();
    let test_commands = ctx.server.config.test_commands;
    let available = COMMANDS
        .iter()
        .filter(|spec| super::lookup(spec.name, test_commands).is_some());
    for spec in available {
        commands.insert(
            spec.name,
            doc! {"help": "", "requiresAuth": spec.access == super::Access::Authenticated},
        );
    }
    Ok(doc! {"commands": commands}.into())
}

/// Monitoring services the server does not run.
pub fn not_enabled(_: &mut Ctx<'_>, _: &Document) -> CommandResult {
    Ok(doc! {"state": "disabled"}.into())
}

pub fn end_sessions(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    end_listed(ctx, command, "endSessions")
}

fn end_listed(ctx: &mut Ctx<'_>, command: &Document, name: &'static str) -> CommandResult {
    let args = Args::new(command, name);
    let ids = args.documents(name)?.unwrap_or_default();
    // Every id is checked before any session ends: a malformed list changes nothing.
    let ids = ids
        .iter()
        .map(|lsid| crate::session::SessionId::from_lsid(lsid))
        .collect::<Result<Vec<_>, _>>()?;
    for id in ids {
        ctx.server.sessions.end(id);
    }
    Ok(Document::new().into())
}

pub fn refresh_sessions(_: &mut Ctx<'_>, _: &Document) -> CommandResult {
    Ok(Document::new().into())
}
