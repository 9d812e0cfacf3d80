//! `Tree<N>` (S5): nodes of a hierarchy (categories, tags), each knowing its parent, its
//! ancestors (root first) and its materialized path (`programming/databases/mongodb`).
//!
//! [`TreeVariant::Ancestors`] (S5b) finds all descendants of a node with one query on the
//! multikey index `ancestors_1`; [`TreeVariant::MaterializedPath`] (S5c) with one anchored
//! regex on `path_1`, which the index serves as a range. Moving a subtree rewrites every
//! descendant's ancestors and path in one transaction; deleting one removes it whole. Node ids
//! may not contain `/`, the path separator.

use std::marker::PhantomData;

use bson::{Bson, Document, doc};
use odm::engine::query::{Explain, FindOptions};
use odm::engine::update::UpdateOptions;
use odm::engine::{IndexSpec, WriteTxn};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::meta::{PatternError, record};

/// How a tree finds descendants; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeVariant {
    Ancestors,
    MaterializedPath,
}

/// One node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<N> {
    pub id: String,
    pub parent: Option<String>,
    /// Root first.
    pub ancestors: Vec<String>,
    pub path: String,
    pub data: N,
}

/// A hierarchy in one collection; see the module documentation.
#[derive(Debug, Clone)]
pub struct Tree<N> {
    db: odm::Database,
    name: String,
    variant: TreeVariant,
    _node: PhantomData<fn() -> N>,
}

const PATTERN: &str = "tree";

impl<N: Serialize + DeserializeOwned> Tree<N> {
    pub fn open(
        db: &odm::Database,
        name: &str,
        variant: TreeVariant,
    ) -> Result<Self, PatternError> {
        let tree = Tree {
            db: db.clone(),
            name: name.to_owned(),
            variant,
            _node: PhantomData,
        };
        let by = match variant {
            TreeVariant::Ancestors => "ancestors",
            TreeVariant::MaterializedPath => "path",
        };
        db.transaction(|txn| {
            record(txn, PATTERN, name, doc! { "variant": by })?;
            // Not yet on the typed layer: this pattern's documents have no model, so its
            // indexes are made on the engine transaction underneath.
            let txn = txn.engine();
            for field in ["parent", by] {
                let spec = IndexSpec::ascending(field).map_err(odm::engine::Error::from)?;
                if !txn
                    .list_indexes(name)
                    .iter()
                    .any(|s| s.name() == spec.name())
                {
                    txn.create_index(name, spec)?;
                }
            }
            Ok::<_, PatternError>(())
        })?;
        Ok(tree)
    }

    /// Adds a node under `parent` (a root without one).
    pub fn insert(&self, id: &str, parent: Option<&str>, data: &N) -> Result<(), PatternError> {
        if id.contains('/') || id.is_empty() {
            return Err(self.error(format!("node id `{id}` is empty or contains `/`")));
        }
        let data = bson::serialize_to_bson(data).map_err(|e| self.error(e.to_string()))?;
        self.db.engine().write(|txn| {
            let (ancestors, path) = match parent {
                None => (Vec::new(), id.to_owned()),
                Some(parent) => {
                    let parent_node = self.read(txn, parent)?;
                    let mut ancestors = parent_node.ancestors.clone();
                    ancestors.push(parent.to_owned());
                    (ancestors, format!("{}/{id}", parent_node.path))
                }
            };
            txn.insert_one(
                &self.name,
                doc! { "_id": id, "parent": parent, "ancestors": ancestors, "path": path, "data": data },
            )?;
            Ok(())
        })
    }

    pub fn get(&self, id: &str) -> Result<Option<Node<N>>, PatternError> {
        let found = self
            .db
            .engine()
            .collection(&self.name)
            .get(&Bson::from(id))?;
        found
            .map(|raw| {
                self.node(
                    &Document::try_from(raw.as_ref()).map_err(|e| self.damaged(e.to_string()))?,
                )
            })
            .transpose()
    }

    /// The node's direct children, by id.
    pub fn children(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        self.query(&doc! { "parent": id })
    }

    /// Every node below `id`, in one indexed query.
    pub fn descendants(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        let filter = self.descendants_filter(id)?;
        self.query(&filter)
    }

    /// How [`Tree::descendants`] runs.
    pub fn explain_descendants(&self, id: &str) -> Result<Explain, PatternError> {
        let filter = self.descendants_filter(id)?;
        let txn = self.db.engine().read()?;
        let coll = txn
            .collection(&self.name)?
            .ok_or_else(|| self.error("the tree is empty".to_owned()))?;
        Ok(coll.explain(&filter, &FindOptions::default())?)
    }

    /// The node's ancestors, root first.
    pub fn ancestors(&self, id: &str) -> Result<Vec<Node<N>>, PatternError> {
        let Some(node) = self.get(id)? else {
            return Ok(Vec::new());
        };
        let mut found = self.query(&doc! { "_id": { "$in": node.ancestors.clone() } })?;
        found.sort_by_key(|n| n.ancestors.len());
        Ok(found)
    }

