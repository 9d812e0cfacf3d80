//! The `odm` command: `odm serve` puts the databases of a folder behind MongoDB's wire
//! protocol; the other subcommands are the data tools of `odm_cli`, each over one database
//! file. Every failure is one line on standard error and a non-zero exit status.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use odm_cli::{ToolError, advise, dump, export, import, maintain, query};
use odm_server::{Config, Server, Storage, auth, tls::TlsFiles};

#[derive(Debug, Parser)]
#[command(
    name = "odm",
    version,
    about = "The odm document database's command-line tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serves the databases under PATH (a file `<name>.odm` each) over MongoDB's wire protocol.
    /// Its shell is mongosh: `mongosh mongodb://127.0.0.1:27017/<name>`.
    Serve(Serve),
    /// Loads JSON, CSV or TSV into a collection, as mongoimport does.
    Import(import::ImportArgs),
    /// Writes a collection as JSON or CSV, as mongoexport does.
    Export(export::ExportArgs),
    /// Writes the file's collections in mongodump's layout (mongorestore loads it into MongoDB).
    Dump(dump::DumpArgs),
    /// Loads a dump in mongodump's layout (one written by odm dump or by mongodump).
    Restore(dump::RestoreArgs),
    /// Sizes per collection and index, and the file's free pages.
    Stats(maintain::StatsArgs),
    /// Recomputes every index from the documents; fails on any difference.
    Verify(maintain::FileArgs),
    /// Gives the file's free pages back to the file system.
    Compact(maintain::FileArgs),
    /// Lists, creates or drops indexes.
    #[command(subcommand)]
    Indexes(maintain::IndexesCommand),
    /// Runs one TTL expiry pass now.
    Ttl(maintain::FileArgs),
    /// Finds documents: `odm find FILE COLL '{"age": {"$gt": 30}}' --sort '{"age": 1}'`.
    Find(query::FindArgs),
    /// Runs an aggregation pipeline: `odm aggregate FILE COLL '[{"$group": ...}]'`.
    Aggregate(query::AggregateArgs),
    /// Shows how a find runs: the plan, and what running it examined.
    Explain(query::FindArgs),
    /// Updates documents: `odm update FILE COLL '{"_id": 1}' '{"$set": {"a": 2}}'`.
    Update(query::UpdateArgs),
    /// Deletes documents: `odm delete FILE COLL '{"done": true}' --multi`.
    Delete(query::DeleteArgs),
    /// Simulates candidate shard keys over a collection: documents, inserts and queries per
    /// shard on a cluster of N shards, before there is one.
    ShardAdvisor(advise::AdviseArgs),
    /// MongoDB's analyzeShardKey on a collection: the key's cardinality, frequency and
    /// monotonicity, and where the collection's sampled queries would go.
    AnalyzeShardKey(advise::AnalyzeArgs),
    /// MongoDB's configureQueryAnalyzer: turns sampling of a collection's queries on or off
    /// (applications that open the file then sample what they send).
    ConfigureQueryAnalyzer(advise::ConfigureArgs),
}

