//! `$sqrt`, `$exp`, `$ln`, `$log10`, `$log` and `$pow` in decimal, as MongoDB computes them
//! when an operand is a decimal128: in decimal128 (34 significant digits, half to even), with a
//! decimal result. The values come from `dashu-float`, which rounds correctly; MongoDB's own
//! library (Intel's) can be one unit off in the last digit of a logarithm, where this engine
//! gives the correctly rounded digit.
//!
//! Rules from MongoDB:
//! - Operands: a decimal128 as it is, an integer exactly, a double rounded to 15 significant
//!   digits (see `update::decimal`). `$log` and `$pow` compute in decimal when either operand
//!   is a decimal.
//! - `$ln`, `$log10` and `$log` compute in decimal only for arguments (and bases) above zero
//!   (`$log`: a base other than 1); the rest (NaN, zero, negatives, minus infinity) go to the
//!   double computation, which gives a double NaN or the operator's error.
//! - How results are written: an exact `$sqrt` takes the exponent closest to half the
//!   argument's (`$sqrt` of 30.25 is 5.5, of 1.0 is 1.0); exact `$exp`, `$ln` and `$log10`
//!   results are whole numbers written without a fraction (`$log10` of 100 is 2); inexact
//!   results have all 34 digits. `$log` is the quotient of the two natural logarithms, each
//!   rounded, as decimal division writes it. `$pow` writes every result with 34 digits, a zero
//!   as `0E-6176` (MongoDB adds a zero of the smallest exponent to it).
//! - Beyond decimal128's range a result is an infinity, or a zero (or a subnormal) below it.

use bson::{Bson, Decimal128};
use dashu_float::round::mode::HalfEven;
use dashu_float::{Context, FpError, Repr};
use dashu_int::IBig;

use crate::update::decimal::{Operand, divide, operand};

/// Decimal128's precision.
const DIGITS: usize = 34;
/// The smallest exponent of a decimal128's coefficient (subnormals included).
const MIN_EXPONENT: i64 = -6176;
/// The largest exponent of a decimal128's coefficient.
const MAX_EXPONENT: i64 = 6111;
/// The largest adjusted exponent (of the first digit): 9.99…E+6144 is the largest value.
const MAX_ADJUSTED: i64 = 6144;

/// The unary operators with a decimal form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unary {
    Sqrt,
    Exp,
    Ln,
    Log10,
}

fn context() -> Context<HalfEven> {
    Context::new(DIGITS)
}

/// A finite operand as dashu's decimal representation.
fn repr(negative: bool, coefficient: u128, exponent: i64) -> Repr<10> {
    let magnitude = IBig::from(coefficient);
    let significand = if negative { -magnitude } else { magnitude };
    Repr::new(significand, isize::try_from(exponent).unwrap_or(0))
}

/// `op` of a decimal128 argument; `None` when MongoDB computes it in doubles instead (`$sqrt`
/// of a negative, `$ln` and `$log10` of NaN or of what is not above zero), which then gives
/// the double result or the operator's error.
pub(crate) fn unary(op: Unary, x: Decimal128) -> Option<Bson> {
    let (negative, coefficient, exponent) = match operand(&Bson::Decimal128(x))? {
        Operand::NaN => {
            return matches!(op, Unary::Sqrt | Unary::Exp).then(nan);
        }
        Operand::Infinity { negative: false } => return Some(infinity(false)),
        Operand::Infinity { negative: true } => {
            // exp(-inf) is an exact zero; the others are errors of the double computation.
            return (op == Unary::Exp).then(|| write(false, "0", 0));
        }
        Operand::Finite {
            negative,
            coefficient,
            exponent,
        } => (negative, coefficient, exponent),
    };
    let zero = coefficient == 0;
    match op {
        Unary::Sqrt if negative && !zero => None,
        Unary::Sqrt if zero => Some(write(negative, "0", exponent.div_euclid(2))),
        Unary::Ln | Unary::Log10 if negative || zero => None,
        Unary::Exp if zero => Some(write(false, "1", 0)),
        Unary::Exp if !negative && adjusted(coefficient, exponent) > 5 => {
            // e^x overflows decimal128 from x ≈ 14149.
            Some(infinity(false))
        }
        Unary::Exp if negative && adjusted(coefficient, exponent) > 5 => {
            // And underflows below e^-14221, the smallest subnormal.
            Some(write(false, "0", MIN_EXPONENT))
        }
        _ => {
            let x = repr(negative, coefficient, exponent);
            let result = match op {
                Unary::Sqrt => context().sqrt(&x),
                Unary::Exp => context().exp(&x, None),
                Unary::Ln => context().ln(&x, None),
                Unary::Log10 => context().log10(&x, None),
            };
            let preferred = match op {
                Unary::Sqrt => exponent.div_euclid(2),
                _ => 0,
            };
            Some(match result {
                Ok(rounded) => {
                    let (value, exact) = rounded.value_with_exact();
                    encode(value.repr(), exact, preferred)
                }
                Err(_) => nan(),
            })
        }
    }
}

