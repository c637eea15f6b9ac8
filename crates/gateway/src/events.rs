//! `GET /_sszgate/events` on the control address: the live stream of records as server-sent
//! events, one JSON record per call as it is recorded, filtered by the query:
//! `method` (a name, or a family ending in `*`), `transport` (`json-rpc`, `rest-ssz`,
//! `websocket`, `other`), `status` (an HTTP status), `min_blobs` (blobs in the call: built,
//! sent or returned) and `bodies` (`true`: keep the bodies the record holds, which the proxy
//! keeps only with `--jsonl-body-bytes`; dropped otherwise).
//!
//! A subscriber that reads too slowly skips events (`event: lagged`, with how many): the
//! recorder's broadcast never waits for it, so the relay is never slowed.
//!
//! Not here: the broadcast itself (`sszgate_record::events`).

use std::{convert::Infallible, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body::Frame;
use sszgate_record::{Record, Recorder};
use tokio::sync::broadcast::{Receiver, error::RecvError};

/// A comment line sent after this long without an event, so idle subscribers (and anything
/// between them and the proxy) see the stream is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Which records a subscriber wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    method: Option<String>,
    transport: Option<String>,
    status: Option<u16>,
    min_blobs: Option<u64>,
    bodies: bool,
}

impl Filter {
    /// The filter of a query string; `Err` names the parameter that does not parse.
    pub(crate) fn parse(query: &str) -> Result<Filter, String> {
        let mut filter = Filter::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let number = |what: &str| format!("{key}={value:?}: {what}");
            match key {
                "method" => filter.method = Some(value.to_string()),
                "transport" => filter.transport = Some(value.to_string()),
                "status" => {
                    filter.status = Some(value.parse().map_err(|_| number("an HTTP status"))?)
                }
                "min_blobs" => {
                    filter.min_blobs = Some(value.parse().map_err(|_| number("a count"))?)
                }
                "bodies" => filter.bodies = matches!(value, "" | "true" | "1"),
                other => {
                    return Err(format!(
                        "unknown parameter {other:?} (method, transport, status, min_blobs, bodies)"
                    ));
                }
            }
        }
        Ok(filter)
    }

    /// True when `record` passes.
    pub(crate) fn passes(&self, record: &Record) -> bool {
        let method_ok = match (&self.method, &record.method) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(want), Some(m)) => match want.strip_suffix('*') {
                Some(prefix) => m.starts_with(prefix),
                None => want == m,
            },
        };
        let f = &record.facts;
        let blobs = f
            .blob_count
            .or(f.versioned_hash_count)
            .or(f.blobs_returned)
            .unwrap_or(0);
        method_ok
            && self
                .transport
                .as_deref()
                .is_none_or(|t| t == record.transport)
            && self.status.is_none_or(|s| s == record.status)
            && self.min_blobs.is_none_or(|n| blobs >= n)
    }

    /// One event: the record as JSON, bodies kept only when asked.
    fn event(&self, record: &Record) -> Bytes {
        let json =
            if self.bodies || (record.request_body.is_none() && record.response_body.is_none()) {
                serde_json::to_string(record)
            } else {
                serde_json::to_string(&Record {
                    request_body: None,
                    response_body: None,
                    ..record.clone()
                })
            };
        Bytes::from(format!("data: {}\n\n", json.expect("a record serializes")))
    }
}

/// The body of an event stream: records passing `filter`, as they are made.
pub(crate) fn stream(
    recorder: &Arc<Recorder>,
    filter: Filter,
) -> impl futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send + 'static {
    let receiver = recorder.events().subscribe();
    futures_util::stream::unfold((receiver, filter), |(mut receiver, filter)| async move {
        let frame = next_frame(&mut receiver, &filter).await?;
        Some((Ok(Frame::data(frame)), (receiver, filter)))
    })
}

/// The next frame to send: an event, a lag notice or a keep-alive; `None` when the
/// recorder has gone (the proxy is stopping).
async fn next_frame(receiver: &mut Receiver<Arc<Record>>, filter: &Filter) -> Option<Bytes> {
    loop {
        match tokio::time::timeout(KEEP_ALIVE, receiver.recv()).await {
            Err(_) => return Some(Bytes::from_static(b": keep-alive\n\n")),
            Ok(Ok(record)) if filter.passes(&record) => return Some(filter.event(&record)),
            Ok(Ok(_)) => {}
            Ok(Err(RecvError::Lagged(skipped))) => {
                return Some(Bytes::from(format!(
                    "event: lagged\ndata: {{\"skipped\":{skipped}}}\n\n"
                )));
            }
            Ok(Err(RecvError::Closed)) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_becomes_a_filter_and_bad_ones_are_named() {
        let f =
            Filter::parse("method=engine_newPayload*&transport=json-rpc&status=200&min_blobs=2")
                .unwrap();
        let mut r = Record {
            method: Some("engine_newPayloadV4".into()),
            transport: "json-rpc",
            status: 200,
            ..Record::default()
        };
        assert!(!f.passes(&r), "no blobs");
        r.facts.versioned_hash_count = Some(3);
        assert!(f.passes(&r));
        r.status = 500;
        assert!(!f.passes(&r));
        r.status = 200;
        r.method = Some("engine_getPayloadV4".into());
        assert!(!f.passes(&r));
        assert!(Filter::default().passes(&r));
        assert!(Filter::parse("status=abc").unwrap_err().contains("status"));
        assert!(
            Filter::parse("colour=red")
                .unwrap_err()
                .contains("unknown parameter")
        );
    }

    #[test]
    fn bodies_are_sent_only_when_asked() {
        let r = Record {
            request_body: Some("{\"secret\":1}".into()),
            ..Record::default()
        };
        let without = Filter::default().event(&r);
        assert!(!String::from_utf8_lossy(&without).contains("secret"));
        let with = Filter::parse("bodies=true").unwrap().event(&r);
        assert!(String::from_utf8_lossy(&with).contains("secret"));
        assert!(with.starts_with(b"data: {") && with.ends_with(b"}\n\n"));
    }
}
