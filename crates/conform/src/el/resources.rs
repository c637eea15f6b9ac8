//! The read-side resources with real messages, in every fork and revision the server claims:
//! `POST /forkchoice` without attributes, `POST /bodies/hash`, `GET /bodies`, `POST /blobs/vN`
//! (a miss: `available=false` where partial answers exist, `204` where they do not), each
//! answer exact, and each call made again over JSON-RPC and compared.
//!
//! Not here: the chain step that makes the block asked about (`chain`).

use alloy_primitives::B256;
use alloy_rpc_types_engine::PayloadStatusEnum;
use sszgate_drive::driver::forkchoice;
use sszgate_engine::{
    Fork, Message,
    message::{Blobs, Bodies},
    method::{self, Family},
};

use super::{Ctx, chain::compare, pool, verdict};

/// A versioned hash no blob pool holds.
pub(crate) const MISSING_BLOB: B256 = B256::repeat_byte(0x01);
/// A block hash no chain has.
pub(crate) const MISSING_BLOCK: B256 = B256::repeat_byte(0xee);

/// Runs the resource checks.
pub(super) async fn run(ctx: &mut Ctx) {
    let Some(head) = ctx.head else {
        for id in [
            "forkchoice.each-fork",
            "bodies.hash",
            "bodies.range",
            "eq.bodies-hash",
            "eq.bodies-range",
        ] {
            ctx.sheet.skip(id, "no chain head");
        }
        blobs(ctx).await;
        identity(ctx).await;
        return;
    };
    for fork in ctx.forks() {
        forkchoice_under(ctx, fork, head.hash).await;
        bodies_by_hash(ctx, fork, head.hash).await;
    }
    bodies_by_range(ctx, head.number).await;
    blobs(ctx).await;
    identity(ctx).await;
}

async fn forkchoice_under(ctx: &mut Ctx, fork: Fork, head: B256) {
    let Some(m) = method::for_fork(Family::ForkchoiceUpdated, fork) else {
        return;
    };
    let message = Message::Forkchoice(forkchoice(head, None));
    let check = match ctx.typed(m, fork, &message).await {
        Ok((_, Message::ForkchoiceResponse(r))) => {
            let ok = r.payload_status.status == PayloadStatusEnum::Valid && r.payload_id.is_none();
            verdict(ok, || {
                format!(
                    "under {fork}: {:?}, payload id {:?}",
                    r.payload_status.status, r.payload_id
                )
            })
        }
        Ok((_, other)) => Err(format!("under {fork}: a {:?} answer", other.kind())),
        Err(e) => Err(e),
    };
    ctx.sheet.note("forkchoice.each-fork", check);
}

async fn bodies_by_hash(ctx: &mut Ctx, fork: Fork, head: B256) {
    let has_bodies = ctx
        .caps
        .as_ref()
        .is_none_or(|c| c.fork_scoped_endpoints.iter().any(|e| e == "bodies"));
    let Some(m) = method::for_fork(Family::BodiesByHash, fork).filter(|_| has_bodies) else {
        ctx.sheet.skip("bodies.hash", "bodies not claimed");
        ctx.sheet.skip("eq.bodies-hash", "bodies not claimed");
        return;
    };
    let message = Message::BodiesByHash(vec![head, MISSING_BLOCK]);
    let answer = match ctx.typed(m, fork, &message).await {
        Ok((_, answer)) => answer,
        Err(e) => return ctx.sheet.note("bodies.hash", Err(e)),
    };
    let available = availability(&answer);
    // Only the chain's own fork is sure to have the head in its era.
    let ok = available.len() == 2 && !available[1] && (fork != ctx.fork || available[0]);
    ctx.sheet.note(
        "bodies.hash",
        verdict(ok, || {
            format!("under {fork}: available {available:?} for [head, unknown]")
        }),
    );
    if fork == ctx.fork {
        let over_json = ctx.json_twin(m, fork, &message).await;
        compare(ctx, "eq.bodies-hash", &answer, over_json);
    }
}

async fn bodies_by_range(ctx: &mut Ctx, head: u64) {
    let fork = ctx.fork;
    let Some(m) = method::for_fork(Family::BodiesByRange, fork) else {
        return;
    };
    let message = Message::BodiesByRange {
        from: head,
        count: 4,
    };
    let answer = match ctx.typed(m, fork, &message).await {
        Ok((_, answer)) => answer,
        Err(e) => return ctx.sheet.note("bodies.range", Err(e)),
    };
    let available = availability(&answer);
    let ok = available == [true];
    ctx.sheet.note("bodies.range", verdict(ok, || format!("from={head}&count=4 with {head} the head: available {available:?}, one entry expected")));
    let over_json = ctx.json_twin(m, fork, &message).await;
    compare(ctx, "eq.bodies-range", &answer, over_json);
}

