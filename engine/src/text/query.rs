//! `$text`: its arguments, the parsed search, and the search bound to a collection's text
//! index, which judges and scores documents.
//!
//! The search string (`$search`), MongoDB's grammar: whitespace is space, `\n`, `\v`, `\f` and
//! `\r` (not tab); `"` opens and closes a phrase; a `-` at the start or after whitespace,
//! outside a phrase, negates what follows up to the next whitespace (words and phrases:
//! `-"a b"`). Everything else is words, read by the tokenizer of the query's language. The
//! words of a positive phrase are also positive terms; a negated phrase's words are neither. A
//! quote never closed makes no phrase (its words stay terms, unless negated).
//!
//! A document matches when it holds at least one positive term as the index folds it (what
//! the index finds it by; a term in the document's language, which may stem otherwise than
//! the query's), every positive phrase, no negated term and no negated phrase. A search with
//! `$caseSensitive` or `$diacriticSensitive` also needs a positive term with that case or those
//! diacritics, and compares negated terms the same way; phrases are
//! substrings of one indexed string, compared under the same folding. A search without
//! positive terms (only stop words, only negations, nothing) matches nothing. A document's
//! score is the sum of its scores for the positive terms (see `spec`).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use bson::{Bson, Document, RawDocument};

use super::language::Language;
use super::spec::{TextError, TextSpec};
use super::tokenize::{Sensitivity, fold_case, strip_diacritics, term, words};
use crate::error::FilterError;

/// `$text`'s arguments, as given; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct TextSearch {
    pub search: String,
    /// `$language`; the index's default language when absent.
    pub language: Option<Language>,
    pub sensitivity: Sensitivity,
}

impl TextSearch {
    /// Reads `{$search, $language, $caseSensitive, $diacriticSensitive}`.
    pub(crate) fn parse(value: &Bson) -> Result<TextSearch, FilterError> {
        let refuse = |reason: &str| FilterError::new("", "$text", reason);
        let Bson::Document(arguments) = value else {
            return Err(refuse("$text expects an object"));
        };
        let mut search = None;
        let mut language = None;
        let mut sensitivity = Sensitivity::default();
        for (key, value) in arguments {
            match (key.as_str(), value) {
                ("$search", Bson::String(s)) => search = Some(s.clone()),
                ("$search", _) => return Err(refuse("$search requires a string value")),
                ("$language", Bson::String(name)) => {
                    language = Some(Language::parse(name).ok_or_else(|| {
                        refuse(&format!(
                            "unsupported language: \"{name}\" for text index version 3"
                        ))
                    })?);
                }
                ("$language", _) => return Err(refuse("$language requires a string value")),
                ("$caseSensitive", Bson::Boolean(b)) => sensitivity.case = *b,
                ("$caseSensitive", _) => {
                    return Err(refuse("$caseSensitive requires a boolean value"));
                }
                ("$diacriticSensitive", Bson::Boolean(b)) => sensitivity.diacritics = *b,
                ("$diacriticSensitive", _) => {
                    return Err(refuse("$diacriticSensitive requires a boolean value"));
                }
                _ => return Err(refuse(&format!("extra fields in $text: `{key}`"))),
            }
        }
        Ok(TextSearch {
            search: search.ok_or_else(|| refuse("$search required in $text"))?,
            language,
            sensitivity,
        })
    }

    /// The search parsed in `language` (the index's default when `$language` is absent).
    pub(crate) fn parsed(&self, default_language: Language) -> TextQuery {
        TextQuery::parse(
            &self.search,
            self.language.unwrap_or(default_language),
            self.sensitivity,
        )
    }
}

/// A search string parsed; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct TextQuery {
    /// The positive terms as the index folds them: the keys to look up, sorted.
    pub terms: BTreeSet<String>,
    /// The positive terms as matching compares them (folded unless the search is sensitive).
    pub matched_terms: BTreeSet<String>,
    pub negated_terms: BTreeSet<String>,
    pub phrases: Vec<String>,
    pub negated_phrases: Vec<String>,
    pub language: Language,
    pub sensitivity: Sensitivity,
}

/// A piece of a search string.
enum Piece<'s> {
    Space,
    Dash,
    Quote,
    Words(&'s str),
}

/// The search string's pieces, each with its byte offset.
fn pieces(search: &str) -> Vec<(usize, Piece<'_>)> {
    let is_space = |c: char| matches!(c, ' ' | '\n' | '\u{0B}' | '\u{0C}' | '\r');
    let mut out = Vec::new();
    let mut start = None;
    for (at, c) in search.char_indices() {
        let piece = match c {
            '-' => Piece::Dash,
            '"' => Piece::Quote,
            c if is_space(c) => Piece::Space,
            _ => {
                start.get_or_insert(at);
                continue;
            }
        };
        if let Some(from) = start.take() {
            out.push((from, Piece::Words(&search[from..at])));
        }
        out.push((at, piece));
    }
    if let Some(from) = start {
        out.push((from, Piece::Words(&search[from..])));
    }
    out
}

