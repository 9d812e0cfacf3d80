//! `$jsonSchema`: MongoDB's subset of JSON Schema draft 4, with `bsonType`, as a query
//! operator and as a collection's validator.
//!
//! Rules, as MongoDB's:
//! - Keywords: `bsonType` or `type` (not both; `type` takes JSON's names, without `integer`),
//!   `enum`, `minimum`/`maximum` with `exclusiveMinimum`/`exclusiveMaximum`, `multipleOf`,
//!   `minLength`/`maxLength` (in code points), `pattern`, `required`, `properties`,
//!   `patternProperties`, `additionalProperties`, `minProperties`/`maxProperties`, `items`,
//!   `additionalItems`, `minItems`/`maxItems`, `uniqueItems`, `allOf`, `anyOf`, `oneOf`, `not`,
//!   `dependencies`; `title` and `description` are notes. `$ref`, `$schema`, `default`,
//!   `definitions`, `format` and `id` are refused as MongoDB refuses them, and so is any
//!   other keyword.
//! - A keyword about one type holds for values of other types: `minimum` says nothing of a
//!   string, `required` nothing of a number.
//! - Equality (`enum`, `uniqueItems`) is MongoDB's comparison: `1` equals `1.0`.
//! - A failed match can say why ([`JsonSchema::failures`]), in the shape of MongoDB 5.0's
//!   `errInfo.details` for document validation.

use std::cmp::Ordering;

use bson::{Bson, Document, RawBson, RawBsonRef, RawDocument, doc};

use super::filter::{QueryRegex, TypeSpec, compile, type_alias};
use super::matcher::has_type;
use crate::code::ErrorCode;
use crate::error::FilterError;
use crate::order::compare;

/// A parsed `$jsonSchema`; see the module documentation.
#[derive(Debug, Clone)]
pub struct JsonSchema {
    root: Node,
}

/// One (sub)schema: its keywords, each kept with the document it was written as.
#[derive(Debug, Clone, Default)]
struct Node {
    rules: Vec<(Rule, Document)>,
}

#[derive(Debug, Clone)]
enum Rule {
    Types(Vec<TypeSpec>),
    Enum(Vec<RawBson>),
    Minimum {
        bound: RawBson,
        exclusive: bool,
    },
    Maximum {
        bound: RawBson,
        exclusive: bool,
    },
    MultipleOf(f64),
    MinLength(u64),
    MaxLength(u64),
    Pattern(Box<QueryRegex>),
    Required(Vec<String>),
    Properties(Vec<(String, Node)>),
    PatternProperties(Vec<(QueryRegex, Node)>),
    /// `additionalProperties`, with the names and patterns of its schema's `properties` and
    /// `patternProperties`, which it leaves alone.
    AdditionalProperties {
        known: Vec<String>,
        patterns: Vec<QueryRegex>,
        extra: Box<Extra>,
    },
    MinProperties(u64),
    MaxProperties(u64),
    Items(Items),
    /// `additionalItems`, for the elements past its schema's positional `items` (it says
    /// nothing when `items` is absent or one schema for all).
    AdditionalItems {
        positional: Option<usize>,
        extra: Box<Extra>,
    },
    MinItems(u64),
    MaxItems(u64),
    UniqueItems,
    AllOf(Vec<Node>),
    AnyOf(Vec<Node>),
    OneOf(Vec<Node>),
    Not(Box<Node>),
    Dependencies(Vec<(String, Dependency)>),
}

/// `additionalProperties` or `additionalItems`: allowed or not, or a schema they must meet.
#[derive(Debug, Clone)]
enum Extra {
    Allowed(bool),
    Schema(Node),
}

#[derive(Debug, Clone)]
enum Items {
    All(Box<Node>),
    Each(Vec<Node>),
}

#[derive(Debug, Clone)]
enum Dependency {
    Properties(Vec<String>),
    Schema(Node),
}

fn bad(keyword: &str, reason: impl std::fmt::Display) -> FilterError {
    FilterError::new("", "$jsonSchema", format!("keyword '{keyword}': {reason}"))
        .with_code(ErrorCode::FAILED_TO_PARSE)
}

