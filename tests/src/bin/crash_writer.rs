//! The child process of the crash test: opens the database file given as its argument and runs
//! transactions of the crash workload until it is killed, printing `committed N` after each
//! commit returns.

use std::io::Write;

use odm_tests::crash;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: crash_writer DATABASE_FILE");
        std::process::exit(2);
    };
    if let Err(e) = run(&path) {
        eprintln!("crash_writer: {e}");
        std::process::exit(1);
    }
}

fn run(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let db = odm_engine::Database::open(path)?;
    // Merge recent index entries into the main tables every few dozen commits, so that kills
    // also land during merges.
    db.set_index_merge_threshold(40);
    crash::create_indexes(&db)?;
    let mut n = crash::committed(&db)?;
    let mut out = std::io::stdout().lock();
    loop {
        n += 1;
        crash::step(&db, n)?;
        writeln!(out, "committed {n}")?;
        out.flush()?;
    }
}
