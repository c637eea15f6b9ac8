//! The adversarial campaign (`sszgate bench attack`): hostile clients against `sszgate proxy`
//! child processes, one row per attack, each judged against the invariants a gateway on the
//! CL–EL link must keep.
//!
//! Five proxies run, each in front of its own counting fake EL ([`el`]), all on loopback
//! ephemeral ports: (a) the defaults, (b) `--auth verify`, (c) the REST-SSZ → JSON-RPC bridge,
//! (d) the defaults under `prlimit --nofile=128:128` and (e) `sszgate snooper` (rpc-snooper's
//! command line, its API behind basic auth on `--api-port`). The attacks live in [`bombs`],
//! [`http1`], [`h2`], [`ws`] and [`snooper`], the bytes on the wire in [`wire`], the processes and what is
//! measured of them in [`proxies`]; this file holds the one table of attacks, the row runner,
//! the invariants and the report. Nothing here fixes what a row finds.
//!
//! Invariants (a row fails on any): the proxy process died; a normal authenticated call was
//! not answered 200 within 1 s after the attack; open fds after > before + 8 (not counting
//! the idle connections the upstream pool keeps to the EL, which are held to the pool's cap of
//! 32 instead); peak RSS above
//! before + 512 MiB; any byte reached the EL for an unauthenticated call to (b); a request
//! hidden inside another reached the EL as a call of its own.

mod bombs;
mod el;
mod h2;
mod http1;
mod proxies;
pub mod rpc;
mod snooper;
mod wire;
mod ws;

use std::{future::Future, path::PathBuf, pin::Pin, time::Duration};

use serde::Serialize;
use sszgate_engine::coding::Coding;
use sszgate_gateway::JwtSecret;

use self::{
    bombs::Shape,
    http1::Trickle,
    proxies::{Fds, Proxy, RssPeak, fds_settled, recovers},
    wire::{Answer, Tally},
};
use crate::proxy::{BENCH_SECRET, rss_kib};
pub use proxies::Target;

/// How long a normal call may take to be answered 200 after an attack.
pub const RECOVERY: Duration = Duration::from_secs(1);
/// Open fds a proxy may hold after an attack beyond those it held before.
pub const FD_SLACK: u64 = 8;
/// Idle connections the relay's upstream pool keeps to the EL (`pool_max_idle_per_host` in
/// the gateway's `upstream.rs`, for 90 s): a burst of concurrent calls leaves up to this many
/// behind, which is a bound, not a leak; they are counted apart from the fd bound above.
pub const UPSTREAM_POOL_CAP: u64 = 32;
/// RSS a proxy may gain during an attack, KiB.
pub const RSS_SLACK_KIB: u64 = 512 << 10;
/// RSS past before + this, KiB, gets the proxy killed by the campaign: the row has failed its
/// RSS bound four times over, and the machine's memory is not the attack's to take.
const RSS_CEILING_KIB: u64 = 2 << 20;
/// The longest any one attack may run before it is cut off.
const ATTACK_LIMIT: Duration = Duration::from_secs(120);
/// An RSS that has not risen for this long counts as settled.
const RSS_QUIET: Duration = Duration::from_millis(600);

/// Options of the campaign.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sszgate executable to attack.
    pub sszgate: PathBuf,
    /// The CI-sized run: smaller bombs and floods, every attack kind still present.
    pub short: bool,
}

/// The sizes of the attacks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scale {
    bomb_zeros: u64,
    snappy_body: usize,
    flood: usize,
    slow_conns: usize,
    slow_for: Duration,
    h2_streams: usize,
    h2_resets: usize,
    h2_continuations: usize,
    h2_wait: Duration,
    ws_fragments: usize,
    ws_pings: usize,
    answer_wait: Duration,
    settle_limit: Duration,
}

