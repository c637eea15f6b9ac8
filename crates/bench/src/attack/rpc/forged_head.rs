//! The forged-head rows on the live Fulu chain: the dev sender sends two transfers after an
//! older block O; later the beacon relay serves a head C re-parented on F (the head's parent
//! carrying O's state root, its hash recomputed) and signed by `k` of the 512 seats, and the
//! execution relay serves F's block with that header and O's state. `sszgate rpc` (local mode,
//! from a checkpoint after the transfers) is asked `eth_getTransactionCount(sender, "latest")`:
//! O's nonce is the forged answer, the nonce after the transfers the true one.
//!
//! Not here: the forgery's bytes (`forge`), the relays (`relay`), the chain (`chain`).

use std::{path::Path, time::Duration};

use alloy_primitives::{Address, B256, U256};
use serde_json::{Value, json};
use sszgate_drive::load::{Call, Senders};
use sszgate_light::{ChainSpec, types::Bootstrap};

use super::{
    Row, Verdict,
    chain::{LiveChain, quantity},
    forge::{
        ForgedHeader, ForgedParent, Older, forge_child, forge_header, forge_parent, fulu_block,
    },
    interop::Seats,
    relay::{Lie, Relay},
    server::{self, RpcChild, Started},
};
use crate::proxy::rss_kib;

/// The group's name in the table.
pub(crate) const GROUP: &str = "forged head";
/// The committee shares signing the forged head; the last is the control (2/3 and more).
pub(crate) const SHARES: [usize; 4] = [1, 100, 300, 400];
/// The share from which a forgery is out of any light client's model.
const CONTROL_FROM: usize = 342;
/// The chain's id and validator count (the kit's).
/// The live chain's id.
pub(crate) const CHAIN_ID: u64 = 1337;
const VALIDATORS: u64 = 8;
/// How long the chain may take to reach each waypoint.
const WAIT: Duration = Duration::from_secs(180);

/// The row's attack in words.
pub(crate) fn attack(k: usize) -> String {
    if k >= CONTROL_FROM {
        format!("control: head signed by {k} of 512 seats")
    } else {
        format!("head signed by {k} of 512 seats")
    }
}

/// What every row shares: the chain, the relays, the forgery's parts, the two nonces.
struct Stage {
    spec: ChainSpec,
    seats: Seats,
    checkpoint: String,
    head: Vec<u8>,
    parent: ForgedParent,
    header: ForgedHeader,
    sender: Address,
    forged_nonce: u64,
    true_nonce: u64,
    beacon: Relay,
    execution: Relay,
}

/// Runs the rows on `chain`; a stage that cannot be set up makes every row "not run" (and a
/// failure: the live rows were asked for).
pub(crate) async fn rows(sszgate: &Path, dir: &Path, chain: &LiveChain) -> Vec<Row> {
    let stage = match stage(chain).await {
        Ok(stage) => stage,
        Err(e) => {
            return SHARES
                .iter()
                .map(|&k| {
                    let mut row = Row::not_run(GROUP, &attack(k), &format!("no forgery: {e}"));
                    row.failures
                        .push(format!("the forgery could not be set up: {e}"));
                    row
                })
                .collect();
        }
    };
    eprintln!(
        "sszgate bench attack --target rpc: forged head: F = slot {} (block {} with block {}'s state root), seats per validator {:?}",
        stage.parent.slot,
        stage.header.number,
        stage.header.older_number,
        stage.seats.per_validator
    );
    let mut rows = Vec::new();
    for k in SHARES {
        eprintln!(
            "sszgate bench attack --target rpc: forged head: {}",
            attack(k)
        );
        rows.push(row(sszgate, dir, &stage, k).await);
    }
    rows
}

/// Sends the transfers, takes the checkpoint and the committee, and forges F.
async fn stage(chain: &LiveChain) -> Result<Stage, String> {
    let spec = chain_spec(chain).await?;
    chain.head_at(2, WAIT).await?;
    let senders = Senders::dev();
    let sender = senders.addresses().0;
    let older = older_block(chain).await?;
    let forged_nonce = chain
        .quantity(
            "eth_getTransactionCount",
            json!([sender, {"blockHash": older.hash}]),
        )
        .await?;
    send_transfers(chain, &senders, forged_nonce).await?;
    let true_nonce = forged_nonce + 2;
    let (checkpoint, committee) = checkpoint(chain, &spec).await?;
    let seats = Seats::of(&committee, VALIDATORS)?;
    let (head, parent_block) = head_and_parent(chain, &spec, &checkpoint).await?;
    let number = parent_block.message.body.execution_payload.block_number;
    let at_parent = chain
        .quantity(
            "eth_getTransactionCount",
            json!([sender, format!("{number:#x}")]),
        )
        .await?;
    if at_parent != true_nonce {
        return Err(format!(
            "the sender's nonce at block {number} is {at_parent}, not {true_nonce}"
        ));
    }
    let real = chain
        .eth(
            "eth_getBlockByNumber",
            json!([format!("{number:#x}"), false]),
        )
        .await?;
    let header = forge_header(&real, older)?;
    let parent = forge_parent(parent_block, &header)?;
    Ok(Stage {
        spec,
        seats,
        checkpoint,
        head,
        parent,
        header,
        sender,
        forged_nonce,
        true_nonce,
        beacon: Relay::start(&chain.beacon())
            .await
            .map_err(|e| e.to_string())?,
        execution: Relay::start(&chain.geth())
            .await
            .map_err(|e| e.to_string())?,
    })
}

