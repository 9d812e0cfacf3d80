//! The bitwise query operators, `$bitsAllSet`, `$bitsAnySet`, `$bitsAllClear` and
//! `$bitsAnyClear`, as MongoDB's manual defines them.
//!
//! The operand names bit positions three ways: a non-negative number whose set bits are the
//! positions, a `BinData` whose set bits are (byte `i`, bit `j` is position `8i + j`), or an
//! array of non-negative positions. A field matches when it holds a number representable as a
//! 64-bit integer (two's complement, so a negative number has every bit above 63 set) or a
//! `BinData` (bits past its end are clear); no other type matches.

use bson::{Bson, RawBsonRef};

use crate::error::FilterError;

/// Which bits must be set or clear, and whether all or any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitTest {
    AllSet,
    AnySet,
    AllClear,
    AnyClear,
}

/// A bitwise operator with its positions, sorted and without repeats.
#[derive(Debug, Clone)]
pub struct Bits {
    pub test: BitTest,
    pub positions: Vec<u32>,
}

impl BitTest {
    pub(crate) fn from_operator(op: &str) -> Option<BitTest> {
        Some(match op {
            "$bitsAllSet" => BitTest::AllSet,
            "$bitsAnySet" => BitTest::AnySet,
            "$bitsAllClear" => BitTest::AllClear,
            "$bitsAnyClear" => BitTest::AnyClear,
            _ => return None,
        })
    }
}

impl Bits {
    /// The operator `op` (one of the four) over its operand.
    pub(crate) fn parse(
        path: &str,
        op: &str,
        test: BitTest,
        arg: &Bson,
    ) -> Result<Bits, FilterError> {
        let error = |reason: String| FilterError::new(path, op, reason);
        let mut positions = match arg {
            Bson::Binary(b) => set_bits(&b.bytes),
            Bson::Array(items) => items
                .iter()
                .map(|item| {
                    position(item).ok_or_else(|| {
                        error(format!(
                            "bit positions must be non-negative 32-bit integers, not {item}"
                        ))
                    })
                })
                .collect::<Result<Vec<u32>, FilterError>>()?,
            number => {
                let mask = mask(number).ok_or_else(|| error(format!(
                    "takes a non-negative 64-bit integer, a BinData or an array of bit positions, not {number}"
                )))?;
                set_bits(&mask.to_le_bytes())
            }
        };
        positions.sort_unstable();
        positions.dedup();
        Ok(Bits { test, positions })
    }

    /// Whether one value (not an array's elements) passes.
    pub(crate) fn matches(&self, value: RawBsonRef<'_>) -> bool {
        let field = match value {
            RawBsonRef::Binary(b) => FieldBits::Bytes(b.bytes),
            other => match integer(other) {
                Some(n) => FieldBits::Integer(n),
                None => return false,
            },
        };
        let mut positions = self.positions.iter().copied();
        match self.test {
            BitTest::AllSet => positions.all(|p| field.bit(p)),
            BitTest::AnySet => positions.any(|p| field.bit(p)),
            BitTest::AllClear => positions.all(|p| !field.bit(p)),
            BitTest::AnyClear => positions.any(|p| !field.bit(p)),
        }
    }
}

/// The bits a field's value offers.
enum FieldBits<'a> {
    Bytes(&'a [u8]),
    Integer(i64),
}

impl FieldBits<'_> {
    fn bit(&self, p: u32) -> bool {
        match self {
            FieldBits::Bytes(bytes) => bytes
                .get((p / 8) as usize)
                .is_some_and(|byte| byte >> (p % 8) & 1 == 1),
            FieldBits::Integer(n) => {
                if p >= 64 {
                    *n < 0
                } else {
                    n >> p & 1 == 1
                }
            }
        }
    }
}

