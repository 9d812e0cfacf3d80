//! S1's inbox over HTTP (see `odm_examples::web` for the routes): an axum service on the async
//! API, with a server-sent-events feed of each reader's new messages.
//!
//! `cargo run --release --example inbox_web -- [--listen 127.0.0.1:3000] [--file inbox-web.redb | --mongodb URI]`
//!
//! On the embedded engine by default (the file is created when missing); on a MongoDB
//! deployment with `--mongodb` (for transactions, a replica set or a `mongos`; `odm serve
//! --replica-set rs0` will do). Then, for example:
//!
//! ```text
//! curl -N localhost:3000/inbox/ann/feed &
//! curl -d '{"from":"sam","to":["ann","bob"],"text":"hello"}' -H 'content-type: application/json' localhost:3000/messages
//! curl 'localhost:3000/inbox/bob?limit=10'
//! ```

use odm_examples::web::Service;

#[derive(Debug)]
struct Args {
    listen: String,
    file: String,
    mongodb: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        listen: "127.0.0.1:3000".into(),
        file: "inbox-web.redb".into(),
        mongodb: None,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => args.listen = value,
            "--file" => args.file = value,
            "--mongodb" => args.mongodb = Some(value),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let db = match &args.mongodb {
        Some(uri) => odm::aio::Database::connect(uri).await?,
        None => odm::aio::Database::open(&args.file).await?,
    };
    let service = Service::open(&db).await?;
    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    println!("inbox service on http://{}", listener.local_addr()?);
    axum::serve(listener, service.router())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
