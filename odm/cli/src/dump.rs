//! `odm dump` and `odm restore` in `mongodump`'s directory layout: `<out>/<db>/<collection>.bson`
//! (the documents' BSON, one after another) and `<collection>.metadata.json` (canonical
//! Extended JSON: `{options, indexes, uuid, collectionName, type}`), each gzipped with `--gzip`
//! (`.bson.gz`, `.metadata.json.gz`). `mongorestore` loads such a dump into MongoDB (the
//! migration path to a cluster), and `odm restore` loads what `mongodump` wrote.
//!
//! Restore checks before it writes: every index in the metadata must be one this engine
//! builds, or nothing is loaded. A document that is not well-formed BSON names its file and
//! byte offset; duplicates are reported as `mongorestore` does and the rest loaded.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use bson::{Bson, RawDocumentBuf, doc};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use odm_engine::{
    Database, Durability, Error as EngineError, ID_INDEX_NAME, IndexSpec, MAX_DOCUMENT_SIZE,
};

use super::extjson::{self, Format};
use super::progress::{Progress, Unit};
use super::{ToolError, io_error, open_existing, open_or_create};
use odm_server::command::spec_from_document;

#[derive(Debug, clap::Args)]
pub struct DumpArgs {
    /// The database file.
    pub path: PathBuf,
    /// The dump's folder; the database's files go in `<out>/<db>/`.
    #[arg(long, short = 'o', default_value = "dump")]
    pub out: PathBuf,
    /// The database name in the dump (default: the file's name without its extension).
    #[arg(long, short = 'd')]
    pub db: Option<String>,
    /// Dump this collection only.
    #[arg(long, short = 'c')]
    pub collection: Option<String>,
    /// Compress each file with gzip.
    #[arg(long)]
    pub gzip: bool,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, clap::Args)]
#[allow(clippy::struct_excessive_bools)]
pub struct RestoreArgs {
    /// The database file (created when missing).
    pub path: PathBuf,
    /// A dump: its top folder (holding `<db>/` folders), or one database's folder.
    pub dir: PathBuf,
    /// Which database of the dump to load, when it holds several.
    #[arg(long, short = 'd')]
    pub db: Option<String>,
    /// Drop each collection before loading it.
    #[arg(long)]
    pub drop: bool,
    /// Load the documents only.
    #[arg(long = "noIndexRestore")]
    pub no_index_restore: bool,
    /// Stop at the first document refused (a duplicate key), writing nothing of its batch.
    #[arg(long = "stopOnError")]
    pub stop_on_error: bool,
    /// Rewrite index keys of MongoDB before 3.4 (`true`, `0`, `""` become `1`), as
    /// mongorestore's flag of the same name does.
    #[arg(long = "convertLegacyIndexes")]
    pub convert_legacy_indexes: bool,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// The database name a file stands for: its name without the extension.
pub fn database_name(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| odm_server::storage::check_name(s).is_ok())
        .unwrap_or("test")
        .to_owned()
}

fn create(path: &Path, gzip: bool) -> Result<Box<dyn Write>, ToolError> {
    let file =
        BufWriter::with_capacity(1 << 16, File::create(path).map_err(|e| io_error(path, &e))?);
    Ok(if gzip {
        Box::new(GzEncoder::new(file, Compression::default()))
    } else {
        Box::new(file)
    })
}

