//! `sszgate proxy`'s flags resolved into what the libraries take — the relay's limits, the
//! upstream's address and transport, the recorder's config, the sinks — by one pure function,
//! [`resolve`], that also refuses contradictory flags. No I/O happens here: the JWT secret is
//! read before, sockets, sinks and the upstream probe are opened after, in `proxy::run`.

use std::{net::SocketAddr, num::NonZeroUsize, path::PathBuf, time::Duration};

use anyhow::{Result, bail};
use sszgate_gateway::{JwtSecret, Limits, UpstreamTransport};
use sszgate_record::{RecorderConfig, SinkSpec};

use super::args::{AuthArg, ProxyArgs, TransportArg};

/// Everything `sszgate proxy` runs with, resolved from its flags.
#[derive(Debug)]
pub(crate) struct ProxySettings {
    /// Where the CL connects.
    pub(crate) listen: SocketAddr,
    /// Where /metrics, /_sszgate/status and the control point are served.
    pub(crate) metrics: SocketAddr,
    /// The control point's bearer token, if any.
    pub(crate) control_token: Option<String>,
    /// The runtime's relay threads (tokio's default when `None`).
    pub(crate) worker_threads: Option<NonZeroUsize>,
    /// The EL's address and how to reach it.
    pub(crate) upstream: UpstreamSettings,
    /// How the upstream transport is chosen.
    pub(crate) transport: TransportPlan,
    /// Timeouts, the in-flight cap and the size bounds of the relay.
    pub(crate) limits: Limits,
    /// The global cap on a request body.
    pub(crate) max_body: usize,
    /// The `cl` label, recorded as the CL's name when it sends none.
    pub(crate) cl_label: Option<String>,
    /// `--auth verify`: tokens are checked at the gateway.
    pub(crate) verify_jwt: bool,
    /// `--verify-enforce`: failing newPayloads are refused.
    pub(crate) verify_enforce: bool,
    /// Plain calls' answers spliced (not `--no-splice`).
    pub(crate) splice: bool,
    /// Where records go and how they are queued.
    pub(crate) recording: Recording,
}

/// The EL's address and how to talk HTTP to it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UpstreamSettings {
    /// The Engine API URL.
    pub(crate) url: String,
    /// Time the EL has to start answering.
    pub(crate) timeout: Duration,
    /// h2c with prior knowledge instead of HTTP/1.1.
    pub(crate) http2: bool,
}

/// How the upstream transport is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TransportPlan {
    /// Set by the operator.
    Fixed(UpstreamTransport),
    /// Asked of the EL at start, and again after it was unreachable.
    Auto,
}

/// The recorder's config and the sinks it writes to.
#[derive(Debug)]
pub(crate) struct Recording {
    /// The queue, the labels and verification.
    pub(crate) recorder: RecorderConfig,
    /// The sinks, in the order given.
    pub(crate) stores: Vec<SinkSpec>,
    /// Body bytes written with a JSON-lines record.
    pub(crate) jsonl_body_bytes: usize,
    /// Where remote rows wait for their server.
    pub(crate) spool_dir: PathBuf,
    /// The spool's bound on disk.
    pub(crate) spool_max_bytes: u64,
    /// The node's name on remote rows (the host name when `None`, looked up when opened).
    pub(crate) node: Option<String>,
    /// The network's name on remote rows.
    pub(crate) network: Option<String>,
}

/// Resolves `args` (and whether a JWT secret was given, read from `--jwt-secret` beforehand)
/// into the settings, refusing flags that contradict each other.
pub(crate) fn resolve(args: &ProxyArgs, secret: Option<&JwtSecret>) -> Result<ProxySettings> {
    if args.queue == 0 {
        bail!("--queue must be at least 1");
    }
    if args.auth == AuthArg::Verify && secret.is_none() {
        bail!("--auth verify checks every call's JWT, which needs --jwt-secret");
    }
    let transport = match args.upstream_transport {
        TransportArg::Json => TransportPlan::Fixed(UpstreamTransport::Json),
        TransportArg::Ssz => TransportPlan::Fixed(UpstreamTransport::Ssz),
        TransportArg::Relay => TransportPlan::Fixed(UpstreamTransport::Relay),
        TransportArg::Auto => TransportPlan::Auto,
    };
    if let TransportPlan::Fixed(fixed) = transport {
        check_transport(fixed, secret.is_some())?;
    }
    Ok(ProxySettings {
        listen: args.listen,
        metrics: args.metrics,
        control_token: args.control_token.clone(),
        worker_threads: args.worker_threads,
        upstream: UpstreamSettings {
            url: args.upstream.clone(),
            timeout: args.upstream_timeout,
            http2: args.upstream_http2,
        },
        transport,
        limits: Limits {
            header_timeout: args.header_timeout,
            body_timeout: args.body_timeout,
            max_in_flight: args.max_in_flight,
            max_header_bytes: args.max_header_bytes,
            max_answer_bytes: args.max_answer,
        },
        max_body: args.max_body,
        cl_label: label(args, "cl"),
        verify_jwt: args.auth == AuthArg::Verify,
        verify_enforce: args.verify_enforce,
        splice: !args.no_splice,
        recording: recording(args),
    })
}

/// The recording half of the settings.
fn recording(args: &ProxyArgs) -> Recording {
    Recording {
        recorder: RecorderConfig {
            source: "proxy",
            labels: args.labels.labels.clone(),
            capacity: args.queue,
            queue_bytes: args.queue_bytes,
            max_decoded: args.max_answer,
            verify: args.verify.mode(args.verify_kzg_share),
        },
        stores: args.stores.clone(),
        jsonl_body_bytes: args.jsonl_body_bytes,
        spool_dir: args.spool_dir.clone(),
        spool_max_bytes: args.spool_max_bytes,
        node: args.node.clone(),
        network: args.network.clone(),
    }
}

/// The value of the label `key`, if given.
fn label(args: &ProxyArgs, key: &str) -> Option<String> {
    let labels = &args.labels.labels;
    labels
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// Refuses a transport that cannot work without a JWT secret. It runs on the operator's
/// choice in [`resolve`] and again on what the EL answered when the choice is `auto`.
pub(crate) fn check_transport(transport: UpstreamTransport, has_secret: bool) -> Result<()> {
    if transport == UpstreamTransport::Ssz && !has_secret {
        bail!(
            "--upstream-transport ssz bridges JSON-RPC calls to REST-SSZ, which needs --jwt-secret (the gateway signs its own upstream tokens)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
