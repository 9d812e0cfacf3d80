//! Laws of text search, over random documents and searches: the text index finds exactly the
//! documents the search matches when judged against every document (no candidate missed, the
//! index's terms complete), each with the score computed from the document; and after random
//! writes the index's entries are those recomputed from the documents (`verify`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bson::{Bson, Document, RawDocumentBuf, doc};
use proptest::prelude::*;

use super::{TextMatch, TextSearch, TextSpec};
use crate::query::FindOptions;
use crate::{Database, IndexSpec};

/// Words that reach the rules: stems shared by several forms, stop words, case and diacritic
/// variants, apostrophes, hyphens, another script, digits.
const WORDS: &[&str] = &[
    "coffee",
    "Coffees",
    "COFFEE",
    "café",
    "Cafe",
    "cafés",
    "running",
    "runs",
    "ran",
    "the",
    "and",
    "a",
    "mark's",
    "pre-market",
    "Сырники",
    "сырники",
    "léche",
    "leche",
    "x1",
    "cake",
    "baking",
    "Bake",
];

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 0..6).prop_map(|w| w.join(" "))
}

fn document() -> impl Strategy<Value = Document> {
    (
        prop::option::of(text()),
        prop::collection::vec(text(), 0..3),
        prop::option::of((text(), prop::sample::select(vec!["es", "en", "none", "fr"]))),
        prop::option::of(prop::sample::select(vec!["es", "none"])),
    )
        .prop_map(|(title, tags, inner, language)| {
            let mut d = Document::new();
            if let Some(title) = title {
                d.insert("title", title);
            }
            d.insert("tags", tags);
            if let Some((body, language)) = inner {
                d.insert("inner", doc! { "body": body, "language": language });
            }
            if let Some(language) = language {
                d.insert("language", language);
            }
            d
        })
}

/// A search: words, a phrase, negations.
fn search() -> impl Strategy<Value = Document> {
    (
        prop::collection::vec(prop::sample::select(WORDS), 1..3),
        prop::option::of(prop::collection::vec(prop::sample::select(WORDS), 1..3)),
        prop::option::of(prop::sample::select(WORDS)),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(words, phrase, negated, case, diacritics)| {
            let mut parts = vec![words.join(" ")];
            if let Some(phrase) = phrase {
                parts.push(format!("\"{}\"", phrase.join(" ")));
            }
            if let Some(negated) = negated {
                parts.push(format!("-{negated}"));
            }
            let search = parts.join(" ");
            doc! { "$search": search, "$caseSensitive": case, "$diacriticSensitive": diacritics }
        })
}

fn index() -> Document {
    doc! {
        "key": { "title": "text", "tags": "text", "inner.body": "text" },
        "name": "t",
        "weights": { "title": 5 },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_index_finds_what_judging_every_document_finds(
        docs in prop::collection::vec(document(), 0..25),
        arguments in search(),
    ) {
        let db = Database::in_memory().unwrap();
        let c = db.collection("c");
        c.create_index(IndexSpec::from_document(&index()).unwrap()).unwrap();
        for (i, d) in docs.iter().enumerate() {
            let mut d = d.clone();
            d.insert("_id", i as i32);
            c.insert_one(&d).unwrap();
        }
        let filter = doc! { "$text": arguments.clone() };
        let options = FindOptions {
            projection: Some(doc! { "s": { "$meta": "textScore" }, "_id": 1 }),
            ..FindOptions::default()
        };
        let txn = db.read().unwrap();
        let coll = txn.collection("c").unwrap().unwrap();
        let found: BTreeMap<i32, f64> = coll
            .find(&filter, &options)
            .unwrap()
            .map(|d| {
                let d = d.unwrap();
                (d.get_i32("_id").unwrap(), d.get_f64("s").unwrap())
            })
            .collect();
        let spec = Arc::new(TextSpec::parse(&["title", "tags", "inner.body"], &index()).unwrap());
        let search = TextSearch::parse(&Bson::Document(arguments)).unwrap();
        let judge = TextMatch::new(&search, spec, "t".into(), Vec::new());
        let mut expected = BTreeMap::new();
        for (i, d) in docs.iter().enumerate() {
            let mut d = d.clone();
            d.insert("_id", i as i32);
            let raw = RawDocumentBuf::try_from(&d).unwrap();
            if judge.matches(&raw).unwrap() {
                expected.insert(i as i32, judge.score(&raw).unwrap());
            }
        }
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn entries_equal_recomputation_after_random_writes(
        docs in prop::collection::vec(document(), 1..15),
        replacements in prop::collection::vec((0usize..15, document()), 0..10),
        deletions in prop::collection::vec(0usize..15, 0..5),
    ) {
        let db = Database::in_memory().unwrap();
        let c = db.collection("c");
        c.create_index(IndexSpec::from_document(&index()).unwrap()).unwrap();
        for (i, d) in docs.iter().enumerate() {
            let mut d = d.clone();
            d.insert("_id", i as i32);
            c.insert_one(&d).unwrap();
        }
        for (at, d) in replacements {
            let id = (at % docs.len()) as i32;
            c.replace_one(&doc! { "_id": id }, &d, &crate::update::UpdateOptions::default()).unwrap();
        }
        for at in deletions {
            c.delete_one(&doc! { "_id": (at % docs.len()) as i32 }).unwrap();
        }
        let report = db.verify().unwrap();
        prop_assert!(report.is_clean(), "{:?}", report.problems);
    }
}
