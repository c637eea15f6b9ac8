//! A real consensus client on the links: Lodestar v1.38 (Fulu/PeerDAS, built from source by
//! `../shared/tools/lodestar-fulu/build.sh`) proposing a block every 2 s slot with interop
//! validators, geth on Osaka with a BPO1 fork at genesis (48 target, 72 most blobs), and a
//! follower pair (geth2 + a Lodestar without validators that fetches every block's blobs
//! from its EL with `engine_getBlobsV2`). Real mainnet blobs from the data set (the drive
//! crate's `Load`, eight 6-blob transactions held back until all are in geth's pool) make a
//! block of 48 blobs:
//!
//! - relayed with `--verify all` on both Engine links: the big block's getPayloadV5 bundle
//!   (cell proofs checked with KZG) and the follower's getBlobsV2 answer (checked against the
//!   hashes asked) verified ok, every block imported VALID on both, the CL named;
//! - two bridges back to back on both links (JSON-RPC → REST-SSZ → JSON-RPC): every block
//!   crosses each middle link as REST-SSZ, the big bundle whole, the follower's blobs over
//!   `/blobs/v2`;
//! - a fault injected on getPayloadV5 with `sszgate ctl`: Lodestar sees it (its log), and the
//!   chain goes on once the rule is removed.
//!
//! `sszgate devnet up --cl lodestar` (the same Lodestar, started by the devnet) is tested in
//! `tests/devnet.rs`.
//!
//! Needs geth (`SSZGATE_GETH`, `.tools/bin/geth`) and the Lodestar v1.38 build
//! (`SSZGATE_LODESTAR_FULU` or `$HOME/.cache/lodestar-v1.38`). Locally a missing one skips
//! loudly; under `CI=true` it fails. One chain at a time.

mod common;

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use common::chain::{Chain, FULU_PAIR_SLOT_SECONDS, FuluLinks, ONE_CHAIN, fulu_tools};
use common::{KillOnDrop, Proxy, free_port, start_proxy_at, terminate_proxy};
use serde_json::Value;

fn el(port: u16) -> std::net::SocketAddr {
    format!("127.0.0.1:{port}").parse().unwrap()
}

fn proxy_flags(db: &Path, extra: &[&str]) -> Vec<String> {
    let mut flags = vec!["--store".to_string(), format!("sqlite:{}", db.display())];
    flags.extend(extra.iter().map(|s| s.to_string()));
    flags
}

/// `txs` blob transactions of six real mainnet blobs each (the data set's, with their cell
/// proofs) from the second dev key, signed for the chain of the EL at `url`: their network
/// encodings and hashes, in nonce order.
fn real_blob_txs(url: &str, txs: usize) -> Vec<(String, String)> {
    use sszgate_drive::{EthRpc, Load, LoadShape, Senders};
    let blobs = sszgate_fixtures::Fixtures::load(&sszgate_fixtures::data_dir())
        .and_then(|f| f.blobs())
        .unwrap();
    let shape = LoadShape {
        transfers: 0,
        blob_txs: txs,
        blobs_per_tx: sszgate_drive::load::MAX_BLOBS_PER_TX,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut load = runtime
        .block_on(Load::new(
            &EthRpc::new(url),
            sszgate_engine::Fork::Osaka,
            shape,
            blobs,
            Senders::dev(),
        ))
        .unwrap();
    load.next_block()
        .iter()
        .map(|tx| (tx.raw.to_string(), tx.hash.to_string()))
        .collect()
}

/// Sends `txs` to the EL at `url` one after the other (a blob pool refuses a nonce gap). One
/// the EL already has is fine: the two ELs gossip what they take to each other. When `must`,
/// the EL must then know every one of them.
fn send_raw(url: &str, txs: &[(String, String)], must: bool) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let eth = sszgate_drive::EthRpc::new(url);
    let sent: Vec<_> = txs
        .iter()
        .map(|(raw, _)| {
            runtime.block_on(eth.call("eth_sendRawTransaction", serde_json::json!([raw])))
        })
        .collect();
    if !must {
        return;
    }
    for ((_, hash), sent) in txs.iter().zip(&sent) {
        let known =
            runtime.block_on(eth.call("eth_getTransactionByHash", serde_json::json!([hash])));
        assert!(
            known.as_ref().is_ok_and(|tx| !tx.is_null()),
            "{url} does not know {hash}: {known:?}; sending it: {sent:?}"
        );
    }
}

