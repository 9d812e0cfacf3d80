//! Words and terms: how a string becomes the terms a text index holds, MongoDB's version 3
//! tokenizer.
//!
//! A word is a maximal run of characters that are not delimiters. Delimiters are the characters
//! with one of the Unicode properties `White_Space`, `Dash`, `Hyphen`, `Quotation_Mark`,
//! `Terminal_Punctuation`, `Pattern_Syntax` or `Sentence_Terminal` (so ASCII punctuation is,
//! and digits and `_` are not); in English the ASCII apostrophe is not one. A word becomes a
//! term in four steps, in MongoDB's order:
//! 1. it is case-folded (simple folding; `I` and `İ` fold the Turkish way in Turkish);
//! 2. a stop word of the language, in its folded form with diacritics kept, gives no term;
//! 3. the stemmer takes the folded word, or the word as written when matching is
//!    case-sensitive;
//! 4. diacritics are stripped from the stem unless matching is diacritic-sensitive: characters
//!    with the `Diacritic` property go, and a character whose canonical decomposition is a base
//!    and diacritics becomes the base (`é` to `e`; `ø`, `ł`, `æ` have none and stay).

use std::borrow::Cow;

use icu_normalizer::{ComposingNormalizerBorrowed, DecomposingNormalizerBorrowed};
use icu_properties::CodePointSetData;
use icu_properties::props::{
    Dash, Diacritic, Hyphen, PatternSyntax, QuotationMark, SentenceTerminal, TerminalPunctuation,
    WhiteSpace,
};

use super::language::Language;

/// Which distinctions a term keeps: the index folds both; a `$text` query may keep either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sensitivity {
    pub case: bool,
    pub diacritics: bool,
}

/// Whether `c` separates words in `language`.
pub(crate) fn is_delimiter(c: char, language: Language) -> bool {
    if c == '\'' && language.keeps_apostrophes() {
        return false;
    }
    if c.is_ascii() {
        return c.is_ascii_whitespace() || c == '\u{0B}' || (c.is_ascii_punctuation() && c != '_');
    }
    CodePointSetData::new::<WhiteSpace>().contains(c)
        || CodePointSetData::new::<Dash>().contains(c)
        || CodePointSetData::new::<Hyphen>().contains(c)
        || CodePointSetData::new::<QuotationMark>().contains(c)
        || CodePointSetData::new::<TerminalPunctuation>().contains(c)
        || CodePointSetData::new::<PatternSyntax>().contains(c)
        || CodePointSetData::new::<SentenceTerminal>().contains(c)
}

/// The words of `text` in `language`, in order.
pub(crate) fn words(text: &str, language: Language) -> impl Iterator<Item = &str> {
    text.split(move |c| is_delimiter(c, language))
        .filter(|w| !w.is_empty())
}

/// The term a word gives, or `None` for a stop word.
pub(crate) fn term(word: &str, language: Language, sensitivity: Sensitivity) -> Option<String> {
    let folded = fold_case(word, language);
    if language.is_stop_word(&folded) {
        return None;
    }
    let stem = if sensitivity.case {
        language.stem(word)
    } else {
        language.stem(&folded)
    };
    Some(if sensitivity.diacritics {
        stem.into_owned()
    } else {
        strip_diacritics(&stem).into_owned()
    })
}

/// The terms of `text`, in order, stop words left out.
pub(crate) fn terms(
    text: &str,
    language: Language,
    sensitivity: Sensitivity,
) -> impl Iterator<Item = String> {
    words(text, language).filter_map(move |w| term(w, language, sensitivity))
}

/// `text` under Unicode's simple case folding (Turkish `i`s in Turkish).
pub(crate) fn fold_case(text: &str, language: Language) -> Cow<'_, str> {
    if text.is_ascii() {
        return if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        };
    }
    Cow::Owned(text.chars().map(|c| fold_char(c, language)).collect())
}

