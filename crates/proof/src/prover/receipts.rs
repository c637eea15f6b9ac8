//! The prover's receipts and logs (spec §12.2): a block's receipts re-encoded from the node's
//! `eth_getBlockReceipts`, their Patricia trie built and the proof of one receipt taken from
//! it (or all of them, with the receipts that hold a filter's logs, for a `LogsRangeProof`); the node's receipt and logs converted to `EthReceiptData` and `Log` (§5.2, §5.3).
//!
//! What does not live here: the beacon side (`prover`).

use alloy_consensus::ReceiptEnvelope;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes};
use alloy_trie::root::adjust_index_for_rlp;
use alloy_trie::{HashBuilder, Nibbles, proof::ProofRetainer};
use serde_json::Value;
use ssz_types::VariableList;
use ssz_types::typenum::Unsigned;

use super::{ProveError, upstream};
use crate::filter::Filter;
use crate::types::{BigBytes, EthReceiptData, Log};

/// A block's receipts: decoded, and their trie encodings.
pub struct BlockReceipts {
    receipts: Vec<ReceiptEnvelope>,
    encoded: Vec<Vec<u8>>,
}

impl BlockReceipts {
    /// Re-encodes the node's `eth_getBlockReceipts` answer.
    pub fn from_json(answer: &Value) -> Result<BlockReceipts, ProveError> {
        let receipts: Vec<alloy_rpc_types_eth::TransactionReceipt> =
            serde_json::from_value(answer.clone())
                .map_err(|e| upstream(format!("eth_getBlockReceipts: {e}")))?;
        let receipts: Vec<ReceiptEnvelope> = receipts
            .into_iter()
            .map(|r| r.inner.into_primitives_receipt())
            .collect();
        let encoded = receipts.iter().map(|r| r.encoded_2718()).collect();
        Ok(BlockReceipts { receipts, encoded })
    }

    /// The receipts' EIP-2718 encodings, in order.
    pub fn encoded(&self) -> &[Vec<u8>] {
        &self.encoded
    }

    /// The root of the receipts' trie (`receiptsRoot`).
    pub fn root(&self) -> B256 {
        alloy_trie::root::ordered_trie_root_encoded(&self.encoded)
    }

    /// The indices of the receipts that hold a log matching `filter`.
    pub fn matching(&self, filter: &Filter) -> Vec<u32> {
        (0u32..)
            .zip(&self.receipts)
            .filter(|(_, r)| {
                r.logs()
                    .iter()
                    .any(|l| filter.matches(&l.address, l.topics()))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The trie nodes from the root to receipt `index` (keys `rlp(i)`, values the encodings).
    pub fn proof<N: Unsigned>(
        &self,
        index: usize,
    ) -> Result<VariableList<BigBytes, N>, ProveError> {
        let len = self.encoded.len();
        if index >= len {
            return Err(upstream(format!("no receipt {index} among {len}")));
        }
        let key = |i: usize| Nibbles::unpack(alloy_rlp::encode(i));
        let mut hb =
            HashBuilder::default().with_proof_retainer(ProofRetainer::new(vec![key(index)]));
        // Keys in nibble order: rlp(0) = 0x80 sorts after rlp(1..=127).
        for i in 0..len {
            let at = adjust_index_for_rlp(i, len);
            hb.add_leaf(key(at), &self.encoded[at]);
        }
        hb.root();
        let nodes: Vec<BigBytes> = hb
            .take_proof_nodes()
            .into_nodes_sorted()
            .into_iter()
            .map(|(_, n)| BigBytes::new(n.to_vec()).map_err(|e| upstream(format!("{e:?}"))))
            .collect::<Result<_, _>>()?;
        VariableList::new(nodes).map_err(|e| upstream(format!("receipt proof too long: {e:?}")))
    }
}

fn field<T: serde::de::DeserializeOwned>(v: &Value, name: &str) -> Result<T, ProveError> {
    serde_json::from_value(v[name].clone()).map_err(|e| upstream(format!("{name}: {e}")))
}

fn quantity(v: &Value, name: &str) -> Result<u64, ProveError> {
    let n: alloy_primitives::U64 = field(v, name)?;
    Ok(n.to())
}

/// The node's JSON log as a `Log`.
pub fn log_of(v: &Value) -> Result<Log, ProveError> {
    let topics: Vec<B256> = field(v, "topics")?;
    let data: Bytes = field(v, "data")?;
    Ok(Log {
        block_hash: field(v, "blockHash")?,
        block_number: quantity(v, "blockNumber")?,
        transaction_hash: field(v, "transactionHash")?,
        transaction_index: quantity(v, "transactionIndex")? as u32,
        address: field(v, "address")?,
        log_index: quantity(v, "logIndex")? as u32,
        removed: v["removed"].as_bool().unwrap_or(false),
        topics: VariableList::new(topics).map_err(|e| upstream(format!("topics: {e:?}")))?,
        data: BigBytes::new(data.to_vec()).map_err(|e| upstream(format!("data: {e:?}")))?,
    })
}

/// The node's JSON receipt as `EthReceiptData`, the mask naming the fields it has (§5.2).
pub fn receipt_data(v: &Value) -> Result<EthReceiptData, ProveError> {
    const NAMES: [&str; 15] = [
        "blockHash",
        "blockNumber",
        "transactionHash",
        "transactionIndex",
        "type",
        "from",
        "to",
        "cumulativeGasUsed",
        "gasUsed",
        "logs",
        "logsBloom",
        "status",
        "effectiveGasPrice",
        "depositNonce",
        "depositReceiptVersion",
    ];
    let optmask = NAMES
        .iter()
        .enumerate()
        .filter(|(_, n)| !v[**n].is_null())
        .fold(0u32, |m, (i, _)| m | 1 << (i + 1));
    let to: Option<Address> = field(v, "to")?;
    let logs = v["logs"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(log_of)
        .collect::<Result<Vec<_>, _>>()?;
    let optional = |name: &str| {
        if v[name].is_null() {
            Ok(0)
        } else {
            quantity(v, name)
        }
    };
    Ok(EthReceiptData {
        optmask,
        block_hash: field(v, "blockHash")?,
        block_number: quantity(v, "blockNumber")?,
        transaction_hash: field(v, "transactionHash")?,
        transaction_index: quantity(v, "transactionIndex")? as u32,
        tx_type: quantity(v, "type")? as u8,
        from: field(v, "from")?,
        to: VariableList::new(to.map(|a| a.to_vec()).unwrap_or_default())
            .map_err(|e| upstream(format!("to: {e:?}")))?,
        cumulative_gas_used: quantity(v, "cumulativeGasUsed")?,
        gas_used: quantity(v, "gasUsed")?,
        logs: VariableList::new(logs).map_err(|e| upstream(format!("logs: {e:?}")))?,
        logs_bloom: field(v, "logsBloom")?,
        status: optional("status")? as u8,
        effective_gas_price: optional("effectiveGasPrice")?,
        deposit_nonce: optional("depositNonce")?,
        deposit_receipt_version: optional("depositReceiptVersion")? as u32,
    })
}