/// The positions of the set bits of little-endian bytes.
fn set_bits(bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, byte) in bytes.iter().enumerate() {
        for j in 0..8 {
            if byte >> j & 1 == 1 {
                // A BinData in a filter is under 16 MB, so its bit positions fit in 32 bits.
                out.push(u32::try_from(i * 8 + j).unwrap_or(u32::MAX));
            }
        }
    }
    out
}

/// A bit position of the array form: a whole, non-negative number that fits in 32 bits.
fn position(item: &Bson) -> Option<u32> {
    let n = whole(item)?;
    u32::try_from(n).ok().filter(|&p| i32::try_from(p).is_ok())
}

/// A numeric bitmask: whole and non-negative.
fn mask(number: &Bson) -> Option<u64> {
    u64::try_from(whole(number)?).ok()
}

/// A number of the operand as a 64-bit integer, when it is whole and in range.
fn whole(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) => double_as_integer(*d),
        Bson::Decimal128(d) => d
            .to_string()
            .parse::<f64>()
            .ok()
            .and_then(double_as_integer),
        _ => None,
    }
}

/// A stored number as a 64-bit integer; a fraction, NaN or a value out of range matches nothing.
fn integer(v: RawBsonRef<'_>) -> Option<i64> {
    match v {
        RawBsonRef::Int32(i) => Some(i64::from(i)),
        RawBsonRef::Int64(i) => Some(i),
        RawBsonRef::Double(d) => double_as_integer(d),
        RawBsonRef::Decimal128(d) => d
            .to_string()
            .parse::<f64>()
            .ok()
            .and_then(double_as_integer),
        _ => None,
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
fn double_as_integer(d: f64) -> Option<i64> {
    // 2^63 is exactly representable; every whole double below it converts exactly.
    let in_range = (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d);
    (in_range && d.fract() == 0.0).then_some(d as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Binary, spec::BinarySubtype};

    fn bits(op: &str, arg: Bson) -> Bits {
        Bits::parse("a", op, BitTest::from_operator(op).unwrap(), &arg).unwrap()
    }

    #[test]
    fn the_three_operand_forms_name_the_same_positions() {
        let binary = Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![0b0010_0010],
        });
        for arg in [
            Bson::Int32(34),
            Bson::Array(vec![Bson::Int32(1), Bson::Int32(5)]),
            binary,
        ] {
            assert_eq!(bits("$bitsAllSet", arg).positions, [1, 5]);
        }
    }

    #[test]
    fn negative_numbers_have_every_high_bit_set() {
        let high = bits(
            "$bitsAllSet",
            Bson::Array(vec![Bson::Int32(63), Bson::Int32(200)]),
        );
        assert!(high.matches(RawBsonRef::Int32(-1)));
        assert!(!high.matches(RawBsonRef::Int64(i64::MAX)));
        let clear = bits("$bitsAllClear", Bson::Array(vec![Bson::Int32(200)]));
        assert!(clear.matches(RawBsonRef::Int32(5)));
    }

    #[test]
    fn fractions_and_other_types_match_nothing() {
        for test in [
            "$bitsAllSet",
            "$bitsAnySet",
            "$bitsAllClear",
            "$bitsAnyClear",
        ] {
            let b = bits(test, Bson::Int32(1));
            assert!(!b.matches(RawBsonRef::Double(1.5)));
            assert!(!b.matches(RawBsonRef::String("1")));
            assert!(!b.matches(RawBsonRef::Double(f64::NAN)));
        }
        assert!(bits("$bitsAllSet", Bson::Int32(1)).matches(RawBsonRef::Double(3.0)));
    }

    #[test]
    fn bad_operands_are_refused() {
        for arg in [Bson::Int32(-1), Bson::Double(1.5), Bson::String("x".into())] {
            assert!(Bits::parse("a", "$bitsAllSet", BitTest::AllSet, &arg).is_err());
        }
        let negative = Bson::Array(vec![Bson::Int32(-1)]);
        assert!(Bits::parse("a", "$bitsAllSet", BitTest::AllSet, &negative).is_err());
    }
}
