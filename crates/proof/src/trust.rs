//! What a verifier trusts (spec §8.3): the chain's parameters, an optional checkpoint (a
//! beacon block root) and sync-committee keys per period; the light-client sync data of a
//! proof (§8.1) that adds keys to it; the `c4` client state (§13) that tells a prover what the
//! verifier lacks; saving and loading the keys (a state trusted as a whole, see `SAVED_V2`).
//! Signatures already checked are remembered by `sszgate_light::bls`, not here.
//!
//! Sync data is checked by the light client's own update check (`sszgate_light::store::
//! check_update`), as the consensus specs check light-client updates, not as colibri does
//! (§15 items 4, 5): the committee and domain come from the update's `signature_slot`, the
//! participation rule (2/3 of the committee by default) applies, the attested and finalized
//! headers' execution branches are checked too (colibri checks neither). What does not live here: signatures of proof headers (`header`).

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use alloy_primitives::{B256, Bytes, keccak256};
use ssz::{Decode, Encode};
use ssz_types::FixedVector;
use ssz_types::typenum::Unsigned;
use sszgate_exec::ForkSchedule;
use sszgate_light::bls::CommitteeKeys;
use sszgate_light::merkle::sha256;
use sszgate_light::spec::{ChainSpec, signing_root};
use sszgate_light::store::{LightClientStore, check_update};
use sszgate_light::types::{
    BlsPublicKey, Bootstrap, LightClientUpdateSsz, SyncAggregate, SyncCommittee, Update,
};
use sszgate_light::{LightError, ParticipationPolicy};

use crate::error::{Check, ProofError, ensure, fail};
use crate::tags::{Finalized, Freshness};
use crate::types::{BootstrapUnion, LcSyncData, UpdateUnion};

/// Periods of committee keys kept at most (colibri keeps 8); the oldest go first.
pub const MAX_PERIODS: usize = 8;

/// The most light-client updates one proof's sync data may carry (the prover sends at most
/// as many, one per period: over 5 years of mainnet periods).
pub const MAX_SYNC_UPDATES: usize = 128;

/// A committee and its keys, shared: a verifier made from saved state takes an entry read
/// before in the process without decoding or copying its 24.6 kB of compressed and 49 kB of
/// decompressed keys (measured in Node, WASM: a verifier from saved state 0.115 → 0.046 ms).
type Entry = Arc<(SyncCommittee, CommitteeKeys)>;

/// Committee keys by period, ascending: at most [`MAX_PERIODS`] of them, so a sorted vector
/// (which links less code than a map of these values).
#[derive(Debug, Clone, Default)]
struct Committees(Vec<(u64, Entry)>);

impl Committees {
    fn get(&self, period: u64) -> Option<&(SyncCommittee, CommitteeKeys)> {
        let at = self.0.binary_search_by_key(&period, |(p, _)| *p).ok()?;
        self.0.get(at).map(|(_, entry)| &**entry)
    }

    /// Sets the entry of `period` (replacing one there).
    fn insert(&mut self, period: u64, entry: Entry) {
        match self.0.binary_search_by_key(&period, |(p, _)| *p) {
            Ok(at) => self.0[at].1 = entry,
            Err(at) => self.0.insert(at, (period, entry)),
        }
    }