impl JsonSchema {
    /// Parses a schema document.
    pub fn parse(schema: &Bson) -> Result<JsonSchema, FilterError> {
        let Bson::Document(schema) = schema else {
            return Err(bad("$jsonSchema", "must be an object").with_code(ErrorCode::TYPE_MISMATCH));
        };
        Ok(JsonSchema {
            root: Node::parse(schema, 0)?,
        })
    }

    /// Whether `doc` meets the schema.
    pub fn matches(&self, doc: &RawDocument) -> bool {
        self.root.holds(RawBsonRef::Document(doc))
    }

    /// Why `doc` does not meet the schema: MongoDB's `schemaRulesNotSatisfied`, one entry per
    /// failed keyword of the root, nested for sub-schemas (empty when it does).
    pub fn failures(&self, doc: &RawDocument) -> Vec<Document> {
        self.root.failures(RawBsonRef::Document(doc))
    }
}

/// Sub-schemas nest at most this deep (the filter's own depth bound covers the document).
const MAX_DEPTH: usize = 100;

impl Node {
    fn parse(schema: &Document, depth: usize) -> Result<Node, FilterError> {
        if depth > MAX_DEPTH {
            return Err(bad("$jsonSchema", "nests too deep").with_code(ErrorCode::OVERFLOW));
        }
        if schema.contains_key("type") && schema.contains_key("bsonType") {
            return Err(bad("type", "cannot be given with 'bsonType'"));
        }
        let mut rules = Vec::new();
        for (keyword, value) in schema {
            let rule = match keyword.as_str() {
                "title" | "description" => {
                    if !matches!(value, Bson::String(_)) {
                        return Err(bad(keyword, "must be a string"));
                    }
                    continue;
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let bounded = if keyword == "exclusiveMinimum" {
                        "minimum"
                    } else {
                        "maximum"
                    };
                    if !matches!(value, Bson::Boolean(_)) {
                        return Err(bad(keyword, "must be a boolean"));
                    }
                    if !schema.contains_key(bounded) {
                        return Err(bad(keyword, format!("needs '{bounded}'")));
                    }
                    continue;
                }
                _ => Rule::parse(keyword, value, schema, depth)?,
            };
            rules.push((rule, doc! { keyword: value.clone() }));
        }
        Ok(Node { rules })
    }
}

/// One keyword being parsed, with its schema (for the keywords that read their siblings).
struct Keyword<'a> {
    name: &'a str,
    value: &'a Bson,
    schema: &'a Document,
    depth: usize,
}

