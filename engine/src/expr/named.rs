//! Operators whose one argument is a document of named arguments (`{$dateAdd: {startDate,
//! unit, amount}}`). Their names are checked when the expression is parsed, and each argument
//! is evaluated only when the operator reads it: `onNull` and `onError` are evaluated only when
//! they apply, as MongoDB does.

use bson::Bson;

use super::eval::{Env, eval_in};
use super::{Expr, ExprError, Scope, error};
use crate::code::ErrorCode;

/// An operator of named arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    DateToString,
    DateToParts,
    DateFromParts,
    DateFromString,
    DateAdd,
    DateSubtract,
    DateDiff,
    DateTrunc,
    RegexFind,
    RegexFindAll,
    RegexMatch,
    Convert,
}

/// One operator's names: those it knows, and those it requires with MongoDB's code for each
/// missing one; and MongoDB's codes for an argument that is not a document and for an unknown
/// name.
struct Spec {
    name: &'static str,
    op: Named,
    known: &'static [&'static str],
    required: &'static [(&'static str, i32)],
    not_object_code: i32,
    unknown_code: i32,
}

const PARTS: &[&str] = &[
    "year",
    "month",
    "day",
    "hour",
    "minute",
    "second",
    "millisecond",
    "isoWeekYear",
    "isoWeek",
    "isoDayOfWeek",
    "timezone",
];

const SPECS: &[Spec] = &[
    Spec {
        name: "$dateToString",
        op: Named::DateToString,
        known: &["date", "format", "timezone", "onNull"],
        required: &[("date", 18628)],
        not_object_code: 18629,
        unknown_code: 18534,
    },
    Spec {
        name: "$dateToParts",
        op: Named::DateToParts,
        known: &["date", "timezone", "iso8601"],
        required: &[("date", 40522)],
        not_object_code: 40524,
        unknown_code: 40520,
    },
    Spec {
        name: "$dateFromParts",
        op: Named::DateFromParts,
        known: PARTS,
        required: &[],
        not_object_code: 40519,
        unknown_code: 40518,
    },
    Spec {
        name: "$dateFromString",
        op: Named::DateFromString,
        known: &["dateString", "format", "timezone", "onError", "onNull"],
        required: &[("dateString", 40542)],
        not_object_code: 40540,
        unknown_code: 40541,
    },
    Spec {
        name: "$dateAdd",
        op: Named::DateAdd,
        known: &["startDate", "unit", "amount", "timezone"],
        required: &[
            ("startDate", 5_166_402),
            ("unit", 5_166_402),
            ("amount", 5_166_402),
        ],
        not_object_code: 5_166_400,
        unknown_code: 5_166_401,
    },
    Spec {
        name: "$dateSubtract",
        op: Named::DateSubtract,
        known: &["startDate", "unit", "amount", "timezone"],
        required: &[
            ("startDate", 5_166_402),
            ("unit", 5_166_402),
            ("amount", 5_166_402),
        ],
        not_object_code: 5_166_400,
        unknown_code: 5_166_401,
    },
    Spec {
        name: "$dateDiff",
        op: Named::DateDiff,
        known: &["startDate", "endDate", "unit", "timezone", "startOfWeek"],
        required: &[
            ("startDate", 5_166_303),
            ("endDate", 5_166_304),
            ("unit", 5_166_305),
        ],
        not_object_code: 5_166_301,
        unknown_code: 5_166_302,
    },
    Spec {
        name: "$dateTrunc",
        op: Named::DateTrunc,
        known: &["date", "unit", "binSize", "timezone", "startOfWeek"],
        required: &[("date", 5_439_009), ("unit", 5_439_010)],
        not_object_code: 5_439_007,
        unknown_code: 5_439_008,
    },
    Spec {
        name: "$regexFind",
        op: Named::RegexFind,
        known: &["input", "regex", "options"],
        required: &[],
        not_object_code: 51103,
        unknown_code: 31024,
    },
    Spec {
        name: "$regexFindAll",
        op: Named::RegexFindAll,
        known: &["input", "regex", "options"],
        required: &[],
        not_object_code: 51103,
        unknown_code: 31024,
    },
    Spec {
        name: "$regexMatch",
        op: Named::RegexMatch,
        known: &["input", "regex", "options"],
        required: &[],
        not_object_code: 51103,
        unknown_code: 31024,
    },
    Spec {
        name: "$convert",
        op: Named::Convert,
        known: &["input", "to", "onError", "onNull", "format", "byteOrder"],
        required: &[("input", 34420), ("to", 34421)],
        not_object_code: 34415,
        unknown_code: 34416,
    },
];

