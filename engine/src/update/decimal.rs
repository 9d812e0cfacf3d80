//! Decimal128 arithmetic for `$inc` and `$mul` (and the expressions' `$add`, `$multiply`,
//! `$divide`, `$mod`, `$floor`, `$ceil`, `$round`, `$trunc`, `$avg`; the logarithms and powers
//! are `expr::decimal_math`): exact on the operands' decimal values, then
//! rounded to decimal128's 34 significant digits (half to even), as IEEE 754 decimal does.
//!
//! Operands: a decimal128 as it is, an integer exactly, a double rounded to 15 significant
//! digits first (MongoDB's conversion of a double meeting a decimal).

use bson::{Bson, Decimal128};

/// A finite decimal `±coefficient × 10^exponent`, the coefficient's digits most significant
/// first.
#[derive(Clone)]
struct Finite {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
}

enum Value {
    Finite(Finite),
    Infinity { negative: bool },
    NaN,
}

/// A number as decimal arithmetic reads it (see the module documentation):
/// `±coefficient × 10^exponent`, an infinity or NaN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operand {
    Finite {
        negative: bool,
        coefficient: u128,
        exponent: i64,
    },
    Infinity {
        negative: bool,
    },
    NaN,
}

/// `v` as an operand of decimal arithmetic; `None` for what is not a number.
pub(crate) fn operand(v: &Bson) -> Option<Operand> {
    Some(match value(v)? {
        Value::NaN => Operand::NaN,
        Value::Infinity { negative } => Operand::Infinity { negative },
        Value::Finite(f) => Operand::Finite {
            negative: f.negative,
            // At most 34 digits: within u128.
            coefficient: f.digits.iter().fold(0u128, |n, d| {
                n.saturating_mul(10).saturating_add(u128::from(*d))
            }),
            exponent: f.exponent,
        },
    })
}

fn value(v: &Bson) -> Option<Value> {
    match v {
        Bson::Int32(i) => Some(integer(i64::from(*i))),
        Bson::Int64(i) => Some(integer(*i)),
        Bson::Decimal128(d) => Some(decimal(*d)),
        Bson::Double(d) if d.is_nan() => Some(Value::NaN),
        Bson::Double(d) if d.is_infinite() => Some(Value::Infinity { negative: *d < 0.0 }),
        Bson::Double(d) => format!("{d:.14e}").parse::<Decimal128>().ok().map(decimal),
        _ => None,
    }
}

fn integer(v: i64) -> Value {
    Value::Finite(Finite {
        negative: v < 0,
        digits: digits_of(u128::from(v.unsigned_abs())),
        exponent: 0,
    })
}

/// A decimal128's own coefficient and exponent (trailing zeros kept: `1.50` stays 150E-2, as
/// IEEE 754 decimal arithmetic keeps them).
fn decimal(d: Decimal128) -> Value {
    let bits = u128::from_le_bytes(d.bytes());
    let negative = bits >> 127 == 1;
    let combination = (bits >> 122) & 0x1f;
    if combination == 0x1f {
        return Value::NaN;
    }
    if combination == 0x1e {
        return Value::Infinity { negative };
    }
    let (exponent, coefficient) = if (bits >> 125) & 0b11 == 0b11 {
        // Non-canonical: a coefficient of 2^113 or more reads as zero.
        (((bits >> 111) & 0x3fff) as i64, 0)
    } else {
        (((bits >> 113) & 0x3fff) as i64, bits & ((1u128 << 113) - 1))
    };
    let coefficient = if coefficient >= 10u128.pow(34) {
        0
    } else {
        coefficient
    };
    Value::Finite(Finite {
        negative,
        digits: digits_of(coefficient),
        exponent: exponent - 6176,
    })
}

fn digits_of(mut n: u128) -> Vec<u8> {
    let mut out = Vec::new();
    while n > 0 {
        out.push((n % 10) as u8);
        n /= 10;
    }
    out.reverse();
    out
}

