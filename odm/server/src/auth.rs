//! Users and SCRAM-SHA-256 (RFC 5802 and 7677, as MongoDB runs it over `saslStart` and
//! `saslContinue`, or `hello`'s `speculativeAuthenticate`).
//!
//! A user is stored in the `admin` database's `system.users` collection as MongoDB stores it:
//! a random salt, the iteration count, and the stored and server keys derived from the
//! password; never the password. Authentication proves the client knows the password without
//! sending it.
//!
//! Authorization is all or nothing: an authenticated user may run every command (roles are
//! recorded, not enforced). With authentication on, a connection that has not authenticated
//! may run only the handshake, `ping`, `buildInfo` and the authentication commands, and, while
//! no user exists, create the first user from the loopback address (MongoDB's localhost
//! exception).

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};
use hmac::{Hmac, Mac};
use odm_engine::ErrorCode;
use sha2::{Digest, Sha256};

use super::Shared;
use super::command::{Args, CommandError, CommandResult, Ctx};
use super::connection::ConnectionState;
use super::storage::Storage;

/// Where users live.
const USERS_DB: &str = "admin";
const USERS_COLLECTION: &str = "system.users";
const MECHANISM: &str = "SCRAM-SHA-256";
/// MongoDB's default `scramSHA256IterationCount`.
const ITERATIONS: u32 = 15_000;
const SALT_LEN: usize = 28;

/// A user's stored credentials.
#[derive(Debug, Clone)]
struct Credentials {
    salt: Vec<u8>,
    iterations: u32,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

/// A SCRAM conversation between `saslStart` and its last `saslContinue`.
#[derive(Debug, Clone)]
pub struct Conversation {
    db: String,
    user: String,
    credentials: Credentials,
    client_first_bare: String,
    server_first: String,
    nonce: String,
    /// Set once the proof was checked: the next `saslContinue` only closes the exchange.
    verified: bool,
    /// The client asked (in `saslStart`) to finish with the proof's reply, without the last
    /// empty exchange.
    skip_empty: bool,
}

fn failed() -> CommandError {
    CommandError::new(ErrorCode::AUTHENTICATION_FAILED, "Authentication failed.")
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

impl Credentials {
    /// Derives the stored and server keys of `password` (after `SASLprep`) with a new salt.
    fn derive(password: &str) -> Result<Credentials, CommandError> {
        let prepared = stringprep::saslprep(password)
            .map_err(|e| CommandError::bad_value(format!("the password is not valid: {e}")))?;
        let mut salt = vec![0u8; SALT_LEN];
        getrandom::fill(&mut salt).map_err(|e| {
            CommandError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("no randomness for a salt: {e}"),
            )
        })?;
        let mut salted = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<Sha256>(prepared.as_bytes(), &salt, ITERATIONS, &mut salted);
        let client_key = hmac(&salted, b"Client Key");
        Ok(Credentials {
            salt,
            iterations: ITERATIONS,
            stored_key: Sha256::digest(&client_key).to_vec(),
            server_key: hmac(&salted, b"Server Key"),
        })
    }

    fn to_document(&self) -> Document {
        doc! {
            "iterationCount": self.iterations as i32,
            "salt": BASE64.encode(&self.salt),
            "storedKey": BASE64.encode(&self.stored_key),
            "serverKey": BASE64.encode(&self.server_key),
        }
    }

    fn from_document(doc: &Document) -> Option<Credentials> {
        let scram = doc
            .get_document("credentials")
            .ok()?
            .get_document(MECHANISM)
            .ok()?;
        let bytes = |k: &str| BASE64.decode(scram.get_str(k).ok()?).ok();
        Some(Credentials {
            salt: bytes("salt")?,
            iterations: u32::try_from(scram.get_i32("iterationCount").ok()?).ok()?,
            stored_key: bytes("storedKey")?,
            server_key: bytes("serverKey")?,
        })
    }
}

/// Whether `"db.user"` names a user (for `hello`'s `saslSupportedMechs`).
pub fn user_exists(storage: &Storage, qualified: &str) -> bool {
    qualified
        .split_once('.')
        .is_some_and(|(db, user)| matches!(user_document(storage, db, user), Ok(Some(_))))
}

fn user_document(
    storage: &Storage,
    db: &str,
    user: &str,
) -> Result<Option<Document>, CommandError> {
    let Some(admin) = storage.get(USERS_DB)? else {
        return Ok(None);
    };
    let txn = admin.read()?;
    let Some(users) = txn.collection(USERS_COLLECTION)? else {
        return Ok(None);
    };
    let id = Bson::String(format!("{db}.{user}"));
    match users.get(&id)? {
        Some(stored) => Ok(Some(bson::Document::try_from(stored.as_raw()?).map_err(
            |e| {
                CommandError::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("unreadable user document: {e}"),
                )
            },
        )?)),
        None => Ok(None),
    }
}

