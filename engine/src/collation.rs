//! Collations: language-aware string comparison for queries, sorts and distinct, as MongoDB's
//! `collation` option gives (`{locale: "en", strength: 2}` compares case-insensitively).
//!
//! A collation changes how strings (and symbols) compare, at every depth of a value; every
//! other type compares as before, and the order of type brackets does not change. Field names
//! compare by bytes. `$regex` is not affected, as in MongoDB. The locale `simple` is MongoDB's
//! binary comparison, the same as no collation.
//!
//! The comparison is the Unicode Collation Algorithm with CLDR's tailoring for the locale
//! (ICU4X, the Unicode project's Rust implementation, as MongoDB uses ICU). Fields, as MongoDB
//! documents them: `locale` (required), `strength` 1-5 (primary: base letters; secondary:
//! accents; tertiary, the default: case; quaternary; identical), `caseLevel`, `caseFirst`
//! (`upper`, `lower`, `off`), `numericOrdering`, `alternate` (`non-ignorable`, `shifted`),
//! `maxVariable` (`punct`, `space`), `normalization` (the comparison always normalizes, so both
//! values give the same result). `backwards` is refused: ICU4X takes it from the locale only.
//! Locales are ICU's (`en_US`, `de@collation=phonebook`); one ICU4X has no tailoring for
//! compares as the root collation; a locale MongoDB does not list is refused, as MongoDB
//! refuses it.
//!
//! An index holds binary strings, or, when created with a collation, each string's sort key
//! under it (see [`crate::keys::encode_collated_into`]). The planner bounds an index by
//! conditions on strings, and takes a sort on strings from it, only when the query compares
//! strings under the index's collation; other conditions bound any index.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::code::ErrorCode;

use bson::{Bson, Document};
use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, MaxVariable, Strength};
use icu_collator::preferences::{CollationCaseFirst, CollationNumericOrdering};
use icu_collator::{Collator, CollatorBorrowed, CollatorPreferences};

pub use crate::error::CollationError;

/// A parsed collation; see the module documentation.
pub struct Collation {
    spec: Document,
    /// See [`Collation::normalized`].
    normalized: Document,
    collator: CollatorBorrowed<'static>,
}

/// Two collations are equal when they compare strings alike (their normalized documents); as
/// `Option<&Collation>`, `None` is the simple (binary) one.
impl PartialEq for Collation {
    fn eq(&self, other: &Collation) -> bool {
        self.normalized == other.normalized
    }
}

impl Eq for Collation {}

impl fmt::Debug for Collation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Collation({})", self.spec)
    }
}

fn error(field: &str, reason: impl fmt::Display) -> CollationError {
    CollationError {
        code: ErrorCode::BAD_VALUE,
        field: field.to_owned(),
        reason: reason.to_string(),
    }
}

impl Collation {
    /// Parses a collation document; `None` for the `simple` locale (binary comparison) and for
    /// an empty document, which MongoDB reads as no collation given.
    pub fn parse(spec: &Document) -> Result<Option<Arc<Collation>>, CollationError> {
        if spec.is_empty() {
            return Ok(None);
        }
        // The fields first: MongoDB's IDL parser refuses an unknown field as it meets it, before
        // it checks for the required ones.
        let (prefs, options) = settings(spec)?;
        let Some(locale) = spec.get("locale") else {
            // The IDL parser's refusal of a missing required field.
            return Err(error("locale", "is required").with_code(ErrorCode::IDL_FAILED_TO_PARSE));
        };
        let Bson::String(locale) = locale else {
            return Err(error("locale", "must be a string"));
        };
        if locale == "simple" {
            if spec.len() > 1 {
                return Err(error(
                    "locale",
                    "the simple locale takes no other collation fields",
                ));
            }
            return Ok(None);
        }
        Ok(Some(Arc::new(Collation {
            spec: spec.clone(),
            normalized: normalize(spec),
            collator: collator(locale, prefs, options)?,
        })))
    }

    /// The collation document it was parsed from.
    pub fn spec(&self) -> &Document {
        &self.spec
    }

    /// The collation with every field MongoDB reports, defaults filled in, as `listIndexes`
    /// and `listCollections` show a collation: two collations that compare alike have the
    /// same one.
    pub fn normalized(&self) -> &Document {
        &self.normalized
    }

