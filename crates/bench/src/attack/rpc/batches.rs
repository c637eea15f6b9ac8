//! The expensive batches on the live chain: one `sszgate rpc` in local mode (geth and
//! Lodestar behind it, so every call does its real upstream and EVM work) gets a batch of 100
//! `eth_getLogs` over the widest range it allows, then a batch of 100 `eth_call`s of a loop
//! that burns all the gas it is given; while each batch is answered another client asks
//! `eth_chainId` and must be answered within a second.
//!
//! Not here: the measurement and the verdicts (`super::measured_row`), the bodies
//! (`super::clients`).

use std::path::Path;

use alloy_primitives::{Address, Bytes};
use sszgate_drive::Senders;

use super::{
    Row,
    chain::LiveChain,
    clients, forged_head,
    server::{RpcChild, Started},
};

/// The group these rows are in.
pub(crate) const GROUP: &str = "clients (live)";

/// The rows' names, in the order they run.
pub(crate) const ATTACKS: [&str; 2] = [
    "batch of 100 eth_getLogs over the widest range (local mode, live chain)",
    "batch of 100 eth_call burning all their gas (local mode, live chain)",
];

/// The two rows; both not run (and failed) when the local-mode server does not start.
pub(crate) async fn rows(sszgate: &Path, dir: &Path, chain: &LiveChain) -> Vec<Row> {
    let started = match start(sszgate, dir, chain).await {
        Ok(child) => anchored_head(&child).await.map(|head| (child, head)),
        Err(e) => Err(e),
    };
    let (mut child, head) = match started {
        Ok(started) => started,
        Err(e) => return not_run(&e),
    };
    let mut rows = Vec::new();
    let burner = match deploy_burner(chain).await {
        Ok(burner) => burner,
        Err(e) => return not_run(&format!("the gas burner was not deployed: {e}")),
    };
    let bodies = [
        clients::logs_batch_to(head),
        clients::call_batch(Some(burner)),
    ];
    for (attack, body) in ATTACKS.iter().zip(bodies) {
        eprintln!("sszgate bench attack --target rpc: {GROUP}: {attack}");
        let addr = child.addr;
        let run = clients::batch_beside_a_client(addr, body);
        let mut row = super::measured_row(&mut child, GROUP, attack, run).await;
        row.failures = super::judge_client(&row, false, row.failures.clone());
        rows.push(row);
    }
    rows
}

/// Deploys [`clients::GAS_BURNER`] from the dev account; its address, once mined.
async fn deploy_burner(chain: &LiveChain) -> Result<Address, String> {
    let sender = Senders::dev().addresses().0;
    let pending = serde_json::json!([sender, "pending"]);
    let nonce = chain.quantity("eth_getTransactionCount", pending).await?;
    super::prover::send_mined(chain, nonce, None, Bytes::from_static(BURNER_INIT)).await?;
    Ok(sender.create(nonce))
}

/// Init code returning [`clients::GAS_BURNER`] as the contract's code:
/// `PUSH4 <burner> PUSH1 0 MSTORE PUSH1 4 PUSH1 28 RETURN`.
const BURNER_INIT: &[u8] = &[
    0x63, 0x5b, 0x60, 0x00, 0x56, 0x60, 0x00, 0x52, 0x60, 0x04, 0x60, 0x1c, 0xf3,
];

/// Both rows not run, each failed with `why`.
fn not_run(why: &str) -> Vec<Row> {
    ATTACKS
        .iter()
        .map(|attack| {
            let mut row = Row::not_run(GROUP, attack, why);
            row.failures.push(why.to_string());
            row
        })
        .collect()
}

/// `sszgate rpc --execution <geth> --beacon <lodestar>` from the campaign's checkpoint.
async fn start(sszgate: &Path, dir: &Path, chain: &LiveChain) -> Result<RpcChild, String> {
    let spec = forged_head::chain_spec(chain).await?;
    let (checkpoint, _) = forged_head::checkpoint(chain, &spec).await?;
    let args: Vec<String> = vec![
        "--execution".into(),
        chain.geth(),
        "--beacon".into(),
        chain.beacon(),
        "--chain-id".into(),
        forged_head::CHAIN_ID.to_string(),
        "--checkpoint".into(),
        checkpoint,
        "--state".into(),
        dir.join("batches.json").to_string_lossy().into_owned(),
    ];
    match RpcChild::start(sszgate, &args, &dir.join("batches.log")).await {
        Started::Serving(child) => Ok(child),
        Started::Ended(status, log) => Err(format!(
            "the local-mode server ended at start ({status}): {log}"
        )),
    }
}

/// The newest block the server anchors (`eth_blockNumber`), asked until it answers (at most
/// a minute: the light client syncs first).
async fn anchored_head(child: &RpcChild) -> Result<u64, String> {
    let ask = super::server::call("eth_blockNumber", serde_json::json!([]));
    let mut last = String::new();
    for _ in 0..60 {
        let reply =
            super::server::post(child.addr, ask.clone(), std::time::Duration::from_secs(10)).await;
        match reply {
            Ok(reply) => match super::chain::quantity(&reply.json["result"]) {
                Some(head) => return Ok(head),
                None => last = reply.json.to_string(),
            },
            Err(e) => last = e,
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    Err(format!(
        "the local-mode server anchored no block within a minute: {last}"
    ))
}
