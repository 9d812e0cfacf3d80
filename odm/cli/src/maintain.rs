//! Looking after a database file: `odm stats`, `odm verify`, `odm compact`, `odm indexes`
//! (list, create, drop) and `odm ttl` (one expiry pass now).

use std::path::PathBuf;

use bson::{Bson, DateTime, doc};
use odm_engine::Database;

use super::extjson::{self, Format};
use super::progress::{Progress, Unit};
use super::{ToolError, document_argument, no_collection, open_existing};
use odm_server::command::spec_from_document;

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// The database file.
    pub path: PathBuf,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct FileArgs {
    /// The database file.
    pub path: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum IndexesCommand {
    /// Lists the indexes of one collection, or of every collection.
    List {
        path: PathBuf,
        collection: Option<String>,
    },
    /// Builds an index: `odm indexes create FILE COLL '{"email": 1}' --unique`.
    Create(CreateIndexArgs),
    /// Drops an index by name.
    Drop {
        path: PathBuf,
        collection: String,
        name: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct CreateIndexArgs {
    pub path: PathBuf,
    pub collection: String,
    /// The keys, in Extended JSON: `{"a": 1, "b": -1}`, `{"h": "hashed"}`.
    pub keys: String,
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long)]
    pub unique: bool,
    #[arg(long)]
    pub sparse: bool,
    /// A TTL index: documents expire this many seconds after the date in the (single) key.
    #[arg(long = "expireAfterSeconds")]
    pub expire_after_seconds: Option<i64>,
    /// A partial index: only documents matching this filter are indexed.
    #[arg(long = "partialFilterExpression")]
    pub partial: Option<String>,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Runs `odm stats`.
pub fn stats(args: &StatsArgs) -> Result<(), ToolError> {
    let db = open_existing(&args.path)?;
    let stats = db.stats()?;
    if args.json {
        let collections: Vec<Bson> = stats
            .collections
            .iter()
            .map(|c| {
                let indexes: Vec<Bson> = c
                    .indexes
                    .iter()
                    .map(|i| {
                        Bson::Document(
                            doc! {"name": &i.name, "storageBytes": i.storage_bytes as i64},
                        )
                    })
                    .collect();
                Bson::Document(doc! {
                    "name": &c.name,
                    "documents": c.documents as i64,
                    "dataBytes": c.data_bytes as i64,
                    "storageBytes": c.storage_bytes as i64,
                    "indexes": indexes,
                    "indexBytes": c.index_bytes() as i64,
                })
            })
            .collect();
        let report = doc! {
            "file": args.path.display().to_string(),
            "fileBytes": stats.file_bytes as i64,
            "pageSize": stats.page_size as i64,
            "allocatedPages": stats.allocated_pages as i64,
            "freePages": stats.free_pages as i64,
            "collections": collections,
        };
        println!("{}", extjson::to_pretty(&report, Format::Relaxed));
        return Ok(());
    }
    let mut rows = vec![vec![
        "collection".to_owned(),
        "documents".to_owned(),
        "data".to_owned(),
        "storage".to_owned(),
        "indexes".to_owned(),
        "index storage".to_owned(),
    ]];
    for c in &stats.collections {
        rows.push(vec![
            c.name.clone(),
            c.documents.to_string(),
            human(c.data_bytes),
            human(c.storage_bytes),
            (c.indexes.len() + 1).to_string(),
            human(c.index_bytes()),
        ]);
    }
    print!(
        "{}",
        super::query::table(&rows, &[false, true, true, true, true, true])
    );
    println!(
        "file {}: {}, pages of {} B: {} in use, {} free ({})",
        args.path.display(),
        human(stats.file_bytes),
        stats.page_size,
        stats.allocated_pages,
        stats.free_pages,
        human(stats.free_pages * stats.page_size)
    );
    Ok(())
}

fn total_documents(db: &Database) -> Result<u64, ToolError> {
    let txn = db.read()?;
    let mut total = 0;
    for name in db.list_collections() {
        if let Some(c) = txn.collection(&name)? {
            total += c.len()?;
        }
    }
    Ok(total)
}

/// Runs `odm verify`: an error (so a non-zero exit status) on any difference, each listed.
pub fn verify(args: &FileArgs) -> Result<(), ToolError> {
    let db = open_existing(&args.path)?;
    let total = total_documents(&db)?;
    let mut progress = Progress::new("verify", Some(total), Unit::Documents, args.quiet);
    let report = db.verify_with(&mut |n| {
        if n % 1024 == 0 {
            progress.set(n);
        }
    })?;
    progress.set(report.documents);
    progress.finish(&format!(
        "{} collection(s), {} document(s), {} index entries checked",
        report.collections, report.documents, report.index_entries
    ));
    if report.is_clean() {
        println!("{}: consistent", args.path.display());
        return Ok(());
    }
    for problem in &report.problems {
        println!("{problem}");
    }
    Err(ToolError(format!(
        "{}: {} problem(s) found (listed above)",
        args.path.display(),
        report.problems.len()
    )))
}

/// Runs `odm compact`.
pub fn compact(args: &FileArgs) -> Result<(), ToolError> {
    let mut db = open_existing(&args.path)?;
    let before = db.stats()?.file_bytes;
    let progress = Progress::new("compact", None, Unit::Bytes, args.quiet);
    let shrank = db.compact()?;
    let after = db.stats()?.file_bytes;
    progress.finish(&if shrank {
        format!("{} -> {}", human(before), human(after))
    } else {
        format!("already compact at {}", human(after))
    });
    Ok(())
}

/// Runs `odm ttl`: one expiry pass at the current time.
pub fn ttl(args: &FileArgs) -> Result<(), ToolError> {
    let db = open_existing(&args.path)?;
    let deleted = db.expire(DateTime::now())?;
    println!("{deleted} expired document(s) deleted");
    Ok(())
}

/// Runs `odm indexes ...`.
pub fn indexes(command: &IndexesCommand) -> Result<(), ToolError> {
    match command {
        IndexesCommand::List { path, collection } => {
            let db = open_existing(path)?;
            let txn = db.read()?;
            let names = match collection {
                Some(c) => {
                    if txn.collection(c)?.is_none() {
                        return Err(no_collection(path, c, &db));
                    }
                    vec![c.clone()]
                }
                None => db.list_collections(),
            };
            for name in names {
                for spec in txn.list_indexes(&name) {
                    let mut shown = doc! {"collection": &name};
                    shown.extend(spec.to_document());
                    println!("{}", extjson::to_line(&shown, Format::Relaxed));
                }
            }
            Ok(())
        }
        IndexesCommand::Create(args) => {
            let keys = document_argument("keys", &args.keys)?;
            let mut spec_doc = doc! {"key": keys};
            if let Some(name) = &args.name {
                spec_doc.insert("name", name);
            }
            if args.unique {
                spec_doc.insert("unique", true);
            }
            if args.sparse {
                spec_doc.insert("sparse", true);
            }
            if let Some(seconds) = args.expire_after_seconds {
                spec_doc.insert("expireAfterSeconds", seconds);
            }
            if let Some(partial) = &args.partial {
                spec_doc.insert(
                    "partialFilterExpression",
                    document_argument("--partialFilterExpression", partial)?,
                );
            }
            let spec = spec_from_document(&spec_doc).map_err(|e| ToolError(e.message))?;
            let db = open_existing(&args.path)?;
            let documents = db
                .read()?
                .collection(&args.collection)?
                .map(|c| c.len())
                .transpose()?
                .unwrap_or(0);
            let mut progress = Progress::new(
                &format!("index on {}", args.collection),
                None,
                Unit::Documents,
                args.quiet,
            );
            let name = db.write(|w| w.create_index(&args.collection, spec))?;
            progress.set(documents);
            progress.finish(&format!("built `{name}`"));
            println!("{name}");
            Ok(())
        }
        IndexesCommand::Drop {
            path,
            collection,
            name,
        } => {
            let db = open_existing(path)?;
            if db.read()?.collection(collection)?.is_none() {
                return Err(no_collection(path, collection, &db));
            }
            db.write(|w| w.drop_index(collection, name))?;
            println!("dropped `{name}`");
            Ok(())
        }
    }
}
