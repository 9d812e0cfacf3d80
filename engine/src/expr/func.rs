//! The operators of expressions that take positional arguments.

use std::cmp::Ordering;

use bson::{Bson, Document};

use super::bounds::{self, Built};
use super::decimal_math::{self, Unary};
use super::eval::{Env, eval_in, truthy};
use super::{Expr, ExprError, error};
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::order::compare_in;
use crate::value_set::{ValueIndex, ValueSet};

/// An operator taking positional arguments, by group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    // Comparison, in MongoDB's order across types (missing below null).
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    Cmp,
    // Logic, by truth (false, null, missing and zero are false).
    And,
    Or,
    Not,
    IfNull,
    // Arithmetic: null or missing arguments give null.
    Add,
    Subtract,
    Multiply,
    Divide,
    Mod,
    Abs,
    Ceil,
    Floor,
    // Accumulators over their arguments, or over one array argument; non-numbers ignored.
    Sum,
    Avg,
    Max,
    Min,
    // Strings.
    Concat,
    ToLower,
    ToUpper,
    StrLenCp,
    SubstrCp,
    Split,
    // Arrays.
    Size,
    ArrayElemAt,
    ConcatArrays,
    In,
    IsArray,
    First,
    Last,
    Slice,
    ReverseArray,
    // Documents.
    MergeObjects,
    ObjectToArray,
    ArrayToObject,
    // Types and the rest.
    Type,
    IsNumber,
    // `expr/more`: string search and replacement, set equality, logarithms.
    IndexOfBytes,
    IndexOfCp,
    ReplaceOne,
    ReplaceAll,
    SetEquals,
    Log,
    Rand,
    // Conversions (`expr/convert`).
    ToString,
    ToInt,
    ToLong,
    ToDouble,
    ToDecimal,
    ToBool,
    ToDate,
    ToObjectId,
    // More arithmetic.
    Round,
    Trunc,
    Sqrt,
    Pow,
    Exp,
    Ln,
    Log10,
    // More strings (`expr/text`).
    Trim,
    Ltrim,
    Rtrim,
    Strcasecmp,
    SubstrBytes,
    StrLenBytes,
    // More arrays and sets.
    IndexOfArray,
    Range,
    SetUnion,
    SetIntersection,
    SetDifference,
    SetIsSubset,
    AllElementsTrue,
    AnyElementTrue,
    // Date parts, in a time zone (`expr/dates`).
    Year,
    Month,
    DayOfMonth,
    Hour,
    Minute,
    Second,
    Millisecond,
    DayOfWeek,
    DayOfYear,
    Week,
    IsoWeek,
    IsoWeekYear,
    IsoDayOfWeek,
}

/// Operator names, their functions and how many arguments each takes (least, most).
const TABLE: &[(&str, Func, usize, usize)] = &[
    ("$eq", Func::Eq, 2, 2),
    ("$ne", Func::Ne, 2, 2),
    ("$gt", Func::Gt, 2, 2),
    ("$gte", Func::Gte, 2, 2),
    ("$lt", Func::Lt, 2, 2),
    ("$lte", Func::Lte, 2, 2),
    ("$cmp", Func::Cmp, 2, 2),
    ("$and", Func::And, 0, usize::MAX),
    ("$or", Func::Or, 0, usize::MAX),
    ("$not", Func::Not, 1, 1),
    ("$ifNull", Func::IfNull, 2, usize::MAX),
    ("$add", Func::Add, 0, usize::MAX),
    ("$subtract", Func::Subtract, 2, 2),
    ("$multiply", Func::Multiply, 0, usize::MAX),
    ("$divide", Func::Divide, 2, 2),
    ("$mod", Func::Mod, 2, 2),
    ("$abs", Func::Abs, 1, 1),
    ("$ceil", Func::Ceil, 1, 1),
    ("$floor", Func::Floor, 1, 1),
    ("$sum", Func::Sum, 0, usize::MAX),
    ("$avg", Func::Avg, 0, usize::MAX),
    ("$max", Func::Max, 0, usize::MAX),
    ("$min", Func::Min, 0, usize::MAX),
    ("$concat", Func::Concat, 0, usize::MAX),
    ("$toLower", Func::ToLower, 1, 1),
    ("$toUpper", Func::ToUpper, 1, 1),
    ("$strLenCP", Func::StrLenCp, 1, 1),
    ("$substrCP", Func::SubstrCp, 3, 3),
    ("$split", Func::Split, 2, 2),
    ("$size", Func::Size, 1, 1),
    ("$arrayElemAt", Func::ArrayElemAt, 2, 2),
    ("$concatArrays", Func::ConcatArrays, 0, usize::MAX),
    ("$in", Func::In, 2, 2),
    ("$isArray", Func::IsArray, 1, 1),
    ("$first", Func::First, 1, 1),
    ("$last", Func::Last, 1, 1),
    ("$slice", Func::Slice, 2, 3),
    ("$reverseArray", Func::ReverseArray, 1, 1),
    ("$mergeObjects", Func::MergeObjects, 0, usize::MAX),
    ("$objectToArray", Func::ObjectToArray, 1, 1),
    ("$arrayToObject", Func::ArrayToObject, 1, 1),
    ("$type", Func::Type, 1, 1),
    ("$isNumber", Func::IsNumber, 1, 1),
    ("$indexOfBytes", Func::IndexOfBytes, 2, 4),
    ("$indexOfCP", Func::IndexOfCp, 2, 4),
    ("$replaceOne", Func::ReplaceOne, 3, 3),
    ("$replaceAll", Func::ReplaceAll, 3, 3),
    ("$setEquals", Func::SetEquals, 2, usize::MAX),
    ("$log", Func::Log, 2, 2),
    ("$rand", Func::Rand, 0, 0),
    ("$toString", Func::ToString, 1, 1),
    ("$toInt", Func::ToInt, 1, 1),
    ("$toLong", Func::ToLong, 1, 1),
    ("$toDouble", Func::ToDouble, 1, 1),
    ("$toDecimal", Func::ToDecimal, 1, 1),
    ("$toBool", Func::ToBool, 1, 1),
    ("$toDate", Func::ToDate, 1, 1),
    ("$toObjectId", Func::ToObjectId, 1, 1),
    ("$round", Func::Round, 1, 2),
    ("$trunc", Func::Trunc, 1, 2),
    ("$sqrt", Func::Sqrt, 1, 1),
    ("$pow", Func::Pow, 2, 2),
    ("$exp", Func::Exp, 1, 1),
    ("$ln", Func::Ln, 1, 1),
    ("$log10", Func::Log10, 1, 1),
    ("$trim", Func::Trim, 1, 1),
    ("$ltrim", Func::Ltrim, 1, 1),
    ("$rtrim", Func::Rtrim, 1, 1),
    ("$strcasecmp", Func::Strcasecmp, 2, 2),
    ("$substrBytes", Func::SubstrBytes, 3, 3),
    ("$substr", Func::SubstrBytes, 3, 3),
    ("$strLenBytes", Func::StrLenBytes, 1, 1),
    ("$indexOfArray", Func::IndexOfArray, 2, 4),
    ("$range", Func::Range, 2, 3),
    ("$setUnion", Func::SetUnion, 0, usize::MAX),
    ("$setIntersection", Func::SetIntersection, 0, usize::MAX),
    ("$setDifference", Func::SetDifference, 2, 2),
    ("$setIsSubset", Func::SetIsSubset, 2, 2),
    ("$allElementsTrue", Func::AllElementsTrue, 1, 1),
    ("$anyElementTrue", Func::AnyElementTrue, 1, 1),
    ("$year", Func::Year, 1, 1),
    ("$month", Func::Month, 1, 1),
    ("$dayOfMonth", Func::DayOfMonth, 1, 1),
    ("$hour", Func::Hour, 1, 1),
    ("$minute", Func::Minute, 1, 1),
    ("$second", Func::Second, 1, 1),
    ("$millisecond", Func::Millisecond, 1, 1),
    ("$dayOfWeek", Func::DayOfWeek, 1, 1),
    ("$dayOfYear", Func::DayOfYear, 1, 1),
    ("$week", Func::Week, 1, 1),
    ("$isoWeek", Func::IsoWeek, 1, 1),
    ("$isoWeekYear", Func::IsoWeekYear, 1, 1),
    ("$isoDayOfWeek", Func::IsoDayOfWeek, 1, 1),
];

