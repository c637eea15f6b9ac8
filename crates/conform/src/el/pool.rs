//! `/blobs/vN` with blobs in the pool: the run sends its own blob transaction (real mainnet
//! blobs from the data set, from a funded key, built and sent as `sszgate drive` sends its
//! load), waits until the EL's pool holds it, then asks every claimed revision for
//! `[first blob, a blob no pool has, second blob]` (`/v2`, all-or-nothing: the two held blobs
//! alone). Each answer must be the revision's container exactly, each entry the blob and
//! proofs that were sent (absent for the miss), and `engine_getBlobsVN` over JSON-RPC must
//! answer the same, entry by entry.
//!
//! Not here: a miss alone (`resources`), building and signing the transaction
//! (`sszgate-drive`'s `Load`).

use alloy_eips::eip4844::{BlobAndProofV2, Bytes48};
use alloy_primitives::{B128, B256};
use sszgate_drive::load::{EthRpc, Load, LoadShape, Senders, submit};
use sszgate_engine::{
    Message, MethodSpec, Problem,
    message::{Blobs, BlobsRequest},
    method,
};
use sszgate_fixtures::{BlobItem, versioned_hash};

use super::{Ctx, chain::compare, resources::MISSING_BLOB};
use crate::probe::Answer;

/// How many blobs the run's transaction carries.
pub const BLOBS_SENT: usize = 2;

/// Where `conform el` sends blob transactions from, and the blobs it sends.
#[derive(Clone)]
pub struct BlobSource {
    /// The funded account (its blob-sending key is used).
    pub senders: Senders,
    /// Real blobs with their commitments and proofs; the first [`BLOBS_SENT`] are sent.
    pub blobs: Vec<BlobItem>,
}

impl BlobSource {
    /// The first [`BLOBS_SENT`] blobs of the data set in `dir` (only the transactions that
    /// hold them are read to the end: cell proofs not cached are computed, which is slow).
    pub fn from_data(senders: Senders, dir: &std::path::Path) -> Result<BlobSource, String> {
        let mut fixtures = sszgate_fixtures::Fixtures::load(dir)
            .map_err(|e| format!("reading the blobs of {}: {e}", dir.display()))?;
        let mut held = 0;
        fixtures.blob_txs.retain(|tx| {
            let keep = held < BLOBS_SENT;
            held += tx.blobs.len();
            keep
        });
        let blobs = fixtures
            .blobs()
            .map_err(|e| format!("the blobs of {}: {e}", dir.display()))?;
        Ok(BlobSource {
            senders,
            blobs: blobs.into_iter().take(BLOBS_SENT).collect(),
        })
    }
}

impl std::fmt::Debug for BlobSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "BlobSource {{ from: {}, blobs: {} }}",
            self.senders.addresses().1,
            self.blobs.len()
        )
    }
}

/// Sends the run's blob transaction and asks every claimed revision about it.
pub(super) async fn run(ctx: &mut Ctx) {
    let sent = match send(ctx).await {
        Ok(sent) => sent,
        Err(why) => return ctx.sheet.skip("blobs.pool", why),
    };
    let hashes: Vec<B256> = sent.iter().map(|b| versioned_hash(&b.commitment)).collect();
    let mut seen = Vec::new();
    for revision in ctx.blob_revisions() {
        let (asked, expected) = if revision == 2 {
            (hashes.clone(), vec![Some(&sent[0]), Some(&sent[1])])
        } else {
            (
                vec![hashes[0], MISSING_BLOB, hashes[1]],
                vec![Some(&sent[0]), None, Some(&sent[1])],
            )
        };
        let Some((m, request, answer)) = ask(ctx, revision, asked).await else {
            continue;
        };
        let decoded = answer.and_then(|a| decode(m, &a, expected.len()));
        let check = decoded
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|blobs| as_sent(blobs, revision, &expected));
        let shape = if revision == 2 {
            "[sent 0, sent 1]"
        } else {
            "[sent 0, missing, sent 1]"
        };
        match check {
            Ok(e) => seen.push(format!("/blobs/v{revision} {shape}: {e}")),
            Err(e) => ctx.sheet.note(
                "blobs.pool",
                Err(format!("/blobs/v{revision} {shape}: {e}")),
            ),
        }
        if let Ok(blobs) = decoded {
            let over_json = ctx.json_twin(m, m.latest_fork(), &request).await;
            compare(ctx, "eq.blobs", &Message::Blobs(blobs), over_json);
        }
    }
    match seen.is_empty() {
        // A pass names every revision asked (a failure noted before is kept).
        false => ctx.sheet.note("blobs.pool", Ok(seen.join("; "))),
        true => ctx
            .sheet
            .skip("blobs.pool", "no claimed revision of the chain's fork"),
    }
}

/// Sends one transaction of [`BLOBS_SENT`] blobs and waits for the pool to hold it: the
/// blobs sent, or why the check cannot run.
async fn send(ctx: &Ctx) -> Result<Vec<BlobItem>, String> {
    let source = ctx.config.blob_source.as_ref().ok_or(
        "not run: needs --key or --mnemonic (a funded account to send blob transactions from)",
    )?;
    let url = ctx.config.eth_rpc.as_deref().ok_or(
        "not run: needs --eth-rpc (the EL's JSON-RPC, where the blob transaction is sent)",
    )?;
    if !ctx.fork.has_blobs() {
        return Err(format!("not run: {} has no blobs", ctx.fork));
    }
    let blobs: Vec<BlobItem> = source.blobs.iter().take(BLOBS_SENT).cloned().collect();
    if blobs.len() < BLOBS_SENT {
        return Err(format!(
            "not run: the data set holds {} blob(s), {BLOBS_SENT} are sent",
            blobs.len()
        ));
    }
    let eth = EthRpc::new(url);
    let shape = LoadShape {
        transfers: 0,
        blob_txs: 1,
        blobs_per_tx: BLOBS_SENT,
    };
    let senders: Senders = source.senders.clone();
    let mut load = Load::new(&eth, ctx.fork, shape, blobs.clone(), senders)
        .await
        .map_err(|e| format!("not run: {e}"))?;
    submit(&eth, &load.next_block(), &mut true)
        .await
        .map_err(|e| format!("not run: the EL did not take the blob transaction: {e}"))?;
    Ok(blobs)
}

