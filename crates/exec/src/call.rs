//! The `eth_call` request and the EVM configuration both verifiers run it under: the call
//! object ([`CallRequest`]: every field used as geth uses it or refused by name), its gas
//! ([`call_gas`]: geth's 50M RPC cap, no EIP-7825 cap, as geth's eth_call), the transaction
//! ([`tx_env`]), the EVM configuration ([`eth_call_cfg`]) and the reads the state guards watch
//! ([`account_read`], [`delegate_of`]).
//!
//! Not here: running the call over proven state (`evm`); fetching anything.

use alloy_eips::eip2930::AccessList;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use revm::{
    bytecode::Bytecode,
    context::TxEnv,
    interpreter::{Interpreter, interpreter::EthInterpreter, interpreter_types::Jumps},
    primitives::hardfork::SpecId,
    state::AccountInfo,
};
use serde_json::Value;

/// A call object that cannot be run as asked: the message names the field (`param 0: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidCall(pub String);

/// The gas of a call that names none, and the most a call may use: geth's default RPC gas cap
/// (`--rpc.gascap`). Like geth's eth_call, the EIP-7825 per-transaction cap does not apply.
pub const RPC_GAS_CAP: u64 = 50_000_000;

/// The EIP-7825 transaction gas cap from Osaka: the most eth_estimateGas answers there, as
/// geth's estimator caps its upper bound.
pub const OSAKA_TX_GAS_CAP: u64 = 1 << 24;

/// Call-object fields accepted with a zero value only: a non-zero fee would be charged to
/// the caller, whose balance is not proven (geth charges it).
const ZERO_ONLY: [&str; 4] = [
    "gasPrice",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
    "maxFeePerBlobGas",
];

/// Call-object fields refused with their name: what they change is not proven here.
const REFUSED: [(&str, &str); 5] = [
    (
        "authorizationList",
        "EIP-7702 authorizations in a call are not verified",
    ),
    (
        "blobVersionedHashes",
        "blob transactions in a call are not verified",
    ),
    ("blobs", "blob sidecars in a call are not verified"),
    ("commitments", "blob sidecars in a call are not verified"),
    ("proofs", "blob sidecars in a call are not verified"),
];

/// Fields a call object may have (geth's `TransactionArgs`, and `type`).
const KNOWN: [&str; 10] = [
    "from",
    "to",
    "gas",
    "value",
    "nonce",
    "data",
    "input",
    "accessList",
    "chainId",
    "type",
];

/// An `eth_call` request: a call (contract creation is not supported).
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// `from`, zero when absent.
    pub from: Address,
    /// `to`.
    pub to: Address,
    /// `data` or `input`.
    pub data: Bytes,
    /// `value`.
    pub value: U256,
    /// `gas`, [`RPC_GAS_CAP`] when absent.
    pub gas: Option<u64>,
    /// `accessList` (warms its accounts and slots, as in a transaction).
    pub access_list: AccessList,
}

impl CallRequest {
    /// Reads the call object of `eth_call` on chain `chain_id`: every field used as geth uses
    /// it, or refused with its name.
    pub fn parse(v: Option<&Value>, chain_id: u64) -> Result<CallRequest, InvalidCall> {
        let bad = |what: &str| InvalidCall(format!("param 0: {what}"));
        let o = v
            .and_then(Value::as_object)
            .ok_or_else(|| bad("not a call object"))?;
        check_fields(o, chain_id)?;
        let field = |k: &str| o.get(k).filter(|v| !v.is_null()).cloned();
        fn read<T: serde::de::DeserializeOwned + Default>(
            v: Option<Value>,
            k: &str,
        ) -> Result<T, InvalidCall> {
            v.map_or(Ok(T::default()), |v| {
                serde_json::from_value(v).map_err(|e| InvalidCall(format!("param 0: {k}: {e}")))
            })
        }
        let to: Address = read(
            Some(field("to").ok_or_else(|| bad("no `to` (contract creation is not verified)"))?),
            "to",
        )?;
        let (input, data): (Bytes, Bytes) =
            (read(field("input"), "input")?, read(field("data"), "data")?);
        if field("input").is_some() && field("data").is_some() && input != data {
            return Err(bad("both input and data set and not equal"));
        }
        let gas = field("gas")
            .map(|g| read::<alloy_primitives::U64>(Some(g), "gas").map(|g| g.to::<u64>()))
            .transpose()?;
        Ok(CallRequest {
            from: read(field("from"), "from")?,
            to,
            data: if field("input").is_some() {
                input
            } else {
                data
            },
            value: read(field("value"), "value")?,
            gas,
            access_list: read(field("accessList"), "accessList")?,
        })
    }

