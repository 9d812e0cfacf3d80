//! The N family (`$firstN`, `$lastN`, `$minN`, `$maxN`): the rules for `n`, and the bounded
//! collection each keeps. Shared by the `$group` accumulators and the array expressions, so
//! that both apply the same rules:
//! - `n` is a positive whole number of any numeric type (5787902 when not a number, 5787903 when
//!   not whole, 5787908 when not positive);
//! - `$firstN` and `$lastN` keep null values (a missing one counts as null) in arrival order;
//! - `$minN` and `$maxN` skip null, undefined and missing, and give the `n` smallest values
//!   ascending or the `n` largest descending, under MongoDB's order and the collation.

use std::cmp::Ordering;
use std::collections::VecDeque;

use bson::Bson;

use super::func::compare_bson;
use super::{ExprError, error};
use crate::code::ErrorCode;
use crate::collation::Collation;
use crate::number::Number;

/// 2^63, the first double past every int64.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// Which values a member of the family keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    First,
    Last,
    Min,
    Max,
}

impl Pick {
    pub(crate) fn operator(self) -> &'static str {
        match self {
            Pick::First => "$firstN",
            Pick::Last => "$lastN",
            Pick::Min => "$minN",
            Pick::Max => "$maxN",
        }
    }

    /// The code for an argument that is not a document of named arguments.
    pub(crate) fn not_a_document_code(self) -> i32 {
        match self {
            Pick::First | Pick::Last => 5_787_801,
            Pick::Min | Pick::Max => 5_787_900,
        }
    }
}