/// `a + b` or `a × b` as a decimal128; `None` when an operand is not a number.
pub(crate) fn combine(a: &Bson, b: &Bson, multiply: bool) -> Option<Bson> {
    let result = match (value(a)?, value(b)?) {
        (Value::NaN, _) | (_, Value::NaN) => Value::NaN,
        (Value::Infinity { negative: x }, Value::Infinity { negative: y }) => {
            if multiply {
                Value::Infinity { negative: x != y }
            } else if x == y {
                Value::Infinity { negative: x }
            } else {
                Value::NaN
            }
        }
        (Value::Infinity { negative }, Value::Finite(f))
        | (Value::Finite(f), Value::Infinity { negative }) => {
            if !multiply {
                Value::Infinity { negative }
            } else if f.digits.is_empty() {
                Value::NaN
            } else {
                Value::Infinity {
                    negative: negative != f.negative,
                }
            }
        }
        (Value::Finite(x), Value::Finite(y)) => Value::Finite(if multiply {
            product(&x, &y)
        } else {
            sum(&x, &y)
        }),
    };
    let text = match result {
        Value::NaN => "NaN".to_owned(),
        Value::Infinity { negative } => if negative { "-Infinity" } else { "Infinity" }.to_owned(),
        Value::Finite(f) => render(round(f)),
    };
    text.parse::<Decimal128>().ok().map(Bson::Decimal128)
}

fn render(f: Finite) -> String {
    let digits: String = if f.digits.is_empty() {
        "0".to_owned()
    } else {
        f.digits.iter().map(|d| char::from(b'0' + d)).collect()
    };
    format!(
        "{}{digits}E{}",
        if f.negative { "-" } else { "" },
        f.exponent
    )
}

/// Decimal128's precision.
const DIGITS: usize = 34;

/// At most 34 significant digits, half to even.
fn round(mut f: Finite) -> Finite {
    let leading = f.digits.iter().take_while(|&&d| d == 0).count();
    f.digits.drain(..leading);
    if f.digits.len() <= DIGITS {
        return f;
    }
    let cut = f.digits.len() - DIGITS;
    let dropped = f.digits.split_off(DIGITS);
    f.exponent += cut as i64;
    let first = dropped[0];
    let rest_nonzero = dropped[1..].iter().any(|&d| d != 0);
    let odd = f.digits.last().is_some_and(|d| d % 2 == 1);
    if first > 5 || (first == 5 && (rest_nonzero || odd)) {
        // Add one to the kept digits.
        let mut i = f.digits.len();
        loop {
            if i == 0 {
                f.digits.insert(0, 1);
                f.digits.pop();
                f.exponent += 1;
                break;
            }
            i -= 1;
            if f.digits[i] == 9 {
                f.digits[i] = 0;
            } else {
                f.digits[i] += 1;
                break;
            }
        }
    }
    f
}

/// Digits of `f` scaled to exponent `to` (≤ its own): zeros appended.
fn scaled_to(f: &Finite, to: i64) -> Vec<u8> {
    let mut digits = f.digits.clone();
    let zeros = usize::try_from(f.exponent - to).unwrap_or(0);
    digits.extend(std::iter::repeat_n(0, zeros));
    digits
}

fn sum(x: &Finite, y: &Finite) -> Finite {
    // Align both to the smaller exponent; a far smaller one cannot matter past 34 digits, so
    // it is capped to keep the work bounded.
    let low = x.exponent.min(y.exponent);
    let high = x.exponent.max(y.exponent);
    let to = low.max(high - 80);
    let (mut left, mut right) = (scaled_to(x, to), scaled_to(y, to));
    if x.exponent < to || y.exponent < to {
        // The tiny operand only breaks ties: keep a trailing nonzero digit for rounding.
        for digits in [&mut left, &mut right] {
            if digits.is_empty() {
                digits.push(1);
            }
        }
    }
    let width = left.len().max(right.len());
    let pad = |d: &mut Vec<u8>| {
        let missing = width - d.len();
        d.splice(0..0, std::iter::repeat_n(0, missing));
    };
    pad(&mut left);
    pad(&mut right);
    if x.negative == y.negative {
        let mut out = vec![0u8; width + 1];
        let mut carry = 0;
        for i in (0..width).rev() {
            let s = left[i] + right[i] + carry;
            out[i + 1] = s % 10;
            carry = s / 10;
        }
        out[0] = carry;
        Finite {
            negative: x.negative,
            digits: out,
            exponent: to,
        }
    } else {
        let (big, small, negative) = if left >= right {
            (left, right, x.negative)
        } else {
            (right, left, y.negative)
        };
        let mut out = vec![0u8; width];
        let mut borrow = 0i8;
        for i in (0..width).rev() {
            let mut d = big[i] as i8 - small[i] as i8 - borrow;
            borrow = i8::from(d < 0);
            if d < 0 {
                d += 10;
            }
            out[i] = d as u8;
        }
        let zero = out.iter().all(|&d| d == 0);
        Finite {
            negative: negative && !zero,
            digits: out,
            exponent: to,
        }
    }
}