    /// The call object as JSON text, `to` and `data` first (the order clients send).
    pub fn to_json_text(&self) -> String {
        let mut text = format!("{{\"to\":\"{}\",\"data\":\"{}\"", self.to, self.data);
        if !self.from.is_zero() {
            text += &format!(",\"from\":\"{}\"", self.from);
        }
        if !self.value.is_zero() {
            text += &format!(",\"value\":\"{:#x}\"", self.value);
        }
        if let Some(gas) = self.gas {
            text += &format!(",\"gas\":\"{gas:#x}\"");
        }
        text + "}"
    }
}

/// Refuses call-object fields this verifier cannot use as geth does, naming them.
fn check_fields(o: &serde_json::Map<String, Value>, chain_id: u64) -> Result<(), InvalidCall> {
    let bad = |k: &str, why: String| InvalidCall(format!("param 0: {k}: {why}"));
    let quantity = |k: &str| {
        o.get(k)
            .filter(|v| !v.is_null())
            .map(|v| serde_json::from_value::<U256>(v.clone()).map_err(|e| bad(k, e.to_string())))
    };
    for (k, v) in o {
        if let Some((_, why)) = REFUSED.iter().find(|(name, _)| name == k) {
            if !v.is_null() {
                return Err(bad(k, (*why).to_string()));
            }
        } else if !KNOWN.contains(&k.as_str()) && !ZERO_ONLY.contains(&k.as_str()) {
            return Err(bad(k, "not a call field".into()));
        }
    }
    for k in ZERO_ONLY {
        if quantity(k).transpose()?.is_some_and(|n| !n.is_zero()) {
            return Err(bad(
                k,
                "a non-zero fee needs the caller's balance, which is not proven".into(),
            ));
        }
    }
    if o.get("gasPrice").is_some_and(|v| !v.is_null())
        && ["maxFeePerGas", "maxPriorityFeePerGas"]
            .iter()
            .any(|k| o.get(*k).is_some_and(|v| !v.is_null()))
    {
        return Err(bad(
            "gasPrice",
            "both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified".into(),
        ));
    }
    if let Some(id) = quantity("chainId").transpose()?
        && id != U256::from(chain_id)
    {
        let why = format!("{id} is not this chain's id {chain_id}");
        return Err(bad("chainId", why));
    }
    if let Some(ty) = quantity("type").transpose()?
        && ty > U256::from(2)
    {
        let why = format!("{ty}: only calls of type 0, 1 or 2 are verified");
        return Err(bad("type", why));
    }
    quantity("nonce").transpose()?;
    Ok(())
}

/// The gas a call runs with: its `gas`, else [`RPC_GAS_CAP`], and at most that cap (geth's
/// `CallDefaults`).
pub fn call_gas(call: &CallRequest) -> u64 {
    call.gas.unwrap_or(RPC_GAS_CAP).min(RPC_GAS_CAP)
}

/// The transaction of `call` on chain `chain_id`: no gas price, [`call_gas`] gas, its access
/// list (type 1 when it has one).
pub fn tx_env(call: &CallRequest, chain_id: u64) -> TxEnv {
    let with_list = !call.access_list.is_empty();
    TxEnv {
        tx_type: u8::from(with_list),
        caller: call.from,
        gas_limit: call_gas(call),
        gas_price: 0,
        kind: TxKind::Call(call.to),
        value: call.value,
        data: call.data.clone(),
        nonce: 0,
        chain_id: Some(chain_id),
        access_list: call.access_list.clone(),
        ..Default::default()
    }
}

