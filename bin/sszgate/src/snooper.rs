//! `sszgate snooper` (and sszgate run as `snooper` or `json_rpc_snoop`): rpc-snooper's command
//! line (`sszgate-snooper`'s parser) turned into `sszgate proxy`'s arguments — the target as
//! `--upstream`, `-b`/`-p` as `--listen`, `--metrics-port` as `--metrics`, every call relayed
//! as it comes (`--upstream-transport relay`, as rpc-snooper does), sszgate's own proxy flags
//! as given — then the proxy run with the rpc-snooper front before it (and its xatu
//! publisher with `--xatu-enabled`).

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args, CommandFactory, FromArgMatches, Parser};
use sszgate_snooper::{
    Action, SnooperCli, SnooperFront,
    xatu::{Xatu, version},
};

use crate::proxy::{self, ProxyArgs};

/// `sszgate proxy`'s arguments alone, for reading the ones rpc-snooper's command line gives.
#[derive(Debug, Parser)]
#[command(name = "snooper", args_override_self = true, disable_help_flag = true)]
struct ProxyOnly {
    #[command(flatten)]
    proxy: ProxyArgs,
}

/// Whether `name` is an `sszgate proxy` flag, and whether it takes a value.
fn proxy_flag(name: &str) -> Option<bool> {
    let command = ProxyArgs::augment_args(clap::Command::new("proxy"));
    let arg = command
        .get_arguments()
        .find(|a| a.get_long() == Some(name))?;
    Some(arg.get_action().takes_values())
}

/// The log style rpc-snooper's command line `args` asks for: ANSI colours unless
/// `--no-color`, and the default filter (`SSZGATE_LOG` overrides it): sszgate's own lines at
/// debug with `-v`, at info otherwise. A command line that does not parse gets the defaults
/// (and [`run`] its error).
pub(crate) fn log_style(args: &[String]) -> (bool, &'static str) {
    let env = |name: &str| std::env::var(name).ok();
    match sszgate_snooper::parse(args, &env, &proxy_flag) {
        Ok(cli) if cli.log.verbose => (cli.log.color, "info,sszgate=debug"),
        Ok(cli) => (cli.log.color, "info"),
        Err(_) => (true, "info"),
    }
}

/// Runs rpc-snooper's command line `args` (without the program name).
pub(crate) fn run(args: Vec<String>) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    let cli = sszgate_snooper::parse(&args, &env, &proxy_flag).context("snooper")?;
    match cli.action {
        Action::Help => {
            print!("{}", sszgate_snooper::cli::help());
            return Ok(());
        }
        Action::Version => {
            tracing::info!(version = %format!("sszgate-{}", env!("CARGO_PKG_VERSION")), "initializing rpc-snooper");
            return Ok(());
        }
        Action::Run => {}
    }
    let Some(target) = cli.target.clone() else {
        bail!("Target URL missing (provide as argument or set SNOOPER_TARGET env var)");
    };
    tracing::info!(version = %format!("sszgate-{}", env!("CARGO_PKG_VERSION")), "initializing rpc-snooper");
    tracing::info!("target url: {target}");
    let proxy_args = proxy_args(&cli, &target)?;
    tracing::debug!(
        ?proxy_args,
        "the proxy's settings from the snooper command line"
    );
    proxy::run_with(proxy_args, Some(make_front(cli, target)))
}

/// `sszgate proxy`'s arguments from rpc-snooper's command line.
fn proxy_args(cli: &SnooperCli, target: &str) -> Result<ProxyArgs> {
    let metrics = cli
        .metrics
        .map_or("127.0.0.1:0".to_string(), |a| a.to_string());
    let mut argv = vec![
        "snooper".to_string(),
        "--upstream".into(),
        target.into(),
        "--listen".into(),
        cli.listen.to_string(),
        "--metrics".into(),
        metrics,
        "--upstream-transport".into(),
        "relay".into(),
    ];
    if let Some(secret) = &cli.jwt_secret {
        argv.extend(["--jwt-secret".into(), secret.clone()]);
    }
    argv.extend(cli.proxy_args.iter().cloned());
    let matches = ProxyOnly::command()
        .try_get_matches_from(&argv)
        .context("the sszgate proxy flags given")?;
    Ok(ProxyOnly::from_arg_matches(&matches)?.proxy)
}

/// The front's maker: the rpc-snooper front, its API server when `--api-port` is given, and
/// its xatu publisher (asking `target` for the EL's version) with `--xatu-enabled`.
fn make_front(cli: SnooperCli, target: String) -> proxy::MakeFront {
    // As rpc-snooper: an unreadable secret only leaves the version question unsigned.
    let jwt = cli.jwt_secret.as_deref().filter(|_| cli.xatu.is_some());
    let jwt = jwt.and_then(|s| {
        version::jwt_secret(s)
            .inspect_err(|e| tracing::error!(error = %e, "JWT secret unreadable"))
            .ok()
    });
    Box::new(move |config, recorder| {
        let xatu = cli.xatu.as_ref().map(|settings| {
            let xatu = Xatu::start(settings);
            tokio::spawn(version::keep_asking(
                xatu.clone(),
                target.clone(),
                jwt.clone(),
            ));
            tracing::info!(outputs = settings.outputs.len(), "xatu service started");
            xatu
        });
        let front = SnooperFront::start(
            config,
            recorder,
            cli.api.on_proxy_port,
            cli.log.clone(),
            xatu,
        );
        let mut listeners = proxy::Listeners::new();
        if let Some(addr) = cli.api.listen {
            // Bound here, so that a port in use stops sszgate at start as it stops rpc-snooper;
            // a listener that cannot go on later ends the process (see `proxy::FrontParts`).
            let listener = std::net::TcpListener::bind(addr)
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .and_then(tokio::net::TcpListener::from_std)
                .with_context(|| format!("listening on {addr} (--api-port)"))?;
            tracing::info!("API server listening on: {addr}");
            let (front, users) = (front.clone(), Arc::new(cli.api.auth.clone()));
            listeners.spawn(async move {
                let forever = std::future::pending::<()>();
                let ended = sszgate_snooper::serve_api(listener, front, users, forever).await;
                ("the API listener (--api-port)", ended)
            });
        }
        Ok(proxy::FrontParts { front, listeners })
    })
}
