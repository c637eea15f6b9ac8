//! Raw bytes over TCP: what an attacker writes where a library would refuse to send it, and
//! what came back as the attacker saw it (status lines, then closed, reset or still open).

use std::{collections::BTreeMap, fmt, net::SocketAddr, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpStream, tcp::OwnedReadHalf},
    time::{Instant, timeout},
};

/// Bytes of an answer kept to find its status lines.
const KEPT: usize = 64 << 10;
/// Once an answer has started, how long a silence ends the wait for more of it.
const QUIET: Duration = Duration::from_millis(300);

/// How a connection's far end behaved.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum End {
    /// It closed the connection (EOF).
    Closed,
    /// It reset the connection.
    Reset,
    /// It was still open when the attacker stopped waiting.
    Open,
    /// The attacker could not connect.
    Refused(String),
}

/// What came back on one connection.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Answer {
    /// The status lines seen, in order (`HTTP/1.1 400 Bad Request`).
    pub(crate) statuses: Vec<String>,
    /// The first JSON-RPC error code in the answers, if any (errors travel in a 200).
    pub(crate) rpc_error: Option<String>,
    /// How the connection ended.
    pub(crate) end: End,
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for status in &self.statuses {
            write!(f, "{status}, ")?;
        }
        if let Some(code) = &self.rpc_error {
            write!(f, "JSON-RPC error {code}, ")?;
        }
        match &self.end {
            End::Closed => write!(f, "closed"),
            End::Reset => write!(f, "reset"),
            End::Open => write!(f, "open"),
            End::Refused(why) => write!(f, "connect failed ({why})"),
        }
    }
}

impl Answer {
    /// The answer to a connection that could not be made.
    pub(crate) fn refused(error: std::io::Error) -> Answer {
        Answer {
            statuses: Vec::new(),
            rpc_error: None,
            end: End::Refused(error.kind().to_string()),
        }
    }
}

/// Answers counted by kind: `50× HTTP/1.1 408 Request Timeout, closed`.
#[derive(Default)]
pub(crate) struct Tally(BTreeMap<String, usize>);

impl Tally {
    /// Counts one answer.
    pub(crate) fn add(&mut self, answer: impl ToString) {
        *self.0.entry(answer.to_string()).or_default() += 1;
    }

    /// Adds every count of `other`.
    pub(crate) fn merge(&mut self, other: Tally) {
        for (answer, n) in other.0 {
            *self.0.entry(answer).or_default() += n;
        }
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, n)| format!("{n}× {k}")).collect();
        write!(f, "{}", parts.join("; "))
    }
}

/// Reads what the far end sends until it closes or resets, until it has been quiet for a
/// moment after answering, or until `limit` passes.
pub(crate) async fn read_answer(reader: &mut OwnedReadHalf, limit: Duration) -> Answer {
    let deadline = Instant::now() + limit;
    let (mut kept, mut buf) = (Vec::new(), vec![0u8; 16 << 10]);
    let end = loop {
        let wait = if kept.is_empty() {
            deadline.saturating_duration_since(Instant::now())
        } else {
            QUIET.min(deadline.saturating_duration_since(Instant::now()))
        };
        match timeout(wait, reader.read(&mut buf)).await {
            Err(_) => break End::Open,
            Ok(Ok(0)) => break End::Closed,
            Ok(Ok(n)) => {
                let room = KEPT.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buf[..room]);
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => break End::Reset,
            Ok(Err(_)) => break End::Closed,
        }
    };
    Answer {
        statuses: status_lines(&kept),
        rpc_error: rpc_error_code(&kept),
        end,
    }
}

/// The number after the first `"code":` in what was read.
fn rpc_error_code(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let rest = &text[text.find("\"code\":")? + 7..];
    let code: String = rest
        .trim_start()
        .chars()
        .take_while(|c| *c == '-' || c.is_ascii_digit())
        .collect();
    (!code.is_empty()).then_some(code)
}

/// The HTTP/1 status lines in what was read: the first line, and any line after a blank one
/// that starts like one (pipelined answers).
fn status_lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.split("\r\n")
        .filter(|line| line.starts_with("HTTP/1."))
        .map(str::to_string)
        .collect()
}

/// Connects, writes `bytes` (while reading, so a server that answers early and stops reading
/// cannot stall the writer), and reads the answer within `limit`.
pub(crate) async fn exchange(addr: SocketAddr, bytes: Vec<u8>, limit: Duration) -> Answer {
    let stream = match TcpStream::connect(addr).await {
        Ok(stream) => stream,
        Err(e) => return Answer::refused(e),
    };
    let (mut reader, mut writer) = stream.into_split();
    let writing = tokio::spawn(async move {
        let _ = writer.write_all(&bytes).await;
        writer
    });
    let answer = read_answer(&mut reader, limit).await;
    writing.abort();
    answer
}

/// An HTTP/1.1 request head from its request line and header lines.
pub(crate) fn head(request_line: &str, headers: &[String]) -> Vec<u8> {
    let mut out = format!("{request_line}\r\nHost: 127.0.0.1\r\n");
    for line in headers {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// A size for the table: bytes, KiB, MiB or GiB.
pub(crate) fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
