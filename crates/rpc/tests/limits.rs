//! The JSON-RPC server's limits over real sockets (the gateway's, through `sszgate-serve`):
//! a head trickled is disconnected, a body trickled gets 408, a request beyond the in-flight
//! cap 503 at once, an oversized Content-Length 413 before its body is sent, an oversized
//! head 431, an oversized batch refused, a batch's calls answered concurrently, expensive
//! calls kept off the async workers, and the upstream budget — each followed by a normal
//! request answered. Waits are bounded only so that a hang fails instead of stalling.

mod common;

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use sszgate_rpc::{Answerer, Config, RpcError, Server, serve_with};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// Long enough for any answer on a loaded machine; a hang past it fails the test.
const HANG: Duration = Duration::from_secs(30);

/// An answerer for the limits: `cheap` answers at once, `meet` waits until two calls met
/// (a batch answered one call after another never gets there), `block` holds its thread
/// until the gate opens (CPU-bound work, as revm's).
struct Gated {
    met: tokio::sync::Barrier,
    blocked: AtomicUsize,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl Default for Gated {
    fn default() -> Gated {
        Gated {
            met: tokio::sync::Barrier::new(2),
            blocked: AtomicUsize::new(0),
            gate: Arc::default(),
        }
    }
}

impl Gated {
    fn open(&self) {
        let (open, wake) = &*self.gate;
        *open.lock().unwrap() = true;
        wake.notify_all();
    }
}

impl Answerer for Gated {
    async fn call(&self, method: &str, _params: &[Value]) -> Result<Value, RpcError> {
        match method {
            "meet" => {
                self.met.wait().await;
                Ok(json!("met"))
            }
            "block" => {
                self.blocked.fetch_add(1, Ordering::SeqCst);
                let (open, wake) = &*self.gate;
                let _open = wake.wait_while(open.lock().unwrap(), |o| !*o).unwrap();
                Ok(json!("unblocked"))
            }
            _ => Ok(json!("0x1")),
        }
    }

    fn methods(&self) -> &[&'static str] {
        &["cheap", "meet", "block"]
    }
}

async fn start(tweak: impl FnOnce(&mut Config)) -> (Server, Arc<Gated>) {
    let mut config = Config::new("", 1);
    tweak(&mut config);
    let gated = Arc::new(Gated::default());
    let server = serve_with(config, Shared(gated.clone()), Vec::new())
        .await
        .unwrap();
    (server, gated)
}

struct Shared(Arc<Gated>);

impl Answerer for Shared {
    fn call<'a>(
        &'a self,
        method: &'a str,
        params: &'a [Value],
    ) -> impl std::future::Future<Output = Result<Value, RpcError>> + Send + 'a {
        self.0.call(method, params)
    }
    fn methods(&self) -> &[&'static str] {
        self.0.methods()
    }
}

fn rpc(method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": []}).to_string()
}