impl Named {
    pub(crate) fn by_name(name: &str) -> Option<Named> {
        SPECS.iter().find(|s| s.name == name).map(|s| s.op)
    }

    fn spec(self) -> &'static Spec {
        SPECS.iter().find(|s| s.op == self).unwrap_or(&SPECS[0])
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The arguments of `arg`, one per known name (`None` where not given).
    pub(crate) fn parse(self, arg: &Bson, scope: &Scope) -> Result<Vec<Option<Expr>>, ExprError> {
        let spec = self.spec();
        let code = |n: i32| ErrorCode::location(n);
        let Bson::Document(d) = arg else {
            return Err(error(spec.name, "expects a document of named arguments")
                .with_code(code(spec.not_object_code)));
        };
        if let Some(unknown) = d.keys().find(|k| !spec.known.contains(&k.as_str())) {
            return Err(error(spec.name, format!("unknown argument `{unknown}`"))
                .with_code(code(spec.unknown_code)));
        }
        if let Some((missing, missing_code)) =
            spec.required.iter().find(|(r, _)| !d.contains_key(*r))
        {
            return Err(error(spec.name, format!("missing argument `{missing}`"))
                .with_code(code(*missing_code)));
        }
        spec.known
            .iter()
            .map(|k| d.get(*k).map(|v| Expr::parse_nested(v, scope)).transpose())
            .collect()
    }

    /// Applies the operator to its arguments.
    pub(crate) fn call(
        self,
        args: &[Option<Expr>],
        env: &Env<'_>,
    ) -> Result<Option<Bson>, ExprError> {
        let args = Args {
            spec: self.spec(),
            exprs: args,
            env,
        };
        match self {
            Named::DateToString => super::dates::to_string(&args),
            Named::DateToParts => super::dates::to_parts(&args),
            Named::DateFromParts => super::dates::from_parts(&args),
            Named::DateFromString => super::dates::from_string(&args),
            Named::DateAdd => super::dates::add(&args, 1),
            Named::DateSubtract => super::dates::add(&args, -1),
            Named::DateDiff => super::dates::diff(&args),
            Named::DateTrunc => super::dates::trunc(&args),
            Named::RegexFind | Named::RegexFindAll | Named::RegexMatch => {
                super::text::regex(self, &args)
            }
            Named::Convert => super::convert::convert(&args),
        }
    }
}

/// The arguments of one call, evaluated on demand.
pub(crate) struct Args<'a, 'e> {
    spec: &'static Spec,
    exprs: &'a [Option<Expr>],
    env: &'a Env<'e>,
}

impl Args<'_, '_> {
    /// The operator's name, for messages.
    pub(crate) fn op(&self) -> &'static str {
        self.spec.name
    }

    fn expr(&self, name: &str) -> Option<&Expr> {
        let at = self.spec.known.iter().position(|k| *k == name)?;
        self.exprs.get(at)?.as_ref()
    }

    /// Whether the argument was written.
    pub(crate) fn given(&self, name: &str) -> bool {
        self.expr(name).is_some()
    }

    /// The argument's value; `None` when it was not written or is missing.
    pub(crate) fn get(&self, name: &str) -> Result<Option<Bson>, ExprError> {
        match self.expr(name) {
            Some(e) => eval_in(e, self.env),
            None => Ok(None),
        }
    }
}

impl std::fmt::Debug for Args<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Args").field("op", &self.spec.name).finish()
    }
}
