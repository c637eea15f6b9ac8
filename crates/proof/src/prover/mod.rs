//! A prover: builds the `C4Request` for one request from an execution RPC and a Beacon API,
//! with the upstream requests colibri's prover makes (spec §12), so that its proofs equal
//! colibri's byte for byte where colibri's are correct.
//!
//! Methods: eth_blockNumber, eth_getBlockByNumber/ByHash, eth_getTransactionByHash and
//! ByBlockHashAndIndex/ByBlockNumberAndIndex,
//! eth_getTransactionReceipt, eth_getLogs (sszgate's `LogsRangeProof`, `logs`; colibri's
//! `LogsProof` with [`Prover::colibri_logs`]), eth_call, and the account methods eth_getBalance,
//! eth_getTransactionCount, eth_getStorageAt, eth_getCode, eth_getProof (block argument a tag,
//! a number or a hash). The signature is always the data block's child's sync aggregate
//! (`signature_proof`); a child with an empty aggregate is refused rather than bridged with a
//! header chain. Sync data is added for a client state (`sync`). Not here yet: header chains,
//! historic proofs, eth_call with state overrides.

mod bounds;
pub mod endpoint;
pub mod logs;
pub mod receipts;
mod sync;
pub mod tree;

use std::time::Duration;

use alloy_primitives::{Address, B256, Bytes};
use serde_json::{Value, json};
use ssz::Encode;
use sszgate_light::block::AnyBlock;
use sszgate_light::store::is_supermajority;
use sszgate_light::{BeaconApi, ChainSpec, HttpBeaconApi};
use sszgate_rpc::Upstream;

use crate::multiproof::{
    BLOCK_HASH, BLOCK_NUMBER, RECEIPTS_ROOT, STATE_ROOT, TIMESTAMP, transaction_gindex,
};
use crate::params::{self, BlockArg};
use crate::trust::ClientState;
use crate::types::{
    AccountProof, BigBytes, BlockNumberProof, BlockProof, C4Request, CallProof, CodeUnion,
    DataUnion, EthCallAccount, ExecutionPayloadUnion, HeaderChainProof, HeaderProofUnion,
    LogsBlock, LogsTx, ProofHeader, ProofUnion, ReceiptProof, StateBlockUnion, StateProof,
    StorageProof, SyncDataUnion, TransactionProof,
};
use ssz_types::VariableList;
use tree::BodyTree;
use tree_hash::TreeHash;

/// The largest beacon block or JSON answer read.
const MAX_ANSWER: usize = 64 << 20;
/// The most blocks one eth_getLogs proof spans (each costs the block's receipts and two
/// beacon blocks from the upstreams), as the local verifier's default.
const MAX_LOG_BLOCKS: usize = 64;
/// The most accounts one eth_call proof carries (each costs an `eth_getProof`).
const MAX_CALL_ACCOUNTS: usize = 256;
/// The most blocks `latest` steps back, or a weakly signed block's proof steps forward, to
/// find one signed by 2/3 of the committee: one epoch. Eight was too few on a devnet whose
/// validators missed sync-committee duties for a while under CPU load (proofs refused for
/// blocks the local mode answered); the proof format allows 128 headers in a chain.
const MAX_SIGNER_SEARCH: usize = 32;
/// Payload gindex of the whole execution payload in the body.
const EXECUTION_PAYLOAD: u64 = 25;

/// Why a proof could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// The upstream failed or answered something unusable.
    #[error("upstream: {0}")]
    Upstream(String),
    /// The request's parameters.
    #[error("params: {0}")]
    Params(String),
    /// A method or case this prover does not build.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

fn upstream(e: impl std::fmt::Display) -> ProveError {
    ProveError::Upstream(e.to_string())
}

/// The two upstreams a prover reads.
pub struct Prover {
    execution: Upstream,
    beacon: HttpBeaconApi,
    spec: ChainSpec,
    /// eth_call: ship the code of every account the call runs (colibri's `include_code`).
    pub include_code: bool,
    /// eth_getLogs in colibri 1.1.19's `LogsProof` (for colibri's verifiers and vectors),
    /// which cannot show that no block of the range was left out; by default sszgate's
    /// `LogsRangeProof`, which can.
    pub colibri_logs: bool,
}

