//! A proof's data header tied to a sync-committee signature (spec §3.2, §7.2): directly (the
//! child block's aggregate), through the headers in between, or through the historical
//! summaries of a recent state.
//!
//! The signature is assumed to sit in the slot after the signed header (the format does not
//! carry the real signature slot; a wrong guess can only make a valid proof fail, never a bad
//! one pass). Differences from colibri: at least 2/3 of the committee must sign (§15 item 5);
//! no retry with the previous period's committee; the header chain is read oldest first as
//! colibri's verifier reads it (§15 item 7: its prover writes newest first). What does not live
//! here: the keys and the BLS check itself (`trust`).

use alloy_primitives::B256;
use sszgate_light::merkle::is_valid_merkle_branch;
use sszgate_light::spec::LcFork;
use sszgate_light::types::{BeaconBlockHeader, SyncAggregate};

use crate::error::{Check, ProofError, ensure, fail};
use crate::trust::TrustedState;
use crate::types::{HeaderChainProof, HeaderProofUnion, HistoricProof};

/// The first period with historical summaries: Capella's fork epoch 194048 / 256.
const CAPELLA_PERIOD: u64 = 758;

/// Checks that `header_proof` ties `header` to a valid signature; `what` names the proof.
pub fn verify_header(
    trust: &TrustedState,
    header: &BeaconBlockHeader,
    header_proof: &HeaderProofUnion,
    what: &str,
) -> Result<(), ProofError> {
    let (signed, aggregate) = match header_proof {
        HeaderProofUnion::Signature(aggregate) => (*header, aggregate.clone()),
        HeaderProofUnion::Headers(chain) => (
            chained(header, chain, what)?,
            aggregate_of(&chain.sync_committee_bits, &chain.sync_committee_signature),
        ),
        HeaderProofUnion::Historic(historic) => (
            historic_root(trust, header, historic, what)?,
            aggregate_of(
                &historic.sync_committee_bits,
                &historic.sync_committee_signature,
            ),
        ),
    };
    let what = format!("{what}.header_proof (signed slot {})", signed.slot);
    let signature_slot = signed
        .slot
        .checked_add(1)
        .ok_or_else(|| ProofError::Check {
            check: Check::HeaderChain,
            detail: format!("{what}: slot overflows"),
        })?;
    trust.verify_aggregate(signed.root(), &aggregate, signature_slot, &what)
}

fn aggregate_of(
    bits: &ssz_types::BitVector<ssz_types::typenum::U512>,
    signature: &sszgate_light::types::BlsSignature,
) -> SyncAggregate {
    SyncAggregate {
        sync_committee_bits: bits.clone(),
        sync_committee_signature: *signature,
    }
}

/// `header_proof`: rebuilds the headers between, oldest first, each with its parent's root;
/// the signed header's parent must be the last of them. Returns the signed header.
fn chained(
    data: &BeaconBlockHeader,
    chain: &HeaderChainProof,
    what: &str,
) -> Result<BeaconBlockHeader, ProofError> {
    let (mut parent, mut slot) = (data.root(), data.slot);
    for (i, h) in chain.headers.iter().enumerate() {
        ensure(h.slot > slot, Check::HeaderChain, || {
            format!(
                "{what}: headers[{i}] at slot {} does not follow slot {slot}",
                h.slot
            )
        })?;
        let full = BeaconBlockHeader {
            slot: h.slot,
            proposer_index: h.proposer_index,
            parent_root: parent,
            state_root: h.state_root,
            body_root: h.body_root,
        };
        (parent, slot) = (full.root(), h.slot);
    }
    let signed = chain.header;
    ensure(
        signed.slot > slot && signed.parent_root == parent,
        Check::HeaderChain,
        || {
            format!(
                "{what}: the signed header (slot {}, parent {}) is not the child of {parent} at slot {slot}",
                signed.slot, signed.parent_root
            )
        },
    )?;
    Ok(signed)
}

/// `concat_generalized_indices(a, b)`.
fn concat(a: u64, b: u64) -> Option<u64> {
    let depth = b.checked_ilog2()?;
    a.checked_shl(depth)
        .filter(|s| s >> depth == a)
        .map(|s| s | (b - (1 << depth)))
}

/// The gindex of the data block's root in a state of `fork`: `historical_summaries[k]
/// .block_summary_root`, then `block_roots[slot % 8192]` below it.
fn historic_gindex(fork: LcFork, data_slot: u64, period: u64) -> Option<u64> {
    let summaries = match fork {
        LcFork::Deneb => 59,
        LcFork::Electra => 91,
    };
    let k = period.checked_sub(CAPELLA_PERIOD)?;
    let summary = ((1u64 << 25) + k) * 2;
    concat(concat(summaries, summary)?, 8192 + data_slot % 8192)
}

/// `historic_proof`: the data header's root in the signed header's state. Returns the signed
/// header.
fn historic_root(
    trust: &TrustedState,
    data: &BeaconBlockHeader,
    proof: &HistoricProof,
    what: &str,
) -> Result<BeaconBlockHeader, ProofError> {
    let spec = &trust.spec;
    let signed = proof.header;
    let period = spec.period(data.slot);
    ensure(
        period < spec.period(signed.slot),
        Check::HeaderChain,
        || {
            format!(
                "{what}: a historic proof needs the data block in an earlier period than slot {}",
                signed.slot
            )
        },
    )?;
    let gindex = spec
        .lc_fork(signed.slot)
        .and_then(|fork| historic_gindex(fork, data.slot, period));
    let Some(gindex) = gindex.filter(|g| *g == proof.gindex) else {
        return fail(
            Check::HeaderChain,
            format!(
                "{what}: gindex {} is not the data block's root in the historical summaries ({gindex:?})",
                proof.gindex
            ),
        );
    };
    let root: B256 = data.root();
    ensure(
        is_valid_merkle_branch(root, &proof.proof, gindex, signed.state_root),
        Check::HeaderChain,
        || format!("{what}: the historic branch does not lead to the signed header's state root"),
    )?;
    Ok(signed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn historic_gindex_has_the_spec_depth() {
        // 5 (Deneb state) + 26 (summaries list incl. length) + 13 (block roots) = 44.
        let g = historic_gindex(LcFork::Deneb, 11_412_811, 1393).unwrap();
        assert_eq!(g.ilog2(), 5 + 26 + 13);
        assert_eq!(
            historic_gindex(LcFork::Electra, 0, 758).unwrap().ilog2(),
            6 + 26 + 13
        );
        assert_eq!(historic_gindex(LcFork::Deneb, 0, 700), None);
    }
}
