//! Writes seed corpora for the fuzz targets (`engine/fuzz`) from conformance data: the filters,
//! updates, pipelines and documents of MongoDB's unified CRUD tests and of odm-cases files.
//!
//! `fuzz-seeds OUT DIR...` writes `OUT/<target>/<n>` for the targets `filter`, `update`,
//! `aggregate`, `command`, `decode` and `keys`. Each seed is what the target reads: BSON
//! documents one after another (see the fuzz crate's `documents`), here the operation's
//! arguments followed by up to eight documents of the same file (`command` reads the same
//! inputs as `aggregate`, and gets a quarter of its seeds). For `wire` a seed is a steering byte and a message:
//! the same filters, updates and pipelines as `find`, `update` and `aggregate` commands, and
//! the documents as an `insert` with a document sequence, plain, compressed or with a checksum.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bson::{Bson, Document};
use serde_json::Value;

/// Documents of a file put after each operation: enough to match, few enough to stay fast.
const DOCUMENTS_PER_SEED: usize = 8;

#[derive(Default)]
struct Found {
    documents: Vec<Document>,
    filters: Vec<Document>,
    updates: Vec<(Document, Bson)>,
    pipelines: Vec<Vec<Bson>>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((out, dirs)) = args.split_first() else {
        eprintln!("usage: fuzz-seeds OUT DIR...");
        std::process::exit(2);
    };
    let mut files = Vec::new();
    for dir in dirs {
        collect_json(Path::new(dir), &mut files);
    }
    let mut seeds: Vec<(&str, Vec<u8>)> = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(json) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        // An odm-cases file is an array of cases, each with its own documents; a unified test
        // file keeps its documents in `initialData`, beside the tests that use them.
        let units: Vec<&Value> = match &json {
            Value::Array(cases) => cases.iter().collect(),
            other => vec![other],
        };
        for unit in units {
            let mut found = Found::default();
            walk(unit, &mut found);
            seeds_of(&found, &mut seeds);
        }
    }
    let mut written = 0;
    let mut seen = BTreeSet::new();
    for (target, bytes) in seeds {
        if !seen.insert((target, bytes.clone())) {
            continue;
        }
        let dir = Path::new(out).join(target);
        std::fs::create_dir_all(&dir).expect("the output folder can be created");
        std::fs::write(dir.join(format!("seed-{written}")), bytes).expect("a seed can be written");
        written += 1;
    }
    println!("{written} seeds from {} files", files.len());
}

fn collect_json(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for entry in entries {
            collect_json(&entry, out);
        }
    } else if path.extension().is_some_and(|e| e == "json") {
        out.push(path.to_owned());
    }
}

fn document(v: &Value) -> Option<Document> {
    match Bson::try_from(v.clone()).ok()? {
        Bson::Document(d) => Some(d),
        _ => None,
    }
}

/// Finds, at any depth, the documents (`documents`, `initialData`'s), filters, updates with
/// their filters, and pipelines.
fn walk(v: &Value, found: &mut Found) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(docs)) = map.get("documents") {
                found.documents.extend(docs.iter().filter_map(document));
            }
            let filter = map.get("filter").and_then(document);
            if let Some(filter) = &filter {
                found.filters.push(filter.clone());
            }
            if let Some(update) = map
                .get("update")
                .and_then(|u| Bson::try_from(u.clone()).ok())
            {
                found.updates.push((filter.unwrap_or_default(), update));
            }
            if let Some(Value::Array(stages)) = map.get("pipeline") {
                found.pipelines.push(
                    stages
                        .iter()
                        .filter_map(|s| Bson::try_from(s.clone()).ok())
                        .collect(),
                );
            }
            for value in map.values() {
                walk(value, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk(i, found)),
        _ => {}
    }
}

/// A list of values as a document `{"0": .., "1": ..}`, how the targets read a pipeline.
fn numbered(values: &[Bson]) -> Document {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| (i.to_string(), v.clone()))
        .collect()
}