    /// Forgets the oldest periods past [`MAX_PERIODS`].
    fn keep_newest(&mut self) {
        let extra = self.0.len().saturating_sub(MAX_PERIODS);
        self.0.drain(..extra);
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The verifier's trust: chain parameters, checkpoint and committee keys by period; and the
/// execution chain's id and fork table a proven call runs with.
#[derive(Debug, Clone)]
pub struct TrustedState {
    /// The consensus chain (mainnet for colibri's chain id 1).
    pub spec: ChainSpec,
    /// A trusted beacon block root a bootstrap must match.
    pub checkpoint: Option<B256>,
    committees: Committees,
    /// Contract code known by its hash, for eth_call proofs that do not ship it.
    pub codes: HashMap<B256, Bytes>,
    /// The clock and the bound `latest` is checked with (`tags`).
    pub freshness: Freshness,
    /// The execution chain's id (eth_call's `CHAINID`, a call's `chainId`).
    pub chain_id: u64,
    /// The execution chain's fork table: EVM revision and blob parameters by time.
    pub forks: ForkSchedule,
    /// The newest finalized header taken from verified sync data (not saved: a restart
    /// learns it again from the next sync data).
    finalized: Option<Finalized>,
    /// Which aggregates may sign a proof's headers and sync data (2/3 by default).
    policy: ParticipationPolicy,
    /// Take eth_getLogs in colibri's `LogsProof` form, which cannot show that no block of
    /// the range was left out (`--accept-incomplete-logs`); off by default.
    pub accept_incomplete_logs: bool,
}

/// What a verifier tells a prover it has (the `c4` field, spec §8.3 and §13): nothing, the
/// periods whose keys it holds, or only a trusted checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientState {
    /// Nothing: the prover sends no sync data.
    Empty,
    /// Keys of these periods.
    Periods(Vec<u64>),
    /// A checkpoint and no keys: the prover sends its bootstrap.
    Checkpoint(B256),
}

/// The most periods a client state may name (colibri keeps 8).
const MAX_STATE_PERIODS: usize = 16;

impl ClientState {
    /// Decodes the state bytes: empty, `01` and u32 LE periods, or `02` and a block root.
    pub fn from_bytes(b: &[u8]) -> Result<ClientState, String> {
        match b.split_first() {
            None => Ok(ClientState::Empty),
            Some((1, rest)) if rest.len() % 4 == 0 && rest.len() / 4 <= MAX_STATE_PERIODS => {
                let periods = rest.chunks_exact(4);
                Ok(ClientState::Periods(
                    periods
                        .map(|p| u64::from(u32::from_le_bytes([p[0], p[1], p[2], p[3]])))
                        .collect(),
                ))
            }
            Some((2, rest)) if rest.len() == 32 => {
                Ok(ClientState::Checkpoint(B256::from_slice(rest)))
            }
            Some((status, rest)) => Err(format!(
                "client state: status {status} with {} bytes (01 + up to {MAX_STATE_PERIODS} u32 periods, or 02 + a 32-byte root)",
                rest.len()
            )),
        }
    }

    /// The state bytes (see [`ClientState::from_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            ClientState::Empty => Vec::new(),
            ClientState::Periods(periods) => std::iter::once(1u8)
                .chain(periods.iter().flat_map(|p| (*p as u32).to_le_bytes()))
                .collect(),
            ClientState::Checkpoint(root) => std::iter::once(2u8).chain(root.0).collect(),
        }
    }
}

/// The execution chain id of a known network, by the consensus spec's name for it.
pub fn known_chain_id(name: &str) -> Option<u64> {
    match name {
        "mainnet" => Some(1),
        "sepolia" => Some(11_155_111),
        "hoodi" => Some(560_048),
        _ => None,
    }
}

/// Magic, checkpoint flag and root, entry count.
const SAVED_HEAD: usize = 8 + 1 + 32 + 1;
/// `SyncCommittee` in SSZ: 512 keys and the aggregate.
const COMMITTEE_SSZ: usize = 513 * 48;
/// A SHA-256.
const DIGEST: usize = 32;

/// A saved state's layout: a head (magic, checkpoint flag and root, entry count) and entries
/// (period, committee in SSZ, keys); in the current form the head and each entry are
/// followed by their SHA-256.
struct SavedFormat {
    magic: &'static [u8; 8],
    /// Bytes of an entry's keys.
    keys: usize,
    /// Whether the head and each entry carry their SHA-256.
    digest: bool,
    /// Rebuilds an entry's keys from its bytes.
    load: fn(&SyncCommittee, u64, &[u8]) -> Result<CommitteeKeys, LightError>,
}

/// The earlier form, still read: keys uncompressed, each checked against its committee
/// (~14 ms a period in WASM).
const SAVED_V1: SavedFormat = SavedFormat {
    magic: b"SZGTRST1",
    keys: 512 * 96,
    digest: false,
    load: CommitteeKeys::from_uncompressed,
};

/// The form written: keys and their sum in blst's own form, taken with no check on the
/// points once the entry's digest matches. The state is trusted as its checkpoint is (colibri
/// trusts its stored state the same way): whoever can write it could name any committee, so no
/// check on the keys could stop them; the digests catch a state damaged in storage.
const SAVED_V2: SavedFormat = SavedFormat {
    magic: b"SZGTRST2",
    keys: 513 * 96,
    digest: true,
    load: CommitteeKeys::from_raw,
};

impl SavedFormat {
    fn digest_len(&self) -> usize {
        if self.digest { DIGEST } else { 0 }
    }

