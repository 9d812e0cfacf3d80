//! `Field<R, V>`: a handle on one field of the model `R`, whose values are of type `V`.
//!
//! Handles come from `R::fields()`; their path is the field's name as serde writes it (renames
//! honoured), dotted through subdocuments. The types make mistakes compile errors: a value of
//! another type (`age.eq("x")`), `inc` on a field that is not a number, `push` on a field that
//! is not a `Vec`, a handle of another model in a filter.

use std::marker::PhantomData;

use bson::Bson;
use serde::Serialize;

/// A handle on one field; see the module documentation.
///
/// ```
/// use odm::{Document, Embedded};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Embedded)]
/// struct Vote {
///     voter: String,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "polls")]
/// struct Poll {
///     #[odm(id)]
///     id: i64,
///     #[serde(rename = "q")]
///     question: String,
///     tags: Vec<String>,
///     #[odm(embedded)]
///     votes: Vec<Vote>,
/// }
///
/// let f = Poll::fields();
/// assert_eq!(f.id.path(), "_id"); // the id field is stored as `_id`
/// assert_eq!(f.question.path(), "q"); // serde's names
/// assert_eq!(f.votes.voter.path(), "votes.voter");
/// assert_eq!(f.votes.matched().voter.path(), "votes.$.voter");
/// assert_eq!(f.tags.all().path(), "tags.$[]");
/// assert_eq!(f.tags.index(0).path(), "tags.0");
/// assert_eq!(f.tags.unwound().path(), "tags");
/// ```
pub struct Field<R, V> {
    path: String,
    _types: PhantomData<fn() -> (R, V)>,
}

impl<R, V> Clone for Field<R, V> {
    fn clone(&self) -> Self {
        Field::new(self.path.clone())
    }
}

impl<R, V> std::fmt::Debug for Field<R, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Field({})", self.path)
    }
}

impl<R, V> Field<R, V> {
    #[doc(hidden)]
    pub fn new(path: impl Into<String>) -> Self {
        Field {
            path: path.into(),
            _types: PhantomData,
        }
    }

    /// The dotted path as stored.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// This handle's path, its values seen as of the type `W` (for builders that keep paths
    /// of several value types).
    pub(crate) fn at_same_path<W>(&self) -> Field<R, W> {
        Field::new(self.path.clone())
    }

    /// The handle of a field of the same model at a path this handle names relatively.
    pub(crate) fn at<W>(&self, suffix: &str) -> Field<R, W> {
        Field::new(format!("{}.{suffix}", self.path))
    }
}

impl<R, E> Field<R, Vec<E>> {
    /// The element the query matched (`tags.$`), for updates.
    pub fn matched(&self) -> Field<R, E> {
        self.at("$")
    }

    /// Every element (`tags.$[]`), for updates.
    pub fn all(&self) -> Field<R, E> {
        self.at("$[]")
    }

    /// The elements an array filter selects (`tags.$[id]`), for updates; give the filter in
    /// [`crate::UpdateOptions::array_filters`] (see [`crate::Filter::as_array_filter`]).
    pub fn filtered(&self, identifier: &str) -> Field<R, E> {
        self.at(&format!("$[{identifier}]"))
    }

    /// The elements at the array's own path: the field after an `$unwind`
    /// ([`crate::Aggregate::unwind`]), where each document holds one element.
    pub fn unwound(&self) -> Field<R, E> {
        Field::new(self.path.clone())
    }

    /// One position (`tags.3`).
    pub fn index(&self, position: usize) -> Field<R, E> {
        self.at(&position.to_string())
    }

    /// A field of the elements, from its handle relative to one element (`E::fields()`):
    /// `lines.sku` from `lines` and `sku`. In a filter it matches when some element's field
    /// does; it also names the field for a multikey index.
    ///
    /// ```
    /// use odm::{Document, Embedded};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Embedded)]
    /// struct Line {
    ///     sku: String,
    /// }
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "carts")]
    /// struct Cart {
    ///     #[odm(id)]
    ///     id: i64,
    ///     #[odm(embedded)]
    ///     lines: Vec<Line>,
    /// }
    ///
    /// let sku = Line::fields().sku; // chosen where only the element type is known
    /// assert_eq!(Cart::fields().lines.element(&sku).path(), "lines.sku");
    /// ```
    pub fn element<V>(&self, field: &Field<E, V>) -> Field<R, V> {
        self.at(field.path())
    }
}

