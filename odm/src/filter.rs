//! `Filter<R>`: a typed query on the model `R`, built from field handles.
//!
//! Every method produces MongoDB's filter document (`age.gt(30)` is `{age: {$gt: 30}}`), the
//! stable boundary with the engine and with MongoDB itself. Combining filters of two models
//! does not compile; `Filter::raw` takes a plain document where the typed API falls short.

use std::marker::PhantomData;

use bson::{Bson, Document, doc};
use serde::Serialize;

use crate::error::BuildError;
use crate::field::{Field, IntoValue};
use crate::model::Embedded;

/// A typed filter; see the module documentation.
///
/// ```
/// use odm::{Database, Document, Filter};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "books")]
/// struct Book {
///     #[odm(id)]
///     id: i64,
///     title: String,
///     pages: i32,
///     tags: Vec<String>,
/// }
///
/// let f = Book::fields();
/// let long_rust = f.pages.gte(300).and(f.tags.contains("rust"));
/// assert_eq!(
///     long_rust.to_document(),
///     &bson::doc! { "pages": { "$gte": 300 }, "tags": "rust" }
/// );
/// let either = f.title.starts_with("Programming").or(!f.tags.contains("draft"));
/// let db = Database::in_memory()?;
/// let books = db.collection::<Book>()?;
/// books.insert_one(&Book { id: 1, title: "Programming Rust".into(), pages: 700, tags: vec!["rust".into()] })?;
/// assert_eq!(books.count(long_rust)?, 1);
/// assert_eq!(books.count(either)?, 1);
/// assert_eq!(books.count(Filter::all())?, 1);
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Filter<R> {
    doc: Document,
    /// The first value that could not be written as BSON.
    error: Option<BuildError>,
    _model: PhantomData<fn() -> R>,
}

impl<R> Clone for Filter<R> {
    fn clone(&self) -> Self {
        Filter {
            doc: self.doc.clone(),
            error: self.error.clone(),
            _model: PhantomData,
        }
    }
}

impl<R> std::fmt::Debug for Filter<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Filter({})", self.doc)
    }
}

impl<R> Default for Filter<R> {
    fn default() -> Self {
        Filter::all()
    }
}

impl<R> From<Document> for Filter<R> {
    fn from(doc: Document) -> Self {
        Filter::raw(doc)
    }
}

impl<R> Filter<R> {
    /// Matches every document.
    pub fn all() -> Self {
        Filter::raw(Document::new())
    }

    /// A filter written as a MongoDB document, unchecked.
    pub fn raw(doc: Document) -> Self {
        Filter {
            doc,
            error: None,
            _model: PhantomData,
        }
    }

    /// A filter that could not be built; running it reports `error`.
    pub(crate) fn failed(error: BuildError) -> Self {
        Filter {
            doc: Document::new(),
            error: Some(error),
            _model: PhantomData,
        }
    }

    fn condition(path: &str, value: Result<Bson, bson::error::Error>) -> Self {
        let mut filter = Filter::all();
        match value {
            Ok(v) => {
                filter.doc.insert(path, v);
            }
            Err(source) => {
                filter.error = Some(BuildError::UnwritableAt {
                    path: path.to_owned(),
                    source,
                });
            }
        }
        filter
    }

    fn operator(path: &str, op: &str, value: Result<Bson, bson::error::Error>) -> Self {
        Filter::condition(
            path,
            value.map(|v| {
                let mut d = Document::new();
                d.insert(op, v);
                Bson::Document(d)
            }),
        )
    }

    fn combine(op: &str, filters: Vec<Filter<R>>) -> Self {
        let error = filters.iter().find_map(|f| f.error.clone());
        let items: Vec<Bson> = filters.into_iter().map(|f| Bson::Document(f.doc)).collect();
        let mut d = Document::new();
        d.insert(op, items);
        Filter {
            doc: d,
            error,
            _model: PhantomData,
        }
    }

