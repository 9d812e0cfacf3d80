//! The `odm` command's data tools, run as a user runs them: round trips through export and
//! import in both Extended JSON modes, through dump and restore (indexes included), CSV with
//! typed columns, one-shot queries, and each error a person must be able to act on (one line,
//! a non-zero exit status, nothing changed).

use std::path::Path;
use std::process::{Command, Output};

use bson::spec::BinarySubtype;
use bson::{
    Binary, Bson, DateTime, Decimal128, Document, JavaScriptCodeWithScope, RawDocumentBuf, Regex,
    Timestamp, doc, oid::ObjectId,
};
use odm_engine::{Database, IndexSpec};

fn odm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_odm"))
        .args(args)
        .output()
        .expect("running odm")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `odm` and expects success; returns standard output.
fn ok(args: &[&str]) -> String {
    let out = odm(args);
    assert!(
        out.status.success(),
        "odm {args:?} failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Runs `odm` and expects a failure told in one line on standard error, with no panic and no
/// debug dump; returns that line.
fn fails(args: &[&str]) -> String {
    let out = odm(args);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "odm {args:?} succeeded: {stderr}");
    assert_ne!(
        out.status.code(),
        Some(101),
        "odm {args:?} panicked: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Error {"), "a debug dump: {stderr}");
    let last = stderr.lines().last().unwrap_or("").to_owned();
    assert!(last.starts_with("odm: "), "{stderr}");
    last
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// One value of every BSON type, with edge values.
fn every_type() -> Document {
    let pointer = Bson::try_from(serde_json::json!({"$dbPointer": {"$ref": "db.c", "$id": {"$oid": "5f0f1f2f3f4f5f6f7f8f9fa1"}}})).unwrap();
    doc! {
        "_id": ObjectId::parse_str("5f0f1f2f3f4f5f6f7f8f9fa0").unwrap(),
        "double": 1.0, "frac": 0.1, "neg_zero": -0.0, "big": 1e300, "tiny": 5e-324,
        "inf": f64::INFINITY, "ninf": f64::NEG_INFINITY, "nan": f64::NAN,
        "int32": i32::MIN, "int64": i64::MAX, "small64": 1_i64,
        "decimal": "-1.5E-6143".parse::<Decimal128>().unwrap(),
        "string": "tab\t quote\" backslash\\ é 𝄞 \u{7f} \u{1}",
        "doc": {"nested": {"deeper": [1, {"x": null}]}, "": "empty key"},
        "array": [[], {}], "bool": false, "null": null,
        "date": DateTime::from_millis(1_700_000_000_123),
        "old_date": DateTime::from_millis(-62_135_596_800_001),
        "far_date": DateTime::from_millis(253_402_300_800_000),
        "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![0, 1, 255] },
        "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![7; 16] },
        "user_binary": Binary { subtype: BinarySubtype::UserDefined(0x80), bytes: vec![] },
        "regex": Regex { pattern: "^a/b\"".to_owned().try_into().unwrap(), options: "imsx".to_owned().try_into().unwrap() },
        "timestamp": Timestamp { time: u32::MAX, increment: 7 },
        "symbol": Bson::Symbol("sym".into()),
        "code": Bson::JavaScriptCode("function() { return 1; }".into()),
        "code_scope": JavaScriptCodeWithScope { code: "x".into(), scope: doc! {"x": 1_i64} },
        "min": Bson::MinKey, "max": Bson::MaxKey, "undefined": Bson::Undefined,
        "pointer": pointer,
    }
}

/// The stored bytes of every document of a collection, in `_id` order.
fn stored(path: &Path, collection: &str) -> Vec<Vec<u8>> {
    let db = Database::open(path).unwrap();
    let txn = db.read().unwrap();
    let Some(c) = txn.collection(collection).unwrap() else {
        return Vec::new();
    };
    c.scan()
        .unwrap()
        .map(|d| d.unwrap().bytes().to_vec())
        .collect()
}

fn decoded(path: &Path, collection: &str) -> Vec<Document> {
    stored(path, collection)
        .into_iter()
        .map(|b| Document::try_from(RawDocumentBuf::from_bytes(b).unwrap().as_ref()).unwrap())
        .collect()
}

fn seed(path: &Path, collection: &str, docs: &[Document]) {
    let db = Database::open(path).unwrap();
    db.write(|w| {
        for d in docs {
            w.insert_one(collection, d)?;
        }
        Ok::<_, odm_engine::Error>(())
    })
    .unwrap();
}

#[test]
fn every_bson_type_survives_export_and_import_exactly_in_canonical_mode() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target, json) = (
        dir.path().join("a.odm"),
        dir.path().join("b.odm"),
        dir.path().join("all.json"),
    );
    let second = doc! {"_id": 2, "n": 1};
    seed(&source, "all", &[every_type(), second]);
    for array in [false, true] {
        let mut export = vec![
            "export",
            s(&source),
            "--collection",
            "all",
            "--jsonFormat",
            "canonical",
            "--out",
            s(&json),
        ];
        let mut import = vec![
            "import",
            s(&target),
            "--collection",
            "all",
            "--file",
            s(&json),
            "--drop",
        ];
        if array {
            export.push("--jsonArray");
            import.push("--jsonArray");
        }
        ok(&export);
        ok(&import);
        assert_eq!(
            stored(&target, "all"),
            stored(&source, "all"),
            "jsonArray: {array}"
        );
    }
    // Pretty output reads back the same.
    ok(&[
        "export",
        s(&source),
        "-c",
        "all",
        "--jsonFormat",
        "canonical",
        "--pretty",
        "--out",
        s(&json),
    ]);
    ok(&[
        "import",
        s(&target),
        "-c",
        "all",
        "--file",
        s(&json),
        "--drop",
    ]);
    assert_eq!(stored(&target, "all"), stored(&source, "all"));
}

