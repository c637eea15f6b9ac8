//! The lying-prover rows on the live Fulu chain: `sszgate rpc --prover` (remote mode) asks its
//! proofs of a relay in front of `sszgate rpc --serve-proofs`; the relay changes what it asks
//! the real prover (an older block for `latest`, another block's hash for logs, a range cut
//! short), takes a whole block or a matching receipt out of the range proof the prover
//! answered, or asks a second prover run with another `--chain-id`, and hands that proof out
//! as the answer to the verifier's request. Each answer is compared with geth's for the same
//! call.
//!
//! Not here: the chain (`chain`), the checkpoint (`forged_head::checkpoint`), the verdict
//! words (`super::Verdict`).

use std::{
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use alloy_primitives::{Address, B256, Bytes, U256};
use bytes::Bytes as Body;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response, body::Incoming};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Value, json};
use ssz_types::VariableList;
use sszgate_drive::load::{Call, Senders};
use sszgate_proof::types::LogsRangeBlock;

use super::{
    Row, Verdict,
    chain::{LiveChain, quantity},
    server::{self, RpcChild, Started},
};
use crate::proxy::rss_kib;

/// The group's name in the table.
pub(crate) const GROUP: &str = "lying prover";
/// The rows' attacks, in the order they run.
pub(crate) const ATTACKS: [&str; 6] = [
    "`latest` answered with the proof of a block 20+ slots older",
    "eth_getLogs by block hash answered with another block's logs",
    "eth_getLogs over two blocks with logs answered with one block's proof (a log left out)",
    "eth_getLogs over a range answered with a whole block left out of the range proof",
    "eth_getLogs over a range answered with a matching receipt left out of its block",
    "eth_call answered by a prover run with --chain-id 1",
];
/// A contract: called with a word, it stores it in slot 0 and logs it (topic: the caller);
/// called without data, it returns slot 0 (`bin/sszgate/tests/verified_rpc.rs`'s).
const LOGGER: &str = "6022600c60003960226000f3361560165760003580600055600052336020600\
                      0a1005b60005460005260206000f3";
/// A contract returning CHAINID as a word: init code returning the 7-byte runtime
/// `CHAINID PUSH0 MSTORE PUSH1 32 PUSH0 RETURN`.
const CHAIN_ID_CONTRACT: &str = "66465f5260205ff35f5260076019f3";
/// How long one call of the verifier may take.
const ASK: Duration = Duration::from_secs(60);
/// Seats (of 512) the blocks the rows ask about must carry, so that an honest proof is
/// answered under the verifier's default rule.
const PARTICIPATION: usize = 342;
/// Log pairs sent at most until both blocks are signed by [`PARTICIPATION`] seats.
const PAIRS: u64 = 8;
/// The chain's id (the kit's).
const CHAIN_ID: u64 = 1337;
/// How far behind the head the "older" block must be, in blocks (beyond `--max-head-age`).
const OLDER_BY: u64 = 20;
/// How long the chain may take to reach each waypoint.
const WAIT: Duration = Duration::from_secs(180);
/// How often the honest answer is asked while refused for the chain's state (`honest_answer`).
const BASELINE_TRIES: usize = 15;
/// The most bytes the relay reads of a request or a proof.
const MAX_BODY: usize = 64 << 20;

/// What the relay changes in a proof request.
#[derive(Clone, Debug)]
enum ProofLie {
    /// `latest` asked of the prover as this older block number.
    OldLatest(u64),
    /// eth_getLogs' `blockHash` asked as this other block's.
    OtherBlock(B256),
    /// eth_getLogs' `toBlock` asked as this number (the range cut short).
    CutRange(u64),
    /// eth_getLogs' range proof with its first block that holds receipts (not the newest)
    /// taken out.
    BlockLeftOut,
    /// eth_getLogs' range proof with the first receipt that holds a matching log taken out of
    /// its block, and its transaction with it.
    ReceiptLeftOut,
    /// The request asked of the prover with another chain id.
    OtherChain,
}

