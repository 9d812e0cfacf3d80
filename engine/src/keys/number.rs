//! The key encoding of numbers: compact for the integers and doubles that fill indexes, exact for
//! every value (decimal128 included), and the same bytes for equal values of any type.
//!
//! After the number tag comes a class byte, then a payload. The classes, in order: NaN,
//! negative infinity, the negative magnitude classes, zero, the positive magnitude classes,
//! positive infinity. A finite non-zero magnitude `m` falls in one of these classes:
//! - [`TINY`] (below the smallest double) and [`BEYOND`] (above the largest): `m` as an exact
//!   decimal (only a decimal128 gets there);
//! - [`SMALL`] (`m < 1`) and [`HUGE`] (`2^64 ≤ m ≤ f64::MAX`): `D`, the largest double not above
//!   `m`, as its eight IEEE bytes big-endian (for positive doubles they order as the values
//!   do), then the tail of `m − D`;
//! - `SMALL + n` for `1 ≤ m < 2^64`, `n` in 1..=8: the integer part `I` in the fewest big-endian
//!   bytes that hold it (`n`, so a longer integer part is a larger class), then [`END`] when `m`
//!   is an integer; otherwise [`MORE`], the first 56 bits of the fraction `f = m − I` (seven
//!   bytes holding `⌊f·2^56⌋`) and the tail of `f·2^56 − ⌊f·2^56⌋`;
//! - the tail of a remainder `r`: [`END`] when `r = 0`, else [`MORE`] and `r` as an exact decimal
//!   (its exponent in one byte `0x80 + exp` within ±100, else 0xFF or 0x00 and a biased
//!   big-endian u16; then its digits two per byte, `1 + 10·d₁ + d₂`; then [`END`]).
//!
//! A negative number takes the mirror of its magnitude's class and its payload inverted, so a
//! larger magnitude sorts lower. Every double and every int32 and int64 ends without a tail (a
//! double is its integer part and at most 52 fraction bits, or its own `D`); a decimal128 has
//! one when neither its integer part with 56 fraction bits nor the double below holds it
//! exactly. So a key without a tail need not be a double (2^30 + 2^-23 is not): decoding checks.
//! After the tag, integers take 3 to 10 bytes and doubles at most 17, where the exact decimal
//! digits of a double took up to about 390.

use bson::RawBsonRef;

use crate::number::{Decimal, Number};

/// Ends a value, or says that nothing more follows.
const END: u8 = 0x00;
/// Says that a fraction or a remainder follows.
const MORE: u8 = 0x01;

const NAN: u8 = 0x01;
const NEG_INFINITY: u8 = 0x02;
const ZERO: u8 = 0x40;
const POS_INFINITY: u8 = 0x7E;
/// Positive magnitudes below the smallest double (5e-324).
const TINY: u8 = 0x41;
/// Positive magnitudes below 1.
const SMALL: u8 = 0x42;
/// Positive magnitudes from 2^64 to the largest double; `SMALL + 1..=SMALL + 8` lie between.
const HUGE: u8 = SMALL + 9;
/// Positive magnitudes above the largest double.
const BEYOND: u8 = HUGE + 1;

/// 2^64 as a double.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
/// 2^56 as a double: a fraction times it gives its first 56 bits.
const TWO_POW_56: f64 = 72_057_594_037_927_936.0;

/// The class of a negative magnitude: the mirror of its positive class around [`ZERO`].
fn mirrored(class: u8) -> u8 {
    2 * ZERO - class
}

/// Appends the payload of a number (the bytes after its tag). Callers pass values of the number
/// bracket; anything else encodes as NaN.
pub(super) fn encode(out: &mut Vec<u8>, v: RawBsonRef<'_>) {
    match v {
        RawBsonRef::Int32(x) => integer(out, x < 0, u64::from(x.unsigned_abs())),
        RawBsonRef::Int64(x) => integer(out, x < 0, x.unsigned_abs()),
        RawBsonRef::Double(x) => double(out, x),
        RawBsonRef::Decimal128(d) => exact(out, &Number::from_decimal128(d)),
        _ => out.push(NAN),
    }
}

