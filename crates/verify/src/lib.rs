//! Checks of what crosses the Engine API link, per call: a verdict saying whether the payload,
//! its transactions, its blobs and their proofs are what they claim to be.
//!
//! - [`payload`]: block hash recomputed from the payload (per fork: withdrawals, blob gas,
//!   parent beacon block root, requests hash), every transaction decodes, the spec's field
//!   limits, versioned hashes sent by the CL equal the ones of the blob transactions;
//! - [`blobs`]: a bundle's commitments give the payload's versioned hashes; blob proofs (V1)
//!   or cell proofs (V2, 128 per blob) verify, batched, with c-kzg; getBlobs answers hold the
//!   blobs asked for, with valid proofs;
//! - [`Verifier`]: one call at a time, remembering what later calls need (the parent beacon
//!   block root of each payload id, from forkchoiceUpdated) and sampling the costly KZG checks
//!   at the pace [`pace`] keeps (a share of the wall clock);
//! - [`call`]: one recorded call checked from the bytes that crossed the link (what
//!   `--verify` runs on the recorder's thread), and the one decision of what happens to an
//!   answer's blobs ([`call::blob_mode`]).
//!
//! Nothing here touches the network or the forward path; the recorder and `sszgate verify` call
//! in.

pub mod blobs;
pub mod call;
pub mod pace;
pub mod payload;

use std::{collections::VecDeque, fmt, sync::Arc, time::Instant};

use alloy_primitives::B256;
use alloy_rpc_types_engine::PayloadId;
use sszgate_engine::{
    Fork, Message,
    blob_answer::WithoutBlobs,
    message::BuiltPayload,
    method::{Family, MethodSpec},
};

/// A check that can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// The block hash recomputed from the payload differs from the one it carries.
    BlockHash,
    /// A transaction does not decode.
    Transactions,
    /// A field is over the spec's limit.
    Limits,
    /// The versioned hashes sent by the CL differ from those of the blob transactions.
    VersionedHashes,
    /// A bundle's commitments do not give the versioned hashes of the blob transactions, or
    /// its lists do not line up.
    Commitments,
    /// EIP-4844 blob proofs do not verify.
    BlobProofs,
    /// EIP-7594 cell proofs do not verify.
    CellProofs,
    /// A getBlobs answer does not hold what was asked for.
    BlobsAnswer,
}

impl Check {
    /// The name stored in records and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            Check::BlockHash => "block-hash",
            Check::Transactions => "transactions",
            Check::Limits => "limits",
            Check::VersionedHashes => "versioned-hashes",
            Check::Commitments => "commitments",
            Check::BlobProofs => "blob-proofs",
            Check::CellProofs => "cell-proofs",
            Check::BlobsAnswer => "blobs-answer",
        }
    }
}

/// A failed check and what it found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The check.
    pub check: Check,
    /// What it found, naming the field or index.
    pub detail: String,
}

impl Failure {
    /// A failure of `check`.
    pub fn new(check: Check, detail: impl Into<String>) -> Failure {
        Failure {
            check,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check.name(), self.detail)
    }
}

/// The outcome of verifying one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every check that applies passed (the KZG ones included when `kzg` is true).
    Ok {
        /// Whether the KZG proofs were verified too (sampling may leave them out).
        kzg: bool,
    },
    /// A check failed.
    Failed(Failure),
    /// Nothing could be checked, and why.
    Skipped(String),
}

impl Verdict {
    /// `ok`, `failed` or `skipped`, as stored.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Ok { .. } => "ok",
            Verdict::Failed(_) => "failed",
            Verdict::Skipped(_) => "skipped",
        }
    }
}

/// How much to verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Nothing.
    Off,
    /// Every cheap check on every call; KZG proofs of calls with blobs as long as they take
    /// at most `kzg_percent` of the wall clock ([`pace`]).
    Sample {
        /// The share of the wall clock the KZG checks may take, in percent (1–100).
        kzg_percent: u8,
    },
    /// Every check on every call.
    All,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "off" => Ok(Mode::Off),
            "sample" => Ok(Mode::Sample {
                kzg_percent: pace::DEFAULT_KZG_PERCENT,
            }),
            "all" => Ok(Mode::All),
            other => Err(format!(
                "unknown verify mode {other:?} (off, sample or all)"
            )),
        }
    }
}

