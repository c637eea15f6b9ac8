//! Where the light client's data comes from: the [`BeaconApi`] trait (GET a path as JSON, as
//! SSZ, or, for light-client objects, as whichever of the two the node answers; with a cap on
//! the answer's size), its HTTP implementation over the hyper-util client,
//! and [`RecordedBeaconApi`], which serves a recorded case directory (file names by the
//! recordings' rule) for tests and replays.
//!
//! What does not live here: what the answers mean (see `client`). Only `http://` is supported;
//! put TLS in front of a remote beacon node.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::Request;
use hyper::StatusCode;
use hyper::header::{ACCEPT, CONTENT_TYPE};
use hyper::http::uri::{Authority, PathAndQuery, Scheme, Uri};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::error::LightError;

/// A Beacon API the light client reads from (untrusted: everything it answers is checked).
pub trait BeaconApi: Send + Sync {
    /// `GET path` as JSON (`Accept: application/json`), at most `max_bytes` of answer.
    fn get_json(
        &self,
        path: &str,
        max_bytes: usize,
    ) -> impl Future<Output = Result<Value, LightError>> + Send;
    /// `GET path` as SSZ (`Accept: application/octet-stream`), at most `max_bytes` of answer.
    fn get_ssz(
        &self,
        path: &str,
        max_bytes: usize,
    ) -> impl Future<Output = Result<Vec<u8>, LightError>> + Send;
    /// `GET path` of a light-client object, as SSZ or as JSON, whichever the node answers
    /// (SSZ preferred), at most `max_bytes` of answer. By default: [`BeaconApi::get_ssz`].
    fn get_lc_object(
        &self,
        path: &str,
        max_bytes: usize,
    ) -> impl Future<Output = Result<LcAnswer, LightError>> + Send {
        async move { self.get_ssz(path, max_bytes).await.map(LcAnswer::Ssz) }
    }
}

/// A light-client object as the node sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum LcAnswer {
    /// SSZ bytes (`application/octet-stream`).
    Ssz(Vec<u8>),
    /// The Beacon API's JSON form (`application/json`), to be read by [`crate::json`].
    Json(Value),
}

/// `Accept` of a request for SSZ.
const ACCEPT_SSZ: &str = "application/octet-stream";
/// `Accept` of a request for a light-client object: SSZ preferred, JSON accepted.
const ACCEPT_SSZ_OR_JSON: &str = "application/octet-stream;q=1, application/json;q=0.9";

fn api_error(path: &str, detail: impl std::fmt::Display) -> LightError {
    LightError::Api {
        path: path.to_string(),
        detail: detail.to_string(),
    }
}

/// A beacon node over HTTP/1.1 (`http://host:port[/base]`), each request bounded in time.
#[derive(Debug, Clone)]
pub struct HttpBeaconApi {
    scheme: Scheme,
    authority: Authority,
    base_path: String,
    client: Client<HttpConnector, Empty<Bytes>>,
    timeout: Duration,
}

impl HttpBeaconApi {
    /// A client of the beacon node at `url`; `timeout` bounds each request, body included.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, LightError> {
        let uri: Uri = url.parse().map_err(|e| api_error(url, e))?;
        if uri.scheme() != Some(&Scheme::HTTP) {
            return Err(api_error(url, "only http:// is supported"));
        }
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| api_error(url, "needs a host"))?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Ok(HttpBeaconApi {
            scheme: Scheme::HTTP,
            authority,
            base_path: uri.path().trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
        })
    }

    fn uri(&self, path: &str) -> Result<Uri, LightError> {
        let pq: PathAndQuery = format!("{}{path}", self.base_path)
            .parse()
            .map_err(|e| api_error(path, e))?;
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(pq)
            .build()
            .map_err(|e| api_error(path, e))
    }

    /// One GET, its whole answer (and its media type, when named) read within the timeout
    /// and the size cap.
    async fn get(
        &self,
        path: &str,
        accept: &'static str,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Option<String>), LightError> {
        // The request being answered pays for this fetch, before it is made.
        let budget = sszgate_serve::Budget::current();
        let over = |spent| LightError::Budget {
            path: path.to_string(),
            spent,
        };
        let limit = match &budget {
            Some(budget) => {
                budget.spend_fetch().map_err(over)?;
                max_bytes.min(usize::try_from(budget.bytes_left()).unwrap_or(usize::MAX))
            }
            None => max_bytes,
        };
        let request = Request::get(self.uri(path)?)
            .header(ACCEPT, accept)
            .body(Empty::new())
            .map_err(|e| api_error(path, e))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| api_error(path, error_chain(&e)))?;
            let status = response.status();
            let media_type = response
                .headers()
                .get(CONTENT_TYPE)
                .map(|v| media_type(&String::from_utf8_lossy(v.as_bytes())));
            let body = Limited::new(response.into_body(), limit)
                .collect()
                .await
                .map_err(|e| match &budget {
                    // Over what was left of the budget: it is spent.
                    Some(budget) if limit < max_bytes => budget
                        .spend_bytes(limit as u64 + 1)
                        .map_or_else(over, |()| api_error(path, e)),
                    _ => api_error(path, format!("answer over {limit} bytes or broken: {e}")),
                })?
                .to_bytes();
            if let Some(budget) = &budget {
                budget.spend_bytes(body.len() as u64).map_err(over)?;
            }
            match status {
                StatusCode::OK => Ok((body.to_vec(), media_type)),
                StatusCode::NOT_FOUND => Err(LightError::NotFound {
                    path: path.to_string(),
                }),
                status => Err(api_error(
                    path,
                    format!(
                        "status {status}: {}",
                        String::from_utf8_lossy(&body[..body.len().min(200)])
                    ),
                )),
            }
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| {
                api_error(
                    path,
                    format!("no complete answer within {:?}", self.timeout),
                )
            })?
    }
}