/// The transactions and blocks the rows ask about.
struct Scene {
    sender: Address,
    logger: Address,
    chain_id_contract: Address,
    /// A block before the transactions.
    older: u64,
    /// The two blocks with the logger's logs: (number, hash), the first before the second.
    logs: [(u64, B256); 2],
}

/// Runs the rows on `chain` from `checkpoint`; a scene or process that cannot be set up makes
/// every row "not run" and a failure (the live rows were asked for).
pub(crate) async fn rows(sszgate: &Path, dir: &Path, chain: &LiveChain) -> Vec<Row> {
    match run_rows(sszgate, dir, chain).await {
        Ok(rows) => rows,
        Err(e) => ATTACKS
            .iter()
            .map(|attack| {
                let mut row = Row::not_run(GROUP, attack, &e);
                row.failures
                    .push(format!("the lying prover was not set up: {e}"));
                row
            })
            .collect(),
    }
}

async fn run_rows(sszgate: &Path, dir: &Path, chain: &LiveChain) -> Result<Vec<Row>, String> {
    let scene = scene(chain).await?;
    let spec = super::forged_head::chain_spec(chain).await?;
    let (checkpoint, _) = super::forged_head::checkpoint(chain, &spec).await?;
    let prover = |chain_id: u64, name: &'static str| {
        let args = vec![
            "--execution".into(),
            chain.geth(),
            "--beacon".into(),
            chain.beacon(),
            "--serve-proofs".into(),
            "--chain-id".into(),
            chain_id.to_string(),
            "--checkpoint".into(),
            checkpoint.clone(),
            "--state".into(),
            dir.join(format!("{name}.json"))
                .to_string_lossy()
                .into_owned(),
        ];
        let log = dir.join(format!("{name}.log"));
        async move { serving(RpcChild::start(sszgate, &args, &log).await, name) }
    };
    let honest = prover(CHAIN_ID, "prover").await?;
    let other = prover(1, "prover-chain-1").await?;
    let relay = ProverRelay::start(
        format!("http://{}/proof", honest.addr),
        format!("http://{}/proof", other.addr),
    )
    .await
    .map_err(|e| format!("the prover relay: {e}"))?;
    let args = vec![
        "--prover".into(),
        format!("{}/proof", relay.url),
        "--beacon".into(),
        chain.beacon(),
        "--chain-id".into(),
        CHAIN_ID.to_string(),
        "--checkpoint".into(),
        checkpoint,
        "--blob-schedule".into(),
        "0:48:72:5007716".into(),
        "--state".into(),
        dir.join("verifier.json").to_string_lossy().into_owned(),
    ];
    let log = dir.join("verifier.log");
    let mut verifier = serving(RpcChild::start(sszgate, &args, &log).await, "verifier")?;
    let mut rows = Vec::new();
    for (attack, (lie, method, params)) in ATTACKS.iter().zip(asks(&scene)) {
        eprintln!("sszgate bench attack --target rpc: lying prover: {attack}");
        rows.push(row(chain, &mut verifier, &relay, attack, &lie, method, params).await);
    }
    Ok(rows)
}

