//! String operators that take named arguments or work on bytes: `$trim`, `$ltrim`, `$rtrim`,
//! `$regexMatch`, `$regexFind`, `$regexFindAll`, `$strcasecmp`, `$substrBytes` (and its alias `$substr`), `$strLenBytes`.

use std::cmp::Ordering;

use bson::{Bson, Document};

use super::named::{Args, Named};
use super::{ExprError, error};
use crate::code::ErrorCode;
use crate::pcre::{CompileError, Compiled, Groups, MatchLimitExceeded};

/// The named arguments of an operator, refusing unknown ones.
fn named(op: &str, v: Bson, known: &[&str]) -> Result<Document, ExprError> {
    let Bson::Document(d) = v else {
        return Err(error(
            op,
            format!("expects a document of {}", known.join(", ")),
        ));
    };
    if let Some(unknown) = d.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(error(op, format!("unknown argument `{unknown}`")));
    }
    Ok(d)
}

/// What `$trim` removes by default: Unicode whitespace and the NUL character.
fn default_trimmed(c: char) -> bool {
    c.is_whitespace() || c == '\0'
}

/// `$trim` (both ends), `$ltrim` (start) or `$rtrim` (end): `{input, chars}`.
pub(crate) fn trim(op: &str, v: Bson) -> Result<Option<Bson>, ExprError> {
    let mut d = named(op, v, &["input", "chars"])?;
    let input = match d.remove("input") {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::String(s)) => s,
        Some(other) => {
            return Err(error(
                op,
                format!("`input` must be a string, not `{other}`"),
            ));
        }
    };
    let chars: Option<Vec<char>> = match d.remove("chars") {
        None => None,
        Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::String(s)) => Some(s.chars().collect()),
        Some(other) => {
            return Err(error(
                op,
                format!("`chars` must be a string, not `{other}`"),
            ));
        }
    };
    let trimmed = |c: char| {
        chars
            .as_ref()
            .map_or_else(|| default_trimmed(c), |set| set.contains(&c))
    };
    let out = match op {
        "$ltrim" => input.trim_start_matches(trimmed),
        "$rtrim" => input.trim_end_matches(trimmed),
        _ => input.trim_matches(trimmed),
    };
    Ok(Some(Bson::String(out.to_owned())))
}

/// `$regexMatch`, `$regexFind` and `$regexFindAll`: `{input, regex, options}`. The pattern is a
/// string or a BSON regular expression; options (`i`, `m`, `s`, `x`) come from one of the two.
/// A null or missing input gives `false`, `null` and `[]`; `$regexFind`'s match is `{match,
/// idx, captures}` with `idx` counted in code points and an unmatched group's capture null.
/// `$regexFindAll` goes on from the end of each match, or one code point further after an
/// empty one. The arguments are read in the order `regex`, `options`, `input`, each checked
/// as it is read.
pub(crate) fn regex(op: Named, args: &Args) -> Result<Option<Bson>, ExprError> {
    let name = args.op();
    let (pattern, flags) = pattern_and_options(args)?;
    let input = match args.get("input")? {
        None | Some(Bson::Null | Bson::Undefined) => None,
        Some(Bson::String(s)) => Some(s),
        Some(other) => {
            return Err(error(
                name,
                format!("`input` must be a string, not {}", super::type_name(&other)),
            )
            .with_code(ErrorCode::location(51104)));
        }
    };
    // The pattern and its options are checked even when there is no input.
    let (Some(compiled), Some(input)) = (compile(name, pattern, &flags)?, input) else {
        return Ok(Some(match op {
            Named::RegexMatch => Bson::Boolean(false),
            Named::RegexFindAll => Bson::Array(Vec::new()),
            _ => Bson::Null,
        }));
    };
    let limit = |MatchLimitExceeded| {
        error(
            name,
            "Error occurred while executing the regular expression: it passed its backtracking limit",
        )
        .with_code(ErrorCode::location(51156))
    };
    Ok(Some(match op {
        Named::RegexMatch => Bson::Boolean(compiled.is_match(&input).map_err(limit)?),
        Named::RegexFind => compiled
            .captures_at(&input, 0)
            .map_err(limit)?
            .map_or(Bson::Null, |m| {
                found(&m, &input, &mut CodePoints::new(&input))
            }),
        _ => Bson::Array(find_all(&compiled, &input).map_err(limit)?),
    }))
}

