//! A real consensus client on the link: Lodestar v1.22 (built from source by
//! `../shared/tools/lodestar/build.sh`) proposing a block every 2 s slot with interop
//! validators, driving geth through `sszgate proxy`:
//!
//! - relayed, with `--verify all`: every newPayload VALID and verified ok, the payloads the
//!   proxy recorded exactly the execution payloads of the beacon blocks Lodestar made, the CL
//!   named on every record;
//! - bridged both ways (Lodestar's JSON-RPC → REST-SSZ → JSON-RPC geth): every block still
//!   VALID, each proxy recording its side's transport;
//! - a fault injected on getPayload: Lodestar sees it (its log), and the chain goes on once
//!   the rule is removed.
//!
//! Needs geth (`SSZGATE_GETH`, `.tools/bin/geth`) and a Lodestar build (`SSZGATE_LODESTAR`, or
//! `$HOME/.cache/lodestar-v1.22`). Locally a missing one skips loudly; under `CI=true` it
//! fails. One chain at a time (a Lodestar takes ~300 MiB and a core).

mod common;

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use common::chain::{Chain, ONE_CHAIN, tools};
use common::{KillOnDrop, Proxy, free_port, start_proxy_at, terminate};
use serde_json::Value;

fn el(port: u16) -> std::net::SocketAddr {
    format!("127.0.0.1:{port}").parse().unwrap()
}

/// Rows of `sql` from a proxy's database, each column as text.
fn rows(db: &Path, sql: &str) -> Vec<Vec<Option<String>>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        Ok((0..n)
            .map(|i| match r.get::<_, rusqlite::types::Value>(i).unwrap() {
                rusqlite::types::Value::Null => None,
                rusqlite::types::Value::Integer(v) => Some(v.to_string()),
                rusqlite::types::Value::Text(t) => Some(t),
                other => Some(format!("{other:?}")),
            })
            .collect())
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn proxy_flags(db: &Path, extra: &[&str]) -> Vec<String> {
    let mut flags = vec!["--store".to_string(), format!("sqlite:{}", db.display())];
    flags.extend(extra.iter().map(|s| s.to_string()));
    flags
}