/// A verdict with the time it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// Time spent verifying, µs.
    pub micros: u64,
}

/// How many payload ids to remember between forkchoiceUpdated and getPayload.
const REMEMBERED_PAYLOADS: usize = 64;

/// The wall clock a verifier paces its KZG checks by.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// Verifies calls one at a time, in the order they completed.
pub struct Verifier {
    mode: Mode,
    kzg: &'static c_kzg::KzgSettings,
    /// Parent beacon block roots of recent payload builds, by payload id.
    roots: VecDeque<(PayloadId, B256)>,
    /// When `--verify sample`'s KZG checks are due.
    pace: pace::KzgPace,
    clock: Clock,
}

impl Verifier {
    /// A verifier in `mode` (loads the KZG trusted setup on first use of a KZG check).
    pub fn new(mode: Mode) -> Verifier {
        Verifier::with_clock(mode, Arc::new(Instant::now))
    }

    /// A verifier in `mode` whose KZG sampling reads `clock` (tests set the time).
    pub fn with_clock(mode: Mode, clock: Clock) -> Verifier {
        let percent = match mode {
            Mode::Sample { kzg_percent } => kzg_percent,
            Mode::Off | Mode::All => 100,
        };
        Verifier {
            mode,
            kzg: c_kzg::ethereum_kzg_settings(0),
            roots: VecDeque::new(),
            pace: pace::KzgPace::new(percent, clock()),
            clock,
        }
    }

    /// Verifies one call of `method` under `fork` (request and, when it succeeded, response);
    /// `None` when the call carries nothing to verify.
    pub fn call(
        &mut self,
        method: &MethodSpec,
        fork: Fork,
        request: &Message,
        response: Option<&Message>,
    ) -> Option<Outcome> {
        self.call_read_since(method, fork, request, response, Instant::now())
    }

    /// [`Verifier::call`] on messages whose reading began at `read_from`: a KZG check is
    /// charged to the pace from then (decoding the blobs is most of what sampling saves).
    pub(crate) fn call_read_since(
        &mut self,
        method: &MethodSpec,
        fork: Fork,
        request: &Message,
        response: Option<&Message>,
        read_from: Instant,
    ) -> Option<Outcome> {
        if self.mode == Mode::Off {
            return None;
        }
        let started = Instant::now();
        let (verdict, kzg) = self.check_messages(method, fork, request, response)?;
        let ended = Instant::now();
        if kzg {
            // Read only under `sample`; under `all` the charge is never looked at.
            self.pace.spent(ended - read_from, (self.clock)());
        }
        Some(Outcome {
            verdict,
            micros: (ended - started).as_micros() as u64,
        })
    }

    /// The verdict on one call's messages, and whether its KZG proofs were checked; `None`
    /// when they carry nothing to verify.
    fn check_messages(
        &mut self,
        method: &MethodSpec,
        fork: Fork,
        request: &Message,
        response: Option<&Message>,
    ) -> Option<(Verdict, bool)> {
        match (method.family, request, response) {
            (Family::NewPayload, Message::NewPayload(np), _) => Some((
                verdict(payload::check_new_payload(np).map(|()| false)),
                false,
            )),
            (Family::ForkchoiceUpdated, Message::Forkchoice(fcu), response) => {
                let root = fcu
                    .attributes
                    .as_ref()
                    .and_then(|a| a.parent_beacon_block_root);
                if let (Some(root), Some(Message::ForkchoiceResponse(answer))) = (root, response)
                    && let Some(id) = answer.payload_id
                {
                    if self.roots.len() == REMEMBERED_PAYLOADS {
                        self.roots.pop_front();
                    }
                    self.roots.push_back((id, root));
                }
                None
            }
            (Family::GetPayload, Message::PayloadId(id), Some(Message::BuiltPayload(built))) => {
                let root = self.root_of(id);
                let kzg = self.kzg_due(built.blob_count());
                let settings = kzg.then_some(self.kzg);
                let bundle = || blobs::check_bundle(settings, built);
                Some((built_verdict(built, fork, root, bundle, kzg), kzg))
            }
            (Family::GetBlobs, Message::BlobsRequest(asked), Some(Message::Blobs(answer))) => {
                let kzg = self.kzg_due(asked.versioned_hashes.len());
                let checked = blobs::check_answer(self.kzg, &asked.versioned_hashes, answer, kzg);
                Some((verdict(checked.map(|checked| checked && kzg)), kzg))
            }
            _ => None,
        }
    }

