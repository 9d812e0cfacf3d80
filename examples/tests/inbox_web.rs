//! The web example end to end: the service on a real socket, driven by a real HTTP client
//! (reqwest), on the back end `odm::testing::database()` chooses (the engine, or MongoDB
//! through `tests/wire/backends.sh`), on tokio's multi-thread runtime as the example runs.

use std::time::Duration;

use futures_util::StreamExt;
use odm_examples::web::{Message, NewMessage, Sent, Service};
use reqwest::StatusCode;

/// The service on a port of its own; its base URL.
async fn serve() -> String {
    let db = odm::aio::run(odm::testing::database)
        .await
        .expect("a database");
    let service = Service::open(&odm::aio::Database::from_sync(db))
        .await
        .expect("the inbox opens");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, service.router()).await });
    base
}

async fn send(client: &reqwest::Client, base: &str, to: &[&str], text: &str) -> String {
    let message = NewMessage {
        from: "sam".into(),
        to: to.iter().map(|&t| t.to_owned()).collect(),
        text: text.into(),
    };
    let reply = client
        .post(format!("{base}/messages"))
        .json(&message)
        .send()
        .await
        .expect("an answer");
    assert_eq!(reply.status(), StatusCode::CREATED);
    reply.json::<Sent>().await.expect("an id").id
}

async fn page(client: &reqwest::Client, base: &str, owner: &str, query: &str) -> Vec<Message> {
    let reply = client
        .get(format!("{base}/inbox/{owner}?{query}"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(reply.status(), StatusCode::OK);
    reply.json().await.expect("messages")
}

/// The `data:` of each `message` event in `text`, an event stream's bytes so far.
fn events(text: &str) -> Vec<Message> {
    text.split("\n\n")
        .filter(|event| event.lines().any(|l| l == "event: message"))
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).expect("a message"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_read_mark_and_follow_the_feed_over_http() {
    let base = serve().await;
    let client = reqwest::Client::new();
    let feed = client
        .get(format!("{base}/inbox/ann/feed"))
        .send()
        .await
        .expect("the feed opens");
    assert_eq!(feed.status(), StatusCode::OK);
    assert!(
        feed.headers()["content-type"]
            .to_str()
            .is_ok_and(|t| t.starts_with("text/event-stream"))
    );
    let mut ids = Vec::new();
    for n in 0..60 {
        let to: &[&str] = if n % 2 == 0 {
            &["ann", "bob"]
        } else {
            &["ann"]
        };
        ids.push(send(&client, &base, to, &format!("m{n}")).await);
    }
    // Newest first, paged across buckets of 50.
    let first = page(&client, &base, "ann", "limit=3").await;
    assert_eq!(
        first.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["m59", "m58", "m57"]
    );
    let later = page(&client, &base, "ann", "offset=55&limit=10").await;
    assert_eq!(
        later.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["m4", "m3", "m2", "m1", "m0"]
    );
    assert_eq!(page(&client, &base, "bob", "limit=100").await.len(), 30);
    let read = client
        .post(format!("{base}/inbox/ann/{}/read", ids[59]))
        .send()
        .await
        .expect("an answer");
    assert_eq!(read.status(), StatusCode::NO_CONTENT);
    assert!(page(&client, &base, "ann", "limit=1").await[0].read);
    // Bob never got the odd messages.
    let unknown = client
        .post(format!("{base}/inbox/bob/{}/read", ids[1]))
        .send()
        .await
        .expect("an answer");
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);

    // The feed delivered every message sent after it opened, in order.
    let mut body = feed.bytes_stream();
    let mut text = String::new();
    let delivered = tokio::time::timeout(Duration::from_secs(30), async {
        while events(&text).len() < 60 {
            let chunk = body.next().await.expect("the feed goes on").expect("bytes");
            text.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
        events(&text)
    })
    .await
    .expect("60 messages within 30 s");
    let texts: Vec<String> = delivered.into_iter().map(|m| m.text).collect();
    assert_eq!(texts, (0..60).map(|n| format!("m{n}")).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_the_service_cannot_take_are_400_and_change_nothing() {
    let base = serve().await;
    let client = reqwest::Client::new();
    let nobody = client
        .post(format!("{base}/messages"))
        .json(&NewMessage {
            from: "sam".into(),
            to: Vec::new(),
            text: "lost".into(),
        })
        .send()
        .await
        .expect("an answer");
    assert_eq!(nobody.status(), StatusCode::BAD_REQUEST);
    let reason: serde_json::Value = nobody.json().await.expect("a body");
    assert!(
        reason["error"]
            .as_str()
            .is_some_and(|e| e.contains("recipient"))
    );
    let bad_id = client
        .post(format!("{base}/inbox/ann/not-an-id/read"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(bad_id.status(), StatusCode::BAD_REQUEST);
    let too_many = client
        .get(format!("{base}/inbox/ann?limit=101"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(too_many.status(), StatusCode::BAD_REQUEST);
    let not_json = client
        .post(format!("{base}/messages"))
        .header("content-type", "application/json")
        .body("{\"from\": 1}")
        .send()
        .await
        .expect("an answer");
    assert!(not_json.status().is_client_error());
    assert!(page(&client, &base, "ann", "").await.is_empty());
}