fn product(x: &Finite, y: &Finite) -> Finite {
    let mut out = vec![0u32; x.digits.len() + y.digits.len()];
    for (i, &a) in x.digits.iter().enumerate().rev() {
        for (j, &b) in y.digits.iter().enumerate().rev() {
            out[i + j + 1] += u32::from(a) * u32::from(b);
        }
    }
    for k in (1..out.len()).rev() {
        let carry = out[k] / 10;
        out[k] %= 10;
        out[k - 1] += carry;
    }
    let zero = out.iter().all(|&d| d == 0);
    Finite {
        negative: x.negative != y.negative && !zero,
        digits: out.into_iter().map(|d| d as u8).collect(),
        exponent: x.exponent + y.exponent,
    }
}

/// `a ÷ b` as a decimal128, IEEE 754's way: an exact quotient at the ideal exponent (the
/// dividend's minus the divisor's, trailing zeros dropped toward it), others rounded to 34
/// digits half to even. `None` when an operand is not a number or the divisor is zero.
pub(crate) fn divide(a: &Bson, b: &Bson) -> Option<Bson> {
    let result = match (value(a)?, value(b)?) {
        (Value::NaN, _) | (_, Value::NaN) | (Value::Infinity { .. }, Value::Infinity { .. }) => {
            Value::NaN
        }
        (Value::Infinity { negative }, Value::Finite(f)) => Value::Infinity {
            negative: negative != f.negative,
        },
        (Value::Finite(f), Value::Infinity { negative }) => Value::Finite(Finite {
            negative: f.negative != negative,
            digits: Vec::new(),
            exponent: 0,
        }),
        (Value::Finite(x), Value::Finite(y)) => Value::Finite(quotient(&x, &y)?),
    };
    finish(result)
}

/// `a mod b` (the sign of `a`), exact, as a decimal128; `None` when an operand is not a
/// number, the divisor is zero, or the operands' exponents are too far apart to align.
pub(crate) fn remainder(a: &Bson, b: &Bson) -> Option<Bson> {
    let result = match (value(a)?, value(b)?) {
        (Value::Finite(x), Value::Finite(y)) => {
            let divisor = trimmed(&y.digits);
            if divisor.is_empty() {
                return None;
            }
            let low = x.exponent.min(y.exponent);
            if x.exponent - low > 200 || y.exponent - low > 200 {
                return None;
            }
            let (_, rest) = long_divide(&scaled_to(&x, low), &trimmed(&scaled_to(&y, low)));
            let zero = rest.iter().all(|&d| d == 0);
            Value::Finite(Finite {
                negative: x.negative && !zero,
                digits: rest,
                exponent: low,
            })
        }
        (Value::Finite(x), Value::Infinity { .. }) => Value::Finite(x),
        _ => Value::NaN,
    };
    finish(result)
}

/// The integral value below (`floor`) or above a decimal128, at exponent 0 or its own if
/// already integral.
pub(crate) fn integral(d: Decimal128, floor: bool) -> Bson {
    let Value::Finite(mut f) = decimal(d) else {
        return Bson::Decimal128(d);
    };
    if f.exponent >= 0 {
        return Bson::Decimal128(d);
    }
    let fraction = usize::try_from(-f.exponent)
        .unwrap_or(usize::MAX)
        .min(f.digits.len());
    let cut = f.digits.len() - fraction;
    let fractional = f.digits[cut..].iter().any(|&x| x != 0);
    f.digits.truncate(cut);
    f.exponent = 0;
    // Away from zero when the fraction is dropped on the far side.
    if fractional && f.negative == floor {
        increment(&mut f.digits);
    }
    if f.digits.iter().all(|&x| x == 0) {
        f.negative = false;
    }
    finish(Value::Finite(f)).unwrap_or(Bson::Decimal128(d))
}

