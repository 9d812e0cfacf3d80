//! Exact values of BSON numbers, so that int32, int64, double and decimal128 compare by value.
//!
//! Every finite double and every decimal128 is a finite decimal fraction, so each number is
//! viewed as `±0.d₁d₂…dₙ × 10^exp` with `d₁ ≠ 0` and `dₙ ≠ 0` (zero has no digits). Two numbers are
//! equal exactly when their views are equal, which is what lets [`crate::keys`] encode numbers of
//! different types to the same bytes.

use std::cmp::Ordering;

use bson::{Bson, Decimal128};

/// `n` as an int32 when it fits, else an int64: how MongoDB writes counts and whole results.
pub(crate) fn int_or_long(n: i64) -> Bson {
    i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32)
}

/// A whole number held by any numeric type: an int32, an int64, or a double or decimal without
/// a fraction within a long's range.
pub(crate) fn as_i64(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        #[allow(clippy::float_cmp, clippy::cast_possible_truncation)]
        Bson::Double(d) if d.trunc() == *d && d.abs() < 9.2e18 => Some(*d as i64),
        Bson::Decimal128(d) => {
            let text = d.to_string();
            text.parse().ok().or_else(|| {
                // `201.0` or `2.01E+2`: whole when its double is, within a long's range.
                let f: f64 = text.parse().ok()?;
                (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
            })
        }
        _ => None,
    }
}

/// 2^63, the first double above every int64.
const TWO_POW_63: f64 = (1u64 << 63) as f64;

/// A BSON number as an exact value. The derived order is MongoDB's: NaN below everything, then
/// negative infinity, the finite values, positive infinity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Number {
    NaN,
    NegInfinity,
    Finite(Decimal),
    PosInfinity,
}

/// A finite number `±0.digits × 10^exp`.
///
/// Invariant: `digits` holds values 0..=9 with no leading or trailing zero; zero is the empty
/// digit string with `negative == false` and `exp == 0`. Every constructor normalizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decimal {
    pub(crate) negative: bool,
    pub(crate) exp: i32,
    pub(crate) digits: Vec<u8>,
}

impl Decimal {
    pub(crate) fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Builds `±0.digits × 10^exp` from digits of an integer whose value is
    /// `±digits × 10^(exp - digits.len())`, trimming leading and trailing zeros.
    pub(crate) fn normalized(negative: bool, mut digits: Vec<u8>, exp: i32) -> Decimal {
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        let exp = exp - leading as i32;
        while digits.last() == Some(&0) {
            digits.pop();
        }
        if digits.is_empty() {
            return Decimal {
                negative: false,
                exp: 0,
                digits,
            };
        }
        Decimal {
            negative,
            exp,
            digits,
        }
    }

    /// The magnitude order, ignoring sign: by exponent, then digit by digit (a shorter digit
    /// string that is a prefix of a longer one is smaller, since the rest would be zeros).
    pub(crate) fn cmp_magnitude(&self, other: &Decimal) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => self
                .exp
                .cmp(&other.exp)
                .then_with(|| self.digits.cmp(&other.digits)),
        }
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let sign = |d: &Decimal| match (d.is_zero(), d.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        };
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if self.negative => other.cmp_magnitude(self),
            Ordering::Equal => self.cmp_magnitude(other),
            unequal => unequal,
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Decimal digits of an unsigned integer, most significant first.
fn digits_of(mut n: u128) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    while n > 0 {
        out.push((n % 10) as u8);
        n /= 10;
    }
    out.reverse();
    out
}

/// Builds a normalized decimal from `±n × 10^scale`.
fn scaled(negative: bool, n: u128, scale: i32) -> Decimal {
    let digits = digits_of(n);
    let count = digits.len() as i32;
    Decimal::normalized(negative, digits, count + scale)
}

impl Number {
    pub(crate) fn from_i64(v: i64) -> Number {
        Number::Finite(scaled(v < 0, u128::from(v.unsigned_abs()), 0))
    }

    // Exact float comparison is the point here: integral doubles take the integer path.
    #[allow(clippy::float_cmp)]
    pub(crate) fn from_f64(v: f64) -> Number {
        if v.is_nan() {
            return Number::NaN;
        }
        if v.is_infinite() {
            return if v > 0.0 {
                Number::PosInfinity
            } else {
                Number::NegInfinity
            };
        }
        if v == v.trunc() && v.abs() < TWO_POW_63 {
            return Number::from_i64(v as i64);
        }
        Number::Finite(exact_double(v))
    }

    pub(crate) fn from_decimal128(d: Decimal128) -> Number {
        let bits = u128::from_le_bytes(d.bytes());
        let negative = bits >> 127 == 1;
        let combination = (bits >> 122) & 0x1f;
        if combination == 0x1f {
            return Number::NaN;
        }
        if combination == 0x1e {
            return if negative {
                Number::NegInfinity
            } else {
                Number::PosInfinity
            };
        }
        let (exponent, coefficient) = if (bits >> 125) & 0b11 == 0b11 {
            // The coefficient would be 2^113 or more, over the 34-digit maximum: non-canonical,
            // which IEEE 754 reads as zero.
            (((bits >> 111) & 0x3fff) as i32, 0)
        } else {
            (((bits >> 113) & 0x3fff) as i32, bits & ((1u128 << 113) - 1))
        };
        let coefficient = if coefficient >= 10u128.pow(34) {
            0
        } else {
            coefficient
        };
        Number::Finite(scaled(negative, coefficient, exponent - 6176))
    }
}

