//! Readers of JSON documents of a known, fixed shape: a [`Cursor`] and the Engine API parts
//! read with it (execution payloads, withdrawals, hash and bytes lists), and the whole
//! newPayloadV1..V4 and forkchoiceUpdated params and getPayloadBodiesV1 results.
//!
//! Every reader returns `None` at the first byte its shape does not allow (a key out of the
//! set, a key twice, a non-canonical quantity, `null` where a value is expected), and the
//! caller then takes the serde path, which decides: so these readers can only be faster than
//! serde, never different. The cursor is the one JSON reader's (`crate::json::read`); the
//! blob-bundle and blob-list readers are in `crate::bulk`.

use alloy_rpc_types_engine::{
    ExecutionPayloadBodyV1, ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3,
    ForkchoiceState, PayloadAttributes,
};

use crate::{
    fork::Fork,
    json::read::{Cursor, once},
    method::MethodSpec,
};

/// An execution payload V1..V3 as read: the V1 fields, and those of the later versions if given.
struct PayloadParts {
    v1: ExecutionPayloadV1,
    withdrawals: Option<Vec<alloy_eips::eip4895::Withdrawal>>,
    blob_gas: Option<(u64, u64)>,
}

impl PayloadParts {
    /// A V1 payload: nothing of the later versions.
    fn v1(self) -> Option<ExecutionPayloadV1> {
        (self.withdrawals.is_none() && self.blob_gas.is_none()).then_some(self.v1)
    }

    /// A V2 payload: withdrawals, no blob gas.
    fn v2(self) -> Option<ExecutionPayloadV2> {
        if self.blob_gas.is_some() {
            return None;
        }
        Some(ExecutionPayloadV2 {
            payload_inner: self.v1,
            withdrawals: self.withdrawals?,
        })
    }

    /// A V3 payload (Cancun to Osaka): withdrawals and both blob gas fields.
    fn v3(self) -> Option<ExecutionPayloadV3> {
        let (blob_gas_used, excess_blob_gas) = self.blob_gas?;
        Some(ExecutionPayloadV3 {
            payload_inner: ExecutionPayloadV2 {
                payload_inner: self.v1,
                withdrawals: self.withdrawals?,
            },
            blob_gas_used,
            excess_blob_gas,
        })
    }
}

/// An `ExecutionPayloadV3` (Cancun to Osaka) read field by field, keys in any order, each
/// once, every value in its canonical hex form. Measured on the largest Cancun payload of
/// the data set: serde took 0.08 ms more than hex-decoding its transactions does.
pub(crate) fn payload_v3(c: &mut Cursor<'_>) -> Option<ExecutionPayloadV3> {
    payload(c)?.v3()
}

/// An execution payload V1..V3 read field by field (see [`payload_v3`]); which version it is
/// is the caller's to check.
fn payload(c: &mut Cursor<'_>) -> Option<PayloadParts> {
    use alloy_primitives::{Address, B256, Bloom};
    let mut hashes: [Option<B256>; 5] = [None; 5];
    let (mut fee_recipient, mut logs_bloom) = (None::<Address>, None::<Bloom>);
    let mut numbers: [Option<u64>; 6] = [None; 6];
    let (mut extra_data, mut base_fee, mut transactions, mut withdrawals) =
        (None, None, None, None);
    c.object(|c, key| {
        let hash_at = |name: &[u8]| {
            [
                b"parentHash".as_slice(),
                b"stateRoot",
                b"receiptsRoot",
                b"prevRandao",
                b"blockHash",
            ]
            .iter()
            .position(|k| *k == name)
        };
        let number_at = |name: &[u8]| {
            [
                b"blockNumber".as_slice(),
                b"gasLimit",
                b"gasUsed",
                b"timestamp",
                b"blobGasUsed",
                b"excessBlobGas",
            ]
            .iter()
            .position(|k| *k == name)
        };
        if let Some(i) = hash_at(key) {
            let h = c.fixed();
            return once(&mut hashes[i], h);
        }
        if let Some(i) = number_at(key) {
            let n = c.u64();
            return once(&mut numbers[i], n);
        }
        match key {
            b"feeRecipient" => {
                let v = c.fixed();
                once(&mut fee_recipient, v)
            }
            b"logsBloom" => {
                let v = c.fixed();
                once(&mut logs_bloom, v)
            }
            b"extraData" => {
                let v = c.bytes();
                once(&mut extra_data, v)
            }
            b"baseFeePerGas" => {
                let v = c.u256();
                once(&mut base_fee, v)
            }
            b"transactions" => {
                let v = bytes_list(c);
                once(&mut transactions, v)
            }
            b"withdrawals" => {
                let v = c.list_of(withdrawal);
                once(&mut withdrawals, v)
            }
            _ => None,
        }
    })?;
    let [
        parent_hash,
        state_root,
        receipts_root,
        prev_randao,
        block_hash,
    ] = hashes;
    let [
        block_number,
        gas_limit,
        gas_used,
        timestamp,
        blob_gas_used,
        excess_blob_gas,
    ] = numbers;
    let blob_gas = match (blob_gas_used, excess_blob_gas) {
        (Some(used), Some(excess)) => Some((used, excess)),
        (None, None) => None,
        _ => return None,
    };
    Some(PayloadParts {
        v1: ExecutionPayloadV1 {
            parent_hash: parent_hash?,
            fee_recipient: fee_recipient?,
            state_root: state_root?,
            receipts_root: receipts_root?,
            logs_bloom: logs_bloom?,
            prev_randao: prev_randao?,
            block_number: block_number?,
            gas_limit: gas_limit?,
            gas_used: gas_used?,
            timestamp: timestamp?,
            extra_data: extra_data?,
            base_fee_per_gas: base_fee?,
            block_hash: block_hash?,
            transactions: transactions?,
        },
        withdrawals,
        blob_gas,
    })
}

