//! Text search: MongoDB's text indexes (version 3) and `$text`.
//!
//! - `language`: the languages, their stemmers and stop words;
//! - `tokenize`: how a string becomes terms (words, case and diacritic folding);
//! - `spec`: a text index's definition, the strings it reads from a document and their scores;
//! - `query`: `$text`'s arguments, the parsed search, and the search bound to an index, which
//!   judges and scores documents.
//!
//! A text index holds one entry per term of each document: the key is the index's prefix
//! fields' values, the term, the document's score for it, then the suffix fields' values (see
//! `IndexSpec`). A `$text` query reads the entries of its positive terms to find candidates;
//! the matcher then judges each candidate, and its score is computed from the document again
//! (the same function the index's scores come from), so no stage needs the index's entries to
//! know it.

/// The field an aggregation's documents carry their text score in, from a leading `$text`
/// `$match` to the stages that read it (`{$meta: "textScore"}`) or sort by it. No stored
/// document has it (a top-level name never starts with `$`); expressions never see it
/// (`$$ROOT` leaves it out), and the results have it removed. Stages that build new documents
/// (`$group`, `$bucket`, `$facet`'s output) drop it, as MongoDB drops their metadata.
pub const SCORE_FIELD: &str = "$textScore";

/// [`SCORE_FIELD`] as a raw document's key.
pub(crate) const SCORE_KEY: &bson::raw::CStr = bson::raw::cstr!("$textScore");

#[cfg(test)]
#[test]
fn the_score_field_has_one_name() {
    assert_eq!(SCORE_KEY.as_str(), SCORE_FIELD);
}

mod language;
#[cfg(test)]
mod laws;
mod query;
mod spec;
mod tokenize;

pub use language::Language;
pub use query::{TextMatch, TextQuery, TextSearch};
pub(crate) use spec::term_key;
pub use spec::{TEXT_INDEX_VERSION, TextError, TextSpec};
pub use tokenize::Sensitivity;
