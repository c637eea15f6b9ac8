//! The JSON-RPC server (hyper 1, HTTP/1.1 and h2c POST): single requests and batches (bounded
//! count, their calls answered concurrently up to a bound), JSON-RPC error codes, verified answers from an [`Answerer`] (the local
//! [`Verifier`] or a proof client), methods on the `allow_unverified` list passed through
//! (logged and counted as such), extra POST [`Route`]s at their own paths (the prover
//! endpoint), and `GET /metrics` (Prometheus text: requests per method and outcome, failures
//! per check, and the answerer's gauges, such as the light client's slots and lag).
//!
//! Connections are served under the gateway's limits, through the same code
//! (`sszgate-serve`): a head not in within the header timeout closes the connection, a head
//! over its bytes gets a 431, a request beyond the in-flight cap a 503 at once, a body over
//! `max_request_body` a 413 (from its `Content-Length` before it is read), a body not in
//! within the body timeout a 408. Each POST is answered on the bounded blocking pool
//! (`sszgate_serve::Offload`), so that CPU-bound checks never hold the async workers that
//! accept and answer `/metrics`, and with one upstream budget (`sszgate_serve::Budget`)
//! shared by a batch's calls: a request's fetches and bytes are bounded however it is built.
//!
//! Not here: the checks (`verifier`, the proof crate), the command line (the binary's).

use std::{
    collections::BTreeMap,
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Incoming, header, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use sszgate_serve::{Budget, BudgetLimits, InFlight, Offload};
use tokio::{net::TcpListener, task::JoinHandle};

use crate::{
    AnchorSource, ForkSchedule,
    backend::{Answerer, Route, RouteAnswer},
    error::RpcError,
    upstream::Upstream,
    verifier::{Limits, Verifier},
};

/// What the server listens on, reads from, and allows.
#[derive(Debug, Clone)]
pub struct Config {
    /// The untrusted execution JSON-RPC URL; empty: none (no pass-through).
    pub execution: String,
    /// The untrusted Beacon API (block bodies from beacon blocks) and its chain, if any.
    pub beacon: Option<BeaconSource>,
    /// The chain id answered by `eth_chainId` (trusted configuration, not the upstream's).
    pub chain_id: u64,
    /// Where to listen (`127.0.0.1:0` for an ephemeral port).
    pub listen: SocketAddr,
    /// Timeout of one upstream request.
    pub upstream_timeout: Duration,
    /// The largest upstream answer read, in bytes.
    pub max_upstream_answer: usize,
    /// The largest client request body, in bytes (`--max-body`).
    pub max_request_body: usize,
    /// The most requests in one batch (`--max-batch`).
    pub max_batch: usize,
    /// The most calls of one batch answered at once.
    pub batch_concurrency: usize,
    /// Header and body timeouts, the in-flight cap and the head's bytes, as the gateway's.
    pub connection: sszgate_serve::Limits,
    /// The upstream fetches and bytes one request (a whole batch) may cause.
    pub budget: BudgetLimits,
    /// Bounds of one request's cost.
    pub limits: Limits,
    /// Methods passed through to the execution RPC unverified.
    pub allow_unverified: Vec<String>,
    /// The chain's blob schedule (receipts' `blobGasPrice`, `BLOBBASEFEE` in calls).
    pub blob_schedule: ForkSchedule,
}

impl Config {
    /// Defaults for `execution` on chain `chain_id`: ephemeral local port, 10 s upstream
    /// timeout, 64 MiB answers, 1 MiB requests, batches of 100 answered 8 at once, the
    /// gateway's connection limits, the default upstream budget, the chain's known blob
    /// schedule (mainnet's; none for other chains).
    pub fn new(execution: &str, chain_id: u64) -> Config {
        Config {
            execution: execution.to_string(),
            beacon: None,
            chain_id,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            upstream_timeout: Duration::from_secs(10),
            max_upstream_answer: 64 << 20,
            max_request_body: 1 << 20,
            max_batch: 100,
            batch_concurrency: 8,
            connection: sszgate_serve::Limits::default(),
            budget: BudgetLimits::default(),
            limits: Limits::default(),
            allow_unverified: Vec::new(),
            blob_schedule: ForkSchedule::for_chain(chain_id),
        }
    }
}

/// An untrusted Beacon API and the chain it serves (whose fork schedule tells a beacon block's
/// layout by its slot).
#[derive(Debug, Clone)]
pub struct BeaconSource {
    /// The Beacon API base URL (`http://host:port[/base]`).
    pub url: String,
    /// The chain's parameters.
    pub spec: sszgate_light::ChainSpec,
}

/// Request counters: per method and outcome, failed checks per method and check, and the
/// time spent answering per method.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, &'static str), u64>>,
    checks: Mutex<BTreeMap<(String, &'static str), u64>>,
    seconds: Mutex<BTreeMap<String, (u64, f64)>>,
}

impl Metrics {
    fn record(
        &self,
        method: &str,
        result: &Result<Value, RpcError>,
        passed_through: bool,
        elapsed: Duration,
    ) {
        if let Ok(mut m) = self.seconds.lock() {
            let entry = m.entry(method.to_string()).or_default();
            entry.0 += 1;
            entry.1 += elapsed.as_secs_f64();
        }
        let outcome = match result {
            Ok(_) if passed_through => "unverified",
            Ok(_) => "verified",
            Err(e) => e.outcome(),
        };
        if let Ok(mut m) = self.requests.lock() {
            *m.entry((method.to_string(), outcome)).or_default() += 1;
        }
        if let (Err(RpcError::Verification(v)), Ok(mut m)) = (result, self.checks.lock()) {
            *m.entry((method.to_string(), v.check.name())).or_default() += 1;
        }
    }

    /// Requests of `method` with `outcome` (`verified`, `unverified`, `refused`, `failed`,
    /// `invalid`).
    pub fn requests(&self, method: &str, outcome: &str) -> u64 {
        self.requests
            .lock()
            .ok()
            .and_then(|m| {
                m.get(&(method.to_string(), outcome_label(outcome)?))
                    .copied()
            })
            .unwrap_or(0)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# HELP sszgate_rpc_requests_total JSON-RPC requests by method and outcome.\n# TYPE sszgate_rpc_requests_total counter\n",
        );
        if let Ok(m) = self.requests.lock() {
            for ((method, outcome), n) in m.iter() {
                out += &format!(
                    "sszgate_rpc_requests_total{{method=\"{method}\",outcome=\"{outcome}\"}} {n}\n"
                );
            }
        }
        out += "# HELP sszgate_rpc_checks_failed_total Answers refused, by method and failed check.\n# TYPE sszgate_rpc_checks_failed_total counter\n";
        if let Ok(m) = self.checks.lock() {
            for ((method, check), n) in m.iter() {
                out += &format!(
                    "sszgate_rpc_checks_failed_total{{method=\"{method}\",check=\"{check}\"}} {n}\n"
                );
            }
        }
        out += "# HELP sszgate_rpc_request_seconds Time to answer (upstream requests and checks), by method.\n# TYPE sszgate_rpc_request_seconds summary\n";
        if let Ok(m) = self.seconds.lock() {
            for (method, (count, sum)) in m.iter() {
                out += &format!("sszgate_rpc_request_seconds_sum{{method=\"{method}\"}} {sum}\n");
                out +=
                    &format!("sszgate_rpc_request_seconds_count{{method=\"{method}\"}} {count}\n");
            }
        }
        out
    }
}