/// Writes the class (mirrored when negative) and the payload `write` appends (inverted when
/// negative).
fn signed(out: &mut Vec<u8>, negative: bool, class: u8, write: impl FnOnce(&mut Vec<u8>)) {
    out.push(if negative { mirrored(class) } else { class });
    let start = out.len();
    write(out);
    if negative {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

fn integer(out: &mut Vec<u8>, negative: bool, m: u64) {
    if m == 0 {
        out.push(ZERO);
    } else {
        integer_class(out, negative, m, None);
    }
}

// The fraction test is exact on purpose: a double's fraction is exactly representable.
#[allow(clippy::float_cmp)]
fn double(out: &mut Vec<u8>, x: f64) {
    if x.is_nan() {
        out.push(NAN);
        return;
    }
    if x == 0.0 {
        out.push(ZERO);
        return;
    }
    if x.is_infinite() {
        out.push(if x > 0.0 { POS_INFINITY } else { NEG_INFINITY });
        return;
    }
    let m = x.abs();
    let none = zero();
    if !(1.0..TWO_POW_64).contains(&m) {
        double_class(out, x < 0.0, m, &none);
        return;
    }
    // `m` is below 2^64, so its integer part converts exactly; `m ≥ 1` puts every fraction bit
    // at 2^-52 or above, so the fraction times 2^56 is an integer below 2^56, exactly.
    let whole = m.trunc();
    let fraction = m - whole;
    let bits = (fraction != 0.0).then_some(((fraction * TWO_POW_56) as u64, &none));
    integer_class(out, x < 0.0, whole as u64, bits);
}

/// Any number, from its exact value: the rule the fast paths above must agree with (tested).
fn exact(out: &mut Vec<u8>, n: &Number) {
    let d = match n {
        Number::NaN => return out.push(NAN),
        Number::NegInfinity => return out.push(NEG_INFINITY),
        Number::PosInfinity => return out.push(POS_INFINITY),
        Number::Finite(d) if d.is_zero() => return out.push(ZERO),
        Number::Finite(d) => d,
    };
    if let Some((whole, fraction)) = integer_part(d) {
        let scaled = (!fraction.is_empty()).then(|| scale_fraction(&fraction));
        integer_class(
            out,
            d.negative,
            whole,
            scaled.as_ref().map(|(b, r)| (*b, r)),
        );
        return;
    }
    let below = largest_double_not_above(d);
    let rest = match Number::from_f64(below) {
        Number::Finite(b) => magnitude_minus(d, &b),
        _ => magnitude_minus(d, &zero()),
    };
    // Exact comparisons: `below` is one of these two doubles or far from both.
    let beyond = below.to_bits() == f64::MAX.to_bits() && !rest.is_zero();
    if below.to_bits() == 0 || beyond {
        let class = if beyond { BEYOND } else { TINY };
        let magnitude = Decimal {
            negative: false,
            ..d.clone()
        };
        signed(out, d.negative, class, |out| {
            encode_decimal(out, &magnitude);
        });
        return;
    }
    double_class(out, d.negative, below, &rest);
}

/// The class of a magnitude in `[1, 2^64)` and its payload: the integer part `whole` in the
/// fewest bytes, then [`END`] without a fraction, else [`MORE`], the fraction's first 56 bits
/// and the tail of what remains.
fn integer_class(out: &mut Vec<u8>, negative: bool, whole: u64, fraction: Option<(u64, &Decimal)>) {
    let n = 8 - (whole.leading_zeros() / 8) as usize;
    signed(out, negative, SMALL + n as u8, |out| {
        out.extend_from_slice(&whole.to_be_bytes()[8 - n..]);
        match fraction {
            None => out.push(END),
            Some((bits, rest)) => {
                out.push(MORE);
                out.extend_from_slice(&bits.to_be_bytes()[1..]);
                tail(out, rest);
            }
        }
    });
}

/// The class of a magnitude below 1 or from 2^64, given the largest double not above it, and
/// its payload: that double's bits and the tail of the rest.
fn double_class(out: &mut Vec<u8>, negative: bool, below: f64, rest: &Decimal) {
    let class = if below < 1.0 { SMALL } else { HUGE };
    signed(out, negative, class, |out| {
        out.extend_from_slice(&below.to_bits().to_be_bytes());
        tail(out, rest);
    });
}

/// Zero, as a decimal: the remainder of a value a class holds exactly.
fn zero() -> Decimal {
    Decimal::normalized(false, Vec::new(), 0)
}

/// For a magnitude in `[1, 2^64)`: its integer part and the digits of its fraction (the value
/// `0.digits`, no trailing zero). `None` for magnitudes outside.
fn integer_part(d: &Decimal) -> Option<(u64, Vec<u8>)> {
    // 0.d₁… × 10^exp is below 1 for exp ≤ 0 and at least 10^20 > 2^64 for exp > 20.
    if !(1..=20).contains(&d.exp) {
        return None;
    }
    let int_len = d.exp as usize;
    let mut whole: u128 = 0;
    for i in 0..int_len {
        whole = whole * 10 + u128::from(d.digits.get(i).copied().unwrap_or(0));
    }
    let whole = u64::try_from(whole).ok()?;
    let fraction = d.digits.get(int_len..).unwrap_or_default().to_vec();
    Some((whole, fraction))
}

/// Splits the fraction `0.digits` times 2^56 into its integer part (below 2^56) and what
/// remains, below 1.
fn scale_fraction(digits: &[u8]) -> (u64, Decimal) {
    // Schoolbook multiplication from the last digit; each step stays below 10·2^56 + 2^60.
    let mut product = Vec::with_capacity(digits.len() + 17);
    let mut carry: u128 = 0;
    for &d in digits.iter().rev() {
        carry += u128::from(d) << 56;
        product.push((carry % 10) as u8);
        carry /= 10;
    }
    let mut first: u64 = 0;
    let mut scale = 1u64;
    while carry > 0 {
        first += (carry % 10) as u64 * scale;
        scale = scale.saturating_mul(10);
        carry /= 10;
    }
    product.reverse();
    // `product` holds the digits after the point: `0.product` is `product × 10^-len`.
    (first, Decimal::normalized(false, product, 0))
}

/// The tail of a remainder (not negative): [`END`] for zero, else [`MORE`] and its exact decimal.
fn tail(out: &mut Vec<u8>, rest: &Decimal) {
    if rest.is_zero() {
        out.push(END);
    } else {
        out.push(MORE);
        encode_decimal(out, rest);
    }
}

/// The largest double whose magnitude is not above `|d|` (`f64::MAX` above every double).
fn largest_double_not_above(d: &Decimal) -> f64 {
    let digits: String = d.digits.iter().map(|&x| char::from(b'0' + x)).collect();
    let nearest: f64 = format!("0.{digits}e{}", d.exp).parse().unwrap_or(f64::MAX);
    let nearest = if nearest.is_infinite() {
        f64::MAX
    } else {
        nearest
    };
    // Round to nearest is at most half a step away: one step down corrects a rounding up.
    match Number::from_f64(nearest) {
        Number::Finite(b) if b.cmp_magnitude(d).is_gt() => f64::from_bits(nearest.to_bits() - 1),
        _ => nearest,
    }
}

/// `|a| − |b|` for `|a| ≥ |b|`, as a positive decimal (zero when equal).
fn magnitude_minus(a: &Decimal, b: &Decimal) -> Decimal {
    if b.is_zero() {
        return Decimal {
            negative: false,
            ..a.clone()
        };
    }
    // Both as integers of the same scale: digit i of a value with exponent e weighs
    // 10^(e − 1 − i), so positions run from `high` (exclusive) down to `low`.
    let low = (a.exp - a.digits.len() as i32).min(b.exp - b.digits.len() as i32);
    let high = a.exp.max(b.exp);
    let width = (high - low) as usize;
    let place = |d: &Decimal| {
        let mut v = vec![0u8; width];
        let offset = (high - d.exp) as usize;
        v[offset..offset + d.digits.len()].copy_from_slice(&d.digits);
        v
    };
    let (mut x, y) = (place(a), place(b));
    let mut borrow = 0u8;
    for (xi, &yi) in x.iter_mut().zip(&y).rev() {
        let subtrahend = yi + borrow;
        if *xi >= subtrahend {
            *xi -= subtrahend;
            borrow = 0;
        } else {
            *xi = *xi + 10 - subtrahend;
            borrow = 1;
        }
    }
    Decimal::normalized(false, x, high)
}

/// Exponents within ±[`SHORT_EXPONENT`] take one byte, `0x80 + exp`; others take 0xFF (above) or
/// 0x00 (below) and a biased big-endian u16. The first byte orders the three forms.
const SHORT_EXPONENT: i32 = 100;

/// A positive decimal: exponent, digit pairs, [`END`]. Order-preserving and prefix-free.
fn encode_decimal(out: &mut Vec<u8>, d: &Decimal) {
    if d.exp.abs() <= SHORT_EXPONENT {
        out.push((0x80 + d.exp) as u8);
    } else {
        out.push(if d.exp > 0 { 0xFF } else { 0x00 });
        // Exponents stay well inside i16 for every double and decimal128.
        let biased = (d.exp.clamp(-0x8000, 0x7FFF) + 0x8000) as u16;
        out.extend_from_slice(&biased.to_be_bytes());
    }
    for pair in d.digits.chunks(2) {
        let low = pair.get(1).copied().unwrap_or(0);
        out.push(1 + pair[0] * 10 + low);
    }
    out.push(END);
}

fn skip_decimal(byte: &mut impl FnMut() -> Option<u8>) -> Option<()> {
    if let 0x00 | 0xFF = byte()? {
        byte()?;
        byte()?;
    }
    loop {
        match byte()? {
            END => return Some(()),
            1..=100 => {}
            _ => return None,
        }
    }
}

/// A number read back from its key bytes: what rebuilding an int32, int64 or double needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Read {
    NaN,
    NegInfinity,
    Zero,
    PosInfinity,
    Finite {
        negative: bool,
        magnitude: Magnitude,
        /// Whether a tail followed: the number lies strictly between two doubles.
        tail: bool,
    },
}

/// The magnitude of a finite number without its tail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Magnitude {
    /// `D` of the classes below 1 and from 2^64.
    Double(f64),
    /// The integer part and, when there is one, the first 56 bits of the fraction.
    Integer { whole: u64, fraction: Option<u64> },
    /// Outside the doubles' range ([`TINY`], [`BEYOND`]): only a decimal128 holds it.
    Decimal,
}

