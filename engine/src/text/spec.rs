//! A text index's definition and the terms it gives a document, with their scores.
//!
//! The indexed strings: those at the weighted paths (through subdocuments and one level of
//! arrays; other types are ignored), or, for the wildcard `$**`, every string at any depth.
//! Each document, and each subdocument, may name its language in the language-override field
//! (`language` unless the index names another); the strings under it are read in that language,
//! else in the index's `default_language`. The override field itself is never indexed.
//!
//! Scores, MongoDB's formula: each string is scored alone. Of its `n` terms (stop words left
//! out), a term found `count` times has the frequency `sum of 1/2^(k-1)` over its occurrences
//! `k = 1..count`; its score is `weight * frequency * (0.5 * count / n + 0.5)`, times 1.1 when the
//! whole string is the term (ASCII case aside). A document's score for a term is the sum over
//! its strings, capped at 10^9.

use std::collections::HashMap;

use bson::{Bson, Document, RawBsonRef, RawDocument};
use md5::{Digest, Md5};

use super::language::Language;
use super::tokenize::{Sensitivity, terms};
use crate::error::IndexSpecError;

/// The text index version this engine builds (MongoDB's current one).
pub const TEXT_INDEX_VERSION: i32 = 3;

/// The key of the wildcard that indexes every string.
const WILDCARD: &str = "$**";

/// The most a term's score reaches in one document.
const MAX_SCORE: f64 = 1e9;

/// Terms longer than this many bytes are keyed by a prefix of this length and their hash, as
/// in MongoDB.
const MAX_TERM_KEY: usize = 224;

/// What a text index indexes and how; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct TextSpec {
    /// The weighted paths, sorted, without the wildcard.
    weights: Vec<(String, i32)>,
    /// The weight of strings at paths not weighted, when the index has the wildcard.
    wildcard: Option<i32>,
    default_language: Language,
    language_override: String,
}

/// Why a document's strings cannot be indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextError {
    /// The language-override field holds something other than a string (MongoDB's 17261).
    LanguageNotString { field: String },
    /// The language-override field names a language text search does not have (17262).
    UnsupportedLanguage { language: String },
    /// The document's bytes are damaged.
    Malformed { reason: String },
    /// An array in a prefix or suffix field of a compound text index (MongoDB's 16675).
    ArrayBesideText { path: String },
}

impl TextError {
    /// MongoDB's code for the condition.
    pub fn code(&self) -> crate::code::ErrorCode {
        use crate::code::ErrorCode;
        match self {
            TextError::LanguageNotString { .. } => ErrorCode::location(17261),
            TextError::UnsupportedLanguage { .. } => ErrorCode::location(17262),
            TextError::ArrayBesideText { .. } => ErrorCode::location(16675),
            TextError::Malformed { .. } => ErrorCode::BAD_VALUE,
        }
    }
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TextError::LanguageNotString { field } => write!(
                f,
                "found language override field `{field}` in document with non-string type"
            ),
            TextError::UnsupportedLanguage { language } => {
                write!(f, "language override unsupported: {language}")
            }
            TextError::Malformed { reason } => write!(f, "damaged document: {reason}"),
            TextError::ArrayBesideText { path } => write!(
                f,
                "cannot have a multi-key as a prefix to a text index: `{path}` is an array"
            ),
        }
    }
}

impl TextSpec {
    /// The definition from the key pattern's text fields (empty for the stored form
    /// `{_fts: "text", _ftsx: 1}`) and the index document's text options.
    pub(crate) fn parse(fields: &[&str], index: &Document) -> Result<TextSpec, IndexSpecError> {
        let mut weights: Vec<(String, i32)> = Vec::new();
        let mut wildcard = None;
        if let Some(given) = index.get("weights") {
            let Bson::Document(given) = given else {
                return Err(text_error("text index option 'weights' must be an object"));
            };
            for (path, weight) in given {
                let weight = parse_weight(weight)?;
                if path == WILDCARD {
                    wildcard = Some(weight);
                } else {
                    check_path(path)?;
                    weights.push((path.clone(), weight));
                }
            }
        }
        for field in fields {
            if *field == WILDCARD {
                wildcard.get_or_insert(1);
            } else if !weights.iter().any(|(p, _)| p == field) {
                check_path(field)?;
                weights.push(((*field).to_owned(), 1));
            }
        }
        if weights.is_empty() && wildcard.is_none() {
            return Err(text_error(
                "a text index needs a text field in its key pattern or its 'weights'",
            ));
        }
        weights.sort();
        Ok(TextSpec {
            weights,
            wildcard,
            default_language: parse_default_language(index.get("default_language"))?,
            language_override: parse_override(index.get("language_override"))?,
        })
    }