impl Keyword<'_> {
    fn count(&self) -> Result<u64, FilterError> {
        crate::expr::whole_number(self.value)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| bad(self.name, "must be a non-negative whole number"))
    }

    fn sub(&self, v: &Bson) -> Result<Node, FilterError> {
        match v {
            Bson::Document(d) => Node::parse(d, self.depth + 1),
            _ => Err(bad(self.name, "must be an object")),
        }
    }

    fn subs(&self) -> Result<Vec<Node>, FilterError> {
        match self.value {
            Bson::Array(items) if !items.is_empty() => items.iter().map(|v| self.sub(v)).collect(),
            _ => Err(bad(self.name, "must be a non-empty array of objects")),
        }
    }

    fn object(&self) -> Result<&Document, FilterError> {
        match self.value {
            Bson::Document(d) => Ok(d),
            _ => Err(bad(self.name, "must be an object")),
        }
    }

    fn extra(&self) -> Result<Box<Extra>, FilterError> {
        Ok(Box::new(match self.value {
            Bson::Boolean(allowed) => Extra::Allowed(*allowed),
            other => Extra::Schema(self.sub(other)?),
        }))
    }

    /// Keywords about any value.
    fn any_value(&self) -> Result<Option<Rule>, FilterError> {
        let (name, value) = (self.name, self.value);
        Ok(Some(match name {
            "bsonType" => Rule::Types(types(name, value, bson_type)?),
            "type" => Rule::Types(types(name, value, json_type)?),
            "enum" => match value {
                Bson::Array(items) if !items.is_empty() => Rule::Enum(
                    items
                        .iter()
                        .map(|v| RawBson::try_from(v.clone()).map_err(|e| bad(name, e)))
                        .collect::<Result<_, _>>()?,
                ),
                _ => return Err(bad(name, "must be a non-empty array")),
            },
            "allOf" => Rule::AllOf(self.subs()?),
            "anyOf" => Rule::AnyOf(self.subs()?),
            "oneOf" => Rule::OneOf(self.subs()?),
            "not" => Rule::Not(Box::new(self.sub(value)?)),
            _ => return Ok(None),
        }))
    }

    /// Keywords about numbers and strings.
    fn scalar(&self) -> Result<Option<Rule>, FilterError> {
        let (name, value) = (self.name, self.value);
        let exclusive = |flag: &str| self.schema.get_bool(flag).unwrap_or(false);
        Ok(Some(match name {
            "minimum" | "maximum" => {
                if number(value).is_none() {
                    return Err(bad(name, "must be a number"));
                }
                let bound = RawBson::try_from(value.clone()).map_err(|e| bad(name, e))?;
                if name == "minimum" {
                    Rule::Minimum {
                        bound,
                        exclusive: exclusive("exclusiveMinimum"),
                    }
                } else {
                    Rule::Maximum {
                        bound,
                        exclusive: exclusive("exclusiveMaximum"),
                    }
                }
            }
            "multipleOf" => match number(value) {
                Some(n) if n > 0.0 && n.is_finite() => Rule::MultipleOf(n),
                _ => return Err(bad(name, "must be a number above 0")),
            },
            "minLength" => Rule::MinLength(self.count()?),
            "maxLength" => Rule::MaxLength(self.count()?),
            "pattern" => match value {
                Bson::String(p) => Rule::Pattern(Box::new(compile("", "pattern", p, "")?)),
                _ => return Err(bad(name, "must be a string")),
            },
            _ => return Ok(None),
        }))
    }

    /// Keywords about documents.
    fn object_rules(&self) -> Result<Option<Rule>, FilterError> {
        let name = self.name;
        Ok(Some(match name {
            "required" => Rule::Required(names(name, self.value)?),
            "minProperties" => Rule::MinProperties(self.count()?),
            "maxProperties" => Rule::MaxProperties(self.count()?),
            "properties" => Rule::Properties(
                self.object()?
                    .iter()
                    .map(|(prop, s)| Ok((prop.clone(), self.sub(s)?)))
                    .collect::<Result<_, FilterError>>()?,
            ),
            "patternProperties" => Rule::PatternProperties(
                self.object()?
                    .iter()
                    .map(|(p, s)| Ok((compile("", name, p, "")?, self.sub(s)?)))
                    .collect::<Result<_, FilterError>>()?,
            ),
            "additionalProperties" => {
                let known = self
                    .schema
                    .get_document("properties")
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                let patterns = match self.schema.get_document("patternProperties") {
                    Ok(p) => p
                        .keys()
                        .map(|pattern| compile("", "patternProperties", pattern, ""))
                        .collect::<Result<_, _>>()?,
                    Err(_) => Vec::new(),
                };
                Rule::AdditionalProperties {
                    known,
                    patterns,
                    extra: self.extra()?,
                }
            }
            "dependencies" => Rule::Dependencies(
                self.object()?
                    .iter()
                    .map(|(prop, dep)| {
                        let dependency = match dep {
                            Bson::Array(_) => Dependency::Properties(names(name, dep)?),
                            other => Dependency::Schema(self.sub(other)?),
                        };
                        Ok((prop.clone(), dependency))
                    })
                    .collect::<Result<_, FilterError>>()?,
            ),
            _ => return Ok(None),
        }))
    }

    /// Keywords about arrays.
    fn array_rules(&self) -> Result<Option<Rule>, FilterError> {
        let (name, value) = (self.name, self.value);
        Ok(Some(match name {
            "minItems" => Rule::MinItems(self.count()?),
            "maxItems" => Rule::MaxItems(self.count()?),
            "items" => match value {
                Bson::Array(items) => Rule::Items(Items::Each(
                    items
                        .iter()
                        .map(|v| self.sub(v))
                        .collect::<Result<_, _>>()?,
                )),
                other => Rule::Items(Items::All(Box::new(self.sub(other)?))),
            },
            "additionalItems" => Rule::AdditionalItems {
                positional: self.schema.get_array("items").ok().map(Vec::len),
                extra: self.extra()?,
            },
            "uniqueItems" => match value {
                Bson::Boolean(true) => Rule::UniqueItems,
                Bson::Boolean(false) => Rule::AllOf(Vec::new()),
                _ => return Err(bad(name, "must be a boolean")),
            },
            _ => return Ok(None),
        }))
    }
}

