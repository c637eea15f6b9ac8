//! The proxies under attack (child processes, each with its own counting EL) and what is
//! measured of them: RSS (sampled every 20 ms for the peak), open fds, whether the process
//! lives, and whether a normal authenticated call is answered 200.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::time::{Instant, sleep, timeout};

use super::{
    el::{CountingEl, PROBE_ID},
    snooper::API_USER,
};
use crate::proxy::{ProxyChild, free_port, log_filter, rss_kib, start_proxy_wrapped, wait_ready};

/// The open files the fd-exhaustion target may hold (`prlimit --nofile`).
const FD_LIMIT: &str = "--nofile=128:128";
/// How often the RSS is sampled during an attack.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// Which proxy an attack is aimed at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Target {
    /// (a) the defaults: `--auth passthrough`, SQLite in a temp dir.
    Relay,
    /// (b) `--auth verify --jwt-secret FILE`.
    Verify,
    /// (c) the bridge: `--upstream-transport json --jwt-secret FILE`.
    Bridge,
    /// (d) the defaults under `prlimit --nofile=128:128`.
    Fds128,
    /// (e) `sszgate snooper`, its management API also on `--api-port` behind `--api-auth`.
    Snooper,
}

impl Target {
    /// Every target, in start order.
    pub const ALL: [Target; 5] = [
        Target::Relay,
        Target::Verify,
        Target::Bridge,
        Target::Fds128,
        Target::Snooper,
    ];

    /// Its short name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Target::Relay => "a relay",
            Target::Verify => "b verify",
            Target::Bridge => "c bridge",
            Target::Fds128 => "d 128 fds",
            Target::Snooper => "e snooper",
        }
    }

    fn args(self, secret: &Path) -> Vec<String> {
        let secret = secret.display().to_string();
        let mut args: Vec<String> = match self {
            Target::Relay | Target::Fds128 | Target::Snooper => {
                vec!["--auth".into(), "passthrough".into()]
            }
            Target::Verify => vec![
                "--auth".into(),
                "verify".into(),
                "--jwt-secret".into(),
                secret,
            ],
            Target::Bridge => {
                vec![
                    "--upstream-transport".into(),
                    "json".into(),
                    "--jwt-secret".into(),
                    secret,
                ]
            }
        };
        // Short timeouts keep the slowloris rows short.
        args.extend(["--header-timeout", "2s", "--body-timeout", "2s"].map(String::from));
        args
    }
}

/// A running proxy and its EL.
pub(crate) struct Proxy {
    pub(crate) target: Target,
    pub(crate) addr: SocketAddr,
    /// The management API's own port, for (e).
    pub(crate) api: Option<SocketAddr>,
    pub(crate) el: CountingEl,
    child: ProxyChild,
    dir: PathBuf,
    sszgate: PathBuf,
    secret: PathBuf,
}

impl Proxy {
    /// Starts `target` in front of a new counting EL and waits until it listens.
    pub(crate) async fn start(target: Target, sszgate: &Path, dir: &Path, secret: &Path) -> Proxy {
        let dir = dir.join(target.label().replace(' ', "-"));
        std::fs::create_dir_all(&dir).expect("a directory for the proxy");
        let el = CountingEl::start().await;
        let wrapper: &[&str] = match target {
            Target::Fds128 => &["prlimit", FD_LIMIT],
            _ => &[],
        };
        let args = target.args(secret);
        let (child, addr, api) = match target {
            Target::Snooper => {
                let (child, addr, api) = start_snooper(sszgate, el.addr, &dir, &args);
                (child, addr, Some(api))
            }
            _ => {
                let (child, addr, _metrics) =
                    start_proxy_wrapped(wrapper, sszgate, el.addr, &dir, &args);
                (child, addr, None)
            }
        };
        wait_ready(addr).await;
        if let Some(api) = api {
            wait_ready(api).await;
        }
        Proxy {
            target,
            addr,
            api,
            el,
            child,
            dir,
            sszgate: sszgate.into(),
            secret: secret.into(),
        }
    }

    /// Its process id (`prlimit` execs the proxy, so the pid is the proxy's).
    pub(crate) fn pid(&self) -> u32 {
        self.child.child.id()
    }

    /// Whether the process still runs.
    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.child.child.try_wait(), Ok(None))
    }

    /// A fresh process in place of one that died, so the rows after it still measure.
    pub(crate) async fn restart(&mut self) {
        let parent = self.dir.parent().expect("the campaign dir").to_path_buf();
        *self = Proxy::start(
            self.target,
            &self.sszgate.clone(),
            &parent,
            &self.secret.clone(),
        )
        .await;
    }
}

/// `sszgate snooper` before `el` with rpc-snooper's command line and sszgate's `extra` flags:
/// the relay (and the open API, as in rpc-snooper) on one port, the API alone behind basic
/// auth on another; its per-call log lines go to a file in `dir`. The child, the relay's
/// address and the API's.
fn start_snooper(
    sszgate: &Path,
    el: SocketAddr,
    dir: &Path,
    extra: &[String],
) -> (ProxyChild, SocketAddr, SocketAddr) {
    let (addr, api) = (free_port(), free_port());
    let log = std::fs::File::create(dir.join("snooper.log")).expect("the snooper's log file");
    let child = std::process::Command::new(sszgate)
        .args([
            "snooper",
            "-b=127.0.0.1",
            &format!("-p={addr}"),
            "--no-color",
        ])
        .args(["--api-port", &api.to_string(), "--api-bind", "127.0.0.1"])
        .args(["--api-auth", API_USER])
        .arg("--store")
        .arg(format!("sqlite:{}", dir.join("bench.db").display()))
        .args(extra)
        .arg(format!("http://{el}"))
        .env("SSZGATE_LOG", log_filter())
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().expect("the snooper's log file"))
        .stderr(log)
        .spawn()
        .expect("starting sszgate snooper");
    let at = |port| SocketAddr::from(([127, 0, 0, 1], port));
    (ProxyChild { child }, at(addr), at(api))
}

