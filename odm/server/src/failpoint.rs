//! MongoDB's `failCommand` fail point, the test command drivers' own test suites use to make
//! the server fail, stall or drop a connection on chosen commands (`configureFailPoint`). It
//! exists only when the server is started with `--enable-test-commands`, as MongoDB offers it
//! only with `enableTestCommands`.
//!
//! Rules, as MongoDB applies them:
//! - It fires on a command named in `data.failCommands` (none when it is missing), from a
//!   connection whose application name is `data.appName` when that is given.
//! - `mode` decides how often: `"alwaysOn"`, `{times: n}` (the next n matches), `{skip: n}`
//!   (every match after the first n), `"off"`.
//! - When it fires it first waits `blockTimeMS` if `blockConnection`; then it closes the
//!   connection without a reply (`closeConnection`), or fails the command before it runs with
//!   `errorCode` (and `errorLabels`), or runs the command and adds `writeConcernError`.
//! - Without `errorLabels`, an error of a retryable write (a write with `txnNumber` outside a
//!   transaction, or a transaction's commit or abort) whose code is a retryable one carries the
//!   `RetryableWriteError` label, as MongoDB 4.4 and later add it.
//!
//! `failGetMoreAfterCursorCheckout` (`data: {errorCode}`) fails `getMore` with that code, as
//! the change-stream specification's tests use it; a code a change stream resumes after
//! carries `ResumableChangeStreamError`, as MongoDB 4.4 and later label it.
//!
//! `maxTimeAlwaysTimeOut` fails every command that runs under a time limit with
//! `MaxTimeMSExpired` (50), as if the limit had passed: a command carrying a positive
//! `maxTimeMS`, and a `getMore` of a cursor opened with one (whose limit covers it).
//!
//! `onPrimaryTransactionalWrite` fires on retryable writes (`txnNumber` outside a transaction),
//! as the retryable-writes specification's tests use it: the write commits, with its retry
//! record, and the connection closes before the reply, so the driver retries and gets the
//! recorded reply; with `data.failBeforeCommitExceptionCode` the connection closes before the
//! write runs, so nothing is written. Its `skip` counts statements, as MongoDB counts them: a
//! command whose statements go past the skip fires before any of them runs (MongoDB writes
//! the skipped ones first).

use std::sync::Mutex;
use std::time::Duration;

use bson::{Bson, Document, doc};
use odm_engine::ErrorCode;

use odm_engine::expr::whole_number;

use crate::command::{CommandError, CommandResult, Ctx};

/// The fail point's configuration, when it is on.
#[derive(Debug, Default)]
pub struct FailPoints {
    fail_command: Mutex<Option<FailCommand>>,
    fail_get_more: Mutex<Option<FailCommand>>,
    transactional_write: Mutex<Option<FailCommand>>,
    max_time: Mutex<Option<Mode>>,
}

#[derive(Debug, Clone)]
struct FailCommand {
    mode: Mode,
    commands: Vec<String>,
    app_name: Option<String>,
    block: Option<Duration>,
    close_connection: bool,
    error_code: Option<i32>,
    error_labels: Option<Vec<String>>,
    write_concern_error: Option<Document>,
    /// `failGetMoreAfterCursorCheckout`: a resumable code gets MongoDB's
    /// `ResumableChangeStreamError` label (`failCommand` adds only the labels it is given).
    change_stream_labels: bool,
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    AlwaysOn,
    Times(i64),
    Skip(i64),
}

/// What the fail point does to one command.
#[derive(Debug, Clone, Default)]
pub struct Firing {
    pub block: Option<Duration>,
    /// Close the connection before the command runs.
    pub close_connection: bool,
    /// Run the command, then close the connection without its reply.
    pub close_after: bool,
    /// Fail the command, before it runs, with this error.
    pub error: Option<CommandError>,
    /// Run the command, then add this `writeConcernError` (and these labels).
    pub write_concern_error: Option<(Document, Vec<String>)>,
}