impl Func {
    /// Whether the operator is a date part (`$year`, ..., `$isoDayOfWeek`), which also takes
    /// `{date, timezone}`.
    pub(crate) fn is_date_part(self) -> bool {
        matches!(
            self,
            Func::Year
                | Func::Month
                | Func::DayOfMonth
                | Func::Hour
                | Func::Minute
                | Func::Second
                | Func::Millisecond
                | Func::DayOfWeek
                | Func::DayOfYear
                | Func::Week
                | Func::IsoWeek
                | Func::IsoWeekYear
                | Func::IsoDayOfWeek
        )
    }

    pub(crate) fn named(name: &str) -> Option<Func> {
        TABLE.iter().find(|(n, ..)| *n == name).map(|(_, f, ..)| *f)
    }

    pub fn name(self) -> &'static str {
        TABLE
            .iter()
            .find(|(_, f, ..)| *f == self)
            .map_or("?", |(n, ..)| n)
    }

    pub(crate) fn check_arity(self, count: usize) -> Result<(), ExprError> {
        let (_, _, least, most) = TABLE
            .iter()
            .find(|(_, f, ..)| *f == self)
            .copied()
            .unwrap_or(("", self, 0, usize::MAX));
        if count < least || count > most {
            let wanted = if least == most {
                format!("{least}")
            } else if most == usize::MAX {
                format!("at least {least}")
            } else {
                format!("{least} to {most}")
            };
            return Err(error(
                self.name(),
                format!("takes {wanted} arguments, not {count}"),
            ));
        }
        Ok(())
    }

    /// Applies the operator to its (unevaluated) arguments.
    pub(crate) fn call(self, args: &[Expr], env: &Env<'_>) -> Result<Option<Bson>, ExprError> {
        // The operators that do not evaluate every argument.
        match self {
            Func::And => {
                for a in args {
                    if !truthy(eval_in(a, env)?.as_ref()) {
                        return Ok(Some(Bson::Boolean(false)));
                    }
                }
                return Ok(Some(Bson::Boolean(true)));
            }
            Func::Or => {
                for a in args {
                    if truthy(eval_in(a, env)?.as_ref()) {
                        return Ok(Some(Bson::Boolean(true)));
                    }
                }
                return Ok(Some(Bson::Boolean(false)));
            }
            Func::IfNull => {
                let (last, first) = args.split_last().unwrap_or((&Expr::Remove, &[]));
                for a in first {
                    match eval_in(a, env)? {
                        None | Some(Bson::Null | Bson::Undefined) => {}
                        value => return Ok(value),
                    }
                }
                return eval_in(last, env);
            }
            _ => {}
        }
        // The arguments are held while the later ones are evaluated and while the call runs.
        let mut held = super::bounds::Held::new(self.name());
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            let value = eval_in(a, env)?;
            if let Some(value) = &value {
                held.hold(value)?;
            }
            values.push(value);
        }
        self.apply(values, env.collation)
    }

    /// Applies the operator to its evaluated arguments, as many as [`Func::check_arity`]
    /// allows. A flat dispatch: a family whose operators share a rule has a function below
    /// (`compare`, `arithmetic`, `string`, `array`, `document`, `convert`); the others have a
    /// function each, here or in `text`, `more` and `dates`.
    fn apply(
        self,
        mut v: Vec<Option<Bson>>,
        cx: Option<&Collation>,
    ) -> Result<Option<Bson>, ExprError> {
        match self {
            Func::Eq | Func::Ne | Func::Gt | Func::Gte | Func::Lt | Func::Lte | Func::Cmp => {
                Ok(Some(self.compare(&v, cx)))
            }
            Func::Not => Ok(Some(Bson::Boolean(!truthy(v[0].as_ref())))),
            Func::And | Func::Or | Func::IfNull => unreachable_lazy(self.name()),
            Func::Add | Func::Subtract | Func::Multiply | Func::Divide | Func::Mod => {
                self.arithmetic(v)
            }
            Func::Abs | Func::Ceil | Func::Floor => match v[0].take() {
                None | Some(Bson::Null) => Ok(Some(Bson::Null)),
                Some(x) => unary(self, &x).map(Some),
            },
            Func::Round | Func::Trunc => round(self, v),
            Func::Sqrt | Func::Exp | Func::Ln | Func::Log10 => nullish_or(v, |x| real(self, &x)),
            Func::Pow => pow(v),
            Func::Log => super::more::log(&v),
            Func::Sum | Func::Avg | Func::Max | Func::Min => Ok(accumulate(self, v, cx)),
            Func::Concat
            | Func::ToLower
            | Func::ToUpper
            | Func::StrLenCp
            | Func::SubstrCp
            | Func::Split => self.string(v),
            Func::Trim | Func::Ltrim | Func::Rtrim => {
                super::text::trim(self.name(), v.swap_remove(0).unwrap_or(Bson::Null))
            }
            Func::Strcasecmp => {
                let b = v.pop().flatten();
                super::text::strcasecmp(v.pop().flatten(), b)
            }
            Func::SubstrBytes => super::text::substr_bytes(self.name(), v),
            Func::StrLenBytes => super::text::len_bytes(v.swap_remove(0)),
            Func::IndexOfBytes => super::more::index_of(&v, false),
            Func::IndexOfCp => super::more::index_of(&v, true),
            Func::ReplaceOne => super::more::replace(&v, false),
            Func::ReplaceAll => super::more::replace(&v, true),
            Func::Size
            | Func::ArrayElemAt
            | Func::ConcatArrays
            | Func::In
            | Func::IsArray
            | Func::First
            | Func::Last
            | Func::Slice
            | Func::ReverseArray
            | Func::IndexOfArray
            | Func::Range
            | Func::AllElementsTrue
            | Func::AnyElementTrue => self.array(v, cx),
            Func::SetUnion | Func::SetIntersection | Func::SetDifference | Func::SetIsSubset => {
                sets(self, v, cx)
            }
            Func::SetEquals => super::more::set_equals(v, cx),
            Func::MergeObjects | Func::ObjectToArray | Func::ArrayToObject => self.document(v),
            Func::Type => Ok(Some(Bson::String(type_alias(v[0].as_ref()).to_owned()))),
            Func::IsNumber => Ok(Some(Bson::Boolean(v[0].as_ref().is_some_and(is_numeric)))),
            Func::Rand => Ok(Some(Bson::Double(random_unit()))),
            Func::ToString
            | Func::ToInt
            | Func::ToLong
            | Func::ToDouble
            | Func::ToDecimal
            | Func::ToBool
            | Func::ToDate
            | Func::ToObjectId => nullish_or(v, |x| self.convert(x)),
            Func::Year
            | Func::Month
            | Func::DayOfMonth
            | Func::Hour
            | Func::Minute
            | Func::Second
            | Func::Millisecond
            | Func::DayOfWeek
            | Func::DayOfYear
            | Func::Week
            | Func::IsoWeek
            | Func::IsoWeekYear
            | Func::IsoDayOfWeek => super::dates::part(self.name(), v),
        }
    }

    // The families. Each is called by `apply` with its own operators only, so the last
    // member of each `match` is written `_`.

    /// `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte` (whether the two arguments are in that
    /// order) and `$cmp` (-1, 0 or 1), in MongoDB's order across types, missing below null,
    /// strings under the collation.
    fn compare(self, v: &[Option<Bson>], cx: Option<&Collation>) -> Bson {
        let ordering = order(v[0].as_ref(), v[1].as_ref(), cx);
        Bson::Boolean(match self {
            Func::Cmp => return Bson::Int32(i32::from(ordering as i8)),
            Func::Eq => ordering.is_eq(),
            Func::Ne => ordering.is_ne(),
            Func::Gt => ordering.is_gt(),
            Func::Gte => ordering.is_ge(),
            Func::Lt => ordering.is_lt(),
            _ => ordering.is_le(),
        })
    }

    /// `$add`, `$multiply`, `$subtract`, `$divide`, `$mod`: a null, undefined or missing
    /// argument makes the result null.
    fn arithmetic(self, v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
        if v.iter().any(|x| is_nullish(x.as_ref())) {
            return Ok(Some(Bson::Null));
        }
        let operands = |mut v: Vec<Option<Bson>>| {
            (
                v[0].take().unwrap_or(Bson::Null),
                v[1].take().unwrap_or(Bson::Null),
            )
        };
        let result = match self {
            Func::Add => add(&v.into_iter().flatten().collect::<Vec<_>>()),
            Func::Multiply => multiply(&v.into_iter().flatten().collect::<Vec<_>>()),
            Func::Subtract => {
                let (a, b) = operands(v);
                subtract(&a, &b)
            }
            _ => {
                let (a, b) = operands(v);
                divide(self.name(), &a, &b, self == Func::Mod)
            }
        };
        result.map(Some)
    }

    /// `$concat`, `$toLower`, `$toUpper`, `$strLenCP`, `$substrCP`, `$split`: strings in code
    /// points.
    fn string(self, mut v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
        let op = self.name();
        match self {
            Func::Concat => {
                // Every argument is checked, and the length known, before anything is copied.
                let mut len = 0usize;
                for value in &v {
                    match value {
                        None | Some(Bson::Null) => return Ok(Some(Bson::Null)),
                        Some(Bson::String(s)) => len = len.saturating_add(s.len()),
                        Some(other) => return Err(wrong_type(op, "strings", other)),
                    }
                }
                bounds::check_string_len(op, len)?;
                let mut out = String::with_capacity(len);
                for value in v.iter().flatten() {
                    if let Bson::String(s) = value {
                        out.push_str(s);
                    }
                }
                Ok(Some(Bson::String(out)))
            }
            Func::ToLower | Func::ToUpper => {
                let s = match v[0].take() {
                    None | Some(Bson::Null) => String::new(),
                    Some(Bson::String(s)) => s,
                    Some(Bson::Double(d)) => super::convert::double_text(d),
                    Some(other @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_))) => {
                        other.to_string()
                    }
                    Some(Bson::DateTime(d)) => super::dates::iso_string(d.timestamp_millis()),
                    Some(other) => return Err(wrong_type(op, "a string", &other)),
                };
                let changed = if self == Func::ToLower {
                    s.to_lowercase()
                } else {
                    s.to_uppercase()
                };
                // A few characters change case into several: the result may outgrow its input.
                bounds::check_string_len(op, changed.len())?;
                Ok(Some(Bson::String(changed)))
            }
            Func::StrLenCp => match v[0].take() {
                Some(Bson::String(s)) => Ok(Some(int(s.chars().count()))),
                other => Err(wrong_type(op, "a string", &other.unwrap_or(Bson::Null))),
            },
            Func::SubstrCp => substr_cp(v),
            _ => match (v[0].take(), v[1].take()) {
                (None | Some(Bson::Null), _) | (_, None | Some(Bson::Null)) => Ok(Some(Bson::Null)),
                (Some(Bson::String(s)), Some(Bson::String(d))) if !d.is_empty() => {
                    Ok(Some(Bson::Array(
                        s.split(d.as_str())
                            .map(|p| Bson::String(p.to_owned()))
                            .collect(),
                    )))
                }
                _ => Err(error(op, "expects a string and a non-empty delimiter")),
            },
        }
    }

    /// The operators on arrays and positions in them, the set operators aside.
    fn array(
        self,
        mut v: Vec<Option<Bson>>,
        cx: Option<&Collation>,
    ) -> Result<Option<Bson>, ExprError> {
        let op = self.name();
        match self {
            Func::Size => match v[0].take() {
                Some(Bson::Array(items)) => Ok(Some(int(items.len()))),
                other => Err(wrong_type(op, "an array", &other.unwrap_or(Bson::Null))
                    .with_code(ErrorCode::location(17124))),
            },
            Func::ArrayElemAt => array_elem_at(v),
            Func::ConcatArrays => {
                let mut out = Vec::new();
                let mut built = Built::new("$concatArrays");
                for value in v {
                    match value {
                        None | Some(Bson::Null) => return Ok(Some(Bson::Null)),
                        Some(Bson::Array(items)) => {
                            built.add_all(&items)?;
                            out.extend(items);
                        }
                        Some(other) => return Err(wrong_type(op, "arrays", &other)),
                    }
                }
                Ok(Some(Bson::Array(out)))
            }
            Func::In => match v[1].take() {
                Some(Bson::Array(items)) => {
                    let found = items
                        .iter()
                        .any(|item| order(v[0].as_ref(), Some(item), cx) == Ordering::Equal);
                    Ok(Some(Bson::Boolean(found)))
                }
                other => Err(wrong_type(
                    op,
                    "an array as its second argument",
                    &other.unwrap_or(Bson::Null),
                )),
            },
            Func::IsArray => Ok(Some(Bson::Boolean(matches!(v[0], Some(Bson::Array(_)))))),
            Func::First | Func::Last | Func::ReverseArray => first_last_reverse(self, v),
            Func::Slice => slice(v),
            Func::IndexOfArray => index_of_array(v, cx),
            Func::Range => range(&v),
            _ => match v.swap_remove(0) {
                Some(Bson::Array(items)) => {
                    let holds = if self == Func::AllElementsTrue {
                        items.iter().all(|x| truthy(Some(x)))
                    } else {
                        items.iter().any(|x| truthy(Some(x)))
                    };
                    Ok(Some(Bson::Boolean(holds)))
                }
                other => Err(wrong_type(op, "an array", &other.unwrap_or(Bson::Null))),
            },
        }
    }

    /// `$mergeObjects` (null and missing skipped), `$objectToArray` and `$arrayToObject` (null
    /// or missing gives null).
    fn document(self, mut v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
        let op = self.name();
        match self {
            Func::MergeObjects => {
                let mut out = Document::new();
                for value in v {
                    match value {
                        None | Some(Bson::Null) => {}
                        Some(Bson::Document(d)) => out.extend(d),
                        Some(other) => return Err(wrong_type(op, "documents", &other)),
                    }
                }
                // Never larger than its inputs together, which are held already.
                let merged = Bson::Document(out);
                bounds::check(op, &merged)?;
                Ok(Some(merged))
            }
            Func::ObjectToArray => match v[0].take() {
                None | Some(Bson::Null) => Ok(Some(Bson::Null)),
                Some(Bson::Document(d)) => {
                    // Two levels deeper than its input: `[{k, v}]`.
                    let pairs = Bson::Array(
                        d.into_iter()
                            .map(|(k, v)| Bson::Document(bson::doc! { "k": k, "v": v }))
                            .collect(),
                    );
                    bounds::check(op, &pairs)?;
                    Ok(Some(pairs))
                }
                Some(other) => Err(wrong_type(op, "a document", &other)),
            },
            _ => match v[0].take() {
                None | Some(Bson::Null) => Ok(Some(Bson::Null)),
                Some(Bson::Array(items)) => array_to_object(items).map(Some),
                Some(other) => {
                    Err(wrong_type(op, "an array", &other).with_code(ErrorCode::location(40386)))
                }
            },
        }
    }

    /// The `$to*` conversion of a value that is not null (see `convert`).
    fn convert(self, x: Bson) -> Result<Option<Bson>, ExprError> {
        use super::convert;
        match self {
            Func::ToString => convert::to_string(x),
            Func::ToInt => convert::to_int(x),
            Func::ToLong => convert::to_long(x),
            Func::ToDouble => convert::to_double(x),
            Func::ToDecimal => convert::to_decimal(x),
            Func::ToBool => Ok(Some(convert::to_bool(x))),
            Func::ToDate => convert::to_date(x),
            _ => convert::to_object_id(x),
        }
    }
}

