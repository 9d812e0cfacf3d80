//! Clients that cost a server without working it, for `bench load --idle N --slow M`: idle
//! sockets that connect and never send a byte, and slow readers that ask for large replies and
//! read them a few KB at a time. The idle sockets' client ends are held by a child process (the
//! bench binary run as `bench hold-idle ADDR N`), so that the server's process holds only its
//! own ends (10,000 sockets on each side would not fit one process's usual open-file limit);
//! the slow readers live on one thread, so that the process's thread count stays the server's
//! and the load's.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use bson::{Document, RawDocumentBuf, doc};

/// The database and collection slow readers read.
pub const SLOW_DATABASE: &str = "slow";
const SLOW_COLLECTION: &str = "blobs";
/// Documents a slow reader's reply holds, and the bytes of each.
const BLOBS: usize = 64;
const BLOB_BYTES: usize = 4 * 1024;
/// What a slow reader reads at each turn, and how often it turns.
pub const SLOW_CHUNK: usize = 4 * 1024;
pub const SLOW_TICK: Duration = Duration::from_millis(20);

/// Opens `n` sockets to `addr` that never send anything.
pub fn idle_sockets(addr: SocketAddr, n: usize) -> Result<Vec<TcpStream>, String> {
    (0..n)
        .map(|i| TcpStream::connect(addr).map_err(|e| format!("idle socket {i}: {e}")))
        .collect()
}

/// Runs `exe hold-idle ADDR N` (see [`hold_idle`]) and waits until its sockets are open; they
/// stay open until the child is killed or this process ends (closing the child's input).
pub fn idle_sockets_in_child(
    exe: &std::path::Path,
    addr: SocketAddr,
    n: usize,
) -> Result<std::process::Child, String> {
    use std::io::BufRead;
    let mut child = std::process::Command::new(exe)
        .args(["hold-idle", &addr.to_string(), &n.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the idle sockets' process: {e}"))?;
    let mut line = String::new();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    if line.trim() != "ready" {
        let _ = child.kill();
        return Err(format!("the idle sockets' process said `{}`", line.trim()));
    }
    Ok(child)
}

/// The child's side of [`idle_sockets_in_child`]: opens `n` idle sockets to `addr`, says
/// `ready`, and holds them until its input closes.
pub fn hold_idle(addr: &str, n: &str) -> Result<(), String> {
    let addr: SocketAddr = addr.parse().map_err(|_| format!("bad address {addr}"))?;
    let n: usize = n.parse().map_err(|_| format!("bad count {n}"))?;
    let wanted = n as u64 + 256;
    if crate::process::raise_open_file_limit(wanted) < wanted {
        return Err(format!("{n} idle sockets need {wanted} open files"));
    }
    let sockets = idle_sockets(addr, n)?;
    println!("ready");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(sockets);
    Ok(())
}

/// The documents slow readers ask for: `BLOBS` of `BLOB_BYTES` each, so that each reply is
/// about 256 KB.
pub fn seed_slow_readers(client: &mongodb::sync::Client) -> Result<(), String> {
    let blob = "x".repeat(BLOB_BYTES);
    let docs: Vec<Document> = (0..BLOBS as i64)
        .map(|i| doc! {"_id": i, "blob": blob.as_str()})
        .collect();
    client
        .database(SLOW_DATABASE)
        .collection::<Document>(SLOW_COLLECTION)
        .insert_many(docs)
        .run()
        .map(|_| ())
        .map_err(|e| format!("seeding the slow readers' documents: {e}"))
}

/// One slow reader: its socket, and how much of the reply it is reading is left.
struct Slow {
    stream: TcpStream,
    /// The reply's first bytes, until its length is known.
    head: Vec<u8>,
    /// The bytes of the reply still to read, once its length is known.
    left: usize,
}

impl Slow {
    fn ask(&mut self) -> std::io::Result<()> {
        let find = doc! {
            "find": SLOW_COLLECTION, "batchSize": BLOBS as i32, "singleBatch": true,
            "$db": SLOW_DATABASE,
        };
        let raw = RawDocumentBuf::try_from(&find).map_err(std::io::Error::other)?;
        self.stream.set_nonblocking(false)?;
        self.stream
            .write_all(&odm_server::wire::encode_msg(1, 0, &raw, 0, None))?;
        self.stream.set_nonblocking(true)?;
        self.head.clear();
        self.left = 0;
        Ok(())
    }

    /// Reads at most one chunk; whether a whole reply has now been read.
    fn turn(&mut self, buf: &mut [u8]) -> std::io::Result<bool> {
        let want = if self.head.len() < 4 {
            4 - self.head.len()
        } else {
            self.left.min(buf.len())
        };
        let n = match self.stream.read(&mut buf[..want]) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        };
        if self.head.len() < 4 {
            self.head.extend_from_slice(&buf[..n]);
            if let Ok(length) = <[u8; 4]>::try_from(self.head.as_slice()) {
                self.left = (u32::from_le_bytes(length) as usize).saturating_sub(4);
            }
            return Ok(false);
        }
        self.left -= n;
        Ok(self.left == 0)
    }
}

/// `n` slow readers on a thread of their own until `stop`; the thread answers how many whole
/// replies they read.
pub fn start_slow_readers(
    addr: SocketAddr,
    n: usize,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<Result<u64, String>>, String> {
    let mut readers = Vec::with_capacity(n);
    for i in 0..n {
        let stream = TcpStream::connect(addr).map_err(|e| format!("slow reader {i}: {e}"))?;
        let mut reader = Slow {
            stream,
            head: Vec::new(),
            left: 0,
        };
        reader.ask().map_err(|e| format!("slow reader {i}: {e}"))?;
        readers.push(reader);
    }
    Ok(std::thread::spawn(move || {
        let mut buf = vec![0u8; SLOW_CHUNK];
        let mut replies = 0u64;
        while !stop.load(Ordering::Acquire) {
            for (i, reader) in readers.iter_mut().enumerate() {
                let done = reader
                    .turn(&mut buf)
                    .map_err(|e| format!("slow reader {i}: {e}"))?;
                if done {
                    replies += 1;
                    reader.ask().map_err(|e| format!("slow reader {i}: {e}"))?;
                }
            }
            std::thread::sleep(SLOW_TICK);
        }
        Ok(replies)
    }))
}
