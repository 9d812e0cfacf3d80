//! `Database::verify`: recomputes every index from the documents and reports any difference.
//!
//! It checks, per collection: each stored document is well-formed BSON and is stored under the
//! encoding of its own `_id`; each index table holds exactly the entries its spec computes for
//! the documents (nothing missing, nothing extra, no unique key held twice); an index that some
//! document makes multikey is marked multikey in the catalog.

use std::collections::BTreeMap;

use bson::RawDocument;
use redb::ReadableTable;

use crate::catalog::{CollectionMeta, IndexMeta};
use crate::db::{Database, ReadTxn};
use crate::error::Result;
use crate::index::{entry, unique_holder};
use crate::index_store;
use crate::keys;
use crate::tables;

/// At most this many differences are listed per index, so a badly damaged file gives a readable
/// report.
const PROBLEMS_PER_INDEX: usize = 10;

/// What [`Database::verify`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    pub collections: usize,
    pub documents: u64,
    pub index_entries: u64,
    /// One line per problem; empty when the file is consistent.
    pub problems: Vec<String>,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Database {
    /// Checks every collection and index of a snapshot; see the module documentation.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_with(&mut |_| {})
    }

    /// [`Database::verify`], calling `checked` with the count of documents checked so far
    /// after each one (for a progress display).
    pub fn verify_with(&self, checked: &mut dyn FnMut(u64)) -> Result<VerifyReport> {
        let txn = self.read()?;
        let mut report = VerifyReport::default();
        for meta in txn.catalog.collections.values() {
            report.collections += 1;
            verify_collection(&txn, meta, &mut report, checked)?;
        }
        Ok(report)
    }
}

type Entries = BTreeMap<Vec<u8>, Vec<u8>>;

fn verify_collection(
    txn: &ReadTxn,
    meta: &CollectionMeta,
    report: &mut VerifyReport,
    checked: &mut dyn FnMut(u64),
) -> Result<()> {
    let name = &meta.name;
    let docs = txn
        .txn
        .open_table(tables::bytes(&tables::docs_name(meta.id)))?;
    let mut expected: Vec<Entries> = vec![Entries::new(); meta.indexes.len()];
    let mut multikey = vec![false; meta.indexes.len()];
    // A capped collection's documents' sizes by encoded `_id`, checked against its order.
    let mut sizes = BTreeMap::new();
    for row in docs.iter()? {
        let (key, bytes) = row?;
        if meta.options.capped.is_some() {
            sizes.insert(key.value().to_vec(), bytes.value().len() as u64);
        }
        report.documents += 1;
        checked(report.documents);
        let Ok(doc) = RawDocument::from_bytes(bytes.value()) else {
            report.problems.push(format!(
                "`{name}`: a stored document is not well-formed BSON"
            ));
            continue;
        };
        match doc.get("_id") {
            Ok(Some(id)) if keys::encode(id) == key.value() => {}
            _ => report.problems.push(format!(
                "`{name}`: a document is not stored under its `_id`"
            )),
        }
        for (i, index) in meta.indexes.iter().enumerate() {
            match index.spec.document_keys(doc) {
                Ok(Some(keys)) => {
                    multikey[i] |= keys.multikey;
                    for k in &keys.keys {
                        let (k, v) = entry(index.spec.is_unique(), k, key.value(), &keys.types);
                        if let Some(other) = expected[i].insert(k, v)
                            && index.spec.is_unique()
                            && unique_holder(&other) != Some(key.value())
                        {
                            report.problems.push(format!(
                                "`{name}`: unique index `{}` holds one key for two documents",
                                index.spec.name()
                            ));
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => report.problems.push(format!(
                    "`{name}`: a stored document cannot be indexed by `{}`: {e:?}",
                    index.spec.name()
                )),
            }
        }
    }
    if meta.options.capped.is_some() {
        crate::capped::verify(&txn.txn, meta, &sizes, &mut report.problems)?;
    }
    for ((index, expected), multikey) in meta.indexes.iter().zip(expected).zip(multikey) {
        if multikey && !index.multikey {
            report.problems.push(format!(
                "`{name}`: index `{}` holds multikey entries but is not marked multikey",
                index.spec.name()
            ));
        }
        compare_index(txn, meta, index, &expected, report)?;
    }
    Ok(())
}

fn compare_index(
    txn: &ReadTxn,
    meta: &CollectionMeta,
    index: &IndexMeta,
    expected: &Entries,
    report: &mut VerifyReport,
) -> Result<()> {
    let label = format!("`{}` index `{}`", meta.name, index.spec.name());
    let mut actual = Entries::new();
    let (main, delta) = index_store::table_names(meta.id, index.id);
    for name in [main, delta] {
        let table = txn.txn.open_table(tables::bytes(&name))?;
        for row in table.iter()? {
            let (k, v) = row?;
            if actual
                .insert(k.value().to_vec(), v.value().to_vec())
                .is_some()
            {
                report.problems.push(format!(
                    "{label}: entry {:02x?} is in both the main and the delta table",
                    k.value()
                ));
            }
        }
    }
    report.index_entries += actual.len() as u64;
    let missing = expected.iter().filter(|(k, v)| actual.get(*k) != Some(v));
    let extra = actual.iter().filter(|(k, v)| expected.get(*k) != Some(v));
    for (k, _) in missing.take(PROBLEMS_PER_INDEX) {
        report
            .problems
            .push(format!("{label}: missing or wrong entry {k:02x?}"));
    }
    for (k, _) in extra.take(PROBLEMS_PER_INDEX) {
        report
            .problems
            .push(format!("{label}: entry {k:02x?} matches no document"));
    }
    Ok(())
}