/// The media type of a `Content-Type` value: before any parameter, trimmed, lower case.
fn media_type(content_type: &str) -> String {
    let essence = content_type.split(';').next().unwrap_or_default();
    essence.trim().to_ascii_lowercase()
}

/// An error and its sources, for a readable message.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut detail = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        source = cause.source();
    }
    detail
}

/// Parses a JSON answer.
fn parse_json(path: &str, body: &[u8]) -> Result<Value, LightError> {
    serde_json::from_slice(body).map_err(|e| api_error(path, format!("not JSON: {e}")))
}

/// The error for an answer of media type `media` where `asked` was asked.
fn wrong_media_type(path: &str, media: &str, asked: &str) -> LightError {
    api_error(
        path,
        format!(
            "answered {media} where {asked} was asked: this beacon node does not serve it here"
        ),
    )
}

impl BeaconApi for HttpBeaconApi {
    async fn get_json(&self, path: &str, max_bytes: usize) -> Result<Value, LightError> {
        let (body, _) = self.get(path, "application/json", max_bytes).await?;
        parse_json(path, &body)
    }

    /// SSZ only when the node says `application/octet-stream` (or names no media type):
    /// any other answer (JSON from a node that ignores `Accept`) is an error naming the
    /// endpoint and the media type, never bytes decoded as SSZ.
    async fn get_ssz(&self, path: &str, max_bytes: usize) -> Result<Vec<u8>, LightError> {
        match self.get(path, ACCEPT_SSZ, max_bytes).await? {
            (body, None) => Ok(body),
            (body, Some(media)) if media == ACCEPT_SSZ => Ok(body),
            (_, Some(media)) => Err(wrong_media_type(
                path,
                &media,
                "SSZ (application/octet-stream)",
            )),
        }
    }

    /// SSZ when the node says `application/octet-stream` (or names no media type), JSON when
    /// it says `application/json`; anything else is an error naming the media type.
    async fn get_lc_object(&self, path: &str, max_bytes: usize) -> Result<LcAnswer, LightError> {
        match self.get(path, ACCEPT_SSZ_OR_JSON, max_bytes).await? {
            (body, None) => Ok(LcAnswer::Ssz(body)),
            (body, Some(media)) if media == ACCEPT_SSZ => Ok(LcAnswer::Ssz(body)),
            (body, Some(media)) if media == "application/json" => {
                parse_json(path, &body).map(LcAnswer::Json)
            }
            (_, Some(media)) => Err(wrong_media_type(path, &media, ACCEPT_SSZ_OR_JSON)),
        }
    }
}

/// A recorded case directory: `GET path` reads the file named by the recordings' rule (the
/// path without its leading `/`, each of ``/ . , space : = ? " & [ ] { }`` replaced by `_`,
/// cut to 100 characters, plus `.json` or `.ssz`). A missing file is [`LightError::NotFound`].
#[derive(Debug, Clone)]
pub struct RecordedBeaconApi {
    dir: PathBuf,
}

impl RecordedBeaconApi {
    /// Serves the files of `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RecordedBeaconApi { dir: dir.into() }
    }

    /// The file name a request path is recorded under, without its extension.
    pub fn file_stem(path: &str) -> String {
        let replaced: String = path
            .trim_start_matches('/')
            .chars()
            .map(|c| if "/., :=?\"&[]{}".contains(c) { '_' } else { c })
            .collect();
        replaced.chars().take(100).collect()
    }

    /// The file `path` is recorded in as `extension`.
    fn file(&self, path: &str, extension: &str) -> PathBuf {
        self.dir
            .join(format!("{}.{extension}", Self::file_stem(path)))
    }

    fn read(&self, path: &str, extension: &str, max_bytes: usize) -> Result<Vec<u8>, LightError> {
        let file = self.file(path, extension);
        let size = match std::fs::metadata(&file) {
            Ok(meta) => meta.len(),
            Err(_) => {
                return Err(LightError::NotFound {
                    path: path.to_string(),
                });
            }
        };
        if size > max_bytes as u64 {
            return Err(api_error(
                path,
                format!("recorded answer of {size} bytes over {max_bytes}"),
            ));
        }
        std::fs::read(&file).map_err(|e| api_error(path, e))
    }
}

impl BeaconApi for RecordedBeaconApi {
    async fn get_json(&self, path: &str, max_bytes: usize) -> Result<Value, LightError> {
        parse_json(path, &self.read(path, "json", max_bytes)?)
    }

    /// The recorded SSZ answer, or the recorded JSON one when there is no SSZ file.
    async fn get_lc_object(&self, path: &str, max_bytes: usize) -> Result<LcAnswer, LightError> {
        if self.file(path, "ssz").exists() || !self.file(path, "json").exists() {
            self.get_ssz(path, max_bytes).await.map(LcAnswer::Ssz)
        } else {
            self.get_json(path, max_bytes).await.map(LcAnswer::Json)
        }
    }

    async fn get_ssz(&self, path: &str, max_bytes: usize) -> Result<Vec<u8>, LightError> {
        let body = self.read(path, "ssz", max_bytes)?;
        // A recorded error answer (e.g. `{"code":404,…}`) in place of SSZ.
        if body.first() == Some(&b'{')
            && let Ok(error) = serde_json::from_slice::<Value>(&body)
        {
            return match error.get("code").and_then(Value::as_u64) {
                Some(404) => Err(LightError::NotFound {
                    path: path.to_string(),
                }),
                _ => Err(api_error(path, format!("recorded error answer {error}"))),
            };
        }
        Ok(body)
    }
}
