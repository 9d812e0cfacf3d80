//! `odm serve` stopped by a signal, as a service manager stops it: SIGTERM lets running
//! commands finish and closes every file, so each write a client saw acknowledged is there
//! after a restart; a second signal exits at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bson::{Bson, Document, RawDocumentBuf, doc};

/// `odm serve` on a free port, once it listens; its port.
fn serve(args: &[&str]) -> (Child, u16) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_odm"))
        .arg("serve")
        .args(args)
        .args(["--port", &port.to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts odm serve");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        let read = stderr.read_line(&mut line).unwrap();
        assert!(read > 0, "odm serve exited before listening");
    }
    // The rest of its log is drained, so that it never blocks writing it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, port)
}

fn signal(child: &Child, name: &str) {
    let sent = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// The child's exit status, waiting at most `limit`.
fn exit_within(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "odm serve did not exit in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One connection speaking `OP_MSG` by hand.
struct Connection(TcpStream);

impl Connection {
    fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Connection(stream)
    }

    fn send(&mut self, body: &Document) -> std::io::Result<()> {
        let raw = RawDocumentBuf::try_from(body).unwrap();
        self.0
            .write_all(&odm_server::wire::encode_msg(1, 0, &raw, 0, None))
    }

    fn reply(&mut self) -> std::io::Result<Document> {
        let mut header = [0u8; 16];
        self.0.read_exact(&mut header)?;
        let len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
        let mut rest = vec![0u8; len - 16];
        self.0.read_exact(&mut rest)?;
        Ok(Document::from_reader(&rest[5..]).unwrap())
    }

    fn command(&mut self, body: &Document) -> std::io::Result<Document> {
        self.send(body)?;
        self.reply()
    }
}

fn ok(reply: &Document) -> bool {
    reply.get("ok") == Some(&Bson::Double(1.0))
}

/// Inserts `{_id: 0}`, `{_id: 1}`, ... one at a time until the server stops answering; how
/// many it acknowledged.
fn write_until_closed(port: u16, started: &AtomicBool) -> i64 {
    let mut connection = Connection::open(port);
    let mut acknowledged = 0i64;
    loop {
        let insert = doc! {"insert": "c", "documents": [{"_id": acknowledged}], "$db": "d"};
        match connection.command(&insert) {
            Ok(reply) if ok(&reply) && reply.get_i32("n").ok() == Some(1) => acknowledged += 1,
            Ok(reply) => panic!("an insert failed: {reply}"),
            Err(_) => return acknowledged,
        }
        if acknowledged == 20 {
            started.store(true, Ordering::Release);
        }
    }
}

fn count(port: u16, filter: Document) -> i64 {
    let reply = Connection::open(port)
        .command(&doc! {"count": "c", "query": filter, "$db": "d"})
        .unwrap();
    match reply.get("n") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => panic!("count: {reply}"),
    }
}

fn folder(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

#[test]
fn after_sigterm_every_acknowledged_write_is_there_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port) = serve(&[folder(dir.path())]);
    let started = Arc::new(AtomicBool::new(false));
    let writer = {
        let started = started.clone();
        std::thread::spawn(move || write_until_closed(port, &started))
    };
    while !started.load(Ordering::Acquire) {
        assert!(!writer.is_finished(), "the writer stopped early");
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&server, "-TERM");
    let status = exit_within(&mut server, Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "a graceful stop exits with 0");
    let acknowledged = writer.join().unwrap();
    assert!(acknowledged >= 20);
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens after the stop"
    );

    let (mut again, port) = serve(&[folder(dir.path())]);
    assert_eq!(
        count(port, doc! {"_id": {"$lt": acknowledged}}),
        acknowledged,
        "every acknowledged write is there"
    );
    // At most the one insert in flight at the signal may have been applied unanswered.
    assert!(count(port, doc! {}) <= acknowledged + 1);
    signal(&again, "-INT");
    assert_eq!(
        exit_within(&mut again, Duration::from_secs(20)).code(),
        Some(0)
    );
}

/// A command still running holds the stop for the grace period; a second signal ends the wait
/// and exits at once, with the status of a process killed by that signal.
#[test]
fn a_second_signal_exits_at_once() {
    let (mut server, port) = serve(&[
        "--in-memory",
        "--enable-test-commands",
        "--shutdown-timeout",
        "60",
    ]);
    let mut admin = Connection::open(port);
    let block = doc! {
        "configureFailPoint": "failCommand", "mode": {"times": 1}, "$db": "admin",
        "data": {"failCommands": ["count"], "blockConnection": true, "blockTimeMS": 30_000},
    };
    assert!(ok(&admin.command(&block).unwrap()));
    let mut busy = Connection::open(port);
    busy.send(&doc! {"count": "c", "$db": "d"}).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    signal(&server, "-TERM");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        server.try_wait().unwrap().is_none(),
        "the running count holds the stop"
    );
    let began = Instant::now();
    signal(&server, "-TERM");
    let status = exit_within(&mut server, Duration::from_secs(10));
    assert!(began.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), Some(128 + 15));
}