/// Which entries of a bodies answer are available.
fn availability(answer: &Message) -> Vec<bool> {
    match answer {
        Message::Bodies(Bodies::V1(b)) => b.iter().map(Option::is_some).collect(),
        Message::Bodies(Bodies::V2(b)) => b.iter().map(Option::is_some).collect(),
        _ => Vec::new(),
    }
}

/// `POST /blobs/vN` for a blob no pool has, in every claimed revision; the newest revision
/// that answers is asked over JSON-RPC too.
async fn blobs(ctx: &mut Ctx) {
    let mut compared = false;
    for revision in ctx.blob_revisions().into_iter().rev() {
        let Some((m, request, answer)) = pool::ask(ctx, revision, vec![MISSING_BLOB]).await else {
            continue;
        };
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return ctx.sheet.note("blobs.partial", Err(e)),
        };
        let id = if revision == 2 {
            "blobs.all-or-nothing"
        } else {
            "blobs.partial"
        };
        let decoded = sszgate_engine::translate::message_from_rest(
            m,
            m.latest_fork(),
            answer.status,
            &answer.body,
            1,
        );
        let check = match (&decoded, revision) {
            (Ok(Ok(_)), 2) => verdict(answer.status == 204 && answer.body.is_empty(), || {
                format!("/blobs/v2 miss: {}", answer.describe())
            }),
            (Ok(Ok(Message::Blobs(b))), _) if answer.status == 200 => {
                let exact = crate::exact::exact(m, m.response, m.latest_fork(), &answer.body);
                exact.and_then(|_| {
                    verdict(all_missing(b), || format!("/blobs/v{revision} miss: {b:?}"))
                })
            }
            _ => Err(format!("/blobs/v{revision} miss: {}", answer.describe())),
        };
        ctx.sheet.note(id, check);
        if !compared && let Ok(Ok(rest)) = decoded {
            compared = true;
            let over_json = ctx.json_twin(m, m.latest_fork(), &request).await;
            compare(ctx, "eq.blobs", &rest, over_json);
        }
    }
}

/// True when a one-entry blobs answer says the blob is not available.
fn all_missing(blobs: &Blobs) -> bool {
    match blobs {
        Blobs::V1(b) => b.len() == 1 && b[0].is_none(),
        Blobs::V2(_) => false,
        Blobs::V3(b) => b.as_ref().is_some_and(|b| b.len() == 1 && b[0].is_none()),
        Blobs::V4(b) => b.as_ref().is_some_and(|b| b.len() == 1 && b[0].is_none()),
    }
}

/// `GET /identity` against `engine_getClientVersionV1` asked with a code the spec lists; then
/// the same call with an unlisted code, which an EL that refuses it fails on its own.
async fn identity(ctx: &mut Ctx) {
    let Ok(m) = method::by_name("engine_getClientVersionV1") else {
        return;
    };
    let fork = m.latest_fork();
    let request = Message::ClientVersion(Vec::new());
    let rest = match ctx.typed(m, fork, &request).await {
        Ok((_, rest)) => rest,
        Err(e) => return ctx.sheet.skip("eq.identity", format!("no identity: {e}")),
    };
    if !ctx.json_rpc {
        ctx.sheet.skip(
            "identity.unlisted-code",
            "no JSON-RPC at the engine URL's /",
        );
        return compare(ctx, "eq.identity", &rest, None);
    }
    let listed = ctx.probe.json_rpc(None, m.name, &caller(LISTED_CODE)).await;
    let over_json = listed.as_ref().map_err(Clone::clone).and_then(|r| {
        Message::from_json(m, fork, m.response, r.to_string().as_bytes()).map_err(|e| e.to_string())
    });
    compare(ctx, "eq.identity", &rest, Some(over_json));
    if listed.is_err() {
        return ctx.sheet.skip(
            "identity.unlisted-code",
            format!("the call with the listed code {LISTED_CODE} failed too"),
        );
    }
    let unlisted = ctx
        .probe
        .json_rpc(None, m.name, &caller(UNLISTED_CODE))
        .await;
    ctx.sheet.note(
        "identity.unlisted-code",
        match unlisted {
            Ok(_) => Ok(format!(
                "{} with code {UNLISTED_CODE} answered, as with {LISTED_CODE}",
                m.name
            )),
            Err(e) => Err(format!(
                "refuses a ClientVersionV1 with the unlisted code {UNLISTED_CODE} (with {LISTED_CODE} it answers): {e}"
            )),
        },
    );
}

/// A code the spec's `ClientCode` list names. The suite has none of its own, so it borrows
/// one; the name says who is asking.
const LISTED_CODE: &str = "LS";
/// A code the spec's list does not name: a client newer than the list sends one.
const UNLISTED_CODE: &str = "SG";

/// `engine_getClientVersionV1` params: the caller as a `ClientVersionV1` with `code`.
fn caller(code: &str) -> serde_json::Value {
    serde_json::json!([{
        "code": code,
        "name": "sszgate-conform",
        "version": env!("CARGO_PKG_VERSION"),
        "commit": "00000000",
    }])
}