#[test]
fn relaxed_mode_keeps_every_value_and_loses_only_integer_widths() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target, json) = (
        dir.path().join("a.odm"),
        dir.path().join("b.odm"),
        dir.path().join("all.json"),
    );
    seed(&source, "all", &[every_type()]);
    ok(&[
        "export",
        s(&source),
        "--collection",
        "all",
        "--out",
        s(&json),
    ]);
    let line = std::fs::read_to_string(&json).unwrap();
    assert!(line.contains(r#""int32":-2147483648"#), "{line}");
    assert!(
        line.contains(r#""date":{"$date":"2023-11-14T22:13:20.123Z"}"#),
        "{line}"
    );
    ok(&[
        "import",
        s(&target),
        "--collection",
        "all",
        "--file",
        s(&json),
    ]);
    let mut expected = every_type();
    // A 64-bit integer that fits in 32 bits reads back as Int32: relaxed JSON writes no width.
    expected.insert("small64", 1);
    expected.insert(
        "code_scope",
        JavaScriptCodeWithScope {
            code: "x".into(),
            scope: doc! {"x": 1},
        },
    );
    let expected = RawDocumentBuf::try_from(&expected).unwrap().into_bytes();
    assert_eq!(stored(&target, "all"), vec![expected]);
}

#[test]
fn export_filters_sorts_limits_and_writes_csv() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.odm");
    let docs: Vec<Document> = (0..10)
        .map(|i| doc! {"_id": i, "n": i % 3, "name": format!("p{i}"), "tags": ["a", "b"]})
        .collect();
    seed(&db, "people", &docs);
    let out = ok(&[
        "export",
        s(&db),
        "-c",
        "people",
        "-q",
        r#"{"n": {"$gte": 1}}"#,
        "--sort",
        r#"{"_id": -1}"#,
        "--skip",
        "1",
        "--limit",
        "2",
        "--fields",
        "name",
    ]);
    assert_eq!(
        out,
        "{\"_id\":7,\"name\":\"p7\"}\n{\"_id\":5,\"name\":\"p5\"}\n"
    );
    let csv = ok(&[
        "export",
        s(&db),
        "-c",
        "people",
        "--type",
        "csv",
        "--fields",
        "_id,name,tags,missing",
        "--limit",
        "2",
    ]);
    assert_eq!(
        csv,
        "_id,name,tags,missing\n0,p0,\"[\"\"a\"\",\"\"b\"\"]\",\n1,p1,\"[\"\"a\"\",\"\"b\"\"]\",\n"
    );
    let line = fails(&["export", s(&db), "-c", "people", "--type", "csv"]);
    assert!(line.contains("CSV output needs --fields"), "{line}");
    let line = fails(&["export", s(&db), "-c", "nobody"]);
    assert!(
        line.contains("no collection `nobody` (the file holds: people)"),
        "{line}"
    );
}

#[test]
fn dump_and_restore_round_trip_documents_and_indexes_plain_and_gzipped() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("shop.odm");
    let docs: Vec<Document> = (0..2500)
        .map(|i| doc! {"_id": i, "email": format!("u{i}@x"), "at": DateTime::from_millis(i64::from(i)), "tags": [i % 7, i % 5], "kind": i % 3})
        .collect();
    seed(&source, "users", &docs);
    seed(&source, "all", &[every_type()]);
    {
        let db = Database::open(&source).unwrap();
        db.write(|w| {
            w.create_index("users", IndexSpec::ascending("email")?.unique())?;
            w.create_index(
                "users",
                IndexSpec::new([
                    ("kind", odm_engine::Direction::Ascending),
                    ("at", odm_engine::Direction::Descending),
                ])?
                .sparse(),
            )?;
            w.create_index(
                "users",
                IndexSpec::ascending("at")?
                    .expire_after(std::time::Duration::from_hours(1))
                    .named("expiry"),
            )?;
            w.create_index(
                "users",
                IndexSpec::ascending("tags")?.partial(doc! {"kind": {"$gt": 0}})?,
            )?;
            w.create_index("users", IndexSpec::hashed("email")?)?;
            w.create_collection("empty")?;
            Ok::<_, odm_engine::Error>(())
        })
        .unwrap();
    }
    for gzip in [false, true] {
        let out = dir.path().join(if gzip { "dump-gz" } else { "dump" });
        let target = dir.path().join(if gzip { "gz.odm" } else { "plain.odm" });
        let mut args = vec!["dump", s(&source), "--out", s(&out)];
        if gzip {
            args.push("--gzip");
        }
        ok(&args);
        let suffix = if gzip { ".gz" } else { "" };
        for file in [
            "users.bson",
            "users.metadata.json",
            "all.bson",
            "empty.bson",
            "empty.metadata.json",
        ] {
            assert!(
                out.join("shop").join(format!("{file}{suffix}")).exists(),
                "{file}{suffix}"
            );
        }
        ok(&["restore", s(&target), s(&out)]);
        for collection in ["users", "all", "empty"] {
            assert_eq!(
                stored(&target, collection),
                stored(&source, collection),
                "{collection}"
            );
        }
        let (a, b) = (
            Database::open(&source).unwrap(),
            Database::open(&target).unwrap(),
        );
        assert_eq!(
            b.read().unwrap().list_indexes("users"),
            a.read().unwrap().list_indexes("users")
        );
        assert_eq!(b.list_collections(), a.list_collections());
        assert!(b.verify().unwrap().is_clean());
        drop((a, b));
        // Restoring again without --drop reports each duplicate and fails; with --drop it
        // replaces.
        let line = fails(&["restore", s(&target), s(&out), "--quiet"]);
        assert!(line.contains("2501 failed"), "{line}");
        ok(&["restore", s(&target), s(&out), "--drop"]);
        assert_eq!(stored(&target, "users").len(), 2500);
    }
}

