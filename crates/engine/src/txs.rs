//! What the Engine API needs to know about transactions: the blob versioned hashes of the
//! type-3 (EIP-4844) transactions of a payload, in order.
//!
//! REST-SSZ drops `expected_blob_versioned_hashes` from `POST /payloads`; the JSON-RPC side
//! still needs them, so a translator derives them here. Only type-3 transactions are decoded.

use alloy_consensus::{TxEip4844Variant, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{B256, Bytes};

use crate::error::{Error, Result};

/// The EIP-2718 type byte of blob transactions.
pub const BLOB_TX_TYPE: u8 = 0x03;

/// The versioned hashes of every blob transaction in `transactions`, in block order.
pub fn blob_versioned_hashes(transactions: &[Bytes]) -> Result<Vec<B256>> {
    let mut hashes = Vec::new();
    for (index, tx) in transactions.iter().enumerate() {
        if tx.first() != Some(&BLOB_TX_TYPE) {
            continue;
        }
        let envelope = TxEnvelope::decode_2718(&mut tx.as_ref()).map_err(|e| Error::Invalid {
            what: format!("payload.transactions[{index}]"),
            detail: format!("blob transaction does not decode: {e}"),
        })?;
        if let TxEnvelope::Eip4844(signed) = envelope {
            let blob_hashes = match signed.tx() {
                TxEip4844Variant::TxEip4844(tx) => &tx.blob_versioned_hashes,
                TxEip4844Variant::TxEip4844WithSidecar(tx) => &tx.tx.blob_versioned_hashes,
            };
            hashes.extend_from_slice(blob_hashes);
        }
    }
    Ok(hashes)
}