    /// The text options as MongoDB lists them: `weights` (sorted by path), `default_language`,
    /// `language_override`, `textIndexVersion`.
    pub(crate) fn options_into(&self, doc: &mut Document) {
        let mut weights: Document = self
            .weights
            .iter()
            .map(|(p, w)| (p.clone(), Bson::Int32(*w)))
            .collect();
        if let Some(w) = self.wildcard {
            weights.insert(WILDCARD, w);
        }
        doc.insert("weights", weights);
        doc.insert("default_language", self.default_language.name());
        doc.insert("language_override", self.language_override.as_str());
        doc.insert("textIndexVersion", TEXT_INDEX_VERSION);
    }

    /// The language strings are read in where the document names none.
    pub fn default_language(&self) -> Language {
        self.default_language
    }

    /// Calls `each` with every indexed string of `doc`, its weight and its language.
    pub(crate) fn strings<'d>(
        &self,
        doc: &'d RawDocument,
        each: &mut dyn FnMut(&'d str, i32, Language),
    ) -> Result<(), TextError> {
        self.walk(doc, "", self.default_language, each)
    }

    /// Each term of `doc` with its score (see the module documentation).
    pub(crate) fn term_scores(&self, doc: &RawDocument) -> Result<HashMap<String, f64>, TextError> {
        let mut scores = HashMap::new();
        self.strings(doc, &mut |text, weight, language| {
            score_string(text, f64::from(weight), language, &mut scores);
        })?;
        for score in scores.values_mut() {
            *score = score.min(MAX_SCORE);
        }
        Ok(scores)
    }

    fn walk<'d>(
        &self,
        doc: &'d RawDocument,
        prefix: &str,
        inherited: Language,
        each: &mut dyn FnMut(&'d str, i32, Language),
    ) -> Result<(), TextError> {
        let language = self.language_of(doc, inherited)?;
        for element in doc {
            let (key, value) = element.map_err(malformed)?;
            let key = key.as_str();
            if key == self.language_override {
                continue;
            }
            let path = if prefix.is_empty() {
                key.to_owned()
            } else {
                format!("{prefix}.{key}")
            };
            self.visit(&path, value, language, false, each)?;
        }
        Ok(())
    }

