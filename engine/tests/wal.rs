//! The write-ahead log's rules (see `odm_engine::wal`), each on its own: what a sync makes
//! durable without syncing the database file, what recovery replays and what it refuses, and
//! how files opened with `Database::open` keep their logs. The power-loss test runs whole
//! workloads through the log.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

mod common;

use bson::doc;
use common::temp_path;
use odm_engine::Database;
use odm_engine::wal::{Limits, Wal, log_path};
use redb::StorageBackend;

/// A disk that keeps what the process wrote apart from what a sync made durable. A sync
/// can be made to fail as Linux fails one: the writes it should have made durable are lost,
/// and later syncs report success without them; or it can fail having written them all (the
/// device wrote them and then reported an error), which the caller cannot tell apart.
#[derive(Debug, Clone, Default)]
struct Sim(Arc<Mutex<Image>>);

#[derive(Debug, Default)]
struct Image {
    current: Vec<u8>,
    durable: Vec<u8>,
    /// Writes and length changes since the last sync, in order (a length change has no bytes).
    unsynced: Vec<(usize, Option<Vec<u8>>)>,
    fail_next_sync: bool,
    /// The failing sync writes what it should have before reporting its failure.
    fail_after_writing: bool,
    /// The failing sync that loses its writes also drops them from the cache: reads answer
    /// what is durable.
    fail_dropping_cache: bool,
}

fn write_at(bytes: &mut Vec<u8>, at: usize, data: &[u8]) {
    if bytes.len() < at + data.len() {
        bytes.resize(at + data.len(), 0);
    }
    bytes[at..at + data.len()].copy_from_slice(data);
}

impl Sim {
    fn image(&self) -> std::sync::MutexGuard<'_, Image> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The disk after power loss: its durable contents only.
    fn crashed(&self) -> Sim {
        self.crashed_with(|_| {})
    }

    /// The disk after power loss, its durable bytes changed by `damage`.
    fn crashed_with(&self, damage: impl FnOnce(&mut Vec<u8>)) -> Sim {
        let mut durable = self.image().durable.clone();
        damage(&mut durable);
        Sim(Arc::new(Mutex::new(Image {
            current: durable.clone(),
            durable,
            ..Image::default()
        })))
    }

    fn durable(&self) -> Vec<u8> {
        self.image().durable.clone()
    }

    fn current(&self) -> Vec<u8> {
        self.image().current.clone()
    }
}