/// A data block with the block whose sync aggregate signs it.
struct Blocks {
    data: AnyBlock,
    /// The blocks after `data` up to the header `signing`'s aggregate signs, oldest first;
    /// empty when `signing` signs `data` itself.
    chain: Vec<AnyBlock>,
    /// The block whose sync aggregate (of at least 2/3 of the committee) signs.
    signing: AnyBlock,
}

impl Prover {
    /// A prover over `execution` (JSON-RPC URL) and `beacon` (Beacon API URL) of mainnet.
    pub fn new(execution: &str, beacon: &str, timeout: Duration) -> Result<Prover, ProveError> {
        Ok(Prover {
            execution: Upstream::new(execution, timeout, MAX_ANSWER).map_err(upstream)?,
            beacon: HttpBeaconApi::new(beacon, timeout).map_err(upstream)?,
            spec: ChainSpec::mainnet(),
            include_code: false,
            colibri_logs: false,
        })
    }

    /// The same prover for the chain `spec` (a devnet's forks and periods).
    pub fn with_spec(mut self, spec: ChainSpec) -> Prover {
        self.spec = spec;
        self
    }

    /// The chain it proves for.
    pub fn spec(&self) -> &ChainSpec {
        &self.spec
    }

    async fn block(&self, id: &str) -> Result<AnyBlock, ProveError> {
        let bytes = self
            .beacon
            .get_ssz(&format!("/eth/v2/beacon/blocks/{id}"), MAX_ANSWER)
            .await
            .map_err(upstream)?;
        AnyBlock::from_ssz(&self.spec, &bytes).map_err(upstream)
    }

    /// `headers?parent_root=`: the root of the child of `parent`.
    async fn child_root(&self, parent: B256) -> Result<B256, ProveError> {
        let v = self
            .beacon
            .get_json(
                &format!("/eth/v1/beacon/headers?parent_root={parent}"),
                MAX_ANSWER,
            )
            .await
            .map_err(upstream)?;
        v["data"][0]["root"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| upstream(format!("no child of {parent}")))
    }

    async fn rpc(&self, method: &str, params: Value) -> Result<Value, ProveError> {
        self.execution.call(method, params).await.map_err(upstream)
    }

    /// The parent beacon root named by execution block `id` (a number or hash).
    async fn parent_beacon_root(&self, method: &str, id: Value) -> Result<B256, ProveError> {
        let block = self.rpc(method, json!([id, false])).await?;
        block["parentBeaconBlockRoot"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| upstream(format!("{method}: no parentBeaconBlockRoot")))
    }

    /// The data block and its signing child for a block argument (§12.1).
    async fn resolve(&self, block: &BlockArg) -> Result<Blocks, ProveError> {
        let (data_root, signing_root) = match block {
            BlockArg::Tag(t) if t == "latest" => return self.latest().await,
            BlockArg::Tag(t) => return Err(ProveError::Unsupported(format!("block tag {t}"))),
            BlockArg::Number(n) => {
                let next = bounds::next_block(*n)?;
                let data = self
                    .parent_beacon_root("eth_getBlockByNumber", json!(format!("{next:#x}")))
                    .await?;
                (data, self.child_root(data).await?)
            }
            BlockArg::Hash(h) => {
                let parent = self
                    .parent_beacon_root("eth_getBlockByHash", json!(h))
                    .await?;
                let data = self.child_root(parent).await?;
                (data, self.child_root(data).await?)
            }
        };
        // The signing block first, then the data block (the order the live test's lying
        // relay expects to tell a signing block from a data block).
        let child = self.block(&signing_root.to_string()).await?;
        let data = self.block(&data_root.to_string()).await?;
        self.signed_after(data, child, signing_root).await
    }

    /// `data` tied to the signatures of 2/3 of the committee: by its `child` when
    /// that child's aggregate has them, else through the chain of headers up to the first
    /// later block whose child's aggregate does (at most [`MAX_SIGNER_SEARCH`] blocks; a
    /// verifier checks the chain by parent roots, spec §7.2) — as on a chain whose
    /// committee signs late after genesis, or skips a slot's aggregate.
    async fn signed_after(
        &self,
        data: AnyBlock,
        child: AnyBlock,
        child_root: B256,
    ) -> Result<Blocks, ProveError> {
        let (mut chain, mut signing, mut signing_root) = (Vec::new(), child, child_root);
        for _ in 0..MAX_SIGNER_SEARCH {
            if is_supermajority(signing.sync_aggregate().participants()) {
                return Ok(Blocks {
                    data,
                    chain,
                    signing,
                });
            }
            signing_root = self.child_root(signing_root).await?;
            chain.push(std::mem::replace(
                &mut signing,
                self.block(&signing_root.to_string()).await?,
            ));
        }
        Err(ProveError::Unsupported(format!(
            "none of the {MAX_SIGNER_SEARCH} blocks after slot {} carries the signatures of 2/3 of the sync committee",
            data.header_with(B256::ZERO).slot
        )))
    }

