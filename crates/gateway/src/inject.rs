//! The control point: flow control and fault injection for client testing. Forwarding can be
//! paused (held calls wait, or are answered `503`) and resumed; rules change the calls of a
//! method as they pass — delay them, answer for the EL (a JSON-RPC error, an HTTP status, a
//! `SYNCING`/`ACCEPTED` payload status), drop the connection, or corrupt a field of the EL's
//! answer — every Nth call, until a count or a time runs out.
//!
//! This module holds the rules and decides, per call, what happens ([`ControlPoint::decide`]);
//! the relay applies the decision (`proxy`), the control address edits the rules (`control`).
//! Every injected call is recorded with the rule that changed it and counted in the metrics.

use std::{
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize};
use sszgate_engine::method;

/// The longest delay a rule may ask: past it, a CL has long given up.
const MAX_DELAY: Duration = Duration::from_secs(600);

/// Rules kept at most (a test harness adds a handful).
const MAX_RULES: usize = 256;

/// What a rule does to the calls it matches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Relay the call `ms` milliseconds late.
    Delay {
        /// Milliseconds.
        ms: u64,
    },
    /// Answer with this JSON-RPC error (problem+json with its mapped type for REST-SSZ).
    RpcError {
        /// The JSON-RPC error code.
        code: i64,
        /// The message.
        message: String,
    },
    /// Answer with this HTTP status and an empty body.
    HttpStatus {
        /// The status, 100–599.
        status: u16,
    },
    /// Answer a newPayload or forkchoiceUpdated with this payload status (`SYNCING` or
    /// `ACCEPTED`), without asking the EL.
    PayloadStatus {
        /// `SYNCING` or `ACCEPTED`.
        status: String,
    },
    /// Close the connection without an answer.
    Drop,
    /// Relay, then set the field at `pointer` (a JSON pointer into the JSON-RPC `result`, e.g.
    /// `/payloadStatus/status`) of the EL's answer to `value`.
    Corrupt {
        /// JSON pointer into `result`.
        pointer: String,
        /// The value put there.
        value: serde_json::Value,
    },
}

impl Action {
    /// The action's name, for metrics and records.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Delay { .. } => "delay",
            Action::RpcError { .. } => "rpc_error",
            Action::HttpStatus { .. } => "http_status",
            Action::PayloadStatus { .. } => "payload_status",
            Action::Drop => "drop",
            Action::Corrupt { .. } => "corrupt",
        }
    }

    /// A short description, for records: `delay 500 ms`.
    pub fn describe(&self) -> String {
        match self {
            Action::Delay { ms } => format!("delay {ms} ms"),
            Action::RpcError { code, message } => format!("rpc error {code} {message:?}"),
            Action::HttpStatus { status } => format!("http status {status}"),
            Action::PayloadStatus { status } => format!("payload status {status}"),
            Action::Drop => "drop the connection".into(),
            Action::Corrupt { pointer, value } => format!("corrupt {pointer} = {value}"),
        }
    }
}

/// A rule as a client writes it (`POST /_sszgate/rules`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// The method it applies to: a JSON-RPC name (`engine_getPayloadV4`), a family prefix
    /// ending in `*` (`engine_newPayload*`), or absent for every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// What it does.
    pub action: Action,
    /// Every Nth matching call (1, the default: each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u64>,
    /// Ends after injecting this many times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Ends this many seconds after it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u64>,
}

/// A rule in force, as listed (`GET /_sszgate/rules`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RuleView {
    /// Its id (for `DELETE /_sszgate/rules/{id}`).
    pub id: u64,
    /// What it was given.
    #[serde(flatten)]
    pub spec: RuleSpec,
    /// Matching calls seen.
    pub matched: u64,
    /// Calls it changed.
    pub injected: u64,
}

/// Held calls, while forwarding is paused: wait for a resume, or get a `503` at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseMode {
    /// Held until forwarding resumes.
    Hold,
    /// Answered `503 Service Unavailable`.
    Reject,
}

/// What happens to one call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Injection {
    /// The rule that decided it.
    pub(crate) rule: u64,
    /// What to do.
    pub(crate) action: Action,
}