impl Read {
    /// The double this key holds, when it holds one exactly.
    pub(super) fn double(self) -> Option<f64> {
        Some(match self {
            Read::NaN => f64::NAN,
            Read::NegInfinity => f64::NEG_INFINITY,
            Read::PosInfinity => f64::INFINITY,
            Read::Zero => 0.0,
            Read::Finite { tail: true, .. } => return None,
            Read::Finite {
                negative,
                magnitude,
                ..
            } => {
                let m = match magnitude {
                    Magnitude::Double(d) => d,
                    Magnitude::Integer { whole, fraction } => {
                        integer_and_fraction(whole, fraction)?
                    }
                    Magnitude::Decimal => return None,
                };
                if negative { -m } else { m }
            }
        })
    }

    /// The integer this key holds, when it holds one that fits an int64.
    pub(super) fn integer(self) -> Option<i64> {
        match self {
            Read::Zero => Some(0),
            Read::Finite {
                negative,
                magnitude:
                    Magnitude::Integer {
                        whole,
                        fraction: None,
                    },
                tail: false,
            } => {
                let v = i128::from(whole);
                i64::try_from(if negative { -v } else { v }).ok()
            }
            _ => None,
        }
    }
}

/// The double `whole + fraction / 2^56`, when it is one: a double's integer part and fraction
/// bits add back without rounding, and the sum is checked against both.
fn integer_and_fraction(whole: u64, fraction: Option<u64>) -> Option<f64> {
    let Some(fraction) = fraction else {
        let m = whole as f64;
        return (m < TWO_POW_64 && m as u64 == whole).then_some(m);
    };
    let m = whole as f64 + fraction as f64 / TWO_POW_56;
    let back = m.trunc();
    (back as u64 == whole && ((m - back) * TWO_POW_56) as u64 == fraction).then_some(m)
}

