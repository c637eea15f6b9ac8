//! The transports: two requests on one HTTP/1.1 connection, a hot-path call over h2c (prior
//! knowledge), and compressed answers (`Accept-Encoding: zstd, gzip`) that decode to the
//! uncompressed answer's bytes.
//!
//! Not here: request compression (the capabilities document has no field to claim it).

use http::{Method, header};
use sszgate_client::request::ACCEPT_ENCODINGS;
use sszgate_drive::driver::forkchoice;
use sszgate_engine::{
    Message,
    method::{self, Family},
};

use super::{Ctx, judged, verdict};
use crate::probe::Call;

/// Runs the transport checks.
pub(super) async fn run(ctx: &mut Ctx) {
    let caps = Call::new(Method::GET, "/engine/v1/capabilities")
        .with(header::ACCEPT, method::JSON_CONTENT_TYPE);
    let two = ctx
        .probe
        .send_on_one_connection(&[caps.clone(), caps])
        .await;
    let check = two.and_then(|answers| {
        let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
        let close = answers[0].header("connection").eq_ignore_ascii_case("close");
        verdict(statuses == [200, 200] && !close, || {
            format!("two GET /capabilities on one connection: HTTP {statuses:?}, first with connection {:?}", answers[0].header("connection"))
        })
    });
    ctx.sheet.note("transport.keep-alive", check);
    let head = ctx.head.map(|h| h.hash).unwrap_or_default();
    let fork = ctx.fork;
    let Some(m) = method::for_fork(Family::ForkchoiceUpdated, fork) else {
        return;
    };
    let fcu = match ctx.rest(m, fork, &Message::Forkchoice(forkchoice(head, None))) {
        Ok(call) => call,
        Err(e) => return ctx.sheet.note("transport.h2c", Err(e)),
    };
    let plain = ctx.send(&fcu).await;
    let h2 = ctx.probe.send_h2(&fcu).await;
    let check = judged(h2, |a| {
        let same = plain.as_ref().is_ok_and(|p| p.body == a.body);
        verdict(a.status == 200 && same, || {
            format!(
                "{} over h2c: {}, same body as HTTP/1.1: {same}",
                fcu.line(),
                a.describe()
            )
        })
    });
    ctx.sheet.note("transport.h2c", check);
    let coded = fcu.clone().with(header::ACCEPT_ENCODING, ACCEPT_ENCODINGS);
    let answer = ctx.send(&coded).await;
    let check = judged(answer, |a| {
        let coding = a.header("content-encoding").to_ascii_lowercase();
        let known = ["", "identity", "zstd", "gzip"].contains(&coding.as_str());
        let same = plain.as_ref().is_ok_and(|p| p.body == a.body);
        verdict(a.status == 200 && known && same, || {
            format!(
                "{} with accept-encoding {ACCEPT_ENCODINGS}: content-encoding {coding:?}, decodes to the plain answer: {same}",
                fcu.line()
            )
        })
    });
    ctx.sheet.note("transport.compression", check);
}