impl FailPoints {
    /// What the fail point does to `command` (named `name`) from a connection whose
    /// application is `app_name`; `None` when it does not fire.
    pub fn fire(&self, name: &str, command: &Document, app_name: Option<&str>) -> Option<Firing> {
        Self::fire_slot(&self.fail_command, name, command, app_name, 1)
            .or_else(|| Self::fire_slot(&self.fail_get_more, name, command, app_name, 1))
            .or_else(|| {
                if !is_retryable_write(name, command) || command.contains_key("autocommit") {
                    return None;
                }
                let statements = statement_count(command);
                let mut firing = Self::fire_slot(
                    &self.transactional_write,
                    name,
                    command,
                    app_name,
                    statements,
                )?;
                // Without an error the write commits and the reply is lost.
                firing.close_after = !firing.close_connection;
                Some(firing)
            })
    }

    /// Whether `maxTimeAlwaysTimeOut` fails a command that runs under a time limit now (its
    /// mode counted down).
    pub fn max_time_fires(&self) -> bool {
        let mut slot = self
            .max_time
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fires = match slot.as_mut() {
            None => false,
            Some(Mode::Times(n)) => {
                *n -= 1;
                true
            }
            Some(Mode::Skip(n)) if *n > 0 => {
                *n -= 1;
                false
            }
            Some(Mode::AlwaysOn | Mode::Skip(_)) => true,
        };
        if matches!(*slot, Some(Mode::Times(n)) if n <= 0) {
            *slot = None;
        }
        fires
    }

    /// Fires `slot`'s fail point on a command that counts as `weight` matches (its statements,
    /// for `onPrimaryTransactionalWrite`, whose `skip` counts documents).
    fn fire_slot(
        slot: &Mutex<Option<FailCommand>>,
        name: &str,
        command: &Document,
        app_name: Option<&str>,
        weight: i64,
    ) -> Option<Firing> {
        let mut slot = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let point = slot.as_mut()?;
        if !point.commands.iter().any(|c| c == name)
            || point
                .app_name
                .as_deref()
                .is_some_and(|wanted| Some(wanted) != app_name)
        {
            return None;
        }
        match &mut point.mode {
            Mode::Times(n) => {
                *n -= 1;
            }
            // A command whose matches all fall within the skip passes; one whose matches go
            // past it fires (before any of them runs).
            Mode::Skip(n) if *n >= weight => {
                *n -= weight;
                return None;
            }
            Mode::Skip(n) => *n = 0,
            Mode::AlwaysOn => {}
        }
        let point = point.clone();
        if matches!(point.mode, Mode::Times(n) if n <= 0) {
            *slot = None;
        }
        let retryable = is_retryable_write(name, command);
        let labels_for = |code: i32| match &point.error_labels {
            Some(labels) => labels.clone(),
            None if retryable && RETRYABLE_CODES.contains(&code) => {
                vec!["RetryableWriteError".to_owned()]
            }
            None if point.change_stream_labels && RESUMABLE_CHANGE_STREAM_CODES.contains(&code) => {
                vec!["ResumableChangeStreamError".to_owned()]
            }
            None => Vec::new(),
        };
        let error = point.error_code.map(|code| {
            let error = CommandError {
                code,
                code_name: ErrorCode::of(code).name(),
                message: "Failing command via 'failCommand' failpoint".to_owned(),
                labels: labels_for(code),
                extra: None,
            };
            // Labels given are the labels; without them, MongoDB's own apply.
            if point.error_labels.is_some() {
                error
            } else {
                crate::session::with_transient_label(command, error)
            }
        });
        let write_concern_error = point.write_concern_error.map(|wce| {
            let code = wce.get("code").and_then(whole_number).unwrap_or(0) as i32;
            (wce, labels_for(code))
        });
        Some(Firing {
            block: point.block,
            close_connection: point.close_connection,
            close_after: false,
            error,
            write_concern_error,
        })
    }