#[derive(Debug, clap::Args)]
// Command-line switches are bools by nature; each is its own flag.
#[allow(clippy::struct_excessive_bools)]
struct Serve {
    /// The folder of database files (created when missing).
    path: Option<PathBuf>,
    /// Keep every database in memory instead of a folder.
    #[arg(long, conflicts_with = "path")]
    in_memory: bool,
    #[arg(long, default_value_t = 27017)]
    port: u16,
    /// The address to listen on. Anything but loopback needs --auth (or --insecure-no-auth).
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Present the server as a one-member replica set of this name (drivers then run
    /// transactions).
    #[arg(long)]
    replica_set: Option<String>,
    /// Require SCRAM-SHA-256 authentication.
    #[arg(long)]
    auth: bool,
    /// Create (or reset) this user in `admin` before serving, with the password in the
    /// environment variable named by --password-env.
    #[arg(long)]
    user: Option<String>,
    #[arg(long, default_value = "ODM_PASSWORD")]
    password_env: String,
    /// Listen on a non-loopback address without authentication.
    #[arg(long)]
    insecure_no_auth: bool,
    /// TLS certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM); needs --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Connections served at once; more are closed on arrival. The default is MongoDB's: 80%
    /// of the open-file limit (`ulimit -n`; raise it there for more), the rest left to
    /// database files.
    #[arg(long, default_value_t = odm_server::default_max_connections())]
    max_connections: usize,
    /// Seconds a SIGINT or SIGTERM lets running commands finish before the server stops (a
    /// second signal stops it at once); the `shutdown` command gives its own `timeoutSecs`.
    #[arg(long, default_value_t = 15)]
    shutdown_timeout: u64,
    /// With --auth, seconds a connection has to authenticate before it is closed.
    #[arg(long, default_value_t = 30)]
    auth_timeout: u64,
    /// The most logical sessions kept (MongoDB's maxSessions).
    #[arg(long, default_value_t = 1_000_000)]
    max_sessions: usize,
    /// The most sessions one connection may open.
    #[arg(long, default_value_t = 10_000)]
    max_sessions_per_connection: usize,
    /// Seconds an idle cursor is kept.
    #[arg(long, default_value_t = 600)]
    cursor_timeout: u64,
    /// Seconds a transaction may stay open.
    #[arg(long, default_value_t = 60)]
    transaction_lifetime: u64,
    /// Offer MongoDB's test commands (the `failCommand` fail point), for drivers' test suites;
    /// never on a server that holds data you care about.
    #[arg(long)]
    enable_test_commands: bool,
}

fn serve(args: Serve) -> Result<(), ToolError> {
    let storage = match (&args.path, args.in_memory) {
        (_, true) => Storage::in_memory(),
        (Some(path), false) => {
            std::fs::create_dir_all(path)
                .map_err(|e| ToolError(format!("cannot create {}: {e}", path.display())))?;
            Storage::in_folder(path.clone())
        }
        (None, false) => return Err(ToolError::new("give the folder to serve, or --in-memory")),
    };
    if let Some(user) = &args.user {
        let password = std::env::var(&args.password_env).map_err(|_| {
            ToolError(format!(
                "--user needs the password in the environment variable {}",
                args.password_env
            ))
        })?;
        auth::put_user(&storage, "admin", user, &password).map_err(|e| ToolError(e.to_string()))?;
    }
    let config = Config {
        bind: SocketAddr::new(args.bind, args.port),
        replica_set: args.replica_set,
        auth: args.auth,
        insecure_no_auth: args.insecure_no_auth,
        tls: match (args.tls_cert, args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            _ => None,
        },
        max_connections: args.max_connections,
        shutdown_timeout: Duration::from_secs(args.shutdown_timeout),
        auth_timeout: Duration::from_secs(args.auth_timeout),
        max_sessions: args.max_sessions,
        max_sessions_per_connection: args.max_sessions_per_connection,
        cursor_timeout: Duration::from_secs(args.cursor_timeout),
        transaction_lifetime: Duration::from_secs(args.transaction_lifetime),
        argv: std::env::args().collect(),
        test_commands: args.enable_test_commands,
        ..Config::default()
    };
    let server = Server::bind(storage, config).map_err(|e| ToolError(e.to_string()))?;
    stop_on_signals(server.shared().clone())?;
    eprintln!("odm serve: listening on {}", server.local_addr());
    server.run();
    eprintln!("odm serve: stopped");
    Ok(())
}

/// SIGINT or SIGTERM stops the server gracefully (see `odm_server::shutdown`); a second one
/// exits at once, with the status a shell gives a process killed by that signal.
fn stop_on_signals(shared: Arc<odm_server::Shared>) -> Result<(), ToolError> {
    use tokio::signal::unix::{SignalKind, signal};
    let cannot = |e: std::io::Error| ToolError(format!("cannot watch for signals: {e}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(cannot)?;
    // Registered now, before serving, so that no signal between here and the thread's start
    // takes the default action.
    let (mut interrupt, mut terminate) = runtime
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .map_err(cannot)?;
    std::thread::Builder::new()
        .name("odm-signals".into())
        .spawn(move || {
            runtime.block_on(async {
                let mut next = async || {
                    tokio::select! {
                        _ = interrupt.recv() => 2,
                        _ = terminate.recv() => 15,
                    }
                };
                next().await;
                eprintln!(
                    "odm serve: stopping; running commands have {} s to finish (a second signal \
                     stops at once)",
                    shared.config.shutdown_timeout.as_secs()
                );
                shared.shutdown.request(shared.config.shutdown_timeout);
                let signal: u8 = next().await;
                eprintln!("odm serve: stopped at once by a second signal");
                std::process::exit(128 + i32::from(signal));
            });
        })
        .map_err(cannot)?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                // Help and the version are what was asked for.
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            // clap's first line names the mistake; usage follows with --help.
            let rendered = e.to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("odm: {first} (see odm --help)");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::Import(args) => import::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Dump(args) => dump::run_dump(&args),
        Command::Restore(args) => dump::run_restore(&args),
        Command::Stats(args) => maintain::stats(&args),
        Command::Verify(args) => maintain::verify(&args),
        Command::Compact(args) => maintain::compact(&args),
        Command::Indexes(command) => maintain::indexes(&command),
        Command::Ttl(args) => maintain::ttl(&args),
        Command::Find(args) => query::find(&args),
        Command::Aggregate(args) => query::aggregate(&args),
        Command::Explain(args) => query::explain(&args),
        Command::Update(args) => query::update(&args),
        Command::Delete(args) => query::delete(&args),
        Command::ShardAdvisor(args) => advise::run(&args),
        Command::AnalyzeShardKey(args) => advise::analyze(&args),
        Command::ConfigureQueryAnalyzer(args) => advise::configure(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("odm: {}", odm_cli::one_line(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}
