//! Readers of JSON documents of a known, fixed shape: a [`Cursor`] and the Engine API parts
//! read with it (execution payloads, withdrawals, hash and bytes lists), and the whole
//! newPayloadV1..V4 and forkchoiceUpdated params and getPayloadBodiesV1 results.
//!
//! Every reader returns `None` at the first byte its shape does not allow (a key out of the
//! set, a key twice, a non-canonical quantity, `null` where a value is expected), and the
//! caller then takes the serde path, which decides: so these readers can only be faster than
//! serde, never different. The blob-bundle and blob-list readers are in `crate::bulk`.

use alloy_primitives::U256;
use alloy_rpc_types_engine::{
    ExecutionPayloadBodyV1, ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3,
    ForkchoiceState, PayloadAttributes,
};

use crate::fork::Fork;

/// JSON's whitespace: space, tab, line feed, carriage return. Not `u8::is_ascii_whitespace`,
/// which also takes form feed: the fast paths would then accept a document serde refuses.
pub(crate) fn is_json_ws(b: &u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A cursor over a JSON document of a known, fixed shape: every method
/// returns `None` at the first byte that is not what the shape allows, and the caller then
/// takes the general serde path — so this path can only be faster, never different.
pub(crate) struct Cursor<'a> {
    pub(crate) doc: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn ws(&mut self) {
        while self.doc.get(self.at).is_some_and(is_json_ws) {
            self.at += 1;
        }
    }

    /// Consumes `token` (after whitespace).
    pub(crate) fn eat(&mut self, token: &[u8]) -> Option<()> {
        self.ws();
        self.doc[self.at..]
            .starts_with(token)
            .then(|| self.at += token.len())
    }

    /// Whether `token` comes next (after whitespace), consuming it if so.
    pub(crate) fn next_is(&mut self, token: &[u8]) -> bool {
        self.eat(token).is_some()
    }

    /// A `"0x…"` string of exactly `out.len()` bytes, decoded into `out`.
    pub(crate) fn hex(&mut self, out: &mut [u8]) -> Option<()> {
        self.eat(b"\"0x")?;
        let end = self.at + 2 * out.len();
        if self.doc.get(end) != Some(&b'"') {
            return None;
        }
        const_hex::decode_to_slice(&self.doc[self.at..end], out).ok()?;
        self.at = end + 1;
        Some(())
    }

    /// Steps over a `"0x…"` string of exactly `len` bytes after checking that its digits are
    /// hex, without decoding them.
    pub(crate) fn hex_unread(&mut self, len: usize) -> Option<()> {
        self.eat(b"\"0x")?;
        let end = self.at + 2 * len;
        if self.doc.get(end) != Some(&b'"') {
            return None;
        }
        const_hex::check(&self.doc[self.at..end]).ok()?;
        self.at = end + 1;
        Some(())
    }

    /// A fixed-size value (hash, address, bloom) from a `"0x…"` string of exactly its size.
    pub(crate) fn fixed<T: Default + AsMut<[u8]>>(&mut self) -> Option<T> {
        let mut value = T::default();
        self.hex(value.as_mut())?;
        Some(value)
    }

    /// An object key: `"name":`.
    pub(crate) fn key(&mut self) -> Option<&'a [u8]> {
        self.eat(b"\"")?;
        let start = self.at;
        let len = memchr::memchr(b'"', &self.doc[start..])?;
        self.at = start + len + 1;
        self.eat(b":")?;
        Some(&self.doc[start..start + len])
    }

    /// `[` item (`,` item)* `]`, calling `item` for each; an empty list is allowed.
    pub(crate) fn list(
        &mut self,
        mut item: impl FnMut(&mut Cursor<'a>) -> Option<()>,
    ) -> Option<()> {
        self.eat(b"[")?;
        if self.next_is(b"]") {
            return Some(());
        }
        loop {
            item(self)?;
            if self.next_is(b"]") {
                return Some(());
            }
            self.eat(b",")?;
        }
    }

    /// A list whose items `item` reads, collected.
    pub(crate) fn list_of<T>(
        &mut self,
        mut item: impl FnMut(&mut Cursor<'a>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut items = Vec::new();
        self.list(|c| {
            items.push(item(c)?);
            Some(())
        })?;
        Some(items)
    }

    pub(crate) fn end(&mut self) -> Option<()> {
        self.ws();
        (self.at == self.doc.len()).then_some(())
    }

    /// The hex digits of a `"0x…"` string (any length), not yet decoded.
    pub(crate) fn hex_digits(&mut self) -> Option<&'a [u8]> {
        self.eat(b"\"0x")?;
        let start = self.at;
        let len = memchr::memchr(b'"', &self.doc[start..])?;
        self.at = start + len + 1;
        Some(&self.doc[start..start + len])
    }

    /// A quantity: `"0x0"` or `"0x"` and up to `max_digits` hex digits without a leading
    /// zero (the canonical form; any other the serde path judges).
    pub(crate) fn quantity_digits(&mut self, max_digits: usize) -> Option<&'a [u8]> {
        let digits = self.hex_digits()?;
        let canonical = !digits.is_empty()
            && digits.len() <= max_digits
            && (digits == b"0" || digits[0] != b'0')
            && digits.iter().all(u8::is_ascii_hexdigit);
        canonical.then_some(digits)
    }

    /// A `u64` quantity.
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let digits = self.quantity_digits(16)?;
        u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    }

    /// A `U256` quantity.
    pub(crate) fn u256(&mut self) -> Option<U256> {
        let digits = self.quantity_digits(64)?;
        U256::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    }

    /// Bytes of any length: `"0x"` and an even number of hex digits.
    pub(crate) fn bytes(&mut self) -> Option<alloy_primitives::Bytes> {
        let digits = self.hex_digits()?;
        if digits.len() % 2 != 0 {
            return None;
        }
        let mut out = vec![0; digits.len() / 2];
        const_hex::decode_to_slice(digits, &mut out).ok()?;
        Some(out.into())
    }

    /// `true` or `false`.
    pub(crate) fn bool(&mut self) -> Option<bool> {
        if self.next_is(b"true") {
            Some(true)
        } else if self.next_is(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// An object: `{` key value (`,` key value)* `}`, calling `field` with each key (an empty
    /// object is allowed); `field` must consume the value.
    pub(crate) fn object(
        &mut self,
        mut field: impl FnMut(&mut Cursor<'a>, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        self.eat(b"{")?;
        if self.next_is(b"}") {
            return Some(());
        }
        loop {
            let key = self.key()?;
            field(self, key)?;
            if self.next_is(b"}") {
                return Some(());
            }
            self.eat(b",")?;
        }
    }
}

/// Sets `slot` once: a key given twice is not for the fast path.
pub(crate) fn once<T>(slot: &mut Option<T>, value: Option<T>) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value?);
    Some(())
}

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

