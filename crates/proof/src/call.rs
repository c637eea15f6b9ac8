//! eth_call over a `CallProof` (spec §4.7, §10): every account and slot the call may read
//! proven against one state root, that root proven to a signed header, and the call run in
//! revm over exactly that state.
//!
//! Differences from colibri (§15 items 13, 14): storage values are the Patricia walk's result
//! (absent → 0); the block context is not in the proof, so a call that reads it (COINBASE,
//! TIMESTAMP, NUMBER, PREVRANDAO, GASLIMIT, BASEFEE, BLOBBASEFEE, BLOCKHASH) is refused as
//! unprovable instead of run with zeros; the EVM revision comes from the chain's fork table
//! at the block's time and the chain id from the verifier's configuration (colibri: chain id
//! 1 always); a revert is reported as such, with its data. The caller and the zero address
//! (the fee recipient here) may stay out of the proof as long as nothing reads their state:
//! an opcode (BALANCE, EXTCODE*, a CALL, a SELFDESTRUCT paying them) or an EIP-7702
//! delegation to them makes the call unprovable; a delegation to any account outside the
//! proof does too. The call object, its gas (geth's 50M RPC cap), the transaction and the
//! EVM configuration are sszgate-rpc's, shared with the local mode. Not bound by the proof:
//! the gas left (a call that depends on the exact gas limit may differ from a node's answer).

use std::collections::{HashMap, HashSet};

use alloy_primitives::{Address, B256, Bytes, keccak256};
use alloy_trie::KECCAK_EMPTY;
use revm::bytecode::Bytecode;
use revm::context::result::ExecutionResult;
use revm::primitives::hardfork::SpecId;
use revm::state::AccountInfo;
use serde_json::Value;
use sszgate_exec::{BlockContext, CallRequest, ProvenAccount, ProvenState, Run};

use crate::accounts::{prove_account, verify_state_proof};
use crate::error::{Check, ProofError, ensure, fail};
use crate::params;
use crate::render::bytes;
use crate::trust::TrustedState;
use crate::types::{CallProof, CodeUnion};

/// Proves every account of the proof against one state root; returns the root and the
/// accounts with their code (shipped, or from `codes`, checked against the code hash).
fn prove_accounts(
    p: &CallProof,
    codes: &HashMap<B256, Bytes>,
) -> Result<(B256, HashMap<Address, ProvenAccount>), ProofError> {
    let mut root = None;
    let mut accounts = HashMap::new();
    for (i, a) in p.accounts.iter().enumerate() {
        let what = format!("CallProof.accounts[{i}]");
        let proven = prove_account(&a.account_proof, a.address, &a.storage_proof, &what)?;
        ensure(
            root.is_none_or(|r| r == proven.state_root),
            Check::AccountProof,
            || format!("{what}: a different state root than the other accounts"),
        )?;
        root = Some(proven.state_root);
        let hash = proven.account.code_hash;
        let code = match &a.code {
            CodeUnion::Code(code) => {
                ensure(keccak256(&code[..]) == hash, Check::Code, || {
                    format!("{what}.code does not hash to the proven code hash {hash}")
                })?;
                Some(Bytes::copy_from_slice(code))
            }
            _ if hash == KECCAK_EMPTY => Some(Bytes::new()),
            CodeUnion::Used(_) => codes.get(&hash).cloned(),
        };
        let info = AccountInfo {
            balance: proven.account.balance,
            nonce: proven.account.nonce,
            code_hash: hash,
            code: code.map(Bytecode::new_raw),
            ..Default::default()
        };
        let storage = proven.storage.iter().copied().collect();
        ensure(
            accounts
                .insert(a.address, ProvenAccount { info, storage })
                .is_none(),
            Check::AccountProof,
            || format!("{what}: {} twice", a.address),
        )?;
    }
    let Some(root) = root else {
        return fail(Check::AccountProof, "CallProof: no accounts");
    };
    Ok((root, accounts))
}

