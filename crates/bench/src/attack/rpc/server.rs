//! The `sszgate rpc` child a row attacks, and the plain JSON-RPC calls the campaign makes of
//! it: starting it and waiting until it listens (or ends), a POST with a bounded answer, and
//! the normal call that shows it still serves after an attack.
//!
//! Not here: the attacks, the verdicts.

use std::{
    net::SocketAddr,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::Value;

use crate::proxy::free_port;

/// How long a child may take to listen, or to end when it refuses to start.
pub(crate) const START_LIMIT: Duration = Duration::from_secs(60);
/// The most bytes read of one answer.
const MAX_ANSWER: usize = 16 << 20;

/// How a child came out of its start.
pub(crate) enum Started {
    /// It listens.
    Serving(RpcChild),
    /// It ended first: its exit status and the tail of its log.
    Ended(String, String),
}

/// A running `sszgate rpc`; dropped, it is killed (by its own pid) and reaped.
pub(crate) struct RpcChild {
    child: Child,
    /// Where it serves JSON-RPC.
    pub(crate) addr: SocketAddr,
}

impl Drop for RpcChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RpcChild {
    /// Starts `sszgate rpc ARGS --listen 127.0.0.1:PORT`, its log at `log`, and waits until
    /// it listens or ends.
    pub(crate) async fn start(sszgate: &Path, args: &[String], log: &Path) -> Started {
        let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let spawned = std::fs::File::create(log).and_then(|file| {
            Command::new(sszgate)
                .arg("rpc")
                .args(args)
                .args(["--listen", &addr.to_string()])
                .env("SSZGATE_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(file)
                .spawn()
        });
        let child = match spawned {
            Ok(child) => child,
            Err(e) => return Started::Ended(format!("not started: {e}"), String::new()),
        };
        let mut child = RpcChild { child, addr };
        let started = Instant::now();
        while started.elapsed() < START_LIMIT {
            if let Ok(Some(status)) = child.child.try_wait() {
                return Started::Ended(status.to_string(), log_tail(log));
            }
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Started::Serving(child);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Started::Ended(
            format!("neither listening nor ended after {START_LIMIT:?}"),
            log_tail(log),
        )
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it still runs.
    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// The last 2 KiB of a log, on one line.
pub(crate) fn log_tail(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let tail = &text[text.len().saturating_sub(2048)..];
    String::from_utf8_lossy(tail).replace('\n', " ")
}

/// What one POST got back.
pub(crate) struct Reply {
    /// The HTTP status.
    pub(crate) status: u16,
    /// The body as JSON (`Null` when it is not JSON).
    pub(crate) json: Value,
    /// The body's length in bytes.
    pub(crate) bytes: usize,
}

/// POSTs `body` (JSON) to `addr` and reads the answer (at most 16 MiB), all within `limit`.
pub(crate) async fn post(
    addr: SocketAddr,
    body: Vec<u8>,
    limit: Duration,
) -> Result<Reply, String> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::post(format!("http://{addr}/"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let exchange = async {
        let answer = client.request(request).await.map_err(|e| e.to_string())?;
        let status = answer.status().as_u16();
        let bytes = Limited::new(answer.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Reply {
            status,
            json,
            bytes: bytes.len(),
        })
    };
    tokio::time::timeout(limit, exchange)
        .await
        .map_err(|_| format!("no answer within {limit:?}"))?
}

/// One JSON-RPC call's body.
pub(crate) fn call(method: &str, params: Value) -> Vec<u8> {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

/// How long the normal call (`eth_chainId`, answered with a result) took, if it was
/// answered within `within`.
pub(crate) async fn recovers(addr: SocketAddr, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let reply = post(addr, call("eth_chainId", Value::Array(Vec::new())), within).await;
    match reply {
        Ok(reply) if reply.status == 200 && reply.json.get("result").is_some() => {
            Some(started.elapsed())
        }
        _ => None,
    }
}

/// A reply in the table's words: status, then the JSON-RPC error's code, message and the
/// `check` of its `data`, or the result's size.
pub(crate) fn describe(reply: &Result<Reply, String>) -> String {
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => return e.clone(),
    };
    let one = match &reply.json {
        Value::Array(items) => items.first().cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    let batch = match &reply.json {
        Value::Array(items) => {
            let answered = items.iter().filter(|i| i.get("result").is_some()).count();
            format!(
                "batch of {} ({answered} results, {} errors), first: ",
                items.len(),
                items.len() - answered
            )
        }
        _ => String::new(),
    };
    let what = match (one.get("error"), one.get("result")) {
        (Some(error), _) => format!(
            "error {} {}{}",
            error["code"],
            error["message"].as_str().unwrap_or(""),
            check_of(error).map_or(String::new(), |c| format!(" (check: {c})"))
        ),
        (None, Some(result)) => format!("result {}", short(&result.to_string())),
        (None, None) => format!("{} B not JSON-RPC", reply.bytes),
    };
    format!("{} {batch}{what}", reply.status)
}

/// The `check` a JSON-RPC error names in its `data`, if any.
pub(crate) fn check_of(error: &Value) -> Option<String> {
    error["data"]["check"].as_str().map(str::to_string)
}

fn short(text: &str) -> String {
    if text.len() <= 80 {
        return text.to_string();
    }
    let cut = (0..=80)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}…", &text[..cut])
}