impl Scale {
    fn full() -> Scale {
        Scale {
            bomb_zeros: 4 << 30,
            snappy_body: 60 << 20,
            flood: 300,
            slow_conns: 50,
            slow_for: Duration::from_secs(6),
            h2_streams: 1000,
            h2_resets: 10_000,
            h2_continuations: 100_000,
            h2_wait: Duration::from_secs(3),
            ws_fragments: 10_000,
            ws_pings: 10_000,
            answer_wait: Duration::from_secs(10),
            settle_limit: Duration::from_secs(30),
        }
    }

    /// Bombs still past the RSS bound (1 GiB), floods past the fd limit and the stream cap.
    fn short() -> Scale {
        Scale {
            bomb_zeros: 1 << 30,
            snappy_body: 1 << 20,
            flood: 200,
            slow_conns: 20,
            slow_for: Duration::from_secs(4),
            h2_streams: 250,
            h2_resets: 2000,
            h2_continuations: 20_000,
            h2_wait: Duration::from_secs(2),
            ws_fragments: 2000,
            ws_pings: 2000,
            answer_wait: Duration::from_secs(10),
            settle_limit: Duration::from_secs(10),
        }
    }
}

/// What an attack needs: where to aim, a valid token, and its sizes.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) addr: std::net::SocketAddr,
    /// The management API's own port, for a target that has one (`--api-port`).
    pub(crate) api: Option<std::net::SocketAddr>,
    pub(crate) token: String,
    pub(crate) scale: Scale,
}

/// What an attack sent and what came back, as the table shows them.
pub(crate) struct Outcome {
    sent: String,
    answered: String,
}

impl Outcome {
    pub(crate) fn new(sent: String, answer: Answer) -> Outcome {
        Outcome::text(sent, answer.to_string())
    }

    pub(crate) fn with_tally(sent: String, tally: Tally) -> Outcome {
        Outcome::text(sent, tally.to_string())
    }

    pub(crate) fn text(sent: String, answered: String) -> Outcome {
        Outcome { sent, answered }
    }

    pub(crate) fn failed_to_connect(error: std::io::Error) -> Outcome {
        Outcome::new("nothing".into(), Answer::refused(error))
    }
}

type Run = Box<dyn Fn(Ctx) -> Pin<Box<dyn Future<Output = Outcome> + Send>> + Send + Sync>;

/// One row of the table: an attack and the proxy it is aimed at.
struct Attack {
    name: String,
    target: Target,
    /// Sent without a valid JWT to (b): nothing of it may reach the EL.
    unauthenticated: bool,
    /// Run on a freshly started proxy, so memory an earlier row left behind does not hide
    /// what this one does.
    fresh: bool,
    run: Run,
}

fn attack<F>(
    name: impl Into<String>,
    target: Target,
    run: impl Fn(Ctx) -> F + Send + Sync + 'static,
) -> Attack
where
    F: Future<Output = Outcome> + Send + 'static,
{
    Attack {
        name: name.into(),
        target,
        unauthenticated: false,
        fresh: false,
        run: Box::new(move |ctx| Box::pin(run(ctx))),
    }
}