impl TextQuery {
    fn parse(search: &str, language: Language, sensitivity: Sensitivity) -> TextQuery {
        let mut query = TextQuery {
            terms: BTreeSet::new(),
            matched_terms: BTreeSet::new(),
            negated_terms: BTreeSet::new(),
            phrases: Vec::new(),
            negated_phrases: Vec::new(),
            language,
            sensitivity,
        };
        let mut negating = false;
        let mut after_space = true;
        // Where the open phrase starts, and whether it is negated.
        let mut phrase: Option<(usize, bool)> = None;
        for (at, piece) in pieces(search) {
            match piece {
                Piece::Space => {
                    if phrase.is_none() {
                        negating = false;
                    }
                }
                Piece::Dash => {
                    if phrase.is_none() && after_space {
                        negating = true;
                    }
                }
                Piece::Quote => match phrase.take() {
                    Some((start, negated)) => {
                        let text = search[start..at].to_owned();
                        if negated {
                            query.negated_phrases.push(text);
                        } else {
                            query.phrases.push(text);
                        }
                    }
                    None => phrase = Some((at + 1, negating)),
                },
                Piece::Words(text) => {
                    let negated = phrase.map_or(negating, |(_, negated)| negated);
                    if phrase.is_some() && negated {
                        // A negated phrase's words are no terms.
                    } else {
                        query.add_words(text, negated);
                    }
                }
            }
            after_space = matches!(piece, Piece::Space);
        }
        query
    }

    fn add_words(&mut self, text: &str, negated: bool) {
        for word in words(text, self.language) {
            let Some(matched) = term(word, self.language, self.sensitivity) else {
                continue;
            };
            if negated {
                self.negated_terms.insert(matched);
            } else {
                if let Some(folded) = term(word, self.language, Sensitivity::default()) {
                    self.terms.insert(folded);
                }
                self.matched_terms.insert(matched);
            }
        }
    }

    /// The search as explain shows it (`parsedTextQuery`).
    pub fn to_document(&self) -> Document {
        let list = |items: &mut dyn Iterator<Item = &String>| -> Vec<Bson> {
            items.map(|s| Bson::String(s.clone())).collect()
        };
        bson::doc! {
            "terms": list(&mut self.matched_terms.iter()),
            "negatedTerms": list(&mut self.negated_terms.iter()),
            "phrases": list(&mut self.phrases.iter()),
            "negatedPhrases": list(&mut self.negated_phrases.iter()),
        }
    }
}

/// A `$text` bound to the collection's text index: what judges and scores documents.
#[derive(Debug)]
pub struct TextMatch {
    pub query: TextQuery,
    pub spec: Arc<TextSpec>,
    /// The text index's name.
    pub index: String,
    /// The paths of its prefix fields, which the query binds by equality.
    pub prefix: Vec<String>,
}

impl TextMatch {
    pub(crate) fn new(
        search: &TextSearch,
        spec: Arc<TextSpec>,
        index: String,
        prefix: Vec<String>,
    ) -> TextMatch {
        TextMatch {
            query: search.parsed(spec.default_language()),
            spec,
            index,
            prefix,
        }
    }

    /// The search `$text`'s argument asks for, judged as the text index `index` would judge
    /// it, without a collection: for judging documents one by one (a scan that answers what
    /// the index answers). `None` when `index` is no text index.
    pub fn of_index(
        index: &crate::IndexSpec,
        argument: &bson::Bson,
    ) -> Result<Option<TextMatch>, FilterError> {
        let Some(spec) = index.text() else {
            return Ok(None);
        };
        let search = TextSearch::parse(argument)?;
        let prefix = index
            .text_prefix()
            .iter()
            .map(|(p, _)| p.to_string())
            .collect();
        Ok(Some(TextMatch::new(
            &search,
            spec.clone(),
            index.name().to_owned(),
            prefix,
        )))
    }

    /// Whether `doc` matches (see the module documentation): what the text index finds plus
    /// what the search then asks of the document, so that judging any document agrees with the
    /// index.
    pub fn matches(&self, doc: &RawDocument) -> Result<bool, TextError> {
        let query = &self.query;
        if query.terms.is_empty() {
            return Ok(false);
        }
        let sensitive = query.sensitivity != Sensitivity::default();
        // A candidate holds a positive term as the index folds it (what the index finds it
        // by), and, for a sensitive search, as written too.
        let (mut indexed_term, mut found_term) = (false, !sensitive);
        let mut negated = false;
        let mut phrases = vec![false; query.phrases.len()];
        let mut negated_phrase = false;
        self.spec.strings(doc, &mut |text, _, language| {
            for word in words(text, language) {
                if let Some(t) = term(word, language, Sensitivity::default()) {
                    indexed_term |= query.terms.contains(&t);
                }
                if let Some(t) = term(word, language, query.sensitivity) {
                    found_term |= sensitive && query.matched_terms.contains(&t);
                    negated |= query.negated_terms.contains(&t);
                }
            }
            if !query.phrases.is_empty() || !query.negated_phrases.is_empty() {
                let haystack = self.folded(text, language);
                for (found, phrase) in phrases.iter_mut().zip(&query.phrases) {
                    *found |= haystack.contains(&self.folded(phrase, language));
                }
                negated_phrase |= query
                    .negated_phrases
                    .iter()
                    .any(|p| haystack.contains(&self.folded(p, language)));
            }
        })?;
        Ok(indexed_term && found_term && !negated && !negated_phrase && phrases.iter().all(|f| *f))
    }

