//! The S1 inbox, three ways, side by side on the same workload (the README's showcase).
//!
//! - S1a fan out on read: one document per message, `to` holds every recipient; a reader's
//!   inbox is `find({to: me}).sort({sent: -1})` over the index `{to: 1, sent: 1}`.
//! - S1b fan out on write: one document per recipient; `{recipient: 1, sent: 1}`.
//! - S1c buckets: `odm_patterns::Inbox`, 50 messages per bucket, in both of its variants.
//!
//! For each design it prints the time to send the workload; the time to read the latest 50
//! messages of random users warm (the file in memory) and cold (before each read the file's
//! pages are dropped from the OS cache with `posix_fadvise(POSIX_FADV_DONTNEED)`, and the
//! database is reopened with a 1 MiB page cache), with the bytes each cold read asked of the
//! file and the bytes the device delivered (`rchar` and `read_bytes` of `/proc/self/io`); the
//! documents and index keys one read examines (from explain) and the bytes on disk. Then one
//! sample inbox, and its live delivery: a reader thread subscribed to the inbox
//! (`Inbox::subscribe`, over the change log) waits for new messages instead of polling, and
//! the time from each send to its delivery is reported. The last line compares S1c (the
//! open-bucket variant) with S1b: `ratio send_s1c/s1b=.. cold_read_s1b/s1c=..
//! warm_read_s1b/s1c=..`. Cold reads are measured on Linux only.
//!
//! `cargo run --release --example inbox -- [--users N] [--messages N] [--recipients N] [--reads N]`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bson::DateTime;
use bson::oid::ObjectId;
use odm::engine::query::Explain;
use odm::{Collection, Database, Document, Find, Sort};
use odm_patterns::{Inbox, InboxVariant};
use serde::{Deserialize, Serialize};

/// S1a: one document per message.
#[derive(Debug, Clone, Serialize, Deserialize, Document)]
#[odm(collection = "messages", index(keys(to = 1, sent = 1)))]
struct Message {
    #[odm(id)]
    id: ObjectId,
    from: String,
    to: Vec<String>,
    sent: DateTime,
    text: String,
}

/// S1b: one document per recipient.
#[derive(Debug, Clone, Serialize, Deserialize, Document)]
#[odm(collection = "deliveries", index(keys(recipient = 1, sent = 1)))]
struct Delivery {
    #[odm(id)]
    id: ObjectId,
    recipient: String,
    from: String,
    sent: DateTime,
    text: String,
}

/// S1c: what a bucket holds per message.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Text {
    text: String,
}

const PAGE: usize = 50;
const BATCH: usize = 200;

struct Settings {
    users: u64,
    messages: usize,
    recipients: u64,
    reads: usize,
}

/// One design's figures.
struct Row {
    design: &'static str,
    send_ms: f64,
    read_us: f64,
    cold: Cold,
    docs: f64,
    keys: f64,
    bytes: u64,
}

/// Cold reads: time, bytes asked of the file and bytes from the device, per read.
#[derive(Default)]
struct Cold {
    us: f64,
    file_kib: f64,
    device_kib: f64,
}

/// The page cache of the database cold reads reopen.
const COLD_CACHE: usize = 1 << 20;
/// How many of the readers read cold.
const COLD_READS: usize = 200;

/// Reads the inbox of each of `who` (at most [`COLD_READS`]) from a database reopened on
/// `path` with a small cache, dropping the file's pages from the OS cache before each read.
fn cold_reads<H>(
    path: &Path,
    who: &[String],
    open: impl Fn(&Database) -> Result<H, Box<dyn std::error::Error>>,
    read: impl Fn(&H, &str) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<Cold, Box<dyn std::error::Error>> {
    let db = Database::from_engine(odm::engine::Database::open_with_cache(path, COLD_CACHE)?);
    let handle = open(&db)?;
    let who = &who[..who.len().min(COLD_READS)];
    let (mut time, mut file, mut device) = (Duration::ZERO, 0, 0);
    for user in who {
        drop_from_os_cache(path)?;
        let before = io_counters();
        let start = Instant::now();
        read(&handle, user)?;
        time += start.elapsed();
        let after = io_counters();
        file += after.0 - before.0;
        device += after.1 - before.1;
    }
    let n = who.len().max(1) as f64;
    Ok(Cold {
        us: time.as_secs_f64() * 1e6 / n,
        file_kib: file as f64 / 1024.0 / n,
        device_kib: device as f64 / 1024.0 / n,
    })
}

/// Drops the file's pages from the OS cache (clean pages only: everything was committed).
#[cfg(target_os = "linux")]
fn drop_from_os_cache(path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::open(path)?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn drop_from_os_cache(_: &Path) -> std::io::Result<()> {
    Ok(())
}

/// This process's bytes read through system calls and bytes read from storage so far
/// (`rchar` and `read_bytes` of `/proc/self/io`; zero where there is no such file).
fn io_counters() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("rchar:"), field("read_bytes:"))
}