/// The campaign, in the order it runs: the bombs last, as they may leave a proxy large.
fn attacks() -> Vec<Attack> {
    use Target::{Bridge, Fds128, Relay, Snooper, Verify};
    let mut table = Vec::new();
    for target in [Fds128, Relay] {
        table.push(attack(
            "conn flood, no request",
            target,
            http1::open_and_close,
        ));
        table.push(attack(
            "conn flood, a request each",
            target,
            http1::one_request_each,
        ));
    }
    for (name, what) in [
        ("slowloris: head", Trickle::Head),
        ("slowloris: body", Trickle::Body),
        ("slowloris: chunked body", Trickle::Chunked),
    ] {
        table.push(attack(name, Relay, move |c| http1::slowloris(c, what)));
    }
    for (name, build) in http1::MALFORMED {
        table.push(attack(format!("HTTP/1.1: {name}"), Relay, move |c| {
            http1::malformed(c, build)
        }));
    }
    table.push(attack("h2c: many streams at once", Relay, h2::many_streams));
    table.push(attack("h2c: rapid reset", Relay, h2::rapid_reset));
    table.push(attack("h2c: 1 MB header", Relay, h2::huge_header));
    table.push(attack(
        "h2c: CONTINUATION flood",
        Relay,
        h2::continuation_flood,
    ));
    table.push(attack("ws: 2^62-byte frame", Relay, ws::huge_frame));
    table.push(attack("ws: fragment flood", Relay, ws::fragments));
    table.push(attack("ws: ping flood", Relay, ws::ping_flood));
    table.extend([
        attack(
            "snooper: unknown module type",
            Snooper,
            snooper::unknown_module,
        ),
        attack(
            "snooper: malformed frames",
            Snooper,
            snooper::malformed_frames,
        ),
        attack("snooper: 2^62-byte frame", Snooper, snooper::huge_frame),
        attack(
            "snooper: module client never reads",
            Snooper,
            snooper::never_reads,
        ),
        attack("snooper: wrong basic auth", Snooper, snooper::wrong_auth),
    ]);
    for coding in Coding::ALL {
        let name = coding.name();
        let json =
            |authenticated| move |c| bombs::send(c, coding, Shape::JsonRpc { authenticated });
        let mut refused = attack(
            format!("bomb {name}, JSON-RPC, no JWT"),
            Verify,
            json(false),
        );
        refused.unauthenticated = true;
        let rest = move |c| bombs::send(c, coding, Shape::RestPayload);
        for mut row in [
            attack(format!("bomb {name}, JSON-RPC, no JWT"), Relay, json(false)),
            attack(format!("bomb {name}, JSON-RPC, JWT"), Relay, json(true)),
            refused,
            attack(format!("bomb {name}, REST-SSZ payloads, JWT"), Bridge, rest),
        ] {
            row.fresh = true;
            table.push(row);
        }
    }
    table
}

/// One attack's measurements and verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The attack.
    pub attack: String,
    /// The proxy attacked.
    pub target: Target,
    /// What the attacker sent (bytes, connections).
    pub sent: String,
    /// What came back (status lines, closed, reset, frames by type).
    pub answered: String,
    /// VmRSS before the attack, KiB.
    pub rss_before_kib: u64,
    /// The highest VmRSS sampled during the attack and until it settled, KiB.
    pub rss_peak_kib: u64,
    /// VmRSS afterwards, KiB.
    pub rss_after_kib: u64,
    /// Open fds before the attack.
    pub fds_before: u64,
    /// Open fds afterwards (given up to 2 s to come down).
    pub fds_after: u64,
    /// Of the fds before, connections to the EL (the upstream pool's).
    pub el_conns_before: u64,
    /// Of the fds after, connections to the EL.
    pub el_conns_after: u64,
    /// Requests that reached the EL during the attack.
    pub el_requests: u64,
    /// Body (and WebSocket message) bytes that reached the EL during the attack.
    pub el_bytes: u64,
    /// Requests hidden inside another that reached the EL as calls of their own.
    pub el_hidden: u64,
    /// Whether the attack was an unauthenticated call to (b), which must not reach the EL.
    pub unauthenticated: bool,
    /// Whether the proxy process was alive after the attack.
    pub alive: bool,
    /// Whether the campaign killed the proxy because its RSS passed before + 2 GiB.
    pub stopped_at_ceiling: bool,
    /// How long a normal call took to be answered 200 after the attack (none within 1 s:
    /// `None`), ms.
    pub recovered_ms: Option<u64>,
    /// The invariants broken, in words; empty when the row passed.
    pub failures: Vec<String>,
}