/// `$log` of `x` in `base` when either is a decimal: `ln(x) / ln(base)`, each rounded, divided
/// as decimals divide. `None` when the double computation decides (an argument or base not
/// above zero, a base of 1, NaN), or an operand is not a number.
pub(crate) fn log(x: &Bson, base: &Bson) -> Option<Bson> {
    let ln = |v: &Operand| -> Option<Bson> {
        match *v {
            Operand::Infinity { negative: false } => Some(infinity(false)),
            Operand::Finite {
                negative: false,
                coefficient,
                exponent,
            } if coefficient != 0 => {
                match context().ln(&repr(false, coefficient, exponent), None) {
                    Ok(rounded) => {
                        let (value, exact) = rounded.value_with_exact();
                        Some(encode(value.repr(), exact, 0))
                    }
                    Err(_) => None,
                }
            }
            _ => None,
        }
    };
    let (x, base) = (operand(x)?, operand(base)?);
    if let Operand::Finite {
        coefficient,
        exponent,
        ..
    } = base
        && is_one(coefficient, exponent)
    {
        return None;
    }
    divide(&ln(&x)?, &ln(&base)?)
}

/// `$pow` when either operand is a decimal. `Err` for zero raised to a negative power (the
/// exponent's sign decides: minus zero counts), MongoDB's error 28764; `Ok(None)` when an
/// operand is not a number.
pub(crate) fn pow(base: &Bson, exponent: &Bson) -> Result<Option<Bson>, ()> {
    let (Some(b), Some(e)) = (operand(base), operand(exponent)) else {
        return Ok(None);
    };
    let sign_of = |v: &Operand| match *v {
        Operand::Finite { negative, .. } | Operand::Infinity { negative } => negative,
        Operand::NaN => false,
    };
    let zero = |v: &Operand| matches!(v, Operand::Finite { coefficient: 0, .. });
    if matches!(b, Operand::NaN) || matches!(e, Operand::NaN) {
        return Ok(Some(nan()));
    }
    if zero(&b) && sign_of(&e) {
        return Err(());
    }
    Ok(Some(match (b, e) {
        (_, Operand::Finite { coefficient: 0, .. }) => padded(false, "1", 0),
        (Operand::Finite { coefficient: 0, .. }, _) => zero_result(),
        (b, Operand::Infinity { negative }) => {
            // |b| above 1 grows without bound, below 1 shrinks to zero; ±1 stays 1.
            let magnitude = magnitude_vs_one(&b);
            match (magnitude, negative) {
                (std::cmp::Ordering::Equal, _) => padded(false, "1", 0),
                (std::cmp::Ordering::Greater, false) | (std::cmp::Ordering::Less, true) => {
                    infinity(false)
                }
                _ => zero_result(),
            }
        }
        (Operand::Infinity { negative }, e) => {
            let odd = odd_integer(&e);
            if sign_of(&e) {
                zero_result()
            } else {
                infinity(negative && odd)
            }
        }
        (
            Operand::Finite {
                negative: bn,
                coefficient: bc,
                exponent: bx,
            },
            Operand::Finite {
                negative: en,
                coefficient: ec,
                exponent: ex,
            },
        ) => {
            let negative_result = bn && odd_integer(&e);
            // log10 of the result's magnitude, roughly: past decimal128's range either way
            // the result is an infinity or zero, without computing it.
            let digits = (bc as f64).log10() + bx as f64;
            let power = (ec as f64) * 10f64.powi(i32::try_from(ex.clamp(-400, 400)).unwrap_or(0));
            let scale = if en { -power } else { power } * digits;
            if scale > (MAX_ADJUSTED + 2) as f64 {
                infinity(negative_result)
            } else if scale < (MIN_EXPONENT - 2) as f64 {
                zero_result()
            } else {
                match context().powf(&repr(bn, bc, bx), &repr(en, ec, ex), None) {
                    Ok(rounded) => {
                        let value = rounded.value();
                        let repr = value.repr();
                        let (negative, digits) = sign_and_digits(repr.significand());
                        padded(negative, &digits, repr.exponent() as i64)
                    }
                    Err(FpError::OutOfDomain | FpError::Indeterminate) => nan(),
                    Err(FpError::Overflow(_)) => infinity(negative_result),
                    Err(_) => zero_result(),
                }
            }
        }
        _ => nan(),
    }))
}