    /// Whether the next call that carries blobs gets its KZG proofs verified. When it does not,
    /// a caller that can read the answer without its blobs (`sszgate_engine::blob_answer`)
    /// verifies it with [`Verifier::call_without_blobs`] and saves decoding them. Under
    /// `sample`, a `false` turns `true` only as time passes (until a check is charged).
    pub fn kzg_on_next_blob_call(&self) -> bool {
        match self.mode {
            Mode::All => true,
            Mode::Sample { .. } => self.pace.due((self.clock)()),
            Mode::Off => false,
        }
    }

    /// Verifies one call whose answer was read without its blobs: every check but the KZG
    /// ones, and nothing charged to the KZG pace. `None` when the call carries nothing to
    /// verify.
    pub fn call_without_blobs(
        &mut self,
        method: &MethodSpec,
        fork: Fork,
        request: &Message,
        answer: &WithoutBlobs,
    ) -> Option<Outcome> {
        if self.mode == Mode::Off {
            return None;
        }
        let started = Instant::now();
        let verdict = match (method.family, request, answer) {
            (Family::GetPayload, Message::PayloadId(id), WithoutBlobs::Payload(built, n)) => {
                let root = self.root_of(id);
                let bundle = || blobs::check_bundle_lists(built, *n);
                built_verdict(built, fork, root, bundle, false)
            }
            (Family::GetBlobs, Message::BlobsRequest(asked), WithoutBlobs::Blobs(shape)) => {
                verdict(
                    blobs::check_answer_shape(asked.versioned_hashes.len(), shape).map(|()| false),
                )
            }
            _ => return None,
        };
        Some(Outcome {
            verdict,
            micros: started.elapsed().as_micros() as u64,
        })
    }

    /// The parent beacon block root of the build `id`, when its forkchoiceUpdated was seen.
    fn root_of(&self, id: &PayloadId) -> Option<B256> {
        self.roots
            .iter()
            .rev()
            .find(|(known, _)| known == id)
            .map(|(_, root)| *root)
    }

    /// Whether this call with `blobs` blobs gets its KZG proofs verified.
    fn kzg_due(&self, blobs: usize) -> bool {
        blobs > 0 && self.kzg_on_next_blob_call()
    }
}

/// The verdict on a getPayload answer: the payload, then its bundle as `bundle` checks it. The
/// block hash needs the root of the attributes; without it, the verdict says the rest passed.
fn built_verdict(
    built: &BuiltPayload,
    fork: Fork,
    root: Option<B256>,
    bundle: impl FnOnce() -> Result<(), Failure>,
    kzg: bool,
) -> Verdict {
    match payload::check_built(built, root).and_then(|hashed| bundle().map(|()| hashed)) {
        Ok(true) => Verdict::Ok { kzg },
        Ok(false) => Verdict::Skipped(format!(
            "{fork}: block hash not checked: the forkchoiceUpdated that started this build was not seen"
        )),
        Err(failure) => Verdict::Failed(failure),
    }
}

fn verdict(result: Result<bool, Failure>) -> Verdict {
    match result {
        Ok(kzg) => Verdict::Ok { kzg },
        Err(failure) => Verdict::Failed(failure),
    }
}
