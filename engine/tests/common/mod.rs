//! Generators shared by the engine's property tests: BSON values of every type the order covers,
//! nested documents and arrays included; and scratch paths for the tests that use files.

#![allow(dead_code)]

use bson::spec::BinarySubtype;
use bson::{
    Binary, Bson, DateTime, Decimal128, Document, JavaScriptCodeWithScope, Regex, Timestamp,
};
use proptest::prelude::*;

pub fn string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["", "a", "b", "\0", "ab", "é", "z", "A"]),
        0..3,
    )
    .prop_map(|parts| parts.concat())
}

fn cstring() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "^", "x"]), 0..3)
        .prop_map(|p| p.concat())
}

/// Numbers chosen so that equal values of different types and close neighbours come up often.
pub fn number() -> impl Strategy<Value = Bson> {
    let edge_i64 = prop::sample::select(vec![
        0i64,
        1,
        -1,
        9_007_199_254_740_992,
        9_007_199_254_740_993,
        -9_007_199_254_740_993,
        i64::MAX,
        i64::MIN,
    ]);
    let small = -3i64..3;
    prop_oneof![
        small.clone().prop_map(|v| Bson::Int32(v as i32)),
        small.clone().prop_map(Bson::Int64),
        small.clone().prop_map(|v| Bson::Double(v as f64)),
        small.prop_map(|v| Bson::Decimal128(v.to_string().parse().unwrap())),
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        edge_i64.clone().prop_map(Bson::Int64),
        edge_i64.prop_map(|v| Bson::Double(v as f64)),
        any::<f64>().prop_map(Bson::Double),
        prop::sample::select(vec![
            0.5,
            -0.5,
            -0.0,
            0.1,
            1e-300,
            5e-324,
            1e308,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            (1u64 << 63) as f64,
        ])
        .prop_map(Bson::Double),
        decimal().prop_map(Bson::Decimal128),
    ]
}

/// Two numbers that are close or equal, of any two types: where an encoding that drops a digit
/// or a bit would show.
pub fn close_numbers() -> impl Strategy<Value = (Bson, Bson)> {
    let as_type = |v: i64, t: u8| match t {
        0 => i32::try_from(v).map_or(Bson::Int64(v), Bson::Int32),
        1 => Bson::Int64(v),
        2 => Bson::Double(v as f64),
        _ => Bson::Decimal128(v.to_string().parse().unwrap()),
    };
    let integers =
        (any::<i64>(), -20i64..20, 0u8..4, 0u8..4).prop_map(move |(base, delta, ta, tb)| {
            (as_type(base, ta), as_type(base.saturating_add(delta), tb))
        });
    let doubles = (any::<u64>(), -3i64..3).prop_map(|(bits, delta)| {
        let a = f64::from_bits(bits);
        let b = f64::from_bits(bits.wrapping_add_signed(delta));
        (Bson::Double(a), Bson::Double(b))
    });
    let decimals = ("[1-9][0-9]{0,30}", 0u8..10, -30i32..30).prop_map(|(digits, last, exp)| {
        let a: Decimal128 = format!("{digits}E{exp}").parse().unwrap();
        let b: Decimal128 = format!("{digits}{last}E{}", exp - 1).parse().unwrap();
        (Bson::Decimal128(a), Bson::Decimal128(b))
    });
    // A double beside the decimal that prints it (shortest round trip), or one digit longer:
    // the decimal lies a hair above or below the double, or equals it.
    let across = (any::<u64>(), 0u8..11).prop_filter_map("finite", |(bits, extra)| {
        let x = f64::from_bits(bits);
        let printed = format!("{x:e}");
        let (mantissa, exp) = printed.split_once('e')?;
        let mantissa = match extra {
            10 => mantissa.to_owned(),
            digit if mantissa.contains('.') => format!("{mantissa}{digit}"),
            digit => format!("{mantissa}.{digit}"),
        };
        let d: Decimal128 = format!("{mantissa}E{exp}").parse().ok()?;
        x.is_finite()
            .then_some((Bson::Double(x), Bson::Decimal128(d)))
    });
    prop_oneof![integers, doubles, decimals, across]
}

fn decimal() -> impl Strategy<Value = Decimal128> {
    prop_oneof![
        (any::<i64>(), -40i32..40).prop_map(|(c, e)| format!("{c}E{e}")),
        prop::sample::select(vec![
            "NaN",
            "Infinity",
            "-Infinity",
            "-0",
            "0.50",
            "1.000",
            "0.1"
        ])
        .prop_map(str::to_owned),
        ("[1-9][0-9]{0,33}", -6000i32..6000).prop_map(|(c, e)| format!("{c}E{e}")),
    ]
    .prop_map(|s| s.parse::<Decimal128>().unwrap())
}

pub fn leaf() -> impl Strategy<Value = Bson> {
    prop_oneof![
        Just(Bson::MinKey),
        Just(Bson::MaxKey),
        Just(Bson::Null),
        Just(Bson::Undefined),
        number(),
        number(),
        string().prop_map(Bson::String),
        string().prop_map(Bson::Symbol),
        (
            prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xFF]), 0..3),
            prop::sample::select(vec![0u8, 4, 0x80])
        )
            .prop_map(|(bytes, subtype)| Bson::Binary(Binary {
                subtype: BinarySubtype::from(subtype),
                bytes,
            })),
        prop::array::uniform12(prop::sample::select(vec![0u8, 1, 0xFF]))
            .prop_map(|b| Bson::ObjectId(bson::oid::ObjectId::from_bytes(b))),
        any::<bool>().prop_map(Bson::Boolean),
        any::<i64>().prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms))),
        (-2i64..2).prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms))),
        (0u32..3, 0u32..3)
            .prop_map(|(time, increment)| Bson::Timestamp(Timestamp { time, increment })),
        (cstring(), prop::sample::select(vec!["", "i", "im"])).prop_map(|(p, o)| {
            Bson::RegularExpression(Regex {
                pattern: p.as_str().try_into().unwrap(),
                options: o.try_into().unwrap(),
            })
        }),
        string().prop_map(Bson::JavaScriptCode),
        (string(), prop::collection::vec((key(), any::<i32>()), 0..2)).prop_map(
            |(code, fields)| {
                Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                    code,
                    scope: fields
                        .into_iter()
                        .map(|(k, v)| (k, Bson::Int32(v)))
                        .collect(),
                })
            }
        ),
    ]
}

pub fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "", "ab"]).prop_map(str::to_owned)
}

/// Any value, with documents and arrays nested a few levels.
pub fn value() -> impl Strategy<Value = Bson> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            prop::collection::vec((key(), inner), 0..4).prop_map(|fields| {
                let mut d = Document::new();
                for (k, v) in fields {
                    d.insert(k, v);
                }
                Bson::Document(d)
            }),
        ]
    })
}

/// A path named `name` in a scratch directory of this test binary and process, with no file
/// there.
pub fn temp_path(name: &str) -> std::path::PathBuf {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("odm-engine-{binary}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}