/// `sszgate ctl --control CONTROL ARGS…`: its JSON answer.
fn ctl(control: &str, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(["ctl", "--control", control])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).unwrap()
}

/// Sends eight 6-blob transactions of real blobs to both ELs of `chain` while the proposer's
/// getPayloadV5 fails (a rule injected on the proxy at `control`): geth checks each
/// blob's cell proofs as it takes it, which on a loaded machine spreads the load over several
/// slots; held back, every transaction is in the pool when the next block is built, and that
/// block carries all 48 blobs. Waits for that block and four slots more (the follower gossips
/// it and fetches its blobs); its slot and blob count, and the execution block hashes of
/// the chain up to then.
fn a_48_blob_block(chain: &Chain, control: &str) -> (u64, usize, Vec<String>) {
    chain.wait_for_slot(3, Duration::from_secs(180));
    let (el, el2) = (
        chain.up["geth_http"].as_str().unwrap(),
        chain.up["geth_http2"].as_str().unwrap(),
    );
    // Signed before the hold, so that the hold lasts no longer than the ELs take to check the
    // blobs: a Lodestar whose head falls an epoch behind counts itself as syncing and stops
    // proposing.
    let raws = real_blob_txs(el, 8);
    let rule = ctl(
        control,
        &[
            "add",
            "--method",
            "engine_getPayloadV5",
            "--rpc-error",
            "-32000:sszgate-holding-blocks-for-the-blob-load",
        ],
    );
    let held = Instant::now();
    // Both ELs take the load during the hold, side by side (each checks every cell proof, and
    // under load that takes seconds): the follower's EL must hold every blob before the block
    // reaches the follower, whose getBlobsV2 is answered null while any one is missing.
    std::thread::scope(|s| {
        s.spawn(|| send_raw(el2, &raws, false));
        send_raw(el, &raws, true);
    });
    // Every transaction is in both pools now (geth answers eth_sendRawTransaction once it
    // took it), but a payload geth began building before the last one arrived may still be
    // proposed (seen: 18 + 30 blobs in two blocks). Held two more slots, the next proposal's
    // payload is begun with all of them in the pool.
    std::thread::sleep(Duration::from_secs(2 * FULU_PAIR_SLOT_SECONDS));
    // The big block comes in the first slots after the hold: the search starts from the last
    // block before it ended.
    let before = chain.head();
    ctl(control, &["rm", &rule["id"].as_u64().unwrap().to_string()]);
    eprintln!(
        "blocks held {:?} while the load entered both ELs' pools",
        held.elapsed()
    );
    // Generous: a slow machine builds and imports 48-blob blocks slowly; only a hang waits this long.
    let (slot, blobs) = wait_for_blobs(chain, before, 48, Duration::from_secs(300));
    let head = chain.wait_for_slot(slot + 4, Duration::from_secs(240));
    // The follower imports by gossip, a little later: every block the test checks must have
    // crossed its link too before the chain stops.
    chain.wait_for_follower(head, Duration::from_secs(120));
    (slot, blobs, chain.execution_hashes(head))
}

/// The blob count of the beacon block at each slot of `slots` that has one.
fn blob_counts(chain: &Chain, slots: std::ops::RangeInclusive<u64>) -> Vec<(u64, usize)> {
    slots
        .filter_map(|slot| {
            let block = chain.beacon(&format!("/eth/v2/beacon/blocks/{slot}"))?;
            let commitments =
                block["data"]["message"]["body"]["blob_kzg_commitments"].as_array()?;
            Some((slot, commitments.len()))
        })
        .collect()
}

