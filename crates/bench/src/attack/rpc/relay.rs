//! The lying upstreams of the forged-head rows: HTTP relays in the campaign's process between
//! `sszgate rpc` and the live chain's Lodestar (Beacon API) or geth (JSON-RPC). The beacon
//! relay serves the forged blocks for their ids and hides the light-client updates (a node
//! may lag: the store then rests on its checkpoint, and any newer `latest` must come from the
//! forged head); the execution relay serves the forged header for F's block and the older
//! block's state for it. Each counts the lies it told, so a row knows its forgery was seen.
//!
//! Not here: making the forgery (`forge`), the verdicts.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response, body::Incoming, service::service_fn};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};
use serde_json::{Value, json};

use super::forge::ForgedHeader;

/// The most bytes a relay reads of a request or an answer.
const MAX_BODY: usize = 64 << 20;
/// The light-client routes the beacon relay hides (answered 404).
const HIDDEN: [&str; 3] = [
    "/eth/v1/beacon/light_client/updates",
    "/eth/v1/beacon/light_client/optimistic_update",
    "/eth/v1/beacon/light_client/finality_update",
];
/// The state methods whose block the execution relay moves to the older block.
const STATE_METHODS: [&str; 5] = [
    "eth_getProof",
    "eth_getBalance",
    "eth_getTransactionCount",
    "eth_getCode",
    "eth_getStorageAt",
];

/// The lie a relay tells.
#[derive(Clone, Default)]
pub(crate) enum Lie {
    /// None: everything passes unchanged.
    #[default]
    None,
    /// Beacon: these blocks (SSZ) by id (`head`, a slot, a root in lowercase hex).
    Blocks(HashMap<String, Vec<u8>>),
    /// Execution: this header for its block, the older block's state for it.
    Header(ForgedHeader),
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

struct Shared {
    upstream: String,
    lie: Mutex<Lie>,
    told: AtomicU64,
    client: HttpClient,
}

/// A running relay; dropped, it stops.
pub(crate) struct Relay {
    /// Its base URL.
    pub(crate) url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Relay {
    /// A relay to `upstream` (a base URL) on an ephemeral port, telling no lie yet.
    pub(crate) async fn start(upstream: &str) -> std::io::Result<Relay> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr: SocketAddr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            lie: Mutex::new(Lie::None),
            told: AtomicU64::new(0),
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        let task = tokio::spawn(serve_relay(listener, shared.clone(), relay));
        Ok(Relay {
            url: format!("http://{addr}"),
            shared,
            task,
        })
    }

    /// Tells `lie` from now on, and counts from zero.
    pub(crate) fn tell(&self, lie: Lie) {
        *self.shared.lie.lock().unwrap_or_else(|e| e.into_inner()) = lie;
        self.shared.told.store(0, Ordering::SeqCst);
    }

    /// How many answers carried the lie since it was told.
    pub(crate) fn told(&self) -> u64 {
        self.shared.told.load(Ordering::SeqCst)
    }
}

/// Serves HTTP/1.1 on `listener`, each request answered by `handle(shared, request)`: the
/// accept loop of the campaign's relays.
pub(crate) async fn serve_relay<S, F, Fut, B>(
    listener: tokio::net::TcpListener,
    shared: Arc<S>,
    handle: F,
) where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, Request<Incoming>) -> Fut + Copy + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Response<B>, std::convert::Infallible>>
        + Send
        + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    while let Ok((stream, _)) = listener.accept().await {
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(shared.clone(), request));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn answer(status: u16, content_type: &str, body: Vec<u8>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_default()
}

async fn relay(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let lie = shared.lie.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let path = request
        .uri()
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let outcome = match (&lie, request.method() == hyper::Method::POST) {
        (Lie::Blocks(blocks), false) => beacon(&shared, blocks, &path, request).await,
        (Lie::Header(header), true) => execution(&shared, header, request).await,
        _ => forward(&shared, request).await,
    };
    Ok(outcome.unwrap_or_else(|e| answer(502, "text/plain", e.into_bytes())))
}

