//! S6 and S17: choosing a shard key before there is a cluster, on the embedded file the
//! application already runs on.
//!
//! - S17, uploaded images (`images`): an auto-increment (ObjectId) key, an MD5 of the data,
//!   and a month plus the MD5: right-balanced, random and segmented access. The model declares
//!   the month plus the MD5; the application's reads are sampled as they run (MongoDB's
//!   `configureQueryAnalyzer`), the declared key is analyzed in one call (MongoDB's
//!   `analyzeShardKey`), and the advisor puts the three candidates side by side: MongoDB's
//!   metrics, the placement of documents and recent inserts over a simulated cluster, and
//!   where each sampled query shape would go.
//! - S1, an inbox of one document per recipient (`messages`): by `_id`, by recipient and
//!   time, or by a hash of the recipient; the queries are reads of one inbox.
//!
//! `cargo run --release --example shard_advisor [-- --svg FILE]` (the picture of S17's keys).

use bson::{Document, doc, oid::ObjectId};
use odm::advisor::{Advisor, AnalyzeOptions};
use odm::engine::ShardKey;
use odm::engine::sampling::AnalyzerMode;
use odm::{Database, Document as _};
use serde::{Deserialize, Serialize};

const MONTHS: u32 = 12;
const IMAGES_PER_MONTH: u32 = 2_000;
const SHARDS: usize = 4;

/// A fixed pseudo-random stream (xorshift), so that every run prints the same figures.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// An ObjectId made at `second`: its first four bytes are the time, so ids increase.
fn object_id(second: u32, counter: u32) -> ObjectId {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&second.to_be_bytes());
    bytes[8..].copy_from_slice(&counter.to_be_bytes());
    ObjectId::from_bytes(bytes)
}

/// S17's `images`: what the key is chosen from (the image bytes live in `GridFS`). The
/// declared key is the month plus the MD5, supported by its compound index.
#[derive(Debug, Clone, Serialize, Deserialize, odm::Document)]
#[odm(
    collection = "images",
    shard_key(month, md5),
    index(keys(month = 1, md5 = 1))
)]
struct Image {
    #[odm(id)]
    id: ObjectId,
    #[odm(index)]
    md5: String,
    month: String,
    #[odm(index)]
    book: i64,
    bytes: i64,
}

/// Uploads over a year, each with its MD5 and month.
fn images() -> Vec<Image> {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    (0..MONTHS * IMAGES_PER_MONTH)
        .map(|n| {
            let month = n / IMAGES_PER_MONTH;
            Image {
                id: object_id(1_700_000_000 + n * 1_300, n),
                md5: format!("{:016x}{:016x}", random.next(), random.next()),
                month: format!("2026-{:02}", month + 1),
                book: (random.next() % 5_000) as i64,
                bytes: (20_000 + random.next() % 400_000) as i64,
            }
        })
        .collect()
}

/// S1's inbox, one document per recipient, sharded by recipient and time: an inbox read goes
/// to one shard.
#[derive(Debug, Clone, Serialize, Deserialize, odm::Document)]
#[odm(
    collection = "messages",
    shard_key(recipient, sent),
    index(keys(recipient = 1, sent = 1))
)]
struct Message {
    #[odm(id)]
    id: ObjectId,
    recipient: String,
    sender: String,
    sent: bson::DateTime,
    text: String,
    read: bool,
}

/// 500 users, messages fanned out to three recipients each.
fn messages() -> Vec<Message> {
    let mut random = Random(0x2545_f491_4f6c_dd1d);
    let mut out = Vec::new();
    for n in 0..8_000u32 {
        let sender = random.next() % 500;
        for _ in 0..3 {
            out.push(Message {
                id: object_id(1_700_000_000 + n * 60, out.len() as u32),
                recipient: format!("user{}", random.next() % 500),
                sender: format!("user{sender}"),
                sent: bson::DateTime::from_millis(1_700_000_000_000 + i64::from(n) * 60_000),
                text: "see you at the library".into(),
                read: false,
            });
        }
    }
    out
}

