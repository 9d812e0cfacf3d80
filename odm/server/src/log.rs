//! The server's log, as `getLog` serves it: MongoDB's structured lines (one JSON object an
//! event: `t`, `s`, `c`, `id`, `ctx`, `msg`, `attr`), kept in memory.
//!
//! - `global`: the newest [`KEPT_LINES`] lines, as MongoDB's in-memory log keeps them, with the
//!   count of every line written (`totalLinesWritten`).
//! - `startupWarnings`: the warnings of startup, kept apart (and in `global` too).
//!
//! What is logged, with MongoDB's message ids: the server listening (23016), connections
//! accepted (22943) and ended (22944), operations slower than the profiler's `slowms` whatever
//! the profiling level (51803, "Slow query"), and the startup warnings (data held in memory
//! only; access control off). The lines are not written anywhere else: the log is for clients
//! that ask, as drivers' and tools' tests do.
//!
//! The JSON is written here (a few lines for the value types log events hold, its strings by
//! [`odm_engine::json::string`]) rather than by a JSON library the server would otherwise not
//! need.

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::{Mutex, PoisonError};

use bson::{Bson, Document};
use odm_engine::json::string;

/// How many of the newest lines `global` keeps (MongoDB's in-memory log keeps 1,024).
pub const KEPT_LINES: usize = 1024;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Log {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    lines: VecDeque<String>,
    written: u64,
    warnings: Vec<String>,
}

/// What one event says: its component (`NETWORK`, `COMMAND`, `CONTROL`, ...), MongoDB's id for
/// the message, the thread context, the message and its attributes.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub component: &'a str,
    pub id: i32,
    pub context: &'a str,
    pub message: &'a str,
}

impl Log {
    /// Logs an event at severity `I` (information).
    pub fn info(&self, event: Event<'_>, attr: Document) {
        self.push(line('I', event, &attr), false);
    }

    /// Logs a warning of startup: in `global` and in `startupWarnings`.
    pub fn startup_warning(&self, event: Event<'_>, attr: Document) {
        self.push(line('W', event, &attr), true);
    }

    fn push(&self, line: String, startup_warning: bool) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if startup_warning {
            inner.warnings.push(line.clone());
        }
        if inner.lines.len() == KEPT_LINES {
            inner.lines.pop_front();
        }
        inner.lines.push_back(line);
        inner.written += 1;
    }

    /// `getLog`'s reply for a log name: the total written and the lines kept; `None` for a
    /// name that is not a log.
    pub fn get(&self, name: &str) -> Option<(u64, Vec<String>)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match name {
            "global" => Some((inner.written, inner.lines.iter().cloned().collect())),
            "startupWarnings" => Some((inner.warnings.len() as u64, inner.warnings.clone())),
            _ => None,
        }
    }
}

/// One line in MongoDB's format.
fn line(severity: char, event: Event<'_>, attr: &Document) -> String {
    let now = bson::DateTime::now()
        .try_to_rfc3339_string()
        .unwrap_or_default();
    let mut out = String::with_capacity(160);
    let _ = write!(out, r#"{{"t":{{"$date":"{now}"}},"s":"{severity}","c":"#);
    string(&mut out, event.component);
    let _ = write!(out, r#","id":{},"ctx":"#, event.id);
    string(&mut out, event.context);
    out.push_str(r#","msg":"#);
    string(&mut out, event.message);
    if !attr.is_empty() {
        out.push_str(r#","attr":"#);
        document(&mut out, attr, 0);
    }
    out.push('}');
    out
}

/// Nesting past this is written as a string: log attributes are shallow, and a command an
/// operation logs is not allowed to make the writer recurse without bound.
const MAX_DEPTH: usize = 16;

fn document(out: &mut String, doc: &Document, depth: usize) {
    out.push('{');
    for (i, (key, value)) in doc.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, key);
        out.push(':');
        json(out, value, depth + 1);
    }
    out.push('}');
}

/// A value as relaxed extended JSON, for the types log events hold; any other as its text.
fn json(out: &mut String, value: &Bson, depth: usize) {
    if depth > MAX_DEPTH {
        string(out, &value.to_string());
        return;
    }
    match value {
        Bson::String(s) => string(out, s),
        Bson::Boolean(b) => {
            let _ = write!(out, "{b}");
        }
        Bson::Int32(n) => {
            let _ = write!(out, "{n}");
        }
        Bson::Int64(n) => {
            let _ = write!(out, "{n}");
        }
        Bson::Double(x) if x.is_finite() => {
            let _ = write!(out, "{x}");
        }
        Bson::Null => out.push_str("null"),
        Bson::Document(d) => document(out, d, depth),
        Bson::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json(out, item, depth + 1);
            }
            out.push(']');
        }
        other => string(out, &other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::{Event, KEPT_LINES, Log};

    const EVENT: Event<'static> = Event {
        component: "NETWORK",
        id: 22943,
        context: "listener",
        message: "Connection accepted",
    };

    #[test]
    fn lines_are_mongodb_json_with_strings_escaped() {
        let log = Log::default();
        log.info(
            EVENT,
            doc! { "remote": "a\"b\\c\n", "n": 3_i64, "ok": true, "d": { "x": [1, 2.5] } },
        );
        let (written, lines) = log.get("global").unwrap();
        assert_eq!(written, 1);
        let line = &lines[0];
        assert!(line.starts_with(r#"{"t":{"$date":""#), "{line}");
        let (_, rest) = line.split_once(r#""},"s""#).unwrap();
        assert_eq!(
            rest,
            r#":"I","c":"NETWORK","id":22943,"ctx":"listener","msg":"Connection accepted","attr":{"remote":"a\"b\\c\n","n":3,"ok":true,"d":{"x":[1,2.5]}}}"#
        );
    }

    #[test]
    fn global_keeps_the_newest_lines_and_counts_all_and_startup_warnings_stay_apart() {
        let log = Log::default();
        log.startup_warning(EVENT, doc! {});
        for i in 0..KEPT_LINES + 10 {
            log.info(EVENT, doc! { "i": i as i64 });
        }
        let (written, lines) = log.get("global").unwrap();
        assert_eq!(written, KEPT_LINES as u64 + 11);
        assert_eq!(lines.len(), KEPT_LINES);
        assert!(lines[KEPT_LINES - 1].contains(&format!(r#""i":{}"#, KEPT_LINES + 9)));
        let (count, warnings) = log.get("startupWarnings").unwrap();
        assert_eq!((count, warnings.len()), (1, 1));
        assert!(warnings[0].contains(r#""s":"W""#));
        assert!(log.get("nope").is_none());
    }
}
