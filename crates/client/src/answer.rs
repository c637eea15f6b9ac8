//! An EL's answer read whole, never past a bound, and without its content coding (decoded to
//! at most the same bound): the one reader of answers for every caller of an EL.
//!
//! Not here: what the answer says (the engine crate's codecs).

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use sszgate_engine::coding;

/// The default bound on an EL's answer: four times the spec's request cap, past the largest
/// legal answer (a getBlobsV2 answer for 128 blobs is about 35 MB of JSON).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 256 << 20;

/// Why an answer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// More bytes on the wire than the bound.
    #[error("the EL's answer is over the {limit} bytes read (--max-answer)")]
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// The body failed while it was read (connection reset, bad framing).
    #[error("upstream body failed: {0}")]
    Body(String),
    /// The content coding does not decode, or decodes past the bound.
    #[error("the EL's answer does not decode: {0}")]
    Coding(String),
}

/// Reads `response` whole, at most `limit` bytes on the wire and `limit` decoded.
pub async fn read<B>(
    response: Response<B>,
    limit: usize,
) -> Result<(StatusCode, Bytes), AnswerError>
where
    B: hyper::body::Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let status = response.status();
    let encoding = response
        .headers()
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = Limited::new(response.into_body(), limit)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<LengthLimitError>() {
                AnswerError::TooLarge { limit }
            } else {
                AnswerError::Body(error_chain(e.as_ref()))
            }
        })?
        .to_bytes();
    let decoded = coding::decode(&body, encoding.as_deref(), limit)
        .map_err(|e| AnswerError::Coding(e.to_string()))?;
    Ok(match decoded {
        std::borrow::Cow::Borrowed(_) => (status, body),
        std::borrow::Cow::Owned(decoded) => (status, Bytes::from(decoded)),
    })
}

/// An error and its causes, `: `-separated.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use http_body_util::Full;

    use super::*;

    fn response(body: Vec<u8>, encoding: Option<&str>) -> Response<Full<Bytes>> {
        let mut r = Response::builder().status(200);
        if let Some(e) = encoding {
            r = r.header(header::CONTENT_ENCODING, e);
        }
        r.body(Full::new(Bytes::from(body))).unwrap()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[tokio::test]
    async fn plain_and_coded_answers_are_read_whole() {
        let (status, body) = read(response(b"{\"a\":1}".to_vec(), None), 100)
            .await
            .unwrap();
        assert_eq!((status.as_u16(), &body[..]), (200, &b"{\"a\":1}"[..]));
        let text = b"x".repeat(5000);
        let (_, body) = read(response(gzip(&text), Some("gzip")), 10_000)
            .await
            .unwrap();
        assert_eq!(&body[..], &text[..]);
    }

    #[tokio::test]
    async fn answers_past_the_bound_are_refused_on_the_wire_and_decoded() {
        let err = read(response(vec![b'x'; 101], None), 100)
            .await
            .unwrap_err();
        assert!(matches!(err, AnswerError::TooLarge { limit: 100 }), "{err}");
        // 1 MB of zeros gzips to about 1 KB: under the bound on the wire, over it decoded.
        let bomb = gzip(&vec![0u8; 1 << 20]);
        assert!(bomb.len() < 10_000);
        let err = read(response(bomb, Some("gzip")), 10_000)
            .await
            .unwrap_err();
        assert!(matches!(err, AnswerError::Coding(_)), "{err}");
        let err = read(response(b"not gzip".to_vec(), Some("gzip")), 100)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("does not decode"), "{err}");
    }
}