/// A beacon GET: a forged block, a hidden route, or the node's answer.
async fn beacon(
    shared: &Shared,
    blocks: &HashMap<String, Vec<u8>>,
    path: &str,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, String> {
    let id = path
        .strip_prefix("/eth/v2/beacon/blocks/")
        .map(str::to_ascii_lowercase);
    if let Some(block) = id.and_then(|id| blocks.get(&id)) {
        shared.told.fetch_add(1, Ordering::SeqCst);
        return Ok(answer(200, "application/octet-stream", block.clone()));
    }
    if HIDDEN.iter().any(|hidden| path.starts_with(hidden)) {
        let body = json!({"code": 404, "message": "not available"}).to_string();
        return Ok(answer(404, "application/json", body.into_bytes()));
    }
    forward(shared, request).await
}

/// A JSON-RPC POST (one call or a batch), each call changed before and after geth answers.
async fn execution(
    shared: &Shared,
    header: &ForgedHeader,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, String> {
    let body = read(request.into_body()).await?;
    let parsed: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    let calls = match parsed {
        Value::Array(calls) => calls,
        one => vec![one],
    };
    let mut answers = Vec::with_capacity(calls.len());
    for mut call in calls {
        let method = call["method"].as_str().unwrap_or("").to_string();
        let moved = move_block(&method, &mut call["params"], header);
        let url = shared.upstream.clone();
        let answered = post_json(&shared.client, &url, call.to_string().into_bytes()).await?;
        let mut answered: Value = serde_json::from_slice(&answered).map_err(|e| e.to_string())?;
        if moved || forge_block(&mut answered["result"], header) {
            shared.told.fetch_add(1, Ordering::SeqCst);
        }
        answers.push(answered);
    }
    let body = if serde_json::from_slice::<Value>(&body).is_ok_and(|v| v.is_array()) {
        Value::Array(answers)
    } else {
        answers.pop().unwrap_or(Value::Null)
    };
    Ok(answer(
        200,
        "application/json",
        body.to_string().into_bytes(),
    ))
}

/// Moves a call about F's block to the real block (a lookup by the forged hash) or, for the
/// state methods, to the older block by its hash (by number, a reorganisation of the older
/// block's slot would answer another block's state: a proof that fits no forged root); true
/// when a state call was moved.
fn move_block(method: &str, params: &mut Value, header: &ForgedHeader) -> bool {
    let forged_hash = header.forged_hash.to_string();
    let number = format!("{:#x}", header.number);
    if method == "eth_getBlockByHash" && params[0].as_str() == Some(forged_hash.as_str()) {
        params[0] = json!(header.real_hash);
        return false;
    }
    if !STATE_METHODS.contains(&method) {
        return false;
    }
    let Some(block) = params.as_array_mut().and_then(|p| p.last_mut()) else {
        return false;
    };
    let names_f = match &*block {
        Value::String(id) => *id == number || id.eq_ignore_ascii_case(&forged_hash),
        Value::Object(id) => id
            .get("blockHash")
            .and_then(Value::as_str)
            .is_some_and(|h| h.eq_ignore_ascii_case(&forged_hash)),
        _ => false,
    };
    if names_f {
        *block = json!({"blockHash": header.older_hash});
    }
    names_f
}

/// Puts the forged state root and hash into a block answer of F's block; true when it did.
fn forge_block(result: &mut Value, header: &ForgedHeader) -> bool {
    let number = format!("{:#x}", header.number);
    if result.get("number").and_then(Value::as_str) != Some(number.as_str()) {
        return false;
    }
    result["stateRoot"] = json!(header.older_state_root);
    result["hash"] = json!(header.forged_hash);
    true
}

async fn read(body: Incoming) -> Result<Bytes, String> {
    Ok(Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes())
}

/// POSTs a JSON body to `url`; the answer's bytes (at most [`MAX_BODY`]).
pub(crate) async fn post_json(
    client: &HttpClient,
    url: &str,
    body: Vec<u8>,
) -> Result<Bytes, String> {
    let request = Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let answer = client.request(request).await.map_err(|e| e.to_string())?;
    Ok(Limited::new(answer.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes())
}

/// Passes `request` to the upstream unchanged (method, path, `accept`, `content-type`, body).
async fn forward(
    shared: &Shared,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, String> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut onward = Request::builder()
        .method(parts.method.clone())
        .uri(format!("{}{path}", shared.upstream));
    for name in ["accept", "content-type"] {
        if let Some(value) = parts.headers.get(name) {
            onward = onward.header(name, value);
        }
    }
    let onward = onward
        .body(Full::new(read(body).await?))
        .map_err(|e| e.to_string())?;
    let answered = shared
        .client
        .request(onward)
        .await
        .map_err(|e| e.to_string())?;
    let status = answered.status().as_u16();
    let content_type = answered
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_string();
    let body = Limited::new(answered.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok(answer(status, &content_type, body.to_vec()))
}

#[cfg(test)]
mod tests {
    use alloy_primitives::B256;
    use serde_json::json;

    use super::{ForgedHeader, move_block};

    fn header() -> ForgedHeader {
        ForgedHeader {
            number: 0x20,
            real_hash: B256::repeat_byte(0x11),
            forged_hash: B256::repeat_byte(0x22),
            older_number: 0x10,
            older_hash: B256::repeat_byte(0x33),
            older_state_root: B256::repeat_byte(0x44),
        }
    }

    /// The control row's flake: the older block's state was asked for by number, so a
    /// reorganisation at that number served another state (a proof not of O's root).
    #[test]
    fn a_state_call_about_f_is_moved_to_the_older_block_by_hash() {
        let header = header();
        let by_hash = json!({"blockHash": header.older_hash});
        let names_f = [
            json!("0x20"),
            json!(header.forged_hash),
            json!({"blockHash": header.forged_hash}),
        ];
        for block in names_f {
            let mut params = json!(["0x00000000000000000000000000000000000000aa", [], block]);
            assert!(move_block("eth_getProof", &mut params, &header));
            assert_eq!(params[2], by_hash, "moved to {}", params[2]);
        }
        let mut other = json!(["0x00000000000000000000000000000000000000aa", "0x21"]);
        assert!(!move_block("eth_getBalance", &mut other, &header));
        assert_eq!(other[1], json!("0x21"));
        let mut lookup = json!([header.forged_hash, false]);
        assert!(!move_block("eth_getBlockByHash", &mut lookup, &header));
        assert_eq!(lookup[0], json!(header.real_hash));
    }
}
