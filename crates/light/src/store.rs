//! The sync protocol's store (consensus specs, altair/light-client/sync-protocol.md, with the
//! Deneb and Electra header and index changes): bootstrap from a trusted block root, then
//! validate and apply updates. The store keeps the committees of the current and next period
//! (keys decompressed once), the finalized, optimistic and newest supermajority headers.
//!
//! What does not live here: fetching (see `client`), saving to disk (see `persist`), blocks
//! (see `anchor`). Not implemented from the specs: the forced update after `UPDATE_TIMEOUT`
//! without finality (`best_valid_update`).

use alloy_primitives::B256;
use tree_hash::TreeHash;

use crate::bls::CommitteeKeys;
use crate::error::LightError;
use crate::merkle::is_valid_merkle_branch;
use crate::participation::ParticipationPolicy;
use crate::spec::{ChainSpec, LcFork, SYNC_COMMITTEE_SIZE, signing_root};
use crate::types::{Bootstrap, LightClientHeader, SyncAggregate, SyncCommittee, Update};

/// The supermajority test, defined with the participation rule (kept here for its callers).
pub use crate::participation::is_supermajority;

/// Body gindex of `execution_payload` (the same in Deneb and Electra).
pub const EXECUTION_PAYLOAD_GINDEX: u64 = 25;

/// A header the store trusts, with the participation of the signature that made it so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedHeader {
    /// The header.
    pub header: LightClientHeader,
    /// Committee members that signed it (512 for the bootstrap checkpoint).
    pub participants: usize,
}

/// The light-client store.
#[derive(Debug, Clone)]
pub struct LightClientStore {
    /// The chain.
    pub spec: ChainSpec,
    /// The newest finalized header.
    pub finalized_header: LightClientHeader,
    /// The committee of the finalized header's period (private: its keys are derived from it).
    current_sync_committee: SyncCommittee,
    /// The committee of the period after it, once an update proved it.
    next_sync_committee: Option<SyncCommittee>,
    /// The newest header signed by more than the safety threshold (the specs' optimistic header).
    pub optimistic: TrustedHeader,
    /// The newest header signed by at least 2/3 of the committee.
    pub safe: TrustedHeader,
    /// Most participants seen in the previous period (for the safety threshold).
    pub previous_max_active_participants: usize,
    /// Most participants seen in this period.
    pub current_max_active_participants: usize,
    current_keys: CommitteeKeys,
    next_keys: Option<CommitteeKeys>,
}

/// What applying an update changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// The finalized header moved forward (or the next committee became known).
    pub applied: bool,
    /// The optimistic header moved forward.
    pub optimistic_advanced: bool,
    /// The supermajority header moved forward.
    pub safe_advanced: bool,
}

fn lc_fork(spec: &ChainSpec, slot: u64, what: &'static str) -> Result<LcFork, LightError> {
    spec.lc_fork(slot)
        .ok_or(LightError::UnsupportedFork { what, slot })
}

/// `is_valid_light_client_header` (Deneb onwards): the execution header's branch to the body
/// root. `which` names the header in errors.
pub fn check_lc_header(header: &LightClientHeader, which: &'static str) -> Result<(), LightError> {
    let leaf = header.execution.tree_hash_root();
    if is_valid_merkle_branch(
        leaf,
        &header.execution_branch,
        EXECUTION_PAYLOAD_GINDEX,
        header.beacon.body_root,
    ) {
        Ok(())
    } else {
        Err(LightError::InvalidBranch {
            check: "execution_branch",
            field: which,
            root_field: "beacon.body_root",
        })
    }
}

