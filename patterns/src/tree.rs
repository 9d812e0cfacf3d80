//! `Tree<N>` (S5): nodes of a hierarchy (categories, tags), each knowing its parent, its
//! ancestors (root first) and its materialized path (`programming/databases/mongodb`).
//!
//! [`TreeVariant::Ancestors`] (S5b) finds all descendants of a node with one query on the
//! multikey index `ancestors_1`; [`TreeVariant::MaterializedPath`] (S5c) with one anchored
//! regex on `path_1`, which the index serves as a range. Moving a subtree rewrites every
//! descendant's ancestors and path in one transaction; deleting one removes it whole. Node ids
//! may not contain `/`, the path separator.

use odm::engine::query::Explain;
use odm::{Collection, Document, Filter, Index, Sort, Txn, UpdateOptions};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::{PatternError, record};

/// How a tree finds descendants; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeVariant {
    Ancestors,
    MaterializedPath,
}

impl TreeVariant {
    /// The field whose index finds descendants.
    fn field(self) -> &'static str {
        match self {
            TreeVariant::Ancestors => "ancestors",
            TreeVariant::MaterializedPath => "path",
        }
    }
}

/// One node, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "tree")]
pub struct Node<N> {
    #[odm(id)]
    pub id: String,
    #[odm(index)]
    pub parent: Option<String>,
    /// Root first.
    pub ancestors: Vec<String>,
    pub path: String,
    pub data: N,
}

/// A hierarchy in one collection; see the module documentation.
///
/// ```
/// use odm_patterns::{Tree, TreeVariant};
///
/// let db = odm::Database::in_memory()?;
/// let topics: Tree<String> = Tree::open(&db, "topics", TreeVariant::Ancestors)?;
/// topics.insert("programming", None, &"Programming".to_owned())?;
/// topics.insert("databases", Some("programming"), &"Databases".to_owned())?;
/// topics.insert("mongodb", Some("databases"), &"MongoDB".to_owned())?;
/// let below: Vec<String> = topics.descendants("programming")?.into_iter().map(|n| n.id).collect();
/// assert_eq!(below, ["databases", "mongodb"]);
/// assert_eq!(topics.get("mongodb")?.unwrap().path, "programming/databases/mongodb");
/// topics.move_subtree("databases", None)?;
/// assert_eq!(topics.get("mongodb")?.unwrap().path, "databases/mongodb");
/// # Ok::<(), odm_patterns::PatternError>(())
/// ```
#[derive(Debug)]
pub struct Tree<N> {
    nodes: Collection<Node<N>>,
    variant: TreeVariant,
}

/// A handle clones without its nodes' type being `Clone`.
impl<N> Clone for Tree<N> {
    fn clone(&self) -> Self {
        Tree {
            nodes: self.nodes.clone(),
            variant: self.variant,
        }
    }
}

const PATTERN: &str = "tree";

