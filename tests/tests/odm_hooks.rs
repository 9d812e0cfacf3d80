//! Lifecycle hooks (`#[odm(hooks)]` and `odm::Hooks`): which writes run which hooks, a
//! before-hook's refusal writing nothing, `before_save` changing the value it stores, and the
//! writes no hook sees. Each test runs on the back end `odm::testing::database()` chooses.

use std::cell::RefCell;

use odm::{Document, Error, Filter, Hooks, ModifyOptions, WriteModel};
use serde::{Deserialize, Serialize};

thread_local! {
    /// The hooks run on this test's thread, in order.
    static RAN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn ran() -> Vec<String> {
    RAN.with(|ran| ran.borrow_mut().drain(..).collect())
}

fn record(event: String) {
    RAN.with(|ran| ran.borrow_mut().push(event));
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Document)]
#[odm(collection = "members", hooks)]
struct Member {
    #[odm(id)]
    id: i64,
    name: String,
}

fn member(id: i64, name: &str) -> Member {
    Member {
        id,
        name: name.into(),
    }
}

/// Refuses empty names everywhere, and trims names on save.
impl Hooks for Member {
    fn before_insert(&self) -> Result<(), String> {
        record(format!("before_insert {}", self.id));
        valid(self)
    }
    fn after_insert(&self, id: &bson::Bson) {
        record(format!("after_insert {id}"));
    }
    fn before_replace(&self) -> Result<(), String> {
        record(format!("before_replace {}", self.id));
        valid(self)
    }
    fn after_replace(&self) {
        record(format!("after_replace {}", self.id));
    }
    fn before_save(&mut self) -> Result<(), String> {
        self.name = self.name.trim().to_owned();
        record(format!("before_save {}", self.id));
        valid(self)
    }
    fn after_save(&self) {
        record(format!("after_save {}", self.id));
    }
    fn before_delete(&self) -> Result<(), String> {
        record(format!("before_delete {}", self.id));
        Ok(())
    }
    fn after_delete(&self) {
        record(format!("after_delete {}", self.id));
    }
}

fn valid(member: &Member) -> Result<(), String> {
    if member.name.trim().is_empty() {
        return Err(format!("member {} has no name", member.id));
    }
    Ok(())
}

fn refused_by(err: &Error, by: &str) -> bool {
    matches!(err, Error::Refused { hook, collection, .. } if *hook == by && collection == "members")
}

#[test]
fn inserts_run_their_hooks_and_a_refusal_writes_nothing() {
    let db = odm::testing::database().unwrap();
    let members = db.collection::<Member>().unwrap();
    ran();
    members.insert_one(&member(1, "ann")).unwrap();
    assert_eq!(ran(), ["before_insert 1", "after_insert 1"]);

    let err = members.insert_one(&member(2, " ")).unwrap_err();
    assert!(refused_by(&err, "before_insert"), "{err}");
    assert!(err.to_string().contains("member 2 has no name"), "{err}");
    assert_eq!(ran(), ["before_insert 2"]);

    // One refused value refuses the whole insert_many before anything is written.
    let err = members
        .insert_many(&[member(3, "bob"), member(4, "")])
        .unwrap_err();
    assert!(refused_by(&err, "before_insert"), "{err}");
    assert_eq!(ran(), ["before_insert 3", "before_insert 4"]);
    assert_eq!(members.count(Filter::all()).unwrap(), 1);

    members
        .insert_many(&[member(3, "bob"), member(4, "cy")])
        .unwrap();
    assert_eq!(
        ran(),
        [
            "before_insert 3",
            "before_insert 4",
            "after_insert 3",
            "after_insert 4"
        ]
    );
}

#[test]
fn a_failed_insert_runs_no_after_hook() {
    let db = odm::testing::database().unwrap();
    let members = db.collection::<Member>().unwrap();
    members.insert_one(&member(1, "ann")).unwrap();
    ran();
    let err = members.insert_one(&member(1, "again")).unwrap_err();
    assert_eq!(err.code(), Some(11000));
    assert_eq!(ran(), ["before_insert 1"]);
}