/// Runs `call` over `accounts` with revision `spec` on chain `chain_id`. The caller and the
/// zero address (the fee recipient of a block context that is not proven) are provisional
/// unless the proof holds them.
fn run(
    accounts: HashMap<Address, ProvenAccount>,
    call: &CallRequest,
    spec: SpecId,
    chain_id: u64,
) -> Result<Value, ProofError> {
    let provisional: HashSet<Address> = [call.from, Address::ZERO]
        .into_iter()
        .filter(|a| !accounts.contains_key(a))
        .collect();
    let state = ProvenState {
        accounts,
        provisional,
    };
    let block = BlockContext::unbound(spec);
    match sszgate_exec::run(&state, &block, chain_id, call) {
        Run::Done(ExecutionResult::Success { output, .. }) => Ok(bytes(output.data())),
        Run::Done(ExecutionResult::Revert { output, .. }) => {
            Err(ProofError::Reverted(const_hex::encode_prefixed(&output)))
        }
        Run::Done(ExecutionResult::Halt { reason, .. }) => {
            Err(ProofError::Reverted(format!("halted: {reason:?}")))
        }
        Run::Needs(needs) => Err(ProofError::Unprovable(needs.reason())),
        Run::Invalid(invalid) => Err(ProofError::Params(format!(
            "the call cannot run: {}",
            invalid.why
        ))),
        Run::Failed(why) => Err(ProofError::Params(why)),
        // No deadline is given here: the proof's call is the client's own.
        Run::TimedOut => Err(ProofError::Params("the call ran past its deadline".into())),
    }
}

/// The EVM revision of a block at beacon `slot`: the chain's fork table at the slot's time
/// (an execution block's timestamp is its slot's).
fn revision(trust: &TrustedState, slot: u64) -> Result<SpecId, ProofError> {
    let spec = &trust.spec;
    let time = slot
        .checked_mul(spec.seconds_per_slot)
        .and_then(|s| s.checked_add(spec.genesis_time));
    time.and_then(|t| trust.forks.revision_at(t))
        .ok_or_else(|| {
            ProofError::Unsupported(format!(
                "eth_call at slot {slot}: no EVM revision in this chain's fork table"
            ))
        })
}

/// eth_call: accounts proven, state root proven, the call run over the proven state.
pub fn verify_call(
    trust: &TrustedState,
    p: &CallProof,
    params: &Value,
) -> Result<Value, ProofError> {
    let call = CallRequest::parse(params.get(0), trust.chain_id)
        .map_err(|e| ProofError::Params(e.to_string()))?;
    let block = params::block(params, 1)?;
    let (root, accounts) = prove_accounts(p, &trust.codes)?;
    verify_state_proof(trust, &p.state_proof, root, &block)?;
    let spec = revision(trust, p.state_proof.header.slot)?;
    run(accounts, &call, spec, trust.chain_id)
}

#[cfg(test)]
mod tests {
    use alloy_primitives::U256;

    use super::*;

    const CONTRACT: Address = Address::repeat_byte(0xc0);

    const CALLER: Address = Address::repeat_byte(0xca);

    /// One contract with `code` and no storage.
    fn contract(code: &[u8]) -> HashMap<Address, ProvenAccount> {
        let code = Bytes::copy_from_slice(code);
        let info = AccountInfo {
            code_hash: keccak256(&code),
            code: Some(Bytecode::new_raw(code)),
            ..Default::default()
        };
        let storage = HashMap::new();
        HashMap::from([(CONTRACT, ProvenAccount { info, storage })])
    }

    /// Runs a call from [`CALLER`] (with `gas`) to a contract with `code` and no storage,
    /// under `spec`.
    fn call_with(code: &[u8], gas: Option<u64>, spec: SpecId) -> Result<Value, ProofError> {
        let gas = gas.map(|g| format!("{g:#x}"));
        let call = serde_json::json!({"from": CALLER, "to": CONTRACT, "gas": gas});
        let call = CallRequest::parse(Some(&call), 1).unwrap();
        run(contract(code), &call, spec, 1)
    }

    /// Runs a call to a contract with `code` and no storage, under Prague.
    fn call_code(code: &[u8]) -> Result<Value, ProofError> {
        call_with(code, None, SpecId::PRAGUE)
    }