/// `n` checked: a positive whole number (int, long, whole double or whole decimal).
pub(crate) fn checked_n(op: &str, value: Option<&Bson>) -> Result<usize, ExprError> {
    let shown = value.map_or_else(|| "missing".to_owned(), ToString::to_string);
    let not_integral = |code: i32| {
        error(
            op,
            format!("value for 'n' must be of integral type, but found {shown}"),
        )
        .with_code(ErrorCode::location(code))
    };
    let n: i128 = match value {
        Some(Bson::Int32(i)) => i128::from(*i),
        Some(Bson::Int64(i)) => i128::from(*i),
        Some(Bson::Double(f)) => {
            if !f.is_finite() || f.fract() != 0.0 || f.abs() >= TWO_POW_63 {
                return Err(not_integral(5_787_903));
            }
            *f as i128
        }
        Some(Bson::Decimal128(d)) => whole_decimal(*d).ok_or_else(|| not_integral(5_787_903))?,
        _ => return Err(not_integral(5_787_902)),
    };
    if n > i128::from(i64::MAX) {
        return Err(not_integral(5_787_903));
    }
    if n <= 0 {
        return Err(error(op, format!("'n' must be greater than 0, found {n}"))
            .with_code(ErrorCode::location(5_787_908)));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// A decimal's value when it is a whole number within `i128`.
fn whole_decimal(d: bson::Decimal128) -> Option<i128> {
    let Number::Finite(decimal) = Number::from_decimal128(d) else {
        return None;
    };
    if decimal.is_zero() {
        return Some(0);
    }
    let digits = decimal.digits.len() as i32;
    if decimal.exp < digits || decimal.exp > 38 {
        return None;
    }
    let mut value: i128 = 0;
    for d in &decimal.digits {
        value = value * 10 + i128::from(*d);
    }
    for _ in digits..decimal.exp {
        value *= 10;
    }
    Some(if decimal.negative { -value } else { value })
}

/// The values a member of the family holds, never more than `n`.
#[derive(Debug)]
pub(crate) struct Kept {
    pick: Pick,
    n: usize,
    /// Arrival order for `First`/`Last`; sorted for `Min` (ascending) and `Max` (descending).
    values: VecDeque<Bson>,
}

impl Kept {
    pub(crate) fn new(pick: Pick, n: usize) -> Kept {
        Kept {
            pick,
            n,
            values: VecDeque::new(),
        }
    }

    /// Offers one value (`None`: missing). Returns the value let go, if any: the offered one
    /// when it is not kept, or one it displaced (so that a caller can count memory).
    pub(crate) fn add(&mut self, value: Option<Bson>, cx: Option<&Collation>) -> Option<Bson> {
        match self.pick {
            Pick::First => {
                let v = value.unwrap_or(Bson::Null);
                if self.values.len() < self.n {
                    self.values.push_back(v);
                    None
                } else {
                    Some(v)
                }
            }
            Pick::Last => {
                self.values.push_back(value.unwrap_or(Bson::Null));
                if self.values.len() > self.n {
                    self.values.pop_front()
                } else {
                    None
                }
            }
            Pick::Min | Pick::Max => {
                let v = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined))?;
                let descending = self.pick == Pick::Max;
                let order = |a: &Bson, b: &Bson| {
                    let o = compare_bson(a, b, cx);
                    if descending { o.reverse() } else { o }
                };
                if self.values.len() == self.n
                    && self
                        .values
                        .back()
                        .is_some_and(|worst| order(&v, worst) != Ordering::Less)
                {
                    return Some(v);
                }
                // After the equal ones: ties keep arrival order.
                let at = self
                    .values
                    .partition_point(|held| order(held, &v) != Ordering::Greater);
                self.values.insert(at, v);
                if self.values.len() > self.n {
                    self.values.pop_back()
                } else {
                    None
                }
            }
        }
    }

    pub(crate) fn into_values(self) -> Vec<Bson> {
        self.values.into()
    }

    /// How many values it keeps at most.
    pub(crate) fn n(&self) -> usize {
        self.n
    }

    /// The values held, in their order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Bson> {
        self.values.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pick: Pick, n: usize, values: &[Option<Bson>]) -> Vec<Bson> {
        let mut kept = Kept::new(pick, n);
        for v in values {
            kept.add(v.clone(), None);
        }
        kept.into_values()
    }

    #[test]
    fn each_member_keeps_its_values() {
        let input: Vec<Option<Bson>> = vec![
            Some(Bson::Int32(5)),
            None,
            Some(Bson::Null),
            Some(Bson::Int32(1)),
            Some(Bson::String("2".into())),
            Some(Bson::Double(3.0)),
        ];
        assert_eq!(
            run(Pick::First, 3, &input),
            [Bson::Int32(5), Bson::Null, Bson::Null]
        );
        assert_eq!(
            run(Pick::Last, 2, &input),
            [Bson::String("2".into()), Bson::Double(3.0)]
        );
        assert_eq!(
            run(Pick::Min, 2, &input),
            [Bson::Int32(1), Bson::Double(3.0)]
        );
        assert_eq!(
            run(Pick::Max, 3, &input),
            [Bson::String("2".into()), Bson::Int32(5), Bson::Double(3.0)]
        );
        assert_eq!(
            run(Pick::Min, 10, &[None, Some(Bson::Null)]),
            Vec::<Bson>::new()
        );
    }

    #[test]
    fn n_must_be_a_positive_whole_number() {
        let code = |v: Bson| checked_n("$firstN", Some(&v)).map_err(|e| e.code.code);
        assert_eq!(code(Bson::Int32(3)), Ok(3));
        assert_eq!(code(Bson::Double(3.0)), Ok(3));
        assert_eq!(code(Bson::Decimal128("3".parse().unwrap())), Ok(3));
        assert_eq!(code(Bson::Decimal128("3.00".parse().unwrap())), Ok(3));
        assert_eq!(
            code(Bson::Decimal128("9223372036854775807".parse().unwrap())).map(|n| n as u64),
            Ok(i64::MAX as u64)
        );
        assert_eq!(
            code(Bson::Decimal128("9223372036854775808".parse().unwrap())),
            Err(5_787_903)
        );
        assert_eq!(code(Bson::Double(3.2)), Err(5_787_903));
        assert_eq!(code(Bson::String("3".into())), Err(5_787_902));
        assert_eq!(code(Bson::Null), Err(5_787_902));
        assert_eq!(code(Bson::Int32(0)), Err(5_787_908));
        assert_eq!(code(Bson::Int64(-1)), Err(5_787_908));
        assert_eq!(
            checked_n("$minN", None).map_err(|e| e.code.code),
            Err(5_787_902)
        );
    }
}