impl Rule {
    fn parse(
        name: &str,
        value: &Bson,
        schema: &Document,
        depth: usize,
    ) -> Result<Rule, FilterError> {
        let keyword = Keyword {
            name,
            value,
            schema,
            depth,
        };
        if let Some(rule) = keyword.any_value()? {
            return Ok(rule);
        }
        if let Some(rule) = keyword.scalar()? {
            return Ok(rule);
        }
        if let Some(rule) = keyword.object_rules()? {
            return Ok(rule);
        }
        if let Some(rule) = keyword.array_rules()? {
            return Ok(rule);
        }
        match name {
            "$ref" | "$schema" | "default" | "definitions" | "format" | "id" => {
                Err(bad(name, "is not currently supported"))
            }
            other => Err(bad(other, "is not a $jsonSchema keyword")),
        }
    }
}

fn types(
    keyword: &str,
    value: &Bson,
    alias: fn(&str) -> Option<TypeSpec>,
) -> Result<Vec<TypeSpec>, FilterError> {
    let one = |v: &Bson| match v {
        Bson::String(name) => {
            alias(name).ok_or_else(|| bad(keyword, format!("unknown type name '{name}'")))
        }
        _ => Err(bad(keyword, "must be a type name or an array of them")),
    };
    match value {
        Bson::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        Bson::Array(_) => Err(bad(keyword, "must not be an empty array")),
        other => Ok(vec![one(other)?]),
    }
}

/// `bsonType`'s names: `$type`'s aliases.
fn bson_type(name: &str) -> Option<TypeSpec> {
    type_alias(name)
}

/// `type`'s JSON names; MongoDB does not take `integer`.
fn json_type(name: &str) -> Option<TypeSpec> {
    match name {
        "object" | "array" | "string" | "null" | "number" => type_alias(name),
        "boolean" => type_alias("bool"),
        _ => None,
    }
}

fn names(keyword: &str, value: &Bson) -> Result<Vec<String>, FilterError> {
    let Bson::Array(items) = value else {
        return Err(bad(keyword, "must be an array of strings"));
    };
    if items.is_empty() {
        return Err(bad(keyword, "must be a non-empty array"));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Bson::String(name) = item else {
            return Err(bad(keyword, "must be an array of strings"));
        };
        if out.contains(name) {
            return Err(bad(keyword, format!("names '{name}' twice")));
        }
        out.push(name.clone());
    }
    Ok(out)
}

