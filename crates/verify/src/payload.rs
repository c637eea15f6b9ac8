//! Payload checks: the block hash recomputed from the payload, every transaction decoding, the
//! spec's field limits, and the versioned hashes a CL sends against the blob transactions.
//!
//! The header is rebuilt with alloy (`into_block_raw`: transactions and withdrawals roots from
//! the payload, the parent beacon block root and the requests hash set per fork) and hashed;
//! the payload's own `block_hash` must match. KZG checks live in [`crate::blobs`].

use alloy_consensus::TxEnvelope;
use alloy_eips::{eip2718::Decodable2718, eip7685::Requests};
use alloy_primitives::B256;
use alloy_rpc_types_engine::ExecutionPayloadV1;
use sszgate_engine::{
    message::{BuiltPayload, NewPayload},
    txs::blob_versioned_hashes,
};

use crate::{Check, Failure};

/// The spec's limits on a payload's lists and byte fields.
const MAX_EXTRA_DATA_BYTES: usize = 32;
const MAX_TRANSACTIONS_PER_PAYLOAD: usize = 1 << 20;
const MAX_BYTES_PER_TRANSACTION: usize = 1 << 30;
const MAX_WITHDRAWALS_PER_PAYLOAD: usize = 1 << 16;

/// Every check of a newPayload request: limits, transactions, versioned hashes, block hash.
pub fn check_new_payload(np: &NewPayload) -> Result<(), Failure> {
    check_limits(np.payload_v1(), withdrawals(np))?;
    check_transactions(np.payload_v1())?;
    if !matches!(np, NewPayload::Paris(_) | NewPayload::Shanghai(_)) {
        let derived = blob_versioned_hashes(&np.payload_v1().transactions)
            .map_err(|e| Failure::new(Check::Transactions, e.to_string()))?;
        if derived != np.versioned_hashes() {
            return Err(Failure::new(
                Check::VersionedHashes,
                format!(
                    "the CL sent {} versioned hashes that differ from the {} of the blob transactions{}",
                    np.versioned_hashes().len(),
                    derived.len(),
                    first_difference(np.versioned_hashes(), &derived)
                ),
            ));
        }
    }
    check_block_hash(np)
}

/// The checks of a getPayload answer that need no KZG: limits, transactions and, when the
/// parent beacon block root of its attributes is known (`root`, needed from Cancun on), the
/// block hash. `Ok(false)`: all passed but the block hash could not be checked.
pub fn check_built(built: &BuiltPayload, root: Option<B256>) -> Result<bool, Failure> {
    let payload_and_requests = built.to_new_payload(vec![], root);
    let v1 = built.payload_v1();
    check_transactions(v1)?;
    match payload_and_requests {
        Some(np) => {
            check_limits(v1, withdrawals(&np))?;
            check_block_hash(&np)?;
            Ok(true)
        }
        None => {
            check_limits(v1, 0)?;
            Ok(false)
        }
    }
}

fn withdrawals(np: &NewPayload) -> usize {
    match np {
        NewPayload::Paris(_) => 0,
        NewPayload::Shanghai(p) => p.withdrawals.len(),
        NewPayload::Cancun(p, ..) | NewPayload::Prague(p, ..) => p.payload_inner.withdrawals.len(),
        NewPayload::Amsterdam(p, ..) => p.payload_inner.payload_inner.withdrawals.len(),
    }
}