    /// `configureFailPoint`: sets or clears the fail point; answers how often it fired.
    fn configure(&self, command: &Document) -> CommandResult {
        let name = command.get_str("configureFailPoint").map_err(|_| {
            CommandError::new(
                ErrorCode::TYPE_MISMATCH,
                "configureFailPoint takes the fail point's name as a string",
            )
        })?;
        if !matches!(
            name,
            "failCommand"
                | "failGetMoreAfterCursorCheckout"
                | "onPrimaryTransactionalWrite"
                | "maxTimeAlwaysTimeOut"
        ) {
            return Err(CommandError::bad_value(format!(
                "Cannot find failpoint with name {name}: this server has failCommand, failGetMoreAfterCursorCheckout, onPrimaryTransactionalWrite and maxTimeAlwaysTimeOut"
            )));
        }
        let mode = match command.get("mode") {
            Some(Bson::String(m)) if m == "off" => None,
            Some(Bson::String(m)) if m == "alwaysOn" => Some(Mode::AlwaysOn),
            Some(Bson::Document(m)) => {
                let count = |key: &str| m.get(key).and_then(whole_number).filter(|n| *n >= 0);
                match (count("times"), count("skip")) {
                    (Some(n), None) => Some(Mode::Times(n)),
                    (None, Some(n)) => Some(Mode::Skip(n)),
                    _ => {
                        return Err(CommandError::bad_value(
                            "mode must be \"alwaysOn\", \"off\", {times: n} or {skip: n} with n \
                             a non-negative whole number",
                        ));
                    }
                }
            }
            _ => {
                return Err(CommandError::bad_value(
                    "mode must be \"alwaysOn\", \"off\", {times: n} or {skip: n}",
                ));
            }
        };
        let data = match command.get("data") {
            Some(Bson::Document(d)) => d.clone(),
            None => Document::new(),
            Some(_) => return Err(CommandError::bad_value("data must be a document")),
        };
        if name == "maxTimeAlwaysTimeOut" {
            *self
                .max_time
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                mode.filter(|m| !matches!(m, Mode::Times(0)));
            return Ok(doc! { "count": 0_i64 }.into());
        }
        let get_more = name == "failGetMoreAfterCursorCheckout";
        let transactional = name == "onPrimaryTransactionalWrite";
        let point = match mode {
            None | Some(Mode::Times(0)) => None,
            Some(mode) if transactional => Some(FailCommand {
                mode,
                commands: crate::session::RETRYABLE
                    .iter()
                    .map(|c| (*c).to_owned())
                    .collect(),
                app_name: None,
                block: None,
                // Before the write runs when it is to fail before its commit.
                close_connection: data.contains_key("failBeforeCommitExceptionCode"),
                error_code: None,
                error_labels: None,
                write_concern_error: None,
                change_stream_labels: false,
            }),
            Some(mode) if get_more => Some(FailCommand {
                mode,
                commands: vec!["getMore".to_owned()],
                app_name: None,
                block: None,
                close_connection: false,
                error_code: Some(
                    data.get("errorCode")
                        .and_then(whole_number)
                        .map_or(ErrorCode::INTERNAL_ERROR.code, |c| c as i32),
                ),
                error_labels: None,
                write_concern_error: None,
                change_stream_labels: true,
            }),
            Some(mode) => Some(parse_data(mode, &data)?),
        };
        let slot = if get_more {
            &self.fail_get_more
        } else if transactional {
            &self.transactional_write
        } else {
            &self.fail_command
        };
        *slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = point;
        Ok(doc! { "count": 0_i64 }.into())
    }
}

