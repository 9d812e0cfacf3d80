//! Typed end-to-end tests over the source documents' designs: S8 (reviews three ways), S12
//! (relationships), S14 (single-collection inheritance), S18 (one-to-few, one-to-many,
//! one-to-squillions) and S19 (CMS). Each asserts results and, where an index should serve,
//! explain's plan.

use bson::DateTime;
use odm::{Document, Embedded, Filter, ModifyOptions, Projection, Sort, Update};
use serde::{Deserialize, Serialize};

fn index_of<T: Document>(find: odm::Find<T>) -> Option<String> {
    let explain = find.explain().expect("explain");
    explain.index_used().map(str::to_owned)
}

// S8: reviews in their own collection, embedded in the user, embedded in the book.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "reviews", index(keys(book = 1, stars = -1)))]
struct ReviewDoc {
    #[odm(id)]
    id: i64,
    #[odm(index)]
    user: String,
    book: String,
    stars: i32,
    text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct EmbeddedReview {
    book: String,
    stars: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "readers", index(keys("reviews.book" = 1)))]
struct Reader {
    #[odm(id)]
    name: String,
    #[odm(embedded)]
    reviews: Vec<EmbeddedReview>,
}

#[test]
fn s8_reviews_three_ways() {
    let db = odm::testing::database().unwrap();
    let reviews = db.collection::<ReviewDoc>().unwrap();
    let r = ReviewDoc::fields();
    for (id, user, book, stars) in [
        (1, "ann", "dune", 5),
        (2, "bob", "dune", 3),
        (3, "ann", "emma", 4),
    ] {
        reviews
            .insert_one(&ReviewDoc {
                id,
                user: user.into(),
                book: book.into(),
                stars,
                text: String::new(),
            })
            .unwrap();
    }
    // Separate collection: a book's reviews, best first, straight from the compound index.
    let best = reviews.find(r.book.eq("dune")).sort(Sort::desc(&r.stars));
    assert_eq!(
        index_of(reviews.find(r.book.eq("dune")).sort(Sort::desc(&r.stars))),
        Some("book_1_stars_-1".into())
    );
    let stars: Vec<i32> = best.to_vec().unwrap().iter().map(|x| x.stars).collect();
    assert_eq!(stars, [5, 3]);
    assert_eq!(
        index_of(reviews.find(r.user.eq("ann"))),
        Some("user_1".into())
    );

    // Embedded in the reader: one read gives a reader's reviews; a multikey index finds the
    // readers of a book.
    let readers = db.collection::<Reader>().unwrap();
    let f = Reader::fields();
    readers
        .upsert_one(
            f.name.eq("ann"),
            f.reviews.push(EmbeddedReview {
                book: "dune".into(),
                stars: 5,
            }),
        )
        .unwrap();
    readers
        .upsert_one(
            f.name.eq("ann"),
            f.reviews.push(EmbeddedReview {
                book: "emma".into(),
                stars: 4,
            }),
        )
        .unwrap();
    let ann = readers.get("ann").unwrap().unwrap();
    assert_eq!(ann.reviews.len(), 2);
    let of_dune = readers.find(f.reviews.book.eq("dune"));
    assert_eq!(
        index_of(readers.find(f.reviews.book.eq("dune"))),
        Some("reviews.book_1".into())
    );
    assert_eq!(of_dune.to_vec().unwrap().len(), 1);
    // Positional update of the matched review.
    readers
        .update_one(
            f.name.eq("ann").and(f.reviews.book.eq("emma")),
            f.reviews.matched().stars.set(2),
        )
        .unwrap();
    let ann = readers.get("ann").unwrap().unwrap();
    assert_eq!(ann.reviews[1].stars, 2);
}

// S12 and S18: relationships by reference, one-to-many with $in, one-to-squillions.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "products")]
struct Product {
    #[odm(id)]
    id: i64,
    name: String,
    parts: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "parts")]
struct Part {
    #[odm(id)]
    id: i64,
    name: String,
    price: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "logs", index(keys(host = 1, time = -1)))]
struct LogMessage {
    #[odm(id)]
    id: i64,
    host: String,
    time: DateTime,
    message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Address {
    street: String,
    city: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "people", index(keys("addresses.city" = 1)))]
struct Person {
    #[odm(id)]
    id: i64,
    name: String,
    #[odm(embedded)]
    addresses: Vec<Address>,
}