    /// `latest` (§12.1): the head's parent, signed by the head — or, where fewer than 2/3 of
    /// the committee signed the head (a verifier refuses that), the newest block signed by a
    /// child that has 2/3, at most [`MAX_SIGNER_SEARCH`] blocks back. colibri steps back only
    /// from an empty aggregate.
    async fn latest(&self) -> Result<Blocks, ProveError> {
        let mut signing = self.block("head").await?;
        for _ in 0..MAX_SIGNER_SEARCH {
            let parent = signing.parent_root().to_string();
            if is_supermajority(signing.sync_aggregate().participants()) {
                let data = self.block(&parent).await?;
                return Ok(Blocks {
                    data,
                    chain: Vec::new(),
                    signing,
                });
            }
            signing = self.block(&parent).await?;
        }
        Err(ProveError::Unsupported(format!(
            "none of the newest {MAX_SIGNER_SEARCH} blocks carries the signatures of 2/3 of the sync committee"
        )))
    }

    /// Builds the proof of `method(params)`, SSZ-encoded, with no sync data.
    pub async fn prove(&self, method: &str, params: &Value) -> Result<Vec<u8>, ProveError> {
        self.prove_for(method, params, self.include_code, &ClientState::Empty)
            .await
    }

    /// Builds the proof of `method(params)` for a verifier in `client` state: with the
    /// sync data it needs for the proof's signatures (spec §12.6); `include_code` ships
    /// eth_call's code.
    pub async fn prove_for(
        &self,
        method: &str,
        params: &Value,
        include_code: bool,
        client: &ClientState,
    ) -> Result<Vec<u8>, ProveError> {
        bounds::check(method, params)?;
        let (data, proof) = self.proof(method, params, include_code).await?;
        let needed = signed_slots(&proof)
            .into_iter()
            .map(|slot| self.spec.period(slot))
            .max();
        let sync_data = match needed {
            Some(period) => sync::sync_data(&self.beacon, &self.spec, client, period).await?,
            None => SyncDataUnion::None,
        };
        let request = C4Request {
            version: [0, 0, 1, 0].into(),
            data,
            proof,
            sync_data,
        };
        Ok(request.as_ssz_bytes())
    }

    /// The data and proof of one request.
    async fn proof(
        &self,
        method: &str,
        params: &Value,
        include_code: bool,
    ) -> Result<(DataUnion, ProofUnion), ProveError> {
        let param_err = |e: crate::ProofError| ProveError::Params(e.to_string());
        let (data, proof) = match method {
            "eth_blockNumber" => (DataUnion::None, self.block_number().await?),
            "eth_getBlockByNumber" | "eth_getBlockByHash" => (
                DataUnion::None,
                self.whole_block(&params::block(params, 0).map_err(param_err)?)
                    .await?,
            ),
            "eth_getTransactionByHash" => (
                DataUnion::None,
                self.transaction(params::hash(params, 0).map_err(param_err)?)
                    .await?,
            ),
            "eth_getTransactionByBlockHashAndIndex" | "eth_getTransactionByBlockNumberAndIndex" => {
                let block = params::block(params, 0).map_err(param_err)?;
                let index = params::quantity(params, 1).map_err(param_err)?;
                let index = u32::try_from(index)
                    .map_err(|_| ProveError::Params(format!("index {index}")))?;
                let b = self.resolve(&block).await?;
                (DataUnion::None, transaction_in(&b, index)?)
            }
            "eth_getTransactionReceipt" => {
                self.receipt(params::hash(params, 0).map_err(param_err)?)
                    .await?
            }
            "eth_getLogs" if self.colibri_logs => self.logs(params).await?,
            "eth_getLogs" => self.logs_range(params).await?,
            "eth_call" => (DataUnion::None, self.call(params, include_code).await?),
            "eth_getBalance"
            | "eth_getTransactionCount"
            | "eth_getStorageAt"
            | "eth_getProof"
            | "eth_getCode" => self.account(method, params).await?,
            m => return Err(ProveError::Unsupported(format!("method {m}"))),
        };
        Ok((data, proof))
    }

