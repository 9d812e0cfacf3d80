//! The later scenarios (S14 to S19): single-collection inheritance, bounded recommendations,
//! referrer counters both ways, shard keys for uploads, one-to-N with typed references, and
//! the CMS.
//!
//! `cargo run --release --example cms`

use bson::{DateTime, doc};
use odm::engine::query::FindOptions;
use odm::engine::update::UpdateOptions;
use odm::engine::{CollectionOptions, ShardKey};
use odm::{Database, Document, Embedded, Filter, Projection, Ref, Sort};
use serde::{Deserialize, Serialize};

/// S14: a book, one shape of the `items` collection.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Book {
    #[odm(id)]
    id: i64,
    title: String,
}

/// S14: a volume of a series, the other shape; its index holds volumes only (partial on the
/// discriminator, which the enum model adds).
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "items", index(keys(series_title = 1, volume = 1)))]
struct SeriesVolume {
    #[odm(id)]
    id: i64,
    title: String,
    series_title: String,
    volume: i32,
}

/// S14: both shapes in one collection, told apart by `type`.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "items")]
#[serde(tag = "type", rename_all = "lowercase")]
enum Item {
    Book(Book),
    #[serde(rename = "series")]
    Volume(SeriesVolume),
}

/// S15: at most ten recommendations per user.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "quotas")]
struct Quota {
    #[odm(id)]
    user: String,
    remaining: i32,
    books: Vec<i64>,
}

#[derive(Debug, Serialize, Deserialize, Embedded)]
struct Comment {
    who: String,
    text: String,
}

/// S19: posts with tags, votes and comments.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "posts", index(keys("comments.who" = 1)))]
struct Post {
    #[odm(id)]
    id: i64,
    title: String,
    author: String,
    #[odm(index)]
    tags: Vec<String>,
    votes: i32,
    voters: Vec<String>,
    #[odm(embedded)]
    comments: Vec<Comment>,
    #[odm(index)]
    posted: DateTime,
}

/// S18: the hosts that log messages.
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "hosts")]
struct Host {
    #[odm(id)]
    name: String,
    rack: i32,
}

/// S18: log messages of hosts, the one-to-squillions side carrying a typed reference to its
/// parent (stored as the host's `_id`).
#[derive(Debug, Serialize, Deserialize, Document)]
#[odm(collection = "logs", index(keys(host = 1, time = -1)))]
struct Log {
    #[odm(id)]
    id: i64,
    host: Ref<Host>,
    time: DateTime,
}

/// A message with its host loaded in place of the reference.
#[derive(Debug, Serialize, Deserialize, Embedded)]
struct LogWithHost {
    #[serde(rename = "_id")]
    id: i64,
    host: Option<Host>,
}