impl LightClientStore {
    /// `initialize_light_client_store`: checks the bootstrap against the trusted block root.
    pub fn bootstrap(
        spec: ChainSpec,
        trusted_root: B256,
        bootstrap: &Bootstrap,
    ) -> Result<Self, LightError> {
        let beacon = &bootstrap.header.beacon;
        let got = beacon.root();
        if got != trusted_root {
            return Err(LightError::RootMismatch {
                check: "bootstrap_root",
                field: "header.beacon",
                got,
                expected: trusted_root,
            });
        }
        check_lc_header(&bootstrap.header, "header.execution")?;
        let gindex =
            lc_fork(&spec, beacon.slot, "LightClientBootstrap")?.current_sync_committee_gindex();
        let leaf = bootstrap.current_sync_committee.tree_hash_root();
        if !is_valid_merkle_branch(
            leaf,
            &bootstrap.current_sync_committee_branch,
            gindex,
            beacon.state_root,
        ) {
            return Err(LightError::InvalidBranch {
                check: "current_sync_committee_branch",
                field: "current_sync_committee",
                root_field: "header.beacon.state_root",
            });
        }
        let period = spec.period(beacon.slot);
        let current_keys = CommitteeKeys::new(&bootstrap.current_sync_committee, period)?;
        let checkpoint = TrustedHeader {
            header: bootstrap.header.clone(),
            participants: SYNC_COMMITTEE_SIZE,
        };
        Ok(LightClientStore {
            spec,
            finalized_header: bootstrap.header.clone(),
            current_sync_committee: bootstrap.current_sync_committee.clone(),
            next_sync_committee: None,
            optimistic: checkpoint.clone(),
            safe: checkpoint,
            previous_max_active_participants: 0,
            current_max_active_participants: 0,
            current_keys,
            next_keys: None,
        })
    }

    /// Rebuilds a store from saved parts (the parts are trusted as the store's own earlier
    /// state). The committees' keys come from `saved_keys` (current, next:
    /// [`CommitteeKeys::to_uncompressed`]) where given and matching, else are decompressed
    /// and validated again.
    pub fn from_parts(
        spec: ChainSpec,
        finalized_header: LightClientHeader,
        current_sync_committee: SyncCommittee,
        next_sync_committee: Option<SyncCommittee>,
        optimistic: TrustedHeader,
        safe: TrustedHeader,
        saved_keys: [Option<&[u8]>; 2],
    ) -> Result<Self, LightError> {
        let period = spec.period(finalized_header.beacon.slot);
        let keys = |committee: &SyncCommittee, period: u64, saved: Option<&[u8]>| {
            saved
                .and_then(|bytes| CommitteeKeys::from_uncompressed(committee, period, bytes).ok())
                .map_or_else(|| CommitteeKeys::new(committee, period), Ok)
        };
        let current_keys = keys(&current_sync_committee, period, saved_keys[0])?;
        let next_keys = next_sync_committee
            .as_ref()
            .map(|c| keys(c, period + 1, saved_keys[1]))
            .transpose()?;
        Ok(LightClientStore {
            spec,
            finalized_header,
            current_sync_committee,
            next_sync_committee,
            optimistic,
            safe,
            previous_max_active_participants: 0,
            current_max_active_participants: 0,
            current_keys,
            next_keys,
        })
    }

    /// The current and next committees' keys uncompressed, for saving with the store.
    pub fn uncompressed_keys(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        (
            self.current_keys.to_uncompressed(),
            self.next_keys.as_ref().map(CommitteeKeys::to_uncompressed),
        )
    }

    /// The committee of the finalized header's period.
    pub fn current_sync_committee(&self) -> &SyncCommittee {
        &self.current_sync_committee
    }

    /// The committee of the next period, once an update proved it.
    pub fn next_sync_committee(&self) -> Option<&SyncCommittee> {
        self.next_sync_committee.as_ref()
    }

    /// Period of the finalized header (the store's period).
    pub fn finalized_period(&self) -> u64 {
        self.spec.period(self.finalized_header.beacon.slot)
    }