/// The address an opcode about to run reads another account's state of, if any: BALANCE,
/// EXTCODESIZE, EXTCODECOPY, EXTCODEHASH and SELFDESTRUCT (its beneficiary) on top of the
/// stack; CALL, CALLCODE, DELEGATECALL, STATICCALL under the gas. Both verifiers' guards
/// watch these.
pub fn account_read(interp: &Interpreter<EthInterpreter>) -> Option<Address> {
    let depth = match interp.bytecode.opcode() {
        0x31 | 0x3b | 0x3c | 0x3f | 0xff => 0,
        0xf1 | 0xf2 | 0xf4 | 0xfa => 1,
        _ => return None,
    };
    let word = interp.stack.peek(depth).ok()?;
    Some(Address::from_word(B256::from(word)))
}

/// The account an EIP-7702 delegation designator (`0xef0100 || address`) in `info`'s code
/// points to: running the account runs that one's code, so it must be proven too.
pub fn delegate_of(info: &AccountInfo) -> Option<Address> {
    info.code.as_ref().and_then(Bytecode::eip7702_address)
}

/// The EVM configuration of an `eth_call`: revision `spec` on chain `chain_id`, with the
/// nonce, balance, base-fee, fee, block-gas-limit, EIP-3607 and EIP-7825 checks off.
pub fn eth_call_cfg(cfg: &mut revm::context::CfgEnv, spec: SpecId, chain_id: u64) {
    cfg.spec = spec;
    cfg.chain_id = chain_id;
    // geth runs calls with its transaction checks skipped: no EIP-7825 cap (the gas is
    // bounded by `RPC_GAS_CAP` instead).
    cfg.tx_gas_limit_cap = Some(u64::MAX);
    cfg.disable_nonce_check = true;
    cfg.disable_balance_check = true;
    cfg.disable_base_fee = true;
    cfg.disable_fee_charge = true;
    cfg.disable_block_gas_limit = true;
    cfg.disable_eip3607 = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(call: serde_json::Value) -> Result<CallRequest, InvalidCall> {
        CallRequest::parse(Some(&call), 1)
    }

    #[test]
    fn every_call_field_is_used_or_refused_by_name() {
        let to = "0x00000000000000000000000000000000000c0de0";
        let ok = parse(
            serde_json::json!({"to": to, "gasPrice": "0x0", "nonce": "0x5",
            "chainId": "0x1", "type": "0x2", "maxFeePerBlobGas": "0x0", "input": "0x01", "data": "0x01",
            "accessList": [{"address": to, "storageKeys": [B256::ZERO]}]}),
        );
        let ok = ok.unwrap();
        assert_eq!(ok.data, Bytes::from(vec![1]));
        let tx = tx_env(&ok, 1);
        assert_eq!((tx.tx_type, tx.access_list.len()), (1, 1));
        assert_eq!(tx.gas_limit, RPC_GAS_CAP);
        let mut capped = ok.clone();
        capped.gas = Some(RPC_GAS_CAP * 2);
        assert_eq!(call_gas(&capped), RPC_GAS_CAP);
        for (extra, named) in [
            (serde_json::json!({"gasPrice": "0x1"}), "gasPrice"),
            (
                serde_json::json!({"maxFeePerGas": "0x3b9aca00"}),
                "maxFeePerGas",
            ),
            (
                serde_json::json!({"maxPriorityFeePerGas": "0x1"}),
                "maxPriorityFeePerGas",
            ),
            (
                serde_json::json!({"maxFeePerBlobGas": "0x1"}),
                "maxFeePerBlobGas",
            ),
            (
                serde_json::json!({"gasPrice": "0x0", "maxFeePerGas": "0x0"}),
                "both gasPrice",
            ),
            (
                serde_json::json!({"blobVersionedHashes": [B256::ZERO]}),
                "blobVersionedHashes",
            ),
            (
                serde_json::json!({"authorizationList": []}),
                "authorizationList",
            ),
            (serde_json::json!({"chainId": "0x5"}), "chainId"),
            (serde_json::json!({"type": "0x4"}), "type"),
            (
                serde_json::json!({"input": "0x01", "data": "0x02"}),
                "input and data",
            ),
            (serde_json::json!({"gasLimit": "0x1"}), "gasLimit"),
            (serde_json::json!({"accessList": 5}), "accessList"),
        ] {
            let mut call = serde_json::json!({"to": to});
            for (k, v) in extra.as_object().unwrap() {
                call[k] = v.clone();
            }
            let e = parse(call).unwrap_err().to_string();
            assert!(e.contains(named), "{named}: {e}");
        }
    }
}
