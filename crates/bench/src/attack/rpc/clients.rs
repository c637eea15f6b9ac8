//! The client rows: hostile clients against one `sszgate rpc` — slowloris on the head and on
//! the body, a flood of connections, batches of 100 expensive calls, huge params. The
//! HTTP/1.1 floods and trickles are the proxy campaign's own ([`super::super::http1`]),
//! aimed at the JSON-RPC endpoint.
//!
//! Not here: the process, its measurement, the verdicts.

use std::{net::SocketAddr, time::Duration};

use alloy_primitives::Address;
use serde_json::{Value, json};

use super::super::{Ctx, Outcome, Scale, http1, http1::Trickle};
use super::server::{describe, post};

/// The connections of the flood row in the full run (the issue's figure).
const FLOOD_FULL: usize = 10_000;
/// Descriptors the campaign keeps for itself beside the flood.
const FD_RESERVE: u64 = 256;
/// How long one batch or huge-param call may take to be answered.
const CALL_LIMIT: Duration = Duration::from_secs(60);
/// Calls in one batch (the most a batch may hold).
const BATCH: usize = 100;
/// The size of the huge string param.
const HUGE_STRING: usize = 1 << 20;
/// How deep the nested param goes.
const NESTING: usize = 100_000;
/// How long another client may wait for `eth_chainId` while a batch is being answered.
pub(crate) const OTHER_CLIENT: Duration = Duration::from_secs(1);
/// Init code that loops until its gas is spent: `JUMPDEST PUSH1 0 JUMP`.
pub(crate) const GAS_BURNER: &str = "0x5b600056";

/// A client attack, by name.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ClientAttack {
    /// The head trickled a byte per 200 ms.
    SlowHead,
    /// A head with `Content-Length: 1000`, the body a byte per 200 ms.
    SlowBody,
    /// Many connections opened at once, held, closed.
    Flood,
    /// 100 `eth_getLogs` over 64 blocks each, in one batch.
    LogsBatch,
    /// 100 `eth_call`s of a loop that burns all its gas, in one batch.
    CallBatch,
    /// `eth_getBalance` with a 1 MiB string as the address.
    HugeString,
    /// `eth_getBalance` with params nested 100,000 arrays deep.
    DeepNesting,
}

impl ClientAttack {
    /// Every client attack, in the order they run.
    pub(crate) const ALL: [ClientAttack; 7] = [
        ClientAttack::SlowHead,
        ClientAttack::SlowBody,
        ClientAttack::Flood,
        ClientAttack::LogsBatch,
        ClientAttack::CallBatch,
        ClientAttack::HugeString,
        ClientAttack::DeepNesting,
    ];

    /// The row's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ClientAttack::SlowHead => "slowloris: head",
            ClientAttack::SlowBody => "slowloris: body",
            ClientAttack::Flood => "connection flood",
            ClientAttack::LogsBatch => "batch of 100 eth_getLogs (64 blocks each)",
            ClientAttack::CallBatch => "batch of 100 eth_call burning all gas",
            ClientAttack::HugeString => "huge param: 1 MiB string",
            ClientAttack::DeepNesting => "huge param: 100,000-deep nesting",
        }
    }

    /// Whether a connection still open when the attacker gave up counts against the server
    /// (a trickle it never cut).
    pub(crate) fn must_cut(self) -> bool {
        matches!(self, ClientAttack::SlowHead | ClientAttack::SlowBody)
    }

    /// Runs the attack against `addr`.
    pub(crate) async fn run(self, addr: SocketAddr, short: bool) -> Outcome {
        let ctx = Ctx {
            addr,
            api: None,
            token: String::new(),
            scale: scale(short),
        };
        match self {
            ClientAttack::SlowHead => http1::slowloris(ctx, Trickle::Head).await,
            ClientAttack::SlowBody => http1::slowloris(ctx, Trickle::Body).await,
            ClientAttack::Flood => http1::open_and_close(ctx).await,
            ClientAttack::LogsBatch => one_post(addr, logs_batch()).await,
            ClientAttack::CallBatch => one_post(addr, call_batch(None)).await,
            ClientAttack::HugeString => one_post(addr, huge_string()).await,
            ClientAttack::DeepNesting => one_post(addr, deep_nesting()).await,
        }
    }
}

/// The sizes: the trickles outlast a 10 s header timeout; the flood is 10,000 connections
/// (2,000 short) or what the descriptor limit allows.
fn scale(short: bool) -> Scale {
    let wanted = if short { 2_000 } else { FLOOD_FULL };
    Scale {
        flood: wanted.min(flood_room()),
        slow_conns: if short { 10 } else { 50 },
        slow_for: Duration::from_secs(15),
        ..Scale::short()
    }
}