impl StorageBackend for Sim {
    fn len(&self) -> io::Result<u64> {
        Ok(self.image().current.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let image = self.image();
        let start = offset as usize;
        let bytes = image
            .current
            .get(start..start + out.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        out.copy_from_slice(bytes);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut image = self.image();
        image.current.resize(len as usize, 0);
        image.unsynced.push((len as usize, None));
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut image = self.image();
        let unsynced = std::mem::take(&mut image.unsynced);
        let failing = std::mem::take(&mut image.fail_next_sync);
        let written = std::mem::take(&mut image.fail_after_writing);
        if failing && !written {
            if std::mem::take(&mut image.fail_dropping_cache) {
                let image = &mut *image;
                image.current.clone_from(&image.durable);
            }
            return Err(io::Error::other("the device failed to write"));
        }
        for (at, data) in unsynced {
            match data {
                Some(data) => write_at(&mut image.durable, at, &data),
                None => image.durable.resize(at, 0),
            }
        }
        let len = image.current.len();
        image.durable.resize(len, 0);
        if failing {
            return Err(io::Error::other(
                "the device reported an error after writing",
            ));
        }
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut image = self.image();
        write_at(&mut image.current, offset as usize, data);
        image.unsynced.push((offset as usize, Some(data.to_vec())));
        Ok(())
    }
}

/// Limits under which a second small group already passes the checkpoint size.
const CHECKPOINT_AFTER_ONE_GROUP: Limits = Limits {
    checkpoint_bytes: 8192,
    group_bytes: 1 << 20,
};

/// Limits under which one sync's writes above a page already outgrow their group.
const ONE_PAGE_GROUPS: Limits = Limits {
    checkpoint_bytes: 1 << 20,
    group_bytes: 4096,
};

fn open(main: &Sim, log: &Sim) -> Wal<Sim, Sim> {
    Wal::open(main.clone(), log.clone(), Limits::default()).expect("the log opens")
}

/// Where the log's first group starts (after the header block).
const FIRST_GROUP: usize = 4096;

#[test]
fn a_sync_makes_writes_durable_in_the_log_without_syncing_the_database_file() {
    let (main, log) = (Sim::default(), Sim::default());
    let wal = open(&main, &log);
    wal.write(0, b"first").unwrap();
    wal.write(8192, b"second").unwrap();
    wal.sync_data().unwrap();
    // Only the log was synced. The file grew to hold the pages, but they wait in memory for
    // the next checkpoint; reads find them there.
    assert_eq!(main.current().len(), 8198);
    assert!(main.current().iter().all(|&b| b == 0), "no page written");
    assert!(main.durable().is_empty());
    let mut read = [0u8; 6];
    wal.read(8192, &mut read).unwrap();
    assert_eq!(&read, b"second");

    let (main, log) = (main.crashed(), log.crashed());
    drop(open(&main, &log));
    let recovered = main.durable();
    assert_eq!(&recovered[..5], b"first");
    assert_eq!(&recovered[8192..8198], b"second");
}

#[test]
fn a_page_logged_without_its_trailing_zeros_is_replayed_with_them() {
    let (main, log) = (Sim::default(), Sim::default());
    // Stale bytes where the page will go, already durable in the file.
    main.write(0, &[9; 4096]).unwrap();
    main.sync_data().unwrap();
    let wal = open(&main, &log);
    let mut page = vec![0u8; 4096];
    page[..3].copy_from_slice(b"abc");
    page[1000] = 5;
    wal.write(0, &page).unwrap();
    wal.sync_data().unwrap();
    // The group's body: one entry's head and the bytes up to the last non-zero one.
    let head = &log.durable()[FIRST_GROUP..FIRST_GROUP + 24];
    let body = u32::from_le_bytes(head[20..24].try_into().unwrap());
    assert_eq!(
        body,
        17 + 1001,
        "the zeros after the last non-zero byte are not stored"
    );
    let (main, log) = (main.crashed(), log.crashed());
    drop(open(&main, &log));
    assert_eq!(main.durable()[..4096], page[..]);
}

#[test]
fn writes_after_the_last_sync_are_not_replayed() {
    let (main, log) = (Sim::default(), Sim::default());
    let wal = open(&main, &log);
    wal.write(0, b"kept").unwrap();
    wal.sync_data().unwrap();
    wal.write(0, b"lost").unwrap();
    let (main, log) = (main.crashed(), log.crashed());
    drop(open(&main, &log));
    assert_eq!(&main.durable()[..4], b"kept");
}

#[test]
fn a_torn_group_and_every_group_after_it_are_ignored() {
    let (main, log) = (Sim::default(), Sim::default());
    let wal = open(&main, &log);
    wal.write(0, b"one").unwrap();
    wal.sync_data().unwrap();
    wal.write(100, b"two").unwrap();
    wal.sync_data().unwrap();
    wal.write(200, b"three").unwrap();
    wal.sync_data().unwrap();
    // Tear the second group: one byte of its body changed.
    let image = log.crashed_with(|bytes| {
        // The first group: head, one entry's head and its three bytes, CRC.
        let group = FIRST_GROUP + 24 + 17 + 3 + 4;
        bytes[group + 30] ^= 0xFF;
    });
    let main = main.crashed();
    let wal = open(&main, &image);
    let recovered = main.durable();
    assert_eq!(&recovered[..3], b"one");
    assert!(recovered.len() < 103 || &recovered[100..103] != b"two");
    assert!(recovered.len() < 205 || &recovered[200..205] != b"three");

    // The recovered log takes new groups, which a second recovery replays.
    wal.write(300, b"four").unwrap();
    wal.sync_data().unwrap();
    let (main, image) = (main.crashed(), image.crashed());
    drop(open(&main, &image));
    assert_eq!(&main.durable()[300..304], b"four");
    assert_ne!(&main.durable()[100..103], b"two");
}

#[test]
fn length_changes_are_replayed_in_order_with_the_writes() {
    let (main, log) = (Sim::default(), Sim::default());
    let wal = open(&main, &log);
    wal.set_len(65536).unwrap();
    wal.write(60000, b"end").unwrap();
    wal.set_len(61000).unwrap();
    // Past the shrink: replayed before it, this would be cut off.
    wal.write(62000, b"after").unwrap();
    wal.set_len(62003).unwrap();
    wal.sync_data().unwrap();
    let (main, log) = (main.crashed(), log.crashed());
    drop(open(&main, &log));
    let recovered = main.durable();
    assert_eq!(recovered.len(), 62003);
    assert_eq!(&recovered[60000..60003], b"end");
    assert_eq!(&recovered[61000..62000], [0; 1000]);
    assert_eq!(&recovered[62000..62003], b"aft");
}

#[test]
fn a_checkpoint_syncs_the_file_and_retires_the_groups() {
    let (main, log) = (Sim::default(), Sim::default());
    let limits = CHECKPOINT_AFTER_ONE_GROUP;
    let wal = Wal::open(main.clone(), log.clone(), limits).unwrap();
    wal.write(0, &[1; 3000]).unwrap();
    wal.sync_data().unwrap();
    assert!(main.durable().is_empty(), "one group fits: appended");
    wal.write(0, &[2; 3000]).unwrap();
    wal.sync_data().unwrap();
    // A second group would pass the limit: the page went to the file, which was synced.
    assert_eq!(main.durable()[..3000], [2; 3000]);
    // The retired group's older page is never replayed over it.
    let (main, log) = (main.crashed(), log.crashed());
    drop(Wal::open(main.clone(), log, limits).unwrap());
    assert_eq!(main.durable()[..3000], [2; 3000]);
}

#[test]
fn writes_of_one_sync_above_the_group_limit_go_to_the_file_not_the_log() {
    let (main, log) = (Sim::default(), Sim::default());
    let limits = ONE_PAGE_GROUPS;
    let wal = Wal::open(main.clone(), log.clone(), limits).unwrap();
    let log_before = log.durable();
    wal.write(0, &[7; 10_000]).unwrap();
    // Straight to the file, not held in memory.
    assert_eq!(main.current()[..10_000], [7; 10_000]);
    wal.sync_data().unwrap();
    assert_eq!(main.durable()[..10_000], [7; 10_000]);
    assert_eq!(log.durable(), log_before, "nothing appended");
}

#[test]
fn a_log_left_beside_a_deleted_database_is_not_replayed_into_a_new_one() {
    let path = temp_path("replaced.odm");
    // A log with a group that would overwrite the start of whatever file it is replayed into.
    {
        let file = |p: &std::path::Path| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(p)
                .unwrap()
        };
        let main = redb::backends::FileBackend::new(file(&path)).unwrap();
        let log = redb::backends::FileBackend::new(file(&log_path(&path))).unwrap();
        let wal = Wal::open(main, log, Limits::default()).unwrap();
        wal.write(0, &[0xAB; 4096]).unwrap();
        wal.sync_data().unwrap();
        // Dropped without closing, as by a crash: the group stays in the log.
    }
    std::fs::remove_file(&path).unwrap();
    let db = Database::open(&path).expect("a new database opens");
    db.collection("c").insert_one(doc! { "_id": 1 }).unwrap();
    drop(db);
    let db = Database::open(&path).expect("and reopens");
    assert_eq!(db.collection("c").count().unwrap(), 1);
}

#[test]
fn a_closed_database_file_is_whole_without_its_log() {
    let (main, log) = (Sim::default(), Sim::default());
    let db = Database::with_wal(main.clone(), log.clone(), Limits::default()).unwrap();
    for i in 0..50 {
        db.collection("c").insert_one(doc! { "_id": i }).unwrap();
    }
    // Before the close, the file alone lacks the commits (they are in the log).
    let before = Database::with_backend(main.crashed())
        .map_or(0, |db| db.collection("c").count().unwrap_or(0));
    assert!(before < 50, "{before}");
    drop(db);
    // What the file alone holds after power loss, opened with no log.
    let db = Database::with_backend(main.crashed()).unwrap();
    assert_eq!(db.collection("c").count().unwrap(), 50);
}

#[test]
fn a_failed_sync_of_the_database_file_keeps_the_log() {
    let (main, log) = (Sim::default(), Sim::default());
    let limits = CHECKPOINT_AFTER_ONE_GROUP;
    let wal = Wal::open(main.clone(), log.clone(), limits).unwrap();
    wal.write(0, b"acknowledged").unwrap();
    wal.sync_data().unwrap();
    // The next sync's group passes the checkpoint size, and the checkpoint's sync of the file
    // fails: its pages are lost. The sync itself succeeded (the log holds its group); the
    // next one reports the failure.
    main.image().fail_next_sync = true;
    wal.write(4096, &[1; 5000]).unwrap();
    wal.sync_data().unwrap();
    wal.write(0, b"refused").unwrap();
    assert!(wal.sync_data().is_err());
    // Closing must not retire the log, though the file's next sync would report success.
    let _ = wal.close();
    let (main, log) = (main.crashed(), log.crashed());
    drop(Wal::open(main.clone(), log, limits).unwrap());
    assert_eq!(&main.durable()[..12], b"acknowledged");
    assert_eq!(main.durable()[4096..9096], [1; 5000]);
}

#[test]
fn after_a_checkpoint_fails_past_the_file_sync_every_sync_checkpoints_until_one_finishes() {
    let (main, log) = (Sim::default(), Sim::default());
    let limits = ONE_PAGE_GROUPS;
    let wal = Wal::open(main.clone(), log.clone(), limits).unwrap();
    wal.write(0, b"one").unwrap();
    wal.sync_data().unwrap();
    // A write too large for a group checkpoints first; the log's sync after the new header
    // reports a failure, though the device wrote the header.
    {
        let mut image = log.image();
        image.fail_next_sync = true;
        image.fail_after_writing = true;
    }
    assert!(wal.write(8192, &[5; 5000]).is_err());
    // A group appended now under the old salt would be skipped by recovery, behind the new
    // header: the next sync must finish the checkpoint instead.
    wal.write(100, b"two").unwrap();
    wal.sync_data().unwrap();
    let (main, log) = (main.crashed(), log.crashed());
    drop(Wal::open(main.clone(), log, limits).unwrap());
    assert_eq!(&main.durable()[..3], b"one");
    assert_eq!(&main.durable()[100..103], b"two");
}

#[test]
fn pages_whose_checkpoint_failed_to_sync_the_file_are_still_read_from_memory() {
    let (main, log) = (Sim::default(), Sim::default());
    let wal = Wal::open(main.clone(), log.clone(), CHECKPOINT_AFTER_ONE_GROUP).unwrap();
    wal.write(0, &[3; 3000]).unwrap();
    wal.sync_data().unwrap();
    wal.write(4096, &[4; 3000]).unwrap();
    // This sync's group takes the log past its limit; the checkpoint's sync of the file fails
    // and the OS drops the pages it held.
    {
        let mut image = main.image();
        image.fail_next_sync = true;
        image.fail_dropping_cache = true;
    }
    wal.sync_data().unwrap();
    let mut read = vec![0u8; 3000];
    wal.read(4096, &mut read).unwrap();
    assert_eq!(read, [4; 3000]);
    wal.read(0, &mut read).unwrap();
    assert_eq!(read, [3; 3000]);
}

#[test]
fn the_log_goes_beside_the_real_file_whichever_link_opens_it() {
    let real = temp_path("real.odm");
    let link = temp_path("link.odm");
    drop(Database::open(&real).unwrap());
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let db = Database::open(&link).unwrap();
    db.collection("c").insert_one(doc! { "_id": 1 }).unwrap();
    assert!(log_path(&real).exists());
    assert!(!log_path(&link).exists());
    // Through the link and the real path alike, one lock: the second open is refused.
    assert!(Database::open(&real).is_err());
}

#[test]
fn a_log_whose_header_does_not_check_replays_nothing_and_is_cut_to_its_header() {
    let (main, log) = (Sim::default(), Sim::default());
    let wal = open(&main, &log);
    wal.write(0, b"group").unwrap();
    wal.sync_data().unwrap();
    // The header torn (as by a crash while a checkpoint rewrote it): its group must not count.
    let (main, log) = (main.crashed(), log.crashed_with(|bytes| bytes[3] ^= 0xFF));
    drop(open(&main, &log));
    assert!(main.durable().len() < 5 || &main.durable()[..5] != b"group");
    assert_eq!(log.durable().len(), FIRST_GROUP);
}

#[test]
fn a_whole_group_whose_entries_do_not_parse_is_refused() {
    let (main, log) = (Sim::default(), Sim::default());
    let wal = open(&main, &log);
    wal.write(0, b"entry").unwrap();
    wal.sync_data().unwrap();
    // An entry of an unknown kind, its group's CRC made right again: written by something
    // other than this log.
    let log = log.crashed_with(|bytes| {
        let head = &bytes[FIRST_GROUP + 20..FIRST_GROUP + 24];
        let end = FIRST_GROUP + 24 + u32::from_le_bytes(head.try_into().unwrap()) as usize;
        bytes[FIRST_GROUP + 24] = 9;
        let crc = crc32fast::hash(&bytes[FIRST_GROUP..end]);
        bytes[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    });
    let err = Wal::open(main.crashed(), log, Limits::default()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    assert!(err.to_string().contains("unknown kind"), "{err}");
}

/// One step of a workload on the backend.
#[derive(Debug, Clone)]
enum Step {
    Write(u64, Vec<u8>),
    SetLen(u64),
    Sync,
    Crash,
    /// The next sync of the database file (`true`) or of the log fails, losing its writes or
    /// (the second flag) having made them durable.
    FailSync(bool, bool),
    /// Reads a range (clipped to the file).
    Read(u64, u64),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let page = (
        prop::collection::vec(prop_oneof![Just(0u8), 1u8..=255], 0..1500),
        0usize..3000,
    )
        .prop_map(|(mut data, zeros)| {
            data.resize(data.len() + zeros, 0);
            data
        });
    // Some writes alone outgrow the test's group limit.
    let large = prop::collection::vec(1u8..=255, 4_500..6_000);
    prop_oneof![
        6 => (0u64..12_000, page).prop_map(|(offset, data)| Step::Write(offset, data)),
        1 => (0u64..12_000, large).prop_map(|(offset, data)| Step::Write(offset, data)),
        1 => (0u64..14_000).prop_map(Step::SetLen),
        3 => Just(Step::Sync),
        1 => Just(Step::Crash),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(main, written)| Step::FailSync(main, written)),
        2 => (0u64..14_000, 0u64..6_000).prop_map(|(offset, len)| Step::Read(offset, len)),
    ]
}

/// What a workload has done since the last sync that returned, for judging what power loss
/// may leave.
#[derive(Default)]
struct Model {
    /// What reads must answer.
    written: Vec<u8>,
    /// What the last sync that returned made durable.
    synced: Vec<u8>,
    /// Every write since then, oldest first.
    since: Vec<(usize, Vec<u8>)>,
    /// Every length the file had since then.
    lengths: Vec<usize>,
    /// The smallest length a length change set since then (bytes past it read zero).
    cut: Option<usize>,
    /// Something reached a disk durably outside a sync that returned (a checkpoint forced by a
    /// large group, or a sync that failed part-way), so power loss may keep part of `since`.
    loose: bool,
}

impl Model {
    /// Whether `recovered` is what power loss may leave: the last sync's contents exactly, or,
    /// when `loose`, a length the file had since, and each byte either the last sync's or one
    /// written since (a zero only where one of those, or a length change, put it).
    fn allows(&self, recovered: &[u8]) -> bool {
        if !self.loose {
            return recovered == self.synced.as_slice();
        }
        let zeros_from = self.synced.len().min(self.cut.unwrap_or(usize::MAX));
        (recovered.len() == self.synced.len() || self.lengths.contains(&recovered.len()))
            && recovered.iter().enumerate().all(|(i, &b)| {
                (b == 0 && i >= zeros_from)
                    || self.synced.get(i) == Some(&b)
                    || self
                        .since
                        .iter()
                        .any(|(at, data)| i >= *at && data.get(i - at) == Some(&b))
            })
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Under limits small enough that groups are appended, checkpointed and overflowed, with
    /// syncs of either disk failing, every read answers what the workload wrote, and after power
    /// loss the log's recovery gives back what the last sync that returned made durable (and
    /// no more, unless something was made durable without one; see `Model::allows`).
    #[test]
    fn reads_see_every_write_and_recovery_returns_the_last_sync(
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let limits = Limits { checkpoint_bytes: 9_000, group_bytes: 4_000 };
        let (mut main, mut log) = (Sim::default(), Sim::default());
        let mut wal = Wal::open(main.clone(), log.clone(), limits).unwrap();
        let mut model = Model::default();
        for step in steps {
            let before = (main.durable(), log.durable());
            let mut synced = false;
            match step {
                Step::Write(offset, data) => {
                    // A failed write (its forced checkpoint's sync failed) changes nothing.
                    if wal.write(offset, &data).is_ok() {
                        write_at(&mut model.written, offset as usize, &data);
                        model.since.push((offset as usize, data));
                        model.lengths.push(model.written.len());
                    }
                }
                Step::SetLen(len) => {
                    if wal.set_len(len).is_ok() {
                        model.written.resize(len as usize, 0);
                        model.lengths.push(len as usize);
                        model.cut = Some(model.cut.map_or(len as usize, |c| c.min(len as usize)));
                    }
                }
                Step::Sync => {
                    if wal.sync_data().is_ok() {
                        synced = true;
                        model.synced = model.written.clone();
                        model.since.clear();
                        model.lengths.clear();
                        model.cut = None;
                        model.loose = false;
                    }
                }
                Step::Crash => {
                    drop(wal);
                    (main, log) = (main.crashed(), log.crashed());
                    wal = Wal::open(main.clone(), log.clone(), limits).unwrap();
                    let len = wal.len().unwrap() as usize;
                    let mut recovered = vec![0u8; len];
                    wal.read(0, &mut recovered).unwrap();
                    proptest::prop_assert!(
                        model.allows(&recovered),
                        "recovery gave back what no sync made durable"
                    );
                    model = Model {
                        written: recovered.clone(),
                        synced: recovered,
                        ..Model::default()
                    };
                    continue;
                }
                Step::FailSync(of_main, after_writing) => {
                    let disk = if of_main { &main } else { &log };
                    let mut image = disk.image();
                    image.fail_next_sync = true;
                    image.fail_after_writing = after_writing;
                }
                Step::Read(offset, len) => {
                    let end = (offset + len).min(model.written.len() as u64);
                    if offset < end {
                        let mut part = vec![0u8; (end - offset) as usize];
                        wal.read(offset, &mut part).unwrap();
                        proptest::prop_assert!(
                            part == model.written[offset as usize..end as usize],
                            "a partial read differs from what was written"
                        );
                    }
                }
            }
            if !synced && (main.durable(), log.durable()) != before {
                model.loose = true;
            }
            let len = wal.len().unwrap() as usize;
            proptest::prop_assert_eq!(len, model.written.len());
            let mut all = vec![0u8; len];
            wal.read(0, &mut all).unwrap();
            proptest::prop_assert!(all == model.written, "a read differs from what was written");
        }
    }
}
