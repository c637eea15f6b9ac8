//! The upstream EL: one pooled HTTP client for every call (HTTP/1.1 keep-alive, or h2c with
//! prior knowledge when asked), a per-call timeout for the response head, and a health record
//! for the status endpoint.

use std::{
    sync::Mutex,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use http::{Request, Response, Uri, uri::PathAndQuery};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde::Serialize;

use sszgate_client::{identity, request::CallHeaders};

use crate::{
    Error, JwtSecret,
    el_name::{ElName, NoName},
};

/// What the status endpoint says about the upstream.
#[derive(Clone, Debug, Default, Serialize)]
pub struct UpstreamHealth {
    /// Last successful answer, ms since the Unix epoch.
    pub last_ok_unix_ms: Option<u64>,
    /// The last failure, if the last call failed.
    pub last_error: Option<String>,
    /// Failures in a row.
    pub consecutive_errors: u64,
    /// The EL's client version, once asked; forgotten while the EL is unreachable.
    pub el_client: Option<String>,
}

/// Why a call to the upstream failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// Connection refused, reset, or closed before an answer.
    #[error("upstream {0}: {1}")]
    Failed(String, String),
    /// No response head within the timeout.
    #[error("upstream {0} did not answer within {1:?}")]
    Timeout(String, Duration),
}

/// The upstream execution client.
pub struct Upstream {
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    base_path: String,
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
    http2: bool,
    health: Mutex<UpstreamHealth>,
    el_name: ElName,
    display: String,
}

impl Upstream {
    /// An upstream at `url` (`http://host:port[/base]`). `http2` selects h2c with prior
    /// knowledge instead of HTTP/1.1.
    pub fn new(url: &str, timeout: Duration, http2: bool) -> Result<Upstream, Error> {
        let bad = |detail: &str| Error::Upstream {
            url: url.to_string(),
            detail: detail.to_string(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let scheme = uri
            .scheme()
            .cloned()
            .ok_or_else(|| bad("needs a scheme (http://)"))?;
        if scheme != http::uri::Scheme::HTTP {
            return Err(bad(
                "only http:// is supported (the Engine API is cleartext; put TLS in front)",
            ));
        }
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| bad("needs a host and port"))?;
        let base_path = uri.path().trim_end_matches('/').to_string();
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(32);
        if http2 {
            builder
                .http2_only(true)
                .http2_initial_stream_window_size(1 << 20)
                .http2_initial_connection_window_size(4 << 20);
        }
        Ok(Upstream {
            display: format!("{scheme}://{authority}{base_path}"),
            scheme,
            authority,
            base_path,
            client: builder.build(connector),
            timeout,
            http2,
            health: Mutex::new(UpstreamHealth::default()),
            el_name: ElName::default(),
        })
    }

    /// The upstream URL, for logs.
    pub fn url(&self) -> &str {
        &self.display
    }

    /// What is known of the EL's name.
    pub(crate) fn el_name(&self) -> &ElName {
        &self.el_name
    }

    /// Time the EL has to start answering a call (its head, then its first body frame).
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The URI of `path_and_query` at the upstream.
    pub(crate) fn uri(&self, path_and_query: &str) -> Uri {
        let pq: PathAndQuery = format!("{}{}", self.base_path, path_and_query)
            .parse()
            .unwrap_or_else(|_| PathAndQuery::from_static("/"));
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(pq)
            .build()
            .expect("valid parts")
    }

    /// Sends a request and waits for the response head, within the timeout.
    pub(crate) async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let result = match tokio::time::timeout(self.timeout, self.client.request(request)).await {
            Err(_) => Err(UpstreamError::Timeout(self.display.clone(), self.timeout)),
            Ok(Err(e)) => {
                let mut detail = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    detail.push_str(": ");
                    detail.push_str(&cause.to_string());
                    source = cause.source();
                }
                Err(UpstreamError::Failed(self.display.clone(), detail))
            }
            Ok(Ok(response)) => Ok(response),
        };
        self.note(result.as_ref().map(|_| ()));
        result
    }

    /// Notes a call's outcome in the health record and the EL's name: the one place either
    /// is kept, for the pooled client's calls and the spliced relay's alike.
    pub(crate) fn note(&self, outcome: Result<(), &UpstreamError>) {
        match outcome {
            Ok(()) => self.el_name.answered(),
            Err(_) => self.el_name.unreachable(),
        }
        let mut health = self.health.lock().expect("health lock");
        match outcome {
            Ok(()) => {
                health.last_ok_unix_ms = Some(
                    SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_millis() as u64),
                );
                health.last_error = None;
                health.consecutive_errors = 0;
            }
            Err(e) => {
                health.last_error = Some(e.to_string());
                health.consecutive_errors += 1;
                // Whoever answers next may be another EL: named again once asked.
                health.el_client = None;
            }
        }
    }

    /// `host:port` of the EL, as its URL names it.
    pub(crate) fn authority(&self) -> &str {
        self.authority.as_str()
    }

    /// The path the EL's URL has before every call's target (empty for none).
    pub(crate) fn base_path(&self) -> &str {
        &self.base_path
    }

    /// True when calls go to the EL over HTTP/1.1 (not h2c).
    pub(crate) fn is_http1(&self) -> bool {
        !self.http2
    }

    /// The health record.
    pub fn health(&self) -> UpstreamHealth {
        self.health.lock().expect("health lock").clone()
    }

    /// Asks `GET /engine/v1/capabilities` (with the gateway's JWT when it has one): `200` means
    /// the EL speaks REST-SSZ besides JSON-RPC, so both are relayed as they come; anything
    /// else (a 404 from a JSON-RPC-only EL) means JSON-RPC only, and REST-SSZ calls are bridged.
    pub async fn probe_transport(&self, jwt: Option<&JwtSecret>) -> crate::UpstreamTransport {
        let mut request = Request::get(self.uri("/engine/v1/capabilities"))
            .header(http::header::ACCEPT, "application/json");
        if let Some(jwt) = jwt {
            request = request.header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", jwt.token()),
            );
        }
        let Ok(request) = request.body(Full::new(Bytes::new())) else {
            return crate::UpstreamTransport::Json;
        };
        match self.send(request).await {
            Ok(response) if response.status() == http::StatusCode::OK => {
                crate::UpstreamTransport::Relay
            }
            _ => crate::UpstreamTransport::Json,
        }
    }

    /// Asks the EL's client version (`engine_getClientVersionV1`) with the gateway's own JWT:
    /// `code/name/version/commit` of the first entry, or why there is none.
    pub(crate) async fn client_version(&self, jwt: &JwtSecret) -> Result<String, NoName> {
        let request = sszgate_client::request::json_rpc(
            self.uri("/"),
            Bytes::from(identity::client_version_request()),
            &CallHeaders {
                token: jwt.token(),
                ..CallHeaders::default()
            },
        );
        let response = self.send(request).await.map_err(|_| NoName::Unreachable)?;
        // A client version is a few hundred bytes; a larger answer is not read past 64 KiB.
        let (_, answer) = sszgate_client::answer::read(response, 64 << 10)
            .await
            .map_err(|_| NoName::NoVersion)?;
        identity::read_client_version(&answer).ok_or(NoName::NoVersion)
    }

    /// Says on the status endpoint which EL answers (once the records say so too).
    pub(crate) fn named(&self, version: &str) {
        self.health.lock().expect("health lock").el_client = Some(version.to_string());
    }
}