/// One character's simple case folding. `char::to_lowercase` is the folding except where a
/// character folds to another lowercase form, listed here, or lowercases to several characters
/// (`İ`), which simple folding leaves alone.
fn fold_char(c: char, language: Language) -> char {
    if language.folds_turkish() {
        match c {
            'I' => return 'ı',
            'İ' => return 'i',
            _ => {}
        }
    }
    match c {
        'ς' => 'σ',
        'ſ' => 's',
        'ϐ' => 'β',
        'ϑ' => 'θ',
        'ϕ' => 'φ',
        'ϖ' => 'π',
        'ϰ' => 'κ',
        'ϱ' => 'ρ',
        'ϵ' => 'ε',
        '\u{345}' | '\u{1FBE}' => 'ι',
        'ẛ' => 'ṡ',
        _ => {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(only), None) => only,
                _ => c,
            }
        }
    }
}

/// `text` without its diacritics (see the module documentation).
pub(crate) fn strip_diacritics(text: &str) -> Cow<'_, str> {
    if text.bytes().all(|b| b.is_ascii() && b != b'^' && b != b'`') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if let Some(base) = without_diacritics(c) {
            out.push(base);
        }
    }
    Cow::Owned(out)
}

/// A character without its diacritics: `None` for a diacritic itself, the base of a
/// decomposable character when the rest of it is diacritics, else the character.
fn without_diacritics(c: char) -> Option<char> {
    let diacritic = CodePointSetData::new::<Diacritic>();
    if diacritic.contains(c) {
        return None;
    }
    if c.is_ascii() {
        return Some(c);
    }
    let decomposed = DecomposingNormalizerBorrowed::new_nfd().normalize_iter(std::iter::once(c));
    let kept = decomposed.filter(|d| !diacritic.contains(*d));
    let mut composed = ComposingNormalizerBorrowed::new_nfc().normalize_iter(kept);
    match (composed.next(), composed.next()) {
        (Some(only), None) => Some(only),
        _ => Some(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str, language: Language) -> Vec<String> {
        terms(text, language, Sensitivity::default()).collect()
    }

    #[test]
    fn delimiters_follow_the_unicode_properties() {
        assert_eq!(
            words("pre-market, a_b 42 «x»—y", Language::None).collect::<Vec<_>>(),
            ["pre", "market", "a_b", "42", "x", "y"]
        );
        assert_eq!(
            words("C'est l'été", Language::French).collect::<Vec<_>>(),
            ["C", "est", "l", "été"]
        );
        assert_eq!(
            words("Mark's", Language::English).collect::<Vec<_>>(),
            ["Mark's"]
        );
        assert_eq!(
            words("Mark\u{2019}s", Language::English).collect::<Vec<_>>(),
            ["Mark", "s"]
        );
    }

    #[test]
    fn terms_fold_stop_stem_and_strip() {
        assert_eq!(all("The Running dogs", Language::English), ["run", "dog"]);
        assert_eq!(all("Mark's café", Language::English), ["mark", "cafe"]);
        assert_eq!(all("The", Language::None), ["the"]);
        // A stop word keeps its diacritics when checked: `être` stops, `etre` does not.
        assert_eq!(all("être etre", Language::French), ["etre"]);
    }

    #[test]
    fn sensitivity_keeps_case_and_diacritics() {
        let keep = Sensitivity {
            case: true,
            diacritics: true,
        };
        assert_eq!(
            terms("Café énervé", Language::None, keep).collect::<Vec<_>>(),
            ["Café", "énervé"]
        );
        assert_eq!(
            terms("Positively", Language::English, keep).collect::<Vec<_>>(),
            ["Posit"]
        );
    }

    #[test]
    fn folding_is_simple_and_turkish_in_turkish() {
        assert_eq!(fold_case("ΣΊΣΥΦΟΣ ς", Language::None), "σίσυφοσ σ");
        assert_eq!(fold_case("İI", Language::Turkish), "iı");
        assert_eq!(fold_case("İI", Language::English), "İi");
        assert_eq!(fold_case("STRASSE ẞ", Language::None), "strasse ß");
    }

    #[test]
    fn diacritics_strip_to_single_bases() {
        assert_eq!(strip_diacritics("éñşü"), "ensu");
        assert_eq!(strip_diacritics("øłæß"), "øłæß");
        assert_eq!(strip_diacritics("e\u{301}"), "e");
        assert_eq!(strip_diacritics("a^b`c"), "abc");
    }
}