fn post_text(body: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Sends `bytes` on a new connection and reads until the server closes it.
async fn exchange(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    read_all(&mut stream).await
}

/// The most of an answer read (the server's answers here are a few hundred bytes).
const MAX_ANSWER: u64 = 1 << 20;

async fn read_all(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(HANG, stream.take(MAX_ANSWER).read_to_end(&mut out))
        .await
        .expect("the server closed the connection")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

/// The status line's code of the first answer in `text`.
fn status(text: &str) -> u16 {
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A normal request, answered.
async fn still_answers(addr: SocketAddr) {
    let request = post_text(&rpc("cheap")).replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n");
    let answer = exchange(addr, request.as_bytes()).await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert!(
        answer.ends_with(r#"{"id":1,"jsonrpc":"2.0","result":"0x1"}"#),
        "{answer}"
    );
}

#[tokio::test]
async fn a_head_trickled_past_the_header_timeout_is_disconnected() {
    let (server, _) = start(|c| c.connection.header_timeout = Duration::from_millis(200)).await;
    // Half a head, then silence: the server closes the connection (today's kept it forever).
    let answer = exchange(server.local_addr(), b"POST / HTTP/1.1\r\nhost: x\r\n").await;
    assert!(!answer.contains("200 OK"), "{answer}");
    still_answers(server.local_addr()).await;
}

#[tokio::test]
async fn a_body_trickled_past_the_body_timeout_gets_408() {
    let (server, _) = start(|c| c.connection.body_timeout = Duration::from_millis(200)).await;
    let head = "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{\"jsonrpc\"";
    let answer = exchange(server.local_addr(), head.as_bytes()).await;
    assert_eq!(status(&answer), 408, "{answer}");
    assert!(answer.contains("did not arrive within 200ms"), "{answer}");
    still_answers(server.local_addr()).await;
}

#[tokio::test]
async fn an_oversized_content_length_gets_413_before_its_body_is_sent() {
    let (server, _) = start(|c| c.max_request_body = 1000).await;
    // The body is never sent: the answer comes from the Content-Length alone.
    let head = "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5000000\r\n\r\n";
    let answer = exchange(server.local_addr(), head.as_bytes()).await;
    assert_eq!(status(&answer), 413, "{answer}");
    assert!(
        answer.contains("request body of 5000000 bytes over the limit of 1000 bytes"),
        "{answer}"
    );
    still_answers(server.local_addr()).await;
}

#[tokio::test]
async fn an_oversized_head_gets_431() {
    let (server, _) = start(|c| c.connection.max_header_bytes = 1024).await;
    let request = post_text(&rpc("cheap")).replace(
        "host: x\r\n",
        &format!(
            "host: x\r\nx-pad: {}\r\nconnection: close\r\n",
            "a".repeat(2000)
        ),
    );
    let answer = exchange(server.local_addr(), request.as_bytes()).await;
    assert_eq!(status(&answer), 431, "{answer}");
    still_answers(server.local_addr()).await;
}

#[tokio::test]
async fn a_request_beyond_the_in_flight_cap_gets_503_at_once() {
    let (server, _) = start(|c| {
        c.connection.max_in_flight = 1;
        c.connection.body_timeout = HANG;
    })
    .await;
    let addr = server.local_addr();
    // One request holds the only permit while its body is awaited.
    let body = rpc("cheap");
    let mut holder = TcpStream::connect(addr).await.unwrap();
    let head = post_text(&body).replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n");
    let (head, rest) = head.split_at(head.len() - body.len());
    holder.write_all(head.as_bytes()).await.unwrap();
    // Until the server has read that head, another request may still get the permit.
    let mut refused = None;
    for _ in 0..200 {
        let request = post_text(&rpc("cheap")).replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n");
        let answer = exchange(addr, request.as_bytes()).await;
        if status(&answer) == 503 {
            refused = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = refused.expect("a request beyond the cap of 1 was refused");
    assert!(refused.contains("1 calls in flight already"), "{refused}");
    holder.write_all(rest.as_bytes()).await.unwrap();
    assert_eq!(status(&read_all(&mut holder).await), 200);
    still_answers(addr).await;
}

#[tokio::test]
async fn a_batch_over_the_cap_is_refused_and_its_calls_run_concurrently() {
    let (server, _) = start(|_| {}).await;
    let one = json!({"jsonrpc": "2.0", "id": 1, "method": "cheap"});
    let batch = Value::Array(vec![one; 101]);
    let answer = common::post(&server.url(), &batch).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 to 100 requests, this one 101")
    );
    // Two calls that wait for each other: answered only when they run at once.
    let meet = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "meet"},
        {"jsonrpc": "2.0", "id": 2, "method": "meet"},
    ]);
    let answer = tokio::time::timeout(HANG, common::post(&server.url(), &meet))
        .await
        .expect("the batch's calls ran one after another");
    assert_eq!(answer[0]["result"], "met");
    assert_eq!(answer[1]["id"], 2);
    still_answers(server.local_addr()).await;
}

/// Expensive calls that hold their threads (as revm does) run off the server's two async
/// workers: while four of them are provably still running, a cheap call and `/metrics`
/// are answered.
#[test]
fn expensive_calls_leave_the_async_workers_to_cheap_requests_and_metrics() {
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = tokio::runtime::Runtime::new().unwrap();
    let (server, gated) = server_runtime.block_on(start(|_| {}));
    let addr = server.local_addr();
    let expensive: Vec<_> = (0..4)
        .map(|_| {
            let request =
                post_text(&rpc("block")).replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n");
            client.spawn(async move { exchange(addr, request.as_bytes()).await })
        })
        .collect();
    client.block_on(async {
        let all_in = async {
            while gated.blocked.load(Ordering::SeqCst) < 4 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(HANG, all_in)
            .await
            .expect("four expensive calls running at once");
        tokio::time::timeout(HANG, still_answers(addr))
            .await
            .expect("a cheap call answered while the expensive ones run");
        let metrics = exchange(
            addr,
            b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        );
        let metrics = tokio::time::timeout(HANG, metrics)
            .await
            .expect("/metrics answered");
        assert!(
            metrics.contains("sszgate_rpc_requests_total{method=\"cheap\""),
            "{metrics}"
        );
        assert_eq!(
            gated.blocked.load(Ordering::SeqCst),
            4,
            "the expensive calls still run"
        );
        gated.open();
        for e in expensive {
            assert!(e.await.unwrap().contains("unblocked"));
        }
    });
    drop(server);
}

#[tokio::test]
async fn a_request_needing_more_fetches_than_its_budget_is_refused_naming_it() {
    use common::{anchors_of, call, start_with, test_json};
    const CASE: &str = "eth_getBalance1";
    let params = test_json(CASE)["params"].clone();
    let (_replay, server) = start_with(CASE, HashMap::new(), anchors_of(CASE).0, |c| {
        c.budget.fetches = 1;
    })
    .await;
    let answer = call(&server, "eth_getBalance", &params).await;
    assert_eq!(answer["error"]["code"], -32097, "{answer}");
    assert_eq!(
        answer["error"]["data"],
        json!({"budget": "fetches", "limit": 1, "used": 2})
    );
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("upstream budget of 1 fetches is spent"),
        "{message}"
    );
    let (_replay, server) = start_with(CASE, HashMap::new(), anchors_of(CASE).0, |c| {
        c.budget.fetches = 8;
    })
    .await;
    let answer = call(&server, "eth_getBalance", &params).await;
    assert_eq!(
        answer["result"],
        test_json(CASE)["expected_result"],
        "{answer}"
    );
    // A byte budget smaller than the answers: refused naming the bytes.
    let (_replay, server) = start_with(CASE, HashMap::new(), anchors_of(CASE).0, |c| {
        c.budget.bytes = 100;
    })
    .await;
    let answer = call(&server, "eth_getBalance", &params).await;
    assert_eq!(answer["error"]["data"]["budget"], "bytes", "{answer}");
}
