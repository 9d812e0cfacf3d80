//! The operations running now: what `currentOp` lists and `killOp` and `killSessions` stop.
//!
//! Every command is registered for as long as it runs (`connection` registers it around the
//! command and the guard unregisters it), under an `opid` unique for the server's life, with
//! its [`Interrupt`]: the deadline its `maxTimeMS` sets and the kill flag `killOp` sets. The
//! command's thread has the interrupt entered, and threads that work for it (a cursor's, a
//! transaction's) enter it too, so a kill or an expiry stops the work at its next check with
//! `Interrupted` (11601) or `MaxTimeMSExpired` (50).
//!
//! `maxTimeMS` is read as MongoDB reads it: a number with an integral value in
//! `[0, 2147483647]`, else `BadValue`; 0 (or none) means no limit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bson::{Bson, Document, doc};
use odm_engine::ErrorCode;
use odm_engine::interrupt::Interrupt;

use super::command::CommandError;
use super::session::SessionId;

/// One running command, as `currentOp` reports it.
#[derive(Debug)]
pub struct Operation {
    pub opid: u32,
    pub interrupt: Interrupt,
    /// `command`, `query`, `insert`, `update`, `remove` or `getmore`, as MongoDB's `op`.
    pub op: &'static str,
    pub ns: String,
    /// The command document as shown (see [`summary`]).
    pub command: Document,
    pub client: String,
    pub app_name: Option<String>,
    pub connection_id: u64,
    /// The authenticated user: (database, name).
    pub user: Option<(String, String)>,
    pub lsid: Option<Document>,
    pub session: Option<SessionId>,
    pub started: Instant,
}

impl Operation {
    /// The `inprog` entry.
    pub fn to_document(&self) -> Document {
        let elapsed = self.started.elapsed();
        let mut doc = doc! {
            "type": "op",
            "opid": i64::from(self.opid),
            "active": true,
            "op": self.op,
            "ns": &self.ns,
            "command": self.command.clone(),
            "client": &self.client,
            "connectionId": i64::try_from(self.connection_id).unwrap_or(i64::MAX),
            "desc": format!("conn{}", self.connection_id),
            "secs_running": i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX),
            "microsecs_running": i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX),
            "killPending": self.interrupt.is_killed(),
        };
        if let Some(app) = &self.app_name {
            doc.insert("appName", app);
        }
        if let Some(lsid) = &self.lsid {
            doc.insert("lsid", lsid.clone());
        }
        if let Some((db, user)) = &self.user {
            doc.insert("effectiveUsers", vec![doc! {"user": user, "db": db}]);
        }
        doc
    }
}

/// The registry of running operations.
#[derive(Debug, Default)]
pub struct Operations {
    running: Mutex<BTreeMap<u32, Arc<Operation>>>,
    next: AtomicU32,
}

impl Operations {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u32, Arc<Operation>>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers an operation (its `opid` is assigned here) until the guard drops.
    pub fn register(&self, mut operation: Operation) -> Registered<'_> {
        let opid = loop {
            let id = self.next.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if id != 0 && !self.lock().contains_key(&id) {
                break id;
            }
        };
        operation.opid = opid;
        self.lock().insert(opid, Arc::new(operation));
        Registered {
            registry: self,
            opid,
        }
    }

    /// The running operations, in `opid` order.
    pub fn list(&self) -> Vec<Arc<Operation>> {
        self.lock().values().cloned().collect()
    }

    /// Marks operation `opid` killed; whether it was running.
    pub fn kill(&self, opid: u32) -> bool {
        match self.lock().get(&opid) {
            Some(op) => {
                op.interrupt.kill();
                true
            }
            None => false,
        }
    }

    /// Marks killed every operation of the sessions `chosen` selects.
    pub fn kill_sessions(&self, chosen: impl Fn(SessionId) -> bool) {
        for op in self.lock().values() {
            if op.session.is_some_and(&chosen) {
                op.interrupt.kill();
            }
        }
    }
}

/// Keeps an operation registered while it lives.
#[derive(Debug)]
pub struct Registered<'r> {
    registry: &'r Operations,
    opid: u32,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.opid);
    }
}

/// MongoDB's `op` for a command name.
pub fn op_kind(name: &str) -> &'static str {
    match name {
        "find" => "query",
        "insert" => "insert",
        "update" => "update",
        "delete" => "remove",
        "getMore" => "getmore",
        _ => "command",
    }
}

/// About how many bytes of a command `currentOp` shows, as MongoDB truncates at 1 KB.
const SHOWN_BYTES: usize = 1024;