    #[test]
    fn a_call_without_gas_runs_under_osaka_with_geths_cap() {
        // GAS PUSH0 MSTORE PUSH1 32 PUSH0 RETURN: the gas left.
        let gas_left = [0x5a, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3];
        let out = call_with(&gas_left, None, SpecId::OSAKA).unwrap();
        let expected = sszgate_exec::RPC_GAS_CAP - 21_000 - 2;
        assert_eq!(out, bytes(B256::from(U256::from(expected))));
        // More than the cap is capped (proof mode's gas was unbounded before Osaka).
        let out = call_with(&gas_left, Some(u64::MAX), SpecId::PRAGUE).unwrap();
        assert_eq!(out, bytes(B256::from(U256::from(expected))));
    }

    #[test]
    fn chainid_is_the_configured_chains() {
        // CHAINID PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
        let accounts = contract(&[0x46, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        let call = serde_json::json!({"to": CONTRACT});
        let call = CallRequest::parse(Some(&call), 1337).unwrap();
        let out = run(accounts, &call, SpecId::OSAKA, 1337).unwrap();
        assert_eq!(out, bytes(B256::from(U256::from(1337))));
    }

    #[test]
    fn a_selfdestruct_to_an_unproven_account_is_unprovable() {
        // CALLER SELFDESTRUCT
        let err = call_code(&[0x33, 0xff]).unwrap_err();
        assert!(
            matches!(&err, ProofError::Unprovable(w) if w.contains(&CALLER.to_string())),
            "{err}"
        );
        // PUSH20 <outside the proof> SELFDESTRUCT
        let mut code = vec![0x73];
        code.extend_from_slice(&[0x11; 20]);
        code.push(0xff);
        let err = call_code(&code).unwrap_err();
        assert!(matches!(err, ProofError::Unprovable(_)), "{err}");
    }

    #[test]
    fn a_delegation_to_an_account_outside_the_proof_is_unprovable() {
        for to in [CALLER, Address::ZERO, Address::repeat_byte(0x11)] {
            let mut code = vec![0xef, 0x01, 0x00];
            code.extend_from_slice(to.as_slice());
            let err = call_code(&code).unwrap_err();
            assert!(
                matches!(&err, ProofError::Unprovable(w) if w.contains("delegates")),
                "{to}: {err}"
            );
        }
    }

    #[test]
    fn returns_what_the_code_returns() {
        // PUSH1 42, PUSH0, MSTORE, PUSH1 32, PUSH0, RETURN
        let out = call_code(&[0x60, 42, 0x5f, 0x52, 0x60, 32, 0x5f, 0xf3]).unwrap();
        assert_eq!(out, bytes(B256::with_last_byte(42)));
    }

    #[test]
    fn block_context_and_unproven_state_are_unprovable() {
        for (op, name) in [
            (0x43, "NUMBER"),
            (0x42, "TIMESTAMP"),
            (0x41, "COINBASE"),
            (0x48, "BASEFEE"),
        ] {
            let err = call_code(&[op, 0x5f, 0x52, 0x60, 32, 0x5f, 0xf3]).unwrap_err();
            assert!(
                matches!(&err, ProofError::Unprovable(w) if w.contains(name)),
                "{err}"
            );
        }
        // SLOAD of slot 0, which the proof does not hold.
        let err = call_code(&[0x5f, 0x54, 0x00]).unwrap_err();
        assert!(
            matches!(&err, ProofError::Unprovable(w) if w.contains("storage")),
            "{err}"
        );
        // BALANCE of the (unproven) caller.
        let err = call_code(&[0x33, 0x31, 0x00]).unwrap_err();
        assert!(matches!(err, ProofError::Unprovable(_)), "{err}");
    }

    #[test]
    fn a_revert_is_reported_with_its_data() {
        // PUSH1 0xaa, PUSH0, MSTORE8, PUSH1 1, PUSH0, REVERT
        let err = call_code(&[0x60, 0xaa, 0x5f, 0x53, 0x60, 1, 0x5f, 0xfd]).unwrap_err();
        assert!(
            matches!(&err, ProofError::Reverted(d) if d == "0xaa"),
            "{err}"
        );
    }
}
