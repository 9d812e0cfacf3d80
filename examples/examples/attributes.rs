//! S3 indexed attributes, S4 multiple identities and S6 shard routing.
//!
//! `cargo run --release --example attributes`

use odm::engine::query::FindOptions;
use odm::{Database, Document};
use odm_patterns::{AttributeArray, Condition, Identity};
use serde::{Deserialize, Serialize};

/// S3a: attributes as a subdocument, one index per attribute.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "files_a", index(keys("attr.size" = 1)), index(keys("attr.kind" = 1)))]
struct FileA {
    #[odm(id)]
    id: i32,
    #[odm(embedded)]
    attr: FileAttrs,
}

/// S3b: the same files with their attributes as `{k, v}` pairs in one array.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "files_b")]
struct FileB {
    #[odm(id)]
    id: i64,
    #[serde(default)]
    #[odm(embedded)]
    attrs: Vec<odm_patterns::Attr>,
}

#[derive(Debug, Serialize, Deserialize, odm::Embedded)]
struct FileAttrs {
    #[serde(rename = "type")]
    kind: String,
    size: i64,
}

/// S4a: one document per user, an index per identity field, sharded by user id.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "users", shard_key(hashed(id)))]
struct User {
    #[odm(id)]
    id: i64,
    #[odm(index)]
    username: String,
    #[odm(index)]
    email: String,
}

// Long on purpose: an example reads top to bottom as the scenario it shows (S3b); helpers would
// hide the steps a reader came for.
#[allow(clippy::too_many_lines)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::in_memory()?;

    println!("S3a: attributes in a subdocument, an index per attribute");
    let files = db.collection::<FileA>()?;
    for i in 0..200 {
        files.insert_one(&FileA {
            id: i,
            attr: FileAttrs {
                kind: if i % 2 == 0 {
                    "text".into()
                } else {
                    "image".into()
                },
                size: i64::from(i) * 100,
            },
        })?;
    }
    let f = FileA::fields();
    let query = || files.find(f.attr.size.gt(64).and(f.attr.size.lte(16_384)));
    let explain = query().explain()?;
    println!(
        "  size in (64, 16384]: {} files via {}; a new attribute needs a new index",
        query().to_vec()?.len(),
        explain.index_used().unwrap_or("a scan")
    );

    println!("S3b: attributes as {{k, v}} pairs under one compound multikey index");
    let b = FileB::fields();
    let files_b = db.collection::<FileB>()?;
    let attributed = AttributeArray::open(&db, "files_b", &b.attrs)?;
    for i in 0..200_i64 {
        files_b.insert_one(&FileB {
            id: i,
            attrs: Vec::new(),
        })?;
        attributed.put(
            b.id.eq(i),
            "type",
            &if i % 2 == 0 { "text" } else { "image" },
        )?;
        attributed.put(b.id.eq(i), "size", &(i * 100))?;
        if i % 10 == 0 {
            attributed.put(b.id.eq(i), "color", &"blue")?;
        }
    }
    let range = Condition::Range {
        above: Some((bson::Bson::Int64(64), false)),
        below: Some((bson::Bson::Int64(16_384), true)),
    };
    let explain = attributed.explain_find("size", &range)?;
    println!(
        "  size in (64, 16384]: {} files via {}, {} keys examined; any attribute, the same index",
        attributed.find("size", &range).to_vec()?.len(),
        explain.index_used().unwrap_or("a scan"),
        explain.keys_examined
    );
    println!(
        "  color = blue: {} files",
        attributed
            .find("color", &Condition::Eq("blue".into()))
            .to_vec()?
            .len()
    );

    println!("S4a: identities as fields of the user, sharded by a hashed user id");
    let users = db.collection::<User>()?;
    users.insert_one(&User {
        id: 1,
        username: "ann".into(),
        email: "ann@example.org".into(),
    })?;
    let u = User::fields();
    let explain = users.find(u.email.eq("ann@example.org")).explain()?;
    println!(
        "  sign in by email: {} on a cluster ({}), and the email index cannot be unique there",
        explain.index_used().unwrap_or("a scan"),
        explain
            .routing
            .as_ref()
            .map(|(_, r)| r.to_string())
            .unwrap_or_default()
    );

    println!("S4b: a document per identity under a unique index, sharded by identifier");
    let identities: Identity<i64> = Identity::open(&db, "identities")?;
    identities.register(1, &[("username", "ann"), ("email", "ann@example.org")])?;
    let refused = identities.register(2, &[("username", "bob"), ("email", "ann@example.org")]);
    println!(
        "  sign in by email: two reads, finds {:?}; a second user claiming it: {}",
        identities
            .lookup(&users, "email", "ann@example.org")?
            .map(|user| user.username),
        if refused.is_err() {
            "refused, none of bob's identities kept"
        } else {
            "accepted"
        }
    );

    println!("S6: shard routing, from explain");
    let txn = db.engine().expect("an embedded database").read()?;
    let sharded = txn.collection("users")?.ok_or("users")?;
    for filter in [
        bson::doc! { "_id": 1_i64 },
        bson::doc! { "username": "ann" },
    ] {
        let explain = sharded.explain(&filter, &FindOptions::default())?;
        println!(
            "  {filter}: {}",
            explain
                .routing
                .as_ref()
                .map(|(_, r)| r.to_string())
                .unwrap_or_default()
        );
    }
    Ok(())
}