    async fn block_number(&self) -> Result<ProofUnion, ProveError> {
        let b = self.resolve(&BlockArg::Tag("latest".into())).await?;
        let (header, header_proof, tree) = tie(&b)?;
        let p = b.data.execution_payload();
        Ok(ProofUnion::BlockNumber(Box::new(BlockNumberProof {
            block_number: p.block_number,
            timestamp: p.timestamp,
            proof: nodes(tree.multiproof(&[BLOCK_NUMBER, TIMESTAMP]))?,
            header,
            header_proof,
        })))
    }

    async fn whole_block(&self, block: &BlockArg) -> Result<ProofUnion, ProveError> {
        let b = self.resolve(block).await?;
        let (header, header_proof, tree) = tie(&b)?;
        Ok(ProofUnion::Block(Box::new(BlockProof {
            execution_payload: ExecutionPayloadUnion::Deneb(b.data.execution_payload().clone()),
            proof: nodes(tree.multiproof(&[EXECUTION_PAYLOAD]))?,
            header,
            header_proof,
        })))
    }

    /// Where the node says transaction `hash` is: block number and index.
    async fn locate(&self, hash: B256) -> Result<(u64, u32), ProveError> {
        let tx = self.rpc("eth_getTransactionByHash", json!([hash])).await?;
        let hex = |k: &str| {
            tx[k]
                .as_str()
                .and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok())
        };
        let index = hex("transactionIndex").and_then(|i| u32::try_from(i).ok());
        hex("blockNumber")
            .zip(index)
            .ok_or_else(|| upstream(format!("transaction {hash}: no block number or index")))
    }

    async fn transaction(&self, hash: B256) -> Result<ProofUnion, ProveError> {
        let (number, index) = self.locate(hash).await?;
        let b = self.resolve(&BlockArg::Number(number)).await?;
        transaction_in(&b, index)
    }

    async fn block_receipts(
        &self,
        number: u64,
    ) -> Result<(Value, receipts::BlockReceipts), ProveError> {
        let answer = self
            .rpc("eth_getBlockReceipts", json!([format!("{number:#x}")]))
            .await?;
        let receipts = receipts::BlockReceipts::from_json(&answer)?;
        Ok((answer, receipts))
    }

    async fn receipt(&self, hash: B256) -> Result<(DataUnion, ProofUnion), ProveError> {
        let (number, index) = self.locate(hash).await?;
        let (answer, receipts) = self.block_receipts(number).await?;
        let b = self.resolve(&BlockArg::Number(number)).await?;
        let (header, header_proof, tree) = tie(&b)?;
        let p = b.data.execution_payload();
        let raw = tx_at(p, index)?;
        let leaves = [
            RECEIPTS_ROOT,
            BLOCK_NUMBER,
            BLOCK_HASH,
            transaction_gindex(index),
        ];
        let data = receipts::receipt_data(&answer[index as usize])?;
        Ok((
            DataUnion::Receipt(Box::new(data)),
            ProofUnion::Receipt(Box::new(ReceiptProof {
                transaction: raw.clone(),
                transaction_index: index,
                block_number: p.block_number,
                block_hash: p.block_hash,
                receipt_proof: receipts.proof(index as usize)?,
                block_proof: nodes(tree.multiproof(&leaves))?,
                header,
                header_proof,
            })),
        ))
    }

    /// eth_getLogs in colibri's `LogsProof` (§12.2): the blocks the node's logs are in.
    async fn logs(&self, params: &Value) -> Result<(DataUnion, ProofUnion), ProveError> {
        let params = self.resolved_filter(params).await?;
        let answer = self.rpc("eth_getLogs", params).await?;
        let logs = answer
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(receipts::log_of)
            .collect::<Result<Vec<_>, _>>()?;
        // Blocks, and transactions in each, in reverse order of first appearance (as colibri).
        let mut order: Vec<(u64, Vec<u32>)> = Vec::new();
        for log in &logs {
            match order.iter_mut().find(|(n, _)| *n == log.block_number) {
                Some((_, txs)) if !txs.contains(&log.transaction_index) => {
                    txs.push(log.transaction_index)
                }
                Some(_) => {}
                None => order.push((log.block_number, vec![log.transaction_index])),
            }
        }
        if order.len() > MAX_LOG_BLOCKS {
            return Err(ProveError::Unsupported(format!(
                "logs in {} blocks; at most {MAX_LOG_BLOCKS} in one proof (narrow the range)",
                order.len()
            )));
        }
        let mut blocks = Vec::with_capacity(order.len());
        for (number, txs) in order.into_iter().rev() {
            blocks.push(
                self.logs_block(number, txs.into_iter().rev().collect())
                    .await?,
            );
        }
        let data =
            VariableList::new(logs).map_err(|e| upstream(format!("too many logs: {e:?}")))?;
        let proof =
            VariableList::new(blocks).map_err(|e| upstream(format!("too many blocks: {e:?}")))?;
        Ok((DataUnion::Logs(data), ProofUnion::Logs(proof)))
    }

    /// The `eth_getLogs` params with the filter's tags resolved to numbers and its range
    /// checked ([`bounds::log_range`]) before the filter goes upstream; a `blockHash` filter
    /// names one block and is sent as it is.
    async fn resolved_filter(&self, params: &Value) -> Result<Value, ProveError> {
        bounds::check("eth_getLogs", params)?;
        let mut filter = params[0].clone();
        if filter.get("blockHash").is_some() {
            return Ok(json!([filter]));
        }
        let from = self.filter_block(filter.get("fromBlock")).await?;
        let to = self.filter_block(filter.get("toBlock")).await?;
        bounds::log_range(from, to)?;
        filter["fromBlock"] = json!(format!("{from:#x}"));
        filter["toBlock"] = json!(format!("{to:#x}"));
        Ok(json!([filter]))
    }

    /// A filter's block field as a number: absent means `latest`; a tag asked of the
    /// execution RPC.
    async fn filter_block(&self, v: Option<&Value>) -> Result<u64, ProveError> {
        let text = v.and_then(Value::as_str).unwrap_or("latest");
        let number = match text {
            "earliest" => return Ok(0),
            "latest" | "pending" => self.rpc("eth_blockNumber", json!([])).await?,
            "safe" | "finalized" => self
                .rpc("eth_getBlockByNumber", json!([text, false]))
                .await?["number"]
                .clone(),
            _ => json!(text),
        };
        number
            .as_str()
            .and_then(|n| u64::from_str_radix(n.strip_prefix("0x")?, 16).ok())
            .ok_or_else(|| upstream(format!("the number of block {text}: {number}")))
    }

    async fn logs_block(&self, number: u64, indices: Vec<u32>) -> Result<LogsBlock, ProveError> {
        let (_, receipts) = self.block_receipts(number).await?;
        let b = self.resolve(&BlockArg::Number(number)).await?;
        let (header, header_proof, tree) = tie(&b)?;
        let p = b.data.execution_payload();
        let mut leaves = vec![BLOCK_NUMBER, BLOCK_HASH, RECEIPTS_ROOT];
        let mut txs = Vec::with_capacity(indices.len());
        for index in indices {
            let raw = tx_at(p, index)?;
            leaves.push(transaction_gindex(index));
            txs.push(LogsTx {
                transaction: raw.clone(),
                transaction_index: index,
                proof: receipts.proof(index as usize)?,
            });
        }
        Ok(LogsBlock {
            block_number: p.block_number,
            block_hash: p.block_hash,
            proof: nodes(tree.multiproof(&leaves))?,
            header,
            header_proof,
            txs: VariableList::new(txs)
                .map_err(|e| upstream(format!("too many transactions: {e:?}")))?,
        })
    }

    /// eth_call (§12.5): the accounts `debug_traceCall`'s prestate tracer reports (in its
    /// order: geth sorts them), less the zero address and the fee recipient, each with its
    /// `eth_getProof`.
    async fn call(&self, params: &Value, include_code: bool) -> Result<ProofUnion, ProveError> {
        let param_err = |e: crate::ProofError| ProveError::Params(e.to_string());
        let block = params::block(params, 1).map_err(param_err)?;
        let b = self.resolve(&block).await?;
        let (header, header_proof, tree) = tie(&b)?;
        let p = b.data.execution_payload();
        let number = format!("{:#x}", p.block_number);
        // The call object as clients write it, `to` and `data` first (JSON values here do not
        // keep their order; upstreams and recordings may see it).
        let call = call_text(params::param(params, 0).map_err(param_err)?);
        let text = format!(r#"[{call},"{number}",{{"tracer":"prestateTracer"}}]"#);
        let trace = self
            .execution
            .call_raw("debug_traceCall", &text)
            .await
            .map_err(upstream)?;
        let prestate = trace
            .as_object()
            .ok_or_else(|| upstream("debug_traceCall: not an object"))?;
        if prestate.len() > MAX_CALL_ACCOUNTS {
            return Err(ProveError::Unsupported(format!(
                "the call touches {} accounts; at most {MAX_CALL_ACCOUNTS} in one proof",
                prestate.len()
            )));
        }
        let mut accounts = Vec::with_capacity(prestate.len());
        for (address, state) in prestate {
            let a: Address = address
                .parse()
                .map_err(|_| upstream(format!("prestate address {address}")))?;
            if a.is_zero() || a == p.fee_recipient {
                continue;
            }
            accounts.push(self.call_account(a, state, &number, include_code).await?);
        }
        let (state_block, leaves) = state_leaves(&block, p);
        Ok(ProofUnion::Call(Box::new(CallProof {
            accounts: VariableList::new(accounts)
                .map_err(|e| upstream(format!("too many accounts: {e:?}")))?,
            state_proof: StateProof {
                block: state_block,
                proof: nodes(tree.multiproof(&leaves))?,
                header,
                header_proof,
            },
        })))
    }

    /// One account of a prestate trace with its `eth_getProof` at block `number`.
    async fn call_account(
        &self,
        address: Address,
        state: &Value,
        number: &str,
        include_code: bool,
    ) -> Result<EthCallAccount, ProveError> {
        let keys: Vec<&String> = state["storage"]
            .as_object()
            .map(|s| s.keys().collect())
            .unwrap_or_default();
        // The address as the trace wrote it (lower case), as colibri sends it.
        let text = format!("{address:#x}");
        let answer = self
            .rpc("eth_getProof", json!([text, keys, number]))
            .await?;
        let code = match state["code"].as_str() {
            None => CodeUnion::Used(false),
            Some(_) if !include_code => CodeUnion::Used(true),
            Some(hex) => {
                let code: Bytes = hex
                    .parse()
                    .map_err(|_| upstream(format!("code of {address}")))?;
                CodeUnion::Code(
                    VariableList::new(code.to_vec())
                        .map_err(|e| upstream(format!("code of {address}: {e:?}")))?,
                )
            }
        };
        Ok(EthCallAccount {
            account_proof: node_list(&answer["accountProof"])?,
            address,
            code,
            storage_proof: storage_proofs(&answer["storageProof"])?,
        })
    }

    /// An account method's proof; eth_getCode's code as data, read at the proven block.
    async fn account(
        &self,
        method: &str,
        params: &Value,
    ) -> Result<(DataUnion, ProofUnion), ProveError> {
        let param_err = |e: crate::ProofError| ProveError::Params(e.to_string());
        let address: Address = params::address(params, 0).map_err(param_err)?;
        let keys: Vec<Value> = match method {
            "eth_getStorageAt" => vec![params::param(params, 1).map_err(param_err)?.clone()],
            "eth_getProof" => params::param(params, 1)
                .map_err(param_err)?
                .as_array()
                .cloned()
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let last = params
            .as_array()
            .map_or(1, |a| a.len().saturating_sub(1).max(1));
        let block = params::block(params, last).map_err(param_err)?;
        let b = self.resolve(&block).await?;
        let (header, header_proof, tree) = tie(&b)?;
        let p = b.data.execution_payload();
        let number = format!("{:#x}", p.block_number);
        let answer = self
            .rpc("eth_getProof", json!([params[0], keys, number]))
            .await?;
        let data = match method {
            "eth_getCode" => DataUnion::Bytes(self.code(&params[0], &number).await?),
            _ => DataUnion::None,
        };
        let (state_block, leaves) = state_leaves(&block, p);
        let proof = ProofUnion::Account(Box::new(AccountProof {
            account_proof: node_list(&answer["accountProof"])?,
            address,
            storage_proof: storage_proofs(&answer["storageProof"])?,
            state_proof: StateProof {
                block: state_block,
                proof: nodes(tree.multiproof(&leaves))?,
                header,
                header_proof,
            },
        }));
        Ok((data, proof))
    }

    /// The code of `address` at block `number` (colibri asks for `"lastest"`, §12.2: the
    /// proven block is what the code must match).
    async fn code(&self, address: &Value, number: &str) -> Result<BigBytes, ProveError> {
        let code: Bytes = self
            .rpc("eth_getCode", json!([address, number]))
            .await?
            .as_str()
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| upstream("eth_getCode: not hex"))?;
        BigBytes::new(code.to_vec()).map_err(|e| upstream(format!("code: {e:?}")))
    }
}

