//! `OP_COMPRESSED`'s compressors: negotiated in `hello` (the client lists what it can use, the
//! server answers with those it also has, in the client's order), then any message may arrive
//! compressed, and a reply goes back compressed as its request came. Decompression is bounded
//! by the size the message states, itself bounded by `maxMessageSizeBytes`, so a small message
//! cannot make the server allocate without limit.

use std::io::Read;

use thiserror::Error;

/// A compressor, with the id `OP_COMPRESSED` names it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compressor {
    Noop,
    Snappy,
    Zlib,
    Zstd,
}

/// Why a compressed message could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompressionError {
    #[error("unknown compressor id {0}")]
    UnknownId(u8),
    #[error("{compressor} data is malformed: {reason}")]
    Malformed {
        compressor: &'static str,
        reason: String,
    },
    #[error("{compressor} data decompresses to {actual} bytes, the message states {stated}")]
    SizeMismatch {
        compressor: &'static str,
        stated: usize,
        actual: usize,
    },
}

/// What the server offers, in its order of preference.
pub const SUPPORTED: [Compressor; 3] = [Compressor::Zstd, Compressor::Snappy, Compressor::Zlib];

impl Compressor {
    pub fn from_id(id: u8) -> Result<Compressor, CompressionError> {
        Ok(match id {
            0 => Compressor::Noop,
            1 => Compressor::Snappy,
            2 => Compressor::Zlib,
            3 => Compressor::Zstd,
            other => return Err(CompressionError::UnknownId(other)),
        })
    }

    pub fn id(self) -> u8 {
        match self {
            Compressor::Noop => 0,
            Compressor::Snappy => 1,
            Compressor::Zlib => 2,
            Compressor::Zstd => 3,
        }
    }

    /// The name `hello` uses.
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Noop => "noop",
            Compressor::Snappy => "snappy",
            Compressor::Zlib => "zlib",
            Compressor::Zstd => "zstd",
        }
    }

    pub fn from_name(name: &str) -> Option<Compressor> {
        SUPPORTED.into_iter().find(|c| c.name() == name)
    }

    /// Compresses a reply. Compressing bytes in memory cannot fail for these formats.
    pub fn compress(self, data: &[u8]) -> Vec<u8> {
        match self {
            Compressor::Noop => data.to_vec(),
            Compressor::Snappy => snap::raw::Encoder::new()
                .compress_vec(data)
                .expect("snappy compresses any input below its 4 GiB limit"),
            Compressor::Zlib => {
                let mut encoder =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                std::io::Write::write_all(&mut encoder, data).expect("writing to a Vec");
                encoder.finish().expect("writing to a Vec")
            }
            Compressor::Zstd => zstd::bulk::compress(data, 1).expect("zstd compresses in memory"),
        }
    }

    /// Decompresses exactly `size` bytes, refusing data that would give more or fewer.
    pub fn decompress(self, data: &[u8], size: usize) -> Result<Vec<u8>, CompressionError> {
        let name = self.name();
        let malformed = |e: &dyn std::fmt::Display| CompressionError::Malformed {
            compressor: name,
            reason: e.to_string(),
        };
        let out = match self {
            Compressor::Noop => data.to_vec(),
            Compressor::Snappy => {
                let stated = snap::raw::decompress_len(data).map_err(|e| malformed(&e))?;
                if stated != size {
                    return Err(CompressionError::SizeMismatch {
                        compressor: name,
                        stated: size,
                        actual: stated,
                    });
                }
                snap::raw::Decoder::new()
                    .decompress_vec(data)
                    .map_err(|e| malformed(&e))?
            }
            Compressor::Zlib => {
                let mut out = Vec::with_capacity(size.min(1 << 20));
                flate2::read::ZlibDecoder::new(data)
                    .take(size as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| malformed(&e))?;
                out
            }
            Compressor::Zstd => {
                let mut out = Vec::with_capacity(size.min(1 << 20));
                zstd::stream::read::Decoder::new(data)
                    .map_err(|e| malformed(&e))?
                    .take(size as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| malformed(&e))?;
                out
            }
        };
        if out.len() != size {
            return Err(CompressionError::SizeMismatch {
                compressor: name,
                stated: size,
                actual: out.len(),
            });
        }
        Ok(out)
    }
}

/// The compressors to use with a client that offered `offered` (names, in its preference),
/// among those the server `enabled`.
pub fn negotiate(offered: &[String], enabled: &[Compressor]) -> Vec<Compressor> {
    offered
        .iter()
        .filter_map(|name| Compressor::from_name(name))
        .filter(|c| enabled.contains(c))
        .fold(Vec::new(), |mut agreed, c| {
            if !agreed.contains(&c) {
                agreed.push(c);
            }
            agreed
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_compressor_round_trips_and_checks_the_stated_size() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for c in [
            Compressor::Noop,
            Compressor::Snappy,
            Compressor::Zlib,
            Compressor::Zstd,
        ] {
            let packed = c.compress(&data);
            assert_eq!(c.decompress(&packed, data.len()).unwrap(), data, "{c:?}");
            assert!(
                matches!(
                    c.decompress(&packed, data.len() - 1),
                    Err(CompressionError::SizeMismatch { .. })
                ),
                "{c:?} must refuse more bytes than stated"
            );
            assert!(c.decompress(&packed, data.len() + 1).is_err(), "{c:?}");
        }
    }

    #[test]
    fn garbage_is_an_error() {
        for c in [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd] {
            assert!(c.decompress(b"\xff\xfe\xfd garbage", 100).is_err(), "{c:?}");
        }
    }

    #[test]
    fn negotiation_keeps_the_clients_order_and_the_servers_set() {
        let offered = ["zlib", "lz4", "zstd", "zlib"].map(String::from);
        assert_eq!(
            negotiate(&offered, &SUPPORTED),
            vec![Compressor::Zlib, Compressor::Zstd]
        );
        assert_eq!(
            negotiate(&offered, &[Compressor::Zstd]),
            vec![Compressor::Zstd]
        );
    }
}
