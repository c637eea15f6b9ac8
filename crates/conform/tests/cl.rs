//! `conform cl`: sszgate's driver over REST-SSZ (the typed client a CL-side test uses) passes
//! every check through it to the bridge in front of a real geth; and each check fails alone
//! on a request breaking exactly its rule (no EL needed: those requests are judged before
//! they are sent on).

mod common;

use std::time::Duration;

use common::{Net, have_geth};
use sszgate_client::JwtSecret;
use sszgate_conform::{
    Verdict,
    catalogue::CL_CHECKS,
    cl::{ClConfig, serve},
    probe::{Auth, Call, Probe},
    report::Report,
};
use sszgate_drive::{DriveConfig, Driver, EngineTransport, EthRpc, client::engine_client};
use sszgate_engine::{
    Fork, Message,
    method::{self, Family},
};
use tokio::{net::TcpListener, sync::oneshot};

/// `conform cl` on a free port in front of `upstream`: its URL, the stop and the report.
async fn start(
    upstream: &str,
    secret: &JwtSecret,
) -> (String, oneshot::Sender<()>, tokio::task::JoinHandle<Report>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let config = ClConfig {
        upstream: upstream.to_string(),
        secret: secret.clone(),
        calls: None,
        duration: None,
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let report = tokio::spawn(serve(listener, config, async move {
        let _ = stopped.await;
    }));
    (url, stop, report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_over_rest_ssz_passes_every_check() {
    if !have_geth() {
        return;
    }
    let _turn = common::ONE_GETH.lock().await;
    let net = Net::start().await;
    let (url, stop, report) = start(&net.bridge, &net.secret).await;
    let engine = engine_client(&url, EngineTransport::Ssz, net.secret.clone(), None);
    let eth = EthRpc::new(&net.devnet.state.eth_url);
    let config = DriveConfig {
        fork: Fork::Osaka,
        build_time: Duration::from_millis(200),
        ..DriveConfig::default()
    };
    let mut driver = Driver::start(engine, eth, None, config).await.unwrap();
    for _ in 0..2 {
        driver.step().await.unwrap();
    }
    stop.send(()).unwrap();
    let report = report.await.unwrap();
    assert!(report.passed(), "{}", report.to_table());
    assert!(
        report.with(Verdict::Skip).is_empty(),
        "{}",
        report.to_table()
    );
}

/// A valid `POST /forkchoice` (Osaka, no attributes), as the probe builds it.
fn forkchoice(probe: &Probe) -> Call {
    let m = method::for_fork(Family::ForkchoiceUpdated, Fork::Osaka).unwrap();
    let message = Message::Forkchoice(sszgate_drive::driver::forkchoice(Default::default(), None));
    probe.rest(m, Fork::Osaka, &message).unwrap()
}

/// An EL that accepts connections and never answers: requests stay in flight.
async fn silent_el() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    (url, task)
}

/// The requests that break one rule, made from a valid one.
type Breaking = fn(Call) -> Vec<Call>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_fails_alone_when_the_cl_breaks_its_rule() {
    let secret = JwtSecret::from_hex(&"42".repeat(32)).unwrap();
    let (el, el_task) = silent_el().await;
    let broken: Vec<(&str, Breaking)> = vec![
        ("cl.route", |c| {
            vec![Call {
                target: "/engine/v1/no-such".into(),
                ..c
            }]
        }),
        ("cl.jwt", |c| vec![c.auth(Auth::WrongKey)]),
        ("cl.fork-header", |c| {
            vec![c.with(method::FORK_HEADER, "bpo1")]
        }),
        ("cl.content-type", |c| {
            vec![c.with("content-type", "application/json")]
        }),
        ("cl.accept", |c| vec![c.with("accept", "application/json")]),
        ("cl.container", |c| {
            let cut = c.body.slice(..c.body.len() - 1);
            vec![c.body(cut)]
        }),
        ("cl.client-version", |c| {
            vec![c.without(method::CLIENT_VERSION_HEADER)]
        }),
        ("cl.forkchoice-serial", |c| vec![c.clone(), c]),
    ];
    for check in CL_CHECKS.iter() {
        assert!(
            broken.iter().any(|(id, _)| *id == check.id),
            "no break for {}",
            check.id
        );
    }
    for (id, breaking) in broken {
        let (url, stop, report) = start(&el, &secret).await;
        let probe = std::sync::Arc::new(Probe::new(&url, secret.clone()).unwrap());
        for call in breaking(forkchoice(&probe)) {
            let probe = probe.clone();
            // The EL never answers: the requests are judged, then held.
            tokio::spawn(async move { probe.send(&call).await });
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        stop.send(()).unwrap();
        let report = report.await.unwrap();
        assert_eq!(report.with(Verdict::Fail), [id], "{}", report.to_table());
    }
    el_task.abort();
}