/// A decimal128 rounded (half to even) or truncated to `places` decimal places (negative: to
/// tens, hundreds, ...); a value with no more places is unchanged.
pub(crate) fn to_places(d: Decimal128, places: i64, half_even: bool) -> Bson {
    let Value::Finite(mut f) = decimal(d) else {
        return Bson::Decimal128(d);
    };
    let target = -places;
    if f.exponent >= target {
        return Bson::Decimal128(d);
    }
    let drop = usize::try_from(target - f.exponent).unwrap_or(usize::MAX);
    let (kept, dropped): (Vec<u8>, Vec<u8>) = if drop >= f.digits.len() {
        let mut dropped = vec![0; drop - f.digits.len()];
        dropped.extend_from_slice(&f.digits);
        (Vec::new(), dropped)
    } else {
        let cut = f.digits.len() - drop;
        (f.digits[..cut].to_vec(), f.digits[cut..].to_vec())
    };
    f.digits = kept;
    f.exponent = target;
    if half_even {
        let first = dropped.first().copied().unwrap_or(0);
        let rest = dropped.iter().skip(1).any(|&x| x != 0);
        let odd = f.digits.last().is_some_and(|x| x % 2 == 1);
        if first > 5 || (first == 5 && (rest || odd)) {
            increment(&mut f.digits);
        }
    }
    if f.digits.iter().all(|&x| x == 0) {
        f.negative = false;
    }
    finish(Value::Finite(f)).unwrap_or(Bson::Decimal128(d))
}

fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

fn finish(result: Value) -> Option<Bson> {
    let text = match result {
        Value::NaN => "NaN".to_owned(),
        Value::Infinity { negative } => if negative { "-Infinity" } else { "Infinity" }.to_owned(),
        Value::Finite(f) => render(round(f)),
    };
    text.parse::<Decimal128>().ok().map(Bson::Decimal128)
}

fn trimmed(digits: &[u8]) -> Vec<u8> {
    let leading = digits.iter().take_while(|&&d| d == 0).count();
    digits[leading..].to_vec()
}

fn quotient(x: &Finite, y: &Finite) -> Option<Finite> {
    let divisor = trimmed(&y.digits);
    if divisor.is_empty() {
        return None;
    }
    let negative = x.negative != y.negative;
    let ideal = x.exponent - y.exponent;
    let dividend = trimmed(&x.digits);
    if dividend.is_empty() {
        return Some(Finite {
            negative,
            digits: Vec::new(),
            exponent: ideal,
        });
    }
    // Enough digits for 34 significant ones, a rounding digit and a sticky remainder.
    let extra = (divisor.len() + DIGITS + 1).saturating_sub(dividend.len());
    let mut scaled = dividend;
    scaled.extend(std::iter::repeat_n(0, extra));
    let (mut digits, rest) = long_divide(&scaled, &divisor);
    let mut exponent = ideal - extra as i64;
    if rest.iter().any(|&d| d != 0) {
        // Inexact: a trailing nonzero digit tells the rounding the remainder was not zero.
        digits.push(1);
        exponent -= 1;
    } else {
        while exponent < ideal && digits.last() == Some(&0) {
            digits.pop();
            exponent += 1;
        }
    }
    Some(Finite {
        negative,
        digits,
        exponent,
    })
}

/// Schoolbook division of digit strings: the quotient's digits and the remainder's.
fn long_divide(dividend: &[u8], divisor: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let greater_or_equal = |a: &[u8], b: &[u8]| a.len() > b.len() || (a.len() == b.len() && a >= b);
    let mut rest: Vec<u8> = Vec::new();
    let mut quotient = Vec::with_capacity(dividend.len());
    for &d in dividend {
        rest.push(d);
        rest = trimmed(&rest);
        let mut digit = 0u8;
        while greater_or_equal(&rest, divisor) {
            rest = subtract(&rest, divisor);
            digit += 1;
        }
        quotient.push(digit);
    }
    (quotient, rest)
}

