//! `odm import`: `mongoimport` over a database file.
//!
//! Input: JSON (one document after another, each on one or more lines, or one `--jsonArray`),
//! CSV or TSV (see `delimited`). Each document is inserted, upserted, merged or deleted by
//! `--mode`, in batches of `--batchSize` documents, each batch one transaction.
//!
//! Bad input, as the rule for every tool says: with `--stopOnError` the first bad line (a
//! malformed document, a duplicate key, a value of the wrong type) stops the import with its
//! line number, and nothing of its batch is written (the batches before it stay). Without it,
//! every bad line is reported and the rest imported; the exit status is non-zero when any line
//! failed (where `mongoimport` exits 0).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

use bson::{Bson, Document, doc};
use odm_engine::update::UpdateOptions;
use odm_engine::{Database, Durability, Error as EngineError, WriteTxn};

use super::delimited::{self, Column};
use super::extjson::Parser;
use super::progress::{Progress, Unit};
use super::{ToolError, io_error, open_or_create};

/// The input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputType {
    Json,
    Csv,
    Tsv,
}

/// What each input document does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Insert; a duplicate `_id` (or unique key) is a bad line.
    Insert,
    /// Replace the document matching `--upsertFields`, or insert it.
    Upsert,
    /// Set the input's fields on the document matching `--upsertFields`, or insert it.
    Merge,
    /// Delete the document matching `--upsertFields`.
    Delete,
}

/// What a typed CSV cell that does not parse does (`--parseGrace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "camelCase")]
pub enum ParseGrace {
    /// Read the cell as `auto()` instead.
    AutoCast,
    /// Leave the field out.
    SkipField,
    /// Leave the row out.
    SkipRow,
    /// The row is a bad line.
    Stop,
}