/// `$substrCP: [string, start, count]` in code points; a null or missing string is empty,
/// and a number is taken as its text.
fn substr_cp(mut v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
    let op = "$substrCP";
    let s = match v[0].take() {
        None | Some(Bson::Null | Bson::Undefined) => String::new(),
        Some(Bson::String(s)) => s,
        Some(n @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_))) => {
            n.to_string()
        }
        Some(other) => return Err(wrong_type(op, "a string", &other)),
    };
    let (Some(start), Some(count)) = (
        v[1].as_ref().and_then(as_i64),
        v[2].as_ref().and_then(as_i64),
    ) else {
        return Err(error(op, "start and length must be whole numbers"));
    };
    if start < 0 || count < 0 {
        return Err(error(op, "start and length cannot be negative"));
    }
    let taken: String = s
        .chars()
        .skip(usize::try_from(start).unwrap_or(usize::MAX))
        .take(usize::try_from(count).unwrap_or(usize::MAX))
        .collect();
    Ok(Some(Bson::String(taken)))
}

/// `$arrayElemAt: [array, index]`, the index counted from the end when negative, with
/// MongoDB's codes: not an array (28689), an index not a number (28690) or not a whole
/// number that fits an int (28691); null or missing gives null.
fn array_elem_at(mut v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
    let op = "$arrayElemAt";
    match (v[0].take(), v[1].take()) {
        (None | Some(Bson::Null), _) | (_, None | Some(Bson::Null)) => Ok(Some(Bson::Null)),
        (Some(Bson::Array(items)), Some(i)) => {
            if !is_numeric(&i) {
                return Err(error(
                    op,
                    format!("the index must be a number, not {}", type_alias(Some(&i))),
                )
                .with_code(ErrorCode::location(28690)));
            }
            // An integral double or decimal counts, within an int's range.
            let Some(i) = as_i64(&i).filter(|n| i32::try_from(*n).is_ok()) else {
                return Err(error(
                    op,
                    format!("the index must be a whole number that fits an int, not {i}"),
                )
                .with_code(ErrorCode::location(28691)));
            };
            Ok(index_from(items.len(), i).map(|i| items[i].clone()))
        }
        (Some(other), _) => {
            Err(wrong_type(op, "an array", &other).with_code(ErrorCode::location(28689)))
        }
    }
}