/// A withdrawal: `{"index", "validatorIndex", "address", "amount"}`, keys in any order.
pub(crate) fn withdrawal(c: &mut Cursor<'_>) -> Option<alloy_eips::eip4895::Withdrawal> {
    let (mut index, mut validator, mut address, mut amount) = (None, None, None, None);
    c.object(|c, key| match key {
        b"index" => {
            let v = c.u64();
            once(&mut index, v)
        }
        b"validatorIndex" => {
            let v = c.u64();
            once(&mut validator, v)
        }
        b"amount" => {
            let v = c.u64();
            once(&mut amount, v)
        }
        b"address" => {
            let v = c.fixed();
            once(&mut address, v)
        }
        _ => None,
    })?;
    Some(alloy_eips::eip4895::Withdrawal {
        index: index?,
        validator_index: validator?,
        address: address?,
        amount: amount?,
    })
}

/// A list of `B256`.
pub(crate) fn hash_list(c: &mut Cursor<'_>) -> Option<Vec<alloy_primitives::B256>> {
    c.list_of(Cursor::fixed)
}

/// A list of bytes (transactions, execution requests).
pub(crate) fn bytes_list(c: &mut Cursor<'_>) -> Option<Vec<alloy_primitives::Bytes>> {
    c.list_of(Cursor::bytes)
}

/// Decodes engine_newPayload params at their fixed shape; `None` means "use serde". The shape
/// is the call's fork's: `[payload]` before Cancun (withdrawals from Shanghai on: a V2
/// payload is Paris's without them and Shanghai's with them), then `[payload,
/// versionedHashes, parentBeaconBlockRoot]` and the execution requests from Prague on.
/// Amsterdam payloads, and a fork the method `m` does not serve, are serde's to judge.
pub(crate) fn new_payload_from_json(
    m: &MethodSpec,
    fork: Fork,
    doc: &[u8],
) -> Option<crate::message::NewPayload> {
    use crate::message::NewPayload;
    if !m.serves(fork) || fork.has_block_access_list() {
        return None;
    }
    let mut c = Cursor::new(doc);
    c.eat(b"[")?;
    let np = if !fork.has_blobs() {
        let read = payload(&mut c)?;
        if fork.has_withdrawals() {
            NewPayload::Shanghai(read.v2()?)
        } else {
            NewPayload::Paris(read.v1()?)
        }
    } else {
        let payload = payload_v3(&mut c)?;
        c.eat(b",")?;
        let hashes = hash_list(&mut c)?;
        c.eat(b",")?;
        let root = c.fixed()?;
        if fork.has_requests() {
            c.eat(b",")?;
            NewPayload::Prague(payload, hashes, root, bytes_list(&mut c)?.into())
        } else {
            NewPayload::Cancun(payload, hashes, root)
        }
    };
    c.eat(b"]")?;
    c.end()?;
    Some(np)
}