fn any_user(storage: &Storage) -> bool {
    storage
        .get(USERS_DB)
        .ok()
        .flatten()
        .and_then(|admin| {
            let txn = admin.read().ok()?;
            let users = txn.collection(USERS_COLLECTION).ok()??;
            Some(!users.is_empty().ok()?)
        })
        .unwrap_or(false)
}

/// Creates or replaces a user from outside any connection (the `--user` flag).
pub fn put_user(
    storage: &Storage,
    db: &str,
    user: &str,
    password: &str,
) -> Result<(), CommandError> {
    let doc = new_user_document(
        db,
        user,
        password,
        vec![Bson::Document(doc! {"role": "root", "db": "admin"})],
    )?;
    let admin = storage.get_or_create(USERS_DB)?;
    let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
    admin.write(|t| -> Result<(), CommandError> {
        t.delete_by_id(USERS_COLLECTION, &id)?;
        t.insert_one(USERS_COLLECTION, &doc)?;
        Ok(())
    })
}

fn new_user_document(
    db: &str,
    user: &str,
    password: &str,
    roles: Vec<Bson>,
) -> Result<Document, CommandError> {
    if user.is_empty() {
        return Err(CommandError::bad_value("a user name may not be empty"));
    }
    let credentials = Credentials::derive(password)?;
    Ok(doc! {
        "_id": format!("{db}.{user}"),
        "user": user,
        "db": db,
        "credentials": {MECHANISM: credentials.to_document()},
        "roles": roles,
        "mechanisms": [MECHANISM],
    })
}

/// With authentication on and no user yet, a loopback client may create the first user.
pub fn localhost_exception(shared: &Shared, state: &ConnectionState, command: &str) -> bool {
    command == "createUser"
        && state
            .peer
            .parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().is_loopback())
        && !any_user(&shared.storage)
}

pub fn create_user(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "createUser");
    let user = args.required_str("createUser")?;
    let password = args.required_str("pwd")?;
    if let Some(mechanisms) = args.array("mechanisms")?
        && mechanisms.iter().any(|m| m.as_str() != Some(MECHANISM))
    {
        return Err(CommandError::bad_value("only SCRAM-SHA-256 is supported"));
    }
    let roles = args.array("roles")?.cloned().unwrap_or_default();
    let doc = new_user_document(&ctx.db, user, password, roles)?;
    if user_document(&ctx.server.storage, &ctx.db, user)?.is_some() {
        return Err(CommandError::new(
            ErrorCode::location(51003),
            format!("User \"{user}@{}\" already exists", ctx.db),
        ));
    }
    let admin = ctx.server.storage.get_or_create(USERS_DB)?;
    admin.write(|t| -> Result<(), CommandError> {
        t.insert_one(USERS_COLLECTION, &doc)?;
        Ok(())
    })?;
    Ok(Document::new().into())
}

pub fn drop_user(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "dropUser");
    let user = args.required_str("dropUser")?;
    let id = Bson::String(format!("{}.{user}", ctx.db));
    let removed = match ctx.server.storage.get(USERS_DB)? {
        Some(admin) => admin.write(|t| -> Result<bool, CommandError> {
            Ok(t.delete_by_id(USERS_COLLECTION, &id)?.is_some())
        })?,
        None => false,
    };
    if !removed {
        return Err(CommandError::new(
            ErrorCode::USER_NOT_FOUND,
            format!("User '{user}@{}' not found", ctx.db),
        ));
    }
    Ok(Document::new().into())
}

pub fn users_info(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let wanted = match command.get("usersInfo") {
        Some(Bson::String(name)) => Some(name.clone()),
        Some(Bson::Document(d)) => d.get_str("user").ok().map(str::to_owned),
        _ => None,
    };
    let mut users = Vec::new();
    if let Some(admin) = ctx.server.storage.get(USERS_DB)? {
        let txn = admin.read()?;
        if let Some(coll) = txn.collection(USERS_COLLECTION)? {
            for stored in coll.scan()? {
                let doc = Document::try_from(stored?.as_raw()?)
                    .map_err(|e| CommandError::new(ErrorCode::INTERNAL_ERROR, e.to_string()))?;
                let same_db = doc.get_str("db").is_ok_and(|d| d == ctx.db);
                let same_user = wanted
                    .as_deref()
                    .is_none_or(|w| doc.get_str("user").is_ok_and(|u| u == w));
                if same_db && same_user {
                    users.push(doc! {
                        "_id": doc.get("_id").cloned().unwrap_or(Bson::Null),
                        "user": doc.get("user").cloned().unwrap_or(Bson::Null),
                        "db": doc.get("db").cloned().unwrap_or(Bson::Null),
                        "roles": doc.get("roles").cloned().unwrap_or(Bson::Array(Vec::new())),
                        "mechanisms": [MECHANISM],
                    });
                }
            }
        }
    }
    Ok(doc! {"users": users}.into())
}

