//! Decimal128 arithmetic for `$inc` and `$mul`: exact on the operands' decimal values, then
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

#[cfg(test)]
mod tests {
    use bson::{Bson, Decimal128};

    use super::combine;

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
}