/// A `ForkchoiceState`: the three block hashes, keys in any order, each once.
fn forkchoice_state(c: &mut Cursor<'_>) -> Option<ForkchoiceState> {
    let mut hashes: [Option<alloy_primitives::B256>; 3] = [None; 3];
    c.object(|c, key| {
        let i = match key {
            b"headBlockHash" => 0,
            b"safeBlockHash" => 1,
            b"finalizedBlockHash" => 2,
            _ => return None,
        };
        let h = c.fixed();
        once(&mut hashes[i], h)
    })?;
    let [head, safe, finalized] = hashes;
    Some(ForkchoiceState {
        head_block_hash: head?,
        safe_block_hash: safe?,
        finalized_block_hash: finalized?,
    })
}

/// `PayloadAttributes` V1..V4: the three fields every version has, and the optional ones
/// (withdrawals, parent beacon block root, slot number, target gas limit) absent or given,
/// never `null` (serde judges that).
fn payload_attributes(c: &mut Cursor<'_>) -> Option<PayloadAttributes> {
    let (mut timestamp, mut prev_randao, mut fee_recipient) = (None, None, None);
    let (mut withdrawals, mut beacon_root, mut slot, mut gas_limit) = (None, None, None, None);
    c.object(|c, key| match key {
        b"timestamp" => {
            let v = c.u64();
            once(&mut timestamp, v)
        }
        b"prevRandao" => {
            let v = c.fixed();
            once(&mut prev_randao, v)
        }
        b"suggestedFeeRecipient" => {
            let v = c.fixed();
            once(&mut fee_recipient, v)
        }
        b"withdrawals" => {
            let v = c.list_of(withdrawal);
            once(&mut withdrawals, v)
        }
        b"parentBeaconBlockRoot" => {
            let v = c.fixed();
            once(&mut beacon_root, v)
        }
        b"slotNumber" => {
            let v = c.u64();
            once(&mut slot, v)
        }
        b"targetGasLimit" => {
            let v = c.u64();
            once(&mut gas_limit, v)
        }
        _ => None,
    })?;
    Some(PayloadAttributes {
        timestamp: timestamp?,
        prev_randao: prev_randao?,
        suggested_fee_recipient: fee_recipient?,
        withdrawals,
        parent_beacon_block_root: beacon_root,
        slot_number: slot,
        target_gas_limit: gas_limit,
    })
}

/// Decodes engine_forkchoiceUpdated params (`[forkchoiceState]`, `[forkchoiceState, null]` or
/// `[forkchoiceState, payloadAttributes]`) at their fixed shape; `None` means "use serde".
/// Measured: serde took 2.6–2.8× the SSZ decode of the same message (docs/benchmarks.md).
pub(crate) fn forkchoice_from_json(
    doc: &[u8],
) -> Option<(ForkchoiceState, Option<PayloadAttributes>)> {
    let mut c = Cursor::new(doc);
    c.eat(b"[")?;
    let state = forkchoice_state(&mut c)?;
    let attributes = if c.next_is(b",") {
        if c.next_is(b"null") {
            None
        } else {
            Some(payload_attributes(&mut c)?)
        }
    } else {
        None
    };
    c.eat(b"]")?;
    c.end()?;
    Some((state, attributes))
}

/// Decodes a getPayloadBodiesV1 result (bodies or `null`s; `withdrawals` a list, `null` or
/// left out) at its fixed shape; `None` means "use serde".
pub(crate) fn bodies_v1_from_json(doc: &[u8]) -> Option<Vec<Option<ExecutionPayloadBodyV1>>> {
    let mut c = Cursor::new(doc);
    let mut bodies = Vec::new();
    c.list(|c| {
        if c.next_is(b"null") {
            bodies.push(None);
            return Some(());
        }
        let (mut transactions, mut withdrawals) = (None, None::<Option<Vec<_>>>);
        c.object(|c, key| match key {
            b"transactions" => {
                let v = bytes_list(c);
                once(&mut transactions, v)
            }
            b"withdrawals" => {
                let list = if c.next_is(b"null") {
                    None
                } else {
                    Some(c.list_of(withdrawal)?)
                };
                once(&mut withdrawals, Some(list))
            }
            _ => None,
        })?;
        bodies.push(Some(ExecutionPayloadBodyV1 {
            transactions: transactions?,
            withdrawals: withdrawals.flatten(),
        }));
        Some(())
    })?;
    c.end()?;
    Some(bodies)
}
