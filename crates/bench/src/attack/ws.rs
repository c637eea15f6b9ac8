//! WebSocket attacks through the relay's upgrade: a frame declaring a 2^62-byte payload,
//! a message in thousands of continuation fragments, and a ping flood. Frames are written by
//! hand (masked, as a client must); the answer is the server's frames counted by opcode.

use std::{collections::BTreeMap, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{
        TcpStream,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
    task::JoinHandle,
    time::{Instant, timeout},
};

use super::{Ctx, Outcome, wire::size};

pub(crate) const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CONTINUATION: u8 = 0x0;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
pub(crate) const FIN: u8 = 0x80;
const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];
/// Payload bytes written after the 2^62-byte frame header before giving up.
const HUGE_FRAME_SENT: usize = 16 << 20;

/// A masked client frame.
pub(crate) fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![first];
    header_length(&mut out, payload.len() as u64);
    out.extend_from_slice(&MASK);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    out
}

fn header_length(out: &mut Vec<u8>, len: u64) {
    match len {
        0..=125 => out.push(0x80 | len as u8),
        126..=0xffff => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(0x80 | 127);
            out.extend_from_slice(&len.to_be_bytes());
        }
    }
}

/// Upgrades a new connection to `path` (with a valid JWT); on success, the halves.
async fn upgrade(ctx: &Ctx, path: &str) -> Result<(OwnedReadHalf, OwnedWriteHalf), String> {
    let mut stream = TcpStream::connect(ctx.addr)
        .await
        .map_err(|e| e.to_string())?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: c3N6Z2F0ZS1hdHRhY2stMQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {}\r\n\r\n",
        ctx.token
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    // The head, a byte at a time so nothing after it is consumed.
    let mut head = Vec::new();
    let deadline = Instant::now() + ctx.scale.answer_wait;
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 << 10 {
        let mut byte = [0u8];
        match timeout(
            deadline.saturating_duration_since(Instant::now()),
            stream.read(&mut byte),
        )
        .await
        {
            Ok(Ok(1)) => head.push(byte[0]),
            _ => break,
        }
    }
    let status = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    if !status.contains(" 101 ") {
        return Err(format!("upgrade answered `{status}`"));
    }
    Ok(stream.into_split())
}

/// Reads the server's frames until it closes or `limit` passes, counted by opcode.
fn drain(mut reader: OwnedReadHalf, limit: Duration) -> JoinHandle<String> {
    tokio::spawn(async move {
        let deadline = Instant::now() + limit;
        let (mut frames, mut buf) = (BTreeMap::<&str, usize>::new(), Vec::new());
        let mut chunk = vec![0u8; 64 << 10];
        let end = loop {
            match timeout(
                deadline.saturating_duration_since(Instant::now()),
                reader.read(&mut chunk),
            )
            .await
            {
                Err(_) => break "open",
                Ok(Ok(0)) => break "closed",
                Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => break "reset",
                Ok(Err(_)) => break "closed",
            }
            while let Some((opcode, used)) = server_frame(&buf) {
                *frames.entry(opcode_name(opcode)).or_default() += 1;
                buf.drain(..used);
            }
        };
        let counts: Vec<String> = frames.iter().map(|(k, n)| format!("{n}× {k}")).collect();
        format!(
            "101; then {}{end}",
            counts.iter().map(|c| format!("{c}, ")).collect::<String>()
        )
    })
}

/// The opcode and length of the unmasked server frame at the start of `buf`, when whole.
fn server_frame(buf: &[u8]) -> Option<(u8, usize)> {
    let (opcode, len7) = (*buf.first()? & 0x0f, *buf.get(1)? & 0x7f);
    let (len, start): (usize, usize) = match len7 {
        126 => (
            u16::from_be_bytes(buf.get(2..4)?.try_into().ok()?) as usize,
            4,
        ),
        127 => (
            u64::from_be_bytes(buf.get(2..10)?.try_into().ok()?) as usize,
            10,
        ),
        n => (n as usize, 2),
    };
    let end = start.checked_add(len)?;
    (buf.len() >= end).then_some((opcode, end))
}

fn opcode_name(opcode: u8) -> &'static str {
    match opcode {
        0x0 => "continuation",
        0x1 => "text",
        0x2 => "binary",
        0x8 => "close",
        0x9 => "ping",
        0xa => "pong",
        _ => "other",
    }
}

/// Upgrades at `path`, writes `frames` (stopping at the first write error), then closes and
/// reports.
pub(crate) async fn attack_at(
    ctx: Ctx,
    path: &str,
    frames: impl Iterator<Item = Vec<u8>>,
    what: String,
) -> Outcome {
    let (reader, mut writer) = match upgrade(&ctx, path).await {
        Ok(halves) => halves,
        Err(why) => return Outcome::text(what, why),
    };
    let seen = drain(reader, ctx.scale.h2_wait);
    let mut written = 0u64;
    for frame in frames {
        if writer.write_all(&frame).await.is_err() {
            break;
        }
        written += frame.len() as u64;
    }
    let answer = seen.await.unwrap_or_default();
    let _ = writer.write_all(&frame(FIN | CLOSE, &[])).await;
    Outcome::text(format!("{what}, {} written", size(written)), answer)
}

/// Upgrades at the relay's `/`, writes `frames`, then closes and reports.
async fn attack(ctx: Ctx, frames: impl Iterator<Item = Vec<u8>>, what: String) -> Outcome {
    attack_at(ctx, "/", frames, what).await
}

/// A binary frame whose header declares 2^62 payload bytes, followed by 16 MiB of them.
pub(crate) async fn huge_frame(ctx: Ctx) -> Outcome {
    huge_frame_at(ctx, "/").await
}

/// [`huge_frame`] to a WebSocket at `path`.
pub(crate) async fn huge_frame_at(ctx: Ctx, path: &str) -> Outcome {
    let mut header = vec![FIN | BINARY];
    header_length(&mut header, 1 << 62);
    header.extend_from_slice(&MASK);
    let body = (0..HUGE_FRAME_SENT / (64 << 10)).map(|_| vec![0u8; 64 << 10]);
    let frames = std::iter::once(header).chain(body);
    attack_at(ctx, path, frames, "frame header of 2^62 B".into()).await
}

/// A text message in `ws_fragments` fragments of 100 bytes each.
pub(crate) async fn fragments(ctx: Ctx) -> Outcome {
    let n = ctx.scale.ws_fragments;
    let piece = [b'a'; 100];
    let frames = (0..n).map(move |i| {
        let opcode = if i == 0 { TEXT } else { CONTINUATION };
        frame(opcode | if i + 1 == n { FIN } else { 0 }, &piece)
    });
    attack(ctx, frames, format!("{n} fragments of 100 B")).await
}

/// `ws_pings` pings of 4 bytes, as fast as they can be written.
pub(crate) async fn ping_flood(ctx: Ctx) -> Outcome {
    let n = ctx.scale.ws_pings;
    let frames = (0..n).map(|i| frame(FIN | PING, &(i as u32).to_be_bytes()));
    attack(ctx, frames, format!("{n} pings")).await
}