#[derive(Debug, clap::Args)]
#[allow(clippy::struct_excessive_bools)]
pub struct ImportArgs {
    /// The database file (created when missing).
    pub path: PathBuf,
    /// The collection (default: the input file's name without its extension).
    #[arg(long, short = 'c')]
    pub collection: Option<String>,
    /// The input file (default: standard input).
    #[arg(long)]
    pub file: Option<PathBuf>,
    #[arg(long = "type", value_enum, default_value = "json")]
    pub input_type: InputType,
    /// The input is one JSON array of documents.
    #[arg(long = "jsonArray")]
    pub json_array: bool,
    /// CSV/TSV: the first line names the fields.
    #[arg(long = "headerline")]
    pub headerline: bool,
    /// CSV/TSV: the fields, comma-separated.
    #[arg(long, short = 'f', value_delimiter = ',')]
    pub fields: Vec<String>,
    /// CSV/TSV: a file naming one field a line.
    #[arg(long = "fieldFile")]
    pub field_file: Option<PathBuf>,
    /// CSV/TSV: each field is `name.type(argument)`, for example `age.int32()`.
    #[arg(long = "columnsHaveTypes")]
    pub columns_have_types: bool,
    /// CSV/TSV: leave empty cells out instead of storing empty strings.
    #[arg(long = "ignoreBlanks")]
    pub ignore_blanks: bool,
    /// CSV/TSV: what a typed cell that does not parse does.
    #[arg(long = "parseGrace", value_enum, default_value = "stop")]
    pub parse_grace: ParseGrace,
    #[arg(long, value_enum, default_value = "insert")]
    pub mode: Mode,
    /// The fields that find a document for upsert, merge and delete (default `_id`).
    #[arg(long = "upsertFields", value_delimiter = ',')]
    pub upsert_fields: Vec<String>,
    /// Stop at the first bad line, writing nothing of its batch.
    #[arg(long = "stopOnError")]
    pub stop_on_error: bool,
    /// Drop the collection first (in the first batch's transaction).
    #[arg(long)]
    pub drop: bool,
    /// Documents per transaction.
    #[arg(long = "batchSize", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: u64,
    /// No progress and no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// One input document, or why its line is bad, with its line number.
type Record = (usize, Result<Document, BadLine>);

/// Why a line of input gives no document; said after the line's number.
#[derive(Debug, thiserror::Error)]
enum BadLine {
    #[error("the line is not valid UTF-8")]
    NotUtf8,
    /// A JSON parse error, its position counted in the whole input.
    #[error("malformed JSON at line {line}, column {column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}", super::one_line(&.0.to_string()))]
    Delimited(csv::Error),
    #[error("field `{field}`: {source}")]
    Cell {
        field: String,
        source: delimited::CellError,
    },
    #[error(transparent)]
    UnderValue(#[from] delimited::UnderValue),
}

/// Runs `odm import`.
pub fn run(args: &ImportArgs) -> Result<(), ToolError> {
    let collection = collection_name(args)?;
    if args.json_array && args.input_type != InputType::Json {
        return Err(ToolError::new("--jsonArray is for JSON input only"));
    }
    if args.mode != Mode::Insert && args.upsert_fields.iter().any(String::is_empty) {
        return Err(ToolError::new("--upsertFields names an empty field"));
    }
    let (input, total): (Box<dyn Read>, Option<u64>) = match &args.file {
        Some(path) => {
            let file = File::open(path).map_err(|e| io_error(path, &e))?;
            let len = file.metadata().ok().map(|m| m.len());
            (Box::new(file), len)
        }
        None => (Box::new(std::io::stdin().lock()), None),
    };
    let counted = Counted {
        inner: input,
        bytes: std::rc::Rc::new(std::cell::Cell::new(0)),
    };
    let bytes_read = counted.bytes.clone();
    let source: Box<dyn Iterator<Item = Result<Record, ToolError>>> = match args.input_type {
        InputType::Json if args.json_array => Box::new(json_array(counted)?.into_iter().map(Ok)),
        InputType::Json => Box::new(JsonDocuments::new(BufReader::with_capacity(
            1 << 16,
            counted,
        ))),
        InputType::Csv | InputType::Tsv => Box::new(Delimited::new(args, counted)?),
    };
    let db = open_or_create(&args.path)?;
    let mut progress = Progress::new(
        &format!("import {collection}"),
        total,
        Unit::Bytes,
        args.quiet,
    );
    let mut importer = Importer {
        db: &db,
        collection: &collection,
        args,
        first_batch: true,
        imported: 0,
        failed: 0,
    };
    let outcome = importer.import(source, || progress.set(bytes_read.get()));
    progress.set(bytes_read.get());
    // The batches went to the file with eventual durability; this commit makes them durable,
    // on the way out of a failed import too.
    db.write(|_| Ok::<_, EngineError>(()))?;
    let summary = format!(
        "{} document(s) imported into `{collection}`, {} failed",
        importer.imported, importer.failed
    );
    progress.finish_counting(&summary, importer.imported, Unit::Documents);
    outcome?;
    if importer.failed > 0 {
        return Err(ToolError(format!(
            "{} document(s) failed to import (each reported above)",
            importer.failed
        )));
    }
    Ok(())
}

/// `--collection`, or the input file's name without its extension.
fn collection_name(args: &ImportArgs) -> Result<String, ToolError> {
    match (&args.collection, &args.file) {
        (Some(c), _) => Ok(c.clone()),
        (None, Some(file)) => file
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_owned)
            .ok_or_else(|| ToolError::new("give the collection with --collection")),
        (None, None) => Err(ToolError::new("give the collection with --collection")),
    }
}

fn stopped(line: usize, message: &str, imported: u64) -> ToolError {
    ToolError(format!(
        "line {line}: {message} (stopped by --stopOnError: nothing of this line's batch was \
         written; {imported} document(s) of earlier batches were)"
    ))
}

struct Importer<'a> {
    db: &'a Database,
    collection: &'a str,
    args: &'a ImportArgs,
    first_batch: bool,
    imported: u64,
    failed: u64,
}

/// A bad line found while writing.
struct Refused {
    line: usize,
    error: EngineError,
}

impl From<EngineError> for Refused {
    fn from(error: EngineError) -> Refused {
        Refused { line: 0, error }
    }
}