    /// The committee keys that sign at `signature_slot`, if the store knows them.
    pub fn keys_for_signature_slot(
        &self,
        signature_slot: u64,
    ) -> Result<&CommitteeKeys, LightError> {
        let store_period = self.finalized_period();
        let period = self.spec.period(signature_slot);
        let keys = if period == store_period {
            Some(&self.current_keys)
        } else if period == store_period + 1 {
            self.next_keys.as_ref()
        } else {
            None
        };
        keys.ok_or_else(|| LightError::UnknownCommittee {
            period,
            known: match &self.next_keys {
                Some(_) => format!("{store_period} and {}", store_period + 1),
                None => format!("{store_period} only"),
            },
        })
    }

    /// Checks that `aggregate`, included at `signature_slot`, signs `object_root` with the
    /// committee and fork version the specs prescribe for that slot.
    pub fn verify_signature(
        &self,
        object_root: B256,
        aggregate: &SyncAggregate,
        signature_slot: u64,
    ) -> Result<(), LightError> {
        let keys = self.keys_for_signature_slot(signature_slot)?;
        let domain = self.spec.domain_for_signature_slot(signature_slot);
        keys.verify(aggregate, signing_root(object_root, domain), signature_slot)
    }

    /// `validate_light_client_update` at wall-clock slot `current_slot`: the store's own
    /// checks (the signature's period, relevance, a next committee that differs from the one
    /// proved), then [`check_update`] with the committee of the signature slot and the specs'
    /// minimum of one signer (anchoring applies the participation rule on its own).
    pub fn validate_update(&self, update: &Update, current_slot: u64) -> Result<(), LightError> {
        self.check_slots(update, current_slot)?;
        self.check_known_next_committee(update)?;
        let keys = self.keys_for_signature_slot(update.signature_slot)?;
        check_update(&self.spec, update, keys, ParticipationPolicy::ANY_SIGNER, 0)
    }

    /// `current_slot >= signature_slot` (the rest of the slot order is [`check_update`]'s),
    /// the signature in the store's period or (with the next committee known) the one after,
    /// and an update that can teach the store something.
    fn check_slots(&self, update: &Update, current_slot: u64) -> Result<(), LightError> {
        let attested = update.attested_header.beacon.slot;
        let signature = update.signature_slot;
        if signature > current_slot {
            return Err(LightError::SlotOrder {
                detail: format!("signature_slot {signature} after the current slot {current_slot}"),
            });
        }
        let store_period = self.finalized_period();
        let signature_period = self.spec.period(signature);
        let allowed = signature_period == store_period
            || (self.next_sync_committee.is_some() && signature_period == store_period + 1);
        if !allowed {
            return Err(self.keys_for_signature_slot(signature).err().unwrap_or(
                LightError::SlotOrder {
                    detail: format!(
                        "signature period {signature_period} with store period {store_period}"
                    ),
                },
            ));
        }
        if attested <= self.finalized_header.beacon.slot && !self.teaches_next_committee(update) {
            return Err(LightError::Irrelevant {
                detail: format!(
                    "attested slot {attested} not after finalized slot {} and no new committee",
                    self.finalized_header.beacon.slot
                ),
            });
        }
        Ok(())
    }

    /// The specs' `update_has_next_sync_committee`.
    fn teaches_next_committee(&self, update: &Update) -> bool {
        self.next_sync_committee.is_none()
            && update.has_next_sync_committee()
            && self.spec.period(update.attested_header.beacon.slot) == self.finalized_period()
    }

    /// A next committee different from the one the store already proved for the attested
    /// header's period is refused.
    fn check_known_next_committee(&self, update: &Update) -> Result<(), LightError> {
        if update.has_next_sync_committee()
            && self.spec.period(update.attested_header.beacon.slot) == self.finalized_period()
            && let Some(known) = &self.next_sync_committee
            && *known != update.next_sync_committee
        {
            return Err(LightError::FieldMismatch {
                check: "next_sync_committee",
                field: "next_sync_committee",
                detail: "differs from the committee the store already proved".into(),
            });
        }
        Ok(())
    }