    /// `text` as phrases compare it: case-folded and without diacritics unless the search
    /// keeps them.
    fn folded(&self, text: &str, language: Language) -> String {
        let sensitivity = self.query.sensitivity;
        let text = if sensitivity.case {
            std::borrow::Cow::Borrowed(text)
        } else {
            fold_case(text, language)
        };
        if sensitivity.diacritics {
            text.into_owned()
        } else {
            strip_diacritics(&text).into_owned()
        }
    }

    /// `doc`'s score: the sum of its scores for the positive terms.
    pub(crate) fn score(&self, doc: &RawDocument) -> Result<f64, TextError> {
        let scores: HashMap<String, f64> = self.spec.term_scores(doc)?;
        // From +0.0: an empty `sum` of floats is -0.0.
        Ok(self
            .query
            .terms
            .iter()
            .filter_map(|t| scores.get(t))
            .fold(0.0, |total, score| total + score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc};

    fn parse(search: &str) -> TextQuery {
        TextQuery::parse(search, Language::English, Sensitivity::default())
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn negation_lasts_to_whitespace() {
        let q = parse("coffee -really-fun-stuff plain-tea - milk --cake");
        assert_eq!(q.terms, set(&["coffe", "plain", "tea", "milk"]));
        assert_eq!(q.negated_terms, set(&["realli", "fun", "stuff", "cake"]));
    }

    #[test]
    fn phrases_add_their_words_unless_negated() {
        let q = parse("\"coffee shop\" -\"tea room\"-\"bar\" \"unclosed words");
        assert_eq!(q.phrases, ["coffee shop"]);
        assert_eq!(q.negated_phrases, ["tea room", "bar"]);
        assert_eq!(q.terms, set(&["coffe", "shop", "unclos", "word"]));
        let negated_open = parse("-\"never closed");
        assert!(negated_open.terms.is_empty());
    }

    #[test]
    fn tab_is_no_whitespace_to_the_grammar() {
        let q = parse("a\t-b");
        // `-` after a tab does not negate; the tab still separates words.
        assert!(q.negated_terms.is_empty());
        assert_eq!(q.terms, set(&["b"]));
    }

    #[test]
    fn arguments_are_checked() {
        for bad in [
            Bson::String("x".into()),
            Bson::Document(doc! {}),
            Bson::Document(doc! { "$search": 1 }),
            Bson::Document(doc! { "$search": "x", "$language": "klingon" }),
            Bson::Document(doc! { "$search": "x", "$caseSensitive": 1 }),
            Bson::Document(doc! { "$search": "x", "$other": true }),
        ] {
            assert!(TextSearch::parse(&bad).is_err(), "{bad}");
        }
    }

    fn bound(search: Document, fields: &[&str]) -> TextMatch {
        let search = TextSearch::parse(&Bson::Document(search)).unwrap();
        let spec = TextSpec::parse(fields, &doc! {}).unwrap();
        TextMatch::new(&search, Arc::new(spec), "t".into(), Vec::new())
    }

    #[test]
    fn matching_terms_phrases_and_negations() {
        let m = bound(doc! { "$search": "coffee \"coffee shop\" -decaf" }, &["a"]);
        assert!(m.matches(&rawdoc! { "a": "the Coffee Shop" }).unwrap());
        assert!(!m.matches(&rawdoc! { "a": "coffee" }).unwrap());
        assert!(!m.matches(&rawdoc! { "a": "coffee shop, decaf" }).unwrap());
        let exact = bound(
            doc! { "$search": "Café", "$caseSensitive": true, "$diacriticSensitive": true },
            &["a"],
        );
        assert!(exact.matches(&rawdoc! { "a": "Café" }).unwrap());
        assert!(!exact.matches(&rawdoc! { "a": "cafe" }).unwrap());
        assert!(!exact.matches(&rawdoc! { "a": "Cafe" }).unwrap());
    }

    #[test]
    fn scores_sum_over_query_terms() {
        let m = bound(doc! { "$search": "cat dog" }, &["a"]);
        let score = m.score(&rawdoc! { "a": "cat dog" }).unwrap();
        assert!((score - 1.5).abs() < 1e-9, "{score}");
        let nothing = bound(doc! { "$search": "the -cat" }, &["a"]);
        assert!(!nothing.matches(&rawdoc! { "a": "the dog" }).unwrap());
    }
}
