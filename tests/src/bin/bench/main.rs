//! Benchmarks, run in release mode; each prints a table and ends with `ratio ...` lines.
//!
//! `cargo run --release -p odm-tests --bin bench -- core|query|update|odm|wire|tools|spill|natural|search|async [--docs N] [--runs R]`
//! and `bench load [--clients C] [--seconds S] [--idle I] [--slow W]`.
//!
//! Every figure is measured side by side in one run on the same data; the ratios compare
//! systems within that run, never against numbers from elsewhere.

mod aio;
mod changes;
mod core;
mod natural;
mod odm;
#[cfg(feature = "peers")]
mod peers;
mod query;
mod report;
mod search;
mod spill;
mod tools;
mod update;
mod wire;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(suite) = args.first() else {
        usage();
    };
    // `bench load --idle` runs the bench binary again to hold the idle sockets' client ends.
    if suite == "hold-idle" && args.len() == 3 {
        if let Err(e) = odm_tests::crowd::hold_idle(&args[1], &args[2]) {
            eprintln!("bench hold-idle: {e}");
            std::process::exit(1);
        }
        return;
    }
    let options = match Options::parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench: {e}");
            usage();
        }
    };
    let outcome = match suite.as_str() {
        "core" => core::run(&options),
        "query" => query::run(&options),
        "update" => update::run(&options),
        "odm" => odm::run(&options),
        "changes" => changes::run(&options),
        "wire" => wire::run(&options).map_err(Into::into),
        "load" => wire::run_load(&options).map_err(Into::into),
        "tools" => tools::run(&options),
        "spill" => spill::run(&options),
        "natural" => natural::run(&options),
        "search" => search::run(&options),
        "async" => aio::run(&options),
        _ => usage(),
    };
    if let Err(e) = outcome {
        eprintln!("bench: {e}");
        std::process::exit(1);
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: bench core|query|update|odm|changes|wire|tools|spill|natural|search|async [--docs N] [--runs R] [--only engine|raw|sqlite] [--kind K]\n       bench load [--clients C] [--seconds S] [--idle I] [--slow W]"
    );
    std::process::exit(2);
}

/// Sizes shared by the suites.
#[derive(Debug, Clone)]
pub struct Options {
    pub docs: usize,
    pub runs: usize,
    /// Measure one system only (`engine`, `raw`, `sqlite`, or with the peers `taladb` or
    /// `native_db`), for profiling.
    pub only: Option<String>,
    /// Run one kind of query or update only (`range`, `upsert_bucket`, ...), for profiling.
    pub kind: Option<String>,
    /// `bench load`: concurrent clients, and how long they run.
    pub clients: usize,
    pub seconds: u64,
    /// `bench load`: idle sockets and slow-reading clients held open during the run.
    pub idle: usize,
    pub slow: usize,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options {
            docs: 100_000,
            runs: 3,
            only: None,
            kind: None,
            clients: 64,
            seconds: 10,
            idle: 0,
            slow: 0,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            if flag == "--only" {
                options.only = Some(value.clone());
                continue;
            }
            if flag == "--kind" {
                options.kind = Some(value.clone());
                continue;
            }
            let n: usize = value
                .parse()
                .map_err(|_| format!("{flag} takes a whole number, not `{value}`"))?;
            match flag.as_str() {
                "--docs" if n >= 1_000 => options.docs = n,
                "--runs" if n >= 1 => options.runs = n,
                "--clients" if n >= 1 => options.clients = n,
                "--seconds" if n >= 1 => options.seconds = n as u64,
                "--idle" => options.idle = n,
                "--slow" => options.slow = n,
                "--docs" => return Err("--docs must be at least 1000".into()),
                "--runs" => return Err("--runs must be at least 1".into()),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(options)
    }
}
