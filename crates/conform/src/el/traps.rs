//! The traps implementers report: the old `/engine/v2/...` paths of earlier drafts (served
//! beside `/engine/v1`, or instead of it, when every other check fails for that one reason),
//! a fork-scoped `GET` without the fork header, and `GET`s with a loose (`*/*`) or absent
//! `Accept`, which must be served.
//!
//! Not here: the fork header on `POST /forkchoice` (`errors`), `Accept` on the diagnostic
//! endpoints' JSON (`discovery`).

use http::{Method, header};
use sszgate_engine::{
    Problem,
    method::{self, FORK_HEADER, REST_BASE},
};

use super::{Ctx, expect_problem, judged, verdict};
use crate::probe::Call;

/// The base path of earlier drafts (the spec reserves it for a future major version).
pub(super) const OLD_BASE: &str = "/engine/v2";

/// The root cause of every failure when the server serves only the old paths.
pub(super) const OLD_PATHS: &str =
    "the server serves the old /engine/v2/... paths of an earlier draft, not /engine/v1/...";

/// `GET /engine/v2/capabilities` and `/identity`: a `404`, not an answer. Run first, so that
/// when `/engine/v1` is missing too, the failures after are put down to it.
pub(super) async fn old_paths(ctx: &mut Ctx) {
    let mut served = false;
    let mut checks = Vec::new();
    for resource in ["capabilities", "identity"] {
        let call = Call::new(Method::GET, format!("{OLD_BASE}/{resource}"))
            .with(header::ACCEPT, method::JSON_CONTENT_TYPE);
        let sent = ctx.send(&call).await;
        served |= sent.as_ref().is_ok_and(|a| (200..300).contains(&a.status));
        checks.push(judged(sent, |a| {
            let line = call.line();
            if (200..300).contains(&a.status) {
                return Err(format!(
                    "{line}: {} — {OLD_PATHS}; the spec's base path is {REST_BASE} ({OLD_BASE} is reserved for a future major version)",
                    a.describe()
                ));
            }
            verdict(a.status == 404, || format!("{line}: {}", a.describe()))
        }));
    }
    ctx.old_paths = served;
    if served {
        ctx.sheet.blame(Some(OLD_PATHS.into()));
    }
    for check in checks {
        ctx.sheet.note("route.old-paths", check);
    }
}

/// The fork-scoped `GET`s (`/payloads/{id}`, `/bodies`) without the fork header:
/// `400 unsupported-fork`, as for a body-carrying request.
pub(super) async fn fork_missing_on_gets(ctx: &mut Ctx) {
    for target in scoped_gets(ctx) {
        let call = Call::new(Method::GET, target).with(header::ACCEPT, method::SSZ_CONTENT_TYPE);
        let sent = ctx.send(&call).await;
        let check = judged(sent, |a| expect_problem(a, &[], Problem::UnsupportedFork));
        ctx.sheet.note(
            "fork.missing",
            check.map_err(|e| format!("{} without {FORK_HEADER}: {e}", call.line())),
        );
    }
}

/// Every `GET` with `Accept: */*` and with no `Accept`: served (`200`).
pub(super) async fn loose_accept(ctx: &mut Ctx) {
    let fork = ctx.fork.name();
    let unscoped = [
        format!("{REST_BASE}/capabilities"),
        format!("{REST_BASE}/identity"),
    ];
    let scoped = scoped_gets(ctx);
    let calls = unscoped
        .into_iter()
        .map(|t| Call::new(Method::GET, t))
        .chain(
            scoped
                .into_iter()
                .map(|t| Call::new(Method::GET, t).with(FORK_HEADER, fork)),
        );
    for call in calls.collect::<Vec<_>>() {
        for (accept, call) in [
            ("Accept: */*", call.clone().with(header::ACCEPT, "*/*")),
            ("no Accept", call.clone()),
        ] {
            let sent = ctx.send(&call).await;
            let check = judged(sent, |a| {
                verdict(a.status == 200, || {
                    format!("{} with {accept}: {}", call.line(), a.describe())
                })
            });
            ctx.sheet.note("header.accept-loose", check);
        }
    }
}

/// The fork-scoped `GET` targets the run can ask: the build's payload, the head's body.
fn scoped_gets(ctx: &Ctx) -> Vec<String> {
    let mut targets = Vec::new();
    if let Some(id) = ctx.payload_id {
        targets.push(format!(
            "{REST_BASE}/payloads/{}",
            const_hex::encode_prefixed(id)
        ));
    }
    let has_bodies = ctx
        .caps
        .as_ref()
        .is_none_or(|c| c.fork_scoped_endpoints.iter().any(|e| e == "bodies"));
    if let Some(head) = ctx.head.filter(|_| has_bodies) {
        targets.push(format!("{REST_BASE}/bodies?from={}&count=1", head.number));
    }
    targets
}
