//! Reading a command's arguments: each accessor names the argument and the type it wanted when
//! the command holds something else, as MongoDB's parsers do (`TypeMismatch`, 14).

use bson::{Bson, Document};
use odm_engine::ErrorCode;

use super::CommandError;

/// A command's document, read argument by argument.
#[derive(Debug, Clone, Copy)]
pub struct Args<'d> {
    pub doc: &'d Document,
    /// The command's name, for messages.
    pub command: &'static str,
}

pub fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::Undefined => "undefined",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::DbPointer(_) => "dbPointer",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
    }
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

pub fn whole_number(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        Bson::Double(d) if d.fract() == 0.0 && d.is_finite() && d.abs() < 9.2e18 => Some(*d as i64),
        Bson::Decimal128(d) => d.to_string().parse::<i64>().ok(),
        _ => None,
    }
}
