//! The decompression-bomb attacks: a bomb of each coding (built by
//! [`sszgate_fixtures::bombs`]) sent as a JSON-RPC call, with and without a token, or as a
//! REST-SSZ payload.

use sszgate_engine::coding::Coding;
use sszgate_fixtures::bombs::bomb;

use super::{
    Ctx, Outcome,
    wire::{exchange, head, size},
};

/// Where a bomb goes and how it is dressed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    /// `POST /` JSON-RPC, with or without a valid JWT.
    JsonRpc { authenticated: bool },
    /// `POST /engine/v1/payloads` REST-SSZ (prague), with a valid JWT.
    RestPayload,
}

/// Sends one bomb and reports what came back.
pub(crate) async fn send(ctx: Ctx, coding: Coding, shape: Shape) -> Outcome {
    let (body, decoded) = bomb(coding, ctx.scale.bomb_zeros, ctx.scale.snappy_body);
    let mut headers = vec![
        format!("Content-Encoding: {}", coding.name()),
        format!("Content-Length: {}", body.len()),
        "Connection: close".to_string(),
    ];
    let request_line = match shape {
        Shape::JsonRpc { .. } => {
            headers.push("Content-Type: application/json".into());
            "POST / HTTP/1.1"
        }
        Shape::RestPayload => {
            headers.push("Content-Type: application/octet-stream".into());
            headers.push("Eth-Execution-Version: prague".into());
            "POST /engine/v1/payloads HTTP/1.1"
        }
    };
    if !matches!(
        shape,
        Shape::JsonRpc {
            authenticated: false
        }
    ) {
        headers.push(format!("Authorization: Bearer {}", ctx.token));
    }
    let mut bytes = head(request_line, &headers);
    let sent = format!(
        "{} body decoding to {}, 1 conn",
        size(body.len() as u64),
        size(decoded)
    );
    bytes.extend_from_slice(&body);
    drop(body);
    let answer = exchange(ctx.addr, bytes, ctx.scale.answer_wait).await;
    Outcome::new(sent, answer)
}
