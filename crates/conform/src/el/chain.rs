//! A real chain step, as `sszgate drive` makes one (its attributes and forkchoice): the head
//! read over JSON-RPC, a build started with `POST /forkchoice` (which also finds the chain's
//! fork, newest claimed first, unless it was given), the payload fetched with
//! `GET /payloads/{id}`, imported with `POST /payloads` and made head; each answer decoded
//! exactly, and each call made again over JSON-RPC and compared.
//!
//! Not here: the resources asked about the new block (`resources`).

use alloy_primitives::B256;
use alloy_rpc_types_engine::{PayloadId, PayloadStatusEnum};
use serde_json::json;
use sszgate_drive::{
    Head,
    driver::{attributes, forkchoice},
};
use sszgate_engine::{
    Message,
    message::BuiltPayload,
    method::{self, Family},
    txs::blob_versioned_hashes,
};

use super::Ctx;
use crate::exact;

const CHAIN_CHECKS: [&str; 7] = [
    "forkchoice.build",
    "payloads.get",
    "payloads.submit",
    "header.no-store",
    "eq.get-payload",
    "eq.submit",
    "eq.forkchoice",
];

/// Builds and imports one block, noting the chain checks.
pub(super) async fn run(ctx: &mut Ctx) {
    ctx.json_rpc = ctx
        .probe
        .json_rpc(None, "engine_exchangeCapabilities", &json!([[]]))
        .await
        .is_ok();
    let head = match read_head(ctx).await {
        Ok(head) => head,
        Err(e) => {
            for id in CHAIN_CHECKS {
                ctx.sheet.skip(id, format!("no chain head: {e}"));
            }
            return;
        }
    };
    ctx.head = Some(head);
    let Some((id, root)) = start_build(ctx, head).await else {
        return;
    };
    ctx.payload_id = Some(id.0.0);
    tokio::time::sleep(ctx.config.build_time).await;
    let Some(built) = fetch(ctx, id).await else {
        return;
    };
    let payload = built.payload_v1().clone();
    if !import(ctx, &built, root).await {
        return;
    }
    make_head(ctx, payload.block_hash).await;
    ctx.head = Some(Head {
        hash: payload.block_hash,
        number: payload.block_number,
        timestamp: payload.timestamp,
    });
}

/// The head as `eth_getBlockByNumber("latest")` of the JSON-RPC URL says.
async fn read_head(ctx: &Ctx) -> Result<Head, String> {
    let url = ctx.config.eth_rpc.as_deref();
    let block = ctx
        .probe
        .json_rpc(url, "eth_getBlockByNumber", &json!(["latest", false]))
        .await?;
    let quantity = |f: &str| {
        block[f]
            .as_str()
            .and_then(|s| u64::from_str_radix(s.strip_prefix("0x")?, 16).ok())
            .ok_or_else(|| format!("the latest block has no {f}: {block}"))
    };
    let hash: B256 = block["hash"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("the latest block has no hash: {block}"))?;
    Ok(Head {
        hash,
        number: quantity("number")?,
        timestamp: quantity("timestamp")?,
    })
}

/// `POST /forkchoice` with attributes on the head, under the given fork or each claimed one,
/// newest first, until one builds: the payload id and the beacon root of the attributes.
async fn start_build(ctx: &mut Ctx, head: Head) -> Option<(PayloadId, B256)> {
    let mut forks = match ctx.config.fork {
        Some(fork) => vec![fork],
        None => ctx.forks(),
    };
    forks.reverse();
    let mut last = "the server claims no fork".to_string();
    for fork in forks {
        let (attrs, root) = attributes(fork, head.number + 1, head.timestamp + 12);
        let Some(m) = method::for_fork(Family::ForkchoiceUpdated, fork) else {
            continue;
        };
        let message = Message::Forkchoice(forkchoice(head.hash, Some(attrs)));
        match ctx.typed(m, fork, &message).await {
            Ok((_, Message::ForkchoiceResponse(r))) if r.payload_id.is_some() => {
                let valid = r.payload_status.status == PayloadStatusEnum::Valid;
                let evidence = format!(
                    "under {fork}: {:?}, payload id {:?}",
                    r.payload_status.status, r.payload_id
                );
                ctx.sheet
                    .note("forkchoice.build", super::verdict(valid, || evidence));
                ctx.fork = fork;
                return r.payload_id.map(|id| (id, root));
            }
            Ok((_, answer)) => last = format!("under {fork}: no payload id in {answer:?}"),
            Err(e) => last = e,
        }
    }
    ctx.sheet.note("forkchoice.build", Err(last));
    None
}