#[test]
fn s12_s18_relationships_one_to_few_many_and_squillions() {
    let db = odm::testing::database().unwrap();
    // One-to-few: addresses embedded in the person, found by a multikey index.
    let people = db.collection::<Person>().unwrap();
    people
        .insert_one(&Person {
            id: 1,
            name: "kate".into(),
            addresses: vec![
                Address {
                    street: "1 Main".into(),
                    city: "Oslo".into(),
                },
                Address {
                    street: "2 Side".into(),
                    city: "Bergen".into(),
                },
            ],
        })
        .unwrap();
    let p = Person::fields();
    assert_eq!(
        index_of(people.find(p.addresses.city.eq("Bergen"))),
        Some("addresses.city_1".into())
    );
    assert_eq!(
        people
            .find(p.addresses.city.eq("Bergen"))
            .to_vec()
            .unwrap()
            .len(),
        1
    );

    // One-to-many: an array of part ids, joined by the application with $in on `_id`.
    let products = db.collection::<Product>().unwrap();
    let parts = db.collection::<Part>().unwrap();
    for (id, name, price) in [(10, "bolt", 0.1), (11, "nut", 0.05), (12, "gear", 3.0)] {
        parts
            .insert_one(&Part {
                id,
                name: name.into(),
                price,
            })
            .unwrap();
    }
    products
        .insert_one(&Product {
            id: 1,
            name: "widget".into(),
            parts: vec![10, 12],
        })
        .unwrap();
    let widget = products.get(1).unwrap().unwrap();
    let pf = Part::fields();
    let joined = parts.find(pf.id.is_in(widget.parts.clone()));
    let explain = parts
        .find(pf.id.is_in(widget.parts.clone()))
        .explain()
        .unwrap();
    assert!(explain.to_string().contains("_id lookup"), "{explain}");
    let names: Vec<String> = joined
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|x| x.name)
        .collect();
    assert_eq!(names, ["bolt", "gear"]);
    // Products using a part: the many side queried by value-in-array.
    let pr = Product::fields();
    assert_eq!(products.count(pr.parts.contains(12)).unwrap(), 1);

    // One-to-squillions: the child carries the parent's id; latest messages of a host come
    // from the compound index in order, limited, without a sort in memory.
    let logs = db.collection::<LogMessage>().unwrap();
    for i in 0..50 {
        logs.insert_one(&LogMessage {
            id: i,
            host: if i % 2 == 0 {
                "web1".into()
            } else {
                "web2".into()
            },
            time: DateTime::from_millis(1_000 * i),
            message: format!("m{i}"),
        })
        .unwrap();
    }
    let l = LogMessage::fields();
    let latest = || {
        logs.find(l.host.eq("web1"))
            .sort(Sort::desc(&l.time))
            .limit(3)
    };
    let explain = latest().explain().unwrap();
    assert_eq!(explain.index_used(), Some("host_1_time_-1"));
    assert!(!explain.in_memory_sort, "{explain}");
    assert_eq!(explain.keys_examined, 3);
    let ids: Vec<i64> = latest()
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, [48, 46, 44]);
}

// S14: one collection, several shapes; sparse indexes on the optional fields.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "items")]
struct Item {
    #[odm(id)]
    id: i64,
    #[serde(rename = "type")]
    kind: String,
    title: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[odm(index(sparse))]
    series_title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    volume: Option<i32>,
}

#[test]
fn s14_single_collection_inheritance_with_sparse_indexes() {
    let db = odm::testing::database().unwrap();
    let items = db.collection::<Item>().unwrap();
    let book = |id, title: &str| Item {
        id,
        kind: "book".into(),
        title: title.into(),
        series_title: None,
        volume: None,
    };
    let volume = |id, title: &str, series: &str, n| Item {
        id,
        kind: "series".into(),
        title: title.into(),
        series_title: Some(series.into()),
        volume: Some(n),
    };
    items
        .insert_many([
            &book(1, "Emma"),
            &volume(2, "Dune", "Dune Chronicles", 1),
            &volume(3, "Dune Messiah", "Dune Chronicles", 2),
            &book(4, "Persuasion"),
        ])
        .unwrap();
    let f = Item::fields();
    assert_eq!(f.kind.path(), "type");
    let series = items.find(f.series_title.eq("Dune Chronicles"));
    assert_eq!(
        index_of(items.find(f.series_title.eq("Dune Chronicles"))),
        Some("series_title_1".into())
    );
    assert_eq!(series.to_vec().unwrap().len(), 2);
    // The sparse index holds only the series: it can answer neither $exists: false nor null.
    let plain_books = items.find(f.series_title.exists(false));
    assert_eq!(index_of(items.find(f.series_title.exists(false))), None);
    let titles: Vec<String> = plain_books
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|i| i.title)
        .collect();
    assert_eq!(titles, ["Emma", "Persuasion"]);
    assert_eq!(items.count(f.kind.eq("series")).unwrap(), 2);
}

