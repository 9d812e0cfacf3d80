//! Typed references (`Ref<T>`) and their population by one `$lookup`: S18's one-to-many
//! (product parts) and one-to-squillions (log lines carrying their host), S12's many-to-many
//! (books and authors referencing each other), dangling references, and, on the MongoDB back
//! end, the count of commands a populate sends (one, never one per document). Each test runs
//! on the back end `odm::testing::database()` chooses.

use odm::{Database, Document, Embedded, Error, Filter, Ref, Sort};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "parts")]
struct Part {
    #[odm(id)]
    sku: String,
    cost: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "products")]
struct Product {
    #[odm(id)]
    id: i64,
    name: String,
    parts: Vec<Ref<Part>>,
}

/// A product with its parts in place of their ids.
#[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
struct Assembled {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    parts: Vec<Part>,
}

fn part(sku: &str, cost: i64) -> Part {
    Part {
        sku: sku.into(),
        cost,
    }
}

fn refs(skus: &[&str]) -> Vec<Ref<Part>> {
    skus.iter().map(|s| Ref::new((*s).to_owned())).collect()
}

fn catalogue(db: &Database) -> (odm::Collection<Part>, odm::Collection<Product>) {
    let parts = db.collection::<Part>().unwrap();
    let products = db.collection::<Product>().unwrap();
    parts
        .insert_many(&[part("bolt", 2), part("nut", 1), part("gear", 9)])
        .unwrap();
    products
        .insert_many(&[
            Product {
                id: 1,
                name: "clock".into(),
                parts: refs(&["gear", "bolt"]),
            },
            Product {
                id: 2,
                name: "shelf".into(),
                parts: refs(&["bolt", "nut"]),
            },
        ])
        .unwrap();
    (parts, products)
}

/// S18 one-to-many: an array of references, joined in place of the ids.
#[test]
fn s18_a_products_parts_are_populated_in_place() {
    let db = odm::testing::database().unwrap();
    let (parts, products) = catalogue(&db);
    let (f, a) = (Product::fields(), Assembled::fields());
    let assembled = products
        .aggregate()
        .sort(Sort::asc(&f.id))
        .populate(&parts, &f.parts, &a.parts)
        .to_vec()
        .unwrap();
    assert_eq!(assembled.len(), 2);
    let mut clock: Vec<&str> = assembled[0].parts.iter().map(|p| p.sku.as_str()).collect();
    clock.sort_unstable();
    assert_eq!(clock, ["bolt", "gear"]);
    let cost: i64 = assembled[1].parts.iter().map(|p| p.cost).sum();
    assert_eq!((assembled[1].name.as_str(), cost), ("shelf", 3));
    // The stored product still holds ids.
    let stored = products.get(1).unwrap().unwrap();
    assert_eq!(stored.parts, refs(&["gear", "bolt"]));
    // A filter on a reference: the products using a bolt.
    let with_bolt = products
        .count(f.parts.contains(Ref::new("bolt".to_owned())))
        .unwrap();
    assert_eq!(with_bolt, 2);
}

#[test]
fn a_reference_to_no_document_is_left_out_or_refused_when_asked() {
    let db = odm::testing::database().unwrap();
    let (parts, products) = catalogue(&db);
    products
        .insert_one(&Product {
            id: 3,
            name: "ghost".into(),
            parts: refs(&["bolt", "spring"]),
        })
        .unwrap();
    let (f, a) = (Product::fields(), Assembled::fields());
    let lenient = products
        .aggregate()
        .filter(f.id.eq(3))
        .populate(&parts, &f.parts, &a.parts)
        .to_vec()
        .unwrap();
    assert_eq!(lenient[0].parts, [part("bolt", 2)]);

    let err = products
        .aggregate()
        .filter(f.id.eq(3))
        .populate_strict(&parts, &f.parts, &a.parts)
        .to_vec()
        .unwrap_err();
    let Error::DanglingReference {
        collection,
        id,
        field,
        missing,
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(
        (collection.as_str(), id.as_str(), field.as_str()),
        ("products", "3", "parts")
    );
    assert_eq!(missing, &["\"spring\""]);
    // The other products reference only stored parts.
    let strict = products
        .aggregate()
        .filter(f.id.lt(3))
        .populate_strict(&parts, &f.parts, &a.parts)
        .to_vec()
        .unwrap();
    assert_eq!(strict.len(), 2);
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "hosts")]
struct Host {
    #[odm(id)]
    id: i64,
    name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "log_lines", index(keys(host = 1, at = -1)))]