/// Waits for a beacon block of at least `blobs` blobs after `from` (at most `within`); its
/// slot and count.
fn wait_for_blobs(chain: &Chain, from: u64, blobs: usize, within: Duration) -> (u64, usize) {
    let started = Instant::now();
    let mut seen = from;
    loop {
        let head = chain.head();
        if let Some(&found) = blob_counts(chain, seen + 1..=head)
            .iter()
            .find(|(_, n)| *n >= blobs)
        {
            return found;
        }
        seen = head.max(seen);
        assert!(
            started.elapsed() < within,
            "no block of {blobs} blobs in slots {from}..={head}: {:?}\n\
             the proposer's geth pool: {}\nits payload builds:\n{}\n{}",
            blob_counts(chain, from + 1..=head),
            common::chain::eth(
                chain.up["geth_http"].as_str().unwrap(),
                "txpool_status",
                serde_json::json!([])
            ),
            payload_lines(&chain.log("geth.log")),
            tail(&chain.log("lodestar.log"), 6000)
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The last 40 lines of geth's log `log` about building payloads and taking blob
/// transactions: what a proposer that proposes no blobs got from it.
fn payload_lines(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("payload") || l.contains("blob") || l.contains("ransaction"))
        .collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// The last `bytes` bytes of `text` (from a character boundary).
fn tail(text: &str, bytes: usize) -> &str {
    let mut start = text.len().saturating_sub(bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// A count of `sql`'s single row.
fn count(db: &Path, sql: &str) -> u64 {
    common::sql_rows(db, sql)[0][0]
        .as_deref()
        .unwrap_or("0")
        .parse()
        .unwrap()
}

#[test]
fn fulu_lodestar_pair_with_48_blob_blocks_every_bundle_and_get_blobs_answer_verified() {
    let Some(tools) = fulu_tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (db, db2) = (
        dir.path().join("proposer.db"),
        dir.path().join("follower.db"),
    );
    let (jwt_path, jwt) = jwt_file(dir.path());
    let (listen, listen2) = (free_port(), free_port());
    let links = FuluLinks::to(listen, Some(listen2));
    // Both proxies first (the ELs come up behind them), each verifying everything it sees.
    let verify = |db: &Path| proxy_flags(db, &["--verify", "all", "--jwt-secret", &jwt]);
    let proxy = start_proxy_at(
        &format!("127.0.0.1:{listen}"),
        &[],
        el(links.geth_auth),
        &verify(&db),
    );
    let _proxy_guard = KillOnDrop::of(&proxy);
    let proxy2 = start_proxy_at(
        &format!("127.0.0.1:{listen2}"),
        &[],
        el(links.geth2_auth),
        &verify(&db2),
    );
    let _proxy2_guard = KillOnDrop::of(&proxy2);
    let chain = Chain::up_fulu_pair(&tools, &links, &jwt_path);
    let (slot, blobs, hashes) = a_48_blob_block(&chain, &proxy.metrics);
    let block = chain
        .beacon(&format!("/eth/v2/beacon/blocks/{slot}"))
        .unwrap();
    let hash = block["data"]["message"]["body"]["execution_payload"]["block_hash"]
        .as_str()
        .unwrap()
        .to_string();
    drop(chain);
    terminate_proxy(proxy);
    terminate_proxy(proxy2);

    // The proposer's link: the bundle of the big block built, its cell proofs checked with
    // KZG; every bundle and every import verified ok.
    let big = count(
        &db,
        &format!(
            "SELECT count(*) FROM calls WHERE method = 'engine_getPayloadV5' AND block_hash = '{hash}' AND blob_count = {blobs} AND verdict = 'ok' AND status = 200"
        ),
    );
    assert!(
        big >= 1,
        "the {blobs}-blob bundle of {hash} was not recorded as verified"
    );
    for (db, side) in [(&db, "proposer"), (&db2, "follower")] {
        let imported = common::sql_rows(
            db,
            "SELECT block_hash, payload_status, verdict FROM calls WHERE method = 'engine_newPayloadV4'",
        );
        for hash in &hashes {
            assert!(
                imported
                    .iter()
                    .any(|r| r[0].as_deref() == Some(hash.as_str())),
                "{side}: block {hash} was not imported through the proxy"
            );
        }
        for row in &imported {
            assert_eq!(
                row[1..],
                [Some("VALID".into()), Some("ok".into())],
                "{side}: {row:?}"
            );
        }
        let bad = common::sql_rows(
            db,
            "SELECT method, status, verdict, verify_check, verify_detail FROM calls WHERE injected IS NULL AND (status != 200 OR verdict = 'failed')",
        );
        assert!(bad.is_empty(), "{side}: {bad:?}");
    }
    let bundles = common::sql_rows(
        &db,
        "SELECT blob_count, verdict FROM calls WHERE method = 'engine_getPayloadV5' AND blob_count > 0",
    );
    assert!(
        bundles.iter().all(|r| r[1].as_deref() == Some("ok")),
        "{bundles:?}"
    );
    // Lodestar names itself in its getClientVersionV1 call, a few calls in: every call that
    // arrives once that call is answered carries its name (one begun before may still be
    // recorded after it, unnamed).
    let version = common::sql_rows(
        &db,
        "SELECT cl_client, arrival_unix_us + total_us FROM calls WHERE method = 'engine_getClientVersionV1' ORDER BY arrival_unix_us LIMIT 1",
    );
    let [who, answered] = version
        .first()
        .map(|r| {
            [
                r[0].clone().unwrap_or_default(),
                r[1].clone().unwrap_or_default(),
            ]
        })
        .expect("Lodestar asks the EL's client version");
    assert!(who.contains("Lodestar"), "{who}");
    let named = common::sql_rows(
        &db,
        &format!(
            "SELECT method, cl_client FROM calls WHERE arrival_unix_us > {answered} ORDER BY seq"
        ),
    );
    assert!(named.len() > 10, "{named:?}");
    assert!(
        named.iter().all(|r| r[1].as_deref() == Some(who.as_str())),
        "{named:?}"
    );
    // The follower's link: the big block's blobs asked of geth2 and all answered, the answer
    // checked against the hashes asked.
    let fetched = common::sql_rows(
        &db2,
        "SELECT blobs_requested, blobs_returned, verdict, verify_check FROM calls WHERE method = 'engine_getBlobsV2'",
    );
    let want = Some(blobs.to_string());
    assert!(
        fetched
            .iter()
            .any(|r| r[0] == want && r[1] == want && r[2].as_deref() == Some("ok")),
        "no getBlobsV2 of the {blobs} blobs answered whole and verified: {fetched:?}"
    );
}

/// Two bridges back to back in front of the geth on `geth_auth`, listening on `listen`:
/// JSON-RPC → REST-SSZ (`cl` side, recording in `dir/NAME-cl.db`), a REST-SSZ middle link,
/// REST-SSZ → JSON-RPC (`el` side, `dir/NAME-el.db`). The two proxies and their databases.
fn bridges(
    dir: &Path,
    name: &str,
    listen: u16,
    geth_auth: u16,
    jwt: &str,
) -> ([Proxy; 2], [std::path::PathBuf; 2]) {
    let dbs = ["cl", "el"].map(|side| dir.join(format!("{name}-{side}.db")));
    let middle = free_port();
    let el_flags = proxy_flags(
        &dbs[1],
        &["--upstream-transport", "json", "--jwt-secret", jwt],
    );
    let el_proxy = start_proxy_at(
        &format!("127.0.0.1:{middle}"),
        &[],
        el(geth_auth),
        &el_flags,
    );
    let cl_flags = proxy_flags(
        &dbs[0],
        &["--upstream-transport", "ssz", "--jwt-secret", jwt],
    );
    let cl_proxy = start_proxy_at(&format!("127.0.0.1:{listen}"), &[], el(middle), &cl_flags);
    ([cl_proxy, el_proxy], dbs)
}

/// A fresh JWT secret file in `dir`, and its path as text.
fn jwt_file(dir: &Path) -> (std::path::PathBuf, String) {
    let file = dir.join("jwt.hex");
    std::fs::write(&file, "5a".repeat(32)).unwrap();
    let text = file.display().to_string();
    (file, text)
}

#[test]
fn lodestar_pair_over_rest_ssz_links_bridged_both_ways_with_48_blob_blocks() {
    let Some(tools) = fulu_tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (jwt_path, jwt) = jwt_file(dir.path());
    let (listen, listen2) = (free_port(), free_port());
    let links = FuluLinks::to(listen, Some(listen2));
    // Each Lodestar ← (JSON-RPC → REST-SSZ) ← REST-SSZ link ← (REST-SSZ → JSON-RPC) ← its geth.
    let (proxies, dbs) = bridges(dir.path(), "proposer", listen, links.geth_auth, &jwt);
    let (proxies2, dbs2) = bridges(dir.path(), "follower", listen2, links.geth2_auth, &jwt);
    let _guards: Vec<KillOnDrop> = proxies
        .iter()
        .chain(&proxies2)
        .map(KillOnDrop::of)
        .collect();
    let chain = Chain::up_fulu_pair(&tools, &links, &jwt_path);
    let (_, blobs, hashes) = a_48_blob_block(&chain, &proxies[0].metrics);
    drop(chain);
    for proxy in proxies.into_iter().chain(proxies2) {
        terminate_proxy(proxy);
    }

    // Every block crossed both middle links as REST-SSZ and was VALID on both sides.
    for (dbs, side) in [(&dbs, "proposer"), (&dbs2, "follower")] {
        for (db, transport) in [(&dbs[0], "json-rpc"), (&dbs[1], "rest-ssz")] {
            let imported = common::sql_rows(
                db,
                "SELECT transport, mode, payload_status, block_hash FROM calls WHERE method = 'engine_newPayloadV4'",
            );
            for row in &imported {
                let expected = [
                    Some(transport.into()),
                    Some("bridge".into()),
                    Some("VALID".into()),
                ];
                assert_eq!(row[..3], expected, "{side} {transport}: {row:?}");
            }
            for hash in &hashes {
                assert!(
                    imported
                        .iter()
                        .any(|r| r[3].as_deref() == Some(hash.as_str())),
                    "{side} {transport}: {hash} did not cross"
                );
            }
        }
    }
    // The big bundle crossed the proposer's middle link whole; the follower fetched its blobs
    // over the REST-SSZ /blobs/v2 resource, every one answered.
    let want = Some(blobs.to_string());
    let bundle = common::sql_rows(
        &dbs[1],
        "SELECT blob_count FROM calls WHERE method = 'engine_getPayloadV5' AND status = 200",
    );
    assert!(bundle.iter().any(|r| r[0] == want), "{bundle:?}");
    let fetched = common::sql_rows(
        &dbs2[1],
        "SELECT transport, blobs_requested, blobs_returned, status FROM calls WHERE method = 'engine_getBlobsV2'",
    );
    assert!(
        fetched.iter().any(|r| r[0].as_deref() == Some("rest-ssz")
            && r[1] == want
            && r[2] == want
            && r[3].as_deref() == Some("200")),
        "no REST-SSZ /blobs/v2 of the {blobs} blobs answered whole: {fetched:?}"
    );
}

#[test]
fn a_failed_get_payload_is_seen_by_lodestar_and_the_chain_recovers_when_the_rule_goes() {
    let Some(tools) = fulu_tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("calls.db");
    let (jwt_path, _) = jwt_file(dir.path());
    let listen = free_port();
    let links = FuluLinks::to(listen, None);
    let proxy = start_proxy_at(
        &format!("127.0.0.1:{listen}"),
        &[],
        el(links.geth_auth),
        &proxy_flags(&db, &[]),
    );
    let _proxy_guard = KillOnDrop::of(&proxy);
    let chain = Chain::up_fulu_pair(&tools, &links, &jwt_path);
    chain.wait_for_slot(4, Duration::from_secs(180));
    let ctl = |args: &[&str]| ctl(&proxy.metrics, args);
    let rule = ctl(&[
        "add",
        "--method",
        "engine_getPayloadV5",
        "--rpc-error",
        "-32000:sszgate-injected-failure",
    ]);
    let id = rule["id"].as_u64().unwrap().to_string();
    let failing_from = chain.head();
    let started = Instant::now();
    while !chain
        .log("lodestar.log")
        .contains("sszgate-injected-failure")
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Lodestar did not see the failure: {}",
            chain.log("lodestar.log")
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    ctl(&["rm", &id]);
    let recovered_from = chain.head();
    let head = chain.wait_for_slot(recovered_from + 6, Duration::from_secs(90));
    // The chain goes on while the hashes are read and while it stops: blocks after the last
    // one read are left out of the comparison below.
    let blocks = chain.execution_blocks(head);
    drop(chain);
    terminate_proxy(proxy);

    let injected = count(
        &db,
        "SELECT count(*) FROM calls WHERE method = 'engine_getPayloadV5' AND injected IS NOT NULL",
    );
    assert!(injected >= 1);
    let last = blocks.iter().map(|(n, _)| *n).max().unwrap_or(0);
    let hashes: Vec<String> = blocks.into_iter().map(|(_, hash)| hash).collect();
    let after = common::sql_rows(
        &db,
        &format!(
            "SELECT block_hash FROM calls WHERE method = 'engine_newPayloadV4' AND payload_status = 'VALID' AND block_number <= {last} AND block_number > (SELECT max(block_number) FROM calls WHERE method = 'engine_newPayloadV4' AND arrival_unix_us < (SELECT max(arrival_unix_us) FROM calls WHERE injected IS NOT NULL))"
        ),
    );
    assert!(
        after.len() >= 3,
        "blocks imported after the rule went: {after:?} (failing from slot {failing_from})"
    );
    for row in &after {
        assert!(
            hashes.contains(row[0].as_ref().unwrap()),
            "{row:?} is one of Lodestar's blocks"
        );
    }
}