impl<N: Serialize + DeserializeOwned + 'static> Tree<N> {
    pub fn open(
        db: &odm::Database,
        name: &str,
        variant: TreeVariant,
    ) -> Result<Self, PatternError> {
        let by = variant.field();
        db.transaction(|txn| record(txn, PATTERN, name, bson::doc! { "variant": by }))?;
        // The index that finds descendants depends on the variant chosen at run time, so it is
        // made here rather than declared on the model; after the transaction, as MongoDB
        // creates an index inside one only on a collection the transaction created.
        let f = Node::<N>::fields();
        let index = match variant {
            TreeVariant::Ancestors => Index::asc(&f.ancestors),
            TreeVariant::MaterializedPath => Index::asc(&f.path),
        };
        let nodes: Collection<Node<N>> = db.collection_named(name)?;
        nodes.create_index(index)?;
        Ok(Tree { nodes, variant })
    }

    /// Adds a node under `parent` (a root without one).
    pub fn insert(&self, id: &str, parent: Option<&str>, data: &N) -> Result<(), PatternError> {
        if id.contains('/') || id.is_empty() {
            return Err(self.error(format!("node id `{id}` is empty or contains `/`")));
        }
        let data = bson::serialize_to_bson(data).map_err(|e| self.error(e.to_string()))?;
        self.nodes.database().transaction(|txn| {
            let (ancestors, path) = match parent {
                None => (Vec::new(), id.to_owned()),
                Some(parent) => {
                    let parent_node = self.read(txn, parent)?;
                    let mut ancestors = parent_node.ancestors;
                    ancestors.push(parent.to_owned());
                    (ancestors, format!("{}/{id}", parent_node.path))
                }
            };
            // Typed inserts take an owned model, and the node's data is borrowed: it is
            // written already serialized, as a `Node<Bson>` of the same collection.
            txn.collection_named::<Node<bson::Bson>>(self.nodes.name())?
                .insert_one(&Node {
                    id: id.to_owned(),
                    parent: parent.map(str::to_owned),
                    ancestors,
                    path,
                    data,
                })?;
            Ok(())
        })
    }

    pub fn get(&self, id: &str) -> Result<Option<Node<N>>, PatternError> {
        Ok(self.nodes.get(id)?)
    }

    /// The node's direct children, by id.
    pub fn children(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        let f = Node::<N>::fields();
        self.query(f.parent.eq(id))
    }

    /// Every node below `id`, in one indexed query.
    pub fn descendants(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        let filter = self.descendants_filter(id)?;
        self.query(filter)
    }

    /// How [`Tree::descendants`] runs.
    pub fn explain_descendants(&self, id: &str) -> Result<Explain, PatternError> {
        let filter = self.descendants_filter(id)?;
        Ok(self.nodes.find(filter).explain()?)
    }

    /// The node's ancestors, root first.
    pub fn ancestors(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        let Some(node) = self.get(id)? else {
            return Ok(Vec::new());
        };
        let f = Node::<N>::fields();
        let mut found = self.query(f.id.is_in(node.ancestors))?;
        found.sort_by_key(|n| n.ancestors.len());
        Ok(found)
    }

    /// Moves `id` and its subtree under `parent` (to the root without one), atomically.
    /// Returns how many nodes were rewritten.
    pub fn move_subtree(&self, id: &str, parent: Option<&str>) -> Result<u64, PatternError> {
        let f = Node::<N>::fields();
        self.nodes.database().transaction(|txn| {
            let node = self.read(txn, id)?;
            let (ancestors, path) = match parent {
                None => (Vec::new(), id.to_owned()),
                Some(p) => {
                    let target = self.read(txn, p)?;
                    if p == id || target.ancestors.iter().any(|a| a == id) {
                        return Err(
                            self.error(format!("cannot move `{id}` under its own subtree (`{p}`)"))
                        );
                    }
                    let mut ancestors = target.ancestors;
                    ancestors.push(p.to_owned());
                    (ancestors, format!("{}/{id}", target.path))
                }
            };
            let mut nodes = txn.collection_named::<Node<N>>(self.nodes.name())?;
            let below = nodes.find(f.ancestors.contains(id)).to_vec()?;
            let depth = node.ancestors.len();
            nodes.update_one(
                f.id.eq(id),
                f.parent
                    .set(parent.map(str::to_owned))
                    .and(f.ancestors.set(ancestors.clone()))
                    .and(f.path.set(path.clone())),
                &UpdateOptions::default(),
            )?;
            for child in &below {
                let mut new_ancestors = ancestors.clone();
                new_ancestors.extend(child.ancestors[depth..].iter().cloned());
                let rest = child.path.strip_prefix(&node.path).unwrap_or(&child.path);
                nodes.update_one(
                    f.id.eq(&child.id),
                    f.ancestors
                        .set(new_ancestors)
                        .and(f.path.set(format!("{path}{rest}"))),
                    &UpdateOptions::default(),
                )?;
            }
            Ok(1 + below.len() as u64)
        })
    }

    /// Deletes `id` and everything below it; returns how many nodes were deleted.
    pub fn delete_subtree(&self, id: &str) -> Result<u64, PatternError> {
        let f = Node::<N>::fields();
        let below = self.descendants_filter(id)?;
        Ok(self.nodes.delete_many(f.id.eq(id).or(below))?)
    }

    fn descendants_filter(&self, id: &str) -> Result<Filter<Node<N>>, PatternError> {
        let f = Node::<N>::fields();
        Ok(match self.variant {
            TreeVariant::Ancestors => f.ancestors.contains(id),
            TreeVariant::MaterializedPath => {
                let Some(node) = self.get(id)? else {
                    return Ok(f.id.is_in(Vec::<String>::new()));
                };
                f.path.regex(&format!("^{}/", escape(&node.path)), "")
            }
        })
    }

    fn query(&self, filter: Filter<Node<N>>) -> Result<Vec<Node<N>>, PatternError> {
        let f = Node::<N>::fields();
        Ok(self.nodes.find(filter).sort(Sort::asc(&f.id)).to_vec()?)
    }

    fn read(&self, txn: &mut Txn<'_, '_>, id: &str) -> Result<Node<N>, PatternError> {
        txn.collection_named::<Node<N>>(self.nodes.name())?
            .get(&id.into())?
            .ok_or_else(|| self.error(format!("no node `{id}`")))
    }

    /// A refused operation; nothing was changed.
    fn error(&self, reason: String) -> PatternError {
        PatternError::Refused {
            pattern: PATTERN,
            name: self.nodes.name().to_owned(),
            reason,
        }
    }
}

/// A string as a regex matching it literally.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
