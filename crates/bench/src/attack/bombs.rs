//! Decompression bombs: small bodies that decode to gigabytes of zeros, in each content coding
//! the gateway names (gzip, deflate as zlib, zstd, framed snappy).
//!
//! Streaming gigabytes through an encoder takes minutes in a debug build, so each body is
//! built from one compressed chunk repeated: a deflate block sequence ending in a full flush
//! (it refers to nothing before it), zstd RLE blocks, snappy frames of 64 KiB of zeros. The
//! trailers (gzip's CRC-32 and size, zlib's Adler-32) are those of the whole decoded length.

use std::io::Write;

use flate2::{Compress, Compression, Crc, FlushCompress};

use super::{
    Ctx, Outcome,
    wire::{exchange, head, size},
};

/// Zeros per repeated deflate chunk.
const DEFLATE_CHUNK: usize = 1 << 20;
/// Zeros per zstd RLE block (the format's largest block).
const ZSTD_BLOCK: u64 = 128 << 10;
/// Zeros per snappy frame (the framing format's largest).
const SNAPPY_FRAME: usize = 64 << 10;

/// A content coding a bomb is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coding {
    Gzip,
    Deflate,
    Zstd,
    Snappy,
}

impl Coding {
    /// Every coding, in the table's order.
    pub(crate) const ALL: [Coding; 4] =
        [Coding::Gzip, Coding::Deflate, Coding::Zstd, Coding::Snappy];

    /// Its `Content-Encoding` name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Zstd => "zstd",
            Coding::Snappy => "snappy",
        }
    }
}

/// A body in `coding` that decodes to about `zeros` zeros (snappy: as many as a body of
/// `snappy_body` bytes holds, its ratio being far lower), and the decoded length.
pub(crate) fn bomb(coding: Coding, zeros: u64, snappy_body: usize) -> (Vec<u8>, u64) {
    match coding {
        Coding::Gzip => gzip(zeros),
        Coding::Deflate => zlib(zeros),
        Coding::Zstd => zstd(zeros),
        Coding::Snappy => snappy(snappy_body),
    }
}

/// Raw deflate of `chunks` × [`DEFLATE_CHUNK`] zeros.
fn deflate(chunks: u64) -> Vec<u8> {
    let mut compress = Compress::new(Compression::best(), false);
    let zeros = vec![0u8; DEFLATE_CHUNK];
    let mut chunk = Vec::with_capacity(DEFLATE_CHUNK / 100);
    compress
        .compress_vec(&zeros, &mut chunk, FlushCompress::Full)
        .expect("deflating zeros");
    let mut tail = Vec::with_capacity(64);
    compress
        .compress_vec(&[], &mut tail, FlushCompress::Finish)
        .expect("ending the deflate stream");
    let mut out = Vec::with_capacity(chunk.len() * chunks as usize + tail.len());
    for _ in 0..chunks {
        out.extend_from_slice(&chunk);
    }
    out.extend_from_slice(&tail);
    out
}

fn chunks_of(zeros: u64) -> u64 {
    (zeros / DEFLATE_CHUNK as u64).max(1)
}

fn gzip(zeros: u64) -> (Vec<u8>, u64) {
    let chunks = chunks_of(zeros);
    let decoded = chunks * DEFLATE_CHUNK as u64;
    let mut one = Crc::new();
    one.update(&vec![0u8; DEFLATE_CHUNK]);
    let mut crc = Crc::new();
    for _ in 0..chunks {
        crc.combine(&one);
    }
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend_from_slice(&deflate(chunks));
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(decoded as u32).to_le_bytes());
    (out, decoded)
}

fn zlib(zeros: u64) -> (Vec<u8>, u64) {
    let chunks = chunks_of(zeros);
    let decoded = chunks * DEFLATE_CHUNK as u64;
    // Adler-32 of n zeros: a stays 1, b adds a once per byte.
    let adler = (((decoded % 65521) as u32) << 16) | 1;
    let mut out = vec![0x78, 0xda];
    out.extend_from_slice(&deflate(chunks));
    out.extend_from_slice(&adler.to_be_bytes());
    (out, decoded)
}

/// One zstd frame (no checksum, content size given) of RLE blocks of zeros.
fn zstd(zeros: u64) -> (Vec<u8>, u64) {
    let blocks = (zeros / ZSTD_BLOCK).max(1);
    let decoded = blocks * ZSTD_BLOCK;
    let mut out = vec![0x28, 0xb5, 0x2f, 0xfd];
    // Frame header: an 8-byte content size, a window of 2^(10+7) = 128 KiB.
    out.push(0b1100_0000);
    out.push(7 << 3);
    out.extend_from_slice(&decoded.to_le_bytes());
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = last | (1 << 1) | ((ZSTD_BLOCK as u32) << 3);
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.push(0);
    }
    (out, decoded)
}

