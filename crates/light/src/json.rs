//! The Beacon API's JSON forms of the light-client objects (bootstrap, updates list, finality
//! and optimistic update: `{"version": …, "data": {…}}`, numbers as decimal strings, bytes as
//! 0x-hex), turned into the SSZ bytes of the container the object's slot needs, so a node
//! that answers only JSON goes through the same decoding and checks as one that answers SSZ.
//!
//! Every size is bounded before anything is allocated for it (hex strings by their length,
//! lists by their bound); a malformed field is refused naming its path (`data.header.beacon.
//! slot`). What does not live here: the containers (see `types`), the transport (see `api`),
//! any check beyond the form (see `store`).

use alloy_primitives::{Address, FixedBytes, U256};
use serde_json::Value;
use ssz::{Decode, Encode};
use ssz_types::typenum::{U5, U6, U7, U512, Unsigned};
use ssz_types::{BitVector, FixedVector, VariableList};

use crate::error::LightError;
use crate::spec::{ChainSpec, LcFork};
use crate::types::{
    BeaconBlockHeader, ExecutionPayloadHeader, LightClientBootstrapSsz,
    LightClientFinalityUpdateSsz, LightClientHeader, LightClientOptimisticUpdate,
    LightClientUpdateSsz, SyncAggregate, SyncCommittee,
};

/// Which light-client object a JSON answer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LcObject {
    /// `LightClientBootstrap` (`/light_client/bootstrap/{root}`).
    Bootstrap,
    /// `LightClientUpdate` (one item of `/light_client/updates`).
    Update,
    /// `LightClientFinalityUpdate` (`/light_client/finality_update`).
    FinalityUpdate,
    /// `LightClientOptimisticUpdate` (`/light_client/optimistic_update`).
    OptimisticUpdate,
}

/// The SSZ bytes of the light-client object `doc` (`{version, data}`) holds, in the container
/// of its slot's fork; `version` must name that fork. Errors name `path` and the field.
pub fn lc_object_ssz(
    spec: &ChainSpec,
    what: LcObject,
    doc: &Value,
    path: &str,
) -> Result<Vec<u8>, LightError> {
    versioned_ssz(spec, what, &Field::root(doc)).map_err(|bad| bad.at(path))
}

/// The SSZ bytes of each update of a JSON updates list (an array of `{version, data}`), at
/// most `max_items` of them. Errors name `path` and the field (`[2].data.signature_slot`).
pub fn updates_ssz(
    spec: &ChainSpec,
    doc: &Value,
    max_items: usize,
    path: &str,
) -> Result<Vec<Vec<u8>>, LightError> {
    let items = Field::root(doc)
        .list(max_items)
        .map_err(|bad| bad.at(path))?;
    items
        .iter()
        .map(|item| versioned_ssz(spec, LcObject::Update, item).map_err(|bad| bad.at(path)))
        .collect()
}

/// A field that is missing or malformed: its path and what is wrong.
struct Bad {
    field: String,
    detail: String,
}

impl Bad {
    fn at(self, path: &str) -> LightError {
        LightError::Json {
            path: path.to_string(),
            field: self.field,
            detail: self.detail,
        }
    }
}

/// A JSON value and its path from the answer's root.
struct Field<'a> {
    value: &'a Value,
    path: String,
}

impl<'a> Field<'a> {
    fn root(value: &'a Value) -> Self {
        Field {
            value,
            path: String::new(),
        }
    }

    fn bad(&self, detail: impl Into<String>) -> Bad {
        Bad {
            field: if self.path.is_empty() {
                "(the answer)".into()
            } else {
                self.path.clone()
            },
            detail: detail.into(),
        }
    }

