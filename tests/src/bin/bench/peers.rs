//! The peers `bench core` runs beside the engine with `--features peers`: `TalaDB` (an embedded
//! document database on redb with MongoDB-style JSON filters) and `native_db` (typed records on
//! redb with primary and secondary keys), each on the same items, phases and durability.
//!
//! What each API offers shapes its figures, and the README says so beside them:
//! - `TalaDB`'s `_id` is a ULID, so an item's id is stored as the ULID of the same number. A get
//!   (`find_by_id`) and a query (`find`) each open their own read transaction: its API has no
//!   read transaction to share across a batch of gets.
//! - `native_db` encodes records with bincode (its default `native_model` codec), where the
//!   engine, raw redb and SQLite encode BSON or JSON; it decodes the same `Item` fields.

use std::path::Path;
use std::sync::LazyLock;

use native_db::{Builder, Models, ToKey, native_db};
use native_model::{Model, native_model};
use serde::{Deserialize, Serialize};
use serde_json::json;
use taladb::{TypedCollection, Ulid};

use super::core::{BATCH, Item, Named, System, fresh, on_threads};

/// Opens each peer, named, on a fresh file in `dir`, with the benchmark's two secondary
/// indexes.
pub(crate) fn open(dir: &Path) -> Result<Vec<Named>, Box<dyn std::error::Error>> {
    Ok(vec![
        ("taladb", Box::new(Tala::open(&fresh(dir, "taladb.redb"))?)),
        (
            "native_db",
            Box::new(Native::open(&fresh(dir, "native_db.redb"))?),
        ),
    ])
}

/// An item as `TalaDB` stores it: the id as a ULID string under `_id`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct TalaItem {
    #[serde(rename = "_id")]
    ulid: String,
    user: String,
    category: i32,
    score: f64,
    created_ms: i64,
    title: String,
    tags: Vec<String>,
}

fn ulid(id: i64) -> Ulid {
    Ulid::from(id as u128)
}

impl From<&Item> for TalaItem {
    fn from(item: &Item) -> Self {
        TalaItem {
            ulid: ulid(item.id).to_string(),
            user: item.user.clone(),
            category: item.category,
            score: item.score,
            created_ms: item.created_ms,
            title: item.title.clone(),
            tags: item.tags.clone(),
        }
    }
}

struct Tala {
    /// Kept open for the collection's lifetime.
    _db: taladb::Database,
    items: TypedCollection<TalaItem>,
}

impl Tala {
    fn open(path: &Path) -> Result<Self, taladb::TalaDbError> {
        let db = taladb::Database::open(path)?;
        // Every commit synced, as the engine's, raw redb's and SQLite's (synchronous=FULL).
        db.set_durability(false);
        let items = db.typed::<TalaItem>("items")?;
        items.create_index("user")?;
        items.create_index("category")?;
        Ok(Tala { _db: db, items })
    }
}

impl System for Tala {
    fn write(&mut self, items: &[Item]) {
        let items: Vec<TalaItem> = items.iter().map(TalaItem::from).collect();
        self.items.insert_many(&items).expect("insert");
    }

    fn write_concurrently(&mut self, items: &[Item]) {
        let collection = &self.items;
        on_threads(items, |share| {
            for item in share {
                collection.insert(&TalaItem::from(item)).expect("insert");
            }
        });
    }

    fn get_many(&mut self, ids: &[i64]) -> i64 {
        ids.iter()
            .map(|id| {
                let item = self.items.find_by_id(ulid(*id)).expect("get");
                i64::from(item.expect("present").category)
            })
            .sum()
    }

    fn scan(&mut self) -> usize {
        let all = self.items.find(json!({})).expect("scan");
        all.iter().filter(|i| !i.user.is_empty()).count()
    }

    fn query(&mut self, user: &str) -> usize {
        let found = self.items.find(json!({ "user": user })).expect("query");
        found.iter().filter(|i| i.user == user).count()
    }
}

/// An item as `native_db` stores it, with the same two secondary keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[native_model(id = 1, version = 1)]
#[native_db]
struct NativeItem {
    #[primary_key]
    id: i64,
    #[secondary_key]
    user: String,
    #[secondary_key]
    category: i32,
    score: f64,
    created_ms: i64,
    title: String,
    tags: Vec<String>,
}

impl From<&Item> for NativeItem {
    fn from(item: &Item) -> Self {
        NativeItem {
            id: item.id,
            user: item.user.clone(),
            category: item.category,
            score: item.score,
            created_ms: item.created_ms,
            title: item.title.clone(),
            tags: item.tags.clone(),
        }
    }
}

/// `native_db`'s databases borrow their models for their whole life.
static MODELS: LazyLock<Models> = LazyLock::new(|| {
    let mut models = Models::new();
    models.define::<NativeItem>().expect("the model defines");
    models
});

struct Native {
    db: native_db::Database<'static>,
}

impl Native {
    fn open(path: &Path) -> Result<Self, Box<native_db::db_type::Error>> {
        Ok(Native {
            db: Builder::new().create(&MODELS, path).map_err(Box::new)?,
        })
    }
}

/// Inserts `items` in one durable transaction (`native_db` commits with redb's default,
/// immediate durability).
fn native_write(db: &native_db::Database<'static>, items: &[Item]) {
    let txn = db.rw_transaction().expect("begin");
    for item in items {
        txn.insert(NativeItem::from(item)).expect("insert");
    }
    txn.commit().expect("commit");
}

impl System for Native {
    fn write(&mut self, items: &[Item]) {
        native_write(&self.db, items);
    }

    fn write_concurrently(&mut self, items: &[Item]) {
        let db = &self.db;
        on_threads(items, |share| {
            for item in share {
                native_write(db, std::slice::from_ref(item));
            }
        });
    }

    fn get_many(&mut self, ids: &[i64]) -> i64 {
        let mut checksum = 0;
        for batch in ids.chunks(BATCH) {
            let txn = self.db.r_transaction().expect("read");
            for id in batch {
                let item: NativeItem = txn.get().primary(*id).expect("get").expect("present");
                checksum += i64::from(item.category);
            }
        }
        checksum
    }

    fn scan(&mut self) -> usize {
        let txn = self.db.r_transaction().expect("read");
        let scan = txn.scan().primary::<NativeItem>().expect("scan");
        scan.all()
            .expect("iter")
            .map(|item| item.expect("row"))
            .filter(|i| !i.user.is_empty())
            .count()
    }

    fn query(&mut self, user: &str) -> usize {
        let txn = self.db.r_transaction().expect("read");
        let by_user = txn
            .scan()
            .secondary::<NativeItem>(NativeItemKey::user)
            .expect("scan");
        by_user
            .range(user.to_string()..=user.to_string())
            .expect("range")
            .map(|item| item.expect("row"))
            .filter(|i| i.user == user)
            .count()
    }
}
