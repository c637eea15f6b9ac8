//! Reading a request body under the limits: refused from its `Content-Length` alone when that
//! is over the limit (not a byte read), else read bounded in size and in time, so that
//! nothing over the limit is buffered and a client that trickles its body is cut off.
//!
//! Not here: what the body means, or how a refusal is shaped for the caller (the servers').

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};
use http_body_util::{BodyExt, Limited};

/// Why a body was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Over the limit: from its `Content-Length` (`declared`), or while reading.
    #[error("request body {}over the limit of {limit} bytes", declared.map_or(String::new(), |d| format!("of {d} bytes ")))]
    TooLarge {
        /// The limit.
        limit: usize,
        /// The `Content-Length`, when the body was refused from it alone.
        declared: Option<u64>,
    },
    /// The body did not arrive in time.
    #[error("the request body did not arrive within {0:?}")]
    TimedOut(Duration),
    /// Broken HTTP framing (a bad chunk size, a body cut short).
    #[error("reading the request body failed: {0}")]
    Broken(String),
}

impl BodyError {
    /// The HTTP status it is answered with: 413, 408 or 400.
    pub fn status(&self) -> StatusCode {
        match self {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
            BodyError::Broken(_) => StatusCode::BAD_REQUEST,
        }
    }
}

/// The request's `Content-Length`, when it names one.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Refuses a body from its `Content-Length` alone when that is over `limit`.
pub fn check_declared(headers: &HeaderMap, limit: usize) -> Result<(), BodyError> {
    match declared_length(headers) {
        Some(declared) if declared > limit as u64 => Err(BodyError::TooLarge {
            limit,
            declared: Some(declared),
        }),
        _ => Ok(()),
    }
}

/// Reads `body`, at most `limit` bytes and within `timeout`.
pub async fn read_bounded<B>(body: B, limit: usize, timeout: Duration) -> Result<Bytes, BodyError>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Ok(read) = tokio::time::timeout(timeout, Limited::new(body, limit).collect()).await else {
        return Err(BodyError::TimedOut(timeout));
    };
    match read {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(BodyError::TooLarge {
                limit,
                declared: None,
            })
        }
        Err(e) => Err(BodyError::Broken(e.to_string())),
    }
}

/// [`check_declared`], then [`read_bounded`]: the one way a server reads a request body.
pub async fn read_body<B>(
    headers: &HeaderMap,
    body: B,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, BodyError>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    check_declared(headers, limit)?;
    read_bounded(body, limit, timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    #[tokio::test]
    async fn a_body_is_refused_by_its_length_or_read_within_its_limit() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_LENGTH, "100".parse().unwrap());
        let e = read_body(
            &headers,
            Full::new(Bytes::from_static(b"x")),
            10,
            Duration::from_secs(1),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e,
            BodyError::TooLarge {
                limit: 10,
                declared: Some(100)
            }
        );
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            e.to_string(),
            "request body of 100 bytes over the limit of 10 bytes"
        );
        let headers = HeaderMap::new();
        let big = Full::new(Bytes::from(vec![0u8; 11]));
        let e = read_body(&headers, big, 10, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert_eq!(
            e,
            BodyError::TooLarge {
                limit: 10,
                declared: None
            }
        );
        let ok = Full::new(Bytes::from_static(b"0123456789"));
        let read = read_body(&headers, ok, 10, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(&read[..], b"0123456789");
    }
}