    /// Compares two strings under this collation.
    pub fn compare_strings(&self, a: &str, b: &str) -> Ordering {
        self.collator.compare(a, b)
    }

    /// The string's sort key: strings equal under this collation have equal keys, and keys
    /// compare bytewise as their strings compare under it.
    pub(crate) fn sort_key(&self, s: &str) -> Vec<u8> {
        let mut key = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = self.collator.write_sort_key_to(s, &mut key);
        key
    }
}

/// See [`Collation::normalized`]; `spec` already checked.
fn normalize(spec: &Document) -> Document {
    let field = |name: &str, default: Bson| spec.get(name).cloned().unwrap_or(default);
    let strength = spec
        .get("strength")
        .and_then(crate::number::as_i64)
        .map_or(3, |n| n as i32);
    bson::doc! {
        "locale": field("locale", Bson::Null),
        "caseLevel": field("caseLevel", Bson::Boolean(false)),
        "caseFirst": field("caseFirst", Bson::String("off".into())),
        "strength": strength,
        "numericOrdering": field("numericOrdering", Bson::Boolean(false)),
        "alternate": field("alternate", Bson::String("non-ignorable".into())),
        "maxVariable": field("maxVariable", Bson::String("punct".into())),
        "normalization": field("normalization", Bson::Boolean(false)),
        "backwards": false,
        "version": "57.1",
    }
}

/// The preferences and options the fields of a collation document set, each checked; every
/// field but `locale` and `version`.
fn settings(spec: &Document) -> Result<(CollatorPreferences, CollatorOptions), CollationError> {
    let mut prefs = CollatorPreferences::default();
    let mut options = CollatorOptions::default();
    for (key, value) in spec {
        match key.as_str() {
            "locale" | "version" => {}
            "strength" => options.strength = Some(strength(key, value)?),
            "caseLevel" => {
                options.case_level = Some(if flag(key, value)? {
                    CaseLevel::On
                } else {
                    CaseLevel::Off
                });
            }
            "caseFirst" => prefs.case_first = Some(choice(key, value, &CASE_FIRST)?),
            "numericOrdering" => {
                prefs.numeric_ordering = Some(if flag(key, value)? {
                    CollationNumericOrdering::True
                } else {
                    CollationNumericOrdering::False
                });
            }
            "alternate" => options.alternate_handling = Some(choice(key, value, &ALTERNATE)?),
            "maxVariable" => options.max_variable = Some(choice(key, value, &MAX_VARIABLE)?),
            "normalization" => {
                flag(key, value)?;
            }
            "backwards" => {
                if flag(key, value)? {
                    return Err(error(key, "is not supported by this engine"));
                }
            }
            other => {
                return Err(
                    error(other, "is an unknown field").with_code(ErrorCode::location(40415))
                );
            }
        }
    }
    Ok((prefs, options))
}

/// `strength`: a whole number from 1 to 5, in any numeric type.
fn strength(key: &str, value: &Bson) -> Result<Strength, CollationError> {
    Ok(match crate::number::as_i64(value) {
        Some(1) => Strength::Primary,
        Some(2) => Strength::Secondary,
        Some(3) => Strength::Tertiary,
        Some(4) => Strength::Quaternary,
        Some(5) => Strength::Identical,
        _ => return Err(error(key, "must be 1, 2, 3, 4 or 5")),
    })
}

fn flag(key: &str, value: &Bson) -> Result<bool, CollationError> {
    match value {
        Bson::Boolean(b) => Ok(*b),
        _ => Err(error(key, "must be a boolean")),
    }
}

/// The names a field of named settings takes, what each sets, and how its error lists them.
struct Choices<T: 'static> {
    names: &'static [(&'static str, T)],
    listed: &'static str,
}

const CASE_FIRST: Choices<CollationCaseFirst> = Choices {
    names: &[
        ("upper", CollationCaseFirst::Upper),
        ("lower", CollationCaseFirst::Lower),
        ("off", CollationCaseFirst::False),
    ],
    listed: "upper, lower or off",
};

const ALTERNATE: Choices<AlternateHandling> = Choices {
    names: &[
        ("non-ignorable", AlternateHandling::NonIgnorable),
        ("shifted", AlternateHandling::Shifted),
    ],
    listed: "non-ignorable or shifted",
};

