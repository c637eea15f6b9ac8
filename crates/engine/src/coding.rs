//! HTTP content codings (RFC 9110 § 8.4): gzip, deflate (zlib), zstd and framed snappy, the
//! one place sszgate removes or applies them.
//!
//! Every decode is bounded in its *decoded* size: a peer's body limit bounds what it sends,
//! not what that expands to (4 GiB of zeros is 131 KB of zstd), so decoding stops one byte
//! past the caller's bound and nothing half-decoded is handed back. Not here: which bound a
//! body gets (the gateway's body limits) or what is done with a refusal (the caller's).

use std::{
    borrow::Cow,
    io::{Read, Write},
};

/// The most codings one `Content-Encoding` header may stack; more is refused unread.
const MAX_STACKED: usize = 2;

/// The largest zstd window a decoder allocates (2^24 = 16 MiB), so a frame header cannot make
/// it reserve zstd's 128 MiB default. zstd's own levels 1–19 use windows of at most 8 MiB.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;

/// A content coding sszgate can remove and apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// `gzip` (and its alias `x-gzip`).
    Gzip,
    /// `deflate`: the zlib format (RFC 1950), as HTTP defines it.
    Deflate,
    /// `zstd` (RFC 8878).
    Zstd,
    /// `snappy`: the framed format, as Ethereum's p2p layer frames it.
    Snappy,
}

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodingError {
    /// A coding sszgate does not know.
    #[error("unsupported Content-Encoding {0:?} (gzip, deflate, zstd and snappy are)")]
    Unsupported(String),
    /// More codings stacked than sszgate removes.
    #[error("Content-Encoding {0:?} stacks more than {MAX_STACKED} codings")]
    TooManyCodings(String),
    /// The body expands past the bound; decoding stopped there.
    #[error("{coding} body decodes to more than {limit} bytes; decoding stopped there")]
    TooLarge {
        /// The coding being removed.
        coding: &'static str,
        /// The bound, bytes.
        limit: usize,
    },
    /// The body is not valid in its coding.
    #[error("{coding} body does not decode: {detail}")]
    Corrupt {
        /// The coding being removed.
        coding: &'static str,
        /// The decoder's error.
        detail: String,
    },
}

impl Coding {
    /// Every coding.
    pub const ALL: [Coding; 4] = [Coding::Gzip, Coding::Deflate, Coding::Zstd, Coding::Snappy];

    /// The coding a header item names; `Ok(None)` for `identity`.
    pub fn parse(name: &str) -> Result<Option<Coding>, CodingError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(None),
            "gzip" | "x-gzip" => Ok(Some(Coding::Gzip)),
            "deflate" => Ok(Some(Coding::Deflate)),
            "zstd" => Ok(Some(Coding::Zstd)),
            "snappy" => Ok(Some(Coding::Snappy)),
            _ => Err(CodingError::Unsupported(name.trim().to_string())),
        }
    }

    /// The coding's name in `Content-Encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Zstd => "zstd",
            Coding::Snappy => "snappy",
        }
    }

    /// `body` in this coding (zstd and gzip at their fastest levels: the link is loopback or
    /// a LAN, where speed matters more than the last few percent).
    pub fn encode(self, body: &[u8]) -> std::io::Result<Vec<u8>> {
        let out = Vec::with_capacity(body.len() / 2);
        match self {
            Coding::Zstd => zstd::bulk::compress(body, 1),
            Coding::Snappy => {
                let mut framed = snap::write::FrameEncoder::new(out);
                framed.write_all(body)?;
                framed
                    .into_inner()
                    .map_err(|e| std::io::Error::other(e.to_string()))
            }
            Coding::Gzip => {
                let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
                gz.write_all(body)?;
                gz.finish()
            }
            Coding::Deflate => {
                let mut z = flate2::write::ZlibEncoder::new(out, flate2::Compression::fast());
                z.write_all(body)?;
                z.finish()
            }
        }
    }

    /// `body` without this coding, at most `limit` bytes of it.
    pub fn decode(self, body: &[u8], limit: usize) -> Result<Vec<u8>, CodingError> {
        let corrupt = |e: std::io::Error| CodingError::Corrupt {
            coding: self.name(),
            detail: e.to_string(),
        };
        match self {
            Coding::Gzip => read_bounded(flate2::read::GzDecoder::new(body), self, limit),
            Coding::Deflate => read_bounded(flate2::read::ZlibDecoder::new(body), self, limit),
            Coding::Snappy => read_bounded(snap::read::FrameDecoder::new(body), self, limit),
            Coding::Zstd => {
                let mut decoder = zstd::stream::read::Decoder::new(body).map_err(corrupt)?;
                decoder
                    .window_log_max(ZSTD_WINDOW_LOG_MAX)
                    .map_err(corrupt)?;
                read_bounded(decoder, self, limit)
            }
        }
    }
}