/// Whether `coefficient × 10^exponent` is 1.
fn is_one(coefficient: u128, exponent: i64) -> bool {
    let mut c = coefficient;
    let mut e = exponent;
    while c != 0 && c.is_multiple_of(10) {
        c /= 10;
        e += 1;
    }
    c == 1 && e == 0
}

/// How a number's magnitude compares with 1.
fn magnitude_vs_one(v: &Operand) -> std::cmp::Ordering {
    match *v {
        Operand::Finite {
            coefficient,
            exponent,
            ..
        } => {
            if coefficient == 0 {
                std::cmp::Ordering::Less
            } else if is_one(coefficient, exponent) {
                std::cmp::Ordering::Equal
            } else if adjusted(coefficient, exponent) >= 0 {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Less
            }
        }
        _ => std::cmp::Ordering::Greater,
    }
}

/// Whether a number is an odd integer.
fn odd_integer(v: &Operand) -> bool {
    let Operand::Finite {
        coefficient,
        exponent,
        ..
    } = *v
    else {
        return false;
    };
    if exponent > 0 {
        return false; // a multiple of 10
    }
    let scale = 10u128.checked_pow(u32::try_from(-exponent).unwrap_or(u32::MAX));
    match scale {
        Some(scale) => {
            coefficient.is_multiple_of(scale) && !(coefficient / scale).is_multiple_of(2)
        }
        None => false,
    }
}

/// The exponent of a number's first digit.
fn adjusted(coefficient: u128, exponent: i64) -> i64 {
    let digits = coefficient.checked_ilog10().map_or(1, |d| i64::from(d) + 1);
    exponent + digits - 1
}

fn sign_and_digits(significand: &IBig) -> (bool, String) {
    let text = significand.to_string();
    match text.strip_prefix('-') {
        Some(digits) => (true, digits.to_owned()),
        None => (false, text),
    }
}

/// A result as decimal128 writes it: exact ones toward the `preferred` exponent (trailing
/// zeros added while they fit), inexact ones with all 34 digits.
fn encode(value: &Repr<10>, exact: bool, preferred: i64) -> Bson {
    if value.is_infinite() {
        return infinity(value.sign() == dashu_int::Sign::Negative);
    }
    let (negative, digits) = sign_and_digits(value.significand());
    let exponent = value.exponent() as i64;
    if digits == "0" {
        return write(negative, "0", preferred);
    }
    if exact {
        let room = DIGITS.saturating_sub(digits.len()) as i64;
        let zeros = (exponent - preferred).clamp(0, room);
        let padded = format!("{digits}{}", "0".repeat(zeros as usize));
        return write(negative, &padded, exponent - zeros);
    }
    padded(negative, &digits, exponent)
}

/// `digits × 10^exponent` with zeros added up to 34 digits (or the smallest exponent).
fn padded(negative: bool, digits: &str, exponent: i64) -> Bson {
    let room = DIGITS.saturating_sub(digits.len()) as i64;
    let zeros = room.min(exponent - MIN_EXPONENT).max(0);
    let digits = format!("{digits}{}", "0".repeat(zeros as usize));
    write(negative, &digits, exponent - zeros)
}

/// `pow`'s zero: MongoDB adds `0E-6176`, which leaves a positive zero of that exponent.
fn zero_result() -> Bson {
    write(false, "0", MIN_EXPONENT)
}

fn nan() -> Bson {
    Bson::Decimal128(Decimal128::from_bytes([
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7c,
    ]))
}

fn infinity(negative: bool) -> Bson {
    let mut bytes = [0u8; 16];
    bytes[15] = if negative { 0xf8 } else { 0x78 };
    Bson::Decimal128(Decimal128::from_bytes(bytes))
}

/// `±digits × 10^exponent` (at most 34 digits) as a decimal128, brought into its range: above
/// it an infinity; an exponent above the largest gains trailing zeros; below the smallest the
/// last digits are rounded off, half to even (to zero, for what is below every subnormal).
fn write(negative: bool, digits: &str, exponent: i64) -> Bson {
    let mut digits = digits.trim_start_matches('0').to_owned();
    let mut exponent = exponent;
    if digits.is_empty() {
        let exponent = exponent.clamp(MIN_EXPONENT, MAX_EXPONENT);
        return parse(negative, "0", exponent);
    }
    if adjusted_of(&digits, exponent) > MAX_ADJUSTED {
        return infinity(negative);
    }
    if exponent > MAX_EXPONENT {
        let zeros = (exponent - MAX_EXPONENT) as usize;
        digits.push_str(&"0".repeat(zeros));
        exponent = MAX_EXPONENT;
    }
    if exponent < MIN_EXPONENT {
        let cut = usize::try_from(MIN_EXPONENT - exponent).unwrap_or(usize::MAX);
        digits = round_off(&digits, cut);
        exponent = MIN_EXPONENT;
    }
    parse(negative, &digits, exponent)
}

