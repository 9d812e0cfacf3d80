//! S5 categories as a tree: parent links only (S5a), ancestors (S5b), materialized paths (S5c).
//!
//! `cargo run --release --example tree`

use odm::Database;
use odm_patterns::{Tree, TreeVariant};

const CATEGORIES: [(&str, Option<&str>); 9] = [
    ("books", None),
    ("programming", Some("books")),
    ("databases", Some("programming")),
    ("mongodb", Some("databases")),
    ("postgres", Some("databases")),
    ("languages", Some("programming")),
    ("rust", Some("languages")),
    ("fiction", Some("books")),
    ("poetry", Some("fiction")),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (label, variant) in [
        (
            "S5b ancestors array, multikey index",
            TreeVariant::Ancestors,
        ),
        (
            "S5c materialized path, anchored regex",
            TreeVariant::MaterializedPath,
        ),
    ] {
        let db = Database::in_memory()?;
        let tree: Tree<()> = Tree::open(&db, "categories", variant)?;
        for (id, parent) in CATEGORIES {
            tree.insert(id, parent, &())?;
        }
        let below: Vec<String> = tree
            .descendants("programming")?
            .into_iter()
            .map(|n| n.id)
            .collect();
        let explain = tree.explain_descendants("programming")?;
        println!("{label}");
        println!(
            "  descendants of programming: {below:?}\n  one query: {} documents examined via {}",
            explain.docs_examined,
            explain.index_used().unwrap_or("a scan")
        );
        let path: Vec<String> = tree
            .ancestors("mongodb")?
            .into_iter()
            .map(|n| n.id)
            .collect();
        println!("  ancestors of mongodb: {path:?}");
        let moved = tree.move_subtree("databases", Some("books"))?;
        println!(
            "  moved databases under books: {moved} node(s) rewritten in one transaction; mongodb is now {}",
            tree.get("mongodb")?.map(|n| n.path).unwrap_or_default()
        );
        println!(
            "  deleted the fiction subtree: {} node(s)",
            tree.delete_subtree("fiction")?
        );
    }
    // S5a: parent links alone need one query per level.
    let db = Database::in_memory()?;
    let tree: Tree<()> = Tree::open(&db, "categories", TreeVariant::Ancestors)?;
    for (id, parent) in CATEGORIES {
        tree.insert(id, parent, &())?;
    }
    let (mut level, mut queries, mut found) = (vec!["programming".to_owned()], 0, 0);
    while !level.is_empty() {
        let mut next = Vec::new();
        for id in &level {
            queries += 1;
            next.extend(tree.children(id)?.into_iter().map(|n| n.id));
        }
        found += next.len();
        level = next;
    }
    println!("S5a parent links only: the same {found} descendants took {queries} queries");
    Ok(())
}
