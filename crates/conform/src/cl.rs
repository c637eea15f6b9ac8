//! `sszgate conform cl`: a checking bridge between a consensus client and a working EL's
//! REST-SSZ server. Every request the CL sends is judged (route, JWT, fork header, media
//! types, the request container exactly, its identity, one forkchoice at a time), then sent
//! on to the EL with a token of our own and the EL's answer handed back, so the CL keeps
//! running. The run ends when the caller's stop signal fires, after `calls` requests, or
//! after `duration`; the report covers every request seen.
//!
//! Not here: the checks of an EL (`el`); recording the traffic (`sszgate proxy` does that).

use std::{
    future::Future,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use sszgate_client::{DEFAULT_MAX_ANSWER_BYTES, JwtSecret, answer};
use sszgate_engine::{
    Fork, Problem, Resource,
    method::{self, Route, Scope},
    ssz::MAX_REQUEST_BODY_SIZE,
    translate,
};
use tokio::{net::TcpListener, sync::Notify};

use crate::{
    catalogue::CL_CHECKS,
    exact,
    report::{Report, Sheet},
};

/// What `conform cl` stands in front of, and when it stops.
#[derive(Clone, Debug)]
pub struct ClConfig {
    /// The EL's REST-SSZ server (`http://127.0.0.1:8551`).
    pub upstream: String,
    /// The JWT secret the CL signs with, and we sign the EL's calls with.
    pub secret: JwtSecret,
    /// Stop after this many requests.
    pub calls: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
}

struct State {
    config: ClConfig,
    sheet: Mutex<Sheet>,
    seen: AtomicU64,
    forkchoice_in_flight: AtomicU64,
    enough: Notify,
    http: Client<HttpConnector, Full<Bytes>>,
}

/// Judges the CL's requests on `listener` until `stop` resolves (or the call count or the
/// duration of `config` is reached); the report.
pub async fn serve(
    listener: TcpListener,
    config: ClConfig,
    stop: impl Future<Output = ()>,
) -> Report {
    let started = Instant::now();
    let target = listener
        .local_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string());
    let state = Arc::new(State {
        config: config.clone(),
        sheet: Mutex::new(Sheet::new(&CL_CHECKS)),
        seen: AtomicU64::new(0),
        forkchoice_in_flight: AtomicU64::new(0),
        enough: Notify::new(),
        http: Client::builder(TokioExecutor::new()).build_http(),
    });
    let deadline = async {
        match config.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = accept(listener, state.clone()) => {}
        _ = stop => {}
        _ = deadline => {}
        _ = state.enough.notified() => {}
    }
    let sheet = std::mem::replace(&mut *lock(&state.sheet), Sheet::new(&CL_CHECKS));
    sheet.report(
        "cl",
        format!("{target} → {}", config.upstream),
        started.elapsed(),
    )
}

fn lock(sheet: &Mutex<Sheet>) -> std::sync::MutexGuard<'_, Sheet> {
    sheet
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn accept(listener: TcpListener, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(state.clone(), request));
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let (parts, body) = request.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let body = match Limited::new(body, MAX_REQUEST_BODY_SIZE).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return Ok(problem(
                Problem::RequestTooLarge,
                "the body is over 64 MiB or broke off",
            ));
        }
    };
    let is_forkchoice = judge(
        &state,
        parts.method.as_str(),
        &target,
        &parts.headers,
        &body,
    );
    let answer = forward(&state, &parts, &target, body).await;
    if is_forkchoice {
        state.forkchoice_in_flight.fetch_sub(1, Ordering::SeqCst);
    }
    let seen = state.seen.fetch_add(1, Ordering::SeqCst) + 1;
    if state.config.calls.is_some_and(|n| seen >= n) {
        state.enough.notify_one();
    }
    Ok(answer)
}