fn adjusted_of(digits: &str, exponent: i64) -> i64 {
    exponent + digits.len() as i64 - 1
}

/// `digits` with its last `cut` digits rounded off, half to even ("0" when nothing is left
/// and the dropped part is under one half).
fn round_off(digits: &str, cut: usize) -> String {
    if cut == 0 {
        return digits.to_owned();
    }
    let (kept, dropped) = if cut >= digits.len() {
        ("", digits.to_owned())
    } else {
        let (k, d) = digits.split_at(digits.len() - cut);
        (k, d.to_owned())
    };
    // What is dropped compared with one half of the last kept digit's unit.
    let padded_dropped = if cut > digits.len() {
        format!("{}{dropped}", "0".repeat(cut - digits.len()))
    } else {
        dropped
    };
    let first = padded_dropped.as_bytes()[0] - b'0';
    let rest = padded_dropped[1..].bytes().any(|b| b != b'0');
    let odd = kept.bytes().last().is_some_and(|b| (b - b'0') % 2 == 1);
    let up = first > 5 || (first == 5 && (rest || odd));
    let mut out: Vec<u8> = kept.bytes().map(|b| b - b'0').collect();
    if up {
        let mut i = out.len();
        loop {
            if i == 0 {
                out.insert(0, 1);
                break;
            }
            i -= 1;
            if out[i] == 9 {
                out[i] = 0;
            } else {
                out[i] += 1;
                break;
            }
        }
    }
    if out.is_empty() {
        return "0".to_owned();
    }
    out.iter().map(|d| char::from(b'0' + d)).collect()
}

fn parse(negative: bool, digits: &str, exponent: i64) -> Bson {
    let text = format!("{}{digits}E{exponent}", if negative { "-" } else { "" });
    text.parse::<Decimal128>()
        .map_or_else(|_| nan(), Bson::Decimal128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(v: &Bson) -> String {
        match v {
            Bson::Decimal128(d) => d.to_string(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn results_are_brought_into_decimal128s_range() {
        assert_eq!(text(&write(false, "1", 6145)), "Infinity");
        assert_eq!(text(&write(true, "99", 6144)), "-Infinity");
        assert_eq!(
            text(&write(false, "99", 6143)),
            "9.900000000000000000000000000000000E+6144"
        );
        // Above the largest exponent, trailing zeros carry the value.
        assert_eq!(text(&write(false, "12", 6120)), "1.2000000000E+6121");
        // Below the smallest, digits are rounded off, half to even.
        assert_eq!(text(&write(false, "125", -6178)), "1E-6176");
        assert_eq!(text(&write(false, "150", -6178)), "2E-6176");
        assert_eq!(text(&write(false, "250", -6178)), "2E-6176");
        assert_eq!(text(&write(false, "4", -6177)), "0E-6176");
        assert_eq!(text(&write(false, "6", -6177)), "1E-6176");
    }

    #[test]
    fn huge_and_tiny_arguments_do_not_compute() {
        let big: Decimal128 = "1E+6000".parse().unwrap();
        let small: Decimal128 = "-1E+6000".parse().unwrap();
        assert_eq!(text(&unary(Unary::Exp, big).unwrap()), "Infinity");
        assert_eq!(text(&unary(Unary::Exp, small).unwrap()), "0E-6176");
        let pow = pow(&Bson::Decimal128(big), &Bson::Decimal128(big))
            .unwrap()
            .unwrap();
        assert_eq!(text(&pow), "Infinity");
    }

    fn decimal() -> impl Strategy<Value = Bson> {
        prop_oneof![
            any::<[u8; 16]>().prop_map(|b| Bson::Decimal128(Decimal128::from_bytes(b))),
            (any::<i64>(), -40i64..40)
                .prop_map(|(c, e)| { Bson::Decimal128(format!("{c}E{e}").parse().unwrap()) }),
            any::<f64>().prop_map(Bson::Double),
            any::<i32>().prop_map(Bson::Int32),
        ]
    }

    proptest! {
        /// Any operands, canonical or not, give a decimal result or leave it to the double
        /// computation (`None`), never a panic.
        #[test]
        fn no_operand_panics(x in decimal(), y in decimal()) {
            let decimal = |v: Option<Bson>| v.is_none_or(|v| matches!(v, Bson::Decimal128(_)));
            if let Bson::Decimal128(d) = x {
                for op in [Unary::Sqrt, Unary::Exp, Unary::Ln, Unary::Log10] {
                    prop_assert!(decimal(unary(op, d)));
                }
            }
            prop_assert!(decimal(log(&x, &y)));
            if let Ok(result) = pow(&x, &y) {
                prop_assert!(decimal(result));
            }
        }
    }
}
