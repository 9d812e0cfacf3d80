//! The languages of text search: MongoDB's list (version 3 text indexes), each with its
//! Snowball stemmer and MongoDB's stop words, and `none` (no stemming, no stop words).
//!
//! A language is named by its English name or its two-letter code, in any case (`"English"`,
//! `"en"`); it is reported by its lowercase name. The stop word lists are MongoDB's own, word for
//! word (their quirks too: the Turkish list is Latin-1 text read as another encoding, so it
//! stops no word with `ş` or `ı`), since a list of our own would index other terms and score
//! documents differently.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// A language of text search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Danish,
    Dutch,
    English,
    Finnish,
    French,
    German,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Turkish,
    /// Words as they are: no stop words, no stemming.
    None,
}

/// Each language with its name, two-letter code, stemmer and stop words.
const LANGUAGES: [(Language, &str, &str, Option<Algorithm>, &str); 16] = [
    (
        Language::Danish,
        "danish",
        "da",
        Some(Algorithm::Danish),
        include_str!("stop_words/danish.txt"),
    ),
    (
        Language::Dutch,
        "dutch",
        "nl",
        Some(Algorithm::Dutch),
        include_str!("stop_words/dutch.txt"),
    ),
    (
        Language::English,
        "english",
        "en",
        Some(Algorithm::English),
        include_str!("stop_words/english.txt"),
    ),
    (
        Language::Finnish,
        "finnish",
        "fi",
        Some(Algorithm::Finnish),
        include_str!("stop_words/finnish.txt"),
    ),
    (
        Language::French,
        "french",
        "fr",
        Some(Algorithm::French),
        include_str!("stop_words/french.txt"),
    ),
    (
        Language::German,
        "german",
        "de",
        Some(Algorithm::German),
        include_str!("stop_words/german.txt"),
    ),
    (
        Language::Hungarian,
        "hungarian",
        "hu",
        Some(Algorithm::Hungarian),
        include_str!("stop_words/hungarian.txt"),
    ),
    (
        Language::Italian,
        "italian",
        "it",
        Some(Algorithm::Italian),
        include_str!("stop_words/italian.txt"),
    ),
    (
        Language::Norwegian,
        "norwegian",
        "nb",
        Some(Algorithm::Norwegian),
        include_str!("stop_words/norwegian.txt"),
    ),
    (
        Language::Portuguese,
        "portuguese",
        "pt",
        Some(Algorithm::Portuguese),
        include_str!("stop_words/portuguese.txt"),
    ),
    (
        Language::Romanian,
        "romanian",
        "ro",
        Some(Algorithm::Romanian),
        include_str!("stop_words/romanian.txt"),
    ),
    (
        Language::Russian,
        "russian",
        "ru",
        Some(Algorithm::Russian),
        include_str!("stop_words/russian.txt"),
    ),
    (
        Language::Spanish,
        "spanish",
        "es",
        Some(Algorithm::Spanish),
        include_str!("stop_words/spanish.txt"),
    ),
    (
        Language::Swedish,
        "swedish",
        "sv",
        Some(Algorithm::Swedish),
        include_str!("stop_words/swedish.txt"),
    ),
    (
        Language::Turkish,
        "turkish",
        "tr",
        Some(Algorithm::Turkish),
        include_str!("stop_words/turkish.txt"),
    ),
    (Language::None, "none", "none", None, ""),
];

impl Language {
    /// The language a name or two-letter code names, in any case; `None` for another.
    pub fn parse(name: &str) -> Option<Language> {
        LANGUAGES
            .iter()
            .find(|(_, full, code, ..)| {
                name.eq_ignore_ascii_case(full) || name.eq_ignore_ascii_case(code)
            })
            .map(|(language, ..)| *language)
    }

    /// Its lowercase English name, as MongoDB reports it.
    pub fn name(self) -> &'static str {
        LANGUAGES[self.position()].1
    }

    fn position(self) -> usize {
        LANGUAGES
            .iter()
            .position(|(language, ..)| *language == self)
            .unwrap_or(LANGUAGES.len() - 1)
    }

    /// Whether `lowercase` (a word case-folded, diacritics kept) is one of its stop words.
    pub(crate) fn is_stop_word(self, lowercase: &str) -> bool {
        static SETS: [OnceLock<HashSet<&'static str>>; 16] = [const { OnceLock::new() }; 16];
        let position = self.position();
        SETS[position]
            .get_or_init(|| {
                LANGUAGES[position]
                    .4
                    .lines()
                    .map(str::trim)
                    .filter(|w| !w.is_empty())
                    .collect()
            })
            .contains(lowercase)
    }

    /// The stem of `word` by its Snowball stemmer; the word itself for `none`.
    pub(crate) fn stem(self, word: &str) -> Cow<'_, str> {
        match LANGUAGES[self.position()].3 {
            Some(algorithm) => Stemmer::create(algorithm).stem(word),
            None => Cow::Borrowed(word),
        }
    }

    /// Whether the ASCII apostrophe joins words rather than separating them: in English only,
    /// so that the stemmer sees `mark's` whole.
    pub(crate) fn keeps_apostrophes(self) -> bool {
        self == Language::English
    }

    /// Whether dotted and dotless `i` fold as in Turkish (`I` to `ı`, `İ` to `i`).
    pub(crate) fn folds_turkish(self) -> bool {
        self == Language::Turkish
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_in_any_case() {
        assert_eq!(Language::parse("English"), Some(Language::English));
        assert_eq!(Language::parse("nb"), Some(Language::Norwegian));
        assert_eq!(Language::parse("NONE"), Some(Language::None));
        assert_eq!(Language::parse("klingon"), None);
        assert_eq!(Language::Portuguese.name(), "portuguese");
    }

    #[test]
    fn every_list_is_read() {
        for (language, ..) in LANGUAGES {
            if language != Language::None {
                assert!(
                    LANGUAGES[language.position()].4.lines().count() > 50,
                    "{language:?}"
                );
            }
        }
        assert!(Language::English.is_stop_word("the"));
        assert!(Language::French.is_stop_word("être"));
        assert!(!Language::French.is_stop_word("etre"));
        assert!(!Language::None.is_stop_word("the"));
    }

    #[test]
    fn stems_by_language() {
        assert_eq!(Language::English.stem("running"), "run");
        assert_eq!(Language::English.stem("mark's"), "mark");
        assert_eq!(Language::Spanish.stem("corriendo"), "corr");
        assert_eq!(Language::None.stem("running"), "running");
    }
}