/// Decodes engine_newPayloadV1..V4 params (`[payload]` for V1/V2; `[payload,
/// versionedHashes, parentBeaconBlockRoot (, executionRequests)]` for V3/V4) at their fixed
/// shape; `None` means "use serde". A V2 payload is Paris's without withdrawals and
/// Shanghai's with them, as `fork` says; a mismatch is serde's to report.
pub(crate) fn new_payload_from_json(
    version: u8,
    fork: Fork,
    doc: &[u8],
) -> Option<crate::message::NewPayload> {
    use crate::message::NewPayload;
    let mut c = Cursor { doc, at: 0 };
    c.eat(b"[")?;
    let np = match version {
        1 => NewPayload::Paris(payload(&mut c)?.v1()?),
        2 if fork == Fork::Paris => NewPayload::Paris(payload(&mut c)?.v1()?),
        2 => NewPayload::Shanghai(payload(&mut c)?.v2()?),
        3 | 4 => {
            let payload = payload_v3(&mut c)?;
            c.eat(b",")?;
            let hashes = hash_list(&mut c)?;
            c.eat(b",")?;
            let root = c.fixed()?;
            if version == 3 {
                NewPayload::Cancun(payload, hashes, root)
            } else {
                c.eat(b",")?;
                NewPayload::Prague(payload, hashes, root, bytes_list(&mut c)?.into())
            }
        }
        _ => return None,
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
    let mut c = Cursor { doc, at: 0 };
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
    let mut c = Cursor { doc, at: 0 };
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
