//! The response tap: relays the upstream body frame by frame and keeps refcounted handles of
//! the frames; when the body ends, fails, or is dropped (the CL went away), it hands exactly
//! one capture to the recorder. Nothing is copied or parsed here. [`Recording`], the part
//! that completes a call's record and shows it to the front, is shared with the spliced
//! relay (`splice`), which keeps its copy of an answer elsewhere.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use sszgate_record::{Capture, ErrorSide, Recorder};

use crate::front::{Exchange, ExchangeHead, Front};

/// The timing anchors of a call.
pub(crate) struct Timing {
    /// When the request head arrived.
    pub(crate) arrived: Instant,
    /// When the request went upstream.
    pub(crate) sent: Instant,
    /// When the upstream response head arrived.
    pub(crate) head: Instant,
}

/// What completes a relayed call's record once its answer has ended: the capture so far, its
/// timing, where it goes, and the front that sees it.
pub(crate) struct Recording {
    pub(crate) capture: Capture,
    pub(crate) timing: Timing,
    pub(crate) recorder: Arc<Recorder>,
    /// The front that sees the call when it ends, with what only the relay knew of it.
    pub(crate) observer: Option<(Arc<dyn Front>, ExchangeHead)>,
}

impl Recording {
    /// Completes the record with the answer's kept `frames` (none when it was over
    /// `keep_limit`), its size `relayed`, when it `ended` and why it failed, if it did; shows
    /// it to the front and hands it to the recorder.
    pub(crate) fn complete(
        self,
        frames: Vec<Bytes>,
        relayed: u64,
        ended: Instant,
        failure: Option<(ErrorSide, String)>,
    ) {
        let Recording {
            mut capture,
            timing,
            recorder,
            observer,
        } = self;
        capture.response = frames;
        if relayed > recorder.max_capture_bytes() {
            capture.response_not_kept = Some(relayed);
        }
        capture.upstream_ttfb_us = Some(timing.head.duration_since(timing.sent).as_micros() as u64);
        capture.upstream_ttlb_us = Some(ended.duration_since(timing.sent).as_micros() as u64);
        capture.total_us = ended.duration_since(timing.arrived).as_micros() as u64;
        if let Some((side, message)) = failure {
            capture.error_side = Some(side);
            capture.error_message = Some(message);
        }
        if let Some((front, head)) = observer {
            front.observe(exchange(&capture, head));
        }
        recorder.record(capture);
    }
}

/// A response body that records itself when it ends.
pub(crate) struct Tap {
    inner: Incoming,
    /// A frame read ahead of the relay (the proxy waits for the first one before it answers),
    /// handed out before anything of `inner`.
    first: Option<Frame<Bytes>>,
    frames: Vec<Bytes>,
    /// Bytes of answer relayed so far.
    relayed: u64,
    /// Bytes of answer kept at most: the recorder's queue could hold no more. A longer
    /// answer is relayed whole and recorded by its size only.
    keep_limit: u64,
    /// Taken when the record is made: exactly once.
    recording: Option<Recording>,
}

impl Tap {
    pub(crate) fn new(
        inner: Incoming,
        capture: Capture,
        timing: Timing,
        recorder: Arc<Recorder>,
    ) -> Tap {
        Tap {
            inner,
            first: None,
            frames: Vec::new(),
            relayed: 0,
            keep_limit: recorder.max_capture_bytes(),
            recording: Some(Recording {
                capture,
                timing,
                recorder,
                observer: None,
            }),
        }
    }

    /// The same tap, showing the call to `front` when it ends.
    pub(crate) fn with_observer(mut self, front: Arc<dyn Front>, head: ExchangeHead) -> Tap {
        if let Some(recording) = &mut self.recording {
            recording.observer = Some((front, head));
        }
        self
    }

    /// The same tap, with `first` already read from `inner` and relayed before the rest.
    pub(crate) fn with_first(mut self, first: Option<Frame<Bytes>>) -> Tap {
        self.first = first;
        self
    }

    fn finish(&mut self, failure: Option<(ErrorSide, String)>) {
        if let Some(recording) = self.recording.take() {
            let frames = std::mem::take(&mut self.frames);
            recording.complete(frames, self.relayed, Instant::now(), failure);
        }
    }
}

/// The exchange a front sees: the capture's bodies (refcounted) and the head's types.
fn exchange(capture: &Capture, head: ExchangeHead) -> Exchange {
    Exchange {
        method: head.method,
        target: capture.target.clone(),
        request_content_type: head.request_content_type,
        request: capture.request.clone(),
        status: capture.status,
        response_content_type: head.response_content_type,
        response_encoding: capture.encodings.1.clone(),
        response: capture.response.clone(),
        response_len: capture.answer_len(),
        duration: std::time::Duration::from_micros(capture.total_us),
        failure: capture.error_message.clone(),
    }
}

impl Tap {
    /// Keeps a handle of a relayed frame, unless the answer has grown past what the recorder
    /// could hold: then none of it is kept (its frames are freed as they are relayed).
    fn keep(&mut self, data: &Bytes) {
        self.relayed += data.len() as u64;
        if self.relayed <= self.keep_limit {
            self.frames.push(data.clone());
        } else if !self.frames.is_empty() {
            self.frames = Vec::new();
        }
    }
}

impl Body for Tap {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let polled = match this.first.take() {
            Some(frame) => Poll::Ready(Some(Ok(frame))),
            None => Pin::new(&mut this.inner).poll_frame(cx),
        };
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.keep(data);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.finish(Some((ErrorSide::El, format!("upstream body failed: {e}"))));
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.finish(None);
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let ahead = self
            .first
            .as_ref()
            .and_then(Frame::data_ref)
            .map_or(0, |d| d.len() as u64);
        let inner = self.inner.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + ahead);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + ahead);
        }
        hint
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        if self.recording.is_some() {
            // An empty body may end without ever being polled.
            let failure = (!Body::is_end_stream(self)).then(|| {
                (
                    ErrorSide::Cl,
                    "the CL went away before the response ended".to_string(),
                )
            });
            self.finish(failure);
        }
    }
}
