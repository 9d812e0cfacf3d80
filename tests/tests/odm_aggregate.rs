//! Typed aggregation (`Collection::aggregate`): S19's posts with tags, votes and comments,
//! grouped, unwound, reshaped and joined to S8's users. The property tests compare each typed
//! pipeline with the same report computed in Rust over the inserted values.

use std::collections::BTreeMap;

use odm::{Database, Document, Embedded, Error, Filter, Group, Reshape, Sort};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Comment {
    by: String,
    text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id)]
    id: i64,
    #[odm(index)]
    author: String,
    tags: Vec<String>,
    votes: i32,
    #[odm(embedded)]
    comments: Vec<Comment>,
}

/// Users keep their name as the id, which serde calls `name`, not `_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct User {
    #[odm(id)]
    name: String,
    karma: i64,
}

/// One author's line of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct ByAuthor {
    author: String,
    posts: u64,
    total: i64,
    mean: f64,
    least: i32,
    most: i32,
    first_id: i64,
    last_id: i64,
    ids: Vec<i64>,
    tag_sets: Vec<Vec<String>>,
}

/// How often a tag is used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct TagCount {
    #[serde(rename = "_id")]
    tag: String,
    uses: i64,
}

/// Uses per tag, no tag (`None`) included.
#[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
struct Uses {
    #[serde(rename = "_id")]
    tag: Option<String>,
    uses: i64,
}