impl Importer<'_> {
    /// Imports every record of `source` in batches of `--batchSize`, calling `written` after
    /// each full batch; a bad line stops the import under `--stopOnError` and is reported and
    /// counted otherwise. With `--drop`, an empty input still drops the collection.
    fn import(
        &mut self,
        source: impl Iterator<Item = Result<Record, ToolError>>,
        mut written: impl FnMut(),
    ) -> Result<(), ToolError> {
        let mut batch: Vec<(usize, Document)> = Vec::new();
        for record in source {
            let (line, document) = record?;
            match document {
                Ok(doc) => batch.push((line, doc)),
                Err(message) if self.args.stop_on_error => {
                    return Err(stopped(line, &message.to_string(), self.imported));
                }
                Err(message) => {
                    self.failed += 1;
                    eprintln!("line {line}: {message}");
                }
            }
            if batch.len() as u64 >= self.args.batch_size {
                self.write(&std::mem::take(&mut batch))?;
                written();
            }
        }
        if !batch.is_empty() {
            self.write(&batch)?;
        }
        if self.first_batch && self.args.drop {
            // An empty input still drops, as asked.
            self.write(&[])?;
        }
        Ok(())
    }

    fn write(&mut self, batch: &[(usize, Document)]) -> Result<(), ToolError> {
        let drop_first = self.first_batch && self.args.drop;
        let stop = self.args.stop_on_error;
        let mut refused: Vec<(usize, EngineError)> = Vec::new();
        let result = self.db.write_with(Durability::Eventual, |w| {
            if drop_first {
                w.drop_collection(self.collection)?;
            }
            if self.args.mode == Mode::Insert {
                // One call for the batch: the engine keeps its tables open across it.
                let result = w.insert_many(self.collection, batch.iter().map(|(_, d)| d), stop)?;
                for (position, error) in result.failures {
                    let line = batch[position].0;
                    if stop {
                        return Err(Refused { line, error });
                    }
                    refused.push((line, error));
                }
                return Ok(result.inserted.len() as u64);
            }
            let mut written = 0;
            for (line, doc) in batch {
                match apply(w, self.collection, self.args, doc) {
                    Ok(()) => written += 1,
                    Err(error) if stop || !error.is_per_document() => {
                        return Err(Refused { line: *line, error });
                    }
                    Err(error) => refused.push((*line, error)),
                }
            }
            Ok::<_, Refused>(written)
        });
        match result {
            Ok(written) => {
                self.first_batch = false;
                self.imported += written;
                for (line, error) in refused {
                    self.failed += 1;
                    eprintln!("line {line}: {}", super::one_line(&error.to_string()));
                }
                Ok(())
            }
            Err(Refused { line, error }) if error.is_per_document() => Err(stopped(
                line,
                &super::one_line(&error.to_string()),
                self.imported,
            )),
            Err(Refused { error, .. }) => Err(error.into()),
        }
    }
}

/// Applies one input document by the mode.
fn apply(
    w: &mut WriteTxn<'_>,
    collection: &str,
    args: &ImportArgs,
    doc: &Document,
) -> Result<(), EngineError> {
    let upsert = UpdateOptions {
        upsert: true,
        ..UpdateOptions::default()
    };
    let key_fields: Vec<&str> = if args.upsert_fields.is_empty() {
        vec!["_id"]
    } else {
        args.upsert_fields.iter().map(String::as_str).collect()
    };
    let key = || {
        let mut filter = Document::new();
        for field in &key_fields {
            filter.insert(
                *field,
                delimited::get_path(doc, field)
                    .cloned()
                    .unwrap_or(Bson::Null),
            );
        }
        filter
    };
    // With the default key, a document without `_id` has nothing to match: it is new.
    let keyless = args.upsert_fields.is_empty() && !doc.contains_key("_id");
    match args.mode {
        Mode::Insert => w.insert_one(collection, doc).map(drop),
        Mode::Upsert | Mode::Merge if keyless => w.insert_one(collection, doc).map(drop),
        Mode::Upsert => w.replace_one(collection, &key(), doc, &upsert).map(drop),
        Mode::Merge => w
            .update_one(collection, &key(), doc! {"$set": doc.clone()}, &upsert)
            .map(drop),
        Mode::Delete if keyless => Ok(()),
        Mode::Delete => w.delete_one(collection, &key()).map(drop),
    }
}