/// `$first`, `$last` (missing for an empty array) and `$reverseArray`; null or missing gives
/// null.
fn first_last_reverse(func: Func, mut v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
    let mut items = match v[0].take() {
        None | Some(Bson::Null) => return Ok(Some(Bson::Null)),
        Some(Bson::Array(items)) => items,
        Some(other) => return Err(wrong_type(func.name(), "an array", &other)),
    };
    Ok(match func {
        Func::First => (!items.is_empty()).then(|| items.swap_remove(0)),
        Func::Last => items.pop(),
        _ => {
            items.reverse();
            Some(Bson::Array(items))
        }
    })
}

/// Null for a null or missing argument, else `f` of it.
fn nullish_or(
    mut v: Vec<Option<Bson>>,
    f: impl FnOnce(Bson) -> Result<Option<Bson>, ExprError>,
) -> Result<Option<Bson>, ExprError> {
    match v.swap_remove(0) {
        None | Some(Bson::Null | Bson::Undefined) => Ok(Some(Bson::Null)),
        Some(x) => f(x),
    }
}

/// `$round` (half to even, as MongoDB rounds) and `$trunc` to a number of decimal places
/// (negative: to tens, hundreds, ...); the result keeps the input's type.
fn round(func: Func, v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
    let op = func.name();
    if v.iter().any(|x| is_nullish(x.as_ref())) {
        return Ok(Some(Bson::Null));
    }
    let places = match v.get(1).cloned().flatten() {
        None => 0,
        Some(p) => match as_i64(&p) {
            Some(p) if (-20..=100).contains(&p) => p,
            _ => {
                return Err(error(
                    op,
                    "the place must be a whole number from -20 to 100",
                ));
            }
        },
    };
    let half_even = func == Func::Round;
    let cut = |x: f64| {
        if half_even {
            x.round_ties_even()
        } else {
            x.trunc()
        }
    };
    #[allow(clippy::cast_possible_truncation)]
    let scale = 10f64.powi(places.unsigned_abs().min(300) as i32);
    let on_double = |d: f64| {
        if places >= 0 {
            cut(d * scale) / scale
        } else {
            cut(d / scale) * scale
        }
    };
    let on_int = |i: i64| -> Result<i64, ExprError> {
        if places >= 0 {
            return Ok(i);
        }
        #[allow(clippy::cast_possible_truncation)]
        let unit = 10i64
            .checked_pow(places.unsigned_abs() as u32)
            .ok_or_else(|| error(op, "the place is beyond the range of a long"))?;
        let q = i / unit;
        let r = i % unit;
        let q = if half_even {
            match (2 * r.abs()).cmp(&unit) {
                Ordering::Greater => q + r.signum(),
                Ordering::Equal if q % 2 != 0 => q + r.signum(),
                _ => q,
            }
        } else {
            q
        };
        q.checked_mul(unit)
            .ok_or_else(|| error(op, "the result overflows a long"))
    };
    Ok(Some(match v.into_iter().next().flatten() {
        Some(Bson::Int32(i)) => crate::number::int_or_long(on_int(i64::from(i))?),
        Some(Bson::Int64(i)) => Bson::Int64(on_int(i)?),
        Some(Bson::Double(d)) => Bson::Double(on_double(d)),
        Some(Bson::Decimal128(d)) => crate::update::decimal::to_places(d, places, half_even),
        other => return Err(wrong_type(op, "a number", &other.unwrap_or(Bson::Null))),
    }))
}

