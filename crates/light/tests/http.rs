//! `HttpBeaconApi` against a local HTTP server that serves a recorded case (by the
//! recordings' file-name rule): the facade syncs and anchors over real HTTP; 404s, answers
//! over the cap and a server that never answers are typed errors.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use sszgate_light::api::BeaconApi;
use sszgate_light::client::fetch_finalized_checkpoint;
use sszgate_light::spec::ChainSpec;
use sszgate_light::{BlockRef, HttpBeaconApi, LightClient, LightError, RecordedBeaconApi};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Starts a server on an ephemeral port; returns its base URL.
async fn serve(dir: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            tokio::spawn(answer(socket, dir.clone()));
        }
    });
    url
}

/// One request per connection: the recorded file with its media type, a 404, a 2 MiB body
/// (`/big`), nothing at all (`/silent`), or under `/json-only` the recorded JSON whatever
/// was asked (a node that ignores `Accept`).
async fn answer(mut socket: TcpStream, dir: PathBuf) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    let (path, json_only) = match path.strip_prefix("/json-only") {
        Some(rest) => (rest.to_string(), true),
        None => (path, false),
    };
    let ssz = !json_only
        && text
            .to_ascii_lowercase()
            .contains("accept: application/octet-stream");
    if path == "/silent" {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return;
    }
    let body = if path == "/big" {
        Some(vec![b'x'; 2 << 20])
    } else {
        let ext = if ssz { "ssz" } else { "json" };
        std::fs::read(dir.join(format!("{}.{ext}", RecordedBeaconApi::file_stem(&path)))).ok()
    };
    let (status, body) = match body {
        Some(body) => ("200 OK", body),
        None => ("404 Not Found", b"{\"code\":404}".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        if ssz {
            "application/octet-stream"
        } else {
            "application/json; charset=utf-8"
        },
        body.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(&body).await;
}

/// A client of the recorded `eth_blockNumber_electra` case over a local HTTP server.
async fn electra_client_over_http() -> LightClient<HttpBeaconApi> {
    let url = serve(common::data_dir().join("eth_blockNumber_electra")).await;
    let api = HttpBeaconApi::new(&url, Duration::from_secs(30)).unwrap();
    let checkpoint = fetch_finalized_checkpoint(&api).await.unwrap();
    LightClient::bootstrap(api, ChainSpec::mainnet(), checkpoint)
        .await
        .unwrap()
        .with_clock(|| 1606824023 + 11658783 * 12)
}

#[tokio::test]
async fn facade_over_http_anchors_the_recorded_block_number() {
    let client = electra_client_over_http().await;
    assert_eq!(client.sync().await.unwrap().updates_applied, 1);
    assert_eq!(
        client.anchor(BlockRef::Latest).await.unwrap().number,
        0x1566aae
    );
}

#[tokio::test]
async fn http_errors_are_typed() {
    let url = serve(common::data_dir().join("eth_blockNumber_electra")).await;
    let api = HttpBeaconApi::new(&url, Duration::from_millis(300)).unwrap();
    let err = api
        .get_ssz("/eth/v2/beacon/blocks/1", 1 << 20)
        .await
        .unwrap_err();
    assert!(matches!(err, LightError::NotFound { .. }), "{err}");
    let err = api.get_ssz("/big", 1 << 20).await.unwrap_err();
    assert!(
        matches!(&err, LightError::Api { detail, .. } if detail.contains("over 1048576")),
        "{err}"
    );
    let err = api.get_json("/silent", 1 << 20).await.unwrap_err();
    assert!(
        matches!(&err, LightError::Api { detail, .. } if detail.contains("within")),
        "{err}"
    );
    assert!(HttpBeaconApi::new("https://example.org", Duration::from_secs(1)).is_err());
}

/// A node that answers JSON where SSZ was asked: an error naming the endpoint and the media
/// type, not JSON bytes decoded as SSZ.
#[tokio::test]
async fn json_where_ssz_was_asked_is_refused_naming_the_media_type() {
    let url = serve(common::data_dir().join("eth_blockNumber_electra")).await;
    let api = HttpBeaconApi::new(&url, Duration::from_secs(30)).unwrap();
    let path = "/json-only/eth/v1/beacon/states/head/finality_checkpoints";
    let err = api.get_ssz(path, 1 << 20).await.unwrap_err();
    assert!(
        matches!(&err, LightError::Api { path: p, detail } if p == path && detail.contains("application/json")),
        "{err}"
    );
    // The same answer asked as JSON is read.
    assert!(api.get_json(path, 1 << 20).await.is_ok());
}

/// Beacon fetches spend the request's upstream budget: anchoring a block by number within a
/// budget of one fetch is refused naming the budget (and not remembered for the slot);
/// `latest` within a budget of ten costs two (the head and its parent), counted.
#[tokio::test]
async fn beacon_fetches_spend_the_requests_budget() {
    use sszgate_serve::{Budget, BudgetLimits};
    let client = electra_client_over_http().await;
    client.sync().await.unwrap();
    let budget = |fetches| {
        Budget::new(BudgetLimits {
            fetches,
            bytes: 64 << 20,
            ..BudgetLimits::default()
        })
    };
    let err = budget(1)
        .scope(client.anchor(BlockRef::Number(0x1566aae)))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LightError::Budget { spent, .. } if spent.what == "fetches" && spent.limit == 1),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("upstream budget of 1 fetches is spent"),
        "{err}"
    );
    let ample = budget(10);
    let anchor = ample
        .clone()
        .scope(client.anchor(BlockRef::Latest))
        .await
        .unwrap();
    assert_eq!(anchor.number, 0x1566aae);
    assert_eq!(ample.fetches_used(), 2);
}

/// A node that answers the light-client routes only in JSON (`Content-Type:
/// application/json`, the Beacon API's forms recorded from Lodestar): the facade bootstraps
/// and syncs the store it syncs from the node's SSZ answers.
#[tokio::test]
async fn a_node_answering_json_syncs_the_store_of_one_answering_ssz() {
    let url = serve(common::lodestar_dir()).await;
    let over = |url: String| HttpBeaconApi::new(&url, Duration::from_secs(30)).unwrap();
    let from_ssz = common::lodestar_client_synced(over(url.clone())).await;
    let from_json = common::lodestar_client_synced(over(format!("{url}/json-only"))).await;
    common::assert_same_store(&from_json, &from_ssz);
}