impl<R, V> Field<R, std::collections::BTreeMap<String, V>> {
    /// The value under one key of a map field (`hours.7`): keys chosen at run time.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use odm::{Database, Document};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Document)]
    /// #[odm(collection = "scores")]
    /// struct Scores {
    ///     #[odm(id)]
    ///     player: String,
    ///     by_level: BTreeMap<String, i64>,
    /// }
    ///
    /// let db = Database::in_memory()?;
    /// let scores = db.collection::<Scores>()?;
    /// let f = Scores::fields();
    /// scores.upsert_one(f.player.eq("ann"), f.by_level.key("3").inc(120))?;
    /// scores.upsert_one(f.player.eq("ann"), f.by_level.key("3").inc(5))?;
    /// assert_eq!(scores.get("ann")?.unwrap().by_level["3"], 125);
    /// # Ok::<(), odm::Error>(())
    /// ```
    pub fn key(&self, key: &str) -> Field<R, V> {
        self.at(key)
    }
}

impl<R, V, H: std::hash::BuildHasher> Field<R, std::collections::HashMap<String, V, H>> {
    /// The value under one key of a map field (`hours.7`): keys chosen at run time.
    pub fn key(&self, key: &str) -> Field<R, V> {
        self.at(key)
    }
}

impl<R, V: crate::model::Embedded> Field<R, V> {
    /// The handles on the fields of this value (an embedded type reached by a path the model
    /// cannot name, such as a map entry).
    pub fn fields(&self) -> V::Fields<R, V> {
        V::fields_at(self.path())
    }
}

/// A value usable where a field of type `V` expects one: `V` itself, a reference to one, and
/// `&str` for `String`. Implement it for a borrowed view of `V` (a struct of references with
/// the same fields) to filter or write without building an owned `V`; the view must serialize
/// exactly as `V` does.
///
/// ```
/// use odm::{Database, Document, Embedded, IntoValue};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Embedded)]
/// struct Comment {
///     author: String,
///     text: String,
/// }
///
/// /// A comment written from borrowed strings: the same fields, in the same order.
/// #[derive(Serialize)]
/// struct CommentRef<'a> {
///     author: &'a str,
///     text: &'a str,
/// }
///
/// impl IntoValue<Comment> for CommentRef<'_> {
///     fn into_bson(self) -> Result<bson::Bson, bson::error::Error> {
///         bson::serialize_to_bson(&self)
///     }
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "posts")]
/// struct Post {
///     #[odm(id)]
///     id: i64,
///     #[odm(embedded)]
///     comments: Vec<Comment>,
/// }
///
/// let db = Database::in_memory()?;
/// let posts = db.collection::<Post>()?;
/// posts.insert_one(&Post { id: 1, comments: Vec::new() })?;
/// let f = Post::fields();
/// let text = String::from("first!");
/// posts.update_one(f.id.eq(1), f.comments.push(CommentRef { author: "ann", text: &text }))?;
/// assert_eq!(posts.get(1)?.unwrap().comments[0].text, "first!");
/// # Ok::<(), odm::Error>(())
/// ```
pub trait IntoValue<V> {
    /// The value as BSON, as `V` would be written; or why serde cannot write it.
    fn into_bson(self) -> Result<Bson, bson::error::Error>;
}

impl<V: Serialize> IntoValue<V> for V {
    fn into_bson(self) -> Result<Bson, bson::error::Error> {
        to_bson(&self)
    }
}

impl<V: Serialize> IntoValue<V> for &V {
    fn into_bson(self) -> Result<Bson, bson::error::Error> {
        to_bson(self)
    }
}

impl IntoValue<String> for &str {
    fn into_bson(self) -> Result<Bson, bson::error::Error> {
        Ok(Bson::String(self.to_owned()))
    }
}

impl IntoValue<Option<String>> for &str {
    fn into_bson(self) -> Result<Bson, bson::error::Error> {
        Ok(Bson::String(self.to_owned()))
    }
}

/// Types that `$inc` and `$mul` accept: BSON's numbers and the Rust types stored as them.
pub trait Numeric: Serialize + private::Sealed {}

macro_rules! numeric {
    ($($t:ty)*) => {$(
        impl Numeric for $t {}
        impl private::Sealed for $t {}
    )*};
}
numeric!(i8 i16 i32 i64 u8 u16 u32 f32 f64 bson::Decimal128);

impl<N: Numeric> Numeric for Option<N> {}
impl<N: Numeric> private::Sealed for Option<N> {}

mod private {
    pub trait Sealed {}
}

/// A value as BSON, or why serde cannot write it so (a `u64` above `i64::MAX`, a map with
/// non-string keys); builders keep the first such error and the operation reports it.
pub(crate) fn to_bson<V: Serialize + ?Sized>(value: &V) -> Result<Bson, bson::error::Error> {
    bson::serialize_to_bson(value)
}