/// `GET /payloads/{id}` (after the same call over JSON-RPC, which must agree).
async fn fetch(ctx: &mut Ctx, id: PayloadId) -> Option<BuiltPayload> {
    let fork = ctx.fork;
    let m = method::for_fork(Family::GetPayload, fork)?;
    let message = Message::PayloadId(id);
    let over_json = ctx.json_twin(m, fork, &message).await;
    let built = ctx
        .typed_as("payloads.get", (m, fork, &message), |a| match a {
            Message::BuiltPayload(b) => Some(b),
            _ => None,
        })
        .await?;
    let p = built.payload_v1();
    ctx.sheet.note(
        "payloads.get",
        Ok(format!(
            "block {} {} with {} txs",
            p.block_number,
            p.block_hash,
            p.transactions.len()
        )),
    );
    compare(
        ctx,
        "eq.get-payload",
        &Message::BuiltPayload(built.clone()),
        over_json,
    );
    Some(built)
}

/// `POST /payloads` with the built payload, then the same over JSON-RPC: both `VALID`.
async fn import(ctx: &mut Ctx, built: &BuiltPayload, root: B256) -> bool {
    let fork = ctx.fork;
    let Some(m) = method::for_fork(Family::NewPayload, fork) else {
        return false;
    };
    let hashes = blob_versioned_hashes(&built.payload_v1().transactions).unwrap_or_default();
    let Some(import) = built.to_new_payload(hashes, Some(root)) else {
        return false;
    };
    let message = Message::NewPayload(import);
    let Some(status) = ctx
        .typed_as("payloads.submit", (m, fork, &message), |a| match a {
            Message::PayloadStatus(s) => Some(s),
            _ => None,
        })
        .await
    else {
        return false;
    };
    let valid = status.status == PayloadStatusEnum::Valid;
    ctx.sheet.note(
        "payloads.submit",
        super::verdict(valid, || format!("HTTP 200, {:?}", status.status)),
    );
    let over_json = ctx.json_twin(m, fork, &message).await;
    compare(ctx, "eq.submit", &Message::PayloadStatus(status), over_json);
    valid
}

/// `POST /forkchoice` to the new block, and the same over JSON-RPC.
async fn make_head(ctx: &mut Ctx, hash: B256) {
    let fork = ctx.fork;
    let Some(m) = method::for_fork(Family::ForkchoiceUpdated, fork) else {
        return;
    };
    let message = Message::Forkchoice(forkchoice(hash, None));
    match ctx.typed(m, fork, &message).await {
        Ok((_, answer)) => {
            let over_json = ctx.json_twin(m, fork, &message).await;
            compare(ctx, "eq.forkchoice", &answer, over_json);
        }
        Err(e) => ctx.sheet.note("forkchoice.each-fork", Err(e)),
    }
}

/// Notes equivalence check `id`: the REST answer against the JSON-RPC one (skipped when the
/// server has no JSON-RPC).
pub(super) fn compare(
    ctx: &mut Ctx,
    id: &'static str,
    rest: &Message,
    json: Option<Result<Message, String>>,
) {
    match json {
        None => ctx.sheet.skip(id, "no JSON-RPC at the engine URL's /"),
        Some(Err(e)) => ctx
            .sheet
            .note(id, Err(format!("the JSON-RPC call failed: {e}"))),
        Some(Ok(json)) => {
            let same = exact::same(rest, &json)
                .map(|_| format!("{:?} answers agree field by field", rest.kind()));
            ctx.sheet.note(id, same);
        }
    }
}
