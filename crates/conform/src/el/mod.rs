//! `sszgate conform el`: the checks of an execution client's REST-SSZ server, run in order —
//! the old `/engine/v2` paths, discovery (`GET /capabilities`, `/identity`), a real chain step
//! and the resources in every fork the server claims, `/blobs/vN` with the run's own blobs in
//! the pool, the traps implementers report, the fork header, the error contract and
//! authentication, the same calls over JSON-RPC, and the transports. Every answer a check
//! receives also goes through the header checks ([`Ctx::send`]), so a wrong `Content-Type` or
//! problem body is caught wherever it shows, and names the root cause that the failures it
//! leads to are grouped under.
//!
//! Not here: the check list and its sentences (`catalogue`), the verdicts (`report`), the CL
//! side (`cl`).

mod chain;
mod discovery;
mod errors;
mod pool;
mod resources;
mod transport;
mod traps;

pub use pool::{BLOBS_SENT, BlobSource};

use std::time::{Duration, Instant};

use serde_json::Value;
use sszgate_client::JwtSecret;
use sszgate_engine::{
    CapabilitiesDocument, Fork, Message, MethodSpec, Problem, Resource,
    method::{self, Route},
};

use crate::{
    catalogue::EL_CHECKS,
    exact,
    probe::{Answer, Call, Probe},
    report::{Report, Sheet},
};

/// What `conform el` is pointed at.
#[derive(Clone, Debug)]
pub struct ElConfig {
    /// The server's base URL (`http://127.0.0.1:8551`).
    pub engine: String,
    /// The JWT secret.
    pub secret: JwtSecret,
    /// The chain's fork; found by asking when `None`.
    pub fork: Option<Fork>,
    /// A JSON-RPC URL for `eth_getBlockByNumber` (the engine URL's `/` when `None`).
    pub eth_rpc: Option<String>,
    /// Time given the EL to build a payload.
    pub build_time: Duration,
    /// Where the run's blob transaction comes from (`blobs.pool` is not run without it).
    pub blob_source: Option<BlobSource>,
}

/// Runs every check against the server of `config`.
pub async fn run(config: &ElConfig) -> Report {
    let started = Instant::now();
    let mut ctx = match Probe::new(&config.engine, config.secret.clone()) {
        Ok(probe) => Ctx::new(probe, config),
        Err(e) => {
            let mut sheet = Sheet::new(&EL_CHECKS);
            sheet.note("cap.document", Err(e));
            return sheet.report("el", config.engine.clone(), started.elapsed());
        }
    };
    traps::old_paths(&mut ctx).await;
    discovery::run(&mut ctx).await;
    chain::run(&mut ctx).await;
    resources::run(&mut ctx).await;
    pool::run(&mut ctx).await;
    traps::fork_missing_on_gets(&mut ctx).await;
    traps::loose_accept(&mut ctx).await;
    errors::run(&mut ctx).await;
    transport::run(&mut ctx).await;
    ctx.sheet
        .report("el", config.engine.clone(), started.elapsed())
}

/// The state of a run: the probe, what the server claims, the chain as the run built it.
pub(crate) struct Ctx {
    pub(crate) probe: Probe,
    pub(crate) sheet: Sheet,
    pub(crate) config: ElConfig,
    /// The capabilities document, once read.
    pub(crate) caps: Option<CapabilitiesDocument>,
    /// The chain's fork.
    pub(crate) fork: Fork,
    /// The head after the chain step (hash, number, timestamp).
    pub(crate) head: Option<sszgate_drive::Head>,
    /// The payload id of the step's build.
    pub(crate) payload_id: Option<[u8; 8]>,
    /// Whether the engine URL answers JSON-RPC at `/`.
    pub(crate) json_rpc: bool,
    /// Whether the server answers the old `/engine/v2/...` paths.
    pub(crate) old_paths: bool,
}

impl Ctx {
    fn new(probe: Probe, config: &ElConfig) -> Ctx {
        Ctx {
            probe,
            sheet: Sheet::new(&EL_CHECKS),
            config: config.clone(),
            caps: None,
            fork: config.fork.unwrap_or(Fork::Osaka),
            head: None,
            payload_id: None,
            json_rpc: false,
            old_paths: false,
        }
    }

