//! The database a test runs on, chosen by the environment, so that one suite runs once per
//! back end: the embedded engine in memory, or, when [`MONGODB_URI`] names a MongoDB
//! deployment (`odm serve`, a replica set, a `mongos`), a database of its own there.
//!
//! Each remote database is named `odm_test_<process>_<time>_<count>`, so that concurrent
//! tests and runs never share one; a real deployment keeps them after the run (drop them
//! with `db.getMongo().getDBNames()` in mongosh, or the `dropDatabase` command). The test
//! database replaces the one the connection string names, which is also where the driver
//! authenticates unless it names an `authSource`.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::database::Database;
use crate::error::Result;

/// The environment variable naming the MongoDB deployment the suites run against.
pub const MONGODB_URI: &str = "ODM_MONGODB_URI";

/// Whether the suites run against a MongoDB deployment.
pub fn remote() -> bool {
    std::env::var_os(MONGODB_URI).is_some_and(|uri| !uri.is_empty())
}

/// A fresh, empty database on the back end the environment chooses.
pub fn database() -> Result<Database> {
    match fresh_uri() {
        Some(uri) => connect(&uri),
        None => Database::in_memory(),
    }
}

/// [`database`] for the async API. On MongoDB its client is one of the calling task's tokio
/// runtime ([`crate::aio::Database::connect`]), so call it on the runtime the test runs on.
#[cfg(feature = "async")]
pub async fn aio_database() -> Result<crate::aio::Database> {
    match fresh_uri() {
        Some(uri) => aio_connect(&uri).await,
        None => crate::aio::Database::in_memory().await,
    }
}

#[cfg(all(feature = "async", feature = "mongodb"))]
async fn aio_connect(uri: &str) -> Result<crate::aio::Database> {
    crate::aio::Database::connect(uri).await
}

#[cfg(all(feature = "async", not(feature = "mongodb")))]
#[allow(
    clippy::unused_async,
    reason = "the signature of the `mongodb` feature's form, which awaits the connect"
)]
async fn aio_connect(uri: &str) -> Result<crate::aio::Database> {
    connect(uri).map(crate::aio::Database::from_sync)
}

/// The connection string of a fresh database on the deployment [`MONGODB_URI`] names, if any.
pub fn fresh_uri() -> Option<String> {
    match std::env::var(MONGODB_URI) {
        Ok(uri) if !uri.is_empty() => Some(with_database(&uri, &fresh_name())),
        _ => None,
    }
}

#[cfg(feature = "mongodb")]
fn connect(uri: &str) -> Result<Database> {
    Database::connect(uri)
}

#[cfg(not(feature = "mongodb"))]
fn connect(_uri: &str) -> Result<Database> {
    Err(crate::Error::Driver {
        reason: format!("{MONGODB_URI} is set, but odm was built without its `mongodb` feature"),
        transient: false,
    })
}

fn fresh_name() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!(
        "odm_test_{}_{}_{}",
        std::process::id(),
        time % 1_000_000_000,
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The connection string with its database replaced by `name`:
/// `mongodb://h:1/?replicaSet=rs` becomes `mongodb://h:1/name?replicaSet=rs`.
pub fn with_database(uri: &str, name: &str) -> String {
    let hosts_start = uri.find("://").map_or(0, |i| i + 3);
    let rest = &uri[hosts_start..];
    let hosts_end = rest.find(['/', '?']).map_or(uri.len(), |i| hosts_start + i);
    let options = uri[hosts_end..]
        .find('?')
        .map_or("", |i| &uri[hosts_end + i..]);
    format!("{}/{name}{options}", &uri[..hosts_end])
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_of_a_connection_string_is_replaced_and_its_options_kept() {
        let cases = [
            ("mongodb://h:1", "mongodb://h:1/t"),
            ("mongodb://h:1/", "mongodb://h:1/t"),
            ("mongodb://h:1/app", "mongodb://h:1/t"),
            (
                "mongodb://h:1/?replicaSet=rs",
                "mongodb://h:1/t?replicaSet=rs",
            ),
            (
                "mongodb://u:p@a:1,b:2/app?w=1",
                "mongodb://u:p@a:1,b:2/t?w=1",
            ),
            ("mongodb://h:1?tls=true", "mongodb://h:1/t?tls=true"),
        ];
        for (uri, expected) in cases {
            assert_eq!(with_database(uri, "t"), expected, "{uri}");
        }
    }
}