/// A reader that counts the bytes read, for the progress bar.
struct Counted<R> {
    inner: R,
    bytes: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.set(self.bytes.get() + n as u64);
        Ok(n)
    }
}

/// JSON documents one after another: one a line, several on a line, or one spread over
/// several lines. A malformed document is reported at its line and reading goes on at the next
/// line.
struct JsonDocuments<R> {
    reader: R,
    /// Unparsed text; starts at the beginning of line `buffer_line`.
    buffer: String,
    buffer_line: usize,
    /// Where parsing resumes in `buffer`.
    offset: usize,
    eof: bool,
    ready: VecDeque<Record>,
}

impl<R: BufRead> JsonDocuments<R> {
    fn new(reader: R) -> Self {
        JsonDocuments {
            reader,
            buffer: String::new(),
            buffer_line: 1,
            offset: 0,
            eof: false,
            ready: VecDeque::new(),
        }
    }

    /// Appends one line to the buffer; false at the end of the input.
    fn read_line(&mut self) -> Result<bool, ToolError> {
        let mut bytes = Vec::new();
        let n = self
            .reader
            .read_until(b'\n', &mut bytes)
            .map_err(|e| ToolError(format!("reading the input: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        if let Ok(text) = String::from_utf8(bytes) {
            self.buffer.push_str(&text);
        } else {
            // The line cannot be parsed; report it and keep the line count right.
            let line = self.buffer_line + self.buffer.matches('\n').count();
            self.ready.push_back((line, Err(BadLine::NotUtf8)));
            self.buffer.push('\n');
            self.discard_through(line);
        }
        Ok(true)
    }

    /// Drops the buffer's text through the end of line `line`.
    fn discard_through(&mut self, line: usize) {
        let mut cut = 0;
        for _ in self.buffer_line..=line {
            if let Some(i) = self.buffer[cut..].find('\n') {
                cut += i + 1;
            } else {
                cut = self.buffer.len();
                break;
            }
        }
        let dropped_lines = self.buffer[..cut].matches('\n').count();
        self.buffer.drain(..cut);
        self.buffer_line += dropped_lines;
        self.offset = 0;
    }

    fn parse_buffer(&mut self) -> bool {
        let mut parser = Parser::at(&self.buffer, self.offset);
        loop {
            parser.skip_space();
            if parser.at_end() {
                self.offset = parser.position();
                return false;
            }
            let start = parser.position();
            match parser.document() {
                Ok(doc) => {
                    let line = self.buffer_line + self.buffer[..start].matches('\n').count();
                    self.ready.push_back((line, Ok(doc)));
                }
                Err(e) if e.at_end && !self.eof => {
                    self.offset = start;
                    return true;
                }
                Err(e) => {
                    let start_line = self.buffer_line + self.buffer[..start].matches('\n').count();
                    let line = self.buffer_line + e.line - 1;
                    self.ready.push_back((
                        start_line,
                        Err(BadLine::Json {
                            line,
                            column: e.column,
                            message: e.message,
                        }),
                    ));
                    self.discard_through(start_line);
                    return false;
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for JsonDocuments<R> {
    type Item = Result<Record, ToolError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(record) = self.ready.pop_front() {
                return Some(Ok(record));
            }
            let needs_more = self.parse_buffer();
            if !self.ready.is_empty() {
                continue;
            }
            if self.eof {
                return None;
            }
            if !needs_more {
                // Everything parsed was consumed: keep the buffer small.
                let cut = self.offset;
                let lines = self.buffer[..cut].matches('\n').count();
                self.buffer.drain(..cut);
                self.buffer_line += lines;
                self.offset = 0;
            }
            match self.read_line() {
                Ok(true) => {}
                Ok(false) => self.eof = true,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// `--jsonArray`: the whole input is one array of documents. A malformed array stops the
/// import (there is no next element to resume at).
fn json_array(mut input: impl Read) -> Result<Vec<Record>, ToolError> {
    let mut text = String::new();
    input
        .read_to_string(&mut text)
        .map_err(|e| ToolError(format!("reading the input: {e}")))?;
    let mut parser = Parser::new(&text);
    let mut records = Vec::new();
    parser.skip_space();
    if !parser.eat(b'[') {
        return Err(parser.error("--jsonArray input must start with `[`").into());
    }
    loop {
        parser.skip_space();
        if records.is_empty() && parser.eat(b']') {
            break;
        }
        let start = parser.position();
        let line = text[..start].matches('\n').count() + 1;
        let doc = parser.document()?;
        records.push((line, Ok(doc)));
        parser.skip_space();
        if parser.eat(b']') {
            break;
        }
        if !parser.eat(b',') {
            return Err(parser.error("expected `,` or `]` in the array").into());
        }
    }
    parser.skip_space();
    if !parser.at_end() {
        return Err(parser.error("unexpected text after the array").into());
    }
    Ok(records)
}

/// CSV or TSV rows as documents.
struct Delimited<R> {
    records: csv::StringRecordsIntoIter<R>,
    columns: Vec<Column>,
    grace: ParseGrace,
    ignore_blanks: bool,
}

impl<R: Read> Delimited<R> {
    fn new(args: &ImportArgs, input: R) -> Result<Self, ToolError> {
        let mut builder = csv::ReaderBuilder::new();
        builder.has_headers(false).flexible(true);
        if args.input_type == InputType::Tsv {
            builder.delimiter(b'\t').quoting(false);
        }
        let mut records = builder.from_reader(input).into_records();
        let mut names: Vec<String> = args.fields.clone();
        if let Some(path) = &args.field_file {
            let text = std::fs::read_to_string(path).map_err(|e| io_error(path, &e))?;
            names.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned),
            );
        }
        if args.headerline {
            if !names.is_empty() {
                return Err(ToolError::new(
                    "--headerline and --fields (or --fieldFile) exclude each other",
                ));
            }
            match records.next() {
                Some(Ok(header)) => names = header.iter().map(str::to_owned).collect(),
                Some(Err(e)) => return Err(ToolError(format!("the header line: {e}"))),
                None => {}
            }
        } else if names.is_empty() {
            return Err(ToolError::new(
                "CSV and TSV input need field names: --headerline, --fields or --fieldFile",
            ));
        }
        let columns = delimited::columns(&names, args.columns_have_types)
            .map_err(|e| ToolError(e.to_string()))?;
        Ok(Delimited {
            records,
            columns,
            grace: args.parse_grace,
            ignore_blanks: args.ignore_blanks,
        })
    }

    fn row(&self, record: &csv::StringRecord) -> Option<Result<Document, BadLine>> {
        let mut doc = Document::new();
        for (i, text) in record.iter().enumerate() {
            if text.is_empty() && self.ignore_blanks {
                continue;
            }
            let extra;
            let (name, value) = if let Some(column) = self.columns.get(i) {
                match delimited::cell(text, &column.kind) {
                    Ok(v) => (&column.name, v),
                    Err(source) => match self.grace {
                        ParseGrace::AutoCast => (&column.name, delimited::auto(text)),
                        ParseGrace::SkipField => continue,
                        ParseGrace::SkipRow => return None,
                        ParseGrace::Stop => {
                            return Some(Err(BadLine::Cell {
                                field: column.name.clone(),
                                source,
                            }));
                        }
                    },
                }
            } else {
                // More cells than names: `field<N>`, as mongoimport names them.
                extra = format!("field{i}");
                (&extra, delimited::auto(text))
            };
            if let Err(e) = delimited::set_path(&mut doc, name, value) {
                return Some(Err(e.into()));
            }
        }
        Some(Ok(doc))
    }
}

impl<R: Read> Iterator for Delimited<R> {
    type Item = Result<Record, ToolError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let record = self.records.next()?;
            return Some(Ok(match record {
                Ok(record) => {
                    let line = record.position().map_or(0, |p| p.line() as usize);
                    match self.row(&record) {
                        Some(doc) => (line, doc),
                        None => continue,
                    }
                }
                Err(e) => {
                    let line = e.position().map_or(0, |p| p.line() as usize);
                    (line, Err(BadLine::Delimited(e)))
                }
            }));
        }
    }
}