/// The light client's standing as Prometheus gauges: its header slots, the wall clock's slot,
/// how far the optimistic header lags it, its period and whether the next committee is known.
pub(crate) fn light_gauges(s: &sszgate_light::client::LightStatus) -> String {
    let mut out = String::from(
        "# HELP sszgate_rpc_light_slot Slot of the light client's headers, and the wall clock's.\n# TYPE sszgate_rpc_light_slot gauge\n",
    );
    for (which, slot) in [
        ("finalized", s.finalized_slot),
        ("safe", s.safe_slot),
        ("optimistic", s.optimistic_slot),
        ("current", s.current_slot),
    ] {
        out += &format!("sszgate_rpc_light_slot{{header=\"{which}\"}} {slot}\n");
    }
    out += &format!(
        "# HELP sszgate_rpc_light_lag_slots Slots the optimistic header is behind the wall clock.\n# TYPE sszgate_rpc_light_lag_slots gauge\nsszgate_rpc_light_lag_slots {}\n\
         # HELP sszgate_rpc_light_period Sync-committee period of the finalized header.\n# TYPE sszgate_rpc_light_period gauge\nsszgate_rpc_light_period {}\n\
         # HELP sszgate_rpc_light_next_committee_known 1 when the next period's committee is known.\n# TYPE sszgate_rpc_light_next_committee_known gauge\nsszgate_rpc_light_next_committee_known {}\n",
        s.current_slot.saturating_sub(s.optimistic_slot),
        s.period,
        u8::from(s.next_committee_known)
    );
    out
}

fn outcome_label(outcome: &str) -> Option<&'static str> {
    ["verified", "unverified", "refused", "failed", "invalid"]
        .into_iter()
        .find(|o| *o == outcome)
}