    /// Both this and `other`. Conditions on different fields are written as one document
    /// (`{a: 1, b: {$lt: 5}}`, as MongoDB users write them and the planner reads them best), and
    /// so are different operators on one field (`{at: {$gte: a, $lt: b}}`); anything else
    /// (one operator twice, an equality and an operator on one field, top-level `$or`) goes
    /// into `$and`.
    #[must_use]
    pub fn and(mut self, other: Filter<R>) -> Self {
        if self.doc.is_empty() && self.error.is_none() {
            return other;
        }
        if other.doc.is_empty() && other.error.is_none() {
            return self;
        }
        if self.error.is_none() && other.error.is_none() && mergeable(&self.doc, &other.doc) {
            for (key, value) in other.doc {
                match (self.doc.get_mut(&key), value) {
                    (Some(Bson::Document(mine)), Bson::Document(theirs)) => mine.extend(theirs),
                    (_, value) => {
                        self.doc.insert(key, value);
                    }
                }
            }
            return self;
        }
        Filter::combine("$and", vec![self, other])
    }

    /// This or `other`.
    #[must_use]
    pub fn or(self, other: Filter<R>) -> Self {
        Filter::combine("$or", vec![self, other])
    }

    /// Every filter of the list.
    pub fn all_of(filters: impl IntoIterator<Item = Filter<R>>) -> Self {
        Filter::combine("$and", filters.into_iter().collect())
    }

    /// At least one filter of the list.
    pub fn any_of(filters: impl IntoIterator<Item = Filter<R>>) -> Self {
        Filter::combine("$or", filters.into_iter().collect())
    }

    /// None of the filters of the list.
    pub fn none_of(filters: impl IntoIterator<Item = Filter<R>>) -> Self {
        Filter::combine("$nor", filters.into_iter().collect())
    }

    /// This filter on one array element (built from `E::fields()`), as the array filter of
    /// `$[identifier]`: its paths are put under the identifier.
    pub fn as_array_filter(&self, identifier: &str) -> Document {
        self.under(identifier)
    }

    /// This filter with every path put under `prefix` (`fullDocument.` of a change event, an
    /// array filter's identifier), through `$and`, `$or` and `$nor`.
    pub(crate) fn under(&self, prefix: &str) -> Document {
        fn under(doc: &Document, identifier: &str) -> Document {
            doc.iter()
                .map(|(key, value)| match value {
                    Bson::Array(items) if key.starts_with('$') => {
                        let items = items
                            .iter()
                            .map(|item| match item {
                                Bson::Document(d) => Bson::Document(under(d, identifier)),
                                other => other.clone(),
                            })
                            .collect();
                        (key.clone(), Bson::Array(items))
                    }
                    _ if key.starts_with('$') => (key.clone(), value.clone()),
                    _ => (format!("{identifier}.{key}"), value.clone()),
                })
                .collect()
        }
        under(&self.doc, prefix)
    }

    /// The MongoDB filter document.
    pub fn to_document(&self) -> &Document {
        &self.doc
    }

    /// The document, or the first value that could not be written as BSON.
    pub(crate) fn into_document(self) -> Result<Document, BuildError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.doc),
        }
    }
}

/// `!filter`: the documents the filter does not match (`$nor` of it).
impl<R> std::ops::Not for Filter<R> {
    type Output = Filter<R>;

    fn not(self) -> Filter<R> {
        Filter::combine("$nor", vec![self])
    }
}

impl<R, V: Serialize> Field<R, V> {
    /// Equal to `value` (for an array field, also an array holding it; see `contains`).
    pub fn eq(&self, value: impl IntoValue<V>) -> Filter<R> {
        Filter::condition(self.path(), value.into_bson())
    }

    pub fn ne(&self, value: impl IntoValue<V>) -> Filter<R> {
        Filter::operator(self.path(), "$ne", value.into_bson())
    }

    pub fn gt(&self, value: impl IntoValue<V>) -> Filter<R> {
        Filter::operator(self.path(), "$gt", value.into_bson())
    }

    pub fn gte(&self, value: impl IntoValue<V>) -> Filter<R> {
        Filter::operator(self.path(), "$gte", value.into_bson())
    }

    pub fn lt(&self, value: impl IntoValue<V>) -> Filter<R> {
        Filter::operator(self.path(), "$lt", value.into_bson())
    }

    pub fn lte(&self, value: impl IntoValue<V>) -> Filter<R> {
        Filter::operator(self.path(), "$lte", value.into_bson())
    }

    /// Equal to one of `values`.
    pub fn is_in<I: IntoValue<V>>(&self, values: impl IntoIterator<Item = I>) -> Filter<R> {
        let values: Result<Vec<Bson>, bson::error::Error> =
            values.into_iter().map(IntoValue::into_bson).collect();
        Filter::operator(self.path(), "$in", values.map(Bson::Array))
    }