/// The command as `currentOp` shows it: without `lsid` (shown on its own) and `$db`, its
/// fields in order while they fit in `SHOWN_BYTES` (1 KB); the names of those left out in
/// `$truncated`. Never copies more than the bound, however large the command (an insert of
/// 16 MiB).
pub fn summary(command: &Document) -> Document {
    let mut shown = Document::new();
    let mut left_out = Vec::new();
    let mut budget = SHOWN_BYTES;
    for (key, value) in command {
        if key == "lsid" || key == "$db" {
            continue;
        }
        match within(value, budget.saturating_sub(key.len())) {
            Some(size) if left_out.is_empty() => {
                budget -= size + key.len();
                shown.insert(key, value.clone());
            }
            _ => left_out.push(key.as_str()),
        }
    }
    if !left_out.is_empty() {
        shown.insert("$truncated", left_out.join(", "));
    }
    shown
}

/// About how many bytes `value` takes, if at most `budget`; reads no further than the budget
/// (a container's elements are looked at only when their count fits).
fn within(value: &Bson, budget: usize) -> Option<usize> {
    let mut used = 0usize;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        used += match value {
            Bson::String(s) | Bson::JavaScriptCode(s) | Bson::Symbol(s) => s.len() + 5,
            Bson::Binary(b) => b.bytes.len() + 5,
            Bson::RegularExpression(r) => r.pattern.len() + r.options.len() + 2,
            Bson::Document(d) => 5 + d.len() * 3,
            Bson::Array(a) => 5 + a.len() * 3,
            _ => 16,
        };
        if used > budget {
            return None;
        }
        match value {
            Bson::Document(d) => {
                used += d.keys().map(String::len).sum::<usize>();
                if used > budget {
                    return None;
                }
                pending.extend(d.values());
            }
            Bson::Array(a) => pending.extend(a.iter()),
            _ => {}
        }
    }
    Some(used)
}

/// The largest `maxTimeMS` MongoDB accepts.
const MAX_TIME_MS: i64 = i32::MAX as i64;

/// A command's time limit: its `maxTimeMS` (or a legacy `$maxTimeMS`), checked as MongoDB
/// checks it; `None` for no limit (absent or 0).
pub fn max_time(command: &Document) -> Result<Option<Duration>, CommandError> {
    let Some((field, value)) = ["maxTimeMS", "$maxTimeMS"]
        .into_iter()
        .find_map(|f| command.get(f).map(|v| (f, v)))
    else {
        return Ok(None);
    };
    let ms = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(d) if d.fract() == 0.0 && d.is_finite() && d.abs() < 1e18 => {
            #[allow(clippy::cast_possible_truncation)] // integral, and bounded just above
            let n = *d as i64;
            n
        }
        Bson::Double(_) => {
            return Err(CommandError::bad_value(format!(
                "{field} has non-integral value"
            )));
        }
        other => {
            return Err(CommandError::new(
                ErrorCode::BAD_VALUE,
                format!(
                    "{field} must be a number, not {}",
                    odm_engine::expr::type_name(other)
                ),
            ));
        }
    };
    if !(0..=MAX_TIME_MS).contains(&ms) {
        return Err(CommandError::bad_value(format!(
            "{ms} value for {field} is out of range [0, {MAX_TIME_MS}]"
        )));
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms.unsigned_abs())))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bson::{Bson, doc};

    use super::{max_time, summary};

    #[test]
    fn a_large_command_is_shown_within_about_a_kilobyte() {
        let documents: Vec<Bson> = (0..100_000)
            .map(|i| Bson::Document(doc! {"_id": i}))
            .collect();
        let insert = doc! {"insert": "c", "documents": documents, "ordered": true,
        "lsid": {"id": 1}, "$db": "d"};
        let shown = summary(&insert);
        assert_eq!(
            shown,
            doc! {"insert": "c", "$truncated": "documents, ordered"}
        );
        let find = doc! {"find": "c", "filter": {"x": 1}, "$db": "d"};
        assert_eq!(summary(&find), doc! {"find": "c", "filter": {"x": 1}});
    }

    #[test]
    fn max_time_ms_is_a_non_negative_integer_and_zero_means_none() {
        assert_eq!(max_time(&doc! {"find": "c"}).unwrap(), None);
        assert_eq!(max_time(&doc! {"maxTimeMS": 0}).unwrap(), None);
        assert_eq!(
            max_time(&doc! {"maxTimeMS": 150_i64}).unwrap(),
            Some(Duration::from_millis(150))
        );
        assert_eq!(
            max_time(&doc! {"$maxTimeMS": 5.0}).unwrap(),
            Some(Duration::from_millis(5))
        );
        for bad in [
            doc! {"maxTimeMS": -1},
            doc! {"maxTimeMS": 1.5},
            doc! {"maxTimeMS": "10"},
            doc! {"maxTimeMS": 2_147_483_648_i64},
        ] {
            let e = max_time(&bad).unwrap_err();
            assert_eq!((e.code, e.code_name.as_str()), (2, "BadValue"), "{bad}");
        }
    }
}
