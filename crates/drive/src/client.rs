//! The driver's Engine API client: sszgate's one client (`sszgate-client`), with every
//! exchange recorded as the consensus client sees it (source `driver`), and its errors in the
//! driver's terms.
//!
//! What a call means (which method when, what an answer must say) lives in
//! [`crate::driver`]; how a call is made, in `sszgate-client`.

use std::sync::Arc;

use sszgate_client::{ClientError, Exchange, JwtSecret};
pub use sszgate_client::{EngineClient, EngineTransport};
use sszgate_record::{Capture, Recorder, Transport};

use crate::DriveError;

/// The role the driver names itself by: `X-Engine-Client-Version: SG-sszgate-drive-…`.
const ROLE: &str = "drive";

/// The `X-Engine-Client-Version` the driver sends (and its records carry as `cl_client`).
pub fn client_version() -> String {
    sszgate_client::identity::header_value(ROLE)
}

/// A client for `url` speaking `transport`, signing with `secret`, naming itself
/// `SG-sszgate-drive-…`; every exchange is recorded when a `recorder` is given.
pub fn engine_client(
    url: &str,
    transport: EngineTransport,
    secret: JwtSecret,
    recorder: Option<Arc<Recorder>>,
) -> EngineClient {
    let client = EngineClient::new(url, transport, secret, ROLE);
    match recorder {
        Some(recorder) => client.with_observer(Arc::new(move |e| recorder.record(capture(e)))),
        None => client,
    }
}

/// The record of one exchange, as the CL side saw it.
fn capture(e: &Exchange) -> Capture {
    let ssz = e.transport == EngineTransport::Ssz;
    Capture {
        arrival_unix_us: e.arrival_unix_us,
        transport: Some(if ssz {
            Transport::RestSsz
        } else {
            Transport::JsonRpc
        }),
        http_version: "HTTP/1.1",
        target: e.target.clone(),
        method: Some(e.method.to_string()),
        route: e.route.clone(),
        fork: ssz.then(|| e.fork.to_string()),
        cl_client: Some(e.client_version.clone()),
        status: e.status,
        error_side: e.failure.is_some().then_some(sszgate_record::ErrorSide::El),
        error_message: e.failure.clone(),
        request: e.request.clone(),
        response: vec![e.answer.clone()],
        upstream_ttfb_us: e.first_byte.map(|d| d.as_micros() as u64),
        upstream_ttlb_us: Some(e.elapsed.as_micros() as u64),
        total_us: e.elapsed.as_micros() as u64,
        mode: "driver",
        ..Capture::default()
    }
}

impl From<ClientError> for DriveError {
    fn from(e: ClientError) -> DriveError {
        match e {
            ClientError::Unreachable {
                method,
                url,
                problem,
            } => DriveError::Unreachable {
                method: method.to_string(),
                url,
                problem,
            },
            ClientError::Http {
                method,
                status,
                body,
            } => DriveError::Http {
                method: method.to_string(),
                status,
                body,
            },
            ClientError::Rpc {
                method,
                code,
                message,
            } => DriveError::Rpc {
                method: method.to_string(),
                code,
                message,
            },
            ClientError::Answer { method, problem } => DriveError::Answer {
                method: method.to_string(),
                problem,
            },
        }
    }
}