#[test]
// Long on purpose: one dump restored step by step, as mongorestore would read it.
#[allow(clippy::too_many_lines)]
fn restore_reads_a_dump_as_mongodump_writes_it_and_checks_indexes_first() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    let folder = dump.join("app");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::create_dir_all(dump.join("admin")).unwrap();
    std::fs::write(dump.join("admin").join("system.version.bson"), b"").unwrap();
    let mut bson = Vec::new();
    for i in 0..3 {
        bson.extend(
            RawDocumentBuf::try_from(&doc! {"_id": i, "sku": format!("s{i}")})
                .unwrap()
                .into_bytes(),
        );
    }
    std::fs::write(folder.join("items.bson"), &bson).unwrap();
    // MongoDB 7's mongodump: canonical Extended JSON, `v` and key values typed.
    std::fs::write(
        folder.join("items.metadata.json"),
        r#"{"indexes":[{"v":{"$numberInt":"2"},"key":{"_id":{"$numberInt":"1"}},"name":"_id_"},{"v":{"$numberInt":"2"},"key":{"sku":{"$numberInt":"1"}},"name":"sku_1","unique":true}],"uuid":"0f1e2d3c4b5a69788796a5b4c3d2e1f0","collectionName":"items","type":"collection"}"#,
    )
    .unwrap();
    let target = dir.path().join("t.odm");
    ok(&["restore", s(&target), s(&dump)]);
    let db = Database::open(&target).unwrap();
    assert_eq!(
        db.read()
            .unwrap()
            .collection("items")
            .unwrap()
            .unwrap()
            .len()
            .unwrap(),
        3
    );
    let names: Vec<String> = db
        .read()
        .unwrap()
        .list_indexes("items")
        .iter()
        .map(|i| i.name().to_owned())
        .collect();
    assert_eq!(names, ["_id_", "sku_1"]);
    drop(db);

    // A dump of several databases: one is chosen by name.
    std::fs::create_dir_all(dump.join("other")).unwrap();
    std::fs::write(dump.join("other").join("x.bson"), b"").unwrap();
    let line = fails(&["restore", s(&dir.path().join("u.odm")), s(&dump)]);
    assert!(
        line.contains("holds databases app, other; choose one with --db"),
        "{line}"
    );
    ok(&[
        "restore",
        s(&dir.path().join("u.odm")),
        s(&dump),
        "--db",
        "app",
    ]);
    let line = fails(&[
        "restore",
        s(&dir.path().join("u.odm")),
        s(&dump),
        "--db",
        "nope",
    ]);
    assert!(line.contains("the dump has no database `nope`"), "{line}");
    std::fs::remove_dir_all(dump.join("other")).unwrap();

    // An index the engine cannot build stops the restore before anything is written.
    std::fs::write(
        folder.join("items.metadata.json"),
        r#"{"indexes":[{"v":2,"key":{"sku":1},"name":"sku_1","hidden":true}]}"#,
    )
    .unwrap();
    let other = dir.path().join("other.odm");
    let line = fails(&["restore", s(&other), s(&dump)]);
    assert!(line.contains("hidden") && line.contains("sku_1"), "{line}");
    assert!(!other.exists(), "nothing may be written");

    // Index keys written before MongoDB 3.4 (`true`, `0`, `""`) are refused, or converted with
    // --convertLegacyIndexes, where declarations that become the same index are one.
    std::fs::write(
        folder.join("items.metadata.json"),
        r#"{"indexes":[{"v":1,"key":{"sku":true,"n":{"$numberDecimal":"0"}},"name":"legacy","ns":"app.items"},{"v":1,"key":{"sku":"","n":1},"name":"again"}]}"#,
    )
    .unwrap();
    let line = fails(&["restore", s(&other), s(&dump)]);
    assert!(line.contains("cannot be of type bool"), "{line}");
    assert!(!other.exists(), "nothing may be written");
    ok(&["restore", s(&other), s(&dump), "--convertLegacyIndexes"]);
    let db = Database::open(&other).unwrap();
    let keys: Vec<Document> = db
        .read()
        .unwrap()
        .list_indexes("items")
        .iter()
        .map(IndexSpec::keys_document)
        .collect();
    assert_eq!(keys, [doc! {"_id": 1}, doc! {"sku": 1, "n": 1}]);
    drop(db);
    std::fs::remove_file(&other).unwrap();
    // Two declarations of one index are found before anything is written.
    std::fs::write(
        folder.join("items.metadata.json"),
        r#"{"indexes":[{"v":2,"key":{"sku":1},"name":"a"},{"v":2,"key":{"sku":1},"name":"b"}]}"#,
    )
    .unwrap();
    let line = fails(&["restore", s(&other), s(&dump)]);
    assert!(line.contains("indexes `a` and `b` conflict"), "{line}");
    assert!(!other.exists(), "nothing may be written");

    // A damaged .bson file names the file and the byte offset.
    std::fs::write(folder.join("items.metadata.json"), r#"{"indexes":[]}"#).unwrap();
    let mut damaged = bson.clone();
    damaged.extend([200, 0, 0, 0, 1]);
    std::fs::write(folder.join("items.bson"), &damaged).unwrap();
    let line = fails(&["restore", s(&other), s(&dump)]);
    assert!(
        line.contains("items.bson: at byte") && line.contains("ends inside a document"),
        "{line}"
    );
}