    fn head(&self) -> usize {
        SAVED_HEAD + self.digest_len()
    }

    fn entry(&self) -> usize {
        8 + COMMITTEE_SSZ + self.keys + self.digest_len()
    }

    /// The most bytes a state of this form can take.
    fn max(&self) -> usize {
        self.head() + MAX_PERIODS * self.entry()
    }

    /// `part` without its digest, if that matches (a form without digests: `part`).
    fn checked<'a>(&self, part: &'a [u8]) -> Result<&'a [u8], String> {
        let (body, digest) = part.split_at(part.len() - self.digest_len());
        if self.digest && sha256(body)[..] != *digest {
            return Err("its SHA-256 does not match: damaged".into());
        }
        Ok(body)
    }

    /// Period, committee and keys of the entry at `at` of `saved`. An entry with a digest
    /// that the process read before is known by its digest alone: its body is not read.
    fn read_entry(&self, saved: &dyn SavedState, at: usize) -> Result<(u64, Entry), String> {
        let end = at + self.entry();
        let digest = self
            .digest
            .then(|| <[u8; DIGEST]>::try_from(&*saved.read(end - DIGEST..end)))
            .transpose()
            .map_err(|_| "the saved state's reader gave a digest of another length")?;
        if let Some(known) = digest.and_then(|d| READ_ENTRIES.find(&d)) {
            return Ok(known);
        }
        let entry = saved.read(at..end);
        let body = self.checked(&entry)?;
        let period = u64::from_le_bytes(body[..8].try_into().unwrap_or_default());
        let committee = SyncCommittee::from_ssz_bytes(&body[8..8 + COMMITTEE_SSZ])
            .map_err(|e| format!("{e:?}"))?;
        let keys = (self.load)(&committee, period, &body[8 + COMMITTEE_SSZ..])
            .map_err(|e| e.to_string())?;
        let read = Arc::new((committee, keys));
        if let Some(digest) = digest {
            READ_ENTRIES.add(digest, period, &read);
        }
        Ok((period, read))
    }
}

/// Saved trust state, read in parts: bytes in memory, or bytes the caller holds elsewhere (the
/// WASM package's JS array). A verifier made anew from a state the process read before reads
/// its head and each entry's digest, not the entries' 74 kB bodies (copying them into WASM
/// and comparing them was a third of such a verifier's making in Node).
pub trait SavedState {
    /// Its length in bytes.
    fn len(&self) -> usize;
    /// Whether it has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The bytes of `range`, which lies within [`SavedState::len`].
    fn read(&self, range: Range<usize>) -> Cow<'_, [u8]>;
}

impl SavedState for &[u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    fn read(&self, range: Range<usize>) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self[range])
    }
}

/// Entries of the current form read before in this process, by the SHA-256 their body was
/// checked against, with their period and keys, newest last. Knowing an entry by its digest
/// is as safe as comparing its bytes: a body that hashes to a known digest is the body read
/// before (SHA-256 is collision-resistant), and a damaged body under an intact digest gets the
/// keys the undamaged one gave.
struct ReadEntries(Mutex<VecDeque<([u8; DIGEST], u64, Entry)>>);

/// The process's one record of entries read.
static READ_ENTRIES: ReadEntries = ReadEntries(Mutex::new(VecDeque::new()));

impl ReadEntries {
    fn find(&self, digest: &[u8; DIGEST]) -> Option<(u64, Entry)> {
        let entries = self.0.lock().ok()?;
        let found = entries.iter().find(|(known, ..)| known == digest);
        found.map(|(_, period, read)| (*period, Arc::clone(read)))
    }

    fn add(&self, digest: [u8; DIGEST], period: u64, read: &Entry) {
        if let Ok(mut entries) = self.0.lock() {
            if entries.len() == MAX_PERIODS {
                entries.pop_front();
            }
            entries.push_back((digest, period, Arc::clone(read)));
        }
    }
}

/// The saved file, bounded by the most entries it can hold.
fn read_saved(path: &Path) -> std::io::Result<Vec<u8>> {
    let max = SAVED_V2.max().max(SAVED_V1.max());
    sszgate_light::persist::read_file_bounded(path, max as u64)
}

fn sync_error(e: impl std::fmt::Display) -> ProofError {
    ProofError::Check {
        check: Check::SyncData,
        detail: e.to_string(),
    }
}

