//! End to end with a real execution client: `sszgate`'s driver builds an Osaka chain with
//! transfers and real-blob transactions on go-ethereum v1.17.8, three ways (directly, through
//! the `sszgate proxy` binary relaying JSON-RPC, and through it bridging the driver's REST-SSZ
//! to geth's JSON-RPC); then a run where geth is stopped and restarted under the proxy; then
//! `sszgate devnet up --cl lodestar`: Lodestar v1.38 on Fulu with a follower pair and the
//! blob feed, blocks of at least 48 real blobs seen through sszgate on both Engine links.
//!
//! Needs geth (`scripts/install-geth.sh`, or `SSZGATE_GETH`) and, for the Lodestar case, a
//! Lodestar v1.38 build (`../shared/tools/lodestar-fulu/build.sh`, `SSZGATE_LODESTAR_FULU`).
//! Locally a missing one skips with a loud message; under `CI=true` it is a failure.

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use alloy_primitives::B256;
use sszgate_drive::{
    BlockReport, DriveConfig, Driver, EngineTransport, EthRpc, Load, LoadShape,
    client::client_version,
    devnet::{
        Devnet, DevnetConfig, DevnetState, ElKind, beacon_get, find_ethereumjs, find_geth,
        head_slot,
    },
    lodestar,
};
use sszgate_engine::Fork;
use sszgate_gateway::JwtSecret;
use sszgate_record::{Recorder, Sink, SinkSpec};

/// One geth at a time: two cores, and each run starts its own node.
static ONE_GETH: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether `el` is installed; locally a missing one skips loudly, under CI it fails.
fn have(el: ElKind) -> bool {
    let (found, install) = match el {
        ElKind::Geth => (
            find_geth(Path::new(".")),
            "scripts/install-geth.sh, or SSZGATE_GETH",
        ),
        ElKind::Ethereumjs => (
            find_ethereumjs(Path::new(".")),
            "scripts/install-ethereumjs.sh, or SSZGATE_ETHEREUMJS",
        ),
    };
    if found.is_some() {
        return true;
    }
    skip(&format!("no {el:?} ({install})"));
    false
}

/// Skips loudly; under CI a missing peer is a failure.
fn skip(why: &str) {
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!in_ci, "devnet test: {why} under CI");
    eprintln!("\n!!!!!!!! SKIPPED: devnet test: {why} !!!!!!!!\n");
}

/// The Lodestar v1.38 build the devnet finds by itself, when it is a finished one.
fn lodestar_build() -> Option<PathBuf> {
    let dir = lodestar::build_dir(None)?;
    match lodestar::Build::open(&dir) {
        Ok(_) => Some(dir),
        Err(e) => {
            skip(&e.to_string());
            None
        }
    }
}

/// How the driver reaches geth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    Direct,
    Snoop,
    Bridge,
}

/// (method, verdict, verify_check, verify_detail) of a proxy record.
type Verdict = (String, Option<String>, Option<String>, Option<String>);

/// (method, block number, blob count, status) of a record, in call order.
type Row = (String, Option<i64>, Option<i64>, i64);

fn rows(db: &Path, filter: &str) -> Vec<Row> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let sql = format!(
        "SELECT coalesce(method, '?'), block_number, blob_count, status FROM calls {filter} ORDER BY seq"
    );
    conn.prepare(&sql)
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Waits (up to 10 minutes) until the proxy's records hold `n` verified calls of the driver
/// (newPayload, getPayload, getBlobs); fails naming how many came.
fn wait_for_verified_records(db: &Path, n: usize) {
    let count = || -> usize {
        let Ok(conn) = rusqlite::Connection::open(db) else {
            return 0;
        };
        conn.query_row(
            "SELECT count(*) FROM calls WHERE verdict IS NOT NULL AND method IN \
             ('engine_newPayloadV4', 'engine_getPayloadV5', 'engine_getBlobsV2')",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_or(0, |c| c as usize)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    let mut seen = count();
    while seen < n && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(500));
        seen = count();
    }
    assert!(
        seen >= n,
        "the proxy recorded {seen} of {n} verified calls in 10 minutes"
    );
}