/// The exact decimal expansion of a finite, non-integral (or huge) double.
fn exact_double(v: f64) -> Decimal {
    let bits = v.to_bits();
    let negative = bits >> 63 == 1;
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    let (mut mantissa, mut exp2) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), biased - 1075)
    };
    if mantissa == 0 {
        return scaled(false, 0, 0);
    }
    while mantissa & 1 == 0 && exp2 < 0 {
        mantissa >>= 1;
        exp2 += 1;
    }
    let mut big = BigDigits::from_u64(mantissa);
    if exp2 >= 0 {
        big.mul_pow(2, exp2 as u32);
        let digits = big.to_digits();
        let count = digits.len() as i32;
        Decimal::normalized(negative, digits, count)
    } else {
        // m × 2^-k = m × 5^k / 10^k
        let k = -exp2;
        big.mul_pow(5, k as u32);
        let digits = big.to_digits();
        let count = digits.len() as i32;
        Decimal::normalized(negative, digits, count - k)
    }
}

/// An unsigned big integer in base 10⁹ limbs, least significant first: just enough arithmetic
/// to expand a double exactly.
struct BigDigits(Vec<u64>);

const LIMB: u64 = 1_000_000_000;

impl BigDigits {
    fn from_u64(mut n: u64) -> Self {
        let mut limbs = Vec::new();
        while n > 0 {
            limbs.push(n % LIMB);
            n /= LIMB;
        }
        BigDigits(limbs)
    }

    fn mul_small(&mut self, factor: u64) {
        let mut carry = 0u64;
        for limb in &mut self.0 {
            let product = *limb * factor + carry;
            *limb = product % LIMB;
            carry = product / LIMB;
        }
        while carry > 0 {
            self.0.push(carry % LIMB);
            carry /= LIMB;
        }
    }

    /// Multiplies by `base^exp` for base 2 or 5, in chunks that keep each product in a u64.
    fn mul_pow(&mut self, base: u64, mut exp: u32) {
        let chunk = if base == 2 { 29 } else { 12 };
        while exp > 0 {
            let step = exp.min(chunk);
            self.mul_small(base.pow(step));
            exp -= step;
        }
    }

    fn to_digits(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len() * 9);
        for (i, limb) in self.0.iter().rev().enumerate() {
            let mut chunk = [0u8; 9];
            let mut n = *limb;
            for slot in chunk.iter_mut().rev() {
                *slot = (n % 10) as u8;
                n /= 10;
            }
            if i == 0 {
                let skip = chunk.iter().take_while(|&&d| d == 0).count();
                out.extend_from_slice(&chunk[skip..]);
            } else {
                out.extend_from_slice(&chunk);
            }
        }
        out
    }
}

/// Compares an int64 with a double exactly, without going through a lossy conversion.
pub(crate) fn cmp_i64_f64(i: i64, f: f64) -> Ordering {
    if f.is_nan() {
        return Ordering::Greater;
    }
    if f >= TWO_POW_63 {
        return Ordering::Less;
    }
    if f < -TWO_POW_63 {
        return Ordering::Greater;
    }
    let whole = f.trunc();
    // `whole` is integral and in i64's range, so the cast is exact. With equal integer parts the
    // fraction decides: a positive one puts `f` above the integer, a negative one below.
    match i.cmp(&(whole as i64)) {
        Ordering::Equal => {
            let frac = f - whole;
            if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        unequal => unequal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Number {
        Number::from_decimal128(s.parse::<Decimal128>().unwrap())
    }

    #[test]
    fn integers_and_doubles_agree() {
        assert_eq!(Number::from_i64(42), Number::from_f64(42.0));
        assert_eq!(Number::from_i64(0), Number::from_f64(-0.0));
        assert!(Number::from_f64(0.5) < Number::from_i64(1));
        assert!(Number::from_f64(-0.5) > Number::from_i64(-1));
        assert!(Number::from_f64(f64::NAN) < Number::from_f64(f64::NEG_INFINITY));
    }

    #[test]
    fn large_int64_compares_exactly_with_doubles() {
        let two53 = 9_007_199_254_740_992i64;
        assert!(Number::from_i64(two53 + 1) > Number::from_f64(two53 as f64));
        assert_eq!(cmp_i64_f64(two53 + 1, two53 as f64), Ordering::Greater);
        assert_eq!(cmp_i64_f64(i64::MAX, TWO_POW_63), Ordering::Less);
        assert_eq!(cmp_i64_f64(3, 3.5), Ordering::Less);
        assert_eq!(cmp_i64_f64(-3, -3.5), Ordering::Greater);
        assert_eq!(cmp_i64_f64(-3, -3.0), Ordering::Equal);
    }

    #[test]
    fn doubles_expand_exactly() {
        // 0.1 as a double is slightly above one tenth.
        assert!(Number::from_f64(0.1) > dec("0.1"));
        assert_eq!(Number::from_f64(0.5), dec("0.50"));
        // 1e300 as a double is slightly above 10^300; 2^100 is exact.
        assert!(Number::from_f64(1e300) > dec("1E300"));
        assert_eq!(
            Number::from_f64(2f64.powi(100)),
            dec("1267650600228229401496703205376")
        );
        assert!(Number::from_f64(5e-324) > Number::from_i64(0));
        assert!(Number::from_f64(5e-324) < dec("1E-323"));
    }

    #[test]
    fn decimal128_special_values() {
        assert_eq!(dec("NaN"), Number::NaN);
        assert_eq!(dec("-Infinity"), Number::NegInfinity);
        assert_eq!(dec("-0"), Number::from_i64(0));
        assert_eq!(dec("1.000"), Number::from_i64(1));
        assert!(dec("-1.5") < Number::from_i64(-1));
    }
}
