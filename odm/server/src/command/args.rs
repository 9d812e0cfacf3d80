//! Reading a command's arguments: each accessor names the argument and the type it wanted when
//! the command holds something else, as MongoDB's parsers do (`TypeMismatch`, 14).

use bson::{Bson, Document};
use odm_engine::ErrorCode;

use super::CommandError;

/// MongoDB's names for types and its rule for whole numbers, as the engine has them.
pub use odm_engine::expr::{type_name, whole_number};

/// The generic arguments any command may carry (MongoDB's `generic_argument.idl`, those
/// drivers and tools send): a command that checks its fields accepts these beside its own.
pub const GENERIC_ARGUMENTS: [&str; 17] = [
    "$db",
    "lsid",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "stmtId",
    "$clusterTime",
    "$readPreference",
    "readConcern",
    "writeConcern",
    "comment",
    "maxTimeMS",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "txnRetryCounter",
    "$audit",
];

/// Whether `name` is one of the [`GENERIC_ARGUMENTS`].
pub fn is_generic_argument(name: &str) -> bool {
    GENERIC_ARGUMENTS.contains(&name)
}

/// A command's document, read argument by argument.
#[derive(Debug, Clone, Copy)]
pub struct Args<'d> {
    pub doc: &'d Document,
    /// The command's name, for messages.
    pub command: &'static str,
}

impl<'d> Args<'d> {
    pub fn new(doc: &'d Document, command: &'static str) -> Self {
        Args { doc, command }
    }

    fn mismatch(&self, name: &str, wanted: &str, found: &Bson) -> CommandError {
        CommandError::new(
            ErrorCode::TYPE_MISMATCH,
            format!(
                "{}.{name} is the wrong type '{}', expected type '{wanted}'",
                self.command,
                type_name(found)
            ),
        )
    }

    /// A missing required argument.
    pub fn missing(&self, name: &str) -> CommandError {
        CommandError::new(
            ErrorCode::IDL_FAILED_TO_PARSE,
            format!("{}: missing required field '{name}'", self.command),
        )
    }

    pub fn get(&self, name: &str) -> Option<&'d Bson> {
        self.doc.get(name)
    }

    pub fn str(&self, name: &str) -> Result<Option<&'d str>, CommandError> {
        match self.doc.get(name) {
            None => Ok(None),
            Some(Bson::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.mismatch(name, "string", other)),
        }
    }

    pub fn required_str(&self, name: &str) -> Result<&'d str, CommandError> {
        self.str(name)?.ok_or_else(|| self.missing(name))
    }

    /// A document argument; `null` counts as absent, as MongoDB's optional fields allow.
    pub fn doc(&self, name: &str) -> Result<Option<&'d Document>, CommandError> {
        match self.doc.get(name) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::Document(d)) => Ok(Some(d)),
            Some(other) => Err(self.mismatch(name, "object", other)),
        }
    }

    pub fn array(&self, name: &str) -> Result<Option<&'d Vec<Bson>>, CommandError> {
        match self.doc.get(name) {
            None => Ok(None),
            Some(Bson::Array(a)) => Ok(Some(a)),
            Some(other) => Err(self.mismatch(name, "array", other)),
        }
    }

    /// An array of documents.
    pub fn documents(&self, name: &str) -> Result<Option<Vec<&'d Document>>, CommandError> {
        let Some(array) = self.array(name)? else {
            return Ok(None);
        };
        array
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Bson::Document(d) => Ok(d),
                other => Err(self.mismatch(&format!("{name}.{i}"), "object", other)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An array of documents, copied out of the command.
    pub fn owned_documents(&self, name: &str) -> Result<Option<Vec<Document>>, CommandError> {
        Ok(self
            .documents(name)?
            .map(|docs| docs.into_iter().cloned().collect()))
    }

    /// A boolean; MongoDB's command parsers also take numbers (non-zero is true).
    pub fn bool(&self, name: &str) -> Result<Option<bool>, CommandError> {
        match self.doc.get(name) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::Boolean(b)) => Ok(Some(*b)),
            Some(Bson::Int32(n)) => Ok(Some(*n != 0)),
            Some(Bson::Int64(n)) => Ok(Some(*n != 0)),
            Some(Bson::Double(n)) => Ok(Some(*n != 0.0)),
            Some(other) => Err(self.mismatch(name, "bool", other)),
        }
    }

    pub fn flag(&self, name: &str) -> Result<bool, CommandError> {
        Ok(self.bool(name)?.unwrap_or(false))
    }

    /// A whole number: int32, int64, or a double with no fractional part.
    pub fn i64(&self, name: &str) -> Result<Option<i64>, CommandError> {
        match self.doc.get(name) {
            None | Some(Bson::Null) => Ok(None),
            Some(value) => whole_number(value)
                .map(Some)
                .ok_or_else(|| self.mismatch(name, "long", value)),
        }
    }

    /// A number, as a double.
    pub fn f64(&self, name: &str) -> Result<Option<f64>, CommandError> {
        match self.doc.get(name) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::Double(n)) => Ok(Some(*n)),
            Some(Bson::Int32(n)) => Ok(Some(f64::from(*n))),
            Some(Bson::Int64(n)) => Ok(Some(*n as f64)),
            Some(other) => Err(self.mismatch(name, "double", other)),
        }
    }

    /// A whole number that may not be negative.
    pub fn non_negative(&self, name: &str) -> Result<Option<u64>, CommandError> {
        match self.i64(name)? {
            None => Ok(None),
            Some(n) if n >= 0 => Ok(Some(n as u64)),
            Some(n) => Err(CommandError::new(
                ErrorCode::location(51024),
                format!("BSON field '{name}' value must be >= 0, actual value '{n}'"),
            )),
        }
    }
}