/// `a - b` for digit strings with `a >= b`, leading zeros trimmed.
fn subtract(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = a.to_vec();
    let offset = a.len() - b.len();
    let mut borrow = 0u8;
    for i in (0..a.len()).rev() {
        let sub = if i >= offset { b[i - offset] } else { 0 } + borrow;
        if out[i] >= sub {
            out[i] -= sub;
            borrow = 0;
        } else {
            out[i] = out[i] + 10 - sub;
            borrow = 1;
        }
    }
    trimmed(&out)
}

#[cfg(test)]
mod tests {
    use bson::{Bson, Decimal128};

    use super::{combine, divide, integral, remainder, to_places};

    fn d(s: &str) -> Bson {
        Bson::Decimal128(s.parse::<Decimal128>().unwrap())
    }

    #[test]
    fn decimal_sums_and_products_are_exact_then_rounded() {
        assert_eq!(combine(&d("0.1"), &d("0.2"), false), Some(d("0.3")));
        assert_eq!(combine(&d("1.50"), &Bson::Int32(2), false), Some(d("3.50")));
        assert_eq!(combine(&d("-5"), &Bson::Int64(3), false), Some(d("-2")));
        assert_eq!(combine(&d("1.5"), &Bson::Int32(3), true), Some(d("4.5")));
        let mixed = combine(&d("0.1"), &Bson::Double(0.2), false).unwrap();
        assert_eq!(mixed.to_string(), "0.300000000000000", "{mixed}");
        // 35 nines plus one rounds into 34 digits.
        assert_eq!(
            combine(
                &d("9999999999999999999999999999999999"),
                &Bson::Int32(1),
                false
            ),
            Some(d("1.000000000000000000000000000000000E34"))
        );
        assert_eq!(
            combine(&d("Infinity"), &Bson::Int32(1), false),
            Some(d("Infinity"))
        );
        assert_eq!(combine(&d("NaN"), &Bson::Int32(1), true), Some(d("NaN")));
        assert_eq!(combine(&Bson::String("x".into()), &d("1"), false), None);
    }

    #[test]
    fn decimal_quotients_are_exact_at_the_ideal_exponent_or_rounded() {
        assert_eq!(divide(&d("1"), &d("4")), Some(d("0.25")));
        assert_eq!(divide(&d("6.0"), &Bson::Int32(2)), Some(d("3.0")));
        assert_eq!(divide(&d("100"), &d("10")), Some(d("10")));
        assert_eq!(
            divide(&d("1"), &d("3")),
            Some(d("0.3333333333333333333333333333333333"))
        );
        assert_eq!(
            divide(&d("2"), &d("3")),
            Some(d("0.6666666666666666666666666666666667"))
        );
        assert_eq!(divide(&d("-1"), &d("8")), Some(d("-0.125")));
        assert_eq!(divide(&d("1"), &d("0")), None);
        assert_eq!(remainder(&d("7.5"), &d("2")), Some(d("1.5")));
        assert_eq!(remainder(&d("-7"), &Bson::Int32(3)), Some(d("-1")));
        assert_eq!(integral("1.5".parse().unwrap(), true), d("1"));
        assert_eq!(integral("-1.5".parse().unwrap(), true), d("-2"));
        assert_eq!(integral("1.2".parse().unwrap(), false), d("2"));
        assert_eq!(integral("-1.2".parse().unwrap(), false), d("-1"));
        assert_eq!(integral("9.9".parse().unwrap(), false), d("10"));
        assert_eq!(to_places("2.5".parse().unwrap(), 0, true), d("2"));
        assert_eq!(to_places("3.5".parse().unwrap(), 0, true), d("4"));
        assert_eq!(to_places("1.2345".parse().unwrap(), 2, true), d("1.23"));
        assert_eq!(to_places("1.2355".parse().unwrap(), 3, true), d("1.236"));
        assert_eq!(to_places("1250".parse().unwrap(), -2, true), d("1.2E3"));
        assert_eq!(to_places("-1.99".parse().unwrap(), 1, false), d("-1.9"));
        assert_eq!(to_places("0.04".parse().unwrap(), 1, true), d("0.0"));
    }
}