fn key(document: Document) -> ShardKey {
    ShardKey::from_document(&document).expect("a valid shard key")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let svg = std::env::args()
        .skip_while(|a| a != "--svg")
        .nth(1)
        .unwrap_or_else(|| "target/shard-advisor-s17.svg".into());

    println!("S17: the shard key of uploaded images\n");
    let db = Database::in_memory()?;
    let collection = db.collection::<Image>()?;
    let uploads = images();
    collection.insert_many(&uploads)?;
    // The application runs with sampling on: its reads of a book's images, of one image by
    // MD5, and of one image of a month, one after another.
    collection.configure_query_analyzer(AnalyzerMode::Full, Some(50.0))?;
    let f = Image::fields();
    for i in 0..60 {
        let image = &uploads[(i * 397) % uploads.len()];
        match i % 3 {
            0 => drop(collection.find(f.book.eq(image.book)).to_vec()?),
            1 => drop(collection.find_one(f.md5.eq(image.md5.clone()))?),
            _ => drop(
                collection.find_one(
                    f.month
                        .eq(image.month.clone())
                        .and(f.md5.eq(image.md5.clone())),
                )?,
            ),
        }
    }
    // One call: MongoDB's analyzeShardKey of the declared key, with the sampled reads.
    println!(
        "{}",
        collection.analyze_shard_key(&AnalyzeOptions::default())?
    );
    // The three candidates side by side: MongoDB's metrics, the placement, the query shapes.
    // Real images are large: 128 MiB chunks of them hold a few hundred uploads. The bound
    // below gives this sample as many chunks per month as a year of such uploads would have.
    let engine = db.engine().ok_or("an embedded database")?;
    let report = Advisor::new(SHARDS).chunk_bytes(4_000).analyze_collection(
        engine,
        "images",
        &[
            key(doc! { "_id": 1 }),
            key(doc! { "md5": 1 }),
            key(doc! { "month": 1, "md5": 1 }),
            key(doc! { "_id": "hashed" }),
        ],
        None,
        &AnalyzeOptions::default(),
    )?;
    print!("{report}");
    if let Some(folder) = std::path::Path::new(&svg).parent() {
        std::fs::create_dir_all(folder)?;
    }
    std::fs::write(&svg, report.to_svg())?;
    println!("picture: {svg}\n");
    for candidate in &report.candidates {
        let (shard, share) = candidate.hottest_recent();
        println!(
            "{}: the latest uploads go to {} shard(s); the busiest takes {:.0}% of them (shard {shard})",
            candidate.key.to_document(),
            candidate.recent_segments(),
            100.0 * share
        );
    }
    println!();
    verdict(&report);
    println!("\nS1: an inbox of one document per recipient\n");
    let messages_of = db.collection::<Message>()?;
    let inbox = messages();
    messages_of.insert_many(&inbox)?;
    messages_of.configure_query_analyzer(AnalyzerMode::Full, Some(50.0))?;
    let f = Message::fields();
    // The application: reads of the latest 50 of an inbox, and messages marked read, half by
    // `_id` alone and half by `save`, which finds a document by `_id` and its shard key.
    for i in 0..20 {
        messages_of
            .find(f.recipient.eq(format!("user{i}")))
            .sort(odm::Sort::desc(&f.sent))
            .limit(50)
            .to_vec()?;
        let mut message = inbox[i * 97].clone();
        message.read = true;
        if i % 2 == 0 {
            messages_of.update_one(f.id.eq(message.id), f.read.set(true))?;
        } else {
            messages_of.save(&mut message)?;
        }
    }
    let report = Advisor::new(SHARDS).analyze_collection(
        engine,
        "messages",
        &[
            key(doc! { "_id": 1 }),
            key(doc! { "recipient": 1, "sent": 1 }),
            key(doc! { "recipient": "hashed" }),
        ],
        None,
        &AnalyzeOptions::default(),
    )?;
    print!("{report}");
    println!();
    verdict(&report);
    Ok(())
}

/// The key that wins on the report's own numbers, and why: first not monotonic, then recent
/// inserts spread over the shards, then the fewest ranges (of 100) a sampled query reaches.
fn verdict(report: &odm::advisor::Report) {
    let mut best: Option<(&odm::advisor::Candidate, (bool, i64, f64))> = None;
    for c in &report.candidates {
        let Some(Ok(analysis)) = &c.analysis else {
            continue;
        };
        let monotonic = analysis
            .key_characteristics
            .as_ref()
            .is_some_and(|k| k.monotonicity == odm::advisor::Monotonicity::Monotonic);
        let (mut queries, mut single, mut reached) = (0u64, 0u64, 0u64);
        for targets in [
            analysis
                .read_distribution
                .as_ref()
                .map(|r| (&r.targets, r.total())),
            analysis
                .write_distribution
                .as_ref()
                .map(|w| (&w.targets, w.total())),
        ]
        .into_iter()
        .flatten()
        {
            queries += targets.1;
            single += targets.0.single_shard;
            reached += targets.0.by_range.iter().sum::<u64>();
        }
        let mean = if queries == 0 {
            0.0
        } else {
            reached as f64 / queries as f64
        };
        let hottest = c.hottest_recent().1;
        println!(
            "{}: {}; the busiest shard takes {:.0}% of recent inserts; {:.0}% of sampled queries go to one shard, and a query reaches {:.1} of 100 ranges on average",
            c.key.to_document(),
            if monotonic {
                "monotonic"
            } else {
                "not monotonic"
            },
            100.0 * hottest,
            if queries == 0 {
                0.0
            } else {
                100.0 * single as f64 / queries as f64
            },
            mean
        );
        // Spread inserts count in tenths: a hot shard caps the cluster's write rate.
        let score = (monotonic, (hottest * 10.0).round() as i64, mean);
        if best.as_ref().is_none_or(|(_, b)| {
            (score.0, score.1) < (b.0, b.1) || ((score.0, score.1) == (b.0, b.1) && score.2 < b.2)
        }) {
            best = Some((c, score));
        }
    }
    if let Some((c, _)) = best {
        println!("wins: {}", c.key.to_document());
    }
}
