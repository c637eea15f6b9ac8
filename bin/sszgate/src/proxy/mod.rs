//! `sszgate proxy`: the flags (`args`) resolved into settings (`settings`, pure), then the
//! I/O: the JWT secret read, the sinks opened, the upstream asked its transport, the relay
//! and the control server run until SIGINT/SIGTERM, then a graceful drain (in-flight calls
//! finish, queued records are written).

mod args;
mod settings;

use std::sync::Arc;

use anyhow::{Context, Result};
use sszgate_gateway::{
    Front, JwtSecret, ProxyConfig, TransportChoice, Upstream, UpstreamTransport,
};
use sszgate_record::{Recorder, Sink, SinkOptions, clickhouse::Identity};
use tokio::net::TcpListener;

pub(crate) use args::ProxyArgs;
use settings::{ProxySettings, Recording, TransportPlan};

/// Runs `sszgate proxy` until it is stopped.
pub(crate) fn run(args: ProxyArgs) -> Result<()> {
    run_with(args, None)
}

/// Makes a front to stand before the relay (`sszgate snooper`'s), once the recorder exists:
/// given the config's handle (the config holds the front) and the recorder. An error (a port
/// of the front's own that cannot be bound) stops the proxy before it listens.
pub(crate) type MakeFront =
    Box<dyn FnOnce(std::sync::Weak<ProxyConfig>, Arc<Recorder>) -> Result<FrontParts> + Send>;

/// A front and the servers of its own it started (rpc-snooper's `--api-port`).
pub(crate) struct FrontParts {
    /// The front before the relay.
    pub(crate) front: Arc<dyn Front>,
    /// The front's own listeners, each named: one that ends, with or without an error, ends
    /// the process as the relay's own listener does.
    pub(crate) listeners: Listeners,
}