/// Asks `/blobs/v{revision}` for `hashes` (every cell for `/v4`): the method, the request and
/// the answer; `None` when the revision is unknown or refused as another fork's
/// (`400 unsupported-fork`, as it may be).
pub(super) async fn ask(
    ctx: &mut Ctx,
    revision: u8,
    hashes: Vec<B256>,
) -> Option<(&'static MethodSpec, Message, Result<Answer, String>)> {
    let m = method::by_name(&format!("engine_getBlobsV{revision}")).ok()?;
    let request = Message::BlobsRequest(BlobsRequest {
        versioned_hashes: hashes,
        indices: (revision >= 4).then_some(B128::repeat_byte(0xff)),
    });
    let call = ctx.rest(m, m.latest_fork(), &request).ok()?;
    let answer = ctx.send(&call).await;
    let other_fork = answer.as_ref().is_ok_and(|a| {
        a.status == 400
            && super::problem_type(a).as_deref() == Some(Problem::UnsupportedFork.type_uri())
    });
    (!other_fork).then_some((m, request, answer))
}

/// A `200` blobs answer, its container checked exactly, as a message.
fn decode(m: &'static MethodSpec, answer: &Answer, asked: usize) -> Result<Blobs, String> {
    let fork = m.latest_fork();
    let fail = || answer.describe();
    if answer.status != 200 {
        return Err(fail());
    }
    crate::exact::exact(m, m.response, fork, &answer.body)?;
    match sszgate_engine::translate::message_from_rest(m, fork, 200, &answer.body, asked) {
        Ok(Ok(Message::Blobs(blobs))) => Ok(blobs),
        _ => Err(fail()),
    }
}

/// One entry as compared: the blob's bytes (for `/v4`, its first 64 cells, which are the
/// blob itself) and the proofs.
#[derive(PartialEq, Eq)]
struct Held {
    blob: Vec<u8>,
    proofs: Vec<Bytes48>,
}

/// Whether every entry of `blobs` is what was sent (`None`: the miss, absent).
fn as_sent(blobs: &Blobs, revision: u8, expected: &[Option<&BlobItem>]) -> Result<String, String> {
    let entries = held(blobs).ok_or("no entries (null / 204) though the blobs are in the pool")?;
    if entries.len() != expected.len() {
        return Err(format!(
            "{} entries for {} hashes",
            entries.len(),
            expected.len()
        ));
    }
    for (i, (got, want)) in entries.iter().zip(expected).enumerate() {
        let want = want.map(|b| Held {
            blob: b.blob.to_vec(),
            proofs: if revision == 1 {
                vec![b.proof]
            } else {
                b.cell_proofs.clone()
            },
        });
        match (got, &want) {
            (None, None) => {}
            (Some(_), None) => return Err(format!("entry {i}: available for a blob no pool has")),
            (None, Some(_)) => return Err(format!("entry {i}: unavailable, though it was sent")),
            (Some(got), Some(want)) if got.blob != want.blob => {
                let at = got.blob.iter().zip(&want.blob).position(|(a, b)| a != b);
                return Err(format!(
                    "entry {i}: not the blob sent ({} bytes, first difference at byte {at:?})",
                    got.blob.len()
                ));
            }
            (Some(got), Some(want)) if got.proofs != want.proofs => {
                return Err(format!(
                    "entry {i}: {} proofs, not the {} sent",
                    got.proofs.len(),
                    want.proofs.len()
                ));
            }
            _ => {}
        }
    }
    let available: Vec<bool> = entries.iter().map(Option::is_some).collect();
    Ok(format!("available {available:?}, blobs and proofs as sent"))
}

/// The entries of a blobs answer as compared (`None` for a `null` answer).
fn held(blobs: &Blobs) -> Option<Vec<Option<Held>>> {
    let v2 = |e: &BlobAndProofV2| Held {
        blob: e.blob.to_vec(),
        proofs: e.proofs.clone(),
    };
    Some(match blobs {
        Blobs::V1(b) => b
            .iter()
            .map(|e| {
                e.as_ref().map(|e| Held {
                    blob: e.blob.to_vec(),
                    proofs: vec![e.proof],
                })
            })
            .collect(),
        Blobs::V2(b) => b.as_ref()?.iter().map(|e| Some(v2(e))).collect(),
        Blobs::V3(b) => b.as_ref()?.iter().map(|e| e.as_ref().map(v2)).collect(),
        Blobs::V4(b) => b
            .as_ref()?
            .iter()
            .map(|e| {
                e.as_ref().map(|e| Held {
                    blob: e.blob_cells[..e.blob_cells.len().min(64)]
                        .iter()
                        .flatten()
                        .flat_map(|c| c.to_vec())
                        .collect(),
                    proofs: e.proofs.iter().flatten().copied().collect(),
                })
            })
            .collect(),
    })
}
