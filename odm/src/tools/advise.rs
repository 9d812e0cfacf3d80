//! `odm shard-advisor`: the shard-key advisor ([`crate::advisor`]) over a collection of a
//! database file, for one or several candidate keys, with an optional file of sampled queries
//! (one filter a line, Extended JSON; a line `{"filter": {...}}` also reads) and picture.

use std::io::BufRead;
use std::path::PathBuf;

use crate::advisor::{Advisor, InsertOrder, collection_documents};

use super::{ToolError, document_argument, io_error, no_collection, one_line, open_existing};

#[derive(Debug, clap::Args)]
pub struct AdviseArgs {
    /// The database file.
    pub path: PathBuf,
    #[arg(long)]
    pub collection: String,
    /// A candidate key, as MongoDB writes it: `{"region": 1, "at": 1}` or `{"user": "hashed"}`
    /// (repeat for several).
    #[arg(long = "key", required = true)]
    pub keys: Vec<String>,
    #[arg(long)]
    pub shards: usize,
    /// Sampled queries: a JSON Lines file of filters.
    #[arg(long)]
    pub queries: Option<PathBuf>,
    /// Replay inserts in the order of this field (a creation time) instead of `_id`.
    #[arg(long)]
    pub order: Option<String>,
    /// Replay an even sample of at most this many documents.
    #[arg(long)]
    pub sample: Option<usize>,
    /// Split chunks above this many bytes (default: a quarter of the data per shard).
    #[arg(long)]
    pub chunk_size: Option<u64>,
    /// The share of the insert stream, at its end, counted as recent (percent).
    #[arg(long, default_value_t = 10.0)]
    pub recent: f64,
    /// Also draw the report as an SVG picture into this file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

pub fn run(args: &AdviseArgs) -> Result<(), ToolError> {
    let keys = args
        .keys
        .iter()
        .map(|text| {
            let document = document_argument("--key", text)?;
            odm_engine::ShardKey::from_document(&document)
                .map_err(|e| ToolError(format!("--key {}: {e}", one_line(text))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let queries = match &args.queries {
        Some(path) => read_queries(path)?,
        None => Vec::new(),
    };
    let db = open_existing(&args.path)?;
    let documents = collection_documents(&db, &args.collection)
        .map_err(|e| {
            ToolError(format!(
                "{}: {}",
                args.path.display(),
                one_line(&e.to_string())
            ))
        })?
        .ok_or_else(|| no_collection(&args.path, &args.collection, &db))?;
    if !(args.recent > 0.0 && args.recent <= 100.0) {
        return Err(ToolError(format!(
            "--recent: a percentage above 0 and at most 100, not {}",
            args.recent
        )));
    }
    let mut advisor = Advisor::new(args.shards).recent(args.recent / 100.0);
    if let Some(field) = &args.order {
        advisor = advisor.order(InsertOrder::Field(field.clone()));
    }
    if let Some(sample) = args.sample {
        advisor = advisor.sample(sample);
    }
    if let Some(bytes) = args.chunk_size {
        advisor = advisor.chunk_bytes(bytes);
    }
    let report = advisor
        .analyze(documents, &keys, &queries)
        .map_err(|e| ToolError(e.to_string()))?;
    print!("{report}");
    if let Some(path) = &args.svg {
        std::fs::write(path, report.to_svg()).map_err(|e| io_error(path, &e))?;
        println!("picture: {}", path.display());
    }
    Ok(())
}

/// The filters of a JSON Lines file; a line that does not read is an error naming it.
fn read_queries(path: &PathBuf) -> Result<Vec<bson::Document>, ToolError> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, &e))?;
    let mut queries = Vec::new();
    for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| io_error(path, &e))?;
        if line.trim().is_empty() {
            continue;
        }
        let flag = format!("{}:{}", path.display(), number + 1);
        let document = document_argument(&flag, &line)?;
        let filter = match document.get("filter") {
            Some(bson::Bson::Document(filter)) if document.len() <= 3 => filter.clone(),
            _ => document,
        };
        queries.push(filter);
    }
    Ok(queries)
}
