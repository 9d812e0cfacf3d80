//! The library application (S7 to S12): books with an embedded publisher, reviews three ways,
//! monthly review buckets, a loan queue, recommendations and relationships.
//!
//! `cargo run --release --example library`

use bson::{DateTime, doc};
use odm::{Database, Document, Embedded, Filter, Projection, Sort, UpdateOptions};
use odm_patterns::Queue;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Publisher {
    name: String,
    city: String,
}

/// S7: a book with its publisher embedded, subjects and review counters.
#[derive(Debug, Clone, Serialize, Deserialize, Document)]
#[odm(collection = "books", index(keys("publisher.name" = 1)))]
struct Book {
    #[odm(id)]
    id: i64,
    #[odm(index(unique))]
    slug: String,
    title: String,
    #[odm(index)]
    subjects: Vec<String>,
    #[odm(embedded)]
    publisher: Publisher,
    recommendations: i64,
    authors: Vec<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Document)]
#[odm(collection = "authors")]
struct Author {
    #[odm(id)]
    id: i64,
    name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Review {
    id: i64,
    user: String,
    stars: i32,
}

/// S9: one bucket of reviews per user per month, `_id: "bob-201210"`.
#[derive(Debug, Clone, Serialize, Deserialize, Document)]
#[odm(collection = "review_months")]
struct ReviewMonth {
    #[odm(id)]
    #[serde(rename = "_id")]
    id: String,
    #[odm(embedded)]
    reviews: Vec<Review>,
}

/// S11: a user recommends a book once.
#[derive(Debug, Clone, Serialize, Deserialize, Document)]
#[odm(
    collection = "recommendations",
    index(keys(book = 1, user = 1), unique)
)]
struct Recommendation {
    #[odm(id)]
    id: bson::oid::ObjectId,
    book: i64,
    user: String,
}

fn explain_line<T: Document>(
    label: &str,
    find: odm::Find<T>,
) -> Result<(), Box<dyn std::error::Error>> {
    let e = find.explain()?;
    println!(
        "  {label}: {} returned, {} keys and {} documents examined, via {}",
        e.returned,
        e.keys_examined,
        e.docs_examined,
        e.index_used().unwrap_or("a collection scan")
    );
    Ok(())
}

// Long on purpose: an example reads top to bottom as the scenario it shows (S7); helpers would hide
// the steps a reader came for.
#[allow(clippy::too_many_lines)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::in_memory()?;
    let books = db.collection::<Book>()?;
    let authors = db.collection::<Author>()?;
    println!(
        "S7: books with the publisher embedded; indexes on slug, subjects (multikey), publisher.name"
    );
    for (id, name) in [
        (1, "Kristina Chodorow"),
        (2, "Jim Blandy"),
        (3, "Bill Karwin"),
    ] {
        authors.insert_one(&Author {
            id,
            name: name.into(),
        })?;
    }
    let book = |id: i64, slug: &str, subjects: &[&str], publisher: &str, authors: Vec<i64>| Book {
        id,
        slug: slug.into(),
        title: slug.replace('-', " "),
        subjects: subjects.iter().map(|s| (*s).to_owned()).collect(),
        publisher: Publisher {
            name: publisher.into(),
            city: "Sebastopol".into(),
        },
        recommendations: 0,
        authors,
    };
    books.insert_many([
        &book(
            1,
            "mongodb-the-definitive-guide",
            &["databases", "nosql"],
            "O'Reilly",
            vec![1],
        ),
        &book(
            2,
            "programming-rust",
            &["programming", "rust"],
            "O'Reilly",
            vec![2],
        ),
        &book(
            3,
            "sql-antipatterns",
            &["databases", "sql"],
            "Pragmatic",
            vec![3],
        ),
    ])?;
    let f = Book::fields();
    explain_line("by slug", books.find(f.slug.eq("programming-rust")))?;
    explain_line("by subject", books.find(f.subjects.contains("databases")))?;
    explain_line(
        "by publisher.name",
        books.find(f.publisher.name.eq("O'Reilly")),
    )?;

    println!("S8 and S12: reviews and authors by reference, joined by the application with $in");
    let first = books.get(1)?.ok_or("book 1")?;
    let a = Author::fields();
    let names: Vec<String> = authors
        .find(a.id.is_in(first.authors.clone()))
        .to_vec()?
        .into_iter()
        .map(|x| x.name)
        .collect();
    println!(
        "  authors of {}: {names:?} (one query for the book, one for its authors)",
        first.slug
    );

    println!("S9: reviews in monthly buckets per user");
    let months = db.collection::<ReviewMonth>()?;
    let m = ReviewMonth::fields();
    let mut next = 0;
    for month in ["201208", "201209", "201210"] {
        for stars in 1..=5 {
            next += 1;
            months.upsert_one(
                m.id.eq(format!("bob-{month}")),
                m.reviews.push(Review {
                    id: next,
                    user: "bob".into(),
                    stars,
                }),
            )?;
        }
    }
    let latest = months
        .find(Filter::raw(doc! { "_id": { "$regex": "^bob-" } }))
        .sort(Sort::desc(&m.id))
        .limit(2)
        .project(&Projection::from(doc! { "reviews": { "$slice": -10 } }))?;
    let count: usize = latest
        .iter()
        .map(|d| d.get_array("reviews").map_or(0, Vec::len))
        .sum();
    println!(
        "  the 10 most recent by an anchored regex on _id, newest month first: {count} reviews from 2 buckets"
    );
    explain_line(
        "anchored regex on _id",
        months.find(Filter::raw(doc! { "_id": { "$regex": "^bob-2012" } })),
    )?;
    months.update_one(
        m.id.eq("bob-201209"),
        m.reviews.pull_where(Review::fields().id.eq(7)),
    )?;
    println!("  review 7 removed with $pull by id");

    println!("S10: the loan queue, most urgent request first, timeouts put back");
    let loans: Queue<bson::Document> = Queue::open(&db, "loans")?;
    let now = DateTime::now();
    loans.push(&doc! { "borrower": "ann", "book": 2 }, 1, now)?;
    loans.push(&doc! { "borrower": "bob", "book": 1 }, 5, now)?;
    let (_, taken) = loans.take(now)?.ok_or("a request")?;
    println!("  taken first: {taken}");
    let a_week_later = DateTime::from_millis(now.timestamp_millis() + 8 * 86_400_000);
    println!(
        "  pending for more than 7 days and put back: {}",
        loans.requeue_expired(a_week_later, std::time::Duration::from_hours(7 * 24))?
    );

    println!("S11: a user recommends a book once; a counter on the book counts them");
    let recommendations = db.collection::<Recommendation>()?;
    let recommend = |user: &str, book: i64| -> Result<bool, Box<dyn std::error::Error>> {
        let done = db.write(|tx| {
            tx.insert_one(&Recommendation {
                id: bson::oid::ObjectId::new(),
                book,
                user: user.into(),
            })?;
            tx.update_one(
                f.id.eq(book),
                f.recommendations.inc(1),
                &UpdateOptions::default(),
            )?;
            Ok(())
        });
        Ok(done.is_ok())
    };
    let outcomes = [
        recommend("ann", 1)?,
        recommend("bob", 1)?,
        recommend("ann", 1)?,
    ];
    println!(
        "  ann, bob, ann again: {outcomes:?}; book 1 counts {} recommendations, {} stored",
        books.get(1)?.ok_or("book")?.recommendations,
        recommendations.count(Filter::all())?
    );
    Ok(())
}
