//! String operators that take named arguments or work on bytes: `$trim`, `$ltrim`, `$rtrim`,
//! `$regexMatch`, `$strcasecmp`, `$substrBytes` (and its alias `$substr`), `$strLenBytes`.

use std::cmp::Ordering;

use bson::{Bson, Document};

use super::{ExprError, error};
use crate::code::ErrorCode;

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

/// `$regexMatch: {input, regex, options}`: whether the string matches.
pub(crate) fn regex_match(v: Bson) -> Result<Option<Bson>, ExprError> {
    let op = "$regexMatch";
    let mut d = named(op, v, &["input", "regex", "options"])?;
    let (pattern, mut flags) = match d.remove("regex") {
        Some(Bson::String(p)) => (p, String::new()),
        Some(Bson::RegularExpression(r)) => (r.pattern.to_string(), r.options.to_string()),
        None | Some(Bson::Null) => return Ok(Some(Bson::Boolean(false))),
        Some(other) => {
            return Err(error(
                op,
                format!("`regex` must be a string or a regular expression, not `{other}`"),
            ));
        }
    };
    match d.remove("options") {
        None | Some(Bson::Null) => {}
        Some(Bson::String(o)) if flags.is_empty() => flags = o,
        Some(Bson::String(_)) => {
            return Err(error(
                op,
                "options are given both in the regular expression and in `options`",
            ));
        }
        Some(other) => {
            return Err(error(
                op,
                format!("`options` must be a string, not `{other}`"),
            ));
        }
    }
    let input = match d.remove("input") {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Boolean(false))),
        Some(Bson::String(s)) => s,
        Some(other) => {
            return Err(error(
                op,
                format!("`input` must be a string, not `{other}`"),
            ));
        }
    };
    let mut builder = regex::RegexBuilder::new(&pattern);
    for f in flags.chars() {
        match f {
            'i' => builder.case_insensitive(true),
            'm' => builder.multi_line(true),
            's' => builder.dot_matches_new_line(true),
            'x' => builder.ignore_whitespace(true),
            other => return Err(error(op, format!("unknown option `{other}`"))),
        };
    }
    let compiled = builder.build().map_err(|e| {
        error(
            op,
            format!("`{pattern}` is not a supported regular expression: {e}"),
        )
    })?;
    Ok(Some(Bson::Boolean(compiled.is_match(&input))))
}

fn text_or_empty(op: &str, v: Option<Bson>) -> Result<String, ExprError> {
    match v {
        None | Some(Bson::Null | Bson::Undefined) => Ok(String::new()),
        Some(Bson::String(s)) => Ok(s),
        Some(Bson::Int32(i)) => Ok(i.to_string()),
        Some(Bson::Int64(i)) => Ok(i.to_string()),
        Some(Bson::Double(d)) => Ok(super::convert::double_text(d)),
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
    let whole = |x: Option<Bson>| x.as_ref().and_then(super::as_i64);
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