/// Extra POST routes: a path and what answers it.
pub type Routes = Vec<(String, Arc<dyn Route>)>;

struct Shared<B> {
    answerer: B,
    /// The cap on requests handled at once.
    in_flight: InFlight,
    /// The blocking threads requests are answered on.
    offload: Offload,
    /// The execution RPC that methods allowed unverified are passed to.
    passthrough: Option<Upstream>,
    routes: Routes,
    config: Config,
    metrics: Arc<Metrics>,
}

/// A running server; dropped or [`Server::stop`]ped, it stops accepting.
pub struct Server {
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    task: JoinHandle<()>,
}

impl Server {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its counters.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Stops accepting connections.
    pub fn stop(self) {}

    /// Resolves when the server stopped accepting on its own (its listener failed): a
    /// process should then end rather than keep a port that answers nothing.
    pub async fn stopped(&mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the verified JSON-RPC server for `config`, trusting `anchors` (the local
/// verifier).
pub async fn serve<A: AnchorSource>(config: Config, anchors: A) -> Result<Server, String> {
    let verifier = local_verifier(&config, anchors)?;
    serve_with(config, verifier, Vec::new()).await
}

/// The local verifier `config` describes, trusting `anchors`.
pub fn local_verifier<A: AnchorSource>(config: &Config, anchors: A) -> Result<Verifier<A>, String> {
    let upstream = Upstream::new(
        &config.execution,
        config.upstream_timeout,
        config.max_upstream_answer,
    )?;
    let verifier = Verifier::new(anchors, upstream, config.chain_id, config.limits)
        .with_blob_schedule(config.blob_schedule.clone());
    match &config.beacon {
        Some(beacon) => {
            verifier.with_beacon(beacon, config.upstream_timeout, config.max_upstream_answer)
        }
        None => Ok(verifier),
    }
}

/// Starts the JSON-RPC server for `config` with `answerer` and the extra POST `routes`.
pub async fn serve_with<B: Answerer>(
    config: Config,
    answerer: B,
    routes: Routes,
) -> Result<Server, String> {
    let passthrough = match config.execution.as_str() {
        "" => None,
        url => Some(Upstream::new(
            url,
            config.upstream_timeout,
            config.max_upstream_answer,
        )?),
    };
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| format!("listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let metrics = Arc::new(Metrics::default());
    let shared = Arc::new(Shared {
        answerer,
        in_flight: config.connection.in_flight(),
        offload: Offload::new(sszgate_serve::DEFAULT_OFFLOAD_THREADS),
        passthrough,
        routes,
        config,
        metrics: metrics.clone(),
    });
    let task = tokio::spawn(accept_loop(listener, shared));
    Ok(Server {
        addr,
        metrics,
        task,
    })
}

/// Accepts connections until the listener fails, which ends the task ([`Server::stopped`]
/// resolves) rather than leaving a port that answers nothing; each connection is served
/// under the limits (`sszgate_serve::Limits::builder`: the header timeout, the head's cap).
async fn accept_loop<B: Answerer>(listener: TcpListener, shared: Arc<Shared<B>>) {
    let count = |listener, kind| tracing::debug!(listener, kind, "accept error counted");
    let mut acceptor = sszgate_serve::Acceptor::new(&listener, "rpc", &count);
    while let Ok((stream, _)) = acceptor.accept().await {
        let shared = shared.clone();
        let builder = shared.config.connection.builder();
        tokio::spawn(async move {
            let service = service_fn(move |req| admit(shared.clone(), req));
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn reply(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    response
}

fn error_reply(status: StatusCode, error: RpcError) -> Response<Full<Bytes>> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": error.to_json()});
    reply(status, "application/json", body.to_string())
}

/// A request admitted under the in-flight cap (503 at once beyond it), then handled.
async fn admit<B: Answerer>(
    shared: Arc<Shared<B>>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let Some(_permit) = shared.in_flight.try_enter() else {
        let busy = RpcError::InvalidRequest(shared.in_flight.busy_message());
        return Ok(error_reply(StatusCode::SERVICE_UNAVAILABLE, busy));
    };
    Ok(handle(shared, req).await)
}

/// A request: its head checked, its body read under the limits, then answered on the
/// blocking pool with a fresh upstream budget.
async fn handle<B: Answerer>(
    shared: Arc<Shared<B>>,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let limits = shared.config.connection;
    let head = sszgate_serve::head_bytes(&req);
    if head > limits.max_header_bytes {
        let why = format!(
            "request head of {head} bytes over the limit of {} bytes",
            limits.max_header_bytes
        );
        let status = StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
        return error_reply(status, RpcError::InvalidRequest(why));
    }
    let route = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => {
            let text = shared.metrics.render() + &shared.answerer.gauges();
            return reply(StatusCode::OK, "text/plain; version=0.0.4", text);
        }
        (&Method::GET, "/health") => return reply(StatusCode::OK, "text/plain", "ok\n".into()),
        (&Method::POST, path) => shared
            .routes
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, r)| r.clone()),
        _ => {
            return error_reply(
                StatusCode::METHOD_NOT_ALLOWED,
                RpcError::InvalidRequest("JSON-RPC is POSTed; GET /metrics, GET /health".into()),
            );
        }
    };
    let (parts, body) = req.into_parts();
    let limit = shared.config.max_request_body;
    let body =
        match sszgate_serve::read_body(&parts.headers, body, limit, limits.body_timeout).await {
            Ok(body) => body,
            Err(e) => return error_reply(e.status(), RpcError::InvalidRequest(e.to_string())),
        };
    let budget = Budget::new(shared.config.budget);
    let offload = shared.offload.clone();
    let answering = budget.scope(async move {
        match route {
            Some(route) => route_reply(route.answer(body).await),
            None => answer_body(&shared, &body).await,
        }
    });
    offload.run(answering).await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "answering a request failed");
        error_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            RpcError::InvalidRequest(e.to_string()),
        )
    })
}

