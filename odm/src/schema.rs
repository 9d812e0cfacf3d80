//! Schemas that deploy: the `$jsonSchema` a model's Rust type implies, deployed as its
//! collection's validator on both back ends.
//!
//! `#[odm(schema)]` on a `#[derive(Document)]` model (optionally `schema(level = "moderate",
//! action = "warn")`) computes the schema from the field types: a `bsonType` per field (the
//! [`Schema`] impls below), `required` for every stored field that is not an `Option`, nested
//! documents from embedded types that declare `#[odm(schema)]` too, arrays with their `items`,
//! unit-only enums (`#[derive(Schema)]`) as their serde names, and serde's renames; field
//! rules declared with `#[odm(schema(minimum = .., maximum = .., min_length = .., max_length =
//! .., pattern = "..", min_items = .., max_items = ..))]` add JSON Schema's keywords, each on
//! a field of the type it constrains (a compile error otherwise). Other fields are allowed, as
//! MongoDB allows them by default. `#[odm(schema(check = f))]` adds a rule in Rust, `fn f(&T)
//! -> Result<(), String>` for the field's type `T`, which the program runs (on both back ends)
//! before every write of a whole value, inside its fields' values too ([`Schema::check`]; a
//! model runs them when it declares `#[odm(schema)]`); a refusal is
//! [`crate::Error::CheckFailed`] with the refused field's path. Types without checks cost
//! nothing: [`Schema::HAS_CHECKS`] is a constant, and containers skip their elements.
//!
//! [`crate::Database::collection`] deploys it: on the engine as the collection's validation,
//! on MongoDB by `collMod` (after the commit, when it runs in a transaction); a stored
//! validator that differs is replaced, since the model declares it. Documents already stored
//! are not checked, as with MongoDB's `collMod`; [`crate::Collection::schema_violations`] lists
//! those that break it, with the path of each failing value.

use std::collections::{BTreeMap, HashMap};

use bson::{Bson, Document, doc};
use odm_engine::validation::{ValidationAction, ValidationLevel};

/// A Rust type's `$jsonSchema`: what BSON values it is stored as.
///
/// ```
/// use odm::Schema;
///
/// assert_eq!(<Vec<String>>::json_schema(), bson::doc! { "bsonType": "array", "items": { "bsonType": "string" } });
/// assert_eq!(<Option<bool>>::json_schema(), bson::doc! { "bsonType": ["bool", "null"] });
/// assert!(<Option<bool>>::OPTIONAL && !bool::OPTIONAL);
/// ```
pub trait Schema {
    /// Whether a field of this type may be absent (it is not `required`).
    const OPTIONAL: bool = false;
    fn json_schema() -> Document;
    /// Whether values of this type hold `check` functions to run (their own fields', or
    /// those of values inside them): when not, containers of them skip their elements.
    const HAS_CHECKS: bool = false;
    /// Runs the client-side checks a value of this type holds: the `check` functions its
    /// fields declare (`#[odm(schema(check = f))]`) and those inside its embedded values. The
    /// first refusal, its path relative to this value.
    fn check(&self) -> Result<(), SchemaProblem> {
        Ok(())
    }
}

/// `bsonType` of one type.
fn typed(bson_type: &str) -> Document {
    doc! { "bsonType": bson_type }
}

/// `bsonType` of any of several types.
fn any_of(bson_types: &[&str]) -> Document {
    doc! { "bsonType": bson_types.iter().map(|t| Bson::from(*t)).collect::<Vec<_>>() }
}

macro_rules! schema_of {
    ($($t:ty),* => $schema:expr) => {
        $(impl Schema for $t {
            fn json_schema() -> Document {
                $schema
            }
        })*
    };
}