impl Row {
    /// The invariants this row breaks.
    fn judge(&self) -> Vec<String> {
        let mut broken = Vec::new();
        if self.stopped_at_ceiling {
            broken.push("killed by the campaign: RSS past before + 2 GiB".to_string());
        } else if !self.alive {
            broken.push("the proxy process died".to_string());
        }
        if self.recovered_ms.is_none() {
            broken.push(format!("no normal call answered 200 within {RECOVERY:?}"));
        }
        let own = |all: u64, to_el: u64| all.saturating_sub(to_el);
        let (own_before, own_after) = (
            own(self.fds_before, self.el_conns_before),
            own(self.fds_after, self.el_conns_after),
        );
        if own_after > own_before + FD_SLACK {
            broken.push(format!(
                "fds {own_before} → {own_after} (besides connections to the EL)"
            ));
        }
        if self.el_conns_after > UPSTREAM_POOL_CAP + FD_SLACK {
            broken.push(format!(
                "{} connections to the EL kept open",
                self.el_conns_after
            ));
        }
        if self.rss_peak_kib > self.rss_before_kib + RSS_SLACK_KIB {
            let grew = (self.rss_peak_kib - self.rss_before_kib) >> 10;
            broken.push(format!("RSS grew {grew} MiB"));
        }
        if self.unauthenticated && (self.el_bytes > 0 || self.el_requests > 0) {
            broken.push("an unauthenticated call reached the EL".to_string());
        }
        if self.el_hidden > 0 {
            broken.push("a hidden request reached the EL".to_string());
        }
        broken
    }
}

/// Runs one attack against its proxy and measures it.
async fn run_row(attack: &Attack, proxy: &mut Proxy, scale: Scale, secret: &JwtSecret) -> Row {
    if attack.fresh || !proxy.alive() {
        proxy.restart().await;
    }
    let (pid, el_port) = (proxy.pid(), proxy.el.addr.port());
    let (rss_before, fds_before, el_before) =
        (rss_kib(pid).1, Fds::of(pid, el_port), proxy.el.counts());
    let peak = RssPeak::start(pid, rss_before + RSS_CEILING_KIB);
    let ctx = Ctx {
        addr: proxy.addr,
        api: proxy.api,
        token: secret.token(),
        scale,
    };
    let outcome = tokio::time::timeout(ATTACK_LIMIT, (attack.run)(ctx))
        .await
        .unwrap_or_else(|_| {
            Outcome::text("?".into(), format!("the attack ran past {ATTACK_LIMIT:?}"))
        });
    let recovered = recovers(proxy.addr, &secret.token(), RECOVERY).await;
    peak.settle(RSS_QUIET, scale.settle_limit).await;
    let stopped = peak.killed();
    let rss_peak = peak.stop();
    let bound = fds_before.own() + FD_SLACK;
    let fds_after = fds_settled(pid, el_port, bound, Duration::from_secs(2)).await;
    let el = proxy.el.counts() - el_before;
    let mut row = Row {
        attack: attack.name.clone(),
        target: attack.target,
        sent: outcome.sent,
        answered: outcome.answered,
        rss_before_kib: rss_before,
        rss_peak_kib: rss_peak,
        rss_after_kib: rss_kib(pid).1,
        fds_before: fds_before.all,
        fds_after: fds_after.all,
        el_conns_before: fds_before.to_el,
        el_conns_after: fds_after.to_el,
        el_requests: el.requests,
        el_bytes: el.bytes,
        el_hidden: el.hidden,
        unauthenticated: attack.unauthenticated,
        alive: proxy.alive(),
        stopped_at_ceiling: stopped,
        recovered_ms: recovered.map(|d| d.as_millis() as u64),
        failures: Vec::new(),
    };
    row.failures = row.judge();
    row
}

/// The campaign's result.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Whether this was the short run.
    pub short: bool,
    /// One row per attack, in the order they ran.
    pub rows: Vec<Row>,
}

