//! The error contract: the fork header (missing, unknown or a BPO name, a fork not claimed),
//! authentication (missing, expired, wrong-key tokens), the media type, a body over its
//! advertised limit, broken SSZ (truncated, a bad offset, trailing bytes), unknown and
//! malformed payload ids, unknown routes and methods — each answered with the spec's status
//! and problem type. Every probe is a valid `POST /forkchoice` (no attributes, on the head)
//! broken in exactly one way, unless the rule is about another resource.
//!
//! Not here: the problem body's shape, checked on every error answer by [`super::Ctx::send`].

use http::{Method, header};
use sszgate_drive::driver::forkchoice;
use sszgate_engine::{
    Fork, Message, Problem,
    method::{self, FORK_HEADER, Family, REST_BASE},
};

use super::{Ctx, expect_problem, judged, resources::MISSING_BLOB, verdict};
use crate::probe::{Auth, Call};

/// Runs the error-contract checks.
pub(super) async fn run(ctx: &mut Ctx) {
    let fork = ctx.fork;
    let head = ctx.head.map(|h| h.hash).unwrap_or_default();
    let Some(m) = method::for_fork(Family::ForkchoiceUpdated, fork) else {
        return;
    };
    let fcu = match ctx.rest(m, fork, &Message::Forkchoice(forkchoice(head, None))) {
        Ok(call) => call,
        Err(e) => return ctx.sheet.note("fork.missing", Err(e)),
    };
    fork_header(ctx, &fcu).await;
    authentication(ctx, &fcu).await;
    let media = fcu
        .clone()
        .with(header::CONTENT_TYPE, method::JSON_CONTENT_TYPE);
    problem(
        ctx,
        "media.unsupported",
        &media,
        &[],
        Problem::UnsupportedMediaType,
    )
    .await;
    over_limit(ctx).await;
    broken_ssz(ctx, &fcu).await;
    payload_ids(ctx).await;
    let unknown = Call::new(Method::GET, format!("{REST_BASE}/no-such-resource"));
    problem(ctx, "route.unknown", &unknown, &[], Problem::MethodNotFound).await;
    let wrong_method = Call {
        method: Method::PUT,
        ..fcu.clone()
    };
    let sent = ctx.send(&wrong_method).await;
    let check = judged(sent, |a| match a.status {
        405 => Ok(a.describe()),
        _ => expect_problem(a, &[404], Problem::MethodNotFound),
    });
    ctx.sheet.note(
        "route.wrong-method",
        check.map_err(|e| format!("PUT {}: {e}", fcu.target)),
    );
}

/// Sends `call` and notes check `id`: `problem` with one of `statuses`.
async fn problem(ctx: &mut Ctx, id: &'static str, call: &Call, statuses: &[u16], problem: Problem) {
    let sent = ctx.send(call).await;
    let check = judged(sent, |a| expect_problem(a, statuses, problem));
    ctx.sheet.note(
        id,
        check.map_err(|e| format!("{}: {e}; expected {problem}", call.line())),
    );
}

async fn fork_header(ctx: &mut Ctx, fcu: &Call) {
    let missing = fcu.clone().without(FORK_HEADER);
    problem(ctx, "fork.missing", &missing, &[], Problem::UnsupportedFork).await;
    for name in ["bpo1", "london"] {
        let unknown = fcu.clone().with(FORK_HEADER, name);
        problem(ctx, "fork.unknown", &unknown, &[], Problem::UnsupportedFork).await;
    }
    if ctx.caps.is_none() {
        return ctx.sheet.skip(
            "fork.unsupported",
            "no capabilities document to say what is claimed",
        );
    }
    let claimed = ctx.forks();
    match Fork::ALL.into_iter().find(|f| !claimed.contains(f)) {
        Some(unclaimed) => {
            let call = fcu.clone().with(FORK_HEADER, unclaimed.name());
            problem(
                ctx,
                "fork.unsupported",
                &call,
                &[],
                Problem::UnsupportedFork,
            )
            .await;
        }
        None => ctx
            .sheet
            .skip("fork.unsupported", "the server claims every fork"),
    }
}