/// Every user's roles, as `(role, db)` pairs by `(db, user)`.
pub type Roles = HashMap<(String, String), Vec<(String, String)>>;

/// The roles of every user; a role given by its name alone is one of the user's database, as
/// `createUser` reads it.
pub fn roles_by_user(storage: &Storage) -> Result<Roles, CommandError> {
    let mut roles = HashMap::new();
    let Some(admin) = storage.get(USERS_DB)? else {
        return Ok(roles);
    };
    let txn = admin.read()?;
    let Some(coll) = txn.collection(USERS_COLLECTION)? else {
        return Ok(roles);
    };
    for stored in coll.scan()? {
        let doc = Document::try_from(stored?.as_raw()?)
            .map_err(|e| CommandError::new(ErrorCode::INTERNAL_ERROR, e.to_string()))?;
        let (Ok(db), Ok(user)) = (doc.get_str("db"), doc.get_str("user")) else {
            continue;
        };
        let granted = doc
            .get_array("roles")
            .map(|granted| granted.iter().filter_map(|r| role_of(r, db)).collect())
            .unwrap_or_default();
        roles.insert((db.to_owned(), user.to_owned()), granted);
    }
    Ok(roles)
}

/// A granted role as `(role, db)`: a name alone, or `{role, db}`.
fn role_of(granted: &Bson, user_db: &str) -> Option<(String, String)> {
    match granted {
        Bson::String(role) => Some((role.clone(), user_db.to_owned())),
        Bson::Document(d) => Some((
            d.get_str("role").ok()?.to_owned(),
            d.get_str("db").ok()?.to_owned(),
        )),
        _ => None,
    }
}

/// The digest by which MongoDB names a session's owner (a session pattern's `uid`): SHA-256 of
/// `user@db`, and of nothing for sessions without a user.
pub fn user_digest(user: Option<&(String, String)>) -> [u8; 32] {
    let name = user.map_or_else(String::new, |(db, user)| format!("{user}@{db}"));
    Sha256::digest(name.as_bytes()).into()
}

pub fn logout(ctx: &mut Ctx<'_>, _: &Document) -> CommandResult {
    ctx.conn.user = None;
    ctx.server.connections.describe(ctx.conn);
    Ok(Document::new().into())
}

fn payload_of(args: &Args<'_>) -> Result<Vec<u8>, CommandError> {
    match args.get("payload") {
        Some(Bson::Binary(b)) => Ok(b.bytes.clone()),
        Some(Bson::String(s)) => Ok(s.as_bytes().to_vec()),
        _ => Err(args.missing("payload")),
    }
}

fn skips_empty_exchange(args: &Args<'_>) -> bool {
    args.doc("options")
        .ok()
        .flatten()
        .is_some_and(|o| o.get_bool("skipEmptyExchange").unwrap_or(false))
}

fn binary(bytes: impl Into<Vec<u8>>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.into(),
    })
}

/// `a=value` attributes of a SCRAM message, in order.
fn attributes(message: &str) -> Vec<(char, &str)> {
    message
        .split(',')
        .filter_map(|part| {
            let mut chars = part.chars();
            let key = chars.next()?;
            part.get(1..)
                .and_then(|rest| rest.strip_prefix('='))
                .map(|v| (key, v))
        })
        .collect()
}

fn attribute<'m>(attrs: &[(char, &'m str)], key: char) -> Option<&'m str> {
    attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// Starts a conversation from the client's first message; the server's first message.