/// The pattern (`None` when `regex` is null or missing) and its options, read from `regex`
/// and then `options`, with MongoDB's codes: `regex` of another type (51105), `options` of
/// another type (51106), options in both (51107), a null character in `options` (51110).
fn pattern_and_options(args: &Args) -> Result<(Option<String>, String), ExprError> {
    let name = args.op();
    let c = |n: i32| ErrorCode::location(n);
    let (pattern, mut flags) = match args.get("regex")? {
        Some(Bson::String(p)) => (Some(p), String::new()),
        Some(Bson::RegularExpression(r)) => (Some(r.pattern.to_string()), r.options.to_string()),
        None | Some(Bson::Null | Bson::Undefined) => (None, String::new()),
        Some(other) => {
            return Err(error(
                name,
                format!(
                    "`regex` must be a string or a regular expression, not {}",
                    super::type_name(&other)
                ),
            )
            .with_code(c(51105)));
        }
    };
    match args.get("options")? {
        None | Some(Bson::Null | Bson::Undefined) => {}
        Some(Bson::String(o)) if flags.is_empty() => {
            if o.contains('\0') {
                return Err(error(name, "the options contain a null character").with_code(c(51110)));
            }
            flags = o;
        }
        Some(Bson::String(_)) => {
            return Err(error(
                name,
                "options are given both in the regular expression and in `options`",
            )
            .with_code(c(51107)));
        }
        Some(other) => {
            return Err(error(
                name,
                format!(
                    "`options` must be a string, not {}",
                    super::type_name(&other)
                ),
            )
            .with_code(c(51106)));
        }
    }
    Ok((pattern, flags))
}

/// The options a pattern takes.
const FLAGS: [char; 4] = ['i', 'm', 's', 'x'];

/// The pattern compiled with its options, or `None` without a pattern. The options are
/// checked even then (51108); then a null character in the pattern (51109) and the pattern
/// itself (51111).
fn compile(
    name: &str,
    pattern: Option<String>,
    flags: &str,
) -> Result<Option<Compiled>, ExprError> {
    let c = |n: i32| ErrorCode::location(n);
    if let Some(bad) = flags.chars().find(|f| !FLAGS.contains(f)) {
        return Err(
            error(name, format!("invalid flag in regex options: {bad}")).with_code(c(51108))
        );
    }
    let Some(pattern) = pattern else {
        return Ok(None);
    };
    if pattern.contains('\0') {
        return Err(error(
            name,
            "the regular expression or its options contain a null character",
        )
        .with_code(c(51109)));
    }
    let on: String = FLAGS.iter().filter(|f| flags.contains(**f)).collect();
    let source = if on.is_empty() {
        pattern.clone()
    } else {
        format!("(?{on}){pattern}")
    };
    let compiled = Compiled::new(&source, None).map_err(|e| {
        let why = match e {
            CompileError::TooBig => "the compiled pattern is too big".to_owned(),
            CompileError::Invalid(why) => why,
        };
        error(
            name,
            format!("`{pattern}` is not a supported regular expression: {why}"),
        )
        .with_code(c(51111))
    })?;
    Ok(Some(compiled))
}

/// `$regexFindAll`'s matches: each searched from the end of the last, or one code point
/// further after an empty one; a match starts before the end of the input (an empty input
/// has its one match).
fn find_all(compiled: &Compiled, input: &str) -> Result<Vec<Bson>, MatchLimitExceeded> {
    let mut code_points = CodePoints::new(input);
    let mut all = Vec::new();
    let mut at = 0;
    while at < input.len() || (at == 0 && input.is_empty()) {
        let Some(m) = compiled.captures_at(input, at)? else {
            break;
        };
        let whole = m.first().cloned().flatten().unwrap_or(at..at);
        all.push(found(&m, input, &mut code_points));
        at = if whole.is_empty() {
            whole.end + input[whole.end..].chars().next().map_or(1, char::len_utf8)
        } else {
            whole.end
        };
    }
    Ok(all)
}

/// A match as `$regexFind` gives it: `{match, idx, captures}`.
fn found(m: &Groups, input: &str, code_points: &mut CodePoints<'_>) -> Bson {
    let whole = m.first().cloned().flatten().unwrap_or(0..0);
    let captures = m
        .iter()
        .skip(1)
        .map(|g| {
            g.clone()
                .map_or(Bson::Null, |g| Bson::String(input[g].to_owned()))
        })
        .collect();
    let mut d = Document::new();
    d.insert("match", input[whole.clone()].to_owned());
    d.insert("idx", count_as_int(code_points.before(whole.start)));
    d.insert("captures", Bson::Array(captures));
    Bson::Document(d)
}