/// Listener tasks that end the process when one of them ends, each named.
pub(crate) type Listeners = tokio::task::JoinSet<(&'static str, std::io::Result<()>)>;

/// Runs `sszgate proxy` with `front` before the relay, until it is stopped.
pub(crate) fn run_with(args: ProxyArgs, front: Option<MakeFront>) -> Result<()> {
    let secret = args
        .jwt
        .jwt_secret
        .as_deref()
        .map(crate::flags::read_jwt_secret);
    let secret = secret.transpose()?;
    let settings = settings::resolve(&args, secret.as_ref())?;
    let runtime = crate::runtime_with(settings.worker_threads)?;
    runtime.block_on(run_async(settings, secret, front))
}

async fn run_async(
    settings: ProxySettings,
    secret: Option<JwtSecret>,
    front: Option<MakeFront>,
) -> Result<()> {
    // Before any port is bound, the front's included (see `shutdown_signal`).
    let stop = crate::shutdown_signal();
    let upstream = &settings.upstream;
    let upstream = Upstream::new(&upstream.url, upstream.timeout, upstream.http2)?;
    let (recorder, sink_names) = open_recorder(settings.recording)?;
    let transport = choose_transport(settings.transport, &upstream, secret.as_ref()).await?;
    let front_recorder = recorder.clone();
    let mut made = Ok(Listeners::new());
    let config = Arc::new_cyclic(|config| ProxyConfig {
        limits: settings.limits,
        upstream,
        max_body: settings.max_body,
        cl_label: settings.cl_label,
        upstream_transport: transport,
        jwt: secret.clone(),
        verify_enforce: settings.verify_enforce,
        verify_jwt: settings.verify_jwt,
        splice: settings.splice,
        control: sszgate_gateway::ControlPoint::default(),
        control_token: settings.control_token,
        front: front.and_then(|make| match make(config.clone(), front_recorder) {
            Ok(parts) => {
                made = Ok(parts.listeners);
                Some(parts.front)
            }
            Err(e) => {
                made = Err(e);
                None
            }
        }),
    });
    let front_listeners = made?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("listening on {}", settings.listen))?;
    let control = TcpListener::bind(settings.metrics)
        .await
        .with_context(|| format!("listening on {} (--metrics)", settings.metrics))?;
    tracing::info!(listen = %listener.local_addr()?, upstream = config.upstream.url(), metrics = %control.local_addr()?, stores = ?sink_names, "sszgate proxy started");
    if let Some(secret) = secret {
        // The EL's name on the records: asked now, and on the first answer after the EL was
        // unreachable (or not up yet).
        sszgate_gateway::keep_el_named(config.clone(), recorder.clone(), secret);
    }
    let listeners = (listener, control, front_listeners);
    let outcome = serve_until_stopped(listeners, config, recorder.clone(), stop).await;
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

/// Opens the sinks and starts the recorder; the sinks' names for the log.
fn open_recorder(recording: Recording) -> Result<(Arc<Recorder>, Vec<String>)> {
    let options = SinkOptions {
        spool_dir: recording.spool_dir,
        spool_max_bytes: recording.spool_max_bytes,
        identity: Identity::new(recording.node, recording.network),
        ..SinkOptions::default()
    };
    let mut sinks = Vec::new();
    for spec in &recording.stores {
        let sink =
            Sink::open_with(spec, &options).with_context(|| format!("opening --store {spec:?}"))?;
        if let Some(sink) = sink {
            sinks.push(sink.with_body_bytes(recording.jsonl_body_bytes));
        }
    }
    let names = sinks.iter().map(Sink::name).collect();
    let recorder = Recorder::with_config(sinks, recording.recorder);
    Ok((Arc::new(recorder), names))
}

/// The upstream transport: the operator's, or the EL's answer for `auto` (checked as the
/// operator's would be).
async fn choose_transport(
    plan: TransportPlan,
    upstream: &Upstream,
    secret: Option<&JwtSecret>,
) -> Result<TransportChoice> {
    let (transport, choice) = match plan {
        TransportPlan::Fixed(fixed) => (fixed, TransportChoice::fixed(fixed)),
        TransportPlan::Auto => {
            let probed = upstream.probe_transport(secret).await;
            settings::check_transport(probed, secret.is_some())?;
            (probed, TransportChoice::auto(probed))
        }
    };
    if transport == UpstreamTransport::Json && secret.is_none() {
        tracing::warn!(
            "the EL speaks JSON-RPC only: REST-SSZ calls need the bridge, which needs --jwt-secret; they will be refused"
        );
    }
    tracing::info!(upstream_transport = ?transport, "upstream transport");
    Ok(choice)
}

/// Serves the relay and the control endpoints until a signal, or until a listener (the
/// front's too) cannot go on; then lets in-flight calls finish.
async fn serve_until_stopped(
    (listener, control, mut front_listeners): (TcpListener, TcpListener, Listeners),
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let mut control_task = tokio::spawn(sszgate_gateway::serve_control(
        control,
        config.clone(),
        recorder.clone(),
        stopped(stop_rx.clone()),
    ));
    let mut relay = tokio::spawn(sszgate_gateway::serve(
        listener,
        config,
        recorder,
        stopped(stop_rx),
    ));
    // A listener that cannot go on ends the process (non-zero, after the records are
    // written): a supervisor restarts it, where a live process with a dead port would not be.
    let front_ended = async {
        match front_listeners.join_next().await {
            Some(Ok((name, ended))) => (name, Ok(ended)),
            Some(Err(e)) => ("a listener of the front", Err(e)),
            None => std::future::pending().await,
        }
    };
    let failed = tokio::select! {
        () = stop => None,
        ended = &mut relay => Some(("the Engine API listener", ended)),
        ended = &mut control_task => Some(("the metrics listener", ended)),
        (name, ended) = front_ended => Some((name, ended)),
    };
    tracing::info!("stopping: finishing in-flight calls and writing queued records");
    let _ = stop_tx.send(true);
    match failed {
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
    }
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
