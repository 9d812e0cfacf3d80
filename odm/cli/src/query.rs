//! One-shot queries on a database file: `odm find`, `odm aggregate`, `odm explain`,
//! `odm update`, `odm delete`. Arguments are Extended JSON (relaxed, canonical or the shell's
//! forms); results are relaxed Extended JSON, pretty by default, one a line with `--jsonl`, or
//! a table of top-level fields with `--table`.

use std::io::Write;
use std::path::PathBuf;

use bson::{Bson, Document, doc};
use odm_engine::aggregate::AggregateOptions;
use odm_engine::query::FindOptions;
use odm_engine::update::UpdateOptions;

use super::delimited::cell_text;
use super::extjson::{self, Format};
use super::{ToolError, document_argument, json_argument, open_existing};

/// How results are printed.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// One document a line.
    #[arg(long, conflicts_with = "table")]
    pub jsonl: bool,
    /// A table of the documents' top-level fields.
    #[arg(long)]
    pub table: bool,
    #[arg(long = "jsonFormat", value_enum, default_value = "relaxed")]
    pub json_format: Format,
}

#[derive(Debug, clap::Args)]
pub struct FindArgs {
    pub path: PathBuf,
    pub collection: String,
    /// The filter (default `{}`).
    pub filter: Option<String>,
    #[arg(long)]
    pub sort: Option<String>,
    #[arg(long)]
    pub projection: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub skip: u64,
    #[arg(long)]
    pub limit: Option<u64>,
    /// An index name or key pattern the plan must use.
    #[arg(long)]
    pub hint: Option<String>,
    #[arg(long)]
    pub collation: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, clap::Args)]
pub struct AggregateArgs {
    pub path: PathBuf,
    pub collection: String,
    /// The pipeline: a JSON array of stages (a final `$out` or `$merge` writes).
    pub pipeline: String,
    #[arg(long)]
    pub collation: Option<String>,
    /// Explain the pipeline instead: the plan of its head, then what each stage passed on (a
    /// final `$out` or `$merge` writes nothing).
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    pub path: PathBuf,
    pub collection: String,
    pub filter: String,
    /// An update document (`{"$set": {...}}`) or a pipeline (`[{"$set": {...}}]`).
    pub update: String,
    /// Update every matching document (default: the first).
    #[arg(long)]
    pub multi: bool,
    /// Insert a document when nothing matches.
    #[arg(long)]
    pub upsert: bool,
    #[arg(long = "arrayFilters")]
    pub array_filters: Option<String>,
    #[arg(long)]
    pub collation: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    pub path: PathBuf,
    pub collection: String,
    pub filter: String,
    /// Delete every matching document (default: the first).
    #[arg(long)]
    pub multi: bool,
}

fn optional_document(flag: &str, text: Option<&str>) -> Result<Option<Document>, ToolError> {
    text.map(|t| document_argument(flag, t)).transpose()
}

fn find_options(args: &FindArgs) -> Result<FindOptions, ToolError> {
    Ok(FindOptions {
        sort: optional_document("--sort", args.sort.as_deref())?,
        projection: optional_document("--projection", args.projection.as_deref())?,
        skip: args.skip,
        limit: args.limit.filter(|l| *l > 0),
        hint: args
            .hint
            .as_deref()
            .map(|h| match json_argument("--hint", h) {
                Ok(Bson::Document(d)) => Ok::<_, ToolError>(Bson::Document(d)),
                // A bare name is an index name.
                _ => Ok(Bson::String(h.to_owned())),
            })
            .transpose()?,
        collation: optional_document("--collation", args.collation.as_deref())?,
        ..FindOptions::default()
    })
}

/// Runs `odm find`.
pub fn find(args: &FindArgs) -> Result<(), ToolError> {
    let filter = optional_document("filter", args.filter.as_deref())?.unwrap_or_default();
    let options = find_options(args)?;
    let db = open_existing(&args.path)?;
    let txn = db.read()?;
    let Some(collection) = txn.collection(&args.collection)? else {
        // A missing collection holds nothing, as in MongoDB.
        return print(std::iter::empty(), &args.output);
    };
    let cursor = collection.find(&filter, &options)?;
    print(cursor.map(|d| d.map_err(ToolError::from)), &args.output)
}

/// Runs `odm explain` (the plan and what running it examined).
pub fn explain(args: &FindArgs) -> Result<(), ToolError> {
    let filter = optional_document("filter", args.filter.as_deref())?.unwrap_or_default();
    let options = find_options(args)?;
    let db = open_existing(&args.path)?;
    let txn = db.read()?;
    let Some(collection) = txn.collection(&args.collection)? else {
        return Err(super::no_collection(&args.path, &args.collection, &db));
    };
    let explain = collection.explain(&filter, &options)?;
    print(std::iter::once(Ok(explain.to_document())), &args.output)
}