async fn authentication(ctx: &mut Ctx, fcu: &Call) {
    for (id, auth) in [
        ("auth.missing", Auth::Missing),
        ("auth.expired", Auth::Expired),
        ("auth.wrong-key", Auth::WrongKey),
    ] {
        let call = fcu.clone().auth(auth);
        let sent = ctx.send(&call).await;
        let check = judged(sent, |a| {
            verdict(a.status == 401, || {
                format!("{auth:?} token: {}", a.describe())
            })
        });
        ctx.sheet.note(id, check);
    }
}

/// `POST /blobs/vN` (the newest claimed revision) with one hash more than advertised.
async fn over_limit(ctx: &mut Ctx) {
    let Some(&revision) = ctx.blob_revisions().last() else {
        return ctx
            .sheet
            .skip("size.over-limit", "no blobs revision claimed");
    };
    let limit = ctx
        .caps
        .as_ref()
        .and_then(|c| c.limits.get("blobs.max_versioned_hashes").copied());
    let count = limit.unwrap_or(sszgate_engine::ssz::MAX_BLOBS_REQUEST as u64) as usize + 1;
    let mut body = Vec::with_capacity(20 + 32 * count);
    let fixed: u32 = if revision >= 4 { 20 } else { 4 };
    body.extend_from_slice(&fixed.to_le_bytes());
    if revision >= 4 {
        body.extend_from_slice(&[0xff; 16]);
    }
    for _ in 0..count {
        body.extend_from_slice(MISSING_BLOB.as_slice());
    }
    let call = Call::new(Method::POST, format!("{REST_BASE}/blobs/v{revision}"))
        .with(header::CONTENT_TYPE, method::SSZ_CONTENT_TYPE)
        .with(header::ACCEPT, method::SSZ_CONTENT_TYPE)
        .body(body);
    problem(ctx, "size.over-limit", &call, &[], Problem::RequestTooLarge).await;
}

async fn broken_ssz(ctx: &mut Ctx, fcu: &Call) {
    let body = fcu.body.to_vec();
    let truncated = fcu.clone().body(body[..body.len() - 1].to_vec());
    problem(
        ctx,
        "ssz.truncated",
        &truncated,
        &[],
        Problem::SszDecodeError,
    )
    .await;
    // The first offset (of payload_attributes) sits right after the 96-byte state.
    let mut bad = body.clone();
    bad[96..100].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad_offset = fcu.clone().body(bad);
    problem(
        ctx,
        "ssz.bad-offset",
        &bad_offset,
        &[],
        Problem::SszDecodeError,
    )
    .await;
    let mut longer = body;
    longer.push(0);
    let trailing = fcu.clone().body(longer);
    problem(ctx, "ssz.trailing", &trailing, &[], Problem::SszDecodeError).await;
}

async fn payload_ids(ctx: &mut Ctx) {
    let fork = ctx.fork;
    let get = |segment: &str| {
        Call::new(Method::GET, format!("{REST_BASE}/payloads/{segment}"))
            .with(FORK_HEADER, fork.name())
            .with(header::ACCEPT, method::SSZ_CONTENT_TYPE)
    };
    match ctx.payload_id {
        Some(mut id) => {
            // The build's own id with its last byte changed: opaque, well-formed, unknown.
            id[7] ^= 0xff;
            let call = get(&const_hex::encode_prefixed(id));
            problem(ctx, "payloads.unknown", &call, &[], Problem::UnknownPayload).await;
        }
        None => ctx
            .sheet
            .skip("payloads.unknown", "no build to take a payload id from"),
    }
    for segment in ["0x1234", "0xzz00000000000000"] {
        problem(
            ctx,
            "payloads.malformed-id",
            &get(segment),
            &[],
            Problem::InvalidRequest,
        )
        .await;
    }
}