// S19: CMS posts with tags, votes once per user, comments by author, titles-only projection.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Comment {
    who: String,
    text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct User {
    #[odm(id)]
    #[serde(rename = "_id")]
    username: String,
    credits: i32,
}

#[test]
// Long on purpose: one S19 scenario told in order; each step reads the state the one before left.
#[allow(clippy::too_many_lines)]
fn s19_cms_votes_comments_projection_and_unique_usernames() {
    let db = odm::testing::database().unwrap();
    let posts = db.collection::<Post>().unwrap();
    let users = db.collection::<User>().unwrap();
    users
        .insert_one(&User {
            username: "ann".into(),
            credits: 10,
        })
        .unwrap();
    // Unique username registration: `_id` is the username.
    let again = users.insert_one(&User {
        username: "ann".into(),
        credits: 0,
    });
    assert!(matches!(
        again,
        Err(odm::Error::Engine(odm_engine::Error::DuplicateKey { .. }))
    ));
    for (id, tags) in [(1, vec!["rust", "db"]), (2, vec!["rust"])] {
        posts
            .insert_one(&Post {
                id,
                title: format!("post {id}"),
                author: "ann".into(),
                tags: tags.into_iter().map(String::from).collect(),
                votes: 0,
                voters: Vec::new(),
                comments: Vec::new(),
                posted: DateTime::from_millis(id * 1000),
            })
            .unwrap();
    }
    let f = Post::fields();
    // Vote once per user: the condition and the change in one atomic update.
    let vote = |user: &str| {
        posts
            .update_one(
                f.id.eq(1).and(f.voters.not_contains(user)),
                f.votes.inc(1).and(f.voters.push(user)),
            )
            .unwrap()
            .modified
    };
    assert_eq!((vote("bob"), vote("bob"), vote("cy")), (1, 0, 1));
    assert_eq!(posts.get(1).unwrap().unwrap().votes, 2);

    // Comments, found by author through the multikey index.
    posts
        .update_one(
            f.id.eq(2),
            f.comments.push(Comment {
                who: "dan".into(),
                text: "nice".into(),
            }),
        )
        .unwrap();
    assert_eq!(
        index_of(posts.find(f.comments.who.eq("dan"))),
        Some("comments.who_1".into())
    );
    // Titles only, by tag.
    let titles = posts
        .find(f.tags.contains("rust"))
        .sort(Sort::asc(&f.id))
        .project(&Projection::include(&f.title).without_id())
        .unwrap();
    assert_eq!(
        titles,
        [
            bson::doc! { "title": "post 1" },
            bson::doc! { "title": "post 2" }
        ]
    );
    // The latest post, then its author by a second query.
    let latest = posts
        .find(Filter::all())
        .sort(Sort::desc(&f.posted))
        .first()
        .unwrap()
        .unwrap();
    assert_eq!(latest.id, 2);
    assert_eq!(
        users.get(latest.author.as_str()).unwrap().unwrap().credits,
        10
    );
    // Conditional debit: only when the credit suffices.
    let u = User::fields();
    let debit = |amount: i32| {
        users
            .find_one_and_update(
                u.username.eq("ann").and(u.credits.gte(amount)),
                u.credits.inc(-amount),
                &ModifyOptions {
                    return_after: true,
                    ..ModifyOptions::default()
                },
            )
            .unwrap()
            .map(|user| user.credits)
    };
    assert_eq!((debit(7), debit(7)), (Some(3), None));
    // A raw update document still works where the typed API is not wanted.
    users
        .update_one(
            u.username.eq("ann"),
            Update::raw(bson::doc! { "$set": { "credits": 5 } }),
        )
        .unwrap();
    assert_eq!(users.get("ann").unwrap().unwrap().credits, 5);
    if let Some(engine) = db.engine() {
        assert!(engine.verify().unwrap().is_clean());
    }
}
