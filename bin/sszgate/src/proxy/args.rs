//! The flags of `sszgate proxy`, as clap reads them. What they mean together (defaults,
//! contradictions, the configs the libraries take) is resolved in `settings`, not here.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::Args;
use sszgate_record::SinkSpec;

use crate::flags::{self, JwtSecretArg, LabelsArg, VerifyArg};

/// Arguments of `sszgate proxy`.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
    /// The execution client's Engine API URL, e.g. http://127.0.0.1:8551.
    #[arg(long, env = "SSZGATE_UPSTREAM", help_heading = "Relay")]
    pub(crate) upstream: String,

    /// Address the CL connects to (JSON-RPC, REST-SSZ and WebSocket on one port).
    #[arg(
        long,
        env = "SSZGATE_LISTEN",
        default_value = "127.0.0.1:8551",
        help_heading = "Relay"
    )]
    pub(crate) listen: SocketAddr,

    /// Threads that relay calls (default: one per CPU core). One thread keeps a call's hops
    /// on one core, with no wake-ups across threads; see docs/benchmarks.md for both measured.
    #[arg(long, env = "SSZGATE_WORKER_THREADS", help_heading = "Relay")]
    pub(crate) worker_threads: Option<std::num::NonZeroUsize>,

    /// Time the EL has to start answering a call, e.g. 8s or 500ms; then the CL gets a 504.
    #[arg(long, env = "SSZGATE_UPSTREAM_TIMEOUT", default_value = "8s", value_parser = humantime::parse_duration, help_heading = "Relay")]
    pub(crate) upstream_timeout: Duration,

    /// Time a client has to send a request's headers; then the connection closes.
    #[arg(long, env = "SSZGATE_HEADER_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    pub(crate) header_timeout: Duration,

    /// Time a client has to send a request's body once its headers are in; then a 408.
    #[arg(long, env = "SSZGATE_BODY_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    pub(crate) body_timeout: Duration,

    /// Calls handled at once; beyond that a call is answered 503 at once (0: no limit).
    #[arg(
        long,
        env = "SSZGATE_MAX_IN_FLIGHT",
        default_value_t = 256,
        help_heading = "Limits"
    )]
    pub(crate) max_in_flight: usize,

    /// Largest request body accepted, bytes (the REST-SSZ spec's MAX_REQUEST_BODY_SIZE): the
    /// global cap. Under it each resource and method has the limit of its largest legal
    /// message (a forkchoiceUpdated a few KB, a GET no body; a newPayload the global cap);
    /// a larger body is answered 413, from its Content-Length before it is read.
    #[arg(long, env = "SSZGATE_MAX_BODY", default_value_t = 64 << 20, help_heading = "Limits")]
    pub(crate) max_body: usize,

    /// Largest request head accepted (request line and header fields), bytes; a larger one
    /// is answered 431.
    #[arg(
        long,
        env = "SSZGATE_MAX_HEADER_BYTES",
        default_value_t = 8 << 10,
        help_heading = "Limits"
    )]
    pub(crate) max_header_bytes: usize,

    /// Largest EL answer, bytes, that the gateway reads whole (the bridge) or decodes from
    /// its content coding (the recorder); past it the bridge answers an error and the
    /// recorder notes it. Relayed answers stream through whatever their size.
    #[arg(
        long,
        env = "SSZGATE_MAX_ANSWER",
        default_value_t = sszgate_gateway::DEFAULT_MAX_ANSWER_BYTES,
        help_heading = "Limits"
    )]
    pub(crate) max_answer: usize,

    /// How to talk to the EL: json (it speaks JSON-RPC only: REST-SSZ calls from the CL are
    /// bridged), ssz (use REST-SSZ upstream: JSON-RPC calls with a REST form are bridged),
    /// relay (relay everything as it comes), or auto (ask GET /engine/v1/capabilities at start:
    /// a 404 means json, as the spec's transition window says; a 200 means relay). Bridging
    /// needs --jwt-secret.
    #[arg(
        long,
        env = "SSZGATE_UPSTREAM_TRANSPORT",
        value_enum,
        default_value = "auto",
        help_heading = "Relay"
    )]
    pub(crate) upstream_transport: TransportArg,

    /// Speak h2c (HTTP/2 with prior knowledge) to the EL instead of HTTP/1.1.
    #[arg(long, env = "SSZGATE_UPSTREAM_HTTP2", help_heading = "Relay")]
    pub(crate) upstream_http2: bool,

    /// Relay every answer through hyper's buffers instead of splicing plain calls' answers
    /// socket to socket (Linux `splice(2)`; HTTP/1.1 `POST`s with a length, relayed
    /// unchanged to an HTTP/1.1 EL; a copy read on another thread for the record).
    #[arg(long, env = "SSZGATE_NO_SPLICE", help_heading = "Relay")]
    pub(crate) no_splice: bool,

    #[command(flatten, next_help_heading = "Relay")]
    pub(crate) jwt: JwtSecretArg,

    /// Where records go; repeatable: sqlite:PATH, jsonl:PATH, jsonl:- (stdout),
    /// clickhouse:http://[USER[:PASSWORD]@]HOST:PORT/DB (through a local spool), none.
    #[arg(
        long = "store",
        env = flags::STORE_ENV,
        value_delimiter = ',',
        value_parser = flags::parse_store,
        default_value = "sqlite:sszgate.db",
        help_heading = "Recording"
    )]
    pub(crate) stores: Vec<SinkSpec>,

    /// Bytes of each request and response body written with a JSON-lines record (text as it
    /// is, binary as 0x-hex, the rest cut with a note of its size); 0 writes no bodies.
    #[arg(
        long,
        env = "SSZGATE_JSONL_BODY_BYTES",
        default_value_t = 256,
        help_heading = "Recording"
    )]
    pub(crate) jsonl_body_bytes: usize,

    #[command(flatten, next_help_heading = "Recording")]
    pub(crate) labels: LabelsArg,

    /// Records queued for writing at most; beyond that records are dropped and counted, the
    /// CL's calls never wait.
    #[arg(
        long,
        env = "SSZGATE_QUEUE",
        default_value_t = 65_536,
        help_heading = "Recording"
    )]
    pub(crate) queue: usize,

    /// Bytes of body the records waiting may hold alive at most (a 72-blob getPayload answer
    /// is about 20 MB); beyond that records are dropped and counted, the CL's calls never
    /// wait. An answer larger than this is relayed whole and recorded by its size only.
    #[arg(
        long,
        env = "SSZGATE_QUEUE_BYTES",
        default_value_t = sszgate_record::DEFAULT_QUEUE_BYTES,
        help_heading = "Recording"
    )]
    pub(crate) queue_bytes: usize,

    /// Where ClickHouse rows wait for the server (one subdirectory per server and database);
    /// rows still there at exit are sent at the next start.
    #[arg(
        long,
        env = "SSZGATE_SPOOL_DIR",
        default_value = "sszgate-spool",
        help_heading = "Recording"
    )]
    pub(crate) spool_dir: PathBuf,

    /// Bytes the spool may hold on disk; past that, new rows are refused and counted
    /// (sszgate_records_lost_total), the ones waiting keep their order.
    #[arg(
        long,
        env = "SSZGATE_SPOOL_MAX_BYTES",
        default_value_t = 1 << 30,
        help_heading = "Recording"
    )]
    pub(crate) spool_max_bytes: u64,

    /// This node's name on every ClickHouse row (default: the host name).
    #[arg(long, env = "SSZGATE_NODE", help_heading = "Recording")]
    pub(crate) node: Option<String>,

    /// The network's name on every ClickHouse row (mainnet, hoodi, sepolia, …; default
    /// unknown).
    #[arg(long, env = "SSZGATE_NETWORK", help_heading = "Recording")]
    pub(crate) network: Option<String>,

    /// Authentication: passthrough (relay the CL's JWT untouched; the EL decides) or verify
    /// (check every call's JWT here, 401 before anything reaches the EL, and sign upstream
    /// calls with the gateway's own token; needs --jwt-secret). Bridged calls always verify.
    #[arg(
        long,
        env = "SSZGATE_AUTH",
        value_enum,
        default_value = "passthrough",
        help_heading = "Relay"
    )]
    pub(crate) auth: AuthArg,

    /// Verify what crosses the link, off the forward path: off, sample (block hash,
    /// transactions, limits and versioned hashes of every payload; the KZG proofs of calls
    /// with blobs as often as --verify-kzg-share allows) or all. Verdicts go to the records
    /// (verdict, verify_check, verify_detail), the metrics (sszgate_verify_total) and the log.
    #[arg(
        long,
        env = "SSZGATE_VERIFY",
        value_enum,
        default_value = "sample",
        help_heading = "Verification"
    )]
    pub(crate) verify: VerifyArg,

    /// With --verify sample: the share of the wall clock, in percent (1-100), that KZG checks
    /// may take on the recorder's thread. A check is due once the time of the ones before it
    /// is earned back at this share: at 10, a 72-blob getBlobsV2 (about 4.6 s of cell proofs)
    /// is followed by 46 s without one, and calls of a few blobs are all checked.
    #[arg(
        long,
        env = "SSZGATE_VERIFY_KZG_SHARE",
        value_name = "PERCENT",
        default_value_t = sszgate_verify::pace::DEFAULT_KZG_PERCENT,
        value_parser = clap::value_parser!(u8).range(1..=100),
        help_heading = "Verification"
    )]
    pub(crate) verify_kzg_share: u8,

    /// A testing aid: answer a newPayload whose payload fails verification with an error
    /// (JSON-RPC -32602 or a 422 problem) instead of relaying it. Decodes every newPayload on
    /// the forward path.
    #[arg(long, env = "SSZGATE_VERIFY_ENFORCE", help_heading = "Verification")]
    pub(crate) verify_enforce: bool,

    /// Address of /metrics (Prometheus), /_sszgate/status and the control point
    /// (/_sszgate/rules, pause, resume: `sszgate ctl`); loopback by default.
    #[arg(
        long,
        env = "SSZGATE_METRICS",
        default_value = "127.0.0.1:9551",
        help_heading = "Recording"
    )]
    pub(crate) metrics: SocketAddr,

    /// Bearer token the control point asks of every call that changes the relay (pause,
    /// resume, rules); without one, anyone who reaches the --metrics address may.
    #[arg(long, env = "SSZGATE_CONTROL_TOKEN", help_heading = "Recording")]
    pub(crate) control_token: Option<String>,
}

/// `--auth` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AuthArg {
    /// Relay the CL's token; the EL decides.
    Passthrough,
    /// Check every token here; sign upstream calls with our own.
    Verify,
}

/// `--upstream-transport` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TransportArg {
    /// JSON-RPC only: bridge REST-SSZ calls.
    Json,
    /// REST-SSZ: relay as it is.
    Ssz,
    /// Relay as it comes.
    Relay,
    /// Ask the EL.
    Auto,
}