/// Reads one number's payload from `next` (bytes already in ascending form); `None` when the
/// bytes are not a number's encoding.
pub(super) fn read(next: &mut impl FnMut() -> Option<u8>) -> Option<Read> {
    let class = next()?;
    let (negative, class) = match class {
        NAN => return Some(Read::NaN),
        NEG_INFINITY => return Some(Read::NegInfinity),
        ZERO => return Some(Read::Zero),
        POS_INFINITY => return Some(Read::PosInfinity),
        c if (TINY..=BEYOND).contains(&c) => (false, c),
        c if (mirrored(BEYOND)..=mirrored(TINY)).contains(&c) => (true, mirrored(c)),
        _ => return None,
    };
    let flip = if negative { 0xFF } else { 0x00 };
    let mut byte = || next().map(|b| b ^ flip);
    if class == TINY || class == BEYOND {
        skip_decimal(&mut byte)?;
        return Some(Read::Finite {
            negative,
            magnitude: Magnitude::Decimal,
            tail: false,
        });
    }
    let magnitude = if class == SMALL || class == HUGE {
        Magnitude::Double(f64::from_bits(take(&mut byte, 8)?))
    } else {
        let whole = take(&mut byte, usize::from(class - SMALL))?;
        match byte()? {
            END => {
                return Some(Read::Finite {
                    negative,
                    magnitude: Magnitude::Integer {
                        whole,
                        fraction: None,
                    },
                    tail: false,
                });
            }
            MORE => Magnitude::Integer {
                whole,
                fraction: Some(take(&mut byte, 7)?),
            },
            _ => return None,
        }
    };
    let tail = match byte()? {
        END => false,
        MORE => {
            skip_decimal(&mut byte)?;
            true
        }
        _ => return None,
    };
    Some(Read::Finite {
        negative,
        magnitude,
        tail,
    })
}