#[test]
fn lodestar_drives_geth_through_the_proxy_every_call_relayed_and_verified() {
    let Some(tools) = tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("calls.db");
    let (geth_auth, listen) = (free_port(), format!("127.0.0.1:{}", free_port()));
    let chain = Chain::up(&tools, geth_auth, &format!("http://{listen}"));
    let flags = proxy_flags(&db, &["--verify", "all", "--jwt-secret", &chain.jwt()]);
    let proxy: Proxy = start_proxy_at(&listen, &[], el(geth_auth), &flags);
    let _proxy_guard = KillOnDrop::of(&proxy);
    let head = chain.wait_for_slot(36, Duration::from_secs(180));
    let hashes = chain.execution_hashes(head);
    drop(chain);
    terminate(proxy.child);

    let imported = rows(
        &db,
        "SELECT block_hash, payload_status, verdict, status, block_number FROM calls WHERE method = 'engine_newPayloadV4' ORDER BY seq",
    );
    // A slot may go without a block (a late proposal on a loaded machine): the chain is
    // judged by the blocks Lodestar made, at least 20 in 36 slots.
    assert!(
        imported.len() >= hashes.len(),
        "{} newPayload calls for {} blocks",
        imported.len(),
        hashes.len()
    );
    for row in &imported {
        assert_eq!(
            row[1..4],
            [Some("VALID".into()), Some("ok".into()), Some("200".into())],
            "{row:?}"
        );
    }
    let recorded: Vec<String> = imported.iter().filter_map(|r| r[0].clone()).collect();
    assert!(
        hashes.len() >= 20,
        "{} beacon blocks with payloads",
        hashes.len()
    );
    for hash in &hashes {
        assert!(
            recorded.contains(hash),
            "Lodestar's block {hash} was not recorded as imported"
        );
    }
    // Blocks numbered up to the newest one read from Lodestar (it went on building while
    // they were read) are all its own: the proxy saw nothing else imported.
    let newest = hashes.len() as u64;
    for row in &imported {
        let number: u64 = row[4].as_deref().unwrap().parse().unwrap();
        if number <= newest {
            let hash = row[0].as_ref().unwrap();
            assert!(
                hashes.contains(hash),
                "block {number} {hash} imported is not one of Lodestar's"
            );
        }
    }
    let built = rows(
        &db,
        "SELECT count(*) FROM calls WHERE method = 'engine_getPayloadV4' AND status = 200 AND verdict = 'ok'",
    );
    assert!(built[0][0].as_deref().unwrap().parse::<usize>().unwrap() >= hashes.len() - 1);
    // Lodestar names itself in its getClientVersionV1 call, a few calls in: every call from
    // then on carries its name; the calls before it, its User-Agent.
    let named = rows(&db, "SELECT seq, method, cl_client FROM calls ORDER BY seq");
    let first = named
        .iter()
        .position(|r| r[1].as_deref() == Some("engine_getClientVersionV1"))
        .expect("Lodestar asks the EL's client version");
    let who = named[first][2].clone().unwrap_or_default();
    assert!(who.contains("Lodestar"), "{who}");
    for row in &named[..first] {
        assert!(
            row[2].is_some(),
            "a call before it is named by its User-Agent: {row:?}"
        );
    }
    for row in &named[first..] {
        assert_eq!(row[2].as_deref(), Some(who.as_str()), "{row:?}");
    }
    let failed = rows(
        &db,
        "SELECT method, status, verdict, verify_detail FROM calls WHERE status != 200 OR verdict = 'fail'",
    );
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn lodestar_over_a_rest_ssz_link_bridged_both_ways_to_geth() {
    let Some(tools) = tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (cl_db, el_db) = (dir.path().join("cl.db"), dir.path().join("el.db"));
    let (geth_auth, cl_side, el_side) = (free_port(), free_port(), free_port());
    let cl_listen = format!("127.0.0.1:{cl_side}");
    let chain = Chain::up(&tools, geth_auth, &format!("http://{cl_listen}"));
    let jwt = chain.jwt();
    // geth ← (REST-SSZ → JSON-RPC bridge) ← REST-SSZ link ← (JSON-RPC → REST-SSZ bridge) ← Lodestar
    let el_flags = proxy_flags(
        &el_db,
        &["--upstream-transport", "json", "--jwt-secret", &jwt],
    );
    let el_proxy = start_proxy_at(
        &format!("127.0.0.1:{el_side}"),
        &[],
        el(geth_auth),
        &el_flags,
    );
    let _el_proxy_guard = KillOnDrop::of(&el_proxy);
    let cl_flags = proxy_flags(
        &cl_db,
        &["--upstream-transport", "ssz", "--jwt-secret", &jwt],
    );
    let cl_proxy = start_proxy_at(&cl_listen, &[], el(el_side), &cl_flags);
    let _cl_proxy_guard = KillOnDrop::of(&cl_proxy);
    let head = chain.wait_for_slot(16, Duration::from_secs(120));
    let hashes = chain.execution_hashes(head);
    drop(chain);
    terminate(cl_proxy.child);
    terminate(el_proxy.child);

    let cl = rows(
        &cl_db,
        "SELECT transport, mode, payload_status, block_hash FROM calls WHERE method = 'engine_newPayloadV4'",
    );
    let el = rows(
        &el_db,
        "SELECT transport, mode, payload_status, block_hash FROM calls WHERE method = 'engine_newPayloadV4'",
    );
    assert!(
        hashes.len() >= 10 && cl.len() >= hashes.len() && el.len() >= hashes.len(),
        "{} {} {}",
        hashes.len(),
        cl.len(),
        el.len()
    );
    for (rows, transport) in [(&cl, "json-rpc"), (&el, "rest-ssz")] {
        for row in rows {
            let expected = [
                Some(transport.into()),
                Some("bridge".into()),
                Some("VALID".into()),
            ];
            assert_eq!(row[..3], expected, "{row:?}");
        }
    }
    for hash in &hashes {
        assert!(
            el.iter().any(|r| r[3].as_deref() == Some(hash)),
            "{hash} did not cross the REST-SSZ link"
        );
    }
}

#[test]
fn a_failed_get_payload_is_seen_by_lodestar_and_the_chain_recovers_when_the_rule_goes() {
    let Some(tools) = tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("calls.db");
    let (geth_auth, listen) = (free_port(), format!("127.0.0.1:{}", free_port()));
    let chain = Chain::up(&tools, geth_auth, &format!("http://{listen}"));
    let proxy = start_proxy_at(&listen, &[], el(geth_auth), &proxy_flags(&db, &[]));
    let _proxy_guard = KillOnDrop::of(&proxy);
    chain.wait_for_slot(4, Duration::from_secs(120));
    let ctl = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_sszgate"))
            .args(["ctl", "--control", &proxy.metrics])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let rule = ctl(&[
        "add",
        "--method",
        "engine_getPayloadV4",
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
    let hashes = chain.execution_hashes(head);
    drop(chain);
    terminate(proxy.child);

    let injected = rows(
        &db,
        "SELECT count(*) FROM calls WHERE method = 'engine_getPayloadV4' AND injected IS NOT NULL",
    );
    assert!(injected[0][0].as_deref().unwrap().parse::<u64>().unwrap() >= 1);
    let after = rows(
        &db,
        "SELECT block_hash FROM calls WHERE method = 'engine_newPayloadV4' AND payload_status = 'VALID' AND block_number > (SELECT max(block_number) FROM calls WHERE method = 'engine_newPayloadV4' AND arrival_unix_us < (SELECT max(arrival_unix_us) FROM calls WHERE injected IS NOT NULL))",
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

#[test]
fn a_devnet_with_lodestar_as_its_consensus_client() {
    let Some(tools) = tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let sszgate = env!("CARGO_BIN_EXE_sszgate");
    let up = Command::new(sszgate)
        .args([
            "devnet", "up", "--dir", &d, "--fork", "prague", "--cl", "lodestar",
        ])
        .arg("--lodestar")
        .arg(&tools.1)
        .env("SSZGATE_GETH", &tools.0)
        .output()
        .unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("devnet.json")).unwrap())
            .unwrap();
    let beacon = state["beacon_url"]
        .as_str()
        .expect("a beacon API")
        .to_string();
    let head = || common::chain::head_slot(&beacon);
    let started = Instant::now();
    while head() < 8 {
        if started.elapsed() > Duration::from_secs(120) {
            let log = common::log_tail(&dir.path().join("cl.log"), 4000);
            let _ = Command::new(sszgate)
                .args(["devnet", "down", "--dir", &d])
                .status();
            panic!("no slot 8 after 120 s: {}", log);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let down = Command::new(sszgate)
        .args(["devnet", "down", "--dir", &d])
        .output()
        .unwrap();
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert!(String::from_utf8_lossy(&down.stdout).contains("CL pid"));
    let imported = rows(
        &dir.path().join("records.db"),
        "SELECT payload_status, verdict, cl_client FROM calls WHERE method = 'engine_newPayloadV4'",
    );
    assert!(imported.len() >= 5, "{imported:?}");
    for row in &imported {
        assert_eq!(
            row[..2],
            [Some("VALID".into()), Some("ok".into())],
            "{row:?}"
        );
        assert!(
            row[2].as_deref().is_some_and(|c| c.contains("Lodestar")),
            "{row:?}"
        );
    }
}
