//! What a verifier trusts (spec §8.3): the chain's parameters, an optional checkpoint (a
//! beacon block root) and sync-committee keys per period; and the light-client sync data of a
//! proof (§8.1) that adds keys to it.
//!
//! Sync data is checked as the consensus specs check light-client updates, not as colibri
//! does (§15 items 4, 5): the committee and domain come from the update's `signature_slot`,
//! at least 2/3 of the committee must have signed, the attested and finalized headers'
//! execution branches are checked too (colibri checks neither). What does not live here: signatures of proof headers (`header`).

use std::collections::{BTreeMap, HashMap};

use alloy_primitives::{B256, Bytes, keccak256};
use ssz_types::FixedVector;
use ssz_types::typenum::Unsigned;
use sszgate_light::bls::CommitteeKeys;
use sszgate_light::merkle::is_valid_merkle_branch;
use sszgate_light::spec::{ChainSpec, LcFork, signing_root};
use sszgate_light::store::{LightClientStore, check_lc_header, is_supermajority};
use sszgate_light::types::{
    BlsPublicKey, Bootstrap, LightClientUpdateSsz, SyncAggregate, SyncCommittee,
};
use tree_hash::TreeHash;

use crate::error::{Check, ProofError, ensure, fail};
use crate::types::{BootstrapUnion, LcSyncData, UpdateUnion};

/// Periods of committee keys kept at most (colibri keeps 8); the oldest go first.
pub const MAX_PERIODS: usize = 8;

/// The verifier's trust: chain parameters, checkpoint and committee keys by period.
#[derive(Debug, Clone)]
pub struct TrustedState {
    /// The chain (mainnet for colibri's chain id 1).
    pub spec: ChainSpec,
    /// A trusted beacon block root a bootstrap must match.
    pub checkpoint: Option<B256>,
    committees: BTreeMap<u64, CommitteeKeys>,
    /// Contract code known by its hash, for eth_call proofs that do not ship it.
    pub codes: HashMap<B256, Bytes>,
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
        TrustedState {
            spec,
            checkpoint: None,
            committees: BTreeMap::new(),
            codes: HashMap::new(),
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
        let keys = CommitteeKeys::new(committee, period).map_err(sync_error)?;
        self.committees.insert(period, keys);
        while self.committees.len() > MAX_PERIODS {
            self.committees.pop_first();
        }
        Ok(())
    }

    /// Remembers contract code (keyed by its hash) for eth_call proofs that do not ship it.
    pub fn add_code(&mut self, code: Bytes) {
        self.codes.insert(keccak256(&code), code);
    }

    /// The periods whose keys are known.
    pub fn periods(&self) -> Vec<u64> {
        self.committees.keys().copied().collect()
    }

    /// Checks `aggregate` over `object_root`, signed at `signature_slot`: at least 2/3 of the
    /// committee of that slot's period, with the domain of that slot's fork.
    pub fn verify_aggregate(
        &self,
        object_root: B256,
        aggregate: &SyncAggregate,
        signature_slot: u64,
        what: &str,
    ) -> Result<(), ProofError> {
        let participants = aggregate.participants();
        ensure(is_supermajority(participants), Check::Participation, || {
            format!("{what}: {participants} of 512 signed, at least 342 required")
        })?;
        let period = self.spec.period(signature_slot);
        let Some(keys) = self.committees.get(&period) else {
            return fail(
                Check::Committee,
                format!(
                    "{what}: no keys for period {period} (known: {:?})",
                    self.periods()
                ),
            );
        };
        let domain = self.spec.domain_for_signature_slot(signature_slot);
        keys.verify(aggregate, signing_root(object_root, domain), signature_slot)
            .map_err(|e| ProofError::Check {
                check: Check::Signature,
                detail: format!("{what}: {e}"),
            })
    }

    /// Applies a proof's sync data: its bootstrap (needs the checkpoint) and its updates, in
    /// order, each adding the next period's keys.
    pub fn apply_sync_data(&mut self, data: &LcSyncData) -> Result<(), ProofError> {
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
        self.add_committee(period, store.current_sync_committee())
    }

    fn apply_update<C: Unsigned, F: Unsigned>(
        &mut self,
        u: &LightClientUpdateSsz<C, F>,
        i: usize,
    ) -> Result<(), ProofError> {
        let attested = &u.attested_header.beacon;
        let spec = &self.spec;
        ensure(u.signature_slot > attested.slot, Check::SyncData, || {
            format!(
                "update[{i}]: signature slot {} not after the attested slot {}",
                u.signature_slot, attested.slot
            )
        })?;
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
        check_update_branches(u, fork, i)?;
        let what = format!("update[{i}]");
        self.verify_aggregate(
            attested.tree_hash_root(),
            &u.sync_aggregate,
            u.signature_slot,
            &what,
        )?;
        self.add_committee(period + 1, &u.next_sync_committee)
    }
}

/// An update's branches: the attested header's execution branch, the next committee's and
/// (for a finality update) the finalized header's to the attested state root.
fn check_update_branches<C: Unsigned, F: Unsigned>(
    u: &LightClientUpdateSsz<C, F>,
    fork: LcFork,
    i: usize,
) -> Result<(), ProofError> {
    let state_root = u.attested_header.beacon.state_root;
    check_lc_header(&u.attested_header, "attested_header").map_err(sync_error)?;
    let branch = |leaf, nodes: &[B256], gindex, name: &str| {
        ensure(
            is_valid_merkle_branch(leaf, nodes, gindex, state_root),
            Check::SyncData,
            || format!("update[{i}]: {name} does not lead to the attested state root"),
        )
    };
    let committee_root = u.next_sync_committee.tree_hash_root();
    let committee_gindex = fork.next_sync_committee_gindex();
    branch(
        committee_root,
        &u.next_sync_committee_branch,
        committee_gindex,
        "next_sync_committee_branch",
    )?;
    if u.finality_branch.iter().all(|n| n.is_zero()) {
        // Not a finality update: the specs require the finalized header to be empty.
        return ensure(
            u.finalized_header == Default::default(),
            Check::SyncData,
            || format!("update[{i}]: a finalized header without a finality branch"),
        );
    }
    check_lc_header(&u.finalized_header, "finalized_header").map_err(sync_error)?;
    let finalized = u.finalized_header.beacon.tree_hash_root();
    branch(
        finalized,
        &u.finality_branch,
        fork.finalized_root_gindex(),
        "finality_branch",
    )
}
