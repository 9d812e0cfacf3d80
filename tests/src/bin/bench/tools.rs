//! `bench tools`: the `odm` command's data tools against the engine's own load and scan, side
//! by side on the same documents: `odm import` of JSON lines (parsing included) against
//! inserting the already-built documents with `insert_many` in batches of the same size, with the same eventual
//! durability and a durable commit at the end; `odm export` (relaxed and canonical) against a
//! scan that decodes every document; `odm dump` and `odm restore`. Ends with `ratio` lines
//! (tool / engine).

use std::path::Path;
use std::time::Instant;

use bson::{DateTime, Document, doc};
use odm_cli::dump::{DumpArgs, RestoreArgs, run_dump, run_restore};
use odm_cli::export::{ExportArgs, OutputType};
use odm_cli::extjson::{self, Format};
use odm_cli::import::{ImportArgs, InputType, Mode, ParseGrace};
use odm_engine::{Database, Durability};
use odm_tests::rng::Rng;

use crate::Options;
use crate::report::median;

fn document(i: i64, rng: &mut Rng) -> Document {
    doc! {
        "_id": i,
        "name": format!("customer {i:06}"),
        "email": format!("c{i}@example.com"),
        "age": (18 + rng.below(70)) as i32,
        "balance": rng.below(1_000_000) as f64 / 100.0,
        "since": DateTime::from_millis(1_600_000_000_000 + i * 60_000),
        "address": {"city": format!("city {}", rng.below(500)), "zip": format!("{:05}", rng.below(99_999))},
        "tags": ["a", "b", format!("t{}", i % 17)],
    }
}

fn import_args(db: &Path, file: &Path) -> ImportArgs {
    ImportArgs {
        path: db.to_path_buf(),
        collection: Some("customers".into()),
        file: Some(file.to_path_buf()),
        input_type: InputType::Json,
        json_array: false,
        headerline: false,
        fields: Vec::new(),
        field_file: None,
        columns_have_types: false,
        ignore_blanks: false,
        parse_grace: ParseGrace::Stop,
        mode: Mode::Insert,
        upsert_fields: Vec::new(),
        stop_on_error: true,
        drop: false,
        batch_size: 1000,
        quiet: true,
    }
}

fn export_args(db: &Path, out: &Path, format: Format) -> ExportArgs {
    ExportArgs {
        path: db.to_path_buf(),
        collection: "customers".into(),
        out: Some(out.to_path_buf()),
        output_type: OutputType::Json,
        json_format: format,
        json_array: false,
        pretty: false,
        query: None,
        sort: None,
        skip: 0,
        limit: None,
        fields: Vec::new(),
        field_file: None,
        no_header_line: false,
        quiet: true,
    }
}

fn seconds(f: impl FnOnce() -> Result<(), String>) -> Result<f64, String> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed().as_secs_f64())
}

// Long on purpose: the benchmark's phases in the order they run, each timing the file the phase
// before wrote.
#[allow(clippy::too_many_lines)]
pub fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let n = options.docs;
    let dir = std::env::temp_dir().join(format!("odm-bench-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng::new(7);
    let docs: Vec<Document> = (0..n as i64).map(|i| document(i, &mut rng)).collect();
    let json = dir.join("customers.json");
    let mut text = String::new();
    for d in &docs {
        text.push_str(&extjson::to_line(d, Format::Relaxed));
        text.push('\n');
    }
    std::fs::write(&json, &text)?;
    let fresh = |name: &str| {
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        path
    };
    let (mut load, mut import, mut scan, mut relaxed, mut canonical, mut dump, mut restore) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..options.runs {
        let engine_db = fresh("engine.odm");
        load.push(seconds(|| {
            let db = Database::open(&engine_db).map_err(|e| e.to_string())?;
            for batch in docs.chunks(1000) {
                db.write_with(Durability::Eventual, |w| {
                    w.insert_many("customers", batch, true).map(drop)
                })
                .map_err(|e| e.to_string())?;
            }
            db.write(|_| Ok::<_, odm_engine::Error>(()))
                .map_err(|e| e.to_string())
        })?);
        let tool_db = fresh("tool.odm");
        import.push(seconds(|| {
            odm_cli::import::run(&import_args(&tool_db, &json)).map_err(|e| e.0)
        })?);
        scan.push(seconds(|| {
            let db = Database::open(&tool_db).map_err(|e| e.to_string())?;
            let txn = db.read().map_err(|e| e.to_string())?;
            let c = txn
                .collection("customers")
                .map_err(|e| e.to_string())?
                .ok_or("no collection")?;
            let mut count = 0;
            for d in c.scan().map_err(|e| e.to_string())? {
                let d: Document = d
                    .map_err(|e| e.to_string())?
                    .decode()
                    .map_err(|e| e.to_string())?;
                count += usize::from(!d.is_empty());
            }
            if count == n {
                Ok(())
            } else {
                Err(format!("scanned {count} of {n}"))
            }
        })?);
        let out = dir.join("out.json");
        relaxed.push(seconds(|| {
            odm_cli::export::run(&export_args(&tool_db, &out, Format::Relaxed)).map_err(|e| e.0)
        })?);
        if std::fs::read_to_string(&out)? != text {
            return Err("the relaxed export differs from the imported file".into());
        }
        canonical.push(seconds(|| {
            odm_cli::export::run(&export_args(&tool_db, &out, Format::Canonical)).map_err(|e| e.0)
        })?);
        let dump_dir = dir.join("dump");
        let _ = std::fs::remove_dir_all(&dump_dir);
        dump.push(seconds(|| {
            run_dump(&DumpArgs {
                path: tool_db.clone(),
                out: dump_dir.clone(),
                db: Some("bench".into()),
                collection: None,
                gzip: false,
                quiet: true,
            })
            .map_err(|e| e.0)
        })?);
        let restored = fresh("restored.odm");
        restore.push(seconds(|| {
            run_restore(&RestoreArgs {
                path: restored.clone(),
                dir: dump_dir.clone(),
                db: None,
                drop: false,
                no_index_restore: false,
                stop_on_error: true,
                convert_legacy_indexes: false,
                quiet: true,
            })
            .map_err(|e| e.0)
        })?);
    }
    let rate = |xs: &[f64]| n as f64 / median(xs.to_vec());
    println!(
        "{n} documents of {} bytes each on average, median of {} runs",
        text.len() / n,
        options.runs
    );
    println!("{:<48}{:>14}", "phase", "documents/s");
    let rows = [
        ("engine load (built documents, batches of 1000)", &load),
        ("odm import (JSON lines, batches of 1000)", &import),
        ("engine scan (decode every document)", &scan),
        ("odm export, relaxed", &relaxed),
        ("odm export, canonical", &canonical),
        ("odm dump", &dump),
        ("odm restore", &restore),
    ];
    for (phase, xs) in rows {
        println!("{phase:<48}{:>14.0}", rate(xs));
    }
    println!(
        "ratio import/load {:.2}",
        median(import.clone()) / median(load.clone())
    );
    println!(
        "ratio export/scan {:.2}",
        median(relaxed.clone()) / median(scan.clone())
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
