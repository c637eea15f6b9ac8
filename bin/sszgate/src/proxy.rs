//! `sszgate proxy`: flags, resolved into a `ProxyConfig`, then the relay and the control
//! server until SIGINT/SIGTERM, then a graceful drain (in-flight calls finish, queued records
//! are written).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use anyhow::{Context, Result, bail};
use clap::Args;
use sszgate_gateway::{JwtSecret, ProxyConfig, Upstream, UpstreamTransport};
use sszgate_record::{Recorder, RecorderConfig, Sink, SinkOptions, SinkSpec, clickhouse::Identity};
use tokio::net::TcpListener;

/// Arguments of `sszgate proxy`.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
    /// The execution client's Engine API URL, e.g. http://127.0.0.1:8551.
    #[arg(long, env = "SSZGATE_UPSTREAM", help_heading = "Relay")]
    upstream: String,

    /// Address the CL connects to (JSON-RPC, REST-SSZ and WebSocket on one port).
    #[arg(
        long,
        env = "SSZGATE_LISTEN",
        default_value = "127.0.0.1:8551",
        help_heading = "Relay"
    )]
    listen: SocketAddr,

    /// Threads that relay calls (default: one per CPU core). One thread keeps a call's hops
    /// on one core, with no wake-ups across threads; see docs/benchmarks.md for both measured.
    #[arg(long, env = "SSZGATE_WORKER_THREADS", help_heading = "Relay")]
    worker_threads: Option<std::num::NonZeroUsize>,

    /// Time the EL has to start answering a call, e.g. 8s or 500ms; then the CL gets a 504.
    #[arg(long, env = "SSZGATE_UPSTREAM_TIMEOUT", default_value = "8s", value_parser = humantime::parse_duration, help_heading = "Relay")]
    upstream_timeout: Duration,

    /// Time a client has to send a request's headers; then the connection closes.
    #[arg(long, env = "SSZGATE_HEADER_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    header_timeout: Duration,

    /// Time a client has to send a request's body once its headers are in; then a 408.
    #[arg(long, env = "SSZGATE_BODY_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    body_timeout: Duration,

    /// Calls handled at once; beyond that a call is answered 503 at once (0: no limit).
    #[arg(
        long,
        env = "SSZGATE_MAX_IN_FLIGHT",
        default_value_t = 256,
        help_heading = "Limits"
    )]
    max_in_flight: usize,

    /// Largest request body accepted, bytes (the REST-SSZ spec's MAX_REQUEST_BODY_SIZE): the
    /// global cap. Under it each resource and method has the limit of its largest legal
    /// message (a forkchoiceUpdated a few KB, a GET no body; a newPayload the global cap);
    /// a larger body is answered 413, from its Content-Length before it is read.
    #[arg(long, env = "SSZGATE_MAX_BODY", default_value_t = 64 << 20, help_heading = "Limits")]
    max_body: usize,

    /// Largest request head accepted (request line and header fields), bytes; a larger one
    /// is answered 431.
    #[arg(
        long,
        env = "SSZGATE_MAX_HEADER_BYTES",
        default_value_t = 8 << 10,
        help_heading = "Limits"
    )]
    max_header_bytes: usize,

    /// Largest EL answer, bytes, that the gateway reads whole (the bridge) or decodes from
    /// its content coding (the recorder); past it the bridge answers an error and the
    /// recorder notes it. Relayed answers stream through whatever their size.
    #[arg(
        long,
        env = "SSZGATE_MAX_ANSWER",
        default_value_t = sszgate_gateway::DEFAULT_MAX_ANSWER_BYTES,
        help_heading = "Limits"
    )]
    max_answer: usize,

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
    upstream_transport: TransportArg,

    /// Speak h2c (HTTP/2 with prior knowledge) to the EL instead of HTTP/1.1.
    #[arg(long, env = "SSZGATE_UPSTREAM_HTTP2", help_heading = "Relay")]
    upstream_http2: bool,

    /// The Engine API JWT secret (a file with 64 hex digits, or the hex itself), used only to
    /// ask the EL its client version for the records; the CL's own tokens pass through.
    #[arg(
        long,
        env = "SSZGATE_JWT_SECRET",
        hide_env_values = true,
        help_heading = "Relay"
    )]
    jwt_secret: Option<String>,

    /// Where records go; repeatable: sqlite:PATH, jsonl:PATH, jsonl:- (stdout),
    /// clickhouse:http://[USER[:PASSWORD]@]HOST:PORT/DB (through a local spool), none.
    #[arg(
        long = "store",
        env = "SSZGATE_STORE",
        value_delimiter = ',',
        default_value = "sqlite:sszgate.db",
        help_heading = "Recording"
    )]
    stores: Vec<String>,

    /// Bytes of each request and response body written with a JSON-lines record (text as it
    /// is, binary as 0x-hex, the rest cut with a note of its size); 0 writes no bodies.
    #[arg(
        long,
        env = "SSZGATE_JSONL_BODY_BYTES",
        default_value_t = 256,
        help_heading = "Recording"
    )]
    jsonl_body_bytes: usize,

    /// A label stamped on every record, KEY=VALUE; repeatable (e.g. node=mainnet-1, cl=lighthouse).
    #[arg(long = "label", value_parser = parse_label, help_heading = "Recording")]
    labels: Vec<(String, String)>,

    /// Records queued for writing at most; beyond that records are dropped and counted, the
    /// CL's calls never wait.
    #[arg(
        long,
        env = "SSZGATE_QUEUE",
        default_value_t = 65_536,
        help_heading = "Recording"
    )]
    queue: usize,

    /// Bytes of body the records waiting may hold alive at most (a 72-blob getPayload answer
    /// is about 20 MB); beyond that records are dropped and counted, the CL's calls never
    /// wait. An answer larger than this is relayed whole and recorded by its size only.
    #[arg(
        long,
        env = "SSZGATE_QUEUE_BYTES",
        default_value_t = sszgate_record::DEFAULT_QUEUE_BYTES,
        help_heading = "Recording"
    )]
    queue_bytes: usize,

    /// Where ClickHouse rows wait for the server (one subdirectory per server and database);
    /// rows still there at exit are sent at the next start.
    #[arg(
        long,
        env = "SSZGATE_SPOOL_DIR",
        default_value = "sszgate-spool",
        help_heading = "Recording"
    )]
    spool_dir: PathBuf,

    /// Bytes the spool may hold on disk; past that, new rows are refused and counted
    /// (sszgate_records_lost_total), the ones waiting keep their order.
    #[arg(
        long,
        env = "SSZGATE_SPOOL_MAX_BYTES",
        default_value_t = 1 << 30,
        help_heading = "Recording"
    )]
    spool_max_bytes: u64,

    /// This node's name on every ClickHouse row (default: the host name).
    #[arg(long, env = "SSZGATE_NODE", help_heading = "Recording")]
    node: Option<String>,

    /// The network's name on every ClickHouse row (mainnet, hoodi, sepolia, …; default
    /// unknown).
    #[arg(long, env = "SSZGATE_NETWORK", help_heading = "Recording")]
    network: Option<String>,

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
    auth: AuthArg,

    /// Verify what crosses the link, off the forward path: off, sample (block hash,
    /// transactions, limits and versioned hashes of every payload; KZG proofs of one call with
    /// blobs in 8) or all. Verdicts go to the records (verdict, verify_check, verify_detail),
    /// the metrics (sszgate_verify_total) and the log.
    #[arg(
        long,
        env = "SSZGATE_VERIFY",
        default_value = "sample",
        help_heading = "Verification"
    )]
    verify: sszgate_verify::Mode,

    /// A testing aid: answer a newPayload whose payload fails verification with an error
    /// (JSON-RPC -32602 or a 422 problem) instead of relaying it. Decodes every newPayload on
    /// the forward path.
    #[arg(long, env = "SSZGATE_VERIFY_ENFORCE", help_heading = "Verification")]
    verify_enforce: bool,

    /// Address of /metrics (Prometheus) and /_sszgate/status; loopback by default.
    #[arg(
        long,
        env = "SSZGATE_METRICS",
        default_value = "127.0.0.1:9551",
        help_heading = "Recording"
    )]
    metrics: SocketAddr,
}

