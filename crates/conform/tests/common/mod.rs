//! What the conformance tests share: a real geth on a fresh Osaka chain (one at a time, found
//! as the devnet finds it; a missing geth skips loudly, fails under `CI=true`), sszgate's
//! bridge in front of it in-process, and a front server that relays to the bridge and can
//! break exactly one rule of the spec.

#![allow(dead_code)] // each test file uses its own part of this module

use std::{path::Path, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{
    client::legacy::Client,
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use sszgate_client::JwtSecret;
use sszgate_drive::devnet::{Devnet, DevnetConfig, ElKind, find_geth};
use sszgate_engine::Fork;
use sszgate_gateway::{ProxyConfig, TransportChoice, Upstream, UpstreamTransport};
use sszgate_record::Recorder;
use tokio::{net::TcpListener, sync::oneshot};

/// One geth at a time: two cores shared.
pub(crate) static ONE_GETH: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// geth, or None after a loud skip (a failure under CI).
pub(crate) fn have_geth() -> bool {
    if find_geth(Path::new(".")).is_some() {
        return true;
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !in_ci,
        "geth is missing under CI: scripts/install-geth.sh, or SSZGATE_GETH"
    );
    eprintln!(
        "\n!!!!!!!! SKIPPED: conformance test against geth: no geth (SSZGATE_GETH) !!!!!!!!\n"
    );
    false
}

/// A geth devnet with sszgate's bridge in front, in-process.
pub(crate) struct Net {
    pub(crate) devnet: Devnet,
    pub(crate) bridge: String,
    pub(crate) secret: JwtSecret,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Net {
    /// Starts geth on a fresh Osaka chain and the bridge in front of it.
    pub(crate) async fn start() -> Net {
        let dir = tempfile::tempdir().unwrap();
        let config = DevnetConfig {
            dir: dir.path().join("dn"),
            el: ElKind::Geth,
            fork: Fork::Osaka,
            max_blobs: 9,
            proxy_binary: None,
            lodestar: None,
        };
        let devnet = Devnet::up(&config).await.expect("geth starts");
        let secret = JwtSecret::from_hex(&devnet.state.secret_hex().unwrap()).unwrap();
        let (bridge, stop) = bridge(&devnet.state.engine_url, secret.clone()).await;
        Net {
            devnet,
            bridge,
            secret,
            stop: Some(stop),
            _dir: dir,
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// sszgate's bridge (REST-SSZ in front of a JSON-RPC EL) on a free port: its URL.
async fn bridge(el: &str, secret: JwtSecret) -> (String, oneshot::Sender<()>) {
    let recorder = Arc::new(Recorder::start(Vec::new(), "proxy", Vec::new(), 1024));
    let config = Arc::new(ProxyConfig {
        limits: sszgate_gateway::Limits::default(),
        upstream: Upstream::new(el, Duration::from_secs(10), false).unwrap(),
        max_body: 64 << 20,
        cl_label: None,
        upstream_transport: TransportChoice::fixed(UpstreamTransport::Json),
        verify_jwt: false,
        jwt: Some(secret),
        verify_enforce: false,
        control: sszgate_gateway::ControlPoint::default(),
        control_token: None,
        front: None,
        splice: true,
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(sszgate_gateway::serve(
        listener,
        config,
        recorder,
        async move {
            let _ = stopped.await;
        },
    ));
    (url, stop)
}

/// A request as the front server sees it.
pub(crate) struct Req {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// An answer as the front server hands it back.
pub(crate) struct Ans {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Ans {
    /// A problem+json answer.
    pub(crate) fn problem(status: u16, kind: &str) -> Ans {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        let body = format!(r#"{{"type":"/engine-api/errors/{kind}"}}"#).into_bytes();
        Ans {
            status,
            headers,
            body,
        }
    }
}

/// One rule broken: the request changed (or answered here), the answer changed.
#[derive(Clone, Copy)]
pub(crate) struct Break {
    /// The check that must fail.
    pub(crate) check: &'static str,
    /// Changes the request; an answer given here is not forwarded.
    pub(crate) request: fn(&mut Req, &JwtSecret) -> Option<Ans>,
    /// Changes the bridge's answer to `req`.
    pub(crate) answer: fn(&Req, &mut Ans),
    /// Serve HTTP/1.1 only (no h2c).
    pub http1_only: bool,
}

/// A front server relaying to `upstream`, breaking `rule` (none: a faithful relay); its URL.
pub(crate) async fn front(upstream: String, secret: JwtSecret, rule: Option<Break>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let upstream = Arc::new(upstream);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (upstream, secret) = (upstream.clone(), secret.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |r| {
                    relay(upstream.clone(), secret.clone(), rule, r)
                });
                let mut builder = auto::Builder::new(TokioExecutor::new());
                if rule.is_some_and(|r| r.http1_only) {
                    builder = builder.http1_only();
                }
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    url
}

async fn relay(
    upstream: Arc<String>,
    secret: JwtSecret,
    rule: Option<Break>,
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let (parts, body) = request.into_parts();
    let body = Limited::new(body, 80 << 20)
        .collect()
        .await
        .unwrap()
        .to_bytes();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let mut req = Req {
        method: parts.method.to_string(),
        path,
        headers: parts.headers,
        body: body.to_vec(),
    };
    let canned = rule.and_then(|r| (r.request)(&mut req, &secret));
    let mut ans = match canned {
        Some(ans) => ans,
        None => forward(&upstream, &req).await,
    };
    if let Some(rule) = rule {
        (rule.answer)(&req, &mut ans);
    }
    let mut response = Response::new(Full::new(Bytes::from(ans.body)));
    *response.status_mut() = StatusCode::from_u16(ans.status).unwrap();
    *response.headers_mut() = ans.headers;
    Ok(response)
}

async fn forward(upstream: &str, req: &Req) -> Ans {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = Request::builder()
        .method(req.method.as_str())
        .uri(format!("{upstream}{}", req.path));
    for (name, value) in &req.headers {
        if name != header::HOST && name != header::CONTENT_LENGTH {
            request = request.header(name, value);
        }
    }
    let response = client
        .request(
            request
                .body(Full::new(Bytes::from(req.body.clone())))
                .unwrap(),
        )
        .await
        .unwrap();
    let mut headers = response.headers().clone();
    let (status, body) = sszgate_client::answer::read(response, 256 << 20)
        .await
        .unwrap();
    for name in [
        header::CONTENT_ENCODING,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
    ] {
        headers.remove(name);
    }
    Ans {
        status: status.as_u16(),
        headers,
        body: body.to_vec(),
    }
}