impl TrustedState {
    /// A state with no keys.
    pub fn new(spec: ChainSpec) -> TrustedState {
        let chain_id = known_chain_id(&spec.name).unwrap_or(1);
        TrustedState {
            chain_id,
            forks: ForkSchedule::for_chain_or_consensus(chain_id, spec.execution_fork_times()),
            spec,
            checkpoint: None,
            committees: Committees::default(),
            codes: HashMap::new(),
            freshness: Freshness::default(),
            finalized: None,
            policy: ParticipationPolicy::default(),
            accept_incomplete_logs: false,
        }
    }

    /// The newest finalized header known from verified sync data, if any.
    pub fn finalized(&self) -> Option<Finalized> {
        self.finalized
    }

    /// Takes `header` as finalized if it is newer than the one held; only for headers whose
    /// finality verified sync data shows (a bootstrap of the trusted checkpoint, a finality
    /// update's finalized header).
    pub(crate) fn learn_finalized(&mut self, header: &sszgate_light::types::LightClientHeader) {
        let seen = Finalized {
            slot: header.beacon.slot,
            block_number: header.execution.block_number,
        };
        if self.finalized.is_none_or(|held| held.slot < seen.slot) {
            self.finalized = Some(seen);
        }
    }

    /// Holds signatures to `policy` instead of the default 2/3 of the committee.
    pub fn with_participation(mut self, policy: ParticipationPolicy) -> TrustedState {
        self.policy = policy;
        self
    }

    /// The participation rule signatures are held to.
    pub fn participation(&self) -> ParticipationPolicy {
        self.policy
    }

    /// What to tell a prover: the periods whose keys are known, else the checkpoint.
    pub fn client_state(&self) -> ClientState {
        match (self.committees.is_empty(), self.checkpoint) {
            (false, _) => ClientState::Periods(self.periods()),
            (true, Some(root)) => ClientState::Checkpoint(root),
            (true, None) => ClientState::Empty,
        }
    }

    /// Trusts the committee of `period` given as 512 concatenated 48-byte compressed keys.
    pub fn add_committee_keys(&mut self, period: u64, keys: &[u8]) -> Result<(), ProofError> {
        ensure(keys.len() == 512 * 48, Check::Committee, || {
            format!(
                "period {period}: {} bytes of keys, 512 × 48 expected",
                keys.len()
            )
        })?;
        let pubkeys: Vec<BlsPublicKey> = keys.chunks(48).map(BlsPublicKey::from_slice).collect();
        let committee = SyncCommittee {
            pubkeys: FixedVector::new(pubkeys).map_err(|e| sync_error(format!("{e:?}")))?,
            aggregate_pubkey: BlsPublicKey::ZERO,
        };
        self.add_committee(period, &committee)
    }

    /// Trusts `committee` for `period`.
    pub fn add_committee(
        &mut self,
        period: u64,
        committee: &SyncCommittee,
    ) -> Result<(), ProofError> {
        if self
            .committees
            .get(period)
            .is_some_and(|(known, _)| known == committee)
        {
            return Ok(()); // an update repeating a known committee: no decompression again
        }
        let keys = CommitteeKeys::new(committee, period).map_err(sync_error)?;
        let entry = Arc::new((committee.clone(), keys));
        self.committees.insert(period, entry);
        self.committees.keep_newest();
        Ok(())
    }

    /// Remembers contract code (keyed by its hash) for eth_call proofs that do not ship it.
    pub fn add_code(&mut self, code: Bytes) {
        self.codes.insert(keccak256(&code), code);
    }

    /// The periods whose keys are known.
    pub fn periods(&self) -> Vec<u64> {
        self.committees
            .0
            .iter()
            .map(|(period, _)| *period)
            .collect()
    }

    /// Checks `aggregate` over `object_root`, signed at `signature_slot`: the participation
    /// rule (2/3 by default) of the committee of that slot's period, with the domain of that slot's fork.
    pub fn verify_aggregate(
        &self,
        object_root: B256,
        aggregate: &SyncAggregate,
        signature_slot: u64,
        what: &str,
    ) -> Result<(), ProofError> {
        // The light client's one participation rule; a verifier holding keys but no store has
        // no safety threshold of its own.
        self.policy
            .check(aggregate.participants(), 0, "sync_aggregate")
            .map_err(|e| ProofError::Check {
                check: Check::Participation,
                detail: format!("{what}: {e}"),
            })?;
        let keys = self.keys_for(self.spec.period(signature_slot), what)?;
        let domain = self.spec.domain_for_signature_slot(signature_slot);
        // A signature seen before costs a hash (`CommitteeKeys::verify` remembers it).
        keys.verify(aggregate, signing_root(object_root, domain), signature_slot)
            .map_err(|e| ProofError::Check {
                check: Check::Signature,
                detail: format!("{what}: {e}"),
            })
    }

