//! S1's inbox as an HTTP service (the `inbox_web` example), on the async API: axum handlers
//! await `odm_patterns::aio::Async<Inbox>` operations, which run on odm's worker pool, and a
//! reader's feed is a server-sent-events stream of its subscription.
//!
//! | method and path | body or query | answer |
//! |---|---|---|
//! | `POST /messages` | `{"from": "sam", "to": ["ann"], "text": "hi"}` | `201 {"id": "<hex>"}` |
//! | `GET /inbox/{owner}` | `?offset=0&limit=20` (limit at most 100) | `200 [message, ...]`, newest first |
//! | `POST /inbox/{owner}/{id}/read` | | `204`, or `404` when the owner has no such message |
//! | `GET /inbox/{owner}/feed` | | `text/event-stream`: one `message` event per new message |
//!
//! A message is `{"id", "from", "sent" (RFC 3339), "read", "text"}`. A request the service
//! cannot take (no recipient, an id that is not 24 hex digits, a limit above 100) is `400`
//! with `{"error": "..."}` naming what was wrong; a failure of the database is `500` with
//! its message.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bson::oid::ObjectId;
use futures_util::{Stream, StreamExt};
use odm_patterns::aio::Async;
use odm_patterns::{Envelope, Inbox, InboxVariant, PatternError};
use serde::{Deserialize, Serialize};

/// Messages per bucket: S1c's size.
pub const BUCKET_SIZE: u32 = 50;

/// The largest page `GET /inbox/{owner}` answers.
pub const MAX_PAGE: usize = 100;

/// The service's state: the inbox, shared by every handler.
#[derive(Clone, Debug)]
pub struct Service {
    inbox: Arc<Async<Inbox<String>>>,
}

impl Service {
    /// Opens the inbox stored in collection `inbox` of `db`.
    pub async fn open(db: &odm::aio::Database) -> Result<Service, PatternError> {
        let inbox = Async::open(db, |db| {
            Inbox::open(db, "inbox", BUCKET_SIZE, InboxVariant::OpenBucket)
        })
        .await?;
        Ok(Service {
            inbox: Arc::new(inbox),
        })
    }

    /// The service's routes.
    pub fn router(self) -> Router {
        Router::new()
            .route("/messages", post(send))
            .route("/inbox/{owner}", get(latest))
            .route("/inbox/{owner}/{id}/read", post(mark_read))
            .route("/inbox/{owner}/feed", get(feed))
            .with_state(self)
    }
}

/// `POST /messages`'s body.
#[derive(Debug, Serialize, Deserialize)]
pub struct NewMessage {
    pub from: String,
    pub to: Vec<String>,
    pub text: String,
}

/// `POST /messages`'s answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct Sent {
    pub id: String,
}

/// A message as the service shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub from: String,
    /// RFC 3339.
    pub sent: String,
    pub read: bool,
    pub text: String,
}

impl From<Envelope<String>> for Message {
    fn from(e: Envelope<String>) -> Self {
        Message {
            id: e.id.to_hex(),
            from: e.from,
            sent: e
                .sent
                .try_to_rfc3339_string()
                .unwrap_or_else(|_| e.sent.timestamp_millis().to_string()),
            read: e.read,
            text: e.message,
        }
    }
}

/// `GET /inbox/{owner}`'s query.
#[derive(Debug, Deserialize)]
pub struct Page {
    #[serde(default)]
    pub offset: usize,
    #[serde(default = "default_limit")]
    pub limit: usize,
}

fn default_limit() -> usize {
    20
}

/// Why a request failed, as its answer.
#[derive(Debug)]
pub enum Failure {
    /// The request cannot be taken: 400.
    Refused(String),
    /// No such message: 404.
    NotFound,
    /// The database failed: 500.
    Database(PatternError),
}

impl From<PatternError> for Failure {
    fn from(e: PatternError) -> Self {
        Failure::Database(e)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let (status, error) = match self {
            Failure::Refused(reason) => (StatusCode::BAD_REQUEST, reason),
            Failure::NotFound => (StatusCode::NOT_FOUND, "no such message".to_owned()),
            Failure::Database(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        };
        (status, Json(serde_json::json!({ "error": error }))).into_response()
    }
}

async fn send(
    State(service): State<Service>,
    Json(message): Json<NewMessage>,
) -> Result<(StatusCode, Json<Sent>), Failure> {
    if message.to.is_empty() {
        return Err(Failure::Refused(
            "a message needs at least one recipient".into(),
        ));
    }
    let to: Vec<&str> = message.to.iter().map(String::as_str).collect();
    let id = service.inbox.send(&message.from, &to, message.text).await?;
    Ok((StatusCode::CREATED, Json(Sent { id: id.to_hex() })))
}

async fn latest(
    State(service): State<Service>,
    Path(owner): Path<String>,
    Query(page): Query<Page>,
) -> Result<Json<Vec<Message>>, Failure> {
    if page.limit > MAX_PAGE {
        return Err(Failure::Refused(format!(
            "limit {} is above the largest page, {MAX_PAGE}",
            page.limit
        )));
    }
    let messages = service
        .inbox
        .latest(&owner, page.offset, page.limit)
        .await?;
    Ok(Json(messages.into_iter().map(Message::from).collect()))
}

async fn mark_read(
    State(service): State<Service>,
    Path((owner, id)): Path<(String, String)>,
) -> Result<StatusCode, Failure> {
    let id = ObjectId::parse_str(&id)
        .map_err(|_| Failure::Refused(format!("`{id}` is not a message id (24 hex digits)")))?;
    if service.inbox.mark_read(&owner, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Failure::NotFound)
    }
}

/// The owner's new messages as server-sent events, from the subscription's stream; the
/// subscription ends when the client goes (its stream is dropped with the response).
async fn feed(
    State(service): State<Service>,
    Path(owner): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Failure> {
    let messages = service.inbox.subscribe(&owner).await?;
    let events = messages.map(|message| {
        Ok(match message {
            Ok(message) => Event::default()
                .event("message")
                .json_data(Message::from(message))
                .unwrap_or_else(|e| Event::default().event("error").data(e.to_string())),
            Err(e) => Event::default().event("error").data(e.to_string()),
        })
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