    /// Equal to none of `values`.
    pub fn not_in<I: IntoValue<V>>(&self, values: impl IntoIterator<Item = I>) -> Filter<R> {
        let values: Result<Vec<Bson>, bson::error::Error> =
            values.into_iter().map(IntoValue::into_bson).collect();
        Filter::operator(self.path(), "$nin", values.map(Bson::Array))
    }
}

impl<R, V> Field<R, V> {
    /// The field is present (`true`) or absent (`false`).
    pub fn exists(&self, present: bool) -> Filter<R> {
        Filter::operator(self.path(), "$exists", Ok(Bson::Boolean(present)))
    }
}

impl<R> Field<R, String> {
    /// Matches a regular expression (`options` as MongoDB's: `i`, `m`, `x`, `s`).
    pub fn regex(&self, pattern: &str, options: &str) -> Filter<R> {
        let mut f = Filter::all();
        f.doc
            .insert(self.path(), doc! { "$regex": pattern, "$options": options });
        f
    }

    /// Starts with `prefix`: an anchored regex, which an index on the field serves as a range.
    pub fn starts_with(&self, prefix: &str) -> Filter<R> {
        let mut escaped = String::from("^");
        for c in prefix.chars() {
            if "\\^$.|?*+()[]{}".contains(c) {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        let mut f = Filter::all();
        f.doc.insert(self.path(), doc! { "$regex": escaped });
        f
    }
}

impl<R, E: Serialize> Field<R, Vec<E>> {
    /// The array holds `element`.
    pub fn contains(&self, element: impl IntoValue<E>) -> Filter<R> {
        Filter::condition(self.path(), element.into_bson())
    }

    /// The array does not hold `element` (`$ne` on an array: S19's vote-once condition).
    pub fn not_contains(&self, element: impl IntoValue<E>) -> Filter<R> {
        Filter::operator(self.path(), "$ne", element.into_bson())
    }

    /// The array holds every one of `elements`.
    pub fn contains_all<I: IntoValue<E>>(
        &self,
        elements: impl IntoIterator<Item = I>,
    ) -> Filter<R> {
        let values: Result<Vec<Bson>, bson::error::Error> =
            elements.into_iter().map(IntoValue::into_bson).collect();
        Filter::operator(self.path(), "$all", values.map(Bson::Array))
    }

    /// The array has exactly `n` elements.
    pub fn size(&self, n: u32) -> Filter<R> {
        Filter::operator(self.path(), "$size", Ok(Bson::Int64(i64::from(n))))
    }

    /// Some element satisfies every condition of `element` (built from `E::fields()`).
    pub fn elem_match(&self, element: Filter<E>) -> Filter<R>
    where
        E: Embedded,
    {
        let error = element.error.clone();
        let mut f = Filter::operator(self.path(), "$elemMatch", Ok(Bson::Document(element.doc)));
        f.error = f.error.or(error);
        f
    }
}

/// Whether two filter documents can be written as one with the same meaning: no top-level
/// operators, and every field they share holds operator documents with different operators.
fn mergeable(mine: &Document, theirs: &Document) -> bool {
    fn operators(v: &Bson) -> Option<&Document> {
        match v {
            Bson::Document(d) if !d.is_empty() && d.keys().all(|k| k.starts_with('$')) => Some(d),
            _ => None,
        }
    }
    let plain = |d: &Document| d.keys().all(|k| !k.starts_with('$'));
    plain(mine)
        && plain(theirs)
        && theirs.iter().all(|(key, value)| match mine.get(key) {
            None => true,
            Some(existing) => match (operators(existing), operators(value)) {
                (Some(a), Some(b)) => b.keys().all(|k| !a.contains_key(k)),
                _ => false,
            },
        })
}

/// Conditions checked and parsed once, for updates of one document named by its id: an
/// optimistic write's version check, a bucket's room. Each
/// [`TxnCollection::update_one_by_id_prepared`](crate::TxnCollection::update_one_by_id_prepared)
/// then skips building, parsing and planning a filter. Made by
/// [`Collection::prepare_conditions`](crate::Collection::prepare_conditions); they may not
/// hold a top-level condition on the id, and an `$expr` in them cannot name `let` variables
/// (they are parsed once, without a call's options).
///
/// ```
/// use odm::{Database, Document, UpdateOptions};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "accounts")]
/// struct Account {
///     #[odm(id)]
///     id: i64,
///     balance: i64,
/// }
///
/// let db = Database::in_memory()?;
/// let accounts = db.collection::<Account>()?;
/// accounts.insert_one(&Account { id: 1, balance: 30 })?;
/// let f = Account::fields();
/// let covered = accounts.prepare_conditions(f.balance.gte(20))?;
/// let withdraw = accounts.prepare_update(f.balance.inc(-20))?;
/// let none = UpdateOptions::default();
/// let done = db.transaction(|txn| {
///     let mut accounts = txn.collection::<Account>()?;
///     let first = accounts.update_one_by_id_prepared(1, &covered, &withdraw, &none)?;
///     let second = accounts.update_one_by_id_prepared(1, &covered, &withdraw, &none)?;
///     Ok::<_, odm::Error>((first.modified, second.matched))
/// })?;
/// assert_eq!(done, (1, 0));
/// assert_eq!(accounts.get(1)?.map(|a| a.balance), Some(10));
/// # Ok::<(), odm::Error>(())
/// ```
pub struct PreparedConditions<R> {
    parsed: odm_engine::update::IdConditions,
    _model: PhantomData<fn() -> R>,
}

impl<R> Clone for PreparedConditions<R> {
    fn clone(&self) -> Self {
        PreparedConditions {
            parsed: self.parsed.clone(),
            _model: PhantomData,
        }
    }
}

impl<R> std::fmt::Debug for PreparedConditions<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PreparedConditions")
            .field(self.parsed.conditions())
            .finish()
    }
}

