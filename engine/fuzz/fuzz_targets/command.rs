//! The server's command layer, driven over a socket with whole commands: what must hold is
//! that no request takes the server down. One in-memory server runs for the whole fuzzing
//! process; each input becomes, in order:
//!
//! 1. an `insert` of the input's documents after the first into `fuzz.c`;
//! 2. an `aggregate` on `c` whose stages are the first document's values (with the same time
//!    limit as 3);
//! 3. an `aggregate` of a pipeline of the operators that grow values (`odm_fuzz::grow`), built
//!    from the same bytes, with its time limit as `maxTimeMS`;
//! 4. the first document itself as a command, when its name is one of the data commands below
//!    (not `shutdown`, fail points or anything that changes the server's configuration);
//! 5. `ping`, which must answer `ok: 1`, and `dropDatabase`, so inputs do not pile up.
//!
//! Every reply must be a well-framed message whose document has `ok`; the connection must stay
//! open throughout.
#![no_main]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bson::{Bson, Document, doc};
use libfuzzer_sys::fuzz_target;
use odm_server::wire::{self, HEADER_LEN, Header, RequestKind};

/// Commands an input may send as they are.
const DATA_COMMANDS: &[&str] = &[
    "find",
    "aggregate",
    "count",
    "distinct",
    "insert",
    "update",
    "delete",
    "findAndModify",
    "createIndexes",
    "dropIndexes",
    "listIndexes",
    "listCollections",
    "explain",
    "getMore",
    "killCursors",
    "collStats",
    "dbStats",
    "validate",
    "create",
    "drop",
];

/// How long a reply may take: the bounds on computed values keep every command far quicker.
const REPLY_TIMEOUT: Duration = Duration::from_secs(120);

struct Client {
    stream: TcpStream,
    next_id: i32,
}

fn client() -> &'static Mutex<Client> {
    static SERVER: OnceLock<odm_server::ServerHandle> = OnceLock::new();
    static CLIENT: OnceLock<Mutex<Client>> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let server =
            SERVER.get_or_init(|| odm_server::Server::start_in_memory().expect("server starts"));
        let stream = TcpStream::connect(server.addr()).expect("connects");
        stream
            .set_read_timeout(Some(REPLY_TIMEOUT))
            .expect("a timeout");
        Mutex::new(Client { stream, next_id: 1 })
    })
}

impl Client {
    /// Sends `command` to the database `fuzz` and returns the reply's document.
    fn run(&mut self, mut command: Document) -> Document {
        command.insert("$db", "fuzz");
        let body = wire::to_raw(&command);
        self.next_id = self.next_id.wrapping_add(1);
        let message = wire::encode_msg(self.next_id, 0, &body, 0, None);
        self.stream.write_all(&message).expect("the server reads");
        let mut head = [0u8; HEADER_LEN];
        self.stream
            .read_exact(&mut head)
            .unwrap_or_else(|e| panic!("no reply to {command:?}: {e}"));
        let header = Header::parse(&head).expect("a reply's header parses");
        let mut body = vec![0u8; header.body_len()];
        self.stream.read_exact(&mut body).expect("a whole reply");
        let reply = wire::parse(&header, &body).expect("a reply parses");
        let RequestKind::Msg { command: reply, .. } = reply.kind else {
            panic!("an OP_MSG request gets an OP_MSG reply");
        };
        assert!(reply.contains_key("ok"), "a reply without ok: {reply:?}");
        reply
    }
}

fuzz_target!(|data: &[u8]| {
    let docs = odm_fuzz::documents(data);
    let mut client = client()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((first, rest)) = docs.split_first() {
        if !rest.is_empty() {
            client.run(doc! { "insert": "c", "documents": rest.to_vec(), "ordered": false });
        }
        let stages: Vec<Bson> = first
            .values()
            .filter(|v| v.as_document().is_some())
            .cloned()
            .collect();
        let limit = odm_fuzz::grow::TIME_LIMIT.as_millis() as i64;
        client.run(doc! { "aggregate": "c", "pipeline": stages, "cursor": {}, "maxTimeMS": limit });
        let named = first.keys().next().map(String::as_str);
        if named.is_some_and(|name| DATA_COMMANDS.contains(&name)) {
            client.run(first.clone());
        }
    }
    let grown = odm_fuzz::grow::pipeline(&mut odm_fuzz::grow::Choices::new(data));
    client
        .run(doc! { "insert": "d", "documents": [{ "_id": 1, "a": 1, "s": "ab" }, { "_id": 2 }] });
    let limit = odm_fuzz::grow::TIME_LIMIT.as_millis() as i64;
    client.run(doc! { "aggregate": "d", "pipeline": grown, "cursor": {}, "maxTimeMS": limit });
    let ping = client.run(doc! { "ping": 1 });
    assert_eq!(ping.get("ok"), Some(&Bson::Double(1.0)), "{ping:?}");
    client.run(doc! { "dropDatabase": 1 });
});