/// `$sqrt`, `$exp`, `$ln`, `$log10`: in doubles, or for a decimal argument in decimal (see
/// `decimal_math`, which leaves some decimal arguments to the double computation).
fn real(func: Func, x: &Bson) -> Result<Option<Bson>, ExprError> {
    let op = func.name();
    let Some(d) = as_f64(x).filter(|_| is_numeric(x)) else {
        return Err(wrong_type(op, "a number", x).with_code(ErrorCode::location(28765)));
    };
    if let Bson::Decimal128(decimal) = x {
        let unary = match func {
            Func::Sqrt => Unary::Sqrt,
            Func::Exp => Unary::Exp,
            Func::Ln => Unary::Ln,
            _ => Unary::Log10,
        };
        if let Some(result) = decimal_math::unary(unary, *decimal) {
            return Ok(Some(result));
        }
    }
    let result = match func {
        Func::Sqrt if d < 0.0 => {
            return Err(error(op, "the argument must not be negative")
                .with_code(ErrorCode::location(28714)));
        }
        Func::Sqrt => d.sqrt(),
        Func::Exp => d.exp(),
        Func::Ln | Func::Log10 if d <= 0.0 => {
            let code = if func == Func::Ln { 28766 } else { 28761 };
            return Err(
                error(op, "the argument must be positive").with_code(ErrorCode::location(code))
            );
        }
        Func::Ln => d.ln(),
        _ => d.log10(),
    };
    Ok(Some(Bson::Double(result)))
}

fn is_numeric(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

/// `$pow`: whole powers of whole numbers stay whole while they fit; otherwise a double.
fn pow(v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
    let op = "$pow";
    if v.iter().any(|x| is_nullish(x.as_ref())) {
        return Ok(Some(Bson::Null));
    }
    let mut v = v.into_iter().flatten();
    let (Some(base), Some(exponent)) = (v.next(), v.next()) else {
        return Ok(Some(Bson::Null));
    };
    if !is_numeric(&base) {
        return Err(wrong_type(op, "a number", &base).with_code(ErrorCode::location(28762)));
    }
    if !is_numeric(&exponent) {
        return Err(wrong_type(op, "a number", &exponent).with_code(ErrorCode::location(28763)));
    }
    let (wb, we) = (width(op, &base)?, width(op, &exponent)?);
    let (b, e) = (
        as_f64(&base).unwrap_or(0.0),
        as_f64(&exponent).unwrap_or(0.0),
    );
    if b == 0.0 && e < 0.0 {
        return Err(error(op, "zero cannot be raised to a negative power")
            .with_code(ErrorCode::location(28764)));
    }
    if wb == Width::Decimal || we == Width::Decimal {
        return match decimal_math::pow(&base, &exponent) {
            Ok(result) => Ok(Some(result.unwrap_or(Bson::Null))),
            Err(()) => Err(error(op, "zero cannot be raised to a negative power")
                .with_code(ErrorCode::location(28764))),
        };
    }
    // 1 and -1 to a negative whole power stay whole numbers.
    if wb <= Width::Int64
        && we <= Width::Int64
        && let (Some(x @ (1 | -1)), Some(n)) = (as_i64(&base), as_i64(&exponent))
        && n < 0
    {
        let p: i32 = if x == 1 || n % 2 == 0 { 1 } else { -1 };
        return Ok(Some(if wb == Width::Int32 && we == Width::Int32 {
            Bson::Int32(p)
        } else {
            Bson::Int64(i64::from(p))
        }));
    }
    if wb <= Width::Int64
        && we <= Width::Int64
        && let (Some(x), Some(n)) = (as_i64(&base), as_i64(&exponent))
        && let Ok(n) = u32::try_from(n)
        && let Some(p) = x.checked_pow(n)
    {
        return Ok(Some(if wb == Width::Int32 && we == Width::Int32 {
            i32::try_from(p).map_or(Bson::Int64(p), Bson::Int32)
        } else {
            Bson::Int64(p)
        }));
    }
    Ok(Some(Bson::Double(b.powf(e))))
}

/// `$indexOfArray: [array, value, start, end]`: the first position of an equal element, or -1.
fn index_of_array(
    mut v: Vec<Option<Bson>>,
    cx: Option<&Collation>,
) -> Result<Option<Bson>, ExprError> {
    let op = "$indexOfArray";
    let items = match v[0].take() {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::Array(items)) => items,
        Some(other) => return Err(wrong_type(op, "an array", &other)),
    };
    let bound = |x: Option<&Option<Bson>>, default: usize| -> Result<usize, ExprError> {
        match x {
            None => Ok(default),
            Some(x) => match x.as_ref().and_then(as_i64) {
                Some(n) if n >= 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
                _ => Err(error(
                    op,
                    "start and end must be non-negative whole numbers",
                )),
            },
        }
    };
    let start = bound(v.get(2), 0)?;
    let end = bound(v.get(3), items.len())?.min(items.len());
    let wanted = v[1].take();
    let found =
        (start..end).find(|&i| order(Some(&items[i]), wanted.as_ref(), cx) == Ordering::Equal);
    Ok(Some(Bson::Int32(
        found.map_or(-1, |i| i32::try_from(i).unwrap_or(-1)),
    )))
}