struct LogLine {
    #[odm(id)]
    id: i64,
    host: Option<Ref<Host>>,
    at: i64,
    text: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
struct LineWithHost {
    #[serde(rename = "_id")]
    id: i64,
    text: String,
    host: Option<Host>,
}

/// S18 one-to-squillions: each line references its host; a host's latest lines by the
/// reference, newest first; one line's host populated as a single document.
#[test]
fn s18_log_lines_reference_their_host() {
    let db = odm::testing::database().unwrap();
    let hosts = db.collection::<Host>().unwrap();
    let lines = db.collection::<LogLine>().unwrap();
    let web = Host {
        id: 1,
        name: "web".into(),
    };
    hosts.insert_one(&web).unwrap();
    let line = |id: i64, host: Option<Ref<Host>>| LogLine {
        id,
        host,
        at: id * 10,
        text: format!("line {id}"),
    };
    let all: Vec<LogLine> = (1..=30)
        .map(|i| line(i, Some(Ref::to(&web))))
        .chain([line(31, None), line(32, Some(Ref::new(99)))])
        .collect();
    lines.insert_many(&all).unwrap();

    let f = LogLine::fields();
    let latest = lines
        .find(f.host.eq(Some(Ref::to(&web))))
        .sort(Sort::desc(&f.at))
        .limit(3)
        .to_vec()
        .unwrap();
    assert_eq!(
        latest.iter().map(|l| l.id).collect::<Vec<_>>(),
        [30, 29, 28]
    );

    let w = LineWithHost::fields();
    let populated = lines
        .aggregate()
        .filter(f.id.gte(30))
        .sort(Sort::asc(&f.id))
        .populate_one(&hosts, &f.host, &w.host)
        .to_vec()
        .unwrap();
    let hosts_of: Vec<Option<&str>> = populated
        .iter()
        .map(|l| l.host.as_ref().map(|h| h.name.as_str()))
        .collect();
    assert_eq!(hosts_of, [Some("web"), None, None]);

    // Strict: no reference is fine, a reference to host 99 is not.
    let strict = lines
        .aggregate()
        .filter(f.id.gte(30).and(f.id.lte(31)))
        .populate_one_strict(&hosts, &f.host, &w.host)
        .to_vec()
        .unwrap();
    assert_eq!(strict.len(), 2);
    let err = lines
        .aggregate()
        .filter(f.id.eq(32))
        .populate_one_strict(&hosts, &f.host, &w.host)
        .to_vec()
        .unwrap_err();
    assert!(
        matches!(&err, Error::DanglingReference { missing, .. } if missing == &["99"]),
        "{err}"
    );
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "books")]
struct Book {
    #[odm(id)]
    id: i64,
    title: String,
    authors: Vec<Ref<Author>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "authors")]
struct Author {
    #[odm(id)]
    id: String,
    books: Vec<Ref<Book>>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
struct BookWithAuthors {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    writers: Vec<Author>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Embedded)]
struct AuthorWithBooks {
    #[serde(rename = "_id")]
    id: String,
    books: Vec<Book>,
}

/// S12 many-to-many: books and authors reference each other; each side populates the other.
#[test]
fn s12_books_and_authors_populate_each_other() {
    let db = odm::testing::database().unwrap();
    let books = db.collection::<Book>().unwrap();
    let authors = db.collection::<Author>().unwrap();
    let author = |id: &str, books: &[i64]| Author {
        id: id.into(),
        books: books.iter().map(|b| Ref::new(*b)).collect(),
    };
    let book = |id: i64, title: &str, by: &[&str]| Book {
        id,
        title: title.into(),
        authors: by.iter().map(|a| Ref::new((*a).to_owned())).collect(),
    };
    authors
        .insert_many(&[
            author("kernighan", &[1, 2]),
            author("ritchie", &[1]),
            author("pike", &[2]),
        ])
        .unwrap();
    books
        .insert_many(&[
            book(1, "The C Programming Language", &["kernighan", "ritchie"]),
            book(2, "The Practice of Programming", &["kernighan", "pike"]),
        ])
        .unwrap();
    let (b, bw) = (Book::fields(), BookWithAuthors::fields());
    let with_authors = books
        .aggregate()
        .sort(Sort::asc(&b.id))
        .populate(&authors, &b.authors, &bw.writers)
        .to_vec()
        .unwrap();
    let mut names: Vec<&str> = with_authors[1]
        .writers
        .iter()
        .map(|a| a.id.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["kernighan", "pike"]);

    let (a, aw) = (Author::fields(), AuthorWithBooks::fields());
    let kernighan = authors
        .aggregate()
        .filter(a.id.eq("kernighan"))
        .populate(&books, &a.books, &aw.books)
        .first()
        .unwrap()
        .unwrap();
    assert_eq!(kernighan.books.len(), 2);
    // The `$in` side of the relation: the authors of book 2, by the book's references.
    let of_two = books.get(2).unwrap().unwrap();
    let ids: Vec<String> = of_two.authors.iter().map(|r| r.id().clone()).collect();
    assert_eq!(authors.count(a.id.is_in(ids)).unwrap(), 2);
    assert_eq!(authors.count(Filter::all()).unwrap(), 3);
}

/// No N+1: populating 25 products sends one `aggregate` (counted by the server's profiler on
/// the test's own database). The embedded engine has no commands to count; the same call is
/// one pipeline there by construction.
#[test]
fn a_populate_sends_one_command_whatever_the_number_of_documents() {
    let Some(uri) = odm::testing::fresh_uri() else {
        return;
    };
    let db = Database::connect(&uri).unwrap();
    let (parts, products) = catalogue(&db);
    let more: Vec<Product> = (10..33)
        .map(|id| Product {
            id,
            name: format!("kit {id}"),
            parts: refs(&["bolt", "nut", "gear"]),
        })
        .collect();
    products.insert_many(&more).unwrap();
    let client = mongodb::sync::Client::with_uri_str(&uri).unwrap();
    let raw = client.default_database().expect("the URI names a database");
    raw.run_command(bson::doc! { "profile": 2 }).run().unwrap();
    let (f, a) = (Product::fields(), Assembled::fields());
    let assembled = products
        .aggregate()
        .populate(&parts, &f.parts, &a.parts)
        .to_vec()
        .unwrap();
    assert_eq!(assembled.len(), 25);
    raw.run_command(bson::doc! { "profile": 0 }).run().unwrap();
    let profiled: Vec<bson::Document> = raw
        .collection::<bson::Document>("system.profile")
        .find(bson::doc! {})
        .run()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let sent: Vec<&bson::Document> = profiled
        .iter()
        .filter(|entry| {
            entry
                .get_document("command")
                .is_ok_and(|c| !c.contains_key("profile"))
        })
        .collect();
    assert_eq!(sent.len(), 1, "{profiled:#?}");
    assert!(
        sent[0]
            .get_document("command")
            .unwrap()
            .contains_key("aggregate"),
        "{:?}",
        sent[0]
    );
}
