//! Verdicts and the report: a [`Sheet`] collects what each check saw while a run goes on (the
//! first failure of a check wins and is kept as its evidence, with its root cause when one is
//! known), and becomes a [`Report`] in the catalogue's order — every check's own verdict, and
//! the failures grouped by root cause — rendered as a Markdown table or as JSON.
//!
//! Not here: what the checks are (`catalogue`) or how they are run (`el`, `cl`).

use std::{collections::HashMap, time::Duration};

use serde::Serialize;

use crate::catalogue::Check;

/// What a check came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Everything the check looked at kept the rule.
    Pass,
    /// Something broke the rule; the evidence says what.
    Fail,
    /// Nothing the check applies to was seen (the evidence says why).
    Skip,
}

impl Verdict {
    /// The verdict's word in reports.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "skip",
        }
    }
}

/// One check's verdict and evidence.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// The check's id.
    pub id: &'static str,
    /// Its area.
    pub area: &'static str,
    /// The spec's sentence.
    pub rule: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// What was seen: status, headers, the first differing byte and its field path.
    pub evidence: String,
    /// The root cause of a failure, when it is one that several checks share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// The failures of one root cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CauseGroup {
    /// The root cause, in words.
    pub cause: String,
    /// The failed checks it explains, in the catalogue's order.
    pub checks: Vec<&'static str>,
}

/// The outcome of a whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// `el` or `cl`.
    pub side: &'static str,
    /// What was checked (a URL, or the listen address).
    pub target: String,
    /// Wall time of the run, in seconds.
    pub seconds: f64,
    /// Every check, in the catalogue's order.
    pub outcomes: Vec<Outcome>,
    /// The failures of a known root cause grouped by it, in the order of their first check
    /// (a failure of no known cause is in no group).
    pub causes: Vec<CauseGroup>,
}

impl Report {
    /// The outcome of check `id`.
    pub fn outcome(&self, id: &str) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| o.id == id)
    }

    /// The ids of the checks with `verdict`.
    pub fn with(&self, verdict: Verdict) -> Vec<&'static str> {
        self.outcomes
            .iter()
            .filter(|o| o.verdict == verdict)
            .map(|o| o.id)
            .collect()
    }

    /// True when no check failed.
    pub fn passed(&self) -> bool {
        self.with(Verdict::Fail).is_empty()
    }

    /// The report as a Markdown table with a summary line.
    pub fn to_table(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let mut out = format!(
            "# sszgate conform {} — {}\n\n{} checks: {} pass, {} fail, {} skip, in {:.1} s\n\n",
            self.side,
            self.target,
            self.outcomes.len(),
            self.with(Verdict::Pass).len(),
            self.with(Verdict::Fail).len(),
            self.with(Verdict::Skip).len(),
            self.seconds
        );
        out.push_str(&self.causes_list());
        out.push_str(
            "| check | rule (engine-rest-ssz.md) | verdict | evidence |\n|---|---|---|---|\n",
        );
        for o in &self.outcomes {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                o.id,
                cell(o.rule),
                o.verdict.name(),
                cell(&o.evidence)
            ));
        }
        out
    }

    /// The failures by root cause, one line each, and those of their own on a last line.
    fn causes_list(&self) -> String {
        let ticked = |ids: &[&str]| {
            let ids: Vec<String> = ids.iter().map(|c| format!("`{c}`")).collect();
            ids.join(", ")
        };
        let mut out = String::new();
        for group in &self.causes {
            out.push_str(&format!(
                "- root cause: {} — {} check(s) failed: {}\n",
                group.cause,
                group.checks.len(),
                ticked(&group.checks)
            ));
        }
        let alone: Vec<&str> = self
            .outcomes
            .iter()
            .filter(|o| o.verdict == Verdict::Fail && o.cause.is_none())
            .map(|o| o.id)
            .collect();
        if !alone.is_empty() && !self.causes.is_empty() {
            out.push_str(&format!("- each its own cause: {}\n", ticked(&alone)));
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes")
    }
}

/// The failures of `outcomes` grouped by root cause.
fn group_causes(outcomes: &[Outcome]) -> Vec<CauseGroup> {
    let mut groups: Vec<CauseGroup> = Vec::new();
    for o in outcomes.iter().filter(|o| o.verdict == Verdict::Fail) {
        let Some(cause) = o.cause.clone() else {
            continue;
        };
        match groups.iter_mut().find(|g| g.cause == cause) {
            Some(group) => group.checks.push(o.id),
            None => groups.push(CauseGroup {
                cause,
                checks: vec![o.id],
            }),
        }
    }
    groups
}

/// One check's state on a sheet: verdict, evidence, root cause.
type Seen = (Verdict, String, Option<String>);

/// What the checks of a run have seen so far.
pub struct Sheet {
    checks: &'static [Check],
    seen: HashMap<&'static str, Seen>,
    /// The root cause a failure noted now is put down to (set from the answer last seen).
    cause: Option<String>,
}

impl Sheet {
    /// An empty sheet for `checks`.
    pub fn new(checks: &'static [Check]) -> Sheet {
        Sheet {
            checks,
            seen: HashMap::new(),
            cause: None,
        }
    }