// Long on purpose: an example reads top to bottom as the scenario it shows (S14, S19); helpers
// would hide the steps a reader came for.
#[allow(clippy::too_many_lines)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::in_memory()?;

    println!("S14: several shapes in one collection, an enum model; an index of one shape only");
    let items = db.collection::<Item>()?;
    let volume = |id, title: &str, n| SeriesVolume {
        id,
        title: title.into(),
        series_title: "Dune Chronicles".into(),
        volume: n,
    };
    items.insert_many([
        &Item::Book(Book {
            id: 1,
            title: "Emma".into(),
        }),
        &Item::Volume(volume(2, "Dune", 1)),
    ])?;
    let volumes = items.variant::<SeriesVolume>();
    volumes.insert_one(&volume(3, "Dune Messiah", 2))?;
    let v = Item::fields().volume;
    let explain = volumes
        .find(v.series_title.eq("Dune Chronicles"))
        .explain()?;
    println!(
        "  volumes of the series: {} via {} (the index holds {} of 3 documents); books: {}",
        explain.returned,
        explain.index_used().unwrap_or("a scan"),
        explain.keys_examined,
        items.variant::<Book>().count(Filter::all())?
    );
    println!("S15: at most 10 recommendations per user, one conditional update each");
    let quotas = db.collection::<Quota>()?;
    quotas.insert_one(&Quota {
        user: "ann".into(),
        remaining: 2,
        books: Vec::new(),
    })?;
    let q = Quota::fields();
    let recommend = |book: i64| -> Result<u64, odm::Error> {
        Ok(quotas
            .update_one(
                q.user
                    .eq("ann")
                    .and(q.remaining.gt(0))
                    .and(q.books.not_contains(book)),
                q.remaining.inc(-1).and(q.books.push(book)),
            )?
            .modified)
    };
    let outcomes = [recommend(4)?, recommend(4)?, recommend(5)?, recommend(6)?];
    println!("  books 4, 4 again, 5, 6 with a quota of 2: modified {outcomes:?}");

    println!("S16: referrer counters, as an array with the positional $, and as a map with upsert");
    let engine = db.engine().expect("an embedded database");
    let hit = |domain: &str| -> Result<(), odm::engine::Error> {
        let page = engine.collection("pages_array");
        let counted = page.update_one(
            &doc! { "_id": "home", "referrers.domain": domain },
            &doc! { "$inc": { "referrers.$.count": 1 } },
            &UpdateOptions::default(),
        )?;
        if counted.matched == 0 {
            page.update_one(
                &doc! { "_id": "home" },
                &doc! { "$push": { "referrers": { "domain": domain, "count": 1 } } },
                &UpdateOptions {
                    upsert: true,
                    ..UpdateOptions::default()
                },
            )?;
        }
        // The map keys cannot hold dots: they are escaped.
        engine.collection("pages_map").update_one(
            &doc! { "_id": "home" },
            &doc! { "$inc": { format!("referrers.{}", domain.replace('.', "_")): 1 } },
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
        )?;
        Ok(())
    };
    for domain in ["example.org", "news.site", "example.org"] {
        hit(domain)?;
    }
    let show = |name: &str| -> Result<String, Box<dyn std::error::Error>> {
        let raw = engine.collection(name).get(&"home".into())?.ok_or("page")?;
        Ok(bson::Document::try_from(raw.as_ref())?.to_string())
    };
    println!(
        "  array: {}\n  map:   {}",
        show("pages_array")?,
        show("pages_map")?
    );

    println!("S17: shard keys for uploaded images, and which reads reach one shard");
    for (label, key) in [
        ("hashed _id", ShardKey::hashed("_id")?),
        (
            "owner then upload time",
            ShardKey::range(["owner", "uploaded"])?,
        ),
    ] {
        let name = format!("images_{}", label.split(' ').next().unwrap_or("x"));
        engine.write(|t| {
            t.create_collection_with(&name, CollectionOptions::default().with_shard_key(key))
        })?;
        engine
            .collection(&name)
            .insert_one(doc! { "owner": "ann", "uploaded": DateTime::now() })?;
        let txn = engine.read()?;
        let images = txn.collection(&name)?.ok_or("images")?;
        let route = |filter| -> Result<String, odm::engine::Error> {
            let e = images.explain(&filter, &FindOptions::default())?;
            Ok(e.routing.map(|(_, r)| r.to_string()).unwrap_or_default())
        };
        println!(
            "  {label}: one image by _id: {}; ann's images: {}",
            route(doc! { "_id": 1 })?,
            route(doc! { "owner": "ann" })?
        );
    }

    println!("S18: one-to-squillions, the child carries a reference to its parent");
    let hosts = db.collection::<Host>()?;
    let logs = db.collection::<Log>()?;
    for rack in 0..5 {
        hosts.insert_one(&Host {
            name: format!("web{rack}"),
            rack,
        })?;
    }
    for i in 0..500 {
        logs.insert_one(&Log {
            id: i,
            host: Ref::new(format!("web{}", i % 5)),
            time: DateTime::from_millis(i * 1000),
        })?;
    }
    let l = Log::fields();
    let web3: Ref<Host> = Ref::new("web3".to_owned());
    let explain = logs
        .find(l.host.eq(web3.clone()))
        .sort(Sort::desc(&l.time))
        .limit(10)
        .explain()?;
    println!(
        "  the latest 10 messages of one host: {} keys examined, sorted in memory: {}",
        explain.keys_examined, explain.in_memory_sort
    );
    let with_host = LogWithHost::fields();
    let latest = logs
        .aggregate()
        .filter(l.host.eq(web3))
        .sort(Sort::desc(&l.time))
        .limit(1)
        .populate_one_strict(&hosts, &l.host, &with_host.host)
        .first()?
        .ok_or("a message")?;
    println!(
        "  its latest message, {}, with its host populated by one $lookup: rack {}",
        latest.id,
        latest.host.map_or(-1, |h| h.rack)
    );

    println!("S19: the CMS: votes once per user, comments by author, titles only");
    let posts = db.collection::<Post>()?;
    for id in 1..=3 {
        posts.insert_one(&Post {
            id,
            title: format!("post {id}"),
            author: "ann".into(),
            tags: vec!["rust".into()],
            votes: 0,
            voters: Vec::new(),
            comments: Vec::new(),
            posted: DateTime::from_millis(id * 1000),
        })?;
    }
    let p = Post::fields();
    let vote = |user: &str| -> Result<u64, odm::Error> {
        Ok(posts
            .update_one(
                p.id.eq(1).and(p.voters.not_contains(user)),
                p.votes.inc(1).and(p.voters.push(user)),
            )?
            .modified)
    };
    println!(
        "  bob votes twice, cy once: modified {:?}",
        [vote("bob")?, vote("bob")?, vote("cy")?]
    );
    posts.update_one(
        p.id.eq(2),
        p.comments.push(Comment {
            who: "dan".into(),
            text: "nice".into(),
        }),
    )?;
    println!(
        "  posts dan commented on: {} via {}",
        posts.count(p.comments.who.eq("dan"))?,
        posts
            .find(p.comments.who.eq("dan"))
            .explain()?
            .index_used()
            .unwrap_or("a scan")
    );
    let titles = posts
        .find(Filter::all())
        .sort(Sort::desc(&p.posted))
        .project(&Projection::include(&p.title).without_id())?;
    let titles: Vec<&str> = titles
        .iter()
        .filter_map(|d| d.get_str("title").ok())
        .collect();
    println!("  titles, newest first: {titles:?}");
    Ok(())
}