/// `--auth` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum AuthArg {
    /// Relay the CL's token; the EL decides.
    Passthrough,
    /// Check every token here; sign upstream calls with our own.
    Verify,
}

/// `--upstream-transport` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TransportArg {
    /// JSON-RPC only: bridge REST-SSZ calls.
    Json,
    /// REST-SSZ: relay as it is.
    Ssz,
    /// Relay as it comes.
    Relay,
    /// Ask the EL.
    Auto,
}

pub(crate) fn parse_label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

pub(crate) fn jwt(value: &str) -> Result<JwtSecret> {
    let text = if Path::new(value).exists() {
        std::fs::read_to_string(value)
            .with_context(|| format!("reading the JWT secret file {value}"))?
    } else {
        value.to_string()
    };
    JwtSecret::from_hex(&text).with_context(|| {
        format!(
            "--jwt-secret {}",
            if Path::new(value).exists() {
                value
            } else {
                "(hex)"
            }
        )
    })
}

pub(crate) fn run(args: ProxyArgs) -> Result<()> {
    let runtime = crate::runtime_with(args.worker_threads)?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: ProxyArgs) -> Result<()> {
    let upstream = Upstream::new(&args.upstream, args.upstream_timeout, args.upstream_http2)?;
    let secret = args.jwt_secret.as_deref().map(jwt).transpose()?;
    let mut sinks = Vec::new();
    let sink_options = SinkOptions {
        spool_dir: args.spool_dir.clone(),
        spool_max_bytes: args.spool_max_bytes,
        identity: Identity::new(args.node.clone(), args.network.clone()),
        ..SinkOptions::default()
    };
    for spec in &args.stores {
        let spec: SinkSpec = spec.parse()?;
        if let Some(sink) = Sink::open_with(&spec, &sink_options)
            .with_context(|| format!("opening --store {spec:?}"))?
        {
            sinks.push(sink.with_body_bytes(args.jsonl_body_bytes));
        }
    }
    if args.queue == 0 {
        bail!("--queue must be at least 1");
    }
    let sink_names: Vec<String> = sinks.iter().map(Sink::name).collect();
    let recorder = Arc::new(Recorder::with_config(
        sinks,
        RecorderConfig {
            source: "proxy",
            labels: args.labels.clone(),
            capacity: args.queue,
            queue_bytes: args.queue_bytes,
            max_decoded: args.max_answer,
            verify: args.verify,
        },
    ));
    let cl_label = args
        .labels
        .iter()
        .find(|(k, _)| k == "cl")
        .map(|(_, v)| v.clone());
    let upstream_transport = match args.upstream_transport {
        TransportArg::Json => UpstreamTransport::Json,
        TransportArg::Ssz => UpstreamTransport::Ssz,
        TransportArg::Relay => UpstreamTransport::Relay,
        TransportArg::Auto => upstream.probe_transport(secret.as_ref()).await,
    };
    if args.auth == AuthArg::Verify && secret.is_none() {
        bail!("--auth verify checks every call's JWT, which needs --jwt-secret");
    }
    if upstream_transport == UpstreamTransport::Ssz && secret.is_none() {
        bail!(
            "--upstream-transport ssz bridges JSON-RPC calls to REST-SSZ, which needs --jwt-secret (the gateway signs its own upstream tokens)"
        );
    }
    if upstream_transport == UpstreamTransport::Json && secret.is_none() {
        tracing::warn!(
            "the EL speaks JSON-RPC only: REST-SSZ calls need the bridge, which needs --jwt-secret; they will be refused"
        );
    }
    tracing::info!(?upstream_transport, "upstream transport");
    let config = Arc::new(ProxyConfig {
        limits: sszgate_gateway::Limits {
            header_timeout: args.header_timeout,
            body_timeout: args.body_timeout,
            max_in_flight: args.max_in_flight,
            max_header_bytes: args.max_header_bytes,
            max_answer_bytes: args.max_answer,
        },
        upstream,
        max_body: args.max_body,
        cl_label,
        upstream_transport: if args.upstream_transport == TransportArg::Auto {
            sszgate_gateway::TransportChoice::auto(upstream_transport)
        } else {
            sszgate_gateway::TransportChoice::fixed(upstream_transport)
        },
        jwt: secret.clone(),
        verify_enforce: args.verify_enforce,
        verify_jwt: args.auth == AuthArg::Verify,
    });

    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let control = TcpListener::bind(args.metrics)
        .await
        .with_context(|| format!("listening on {} (--metrics)", args.metrics))?;
    tracing::info!(listen = %listener.local_addr()?, upstream = config.upstream.url(), metrics = %control.local_addr()?, stores = ?sink_names, "sszgate proxy started");

    if let Some(secret) = secret {
        let config = config.clone();
        let recorder = recorder.clone();
        tokio::spawn(async move {
            match config.upstream.client_version(&secret).await {
                Some(version) => {
                    tracing::info!(el = %version, "execution client identified");
                    recorder.set_el_client(Some(version));
                }
                None => tracing::warn!(
                    "could not ask the EL its client version (engine_getClientVersionV1)"
                ),
            }
        });
    }

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let control_task = tokio::spawn(sszgate_gateway::serve_control(
        control,
        config.clone(),
        recorder.clone(),
        stopped(stop_rx.clone()),
    ));
    let relay = tokio::spawn(sszgate_gateway::serve(
        listener,
        config,
        recorder.clone(),
        stopped(stop_rx),
    ));

    // A listener that cannot go on ends the process (non-zero, after the records are
    // written): a supervisor restarts it, where a live process with a dead port would not be.
    let (mut relay, mut control_task) = (relay, control_task);
    let failed = tokio::select! {
        () = shutdown_signal() => None,
        ended = &mut relay => Some(("the Engine API listener", ended)),
        ended = &mut control_task => Some(("the metrics listener", ended)),
    };
    tracing::info!("stopping: finishing in-flight calls and writing queued records");
    let _ = stop_tx.send(true);
    let outcome = match failed {
        Some((listener, ended)) => Err(listener_ended(listener, ended)),
        None => relay
            .await
            .context("relay task")?
            .context("the Engine API listener")
            .and(
                control_task
                    .await
                    .context("control task")?
                    .context("the metrics listener"),
            ),
    };
    let recorder_for_shutdown = recorder.clone();
    tokio::task::spawn_blocking(move || recorder_for_shutdown.shutdown())
        .await
        .context("recorder shutdown")?;
    let stats = recorder.stats();
    tracing::info!(
        recorded = stats.recorded,
        dropped = stats.dropped,
        lost = stats.lost,
        "stopped"
    );
    outcome
}

/// Why the process stops when `listener`'s task ended on its own.
fn listener_ended(
    listener: &str,
    ended: Result<std::io::Result<()>, tokio::task::JoinError>,
) -> anyhow::Error {
    let why = match ended {
        Ok(Ok(())) => "it stopped".to_string(),
        Ok(Err(e)) => e.to_string(),
        Err(e) => format!("its task failed: {e}"),
    };
    tracing::error!(listener, %why, "a listener cannot go on; stopping so that a supervisor restarts sszgate");
    anyhow::anyhow!("{listener} cannot go on: {why}")
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