    /// The member `name` of this object.
    fn get(&self, name: &str) -> Result<Field<'a>, Bad> {
        let path = if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        };
        let object = self
            .value
            .as_object()
            .ok_or_else(|| self.bad("not an object"))?;
        match object.get(name) {
            Some(value) => Ok(Field { value, path }),
            None => Err(Bad {
                field: path,
                detail: "missing".into(),
            }),
        }
    }

    fn str(&self) -> Result<&'a str, Bad> {
        self.value.as_str().ok_or_else(|| self.bad("not a string"))
    }

    /// The items of this array, at most `max` of them.
    fn list(&self, max: usize) -> Result<Vec<Field<'a>>, Bad> {
        let items = self
            .value
            .as_array()
            .ok_or_else(|| self.bad("not an array"))?;
        if items.len() > max {
            return Err(self.bad(format!("{} items, at most {max} allowed", items.len())));
        }
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, value)| Field {
                value,
                path: format!("{}[{i}]", self.path),
            })
            .collect())
    }

    /// A decimal string of at most `max_digits` digits.
    fn digits(&self, max_digits: usize) -> Result<&'a str, Bad> {
        let s = self.str()?;
        if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.bad(format!("not a decimal string of 1 to {max_digits} digits")));
        }
        Ok(s)
    }

    fn u64(&self) -> Result<u64, Bad> {
        self.digits(20)?
            .parse()
            .map_err(|_| self.bad("over 2^64 - 1"))
    }

    fn u256(&self) -> Result<U256, Bad> {
        U256::from_str_radix(self.digits(78)?, 10).map_err(|_| self.bad("over 2^256 - 1"))
    }

    /// 0x-hex of at most `max` bytes (the length checked before decoding).
    fn hex(&self, max: usize) -> Result<Vec<u8>, Bad> {
        let s = self.str()?;
        let digits = s
            .strip_prefix("0x")
            .ok_or_else(|| self.bad("not 0x-prefixed hex"))?;
        if digits.len() % 2 != 0 || digits.len() / 2 > max {
            return Err(self.bad(format!(
                "{} hex digits, at most {} (whole bytes) allowed",
                digits.len(),
                2 * max
            )));
        }
        const_hex::decode(digits).map_err(|e| self.bad(format!("not hex: {e}")))
    }

    /// 0x-hex of exactly `N` bytes.
    fn fixed<const N: usize>(&self) -> Result<FixedBytes<N>, Bad> {
        let bytes = self.hex(N)?;
        FixedBytes::try_from(bytes.as_slice())
            .map_err(|_| self.bad(format!("{} bytes, {N} expected", bytes.len())))
    }

    /// A list of exactly `N::USIZE` items of 0x-hex of `B` bytes each (roots, keys).
    fn vector<const B: usize, N: Unsigned>(&self) -> Result<FixedVector<FixedBytes<B>, N>, Bad> {
        let items = self.list(N::USIZE)?;
        if items.len() != N::USIZE {
            return Err(self.bad(format!("{} items, {} expected", items.len(), N::USIZE)));
        }
        let items = items.iter().map(Field::fixed).collect::<Result<_, _>>()?;
        FixedVector::new(items).map_err(|e| self.bad(format!("{e:?}")))
    }
}

/// `doc`'s `data` as the container of its slot's fork, encoded; `version` must name that fork.
fn versioned_ssz(spec: &ChainSpec, what: LcObject, doc: &Field) -> Result<Vec<u8>, Bad> {
    let data = doc.get("data")?;
    let header = match what {
        LcObject::Bootstrap => "header",
        _ => "attested_header",
    };
    let slot_field = data.get(header)?.get("beacon")?.get("slot")?;
    let slot = slot_field.u64()?;
    let version = doc.get("version")?;
    let expected = spec.fork_name(slot);
    if version.str()? != expected {
        return Err(version.bad(format!(
            "is {:?}, the {header}'s slot {slot} is in {expected}",
            version.str()?
        )));
    }
    let fork = spec
        .lc_fork(slot)
        .ok_or_else(|| slot_field.bad(format!("slot {slot} has no light-client containers")))?;
    match (what, fork) {
        (LcObject::Bootstrap, LcFork::Deneb) => Ok(bootstrap::<U5>(&data)?.as_ssz_bytes()),
        (LcObject::Bootstrap, LcFork::Electra) => Ok(bootstrap::<U6>(&data)?.as_ssz_bytes()),
        (LcObject::Update, LcFork::Deneb) => Ok(update::<U5, U6>(&data)?.as_ssz_bytes()),
        (LcObject::Update, LcFork::Electra) => Ok(update::<U6, U7>(&data)?.as_ssz_bytes()),
        (LcObject::FinalityUpdate, LcFork::Deneb) => Ok(finality::<U6>(&data)?.as_ssz_bytes()),
        (LcObject::FinalityUpdate, LcFork::Electra) => Ok(finality::<U7>(&data)?.as_ssz_bytes()),
        (LcObject::OptimisticUpdate, _) => Ok(optimistic(&data)?.as_ssz_bytes()),
    }
}

fn bootstrap<C: Unsigned>(data: &Field) -> Result<LightClientBootstrapSsz<C>, Bad> {
    Ok(LightClientBootstrapSsz {
        header: lc_header(&data.get("header")?)?,
        current_sync_committee: sync_committee(&data.get("current_sync_committee")?)?,
        current_sync_committee_branch: data.get("current_sync_committee_branch")?.vector()?,
    })
}

