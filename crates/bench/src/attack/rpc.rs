//! The campaign against `sszgate rpc` (`sszgate bench attack --target rpc`, issue 33 §4):
//! real `sszgate rpc` child processes, one row per attack, each judged.
//!
//! Rows, by group: the forged head signed by a share of the sync committee ([`forged_head`],
//! on the live Fulu chain ([`chain`]) with forging relays ([`relay`], [`forge`], the seats'
//! keys in [`interop`]); not run, and said so, without the chain's tools); the lying prover
//! ([`prover`], a relay in front of `sszgate rpc --serve-proofs` on the same chain); chain timing from a lying
//! Beacon API ([`timing`], run once `sszgate rpc` has `--network`); hostile clients against
//! one `sszgate rpc` ([`clients`]). The child and its calls live in [`server`]. Nothing here
//! fixes what a row finds.
//!
//! Invariants (a row fails on any): a wrong answer accepted; the process died; the normal
//! call (`eth_chainId`) not answered within 1 s after the attack; peak RSS above before +
//! 512 MiB; a trickling connection the server never cut; a start refused without naming the
//! field that was lied about.

mod batches;
pub(crate) mod chain;
mod clients;
mod forge;
mod forged_head;
mod interop;
mod prover;
mod relay;
mod server;
mod timing;

pub use chain::LiveTools;

use std::{
    collections::HashMap,
    path::PathBuf,
    time::{Duration, Instant},
};

use serde::Serialize;
use sszgate_fixtures::replay::Replay;

use self::{
    clients::ClientAttack,
    server::{RpcChild, Started},
    timing::{TimingLie, TimingSeen},
};
use super::proxies::RssPeak;
use super::{ATTACK_LIMIT, Outcome, RECOVERY, RSS_CEILING_KIB, RSS_QUIET, RSS_SLACK_KIB};
use crate::proxy::rss_kib;

/// Options of the campaign.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sszgate executable to attack.
    pub sszgate: PathBuf,
    /// The recorded mainnet cases (`shared/data/colibri`).
    pub data: PathBuf,
    /// The CI-sized run: a smaller flood and fewer trickles, every row still present.
    pub short: bool,
    /// The live Fulu chain's tools; `None`: the live rows are not run.
    pub live: Option<LiveTools>,
}

/// What a row found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A lie was refused: an error, or no start.
    Refused,
    /// A lie was answered as if true: a wrong answer accepted.
    AcceptedWrong,
    /// A client attack: the server answered (or cut the connection) and lived.
    Answered,
    /// A forgery outside any light client's model, run to show it is well-formed.
    Control,
    /// A lie that changed nothing: the verified answer is the truth (geth's).
    Truth,
    /// Not run; `answered` says why.
    NotRun,
}

/// One row's measurements and verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The group (forged head, chain timing, lying prover, clients).
    pub group: &'static str,
    /// The attack.
    pub attack: String,
    /// What was sent.
    pub sent: String,
    /// What came back (status, JSON-RPC error code and message, or the process's end).
    pub answered: String,
    /// The check named in the error (`error.data.check`, or the field named at start).
    pub check: Option<String>,
    /// The verdict.
    pub verdict: Verdict,
    /// VmRSS before the attack, KiB (0: no process measured).
    pub rss_before_kib: u64,
    /// The highest VmRSS sampled during the attack and until it settled, KiB.
    pub rss_peak_kib: u64,
    /// VmRSS afterwards, KiB.
    pub rss_after_kib: u64,
    /// Whether the process was alive after the attack (rows refused at start: not asked).
    pub alive: Option<bool>,
    /// How long the normal call took after the attack, ms (`None`: not within 1 s, or
    /// not asked).
    pub recovered_ms: Option<u64>,
    /// How long the attack ran, ms.
    pub took_ms: u64,
    /// The invariants broken, in words; empty when the row passed or was not run.
    pub failures: Vec<String>,
    /// The documented limit of the proof format a wrong answer of this row falls under.
    pub limit: Option<&'static str>,
}