/// The `TransactionProof` of transaction `index` of the data block.
fn transaction_in(b: &Blocks, index: u32) -> Result<ProofUnion, ProveError> {
    let (header, header_proof, tree) = tie(b)?;
    let p = b.data.execution_payload();
    let raw = tx_at(p, index)?;
    let leaves = [
        BLOCK_NUMBER,
        crate::multiproof::BASE_FEE,
        BLOCK_HASH,
        transaction_gindex(index),
    ];
    Ok(ProofUnion::Transaction(Box::new(TransactionProof {
        transaction: raw.clone(),
        transaction_index: index,
        block_number: p.block_number,
        block_hash: p.block_hash,
        base_fee_per_gas: u64::try_from(p.base_fee_per_gas).map_err(upstream)?,
        proof: nodes(tree.multiproof(&leaves))?,
        header,
        header_proof,
    })))
}

/// The slots whose sync committees sign a proof's headers (the slot after each data header,
/// as the verifier takes it).
fn signed_slots(proof: &ProofUnion) -> Vec<u64> {
    // The header a signature covers: the data header, or the last of a header chain.
    let signed = |h: &sszgate_light::types::BeaconBlockHeader, p: &HeaderProofUnion| {
        let slot = match p {
            HeaderProofUnion::Signature(_) => h.slot,
            HeaderProofUnion::Headers(chain) => chain.header.slot,
            HeaderProofUnion::Historic(historic) => historic.header.slot,
        };
        slot.saturating_add(1)
    };
    match proof {
        ProofUnion::BlockNumber(p) => vec![signed(&p.header, &p.header_proof)],
        ProofUnion::Block(p) => vec![signed(&p.header, &p.header_proof)],
        ProofUnion::Transaction(p) => vec![signed(&p.header, &p.header_proof)],
        ProofUnion::Receipt(p) => vec![signed(&p.header, &p.header_proof)],
        ProofUnion::Logs(blocks) => blocks
            .iter()
            .map(|b| signed(&b.header, &b.header_proof))
            .collect(),
        ProofUnion::LogsRange(p) => p
            .blocks
            .last()
            .map(|b| signed(&b.header, &p.header_proof))
            .into_iter()
            .collect(),
        ProofUnion::Account(p) => vec![signed(&p.state_proof.header, &p.state_proof.header_proof)],
        ProofUnion::Call(p) => vec![signed(&p.state_proof.header, &p.state_proof.header_proof)],
        _ => Vec::new(),
    }
}