/// `$range: [start, end, step]`: whole numbers from start up to (not including) end.
fn range(v: &[Option<Bson>]) -> Result<Option<Bson>, ExprError> {
    let op = "$range";
    // MongoDB's codes: not a number, then not a whole number that fits an int, for each of
    // start (34443, 34444), end (34445, 34446) and step (34447, 34448).
    let whole = |x: Option<&Option<Bson>>, default: Option<i64>, name: &str, code: i32| match x {
        None => default.ok_or_else(|| error(op, "start and end are required")),
        Some(x) => {
            let value = x.clone().unwrap_or(Bson::Null);
            if !is_numeric(&value) {
                return Err(error(
                    op,
                    format!(
                        "the {name} must be a number, not {}",
                        type_alias(Some(&value))
                    ),
                )
                .with_code(ErrorCode::location(code)));
            }
            as_i64(&value)
                .filter(|n| i32::try_from(*n).is_ok())
                .ok_or_else(|| {
                    error(
                        op,
                        format!("the {name} must be a whole number that fits an int, not {value}"),
                    )
                    .with_code(ErrorCode::location(code + 1))
                })
        }
    };
    let (start, end, step) = (
        whole(v.first(), None, "start", 34443)?,
        whole(v.get(1), None, "end", 34445)?,
        whole(v.get(2), Some(1), "step", 34447)?,
    );
    if step == 0 {
        return Err(error(op, "the step cannot be zero").with_code(ErrorCode::location(34449)));
    }
    let count = if (step > 0 && start >= end) || (step < 0 && start <= end) {
        0
    } else {
        ((end - start).abs() + step.abs() - 1) / step.abs()
    };
    bounds::check_range_len(op, count)?;
    let items = (0..count)
        .map(|i| {
            crate::interrupt::check()?;
            Ok(Bson::Int32(i32::try_from(start + i * step).unwrap_or(0)))
        })
        .collect::<Result<_, ExprError>>()?;
    Ok(Some(Bson::Array(items)))
}

/// The set operators: arrays as sets (duplicates once, order of first appearance).
fn sets(
    func: Func,
    v: Vec<Option<Bson>>,
    cx: Option<&Collation>,
) -> Result<Option<Bson>, ExprError> {
    let op = func.name();
    if func != Func::SetIsSubset && v.iter().any(|x| is_nullish(x.as_ref())) {
        return Ok(Some(Bson::Null));
    }
    let mut arrays = Vec::with_capacity(v.len());
    for x in v {
        match x {
            Some(Bson::Array(items)) => arrays.push(items),
            other => return Err(wrong_type(op, "arrays", &other.unwrap_or(Bson::Null))),
        }
    }
    Ok(Some(match func {
        Func::SetUnion => {
            let mut built = Built::new("$setUnion");
            for array in &arrays {
                built.add_all(array)?;
            }
            Bson::Array(distinct(arrays.into_iter().flatten(), cx)?)
        }
        Func::SetIntersection => {
            let mut iter = arrays.into_iter();
            let first = distinct(iter.next().unwrap_or_default(), cx)?;
            let rest = iter
                .map(|r| members(&r, cx))
                .collect::<Result<Vec<_>, _>>()?;
            Bson::Array(
                first
                    .into_iter()
                    .filter(|x| rest.iter().all(|r| r.contains(x, cx)))
                    .collect(),
            )
        }
        Func::SetDifference => {
            let mut iter = arrays.into_iter();
            let (a, b) = (
                iter.next().unwrap_or_default(),
                members(&iter.next().unwrap_or_default(), cx)?,
            );
            Bson::Array(
                distinct(a, cx)?
                    .into_iter()
                    .filter(|x| !b.contains(x, cx))
                    .collect(),
            )
        }
        _ => {
            let mut iter = arrays.into_iter();
            let (a, b) = (
                iter.next().unwrap_or_default(),
                members(&iter.next().unwrap_or_default(), cx)?,
            );
            Bson::Boolean(a.iter().all(|x| b.contains(x, cx)))
        }
    }))
}

/// The distinct values of `items` in the order first seen, under MongoDB's equality: a hash
/// set of their key encodings, so a set operator takes time in proportion to its input, not
/// its square. Interruptible at each value.
fn distinct(
    items: impl IntoIterator<Item = Bson>,
    cx: Option<&Collation>,
) -> Result<Vec<Bson>, ExprError> {
    let mut set = ValueSet::default();
    for x in items {
        crate::interrupt::check()?;
        set.insert(x, cx);
    }
    Ok(set.into_values())
}

/// An index of `set`'s values, for membership tests.
fn members(set: &[Bson], cx: Option<&Collation>) -> Result<ValueIndex, ExprError> {
    let mut index = ValueIndex::default();
    for (i, x) in set.iter().enumerate() {
        crate::interrupt::check()?;
        index.position(x, i, cx);
    }
    Ok(index)
}

fn unreachable_lazy(op: &str) -> Result<Option<Bson>, ExprError> {
    Err(error(op, "evaluated out of order (an engine bug)"))
}

fn is_nullish(v: Option<&Bson>) -> bool {
    matches!(v, None | Some(Bson::Null | Bson::Undefined))
}

fn int(n: usize) -> Bson {
    i32::try_from(n).map_or_else(|_| Bson::Int64(n as i64), Bson::Int32)
}

fn wrong_type(op: &str, wanted: &str, got: &Bson) -> ExprError {
    error(
        op,
        format!("expects {wanted}, not {}", type_alias(Some(got))),
    )
}

/// MongoDB's order, with missing below every value.
fn order(a: Option<&Bson>, b: Option<&Bson>, cx: Option<&Collation>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => compare_bson(a, b, cx),
    }
}

pub(crate) fn compare_bson(a: &Bson, b: &Bson, cx: Option<&Collation>) -> Ordering {
    match (
        bson::RawBson::try_from(a.clone()),
        bson::RawBson::try_from(b.clone()),
    ) {
        (Ok(a), Ok(b)) => compare_in(a.as_raw_bson_ref(), b.as_raw_bson_ref(), cx),
        _ => Ordering::Equal,
    }
}

// A whole number held by any numeric type: one rule, in `number`.
pub(crate) use crate::number::as_i64;

fn as_f64(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

/// A position into `len` elements, counting from the end when negative.
fn index_from(len: usize, i: i64) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { len + i } else { i };
    (0..len)
        .contains(&i)
        .then(|| usize::try_from(i).ok())
        .flatten()
}

/// The BSON type name `$type` returns (`missing` for a missing value).
pub(crate) fn type_alias(v: Option<&Bson>) -> &'static str {
    match v {
        None => "missing",
        Some(v) => match v {
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
        },
    }
}

/// The numeric kind a sum or product of `values` has: the widest of them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Width {
    Int32,
    Int64,
    Double,
    Decimal,
}

fn width(op: &str, v: &Bson) -> Result<Width, ExprError> {
    Ok(match v {
        Bson::Int32(_) => Width::Int32,
        Bson::Int64(_) => Width::Int64,
        Bson::Double(_) => Width::Double,
        Bson::Decimal128(_) => Width::Decimal,
        // `$add` refuses other types with TypeMismatch.
        other if op == "$add" => {
            return Err(wrong_type(op, "numbers", other).with_code(ErrorCode::TYPE_MISMATCH));
        }
        other => return Err(wrong_type(op, "numbers", other)),
    })
}