impl<R> PreparedConditions<R> {
    /// Checks and parses `conditions` for collection `collection` (named in its errors).
    pub(crate) fn new(conditions: Filter<R>, collection: &str) -> crate::Result<Self> {
        let conditions = crate::txn::serialized(collection, conditions.into_document())?;
        let parsed =
            odm_engine::update::IdConditions::parse(&conditions).map_err(crate::Error::from)?;
        Ok(PreparedConditions {
            parsed,
            _model: PhantomData,
        })
    }

    /// The conditions as the engine judges them (and as a MongoDB deployment gets them, after
    /// the id).
    pub(crate) fn parsed(&self) -> &odm_engine::update::IdConditions {
        &self.parsed
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::Filter;
    use crate::field::Field;

    struct M;

    fn field<V>(path: &str) -> Field<M, V> {
        Field::new(path)
    }

    #[test]
    fn conditions_on_distinct_fields_are_one_document() {
        let f = field::<String>("owner")
            .eq("ann")
            .and(field::<i32>("count").lt(50));
        assert_eq!(
            f.into_document().unwrap(),
            doc! { "owner": "ann", "count": { "$lt": 50 } }
        );
    }

    #[test]
    fn operators_merge_only_where_the_meaning_is_kept() {
        let count = field::<i32>("count");
        let range = count.gt(1).and(count.lt(5));
        assert_eq!(
            range.into_document().unwrap(),
            doc! { "count": { "$gt": 1, "$lt": 5 } }
        );
        let twice = count.gt(1).and(count.gt(3));
        assert_eq!(
            twice.into_document().unwrap(),
            doc! { "$and": [{ "count": { "$gt": 1 } }, { "count": { "$gt": 3 } }] }
        );
        let equal_and_range = count.eq(2).and(count.lt(5));
        assert_eq!(
            equal_and_range.into_document().unwrap(),
            doc! { "$and": [{ "count": 2 }, { "count": { "$lt": 5 } }] }
        );
        let either = count.eq(1).or(count.eq(2));
        let mixed = either.and(field::<String>("owner").eq("ann"));
        assert_eq!(
            mixed.into_document().unwrap(),
            doc! { "$and": [
                { "$or": [{ "count": 1 }, { "count": 2 }] },
                { "owner": "ann" },
            ] }
        );
        // The empty filter is the identity on either side.
        let all = Filter::<M>::all().and(count.eq(3)).and(Filter::all());
        assert_eq!(all.into_document().unwrap(), doc! { "count": 3 });
    }
}
