//! `odm shard-advisor`: the shard-key advisor ([`odm_advisor`]) over a collection of a
//! database file, for one or several candidate keys, with MongoDB's `analyzeShardKey` of each,
//! the collection's sampled queries (or a file of queries: one filter a line, Extended JSON; a
//! line `{"filter": {...}}` also reads) and a picture. `odm analyze-shard-key` and
//! `odm configure-query-analyzer` are MongoDB's two commands on a file.

use std::io::BufRead;
use std::path::PathBuf;

use odm_advisor::{Advisor, AnalyzeOptions, InsertOrder, NUM_RANGES, analyze_shard_key};
use odm_engine::sampling::AnalyzerMode;

use super::extjson::{Format, to_pretty};

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
    /// The ranges analyzeShardKey cuts the key into (MongoDB's analyzeShardKeyNumRanges).
    #[arg(long, default_value_t = NUM_RANGES)]
    pub num_ranges: usize,
}

/// `odm analyze-shard-key`: MongoDB's `analyzeShardKey` on a collection of a file, printed as
/// the command's reply.
#[derive(Debug, clap::Args)]
// Command-line switches are bools by nature; each is its own flag.
#[allow(clippy::struct_excessive_bools)]
pub struct AnalyzeArgs {
    /// The database file.
    pub path: PathBuf,
    #[arg(long)]
    pub collection: String,
    /// The candidate key, as MongoDB writes it: `{"region": 1, "at": 1}`.
    #[arg(long)]
    pub key: String,
    /// Leave out the key's characteristics.
    #[arg(long)]
    pub no_key_characteristics: bool,
    /// Leave out the distribution of the sampled reads and writes.
    #[arg(long)]
    pub no_read_write_distribution: bool,
    /// Read this share of the documents (above 0, at most 1).
    #[arg(long)]
    pub sample_rate: Option<f64>,
    /// Read this many documents.
    #[arg(long)]
    pub sample_size: Option<i64>,
    #[arg(long, default_value_t = NUM_RANGES)]
    pub num_ranges: usize,
}

/// `odm configure-query-analyzer`: MongoDB's `configureQueryAnalyzer` on a collection of a
/// file; applications that open the file then sample their queries.
#[derive(Debug, clap::Args)]
pub struct ConfigureArgs {
    /// The database file.
    pub path: PathBuf,
    #[arg(long)]
    pub collection: String,
    /// `full` or `off`.
    #[arg(long)]
    pub mode: String,
    /// At most this many samples a second (above 0, at most 50); with `full` only.
    #[arg(long)]
    pub samples_per_second: Option<f64>,
}

fn parse_key(flag: &str, text: &str) -> Result<odm_engine::ShardKey, ToolError> {
    let document = document_argument(flag, text)?;
    odm_engine::ShardKey::from_document(&document)
        .map_err(|e| ToolError(format!("{flag} {}: {e}", one_line(text))))
}

pub fn analyze(args: &AnalyzeArgs) -> Result<(), ToolError> {
    let key = parse_key("--key", &args.key)?;
    let options = AnalyzeOptions {
        key_characteristics: !args.no_key_characteristics,
        read_write_distribution: !args.no_read_write_distribution,
        sample_rate: args.sample_rate,
        sample_size: args.sample_size,
        num_ranges: args.num_ranges,
    };
    let db = open_existing(&args.path)?;
    if !db.list_collections().contains(&args.collection) {
        return Err(no_collection(&args.path, &args.collection, &db));
    }
    let analysis = analyze_shard_key(&db, &args.collection, &key, &options).map_err(|e| {
        ToolError(format!(
            "analyzeShardKey: {e} ({}, code {})",
            e.code().name(),
            e.code().code
        ))
    })?;
    println!("{}", to_pretty(&analysis.to_document(), Format::Relaxed));
    Ok(())
}

pub fn configure(args: &ConfigureArgs) -> Result<(), ToolError> {
    let mode = AnalyzerMode::parse(&args.mode).map_err(|e| ToolError(format!("--mode: {e}")))?;
    let db = open_existing(&args.path)?;
    let configured = db
        .configure_query_analyzer(&args.collection, mode, args.samples_per_second)
        .map_err(|e| ToolError(format!("configureQueryAnalyzer: {e}")))?;
    println!("{}", to_pretty(&configured.to_document(), Format::Relaxed));
    Ok(())
}

pub fn run(args: &AdviseArgs) -> Result<(), ToolError> {
    let keys = args
        .keys
        .iter()
        .map(|text| parse_key("--key", text))
        .collect::<Result<Vec<_>, _>>()?;
    let queries = match &args.queries {
        Some(path) => Some(read_queries(path)?),
        None => None,
    };
    let db = open_existing(&args.path)?;
    if !db.list_collections().contains(&args.collection) {
        return Err(no_collection(&args.path, &args.collection, &db));
    }
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
    let options = AnalyzeOptions {
        num_ranges: args.num_ranges,
        ..AnalyzeOptions::default()
    };
    let report = advisor
        .analyze_collection(&db, &args.collection, &keys, queries.as_deref(), &options)
        .map_err(|e| {
            ToolError(format!(
                "{}: {}",
                args.path.display(),
                one_line(&e.to_string())
            ))
        })?;
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