/// Runs the campaign: starts the proxies, runs every attack in turn, stops the proxies.
pub async fn run(options: &Options) -> Report {
    let scale = if options.short {
        Scale::short()
    } else {
        Scale::full()
    };
    let dir = std::env::temp_dir().join(format!("sszgate-attack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the campaign's directory");
    let secret_file = dir.join("jwt.hex");
    std::fs::write(&secret_file, BENCH_SECRET).expect("writing the JWT secret");
    let secret = JwtSecret::from_hex(BENCH_SECRET).expect("the bench secret");
    let mut proxies = Vec::new();
    for target in Target::ALL {
        proxies.push(Proxy::start(target, &options.sszgate, &dir, &secret_file).await);
    }
    let table = attacks();
    let mut rows = Vec::new();
    for (i, attack) in table.iter().enumerate() {
        eprintln!(
            "sszgate bench attack: {}/{} {} → {}",
            i + 1,
            table.len(),
            attack.name,
            attack.target.label()
        );
        let proxy = proxies
            .iter_mut()
            .find(|p| p.target == attack.target)
            .expect("every target runs");
        let row = run_row(attack, proxy, scale, &secret).await;
        if !row.failures.is_empty() {
            eprintln!(
                "sszgate bench attack: row {} failed: {}",
                i + 1,
                row.failures.join("; ")
            );
        }
        rows.push(row);
    }
    drop(proxies);
    let _ = std::fs::remove_dir_all(&dir);
    Report {
        short: options.short,
        rows,
    }
}

fn mib(kib: u64) -> String {
    format!("{:.0}", kib as f64 / 1024.0)
}

/// A table cell: pipes escaped, no line breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

impl Report {
    /// The rows that broke an invariant, with their numbers (from 1).
    pub fn failed(&self) -> Vec<(usize, &Row)> {
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.failures.is_empty())
            .map(|(i, r)| (i + 1, r))
            .collect()
    }

    /// The report as Markdown: one table row per attack, then the failures.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## sszgate bench attack{}\n\nProxies: (a) defaults, (b) `--auth verify`, (c) bridge `--upstream-transport json`, (d) defaults under `prlimit --nofile=128:128`, (e) `sszgate snooper` with `--api-port` and `--api-auth`; all with `--header-timeout 2s --body-timeout 2s`. \
             Invariants: alive; a normal call answered 200 within {RECOVERY:?} after; fds after ≤ before + {FD_SLACK}, besides idle upstream connections to the EL (at most the pool's {UPSTREAM_POOL_CAP} + {FD_SLACK}); peak RSS ≤ before + {} MiB; nothing at the EL from an unauthenticated call to (b); no hidden request at the EL.\n\n",
            if self.short { " (short)" } else { "" },
            RSS_SLACK_KIB >> 10
        );
        out.push_str("| # | attack | proxy | sent | answered | RSS MiB before / peak / after | fds before → after (to the EL) | at the EL | normal call after | verdict |\n");
        out.push_str("|---:|---|---|---|---|---|---|---|---|---|\n");
        for (i, row) in self.rows.iter().enumerate() {
            out.push_str(&row_markdown(i + 1, row));
        }
        let failed = self.failed();
        out.push_str(&format!(
            "\n{} of {} rows passed.\n",
            self.rows.len() - failed.len(),
            self.rows.len()
        ));
        for (i, row) in failed {
            out.push_str(&format!(
                "- row {i} ({}, {}): {}\n",
                row.attack,
                row.target.label(),
                row.failures.join("; ")
            ));
        }
        out
    }
}

fn row_markdown(number: usize, row: &Row) -> String {
    let el = format!(
        "{} req, {}{}",
        row.el_requests,
        wire::size(row.el_bytes),
        if row.el_hidden > 0 {
            format!(", {} hidden", row.el_hidden)
        } else {
            String::new()
        }
    );
    let recovered = row
        .recovered_ms
        .map_or("none within 1 s".to_string(), |ms| {
            format!("200 in {ms} ms")
        });
    let verdict = if row.failures.is_empty() {
        "ok".to_string()
    } else {
        format!("**FAIL**: {}", row.failures.join("; "))
    };
    format!(
        "| {number} | {} | {} | {} | {} | {} / {} / {} | {} → {} ({} → {}) | {el} | {recovered} | {} |\n",
        cell(&row.attack),
        row.target.label(),
        cell(&row.sent),
        cell(&row.answered),
        mib(row.rss_before_kib),
        mib(row.rss_peak_kib),
        mib(row.rss_after_kib),
        row.fds_before,
        row.fds_after,
        row.el_conns_before,
        row.el_conns_after,
        cell(&verdict)
    )
}
