//! Crash safety: a child process writes in a loop and is killed with SIGKILL at random moments;
//! after each kill the file is reopened and checked:
//! - every transaction the child reported committed (immediate durability) is there;
//! - nothing half-written is visible: the state is exactly that after `n` whole transactions,
//!   in both collections, where `n` is the last reported commit or the one after it (killed
//!   between commit and report);
//! - `Database::verify()` is clean.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use odm_engine::Database;
use odm_tests::crash;
use odm_tests::rng::Rng;

const ROUNDS: usize = 40;

/// Starts the writer on `path`, kills it with SIGKILL after `delay_ms`, and returns the last
/// transaction it reported committed (`before` if none).
fn kill_writer(path: &std::path::Path, delay_ms: u64, before: i64) -> i64 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash_writer"))
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the writer starts");
    let reported = Arc::new(AtomicI64::new(before));
    let stdout = child.stdout.take().unwrap();
    let reader = {
        let reported = reported.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("committed ").and_then(|n| n.parse().ok()) {
                    reported.store(n, Ordering::SeqCst);
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(delay_ms));
    child.kill().expect("SIGKILL is delivered");
    let status = child.wait().unwrap();
    reader.join().unwrap();
    if status.success() || status.code() == Some(1) {
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        panic!("the writer stopped by itself: {status:?} {err}");
    }
    reported.load(Ordering::SeqCst)
}

/// A kill while the database file is being created must never leave a file that cannot be
/// opened.
#[test]
fn a_kill_during_file_creation_leaves_an_openable_file() {
    let dir = std::env::temp_dir().join(format!("odm-crash-create-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng::from_time();
    for round in 0..20u64 {
        let path = dir.join(format!("fresh-{round}.redb"));
        let _ = std::fs::remove_file(&path);
        kill_writer(&path, rng.below(8), 0);
        let db = Database::open(&path).expect("the file opens after a kill during creation");
        let n = crash::committed(&db).unwrap();
        assert_eq!(crash::stored_ids(&db, "a").unwrap(), crash::expected_ids(n));
        assert!(db.verify().unwrap().is_clean());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn killed_writers_lose_no_committed_transaction() {
    let dir = std::env::temp_dir().join(format!("odm-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("crash.redb");
    let _ = std::fs::remove_file(&path);
    let mut rng = Rng::from_time();
    let mut last_reported = 0i64;
    let mut total_kills = 0;
    for round in 0..ROUNDS {
        // Mostly mid-stream kills, sometimes right at start-up (open, catalog, index creation).
        let delay = if round % 5 == 0 {
            rng.below(15)
        } else {
            20 + rng.below(250)
        };
        let reported = kill_writer(&path, delay, last_reported);
        total_kills += 1;

        let db = Database::open(&path).expect("the file reopens after a kill");
        let n = crash::committed(&db).unwrap();
        assert!(
            n == reported || n == reported + 1,
            "round {round}: {reported} reported committed, file holds {n}"
        );
        let expected = crash::expected_ids(n);
        assert_eq!(
            crash::stored_ids(&db, "a").unwrap(),
            expected,
            "round {round}: collection a"
        );
        assert_eq!(
            crash::stored_ids(&db, "b").unwrap(),
            expected,
            "round {round}: collection b"
        );
        let report = db.verify().unwrap();
        assert!(report.is_clean(), "round {round}: {:?}", report.problems);
        last_reported = n;
    }
    assert_eq!(total_kills, ROUNDS);
    assert!(
        last_reported > ROUNDS as i64,
        "the writer made progress: {last_reported} transactions"
    );
    eprintln!("crash test: {ROUNDS} kills, {last_reported} transactions committed and checked");
    let _ = std::fs::remove_dir_all(&dir);
}