// serde's integer visitors read any BSON integer that fits, so every integer type accepts both.
schema_of!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize => any_of(&["int", "long"]));
schema_of!(f32, f64 => any_of(&["double", "int", "long"]));
schema_of!(String, str, char => typed("string"));
schema_of!(bool => typed("bool"));
schema_of!(bson::DateTime => typed("date"));
schema_of!(bson::oid::ObjectId => typed("objectId"));
schema_of!(bson::Decimal128 => typed("decimal"));
schema_of!(bson::Binary => typed("binData"));
schema_of!(bson::Timestamp => typed("timestamp"));
schema_of!(bson::Document => typed("object"));
schema_of!(Bson => Document::new());

impl<T: Schema + ?Sized> Schema for Box<T> {
    const OPTIONAL: bool = T::OPTIONAL;
    const HAS_CHECKS: bool = T::HAS_CHECKS;
    fn json_schema() -> Document {
        T::json_schema()
    }
    fn check(&self) -> Result<(), SchemaProblem> {
        (**self).check()
    }
}

impl<T: Schema> Schema for Vec<T> {
    fn json_schema() -> Document {
        doc! { "bsonType": "array", "items": T::json_schema() }
    }
    const HAS_CHECKS: bool = T::HAS_CHECKS;
    fn check(&self) -> Result<(), SchemaProblem> {
        self.as_slice().check()
    }
}

impl<T: Schema> Schema for [T] {
    fn json_schema() -> Document {
        <Vec<T>>::json_schema()
    }
    const HAS_CHECKS: bool = T::HAS_CHECKS;
    fn check(&self) -> Result<(), SchemaProblem> {
        check_each(self.iter().enumerate())
    }
}

impl<V: Schema, S> Schema for HashMap<String, V, S> {
    fn json_schema() -> Document {
        doc! { "bsonType": "object", "additionalProperties": V::json_schema() }
    }
    const HAS_CHECKS: bool = V::HAS_CHECKS;
    fn check(&self) -> Result<(), SchemaProblem> {
        check_each(self.iter())
    }
}

impl<V: Schema> Schema for BTreeMap<String, V> {
    fn json_schema() -> Document {
        <HashMap<String, V>>::json_schema()
    }
    const HAS_CHECKS: bool = V::HAS_CHECKS;
    fn check(&self) -> Result<(), SchemaProblem> {
        check_each(self.iter())
    }
}

/// An `Option` is its type's schema, or `null` (serde writes `None` as `null`), and may be
/// absent.
impl<T: Schema> Schema for Option<T> {
    const OPTIONAL: bool = true;
    fn json_schema() -> Document {
        nullable(T::json_schema())
    }
    const HAS_CHECKS: bool = T::HAS_CHECKS;
    fn check(&self) -> Result<(), SchemaProblem> {
        self.as_ref().map_or(Ok(()), Schema::check)
    }
}

/// The checks of each value, under its key (an array's index, a map's key), written out only
/// for a refusal; nothing runs for values without checks.
fn check_each<'v, K: std::fmt::Display, V: Schema + 'v>(
    values: impl Iterator<Item = (K, &'v V)>,
) -> Result<(), SchemaProblem> {
    if !V::HAS_CHECKS {
        return Ok(());
    }
    for (key, value) in values {
        value
            .check()
            .map_err(|problem| under(&key.to_string(), problem))?;
    }
    Ok(())
}

/// `problem`, found inside the field or element `key`.
pub fn under(key: &str, problem: SchemaProblem) -> SchemaProblem {
    SchemaProblem {
        path: if problem.path.is_empty() {
            key.to_owned()
        } else {
            format!("{key}.{}", problem.path)
        },
        reason: problem.reason,
    }
}

/// The outcome of a field's `check` function: its refusal, as a problem at the field (the
/// caller adds the field's name).
pub fn checked(outcome: Result<(), String>) -> Result<(), SchemaProblem> {
    outcome.map_err(|reason| SchemaProblem {
        path: String::new(),
        reason,
    })
}

/// `schema` that also admits `null`.
fn nullable(mut schema: Document) -> Document {
    match schema.get("bsonType").cloned() {
        Some(Bson::String(one)) => {
            schema.insert("bsonType", vec![Bson::String(one), Bson::from("null")]);
        }
        Some(Bson::Array(mut several)) => {
            several.push(Bson::from("null"));
            schema.insert("bsonType", several);
        }
        _ => {}
    }
    if let Ok(values) = schema.get_array_mut("enum") {
        values.push(Bson::Null);
    }
    schema
}

/// The schema a model deploys as its collection's validator (`#[odm(schema)]`).
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredSchema {
    /// The `$jsonSchema`.
    pub json_schema: Document,
    pub level: ValidationLevel,
    pub action: ValidationAction,
}

impl DeclaredSchema {
    /// The validator document: `{$jsonSchema: ...}`.
    pub fn validator(&self) -> Document {
        doc! { "$jsonSchema": self.json_schema.clone() }
    }

    /// MongoDB's `collMod` command deploying it on `collection`.
    #[cfg(feature = "mongodb")]
    pub(crate) fn coll_mod(&self, collection: &str) -> Document {
        doc! {
            "collMod": collection,
            "validator": self.validator(),
            "validationLevel": self.level.name(),
            "validationAction": self.action.name(),
        }
    }
}

/// A stored document that breaks a model's declared schema
/// ([`crate::Collection::schema_violations`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaViolation {
    /// The document's `_id`.
    pub id: Bson,
    /// Each failing value: its path and why it fails.
    pub problems: Vec<SchemaProblem>,
    /// MongoDB's `schemaRulesNotSatisfied`, as a validator's `errInfo` reports it.
    pub details: Vec<Document>,
}

