//! eth_call over a `CallProof` (spec §4.7, §10): every account and slot the call may read
//! proven against one state root, that root proven to a signed header, and the call run in
//! revm over exactly that state.
//!
//! Differences from colibri (§15 items 13, 14): storage values are the Patricia walk's result
//! (absent → 0); the block context is not in the proof, so a call that reads it (COINBASE,
//! TIMESTAMP, NUMBER, PREVRANDAO, GASLIMIT, BASEFEE, BLOBBASEFEE, BLOCKHASH) is refused as
//! unprovable instead of run with zeros; the EVM revision is the signed header's fork (Deneb →
//! Cancun, Electra → Prague, Fulu → Osaka); a revert is reported as such, with its data. The
//! caller and the zero address (the fee recipient here) may stay out of the proof as long as
//! no opcode reads their state. Not bound by the proof: the gas left (a call that depends on
//! the exact gas limit may differ from a node's answer; `gas` defaults to [`DEFAULT_GAS`]).

use std::collections::HashMap;

use alloy_primitives::{Address, B256, Bytes, TxKind, U256, keccak256};
use alloy_trie::KECCAK_EMPTY;
use revm::bytecode::Bytecode;
use revm::context::result::{EVMError, ExecutionResult};
use revm::context::{BlockEnv, TxEnv};
use revm::database_interface::DBErrorMarker;
use revm::interpreter::Interpreter;
use revm::interpreter::interpreter::EthInterpreter;
use revm::interpreter::interpreter_types::Jumps;
use revm::primitives::hardfork::SpecId;
use revm::state::AccountInfo;
use revm::{Context, Database, InspectEvm, Inspector, MainBuilder, MainContext};
use serde_json::Value;

use crate::accounts::{prove_account, verify_state_proof};
use crate::error::{Check, ProofError, ensure, fail};
use crate::params;
use crate::render::bytes;
use crate::trust::TrustedState;
use crate::types::{CallProof, CodeUnion};

/// Gas of a call that names none.
pub const DEFAULT_GAS: u64 = 30_000_000;

/// An account the call may read.
struct Proven {
    info: AccountInfo,
    storage: HashMap<B256, U256>,
}

/// Why a run could not finish over the proven state.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Unproven(String);

impl DBErrorMarker for Unproven {}

struct ProofDb<'a> {
    accounts: &'a HashMap<Address, Proven>,
    /// Accounts the EVM loads for its bookkeeping (caller, fee recipient): empty when absent.
    bookkeeping: [Address; 2],
}