/// Header `name` as text, empty when absent or not visible ASCII.
fn header_text(headers: &HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// Notes every check on one request; true for a `POST /forkchoice` (counted in flight).
fn judge(state: &State, method: &str, target: &str, headers: &HeaderMap, body: &[u8]) -> bool {
    let line = format!("{method} {target}");
    let text = |name: &str| header_text(headers, name);
    let mut sheet = lock(&state.sheet);
    let token = text(header::AUTHORIZATION.as_str());
    let jwt = match token.strip_prefix("Bearer ") {
        Some(t) => state.config.secret.verify(t),
        None => Err("no Authorization: Bearer token".into()),
    };
    sheet.note(
        "cl.jwt",
        jwt.map(|_| format!("{line}: token verified"))
            .map_err(|e| format!("{line}: {e}")),
    );
    let version = text(method::CLIENT_VERSION_HEADER);
    sheet.note(
        "cl.client-version",
        crate::el::verdict(!version.is_empty(), || {
            format!("{line}: {} {version:?}", method::CLIENT_VERSION_HEADER)
        }),
    );
    let route = match Route::parse(method, target) {
        Ok(route) => route,
        Err(e) => {
            sheet.note("cl.route", Err(format!("{line}: {e}")));
            return false;
        }
    };
    sheet.note("cl.route", Ok(format!("{line}: {}", route.resource)));
    if route.resource.is_json() {
        return false;
    }
    judge_hot(state, &mut sheet, &route, (method, &line), headers, body)
}

/// The checks of a hot-path request: `Accept`, the fork header, `Content-Type`, the
/// container, one forkchoice at a time; true for a `POST /forkchoice`.
fn judge_hot(
    state: &State,
    sheet: &mut Sheet,
    route: &Route,
    (method, line): (&str, &str),
    headers: &HeaderMap,
    body: &[u8],
) -> bool {
    let text = |name: &str| header_text(headers, name);
    let accept = text(header::ACCEPT.as_str());
    sheet.note(
        "cl.accept",
        crate::el::verdict(accept.contains(method::SSZ_CONTENT_TYPE), || {
            format!("{line}: accept {accept:?}")
        }),
    );
    let fork = match route.resource.scope() {
        Scope::ForkScoped => {
            let value = text(method::FORK_HEADER);
            let fork = value.trim().parse::<Fork>();
            sheet.note(
                "cl.fork-header",
                fork.as_ref()
                    .map(|f| format!("{line}: {f}"))
                    .map_err(|_| format!("{line}: {} {value:?}", method::FORK_HEADER)),
            );
            fork.ok()
        }
        _ => Some(Fork::Amsterdam),
    };
    if method == "POST" {
        let content_type = text(header::CONTENT_TYPE.as_str());
        sheet.note(
            "cl.content-type",
            crate::el::verdict(content_type.starts_with(method::SSZ_CONTENT_TYPE), || {
                format!("{line}: content-type {content_type:?}")
            }),
        );
        if let Some(fork) = fork {
            sheet.note(
                "cl.container",
                container(route.resource, fork, body)
                    .map_err(|e| format!("{line}: {e}"))
                    .map(|k| format!("{line}: {k} under {fork}")),
            );
        }
    }
    let is_forkchoice = route.resource == Resource::Forkchoice;
    if is_forkchoice {
        let before = state.forkchoice_in_flight.fetch_add(1, Ordering::SeqCst);
        sheet.note(
            "cl.forkchoice-serial",
            crate::el::verdict(before == 0, || {
                format!("{line}: {before} other forkchoice call(s) in flight")
            }),
        );
    }
    is_forkchoice
}

/// Checks a request body is exactly the resource's container under `fork`.
fn container(resource: Resource, fork: Fork, body: &[u8]) -> Result<String, String> {
    let m = method::for_resource(resource, fork).map_err(|e| e.to_string())?;
    exact::exact(m, m.request, fork, body).map(|message| format!("{:?}", message.kind()))
}

/// Sends the request on to the EL with our own token, without asking for compression; the
/// EL's answer, or a `502` problem naming why there is none.
async fn forward(
    state: &State,
    parts: &http::request::Parts,
    target: &str,
    body: Bytes,
) -> Response<Full<Bytes>> {
    let url = format!("{}{target}", state.config.upstream.trim_end_matches('/'));
    let mut request = Request::builder().method(parts.method.clone()).uri(url);
    for (name, value) in &parts.headers {
        if ![
            header::AUTHORIZATION,
            header::HOST,
            header::ACCEPT_ENCODING,
            header::CONTENT_LENGTH,
        ]
        .contains(name)
        {
            request = request.header(name, value);
        }
    }
    let request = request.header(
        header::AUTHORIZATION,
        format!("Bearer {}", state.config.secret.token()),
    );
    let Ok(request) = request.body(Full::new(body)) else {
        return problem(Problem::InvalidRequest, "the request does not rebuild");
    };
    let response = match state.http.request(request).await {
        Ok(r) => r,
        Err(e) => return bad_gateway(&answer::error_chain(&e)),
    };
    let headers = response.headers().clone();
    let (status, body) = match answer::read(response, DEFAULT_MAX_ANSWER_BYTES).await {
        Ok(read) => read,
        Err(e) => return bad_gateway(&e.to_string()),
    };
    let mut answer = Response::new(Full::new(body));
    *answer.status_mut() = status;
    for (name, value) in &headers {
        if ![
            header::CONTENT_ENCODING,
            header::CONTENT_LENGTH,
            header::TRANSFER_ENCODING,
            header::CONNECTION,
        ]
        .contains(name)
        {
            answer.headers_mut().append(name, value.clone());
        }
    }
    answer
}

fn bad_gateway(why: &str) -> Response<Full<Bytes>> {
    let mut answer = problem(Problem::Internal, &format!("the EL did not answer: {why}"));
    *answer.status_mut() = StatusCode::BAD_GATEWAY;
    answer
}

fn problem(problem: Problem, detail: &str) -> Response<Full<Bytes>> {
    let rest = translate::problem_response(problem, Some(detail.to_string()));
    let mut answer = Response::new(Full::new(Bytes::from(rest.body)));
    *answer.status_mut() =
        StatusCode::from_u16(rest.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(content_type) = rest.content_type {
        answer.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(content_type),
        );
    }
    answer
}