/// What each row asks the verifier, and the lie that answers it.
fn asks(scene: &Scene) -> [(ProofLie, &'static str, Value); 6] {
    let [(first, first_hash), (second, second_hash)] = scene.logs;
    let range = json!([{"fromBlock": format!("{:#x}", first - 1), "toBlock": format!("{second:#x}"), "address": scene.logger}]);
    [
        (
            ProofLie::OldLatest(scene.older),
            "eth_getTransactionCount",
            json!([scene.sender, "latest"]),
        ),
        (
            ProofLie::OtherBlock(first_hash),
            "eth_getLogs",
            json!([{"blockHash": second_hash, "address": scene.logger}]),
        ),
        (
            ProofLie::CutRange(first),
            "eth_getLogs",
            json!([{"fromBlock": format!("{first:#x}"), "toBlock": format!("{second:#x}"), "address": scene.logger}]),
        ),
        (ProofLie::BlockLeftOut, "eth_getLogs", range.clone()),
        (ProofLie::ReceiptLeftOut, "eth_getLogs", range),
        (
            ProofLie::OtherChain,
            "eth_call",
            json!([{"to": scene.chain_id_contract, "data": "0x"}, format!("{second:#x}")]),
        ),
    ]
}

fn serving(started: Started, name: &str) -> Result<RpcChild, String> {
    match started {
        Started::Serving(child) => Ok(child),
        Started::Ended(status, log) => Err(format!("the {name} ended at start ({status}): {log}")),
    }
}

/// One row: the verifier asked through the lying relay, its answer judged against geth's.
#[allow(clippy::too_many_arguments)]
async fn row(
    chain: &LiveChain,
    verifier: &mut RpcChild,
    relay: &ProverRelay,
    attack: &str,
    lie: &ProofLie,
    method: &str,
    params: Value,
) -> Row {
    let mut row = Row::new(
        GROUP,
        attack.into(),
        format!("{method}({params}); the relay asks the prover {lie:?}"),
        String::new(),
    );
    relay.tell(None);
    let (honest, truth) = honest_answer(chain, verifier, method, &params).await;
    if let Err(why) = answered_truly(method, &honest, &truth) {
        row.answered =
            format!("not run: the honest proof is not answered with geth's answer: {why}");
        row.failures.push(row.answered.clone());
        return row;
    }
    relay.tell(Some(lie.clone()));
    row.rss_before_kib = rss_kib(verifier.pid()).1;
    let started = std::time::Instant::now();
    let call = server::call(method, params.clone());
    let reply = server::post(verifier.addr, call, ASK).await;
    row.took_ms = started.elapsed().as_millis() as u64;
    row.answered = server::describe(&reply);
    let reply = reply.map(|r| r.json).unwrap_or(Value::Null);
    row.check = reply.get("error").and_then(server::check_of);
    row.recovered_ms = server::recovers(verifier.addr, super::RECOVERY)
        .await
        .map(|d| d.as_millis() as u64);
    row.rss_after_kib = rss_kib(verifier.pid()).1;
    row.rss_peak_kib = row.rss_before_kib.max(row.rss_after_kib);
    row.alive = Some(verifier.alive());
    judge(&mut row, method, &reply, truth, relay.told());
    row
}

/// The verifier's answer with no lie told, and geth's. A refusal for the chain's state, not
/// the proof (`tag`: the newest block signed by 2/3 is older than `--max-head-age`;
/// `participation`), is asked again a slot later, [`BASELINE_TRIES`] times at most: the
/// devnet's validators miss sync-committee duties on a loaded machine, and its slots are 2 s.
async fn honest_answer(
    chain: &LiveChain,
    verifier: &RpcChild,
    method: &str,
    params: &Value,
) -> (Value, Result<Value, String>) {
    let mut tried = 0;
    loop {
        tried += 1;
        let honest = server::post(verifier.addr, server::call(method, params.clone()), ASK).await;
        let honest = honest.map(|r| r.json).unwrap_or(Value::Null);
        let check = honest.get("error").and_then(server::check_of);
        let of_the_chain = matches!(check.as_deref(), Some("tag" | "participation"));
        if !of_the_chain || tried >= BASELINE_TRIES {
            return (honest, chain.eth(method, params.clone()).await);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Whether the verifier's answer to the honest prover is geth's: without it a refusal of the
/// lie proves nothing (the verifier might refuse the block for another reason).
fn answered_truly(
    method: &str,
    reply: &Value,
    truth: &Result<Value, String>,
) -> Result<(), String> {
    let truth = truth.as_ref().map_err(|e| format!("geth: {e}"))?;
    match reply.get("result") {
        Some(result) if agrees(method, result, truth) => Ok(()),
        Some(result) => Err(format!(
            "{} where geth answers {}",
            short(result),
            short(truth)
        )),
        None => Err(short(reply)),
    }
}

/// The verdict: an error is a refusal; a result equal to geth's is the truth (the lie had no
/// effect); any other result is a wrong answer accepted.
fn judge(row: &mut Row, method: &str, reply: &Value, truth: Result<Value, String>, told: u64) {
    if told == 0 {
        row.failures.push("the lie was never told".into());
    }
    if row.recovered_ms.is_none() {
        row.failures.push(format!(
            "no normal call answered within {:?}",
            super::RECOVERY
        ));
    }
    let Some(result) = reply.get("result") else {
        row.verdict = Verdict::Refused;
        if reply.get("error").is_none() {
            row.failures
                .push("neither a result nor an error came back".into());
        }
        return;
    };
    let truth = match truth {
        Ok(truth) => truth,
        Err(e) => {
            row.failures
                .push(format!("geth's answer, the truth, is missing: {e}"));
            return;
        }
    };
    if agrees(method, result, &truth) {
        row.verdict = Verdict::Truth;
        row.answered
            .push_str(" (geth's answer: the lie changed nothing)");
        return;
    }
    row.verdict = Verdict::AcceptedWrong;
    row.answered
        .push_str(&format!(" (geth: {})", short(&truth)));
    row.failures.push(format!(
        "a wrong answer accepted: geth answers {}",
        short(&truth)
    ));
}

/// Whether a verified answer to `method` agrees with geth's: every field of geth's the same,
/// except those the proof format does not bind (`sszgate_proof::render`'s rules: eth_getLogs'
/// range proof binds every field but `blockTimestamp`, `logIndex` included).
fn agrees(method: &str, ours: &Value, geths: &Value) -> bool {
    use sszgate_proof::render::{difference_from_standard, logs_difference};
    match method {
        "eth_getLogs" => logs_difference(ours, geths).is_none(),
        _ => difference_from_standard(ours, geths, "").is_none(),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Deploys the contracts, logs in two consecutive mined blocks, and waits until the block
/// before them is [`OLDER_BY`] blocks behind the head.
async fn scene(chain: &LiveChain) -> Result<Scene, String> {
    let senders = Senders::dev();
    let sender = senders.addresses().0;
    let pending = json!([sender, "pending"]);
    let nonce = chain.quantity("eth_getTransactionCount", pending).await?;
    let older_number = chain.quantity("eth_blockNumber", json!([])).await?;
    let code = |hex: &str| Bytes::from(const_hex::decode(hex).unwrap_or_default());
    let word = |w: u64| Bytes::from(U256::from(w).to_be_bytes::<32>().to_vec());
    let logger = sender.create(nonce);
    let chain_id_contract = sender.create(nonce + 1);
    let send = |n: u64, to: Option<Address>, input: Bytes| send_mined(chain, n, to, input);
    send(nonce, None, code(LOGGER)).await?;
    send(nonce + 1, None, code(CHAIN_ID_CONTRACT)).await?;
    let mut logs = Err("no log pair sent".to_string());
    for pair in 0..PAIRS {
        let first = send(nonce + 2 + 2 * pair, Some(logger), word(0x51)).await?;
        let second = send(nonce + 3 + 2 * pair, Some(logger), word(0x52)).await?;
        logs = signed_by_enough(chain, first.0)
            .await
            .and(signed_by_enough(chain, second.0).await)
            .map(|()| [first, second]);
        if logs.is_ok() {
            break;
        }
    }
    let logs = logs?;
    chain.head_at(0, WAIT).await?;
    let started = std::time::Instant::now();
    while chain.quantity("eth_blockNumber", json!([])).await? < older_number + OLDER_BY {
        if started.elapsed() > WAIT {
            return Err(format!(
                "geth did not reach block {} within {WAIT:?}",
                older_number + OLDER_BY
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(Scene {
        sender,
        logger,
        chain_id_contract,
        older: older_number,
        logs,
    })
}

/// Sends the dev account's transaction `nonce` (to `to`, or creating a contract, with
/// `input`) and waits until it is mined: its block (number, hash).
pub(super) async fn send_mined(
    chain: &LiveChain,
    nonce: u64,
    to: Option<Address>,
    input: Bytes,
) -> Result<(u64, B256), String> {
    let tx = Senders::dev().sign(Call {
        chain_id: CHAIN_ID,
        nonce,
        to,
        value: U256::ZERO,
        input,
        gas_limit: 200_000,
    });
    chain.eth("eth_sendRawTransaction", json!([tx.raw])).await?;
    mined(chain, tx.hash).await
}

/// Whether execution block `number`'s beacon block is signed by [`PARTICIPATION`] seats in
/// its child's sync aggregate (a young chain's blocks often carry 256): the error says how many.
async fn signed_by_enough(chain: &LiveChain, number: u64) -> Result<(), String> {
    let (slot, _) = beacon_block_after(chain, number, |b| {
        quantity_str(&b["body"]["execution_payload"]["block_number"]) == Some(number)
    })
    .await?;
    let (_, child) = beacon_block_after(chain, slot + 1, |_| true).await?;
    let bits = child["body"]["sync_aggregate"]["sync_committee_bits"]
        .as_str()
        .and_then(|hex| const_hex::decode(hex).ok())
        .unwrap_or_default();
    let seats: usize = bits.iter().map(|b| b.count_ones() as usize).sum();
    if seats >= PARTICIPATION {
        return Ok(());
    }
    Err(format!("block {number} is signed by {seats} of 512 seats"))
}

/// The first beacon block (slot, message) from `slot` on that `fits`, waiting for new slots.
async fn beacon_block_after(
    chain: &LiveChain,
    slot: u64,
    fits: impl Fn(&Value) -> bool,
) -> Result<(u64, Value), String> {
    for at in slot..slot + 32 {
        chain.head_at(at, WAIT).await?;
        if let Ok(block) = chain
            .beacon_json(&format!("/eth/v2/beacon/blocks/{at}"))
            .await
        {
            let message = block["data"]["message"].clone();
            if fits(&message) {
                return Ok((at, message));
            }
        }
    }
    Err(format!(
        "no fitting beacon block in slots {slot}..{}",
        slot + 32
    ))
}

/// A decimal string (the Beacon API's JSON numbers) as a number.
fn quantity_str(value: &Value) -> Option<u64> {
    value.as_str()?.parse().ok()
}

/// The block (number, hash) that holds transaction `hash`, once it is mined.
async fn mined(chain: &LiveChain, hash: B256) -> Result<(u64, B256), String> {
    let started = std::time::Instant::now();
    while started.elapsed() < WAIT {
        let receipt = chain
            .eth("eth_getTransactionReceipt", json!([hash]))
            .await?;
        if receipt.is_object() {
            if receipt["status"] != json!("0x1") {
                return Err(format!("transaction {hash} failed: {receipt}"));
            }
            let number = quantity(&receipt["blockNumber"]).ok_or("a receipt without a block")?;
            let block = serde_json::from_value(receipt["blockHash"].clone())
                .map_err(|e| format!("the receipt's blockHash: {e}"))?;
            return Ok((number, block));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("transaction {hash} not mined within {WAIT:?}"))
}

type HttpClient = Client<HttpConnector, Full<Body>>;

struct Shared {
    honest: String,
    other: String,
    lie: Mutex<Option<ProofLie>>,
    told: AtomicU64,
    client: HttpClient,
}

/// A relay in front of the provers' `POST /proof`; dropped, it stops.
struct ProverRelay {
    url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ProverRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ProverRelay {
    /// A relay to `honest` (and `other`, the prover with another chain id).
    async fn start(honest: String, other: String) -> std::io::Result<ProverRelay> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            honest,
            other,
            lie: Mutex::new(None),
            told: AtomicU64::new(0),
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        let task = tokio::spawn(super::relay::serve_relay(listener, shared.clone(), relay));
        Ok(ProverRelay { url, shared, task })
    }

    /// Tells `lie` from now on, counting from zero.
    fn tell(&self, lie: Option<ProofLie>) {
        *self.shared.lie.lock().unwrap_or_else(|e| e.into_inner()) = lie;
        self.shared.told.store(0, Ordering::SeqCst);
    }

    /// How many requests the lie changed since it was told.
    fn told(&self) -> u64 {
        self.shared.told.load(Ordering::SeqCst)
    }
}

async fn relay(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Full<Body>>, std::convert::Infallible> {
    let answer = async {
        let body = Limited::new(request.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let mut asked: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        let lie = shared.lie.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (changed, upstream) = match &lie {
            Some(lie) => rewrite(lie, &mut asked),
            None => (false, false),
        };
        let url = if upstream {
            &shared.other
        } else {
            &shared.honest
        };
        let answered = forward(&shared.client, url, asked.to_string()).await?;
        let (answered, cut) = match lie {
            Some(ProofLie::BlockLeftOut) if asked["method"] == "eth_getLogs" => {
                change_range_proof(answered, leave_a_block_out).await?
            }
            Some(ProofLie::ReceiptLeftOut) if asked["method"] == "eth_getLogs" => {
                change_range_proof(answered, |blocks| leave_a_receipt_out(blocks)).await?
            }
            _ => (answered, false),
        };
        if changed || cut {
            shared.told.fetch_add(1, Ordering::SeqCst);
        }
        Ok::<_, String>(answered)
    };
    Ok(answer.await.unwrap_or_else(|e| {
        Response::builder()
            .status(502)
            .body(Full::new(Body::from(e)))
            .unwrap_or_default()
    }))
}

/// Changes a proof request (`{"method", "params", …}`) by `lie`: whether it changed it, and
/// whether it goes to the prover with another chain id.
fn rewrite(lie: &ProofLie, asked: &mut Value) -> (bool, bool) {
    let method = asked["method"].as_str().unwrap_or_default().to_string();
    let params = &mut asked["params"];
    match lie {
        ProofLie::OldLatest(number) => {
            let last = params.as_array_mut().and_then(|p| p.last_mut());
            match last {
                Some(tag) if tag == "latest" => {
                    *tag = json!(format!("{number:#x}"));
                    (true, false)
                }
                _ => (false, false),
            }
        }
        ProofLie::OtherBlock(hash) if method == "eth_getLogs" => {
            let filter = &mut params[0];
            let named = filter.get("blockHash").is_some();
            if named {
                filter["blockHash"] = json!(hash);
            }
            (named, false)
        }
        ProofLie::CutRange(to) if method == "eth_getLogs" => {
            let filter = &mut params[0];
            let named = filter.get("toBlock").is_some();
            if named {
                filter["toBlock"] = json!(format!("{to:#x}"));
            }
            (named, false)
        }
        ProofLie::OtherChain => (method == "eth_call", method == "eth_call"),
        _ => (false, false),
    }
}

/// The prover's eth_getLogs range proof with its blocks changed by `change` (which says
/// whether it changed them); whether it did. Any other answer passes unchanged.
async fn change_range_proof(
    answered: Response<Full<Body>>,
    change: fn(&mut Vec<LogsRangeBlock>) -> Option<()>,
) -> Result<(Response<Full<Body>>, bool), String> {
    let (parts, body) = answered.into_parts();
    let bytes = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let changed = sszgate_proof::decode(&bytes).ok().and_then(|mut request| {
        let sszgate_proof::types::ProofUnion::LogsRange(range) = &mut request.proof else {
            return None;
        };
        let mut blocks = range.blocks.to_vec();
        change(&mut blocks)?;
        range.blocks = VariableList::new(blocks).ok()?;
        Some(ssz::Encode::as_ssz_bytes(&request))
    });
    let cut = changed.is_some();
    let body = changed.map(Body::from).unwrap_or(bytes);
    Ok((Response::from_parts(parts, Full::new(body)), cut))
}

/// The oldest block that ships receipts (one that holds logs; never the newest, whose header
/// is signed) taken out of the range.
fn leave_a_block_out(blocks: &mut Vec<LogsRangeBlock>) -> Option<()> {
    let newest = blocks.len().checked_sub(1)?;
    let at = blocks[..newest]
        .iter()
        .position(|b| !b.receipts.is_empty())?;
    blocks.remove(at);
    Some(())
}

/// The first receipt with a matching log (the first transaction a block ships) taken out of
/// its block, with that transaction: the block's logs as if the transaction had none.
fn leave_a_receipt_out(blocks: &mut [LogsRangeBlock]) -> Option<()> {
    let block = blocks.iter_mut().find(|b| !b.txs.is_empty())?;
    let mut txs = block.txs.to_vec();
    let index = usize::try_from(txs.remove(0).transaction_index).ok()?;
    let mut receipts = block.receipts.to_vec();
    (index < receipts.len()).then(|| receipts.remove(index))?;
    block.txs = VariableList::new(txs).ok()?;
    block.receipts = VariableList::new(receipts).ok()?;
    Some(())
}

/// POSTs `body` to `url`: the answer with its status and content type.
async fn forward(
    client: &HttpClient,
    url: &str,
    body: String,
) -> Result<Response<Full<Body>>, String> {
    let request = Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Body::from(body)))
        .map_err(|e| e.to_string())?;
    let answered = client.request(request).await.map_err(|e| e.to_string())?;
    let status = answered.status();
    let content_type = answered.headers().get("content-type").cloned();
    let body = Limited::new(answered.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let mut response = Response::builder().status(status);
    if let Some(content_type) = content_type {
        response = response.header("content-type", content_type);
    }
    response.body(Full::new(body)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lie_changes_only_the_requests_it_is_about() {
        let mut latest = json!({"method": "eth_getBalance", "params": ["0xaa", "latest"]});
        assert_eq!(
            rewrite(&ProofLie::OldLatest(0x10), &mut latest),
            (true, false)
        );
        assert_eq!(latest["params"][1], "0x10");
        let mut at = json!({"method": "eth_getBalance", "params": ["0xaa", "0x20"]});
        assert_eq!(rewrite(&ProofLie::OldLatest(0x10), &mut at), (false, false));
        assert_eq!(at["params"][1], "0x20");
        let other = B256::repeat_byte(7);
        let mut logs = json!({"method": "eth_getLogs", "params": [{"blockHash": B256::ZERO}]});
        assert_eq!(
            rewrite(&ProofLie::OtherBlock(other), &mut logs),
            (true, false)
        );
        assert_eq!(logs["params"][0]["blockHash"], json!(other));
        let mut range =
            json!({"method": "eth_getLogs", "params": [{"fromBlock": "0x1", "toBlock": "0x3"}]});
        assert_eq!(rewrite(&ProofLie::CutRange(1), &mut range), (true, false));
        assert_eq!(range["params"][0]["toBlock"], "0x1");
        let mut call = json!({"method": "eth_call", "params": [{}, "0x1"]});
        assert_eq!(rewrite(&ProofLie::OtherChain, &mut call), (true, true));
        let mut count = json!({"method": "eth_blockNumber", "params": []});
        assert_eq!(rewrite(&ProofLie::OtherChain, &mut count), (false, false));
    }

    #[test]
    fn a_log_left_out_of_another_block_or_unindexed_does_not_agree_with_geths() {
        let log = |block: &str| json!({"blockHash": block, "logIndex": "0x0", "data": "0x2a"});
        let geths = json!([log("0x01"), log("0x02")]);
        assert!(agrees("eth_getLogs", &geths.clone(), &geths));
        assert!(!agrees("eth_getLogs", &json!([log("0x01")]), &geths));
        assert!(!agrees(
            "eth_getLogs",
            &json!([log("0x03"), log("0x02")]),
            &geths
        ));
        // A range proof binds logIndex: an answer without it is not geth's.
        let mut unindexed = geths.clone();
        unindexed[0].as_object_mut().unwrap().remove("logIndex");
        assert!(!agrees("eth_getLogs", &unindexed, &geths));
        // Elsewhere a field the proof does not bind may be left out.
        let receipt = json!({"status": "0x1", "gasUsed": "0x5208"});
        assert!(agrees(
            "eth_getTransactionReceipt",
            &json!({"status": "0x1"}),
            &receipt
        ));
        assert!(!agrees(
            "eth_getTransactionReceipt",
            &json!({"status": "0x0"}),
            &receipt
        ));
    }
}
