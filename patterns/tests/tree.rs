//! S5: categories as a tree, both variants: children, all descendants in one indexed query,
//! ancestors, moving and deleting a subtree atomically.

use odm::Database;
use odm_patterns::{PatternError, Tree, TreeVariant};

fn ids(nodes: Vec<odm_patterns::Node<String>>) -> Vec<String> {
    nodes.into_iter().map(|n| n.id).collect()
}

fn books(variant: TreeVariant) -> (Database, Tree<String>) {
    let db = odm::testing::database().unwrap();
    let tree: Tree<String> = Tree::open(&db, "categories", variant).unwrap();
    for (id, parent) in [
        ("books", None),
        ("programming", Some("books")),
        ("databases", Some("programming")),
        ("mongodb", Some("databases")),
        ("sql", Some("databases")),
        ("languages", Some("programming")),
        ("rust", Some("languages")),
        ("fiction", Some("books")),
    ] {
        tree.insert(id, parent, &id.to_uppercase()).unwrap();
    }
    (db, tree)
}

#[test]
fn descendants_come_from_one_indexed_query_in_both_variants() {
    for (variant, index) in [
        (TreeVariant::Ancestors, "ancestors_1"),
        (TreeVariant::MaterializedPath, "path_1"),
    ] {
        let (_db, tree) = books(variant);
        assert_eq!(
            ids(tree.children("programming").unwrap()),
            ["databases", "languages"]
        );
        assert_eq!(
            ids(tree.descendants("programming").unwrap()),
            ["databases", "languages", "mongodb", "rust", "sql"]
        );
        let explain = tree.explain_descendants("programming").unwrap();
        assert_eq!(explain.index_used(), Some(index), "{explain}");
        assert_eq!(explain.docs_examined, 5, "{explain}");
        assert_eq!(
            ids(tree.ancestors("mongodb").unwrap()),
            ["books", "programming", "databases"]
        );
        let mongodb = tree.get("mongodb").unwrap().unwrap();
        assert_eq!(mongodb.path, "books/programming/databases/mongodb");
        assert_eq!(mongodb.data, "MONGODB");
    }
}

#[test]
fn a_subtree_moves_and_is_deleted_whole() {
    for variant in [TreeVariant::Ancestors, TreeVariant::MaterializedPath] {
        let (_db, tree) = books(variant);
        // databases (with mongodb and sql) moves under fiction: three nodes rewritten.
        assert_eq!(tree.move_subtree("databases", Some("fiction")).unwrap(), 3);
        let sql = tree.get("sql").unwrap().unwrap();
        assert_eq!(sql.ancestors, ["books", "fiction", "databases"]);
        assert_eq!(sql.path, "books/fiction/databases/sql");
        assert_eq!(
            ids(tree.descendants("programming").unwrap()),
            ["languages", "rust"]
        );
        assert_eq!(
            ids(tree.descendants("fiction").unwrap()),
            ["databases", "mongodb", "sql"]
        );
        // Not under its own subtree.
        let err = tree.move_subtree("fiction", Some("mongodb")).unwrap_err();
        assert!(matches!(err, PatternError::Refused { .. }), "{err}");
        assert_eq!(tree.delete_subtree("fiction").unwrap(), 4);
        assert_eq!(
            ids(tree.descendants("books").unwrap()),
            ["languages", "programming", "rust"]
        );
    }
}