    /// Sets the root cause that failures noted from now on are put down to (`None`: each
    /// failure stands for itself). The one who reads answers sets it from each answer.
    pub fn blame(&mut self, cause: Option<String>) {
        self.cause = cause;
    }

    /// Notes one observation of check `id`: `Ok(evidence)` kept the rule, `Err(evidence)`
    /// broke it. A failure is never overwritten; a pass replaces a skip.
    pub fn note(&mut self, id: &'static str, result: Result<String, String>) {
        debug_assert!(self.checks.iter().any(|c| c.id == id), "unknown check {id}");
        let (verdict, evidence, cause) = match result {
            Ok(e) => (Verdict::Pass, e, None),
            Err(e) => (Verdict::Fail, e, self.cause.clone()),
        };
        match self.seen.get(id) {
            Some((Verdict::Fail, ..)) => {}
            Some((Verdict::Pass, ..)) if verdict == Verdict::Pass => {}
            _ => {
                self.seen.insert(id, (verdict, evidence, cause));
            }
        }
    }

    /// Notes that check `id` could not run, and why (kept only if nothing else was noted).
    pub fn skip(&mut self, id: &'static str, why: impl Into<String>) {
        self.seen
            .entry(id)
            .or_insert((Verdict::Skip, why.into(), None));
    }

    /// The report: every check of the catalogue, those never noted skipped.
    pub fn report(self, side: &'static str, target: String, elapsed: Duration) -> Report {
        let outcomes: Vec<Outcome> = self
            .checks
            .iter()
            .map(|c| {
                let (verdict, evidence, cause) =
                    self.seen
                        .get(c.id)
                        .cloned()
                        .unwrap_or((Verdict::Skip, "not run".into(), None));
                Outcome {
                    id: c.id,
                    area: c.area.name(),
                    rule: c.rule,
                    verdict,
                    evidence,
                    cause,
                }
            })
            .collect();
        Report {
            side,
            target,
            seconds: elapsed.as_secs_f64(),
            causes: group_causes(&outcomes),
            outcomes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::EL_CHECKS;

    #[test]
    fn the_first_failure_wins_and_unnoted_checks_skip() {
        let mut sheet = Sheet::new(&EL_CHECKS);
        sheet.note("cap.document", Ok("200".into()));
        sheet.note("cap.limits", Err("first".into()));
        sheet.note("cap.limits", Err("second".into()));
        sheet.note("cap.limits", Ok("later".into()));
        sheet.skip("cap.document", "ignored: already passed");
        let report = sheet.report("el", "x".into(), Duration::from_secs(1));
        assert_eq!(
            report.outcome("cap.document").unwrap().verdict,
            Verdict::Pass
        );
        let limits = report.outcome("cap.limits").unwrap();
        assert_eq!(
            (limits.verdict, limits.evidence.as_str()),
            (Verdict::Fail, "first")
        );
        assert_eq!(
            report.outcome("route.unknown").unwrap().verdict,
            Verdict::Skip
        );
        assert!(!report.passed());
        assert!(report.to_table().contains("| `cap.limits` |"));
        assert!(report.to_json().contains("\"verdict\": \"fail\""));
    }

    /// One cause behind several failures is listed once, naming each check, and every check
    /// keeps its own verdict and evidence; a failure of no shared cause stands alone.
    #[test]
    fn failures_are_grouped_by_root_cause() {
        let mut sheet = Sheet::new(&EL_CHECKS);
        sheet.blame(Some("errors served as text/plain".into()));
        sheet.note("fork.missing", Err("HTTP 400, text/plain".into()));
        sheet.note("ssz.truncated", Err("HTTP 400, text/plain (cut)".into()));
        sheet.note("cap.document", Ok("passes carry no cause".into()));
        sheet.blame(None);
        sheet.note("cap.limits", Err("limits.bodies.max_count is 64".into()));
        sheet.blame(Some("errors served as text/plain".into()));
        sheet.note("route.unknown", Err("HTTP 404, text/plain".into()));
        let report = sheet.report("el", "x".into(), Duration::from_secs(1));
        assert_eq!(
            report.causes,
            [CauseGroup {
                cause: "errors served as text/plain".into(),
                checks: vec!["fork.missing", "ssz.truncated", "route.unknown"],
            }]
        );
        let truncated = report.outcome("ssz.truncated").unwrap();
        assert_eq!(truncated.verdict, Verdict::Fail);
        assert_eq!(truncated.evidence, "HTTP 400, text/plain (cut)");
        assert_eq!(report.outcome("cap.document").unwrap().cause, None);
        let table = report.to_table();
        assert_eq!(
            table.matches("errors served as text/plain").count(),
            1,
            "{table}"
        );
        assert!(
            table.contains("3 check(s) failed: `fork.missing`, `ssz.truncated`, `route.unknown`"),
            "{table}"
        );
        assert!(
            table.contains("- each its own cause: `cap.limits`"),
            "{table}"
        );
        assert!(report.to_json().contains("\"causes\""));
    }
}