    /// The committee keys of `period` (`what` names the signature in the error).
    fn keys_for(&self, period: u64, what: &str) -> Result<&CommitteeKeys, ProofError> {
        match self.committees.get(period) {
            Some((_, keys)) => Ok(keys),
            None => fail(
                Check::Committee,
                format!(
                    "{what}: no keys for period {period} (known: {:?})",
                    self.periods()
                ),
            ),
        }
    }

    /// The checkpoint and the keys as bytes (the keys in blst's own form, so loading them
    /// costs no field operation), the head and each entry followed by its SHA-256: what
    /// [`TrustedState::from_bytes`] reads.
    pub fn to_bytes(&self) -> Vec<u8> {
        let with_digest = |mut part: Vec<u8>| {
            let digest = sha256(&part);
            part.extend_from_slice(&digest);
            part
        };
        let mut head = Vec::from(*SAVED_V2.magic);
        head.push(u8::from(self.checkpoint.is_some()));
        head.extend_from_slice(&self.checkpoint.unwrap_or_default().0);
        head.push(self.committees.len() as u8);
        let mut out = with_digest(head);
        for (period, entry) in &self.committees.0 {
            let (committee, keys) = &**entry;
            let mut entry = period.to_le_bytes().to_vec();
            entry.extend_from_slice(&committee.as_ssz_bytes());
            entry.extend_from_slice(&keys.to_raw());
            out.extend_from_slice(&with_digest(entry));
        }
        out
    }

