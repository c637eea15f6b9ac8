//! Verdicts and the report: a [`Sheet`] collects what each check saw while a run goes on (the
//! first failure of a check wins and is kept as its evidence), and becomes a [`Report`] in the
//! catalogue's order, rendered as a Markdown table or as JSON.
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

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes")
    }
}

/// What the checks of a run have seen so far.
pub struct Sheet {
    checks: &'static [Check],
    seen: HashMap<&'static str, (Verdict, String)>,
}

impl Sheet {
    /// An empty sheet for `checks`.
    pub fn new(checks: &'static [Check]) -> Sheet {
        Sheet {
            checks,
            seen: HashMap::new(),
        }
    }

    /// Notes one observation of check `id`: `Ok(evidence)` kept the rule, `Err(evidence)`
    /// broke it. A failure is never overwritten; a pass replaces a skip.
    pub fn note(&mut self, id: &'static str, result: Result<String, String>) {
        debug_assert!(self.checks.iter().any(|c| c.id == id), "unknown check {id}");
        let (verdict, evidence) = match result {
            Ok(e) => (Verdict::Pass, e),
            Err(e) => (Verdict::Fail, e),
        };
        match self.seen.get(id) {
            Some((Verdict::Fail, _)) => {}
            Some((Verdict::Pass, _)) if verdict == Verdict::Pass => {}
            _ => {
                self.seen.insert(id, (verdict, evidence));
            }
        }
    }

    /// Notes that check `id` could not run, and why (kept only if nothing else was noted).
    pub fn skip(&mut self, id: &'static str, why: impl Into<String>) {
        self.seen.entry(id).or_insert((Verdict::Skip, why.into()));
    }

    /// The report: every check of the catalogue, those never noted skipped.
    pub fn report(self, side: &'static str, target: String, elapsed: Duration) -> Report {
        let outcomes = self
            .checks
            .iter()
            .map(|c| {
                let (verdict, evidence) = self
                    .seen
                    .get(c.id)
                    .cloned()
                    .unwrap_or((Verdict::Skip, "not run".into()));
                Outcome {
                    id: c.id,
                    area: c.area.name(),
                    rule: c.rule,
                    verdict,
                    evidence,
                }
            })
            .collect();
        Report {
            side,
            target,
            seconds: elapsed.as_secs_f64(),
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
}