const MAX_VARIABLE: Choices<MaxVariable> = Choices {
    names: &[
        ("punct", MaxVariable::Punctuation),
        ("space", MaxVariable::Space),
    ],
    listed: "punct or space",
};

/// The setting a string field names among `choices`.
fn choice<T: Copy>(key: &str, value: &Bson, choices: &Choices<T>) -> Result<T, CollationError> {
    let Bson::String(text) = value else {
        return Err(error(key, "must be a string"));
    };
    choices
        .names
        .iter()
        .find(|(name, _)| name == text)
        .map(|&(_, setting)| setting)
        .ok_or_else(|| error(key, format!("`{text}` is not {}", choices.listed)))
}

/// The collator for an ICU locale id MongoDB lists, with the other fields' settings over the
/// locale's own.
fn collator(
    locale: &str,
    prefs: CollatorPreferences,
    options: CollatorOptions,
) -> Result<CollatorBorrowed<'static>, CollationError> {
    let base = locale.split_once('@').map_or(locale, |(base, _)| base);
    if !is_supported_locale(base) {
        return Err(error(
            "locale",
            format!("`{locale}` is not a locale MongoDB's collations support"),
        ));
    }
    let parsed = icu_locale_core::Locale::try_from_str(&bcp47(locale).replace('_', "-"))
        .map_err(|e| error("locale", format!("`{locale}` is not a locale: {e}")))?;
    let mut from_locale = CollatorPreferences::from(&parsed);
    from_locale.extend(prefs);
    Collator::try_new(from_locale, options)
        .map_err(|e| error("locale", format!("`{locale}` has no collation data: {e}")))
}

/// ICU's `de@collation=phonebook` in BCP 47's `de-u-co-phonebk` form, which the parser reads.
fn bcp47(locale: &str) -> String {
    match locale.split_once("@collation=") {
        Some((base, variant)) => {
            let variant = match variant {
                "phonebook" => "phonebk",
                "dictionary" => "dict",
                "traditional" => "trad",
                other => other,
            };
            format!("{base}-u-co-{variant}")
        }
        None => locale.to_owned(),
    }
}

/// The locales MongoDB's collation supports (the manual's "Collation Locales and Default
/// Parameters"), ICU locale ids; a variant follows after `@collation=`.
const SUPPORTED_LOCALES: &[&str] = &[
    "af",
    "sq",
    "am",
    "ar",
    "hy",
    "as",
    "az",
    "bn",
    "be",
    "bs",
    "bs_Cyrl",
    "bg",
    "my",
    "ca",
    "chr",
    "zh",
    "zh_Hant",
    "hr",
    "cs",
    "da",
    "nl",
    "dz",
    "en",
    "en_US",
    "en_US_POSIX",
    "eo",
    "et",
    "ee",
    "fo",
    "fil",
    "fi",
    "fr",
    "fr_CA",
    "gl",
    "ka",
    "de",
    "de_AT",
    "el",
    "gu",
    "ha",
    "haw",
    "he",
    "hi",
    "hu",
    "is",
    "ig",
    "smn",
    "id",
    "ga",
    "it",
    "ja",
    "kl",
    "kn",
    "kk",
    "km",
    "kok",
    "ko",
    "ky",
    "lkt",
    "lo",
    "lv",
    "ln",
    "lt",
    "dsb",
    "lb",
    "mk",
    "ms",
    "ml",
    "mt",
    "mr",
    "mn",
    "ne",
    "se",
    "nb",
    "nn",
    "or",
    "om",
    "ps",
    "fa",
    "fa_AF",
    "pl",
    "pt",
    "pa",
    "ro",
    "ru",
    "sr",
    "sr_Latn",
    "si",
    "sk",
    "sl",
    "es",
    "sw",
    "sv",
    "ta",
    "te",
    "th",
    "bo",
    "to",
    "tr",
    "uk",
    "hsb",
    "ur",
    "ug",
    "vi",
    "wae",
    "cy",
    "yi",
    "yo",
    "zu",
];

/// Whether MongoDB supports `base` (a locale without its variant), compared as ICU ids are,
/// case aside and with `-` for `_`.
fn is_supported_locale(base: &str) -> bool {
    let normalized = base.replace('-', "_");
    SUPPORTED_LOCALES
        .iter()
        .any(|l| l.eq_ignore_ascii_case(&normalized))
}
