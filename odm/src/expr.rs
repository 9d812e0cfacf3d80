//! Typed aggregation expressions: [`Expr<R, V>`], an expression over documents of `R` whose
//! value is a `V`, built from field handles and checked like filters. Comparisons take two
//! expressions of one type (a field against another field, or a value), arithmetic (`+`, `-`,
//! `*`, `/`) takes numbers, `!` and `and`/`or` booleans, `cond` a boolean and two branches of one type; arrays of embedded types are
//! filtered and mapped through the element's own handles (`$$this`). They become `$expr`
//! filters ([`Filter::expr`]) and pipeline updates ([`Field::set_expr`]).

use std::marker::PhantomData;

use crate::error::BuildError;
use crate::field::{Field, IntoValue, Numeric};
use crate::filter::Filter;
use crate::model::Embedded;
use crate::update::Update;
use bson::{Bson, doc};

/// An expression over documents of `R`, of values `V`; see the module documentation.
///
/// ```
/// use odm::{Database, Document, Embedded, Expr, Filter};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Embedded)]
/// struct Line {
///     qty: i64,
///     price: i64,
/// }
///
/// #[derive(Serialize, Deserialize, Document)]
/// #[odm(collection = "orders")]
/// struct Order {
///     #[odm(id)]
///     id: i64,
///     budget: i64,
///     spent: i64,
///     #[odm(embedded)]
///     lines: Vec<Line>,
/// }
///
/// let db = Database::in_memory()?;
/// let orders = db.collection::<Order>()?;
/// let line = |qty, price| Line { qty, price };
/// orders.insert_many(&[
///     Order { id: 1, budget: 10, spent: 12, lines: vec![line(1, 12)] },
///     Order { id: 2, budget: 50, spent: 20, lines: vec![line(2, 5), line(1, 10)] },
/// ])?;
/// let f = Order::fields();
/// // Field against field: the orders over budget.
/// assert_eq!(orders.count(Filter::expr(f.spent.expr().gt(f.budget.expr())))?, 1);
/// // Arrays through the element's handles: orders with a line of two or more.
/// let bulk = f.lines.expr().filter(|l| l.qty.expr().gte(Expr::value(2)));
/// assert_eq!(orders.count(Filter::expr(bulk.size().gt(Expr::value(0))))?, 1);
/// // A pipeline update computed from the document: spent = sum of qty * price.
/// let totals = f.lines.expr().map(|l| l.qty.expr() * l.price.expr());
/// orders.update_many(Filter::all(), f.spent.set_expr(totals.sum()))?;
/// assert_eq!(orders.get(2)?.unwrap().spent, 20);
/// # Ok::<(), odm::Error>(())
/// ```
pub struct Expr<R, V> {
    value: Result<Bson, BuildError>,
    _types: PhantomData<fn() -> (R, V)>,
}

impl<R, V> Clone for Expr<R, V> {
    fn clone(&self) -> Self {
        Expr::of(self.value.clone())
    }
}

impl<R, V> std::fmt::Debug for Expr<R, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Ok(value) => write!(f, "Expr({value})"),
            Err(e) => write!(f, "Expr(error: {e})"),
        }
    }
}

/// The root of the handles of an array's element inside `$filter` and `$map`: the element
/// is `$$this`. [`Element::field`] reads an element's field through a handle rooted in `E`,
/// for arrays whose element type is a parameter with no handles of its own (see
/// [`Expr::filter_where`]).
#[derive(Debug)]
pub struct Element<E>(PhantomData<fn() -> E>);

impl<E> Element<E> {
    /// The element itself (`$$this`).
    pub fn itself() -> Expr<Element<E>, E> {
        Expr::of(Ok(Bson::String("$$this".to_owned())))
    }

    /// The element's field that `field` names (`$$this.path`).
    pub fn field<V>(field: &Field<E, V>) -> Expr<Element<E>, V> {
        Expr::of(Ok(Bson::String(format!("$$this.{}", field.path()))))
    }
}

impl<R, V> Expr<R, V> {
    fn of(value: Result<Bson, BuildError>) -> Self {
        Expr {
            value,
            _types: PhantomData,
        }
    }

    /// An operator over expressions: `{op: [a, b, ...]}`, the first error kept.
    fn operator<W>(op: &str, operands: Vec<Result<Bson, BuildError>>) -> Expr<R, W> {
        Expr::of(
            operands
                .into_iter()
                .collect::<Result<Vec<Bson>, BuildError>>()
                .map(|operands| Bson::Document(doc! { op: operands })),
        )
    }

    /// The expression as the document MongoDB receives.
    pub fn to_bson(&self) -> Result<Bson, BuildError> {
        self.value.clone()
    }

    /// `$eq`: both sides equal.
    pub fn eq(self, other: Expr<R, V>) -> Expr<R, bool> {
        Self::operator("$eq", vec![self.value, other.value])
    }

    /// `$ne`.
    pub fn ne(self, other: Expr<R, V>) -> Expr<R, bool> {
        Self::operator("$ne", vec![self.value, other.value])
    }

    /// `$gt`, in MongoDB's order of values.
    pub fn gt(self, other: Expr<R, V>) -> Expr<R, bool> {
        Self::operator("$gt", vec![self.value, other.value])
    }

    /// `$gte`.
    pub fn gte(self, other: Expr<R, V>) -> Expr<R, bool> {
        Self::operator("$gte", vec![self.value, other.value])
    }

    /// `$lt`.
    pub fn lt(self, other: Expr<R, V>) -> Expr<R, bool> {
        Self::operator("$lt", vec![self.value, other.value])
    }

    /// `$lte`.
    pub fn lte(self, other: Expr<R, V>) -> Expr<R, bool> {
        Self::operator("$lte", vec![self.value, other.value])
    }