/// A small deterministic generator, so that every design gets the same workload.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// The workload: sender, recipients, text, for every message.
fn workload(s: &Settings) -> Vec<(String, Vec<String>, String)> {
    let mut rng = Rng(2026);
    (0..s.messages)
        .map(|i| {
            let from = format!("user{}", rng.below(s.users));
            let count = 1 + rng.below(2 * s.recipients - 1);
            let mut to: Vec<String> = (0..count)
                .map(|_| format!("user{}", rng.below(s.users)))
                .collect();
            to.sort();
            to.dedup();
            (
                from,
                to,
                format!("message {i}: hello from the inbox showcase"),
            )
        })
        .collect()
}

fn readers(s: &Settings) -> Vec<String> {
    let mut rng = Rng(7);
    (0..s.reads)
        .map(|_| format!("user{}", rng.below(s.users)))
        .collect()
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn size_of(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Average documents and keys examined over a sample of reads.
fn examined(explains: &[Explain]) -> (f64, f64) {
    let n = explains.len().max(1) as f64;
    let docs: u64 = explains.iter().map(|e| e.docs_examined).sum();
    let keys: u64 = explains.iter().map(|e| e.keys_examined).sum();
    (docs as f64 / n, keys as f64 / n)
}

/// S1a's read: the latest page of messages sent to `user`.
fn latest_messages(messages: &Collection<Message>, user: &str) -> Find<Message> {
    let f = Message::fields();
    messages
        .find(f.to.contains(user))
        .sort(Sort::desc(&f.sent))
        .limit(PAGE as u64)
}

/// S1b's read: the latest page of `user`'s deliveries.
fn latest_deliveries(deliveries: &Collection<Delivery>, user: &str) -> Find<Delivery> {
    let f = Delivery::fields();
    deliveries
        .find(f.recipient.eq(user))
        .sort(Sort::desc(&f.sent))
        .limit(PAGE as u64)
}

fn fan_out_on_read(
    dir: &Path,
    work: &[(String, Vec<String>, String)],
    who: &[String],
) -> Result<Row, Box<dyn std::error::Error>> {
    let path = fresh(dir, "fan-out-on-read.redb");
    let db = Database::open(&path)?;
    let messages = db.collection::<Message>()?;
    let start = Instant::now();
    for batch in work.chunks(BATCH) {
        db.write(|tx| {
            for (from, to, text) in batch {
                tx.insert_one(&Message {
                    id: ObjectId::new(),
                    from: from.clone(),
                    to: to.clone(),
                    sent: DateTime::now(),
                    text: text.clone(),
                })?;
            }
            Ok(())
        })?;
    }
    let send_ms = start.elapsed().as_secs_f64() * 1e3;
    let latest = |user: &str| latest_messages(&messages, user);
    let start = Instant::now();
    for user in who {
        latest(user).to_vec()?;
    }
    let read_us = start.elapsed().as_secs_f64() * 1e6 / who.len().max(1) as f64;
    let explains: Vec<Explain> = who
        .iter()
        .take(20)
        .map(|u| latest(u).explain())
        .collect::<odm::Result<_>>()?;
    let (docs, keys) = examined(&explains);
    drop(messages);
    drop(db);
    let cold = cold_reads(
        &path,
        who,
        |db| Ok(db.collection::<Message>()?),
        |messages, user| {
            latest_messages(messages, user).to_vec()?;
            Ok(())
        },
    )?;
    Ok(Row {
        design: "S1a fan out on read",
        send_ms,
        read_us,
        cold,
        docs,
        keys,
        bytes: size_of(&path),
    })
}

/// Out of line, as `buckets` is, so that callgrind can count S1b's sends alone
/// (`--toggle-collect='inbox::fan_out_on_write::{{closure}}'`, the write transaction's closure:
/// a pattern matching both this function and the closure would toggle counting off inside).
#[inline(never)]
fn fan_out_on_write(
    dir: &Path,
    work: &[(String, Vec<String>, String)],
    who: &[String],
) -> Result<Row, Box<dyn std::error::Error>> {
    let path = fresh(dir, "fan-out-on-write.redb");
    let db = Database::open(&path)?;
    let deliveries = db.collection::<Delivery>()?;
    let start = Instant::now();
    for batch in work.chunks(BATCH) {
        db.write(|tx| {
            for (from, to, text) in batch {
                let sent = DateTime::now();
                for recipient in to {
                    tx.insert_one(&Delivery {
                        id: ObjectId::new(),
                        recipient: recipient.clone(),
                        from: from.clone(),
                        sent,
                        text: text.clone(),
                    })?;
                }
            }
            Ok(())
        })?;
    }
    let send_ms = start.elapsed().as_secs_f64() * 1e3;
    let latest = |user: &str| latest_deliveries(&deliveries, user);
    let start = Instant::now();
    for user in who {
        latest(user).to_vec()?;
    }
    let read_us = start.elapsed().as_secs_f64() * 1e6 / who.len().max(1) as f64;
    let explains: Vec<Explain> = who
        .iter()
        .take(20)
        .map(|u| latest(u).explain())
        .collect::<odm::Result<_>>()?;
    let (docs, keys) = examined(&explains);
    drop(deliveries);
    drop(db);
    let cold = cold_reads(
        &path,
        who,
        |db| Ok(db.collection::<Delivery>()?),
        |deliveries, user| {
            latest_deliveries(deliveries, user).to_vec()?;
            Ok(())
        },
    )?;
    Ok(Row {
        design: "S1b fan out on write",
        send_ms,
        read_us,
        cold,
        docs,
        keys,
        bytes: size_of(&path),
    })
}

fn buckets(
    dir: &Path,
    work: &[(String, Vec<String>, String)],
    who: &[String],
    variant: InboxVariant,
) -> Result<(Row, Inbox<Text>, Database), Box<dyn std::error::Error>> {
    let (design, file) = match variant {
        InboxVariant::OpenBucket => ("S1c buckets, open-bucket upsert", "buckets-open.redb"),
        InboxVariant::Sequence => ("S1c buckets, sequence counter", "buckets-sequence.redb"),
    };
    let path = fresh(dir, file);
    let db = Database::open(&path)?;
    let inbox: Inbox<Text> = Inbox::open(&db, "inbox", PAGE as u32, variant)?;
    let texts: Vec<Text> = work
        .iter()
        .map(|(_, _, t)| Text { text: t.clone() })
        .collect();
    let recipients: Vec<Vec<&str>> = work
        .iter()
        .map(|(_, to, _)| to.iter().map(String::as_str).collect())
        .collect();
    let start = Instant::now();
    for (i, batch) in work.chunks(BATCH).enumerate() {
        let base = i * BATCH;
        inbox.send_all(batch.iter().enumerate().map(|(j, (from, _, _))| {
            (
                from.as_str(),
                recipients[base + j].as_slice(),
                &texts[base + j],
            )
        }))?;
    }
    let send_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    for user in who {
        inbox.latest(user, 0, PAGE)?;
    }
    let read_us = start.elapsed().as_secs_f64() * 1e6 / who.len().max(1) as f64;
    let explains: Vec<Explain> = who
        .iter()
        .take(20)
        .filter_map(|u| inbox.explain_latest(u, PAGE).ok())
        .collect();
    let (docs, keys) = examined(&explains);
    drop(inbox);
    drop(db);
    let bytes = size_of(&path);
    let cold = cold_reads(
        &path,
        who,
        |db| Ok(Inbox::<Text>::open(db, "inbox", PAGE as u32, variant)?),
        |inbox, user| {
            inbox.latest(user, 0, PAGE)?;
            Ok(())
        },
    )?;
    let db = Database::open(&path)?;
    let inbox: Inbox<Text> = Inbox::open(&db, "inbox", PAGE as u32, variant)?;
    Ok((
        Row {
            design,
            send_ms,
            read_us,
            cold,
            docs,
            keys,
            bytes,
        },
        inbox,
        db,
    ))
}

fn parse() -> Result<Settings, String> {
    let mut s = Settings {
        users: 1_000,
        messages: 10_000,
        recipients: 5,
        reads: 500,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value: u64 = it
            .next()
            .and_then(|v| v.parse().ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| format!("{flag} takes a positive number"))?;
        match flag.as_str() {
            "--users" => s.users = value,
            "--messages" => s.messages = usize::try_from(value).map_err(|e| e.to_string())?,
            "--recipients" => s.recipients = value,
            "--reads" => s.reads = usize::try_from(value).map_err(|e| e.to_string())?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(s)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let settings = parse().map_err(|e| {
        format!("{e}\nusage: inbox [--users N] [--messages N] [--recipients N] [--reads N]")
    })?;
    let dir = std::env::temp_dir().join(format!("odm-inbox-showcase-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let work = workload(&settings);
    let who = readers(&settings);
    let deliveries: usize = work.iter().map(|(_, to, _)| to.len()).sum();
    println!(
        "S1 inbox: {} users, {} messages, {} deliveries (about {} recipients each), latest {PAGE} read for {} random users; {} messages per transaction when sending",
        settings.users, settings.messages, deliveries, settings.recipients, settings.reads, BATCH
    );
    let mut rows = vec![
        fan_out_on_read(&dir, &work, &who)?,
        fan_out_on_write(&dir, &work, &who)?,
    ];
    let (open, _, _) = buckets(&dir, &work, &who, InboxVariant::OpenBucket)?;
    rows.push(open);
    let (sequence, inbox, db) = buckets(&dir, &work, &who, InboxVariant::Sequence)?;
    rows.push(sequence);
    println!(
        "{:<34}{:>9}{:>10}{:>10}{:>11}{:>11}{:>7}{:>7}{:>11}",
        "design", "send ms", "warm µs", "cold µs", "file KiB", "disk KiB", "docs", "keys", "bytes"
    );
    for r in &rows {
        println!(
            "{:<34}{:>9.0}{:>10.1}{:>10.1}{:>11.1}{:>11.1}{:>7.1}{:>7.1}{:>11}",
            r.design,
            r.send_ms,
            r.read_us,
            r.cold.us,
            r.cold.file_kib,
            r.cold.device_kib,
            r.docs,
            r.keys,
            r.bytes
        );
    }
    println!(
        "(per read of the latest {PAGE}: warm with the file in memory; cold after dropping the file from the OS cache, {} MiB page cache, first {} readers; KiB asked of the file and read from the device; documents and keys examined)",
        COLD_CACHE >> 20,
        COLD_READS.min(who.len())
    );
    let sample = &who[0];
    println!("\nthe inbox of {sample}, newest first (buckets):");
    for envelope in inbox.latest(sample, 0, 5)? {
        println!(
            "  {} from {:<9} {}",
            envelope.sent, envelope.from, envelope.message.text
        );
    }
    live_delivery(&inbox, sample)?;
    drop(inbox);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    // S1b against S1c's open-bucket variant (rows 1 and 2).
    let (s1b, s1c) = (&rows[1], &rows[2]);
    println!(
        "\nratio send_s1c/s1b={:.2} cold_read_s1b/s1c={:.2} warm_read_s1b/s1c={:.2}",
        s1c.send_ms / s1b.send_ms,
        s1b.cold.us / s1c.cold.us,
        s1b.read_us / s1c.read_us
    );
    Ok(())
}

/// How many messages the live-delivery demonstration sends.
const LIVE: usize = 200;

/// A reader thread subscribed to `owner`'s inbox waits for each message; the sender sends
/// them one transaction each. Prints the send-to-delivery times.
fn live_delivery(inbox: &Inbox<Text>, owner: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut subscription = inbox.subscribe(owner)?;
    let reader = std::thread::spawn(move || {
        let mut arrivals = Vec::with_capacity(LIVE);
        while arrivals.len() < LIVE {
            match subscription.next_timeout(Duration::from_secs(10)) {
                Ok(Some(envelope)) => arrivals.push((envelope.message.text, Instant::now())),
                Ok(None) | Err(_) => break,
            }
        }
        arrivals
    });
    let mut sent = Vec::with_capacity(LIVE);
    for i in 0..LIVE {
        sent.push(Instant::now());
        inbox.send(
            "showcase",
            &[owner],
            &Text {
                text: format!("live {i}"),
            },
        )?;
    }
    let arrivals = reader.join().map_err(|_| "the reader thread panicked")?;
    let mut micros: Vec<f64> = arrivals
        .iter()
        .filter_map(|(text, at)| {
            let i: usize = text.strip_prefix("live ")?.parse().ok()?;
            Some(at.duration_since(*sent.get(i)?).as_secs_f64() * 1e6)
        })
        .collect();
    micros.sort_by(f64::total_cmp);
    let at = |p: f64| micros[((micros.len() - 1) as f64 * p) as usize];
    println!(
        "\nlive delivery to {owner}: a reader thread waits on the inbox's change stream; {LIVE} messages sent one per transaction"
    );
    if micros.is_empty() {
        println!("  no message arrived");
    } else {
        println!(
            "  delivered {} of {LIVE} in order: {}; send to delivery p50 {:.0} µs, p99 {:.0} µs",
            arrivals.len(),
            arrivals
                .iter()
                .enumerate()
                .all(|(i, (text, _))| *text == format!("live {i}")),
            at(0.5),
            at(0.99)
        );
    }
    Ok(())
}