fn start(
    ctx: &mut Ctx<'_>,
    mechanism: &str,
    payload: &[u8],
    skip_empty: bool,
) -> Result<Document, CommandError> {
    if mechanism != MECHANISM {
        return Err(CommandError::new(
            ErrorCode::location(2),
            format!("Received authentication for mechanism {mechanism} which is not enabled"),
        ));
    }
    let message = std::str::from_utf8(payload).map_err(|_| failed())?;
    // gs2 header: no channel binding ("n,,"), or "y,," (the client could but thinks we can't).
    let bare = message
        .strip_prefix("n,,")
        .or_else(|| message.strip_prefix("y,,"))
        .ok_or_else(failed)?;
    let attrs = attributes(bare);
    let user = attribute(&attrs, 'n')
        .ok_or_else(failed)?
        .replace("=2C", ",")
        .replace("=3D", "=");
    let client_nonce = attribute(&attrs, 'r')
        .filter(|n| !n.is_empty())
        .ok_or_else(failed)?;
    let stored = user_document(&ctx.server.storage, &ctx.db, &user)?.ok_or_else(failed)?;
    let credentials = Credentials::from_document(&stored).ok_or_else(failed)?;
    let mut random = [0u8; 24];
    getrandom::fill(&mut random)
        .map_err(|e| CommandError::new(ErrorCode::INTERNAL_ERROR, e.to_string()))?;
    let nonce = format!("{client_nonce}{}", BASE64.encode(random));
    let server_first = format!(
        "r={nonce},s={},i={}",
        BASE64.encode(&credentials.salt),
        credentials.iterations
    );
    ctx.conn.scram = Some(Box::new(Conversation {
        db: ctx.db.clone(),
        user,
        credentials,
        client_first_bare: bare.to_owned(),
        server_first: server_first.clone(),
        nonce,
        verified: false,
        skip_empty,
    }));
    Ok(doc! {"conversationId": 1, "done": false, "payload": binary(server_first)})
}

pub fn sasl_start(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "saslStart");
    let mechanism = args.required_str("mechanism")?;
    let payload = payload_of(&args)?;
    Ok(start(ctx, mechanism, &payload, skips_empty_exchange(&args))?.into())
}

pub fn sasl_continue(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    let args = Args::new(command, "saslContinue");
    let payload = payload_of(&args)?;
    let conversation =
        ctx.conn.scram.take().map(|boxed| *boxed).ok_or_else(|| {
            CommandError::new(ErrorCode::location(17), "No SASL session state found")
        })?;
    if conversation.verified {
        // The client's empty last message, without skipEmptyExchange.
        ctx.conn.user = Some((conversation.db, conversation.user));
        ctx.server.connections.describe(ctx.conn);
        return Ok(doc! {"conversationId": 1, "done": true, "payload": binary(Vec::new())}.into());
    }
    let message = std::str::from_utf8(&payload).map_err(|_| failed())?;
    let (without_proof, proof) = message.rsplit_once(",p=").ok_or_else(failed)?;
    let attrs = attributes(without_proof);
    // c=biws: the gs2 header "n,," in base64, no channel binding.
    let binding = attribute(&attrs, 'c').ok_or_else(failed)?;
    if binding != "biws" && binding != "eSws" {
        return Err(failed());
    }
    if attribute(&attrs, 'r') != Some(conversation.nonce.as_str()) {
        return Err(failed());
    }
    let proof = BASE64.decode(proof).map_err(|_| failed())?;
    let auth_message = format!(
        "{},{},{}",
        conversation.client_first_bare, conversation.server_first, without_proof
    );
    let c = &conversation.credentials;
    let signature = hmac(&c.stored_key, auth_message.as_bytes());
    if proof.len() != signature.len() {
        return Err(failed());
    }
    let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
    if Sha256::digest(&client_key).as_slice() != c.stored_key.as_slice() {
        return Err(failed());
    }
    let server_signature = hmac(&c.server_key, auth_message.as_bytes());
    let reply_payload = binary(format!("v={}", BASE64.encode(server_signature)));
    if conversation.skip_empty || skips_empty_exchange(&args) {
        ctx.conn.user = Some((conversation.db, conversation.user));
        ctx.server.connections.describe(ctx.conn);
        return Ok(doc! {"conversationId": 1, "done": true, "payload": reply_payload}.into());
    }
    ctx.conn.scram = Some(Box::new(Conversation {
        verified: true,
        ..conversation
    }));
    Ok(doc! {"conversationId": 1, "done": false, "payload": reply_payload}.into())
}

/// `hello`'s `speculativeAuthenticate`: a `saslStart` carried by the handshake; its reply, or
/// `None` when it cannot start (the client then authenticates the usual way).
pub fn speculative(ctx: &mut Ctx<'_>, first: &Document) -> Option<Document> {
    let args = Args::new(first, "speculativeAuthenticate");
    let mechanism = args.str("mechanism").ok()??;
    let payload = payload_of(&args).ok()?;
    let db = args.str("db").ok()?.unwrap_or("admin").to_owned();
    let saved = std::mem::replace(&mut ctx.db, db);
    let reply = start(ctx, mechanism, &payload, skips_empty_exchange(&args)).ok();
    ctx.db = saved;
    reply
}
