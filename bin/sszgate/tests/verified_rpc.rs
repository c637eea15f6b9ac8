//! `sszgate rpc` on a live chain: Lodestar v1.22 (mainnet preset, 512-member sync committees;
//! Deneb, as v1.22's Electra blocks hash their execution requests with a pre-release list
//! limit, so their roots cannot be recomputed to the final spec) and geth, transactions this test sends (a transfer, a contract that stores and logs a word,
//! a call of it), every answer of the verified endpoint equal to geth's own; then lying
//! relays between `sszgate rpc` and geth and between it and Lodestar: every lie is caught
//! with the check named, and the endpoint keeps serving. Then the proof mode: `sszgate rpc
//! --serve-proofs` next to the nodes, `sszgate rpc --prover` verifying its proofs from a
//! checkpoint (the first proof carries the bootstrap) to the same answers as geth's, and the
//! same prover fed lies by the relays: each proof it builds from them is refused.
//!
//! Needs geth and a Lodestar build, as `lodestar.rs` does.

mod common;

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use alloy_primitives::{Address, Bytes, U256};
use common::chain::{Chain, ONE_CHAIN, eth, tools};
use common::tamper::{Lie, TamperRelay};
use common::{KillOnDrop, free_port};
use serde_json::{Value, json};
use sszgate_drive::load::{Call, Senders};

/// The chain id of `up.sh`'s chain.
const CHAIN_ID: u64 = 1337;
/// A contract: called with a word, it stores it in slot 0 and logs it (topic: the caller);
/// called without data, it returns slot 0. Init code `6022600c60003960226000f3` copies the
/// 34-byte runtime after it and returns it.
const CONTRACT: &str = "6022600c60003960226000f3\
                        361560165760003580600055600052336020600\
                        0a1005b60005460005260206000f3";