#[test]
// Long on purpose: one import session told in order: each step imports into the file the step
// before left.
#[allow(clippy::too_many_lines)]
fn csv_and_tsv_import_with_typed_columns_headers_and_modes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.odm");
    let csv = dir.path().join("people.csv");
    std::fs::write(
        &csv,
        "name.string(),age.int32(),born.date(2006-01-02),score.double(),vip.boolean(),id.int64(),address.city.auto()\n\
         Ann,34,1990-05-01,9.5,true,9007199254740993,Paris\n\
         \"Bob, Jr.\",41,1983-11-20,7,false,2,\"New\nYork\"\n",
    )
    .unwrap();
    ok(&[
        "import",
        s(&db),
        "--type",
        "csv",
        "--headerline",
        "--columnsHaveTypes",
        "--file",
        s(&csv),
    ]);
    let docs = decoded(&db, "people");
    let mut docs: Vec<Document> = docs
        .into_iter()
        .map(|mut d| {
            d.remove("_id");
            d
        })
        .collect();
    docs.sort_by_key(|d| d.get_str("name").unwrap().to_owned());
    assert_eq!(
        docs[0],
        doc! {"name": "Ann", "age": 34, "born": DateTime::from_millis(641_520_000_000), "score": 9.5, "vip": true, "id": 9_007_199_254_740_993_i64, "address": {"city": "Paris"}}
    );
    assert_eq!(docs[1].get_str("name").unwrap(), "Bob, Jr.");
    assert_eq!(docs[1].get("score"), Some(&Bson::Double(7.0)));
    assert_eq!(
        docs[1]
            .get_document("address")
            .unwrap()
            .get_str("city")
            .unwrap(),
        "New\nYork"
    );

    // A cell that does not parse as its type: the line, the field and why.
    std::fs::write(&csv, "n.int32()\n1\nx\n3\n").unwrap();
    let out = odm(&[
        "import",
        s(&db),
        "-c",
        "nums",
        "--type",
        "csv",
        "--headerline",
        "--columnsHaveTypes",
        "--file",
        s(&csv),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("line 3: field `n`: `x` is not a 32-bit integer"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(stored(&db, "nums").len(), 2);
    ok(&[
        "import",
        s(&db),
        "-c",
        "grace",
        "--type",
        "csv",
        "--headerline",
        "--columnsHaveTypes",
        "--parseGrace",
        "autoCast",
        "--file",
        s(&csv),
    ]);
    let mut values: Vec<Bson> = decoded(&db, "grace")
        .iter()
        .map(|d| d.get("n").unwrap().clone())
        .collect();
    values.sort_by_key(|v| format!("{v:?}"));
    assert_eq!(
        values,
        [Bson::Int32(1), Bson::Int32(3), Bson::String("x".into())]
    );

    // TSV with --fields, untyped (numbers become numbers), blanks left out.
    let tsv = dir.path().join("t.tsv");
    std::fs::write(&tsv, "1\tone\t\n2\ttwo\t2.5\n").unwrap();
    ok(&[
        "import",
        s(&db),
        "-c",
        "tsv",
        "--type",
        "tsv",
        "--fields",
        "_id,word,x",
        "--ignoreBlanks",
        "--file",
        s(&tsv),
    ]);
    assert_eq!(
        decoded(&db, "tsv"),
        [
            doc! {"_id": 1, "word": "one"},
            doc! {"_id": 2, "word": "two", "x": 2.5}
        ]
    );

    // Upsert and merge by --upsertFields.
    let json = dir.path().join("u.json");
    std::fs::write(
        &json,
        "{\"_id\": 1, \"word\": \"uno\"}\n{\"_id\": 3, \"word\": \"tres\"}\n",
    )
    .unwrap();
    ok(&[
        "import",
        s(&db),
        "-c",
        "tsv",
        "--mode",
        "upsert",
        "--file",
        s(&json),
    ]);
    assert_eq!(decoded(&db, "tsv")[0], doc! {"_id": 1, "word": "uno"});
    std::fs::write(&json, "{\"word\": \"two\", \"x\": 9}\n").unwrap();
    ok(&[
        "import",
        s(&db),
        "-c",
        "tsv",
        "--mode",
        "merge",
        "--upsertFields",
        "word",
        "--file",
        s(&json),
    ]);
    assert_eq!(
        decoded(&db, "tsv")[1],
        doc! {"_id": 2, "word": "two", "x": 9}
    );
    assert_eq!(decoded(&db, "tsv").len(), 3);
}

#[test]
fn a_bad_line_stops_an_ordered_import_and_leaves_nothing_of_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.odm");
    let json = dir.path().join("in.json");
    let mut lines: Vec<String> = (0..25).map(|i| format!("{{\"_id\": {i}}}")).collect();
    lines[12] = "{\"_id\": 12, \"bad\": tru}".to_owned();
    lines[20] = "{\"_id\": 1}".to_owned();
    std::fs::write(&json, lines.join("\n")).unwrap();
    let line = fails(&[
        "import",
        s(&db),
        "-c",
        "c",
        "--file",
        s(&json),
        "--stopOnError",
        "--batchSize",
        "10",
    ]);
    assert!(
        line.contains("line 13: malformed JSON at line 13, column 20: `tru` is not a value"),
        "{line}"
    );
    // The first batch (lines 1 to 10) stays; nothing of the second.
    assert_eq!(stored(&db, "c").len(), 10);

    // Without --stopOnError every bad line is reported and the rest imported.
    let out = odm(&[
        "import",
        s(&db),
        "-c",
        "d",
        "--file",
        s(&json),
        "--batchSize",
        "10",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 13: malformed JSON at line 13, column 20"),
        "{stderr}"
    );
    assert!(stderr.contains("line 21: duplicate key"), "{stderr}");
    assert!(
        stderr.contains("2 document(s) failed to import"),
        "{stderr}"
    );
    assert_eq!(stored(&db, "d").len(), 23);

    // A duplicate key with --stopOnError: the same rule.
    lines[12] = "{\"_id\": 12}".to_owned();
    std::fs::write(&json, lines.join("\n")).unwrap();
    let line = fails(&[
        "import",
        s(&db),
        "-c",
        "e",
        "--file",
        s(&json),
        "--stopOnError",
        "--batchSize",
        "10",
    ]);
    assert!(line.contains("line 21: duplicate key"), "{line}");
    assert_eq!(stored(&db, "e").len(), 20);

    // Documents spread over several lines, and several on one line.
    std::fs::write(
        &json,
        "{\"_id\": 1,\n \"a\": [1,\n 2]}\n{\"_id\": 2} {\"_id\": 3}\n",
    )
    .unwrap();
    ok(&["import", s(&db), "-c", "multi", "--file", s(&json)]);
    assert_eq!(
        decoded(&db, "multi"),
        [
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"_id": 2},
            doc! {"_id": 3}
        ]
    );
}

#[test]
fn one_shot_queries_print_json_lines_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.odm");
    let docs: Vec<Document> = (0..6)
        .map(|i| doc! {"_id": i, "state": if i % 2 == 0 { "NY" } else { "CA" }, "pop": i * 10})
        .collect();
    seed(&db, "zips", &docs);
    let out = ok(&[
        "find",
        s(&db),
        "zips",
        r#"{"state": "NY"}"#,
        "--sort",
        r#"{"pop": -1}"#,
        "--limit",
        "2",
        "--jsonl",
    ]);
    assert_eq!(
        out,
        "{\"_id\":4,\"state\":\"NY\",\"pop\":40}\n{\"_id\":2,\"state\":\"NY\",\"pop\":20}\n"
    );
    let out = ok(&["find", s(&db), "zips", "{_id: {$lt: 2}}", "--table"]);
    assert_eq!(
        out,
        "_id  state  pop\n---  -----  ---\n  0  NY       0\n  1  CA      10\n"
    );
    let out = ok(&[
        "aggregate",
        s(&db),
        "zips",
        r#"[{"$group": {"_id": "$state", "total": {"$sum": "$pop"}}}, {"$sort": {"_id": 1}}]"#,
        "--jsonl",
    ]);
    assert_eq!(
        out,
        "{\"_id\":\"CA\",\"total\":90}\n{\"_id\":\"NY\",\"total\":60}\n"
    );
    let out = ok(&[
        "update",
        s(&db),
        "zips",
        r#"{"state": "CA"}"#,
        r#"{"$inc": {"pop": 1}}"#,
        "--multi",
    ]);
    assert_eq!(out, "{\"matched\":3,\"modified\":3}\n");
    let out = ok(&[
        "delete",
        s(&db),
        "zips",
        r#"{"pop": {"$gt": 40}}"#,
        "--multi",
    ]);
    assert_eq!(out, "{\"deleted\":1}\n");
    ok(&[
        "indexes",
        "create",
        s(&db),
        "zips",
        r#"{"state": 1}"#,
        "--quiet",
    ]);
    let out = ok(&["explain", s(&db), "zips", r#"{"state": "NY"}"#, "--jsonl"]);
    assert!(out.contains("state_1"), "{out}");
    // A pipeline's explain: the head's plan (the index, read in key order), then each stage.
    let out = ok(&[
        "aggregate",
        s(&db),
        "zips",
        r#"[{"$group": {"_id": "$state", "n": {"$sum": 1}}}]"#,
        "--explain",
        "--jsonl",
    ]);
    assert!(
        out.contains("state_1") && out.contains("\"inKeyOrder\":true"),
        "{out}"
    );
    let listed = ok(&["indexes", "list", s(&db), "zips"]);
    assert_eq!(listed.lines().count(), 2, "{listed}");
    ok(&["indexes", "drop", s(&db), "zips", "state_1"]);
    let line = fails(&["find", s(&db), "zips", r#"{"pop": {"$bogus": 1}}"#]);
    assert!(line.contains("$bogus"), "{line}");
    let line = fails(&["update", s(&db), "zips", "{}", r#"{"$set": {"_id": 9}}"#]);
    assert!(line.contains("_id"), "{line}");
}

#[test]
fn stats_verify_compact_and_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.odm");
    let docs: Vec<Document> = (0..3000)
        .map(|i| doc! {"_id": i, "pad": "x".repeat(100), "at": DateTime::from_millis(0)})
        .collect();
    seed(&db, "c", &docs);
    ok(&[
        "indexes",
        "create",
        s(&db),
        "c",
        r#"{"at": 1}"#,
        "--expireAfterSeconds",
        "60",
        "--quiet",
    ]);
    let stats = ok(&["stats", s(&db), "--json"]);
    let report = odm_cli::extjson::parse_document(&stats).unwrap();
    let c = report.get_array("collections").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(c.get("documents"), Some(&Bson::Int32(3000)));
    assert_eq!(c.get_array("indexes").unwrap().len(), 1);
    let table = ok(&["stats", s(&db)]);
    assert!(table.lines().nth(2).unwrap().starts_with("c  "), "{table}");
    assert!(ok(&["verify", s(&db)]).contains("consistent"));
    assert_eq!(ok(&["ttl", s(&db)]), "3000 expired document(s) deleted\n");
    let before = std::fs::metadata(&db).unwrap().len();
    ok(&["compact", s(&db), "--quiet"]);
    assert!(std::fs::metadata(&db).unwrap().len() < before);
    assert!(ok(&["verify", s(&db), "--quiet"]).contains("consistent"));
}

#[test]
fn verify_fails_on_index_drift_and_lists_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.odm");
    let docs: Vec<Document> = (0..50).map(|i| doc! {"_id": i, "k": i}).collect();
    seed(&db, "c", &docs);
    ok(&["indexes", "create", s(&db), "c", r#"{"k": 1}"#, "--quiet"]);
    // An entry no document accounts for, written behind the engine's back.
    {
        let raw = redb::Database::open(&db).unwrap();
        let txn = raw.begin_write().unwrap();
        let name = {
            use redb::TableHandle;
            txn.list_tables()
                .unwrap()
                .map(|t| t.name().to_owned())
                .find(|n| n.starts_with("odm.c") && n.contains(".i") && !n.contains(".delta"))
                .unwrap()
        };
        {
            let def: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new(&name);
            let mut table = txn.open_table(def).unwrap();
            table
                .insert(b"\xffstray".as_slice(), b"".as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let out = odm(&["verify", s(&db), "--quiet"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("`c` index `k_1`"), "{stdout}");
    assert!(
        text(&out.stderr).contains("1 problem(s) found"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
// Long on purpose: a list of mistakes and the one line each must print: a table, read row by row.
#[allow(clippy::too_many_lines)]
fn errors_a_person_can_act_on() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.odm");
    for command in ["stats", "verify", "compact", "ttl"] {
        let line = fails(&[command, s(&missing)]);
        assert!(
            line.ends_with("missing.odm: no such database file"),
            "{line}"
        );
    }
    assert!(!missing.exists(), "reading tools never create a file");
    let line = fails(&["find", s(&missing), "c"]);
    assert!(line.contains("no such database file"), "{line}");

    // A file of another storage format version.
    let old = dir.path().join("old.odm");
    drop(Database::open(&old).unwrap());
    {
        let raw = redb::Database::open(&old).unwrap();
        let txn = raw.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("odm.meta");
            let mut meta = txn.open_table(def).unwrap();
            meta.insert("format_version", 999u32.to_be_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let line = fails(&["stats", s(&old)]);
    assert!(
        line.contains("storage format version 999; this odm reads version"),
        "{line}"
    );

    // A file another process holds.
    let held = dir.path().join("held.odm");
    let holder = Database::open(&held).unwrap();
    let line = fails(&["export", s(&held), "-c", "c"]);
    assert!(line.contains("open in another process"), "{line}");
    drop(holder);

    // Not a database file at all.
    let junk = dir.path().join("junk.odm");
    std::fs::write(&junk, "hello, world\n".repeat(100)).unwrap();
    let line = fails(&["stats", s(&junk)]);
    assert!(line.contains("not a database file"), "{line}");
    assert_eq!(
        std::fs::read(&junk).unwrap(),
        "hello, world\n".repeat(100).as_bytes()
    );

    // Malformed JSON in an argument: where, and what.
    let db = dir.path().join("a.odm");
    seed(&db, "c", &[doc! {"_id": 1}]);
    let line = fails(&["find", s(&db), "c", r#"{"a": }"#]);
    assert_eq!(
        line,
        "odm: filter: malformed JSON at line 1, column 7: found `}` where a value was expected"
    );
    let line = fails(&["export", s(&db), "-c", "c", "--query", "{\"a\":\n 1,,}"]);
    assert!(
        line.contains("--query: malformed JSON at line 2, column 4"),
        "{line}"
    );

    // Unknown flags and missing arguments: one line, exit status 2.
    for args in [
        &["import", "--bogus"][..],
        &["export", s(&db)],
        &["frobnicate"],
    ] {
        let out = odm(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("odm: "), "{stderr}");
    }
    // A malformed --jsonArray stops the import at its line and column, writing nothing.
    let array = dir.path().join("array.json");
    std::fs::write(&array, "[{\"_id\": 1},\n {\"_id\": 2,}]").unwrap();
    let line = fails(&[
        "import",
        s(&db),
        "-c",
        "arr",
        "--jsonArray",
        "--file",
        s(&array),
    ]);
    assert!(
        line.contains("malformed JSON at line 2, column 12"),
        "{line}"
    );
    assert!(stored(&db, "arr").is_empty());

    // A line that is not UTF-8 is a bad line; the others are imported.
    let bytes = dir.path().join("bytes.json");
    std::fs::write(&bytes, b"{\"_id\": 1}\n{\"_id\": \"\xff\"}\n{\"_id\": 3}\n").unwrap();
    let out = odm(&["import", s(&db), "-c", "utf8", "--file", s(&bytes)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("line 2: the line is not valid UTF-8"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(decoded(&db, "utf8"), [doc! {"_id": 1}, doc! {"_id": 3}]);

    // CSV needs its field names.
    let csv = dir.path().join("n.csv");
    std::fs::write(&csv, "1,2\n").unwrap();
    let line = fails(&[
        "import",
        s(&db),
        "-c",
        "c2",
        "--type",
        "csv",
        "--file",
        s(&csv),
    ]);
    assert!(
        line.contains("--headerline, --fields or --fieldFile"),
        "{line}"
    );

    // A dump of a collection the file does not hold writes no folder.
    let out_dir = dir.path().join("nodump");
    let line = fails(&["dump", s(&db), "--out", s(&out_dir), "-c", "nothing"]);
    assert!(
        line.contains("no collection `nothing` (the file holds: "),
        "{line}"
    );
    assert!(!out_dir.exists());

    // A missing input file.
    let line = fails(&[
        "import",
        s(&db),
        "-c",
        "c",
        "--file",
        s(&dir.path().join("nope.json")),
    ]);
    assert!(line.contains("nope.json: No such file"), "{line}");
}

/// `odm shard-advisor`: each candidate's placement as a table, the picture when asked, the
/// sampled queries' routing; a malformed key or query line is one line naming it.
#[test]
fn shard_advisor_reports_each_candidate_and_refuses_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.odm");
    let docs: Vec<Document> = (0..600)
        .map(|i| doc! { "_id": i, "user": format!("u{}", i % 37), "pad": "x".repeat(100) })
        .collect();
    seed(&file, "events", &docs);
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        "{\"user\": \"u1\"}\n\n{\"filter\": {\"_id\": 5}}\n",
    )
    .unwrap();
    let picture = dir.path().join("advisor.svg");
    let out = ok(&[
        "shard-advisor",
        s(&file),
        "--collection",
        "events",
        "--shards",
        "3",
        "--key",
        "{_id: 1}",
        "--key",
        "{user: \"hashed\"}",
        "--queries",
        s(&queries),
        "--svg",
        s(&picture),
    ]);
    assert!(out.contains("600 documents"), "{out}");
    assert!(
        out.contains("{ \"_id\": 1 }") && out.contains("{ \"user\": \"hashed\" }"),
        "{out}"
    );
    // Each key routes one of the two queries to one shard and sends the other to all.
    assert_eq!(out.matches("50% / 0% / 50%").count(), 2, "{out}");
    assert!(
        std::fs::read_to_string(&picture)
            .unwrap()
            .starts_with("<svg")
    );

    let base = [
        "shard-advisor",
        s(&file),
        "--collection",
        "events",
        "--shards",
        "2",
    ];
    let err = fails(&[&base[..], &["--key", "{_id: -1}"]].concat());
    assert!(
        err.contains("--key") && err.contains("1 or \"hashed\""),
        "{err}"
    );
    let err = fails(&[&base[..], &["--key", "{_id: 1"]].concat());
    assert!(err.contains("--key"), "{err}");
    std::fs::write(&queries, "{\"user\": \"u1\"}\nnot json\n").unwrap();
    let err = fails(&[&base[..], &["--key", "{_id: 1}", "--queries", s(&queries)]].concat());
    assert!(err.contains("queries.jsonl:2"), "{err}");
    let err = fails(&[
        "shard-advisor",
        s(&file),
        "--collection",
        "nope",
        "--shards",
        "2",
        "--key",
        "{a: 1}",
    ]);
    assert!(err.contains("no collection `nope`"), "{err}");
    let err = fails(
        &[
            &base[..2],
            &["--collection", "events", "--shards", "0", "--key", "{a: 1}"],
        ]
        .concat(),
    );
    assert!(err.contains("1 to 10000 shards, not 0"), "{err}");
}

/// `odm configure-query-analyzer` and `odm analyze-shard-key`: MongoDB's two commands on a file
/// (an application that opens the file afterwards samples its queries), their refusals one
/// line each; `odm shard-advisor` reports the samples and MongoDB's metrics with the
/// simulation.
#[test]
fn query_analyzer_and_analyze_shard_key_on_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.odm");
    // ObjectIds made in insertion order, as drivers make them.
    let docs: Vec<Document> = (0..1200_u32)
        .map(|i| {
            let mut id = [0u8; 12];
            id[..4].copy_from_slice(&(1_700_000_000 + i).to_be_bytes());
            doc! { "_id": ObjectId::from_bytes(id), "t": i, "pad": "x".repeat(50) }
        })
        .collect();
    seed(&file, "events", &docs);
    {
        let db = Database::open(&file).unwrap();
        db.write(|t| {
            t.create_index("events", IndexSpec::ascending("t").unwrap())
                .map(drop)
        })
        .unwrap();
    }
    let on = ok(&[
        "configure-query-analyzer",
        s(&file),
        "--collection",
        "events",
        "--mode",
        "full",
        "--samples-per-second",
        "50",
    ]);
    assert!(
        on.contains("\"newConfiguration\"") && on.contains("\"full\""),
        "{on}"
    );
    let base = [
        "configure-query-analyzer",
        s(&file),
        "--collection",
        "events",
    ];
    let err = fails(&[&base[..], &["--mode", "sometimes"]].concat());
    assert!(err.contains("--mode") && err.contains("sometimes"), "{err}");
    let err = fails(&[&base[..], &["--mode", "full", "--samples-per-second", "51"]].concat());
    assert!(err.contains("less than or equal to 50"), "{err}");
    // The application: four reads by `t`, sampled as it runs.
    {
        let db = Database::open(&file).unwrap();
        for i in 0..4 {
            assert!(
                db.sample_query("events", odm_engine::sampling::SampledCommand::Find, |_| {
                    odm_engine::sampling::read_command(&doc! { "t": i * 100 }, None, None)
                })
            );
        }
    }
    let analysis = ok(&[
        "analyze-shard-key",
        s(&file),
        "--collection",
        "events",
        "--key",
        "{t: 1}",
    ]);
    assert!(analysis.contains("\"numDocsTotal\": 1200"), "{analysis}");
    assert!(analysis.contains("\"type\": \"monotonic\""), "{analysis}");
    assert!(
        analysis.contains("\"percentageOfSingleShardReads\": 100"),
        "{analysis}"
    );
    let err = fails(&[
        "analyze-shard-key",
        s(&file),
        "--collection",
        "events",
        "--key",
        "{nothere: 1}",
        "--no-read-write-distribution",
    ]);
    assert!(
        err.contains("supporting index") && err.contains("IllegalOperation, code 20"),
        "{err}"
    );
    let advisor = ok(&[
        "shard-advisor",
        s(&file),
        "--collection",
        "events",
        "--shards",
        "2",
        "--key",
        "{t: 1}",
    ]);
    assert!(advisor.contains("MongoDB's analyzeShardKey"), "{advisor}");
    assert!(
        advisor.contains("4 x find") && advisor.contains("{ \"t\": \"?number\" }"),
        "{advisor}"
    );
}