/// Entries of /proc/PID/fd.
pub(crate) fn fd_count(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// Open TCP connections of `pid` to the EL at `el_port`: the upstream pool's, which it keeps
/// idle (up to its cap, 32, for 90 s) after a burst of calls; counted apart from the rest.
pub(crate) fn el_connections(pid: u32, el_port: u16) -> u64 {
    let inodes: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(
                link.strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    let port = format!(":{el_port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.get(2).is_some_and(|remote| remote.ends_with(&port))
                && fields.get(9).is_some_and(|inode| inodes.contains(*inode))
        })
        .count() as u64
}

/// The highest VmRSS seen by a background task sampling every 20 ms, and when it last rose.
/// Past a ceiling the sampler kills the process (a child of the campaign), so a bomb that has
/// already broken the RSS bound cannot take the machine's memory with it.
pub(crate) struct RssPeak {
    peak: Arc<AtomicU64>,
    rose_at_ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    killed: Arc<AtomicBool>,
    started: Instant,
}

impl RssPeak {
    /// Starts sampling `pid`, killing it when its VmRSS passes `ceiling_kib`.
    pub(crate) fn start(pid: u32, ceiling_kib: u64) -> RssPeak {
        let peak = Arc::new(AtomicU64::new(rss_kib(pid).1));
        let (rose_at_ms, stop, killed) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let started = Instant::now();
        let (p, r, s, k) = (
            peak.clone(),
            rose_at_ms.clone(),
            stop.clone(),
            killed.clone(),
        );
        tokio::spawn(async move {
            while !s.load(Ordering::SeqCst) {
                let now = rss_kib(pid).1;
                if now > p.fetch_max(now, Ordering::SeqCst) {
                    r.store(started.elapsed().as_millis() as u64, Ordering::SeqCst);
                }
                if now > ceiling_kib && !k.swap(true, Ordering::SeqCst) {
                    // SAFETY: kill(2) on the pid of a child this campaign started and has not
                    // reaped (the caller holds its `Child`), so the pid is still that child's.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                }
                sleep(SAMPLE_EVERY).await;
            }
        });
        RssPeak {
            peak,
            rose_at_ms,
            stop,
            killed,
            started,
        }
    }

    /// Whether the sampler killed the process at its ceiling.
    pub(crate) fn killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// Waits until the RSS has not risen for `quiet` (work the attack left behind, such as a
    /// decoding recorder, shows in the peak), at most `limit`.
    pub(crate) async fn settle(&self, quiet: Duration, limit: Duration) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            let rose = Duration::from_millis(self.rose_at_ms.load(Ordering::SeqCst));
            if self.started.elapsed().saturating_sub(rose) >= quiet {
                return;
            }
            sleep(SAMPLE_EVERY).await;
        }
    }

    /// Stops sampling; the peak, KiB.
    pub(crate) fn stop(self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.peak.load(Ordering::SeqCst)
    }
}

/// Open fds and, of them, connections to the EL.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fds {
    pub(crate) all: u64,
    pub(crate) to_el: u64,
}

impl Fds {
    /// Those of `pid` now.
    pub(crate) fn of(pid: u32, el_port: u16) -> Fds {
        Fds {
            all: fd_count(pid),
            to_el: el_connections(pid, el_port),
        }
    }

    /// The fds other than the upstream pool's connections.
    pub(crate) fn own(self) -> u64 {
        self.all.saturating_sub(self.to_el)
    }
}

/// Waits (at most `limit`) until the fds other than connections to the EL come down to
/// `bound`; the fds then.
pub(crate) async fn fds_settled(pid: u32, el_port: u16, bound: u64, limit: Duration) -> Fds {
    let deadline = Instant::now() + limit;
    loop {
        let now = Fds::of(pid, el_port);
        if now.own() <= bound || Instant::now() >= deadline {
            return now;
        }
        sleep(Duration::from_millis(50)).await;
    }
}

/// One `engine_exchangeCapabilities` call with a valid JWT on a new connection: its status.
async fn call_once(addr: SocketAddr, token: &str) -> Option<u16> {
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(connection);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"{PROBE_ID}","method":"engine_exchangeCapabilities","params":[[]]}}"#
    );
    let request = Request::post("/")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(Full::new(Bytes::from(body)))
        .ok()?;
    let response = sender.send_request(request).await.ok()?;
    let status = response.status().as_u16();
    response.into_body().collect().await.ok()?;
    Some(status)
}

/// How long one recovery try may take.
const ATTEMPT: Duration = Duration::from_millis(250);

/// Retries a normal call until it is answered 200, for at most `within`; how long it took.
pub(crate) async fn recovers(addr: SocketAddr, token: &str, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < within {
        // Each try is short: a SYN the kernel dropped (the backlog still full as the flood
        // ends) would otherwise wait out its one-second retransmission; a fresh try does not.
        let left = within.saturating_sub(started.elapsed()).min(ATTEMPT);
        if let Ok(Some(200)) = timeout(left, call_once(addr, token)).await {
            return Some(started.elapsed());
        }
        sleep(Duration::from_millis(20)).await;
    }
    None
}