    fn visit<'d>(
        &self,
        path: &str,
        value: RawBsonRef<'d>,
        language: Language,
        in_array: bool,
        each: &mut dyn FnMut(&'d str, i32, Language),
    ) -> Result<(), TextError> {
        match value {
            RawBsonRef::String(text) => {
                if let Some(weight) = self.weight_of(path) {
                    each(text, weight, language);
                }
            }
            RawBsonRef::Document(inner) if self.may_reach(path) => {
                self.walk(inner, path, language, each)?;
            }
            RawBsonRef::Array(items) if !in_array && self.may_reach_or_is(path) => {
                for item in items {
                    self.visit(path, item.map_err(malformed)?, language, true, each)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The language of `doc`'s strings: its override field's, else `inherited`.
    fn language_of(&self, doc: &RawDocument, inherited: Language) -> Result<Language, TextError> {
        match doc.get(&self.language_override).map_err(malformed)? {
            None => Ok(inherited),
            Some(RawBsonRef::String(name)) => {
                Language::parse(name).ok_or_else(|| TextError::UnsupportedLanguage {
                    language: name.to_owned(),
                })
            }
            Some(_) => Err(TextError::LanguageNotString {
                field: self.language_override.clone(),
            }),
        }
    }

    fn weight_of(&self, path: &str) -> Option<i32> {
        match self.weights.binary_search_by(|(p, _)| p.as_str().cmp(path)) {
            Ok(at) => Some(self.weights[at].1),
            Err(_) => self.wildcard,
        }
    }

    /// Whether a weighted path lies below `path`.
    fn may_reach(&self, path: &str) -> bool {
        self.wildcard.is_some()
            || self.weights.iter().any(|(p, _)| {
                p.strip_prefix(path)
                    .is_some_and(|rest| rest.starts_with('.'))
            })
    }

    fn may_reach_or_is(&self, path: &str) -> bool {
        self.may_reach(path) || self.weight_of(path).is_some()
    }
}

/// Adds the scores of one string's terms to `scores`.
fn score_string(text: &str, weight: f64, language: Language, scores: &mut HashMap<String, f64>) {
    let mut found: HashMap<String, (u32, f64)> = HashMap::new();
    let mut tokens = 0u32;
    for term in terms(text, language, Sensitivity::default()) {
        tokens += 1;
        let (count, frequency) = found.entry(term).or_default();
        *frequency += 0.5f64.powi((*count).try_into().unwrap_or(i32::MAX));
        *count += 1;
    }
    for (term, (count, frequency)) in found {
        let coefficient = 0.5 * f64::from(count) / f64::from(tokens) + 0.5;
        let whole = if text.eq_ignore_ascii_case(&term) {
            1.1
        } else {
            1.0
        };
        *scores.entry(term).or_default() += weight * frequency * coefficient * whole;
    }
}

/// The string a term is keyed by: itself, or for a long one its first bytes (to a character
/// boundary) followed by the hex MD5 of the whole term, as MongoDB bounds its keys.
pub(crate) fn term_key(term: &str) -> std::borrow::Cow<'_, str> {
    if term.len() <= MAX_TERM_KEY {
        return std::borrow::Cow::Borrowed(term);
    }
    let mut end = MAX_TERM_KEY;
    while !term.is_char_boundary(end) {
        end -= 1;
    }
    let digest = Md5::digest(term.as_bytes());
    let hex = digest.iter().fold(String::new(), |mut hex, b| {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02x}");
        hex
    });
    std::borrow::Cow::Owned(format!("{}{hex}", &term[..end]))
}

fn malformed(e: bson::error::Error) -> TextError {
    TextError::Malformed {
        reason: e.to_string(),
    }
}

fn text_error(reason: impl Into<String>) -> IndexSpecError {
    IndexSpecError::BadText {
        reason: reason.into(),
    }
}

/// A weight: a number, truncated to an integer, strictly between 0 and 100,000.
fn parse_weight(value: &Bson) -> Result<i32, IndexSpecError> {
    let number = match value {
        Bson::Int32(n) => f64::from(*n),
        Bson::Int64(n) => *n as f64,
        Bson::Double(d) => *d,
        Bson::Decimal128(d) => d.to_string().parse().unwrap_or(f64::NAN),
        _ => return Err(text_error("weight for text index needs numeric type")),
    };
    let truncated = number.trunc();
    if !(truncated > 0.0 && truncated < 100_000.0) {
        return Err(text_error(format!(
            "text index weight must be in the exclusive interval (0,100000) but found: {number}"
        )));
    }
    Ok(truncated as i32)
}

/// A weighted path: not empty, no empty segment, none starting with `$`.
fn check_path(path: &str) -> Result<(), IndexSpecError> {
    if path.is_empty() || path.split('.').any(|s| s.is_empty() || s.starts_with('$')) {
        return Err(text_error(format!(
            "weight path `{path}` must be a field path without `$` in any segment"
        )));
    }
    Ok(())
}

fn parse_default_language(value: Option<&Bson>) -> Result<Language, IndexSpecError> {
    match value {
        None => Ok(Language::English),
        Some(Bson::String(name)) => Language::parse(name).ok_or_else(|| {
            text_error(format!(
                "default_language is not valid: `{name}` is not a language of text search"
            ))
        }),
        Some(_) => Err(text_error("default_language needs a string type")),
    }
}

fn parse_override(value: Option<&Bson>) -> Result<String, IndexSpecError> {
    match value {
        None => Ok("language".to_owned()),
        Some(Bson::String(field))
            if !field.is_empty() && !field.starts_with('$') && !field.contains('.') =>
        {
            Ok(field.clone())
        }
        Some(Bson::String(field)) => Err(text_error(format!(
            "language_override `{field}` must be a field name: not empty, no `$` first, no `.`"
        ))),
        Some(_) => Err(text_error("language_override needs a string type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc};

    fn spec(fields: &[&str], options: Document) -> TextSpec {
        TextSpec::parse(fields, &options).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn scores_follow_mongodb_formula() {
        let s = spec(&["body"], doc! {});
        let scores = s.term_scores(&rawdoc! { "body": "cat dog cat" }).unwrap();
        assert!(close(scores["cat"], 1.25), "{scores:?}");
        let whole = s.term_scores(&rawdoc! { "body": "cat" }).unwrap();
        assert!(close(whole["cat"], 1.1));
        let weighted = spec(&["title", "body"], doc! { "weights": { "title": 10 } });
        let scores = weighted
            .term_scores(&rawdoc! { "title": "cat", "body": "cat dog cat" })
            .unwrap();
        assert!(close(scores["cat"], 12.25), "{scores:?}");
    }

    #[test]
    fn strings_in_arrays_subdocuments_and_languages() {
        let s = spec(&["a.b", "tags"], doc! {});
        let doc = rawdoc! {
            "a": [{ "b": "corriendo", "language": "spanish" }, { "b": "running" }],
            "tags": ["x", ["nested"], 3],
            "other": "skipped",
        };
        let mut seen = Vec::new();
        s.strings(&doc, &mut |text, weight, language| {
            seen.push((text.to_owned(), weight, language));
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                ("corriendo".to_owned(), 1, Language::Spanish),
                ("running".to_owned(), 1, Language::English),
                ("x".to_owned(), 1, Language::English),
            ]
        );
    }

    #[test]
    fn wildcard_reaches_every_string_but_the_override() {
        let s = spec(&["$**"], doc! { "weights": { "title": 5 } });
        let scores = s
            .term_scores(&rawdoc! { "title": "cats", "deep": { "er": ["dogs"] }, "language": "en" })
            .unwrap();
        assert!(close(scores["cat"], 5.0));
        assert!(close(scores["dog"], 1.0));
        assert!(!scores.contains_key("en"));
    }

    #[test]
    fn bad_languages_are_refused() {
        let s = spec(&["a"], doc! {});
        assert_eq!(
            s.term_scores(&rawdoc! { "a": "x", "language": "klingon" }),
            Err(TextError::UnsupportedLanguage {
                language: "klingon".into()
            })
        );
        assert!(matches!(
            s.term_scores(&rawdoc! { "a": "x", "language": 1 }),
            Err(TextError::LanguageNotString { .. })
        ));
    }

    #[test]
    fn options_are_checked() {
        for bad in [
            doc! { "weights": { "a": 0 } },
            doc! { "weights": { "a": 100_000 } },
            doc! { "weights": { "a": "x" } },
            doc! { "weights": { "$a": 1 } },
            doc! { "default_language": "klingon" },
            doc! { "language_override": "a.b" },
            doc! { "language_override": "" },
        ] {
            assert!(TextSpec::parse(&["a"], &bad).is_err(), "{bad}");
        }
        assert!(TextSpec::parse(&[], &doc! {}).is_err());
        let mut listed = Document::new();
        spec(&["b", "a"], doc! { "weights": { "a": 2.5 } }).options_into(&mut listed);
        assert_eq!(
            listed,
            doc! {
                "weights": { "a": 2, "b": 1 },
                "default_language": "english",
                "language_override": "language",
                "textIndexVersion": 3,
            }
        );
    }

    #[test]
    fn long_terms_are_keyed_by_prefix_and_hash() {
        let long = "é".repeat(200);
        let key = term_key(&long);
        assert!(key.len() <= MAX_TERM_KEY + 32);
        assert_ne!(term_key(&long), term_key(&"é".repeat(201)));
        assert_eq!(term_key("short"), "short");
    }
}
