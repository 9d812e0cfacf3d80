//! The conformance runner: runs odm-cases v1 files and MongoDB unified-format CRUD test files
//! against the engine and reports each failure, each skip with its reason, and a closing line
//! `N passed, M failed, K skipped`.
//!
//! An embedded engine has no server: it presents itself as a single node of the current server
//! version, checks results, errors and collection outcomes, and ignores command events.

mod compare;
mod odm_cases;
mod unified;

use std::path::{Path, PathBuf};

pub use compare::{normalize, values_match};

/// The outcome of one test or case.
#[derive(Debug)]
pub enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

/// One named result.
#[derive(Debug)]
pub struct Report {
    pub name: String,
    pub outcome: Outcome,
}

/// Runs every JSON file under the given paths.
pub fn run(paths: &[PathBuf]) -> Vec<Report> {
    let mut files = Vec::new();
    for path in paths {
        collect_json(path, &mut files);
    }
    files.sort();
    let mut reports = Vec::new();
    for file in files {
        let label = file.display().to_string();
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                reports.push(Report {
                    name: label,
                    outcome: Outcome::Failed(format!("cannot read: {e}")),
                });
                continue;
            }
        };
        let json: serde_json::Value = match serde_json::from_str(&text) {
            Ok(j) => j,
            Err(e) => {
                reports.push(Report {
                    name: label,
                    outcome: Outcome::Failed(format!("not JSON: {e}")),
                });
                continue;
            }
        };
        let short = file
            .file_name()
            .map_or(label.clone(), |n| n.to_string_lossy().into_owned());
        match &json {
            serde_json::Value::Array(cases) => reports.extend(odm_cases::run_file(&short, cases)),
            serde_json::Value::Object(o)
                if o.contains_key("tests") && o.contains_key("schemaVersion") =>
            {
                reports.extend(unified::run_file(&short, &json));
            }
            _ => {} // Other JSON (schemas, classifications) is not a test file.
        }
    }
    reports
}

fn collect_json(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        if let Ok(entries) = std::fs::read_dir(path) {
            for entry in entries.flatten() {
                collect_json(&entry.path(), out);
            }
        }
    } else if path.extension().is_some_and(|e| e == "json") {
        out.push(path.to_owned());
    }
}

/// Converts extended JSON to BSON.
pub(crate) fn bson(v: &serde_json::Value) -> Result<bson::Bson, String> {
    bson::Bson::try_from(v.clone()).map_err(|e| format!("bad extended JSON: {e}"))
}

pub(crate) fn document(v: &serde_json::Value) -> Result<bson::Document, String> {
    match bson(v)? {
        bson::Bson::Document(d) => Ok(d),
        other => Err(format!("expected a document, found {other}")),
    }
}

/// The `documents` array of a test element, as BSON documents (empty when absent).
pub(crate) fn documents_of(v: &serde_json::Value) -> Result<Vec<bson::Document>, String> {
    v.get("documents")
        .and_then(serde_json::Value::as_array)
        .map(|d| d.iter().map(document).collect::<Result<_, _>>())
        .transpose()
        .map(Option::unwrap_or_default)
}