    /// Moves `id` and its subtree under `parent` (to the root without one), atomically.
    /// Returns how many nodes were rewritten.
    pub fn move_subtree(&self, id: &str, parent: Option<&str>) -> Result<u64, PatternError> {
        self.db.engine().write(|txn| {
            let node = self.read(txn, id)?;
            let (ancestors, path) = match parent {
                None => (Vec::new(), id.to_owned()),
                Some(p) => {
                    let target = self.read(txn, p)?;
                    if p == id || target.ancestors.iter().any(|a| a == id) {
                        return Err(self.error(format!("cannot move `{id}` under its own subtree (`{p}`)")));
                    }
                    let mut ancestors = target.ancestors.clone();
                    ancestors.push(p.to_owned());
                    (ancestors, format!("{}/{id}", target.path))
                }
            };
            let below = txn.find(&self.name, &doc! { "ancestors": id }, None, None)?;
            let depth = node.ancestors.len();
            txn.update_one(
                &self.name,
                &doc! { "_id": id },
                &doc! { "$set": { "parent": parent, "ancestors": ancestors.clone(), "path": path.clone() } },
                &UpdateOptions::default(),
            )?;
            for doc in &below {
                let child = self.node(doc)?;
                let mut new_ancestors = ancestors.clone();
                new_ancestors.extend(child.ancestors[depth..].iter().cloned());
                let rest = child.path.strip_prefix(&node.path).unwrap_or(&child.path);
                txn.update_one(
                    &self.name,
                    &doc! { "_id": &child.id },
                    &doc! { "$set": { "ancestors": new_ancestors, "path": format!("{path}{rest}") } },
                    &UpdateOptions::default(),
                )?;
            }
            Ok(1 + below.len() as u64)
        })
    }

    /// Deletes `id` and everything below it; returns how many nodes were deleted.
    pub fn delete_subtree(&self, id: &str) -> Result<u64, PatternError> {
        let below = self.descendants_filter(id)?;
        Ok(self
            .db
            .engine()
            .collection(&self.name)
            .delete_many(&doc! { "$or": [{ "_id": id }, below] })?)
    }

    fn descendants_filter(&self, id: &str) -> Result<Document, PatternError> {
        Ok(match self.variant {
            TreeVariant::Ancestors => doc! { "ancestors": id },
            TreeVariant::MaterializedPath => {
                let Some(node) = self.get(id)? else {
                    return Ok(doc! { "_id": { "$in": [] } });
                };
                doc! { "path": { "$regex": format!("^{}/", escape(&node.path)) } }
            }
        })
    }

    fn query(&self, filter: &Document) -> Result<Vec<Node<N>>, PatternError> {
        let txn = self.db.engine().read()?;
        let Some(coll) = txn.collection(&self.name)? else {
            return Ok(Vec::new());
        };
        let options = FindOptions {
            sort: Some(doc! { "_id": 1 }),
            ..FindOptions::default()
        };
        coll.find(filter, &options)?
            .map(|doc| self.node(&doc?))
            .collect()
    }

    fn read(&self, txn: &mut WriteTxn<'_>, id: &str) -> Result<Node<N>, PatternError> {
        let raw = txn
            .get(&self.name, &Bson::from(id))?
            .ok_or_else(|| self.error(format!("no node `{id}`")))?;
        self.node(&Document::try_from(raw.as_ref()).map_err(|e| self.damaged(e.to_string()))?)
    }

    fn node(&self, doc: &Document) -> Result<Node<N>, PatternError> {
        let bad = |what: &str| self.damaged(format!("a node has no valid {what}"));
        let strings = |key: &str| -> Result<Vec<String>, PatternError> {
            doc.get_array(key)
                .map_err(|_| bad(key))?
                .iter()
                .map(|a| a.as_str().map(str::to_owned).ok_or_else(|| bad(key)))
                .collect()
        };
        Ok(Node {
            id: doc.get_str("_id").map_err(|_| bad("id"))?.to_owned(),
            parent: doc.get_str("parent").ok().map(str::to_owned),
            ancestors: strings("ancestors")?,
            path: doc.get_str("path").map_err(|_| bad("path"))?.to_owned(),
            data: bson::deserialize_from_bson(doc.get("data").cloned().unwrap_or(Bson::Null))
                .map_err(|e| self.damaged(format!("node data does not decode: {e}")))?,
        })
    }

    /// A refused operation; nothing was changed.
    fn error(&self, reason: String) -> PatternError {
        PatternError::Refused {
            pattern: PATTERN,
            name: self.name.clone(),
            reason,
        }
    }

    fn damaged(&self, reason: String) -> PatternError {
        PatternError::Damaged {
            pattern: PATTERN,
            name: self.name.clone(),
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