/// The next `n` bytes as a big-endian integer.
fn take(byte: &mut impl FnMut() -> Option<u8>, n: usize) -> Option<u64> {
    let mut v = 0u64;
    for _ in 0..n {
        v = (v << 8) | u64::from(byte()?);
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_back(bytes: Vec<u8>) -> Read {
        let mut it = bytes.into_iter();
        read(&mut || it.next()).expect("readable")
    }

    fn fast(v: RawBsonRef<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, v);
        out
    }

    fn by_value(v: RawBsonRef<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        exact(&mut out, &crate::order::exact_number(v));
        out
    }

    /// Law: the fast paths for int32, int64 and double write what the exact rule writes.
    #[test]
    fn fast_paths_agree_with_the_exact_rule() {
        let mut doubles = vec![
            0.5,
            1.0,
            1.5,
            0.1,
            1234.56,
            255.999,
            256.0,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            TWO_POW_64,
            TWO_POW_64 - 2048.0,
            9_007_199_254_740_993.0,
            -0.0,
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f64::from_bits(state);
            if x.is_finite() {
                doubles.push(x);
            }
            doubles.push((state % 100_000_000) as f64 / 100.0);
        }
        for x in doubles.into_iter().flat_map(|x| [x, -x]) {
            let v = RawBsonRef::Double(x);
            assert_eq!(fast(v), by_value(v), "{x:e}");
            let back = read_back(fast(v)).double().unwrap();
            assert_eq!(back.to_bits(), (x + 0.0).to_bits(), "{x:e}");
        }
        for i in [
            0,
            1,
            -1,
            255,
            256,
            i64::MAX,
            i64::MIN,
            1 << 53,
            (1 << 53) + 1,
        ] {
            let v = RawBsonRef::Int64(i);
            assert_eq!(fast(v), by_value(v), "{i}");
            assert_eq!(read_back(fast(v)).integer(), Some(i));
        }
    }

    #[test]
    fn decimals_between_doubles_carry_a_tail() {
        let dec = |s: &str| RawBsonRef::Decimal128(s.parse().unwrap());
        // One tenth lies just above the double below it and below the double 0.1.
        let tenth = fast(dec("0.1"));
        assert!(tenth < fast(RawBsonRef::Double(0.1)));
        let below = f64::from_bits(0.1f64.to_bits() - 1);
        assert!(tenth > fast(RawBsonRef::Double(below)));
        let back = read_back(tenth);
        assert!(matches!(back, Read::Finite { tail: true, .. }));
        assert_eq!(back.double(), None);
        // Equal values of different types share their bytes.
        assert_eq!(fast(dec("0.5")), fast(RawBsonRef::Double(0.5)));
        assert_eq!(fast(dec("-7.00")), fast(RawBsonRef::Int32(-7)));
        assert_eq!(fast(dec("1E+400")), by_value(dec("1E+400")));
        assert!(fast(dec("1E+400")) > fast(RawBsonRef::Double(f64::MAX)));
        assert!(fast(dec("1E+400")) < fast(dec("1.1E+400")));
        assert!(fast(dec("1E-400")) < fast(RawBsonRef::Double(5e-324)));
        assert!(fast(dec("1E-400")) > fast(dec("9E-401")));
        assert!(fast(dec("1E-400")) > fast(RawBsonRef::Int32(0)));
        assert!(fast(dec("-1E+400")) < fast(RawBsonRef::Double(-f64::MAX)));
        // Outside the doubles' range a decimal is held as itself: short, and no double.
        let widest = fast(dec("9.999999999999999999999999999999999E+6144"));
        assert!(widest.len() < 24, "{} bytes", widest.len());
        assert_eq!(read_back(widest).double(), None);
        // No tail, and still no double: 2^30 + 2^-23 fits in 56 fraction bits.
        let between = read_back(fast(dec("1073741824.00000011920928955078125")));
        assert!(matches!(between, Read::Finite { tail: false, .. }));
        assert_eq!(between.double(), None);
    }

    #[test]
    fn common_values_are_short() {
        assert_eq!(fast(RawBsonRef::Int32(7)).len(), 3);
        assert_eq!(fast(RawBsonRef::Int64(123_456)).len(), 5);
        assert_eq!(fast(RawBsonRef::Double(1234.56)).len(), 12);
        assert_eq!(fast(RawBsonRef::Double(0.37)).len(), 10);
    }
}