impl Injection {
    /// The record's note: `rule 3: delay 500 ms`.
    pub(crate) fn note(&self) -> String {
        format!("rule {}: {}", self.rule, self.action.describe())
    }
}

struct Rule {
    view: RuleView,
    until: Option<Instant>,
}

/// The rules and the pause state of one proxy.
pub struct ControlPoint {
    rules: Mutex<Vec<Rule>>,
    next_id: AtomicU64,
    paused: tokio::sync::watch::Sender<Option<PauseMode>>,
    holding: AtomicU64,
    /// Rules in the list (ended ones included until the list is next pruned).
    in_force: AtomicU64,
}

impl Default for ControlPoint {
    fn default() -> ControlPoint {
        ControlPoint {
            rules: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            paused: tokio::sync::watch::Sender::new(None),
            holding: AtomicU64::new(0),
            in_force: AtomicU64::new(0),
        }
    }
}

impl ControlPoint {
    /// Adds a rule; its id, or why it is refused.
    pub fn add(&self, spec: RuleSpec) -> Result<u64, String> {
        check(&spec)?;
        let mut rules = self.rules.lock().expect("rules lock");
        rules.retain(|r| !r.ended(Instant::now()));
        if rules.len() >= MAX_RULES {
            return Err(format!("{MAX_RULES} rules in force already"));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let until = spec
            .seconds
            .map(|s| Instant::now() + Duration::from_secs(s));
        rules.push(Rule {
            view: RuleView {
                id,
                spec,
                matched: 0,
                injected: 0,
            },
            until,
        });
        self.in_force.store(rules.len() as u64, Ordering::Relaxed);
        Ok(id)
    }

    /// Removes rule `id`; false when there is none.
    pub fn remove(&self, id: u64) -> bool {
        let mut rules = self.rules.lock().expect("rules lock");
        let before = rules.len();
        rules.retain(|r| r.view.id != id);
        self.in_force.store(rules.len() as u64, Ordering::Relaxed);
        rules.len() != before
    }

    /// Removes every rule; how many there were.
    pub fn clear(&self) -> usize {
        let mut rules = self.rules.lock().expect("rules lock");
        self.in_force.store(0, Ordering::Relaxed);
        std::mem::take(&mut *rules).len()
    }

    /// The rules in force, oldest first.
    pub fn list(&self) -> Vec<RuleView> {
        let mut rules = self.rules.lock().expect("rules lock");
        rules.retain(|r| !r.ended(Instant::now()));
        rules.iter().map(|r| r.view.clone()).collect()
    }

    /// Pauses forwarding: calls arriving from now on are held or refused per `mode`.
    pub fn pause(&self, mode: PauseMode) {
        self.paused.send_replace(Some(mode));
    }

    /// Resumes forwarding: held calls go on.
    pub fn resume(&self) {
        self.paused.send_replace(None);
    }

    /// True when nothing is paused and no rule is in force: the relay's calls go straight on
    /// (two atomic reads, no lock, no allocation).
    pub(crate) fn idle(&self) -> bool {
        self.in_force.load(Ordering::Relaxed) == 0 && self.paused.borrow().is_none()
    }

    /// The pause in force, if any.
    pub fn paused(&self) -> Option<PauseMode> {
        *self.paused.borrow()
    }

    /// Waits while forwarding is paused in `Hold` mode; `Err` when paused in `Reject` mode.
    /// True when the call was held.
    pub(crate) async fn pass(&self) -> Result<bool, ()> {
        // The common case, not paused, reads the state without subscribing.
        if self.paused.borrow().is_none() {
            return Ok(false);
        }
        let mut paused = self.paused.subscribe();
        let mut held = None;
        loop {
            match *paused.borrow_and_update() {
                None => return Ok(held.is_some()),
                Some(PauseMode::Reject) => return Err(()),
                Some(PauseMode::Hold) if held.is_none() => held = Some(Holding::new(&self.holding)),
                Some(PauseMode::Hold) => {}
            }
            if paused.changed().await.is_err() {
                return Ok(held.is_some());
            }
        }
    }

    /// Calls held now by a pause.
    pub fn holding(&self) -> u64 {
        self.holding.load(Ordering::Relaxed)
    }

    /// What happens to a call of `method` (`None`: a call naming none, e.g. a batch): the
    /// first rule in force that matches and whose turn it is, counted as it decides.
    pub(crate) fn decide(&self, method: Option<&str>) -> Option<Injection> {
        // The common case, no rule, takes no lock: the relay's calls never contend here.
        if self.in_force.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut rules = self.rules.lock().expect("rules lock");
        let decided = Self::first_turn(&mut rules, method);
        self.in_force.store(rules.len() as u64, Ordering::Relaxed);
        decided
    }

    /// The first rule in force matching `method` whose turn it is, counted.
    fn first_turn(rules: &mut Vec<Rule>, method: Option<&str>) -> Option<Injection> {
        let now = Instant::now();
        rules.retain(|r| !r.ended(now));
        for rule in rules.iter_mut() {
            if !matches(rule.view.spec.method.as_deref(), method) {
                continue;
            }
            rule.view.matched += 1;
            let every = rule.view.spec.every.unwrap_or(1).max(1);
            if rule.view.matched % every != 0 {
                continue;
            }
            rule.view.injected += 1;
            return Some(Injection {
                rule: rule.view.id,
                action: rule.view.spec.action.clone(),
            });
        }
        None
    }
}

/// One held call, counted while it waits (also when its caller goes away).
struct Holding<'a>(&'a AtomicU64);

