//! Thousands of idle connections to an in-process server cost no thread and little memory:
//! once quiet for a second they park (no task, their sockets watched by one epoll set). A
//! test binary of its own, so that what the process holds is what the connections cost (the
//! other server tests run beside each other and would move the figures).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bson::{Document, doc};
use mongodb::sync::Client;
use odm_server::{Config, Server, Storage};
use odm_tests::process::{raise_open_file_limit, resident_bytes, threads};

const IDLE: usize = 4_000;
/// The idle connections open in this many batches.
const BATCHES: usize = 8;
/// The most each idle connection may add to resident memory: its parked state and the
/// allocator's slack fit in it; a task on the event loop each would not (about 2.5 KB), nor
/// a thread (a stack is several pages).
const MAX_BYTES_PER_CONNECTION: u64 = 1536;
/// Threads the process may gain meanwhile (the runtime's pool coming and going).
const MAX_NEW_THREADS: u64 = 8;

fn ping(stream: &mut TcpStream) -> Document {
    let body = bson::RawDocumentBuf::try_from(&doc! {"ping": 1, "$db": "admin"}).unwrap();
    stream
        .write_all(&odm_server::wire::encode_msg(1, 0, &body, 0, None))
        .unwrap();
    let mut header = [0u8; 16];
    stream.read_exact(&mut header).unwrap();
    let len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; len - 16];
    stream.read_exact(&mut rest).unwrap();
    Document::from_reader(&rest[5..]).unwrap()
}

#[test]
fn thousands_of_idle_connections_cost_no_thread_and_little_memory() {
    let wanted = IDLE as u64 * 2 + 1024;
    let limit = raise_open_file_limit(wanted);
    assert!(
        limit >= wanted,
        "the test needs {wanted} open files, and the limit stays at {limit}"
    );
    let server = Server::bind(
        Storage::in_memory(),
        Config {
            bind: "127.0.0.1:0".parse().unwrap(),
            max_connections: IDLE + 64,
            ..Config::default()
        },
    )
    .unwrap()
    .spawn();
    let client = Client::with_uri_str(server.uri()).unwrap();
    let items = client.database("d").collection::<Document>("c");
    items.insert_one(doc! {"x": 1}).run().unwrap();
    assert_eq!(items.count_documents(doc! {}).run().unwrap(), 1);
    let connections = &server.shared().stats.connections_current;
    let before = (resident_bytes().unwrap(), threads().unwrap());
    let served = connections.load(Ordering::Relaxed);

    // In batches, each parked before the next comes: what is measured is what parked
    // connections hold, not the peak of thousands of tasks alive at once (memory the allocator
    // keeps once they are freed), which made the figure vary threefold from run to run.
    let parking = &server.shared().parking;
    let deadline = Instant::now() + Duration::from_mins(1);
    let mut idle: Vec<TcpStream> = Vec::with_capacity(IDLE);
    for _ in 0..BATCHES {
        let batch = (0..IDLE / BATCHES).map(|_| TcpStream::connect(server.addr()).unwrap());
        idle.extend(batch);
        while connections.load(Ordering::Relaxed) < served + idle.len() as u64 {
            assert!(Instant::now() < deadline, "the server accepts every socket");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Quiet for `PARK_AFTER`, every idle socket parks (the driver's pooled ones too).
        while parking.len() < idle.len() {
            assert!(
                Instant::now() < deadline,
                "every idle connection parks: {} of {}",
                parking.len(),
                idle.len()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let after = (resident_bytes().unwrap(), threads().unwrap());
    let grew = after.0.saturating_sub(before.0);
    eprintln!(
        "{IDLE} idle connections: resident memory {:.1} MB -> {:.1} MB ({} bytes each), threads {} -> {}",
        before.0 as f64 / 1e6,
        after.0 as f64 / 1e6,
        grew / IDLE as u64,
        before.1,
        after.1
    );
    assert!(
        grew < IDLE as u64 * MAX_BYTES_PER_CONNECTION,
        "{grew} bytes for {IDLE} idle connections"
    );
    assert!(
        after.1 <= before.1 + MAX_NEW_THREADS,
        "threads went from {} to {}",
        before.1,
        after.1
    );
    // The driver's client is answered, and so is any of the idle sockets when it speaks.
    items.insert_one(doc! {"x": 2}).run().unwrap();
    assert_eq!(items.count_documents(doc! {}).run().unwrap(), 2);
    for stream in idle.iter_mut().step_by(IDLE / 8) {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        assert_eq!(ping(stream).get("ok"), Some(&bson::Bson::Double(1.0)));
        assert_eq!(
            ping(stream).get("ok"),
            Some(&bson::Bson::Double(1.0)),
            "a resumed connection answers again"
        );
    }
    // A parked connection whose client closes leaves the server's count.
    let open = connections.load(Ordering::Relaxed);
    idle.truncate(IDLE / 2);
    let deadline = Instant::now() + Duration::from_secs(30);
    while connections.load(Ordering::Relaxed) > open - (IDLE / 2) as u64 {
        assert!(
            Instant::now() < deadline,
            "closed parked connections are let go"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