impl Database for ProofDb<'_> {
    type Error = Unproven;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, Unproven> {
        match self.accounts.get(&address) {
            Some(a) => Ok(Some(a.info.clone())),
            None if self.bookkeeping.contains(&address) => Ok(None),
            None => Err(Unproven(format!("missing account proof for {address}"))),
        }
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, Unproven> {
        self.accounts
            .values()
            .find(|a| a.info.code_hash == code_hash)
            .and_then(|a| a.info.code.clone())
            .ok_or_else(|| {
                Unproven(format!(
                    "code {code_hash} is neither in the proof nor known"
                ))
            })
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, Unproven> {
        let key = B256::from(index);
        self.accounts
            .get(&address)
            .and_then(|a| a.storage.get(&key).copied())
            .ok_or_else(|| Unproven(format!("missing storage proof for {address} slot {key}")))
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, Unproven> {
        Err(Unproven(format!("BLOCKHASH({number}) is not in the proof")))
    }
}

/// Refuses opcodes that read what the proof does not bind.
struct ContextGuard {
    bookkeeping: [Address; 2],
    unproven: Option<String>,
}

impl<CTX> Inspector<CTX, EthInterpreter> for ContextGuard {
    fn step(&mut self, interp: &mut Interpreter<EthInterpreter>, _context: &mut CTX) {
        let op = interp.bytecode.opcode();
        let name = match op {
            0x41 => "COINBASE",
            0x42 => "TIMESTAMP",
            0x43 => "NUMBER",
            0x44 => "PREVRANDAO",
            0x45 => "GASLIMIT",
            0x48 => "BASEFEE",
            0x4a => "BLOBBASEFEE",
            _ => {
                // BALANCE, EXTCODE*, and the CALLs (address under the gas) of an unproven account.
                let depth = match op {
                    0x31 | 0x3b | 0x3c | 0x3f => 0,
                    0xf1 | 0xf2 | 0xf4 | 0xfa => 1,
                    _ => return,
                };
                let Ok(word) = interp.stack.peek(depth) else {
                    return;
                };
                let address = Address::from_word(B256::from(word));
                if self.bookkeeping.contains(&address) && self.unproven.is_none() {
                    self.unproven = Some(format!("the call reads the unproven account {address}"));
                }
                return;
            }
        };
        if self.unproven.is_none() {
            self.unproven = Some(format!(
                "the call reads {name}, which the proof does not bind"
            ));
        }
    }
}

/// The call object of eth_call.
struct Call {
    from: Address,
    to: Address,
    data: Bytes,
    value: U256,
    gas: u64,
}

fn parse_call(params: &Value) -> Result<Call, ProofError> {
    let o = params::param(params, 0)?
        .as_object()
        .ok_or_else(|| ProofError::Params("param 0: not a call object".into()))?;
    let bad = |k: &str| ProofError::Params(format!("param 0: bad {k}"));
    let text = |k: &str| o.get(k).and_then(Value::as_str);
    let to = text("to")
        .ok_or_else(|| bad("to (contract creation is not verified)"))?
        .parse()
        .map_err(|_| bad("to"))?;
    let from = text("from")
        .map(str::parse)
        .transpose()
        .map_err(|_| bad("from"))?
        .unwrap_or_default();
    let data = text("input")
        .or(text("data"))
        .map(str::parse::<Bytes>)
        .transpose()
        .map_err(|_| bad("data"))?
        .unwrap_or_default();
    let number = |k: &str| {
        o.get(k)
            .map(|v| params::u256_of(v).ok_or_else(|| bad(k)))
            .transpose()
    };
    let value = number("value")?.unwrap_or_default();
    let gas = number("gas")?.map_or(Ok(DEFAULT_GAS), |g| {
        u64::try_from(g).map_err(|_| bad("gas"))
    })?;
    Ok(Call {
        from,
        to,
        data,
        value,
        gas,
    })
}

/// Proves every account of the proof against one state root; returns the root and the
/// accounts with their code (shipped, or from `codes`, checked against the code hash).
fn prove_accounts(
    p: &CallProof,
    codes: &HashMap<B256, Bytes>,
) -> Result<(B256, HashMap<Address, Proven>), ProofError> {
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
                .insert(a.address, Proven { info, storage })
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

/// The EVM revision of a beacon fork version: Deneb Cancun, Electra Prague, Fulu Osaka.
fn revision(fork_version: [u8; 4]) -> Result<SpecId, ProofError> {
    match fork_version[0] {
        4 => Ok(SpecId::CANCUN),
        5 => Ok(SpecId::PRAGUE),
        6 => Ok(SpecId::OSAKA),
        v => Err(ProofError::Unsupported(format!(
            "eth_call in beacon fork {v}"
        ))),
    }
}

/// Runs `call` over `accounts` with revision `spec`.
fn run(
    accounts: &HashMap<Address, Proven>,
    call: &Call,
    spec: SpecId,
) -> Result<Value, ProofError> {
    let bookkeeping = [call.from, Address::ZERO];
    let mut guard = ContextGuard {
        bookkeeping,
        unproven: None,
    };
    let result = {
        let db = ProofDb {
            accounts,
            bookkeeping,
        };
        let ctx = Context::mainnet()
            .with_db(db)
            .with_block(BlockEnv {
                gas_limit: call.gas,
                ..Default::default()
            })
            .modify_cfg_chained(|cfg| sszgate_rpc::eth_call_cfg(cfg, spec, 1));
        let tx = TxEnv {
            caller: call.from,
            gas_limit: call.gas,
            gas_price: 0,
            kind: TxKind::Call(call.to),
            value: call.value,
            data: call.data.clone(),
            nonce: 0,
            chain_id: Some(1),
            ..Default::default()
        };
        ctx.build_mainnet_with_inspector(&mut guard)
            .inspect_one_tx(tx)
    };
    if let Some(why) = guard.unproven {
        return Err(ProofError::Unprovable(why));
    }
    match result {
        Ok(ExecutionResult::Success { output, .. }) => Ok(bytes(output.data())),
        Ok(ExecutionResult::Revert { output, .. }) => {
            Err(ProofError::Reverted(const_hex::encode_prefixed(&output)))
        }
        Ok(ExecutionResult::Halt { reason, .. }) => {
            Err(ProofError::Reverted(format!("halted: {reason:?}")))
        }
        Err(EVMError::Database(Unproven(why))) => Err(ProofError::Unprovable(why)),
        Err(e) => Err(ProofError::Params(format!("the call cannot run: {e}"))),
    }
}

/// eth_call: accounts proven, state root proven, the call run over the proven state.
pub fn verify_call(
    trust: &TrustedState,
    p: &CallProof,
    params: &Value,
) -> Result<Value, ProofError> {
    let call = parse_call(params)?;
    let block = params::block(params, 1)?;
    let (root, accounts) = prove_accounts(p, &trust.codes)?;
    verify_state_proof(trust, &p.state_proof, root, &block)?;
    let slot = p.state_proof.header.slot;
    run(
        &accounts,
        &call,
        revision(trust.spec.fork_version(trust.spec.epoch(slot)))?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTRACT: Address = Address::repeat_byte(0xc0);

    /// Runs a call to a contract with `code` and no storage.
    fn call_code(code: &[u8]) -> Result<Value, ProofError> {
        let code = Bytes::copy_from_slice(code);
        let info = AccountInfo {
            code_hash: keccak256(&code),
            code: Some(Bytecode::new_raw(code)),
            ..Default::default()
        };
        let accounts = HashMap::from([(
            CONTRACT,
            Proven {
                info,
                storage: HashMap::new(),
            },
        )]);
        let call = Call {
            from: Address::ZERO,
            to: CONTRACT,
            data: Bytes::new(),
            value: U256::ZERO,
            gas: DEFAULT_GAS,
        };
        run(&accounts, &call, SpecId::PRAGUE)
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