impl<'a> Holding<'a> {
    fn new(count: &'a AtomicU64) -> Holding<'a> {
        count.fetch_add(1, Ordering::Relaxed);
        Holding(count)
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Rule {
    fn ended(&self, now: Instant) -> bool {
        self.until.is_some_and(|until| now >= until)
            || self
                .view
                .spec
                .count
                .is_some_and(|count| self.view.injected >= count)
    }
}

/// True when a rule's `pattern` covers a call of `method`.
fn matches(pattern: Option<&str>, method: Option<&str>) -> bool {
    match (pattern, method) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(p), Some(m)) => match p.strip_suffix('*') {
            Some(prefix) => m.starts_with(prefix),
            None => p == m,
        },
    }
}

/// Why a rule cannot work, if it cannot.
fn check(spec: &RuleSpec) -> Result<(), String> {
    if let Some(m) = &spec.method {
        let prefix = m.strip_suffix('*').unwrap_or(m);
        if !method::METHODS
            .iter()
            .any(|row| row.name.starts_with(prefix))
            || prefix.is_empty()
        {
            return Err(format!(
                "no Engine API method is {m:?} (see `sszgate methods`)"
            ));
        }
    }
    if spec.every == Some(0) || spec.count == Some(0) {
        return Err("every and count start at 1".into());
    }
    match &spec.action {
        Action::Delay { ms } if Duration::from_millis(*ms) > MAX_DELAY => Err(format!(
            "a delay of {ms} ms is over the {MAX_DELAY:?} a rule may ask"
        )),
        Action::HttpStatus { status } if !(100..=599).contains(status) => {
            Err(format!("HTTP status {status} is not 100–599"))
        }
        Action::PayloadStatus { status } if !matches!(status.as_str(), "SYNCING" | "ACCEPTED") => {
            Err(format!("payload status {status:?}: SYNCING or ACCEPTED"))
        }
        Action::PayloadStatus { .. }
            if !spec.method.as_deref().is_some_and(|m| {
                m.starts_with("engine_newPayload") || m.starts_with("engine_forkchoiceUpdated")
            }) =>
        {
            Err(
                "a payload status answers newPayload or forkchoiceUpdated: name one as the method"
                    .into(),
            )
        }
        Action::Corrupt { pointer, .. } if !pointer.starts_with('/') => {
            Err(format!("pointer {pointer:?}: a JSON pointer starts with /"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(method: Option<&str>, action: Action) -> RuleSpec {
        RuleSpec {
            method: method.map(str::to_string),
            action,
            every: None,
            count: None,
            seconds: None,
        }
    }

    #[test]
    fn rules_match_by_name_or_family_and_take_turns() {
        let control = ControlPoint::default();
        let every_third = RuleSpec {
            every: Some(3),
            ..rule(Some("engine_newPayload*"), Action::Drop)
        };
        let id = control.add(every_third).unwrap();
        let newpayload = Some("engine_newPayloadV4");
        let decided: Vec<bool> = (0..6)
            .map(|_| control.decide(newpayload).is_some())
            .collect();
        assert_eq!(decided, [false, false, true, false, false, true]);
        assert_eq!(control.decide(Some("engine_getPayloadV4")), None);
        assert_eq!(control.decide(None), None);
        let view = &control.list()[0];
        assert_eq!((view.id, view.matched, view.injected), (id, 6, 2));
        assert!(control.remove(id));
        assert!(!control.remove(id));
        assert_eq!(control.decide(newpayload), None);
    }

    #[test]
    fn a_rule_ends_after_its_count() {
        let control = ControlPoint::default();
        let twice = RuleSpec {
            count: Some(2),
            ..rule(None, Action::Delay { ms: 5 })
        };
        control.add(twice).unwrap();
        let n = (0..5)
            .filter(|_| control.decide(Some("engine_getPayloadV4")).is_some())
            .count();
        assert_eq!(n, 2);
        assert!(control.list().is_empty(), "an ended rule is not listed");
    }

    #[test]
    fn a_rule_ends_after_its_time() {
        let control = ControlPoint::default();
        let id = control.add(rule(None, Action::Drop)).unwrap();
        // A rule whose time is up, set directly rather than waited for.
        control.rules.lock().unwrap()[0].until = Some(Instant::now());
        assert_eq!(control.decide(Some("engine_getPayloadV4")), None);
        assert!(!control.remove(id));
    }

    #[test]
    fn rules_that_cannot_work_are_refused_with_why() {
        let control = ControlPoint::default();
        let refused = |spec: RuleSpec| control.add(spec).unwrap_err();
        assert!(refused(rule(Some("engine_nope"), Action::Drop)).contains("no Engine API method"));
        assert!(refused(rule(None, Action::Delay { ms: 700_000 })).contains("over"));
        assert!(refused(rule(None, Action::HttpStatus { status: 700 })).contains("100–599"));
        let syncing = Action::PayloadStatus {
            status: "SYNCING".into(),
        };
        assert!(refused(rule(None, syncing.clone())).contains("name one"));
        assert!(
            control
                .add(rule(Some("engine_newPayloadV4"), syncing))
                .is_ok()
        );
        let invalid = Action::PayloadStatus {
            status: "INVALID".into(),
        };
        assert!(
            refused(rule(Some("engine_newPayloadV4"), invalid)).contains("SYNCING or ACCEPTED")
        );
        let corrupt = Action::Corrupt {
            pointer: "status".into(),
            value: serde_json::json!(1),
        };
        assert!(refused(rule(None, corrupt)).contains("JSON pointer"));
        assert!(
            refused(RuleSpec {
                every: Some(0),
                ..rule(None, Action::Drop)
            })
            .contains("start at 1")
        );
    }

    #[test]
    fn rules_read_from_json() {
        let spec: RuleSpec = serde_json::from_str(
            r#"{"method":"engine_getPayloadV4","action":{"kind":"rpc_error","code":-38001,"message":"Unknown payload"},"count":1}"#,
        )
        .unwrap();
        assert_eq!(spec.count, Some(1));
        assert_eq!(spec.action.name(), "rpc_error");
        assert!(serde_json::from_str::<RuleSpec>(r#"{"action":{"kind":"explode"}}"#).is_err());
        assert!(
            serde_json::from_str::<RuleSpec>(r#"{"action":{"kind":"drop"},"typo":1}"#).is_err()
        );
    }

    #[tokio::test]
    async fn a_paused_call_waits_for_the_resume_or_is_refused() {
        let control = std::sync::Arc::new(ControlPoint::default());
        assert_eq!(control.pass().await, Ok(false));
        control.pause(PauseMode::Reject);
        assert_eq!(control.pass().await, Err(()));
        control.pause(PauseMode::Hold);
        let waiting = tokio::spawn({
            let control = control.clone();
            async move { control.pass().await }
        });
        while control.holding() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        control.resume();
        assert_eq!(waiting.await.unwrap(), Ok(true));
        assert_eq!(control.holding(), 0);
    }
}