/// Raises the campaign's soft descriptor limit to its hard limit and says how many
/// connections fit beside what the campaign keeps.
fn flood_room() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct passed; no other memory.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        limit.rlim_cur = limit.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        }
    }
    limit.rlim_cur.saturating_sub(FD_RESERVE) as usize
}

/// Sends one body and describes the answer.
async fn one_post(addr: SocketAddr, (sent, body): (String, Vec<u8>)) -> Outcome {
    let reply = post(addr, body, CALL_LIMIT).await;
    Outcome::text(sent, describe(&reply))
}

fn batch(sent: String, calls: impl Iterator<Item = Value>) -> (String, Vec<u8>) {
    let body = Value::Array(calls.collect()).to_string().into_bytes();
    (format!("{sent} ({} B)", body.len()), body)
}

fn logs_batch() -> (String, Vec<u8>) {
    logs_batch_over(|i| (i as u64 * 64, i as u64 * 64 + 63), "64 blocks each")
}

/// 100 `eth_getLogs` of every log over the widest range the server allows (64 blocks),
/// ending at block `head` and starting after the execution genesis (which no beacon block
/// carries, so it is refused).
pub(crate) fn logs_batch_to(head: u64) -> (String, Vec<u8>) {
    let from = head.saturating_sub(63).max(1);
    logs_batch_over(|_| (from, head), &format!("each of blocks {from}..={head}"))
}

fn logs_batch_over(range: impl Fn(usize) -> (u64, u64), label: &str) -> (String, Vec<u8>) {
    let calls = (0..BATCH).map(|i| {
        let (from, to) = range(i);
        json!({"jsonrpc": "2.0", "id": i, "method": "eth_getLogs",
            "params": [{"fromBlock": format!("{from:#x}"), "toBlock": format!("{to:#x}")}]})
    });
    batch(format!("{BATCH} eth_getLogs, {label}"), calls)
}

/// 100 `eth_call`s of [`GAS_BURNER`] at `latest`, no gas given (the server's default and cap
/// apply): as init code, or of the contract `burner` holding it as its code.
pub(crate) fn call_batch(burner: Option<Address>) -> (String, Vec<u8>) {
    let call = match burner {
        Some(to) => json!({"to": to}),
        None => json!({"data": GAS_BURNER}),
    };
    let calls = (0..BATCH).map(
        |i| json!({"jsonrpc": "2.0", "id": i, "method": "eth_call", "params": [call, "latest"]}),
    );
    let what = match burner {
        Some(to) => format!("of {to} (code {GAS_BURNER})"),
        None => format!("of {GAS_BURNER}"),
    };
    batch(format!("{BATCH} eth_call {what}, no gas given"), calls)
}

/// Sends `batch` and, a second after it went out, one `eth_chainId` from another client:
/// the batch's outcome (its answer and how long it took) and how long the other client
/// waited for its answer, if it got one within [`OTHER_CLIENT`].
pub(crate) async fn batch_beside_a_client(
    addr: SocketAddr,
    (sent, body): (String, Vec<u8>),
) -> (Outcome, Option<Duration>) {
    let started = std::time::Instant::now();
    let batch = tokio::spawn(async move { post(addr, body, CALL_LIMIT).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let other = super::server::recovers(addr, OTHER_CLIENT).await;
    let reply = batch
        .await
        .unwrap_or_else(|e| Err(format!("the batch's task: {e}")));
    let answered = format!(
        "{} in {} ms; another client's eth_chainId during it: {}",
        describe(&reply),
        started.elapsed().as_millis(),
        other.map_or(format!("no answer within {OTHER_CLIENT:?}"), |d| {
            format!("answered in {} ms", d.as_millis())
        })
    );
    (Outcome::text(sent, answered), other)
}

fn huge_string() -> (String, Vec<u8>) {
    let address = format!("0x{}", "a".repeat(HUGE_STRING));
    let body = super::server::call("eth_getBalance", json!([address, "latest"]));
    (
        format!("eth_getBalance, a {} B address", HUGE_STRING + 2),
        body,
    )
}

fn deep_nesting() -> (String, Vec<u8>) {
    let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":"#.to_vec();
    body.extend(std::iter::repeat_n(b'[', NESTING));
    body.extend(std::iter::repeat_n(b']', NESTING));
    body.push(b'}');
    (
        format!("eth_getBalance, params {NESTING} arrays deep"),
        body,
    )
}