/// Reads `decoder` to its end, stopping one byte past `limit`. The buffer is reserved at the
/// bound once (address space only: pages are touched as bytes arrive), never from a size the
/// peer claims: a buffer grown by doubling was measured to peak at four times the bound,
/// every step's copy resident at once.
fn read_bounded(decoder: impl Read, coding: Coding, limit: usize) -> Result<Vec<u8>, CodingError> {
    let mut out = Vec::with_capacity(limit.saturating_add(1));
    decoder
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| CodingError::Corrupt {
            coding: coding.name(),
            detail: e.to_string(),
        })?;
    if out.len() > limit {
        return Err(CodingError::TooLarge {
            coding: coding.name(),
            limit,
        });
    }
    Ok(out)
}

/// The value of a `Content-Encoding` header when it names a coding, trimmed; `None` for no
/// header, an empty one, or `identity`. The one test of whether a body is coded.
pub fn coded(header: Option<&str>) -> Option<&str> {
    header
        .map(str::trim)
        .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"))
}

/// The codings a `Content-Encoding` header names, in the order they were applied; empty for
/// none or `identity`.
pub fn parse_header(header: Option<&str>) -> Result<Vec<Coding>, CodingError> {
    let Some(header) = header else {
        return Ok(Vec::new());
    };
    let mut codings = Vec::new();
    for item in header.split(',') {
        if let Some(coding) = Coding::parse(item)? {
            if codings.len() == MAX_STACKED {
                return Err(CodingError::TooManyCodings(header.to_string()));
            }
            codings.push(coding);
        }
    }
    Ok(codings)
}

