//! A fake execution client for relay tests: it keeps every request it sees and answers with
//! whatever the test's handler returns. Real ELs are used by the end-to-end tests; this one
//! exists to check bytes and faults exactly.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use tokio::net::TcpListener;

/// One request as the EL saw it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) method: http::Method,
    pub(crate) target: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// The answer to give: status, extra headers, body, and a delay before the head.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Bytes,
    pub(crate) delay: Duration,
}

impl Answer {
    pub(crate) fn ok(content_type: &str, body: impl Into<Bytes>) -> Answer {
        Answer {
            status: StatusCode::OK,
            headers: vec![("content-type", content_type.to_string())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }
}

type Handler = dyn Fn(&Seen) -> Answer + Send + Sync;

/// A running fake EL.
pub(crate) struct FakeEl {
    pub(crate) addr: SocketAddr,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeEl {
    pub(crate) async fn start(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> FakeEl {
        Self::start_on("127.0.0.1:0".parse().unwrap(), handler).await
    }

    /// Stops it: the listener and every open connection.
    pub(crate) fn stop(self) {
        self.task.abort();
    }

    /// A fake EL on a given address (to stand in for another EL behind the same port).
    pub(crate) async fn start_on(
        addr: SocketAddr,
        handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static,
    ) -> FakeEl {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let seen_in = seen.clone();
        let task = tokio::spawn(async move {
            // Connections live in this set: aborting the accept task drops them all.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (seen, handler) = (seen_in.clone(), handler.clone());
                connections.spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (seen, handler) = (seen.clone(), handler.clone());
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = body.collect().await.unwrap().to_bytes();
                            let entry = Seen {
                                method: parts.method,
                                target: parts
                                    .uri
                                    .path_and_query()
                                    .map_or("/".into(), |p| p.to_string()),
                                headers: parts.headers,
                                body,
                            };
                            let answer = handler(&entry);
                            seen.lock().unwrap().push(entry);
                            tokio::time::sleep(answer.delay).await;
                            let mut response = Response::builder().status(answer.status);
                            for (k, v) in answer.headers {
                                response = response.header(k, v);
                            }
                            Ok::<_, Infallible>(response.body(Full::new(answer.body)).unwrap())
                        }
                    });
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        FakeEl { addr, seen, task }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until the EL has seen `count` requests (10 s at most): a test that needs a call
    /// to be in flight waits for it to arrive rather than for a guessed time.
    pub(crate) async fn wait_seen(&self, count: usize) {
        let arrived = crate::eventually(10, || self.seen.lock().unwrap().len() >= count).await;
        assert!(
            arrived,
            "the EL saw {} requests in 10 s, {count} expected",
            self.seen().len()
        );
    }
}
