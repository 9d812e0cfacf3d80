//! Resume tokens: where a change stream stands, as the `_id` of each event and the
//! `postBatchResumeToken` of each batch.
//!
//! A token is MongoDB's shape, `{_data: "<hex>"}`, holding the change's key in the log (its
//! commit's cluster time and its position in the commit) and whether it is the `invalidate`
//! event that follows that change. Tokens compare as the changes they follow: `startAfter`
//! an invalidate resumes after the change that caused it.

use bson::{Bson, Document, Timestamp, doc};

use super::clock;
use super::log::Position;
use crate::error::{Error, Result};

/// A change stream's resume token; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResumeToken {
    pub(crate) time: u64,
    pub(crate) index: u32,
    pub(crate) invalidate: bool,
}

impl ResumeToken {
    pub(crate) fn at(position: Position) -> ResumeToken {
        ResumeToken {
            time: position.0,
            index: position.1,
            invalidate: false,
        }
    }

    /// The token after every change at or before cluster time `time`: where a stream that
    /// has read everything up to then resumes (MongoDB's high-water mark).
    pub fn high_water_mark(time: u64) -> ResumeToken {
        ResumeToken::at((time, u32::MAX))
    }

    /// The same point as a plain token: after the change this token follows (an
    /// `invalidate`'s token becomes the token of the change that caused it).
    #[must_use]
    pub fn after_change(self) -> ResumeToken {
        ResumeToken {
            invalidate: false,
            ..self
        }
    }

    pub(crate) fn position(self) -> Position {
        (self.time, self.index)
    }

    /// The cluster time of the change this token follows.
    pub fn cluster_time(self) -> Timestamp {
        clock::to_timestamp(self.time)
    }

    /// Whether this is the token of an `invalidate` event (only `startAfter` takes it).
    pub fn is_invalidate(self) -> bool {
        self.invalidate
    }

    /// `{_data: "<hex>"}`.
    pub fn to_document(self) -> Document {
        doc! { "_data": format!("{:016X}{:08X}{:02X}", self.time, self.index, u8::from(self.invalidate)) }
    }

    /// Reads a token written by [`ResumeToken::to_document`];
    /// [`Error::InvalidResumeToken`] names what is wrong with any other.
    pub fn from_document(token: &Document) -> Result<ResumeToken> {
        let invalid = |why: &str| Error::InvalidResumeToken(format!("{token}: {why}"));
        let data = match token.get("_data") {
            Some(Bson::String(s)) => s,
            Some(_) => return Err(invalid("`_data` is not a string")),
            None => return Err(invalid("it has no `_data`")),
        };
        if token.len() != 1 {
            return Err(invalid("it has fields besides `_data`"));
        }
        if data.len() != 26 || !data.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid("`_data` is not one of this server's tokens"));
        }
        let hex = |range: std::ops::Range<usize>| u64::from_str_radix(&data[range], 16);
        let (Ok(time), Ok(index), Ok(flag)) = (hex(0..16), hex(16..24), hex(24..26)) else {
            return Err(invalid("`_data` is not hexadecimal"));
        };
        let invalidate = match flag {
            0 => false,
            1 => true,
            _ => return Err(invalid("unknown event kind")),
        };
        Ok(ResumeToken {
            time,
            index: u32::try_from(index).map_err(|_| invalid("position out of range"))?,
            invalidate,
        })
    }

    /// Reads a token from any BSON value (a driver passes it back as it got it).
    pub fn from_bson(token: &Bson) -> Result<ResumeToken> {
        match token {
            Bson::Document(d) => ResumeToken::from_document(d),
            other => Err(Error::InvalidResumeToken(format!(
                "{other} is not a resume token document"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_order() {
        let a = ResumeToken::at((5 << 32 | 7, 3));
        let b = ResumeToken {
            invalidate: true,
            ..a
        };
        let c = ResumeToken::at((5 << 32 | 7, 4));
        for t in [a, b, c] {
            assert_eq!(ResumeToken::from_document(&t.to_document()).unwrap(), t);
        }
        assert!(a < b && b < c);
        // The hex strings order as the tokens do.
        let data = |t: ResumeToken| t.to_document().get_str("_data").unwrap().to_owned();
        assert!(data(a) < data(b) && data(b) < data(c));
    }

    #[test]
    fn malformed_tokens_are_refused_by_name() {
        for bad in [
            doc! {},
            doc! {"_data": 1},
            doc! {"_data": "zz"},
            doc! {"_data": "0000000000000000000000000G"},
            doc! {"_data": "00000000000000000000000005"},
            doc! {"_data": "00000000000000000000000000", "x": 1},
        ] {
            let err = ResumeToken::from_document(&bad).unwrap_err();
            assert!(matches!(err, Error::InvalidResumeToken(_)), "{bad}: {err}");
            assert_eq!(err.code(), 260);
        }
    }
}