/// Sum or product of numbers in the widest of their types; integers that overflow 64 bits
/// become a double, an int32 result that overflows becomes an int64.
fn combine_numbers(op: &str, values: &[Bson], multiply: bool) -> Result<Bson, ExprError> {
    let widest = values
        .iter()
        .map(|v| width(op, v))
        .try_fold(Width::Int32, |w, x| x.map(|x| w.max(x)))?;
    let identity = i32::from(multiply);
    match widest {
        Width::Decimal => {
            let mut acc = Bson::Int32(identity);
            for v in values {
                acc = crate::update::decimal::combine(&acc, v, multiply)
                    .ok_or_else(|| error(op, "the decimal result cannot be represented"))?;
            }
            Ok(acc)
        }
        Width::Double => Ok(Bson::Double(values.iter().filter_map(as_f64).fold(
            f64::from(identity),
            |a, b| if multiply { a * b } else { a + b },
        ))),
        Width::Int32 | Width::Int64 => {
            let exact = values
                .iter()
                .filter_map(as_i64)
                .try_fold(i64::from(identity), |a, b| {
                    if multiply {
                        a.checked_mul(b)
                    } else {
                        a.checked_add(b)
                    }
                });
            Ok(match exact {
                Some(n) if widest == Width::Int32 => crate::number::int_or_long(n),
                Some(n) => Bson::Int64(n),
                None => combine_numbers(
                    op,
                    &values
                        .iter()
                        .filter_map(as_f64)
                        .map(Bson::Double)
                        .collect::<Vec<_>>(),
                    multiply,
                )?,
            })
        }
    }
}

/// `$add`: numbers, and at most one date (the sum is a date, in milliseconds).
fn add(values: &[Bson]) -> Result<Bson, ExprError> {
    let dates: Vec<&bson::DateTime> = values
        .iter()
        .filter_map(|v| match v {
            Bson::DateTime(d) => Some(d),
            _ => None,
        })
        .collect();
    match dates.as_slice() {
        [] => combine_numbers("$add", values, false),
        [date] => {
            let numbers: Vec<Bson> = values
                .iter()
                .filter(|v| !matches!(v, Bson::DateTime(_)))
                .cloned()
                .collect();
            let offset = combine_numbers("$add", &numbers, false)?;
            let millis = as_f64(&offset).unwrap_or(0.0).round();
            #[allow(clippy::cast_possible_truncation)]
            Ok(Bson::DateTime(bson::DateTime::from_millis(
                date.timestamp_millis().saturating_add(millis as i64),
            )))
        }
        _ => Err(error("$add", "only one date can be added")),
    }
}

fn multiply(values: &[Bson]) -> Result<Bson, ExprError> {
    combine_numbers("$multiply", values, true)
}

/// `a - b` for numbers; a date minus a date is milliseconds, a date minus a number a date.
fn subtract(minuend: &Bson, subtrahend: &Bson) -> Result<Bson, ExprError> {
    match (minuend, subtrahend) {
        (Bson::DateTime(x), Bson::DateTime(y)) => Ok(Bson::Int64(
            x.timestamp_millis().saturating_sub(y.timestamp_millis()),
        )),
        (Bson::DateTime(x), n) => {
            let Some(millis) = as_f64(n) else {
                return Err(wrong_type("$subtract", "a number after a date", n));
            };
            #[allow(clippy::cast_possible_truncation)]
            Ok(Bson::DateTime(bson::DateTime::from_millis(
                x.timestamp_millis().saturating_sub(millis.round() as i64),
            )))
        }
        (left, right) => {
            let negated = match right {
                Bson::Int32(small) => Bson::Int64(-i64::from(*small)),
                Bson::Int64(i) => i
                    .checked_neg()
                    .map_or(Bson::Double(-(*i as f64)), Bson::Int64),
                Bson::Double(double) => Bson::Double(-double),
                Bson::Decimal128(decimal) => {
                    let mut bytes = decimal.bytes();
                    bytes[15] ^= 0x80;
                    Bson::Decimal128(bson::Decimal128::from_bytes(bytes))
                }
                other => return Err(wrong_type("$subtract", "numbers or dates", other)),
            };
            let sum = combine_numbers("$subtract", &[left.clone(), negated], false)?;
            // Two int32 operands give an int32 when the difference fits.
            Ok(match (left, right, &sum) {
                (Bson::Int32(_), Bson::Int32(_), Bson::Int64(difference)) => {
                    i32::try_from(*difference).map_or(sum.clone(), Bson::Int32)
                }
                _ => sum,
            })
        }
    }
}

/// `$divide` (always a double) and `$mod` (the type of its operands).
fn divide(op: &str, a: &Bson, b: &Bson, remainder: bool) -> Result<Bson, ExprError> {
    let wa = width(op, a)?;
    let wb = width(op, b)?;
    let (x, y) = (as_f64(a).unwrap_or(0.0), as_f64(b).unwrap_or(0.0));
    if y == 0.0 {
        // MongoDB: `$mod` by zero is 16610, `$divide` by zero a bad value.
        let code = if remainder {
            ErrorCode::location(16610)
        } else {
            ErrorCode::BAD_VALUE
        };
        return Err(error(op, "cannot divide by zero").with_code(code));
    }
    if wa == Width::Decimal || wb == Width::Decimal {
        let result = if remainder {
            crate::update::decimal::remainder(a, b)
        } else {
            crate::update::decimal::divide(a, b)
        };
        return result.ok_or_else(|| error(op, "the decimal result cannot be computed"));
    }
    if !remainder {
        return Ok(Bson::Double(x / y));
    }
    // A double holding a whole number within an int's range counts as an int (MongoDB's
    // `integral`), so an int modulo 3.0 is an int and a long modulo 3.0 a long.
    let integral = |v: &Bson, w: Width| match v {
        Bson::Double(double) => {
            (double.fract() == 0.0 && double.abs() <= f64::from(i32::MAX)).then_some(Width::Int32)
        }
        _ if w <= Width::Int64 => Some(w),
        _ => None,
    };
    match (integral(a, wa), integral(b, wb), as_i64(a), as_i64(b)) {
        (Some(Width::Int32), Some(Width::Int32), Some(x), Some(y)) => Ok(Bson::Int32(
            i32::try_from(x.wrapping_rem(y)).unwrap_or_default(),
        )),
        (Some(_), Some(_), Some(x), Some(y)) => Ok(Bson::Int64(x.wrapping_rem(y))),
        _ => Ok(Bson::Double(x % y)),
    }
}