fn number(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(n) => Some(f64::from(*n)),
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

fn raw_number(v: RawBsonRef<'_>) -> Option<f64> {
    match v {
        RawBsonRef::Int32(n) => Some(f64::from(n)),
        #[allow(clippy::cast_precision_loss)]
        RawBsonRef::Int64(n) => Some(n as f64),
        RawBsonRef::Double(d) => Some(d),
        RawBsonRef::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

impl Node {
    fn holds(&self, value: RawBsonRef<'_>) -> bool {
        self.rules.iter().all(|(rule, _)| rule.holds(value))
    }

    fn failures(&self, value: RawBsonRef<'_>) -> Vec<Document> {
        self.rules
            .iter()
            .filter(|(rule, _)| !rule.holds(value))
            .map(|(rule, written)| rule.failure(written, value))
            .collect()
    }
}

impl Rule {
    fn holds(&self, value: RawBsonRef<'_>) -> bool {
        match (self, value) {
            (Rule::Types(types), v) => types.iter().any(|t| has_type(v, *t)),
            (Rule::Enum(values), v) => values
                .iter()
                .any(|e| compare(e.as_raw_bson_ref(), v) == Ordering::Equal),
            (Rule::Minimum { bound, exclusive }, v) if raw_number(v).is_some() => {
                let order = compare(v, bound.as_raw_bson_ref());
                order == Ordering::Greater || (!exclusive && order == Ordering::Equal)
            }
            (Rule::Maximum { bound, exclusive }, v) if raw_number(v).is_some() => {
                let order = compare(v, bound.as_raw_bson_ref());
                order == Ordering::Less || (!exclusive && order == Ordering::Equal)
            }
            (Rule::MultipleOf(divisor), v) => raw_number(v).is_none_or(|n| {
                let q = n / divisor;
                q.is_finite() && (q - q.round()).abs() < 1e-9
            }),
            (Rule::MinLength(min), RawBsonRef::String(s)) => s.chars().count() as u64 >= *min,
            (Rule::MaxLength(max), RawBsonRef::String(s)) => s.chars().count() as u64 <= *max,
            (Rule::Pattern(regex), RawBsonRef::String(s)) => {
                regex.compiled.is_match(s).unwrap_or(false)
            }
            (Rule::Required(names), RawBsonRef::Document(d)) => {
                names.iter().all(|n| d.get(n).ok().flatten().is_some())
            }
            (Rule::Properties(props), RawBsonRef::Document(d)) => props
                .iter()
                .all(|(name, node)| d.get(name).ok().flatten().is_none_or(|v| node.holds(v))),
            (Rule::PatternProperties(props), RawBsonRef::Document(d)) => {
                fields(d).all(|(name, v)| {
                    props
                        .iter()
                        .filter(|(p, _)| p.compiled.is_match(name).unwrap_or(false))
                        .all(|(_, node)| node.holds(v))
                })
            }
            (Rule::AdditionalProperties { .. }, RawBsonRef::Document(d)) => {
                self.additional_properties(d).is_empty()
            }
            (Rule::MinProperties(min), RawBsonRef::Document(d)) => fields(d).count() as u64 >= *min,
            (Rule::MaxProperties(max), RawBsonRef::Document(d)) => fields(d).count() as u64 <= *max,
            (Rule::Items(items), RawBsonRef::Array(a)) => failing_item(items, a).is_none(),
            (Rule::AdditionalItems { positional, extra }, RawBsonRef::Array(a)) => positional
                .is_none_or(|from| {
                    a.into_iter()
                        .filter_map(Result::ok)
                        .skip(from)
                        .all(|item| extra.allows(item))
                }),
            (Rule::MinItems(min), RawBsonRef::Array(a)) => a.into_iter().count() as u64 >= *min,
            (Rule::MaxItems(max), RawBsonRef::Array(a)) => a.into_iter().count() as u64 <= *max,
            (Rule::UniqueItems, RawBsonRef::Array(a)) => {
                let items: Vec<RawBsonRef<'_>> = a.into_iter().filter_map(Result::ok).collect();
                items.iter().enumerate().all(|(i, x)| {
                    items[..i]
                        .iter()
                        .all(|y| compare(*x, *y) != Ordering::Equal)
                })
            }
            (Rule::AllOf(nodes), v) => nodes.iter().all(|n| n.holds(v)),
            (Rule::AnyOf(nodes), v) => nodes.iter().any(|n| n.holds(v)),
            (Rule::OneOf(nodes), v) => nodes.iter().filter(|n| n.holds(v)).count() == 1,
            (Rule::Not(node), v) => !node.holds(v),
            (Rule::Dependencies(deps), RawBsonRef::Document(d)) => {
                deps.iter().all(|(name, dep)| {
                    d.get(name).ok().flatten().is_none()
                        || match dep {
                            Dependency::Properties(names) => {
                                names.iter().all(|n| d.get(n).ok().flatten().is_some())
                            }
                            Dependency::Schema(node) => node.holds(RawBsonRef::Document(d)),
                        }
                })
            }
            // A keyword about another type holds.
            _ => true,
        }
    }

    /// The names of `d`'s fields that neither `properties` nor `patternProperties` of this
    /// rule's schema name, and that `additionalProperties` refuses.
    fn additional_properties<'d>(&self, d: &'d RawDocument) -> Vec<&'d str> {
        let Rule::AdditionalProperties {
            known,
            patterns,
            extra,
        } = self
        else {
            return Vec::new();
        };
        fields(d)
            .filter(|(name, _)| {
                !known.iter().any(|k| k == name)
                    && !patterns
                        .iter()
                        .any(|p| p.compiled.is_match(name).unwrap_or(false))
            })
            .filter(|(_, v)| !extra.allows(*v))
            .map(|(name, _)| name)
            .collect()
    }

    fn failure(&self, written: &Document, value: RawBsonRef<'_>) -> Document {
        let name = written.keys().next().cloned().unwrap_or_default();
        let mut out = doc! { "operatorName": &name, "specifiedAs": written.clone() };
        let considered = Bson::try_from(RawBson::from(value)).unwrap_or(Bson::Null);
        match (self, value) {
            (Rule::AdditionalProperties { .. }, RawBsonRef::Document(d)) => {
                out.insert("reason", reason(self));
                out.insert("additionalProperties", self.additional_properties(d));
            }
            (Rule::Required(names), RawBsonRef::Document(d)) => {
                let missing: Vec<&String> = names
                    .iter()
                    .filter(|n| d.get(n.as_str()).ok().flatten().is_none())
                    .collect();
                out.insert("missingProperties", missing);
            }
            (Rule::Properties(props), RawBsonRef::Document(d)) => {
                out.remove("specifiedAs");
                let failed: Vec<Document> = props
                    .iter()
                    .filter_map(|(prop, node)| {
                        let v = d.get(prop).ok().flatten()?;
                        (!node.holds(v))
                            .then(|| doc! { "propertyName": prop, "details": node.failures(v) })
                    })
                    .collect();
                out.insert("propertiesNotSatisfied", failed);
            }
            (Rule::Items(items), RawBsonRef::Array(a)) => {
                out.remove("specifiedAs");
                out.insert("reason", "At least one item did not match the sub-schema");
                if let Some((index, node, item)) = failing_item(items, a) {
                    out.insert("itemIndex", i64::try_from(index).unwrap_or(i64::MAX));
                    out.insert("details", node.failures(item));
                }
            }
            (Rule::AllOf(nodes) | Rule::AnyOf(nodes) | Rule::OneOf(nodes), v) => {
                out.remove("specifiedAs");
                let failed: Vec<Document> = nodes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| !n.holds(v))
                    .map(|(i, n)| doc! { "index": i64::try_from(i).unwrap_or(i64::MAX), "details": n.failures(v) })
                    .collect();
                out.insert("schemasNotSatisfied", failed);
            }
            _ => {
                out.insert("reason", reason(self));
                out.insert("consideredValue", considered.clone());
                if matches!(self, Rule::Types(_)) {
                    out.insert("consideredType", crate::expr::type_name(&considered));
                }
            }
        }
        out
    }
}