impl Row {
    fn new(group: &'static str, attack: String, sent: String, answered: String) -> Row {
        Row {
            group,
            attack,
            sent,
            answered,
            check: None,
            verdict: Verdict::NotRun,
            rss_before_kib: 0,
            rss_peak_kib: 0,
            rss_after_kib: 0,
            alive: None,
            recovered_ms: None,
            took_ms: 0,
            failures: Vec::new(),
            limit: None,
        }
    }

    /// A row not run, and why.
    fn not_run(group: &'static str, attack: &str, why: &str) -> Row {
        Row::new(
            group,
            attack.into(),
            "nothing".into(),
            format!("not run: {why}"),
        )
    }
}

/// The campaign's result.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Whether this was the short run.
    pub short: bool,
    /// What the client rows attacked.
    pub client_target: String,
    /// One row per attack, in the order they ran.
    pub rows: Vec<Row>,
}

/// Runs the campaign.
pub async fn run(options: &Options) -> Report {
    let dir = std::env::temp_dir().join(format!("sszgate-attack-rpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the campaign's directory");
    let mut rows = live_rows(options, &dir).await;
    for lie in timing::LIES {
        eprintln!(
            "sszgate bench attack --target rpc: chain timing: {}",
            lie.field
        );
        rows.push(timing_row(options, &dir, lie).await);
    }
    let (client_target, client_rows) = client_rows(options, &dir).await;
    rows.extend(client_rows);
    let _ = std::fs::remove_dir_all(&dir);
    Report {
        short: options.short,
        client_target,
        rows,
    }
}

/// The rows on the live chain (one chain for all, stopped when they are done); without its
/// tools, not run and said so.
async fn live_rows(options: &Options, dir: &std::path::Path) -> Vec<Row> {
    let not_run = |why: &str| -> Vec<Row> {
        let forged = forged_head::SHARES
            .iter()
            .map(|&k| Row::not_run(forged_head::GROUP, &forged_head::attack(k), why));
        let lying = prover::ATTACKS
            .iter()
            .map(|attack| Row::not_run(prover::GROUP, attack, why));
        let batches = batches::ATTACKS
            .iter()
            .map(|attack| Row::not_run(batches::GROUP, attack, why));
        forged.chain(lying).chain(batches).collect()
    };
    let Some(tools) = &options.live else {
        return not_run("no live chain asked for (--live)");
    };
    if let Some(missing) = tools.missing() {
        return not_run(&format!("the live chain's tools are {missing}"));
    }
    eprintln!("sszgate bench attack --target rpc: starting the live Fulu chain");
    let run = dir.join("chain");
    let started = tokio::task::spawn_blocking({
        let tools = tools.clone();
        move || chain::LiveChain::up(&tools, &run)
    })
    .await
    .unwrap_or_else(|e| Err(e.to_string()));
    match started {
        Ok(chain) => {
            let mut rows = forged_head::rows(&options.sszgate, dir, &chain).await;
            rows.extend(prover::rows(&options.sszgate, dir, &chain).await);
            rows.extend(batches::rows(&options.sszgate, dir, &chain).await);
            rows
        }
        Err(e) => {
            let mut rows = not_run(&format!("the live chain did not start: {e}"));
            for row in &mut rows {
                row.failures
                    .push(format!("the live chain did not start: {e}"));
            }
            rows
        }
    }
}

async fn timing_row(options: &Options, dir: &std::path::Path, lie: TimingLie) -> Row {
    let mut row = Row::new(
        "chain timing",
        format!("beacon reports {} = {}", lie.field, lie.told),
        format!(
            "`sszgate rpc --network mainnet`; /eth/v1/config/spec or /genesis with {} = {}",
            lie.field, lie.told
        ),
        String::new(),
    );
    let started = Instant::now();
    let seen = timing::run(&options.sszgate, &options.data, dir, lie).await;
    row.took_ms = started.elapsed().as_millis() as u64;
    match seen {
        TimingSeen::FlagMissing => {
            row.answered = "not run: flag missing (`sszgate rpc` has no --network)".into()
        }
        TimingSeen::NoReplay(e) => row.answered = format!("not run: the replay did not start: {e}"),
        TimingSeen::Served => {
            row.answered = "started and served".into();
            row.verdict = Verdict::AcceptedWrong;
            row.failures.push(format!(
                "started although the node's {} is not mainnet's",
                lie.field
            ));
        }
        TimingSeen::Refused { status, log } => {
            row.verdict = Verdict::Refused;
            row.answered = format!("ended at start ({status}): {log}");
            if log.contains(lie.field) {
                row.check = Some(lie.field.to_string());
            } else {
                row.failures
                    .push(format!("refused without naming {}", lie.field));
            }
        }
    }
    row
}

/// Starts the `sszgate rpc` the client rows attack: the remote mode, served at once,
/// against a prover that answers nothing (a replay of an empty directory), so the rows
/// measure the server itself and not a live chain's upstreams.
async fn client_rows(options: &Options, dir: &std::path::Path) -> (String, Vec<Row>) {
    let target = "`sszgate rpc --prover <a replay answering 404> --checkpoint <root>` (remote mode; verifying calls fail at the prover, so the batches measure the server, not upstream work)".to_string();
    let empty = dir.join("prover");
    let _ = std::fs::create_dir_all(&empty);
    let prover = match Replay::start_with(&empty, HashMap::new()).await {
        Ok(replay) => replay,
        Err(e) => {
            return (
                target,
                vec![Row::not_run(
                    "clients",
                    "every client row",
                    &format!("no prover replay: {e}"),
                )],
            );
        }
    };
    let args: Vec<String> = vec![
        "--prover".into(),
        prover.url(),
        "--checkpoint".into(),
        format!("0x{}", "22".repeat(32)),
        "--chain-id".into(),
        "1".into(),
        "--state".into(),
        dir.join("keys.bin").to_string_lossy().into_owned(),
    ];
    let log = dir.join("clients.log");
    let mut child = match RpcChild::start(&options.sszgate, &args, &log).await {
        Started::Serving(child) => child,
        Started::Ended(status, log) => {
            let why = format!("the target ended at start ({status}): {log}");
            let mut row = Row::not_run("clients", "every client row", &why);
            row.failures.push(why);
            return (target, vec![row]);
        }
    };
    let mut rows = Vec::new();
    for attack in ClientAttack::ALL {
        eprintln!(
            "sszgate bench attack --target rpc: clients: {}",
            attack.name()
        );
        rows.push(client_row(&mut child, attack, options.short).await);
    }
    (target, rows)
}

async fn client_row(child: &mut RpcChild, attack: ClientAttack, short: bool) -> Row {
    let addr = child.addr;
    let run = async move { (attack.run(addr, short).await, Some(Duration::ZERO)) };
    let mut row = measured_row(child, "clients", attack.name(), run).await;
    row.failures = judge_client(&row, attack.must_cut(), row.failures.clone());
    row
}

/// Runs `attack` against `child` (at most [`ATTACK_LIMIT`]) while its RSS is sampled, then
/// asks the normal call: the row, its failures holding only "another client went unserved"
/// when the attack says so (its second value: how long another client waited, `None`: not
/// served).
async fn measured_row(
    child: &mut RpcChild,
    group: &'static str,
    name: &str,
    attack: impl std::future::Future<Output = (Outcome, Option<Duration>)>,
) -> Row {
    let pid = child.pid();
    let rss_before = rss_kib(pid).1;
    let peak = RssPeak::start(pid, rss_before + RSS_CEILING_KIB);
    let started = Instant::now();
    let (outcome, other_client) = tokio::time::timeout(ATTACK_LIMIT, attack)
        .await
        .unwrap_or_else(|_| {
            let ran_past = format!("the attack ran past {ATTACK_LIMIT:?}");
            (Outcome::text("?".into(), ran_past), Some(Duration::ZERO))
        });
    let took = started.elapsed();
    let recovered = server::recovers(child.addr, RECOVERY).await;
    peak.settle(RSS_QUIET, Duration::from_secs(10)).await;
    let mut row = Row::new(group, name.into(), outcome.sent, outcome.answered);
    if peak.killed() {
        row.failures
            .push("killed by the campaign: RSS past before + 2 GiB".to_string());
    }
    if other_client.is_none() {
        row.failures
            .push("another client went unserved during the attack".to_string());
    }
    row.verdict = Verdict::Answered;
    row.rss_before_kib = rss_before;
    row.rss_peak_kib = peak.stop();
    row.rss_after_kib = rss_kib(pid).1;
    row.alive = Some(child.alive());
    row.recovered_ms = recovered.map(|d| d.as_millis() as u64);
    row.took_ms = took.as_millis() as u64;
    row.check = first_check(&row.answered);
    row
}

/// The check an answer's description names, if any.
fn first_check(answered: &str) -> Option<String> {
    let rest = answered.split("(check: ").nth(1)?;
    Some(rest.split(')').next()?.to_string())
}

/// The invariants a client row broke: `found` (what the run itself saw), a dead process, no
/// normal call after, RSS growth, a trickle never cut (when `must_cut`).
fn judge_client(row: &Row, must_cut: bool, found: Vec<String>) -> Vec<String> {
    let mut broken = found;
    if row.alive != Some(true) && !broken.iter().any(|b| b.starts_with("killed")) {
        broken.push("the process died".to_string());
    }
    if row.recovered_ms.is_none() {
        broken.push(format!("no normal call answered within {RECOVERY:?}"));
    }
    if row.rss_peak_kib > row.rss_before_kib + RSS_SLACK_KIB {
        let grew = (row.rss_peak_kib - row.rss_before_kib) >> 10;
        broken.push(format!("RSS grew {grew} MiB"));
    }
    if must_cut && row.answered.split("; ").any(|part| part.ends_with("open")) {
        broken.push("a trickling connection was still open when the attacker gave up: no header/body timeout".to_string());
    }
    broken
}

fn mib(kib: u64) -> String {
    format!("{:.0}", kib as f64 / 1024.0)
}

/// A table cell: pipes escaped, no line breaks, at most 300 characters.
fn cell(text: &str) -> String {
    let text = text.replace('|', "\\|").replace('\n', " ");
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
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

    /// Rows whose verdict is a wrong answer accepted.
    pub fn accepted_wrong(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::AcceptedWrong)
            .count()
    }

    /// The report as Markdown: one table row per attack, then the failures.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## sszgate bench attack --target rpc{}\n\nClient rows against {}. Invariants: no wrong answer accepted; alive; `eth_chainId` answered within {RECOVERY:?} after; peak RSS ≤ before + {} MiB; trickles cut by the server; a refused start names the field.\n\n",
            if self.short { " --short" } else { "" },
            self.client_target,
            RSS_SLACK_KIB >> 10
        );
        out.push_str("| # | group | attack | sent | answered | check | verdict | RSS MiB before / peak / after | normal call after | failures |\n");
        out.push_str("|---:|---|---|---|---|---|---|---|---|---|\n");
        for (i, row) in self.rows.iter().enumerate() {
            out.push_str(&row_markdown(i + 1, row));
        }
        let failed = self.failed();
        let not_run = self
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::NotRun)
            .count();
        out.push_str(&format!(
            "\n{} rows: {} broke an invariant, {} not run, {} wrong answers accepted.\n",
            self.rows.len(),
            failed.len(),
            not_run,
            self.accepted_wrong()
        ));
        out
    }
}

/// The row's failures, and the documented limit they fall under, if any.
fn failures_with_limit(row: &Row) -> String {
    let failures = row.failures.join("; ");
    match row.limit {
        Some(limit) => format!("{failures} — known limit: {limit}"),
        None => failures,
    }
}

fn row_markdown(number: usize, row: &Row) -> String {
    let rss = if row.rss_before_kib == 0 {
        "–".to_string()
    } else {
        format!(
            "{} / {} / {}",
            mib(row.rss_before_kib),
            mib(row.rss_peak_kib),
            mib(row.rss_after_kib)
        )
    };
    let recovered = match (row.alive, row.recovered_ms) {
        (None, _) => "–".to_string(),
        (Some(_), Some(ms)) => format!("answered in {ms} ms"),
        (Some(_), None) => "none within 1 s".to_string(),
    };
    let verdict = serde_json::to_value(row.verdict)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!(
        "| {number} | {} | {} | {} | {} | {} | {verdict} | {rss} | {recovered} | {} |\n",
        row.group,
        cell(&row.attack),
        cell(&row.sent),
        cell(&row.answered),
        row.check.as_deref().unwrap_or("–"),
        cell(&failures_with_limit(row))
    )
}
