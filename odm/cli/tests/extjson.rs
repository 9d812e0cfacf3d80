//! The laws of `odm_cli::extjson`, over generated documents and text:
//! - canonical Extended JSON, one line or pretty, reads back to the same BSON bytes, for every
//!   BSON type and edge values (NaN, whose one Extended JSON form keeps no payload; -0.0, subnormals, every binary subtype, control characters
//!   in strings and keys);
//! - relaxed Extended JSON reads back to the same values, integers aside (their width);
//! - no text makes the reader panic: random text, and valid text cut or changed anywhere.

use bson::spec::BinarySubtype;
use bson::{
    Binary, Bson, DateTime, Decimal128, Document, JavaScriptCodeWithScope, RawDocumentBuf, Regex,
    Timestamp, oid::ObjectId,
};
use odm_cli::extjson::{Format, parse_document, parse_value, to_line, to_pretty};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(vec![
                'a', 'é', '"', '\\', '/', '\n', '\t', '\u{1}', '\u{7f}', '𝄞', '$', ' '
            ]),
            any::<char>().prop_filter("no NUL", |c| *c != '\0'),
        ],
        0..8,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn leaf() -> impl Strategy<Value = Bson> {
    prop_oneof![
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        // Extended JSON has one NaN: a NaN's sign and payload bits are not kept.
        any::<u64>().prop_map(|bits| {
            let f = f64::from_bits(bits);
            Bson::Double(if f.is_nan() { f64::NAN } else { f })
        }),
        prop::sample::select(vec![
            0.0,
            -0.0,
            1.0,
            0.1,
            5e-324,
            1e308,
            f64::INFINITY,
            f64::NEG_INFINITY
        ])
        .prop_map(Bson::Double),
        (any::<i64>(), -6000i32..6000).prop_map(|(digits, exp)| Bson::Decimal128(
            format!("{digits}E{exp}").parse::<Decimal128>().unwrap()
        )),
        text().prop_map(Bson::String),
        any::<bool>().prop_map(Bson::Boolean),
        Just(Bson::Null),
        Just(Bson::Undefined),
        Just(Bson::MinKey),
        Just(Bson::MaxKey),
        any::<[u8; 12]>().prop_map(|b| Bson::ObjectId(ObjectId::from_bytes(b))),
        any::<i64>().prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms))),
        (any::<u8>(), prop::collection::vec(any::<u8>(), 0..20)).prop_filter_map(
            "the old binary subtype needs its inner length, kept by BSON itself",
            |(subtype, bytes)| (subtype != 2).then(|| Bson::Binary(Binary {
                subtype: BinarySubtype::from(subtype),
                bytes
            }))
        ),
        (
            text(),
            prop::sample::subsequence(vec!['i', 'l', 'm', 's', 'u', 'x'], 0..4)
        )
            .prop_map(|(p, o)| {
                Bson::RegularExpression(Regex {
                    pattern: p.try_into().unwrap(),
                    options: o.into_iter().collect::<String>().try_into().unwrap(),
                })
            }),
        (any::<u32>(), any::<u32>())
            .prop_map(|(time, increment)| Bson::Timestamp(Timestamp { time, increment })),
        text().prop_map(Bson::Symbol),
        text().prop_map(Bson::JavaScriptCode),
        text().prop_map(
            |code| Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code,
                scope: bson::doc! {"x": 1}
            })
        ),
    ]
}

fn value() -> impl Strategy<Value = Bson> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            prop::collection::vec((text(), inner), 0..4)
                .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
        ]
    })
}

fn document() -> impl Strategy<Value = Document> {
    prop::collection::vec((text(), value()), 0..6).prop_map(|fields| fields.into_iter().collect())
}

fn bytes(doc: &Document) -> Vec<u8> {
    RawDocumentBuf::try_from(doc).unwrap().into_bytes()
}

/// The document with every Int64 that fits in 32 bits narrowed, as relaxed JSON reads it.
fn narrowed(value: &Bson) -> Bson {
    match value {
        Bson::Int64(v) => i32::try_from(*v).map_or(Bson::Int64(*v), Bson::Int32),
        Bson::Array(items) => Bson::Array(items.iter().map(narrowed).collect()),
        Bson::Document(d) => {
            Bson::Document(d.iter().map(|(k, v)| (k.clone(), narrowed(v))).collect())
        }
        Bson::JavaScriptCodeWithScope(c) => {
            Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: c.code.clone(),
                scope: c
                    .scope
                    .iter()
                    .map(|(k, v)| (k.clone(), narrowed(v)))
                    .collect(),
            })
        }
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn canonical_reads_back_to_the_same_bytes(doc in document()) {
        for text in [to_line(&doc, Format::Canonical), to_pretty(&doc, Format::Canonical)] {
            let back = parse_document(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(bytes(&back), bytes(&doc), "{}", text);
        }
    }

    #[test]
    fn relaxed_reads_back_to_the_same_values(doc in document()) {
        let text = to_line(&doc, Format::Relaxed);
        let back = parse_document(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let Bson::Document(expected) = narrowed(&Bson::Document(doc)) else { unreachable!() };
        prop_assert_eq!(bytes(&back), bytes(&expected), "{}", text);
    }

    #[test]
    fn no_text_panics(text in "\\PC{0,40}") {
        let _ = parse_value(&text);
        let _ = parse_document(&text);
    }

    #[test]
    fn valid_text_cut_or_changed_never_panics(doc in document(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let text = to_line(&doc, Format::Canonical);
        let mut cut = at.index(text.len() + 1);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let _ = parse_document(&text[..cut]);
        let mut changed = text.clone().into_bytes();
        if !changed.is_empty() {
            let i = at.index(changed.len());
            changed[i] = byte;
        }
        if let Ok(changed) = String::from_utf8(changed) {
            let _ = parse_document(&changed);
        }
    }
}