/// geth's latest block as O: its number, hash and state root.
async fn older_block(chain: &LiveChain) -> Result<Older, String> {
    let block = chain
        .eth("eth_getBlockByNumber", json!(["latest", false]))
        .await?;
    let field = |name: &str| -> Result<B256, String> {
        serde_json::from_value(block[name].clone())
            .map_err(|e| format!("geth's latest block's {name}: {e}"))
    };
    Ok(Older {
        number: quantity(&block["number"]).ok_or("geth's latest block has no number")?,
        hash: field("hash")?,
        state_root: field("stateRoot")?,
    })
}

/// Two transfers from the dev sender from `nonce`, waited for until both are in a block.
async fn send_transfers(chain: &LiveChain, senders: &Senders, nonce: u64) -> Result<(), String> {
    let sender = senders.addresses().0;
    for n in [nonce, nonce + 1] {
        let tx = senders.sign(Call {
            chain_id: CHAIN_ID,
            nonce: n,
            to: Some(Address::repeat_byte(0x5a)),
            value: U256::from(1_000 + n),
            input: Default::default(),
            gas_limit: 21_000,
        });
        chain.eth("eth_sendRawTransaction", json!([tx.raw])).await?;
    }
    let started = std::time::Instant::now();
    while started.elapsed() < WAIT {
        let now = chain
            .quantity("eth_getTransactionCount", json!([sender, "latest"]))
            .await?;
        if now >= nonce + 2 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(format!("the transfers were not in a block within {WAIT:?}"))
}

/// The live chain's spec, as its node serves it.
pub(crate) async fn chain_spec(chain: &LiveChain) -> Result<ChainSpec, String> {
    let spec = chain.beacon_json("/eth/v1/config/spec").await?;
    let genesis = chain.beacon_json("/eth/v1/beacon/genesis").await?;
    ChainSpec::from_beacon_api(&spec["data"], &genesis["data"])
        .map_err(|e| format!("the chain's spec: {e}"))
}

/// The head's root (after the transfers) once the node serves its light-client bootstrap,
/// and the committee the bootstrap proves.
pub(crate) async fn checkpoint(
    chain: &LiveChain,
    spec: &ChainSpec,
) -> Result<(String, sszgate_light::types::SyncCommittee), String> {
    let started = std::time::Instant::now();
    loop {
        let (_, root) = chain.head_at(0, WAIT).await?;
        let path = format!("/eth/v1/beacon/light_client/bootstrap/{root}");
        match chain.beacon_ssz(&path).await {
            Ok(bytes) => {
                let bootstrap = Bootstrap::from_ssz(spec, &bytes).map_err(|e| e.to_string())?;
                return Ok((root, bootstrap.current_sync_committee));
            }
            Err(e) if started.elapsed() > WAIT => return Err(format!("no bootstrap: {e}")),
            Err(_) => tokio::time::sleep(Duration::from_secs(2)).await,
        }
    }
}

/// The head (SSZ) and its parent, both after the checkpoint's slot.
async fn head_and_parent(
    chain: &LiveChain,
    spec: &ChainSpec,
    checkpoint: &str,
) -> Result<
    (
        Vec<u8>,
        sszgate_light::block::SignedBeaconBlock<sszgate_light::block::ElectraBeaconBlockBody>,
    ),
    String,
> {
    let at = chain
        .beacon_json(&format!("/eth/v1/beacon/headers/{checkpoint}"))
        .await?;
    let slot: u64 = at["data"]["header"]["message"]["slot"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or("the checkpoint's header has no slot")?;
    let (_, root) = chain.head_at(slot + 2, WAIT).await?;
    let head = chain
        .beacon_ssz(&format!("/eth/v2/beacon/blocks/{root}"))
        .await?
        .to_vec();
    let parent_root = fulu_block(spec, &head)?.message.parent_root;
    let parent = chain
        .beacon_ssz(&format!("/eth/v2/beacon/blocks/{parent_root}"))
        .await?;
    let parent = fulu_block(spec, &parent)?;
    if parent.message.slot <= slot {
        return Err(format!(
            "the head's parent (slot {}) is not after the checkpoint",
            parent.message.slot
        ));
    }
    Ok((head, parent))
}

/// One share: the relays tell the forgery signed by `k` seats, a fresh `sszgate rpc` is asked.
async fn row(sszgate: &Path, dir: &Path, stage: &Stage, k: usize) -> Row {
    let mut row = Row::new(
        GROUP,
        attack(k),
        format!(
            "eth_getTransactionCount({}, \"latest\"); the head re-parented on block {} carrying block {}'s state root (nonce {} there, {} in truth), signed by {k} of 512 seats",
            stage.sender,
            stage.header.number,
            stage.header.older_number,
            stage.forged_nonce,
            stage.true_nonce
        ),
        String::new(),
    );
    let head = fulu_block(&stage.spec, &stage.head).expect("decoded once already");
    let slot = head.message.slot;
    let (child, child_root) = forge_child(&stage.spec, head, &stage.parent, &stage.seats, k);
    let parent = stage.parent.ssz();
    let blocks = [
        ("head".to_string(), child.clone()),
        (slot.to_string(), child.clone()),
        (child_root.to_string(), child),
        (stage.parent.slot.to_string(), parent.clone()),
        (stage.parent.root.to_string(), parent),
    ];
    stage.beacon.tell(Lie::Blocks(blocks.into_iter().collect()));
    stage.execution.tell(Lie::Header(stage.header.clone()));
    let args: Vec<String> = vec![
        "--execution".into(),
        stage.execution.url.clone(),
        "--beacon".into(),
        stage.beacon.url.clone(),
        "--chain-id".into(),
        CHAIN_ID.to_string(),
        "--checkpoint".into(),
        stage.checkpoint.clone(),
        "--state".into(),
        dir.join(format!("forged-{k}.json"))
            .to_string_lossy()
            .into_owned(),
    ];
    let mut child =
        match RpcChild::start(sszgate, &args, &dir.join(format!("forged-{k}.log"))).await {
            Started::Serving(child) => child,
            Started::Ended(status, log) => {
                row.answered = format!("not run: sszgate rpc ended at start ({status}): {log}");
                row.failures.push(row.answered.clone());
                return row;
            }
        };
    row.rss_before_kib = rss_kib(child.pid()).1;
    let started = std::time::Instant::now();
    let call = server::call("eth_getTransactionCount", json!([stage.sender, "latest"]));
    let reply = server::post(child.addr, call, Duration::from_secs(60)).await;
    row.took_ms = started.elapsed().as_millis() as u64;
    row.answered = server::describe(&reply);
    row.recovered_ms = server::recovers(child.addr, super::RECOVERY)
        .await
        .map(|d| d.as_millis() as u64);
    row.rss_after_kib = rss_kib(child.pid()).1;
    row.rss_peak_kib = row.rss_before_kib.max(row.rss_after_kib);
    row.alive = Some(child.alive());
    let result = reply
        .as_ref()
        .ok()
        .map(|r| r.json.clone())
        .unwrap_or(Value::Null);
    row.check = result.get("error").and_then(server::check_of);
    judge(&mut row, stage, k, &result);
    row
}

/// The verdict: O's nonce is the forged answer (a control must give it, an attack must not).
fn judge(row: &mut Row, stage: &Stage, k: usize, reply: &Value) {
    let answered = reply.get("result").and_then(quantity);
    let told = stage.beacon.told();
    let forged = answered == Some(stage.forged_nonce);
    row.verdict = match (k >= CONTROL_FROM, forged) {
        (true, _) => Verdict::Control,
        (false, true) => Verdict::AcceptedWrong,
        (false, false) => Verdict::Refused,
    };
    if k >= CONTROL_FROM && !forged {
        row.failures.push(format!(
            "the control was not accepted (expected nonce {}): the forgery is not well-formed, and the refusals prove nothing",
            stage.forged_nonce
        ));
    }
    if forged && k < CONTROL_FROM {
        row.failures.push(format!(
            "answered the forged state's nonce {} (the truth is {})",
            stage.forged_nonce, stage.true_nonce
        ));
    }
    if told == 0 {
        row.failures
            .push("the forged head was never asked for".into());
    }
    if answered.is_some() && !forged {
        row.answered
            .push_str(" (a verified older or true value, not the forged state's)");
    }
    if row.recovered_ms.is_none() {
        row.failures.push(format!(
            "no normal call answered within {:?}",
            super::RECOVERY
        ));
    }
}
