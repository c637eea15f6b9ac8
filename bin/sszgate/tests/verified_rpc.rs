//! `sszgate rpc` on a live chain as mainnet runs today: Lodestar v1.38 on Fulu (mainnet preset,
//! 512-member sync committees) and geth on Osaka with a BPO1 blob schedule (48/72 blobs,
//! update fraction 5007716), transactions this test sends (a transfer, a contract that stores
//! and logs a word, a call of it, an EIP-7702 delegation to that contract, blob transactions
//! enough to raise the blob base fee), every answer of the verified endpoint equal to geth's
//! own, `eth_call`/`eth_estimateGas` without `gas` included; then lying
//! relays between `sszgate rpc` and geth and between it and Lodestar: every lie is caught
//! with the check named, and the endpoint keeps serving. Then the proof mode: `sszgate rpc
//! --serve-proofs` next to the nodes, `sszgate rpc --prover` verifying its proofs from a
//! checkpoint (the first proof carries the bootstrap) to the same answers as geth's, and the
//! same prover fed lies by the relays: each proof it builds from them is refused.
//!
//! Needs geth and the Lodestar v1.38 build of `../shared/tools/lodestar-fulu/`
//! (`$SSZGATE_LODESTAR_FULU`). Answers that differ from geth's are gathered and reported
//! together at the end, so that one wrong method does not hide the rest of the run.

