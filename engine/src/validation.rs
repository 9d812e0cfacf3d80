//! Document validation: a collection's `validator`, as MongoDB's.
//!
//! Rules:
//! - A validator is a query filter (`$jsonSchema` included; not `$near`, `$text`, `$where`).
//!   A document passes when the filter matches it.
//! - `validationLevel`: `strict` checks every insert and update; `moderate` checks inserts and
//!   the updates of documents that passed before (an invalid document stays updatable);
//!   `off` checks nothing.
//! - `validationAction`: `error` refuses a failing write with `DocumentValidationFailure`
//!   (121) and MongoDB 5.0's `errInfo` (`failingDocumentId` and `details` naming the rules that
//!   failed), changing nothing; `warn` lets it through and counts it
//!   ([`warnings`]).
//! - A write asked with `bypassDocumentValidation` skips the check (see
//!   `WriteTxn::bypass_document_validation`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bson::{Bson, Document, RawDocument, doc};

use crate::error::FilterError;
use crate::query::Filter;

/// `validationLevel`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ValidationLevel {
    Off,
    #[default]
    Strict,
    Moderate,
}

/// `validationAction`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ValidationAction {
    #[default]
    Error,
    Warn,
}

impl ValidationLevel {
    pub fn parse(name: &str) -> Option<ValidationLevel> {
        match name {
            "off" => Some(ValidationLevel::Off),
            "strict" => Some(ValidationLevel::Strict),
            "moderate" => Some(ValidationLevel::Moderate),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ValidationLevel::Off => "off",
            ValidationLevel::Strict => "strict",
            ValidationLevel::Moderate => "moderate",
        }
    }
}

impl ValidationAction {
    pub fn parse(name: &str) -> Option<ValidationAction> {
        match name {
            "error" => Some(ValidationAction::Error),
            "warn" => Some(ValidationAction::Warn),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ValidationAction::Error => "error",
            ValidationAction::Warn => "warn",
        }
    }
}

/// A collection's validator with its level and action; see the module documentation.
#[derive(Debug, Clone)]
pub struct Validation {
    validator: Document,
    level: ValidationLevel,
    action: ValidationAction,
    /// The validator parsed once: its top-level clauses, each judged alone for `errInfo`.
    clauses: Arc<Vec<(Document, Filter)>>,
}

impl PartialEq for Validation {
    fn eq(&self, other: &Validation) -> bool {
        self.validator == other.validator
            && self.level == other.level
            && self.action == other.action
    }
}

impl Eq for Validation {}

/// Writes a `warn` validator let through.
static WARNINGS: AtomicU64 = AtomicU64::new(0);

/// How many failing writes `validationAction: "warn"` has let through in this process.
pub fn warnings() -> u64 {
    WARNINGS.load(Ordering::Relaxed)
}

/// Top-level operators a validator cannot hold, as MongoDB refuses them.
const NOT_IN_VALIDATOR: [&str; 2] = ["$text", "$where"];

impl Validation {
    /// A validator, checked as a filter.
    pub fn new(
        validator: Document,
        level: ValidationLevel,
        action: ValidationAction,
    ) -> Result<Validation, FilterError> {
        if let Some(op) = NOT_IN_VALIDATOR
            .iter()
            .find(|op| validator.contains_key(**op))
        {
            return Err(
                FilterError::new("", op, "is not allowed inside of a validator")
                    .with_code(crate::ErrorCode::QUERY_FEATURE_NOT_ALLOWED),
            );
        }
        Filter::parse(&validator)?;
        let clauses = validator
            .iter()
            .map(|(k, v)| {
                let clause = doc! { k: v.clone() };
                Filter::parse(&clause).map(|f| (clause, f))
            })
            .collect::<Result<_, _>>()?;
        Ok(Validation {
            validator,
            level,
            action,
            clauses: Arc::new(clauses),
        })
    }

    pub fn validator(&self) -> &Document {
        &self.validator
    }

    pub fn level(&self) -> ValidationLevel {
        self.level
    }

    pub fn action(&self) -> ValidationAction {
        self.action
    }