#[test]
fn save_runs_its_hooks_and_stores_what_before_save_made_of_the_value() {
    let db = odm::testing::database().unwrap();
    let members = db.collection::<Member>().unwrap();
    ran();
    let mut ann = member(1, "  ann  ");
    members.save(&mut ann).unwrap();
    assert_eq!(ann.name, "ann");
    assert_eq!(members.get(1).unwrap(), Some(member(1, "ann")));
    assert_eq!(ran(), ["before_save 1", "after_save 1"]);

    let mut blank = member(1, "   ");
    let err = members.save(&mut blank).unwrap_err();
    assert!(refused_by(&err, "before_save"), "{err}");
    assert_eq!(members.get(1).unwrap(), Some(member(1, "ann")));
    assert_eq!(ran(), ["before_save 1"]);
}

#[test]
fn replacements_and_deletes_of_a_known_document_run_their_hooks() {
    let db = odm::testing::database().unwrap();
    let members = db.collection::<Member>().unwrap();
    members.insert_one(&member(1, "ann")).unwrap();
    let f = Member::fields();
    ran();
    members.replace_one(f.id.eq(1), &member(1, "anne")).unwrap();
    assert_eq!(ran(), ["before_replace 1", "after_replace 1"]);
    // Nothing matched: no after-hook.
    members
        .replace_one(f.id.eq(9), &member(9, "nobody"))
        .unwrap();
    assert_eq!(ran(), ["before_replace 9"]);
    let err = members.replace_one(f.id.eq(1), &member(1, "")).unwrap_err();
    assert!(refused_by(&err, "before_replace"), "{err}");
    assert_eq!(members.get(1).unwrap().unwrap().name, "anne");
    ran();

    let options = ModifyOptions::default();
    members
        .find_one_and_replace(f.id.eq(1), &member(1, "annie"), &options)
        .unwrap();
    assert_eq!(ran(), ["before_replace 1", "after_replace 1"]);

    assert_eq!(members.delete_document(&member(1, "annie")).unwrap(), 1);
    assert_eq!(ran(), ["before_delete 1", "after_delete 1"]);
    assert_eq!(members.delete_document(&member(1, "annie")).unwrap(), 0);
    assert_eq!(ran(), ["before_delete 1"]);
}

#[test]
fn a_bulk_write_runs_the_after_hooks_of_what_ran_only() {
    let db = odm::testing::database().unwrap();
    let members = db.collection::<Member>().unwrap();
    members.insert_one(&member(2, "taken")).unwrap();
    let f = Member::fields();
    ran();
    // Ordered: the duplicate at position 1 stops the bulk; position 2 never runs.
    let result = members
        .bulk_write(
            [
                WriteModel::InsertOne(member(1, "ann")),
                WriteModel::InsertOne(member(2, "dup")),
                WriteModel::ReplaceOne {
                    filter: f.id.eq(2),
                    replacement: member(2, "replaced"),
                    upsert: false,
                },
            ],
            true,
        )
        .unwrap();
    assert_eq!(result.failures.len(), 1);
    assert_eq!(
        ran(),
        [
            "before_insert 1",
            "before_insert 2",
            "before_replace 2",
            "after_insert 1"
        ]
    );
    // A refusal refuses the whole bulk before it is sent.
    let err = members
        .bulk_write([WriteModel::InsertOne(member(5, ""))], false)
        .unwrap_err();
    assert!(refused_by(&err, "before_insert"), "{err}");
}

/// Operator updates and deletes by filter hold no value of the model: no hook runs.
#[test]
fn writes_by_filter_run_no_hook() {
    let db = odm::testing::database().unwrap();
    let members = db.collection::<Member>().unwrap();
    members.insert_one(&member(1, "ann")).unwrap();
    let f = Member::fields();
    ran();
    members.update_one(f.id.eq(1), f.name.set("")).unwrap();
    members
        .update_document(&member(1, "ann"), f.name.set("ann"))
        .unwrap();
    members.delete_many(f.id.eq(1)).unwrap();
    assert!(ran().is_empty());
}