mod common;

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use alloy_consensus::{SignableTransaction, TxEip7702};
use alloy_eips::{eip2718::Encodable2718, eip7702::Authorization};
use alloy_primitives::{Address, Bytes, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use common::chain::{Chain, ONE_CHAIN, eth, fulu_tools};
use common::tamper::{Lie, TamperRelay};
use common::{KillOnDrop, free_port};
use serde_json::{Value, json};
use sszgate_drive::load::{Call, DEV_KEYS, EthRpc, Load, LoadShape, Senders};

/// The chain id of `up.sh`'s chain.
const CHAIN_ID: u64 = 1337;
/// The kit's BPO1 fork (`BPO1=1`): at genesis, 48 blobs' target, 72 at most, geth's
/// `baseFeeUpdateFraction` 5007716 — the execution chain's blob schedule, which the beacon
/// node's config does not carry.
const BLOB_SCHEDULE: &str = "0:48:72:5007716";
/// A contract: called with a word, it stores it in slot 0 and logs it (topic: the caller);
/// called without data, it returns slot 0. Init code `6022600c60003960226000f3` copies the
/// 34-byte runtime after it and returns it.
const CONTRACT: &str = "6022600c60003960226000f3\
                        361560165760003580600055600052336020600\
                        0a1005b60005460005260206000f3";
/// Where the transfer goes: an account nothing else touches.
const RECIPIENT: &str = "0x00000000000000000000000000000000005eed01";
/// The third key of the public test mnemonic, unfunded: the account that delegates to the
/// contract by an EIP-7702 authorization carried in a transaction of the funded sender.
const AUTHORITY_KEY: &str = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
/// Blob transactions each dev account sends at once (geth's blob pool holds 16 an account):
/// 192 blobs, more than two full BPO1 blocks of 72, so that the excess blob gas climbs.
const BLOB_TXS_PER_ACCOUNT: usize = 16;
const GWEI: u128 = 1_000_000_000;

/// `sszgate rpc` started against `execution` and `beacon`, from `checkpoint`, its state and
/// log under `dir` named by `name`.
fn start_rpc(
    execution: &str,
    beacon: &str,
    checkpoint: &str,
    dir: &Path,
    name: &str,
) -> (Child, String) {
    start_sszgate_rpc(
        &["--execution", execution, "--beacon", beacon],
        checkpoint,
        dir,
        name,
    )
}

/// `sszgate rpc` with `sources` (and the other flags as [`start_rpc`]).
fn start_sszgate_rpc(
    sources: &[&str],
    checkpoint: &str,
    dir: &Path,
    name: &str,
) -> (Child, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .arg("rpc")
        .args(sources)
        .args(["--checkpoint", checkpoint, "--chain-id", "1337"])
        .args(["--blob-schedule", BLOB_SCHEDULE])
        .args(["--listen", &listen])
        .arg("--state")
        .arg(dir.join(format!("{name}.json")))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    (child, listen)
}

/// Waits until `listen` accepts, or the process ends (its log then in the panic).
fn wait_serving(child: &mut Child, listen: &str, log: &Path) {
    let started = Instant::now();
    while std::net::TcpStream::connect(listen).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "sszgate rpc ended ({status}): {}",
                common::log_tail(log, 64 << 10)
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "sszgate rpc did not start"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn quantity(v: &Value) -> u64 {
    let text = v.as_str().unwrap_or_else(|| panic!("not a quantity: {v}"));
    u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
}

/// Sends the test's transactions to geth; their hashes and the contract's address, once all
/// are in blocks.
fn send_transactions(geth: &str) -> (Vec<String>, Address) {
    let senders = Senders::dev();
    let from = senders.addresses().0;
    let nonce = quantity(&eth(
        geth,
        "eth_getTransactionCount",
        json!([from, "pending"]),
    ));
    let contract = from.create(nonce);
    let word = Bytes::from(U256::from(0x2a).to_be_bytes::<32>().to_vec());
    let call = |nonce, to, value, input: Bytes, gas_limit| Call {
        chain_id: CHAIN_ID,
        nonce,
        to,
        value: U256::from(value),
        input,
        gas_limit,
    };
    let txs = [
        call(
            nonce,
            None,
            0,
            const_hex::decode(CONTRACT).unwrap().into(),
            200_000,
        ),
        call(
            nonce + 1,
            Some(RECIPIENT.parse().unwrap()),
            12_345,
            Bytes::new(),
            21_000,
        ),
        call(nonce + 2, Some(contract), 0, word, 100_000),
    ]
    .map(|c| senders.sign(c));
    let hashes: Vec<String> = txs
        .iter()
        .map(|tx| {
            let hash = eth(geth, "eth_sendRawTransaction", json!([tx.raw]));
            assert_eq!(hash, json!(tx.hash), "sent");
            tx.hash.to_string()
        })
        .collect();
    wait_mined(geth, &hashes);
    (hashes, contract)
}

/// Waits (at most 90 s) until every one of `hashes` has a receipt; the blocks they are in.
fn wait_mined(geth: &str, hashes: &[String]) -> Vec<u64> {
    let started = Instant::now();
    hashes
        .iter()
        .map(|hash| {
            loop {
                let receipt = eth(geth, "eth_getTransactionReceipt", json!([hash]));
                if !receipt.is_null() {
                    break quantity(&receipt["blockNumber"]);
                }
                assert!(
                    started.elapsed() < Duration::from_secs(240),
                    "{hash} not mined: {receipt}"
                );
                std::thread::sleep(Duration::from_millis(500));
            }
        })
        .collect()
}

/// The test's Osaka-era transactions, in blocks.
struct OsakaTxs {
    /// The account delegated to the contract by an EIP-7702 authorization.
    authority: Address,
    /// The type-4 transaction that carries the authorization and calls the authority.
    delegation: String,
    /// The type-3 transaction in the block with the most excess blob gas.
    blob: String,
    /// The blocks of the two.
    blocks: [u64; 2],
}

/// Sends an EIP-7702 delegation and then blob transactions from both dev accounts, as many
/// as geth's pool takes at once, to raise the excess blob gas; the blob transaction kept for
/// the checks is one in the block with the most excess blob gas (its blob base fee is then
/// the highest). Whether that fee rose above 1, where the BPO1 fraction shows, depends on how
/// geth packs the blocks while the transactions arrive: it is reported, not required.
fn send_osaka_transactions(geth: &str, contract: Address) -> OsakaTxs {
    let (delegation, authority) = send_delegation(geth, contract);
    let blob_hashes = send_blob_transactions(geth);
    let blocks = wait_mined(geth, std::slice::from_ref(&delegation));
    let mut excess = std::collections::BTreeMap::new();
    let mut blob_txs: Vec<(u64, u64, u64, &String)> = blob_hashes
        .iter()
        .map(|hash| {
            let receipt = eth(geth, "eth_getTransactionReceipt", json!([hash]));
            let block = quantity(&receipt["blockNumber"]);
            let block_excess = *excess.entry(block).or_insert_with(|| {
                let header = eth(
                    geth,
                    "eth_getBlockByNumber",
                    json!([format!("{block:#x}"), false]),
                );
                quantity(&header["excessBlobGas"])
            });
            (
                block_excess,
                quantity(&receipt["blobGasPrice"]),
                block,
                hash,
            )
        })
        .collect();
    blob_txs.sort();
    let (block_excess, fee, blob_block, blob) = blob_txs.last().cloned().unwrap();
    eprintln!(
        "blob transactions: {} in blocks {:?} (excess blob gas by block {excess:?}); checked: \
         {blob} in block {blob_block}, excess blob gas {block_excess}, blob base fee {fee}",
        blob_txs.len(),
        blob_txs
            .iter()
            .map(|t| t.2)
            .collect::<std::collections::BTreeSet<_>>(),
    );
    OsakaTxs {
        authority,
        delegation,
        blob: blob.clone(),
        blocks: [blocks[0], blob_block],
    }
}

/// A type-4 transaction from the first dev account to the authority, carrying the
/// authority's authorization to run the contract's code, with a word for it to store and
/// log; its hash once mined, and the authority.
fn send_delegation(geth: &str, contract: Address) -> (String, Address) {
    let sponsor: PrivateKeySigner = DEV_KEYS[0].parse().unwrap();
    let authority: PrivateKeySigner = AUTHORITY_KEY.parse().unwrap();
    let nonce_of =
        |a: Address| quantity(&eth(geth, "eth_getTransactionCount", json!([a, "pending"])));
    let authorization = Authorization {
        chain_id: U256::from(CHAIN_ID),
        address: contract,
        nonce: nonce_of(authority.address()),
    };
    let signature = authority
        .sign_hash_sync(&authorization.signature_hash())
        .unwrap();
    let tx = TxEip7702 {
        chain_id: CHAIN_ID,
        nonce: nonce_of(sponsor.address()),
        gas_limit: 200_000,
        max_fee_per_gas: 100 * GWEI,
        max_priority_fee_per_gas: GWEI,
        to: authority.address(),
        value: U256::ZERO,
        access_list: Default::default(),
        authorization_list: vec![authorization.into_signed(signature)],
        input: U256::from(0x2b).to_be_bytes::<32>().to_vec().into(),
    };
    let signature = sponsor.sign_hash_sync(&tx.signature_hash()).unwrap();
    let signed = tx.into_signed(signature);
    let raw = Bytes::from(signed.encoded_2718());
    let hash = eth(geth, "eth_sendRawTransaction", json!([raw]));
    assert_eq!(hash, json!(signed.hash()), "sent");
    let hash = signed.hash().to_string();
    wait_mined(geth, std::slice::from_ref(&hash));
    (hash, authority.address())
}

/// [`BLOB_TXS_PER_ACCOUNT`] six-blob transactions from each dev account (real mainnet blobs
/// with their cell proofs, as `sszgate drive` sends them), all sent before any is mined; their
/// hashes once all are mined.
fn send_blob_transactions(geth: &str) -> Vec<String> {
    let blobs = sszgate_fixtures::Fixtures::load(&sszgate_fixtures::testdata_dir())
        .and_then(|f| f.blobs())
        .unwrap();
    let shape = LoadShape {
        transfers: 0,
        blob_txs: BLOB_TXS_PER_ACCOUNT,
        blobs_per_tx: 6,
    };
    let keys = DEV_KEYS.map(str::to_string);
    let swapped = [keys[1].clone(), keys[0].clone()];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let eth_rpc = EthRpc::new(geth);
    let txs = runtime.block_on(async {
        let mut txs = Vec::new();
        for senders in [Senders::dev(), Senders::from_keys(&swapped).unwrap()] {
            let fork = sszgate_engine::Fork::Osaka;
            let mut load = Load::new(&eth_rpc, fork, shape, blobs.clone(), senders)
                .await
                .unwrap();
            txs.extend(load.next_block());
        }
        sszgate_drive::load::submit(&eth_rpc, &txs, &mut false)
            .await
            .unwrap();
        txs
    });
    let hashes: Vec<String> = txs.iter().map(|tx| tx.hash.to_string()).collect();
    wait_mined(geth, &hashes);
    hashes
}

/// The Osaka-era answers through `url`, equal to geth's: the delegated account's code,
/// storage and a call through its delegation, `eth_call` (and in local mode
/// `eth_estimateGas`) without `gas`, the type-4 and type-3 transactions, their receipts
/// (`blobGasPrice`, `blobGasUsed`) and blocks (`blobGasUsed`, `excessBlobGas`). The answers
/// that differ.
fn osaka_answers_are_geths(
    url: &str,
    geth: &str,
    osaka: &OsakaTxs,
    contract: Address,
    head: u64,
    local: bool,
) -> Vec<String> {
    let tag = format!("{head:#x}");
    let from = Senders::dev().addresses().0;
    let word = format!("0x{:064x}", 0x2c);
    let authority = osaka.authority;
    let call = json!({"from": from, "to": contract, "data": word});
    let mut calls = vec![
        ("eth_getCode", json!([authority, tag])),
        ("eth_getStorageAt", json!([authority, "0x0", tag])),
        ("eth_getTransactionCount", json!([authority, tag])),
        // Without `gas`: the default must keep to Osaka's cap (EIP-7825).
        ("eth_call", json!([call, tag])),
        // The authority runs the contract's code over its own storage.
        ("eth_call", json!([{"to": authority, "data": "0x"}, tag])),
    ];
    for hash in [&osaka.delegation, &osaka.blob] {
        calls.push(("eth_getTransactionByHash", json!([hash])));
        calls.push(("eth_getTransactionReceipt", json!([hash])));
    }
    for block in osaka.blocks.map(|b| format!("{b:#x}")) {
        calls.push(("eth_getBlockByNumber", json!([block, true])));
        calls.push(("eth_getBlockByNumber", json!([block, false])));
        calls.push((
            "eth_getLogs",
            json!([{"address": authority, "fromBlock": block, "toBlock": block}]),
        ));
    }
    if !local {
        return answers_equal_geths(url, geth, calls, proof_difference);
    }
    let transfer = json!({"from": from, "to": RECIPIENT, "value": "0x1"});
    calls.push(("eth_estimateGas", json!([call, tag])));
    calls.push(("eth_estimateGas", json!([transfer, tag])));
    for block in osaka.blocks.map(|b| format!("{b:#x}")) {
        calls.push(("eth_getBlockReceipts", json!([block])));
    }
    answers_equal_geths(url, geth, calls, local_difference)
}

/// The verified endpoint's block number, once it reaches `at_least`.
fn verified_head(url: &str, at_least: u64) -> u64 {
    let started = Instant::now();
    loop {
        let n = eth(url, "eth_blockNumber", json!([]));
        if let Some(n) = n.as_str().map(|_| quantity(&n))
            && n >= at_least
        {
            return n;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the light client did not reach block {at_least}: {n}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn sszgate_rpc_verifies_the_live_chain_and_catches_every_lie() {
    let Some(tools) = fulu_tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let geth_auth = free_port();
    let chain = Chain::up_fulu(&tools, geth_auth, &format!("http://127.0.0.1:{geth_auth}"));
    chain.wait_for_slot(10, Duration::from_secs(300));
    let beacon = chain.up["beacon_rest"].as_str().unwrap().to_string();
    let geth = chain.up["geth_http"].as_str().unwrap().to_string();
    // The trusted start: a block root this test read itself (the head's: on this chain the
    // first slots may be empty while the proposer starts).
    let checkpoint = chain.beacon("/eth/v1/beacon/headers/head").unwrap()["data"]["root"]
        .as_str()
        .unwrap()
        .to_string();
    let (hashes, contract) = send_transactions(&geth);
    let receipt = eth(&geth, "eth_getTransactionReceipt", json!([hashes[2]]));
    let block = quantity(&receipt["blockNumber"]);
    let osaka = send_osaka_transactions(&geth, contract);
    let newest = osaka.blocks.into_iter().max().unwrap_or(block).max(block);
    let dir = tempfile::tempdir().unwrap();
    let (mut honest, listen) = start_rpc(&geth, &beacon, &checkpoint, dir.path(), "honest");
    let _honest = KillOnDrop {
        pid: honest.id(),
        listen: listen.clone(),
    };
    wait_serving(&mut honest, &listen, &dir.path().join("honest.log"));
    let url = format!("http://{listen}");
    let head = verified_head(&url, newest);
    let mut differences =
        the_verified_answers_are_geths(&url, &geth, &hashes, contract, block, head);
    differences.extend(osaka_answers_are_geths(
        &url, &geth, &osaka, contract, head, true,
    ));
    // Past what the light client has signed: refused, not answered.
    let ahead = eth(
        &url,
        "eth_getBlockByNumber",
        json!([format!("{:#x}", head + 1000), false]),
    );
    assert!(ahead["error"]["code"].as_i64().is_some(), "{ahead}");

    differences.extend(light_client_metrics_are_served(&url, &chain));

    let el = TamperRelay::start(&geth);
    let cl = TamperRelay::start(&beacon);
    let (mut lied_to, listen) = start_rpc(&el.url, &cl.url, &checkpoint, dir.path(), "lied-to");
    let _lied_to = KillOnDrop {
        pid: lied_to.id(),
        listen: listen.clone(),
    };
    wait_serving(&mut lied_to, &listen, &dir.path().join("lied-to.log"));
    let lied_url = format!("http://{listen}");
    let head = verified_head(&lied_url, block);
    every_lie_is_caught(&el, &cl, &lied_url, &geth, contract, &hashes, block, head);
    let failed = metric(
        &lied_url,
        "sszgate_rpc_checks_failed_total{method=\"eth_getBalance\",check=\"account_proof\"}",
    );
    assert_eq!(failed, Some(2.0), "a changed balance and a short proof");
    a_forged_sync_committee_signature_stops_the_light_client(
        &beacon,
        &geth,
        &checkpoint,
        dir.path(),
    );
    differences.extend(proofs_from_sszgates_prover(
        &el,
        &cl,
        &beacon,
        &geth,
        &checkpoint,
        dir.path(),
        (&hashes, contract, block),
        &osaka,
    ));
    assert!(
        differences.is_empty(),
        "{} answers differ from geth's:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// The proof mode on the same chain: a prover (`--serve-proofs`) reading geth and Lodestar
/// through the relays, a verifier (`--prover`) trusting only the checkpoint. The answers that
/// differ from geth's.
#[allow(clippy::too_many_arguments)]
fn proofs_from_sszgates_prover(
    el: &TamperRelay,
    cl: &TamperRelay,
    beacon: &str,
    geth: &str,
    checkpoint: &str,
    dir: &Path,
    (hashes, contract, block): (&[String], Address, u64),
    osaka: &OsakaTxs,
) -> Vec<String> {
    let sources = [
        "--execution",
        &el.url,
        "--beacon",
        &cl.url,
        "--serve-proofs",
    ];
    let (mut prover, listen) = start_sszgate_rpc(&sources, checkpoint, dir, "prover");
    let _prover = KillOnDrop {
        pid: prover.id(),
        listen: listen.clone(),
    };
    wait_serving(&mut prover, &listen, &dir.join("prover.log"));
    let endpoint = format!("http://{listen}/proof");
    // Its --state (start_sszgate_rpc names it `verifier.json`) holds the committee keys.
    let keys = dir.join("verifier.json");
    let sources = ["--prover", &endpoint, "--beacon", beacon];
    let (mut verifier, listen) = start_sszgate_rpc(&sources, checkpoint, dir, "verifier");
    let _verifier = KillOnDrop {
        pid: verifier.id(),
        listen: listen.clone(),
    };
    wait_serving(&mut verifier, &listen, &dir.join("verifier.log"));
    let url = format!("http://{listen}");
    let newest = osaka.blocks.into_iter().max().unwrap_or(block).max(block);
    let head = verified_head(&url, newest + 1);
    let mut differences = the_proven_answers_are_geths(&url, geth, hashes, contract, block, head);
    differences.extend(osaka_answers_are_geths(
        &url, geth, osaka, contract, head, false,
    ));
    differences.extend(proven_log_ranges_are_geths(
        &url, geth, contract, block, osaka,
    ));
    // The bootstrap came in the first proof; the keys are kept for a restart.
    assert_eq!(metric(&url, "sszgate_rpc_proof_periods"), Some(1.0));
    assert!(keys.exists(), "the committee keys were not saved");
    proofs_built_from_lies_are_refused(el, cl, &url, contract, hashes, block, head);
    // The verifier keeps serving the truth.
    let tag = format!("{head:#x}");
    let balance = eth(&url, "eth_getBalance", json!([RECIPIENT, tag]));
    assert_eq!(quantity(&balance), 12_345);
    differences
}

/// The methods the proofs cover, on the test's own transactions, equal to geth's answers;
/// the answers that differ.
fn the_proven_answers_are_geths(
    url: &str,
    geth: &str,
    hashes: &[String],
    contract: Address,
    block: u64,
    head: u64,
) -> Vec<String> {
    let tag = format!("{head:#x}");
    let at = format!("{block:#x}");
    let calls = calls_on(hashes, contract, block, head);
    let mut differences = answers_equal_geths(url, geth, calls, proof_difference);
    differences.extend(stored_word_is(url, contract, &tag, 0x2a));
    // Not covered by the proofs: refused as unverifiable, not answered unchecked.
    let receipts = eth(url, "eth_getBlockReceipts", json!([at]));
    assert_eq!(receipts["error"]["code"], -32090, "{receipts}");
    differences
}

/// Proof-mode `eth_getLogs` over ranges of several blocks and by `blockHash`, each answer
/// equal to geth's whole, `logIndex` included (a range proof binds it): the contract call's
/// log and the delegation's (both topic the caller), by address and by topic, from the block
/// before the call to the delegation's block; by hash, the call's block and the delegation's
/// (every log, no address); and the blob transactions' blocks, where the contract logged
/// nothing (an empty answer proven over the range). The answers that differ.
fn proven_log_ranges_are_geths(
    url: &str,
    geth: &str,
    contract: Address,
    block: u64,
    osaka: &OsakaTxs,
) -> Vec<String> {
    let [delegated, blobs] = osaka.blocks;
    assert!(
        blobs > delegated && delegated > block,
        "blocks {block}, {delegated}, {blobs}"
    );
    let (from, to) = (format!("{:#x}", block - 1), format!("{delegated:#x}"));
    let caller = format!("0x{:0>64}", const_hex::encode(Senders::dev().addresses().0));
    let hash_of = |n: u64| {
        eth(
            geth,
            "eth_getBlockByNumber",
            json!([format!("{n:#x}"), false]),
        )["hash"]
            .clone()
    };
    let by_address =
        json!({"fromBlock": from, "toBlock": to, "address": [contract, osaka.authority]});
    let by_topic = json!({"fromBlock": from, "toBlock": to, "topics": [caller]});
    let filters = [
        by_address,
        by_topic,
        json!({"blockHash": hash_of(block), "address": contract}),
        json!({"blockHash": hash_of(delegated)}),
        json!({"fromBlock": format!("{:#x}", delegated + 1), "toBlock": format!("{:#x}", blobs + 1), "address": contract}),
    ];
    let mut differences = Vec::new();
    for (i, filter) in filters.iter().enumerate() {
        let verified = eth(url, "eth_getLogs", json!([filter]));
        let direct = eth(geth, "eth_getLogs", json!([filter]));
        let logs = direct.as_array().map_or(0, Vec::len);
        eprintln!("proof mode eth_getLogs {filter}: geth has {logs} logs");
        // The first two ranges hold the call's log and the delegation's, in two blocks.
        if i < 2 {
            assert_eq!(logs, 2, "{direct}");
            assert_ne!(
                direct[0]["blockNumber"], direct[1]["blockNumber"],
                "{direct}"
            );
        }
        if let Some(at) = sszgate_proof::render::logs_difference(&verified, &direct) {
            let found = format!("eth_getLogs {filter} (range proof): differs at {at}");
            eprintln!("DIFFERS: {found}");
            differences.push(found);
        }
    }
    differences
}

/// How a proof-mode answer differs from geth's (fields outside the standard left out).
fn proof_difference(verified: &Value, direct: &Value) -> Option<String> {
    sszgate_proof::render::difference_from_standard(verified, direct, "")
}

/// What `eth_call` reads of the contract's slot 0 at `tag`, unless it is `word`: one
/// difference naming what came back.
fn stored_word_is(url: &str, contract: Address, tag: &str, word: u64) -> Option<String> {
    let stored = eth(
        url,
        "eth_call",
        json!([{"to": contract, "data": "0x"}, tag]),
    );
    let read = stored
        .as_str()
        .and_then(|s| U256::from_str_radix(s.trim_start_matches("0x"), 16).ok());
    (read != Some(U256::from(word)))
        .then(|| format!("eth_call of {contract} without gas at {tag}: {stored}, not {word:#x}"))
}

/// The prover fed lies by the relays; every proof it builds from them is refused by the
/// verifier with the check named.
fn proofs_built_from_lies_are_refused(
    el: &TamperRelay,
    cl: &TamperRelay,
    url: &str,
    contract: Address,
    hashes: &[String],
    block: u64,
    head: u64,
) {
    let tag = format!("{head:#x}");
    let at = format!("{block:#x}");
    let from = Senders::dev().addresses().0;
    let lies: Vec<(&str, &TamperRelay, Lie, &str, Value)> = vec![
        (
            "a short account proof",
            el,
            short_account_proof(),
            "eth_getBalance",
            json!([from, tag]),
        ),
        (
            "a changed account proof node",
            el,
            proof_lie(|r| {
                let node = &mut r["accountProof"][0];
                let text = node.as_str().unwrap().to_string();
                *node = json!(format!("{}{}", &text[..text.len() - 2], "00"));
            }),
            "eth_getTransactionCount",
            json!([from, tag]),
        ),
        (
            "a short storage proof",
            el,
            proof_lie(|r| {
                r["storageProof"][0]["proof"].as_array_mut().unwrap().pop();
            }),
            "eth_getStorageAt",
            json!([contract, "0x0", tag]),
        ),
        (
            "another account's proof",
            el,
            proof_of(from),
            "eth_getBalance",
            json!([RECIPIENT, tag]),
        ),
        (
            "a contract's code",
            el,
            longer_code(),
            "eth_getCode",
            json!([contract, tag]),
        ),
        (
            "a receipt's status",
            el,
            flipped_status(),
            "eth_getTransactionReceipt",
            json!([hashes[2]]),
        ),
        (
            "a forged signature",
            cl,
            forged_signing_aggregate(),
            "eth_getBlockByNumber",
            json!([at, false]),
        ),
    ];
    for (what, relay, lie, method, params) in lies {
        let (check, message) = caught(relay, lie, url, method, params);
        eprintln!("proof mode caught {what} ({check}): {message}");
    }
    // A dropped log: the prover rebuilds the block's receiptsRoot from the receipts before it
    // proves a range, so it builds no proof and says why (a prover that proves a range with a
    // log left out anyway is the campaign's row, refused by the verifier: completeness).
    let params = json!([{"address": contract, "fromBlock": at, "toBlock": at}]);
    let answer = answer_while(el, dropped_log(), url, "eth_getLogs", &params);
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        answer["error"]["code"] == -32097 && message.contains("receiptsRoot"),
        "eth_getLogs with a dropped log: {answer}"
    );
    eprintln!("proof mode: the prover refused a dropped log: {message}");
}

/// Every method on the test's own transactions, through the verified endpoint and from geth
/// directly, alike; the answers that differ.
fn the_verified_answers_are_geths(
    url: &str,
    geth: &str,
    hashes: &[String],
    contract: Address,
    block: u64,
    head: u64,
) -> Vec<String> {
    let tag = format!("{head:#x}");
    let at = format!("{block:#x}");
    let mut calls = calls_on(hashes, contract, block, head);
    calls.push(("eth_getBlockReceipts", json!([at])));
    let mut differences = answers_equal_geths(url, geth, calls, local_difference);
    // The execution genesis is in no beacon block (the beacon genesis block's payload is
    // empty): anchored through block 1's parent hash it is geth's block, checked by hash;
    // found by number alone it is refused as not anchored — never built from the zeros.
    let genesis = eth(url, "eth_getBlockByNumber", json!(["0x0", false]));
    match genesis["error"]["message"].as_str() {
        Some(refused) => assert!(
            refused.contains("carries no execution payload"),
            "{genesis}"
        ),
        None => {
            let direct = eth(geth, "eth_getBlockByNumber", json!(["0x0", false]));
            differences
                .extend(local_difference(&genesis, &direct).map(|d| format!("block 0: {d}")));
        }
    }
    // What the transactions did, in the verified answers themselves.
    differences.extend(stored_word_is(url, contract, &tag, 0x2a));
    let balance = eth(url, "eth_getBalance", json!([RECIPIENT, tag]));
    assert_eq!(quantity(&balance), 12_345);
    let logs = eth(
        url,
        "eth_getLogs",
        json!([{"address": contract, "fromBlock": at, "toBlock": at}]),
    );
    assert_eq!(logs.as_array().map(Vec::len), Some(1), "{logs}");
    assert_eq!(logs[0]["transactionHash"], json!(hashes[2]));
    differences
}

/// How a local-mode answer differs from geth's: anywhere.
fn local_difference(verified: &Value, direct: &Value) -> Option<String> {
    first_difference(verified, direct, "")
}

/// Each call through the verified endpoint `url` and from geth directly; one line for each
/// that was not answered or shows a `difference` between the two.
fn answers_equal_geths(
    url: &str,
    geth: &str,
    calls: Vec<(&str, Value)>,
    difference: fn(&Value, &Value) -> Option<String>,
) -> Vec<String> {
    let mut differences = Vec::new();
    for (method, params) in calls {
        let verified = eth(url, method, params.clone());
        let direct = eth(geth, method, params.clone());
        let found = if verified.get("error").is_some() {
            Some(format!("{method} {params}: {verified}; geth: {direct}"))
        } else {
            difference(&verified, &direct).map(|at| format!("{method} {params}: differs at {at}"))
        };
        if let Some(found) = found {
            eprintln!("DIFFERS: {found}");
            differences.push(found);
        }
    }
    differences
}

/// Every method the proof format covers, on the test's own transactions: at the verified
/// head, or at the block of the contract call.
fn calls_on(
    hashes: &[String],
    contract: Address,
    block: u64,
    head: u64,
) -> Vec<(&'static str, Value)> {
    let tag = format!("{head:#x}");
    let at = format!("{block:#x}");
    let from = Senders::dev().addresses().0;
    let mut calls = vec![
        ("eth_chainId", json!([])),
        ("eth_getBalance", json!([RECIPIENT, tag])),
        ("eth_getBalance", json!([from, tag])),
        ("eth_getTransactionCount", json!([from, tag])),
        ("eth_getCode", json!([contract, tag])),
        ("eth_getStorageAt", json!([contract, "0x0", tag])),
        ("eth_call", json!([{"to": contract, "data": "0x"}, tag])),
        (
            "eth_call",
            json!([{"to": contract, "data": "0x", "gas": "0x100000"}, tag]),
        ),
        (
            "eth_getProof",
            json!([
                contract,
                ["0x0000000000000000000000000000000000000000000000000000000000000000"],
                tag
            ]),
        ),
        (
            "eth_getLogs",
            json!([{"address": contract, "fromBlock": at, "toBlock": at}]),
        ),
        ("eth_getBlockByNumber", json!([at, true])),
        ("eth_getBlockByNumber", json!([at, false])),
    ];
    for hash in hashes {
        calls.push(("eth_getTransactionReceipt", json!([hash])));
        calls.push(("eth_getTransactionByHash", json!([hash])));
    }
    calls
}

/// Where two JSON values first differ (a path and both sides), if they do.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (l, r) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                first_difference(l, r, &format!("{path}.{k}"))
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| first_difference(l, r, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: ours {a}, geth's {b}")),
    }
}

/// The value of the sample named exactly `name` in `url`'s `/metrics`.
fn metric(url: &str, name: &str) -> Option<f64> {
    sample(&metrics(url), name)
}

/// `url`'s `/metrics`, read once (samples compared with each other come from one read).
fn metrics(url: &str) -> String {
    let out = Command::new("curl")
        .args(["-s", "-m", "10", &format!("{url}/metrics")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of the sample named exactly `name` in the metrics `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
}

/// The light client's standing is in the metrics: its lag is the wall clock's slot less its
/// optimistic header's, the verified requests are counted, and its optimistic header follows
/// the beacon node's. The store takes the node's optimistic update once a slot, so the header
/// is awaited (20 slots at most) to reach the update the node offers now, itself at most 32
/// slots behind the node's head; `eth_blockNumber` may already be past it (the head's parent,
/// signed by the head). A light client left behind is reported with the other differences.
fn light_client_metrics_are_served(url: &str, chain: &Chain) -> Option<String> {
    let verified = metric(
        url,
        "sszgate_rpc_requests_total{method=\"eth_getBalance\",outcome=\"verified\"}",
    );
    assert!(verified >= Some(2.0), "{verified:?}");
    let offered = chain
        .beacon("/eth/v1/beacon/light_client/optimistic_update")
        .and_then(|u| {
            u["data"]["attested_header"]["beacon"]["slot"]
                .as_str()?
                .parse::<f64>()
                .ok()
        })
        .expect("the beacon node offers an optimistic update");
    // Following a stale offer would prove nothing: the offer itself is near the node's head.
    let node_head = chain.head() as f64;
    if node_head - offered > 32.0 {
        return Some(format!(
            "the beacon node's optimistic update (attested slot {offered}) is more than 32 slots behind its head at slot {node_head}"
        ));
    }
    let started = Instant::now();
    loop {
        let text = metrics(url);
        let optimistic = sample(&text, "sszgate_rpc_light_slot{header=\"optimistic\"}").unwrap();
        let current = sample(&text, "sszgate_rpc_light_slot{header=\"current\"}").unwrap();
        let lag = sample(&text, "sszgate_rpc_light_lag_slots").unwrap();
        assert_eq!(
            lag,
            (current - optimistic).max(0.0),
            "lag of {optimistic} at {current}"
        );
        if optimistic >= offered {
            return None;
        }
        if started.elapsed() > Duration::from_secs(40) {
            return Some(format!(
                "the light client's optimistic slot {optimistic} stayed behind the beacon node's optimistic update (attested slot {offered}) for 40 s; the node's head is at slot {}",
                chain.head()
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A JSON value's quantity plus one, as a quantity.
fn plus_one(v: &mut Value) {
    let text = v.as_str().unwrap_or_default().trim_start_matches("0x");
    let n = U256::from_str_radix(text, 16).unwrap_or_default();
    *v = json!(format!("{:#x}", n + U256::from(1)));
}

/// The verified endpoint's answer to a call while `relay` tells `lie` (told at least once).
fn answer_while(relay: &TamperRelay, lie: Lie, url: &str, method: &str, params: &Value) -> Value {
    relay.tell(lie);
    let answer = eth(url, method, params.clone());
    let told = relay.told();
    relay.honest();
    assert!(
        told > 0,
        "{method} {params}: the lie was never told ({answer})"
    );
    answer
}

/// The verified endpoint's answer to a call while `lie` is told: a verification error
/// (-32099) naming its check, and the lie told at least once. The check and the message.
fn caught(
    relay: &TamperRelay,
    lie: Lie,
    url: &str,
    method: &str,
    params: Value,
) -> (String, String) {
    let answer = answer_while(relay, lie, url, method, &params);
    assert_eq!(
        answer["error"]["code"], -32099,
        "{method} {params}: {answer}"
    );
    let check = answer["error"]["data"]["check"]
        .as_str()
        .unwrap_or_default();
    assert!(
        !check.is_empty(),
        "{method} {params}: no check named: {answer}"
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    (check.to_string(), message.to_string())
}

#[allow(clippy::too_many_arguments)]
fn every_lie_is_caught(
    el: &TamperRelay,
    cl: &TamperRelay,
    url: &str,
    geth: &str,
    contract: Address,
    hashes: &[String],
    block: u64,
    head: u64,
) {
    let tag = format!("{head:#x}");
    let at = format!("{block:#x}");
    let from = Senders::dev().addresses().0;
    let full = json!([at, true]);
    // Block data first: a block verified once is kept, and a lie about it would not be asked.
    let body = caught(
        cl,
        changed_beacon_block(),
        url,
        "eth_getBlockByNumber",
        full.clone(),
    );
    eprintln!("caught a changed beacon block: {body:?}");
    let lies: Vec<(&str, Lie, &str, Value)> = vec![
        (
            "a balance",
            proof_lie(|r| plus_one(&mut r["balance"])),
            "eth_getBalance",
            json!([from, tag]),
        ),
        (
            "a nonce",
            proof_lie(|r| plus_one(&mut r["nonce"])),
            "eth_getTransactionCount",
            json!([from, tag]),
        ),
        (
            "a storage value",
            proof_lie(|r| plus_one(&mut r["storageProof"][0]["value"])),
            "eth_getStorageAt",
            json!([contract, "0x0", tag]),
        ),
        (
            "the state a call reads",
            proof_lie(|r| {
                if let Some(slot) = r["storageProof"].get_mut(0) {
                    plus_one(&mut slot["value"]);
                }
            }),
            "eth_call",
            // With `gas`: what is tried here is the state, not the default gas.
            json!([{"to": contract, "data": "0x", "gas": "0x100000"}, tag]),
        ),
        (
            "a short account proof",
            short_account_proof(),
            "eth_getBalance",
            json!([from, tag]),
        ),
        (
            "another account's proof",
            proof_of(from),
            "eth_getBalance",
            json!([RECIPIENT, tag]),
        ),
        (
            "a contract's code",
            longer_code(),
            "eth_getCode",
            json!([contract, tag]),
        ),
        (
            "a dropped log",
            dropped_log(),
            "eth_getLogs",
            json!([{"address": contract, "fromBlock": at, "toBlock": at}]),
        ),
        (
            "a receipt's status",
            flipped_status(),
            "eth_getTransactionReceipt",
            json!([hashes[2]]),
        ),
        (
            "receipts of another block",
            Lie {
                params: Some(Box::new(move |method, params| {
                    let hit = method == "eth_getBlockReceipts";
                    if hit {
                        params[0] = json!(format!("{:#x}", block - 1));
                    }
                    hit
                })),
                ..Lie::default()
            },
            "eth_getTransactionReceipt",
            json!([hashes[2]]),
        ),
    ];
    for (what, lie, method, params) in lies {
        let (check, message) = caught(el, lie, url, method, params.clone());
        eprintln!("caught {what} ({check}): {message}");
    }
    // A wrong position for a transaction is only a hint: the transaction is found in the
    // verified block by its hash, and the answer is the true one.
    el.tell(Lie {
        result: Some(Box::new(|method, result| {
            let hit = method == "eth_getTransactionByHash" && !result.is_null();
            if hit {
                plus_one(&mut result["transactionIndex"]);
            }
            hit
        })),
        ..Lie::default()
    });
    let moved = eth(url, "eth_getTransactionByHash", json!([hashes[0]]));
    assert!(el.told() > 0, "the position was never changed");
    el.honest();
    assert_eq!(
        moved,
        eth(geth, "eth_getTransactionByHash", json!([hashes[0]]))
    );
    // The endpoint kept serving, and answers truthfully again.
    for (method, params) in [
        ("eth_getBalance", json!([from, tag])),
        ("eth_getBlockByNumber", full),
        (
            "eth_getLogs",
            json!([{"address": contract, "fromBlock": at, "toBlock": at}]),
        ),
    ] {
        assert_eq!(
            eth(url, method, params.clone()),
            eth(geth, method, params),
            "{method}"
        );
    }
}

/// A lie about `eth_getProof`'s answer.
fn proof_lie(change: fn(&mut Value)) -> Lie {
    Lie {
        result: Some(Box::new(move |method, result| {
            let hit = method == "eth_getProof";
            if hit {
                change(result);
            }
            hit
        })),
        ..Lie::default()
    }
}

/// An account proof missing its last node.
fn short_account_proof() -> Lie {
    proof_lie(|r| {
        r["accountProof"].as_array_mut().unwrap().pop();
    })
}

/// `eth_getProof` asked for `account` whatever the account asked for.
fn proof_of(account: Address) -> Lie {
    Lie {
        params: Some(Box::new(move |method, params| {
            let hit = method == "eth_getProof";
            if hit {
                params[0] = json!(account);
            }
            hit
        })),
        ..Lie::default()
    }
}

/// Code with a byte more.
fn longer_code() -> Lie {
    Lie {
        result: Some(Box::new(|method, result| {
            let hit = method == "eth_getCode";
            if hit {
                *result = json!(format!("{}00", result.as_str().unwrap()));
            }
            hit
        })),
        ..Lie::default()
    }
}

/// The first receipt's status flipped.
fn flipped_status() -> Lie {
    receipts_lie(|receipts| {
        let r = &mut receipts[0]["status"];
        *r = json!(if r == "0x1" { "0x0" } else { "0x1" });
        true
    })
}

/// The last log of the first receipt that has logs dropped.
fn dropped_log() -> Lie {
    receipts_lie(|receipts| {
        for r in receipts.as_array_mut().unwrap() {
            if let Some(logs) = r["logs"].as_array_mut().filter(|l| !l.is_empty()) {
                logs.pop();
                return true;
            }
        }
        false
    })
}

/// A beacon block with a bit flipped 100 bytes before its end (in its execution payload).
fn changed_beacon_block() -> Lie {
    Lie {
        bytes: Some(Box::new(|path, bytes| {
            let hit = path.starts_with("/eth/v2/beacon/blocks/") && bytes.len() > 200;
            if hit {
                let at = bytes.len() - 100;
                bytes[at] ^= 1;
            }
            hit
        })),
        ..Lie::default()
    }
}

/// The first beacon block asked for (the prover asks for the signing block before the data
/// block) with a byte of its sync aggregate's signature changed: a changed data block would
/// no longer be the signing block's parent, which the prover itself notices.
fn forged_signing_aggregate() -> Lie {
    // SignedBeaconBlock: offset 4, signature 96; BeaconBlock: slot, proposer, parent and state
    // roots, body offset (84); body: randao 96, eth1_data 72, graffiti 32, 5 offsets (220);
    // then the sync aggregate: 64 bytes of bits, 96 of signature.
    const SIGNATURE_BYTE: usize = 4 + 96 + 84 + 220 + 64 + 40;
    let first = std::sync::atomic::AtomicBool::new(true);
    Lie {
        bytes: Some(Box::new(move |path, bytes| {
            let hit = path.starts_with("/eth/v2/beacon/blocks/")
                && bytes.len() > SIGNATURE_BYTE
                && first.swap(false, std::sync::atomic::Ordering::SeqCst);
            if hit {
                bytes[SIGNATURE_BYTE] ^= 1;
            }
            hit
        })),
        ..Lie::default()
    }
}

/// A lie about the block's receipts (`eth_getBlockReceipts`).
fn receipts_lie(change: fn(&mut Value) -> bool) -> Lie {
    Lie {
        result: Some(Box::new(move |method, result| {
            method == "eth_getBlockReceipts" && change(result)
        })),
        ..Lie::default()
    }
}

/// Lodestar's light-client updates with one bit flipped near their end (the sync aggregate):
/// `sszgate rpc` refuses to start on them, naming the check that failed.
fn a_forged_sync_committee_signature_stops_the_light_client(
    beacon: &str,
    geth: &str,
    checkpoint: &str,
    dir: &Path,
) {
    let cl = TamperRelay::start(beacon);
    cl.tell(Lie {
        bytes: Some(Box::new(|path, bytes| {
            let hit = path.contains("/light_client/")
                && !path.contains("/bootstrap/")
                && bytes.len() > 200;
            if hit {
                // The signature ends 8 bytes before the end (signature_slot follows it).
                let at = bytes.len() - 40;
                bytes[at] ^= 1;
            }
            hit
        })),
        ..Lie::default()
    });
    let (mut child, _) = start_rpc(geth, &cl.url, checkpoint, dir, "forged");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sszgate rpc kept running on forged updates");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let err = common::log_tail(&dir.join("forged.log"), 64 << 10);
    assert!(cl.told() > 0, "no update was forged");
    assert!(!status.success(), "it started on forged updates: {err}");
    assert!(err.contains("syncing the light client: check "), "{err}");
}