fn update<C: Unsigned, F: Unsigned>(data: &Field) -> Result<LightClientUpdateSsz<C, F>, Bad> {
    Ok(LightClientUpdateSsz {
        attested_header: lc_header(&data.get("attested_header")?)?,
        next_sync_committee: sync_committee(&data.get("next_sync_committee")?)?,
        next_sync_committee_branch: data.get("next_sync_committee_branch")?.vector()?,
        finalized_header: lc_header(&data.get("finalized_header")?)?,
        finality_branch: data.get("finality_branch")?.vector()?,
        sync_aggregate: sync_aggregate(&data.get("sync_aggregate")?)?,
        signature_slot: data.get("signature_slot")?.u64()?,
    })
}

fn finality<F: Unsigned>(data: &Field) -> Result<LightClientFinalityUpdateSsz<F>, Bad> {
    Ok(LightClientFinalityUpdateSsz {
        attested_header: lc_header(&data.get("attested_header")?)?,
        finalized_header: lc_header(&data.get("finalized_header")?)?,
        finality_branch: data.get("finality_branch")?.vector()?,
        sync_aggregate: sync_aggregate(&data.get("sync_aggregate")?)?,
        signature_slot: data.get("signature_slot")?.u64()?,
    })
}

fn optimistic(data: &Field) -> Result<LightClientOptimisticUpdate, Bad> {
    Ok(LightClientOptimisticUpdate {
        attested_header: lc_header(&data.get("attested_header")?)?,
        sync_aggregate: sync_aggregate(&data.get("sync_aggregate")?)?,
        signature_slot: data.get("signature_slot")?.u64()?,
    })
}

fn lc_header(f: &Field) -> Result<LightClientHeader, Bad> {
    let beacon = f.get("beacon")?;
    Ok(LightClientHeader {
        beacon: BeaconBlockHeader {
            slot: beacon.get("slot")?.u64()?,
            proposer_index: beacon.get("proposer_index")?.u64()?,
            parent_root: beacon.get("parent_root")?.fixed()?,
            state_root: beacon.get("state_root")?.fixed()?,
            body_root: beacon.get("body_root")?.fixed()?,
        },
        execution: execution_header(&f.get("execution")?)?,
        execution_branch: f.get("execution_branch")?.vector()?,
    })
}

fn execution_header(f: &Field) -> Result<ExecutionPayloadHeader, Bad> {
    let extra_data = f.get("extra_data")?;
    Ok(ExecutionPayloadHeader {
        parent_hash: f.get("parent_hash")?.fixed()?,
        fee_recipient: Address::from(f.get("fee_recipient")?.fixed::<20>()?),
        state_root: f.get("state_root")?.fixed()?,
        receipts_root: f.get("receipts_root")?.fixed()?,
        logs_bloom: f.get("logs_bloom")?.fixed()?,
        prev_randao: f.get("prev_randao")?.fixed()?,
        block_number: f.get("block_number")?.u64()?,
        gas_limit: f.get("gas_limit")?.u64()?,
        gas_used: f.get("gas_used")?.u64()?,
        timestamp: f.get("timestamp")?.u64()?,
        extra_data: VariableList::new(extra_data.hex(32)?)
            .map_err(|e| extra_data.bad(format!("{e:?}")))?,
        base_fee_per_gas: f.get("base_fee_per_gas")?.u256()?,
        block_hash: f.get("block_hash")?.fixed()?,
        transactions_root: f.get("transactions_root")?.fixed()?,
        withdrawals_root: f.get("withdrawals_root")?.fixed()?,
        blob_gas_used: f.get("blob_gas_used")?.u64()?,
        excess_blob_gas: f.get("excess_blob_gas")?.u64()?,
    })
}

fn sync_committee(f: &Field) -> Result<SyncCommittee, Bad> {
    Ok(SyncCommittee {
        pubkeys: f.get("pubkeys")?.vector::<48, U512>()?,
        aggregate_pubkey: f.get("aggregate_pubkey")?.fixed()?,
    })
}

fn sync_aggregate(f: &Field) -> Result<SyncAggregate, Bad> {
    let bits = f.get("sync_committee_bits")?;
    let bytes = bits.fixed::<64>()?;
    Ok(SyncAggregate {
        sync_committee_bits: BitVector::<U512>::from_ssz_bytes(bytes.as_slice())
            .map_err(|e| bits.bad(format!("{e:?}")))?,
        sync_committee_signature: f.get("sync_committee_signature")?.fixed()?,
    })
}