/// A call object as JSON text with `to`, `data`, `input`, `from` first, then the rest.
fn call_text(call: &Value) -> String {
    let Some(o) = call.as_object() else {
        return call.to_string();
    };
    const FIRST: [&str; 4] = ["to", "data", "input", "from"];
    let rest = o.keys().filter(|k| !FIRST.contains(&k.as_str()));
    let fields: Vec<String> = FIRST
        .iter()
        .copied()
        .chain(rest.map(String::as_str))
        .filter_map(|k| o.get(k).map(|v| format!("{}:{v}", Value::from(k))))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// Raw transaction `index` of a payload.
fn tx_at(p: &sszgate_light::block::ExecutionPayload, index: u32) -> Result<&BigBytes, ProveError> {
    p.transactions.get(index as usize).ok_or_else(|| {
        upstream(format!(
            "block {} has no transaction {index}",
            p.block_number
        ))
    })
}

/// The block union of a state proof and the body leaves it proves (§3.3).
fn state_leaves(
    block: &BlockArg,
    p: &sszgate_light::block::ExecutionPayload,
) -> (StateBlockUnion, Vec<u64>) {
    match block {
        BlockArg::Tag(_) => (StateBlockUnion::None, vec![STATE_ROOT]),
        BlockArg::Hash(_) => (
            StateBlockUnion::Hash(p.block_hash),
            vec![STATE_ROOT, BLOCK_HASH],
        ),
        BlockArg::Number(_) => (
            StateBlockUnion::Number(p.block_number),
            vec![STATE_ROOT, BLOCK_NUMBER],
        ),
    }
}

/// The data header, its signature and its body's tree.
fn tie(
    b: &Blocks,
) -> Result<
    (
        sszgate_light::types::BeaconBlockHeader,
        HeaderProofUnion,
        BodyTree,
    ),
    ProveError,
> {
    let tree = BodyTree::new(&b.data);
    let header = b.data.header_with(tree.root());
    // Each block after the data block must name the one before it as its parent.
    let linked = |block: &AnyBlock, parent: B256| {
        if block.parent_root() == parent {
            Ok(())
        } else {
            Err(ProveError::Unsupported(format!(
                "the block after {parent} does not name it as its parent"
            )))
        }
    };
    let mut parent = header.tree_hash_root();
    let mut between = Vec::with_capacity(b.chain.len());
    for block in &b.chain {
        linked(block, parent)?;
        let summary = block.summary();
        between.push(summary.header);
        parent = summary.root;
    }
    linked(&b.signing, parent)?;
    let aggregate = b.signing.sync_aggregate();
    let header_proof = match between.split_last() {
        None => HeaderProofUnion::Signature(aggregate.clone()),
        Some((signed, before)) => HeaderProofUnion::Headers(Box::new(HeaderChainProof {
            headers: ssz_types::VariableList::new(
                before
                    .iter()
                    .map(|h| ProofHeader {
                        slot: h.slot,
                        proposer_index: h.proposer_index,
                        state_root: h.state_root,
                        body_root: h.body_root,
                    })
                    .collect(),
            )
            .map_err(|e| upstream(format!("header chain too long: {e:?}")))?,
            header: *signed,
            sync_committee_bits: aggregate.sync_committee_bits.clone(),
            sync_committee_signature: aggregate.sync_committee_signature,
        })),
    };
    Ok((header, header_proof, tree))
}

fn nodes<N: ssz_types::typenum::Unsigned>(
    v: Vec<B256>,
) -> Result<ssz_types::VariableList<B256, N>, ProveError> {
    ssz_types::VariableList::new(v).map_err(|e| upstream(format!("proof too long: {e:?}")))
}

/// A JSON list of hex trie nodes.
fn node_list<N: ssz_types::typenum::Unsigned>(
    v: &Value,
) -> Result<ssz_types::VariableList<BigBytes, N>, ProveError> {
    let list = v
        .as_array()
        .ok_or_else(|| upstream("proof nodes are not a list"))?;
    let parsed = list
        .iter()
        .map(|n| {
            n.as_str()
                .and_then(|s| s.parse::<Bytes>().ok())
                .and_then(|b| BigBytes::new(b.to_vec()).ok())
                .ok_or_else(|| upstream("a proof node is not hex"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    ssz_types::VariableList::new(parsed)
        .map_err(|e| upstream(format!("too many proof nodes: {e:?}")))
}

fn storage_proofs<N: ssz_types::typenum::Unsigned>(
    v: &Value,
) -> Result<ssz_types::VariableList<StorageProof, N>, ProveError> {
    let list = v.as_array().cloned().unwrap_or_default();
    let parsed = list
        .iter()
        .map(|s| {
            let key = s["key"]
                .as_str()
                .and_then(|k| params::u256_of(&json!(k)))
                .map(B256::from)
                .ok_or_else(|| upstream("a storage key is not hex"))?;
            Ok(StorageProof {
                key,
                proof: node_list(&s["proof"])?,
            })
        })
        .collect::<Result<Vec<_>, ProveError>>()?;
    ssz_types::VariableList::new(parsed)
        .map_err(|e| upstream(format!("too many storage proofs: {e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_object_is_written_to_and_data_first() {
        let call = json!({"value": "0x1", "data": "0x70", "to": "0xab", "gas": "0x10"});
        assert_eq!(
            call_text(&call),
            r#"{"to":"0xab","data":"0x70","gas":"0x10","value":"0x1"}"#
        );
    }
}
