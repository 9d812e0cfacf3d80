//! `odm export`: `mongoexport` over a database file: JSON lines (or one `--jsonArray`, or
//! `--pretty`) in relaxed or canonical Extended JSON, or CSV of chosen `--fields`; a filter
//! (`--query`), `--sort`, `--skip` and `--limit` choose and order the documents, through the
//! engine's planner (indexes included).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use bson::Document;
use odm_engine::query::{Cursor, FindOptions};

use super::delimited;
use super::extjson::{self, Format};
use super::progress::{self, Progress, Unit};
use super::{ToolError, document_argument, io_error, no_collection, open_existing};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputType {
    Json,
    Csv,
}

#[derive(Debug, clap::Args)]
#[allow(clippy::struct_excessive_bools)]
pub struct ExportArgs {
    /// The database file.
    pub path: PathBuf,
    #[arg(long, short = 'c')]
    pub collection: String,
    /// The output file (default: standard output).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    #[arg(long = "type", value_enum, default_value = "json")]
    pub output_type: OutputType,
    #[arg(long = "jsonFormat", value_enum, default_value = "relaxed")]
    pub json_format: Format,
    /// Write one JSON array instead of one document a line.
    #[arg(long = "jsonArray")]
    pub json_array: bool,
    /// Indent the JSON.
    #[arg(long)]
    pub pretty: bool,
    /// A filter, in Extended JSON: `{"age": {"$gt": 30}}`.
    #[arg(long, short = 'q')]
    pub query: Option<String>,
    /// A sort, in Extended JSON: `{"age": -1}`.
    #[arg(long)]
    pub sort: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub skip: u64,
    #[arg(long)]
    pub limit: Option<u64>,
    /// The fields to write, comma-separated (a projection for JSON; the columns of CSV).
    #[arg(long, short = 'f', value_delimiter = ',')]
    pub fields: Vec<String>,
    /// A file naming one field a line.
    #[arg(long = "fieldFile")]
    pub field_file: Option<PathBuf>,
    /// CSV: leave out the header line.
    #[arg(long = "noHeaderLine")]
    pub no_header_line: bool,
    /// No progress and no summary.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `odm export`.
pub fn run(args: &ExportArgs) -> Result<(), ToolError> {
    let fields = field_list(args)?;
    if args.output_type == OutputType::Csv && fields.is_empty() {
        return Err(ToolError::new("CSV output needs --fields (or --fieldFile)"));
    }
    let filter = match &args.query {
        Some(q) => document_argument("--query", q)?,
        None => Document::new(),
    };
    let sort = args
        .sort
        .as_deref()
        .map(|s| document_argument("--sort", s))
        .transpose()?;
    let projection = (!fields.is_empty()).then(|| {
        let mut p = Document::new();
        for field in &fields {
            p.insert(field.clone(), 1);
        }
        p
    });
    let db = open_existing(&args.path)?;
    let txn = db.read()?;
    let Some(collection) = txn.collection(&args.collection)? else {
        return Err(no_collection(&args.path, &args.collection, &db));
    };
    // The total only feeds a drawn bar: counting runs the query a second time.
    let total = if progress::drawn(args.quiet) {
        Some(collection.count_matching(&filter, args.skip, args.limit.unwrap_or(0))?)
    } else {
        None
    };
    let options = FindOptions {
        sort,
        projection,
        skip: args.skip,
        limit: args.limit.filter(|l| *l > 0),
        ..FindOptions::default()
    };
    let cursor = collection.find(&filter, &options)?;
    let mut progress = Progress::new(
        &format!("export {}", args.collection),
        total,
        Unit::Documents,
        args.quiet,
    );
    let (sink, shown): (Box<dyn Write>, String) = match &args.out {
        Some(path) => (
            Box::new(File::create(path).map_err(|e| io_error(path, &e))?),
            path.display().to_string(),
        ),
        None => (
            Box::new(std::io::stdout().lock()),
            "standard output".to_owned(),
        ),
    };
    let mut out = BufWriter::with_capacity(1 << 16, sink);
    let count = if args.output_type == OutputType::Csv {
        write_csv(&mut out, &shown, cursor, &fields, args, &mut progress)?
    } else {
        write_json(&mut out, &shown, cursor, args, &mut progress)?
    };
    out.flush().map_err(|e| write_error(&shown, e))?;
    progress.finish(&format!("{count} document(s) exported to {shown}"));
    Ok(())
}

/// `--fields`, then the lines of `--fieldFile`.
fn field_list(args: &ExportArgs) -> Result<Vec<String>, ToolError> {
    let mut fields = args.fields.clone();
    if let Some(path) = &args.field_file {
        let text = std::fs::read_to_string(path).map_err(|e| io_error(path, &e))?;
        fields.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        );
    }
    Ok(fields)
}

/// A failure to write the output, which messages call `shown`.
fn write_error(shown: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError(format!("writing {shown}: {e}"))
}

/// Writes a CSV row of the `fields` per document, after a header line of their names unless
/// `--noHeaderLine`; the number of documents written.
fn write_csv(
    out: &mut dyn Write,
    shown: &str,
    cursor: Cursor<'_>,
    fields: &[String],
    args: &ExportArgs,
    progress: &mut Progress,
) -> Result<u64, ToolError> {
    let mut w = csv::Writer::from_writer(out);
    if !args.no_header_line {
        w.write_record(fields).map_err(|e| write_error(shown, e))?;
    }
    let mut count = 0u64;
    for doc in cursor {
        let doc = doc?;
        let row = fields
            .iter()
            .map(|f| delimited::cell_text(delimited::get_path(&doc, f)));
        w.write_record(row).map_err(|e| write_error(shown, e))?;
        count += 1;
        progress.advance(1);
    }
    w.flush().map_err(|e| write_error(shown, e))?;
    Ok(count)
}

/// Writes a JSON document a line, or one array of them with `--jsonArray`, indented with
/// `--pretty`; the number of documents written.
fn write_json(
    out: &mut dyn Write,
    shown: &str,
    cursor: Cursor<'_>,
    args: &ExportArgs,
    progress: &mut Progress,
) -> Result<u64, ToolError> {
    let mut write = |bytes: &[u8]| out.write_all(bytes).map_err(|e| write_error(shown, e));
    if args.json_array {
        write(b"[")?;
    }
    let mut count = 0u64;
    for doc in cursor {
        let doc = doc?;
        let text = if args.pretty {
            extjson::to_pretty(&doc, args.json_format)
        } else {
            extjson::to_line(&doc, args.json_format)
        };
        if args.json_array && count > 0 {
            write(b",")?;
        }
        write(text.as_bytes())?;
        if !args.json_array {
            write(b"\n")?;
        }
        count += 1;
        progress.advance(1);
    }
    if args.json_array {
        write(b"]\n")?;
    }
    Ok(count)
}