    /// `process_light_client_update`: validates, then moves the optimistic, supermajority and
    /// finalized headers and the committees as the specs say.
    pub fn process_update(
        &mut self,
        update: &Update,
        current_slot: u64,
    ) -> Result<UpdateOutcome, LightError> {
        self.validate_update(update, current_slot)?;
        let participants = update.sync_aggregate.participants();
        self.current_max_active_participants =
            self.current_max_active_participants.max(participants);
        let attested = TrustedHeader {
            header: update.attested_header.clone(),
            participants,
        };
        let mut outcome = UpdateOutcome {
            applied: false,
            optimistic_advanced: false,
            safe_advanced: false,
        };
        if participants > self.safety_threshold()
            && attested.header.beacon.slot > self.optimistic.header.beacon.slot
        {
            self.optimistic = attested.clone();
            outcome.optimistic_advanced = true;
        }
        if is_supermajority(participants)
            && attested.header.beacon.slot > self.safe.header.beacon.slot
        {
            self.safe = attested;
            outcome.safe_advanced = true;
        }
        let finalizes_committee = self.teaches_next_committee(update)
            && update.has_finality()
            && self.spec.period(update.finalized_header.beacon.slot)
                == self.spec.period(update.attested_header.beacon.slot);
        if is_supermajority(participants)
            && (update.finalized_header.beacon.slot > self.finalized_header.beacon.slot
                || finalizes_committee)
        {
            self.apply_update(update)?;
            outcome.applied = true;
        }
        Ok(outcome)
    }

    /// `get_safety_threshold`: half the most participants seen over the last two periods.
    pub fn safety_threshold(&self) -> usize {
        self.previous_max_active_participants
            .max(self.current_max_active_participants)
            / 2
    }

    /// `apply_light_client_update`.
    fn apply_update(&mut self, update: &Update) -> Result<(), LightError> {
        let store_period = self.finalized_period();
        let update_finalized_period = self.spec.period(update.finalized_header.beacon.slot);
        let next_known = self.next_sync_committee.is_some();
        if !next_known && update_finalized_period != store_period {
            return Err(LightError::SlotOrder {
                detail: format!(
                    "finalized period {update_finalized_period} with store period {store_period} and no next committee known"
                ),
            });
        }
        let rotates = next_known && update_finalized_period == store_period + 1;
        // The new next committee's keys are decompressed before anything changes, so that a
        // failure leaves the store as it was.
        let new_next = match (next_known, rotates) {
            (false, _) => Some(next_committee_of(update, store_period + 1)?),
            (true, true) => Some(next_committee_of(update, store_period + 2)?),
            (true, false) => None,
        };
        if rotates
            && let (Some(next), Some(keys)) =
                (self.next_sync_committee.take(), self.next_keys.take())
        {
            // The period rolls over: next becomes current.
            self.current_sync_committee = next;
            self.current_keys = keys;
            self.previous_max_active_participants = self.current_max_active_participants;
            self.current_max_active_participants = 0;
        }
        if let Some((committee, keys)) = new_next {
            self.next_sync_committee = committee;
            self.next_keys = keys;
        }
        self.advance_finalized(update);
        Ok(())
    }

    /// Moves the finalized header (and the optimistic and supermajority ones behind it).
    fn advance_finalized(&mut self, update: &Update) {
        if update.finalized_header.beacon.slot <= self.finalized_header.beacon.slot {
            return;
        }
        self.finalized_header = update.finalized_header.clone();
        let finalized = TrustedHeader {
            header: update.finalized_header.clone(),
            participants: update.sync_aggregate.participants(),
        };
        if finalized.header.beacon.slot > self.optimistic.header.beacon.slot {
            self.optimistic = finalized.clone();
        }
        if finalized.header.beacon.slot > self.safe.header.beacon.slot {
            self.safe = finalized;
        }
    }
}