    /// The forks the server claims (the chain's fork alone without a document).
    pub(crate) fn forks(&self) -> Vec<Fork> {
        self.caps.as_ref().map_or_else(
            || vec![self.fork],
            |c| {
                c.supported_forks
                    .iter()
                    .filter_map(|f| f.parse().ok())
                    .collect()
            },
        )
    }

    /// The blob revisions the server claims.
    pub(crate) fn blob_revisions(&self) -> Vec<u8> {
        self.caps
            .as_ref()
            .and_then(|c| c.independently_versioned.get("blobs"))
            .map(|v| {
                v.iter()
                    .filter_map(|r| r.strip_prefix('v')?.parse().ok())
                    .filter(|r| (1..=4).contains(r))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Sends `call` and runs the header checks on its answer; failures noted until the next
    /// call are put down to the answer's root cause, if it shows one.
    pub(crate) async fn send(&mut self, call: &Call) -> Result<Answer, String> {
        match self.probe.send(call).await {
            Ok(answer) => {
                let cause = self.root_cause(call, &answer);
                self.sheet.blame(cause);
                self.observe(call, &answer);
                Ok(answer)
            }
            Err(e) => {
                self.sheet.blame(Some(NO_ANSWER.into()));
                Err(e)
            }
        }
    }

    /// What an answer shows that would make several checks fail for one reason: errors not
    /// served as problem documents, a fresh token refused, the spec's paths missing where
    /// the old ones are served.
    fn root_cause(&self, call: &Call, answer: &Answer) -> Option<String> {
        let content_type = answer.header("content-type");
        if answer.status >= 400 && !content_type.starts_with(method::PROBLEM_CONTENT_TYPE) {
            let media = content_type.split(';').next().unwrap_or("").trim();
            let media = if media.is_empty() {
                "no content-type"
            } else {
                media
            };
            return Some(format!(
                "errors are served as {media}, not {}",
                method::PROBLEM_CONTENT_TYPE
            ));
        }
        if answer.status >= 400 && problem_shape(answer).is_err() {
            return Some(
                "error bodies are not problem documents with a type under /engine-api/errors/"
                    .into(),
            );
        }
        if answer.status == 401 && call.auth == crate::probe::Auth::Good {
            return Some("the server refuses a fresh token signed with the shared secret".into());
        }
        let spec_path = call.target.starts_with(method::REST_BASE);
        if answer.status == 404 && self.old_paths && spec_path {
            return Some(traps::OLD_PATHS.into());
        }
        None
    }

    /// The REST call of `m` under `fork` with `message`.
    pub(crate) fn rest(
        &self,
        m: &'static MethodSpec,
        fork: Fork,
        message: &Message,
    ) -> Result<Call, String> {
        self.probe.rest(m, fork, message)
    }

    /// Sends `m`'s `message` under `fork`, expects a `200` and decodes the answer exactly.
    pub(crate) async fn typed(
        &mut self,
        m: &'static MethodSpec,
        fork: Fork,
        message: &Message,
    ) -> Result<(Answer, Message), String> {
        let call = self.rest(m, fork, message)?;
        let answer = self.send(&call).await?;
        if answer.status != 200 {
            return Err(format!(
                "{} under {fork}: {}",
                call.line(),
                answer.describe()
            ));
        }
        let decoded = exact::exact(m, m.response, fork, &answer.body)
            .map_err(|e| format!("{} under {fork}: {e}", call.line()))?;
        Ok((answer, decoded))
    }

    /// The same call over JSON-RPC at the engine URL's `/`: the typed answer.
    pub(crate) async fn over_json(
        &mut self,
        m: &'static MethodSpec,
        fork: Fork,
        message: &Message,
    ) -> Result<Message, String> {
        let params = message.to_json_params().map_err(|e| e.to_string())?;
        let params: Value = serde_json::from_slice(&params).map_err(|e| e.to_string())?;
        let result = self.probe.json_rpc(None, m.name, &params).await?;
        Message::from_json(m, fork, m.response, result.to_string().as_bytes())
            .map_err(|e| format!("{}: {e}", m.name))
    }

    /// [`Ctx::typed`] for an answer of one kind (`pick` returns it): the failure, or an
    /// answer of another kind, is noted against check `id`.
    pub(crate) async fn typed_as<T>(
        &mut self,
        id: &'static str,
        (m, fork, message): (&'static MethodSpec, Fork, &Message),
        pick: impl FnOnce(Message) -> Option<T>,
    ) -> Option<T> {
        let failure = match self.typed(m, fork, message).await {
            Ok((_, answer)) => {
                let kind = answer.kind();
                match pick(answer) {
                    Some(value) => return Some(value),
                    None => format!("a {kind:?} answer where {:?} was expected", m.response),
                }
            }
            Err(e) => e,
        };
        self.sheet.note(id, Err(failure));
        None
    }

    /// The same call over JSON-RPC, when the server speaks it (`None` otherwise).
    pub(crate) async fn json_twin(
        &mut self,
        m: &'static MethodSpec,
        fork: Fork,
        message: &Message,
    ) -> Option<Result<Message, String>> {
        if !self.json_rpc {
            return None;
        }
        Some(self.over_json(m, fork, message).await)
    }

    /// The header checks on one answer: the success `Content-Type` of hot-path resources,
    /// `Cache-Control: no-store` on payload retrieval, problem+json on errors.
    fn observe(&mut self, call: &Call, answer: &Answer) {
        let route = Route::parse(call.method.as_str(), &call.target).ok();
        let hot = route.as_ref().is_some_and(|r| !r.resource.is_json());
        let line = call.line();
        if answer.status == 200 && hot {
            let content_type = answer.header("content-type");
            let ok = content_type.starts_with(method::SSZ_CONTENT_TYPE);
            self.sheet.note(
                "header.content-type",
                verdict(ok, || format!("{line}: content-type {content_type:?}")),
            );
        }
        if answer.status == 200
            && route
                .as_ref()
                .is_some_and(|r| r.resource == Resource::GetPayload)
        {
            let cache = answer.header("cache-control");
            let ok = cache
                .split(',')
                .any(|d| d.trim().eq_ignore_ascii_case("no-store"));
            self.sheet.note(
                "header.no-store",
                verdict(ok, || format!("{line}: cache-control {cache:?}")),
            );
        }
        if answer.status >= 400 {
            let shape = problem_shape(answer).map(|_| format!("{line}: {}", answer.describe()));
            self.sheet
                .note("header.problem", shape.map_err(|e| format!("{line}: {e}")));
        }
    }
}

/// The root cause of failures on calls that got no HTTP answer.
const NO_ANSWER: &str = "the server gave no HTTP answer (refused, reset or timed out)";

/// `Ok(evidence)` when `ok`, else `Err` of the evidence.
pub(crate) fn verdict(ok: bool, evidence: impl FnOnce() -> String) -> Result<String, String> {
    if ok { Ok(evidence()) } else { Err(evidence()) }
}

/// The problem type of an error answer, after checking its media type and body.
pub(crate) fn problem_shape(answer: &Answer) -> Result<String, String> {
    let content_type = answer.header("content-type");
    if !content_type.starts_with(method::PROBLEM_CONTENT_TYPE) {
        return Err(format!(
            "HTTP {} with content-type {content_type:?}",
            answer.status
        ));
    }
    let body: Value = serde_json::from_slice(&answer.body)
        .map_err(|_| format!("HTTP {}: the problem body is not JSON", answer.status))?;
    match body["type"].as_str() {
        Some(t) if t.starts_with("/engine-api/errors/") => Ok(t.to_string()),
        other => Err(format!(
            "HTTP {}: problem type {other:?} is not under /engine-api/errors/",
            answer.status
        )),
    }
}

/// The `type` of a JSON error body, whatever its media type (which `header.problem` judges).
pub(crate) fn problem_type(answer: &Answer) -> Option<String> {
    let body: Value = serde_json::from_slice(&answer.body).ok()?;
    body["type"].as_str().map(str::to_string)
}

/// Whether `answer` is `problem` with one of `statuses` (its own status when empty).
pub(crate) fn expect_problem(
    answer: &Answer,
    statuses: &[u16],
    problem: Problem,
) -> Result<String, String> {
    let wanted = if statuses.is_empty() {
        vec![problem.http_status()]
    } else {
        statuses.to_vec()
    };
    let kind = problem_type(answer);
    let ok = wanted.contains(&answer.status) && kind.as_deref() == Some(problem.type_uri());
    verdict(ok, || answer.describe())
}

/// The outcome of one probe call, judged by `judge`.
pub(crate) fn judged(
    sent: Result<Answer, String>,
    judge: impl FnOnce(&Answer) -> Result<String, String>,
) -> Result<String, String> {
    sent.and_then(|a| judge(&a))
}