    /// `$cond`: `then` where `condition` holds, else `otherwise`.
    pub fn cond(condition: Expr<R, bool>, then: Expr<R, V>, otherwise: Expr<R, V>) -> Self {
        Self::operator("$cond", vec![condition.value, then.value, otherwise.value])
    }

    /// `$ifNull`: this value, or `fallback` where it is null or missing.
    #[must_use]
    pub fn or_else(self, fallback: Expr<R, V>) -> Self {
        Self::operator("$ifNull", vec![self.value, fallback.value])
    }
}

impl<R, V> Expr<R, V> {
    /// A constant, as `$literal` (a string starting with `$` stays a string), given as
    /// filters take values: the value, a reference to it, or a borrowed view ([`IntoValue`]).
    pub fn value(value: impl IntoValue<V>) -> Self {
        Expr::of(
            value
                .into_bson()
                .map(|v| Bson::Document(doc! { "$literal": v }))
                .map_err(BuildError::from),
        )
    }
}

impl<R> Expr<R, bool> {
    /// `$and` of both.
    #[must_use]
    pub fn and(self, other: Expr<R, bool>) -> Self {
        Self::operator("$and", vec![self.value, other.value])
    }

    /// `$or` of both.
    #[must_use]
    pub fn or(self, other: Expr<R, bool>) -> Self {
        Self::operator("$or", vec![self.value, other.value])
    }

    /// `$and` of every condition of the list: true when it is empty.
    pub fn all_of(conditions: impl IntoIterator<Item = Expr<R, bool>>) -> Self {
        Self::operator("$and", conditions.into_iter().map(|c| c.value).collect())
    }
}

/// `$not`: `!condition`.
impl<R> std::ops::Not for Expr<R, bool> {
    type Output = Self;
    fn not(self) -> Self {
        Self::operator("$not", vec![self.value])
    }
}

/// `$add`, `$subtract` and `$multiply` of numbers of one type: `a + b`, `a - b`, `a * b`.
macro_rules! arithmetic {
    ($($trait:ident $method:ident $operator:literal),*) => {$(
        impl<R, V: Numeric> std::ops::$trait for Expr<R, V> {
            type Output = Self;
            fn $method(self, other: Self) -> Self {
                Self::operator($operator, vec![self.value, other.value])
            }
        }
    )*};
}
arithmetic!(Add add "$add", Sub sub "$subtract", Mul mul "$multiply");

/// `$divide`: `a / b` is a double whatever the operands (MongoDB's rule).
impl<R, V: Numeric> std::ops::Div for Expr<R, V> {
    type Output = Expr<R, f64>;
    fn div(self, other: Self) -> Expr<R, f64> {
        Self::operator("$divide", vec![self.value, other.value])
    }
}

impl<R, E> Expr<R, Vec<E>> {
    /// `$size`: the number of elements.
    pub fn size(self) -> Expr<R, i64> {
        Self::operator("$size", vec![self.value])
    }
}

impl<R, E: Numeric> Expr<R, Vec<E>> {
    /// `$sum` of the elements.
    pub fn sum(self) -> Expr<R, E> {
        Self::operator("$sum", vec![self.value])
    }
}

impl<R, E> Expr<R, Vec<E>> {
    /// `$filter`: the elements for which `condition`, over [`Element`]s, holds.
    #[must_use]
    pub fn filter_where(self, condition: Expr<Element<E>, bool>) -> Self {
        Expr::of(self.value.and_then(|input| {
            condition
                .value
                .map(|cond| Bson::Document(doc! { "$filter": { "input": input, "cond": cond } }))
        }))
    }

    /// `$map`: each element's value of `each`, an expression over [`Element`]s.
    #[must_use]
    pub fn map_each<U>(self, each: Expr<Element<E>, U>) -> Expr<R, Vec<U>> {
        Expr::of(self.value.and_then(|input| {
            each.value
                .map(|mapped| Bson::Document(doc! { "$map": { "input": input, "in": mapped } }))
        }))
    }
}

impl<R, E: Embedded> Expr<R, Vec<E>> {
    /// `$filter`: the elements for which `keep`, given the element's handles, holds.
    #[must_use]
    pub fn filter(
        self,
        keep: impl FnOnce(E::Fields<Element<E>, E>) -> Expr<Element<E>, bool>,
    ) -> Self {
        self.filter_where(keep(E::fields_at("$this")))
    }

    /// `$map`: each element's value of `each`, given the element's handles.
    pub fn map<U>(
        self,
        each: impl FnOnce(E::Fields<Element<E>, E>) -> Expr<Element<E>, U>,
    ) -> Expr<R, Vec<U>> {
        self.map_each(each(E::fields_at("$this")))
    }
}

impl<R, V> Field<R, V> {
    /// The field's value, as an expression (`"$path"`; inside `filter` and `map`, the
    /// element's field `"$$this.path"`).
    pub fn expr(&self) -> Expr<R, V> {
        Expr::of(Ok(Bson::String(format!("${}", self.path()))))
    }

    /// A pipeline update setting this field to `value`, computed from the document.
    pub fn set_expr(&self, value: Expr<R, V>) -> Update<R> {
        match value.value {
            Ok(value) => Update::pipeline(vec![doc! { "$set": { self.path(): value } }]),
            Err(e) => Update::failed(e),
        }
    }
}

impl<R> Filter<R> {
    /// `$expr`: the documents for which `condition` holds.
    pub fn expr(condition: Expr<R, bool>) -> Self {
        match condition.value {
            Ok(condition) => Filter::raw(doc! { "$expr": condition }),
            Err(e) => Filter::failed(e),
        }
    }
}