fn check_limits(p: &ExecutionPayloadV1, withdrawals: usize) -> Result<(), Failure> {
    let over = |what: &str, n: usize, max: usize| {
        Err(Failure::new(
            Check::Limits,
            format!("{what}: {n} is over the limit of {max}"),
        ))
    };
    if p.extra_data.len() > MAX_EXTRA_DATA_BYTES {
        return over(
            "payload.extraData bytes",
            p.extra_data.len(),
            MAX_EXTRA_DATA_BYTES,
        );
    }
    if p.transactions.len() > MAX_TRANSACTIONS_PER_PAYLOAD {
        return over(
            "payload.transactions",
            p.transactions.len(),
            MAX_TRANSACTIONS_PER_PAYLOAD,
        );
    }
    if let Some((i, tx)) = p
        .transactions
        .iter()
        .enumerate()
        .find(|(_, tx)| tx.len() > MAX_BYTES_PER_TRANSACTION)
    {
        return over(
            &format!("payload.transactions[{i}] bytes"),
            tx.len(),
            MAX_BYTES_PER_TRANSACTION,
        );
    }
    if withdrawals > MAX_WITHDRAWALS_PER_PAYLOAD {
        return over(
            "payload.withdrawals",
            withdrawals,
            MAX_WITHDRAWALS_PER_PAYLOAD,
        );
    }
    if p.gas_used > p.gas_limit {
        return Err(Failure::new(
            Check::Limits,
            format!(
                "payload.gasUsed {} is over payload.gasLimit {}",
                p.gas_used, p.gas_limit
            ),
        ));
    }
    Ok(())
}

/// Every transaction decodes as an EIP-2718 envelope (legacy, 2930, 1559, 4844, 7702), with
/// nothing left over.
fn check_transactions(p: &ExecutionPayloadV1) -> Result<(), Failure> {
    for (i, tx) in p.transactions.iter().enumerate() {
        let mut rest = tx.as_ref();
        if let Err(e) = TxEnvelope::decode_2718(&mut rest) {
            return Err(Failure::new(
                Check::Transactions,
                format!("payload.transactions[{i}] does not decode: {e}"),
            ));
        }
        if !rest.is_empty() {
            return Err(Failure::new(
                Check::Transactions,
                format!(
                    "payload.transactions[{i}]: {} bytes after the transaction",
                    rest.len()
                ),
            ));
        }
    }
    Ok(())
}

/// The block hash of the header rebuilt from `np`.
pub fn block_hash(np: &NewPayload) -> Result<B256, Failure> {
    let invalid = |e: alloy_rpc_types_engine::PayloadError| {
        Failure::new(
            Check::BlockHash,
            format!("the header cannot be rebuilt: {e}"),
        )
    };
    let (mut header, root, requests): (_, Option<B256>, Option<&Requests>) = match np {
        NewPayload::Paris(p) => (
            p.clone().into_block_raw().map_err(invalid)?.header,
            None,
            None,
        ),
        NewPayload::Shanghai(p) => (
            p.clone().into_block_raw().map_err(invalid)?.header,
            None,
            None,
        ),
        NewPayload::Cancun(p, _, root) => (
            p.clone().into_block_raw().map_err(invalid)?.header,
            Some(*root),
            None,
        ),
        NewPayload::Prague(p, _, root, requests) => (
            p.clone().into_block_raw().map_err(invalid)?.header,
            Some(*root),
            Some(requests),
        ),
        NewPayload::Amsterdam(..) => {
            return Err(Failure::new(
                Check::BlockHash,
                "Amsterdam payloads (block access lists) are not checked yet",
            ));
        }
    };
    header.parent_beacon_block_root = root;
    header.requests_hash = requests.map(Requests::requests_hash);
    Ok(header.hash_slow())
}

fn check_block_hash(np: &NewPayload) -> Result<(), Failure> {
    let claimed = np.payload_v1().block_hash;
    let computed = block_hash(np)?;
    if computed != claimed {
        return Err(Failure::new(
            Check::BlockHash,
            format!("payload.blockHash is {claimed}, the payload hashes to {computed}"),
        ));
    }
    Ok(())
}

/// ` (first difference at [i])` for two lists of hashes, or nothing.
fn first_difference(a: &[B256], b: &[B256]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!(" (first difference at [{i}]: {} vs {})", a[i], b[i]),
        None => String::new(),
    }
}