/// Runs `odm dump`.
pub fn run_dump(args: &DumpArgs) -> Result<(), ToolError> {
    let db = open_existing(&args.path)?;
    let name = args.db.clone().unwrap_or_else(|| database_name(&args.path));
    odm_server::storage::check_name(&name).map_err(|e| ToolError(e.message))?;
    let txn = db.read()?;
    let mut names = db.list_collections();
    if let Some(only) = &args.collection {
        if !names.contains(only) {
            return Err(super::no_collection(&args.path, only, &db));
        }
        names = vec![only.clone()];
    }
    // Made only once the arguments are known good: a refused dump leaves no folder behind.
    let folder = args.out.join(&name);
    std::fs::create_dir_all(&folder).map_err(|e| io_error(&folder, &e))?;
    let suffix = if args.gzip { ".gz" } else { "" };
    let mut total = 0;
    for collection in &names {
        if let Some(c) = txn.collection(collection)? {
            total += c.len()?;
        }
    }
    let mut progress = Progress::new(
        &format!("dump {name}"),
        Some(total),
        Unit::Documents,
        args.quiet,
    );
    for collection in &names {
        let Some(c) = txn.collection(collection)? else {
            continue;
        };
        let data_path = folder.join(format!("{collection}.bson{suffix}"));
        let mut data = create(&data_path, args.gzip)?;
        let write_error = |e: std::io::Error| io_error(&data_path, &e);
        for stored in c.scan()? {
            let stored = stored?;
            data.write_all(stored.bytes()).map_err(write_error)?;
            progress.advance(1);
        }
        data.flush().map_err(write_error)?;
        drop(data);
        let indexes: Vec<Bson> = txn
            .list_indexes(collection)
            .iter()
            .map(|spec| Bson::Document(spec.to_document()))
            .collect();
        let metadata = doc! {
            "indexes": indexes,
            "uuid": uuid_hex(),
            "collectionName": collection,
            "type": "collection",
            "options": {},
        };
        let meta_path = folder.join(format!("{collection}.metadata.json{suffix}"));
        let mut meta = create(&meta_path, args.gzip)?;
        meta.write_all(extjson::to_line(&metadata, Format::Canonical).as_bytes())
            .and_then(|()| meta.flush())
            .map_err(|e| io_error(&meta_path, &e))?;
    }
    progress.finish(&format!(
        "{} collection(s) of `{name}` dumped to {}",
        names.len(),
        folder.display()
    ));
    Ok(())
}