/// MongoDB's reason for a keyword that failed on a value.
fn reason(rule: &Rule) -> &'static str {
    match rule {
        Rule::Types(_) => "type did not match",
        Rule::Enum(_) => "value was not found in enum",
        Rule::Minimum { .. } | Rule::Maximum { .. } => "comparison failed",
        Rule::MultipleOf(_) => "considered value is not a multiple of the specified value",
        Rule::MinLength(_) | Rule::MaxLength(_) => "specified string length was not satisfied",
        Rule::Pattern(_) => "regular expression did not match",
        Rule::MinProperties(_) | Rule::MaxProperties(_) => {
            "specified number of properties was not satisfied"
        }
        Rule::MinItems(_) | Rule::MaxItems(_) => "array did not match specified length",
        Rule::UniqueItems => "found a duplicate item",
        Rule::AdditionalProperties { .. } => "found additional properties",
        Rule::AdditionalItems { .. } => "found additional items",
        Rule::Not(_) => "child expression matched",
        Rule::Dependencies(_) => "dependency was not satisfied",
        _ => "did not match",
    }
}

/// A document's fields, skipping any it cannot read.
fn fields(d: &RawDocument) -> impl Iterator<Item = (&str, RawBsonRef<'_>)> {
    d.into_iter()
        .filter_map(Result::ok)
        .map(|(name, v)| (name.as_str(), v))
}

/// The first element of `a` that `items` refuses, with the schema it fails.
fn failing_item<'a>(
    items: &'a Items,
    a: &'a bson::RawArray,
) -> Option<(usize, &'a Node, RawBsonRef<'a>)> {
    a.into_iter()
        .filter_map(Result::ok)
        .enumerate()
        .find_map(|(i, item)| {
            let node = match items {
                Items::All(node) => node.as_ref(),
                Items::Each(nodes) => nodes.get(i)?,
            };
            (!node.holds(item)).then_some((i, node, item))
        })
}

impl Extra {
    fn allows(&self, value: RawBsonRef<'_>) -> bool {
        match self {
            Extra::Allowed(allowed) => *allowed,
            Extra::Schema(node) => node.holds(value),
        }
    }
}