/// The framed snappy stream of as many 64 KiB frames of zeros as fit in `body` bytes.
fn snappy(body: usize) -> (Vec<u8>, u64) {
    let mut one = Vec::new();
    {
        let mut encoder = snap::write::FrameEncoder::new(&mut one);
        encoder
            .write_all(&vec![0u8; SNAPPY_FRAME])
            .expect("snappy into memory");
        encoder.flush().expect("snappy into memory");
    }
    // The stream identifier (10 bytes), then one frame, which repeats as it is.
    let (identifier, frame) = one.split_at(10);
    let frames = (body.saturating_sub(10) / frame.len()).max(1);
    let mut out = identifier.to_vec();
    for _ in 0..frames {
        out.extend_from_slice(frame);
    }
    (out, (frames * SNAPPY_FRAME) as u64)
}

/// Where a bomb goes and how it is dressed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    /// `POST /` JSON-RPC, with or without a valid JWT.
    JsonRpc { authenticated: bool },
    /// `POST /engine/v1/payloads` REST-SSZ (prague), with a valid JWT.
    RestPayload,
}

/// Sends one bomb and reports what came back.
pub(crate) async fn send(ctx: Ctx, coding: Coding, shape: Shape) -> Outcome {
    let (body, decoded) = bomb(coding, ctx.scale.bomb_zeros, ctx.scale.snappy_body);
    let mut headers = vec![
        format!("Content-Encoding: {}", coding.name()),
        format!("Content-Length: {}", body.len()),
        "Connection: close".to_string(),
    ];
    let request_line = match shape {
        Shape::JsonRpc { .. } => {
            headers.push("Content-Type: application/json".into());
            "POST / HTTP/1.1"
        }
        Shape::RestPayload => {
            headers.push("Content-Type: application/octet-stream".into());
            headers.push("Eth-Execution-Version: prague".into());
            "POST /engine/v1/payloads HTTP/1.1"
        }
    };
    if !matches!(
        shape,
        Shape::JsonRpc {
            authenticated: false
        }
    ) {
        headers.push(format!("Authorization: Bearer {}", ctx.token));
    }
    let mut bytes = head(request_line, &headers);
    let sent = format!(
        "{} body decoding to {}, 1 conn",
        size(body.len() as u64),
        size(decoded)
    );
    bytes.extend_from_slice(&body);
    drop(body);
    let answer = exchange(ctx.addr, bytes, ctx.scale.answer_wait).await;
    Outcome::new(sent, answer)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// Reads everything from `reader`, checking each byte is zero, and returns the count.
    fn zeros_in(mut reader: impl Read) -> u64 {
        let (mut total, mut buf) = (0u64, vec![0u8; 1 << 16]);
        loop {
            let n = reader.read(&mut buf).expect("a valid stream");
            if n == 0 {
                return total;
            }
            assert!(buf[..n].iter().all(|&b| b == 0));
            total += n as u64;
        }
    }

    #[test]
    fn every_bomb_decodes_to_the_zeros_it_claims() {
        let zeros = 4 << 20;
        let (body, n) = bomb(Coding::Gzip, zeros, 0);
        assert_eq!(
            (n, zeros_in(flate2::read::GzDecoder::new(&body[..]))),
            (zeros, zeros)
        );
        let (body, n) = bomb(Coding::Deflate, zeros, 0);
        assert_eq!(
            (n, zeros_in(flate2::read::ZlibDecoder::new(&body[..]))),
            (zeros, zeros)
        );
        let (body, n) = bomb(Coding::Zstd, zeros, 0);
        let decoder = zstd::stream::read::Decoder::new(&body[..]).unwrap();
        assert_eq!((n, zeros_in(decoder)), (zeros, zeros));
        let (body, n) = bomb(Coding::Snappy, 0, 100_000);
        assert!(body.len() <= 100_000 && n > 1 << 20, "{} → {n}", body.len());
        assert_eq!(zeros_in(snap::read::FrameDecoder::new(&body[..])), n);
    }

    #[test]
    fn a_four_gib_gzip_bomb_is_a_few_mib_with_the_right_trailer() {
        let (body, n) = bomb(Coding::Gzip, 4 << 30, 0);
        assert_eq!(n, 4 << 30);
        assert!(body.len() < 8 << 20, "{}", body.len());
        // ISIZE is the length modulo 2^32.
        assert_eq!(body[body.len() - 4..], [0, 0, 0, 0]);
    }
}