    /// This validation with another level or action (`collMod`).
    #[must_use]
    pub fn with(
        mut self,
        level: Option<ValidationLevel>,
        action: Option<ValidationAction>,
    ) -> Self {
        self.level = level.unwrap_or(self.level);
        self.action = action.unwrap_or(self.action);
        self
    }

    /// Whether `doc` passes.
    pub fn passes(&self, doc: &RawDocument) -> bool {
        self.clauses.iter().all(|(_, f)| f.matches(doc))
    }

    /// Judges a write of `new` (over `old` for an update): `Err` with the `errInfo.details` of
    /// a write to refuse; a `warn` validator lets a failing write through.
    pub(crate) fn judge(
        &self,
        new: &RawDocument,
        old: Option<&RawDocument>,
    ) -> Result<(), Document> {
        let checked = match (self.level, old) {
            (ValidationLevel::Off, _) => false,
            (ValidationLevel::Moderate, Some(old)) => self.passes(old),
            _ => true,
        };
        if !checked || self.passes(new) {
            return Ok(());
        }
        if self.action == ValidationAction::Warn {
            WARNINGS.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        Err(self.details(new))
    }

    /// MongoDB 5.0's `errInfo.details`: a `$jsonSchema` validator's failed rules, or the
    /// top-level clauses that failed (`$and`'s `clausesNotSatisfied`).
    fn details(&self, doc: &RawDocument) -> Document {
        let failed: Vec<(usize, &Document, &Filter)> = self
            .clauses
            .iter()
            .enumerate()
            .filter(|(_, (_, f))| !f.matches(doc))
            .map(|(i, (d, f))| (i, d, f))
            .collect();
        if self.clauses.len() == 1
            && let Some((_, clause, filter)) = failed.first()
        {
            return clause_details(clause, filter, doc);
        }
        let clauses: Vec<Document> = failed
            .into_iter()
            .map(|(i, clause, filter)| {
                let details = clause_details(clause, filter, doc);
                doc! { "index": i64::try_from(i).unwrap_or(i64::MAX), "details": details }
            })
            .collect();
        doc! { "operatorName": "$and", "clausesNotSatisfied": clauses }
    }

    /// The options as the catalog keeps them.
    pub(crate) fn to_document(&self) -> Document {
        doc! {
            "validator": self.validator.clone(),
            "validationLevel": self.level.name(),
            "validationAction": self.action.name(),
        }
    }

    pub(crate) fn from_document(d: &Document) -> Option<Validation> {
        let validator = d.get_document("validator").ok()?.clone();
        let level = ValidationLevel::parse(d.get_str("validationLevel").ok()?)?;
        let action = ValidationAction::parse(d.get_str("validationAction").ok()?)?;
        Validation::new(validator, level, action).ok()
    }
}

/// Why one top-level clause of a validator failed on `doc`: a schema's failed rules, or the
/// clause's operator with the value it considered.
fn clause_details(clause: &Document, filter: &Filter, doc: &RawDocument) -> Document {
    if let Filter::JsonSchema(schema) = filter {
        return doc! {
            "operatorName": "$jsonSchema",
            "schemaRulesNotSatisfied": schema.failures(doc),
        };
    }
    let (name, condition) = clause
        .iter()
        .next()
        .map_or(("", &Bson::Null), |(k, v)| (k.as_str(), v));
    let operator = match condition {
        Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
            d.keys().next().cloned().unwrap_or_default()
        }
        _ if name.starts_with('$') => name.to_owned(),
        _ => "$eq".to_owned(),
    };
    let mut out = doc! { "operatorName": operator, "specifiedAs": clause.clone() };
    match doc.get(name).ok().flatten() {
        Some(value) => {
            out.insert("reason", "comparison failed");
            if let Ok(value) = Bson::try_from(bson::RawBson::from(value)) {
                out.insert("consideredValue", value);
            }
        }
        None if !name.starts_with('$') => {
            out.insert("reason", "field was missing");
        }
        None => {
            out.insert("reason", "expression did not match");
        }
    }
    out
}
