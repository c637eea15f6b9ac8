//! Discovery: what the server claims (`GET /capabilities`), who it is (`GET /identity`), that
//! both are JSON whatever the caller accepts and ignore a fork header.
//!
//! Not here: using the claims (the other checks read [`super::Ctx::forks`]).

use alloy_rpc_types_engine::ClientVersionV1;
use http::{Method, header};
use sszgate_engine::{
    CapabilitiesDocument, Fork,
    method::{self, FORK_HEADER},
    ssz::{MAX_BLOBS_REQUEST, MAX_BODIES_REQUEST, MAX_REQUEST_BODY_SIZE},
};

use super::{Ctx, judged, verdict};
use crate::probe::{Answer, Call};

const CAPABILITIES: &str = "/engine/v1/capabilities";
const IDENTITY: &str = "/engine/v1/identity";

/// Runs the discovery checks and keeps the document in `ctx`.
pub(super) async fn run(ctx: &mut Ctx) {
    let json =
        |target| Call::new(Method::GET, target).with(header::ACCEPT, method::JSON_CONTENT_TYPE);
    let caps = ctx.send(&json(CAPABILITIES)).await;
    let document = caps.as_ref().map_err(Clone::clone).and_then(read_document);
    ctx.sheet.note(
        "cap.document",
        document
            .clone()
            .map(|d| format!("HTTP 200, forks {:?}", d.supported_forks)),
    );
    match &document {
        Ok(d) => ctx.sheet.note("cap.limits", limits(d)),
        Err(_) => ctx.sheet.skip("cap.limits", "no capabilities document"),
    }
    ctx.caps = document.ok();
    let identity = ctx.send(&json(IDENTITY)).await;
    let identity_check = judged(identity.clone(), |a| {
        read_identity(a).map(|v| format!("HTTP 200, {v:?}"))
    });
    ctx.sheet.note("identity.document", identity_check);
    for target in [CAPABILITIES, IDENTITY] {
        let octet = Call::new(Method::GET, target).with(header::ACCEPT, method::SSZ_CONTENT_TYPE);
        let answer = ctx.send(&octet).await;
        let check = judged(answer, |a| {
            let ct = a.header("content-type");
            verdict(
                a.status == 200 && ct.starts_with(method::JSON_CONTENT_TYPE),
                || {
                    format!(
                        "GET {target} with Accept: {}: HTTP {}, content-type {ct:?}",
                        method::SSZ_CONTENT_TYPE,
                        a.status
                    )
                },
            )
        });
        ctx.sheet.note("header.json-diagnostic", check);
    }
    for (target, plain) in [(CAPABILITIES, caps), (IDENTITY, identity)] {
        let Ok(plain) = plain else { continue };
        let with_fork = json(target).with(FORK_HEADER, "not-a-fork");
        let answer = ctx.send(&with_fork).await;
        let check = judged(answer, |a| {
            verdict(a.status == 200 && a.body == plain.body, || {
                format!(
                    "GET {target} with {FORK_HEADER}: not-a-fork: {} (without it: HTTP {})",
                    a.describe(),
                    plain.status
                )
            })
        });
        ctx.sheet.note("unscoped.ignore-fork", check);
    }
}

fn read_document(answer: &Answer) -> Result<CapabilitiesDocument, String> {
    if answer.status != 200 {
        return Err(format!("GET {CAPABILITIES}: {}", answer.describe()));
    }
    let doc: CapabilitiesDocument = serde_json::from_slice(&answer.body)
        .map_err(|e| format!("GET {CAPABILITIES}: not the capabilities document: {e}"))?;
    if let Some(bad) = doc
        .supported_forks
        .iter()
        .find(|f| f.parse::<Fork>().is_err())
    {
        return Err(format!("supported_forks names {bad:?}, not a fork"));
    }
    let scoped = ["payloads", "forkchoice", "bodies"];
    if let Some(bad) = doc
        .fork_scoped_endpoints
        .iter()
        .find(|e| !scoped.contains(&e.as_str()))
    {
        return Err(format!("fork_scoped_endpoints names {bad:?}"));
    }
    if !doc.unscoped_endpoints.iter().any(|e| e == "capabilities") {
        return Err(format!(
            "unscoped_endpoints {:?} lacks capabilities",
            doc.unscoped_endpoints
        ));
    }
    Ok(doc)
}

fn limits(doc: &CapabilitiesDocument) -> Result<String, String> {
    let caps = [
        ("bodies.max_count", MAX_BODIES_REQUEST as u64),
        ("blobs.max_versioned_hashes", MAX_BLOBS_REQUEST as u64),
        ("payload.max_bytes", MAX_REQUEST_BODY_SIZE as u64),
    ];
    for (name, max) in caps {
        if let Some(&value) = doc.limits.get(name)
            && value > max
        {
            return Err(format!("limits.{name} is {value}, over the spec's {max}"));
        }
    }
    Ok(format!("limits {:?}", doc.limits))
}

fn read_identity(answer: &Answer) -> Result<Vec<String>, String> {
    if answer.status != 200 {
        return Err(format!("GET {IDENTITY}: {}", answer.describe()));
    }
    let versions: Vec<ClientVersionV1> = serde_json::from_slice(&answer.body)
        .map_err(|e| format!("GET {IDENTITY}: not ClientVersion[]: {e}"))?;
    Ok(versions
        .iter()
        .map(|v| format!("{}/{}", v.name, v.version))
        .collect())
}