/// `body` without the codings its `Content-Encoding` header names (the last applied is removed
/// first), each step bounded by `limit` decoded bytes; the body itself when it has none.
pub fn decode<'a>(
    body: &'a [u8],
    header: Option<&str>,
    limit: usize,
) -> Result<Cow<'a, [u8]>, CodingError> {
    let mut out = Cow::Borrowed(body);
    for coding in parse_header(header)?.into_iter().rev() {
        out = Cow::Owned(coding.decode(&out, limit)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` zeros in `coding`, encoded as a stream so the zeros are never held whole.
    fn zeros(coding: Coding, n: usize) -> Vec<u8> {
        let chunk = vec![0u8; 1 << 20];
        let mut left = n;
        let mut feed = |w: &mut dyn Write| {
            while left > 0 {
                let k = left.min(chunk.len());
                w.write_all(&chunk[..k]).unwrap();
                left -= k;
            }
        };
        match coding {
            Coding::Gzip => {
                let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                feed(&mut w);
                w.finish().unwrap()
            }
            Coding::Deflate => {
                let mut w =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                feed(&mut w);
                w.finish().unwrap()
            }
            Coding::Zstd => {
                let mut w = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
                feed(&mut w);
                w.finish().unwrap()
            }
            Coding::Snappy => {
                let mut w = snap::write::FrameEncoder::new(Vec::new());
                feed(&mut w);
                w.into_inner().unwrap()
            }
        }
    }

    #[test]
    fn every_coding_round_trips_within_its_bound() {
        let body: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        for coding in Coding::ALL {
            let encoded = coding.encode(&body).unwrap();
            assert_eq!(
                coding.decode(&encoded, body.len()).unwrap(),
                body,
                "{coding:?}"
            );
            let header = format!(" {} ", coding.name().to_uppercase());
            assert_eq!(
                decode(&encoded, Some(&header), body.len()).unwrap(),
                &body[..]
            );
        }
    }

    #[test]
    fn a_bomb_stops_one_byte_past_the_bound() {
        // 64 MiB of zeros (16 MiB for snappy, whose ratio is about 20:1) against a 1 MiB bound.
        for coding in Coding::ALL {
            let n = if coding == Coding::Snappy {
                16 << 20
            } else {
                64 << 20
            };
            let bomb = zeros(coding, n);
            assert!(bomb.len() < n / 16, "{coding:?}: {} bytes", bomb.len());
            let err = decode(&bomb, Some(coding.name()), 1 << 20).unwrap_err();
            assert_eq!(
                err,
                CodingError::TooLarge {
                    coding: coding.name(),
                    limit: 1 << 20
                }
            );
            assert!(err.to_string().contains("more than 1048576 bytes"), "{err}");
            // Exactly at the bound is accepted.
            let exact = zeros(coding, 1 << 20);
            assert_eq!(coding.decode(&exact, 1 << 20).unwrap().len(), 1 << 20);
        }
    }

    #[test]
    fn stacked_codings_are_removed_in_reverse_each_bounded() {
        let body = b"{\"jsonrpc\":\"2.0\"}".repeat(1000);
        let inner = Coding::Gzip.encode(&body).unwrap();
        let outer = Coding::Zstd.encode(&inner).unwrap();
        assert_eq!(
            decode(&outer, Some("gzip, zstd"), body.len()).unwrap(),
            &body[..]
        );
        // A bomb inside another coding is still stopped at the bound.
        let bomb = Coding::Zstd.encode(&zeros(Coding::Gzip, 16 << 20)).unwrap();
        assert!(matches!(
            decode(&bomb, Some("gzip,zstd"), 1 << 20),
            Err(CodingError::TooLarge { coding: "gzip", .. })
        ));
        assert!(matches!(
            decode(&outer, Some("gzip, zstd, gzip"), 1 << 30),
            Err(CodingError::TooManyCodings(_))
        ));
    }

    #[test]
    fn bad_bodies_and_names_say_what_is_wrong() {
        assert_eq!(decode(b"abc", None, 0).unwrap(), &b"abc"[..]);
        assert_eq!(decode(b"abc", Some("identity"), 0).unwrap(), &b"abc"[..]);
        assert_eq!(
            decode(b"abc", Some("br"), 10).unwrap_err(),
            CodingError::Unsupported("br".into())
        );
        for coding in Coding::ALL {
            let err = coding
                .decode(b"not a compressed body at all", 1 << 20)
                .unwrap_err();
            assert!(
                matches!(err, CodingError::Corrupt { coding: c, .. } if c == coding.name()),
                "{coding:?}: {err}"
            );
        }
        // A truncated body is corrupt, never a shorter answer.
        let encoded = Coding::Gzip.encode(&[7u8; 10_000]).unwrap();
        assert!(
            Coding::Gzip
                .decode(&encoded[..encoded.len() / 2], 1 << 20)
                .is_err()
        );
    }

    #[test]
    fn a_zstd_frame_asking_for_a_huge_window_is_refused() {
        let mut w = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        w.set_parameter(zstd::stream::raw::CParameter::WindowLog(27))
            .unwrap();
        w.set_pledged_src_size(None).unwrap();
        w.write_all(&vec![1u8; 1 << 20]).unwrap();
        let framed = w.finish().unwrap();
        assert!(matches!(
            Coding::Zstd.decode(&framed, 64 << 20),
            Err(CodingError::Corrupt { coding: "zstd", .. })
        ));
    }
}