fn parse_data(mode: Mode, data: &Document) -> Result<FailCommand, CommandError> {
    let strings = |key: &str| -> Result<Option<Vec<String>>, CommandError> {
        match data.get(key) {
            None => Ok(None),
            Some(Bson::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str().map(str::to_owned).ok_or_else(|| {
                        CommandError::bad_value(format!("data.{key} must hold strings"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(CommandError::bad_value(format!(
                "data.{key} must be an array"
            ))),
        }
    };
    // Without `failCommands` the point is set and fires on no command.
    let commands = strings("failCommands")?.unwrap_or_default();
    let flag = |key: &str| data.get(key).and_then(Bson::as_bool).unwrap_or(false);
    let block = flag("blockConnection").then(|| {
        let ms = data.get("blockTimeMS").and_then(whole_number).unwrap_or(0);
        Duration::from_millis(ms.clamp(0, 600_000) as u64)
    });
    Ok(FailCommand {
        mode,
        commands,
        app_name: data.get_str("appName").ok().map(str::to_owned),
        block,
        close_connection: flag("closeConnection"),
        error_code: data
            .get("errorCode")
            .and_then(whole_number)
            .map(|c| c as i32),
        error_labels: strings("errorLabels")?,
        write_concern_error: data.get_document("writeConcernError").ok().cloned(),
        change_stream_labels: false,
    })
}

pub fn configure_fail_point(ctx: &mut Ctx<'_>, command: &Document) -> CommandResult {
    ctx.server.fail_points.configure(command)
}

/// The statements of a write command: its documents, updates or deletes (one for any other).
fn statement_count(command: &Document) -> i64 {
    ["documents", "updates", "deletes"]
        .iter()
        .find_map(|field| command.get_array(field).ok())
        .map_or(1, |statements| statements.len() as i64)
}

/// Codes whose errors a driver may retry a write after (MongoDB's `RetryableWriteError`).
/// A write concern's timeout (64) is not among them: the write happened.
const RETRYABLE_CODES: [i32; 12] = [
    6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436,
];

/// Codes after which a change stream resumes (the change-stream specification's list), which
/// MongoDB labels `ResumableChangeStreamError` on a `getMore`.
const RESUMABLE_CHANGE_STREAM_CODES: [i32; 17] = [
    6, 7, 89, 91, 133, 150, 189, 234, 262, 9001, 10107, 11600, 11602, 13388, 13435, 13436, 63,
];

/// A write a driver retries: one carrying `txnNumber` outside a transaction, or the end of a
/// transaction.
fn is_retryable_write(name: &str, command: &Document) -> bool {
    match name {
        "commitTransaction" | "abortTransaction" => true,
        "insert" | "update" | "delete" | "findAndModify" | "findandmodify" | "bulkWrite" => {
            command.contains_key("txnNumber") && !command.contains_key("autocommit")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured(command: Document) -> FailPoints {
        let points = FailPoints::default();
        points.configure(&command).expect("configures");
        points
    }

    #[test]
    fn times_fires_that_often_then_turns_off() {
        let points = configured(doc! {
            "configureFailPoint": "failCommand", "mode": {"times": 2},
            "data": {"failCommands": ["insert"], "errorCode": 91},
        });
        let insert = doc! {"insert": "c"};
        assert!(points.fire("find", &doc! {"find": "c"}, None).is_none());
        for _ in 0..2 {
            let firing = points.fire("insert", &insert, None).expect("fires");
            assert_eq!(firing.error.expect("an error").code, 91);
        }
        assert!(points.fire("insert", &insert, None).is_none());
    }

    #[test]
    fn skip_lets_the_first_through_and_app_name_narrows() {
        let points = configured(doc! {
            "configureFailPoint": "failCommand", "mode": {"skip": 1},
            "data": {"failCommands": ["find"], "closeConnection": true, "appName": "a"},
        });
        let find = doc! {"find": "c"};
        assert!(points.fire("find", &find, Some("b")).is_none());
        assert!(points.fire("find", &find, Some("a")).is_none());
        assert!(
            points
                .fire("find", &find, Some("a"))
                .unwrap()
                .close_connection
        );
        assert!(
            points
                .fire("find", &find, Some("a"))
                .unwrap()
                .close_connection
        );
    }

    #[test]
    fn retryable_writes_get_their_label_unless_labels_are_given() {
        let points = configured(doc! {
            "configureFailPoint": "failCommand", "mode": "alwaysOn",
            "data": {"failCommands": ["insert"], "errorCode": 10107},
        });
        let retryable = doc! {"insert": "c", "txnNumber": 1_i64};
        let error = points
            .fire("insert", &retryable, None)
            .unwrap()
            .error
            .unwrap();
        assert_eq!(error.labels, vec!["RetryableWriteError".to_owned()]);
        assert_eq!(error.code_name, "NotWritablePrimary");
        let plain = points.fire("insert", &doc! {"insert": "c"}, None).unwrap();
        assert!(plain.error.unwrap().labels.is_empty());
        let points = configured(doc! {
            "configureFailPoint": "failCommand", "mode": "alwaysOn",
            "data": {"failCommands": ["insert"], "errorCode": 10107, "errorLabels": []},
        });
        let error = points
            .fire("insert", &retryable, None)
            .unwrap()
            .error
            .unwrap();
        assert!(error.labels.is_empty());
    }

    #[test]
    fn transaction_errors_get_the_transient_label_unless_labels_are_given() {
        let in_transaction = doc! {"insert": "c", "txnNumber": 1_i64, "autocommit": false};
        for (code, transient) in [(251, true), (112, true), (239, true), (11000, false)] {
            let points = configured(doc! {
                "configureFailPoint": "failCommand", "mode": "alwaysOn",
                "data": {"failCommands": ["insert", "commitTransaction"], "errorCode": code},
            });
            let error = points
                .fire("insert", &in_transaction, None)
                .unwrap()
                .error
                .unwrap();
            let labelled = error
                .labels
                .iter()
                .any(|l| l == "TransientTransactionError");
            assert_eq!(labelled, transient, "{code}: {:?}", error.labels);
            // Outside a transaction no code is transient.
            let alone = points.fire("insert", &doc! {"insert": "c"}, None).unwrap();
            assert!(alone.error.unwrap().labels.is_empty());
        }
        let points = configured(doc! {
            "configureFailPoint": "failCommand", "mode": "alwaysOn",
            "data": {"failCommands": ["insert"], "errorCode": 251, "errorLabels": []},
        });
        let error = points
            .fire("insert", &in_transaction, None)
            .unwrap()
            .error
            .unwrap();
        assert!(error.labels.is_empty());
    }

    #[test]
    fn max_time_always_time_out_fires_in_its_mode() {
        let points = configured(doc! {
            "configureFailPoint": "maxTimeAlwaysTimeOut", "mode": {"times": 2},
        });
        assert!(points.max_time_fires());
        assert!(points.max_time_fires());
        assert!(!points.max_time_fires());
        let points = configured(doc! {
            "configureFailPoint": "maxTimeAlwaysTimeOut", "mode": {"skip": 1},
        });
        assert!(!points.max_time_fires());
        assert!(points.max_time_fires());
        points
            .configure(&doc! {"configureFailPoint": "maxTimeAlwaysTimeOut", "mode": "off"})
            .unwrap();
        assert!(!points.max_time_fires());
    }

    #[test]
    fn off_clears_and_bad_configurations_are_refused() {
        let points = configured(doc! {
            "configureFailPoint": "failCommand", "mode": "alwaysOn",
            "data": {"failCommands": ["ping"], "errorCode": 2},
        });
        points
            .configure(&doc! {"configureFailPoint": "failCommand", "mode": "off"})
            .unwrap();
        assert!(points.fire("ping", &doc! {"ping": 1}, None).is_none());
        for bad in [
            doc! {"configureFailPoint": "other", "mode": "alwaysOn"},
            doc! {"configureFailPoint": "failCommand", "mode": "sometimes"},
            doc! {"configureFailPoint": "failCommand", "mode": {"times": -1}, "data": {"failCommands": []}},
            doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": {"failCommands": "ping"}},
        ] {
            assert!(points.configure(&bad).is_err(), "{bad}");
        }
        // Without `failCommands` the point is set and fails nothing.
        let nothing = configured(doc! {
            "configureFailPoint": "failCommand", "mode": "alwaysOn",
            "data": {"closeConnection": true},
        });
        assert!(nothing.fire("find", &doc! {"find": "c"}, None).is_none());
    }

    /// `onPrimaryTransactionalWrite`'s `skip` counts statements: a batch inside the skip
    /// passes, the first that goes past it fires, and every retry after.
    #[test]
    fn the_transactional_write_point_skips_statements() {
        let points = configured(doc! {
            "configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"skip": 3},
            "data": {"failBeforeCommitExceptionCode": 1},
        });
        let insert = |n: i32| {
            let documents: Vec<Document> = (0..n).map(|i| doc! {"_id": i}).collect();
            doc! {"insert": "c", "documents": documents, "lsid": {"id": 1}, "txnNumber": 1_i64}
        };
        assert!(points.fire("insert", &insert(2), None).is_none());
        assert!(points.fire("insert", &insert(1), None).is_none());
        for _ in 0..2 {
            let firing = points
                .fire("insert", &insert(1), None)
                .expect("past the skip");
            assert!(firing.close_connection);
        }
    }
}