    /// Saves [`TrustedState::to_bytes`] to `path`, through a temporary file.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, self.to_bytes())?;
        std::fs::rename(&tmp, path)
    }

    /// Loads what [`TrustedState::save`] wrote, for chain `spec`.
    pub fn load(spec: ChainSpec, path: &Path) -> Result<TrustedState, String> {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let bytes = read_saved(path).map_err(|e| at(&e))?;
        TrustedState::from_bytes(spec, &bytes).map_err(|e| at(&e))
    }

    /// Reads what [`TrustedState::to_bytes`] wrote (or the earlier form, whose keys are
    /// checked against their committees), for chain `spec`; a state that does not read back
    /// whole is refused.
    pub fn from_bytes(spec: ChainSpec, bytes: &[u8]) -> Result<TrustedState, String> {
        let mut state = TrustedState::new(spec);
        state.load_saved(&bytes)?;
        Ok(state)
    }

    /// Takes the checkpoint and committee keys of `saved` (what [`TrustedState::to_bytes`]
    /// wrote, or the earlier form) in place of this state's; a state that does not read back
    /// whole is refused and leaves this one as it was.
    pub fn load_saved(&mut self, saved: &dyn SavedState) -> Result<(), String> {
        let len = saved.len();
        // The head of either form in one read (each read of a JS array crosses into JS).
        let start = saved.read(0..len.min(SAVED_V2.head().max(SAVED_V1.head())));
        let format = [&SAVED_V2, &SAVED_V1]
            .into_iter()
            .find(|f| start.starts_with(f.magic))
            .ok_or("not a saved sszgate proof trust state")?;
        let (min, max) = (format.head(), format.max());
        if len < min || len > max {
            return Err(format!(
                "{len} bytes of saved trust, {min} to {max} expected"
            ));
        }
        let head = format
            .checked(&start[..min])
            .map_err(|e| format!("head: {e}"))?;
        let count = usize::from(head[41]);
        let expected = min + count * format.entry();
        if len < expected {
            return Err(format!("entry {} truncated", (len - min) / format.entry()));
        }
        if len > expected {
            return Err(format!("{} bytes after the last entry", len - expected));
        }
        let mut committees = Committees::default();
        for i in 0..count {
            let (period, read) = format
                .read_entry(saved, min + i * format.entry())
                .map_err(|e| format!("entry {i}: {e}"))?;
            committees.insert(period, read);
        }
        self.checkpoint = (head[8] == 1).then(|| B256::from_slice(&head[9..41]));
        self.committees = committees;
        Ok(())
    }

    /// Applies a proof's sync data: its bootstrap (needs the checkpoint) and its updates, in
    /// order, each adding the next period's keys.
    pub fn apply_sync_data(&mut self, data: &LcSyncData) -> Result<(), ProofError> {
        // Each update costs a committee's decompression (~45 ms): a prover cannot make one
        // proof cost more than this many.
        ensure(
            data.update.len() <= MAX_SYNC_UPDATES,
            Check::SyncData,
            || {
                format!(
                    "{} updates in one proof; at most {MAX_SYNC_UPDATES} are applied",
                    data.update.len()
                )
            },
        )?;
        let bootstrap: Option<Bootstrap> = match &data.bootstrap {
            BootstrapUnion::None => None,
            BootstrapUnion::Deneb(b) => Some(b.clone().into()),
            BootstrapUnion::Electra(b) => Some(b.clone().into()),
        };
        if let Some(b) = bootstrap {
            self.apply_bootstrap(&b)?;
        }
        for (i, update) in data.update.iter().enumerate() {
            match update {
                UpdateUnion::Deneb(u) => self.apply_update(u, i)?,
                UpdateUnion::Electra(u) => self.apply_update(u, i)?,
            }
        }
        Ok(())
    }

    fn apply_bootstrap(&mut self, bootstrap: &Bootstrap) -> Result<(), ProofError> {
        let period = self.spec.period(bootstrap.header.beacon.slot);
        let Some(checkpoint) = self.checkpoint else {
            return fail(
                Check::SyncData,
                "a bootstrap, but no trusted checkpoint to check it against",
            );
        };
        // The light client's own bootstrap check: root, execution branch, committee branch.
        let store = LightClientStore::bootstrap(self.spec.clone(), checkpoint, bootstrap)
            .map_err(|e| sync_error(format!("bootstrap: {e}")))?;
        self.add_committee(period, store.current_sync_committee())?;
        self.learn_finalized(&bootstrap.header);
        Ok(())
    }

    /// One update of a proof's sync data: the light client's own update check
    /// ([`check_update`]) under this state's participation rule, plus what the verifier
    /// requires on top: signed in the attested header's period, the container of the
    /// attested slot's fork, and a next committee (whose keys it adds).
    fn apply_update<C: Unsigned, F: Unsigned>(
        &mut self,
        u: &LightClientUpdateSsz<C, F>,
        i: usize,
    ) -> Result<(), ProofError> {
        let attested = &u.attested_header.beacon;
        let spec = &self.spec;
        let period = spec.period(attested.slot);
        let signed_in = spec.period(u.signature_slot);
        ensure(signed_in == period, Check::SyncData, || {
            format!("update[{i}]: signed in period {signed_in}, attested in {period}")
        })?;
        let fork = spec.lc_fork(attested.slot).ok_or_else(|| {
            sync_error(format!(
                "update[{i}]: slot {} is in no light-client fork",
                attested.slot
            ))
        })?;
        ensure(
            C::to_usize() == fork.next_sync_committee_gindex().ilog2() as usize,
            Check::SyncData,
            || {
                format!(
                    "update[{i}]: container of the wrong fork for slot {}",
                    attested.slot
                )
            },
        )?;
        let update = Update::from(u.clone());
        ensure(update.has_next_sync_committee(), Check::SyncData, || {
            format!("update[{i}]: no next_sync_committee_branch")
        })?;
        let keys = self.keys_for(signed_in, &format!("update[{i}]"))?;
        check_update(spec, &update, keys, self.policy, 0).map_err(|e| {
            let check = match e {
                LightError::Participation { .. } => Check::Participation,
                LightError::Signature { .. } => Check::Signature,
                _ => Check::SyncData,
            };
            ProofError::Check {
                check,
                detail: format!("update[{i}]: {e}"),
            }
        })?;
        self.add_committee(period + 1, &update.next_sync_committee)?;
        if is_finality_update(u) {
            self.learn_finalized(&u.finalized_header);
        }
        Ok(())
    }
}

/// Whether an update carries a finalized header (a finality branch that is not all zeros).
fn is_finality_update<C: Unsigned, F: Unsigned>(u: &LightClientUpdateSsz<C, F>) -> bool {
    u.finality_branch.iter().any(|n| !n.is_zero())
}