fn recorder(db: &Path) -> Arc<Recorder> {
    let spec: SinkSpec = format!("sqlite:{}", db.display()).parse().unwrap();
    let sink = Sink::open(&spec).unwrap().unwrap();
    Arc::new(Recorder::start(vec![sink], "driver", vec![], 1 << 16))
}

fn devnet_config(dir: &Path, proxy: bool) -> DevnetConfig {
    DevnetConfig {
        dir: dir.to_path_buf(),
        el: ElKind::Geth,
        fork: Fork::Osaka,
        max_blobs: 72,
        proxy_binary: proxy.then(|| env!("CARGO_BIN_EXE_sszgate").into()),
        lodestar: None,
    }
}

/// Drives `blocks` blocks on a fresh devnet reached `way`; returns the blocks, the driver's
/// records and the proxy's records (calls of the driver only).
async fn drive_one_way(
    way: Way,
    blocks: usize,
    shape: LoadShape,
) -> (Vec<BlockReport>, Vec<Row>, Vec<Row>) {
    let dir = tempfile::tempdir().unwrap();
    let devnet = Devnet::up(&devnet_config(dir.path(), way != Way::Direct))
        .await
        .unwrap();
    let state = devnet.state.clone();
    let (url, transport) = match way {
        Way::Direct => (state.engine_url.clone(), EngineTransport::Json),
        Way::Snoop => (state.proxy_url.clone().unwrap(), EngineTransport::Json),
        Way::Bridge => (state.proxy_url.clone().unwrap(), EngineTransport::Ssz),
    };
    let secret = JwtSecret::from_hex(&state.secret_hex().unwrap()).unwrap();
    let driver_db = dir.path().join("driver.db");
    let recorder = recorder(&driver_db);
    let engine = sszgate_drive::engine_client(&url, transport, secret, Some(recorder.clone()));
    let eth = EthRpc::new(&state.eth_url);
    let blobs = sszgate_fixtures::Fixtures::load(&sszgate_fixtures::testdata_dir())
        .unwrap()
        .blobs()
        .unwrap();
    let load = Load::new(
        &eth,
        Fork::Osaka,
        shape,
        blobs,
        sszgate_drive::Senders::dev(),
    )
    .await
    .unwrap();
    let mut driver = Driver::start(engine, eth, Some(load), DriveConfig::default())
        .await
        .unwrap();
    let mut reports = Vec::new();
    for _ in 0..blocks {
        let report = driver
            .step()
            .await
            .unwrap_or_else(|e| panic!("{way:?}: {e}"));
        reports.push(report);
    }
    recorder.shutdown();
    if let Some(db) = &state.records {
        // The proxy verifies every blob (KZG) off the relay path; on a loaded machine its
        // records can trail the relay by minutes, more than the devnet's stop waits for.
        wait_for_verified_records(db, blocks * 3);
    }
    drop(devnet); // the proxy drains its records on SIGTERM
    let driver_rows = rows(&driver_db, "");
    let proxy_rows = match &state.records {
        Some(db) => {
            // The devnet's proxy verifies everything: every payload and blob answer passes.
            let conn = rusqlite::Connection::open(db).unwrap();
            let verdicts: Vec<Verdict> = conn
                .prepare("SELECT method, verdict, verify_check, verify_detail FROM calls WHERE method NOT LIKE 'engine_forkchoice%' AND method LIKE 'engine_%' ORDER BY seq")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .map(Result::unwrap)
                .filter(|r| r.0 != "engine_getClientVersionV1" && r.0 != "engine_exchangeCapabilities")
                .collect();
            assert_eq!(verdicts.len(), blocks * 3, "{way:?}: {verdicts:?}");
            for (method, verdict, check, detail) in &verdicts {
                assert_eq!(
                    verdict.as_deref(),
                    Some("ok"),
                    "{way:?} {method}: {detail:?}"
                );
                if method != "engine_newPayloadV4" {
                    assert_eq!(check.as_deref(), Some("kzg"), "{way:?} {method}");
                }
            }
            rows(db, &format!("WHERE cl_client = '{}'", client_version()))
        }
        None => Vec::new(),
    };
    (reports, driver_rows, proxy_rows)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn geth_osaka_chain_is_the_same_direct_snooped_and_bridged() {
    if !have(ElKind::Geth) {
        return;
    }
    let _turn = ONE_GETH.lock().await;
    let shape = LoadShape {
        transfers: 2,
        blob_txs: 2,
        blobs_per_tx: 6,
    };
    let mut chains: Vec<(Way, Vec<BlockReport>)> = Vec::new();
    for way in [Way::Direct, Way::Snoop, Way::Bridge] {
        let (blocks, driver_rows, proxy_rows) = drive_one_way(way, 20, shape).await;
        assert_eq!(blocks.len(), 20);
        for block in &blocks {
            assert_eq!(block.tx_hashes.len(), 4, "{way:?} block {}", block.number);
            assert_eq!(block.blob_count, 12, "{way:?} block {}", block.number);
            assert_eq!(block.left_out, 0);
        }
        // Per block: fcu, getPayload, getBlobs, newPayload, fcu.
        assert_eq!(driver_rows.len(), 20 * 5, "{way:?}");
        let get_payload = &driver_rows[1];
        assert_eq!(
            (get_payload.0.as_str(), get_payload.1, get_payload.2),
            ("engine_getPayloadV5", Some(1), Some(12)),
            "{way:?}"
        );
        assert!(
            driver_rows.iter().all(|r| r.3 == 200),
            "{way:?}: {driver_rows:?}"
        );
        if way == Way::Direct {
            assert!(proxy_rows.is_empty());
        } else {
            // The proxy saw exactly the driver's calls, in order, with the same facts.
            assert_eq!(proxy_rows, driver_rows, "{way:?}");
        }
        chains.push((way, blocks));
    }
    let summary = |blocks: &[BlockReport]| -> Vec<(u64, B256, Vec<B256>)> {
        blocks
            .iter()
            .map(|b| (b.number, b.hash, b.tx_hashes.clone()))
            .collect()
    };
    let direct = summary(&chains[0].1);
    for (way, blocks) in &chains[1..] {
        assert_eq!(summary(blocks), direct, "{way:?} built another chain");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_answers_errors_while_geth_is_down_and_recovers_without_restart() {
    if !have(ElKind::Geth) {
        return;
    }
    let _turn = ONE_GETH.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut devnet = Devnet::up(&devnet_config(dir.path(), true)).await.unwrap();
    let state = devnet.state.clone();
    let secret = JwtSecret::from_hex(&state.secret_hex().unwrap()).unwrap();
    let driver_db = dir.path().join("driver.db");
    let recorder = recorder(&driver_db);
    let engine = sszgate_drive::engine_client(
        state.proxy_url.as_deref().unwrap(),
        EngineTransport::Json,
        secret,
        Some(recorder.clone()),
    );
    let config = DriveConfig {
        build_time: std::time::Duration::from_millis(300),
        ..DriveConfig::default()
    };
    let mut driver = Driver::start(engine, EthRpc::new(&state.eth_url), None, config)
        .await
        .unwrap();
    for _ in 0..3 {
        driver.step().await.unwrap();
    }
    devnet.stop_el().unwrap();
    for _ in 0..3 {
        let error = driver.step().await.expect_err("geth is down").to_string();
        eprintln!("while geth is down: {error}");
        // The proxy answers, for the EL: a JSON-RPC error with what happened.
        assert!(
            error.contains("engine_forkchoiceUpdatedV3"),
            "the error names the call: {error}"
        );
        assert!(!error.contains("to http://"), "the proxy answered: {error}");
    }
    devnet.restart_el().await.unwrap();
    for _ in 0..3 {
        driver.step().await.unwrap();
    }
    assert_eq!(driver.head().number, 6);
    recorder.shutdown();
    let records = state.records.clone().unwrap();
    drop(devnet);
    let driver_rows = rows(&driver_db, "");
    let proxy_rows = rows(
        &records,
        &format!("WHERE cl_client = '{}'", client_version()),
    );
    assert_eq!(driver_rows.len(), 3 * 4 + 3 + 3 * 4, "{driver_rows:?}");
    // Every call is recorded once on each side, in the same order, failures included.
    assert_eq!(proxy_rows, driver_rows);
    let statuses: Vec<i64> = proxy_rows.iter().map(|r| r.3).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 502).count(),
        3,
        "{statuses:?}"
    );
    // The three calls of the outage carry the error the CL got, on both sides.
    for db in [&records, &driver_db] {
        let conn = rusqlite::Connection::open(db).unwrap();
        let errors: Vec<(String, i64, String)> = conn
            .prepare(&format!(
                "SELECT method, error_code, error_message FROM calls WHERE error_code IS NOT NULL AND cl_client = '{}' ORDER BY seq",
                client_version()
            ))
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(errors.len(), 3, "{}: {errors:?}", db.display());
        assert!(
            errors
                .iter()
                .all(|(m, code, _)| m == "engine_forkchoiceUpdatedV3" && *code != 0),
            "{errors:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ethereumjs_prague_over_json_and_through_the_bridge() {
    // geth writes the genesis, so both are needed.
    if !have(ElKind::Ethereumjs) || !have(ElKind::Geth) {
        return;
    }
    let _turn = ONE_GETH.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let config = DevnetConfig {
        el: ElKind::Ethereumjs,
        fork: Fork::Prague,
        max_blobs: 9,
        ..devnet_config(dir.path(), true)
    };
    let devnet = Devnet::up(&config).await.unwrap();
    let state = devnet.state.clone();
    let secret = JwtSecret::from_hex(&state.secret_hex().unwrap()).unwrap();
    let driver_db = dir.path().join("driver.db");
    let recorder = recorder(&driver_db);
    let prague = DriveConfig {
        fork: Fork::Prague,
        ..DriveConfig::default()
    };
    let shape = LoadShape {
        transfers: 2,
        ..LoadShape::default()
    };
    let mut heads = Vec::new();
    for transport in [EngineTransport::Json, EngineTransport::Ssz] {
        let engine = sszgate_drive::engine_client(
            state.proxy_url.as_deref().unwrap(),
            transport,
            secret.clone(),
            Some(recorder.clone()),
        );
        let eth = EthRpc::new(&state.eth_url);
        let load = Load::new(
            &eth,
            Fork::Prague,
            shape,
            vec![],
            sszgate_drive::Senders::dev(),
        )
        .await
        .unwrap();
        let mut driver = Driver::start(engine, eth, Some(load), prague.clone())
            .await
            .unwrap();
        for _ in 0..3 {
            let block = driver
                .step()
                .await
                .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
            assert_eq!(block.tx_hashes.len(), 2, "{transport:?}: {block:?}");
            heads.push(block.number);
        }
    }
    assert_eq!(heads, [1, 2, 3, 4, 5, 6]);
    recorder.shutdown();
    drop(devnet);
    let driver_rows = rows(&driver_db, "");
    let proxy_rows = rows(
        state.records.as_ref().unwrap(),
        &format!("WHERE cl_client = '{}'", client_version()),
    );
    assert_eq!(driver_rows.len(), 6 * 4);
    assert_eq!(proxy_rows, driver_rows);
    let methods: Vec<&str> = proxy_rows[..4].iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        methods,
        [
            "engine_forkchoiceUpdatedV3",
            "engine_getPayloadV4",
            "engine_newPayloadV4",
            "engine_forkchoiceUpdatedV3"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drive_sends_its_load_from_the_keys_it_is_given() {
    if !have(ElKind::Geth) {
        return;
    }
    let _turn = ONE_GETH.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let config = devnet_config(dir.path(), false);
    let devnet = Devnet::up(&config).await.unwrap();
    let state = devnet.state.clone();
    let drive = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sszgate"))
            .args([
                "drive",
                "--engine",
                &state.engine_url,
                "--eth-rpc",
                &state.eth_url,
            ])
            .arg("--jwt-secret")
            .arg(&state.jwt_secret)
            .args(["--fork", "osaka", "--blocks", "2", "--txs-per-block", "1"])
            .arg("--store")
            .arg(format!("sqlite:{}", dir.path().join("drive.db").display()))
            .args(extra)
            .env_remove("SSZGATE_DRIVE_KEY")
            .env_remove("SSZGATE_DRIVE_MNEMONIC")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // An account the chain never funded: refused up front, naming it and the way out.
    let unfunded = "0x".to_string() + &"17".repeat(32);
    // (The driver runs as its own process; waiting for it blocks one of the two workers.)
    let (ok, err) = drive(&["--key", &unfunded]);
    assert!(
        !ok && err.contains("has no funds") && err.contains("--key"),
        "{err}"
    );
    // The funded accounts, as a user's mnemonic gives them: transfers and blobs go in.
    let mnemonic = "test test test test test test test test test test test junk";
    let (ok, err) = drive(&[
        "--mnemonic",
        mnemonic,
        "--blob-txs-per-block",
        "1",
        "--blobs-per-tx",
        "1",
    ]);
    assert!(ok, "{err}");
    drop(devnet);
}

/// `sszgate devnet ARGS…` on the devnet in `dir`: success, stdout, stderr.
fn devnet_command(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .arg("devnet")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// Stops the devnet in its directory when the test ends, passed or not.
struct DownOnDrop<'a>(&'a Path);

impl Drop for DownOnDrop<'_> {
    fn drop(&mut self) {
        let _ = devnet_command(self.0, &["down"]);
    }
}

/// Text columns of `sql`'s rows in the database `db`, NULL as "NULL".
fn text_rows(db: &Path, sql: &str) -> Vec<Vec<String>> {
    common::sql_rows(db, sql)
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|c| c.unwrap_or_else(|| "NULL".into()))
                .collect()
        })
        .collect()
}

/// The first beacon block at `beacon` with at least `blobs` blobs: its slot, blob count and
/// execution block hash; waits for it at most `within`, reading each slot once.
async fn a_block_of(
    beacon: &str,
    blobs: usize,
    within: Duration,
    log: &Path,
) -> (u64, usize, String) {
    let started = Instant::now();
    let mut next = 1;
    loop {
        let head = head_slot(beacon).await.unwrap_or(0);
        while next <= head {
            let block = beacon_get(&format!("{beacon}/eth/v2/beacon/blocks/{next}")).await;
            let body = block.as_ref().map(|b| &b["data"]["message"]["body"]);
            if let Ok(body) = body {
                let count = body["blob_kzg_commitments"].as_array().map_or(0, Vec::len);
                eprintln!("slot {next}: {count} blobs");
                if count >= blobs {
                    let hash = body["execution_payload"]["block_hash"].as_str().unwrap();
                    return (next, count, hash.to_string());
                }
            }
            next += 1;
        }
        assert!(
            started.elapsed() < within,
            "no block of {blobs} blobs by slot {head}; the feed's log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lodestar_devnet_on_fulu_with_a_follower_carries_48_blob_blocks_through_sszgate_on_both_links()
 {
    if !have(ElKind::Geth) {
        return;
    }
    let Some(build) = lodestar_build() else {
        return;
    };
    let _turn = ONE_GETH.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let build = build.display().to_string();
    // (`up` runs as its own process; waiting for it blocks one of the two workers.)
    let (ok, stdout, stderr) = devnet_command(
        &dir,
        &[
            "up",
            "--cl",
            "lodestar",
            "--followers",
            "1",
            "--lodestar",
            &build,
        ],
    );
    let _down = DownOnDrop(&dir);
    assert!(ok, "{stderr}");
    for line in [
        "Lodestar v1.38 proposing",
        "follower 1 up",
        "blob feed keeping 48",
    ] {
        assert!(stderr.contains(line), "no progress line {line:?}: {stderr}");
    }
    assert!(stdout.contains("follower 1:"), "{stdout}");
    let state = DevnetState::read(&dir).unwrap();
    assert_eq!(state.fork, "osaka");
    assert_eq!(state.seconds_per_slot, Some(6));
    let [follower] = state.followers.as_slice() else {
        panic!("one follower: {state:?}")
    };
    let follower_records = follower.proxy.as_ref().unwrap().records.clone();
    let beacon = state.beacon_url.clone().unwrap();
    let (slot, blobs, hash) =
        a_block_of(&beacon, 48, Duration::from_secs(300), &dir.join("feed.log")).await;
    // The follower imports it and fetches its blobs within a few slots; generous, as a
    // loaded machine imports 48-blob blocks slowly: only a stuck follower waits this long.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let head = head_slot(&follower.beacon_url).await;
        if head.as_ref().is_ok_and(|&h| h >= slot + 2) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the follower's head is {head:?}, not past slot {slot}; its logs:\n{}",
            ["cl2.log", "el2.log", "proxy2.log"]
                .map(|log| format!("== {log}\n{}", common::log_tail(&dir.join(log), 8 << 10)))
                .join("\n")
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let (ok, stdout, stderr) = devnet_command(&dir, &["down"]);
    assert!(ok && stdout.contains("CL pid"), "{stdout}{stderr}");
    assert!(blobs <= 72, "{blobs} blobs in one block, above BPO1's 72");

    // The proposer's link: the block's bundle with all its blobs, cell proofs checked with KZG.
    let records = state.records.clone().unwrap();
    let bundle = text_rows(
        &records,
        &format!(
            "SELECT blob_count, status, verdict, verify_check FROM calls WHERE method = 'engine_getPayloadV5' AND block_hash = '{hash}'"
        ),
    );
    let want = [blobs.to_string(), "200".into(), "ok".into(), "kzg".into()];
    assert!(bundle.iter().any(|r| r[..] == want), "{bundle:?}");
    // The follower's link: its blobs asked of its geth and all answered, checked against the
    // hashes asked.
    let fetched = text_rows(
        &follower_records,
        "SELECT blobs_requested, blobs_returned, status, verdict FROM calls WHERE method = 'engine_getBlobsV2'",
    );
    let want = [
        blobs.to_string(),
        blobs.to_string(),
        "200".into(),
        "ok".into(),
    ];
    assert!(fetched.iter().any(|r| r[..] == want), "{fetched:?}");
    // Both links: every block imported VALID and verified. The proposer names itself Lodestar
    // before its first block; the follower's first calls may come before its name (they are
    // recorded under its HTTP client's).
    for db in [&records, &follower_records] {
        let imported = text_rows(
            db,
            "SELECT block_hash, payload_status, verdict, cl_client FROM calls WHERE method = 'engine_newPayloadV4'",
        );
        assert!(
            imported.iter().any(|r| r[0] == hash),
            "{}: {hash} not imported",
            db.display()
        );
        for row in &imported {
            assert_eq!(row[1..3], ["VALID", "ok"], "{}: {row:?}", db.display());
            let named = row[3].contains("Lodestar");
            assert!(named || db != &records, "{}: {row:?}", db.display());
        }
    }
}