fn post(id: i64, author: &str, tags: &[&str], votes: i32) -> Post {
    Post {
        id,
        author: author.to_owned(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        votes,
        comments: Vec::new(),
    }
}

/// The per-author report of a typed pipeline, authors in order.
fn by_author(posts: &odm::Collection<Post>, filter: Filter<Post>) -> odm::Result<Vec<ByAuthor>> {
    let (f, a) = (Post::fields(), ByAuthor::fields());
    posts
        .aggregate()
        .filter(filter)
        .sort(Sort::asc(&f.id))
        .group(
            Group::by(&a.author, &f.author)
                .count(&a.posts)
                .sum(&a.total, &f.votes)
                .avg(&a.mean, &f.votes)
                .min(&a.least, &f.votes)
                .max(&a.most, &f.votes)
                .first(&a.first_id, &f.id)
                .last(&a.last_id, &f.id)
                .push(&a.ids, &f.id)
                .add_to_set(&a.tag_sets, &f.tags),
        )
        .sort(Sort::asc(&a.author))
        .to_vec()
}

/// The same report computed in Rust.
fn by_author_in_rust(posts: &[Post], keep: impl Fn(&Post) -> bool) -> Vec<ByAuthor> {
    let mut groups: BTreeMap<&str, Vec<&Post>> = BTreeMap::new();
    let mut sorted: Vec<&Post> = posts.iter().filter(|p| keep(p)).collect();
    sorted.sort_by_key(|p| p.id);
    for p in sorted {
        groups.entry(&p.author).or_default().push(p);
    }
    groups
        .into_iter()
        .map(|(author, group)| {
            let total: i64 = group.iter().map(|p| i64::from(p.votes)).sum();
            let mut tag_sets: Vec<Vec<String>> = Vec::new();
            for p in &group {
                if !tag_sets.contains(&p.tags) {
                    tag_sets.push(p.tags.clone());
                }
            }
            #[allow(clippy::cast_precision_loss)]
            let mean = total as f64 / group.len() as f64;
            ByAuthor {
                author: author.to_owned(),
                posts: group.len() as u64,
                total,
                mean,
                least: group.iter().map(|p| p.votes).min().unwrap(),
                most: group.iter().map(|p| p.votes).max().unwrap(),
                first_id: group[0].id,
                last_id: group[group.len() - 1].id,
                ids: group.iter().map(|p| p.id).collect(),
                tag_sets,
            }
        })
        .collect()
}

/// `$addToSet` keeps no order: compare its sets sorted.
fn sets_sorted(mut rows: Vec<ByAuthor>) -> Vec<ByAuthor> {
    for row in &mut rows {
        row.tag_sets.sort();
    }
    rows
}

fn arbitrary_posts() -> impl Strategy<Value = Vec<Post>> {
    let authors = prop::sample::select(vec!["ann", "bob", "cy", "dee"]);
    let tags = prop::collection::vec(prop::sample::select(vec!["rust", "db", "go", "ops"]), 0..4);
    prop::collection::vec((authors, tags, -5i32..50), 0..40).prop_map(|rows| {
        rows.into_iter()
            .enumerate()
            .map(|(i, (author, tags, votes))| post(i as i64, author, &tags, votes))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every accumulator gives what Rust computes over the same posts, with and without a
    /// leading filter (which runs over the `author` index).
    #[test]
    fn s19_grouped_reports_equal_rust_computations(posts in arbitrary_posts(), floor in -5i32..50) {
        let db = Database::in_memory().unwrap();
        let coll = db.collection::<Post>().unwrap();
        coll.insert_many(&posts).unwrap();
        let f = Post::fields();
        prop_assert_eq!(
            sets_sorted(by_author(&coll, Filter::all()).unwrap()),
            sets_sorted(by_author_in_rust(&posts, |_| true))
        );
        prop_assert_eq!(
            sets_sorted(by_author(&coll, f.votes.gte(floor).and(f.author.ne("dee"))).unwrap()),
            sets_sorted(by_author_in_rust(&posts, |p| p.votes >= floor && p.author != "dee"))
        );
    }

    /// `$unwind` of the tags, then a count per tag: each use of a tag is counted once.
    #[test]
    fn s19_unwound_tags_count_each_use(posts in arbitrary_posts()) {
        let db = Database::in_memory().unwrap();
        let coll = db.collection::<Post>().unwrap();
        coll.insert_many(&posts).unwrap();
        let (f, t) = (Post::fields(), TagCount::fields());
        let counted = coll
            .aggregate()
            .unwind(&f.tags)
            .group(Group::by(&t.tag, &f.tags.unwound()).count(&t.uses))
            .sort(Sort::asc(&t.tag))
            .to_vec()
            .unwrap();
        let mut expected: BTreeMap<&str, i64> = BTreeMap::new();
        for tag in posts.iter().flat_map(|p| &p.tags) {
            *expected.entry(tag).or_default() += 1;
        }
        let expected: Vec<TagCount> = expected
            .into_iter()
            .map(|(tag, uses)| TagCount { tag: tag.to_owned(), uses })
            .collect();
        prop_assert_eq!(&counted, &expected);
        // Streaming gives the same results as `to_vec`.
        let streamed: Vec<TagCount> = coll
            .aggregate()
            .unwind(&f.tags)
            .group(Group::by(&t.tag, &f.tags.unwound()).count(&t.uses))
            .sort(Sort::asc(&t.tag))
            .iter()
            .unwrap()
            .collect::<odm::Result<_>>()
            .unwrap();
        prop_assert_eq!(streamed, expected);
        // Kept empty: a post without tags passes on once, as a group of its own (no tag).
        let u = Uses::fields();
        let untagged = coll
            .aggregate()
            .unwind_keeping_empty(&f.tags)
            .stage_into::<Uses>(bson::doc! {
                "$group": { "_id": "$tags", "uses": { "$sum": 1 } }
            })
            .filter(u.tag.eq(None::<String>))
            .first()
            .unwrap()
            .map_or(0, |g| g.uses);
        prop_assert_eq!(untagged, posts.iter().filter(|p| p.tags.is_empty()).count() as i64);
    }
}

/// An output field inside an embedded value, and a group of everything.
#[test]
fn s19_outputs_may_be_paths_into_embedded_values() {
    #[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
    struct Stats {
        total: i64,
        best: i32,
    }
    #[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
    struct Summary {
        posts: i64,
        #[odm(embedded)]
        stats: Stats,
        authors: Vec<String>,
    }
    let db = Database::in_memory().unwrap();
    let coll = db.collection::<Post>().unwrap();
    coll.insert_many(&[
        post(1, "ann", &["rust"], 3),
        post(2, "bob", &[], 10),
        post(3, "ann", &["db"], -1),
    ])
    .unwrap();
    let (f, s) = (Post::fields(), Summary::fields());
    let aggregate = coll.aggregate().group(
        Group::all()
            .count(&s.posts)
            .sum(&s.stats.total, &f.votes)
            .max(&s.stats.best, &f.votes)
            .add_to_set(&s.authors, &f.author),
    );
    // The dotted outputs are computed under temporaries and moved into place.
    assert_eq!(aggregate.pipeline().unwrap().len(), 3);
    let mut summary = aggregate.first().unwrap().unwrap();
    summary.authors.sort();
    assert_eq!(
        summary,
        Summary {
            posts: 3,
            stats: Stats {
                total: 12,
                best: 10
            },
            authors: vec!["ann".into(), "bob".into()],
        }
    );
}

/// `$project` into an output type, from top-level fields and fields of unwound subdocuments;
/// the id is left out unless the output names it.
#[test]
fn s19_projections_fill_the_output_type() {
    #[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
    struct Line {
        who: String,
        commenter: String,
    }
    let db = Database::in_memory().unwrap();
    let coll = db.collection::<Post>().unwrap();
    let mut p = post(7, "ann", &["rust"], 3);
    p.comments.push(Comment {
        by: "bob".into(),
        text: "nice".into(),
    });
    coll.insert_one(&p).unwrap();
    let f = Post::fields();
    let (l, t) = (Line::fields(), TagCount::fields());
    let lines = coll
        .aggregate()
        .unwind(&f.comments)
        .project(
            Reshape::new()
                .field(&l.who, &f.author)
                .field(&l.commenter, &f.comments.by),
        )
        .to_vec()
        .unwrap();
    assert_eq!(
        lines,
        [Line {
            who: "ann".into(),
            commenter: "bob".into()
        }]
    );

    // An output field stored as `_id` keeps the id; without one, `_id` is left out.
    let kept = coll
        .aggregate()
        .project(
            Reshape::new()
                .field(&t.tag, &f.author)
                .field(&t.uses, &f.id),
        )
        .stage_into::<bson::Document>(bson::doc! { "$project": { "uses": 0 } })
        .to_vec()
        .unwrap();
    assert_eq!(kept, [bson::doc! { "_id": "ann" }]);
    let dropped = coll
        .aggregate()
        .project(Reshape::new().field(&l.who, &f.author))
        .stage_into::<bson::Document>(bson::doc! { "$project": { "who": 0 } })
        .to_vec()
        .unwrap();
    assert_eq!(dropped, [bson::doc! {}]);

    // Unwound documents named as the model they no longer are: a clear error naming the
    // output type and the document.
    let err = coll
        .aggregate()
        .unwind(&f.comments)
        .decode_as::<Post>()
        .to_vec()
        .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::AggregateOutput { .. }), "{message}");
    assert!(
        message.contains("Post") && message.contains("_id 7") && message.contains("comments"),
        "{message}"
    );
}

/// S8: posts joined to their authors' user documents, whose id serde calls `name`.
#[test]
fn s8_lookup_joins_users_whose_id_has_another_name() {
    #[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
    struct PostWithAuthor {
        #[serde(rename = "_id")]
        id: i64,
        author: String,
        votes: i32,
        user: Vec<User>,
    }
    let db = Database::in_memory().unwrap();
    let posts = db.collection::<Post>().unwrap();
    let users = db.collection::<User>().unwrap();
    posts
        .insert_many(&[post(1, "ann", &[], 3), post(2, "zed", &[], 1)])
        .unwrap();
    users
        .insert_many(&[
            User {
                name: "ann".into(),
                karma: 40,
            },
            User {
                name: "bob".into(),
                karma: 2,
            },
        ])
        .unwrap();
    let (f, u, j) = (Post::fields(), User::fields(), PostWithAuthor::fields());
    let joined = posts
        .aggregate()
        .lookup(&users, &f.author, &u.name, &j.user)
        .sort(Sort::asc(&j.id))
        .to_vec()
        .unwrap();
    assert_eq!(
        joined,
        [
            PostWithAuthor {
                id: 1,
                author: "ann".into(),
                votes: 3,
                user: vec![User {
                    name: "ann".into(),
                    karma: 40
                }],
            },
            PostWithAuthor {
                id: 2,
                author: "zed".into(),
                votes: 1,
                user: Vec::new(),
            },
        ]
    );
}

/// A pipeline of selecting stages decodes as the model itself; `count`, `first`, `explain`
/// and a value that cannot be written as BSON.
#[test]
fn s19_selecting_pipelines_decode_as_the_model() {
    #[derive(Debug, Serialize, Deserialize, Embedded)]
    struct Big {
        n: u64,
    }
    let db = Database::in_memory().unwrap();
    let coll = db.collection::<Post>().unwrap();
    let posts: Vec<Post> = (0..30)
        .map(|i| {
            post(
                i,
                ["ann", "bob", "cy"][(i % 3) as usize],
                &["rust"],
                i as i32,
            )
        })
        .collect();
    coll.insert_many(&posts).unwrap();
    let f = Post::fields();
    let top: Vec<Post> = coll
        .aggregate()
        .filter(f.author.eq("bob"))
        .sort(Sort::desc(&f.votes))
        .skip(1)
        .limit(2)
        .to_vec()
        .unwrap();
    assert_eq!(top, [posts[25].clone(), posts[22].clone()]);
    assert_eq!(
        coll.aggregate().filter(f.author.eq("cy")).count().unwrap(),
        10
    );
    assert_eq!(
        coll.aggregate()
            .filter(f.author.eq("nobody"))
            .count()
            .unwrap(),
        0
    );
    assert_eq!(
        coll.aggregate()
            .filter(f.votes.gt(27))
            .first()
            .unwrap()
            .map(|p| p.id),
        Some(28)
    );
    // The leading filter runs over the declared `author` index.
    let explain = coll
        .aggregate()
        .filter(f.author.eq("ann"))
        .explain()
        .unwrap();
    let text = format!("{explain:?}");
    assert!(text.contains("author_1"), "{text}");

    // A `u64` above `i64::MAX` cannot be stored: running reports it, and nothing runs.
    let err = coll
        .aggregate()
        .filter(f.votes.eq(1))
        .stage_into::<Big>(bson::doc! { "$project": { "n": "$votes" } })
        .decode_as::<Big>()
        .filter(Big::fields().n.eq(u64::MAX))
        .to_vec();
    assert!(
        matches!(&err, Err(Error::Serialize { source, .. })
            if matches!(&**source, odm::BuildError::UnwritableAt { path, .. } if path == "n")),
        "{err:?}"
    );
}

/// A stream stops reading when dropped, and sees one snapshot.
#[test]
fn s19_aggregate_streams_from_one_snapshot() {
    let db = Database::in_memory().unwrap();
    let coll = db.collection::<Post>().unwrap();
    let posts: Vec<Post> = (0..1000).map(|i| post(i, "ann", &[], 1)).collect();
    coll.insert_many(&posts).unwrap();
    let f = Post::fields();
    let mut stream = coll.aggregate().sort(Sort::asc(&f.id)).iter().unwrap();
    coll.insert_one(&post(5000, "late", &[], 1)).unwrap();
    assert_eq!(stream.next().unwrap().unwrap().id, 0);
    let rest: Vec<Post> = stream.collect::<odm::Result<_>>().unwrap();
    assert_eq!(rest.len(), 999);
    let mut early = coll.aggregate().iter().unwrap();
    assert!(early.next().is_some());
    drop(early);
}

/// `allow_disk_use(false)` reaches the engine from the typed API: a find and an aggregation
/// sorting 110 MiB (past the 100 MiB budget) fail with MongoDB's 292, and spill by default.
#[test]
fn allow_disk_use_false_refuses_sorts_past_the_budget() {
    let db = Database::in_memory().unwrap();
    let coll = db.collection::<User>().unwrap();
    let big: Vec<User> = (0..110)
        .map(|i| User {
            name: format!("{i:03}{}", "x".repeat(1 << 20)),
            karma: i,
        })
        .collect();
    coll.insert_many(&big).unwrap();
    let f = User::fields();
    let sorted = || coll.aggregate().sort(Sort::desc(&f.karma));
    assert_eq!(sorted().to_vec().unwrap().len(), 110);
    let err = sorted().allow_disk_use(false).to_vec().unwrap_err();
    assert_eq!(err.code(), Some(292), "{err}");
    let found = || coll.find(Filter::all()).sort(Sort::desc(&f.karma));
    assert_eq!(found().to_vec().unwrap()[0].karma, 109);
    let err = found().allow_disk_use(false).to_vec().unwrap_err();
    assert_eq!(err.code(), Some(292), "{err}");
}