/// The checks every light-client update gets, whoever holds the committee (the store, or the
/// proof verifier's keys by period): `policy`'s participation (with `safety_threshold`),
/// the attested header's execution branch, `signature_slot > attested slot >= finalized
/// slot`, the finality branch (the finalized header empty without one), the next committee's
/// branch when it has one, and the signature with `keys`, the committee of the signature
/// slot's period, and the domain of that slot's fork.
pub fn check_update(
    spec: &ChainSpec,
    update: &Update,
    keys: &CommitteeKeys,
    policy: ParticipationPolicy,
    safety_threshold: usize,
) -> Result<(), LightError> {
    let participants = update.sync_aggregate.participants();
    policy.check(
        participants,
        safety_threshold,
        "sync_aggregate.sync_committee_bits",
    )?;
    check_lc_header(&update.attested_header, "attested_header.execution")?;
    let attested = update.attested_header.beacon.slot;
    let finalized = update.finalized_header.beacon.slot;
    let signature = update.signature_slot;
    if !(signature > attested && attested >= finalized) {
        return Err(LightError::SlotOrder {
            detail: format!(
                "need signature_slot {signature} > attested {attested} >= finalized {finalized}"
            ),
        });
    }
    check_finality(spec, update)?;
    check_next_committee_branch(spec, update)?;
    let domain = spec.domain_for_signature_slot(signature);
    let root = signing_root(update.attested_header.beacon.root(), domain);
    keys.verify(&update.sync_aggregate, root, signature)
}

fn check_finality(spec: &ChainSpec, update: &Update) -> Result<(), LightError> {
    let finalized = &update.finalized_header;
    let finalized_root = if !update.has_finality() || finalized.beacon.slot == 0 {
        // Without finality, or with finality at genesis, the header must be empty.
        if *finalized != LightClientHeader::default() {
            return Err(LightError::FieldMismatch {
                check: "finality_branch",
                field: "finalized_header",
                detail: "is set without a finality proof (or at genesis)".into(),
            });
        }
        if !update.has_finality() {
            return Ok(());
        }
        B256::ZERO // the specs' finalized root at genesis
    } else {
        check_lc_header(finalized, "finalized_header.execution")?;
        finalized.beacon.root()
    };
    let attested = &update.attested_header.beacon;
    let gindex = lc_fork(spec, attested.slot, "LightClientUpdate")?.finalized_root_gindex();
    if !is_valid_merkle_branch(
        finalized_root,
        &update.finality_branch,
        gindex,
        attested.state_root,
    ) {
        return Err(LightError::InvalidBranch {
            check: "finality_branch",
            field: "finalized_header.beacon",
            root_field: "attested_header.beacon.state_root",
        });
    }
    Ok(())
}

fn check_next_committee_branch(spec: &ChainSpec, update: &Update) -> Result<(), LightError> {
    if !update.has_next_sync_committee() {
        if update.next_sync_committee != SyncCommittee::default() {
            return Err(LightError::FieldMismatch {
                check: "next_sync_committee_branch",
                field: "next_sync_committee",
                detail: "is set without a branch".into(),
            });
        }
        return Ok(());
    }
    let attested = &update.attested_header.beacon;
    let gindex = lc_fork(spec, attested.slot, "LightClientUpdate")?.next_sync_committee_gindex();
    let leaf = update.next_sync_committee.tree_hash_root();
    if !is_valid_merkle_branch(
        leaf,
        &update.next_sync_committee_branch,
        gindex,
        attested.state_root,
    ) {
        return Err(LightError::InvalidBranch {
            check: "next_sync_committee_branch",
            field: "next_sync_committee",
            root_field: "attested_header.beacon.state_root",
        });
    }
    Ok(())
}

/// The next committee an update brings (none when it has no committee branch), with keys.
fn next_committee_of(
    update: &Update,
    period: u64,
) -> Result<(Option<SyncCommittee>, Option<CommitteeKeys>), LightError> {
    if !update.has_next_sync_committee() {
        return Ok((None, None));
    }
    let keys = CommitteeKeys::new(&update.next_sync_committee, period)?;
    Ok((Some(update.next_sync_committee.clone()), Some(keys)))
}