/// One failing value of a [`SchemaViolation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    /// Its dotted path (array elements by index); empty for the whole document.
    pub path: String,
    pub reason: String,
}

impl std::fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "_id {}:", self.id)?;
        for problem in &self.problems {
            write!(f, " `{}` {};", problem.path, problem.reason)?;
        }
        Ok(())
    }
}

/// The violation of `schema` by `document` of `collection`.
pub(crate) fn violation(
    schema: &odm_engine::query::JsonSchema,
    document: &Document,
    collection: &str,
) -> crate::Result<SchemaViolation> {
    let raw = bson::RawDocumentBuf::try_from(document)
        .map_err(|e| crate::Error::serialize(collection, e))?;
    let details = schema.failures(&raw);
    let mut problems = Vec::new();
    collect_problems(&details, "", &mut problems);
    Ok(SchemaViolation {
        id: document.get("_id").cloned().unwrap_or(Bson::Null),
        problems,
        details,
    })
}

/// The failing values `details` (MongoDB's `schemaRulesNotSatisfied` under `path`) name.
fn collect_problems(details: &[Document], path: &str, out: &mut Vec<SchemaProblem>) {
    let nested = |d: &Document| -> Vec<Document> {
        d.get_array("details")
            .map(|a| a.iter().filter_map(Bson::as_document).cloned().collect())
            .unwrap_or_default()
    };
    let under = |name: &str| {
        if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    for detail in details {
        if let Ok(properties) = detail.get_array("propertiesNotSatisfied") {
            for property in properties.iter().filter_map(Bson::as_document) {
                let name = property.get_str("propertyName").unwrap_or_default();
                collect_problems(&nested(property), &under(name), out);
            }
        } else if let Ok(missing) = detail.get_array("missingProperties") {
            for name in missing.iter().filter_map(Bson::as_str) {
                out.push(SchemaProblem {
                    path: under(name),
                    reason: "is required and missing".to_owned(),
                });
            }
        } else if let Some(index) = detail.get("itemIndex") {
            collect_problems(&nested(detail), &under(&index.to_string()), out);
        } else {
            let operator = detail.get_str("operatorName").unwrap_or_default();
            let reason = detail.get_str("reason").unwrap_or("failed");
            let specified = detail
                .get_document("specifiedAs")
                .map_or_else(|_| String::new(), |s| format!(" (rule {s})"));
            let considered = detail
                .get("consideredValue")
                .map_or_else(String::new, |v| format!(", value {v}"));
            out.push(SchemaProblem {
                path: path.to_owned(),
                reason: format!("{operator}: {reason}{specified}{considered}"),
            });
        }
    }
}

/// One property of an object schema: its stored name, its schema, whether it may be absent.
#[doc(hidden)]
pub type Property = (&'static str, Document, bool);

/// The schema of a document with `properties` (`required` unless optional), as generated for
/// models and embedded types.
#[doc(hidden)]
pub fn object(properties: Vec<Property>) -> Document {
    let required: Vec<Bson> = properties
        .iter()
        .filter(|(_, _, optional)| !optional)
        .map(|(name, _, _)| Bson::from(*name))
        .collect();
    let mut schema = doc! { "bsonType": "object" };
    if !required.is_empty() {
        schema.insert("required", required);
    }
    let properties: Document = properties
        .into_iter()
        .map(|(name, schema, _)| (name.to_owned(), Bson::Document(schema)))
        .collect();
    schema.insert("properties", properties);
    schema
}

/// A field's schema with its declared rules added.
#[doc(hidden)]
pub fn with_rules(mut schema: Document, rules: Document) -> Document {
    schema.extend(rules);
    schema
}

/// The schema of a unit-only enum: the strings serde writes for its variants.
#[doc(hidden)]
pub fn enumeration(names: &[&str]) -> Document {
    doc! {
        "bsonType": "string",
        "enum": names.iter().map(|n| Bson::from(*n)).collect::<Vec<_>>(),
    }
}

/// A declared schema, from the derive's level and action names (checked at compile time).
#[doc(hidden)]
pub fn declared(json_schema: Document, level: &str, action: &str) -> DeclaredSchema {
    DeclaredSchema {
        json_schema,
        level: ValidationLevel::parse(level).unwrap_or_default(),
        action: ValidationAction::parse(action).unwrap_or_default(),
    }
}

/// A versioned model's `_v` field.
#[doc(hidden)]
pub fn version_property() -> Property {
    ("_v", any_of(&["int", "long"]), false)
}

/// Compile-time checks that a rule is declared on a field of the kind it constrains.
#[doc(hidden)]
pub fn text_rule<T: ?Sized + TextValued>() {}
#[doc(hidden)]
pub fn number_rule<T: ?Sized + NumberValued>() {}
#[doc(hidden)]
pub fn array_rule<T: ?Sized + ArrayValued>() {}

/// Types a string rule (`min_length`, `max_length`, `pattern`) constrains.
pub trait TextValued {}
impl TextValued for String {}
impl TextValued for char {}
impl<T: TextValued> TextValued for Option<T> {}

/// Types a range rule (`minimum`, `maximum`) constrains.
pub trait NumberValued {}
macro_rules! number_valued {
    ($($t:ty),*) => { $(impl NumberValued for $t {})* };
}
number_valued!(
    i8,
    i16,
    i32,
    i64,
    isize,
    u8,
    u16,
    u32,
    u64,
    usize,
    f32,
    f64,
    bson::Decimal128
);
impl<T: NumberValued> NumberValued for Option<T> {}

/// Types an array rule (`min_items`, `max_items`) constrains.
pub trait ArrayValued {}
impl<T> ArrayValued for Vec<T> {}
impl<T: ArrayValued> ArrayValued for Option<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_admits_null_in_every_form_of_schema() {
        assert_eq!(
            <Option<i32>>::json_schema(),
            doc! { "bsonType": ["int", "long", "null"] }
        );
        assert_eq!(
            nullable(enumeration(&["a"])),
            doc! { "bsonType": ["string", "null"], "enum": ["a", null] }
        );
        assert_eq!(<Option<Bson>>::json_schema(), Document::new());
    }

    #[test]
    fn an_object_requires_its_fields_that_are_not_optional() {
        let schema = object(vec![
            ("a", typed("string"), false),
            ("b", typed("bool"), true),
        ]);
        assert_eq!(
            schema,
            doc! {
                "bsonType": "object",
                "required": ["a"],
                "properties": { "a": { "bsonType": "string" }, "b": { "bsonType": "bool" } },
            }
        );
        assert!(!object(vec![("b", typed("bool"), true)]).contains_key("required"));
    }
}