fn route_reply(answer: RouteAnswer) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(answer.content_type),
    );
    response
}

/// The answer to a POSTed body: one request or a batch.
async fn answer_body<B: Answerer>(shared: &Shared<B>, body: &[u8]) -> Response<Full<Bytes>> {
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return error_reply(StatusCode::OK, RpcError::Parse(e.to_string())),
    };
    let answer = match request {
        Value::Array(batch) => {
            if batch.is_empty() || batch.len() > shared.config.max_batch {
                return error_reply(
                    StatusCode::OK,
                    RpcError::InvalidRequest(format!(
                        "a batch holds 1 to {} requests, this one {}",
                        shared.config.max_batch,
                        batch.len()
                    )),
                );
            }
            // Answered concurrently, up to the bound, in the batch's order.
            let answers: Vec<Option<Value>> = stream::iter(batch)
                .map(|one| answer_one(shared, one))
                .buffered(shared.config.batch_concurrency.max(1))
                .collect()
                .await;
            Value::Array(answers.into_iter().flatten().collect())
        }
        one => match answer_one(shared, one).await {
            Some(a) => a,
            None => return reply(StatusCode::NO_CONTENT, "application/json", String::new()),
        },
    };
    reply(StatusCode::OK, "application/json", answer.to_string())
}

/// One JSON-RPC request's answer; `None` for a notification (no `id`).
async fn answer_one<B: Answerer>(shared: &Shared<B>, request: Value) -> Option<Value> {
    let id = request.get("id").cloned();
    let result = match parse_call(&request) {
        Ok((method, params)) => answer_call(shared, method, params).await,
        Err(e) => Err(e),
    };
    // A valid request without an id is a notification: no answer. An invalid one is
    // answered with a null id.
    let id = match (id, &result) {
        (Some(id), _) => id,
        (None, Err(RpcError::InvalidRequest(_))) => Value::Null,
        (None, _) => return None,
    };
    Some(match result {
        Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()}),
    })
}

/// One call: verified, or passed through when allowed and not verifiable; counted.
async fn answer_call<B: Answerer>(
    shared: &Shared<B>,
    method: &str,
    params: Vec<Value>,
) -> Result<Value, RpcError> {
    let started = std::time::Instant::now();
    let mut result = shared.answerer.call(method, &params).await;
    let allowed = shared.config.allow_unverified.iter().any(|m| m == method);
    let passed =
        allowed && shared.passthrough.is_some() && matches!(result, Err(RpcError::Unverifiable(_)));
    if let (true, Some(upstream)) = (passed, &shared.passthrough) {
        tracing::warn!(method, "passed through unverified");
        result = upstream
            .call(method, Value::Array(params))
            .await
            .map_err(RpcError::from);
    }
    let label = if shared.answerer.methods().contains(&method) || allowed {
        method
    } else {
        "other"
    };
    shared
        .metrics
        .record(label, &result, passed, started.elapsed());
    result
}

fn parse_call(request: &Value) -> Result<(&str, Vec<Value>), RpcError> {
    if !request.is_object() {
        return Err(RpcError::InvalidRequest(
            "a request is a JSON object".into(),
        ));
    }
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::InvalidRequest("no method".into()))?;
    let params = match request.get("params") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(p)) => p.clone(),
        Some(_) => return Err(RpcError::InvalidParams("params must be a list".into())),
    };
    Ok((method, params))
}
