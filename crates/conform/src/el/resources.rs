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
    Fork, Message, Problem,
    message::{Blobs, BlobsRequest, Bodies},
    method::{self, Family},
};

use super::{Ctx, chain::compare, verdict};

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
        let Ok(m) = method::by_name(&format!("engine_getBlobsV{revision}")) else {
            continue;
        };
        let request = Message::BlobsRequest(BlobsRequest {
            versioned_hashes: vec![MISSING_BLOB],
            indices: (revision >= 4).then_some(alloy_primitives::B128::repeat_byte(0xff)),
        });
        let Ok(call) = ctx.rest(m, m.latest_fork(), &request) else {
            continue;
        };
        let answer = match ctx.send(&call).await {
            Ok(a) => a,
            Err(e) => return ctx.sheet.note("blobs.partial", Err(e)),
        };
        if answer.status == 400
            && super::problem_type(&answer).as_deref() == Some(Problem::UnsupportedFork.type_uri())
        {
            continue; // a revision of another fork than the chain's: refused, as it may be
        }
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

/// `GET /identity` against `engine_getClientVersionV1`.
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
    let own = sszgate_engine::translate::own_client_version_params();
    let over_json = if ctx.json_rpc {
        let params: serde_json::Value = serde_json::from_slice(&own).unwrap_or_default();
        let result = ctx.probe.json_rpc(None, m.name, &params).await;
        Some(result.and_then(|r| {
            Message::from_json(m, fork, m.response, r.to_string().as_bytes())
                .map_err(|e| e.to_string())
        }))
    } else {
        None
    };
    compare(ctx, "eq.identity", &rest, over_json);
}