/// Runs `odm aggregate`.
pub fn aggregate(args: &AggregateArgs) -> Result<(), ToolError> {
    let stages = match json_argument("pipeline", &args.pipeline)? {
        Bson::Array(stages) => stages
            .into_iter()
            .map(|s| match s {
                Bson::Document(d) => Ok(d),
                _ => Err(ToolError::new("pipeline: every stage is a document")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Bson::Document(d) => vec![d],
        _ => return Err(ToolError::new("pipeline: expected a JSON array of stages")),
    };
    let options = AggregateOptions {
        collation: optional_document("--collation", args.collation.as_deref())?,
        ..AggregateOptions::default()
    };
    let db = open_existing(&args.path)?;
    if args.explain {
        let txn = db.read()?;
        let Some(collection) = txn.collection(&args.collection)? else {
            return Err(super::no_collection(&args.path, &args.collection, &db));
        };
        let explain = collection.explain_aggregate(&stages, &options)?;
        return print(std::iter::once(Ok(explain.to_document())), &args.output);
    }
    let results = db.aggregate(&args.collection, &stages, &options)?;
    print(results.into_iter().map(Ok), &args.output)
}

/// Runs `odm update`; prints what it matched, changed and inserted.
pub fn update(args: &UpdateArgs) -> Result<(), ToolError> {
    let filter = document_argument("filter", &args.filter)?;
    let update = json_argument("update", &args.update)?;
    let array_filters = match args
        .array_filters
        .as_deref()
        .map(|a| json_argument("--arrayFilters", a))
        .transpose()?
    {
        None => Vec::new(),
        Some(Bson::Array(items)) => items
            .into_iter()
            .map(|f| match f {
                Bson::Document(d) => Ok(d),
                _ => Err(ToolError::new(
                    "--arrayFilters: expected an array of documents",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ToolError::new(
                "--arrayFilters: expected an array of documents",
            ));
        }
    };
    let options = UpdateOptions {
        upsert: args.upsert,
        array_filters,
        collation: optional_document("--collation", args.collation.as_deref())?,
        ..UpdateOptions::default()
    };
    let modifications: odm_engine::update::UpdateModifications = match update {
        Bson::Document(d) => d.into(),
        Bson::Array(stages) => stages
            .into_iter()
            .map(|s| match s {
                Bson::Document(d) => Ok(d),
                _ => Err(ToolError::new("update: every pipeline stage is a document")),
            })
            .collect::<Result<Vec<_>, _>>()?
            .into(),
        _ => return Err(ToolError::new("update: expected a document or a pipeline")),
    };
    let db = open_existing(&args.path)?;
    let result = db.write(|w| {
        if args.multi {
            w.update_many(&args.collection, &filter, modifications, &options)
        } else {
            w.update_one(&args.collection, &filter, modifications, &options)
        }
    })?;
    let mut summary = doc! {"matched": result.matched as i64, "modified": result.modified as i64};
    if let Some(id) = result.upserted_id {
        summary.insert("upsertedId", id);
    }
    println!("{}", extjson::to_line(&summary, Format::Relaxed));
    Ok(())
}

/// Runs `odm delete`; prints how many documents it deleted.
pub fn delete(args: &DeleteArgs) -> Result<(), ToolError> {
    let filter = document_argument("filter", &args.filter)?;
    let db = open_existing(&args.path)?;
    let deleted = db.write(|w| {
        if args.multi {
            w.delete_many(&args.collection, &filter)
        } else {
            w.delete_one(&args.collection, &filter)
        }
    })?;
    println!(
        "{}",
        extjson::to_line(&doc! {"deleted": deleted as i64}, Format::Relaxed)
    );
    Ok(())
}

/// Prints results as the output flags ask.
fn print(
    results: impl Iterator<Item = Result<Document, ToolError>>,
    output: &OutputArgs,
) -> Result<(), ToolError> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let write_error = |e: std::io::Error| ToolError(format!("writing the results: {e}"));
    if output.table {
        let docs: Vec<Document> = results.collect::<Result<_, _>>()?;
        let mut columns: Vec<String> = Vec::new();
        for doc in &docs {
            for key in doc.keys() {
                if !columns.contains(key) {
                    columns.push(key.clone());
                }
            }
        }
        let mut rows = vec![columns.clone()];
        let mut numeric = vec![true; columns.len()];
        for doc in &docs {
            let row: Vec<String> = columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let value = doc.get(c);
                    if !matches!(
                        value,
                        None | Some(
                            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
                        )
                    ) {
                        numeric[i] = false;
                    }
                    cell_text(value)
                })
                .collect();
            rows.push(row);
        }
        write!(out, "{}", table(&rows, &numeric)).map_err(write_error)?;
        return out.flush().map_err(write_error);
    }
    for doc in results {
        let doc = doc?;
        let text = if output.jsonl {
            extjson::to_line(&doc, output.json_format)
        } else {
            extjson::to_pretty(&doc, output.json_format)
        };
        writeln!(out, "{text}").map_err(write_error)?;
    }
    out.flush().map_err(write_error)
}

/// A text table: the first row is the header; `right[i]` right-aligns column `i` (numbers).
/// Cells longer than 60 characters are cut with `…`, and line breaks shown as spaces.
pub fn table(rows: &[Vec<String>], right: &[bool]) -> String {
    const WIDEST: usize = 60;
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| {
                    let flat: String = c
                        .chars()
                        .map(|ch| if ch.is_control() { ' ' } else { ch })
                        .collect();
                    if flat.chars().count() > WIDEST {
                        let cut: String = flat.chars().take(WIDEST - 1).collect();
                        format!("{cut}…")
                    } else {
                        flat
                    }
                })
                .collect()
        })
        .collect();
    let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            cells
                .iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (n, row) in cells.iter().enumerate() {
        let mut line = String::new();
        for (i, width) in widths.iter().enumerate() {
            let cell = row.get(i).map_or("", String::as_str);
            let pad = width - cell.chars().count();
            if i > 0 {
                line.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) && n > 0 {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if n == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
    }
    out
}