/// A random collection UUID in the 32 hexadecimal digits `mongodump` writes.
fn uuid_hex() -> String {
    let mut bytes = [0u8; 16];
    // A UUID only labels the dump's collection; a failing random source leaves zeros.
    let _ = getrandom::fill(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// One collection found in a dump.
#[derive(Debug)]
struct Dumped {
    name: String,
    data: PathBuf,
    metadata: Option<PathBuf>,
    gzip: bool,
}

/// The collections of one database folder, system collections left out.
fn collections_in(folder: &Path) -> Result<Vec<Dumped>, ToolError> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(folder).map_err(|e| io_error(folder, &e))?;
    for entry in entries {
        let path = entry.map_err(|e| io_error(folder, &e))?.path();
        let Some(file) = path.file_name().and_then(|f| f.to_str()) else {
            continue;
        };
        let (name, gzip) = if let Some(n) = file.strip_suffix(".bson.gz") {
            (n, true)
        } else if let Some(n) = file.strip_suffix(".bson") {
            (n, false)
        } else {
            continue;
        };
        if name.starts_with("system.") {
            continue;
        }
        let suffix = if gzip { ".gz" } else { "" };
        let metadata = folder.join(format!("{name}.metadata.json{suffix}"));
        found.push(Dumped {
            name: name.to_owned(),
            data: path.clone(),
            metadata: metadata.exists().then_some(metadata),
            gzip,
        });
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The database folder of a dump: the folder itself when it holds collections, else its one
/// database folder (or the one `--db` names).
fn database_folder(args: &RestoreArgs) -> Result<PathBuf, ToolError> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(ToolError(format!("{}: no such dump folder", dir.display())));
    }
    if let Some(db) = &args.db {
        let folder = dir.join(db);
        if folder.is_dir() {
            return Ok(folder);
        }
        return Err(ToolError(format!(
            "{}: the dump has no database `{db}`",
            dir.display()
        )));
    }
    if !collections_in(dir)?.is_empty() {
        return Ok(dir.clone());
    }
    let mut databases = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_error(dir, &e))? {
        let path = entry.map_err(|e| io_error(dir, &e))?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        if path.is_dir()
            && !["admin", "config", "local"].contains(&name.as_str())
            && !collections_in(&path)?.is_empty()
        {
            databases.push((name, path));
        }
    }
    databases.sort();
    match databases.len() {
        0 => Err(ToolError(format!(
            "{}: holds no dump (no `.bson` files)",
            dir.display()
        ))),
        1 => Ok(databases.remove(0).1),
        _ => Err(ToolError(format!(
            "{}: the dump holds databases {}; choose one with --db",
            dir.display(),
            databases
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn open_read(path: &Path, gzip: bool) -> Result<Box<dyn Read>, ToolError> {
    let file = BufReader::with_capacity(1 << 16, File::open(path).map_err(|e| io_error(path, &e))?);
    Ok(if gzip {
        Box::new(BufReader::new(GzDecoder::new(file)))
    } else {
        Box::new(file)
    })
}

/// The indexes a collection's metadata declares, `_id_` left out; an index this engine cannot
/// build is an error naming it.
fn declared_indexes(dumped: &Dumped, convert_legacy: bool) -> Result<Vec<IndexSpec>, ToolError> {
    let Some(path) = &dumped.metadata else {
        return Ok(Vec::new());
    };
    let mut text = String::new();
    open_read(path, dumped.gzip)?
        .read_to_string(&mut text)
        .map_err(|e| io_error(path, &e))?;
    let metadata = extjson::parse_document(&text)
        .map_err(|e| ToolError(format!("{}: malformed JSON at {e}", path.display())))?;
    let indexes = match metadata.get("indexes") {
        None => return Ok(Vec::new()),
        Some(Bson::Array(a)) => a,
        Some(_) => {
            return Err(ToolError(format!(
                "{}: `indexes` is not an array",
                path.display()
            )));
        }
    };
    let mut specs = Vec::new();
    for index in indexes {
        let Bson::Document(index) = index else {
            return Err(ToolError(format!(
                "{}: an index is not a document",
                path.display()
            )));
        };
        if index.get_str("name").ok() == Some(ID_INDEX_NAME) {
            continue;
        }
        let mut index = index.clone();
        if convert_legacy && let Ok(key) = index.get_document_mut("key") {
            for (_, value) in key.iter_mut() {
                *value = legacy_key_value(value);
            }
        }
        let index = &index;
        let spec = spec_from_document(index).map_err(|e| {
            ToolError(format!(
                "{}: index {}: {}",
                path.display(),
                extjson::to_line(index, Format::Relaxed),
                e.message
            ))
        })?;
        // Two declarations of one index would fail the second build after the data is in;
        // they are found here, before anything is written. Legacy keys that convert to the
        // same keys are one index, as mongorestore keeps them.
        if let Some(earlier) = specs.iter().find(|s: &&IndexSpec| {
            s.keys_document() == spec.keys_document() || s.name() == spec.name()
        }) {
            if convert_legacy && earlier.keys_document() == spec.keys_document() {
                continue;
            }
            return Err(ToolError(format!(
                "{}: indexes `{}` and `{}` conflict (the same keys or the same name)",
                path.display(),
                earlier.name(),
                spec.name()
            )));
        }
        specs.push(spec);
    }
    Ok(specs)
}

/// An index key value as MongoDB 3.4 and later read one written before: any value that is not
/// a non-zero number or a non-empty string meant ascending (a zero double keeps its sign).
fn legacy_key_value(value: &Bson) -> Bson {
    match value {
        Bson::Int32(0) | Bson::Int64(0) => Bson::Int32(1),
        Bson::Double(f) if f.abs() < 1e-9 => Bson::Int32(if *f >= 0.0 { 1 } else { -1 }),
        Bson::Decimal128(d) if d.to_string().parse::<f64>().is_ok_and(|f| f == 0.0) => {
            Bson::Int32(1)
        }
        Bson::String(s) if s.is_empty() => Bson::Int32(1),
        Bson::Int32(_)
        | Bson::Int64(_)
        | Bson::Double(_)
        | Bson::Decimal128(_)
        | Bson::String(_) => value.clone(),
        _ => Bson::Int32(1),
    }
}

/// Reads the next document of a `.bson` stream; `None` at its clean end.
fn next_document(
    input: &mut dyn Read,
    path: &Path,
    offset: &mut u64,
) -> Result<Option<RawDocumentBuf>, ToolError> {
    let mut length = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match input.read(&mut length[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(path, &e)),
        }
    }
    let at = *offset;
    let corrupt = |why: &str| ToolError(format!("{}: at byte {at}: {why}", path.display()));
    if got < 4 {
        return Err(corrupt("the file ends inside a document's length"));
    }
    let len = i32::from_le_bytes(length);
    if len < 5 || len as usize > MAX_DOCUMENT_SIZE + 16 * 1024 {
        return Err(corrupt(&format!(
            "a document length of {len} bytes is impossible"
        )));
    }
    let mut bytes = vec![0u8; len as usize];
    bytes[..4].copy_from_slice(&length);
    input
        .read_exact(&mut bytes[4..])
        .map_err(|_| corrupt("the file ends inside a document"))?;
    *offset += len as u64;
    let doc = RawDocumentBuf::from_bytes(bytes)
        .map_err(|e| corrupt(&format!("not a BSON document ({e})")))?;
    // Every element must read, so that nothing malformed reaches the file.
    for element in &doc {
        element.map_err(|e| corrupt(&format!("not well-formed BSON ({e})")))?;
    }
    Ok(Some(doc))
}

/// Runs `odm restore`.
pub fn run_restore(args: &RestoreArgs) -> Result<(), ToolError> {
    let folder = database_folder(args)?;
    let collections = collections_in(&folder)?;
    // Every index is checked before anything is written.
    let mut plans = Vec::new();
    for dumped in collections {
        let indexes = if args.no_index_restore {
            Vec::new()
        } else {
            declared_indexes(&dumped, args.convert_legacy_indexes)?
        };
        plans.push((dumped, indexes));
    }
    let db = open_or_create(&args.path)?;
    let mut restored = 0u64;
    let mut failed = 0u64;
    let mut outcome = Ok(());
    for (dumped, indexes) in &plans {
        let mut progress = Progress::new(
            &format!("restore {}", dumped.name),
            None,
            Unit::Documents,
            args.quiet,
        );
        let mut input = open_read(&dumped.data, dumped.gzip)?;
        let mut count = 0u64;
        outcome = insert_dumped(
            &db,
            args,
            dumped,
            &mut *input,
            &mut progress,
            (&mut count, &mut failed),
        );
        if outcome.is_ok() {
            create_with_indexes(&db, args, &dumped.name, indexes, count)?;
        }
        restored += count;
        progress.finish(&format!(
            "{count} document(s) restored into `{}`",
            dumped.name
        ));
        if outcome.is_err() {
            break;
        }
    }
    db.write(|_| Ok::<_, EngineError>(()))?;
    outcome?;
    if failed > 0 {
        return Err(ToolError(format!(
            "{restored} document(s) restored, {failed} failed (each reported above)"
        )));
    }
    Ok(())
}

/// Inserts a collection's dumped documents in batches, the first dropping the collection under
/// `--drop`. Adds the documents inserted and those refused (each reported) to `counts`; stops
/// at a document that does not read, before inserting its batch, or at a failed write.
fn insert_dumped(
    db: &Database,
    args: &RestoreArgs,
    dumped: &Dumped,
    input: &mut dyn Read,
    progress: &mut Progress,
    (count, failed): (&mut u64, &mut u64),
) -> Result<(), ToolError> {
    let name = &dumped.name;
    let mut offset = 0u64;
    let mut first = true;
    loop {
        let (batch, done) = read_batch(input, &dumped.data, &mut offset)?;
        let drop_first = first && args.drop;
        first = false;
        let result = db.write_with(Durability::Eventual, |w| {
            if drop_first {
                w.drop_collection(name)?;
            }
            let result = w.insert_many(
                name,
                batch.iter().map(RawDocumentBuf::as_ref),
                args.stop_on_error,
            )?;
            if args.stop_on_error
                && let Some((_, e)) = result.failures.first()
            {
                return Err(ToolError(format!(
                    "`{name}`: {}",
                    super::one_line(&e.to_string())
                )));
            }
            Ok::<_, ToolError>(result)
        })?;
        *count += result.inserted.len() as u64;
        progress.advance(result.inserted.len() as u64);
        for (_, e) in &result.failures {
            *failed += 1;
            eprintln!("`{name}`: {}", super::one_line(&e.to_string()));
        }
        if done {
            return Ok(());
        }
    }
}

/// The next documents of a `.bson` stream, up to a batch of 1000, and whether it ended.
fn read_batch(
    input: &mut dyn Read,
    path: &Path,
    offset: &mut u64,
) -> Result<(Vec<RawDocumentBuf>, bool), ToolError> {
    let mut batch = Vec::with_capacity(1000);
    while batch.len() < 1000 {
        match next_document(input, path, offset)? {
            Some(doc) => batch.push(doc),
            None => return Ok((batch, true)),
        }
    }
    Ok((batch, false))
}

/// Creates the restored collection, even empty (as mongorestore does), and builds its indexes
/// over its `count` documents.
fn create_with_indexes(
    db: &Database,
    args: &RestoreArgs,
    collection: &str,
    indexes: &[IndexSpec],
    count: u64,
) -> Result<(), ToolError> {
    db.write(|w| match w.create_collection(collection) {
        Ok(()) | Err(EngineError::CollectionExists(_)) => Ok(()),
        Err(e) => Err(e),
    })?;
    for spec in indexes {
        let mut build = Progress::new(
            &format!("index {} on {collection}", spec.name()),
            None,
            Unit::Documents,
            args.quiet,
        );
        let name = db.write(|w| w.create_index(collection, spec.clone()))?;
        build.set(count);
        build.finish(&format!("built `{name}`"));
    }
    Ok(())
}