fn unary(func: Func, x: &Bson) -> Result<Bson, ExprError> {
    let op = func.name();
    Ok(match (func, x) {
        (Func::Abs, Bson::Int32(i)) => i
            .checked_abs()
            .map_or(Bson::Int64(i64::from(*i).abs()), Bson::Int32),
        (Func::Abs, Bson::Int64(i)) => i
            .checked_abs()
            .map(Bson::Int64)
            .ok_or_else(|| error(op, "the absolute value overflows a long"))?,
        (Func::Abs, Bson::Double(d)) => Bson::Double(d.abs()),
        (Func::Abs, Bson::Decimal128(d)) => {
            let mut bytes = d.bytes();
            bytes[15] &= 0x7f;
            Bson::Decimal128(bson::Decimal128::from_bytes(bytes))
        }
        (Func::Ceil, Bson::Double(d)) => Bson::Double(d.ceil()),
        (Func::Floor, Bson::Double(d)) => Bson::Double(d.floor()),
        (_, Bson::Int32(_) | Bson::Int64(_)) => x.clone(),
        (Func::Ceil | Func::Floor, Bson::Decimal128(d)) => {
            crate::update::decimal::integral(*d, func == Func::Floor)
        }
        (_, Bson::Decimal128(_)) => {
            return Err(error(
                op,
                "decimal operands are not supported by this engine",
            ));
        }
        (_, other) => return Err(wrong_type(op, "a number", other)),
    })
}

/// `$sum`, `$avg`, `$max`, `$min` in an expression: over one array argument's elements, or
/// over the arguments; `$sum` and `$avg` ignore non-numbers.
fn accumulate(func: Func, v: Vec<Option<Bson>>, cx: Option<&Collation>) -> Option<Bson> {
    let values: Vec<Bson> = match v.as_slice() {
        [Some(Bson::Array(items))] => items.clone(),
        _ => v.into_iter().flatten().collect(),
    };
    accumulate_values(func, values, cx)
}

/// `$sum`, `$avg`, `$max` or `$min` of values (the accumulators of `$group` use it too).
pub(crate) fn accumulate_values(
    func: Func,
    values: Vec<Bson>,
    cx: Option<&Collation>,
) -> Option<Bson> {
    match func {
        Func::Sum | Func::Avg => {
            let numbers: Vec<Bson> = values
                .into_iter()
                .filter(|x| width("", x).is_ok())
                .collect();
            if func == Func::Avg {
                if numbers.is_empty() {
                    return Some(Bson::Null);
                }
                // Decimals average as a decimal, everything else as a double.
                if numbers.iter().any(|n| matches!(n, Bson::Decimal128(_))) {
                    let total = combine_numbers("$avg", &numbers, false).ok()?;
                    let count = Bson::Int64(i64::try_from(numbers.len()).unwrap_or(i64::MAX));
                    return crate::update::decimal::divide(&total, &count);
                }
                let total = numbers.iter().filter_map(as_f64).sum::<f64>();
                return Some(Bson::Double(total / numbers.len() as f64));
            }
            combine_numbers("$sum", &numbers, false)
                .ok()
                .or(Some(Bson::Int32(0)))
        }
        _ => {
            let candidates = values
                .into_iter()
                .filter(|x| !matches!(x, Bson::Null | Bson::Undefined));
            let best = if func == Func::Max {
                candidates.max_by(|a, b| compare_bson(a, b, cx))
            } else {
                candidates.min_by(|a, b| compare_bson(a, b, cx))
            };
            Some(best.unwrap_or(Bson::Null))
        }
    }
}

fn slice(mut v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
    let items = match v[0].take() {
        None | Some(Bson::Null) => return Ok(Some(Bson::Null)),
        Some(Bson::Array(items)) => items,
        Some(other) => return Err(wrong_type("$slice", "an array", &other)),
    };
    if v[1..].iter().any(|x| is_nullish(x.as_ref())) {
        return Ok(Some(Bson::Null));
    }
    let numbers: Vec<i64> = v[1..]
        .iter()
        .map(|x| x.as_ref().and_then(as_i64))
        .collect::<Option<_>>()
        .ok_or_else(|| error("$slice", "positions and counts must be whole numbers"))?;
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let (start, count) = match numbers.as_slice() {
        [n] if *n >= 0 => (0, *n),
        [n] => (
            (len + n).max(0),
            i64::try_from(n.unsigned_abs()).unwrap_or(i64::MAX),
        ),
        [p, n] if *n > 0 => (
            if *p < 0 {
                (len + p).max(0)
            } else {
                (*p).min(len)
            },
            *n,
        ),
        _ => return Err(error("$slice", "the count must be positive")),
    };
    Ok(Some(Bson::Array(
        items
            .into_iter()
            .skip(usize::try_from(start).unwrap_or(0))
            .take(usize::try_from(count).unwrap_or(usize::MAX))
            .collect(),
    )))
}

/// `$arrayToObject`: `[key, value]` pairs or `{k, v}` documents, all of the form of the first;
/// a later duplicate key wins. MongoDB's codes name each malformed element.
fn array_to_object(items: Vec<Bson>) -> Result<Bson, ExprError> {
    let op = "$arrayToObject";
    let fail =
        |code: i32, reason: String| Err(error(op, reason).with_code(ErrorCode::location(code)));
    let pairs = matches!(items.first(), Some(Bson::Array(_)));
    let mut out = Document::new();
    for item in items {
        let (k, v) = match item {
            Bson::Array(_) if !pairs => {
                return fail(
                    40391,
                    "an array of {k, v} documents cannot hold a [key, value] pair".to_owned(),
                );
            }
            Bson::Document(_) if pairs => {
                return fail(
                    40396,
                    "an array of [key, value] pairs cannot hold a {k, v} document".to_owned(),
                );
            }
            Bson::Array(pair) => {
                let [k, v]: [Bson; 2] = match pair.try_into() {
                    Ok(pair) => pair,
                    Err(pair) => {
                        return fail(
                            40397,
                            format!("a [key, value] pair has two elements, not {}", pair.len()),
                        );
                    }
                };
                let Bson::String(k) = k else {
                    return fail(
                        40395,
                        format!(
                            "the key of a [key, value] pair must be a string, not {}",
                            type_alias(Some(&k))
                        ),
                    );
                };
                (k, v)
            }
            Bson::Document(mut d) => {
                if d.len() != 2 {
                    return fail(
                        40392,
                        format!("a {{k, v}} document has two fields, not {}", d.len()),
                    );
                }
                let (Some(k), Some(v)) = (d.remove("k"), d.remove("v")) else {
                    return fail(40393, "a {k, v} document has the fields k and v".to_owned());
                };
                let Bson::String(k) = k else {
                    return fail(
                        40394,
                        format!("k must be a string, not {}", type_alias(Some(&k))),
                    );
                };
                (k, v)
            }
            other => {
                return fail(
                    40398,
                    format!(
                        "every element must be a [key, value] pair or a {{k, v}} document, not {}",
                        type_alias(Some(&other))
                    ),
                );
            }
        };
        if k.contains('\0') {
            let code = if pairs { 4_940_401 } else { 4_940_400 };
            return fail(code, "a key cannot contain a null character".to_owned());
        }
        out.insert(k, v);
    }
    Ok(Bson::Document(out))
}

/// A uniform double in [0, 1) from a per-thread xorshift generator seeded by the clock.
fn random_unit() -> f64 {
    use std::cell::Cell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0x9e37_79b9_7f4a_7c15, |d| d.as_nanos() as u64)
                | 1,
        );
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}