fn bytes_of(docs: &[&Document]) -> Vec<u8> {
    let mut out = Vec::new();
    for doc in docs {
        if let Ok(raw) = bson::RawDocumentBuf::try_from(*doc) {
            out.extend_from_slice(raw.as_bytes());
        }
    }
    out
}

fn seeds_of(found: &Found, seeds: &mut Vec<(&'static str, Vec<u8>)>) {
    let docs: Vec<&Document> = found.documents.iter().take(DOCUMENTS_PER_SEED).collect();
    let with_docs = |head: Vec<&Document>| {
        let mut all = head;
        all.extend(docs.iter().copied());
        bytes_of(&all)
    };
    for filter in &found.filters {
        seeds.push(("filter", with_docs(vec![filter])));
    }
    for (filter, update) in &found.updates {
        let update = match update {
            Bson::Document(d) => d.clone(),
            Bson::Array(stages) => numbered(stages),
            _ => continue,
        };
        seeds.push(("update", with_docs(vec![filter, &update])));
    }
    for pipeline in &found.pipelines {
        let seed = with_docs(vec![&numbered(pipeline)]);
        // About a quarter of them (chosen by length, the same every run): each `command`
        // input is a few round trips to a server.
        if seed.len() % 4 == 0 {
            seeds.push(("command", seed.clone()));
        }
        seeds.push(("aggregate", seed));
    }
    for doc in &found.documents {
        seeds.push(("decode", bytes_of(&[doc])));
        seeds.push(("keys", bytes_of(&[doc])));
    }
    wire_seeds(found, &docs, seeds);
}

/// Commands as messages, for the `wire` target. Its steering byte 1 keeps the header's length
/// right after the fuzzer changes the bytes; 3 also keeps the checksum right.
fn wire_seeds(found: &Found, docs: &[&Document], seeds: &mut Vec<(&'static str, Vec<u8>)>) {
    use odm_server::Compressor;
    use odm_server::wire;
    let compressors = [
        None,
        Some(Compressor::Zlib),
        Some(Compressor::Snappy),
        Some(Compressor::Zstd),
    ];
    let mut commands: Vec<Document> = Vec::new();
    for filter in &found.filters {
        commands.push(bson::doc! { "find": "c", "filter": filter.clone(), "$db": "test" });
    }
    for (filter, update) in &found.updates {
        commands.push(bson::doc! {
            "update": "c", "updates": [{ "q": filter.clone(), "u": update.clone() }], "$db": "test",
        });
    }
    for pipeline in &found.pipelines {
        commands.push(bson::doc! {
            "aggregate": "c", "pipeline": pipeline.clone(), "cursor": {}, "$db": "test",
        });
    }
    for (i, command) in commands.iter().enumerate() {
        let Ok(body) = bson::RawDocumentBuf::try_from(command) else {
            continue;
        };
        let compressor = compressors[i % compressors.len()];
        let mut seed = vec![1u8];
        seed.extend(wire::encode_msg(i as i32, 0, &body, 0, compressor));
        seeds.push(("wire", seed));
    }
    if docs.is_empty() {
        return;
    }
    // An insert whose documents travel in a kind-1 section, with a checksum.
    let Ok(body) = bson::RawDocumentBuf::try_from(&bson::doc! { "insert": "c", "$db": "test" })
    else {
        return;
    };
    let mut sequence = b"documents\0".to_vec();
    sequence.extend(bytes_of(docs));
    let mut message = wire::encode_msg(0, 0, &body, 0, None);
    message.push(1);
    message.extend(((sequence.len() + 4) as i32).to_le_bytes());
    message.extend(sequence);
    let length = message.len() as i32;
    message[..4].copy_from_slice(&length.to_le_bytes());
    wire::add_checksum(&mut message);
    let mut seed = vec![3u8];
    seed.extend(message);
    seeds.push(("wire", seed));
}
