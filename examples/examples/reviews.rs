//! S9 on `Bucket`: a user's book reviews in monthly buckets, written by an application in a
//! few lines instead of by hand (the library example does S9 the source documents' way, with
//! `_id: "bob-201210"` and an anchored regex).
//!
//! `cargo run --release --example reviews`

use bson::DateTime;
use bson::oid::ObjectId;
use odm::{Database, Embedded};
use odm_patterns::{Bucket, BucketOptions, Span};
use serde::{Deserialize, Serialize};

/// One review, as the application defines it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
struct Review {
    id: ObjectId,
    book: String,
    stars: i32,
    at: DateTime,
}

fn day(date: &str) -> DateTime {
    DateTime::parse_rfc3339_str(format!("{date}T12:00:00Z")).expect("a date")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::in_memory()?;
    let r = Review::fields();
    // The whole pattern: reviews per user, one bucket per calendar month, the stars summarised.
    let reviews: Bucket<String, Review> = Bucket::open(
        &db,
        "reviews",
        BucketOptions::new()
            .span(Span::Month, &r.at)
            .summary(&r.stars),
    )?;

    let books = ["Dune", "Emma", "Ubik", "Kim", "Nana"];
    let mut first = None;
    for (month, dates) in [
        ("2012-08", ["03", "11", "19", "27"]),
        ("2012-09", ["02", "09", "16", "30"]),
        ("2012-10", ["01", "08", "15", "31"]),
    ] {
        for (i, date) in dates.iter().enumerate() {
            let review = Review {
                id: ObjectId::new(),
                book: books[(i + month.len()) % books.len()].to_owned(),
                stars: 1 + (i as i32 + i32::from(month.ends_with('9')) * 2) % 5,
                at: day(&format!("{month}-{date}")),
            };
            first.get_or_insert(review.id);
            reviews.push("bob", &review)?;
        }
    }
    let months = reviews.spans("bob")?;
    println!("S9: bob's 12 reviews in {} monthly buckets", months.len());
    assert_eq!(months.len(), 3);

    // The 10 most recent: the newest buckets first, two or three documents read.
    let latest = reviews.newest("bob", 0, 10)?;
    let explain = reviews.read("bob").newest_first().limit(10).explain()?;
    println!(
        "  the 10 most recent, newest {} on {}: {} bucket(s) read via {}",
        latest[0].book,
        latest[0].at,
        explain.docs_examined,
        explain.index_used().unwrap_or("a scan")
    );
    assert_eq!(latest.len(), 10);
    assert_eq!(latest[0].at, day("2012-10-31"));

    // September's reviews: the month's bucket only, bounded by the span index.
    let september = reviews
        .read("bob")
        .time(day("2012-09-01"), day("2012-10-01"))
        .to_vec()?;
    println!("  September: {} reviews", september.len());
    assert_eq!(september.len(), 4);

    // Five-star reviews: months whose best review has fewer stars are skipped unread.
    let five = reviews.read("bob").between(&r.stars, 5, 5).to_vec()?;
    let explain = reviews.read("bob").between(&r.stars, 5, 5).explain()?;
    println!(
        "  five-star reviews: {} from {} bucket(s) whose stars reach 5",
        five.len(),
        explain.returned
    );
    assert!(five.iter().all(|review| review.stars == 5));

    // Delete one review by id ($pull); the order of the rest does not change.
    let id = first.expect("a review");
    assert_eq!(reviews.remove("bob", r.id.eq(id))?, 1);
    assert_eq!(reviews.count("bob")?, 11);
    println!(
        "  one review deleted with $pull by id: {} left",
        reviews.count("bob")?
    );
    Ok(())
}
