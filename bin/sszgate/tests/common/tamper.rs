//! A lying upstream for the verified-RPC tests: an HTTP relay between `sszgate rpc` and geth's
//! JSON-RPC or Lodestar's Beacon API that changes what passes, as told — a JSON-RPC request's
//! params, a JSON-RPC answer's `result`, or the bytes of any other answer — and counts the
//! changes it made, so a test knows its lie was told.
//!
//! Not here: what the verifier must make of the lies (the tests).

use std::{
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
    client::legacy::Client,
    rt::{TokioExecutor, TokioIo},
};
use serde_json::Value;

/// The most bytes the relay reads of a request or an answer.
const MAX_BODY: usize = 64 << 20;

/// Changes a JSON value for a method; true when it changed something.
pub(crate) type JsonChange = Box<dyn Fn(&str, &mut Value) -> bool + Send + Sync>;
/// Changes an answer's bytes for a request path; true when it changed something.
pub(crate) type BytesChange = Box<dyn Fn(&str, &mut Vec<u8>) -> bool + Send + Sync>;

/// The lie in force.
#[derive(Default)]
pub(crate) struct Lie {
    /// On a JSON-RPC request's params, before it is sent on.
    pub(crate) params: Option<JsonChange>,
    /// On a JSON-RPC answer's `result`.
    pub(crate) result: Option<JsonChange>,
    /// On the bytes of an answer to a GET (the Beacon API), by path.
    pub(crate) bytes: Option<BytesChange>,
}

struct Shared {
    upstream: String,
    lie: Mutex<Arc<Lie>>,
    told: AtomicU64,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
}

/// A running relay; dropped, it stops.
pub(crate) struct TamperRelay {
    /// Its base URL.
    pub(crate) url: String,
    shared: Arc<Shared>,
    _runtime: tokio::runtime::Runtime,
}

impl TamperRelay {
    /// A relay to `upstream` (a base URL), telling no lie yet.
    pub(crate) fn start(upstream: &str) -> TamperRelay {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            lie: Mutex::new(Arc::new(Lie::default())),
            told: AtomicU64::new(0),
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        runtime.spawn(serve(listener, shared.clone()));
        TamperRelay {
            url: format!("http://{addr}"),
            shared,
            _runtime: runtime,
        }
    }

    /// Tells `lie` from now on; the count of lies told starts again.
    pub(crate) fn tell(&self, lie: Lie) {
        *self.shared.lie.lock().unwrap() = Arc::new(lie);
        self.shared.told.store(0, Ordering::SeqCst);
    }

    /// Tells the truth from now on.
    pub(crate) fn honest(&self) {
        self.tell(Lie::default());
    }

    /// Answers changed since the lie was set.
    pub(crate) fn told(&self) -> u64 {
        self.shared.told.load(Ordering::SeqCst)
    }
}

async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| relay(shared.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn relay(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    Ok(relay_checked(&shared, req).await.unwrap_or_else(|e| {
        Response::builder()
            .status(502)
            .body(Full::new(Bytes::from(e)))
            .unwrap()
    }))
}

async fn relay_checked(
    shared: &Shared,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, String> {
    let lie = shared.lie.lock().unwrap().clone();
    let (parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let mut body = Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes()
        .to_vec();
    let mut method = None;
    if let Ok(mut call) = serde_json::from_slice::<Value>(&body) {
        let name = call["method"].as_str().unwrap_or_default().to_string();
        if let Some(change) = &lie.params
            && change(&name, &mut call["params"])
        {
            shared.told.fetch_add(1, Ordering::SeqCst);
            body = call.to_string().into_bytes();
        }
        method = Some(name);
    }
    let mut out = Request::builder()
        .method(parts.method)
        .uri(format!("{}{path}", shared.upstream));
    for name in ["content-type", "accept", "authorization"] {
        if let Some(v) = parts.headers.get(name) {
            out = out.header(name, v);
        }
    }
    let answer = shared
        .client
        .request(
            out.body(Full::new(Bytes::from(body)))
                .map_err(|e| e.to_string())?,
        )
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = answer.into_parts();
    let mut bytes = Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes()
        .to_vec();
    let changed = match (&method, &lie.result, &lie.bytes) {
        (Some(name), Some(change), _) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut answer) => {
                let changed = change(name, &mut answer["result"]);
                if changed {
                    bytes = answer.to_string().into_bytes();
                }
                changed
            }
            Err(_) => false,
        },
        (None, _, Some(change)) => change(&path, &mut bytes),
        _ => false,
    };
    if changed {
        shared.told.fetch_add(1, Ordering::SeqCst);
    }
    let mut response = Response::builder().status(parts.status);
    if let Some(v) = parts.headers.get("content-type") {
        response = response.header("content-type", v);
    }
    response
        .body(Full::new(Bytes::from(bytes)))
        .map_err(|e| e.to_string())
}