/// Where the transfer goes: an account nothing else touches.
const RECIPIENT: &str = "0x00000000000000000000000000000000005eed01";

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
    let started = Instant::now();
    for hash in &hashes {
        while eth(geth, "eth_getTransactionReceipt", json!([hash])).is_null() {
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "{hash} not mined"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    (hashes, contract)
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
            started.elapsed() < Duration::from_secs(120),
            "the light client did not reach block {at_least}: {n}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn sszgate_rpc_verifies_the_live_chain_and_catches_every_lie() {
    let Some(tools) = tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let geth_auth = free_port();
    let chain = Chain::up_with(
        &tools,
        geth_auth,
        &format!("http://127.0.0.1:{geth_auth}"),
        "mainnet",
        "deneb",
    );
    chain.wait_for_slot(10, Duration::from_secs(120));
    let beacon = chain.up["beacon_rest"].as_str().unwrap().to_string();
    let geth = chain.up["geth_http"].as_str().unwrap().to_string();
    // The trusted start: a block root this test read itself.
    let checkpoint = chain.beacon("/eth/v1/beacon/headers/8").unwrap()["data"]["root"]
        .as_str()
        .unwrap()
        .to_string();
    let (hashes, contract) = send_transactions(&geth);
    let receipt = eth(&geth, "eth_getTransactionReceipt", json!([hashes[2]]));
    let block = quantity(&receipt["blockNumber"]);
    let dir = tempfile::tempdir().unwrap();
    let (mut honest, listen) = start_rpc(&geth, &beacon, &checkpoint, dir.path(), "honest");
    let _honest = KillOnDrop {
        pid: honest.id(),
        listen: listen.clone(),
    };
    wait_serving(&mut honest, &listen, &dir.path().join("honest.log"));
    let url = format!("http://{listen}");
    let head = verified_head(&url, block);
    the_verified_answers_are_geths(&url, &geth, &hashes, contract, block, head);
    // Past what the light client has signed: refused, not answered.
    let ahead = eth(
        &url,
        "eth_getBlockByNumber",
        json!([format!("{:#x}", head + 1000), false]),
    );
    assert!(ahead["error"]["code"].as_i64().is_some(), "{ahead}");

    light_client_metrics_are_served(&url, head);

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
    proofs_from_sszgates_prover(
        &el,
        &cl,
        &beacon,
        &geth,
        &checkpoint,
        dir.path(),
        (&hashes, contract, block),
    );
}

/// The proof mode on the same chain: a prover (`--serve-proofs`) reading geth and Lodestar
/// through the relays, a verifier (`--prover`) trusting only the checkpoint.
fn proofs_from_sszgates_prover(
    el: &TamperRelay,
    cl: &TamperRelay,
    beacon: &str,
    geth: &str,
    checkpoint: &str,
    dir: &Path,
    (hashes, contract, block): (&[String], Address, u64),
) {
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
    let head = verified_head(&url, block + 1);
    the_proven_answers_are_geths(&url, geth, hashes, contract, block, head);
    // The bootstrap came in the first proof; the keys are kept for a restart.
    assert_eq!(metric(&url, "sszgate_rpc_proof_periods"), Some(1.0));
    assert!(keys.exists(), "the committee keys were not saved");
    proofs_built_from_lies_are_refused(el, cl, &url, contract, hashes, block, head);
    // The verifier keeps serving the truth.
    let tag = format!("{head:#x}");
    let balance = eth(&url, "eth_getBalance", json!([RECIPIENT, tag]));
    assert_eq!(quantity(&balance), 12_345);
}

/// The methods the proofs cover, on the test's own transactions, equal to geth's answers.
fn the_proven_answers_are_geths(
    url: &str,
    geth: &str,
    hashes: &[String],
    contract: Address,
    block: u64,
    head: u64,
) {
    let tag = format!("{head:#x}");
    let at = format!("{block:#x}");
    let calls = calls_on(hashes, contract, block, head);
    answers_equal_geths(url, geth, calls, |verified, direct| {
        sszgate_proof::render::difference_from_standard(verified, direct, "")
    });
    let stored = eth(
        url,
        "eth_call",
        json!([{"to": contract, "data": "0x"}, tag]),
    );
    assert_eq!(quantity(&stored), 0x2a, "{stored}");
    // Not covered by the proofs: refused as unverifiable, not answered unchecked.
    let receipts = eth(url, "eth_getBlockReceipts", json!([at]));
    assert_eq!(receipts["error"]["code"], -32090, "{receipts}");
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
            "a dropped log",
            el,
            dropped_log(),
            "eth_getLogs",
            json!([{"address": contract, "fromBlock": at, "toBlock": at}]),
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
}

/// Every method on the test's own transactions, through the verified endpoint and from geth
/// directly, alike.
fn the_verified_answers_are_geths(
    url: &str,
    geth: &str,
    hashes: &[String],
    contract: Address,
    block: u64,
    head: u64,
) {
    let tag = format!("{head:#x}");
    let at = format!("{block:#x}");
    let mut calls = calls_on(hashes, contract, block, head);
    calls.push(("eth_getBlockReceipts", json!([at])));
    answers_equal_geths(url, geth, calls, |verified, direct| {
        first_difference(verified, direct, "")
    });
    // What the transactions did, in the verified answers themselves.
    let stored = eth(
        url,
        "eth_call",
        json!([{"to": contract, "data": "0x"}, tag]),
    );
    assert_eq!(quantity(&stored), 0x2a, "{stored}");
    let balance = eth(url, "eth_getBalance", json!([RECIPIENT, tag]));
    assert_eq!(quantity(&balance), 12_345);
    let logs = eth(
        url,
        "eth_getLogs",
        json!([{"address": contract, "fromBlock": at, "toBlock": at}]),
    );
    assert_eq!(logs.as_array().map(Vec::len), Some(1), "{logs}");
    assert_eq!(logs[0]["transactionHash"], json!(hashes[2]));
}

/// Each call through the verified endpoint `url` and from geth directly: answered, and no
/// `difference` between the two.
fn answers_equal_geths(
    url: &str,
    geth: &str,
    calls: Vec<(&str, Value)>,
    difference: fn(&Value, &Value) -> Option<String>,
) {
    for (method, params) in calls {
        let verified = eth(url, method, params.clone());
        assert!(
            verified.get("error").is_none(),
            "{method} {params}: {verified}"
        );
        let direct = eth(geth, method, params.clone());
        if let Some(at) = difference(&verified, &direct) {
            panic!("{method} {params}: differs at {at}");
        }
    }
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
    let out = Command::new("curl")
        .args(["-s", "-m", "10", &format!("{url}/metrics")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
}

/// The light client's standing is in the metrics: its optimistic header at or past the
/// block `head` came from, a few slots behind the clock at most, and the verified requests
/// counted.
fn light_client_metrics_are_served(url: &str, head: u64) {
    let optimistic = metric(url, "sszgate_rpc_light_slot{header=\"optimistic\"}").unwrap();
    let current = metric(url, "sszgate_rpc_light_slot{header=\"current\"}").unwrap();
    let lag = metric(url, "sszgate_rpc_light_lag_slots").unwrap();
    // Slots 1-4 of up.sh's chain are empty: block n is at slot n + 4.
    assert!(
        optimistic >= head as f64,
        "optimistic slot {optimistic}, block {head}"
    );
    assert_eq!(lag, current - optimistic);
    assert!(lag < 10.0, "the light client lags {lag} slots");
    let verified = metric(
        url,
        "sszgate_rpc_requests_total{method=\"eth_getBalance\",outcome=\"verified\"}",
    );
    assert!(verified >= Some(2.0), "{verified:?}");
}

/// A JSON value's quantity plus one, as a quantity.
fn plus_one(v: &mut Value) {
    let text = v.as_str().unwrap_or_default().trim_start_matches("0x");
    let n = U256::from_str_radix(text, 16).unwrap_or_default();
    *v = json!(format!("{:#x}", n + U256::from(1)));
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
    relay.tell(lie);
    let answer = eth(url, method, params.clone());
    let told = relay.told();
    relay.honest();
    assert!(
        told > 0,
        "{method} {params}: the lie was never told ({answer})"
    );
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
            json!([{"to": contract, "data": "0x"}, tag]),
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