/// The code points of `input` before a byte offset, counted on from the last offset asked
/// (matches come in order, so the input is walked once).
struct CodePoints<'a> {
    input: &'a str,
    /// The last offset asked, and the code points before it.
    last: (usize, usize),
}

impl<'a> CodePoints<'a> {
    fn new(input: &'a str) -> CodePoints<'a> {
        CodePoints {
            input,
            last: (0, 0),
        }
    }

    fn before(&mut self, at: usize) -> usize {
        let (from, n) = self.last;
        let n = if at >= from {
            n + self.input[from..at].chars().count()
        } else {
            self.input[..at].chars().count()
        };
        self.last = (at, n);
        n
    }
}

fn count_as_int(n: usize) -> Bson {
    crate::number::int_or_long(i64::try_from(n).unwrap_or(i64::MAX))
}

fn text_or_empty(op: &str, v: Option<Bson>) -> Result<String, ExprError> {
    match v {
        None | Some(Bson::Null | Bson::Undefined) => Ok(String::new()),
        Some(Bson::String(s)) => Ok(s),
        Some(Bson::Int32(i)) => Ok(i.to_string()),
        Some(Bson::Int64(i)) => Ok(i.to_string()),
        Some(Bson::Double(d)) => Ok(super::convert::double_text(d)),
        Some(Bson::Decimal128(d)) => Ok(d.to_string()),
        Some(Bson::DateTime(d)) => Ok(super::dates::iso_string(d.timestamp_millis())),
        Some(other) => Err(error(op, format!("expects a string, not `{other}`"))),
    }
}

/// `$strcasecmp`: -1, 0 or 1 comparing ASCII letters without case.
pub(crate) fn strcasecmp(a: Option<Bson>, b: Option<Bson>) -> Result<Option<Bson>, ExprError> {
    let a = text_or_empty("$strcasecmp", a)?.to_ascii_lowercase();
    let b = text_or_empty("$strcasecmp", b)?.to_ascii_lowercase();
    Ok(Some(Bson::Int32(match a.as_bytes().cmp(b.as_bytes()) {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    })))
}

/// `$substrBytes` / `$substr`: `[string, start, length]` in UTF-8 bytes (a negative length
/// takes the rest); a cut inside a character is an error.
pub(crate) fn substr_bytes(op: &str, v: Vec<Option<Bson>>) -> Result<Option<Bson>, ExprError> {
    let mut v = v.into_iter();
    let s = text_or_empty(op, v.next().flatten())?;
    // A number's integer part: MongoDB truncates a fractional offset or length.
    let whole = |x: Option<Bson>| match x {
        Some(Bson::Double(d)) if d.is_finite() => Some(d.trunc() as i64),
        Some(Bson::Decimal128(d)) => d
            .to_string()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(|f| f.trunc() as i64),
        Some(other) => super::as_i64(&other),
        None => None,
    };
    let (Some(start), Some(length)) = (whole(v.next().flatten()), whole(v.next().flatten())) else {
        return Err(error(op, "start and length must be whole numbers"));
    };
    if start < 0 {
        return Err(error(op, "start cannot be negative"));
    }
    let start = usize::try_from(start).unwrap_or(usize::MAX).min(s.len());
    let end = if length < 0 {
        s.len()
    } else {
        start
            .saturating_add(usize::try_from(length).unwrap_or(usize::MAX))
            .min(s.len())
    };
    match s.get(start..end) {
        Some(part) => Ok(Some(Bson::String(part.to_owned()))),
        // MongoDB checks the start (28656), then the end (28657).
        None => Err(
            error(op, "the range cuts a UTF-8 character in the middle").with_code(
                ErrorCode::location(if s.is_char_boundary(start) {
                    28657
                } else {
                    28656
                }),
            ),
        ),
    }
}

/// `$strLenBytes`: the UTF-8 length.
pub(crate) fn len_bytes(v: Option<Bson>) -> Result<Option<Bson>, ExprError> {
    match v {
        Some(Bson::String(s)) => Ok(Some(
            i32::try_from(s.len()).map_or(Bson::Int64(s.len() as i64), Bson::Int32),
        )),
        other => Err(error(
            "$strLenBytes",
            format!(
                "expects a string, not {}",
                super::func::type_alias(other.as_ref())
            ),
        )),
    }
}
