//! Text search on a model that declares a text index (`#[odm(index(text(title = 10, body)))]`):
//! the `$text` filter [`text`], the sort by score [`Sort::text_score`], and the score read into
//! an output type by [`crate::Aggregate::text_score`].
//!
//! [`TextIndexed`] is implemented by the derive for a model with a text index, so a text search
//! on a model without one does not compile (MongoDB would refuse it at run time, error 27).

use bson::{Document, doc};

pub use odm_engine::text::Language;

use crate::field::Field;
use crate::filter::Filter;
use crate::sort::Sort;

/// A model whose collection has a text index, declared by `#[odm(index(text(...)))]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` declares no text index: add `#[odm(index(text(field, ...)))]` to the model",
    label = "a text search needs a text index"
)]
pub trait TextIndexed {}

/// Types a text index reads: strings, and options and arrays of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not text: a text index reads `String` fields, and options and arrays of them",
    label = "not a string"
)]
pub trait Searchable {}
impl Searchable for String {}
impl Searchable for Box<str> {}
impl<T: Searchable> Searchable for Option<T> {}
impl<T: Searchable> Searchable for Vec<T> {}

/// The compile-time check the derive makes on each field of a text index.
#[doc(hidden)]
pub fn text_key<R, V: Searchable>(field: &Field<R, V>) -> &str {
    field.path()
}

/// `$text`: the documents the text index matches for `search` (words, `"phrases"` and
/// `-negated` words, as MongoDB reads them), to use as a filter.
///
/// ```
/// use odm::{Database, Document, Filter, Language, Sort, text};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "posts", index(text(title = 10, body), default_language = English))]
/// struct Post {
///     #[odm(id)]
///     id: i64,
///     title: String,
///     body: String,
/// }
///
/// let db = Database::in_memory()?;
/// let posts = db.collection::<Post>()?;
/// posts.insert_many(&[
///     Post { id: 1, title: "Brewing coffee".into(), body: "Grind the beans.".into() },
///     Post { id: 2, title: "Tea".into(), body: "Coffee drinkers may prefer it brewed.".into() },
///     Post { id: 3, title: "Decaf".into(), body: "Brewed coffee without caffeine.".into() },
/// ])?;
/// let hits = posts
///     .find(text("brew coffee -caffeine"))
///     .sort(Sort::text_score())
///     .to_vec()?;
/// // The title weighs ten times the body: the post titled so ranks first.
/// assert_eq!(hits.iter().map(|p| p.id).collect::<Vec<_>>(), [1, 2]);
/// let f = Post::fields();
/// // `brewing`, `brewed`: one stem in English.
/// let brewing = text("brewing").language(Language::English);
/// assert_eq!(posts.count(Filter::from(brewing).and(f.id.gt(1)))?, 2);
/// # Ok::<(), odm::Error>(())
/// ```
pub fn text(search: &str) -> Text {
    Text {
        search: search.to_owned(),
        language: None,
        case_sensitive: false,
        diacritic_sensitive: false,
    }
}

/// A `$text` condition being built; see [`text`].
#[derive(Debug, Clone)]
pub struct Text {
    search: String,
    language: Option<Language>,
    case_sensitive: bool,
    diacritic_sensitive: bool,
}

impl Text {
    /// The language the search's words are stemmed and stop-worded in (`$language`); by
    /// default the index's.
    #[must_use]
    pub fn language(mut self, language: Language) -> Self {
        self.language = Some(language);
        self
    }

    /// Words match only in the same case (`$caseSensitive`).
    #[must_use]
    pub fn case_sensitive(mut self) -> Self {
        self.case_sensitive = true;
        self
    }

    /// Words match only with the same diacritics (`$diacriticSensitive`).
    #[must_use]
    pub fn diacritic_sensitive(mut self) -> Self {
        self.diacritic_sensitive = true;
        self
    }

    fn to_document(&self) -> Document {
        let mut condition = doc! { "$search": self.search.as_str() };
        if let Some(language) = self.language {
            condition.insert("$language", language.name());
        }
        if self.case_sensitive {
            condition.insert("$caseSensitive", true);
        }
        if self.diacritic_sensitive {
            condition.insert("$diacriticSensitive", true);
        }
        doc! { "$text": condition }
    }
}

impl<R: TextIndexed> From<Text> for Filter<R> {
    fn from(text: Text) -> Self {
        Filter::raw(text.to_document())
    }
}

/// The key a sort by text score is written under; MongoDB reads only its `$meta`.
const SCORE_SORT_KEY: &str = "textScore";

impl<R: TextIndexed> Sort<R> {
    /// By the text search's score, best first (`{$meta: "textScore"}`); the query must hold a
    /// [`text`] condition.
    pub fn text_score() -> Self {
        Sort::from(doc! { SCORE_SORT_KEY: { "$meta": "textScore" } })
    }

    /// Then by the text search's score, best first.
    #[must_use]
    pub fn then_text_score(self) -> Self {
        let mut sort = self.to_document().clone();
        sort.insert(SCORE_SORT_KEY, doc! { "$meta": "textScore" });
        Sort::from(sort)
    }
}
