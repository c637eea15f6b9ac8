//! The verified methods: each resolves its block to an anchor (directly, or by parent hashes
//! from an anchored block at most `max_chain_back` above), fetches what it needs from the
//! untrusted upstream, checks it against the anchored block, and renders the answer from the
//! checked data.
//!
//! Not here: HTTP, batches, metrics and the pass-through of unverified methods (`server`).

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use alloy_consensus::Header;
use alloy_consensus::TxReceipt;
use alloy_primitives::{Address, B256, Bytes, keccak256};
use alloy_rpc_types_eth::{
    BlockNumberOrTag, EIP1186AccountProofResponse, Filter, FilterBlockOption,
};
use alloy_trie::KECCAK_EMPTY;
use revm::context::result::ExecutionResult;
use serde_json::{Value, json};
use sszgate_light::{Anchor, BlockRef};

use crate::{
    AnchorSource, ForkSchedule,
    blocks::{self, BeaconBlocks, VerifiedBlock},
    call::{Attempt, BlockContext, CallRequest, ProvenAccount, ProvenState, Run},
    error::{AnchorError, Check, RpcError, mismatch},
    params, receipts, render,
    server::BeaconSource,
    state,
    upstream::Upstream,
};

/// The methods answered with verification.
pub const METHODS: &[&str] = &[
    "eth_chainId",
    "eth_blockNumber",
    "eth_getBalance",
    "eth_getTransactionCount",
    "eth_getCode",
    "eth_getStorageAt",
    "eth_getProof",
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getTransactionByHash",
    "eth_getTransactionByBlockHashAndIndex",
    "eth_getTransactionByBlockNumberAndIndex",
    "eth_getTransactionReceipt",
    "eth_getBlockReceipts",
    "eth_getLogs",
    "eth_call",
    "eth_estimateGas",
];

/// Bounds on what one request may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most blocks followed by parent hash below an anchored block.
    pub max_chain_back: u64,
    /// The most blocks an `eth_getLogs` range may span.
    pub max_log_blocks: u64,
    /// The most storage keys of one `eth_getProof`.
    pub max_proof_keys: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_chain_back: 256,
            max_log_blocks: 64,
            max_proof_keys: 256,
        }
    }
}

/// The most runs of one `eth_call` (each after proving what the previous one missed).
const MAX_CALL_ROUNDS: usize = 8;

/// How long the EVM may run for one `eth_call` or `eth_estimateGas` request, all its runs
/// together: geth's default `--rpc.evmtimeout`, and its error when it passes.
const EVM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The most verified blocks kept for reuse.
const CACHED_BLOCKS: usize = 32;

/// Answers the [`METHODS`] from an untrusted upstream, each checked against anchored blocks.
pub struct Verifier<A> {
    anchors: A,
    upstream: Upstream,
    beacon: Option<BeaconBlocks>,
    chain_id: u64,
    blobs: ForkSchedule,
    limits: Limits,
    cache: Mutex<HashMap<B256, Arc<VerifiedBlock>>>,
}

fn hex(n: u64) -> String {
    format!("{n:#x}")
}

impl<A: AnchorSource> Verifier<A> {
    /// A verifier trusting `anchors` for blocks and `chain_id`, reading from `upstream`.
    /// The source of trusted blocks.
    pub fn anchors(&self) -> &A {
        &self.anchors
    }

    /// A verifier trusting `anchors`, asking `upstream`, answering for `chain_id`.
    pub fn new(anchors: A, upstream: Upstream, chain_id: u64, limits: Limits) -> Verifier<A> {
        Verifier {
            anchors,
            upstream,
            beacon: None,
            blobs: ForkSchedule::for_chain(chain_id),
            chain_id,
            limits,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Reads blocks from the beacon blocks of `source` (preferred to the execution RPC's);
    /// `timeout` bounds each fetch, `max_answer` each block's bytes.
    pub fn with_beacon(
        mut self,
        source: &BeaconSource,
        timeout: Duration,
        max_answer: usize,
    ) -> Result<Verifier<A>, String> {
        self.beacon = Some(BeaconBlocks::new(source, timeout, max_answer)?);
        Ok(self)
    }

    /// Uses `blobs` as the chain's blob schedule (default: the known one of the chain id).
    pub fn with_blob_schedule(mut self, blobs: ForkSchedule) -> Verifier<A> {
        self.blobs = blobs;
        self
    }

    /// The blob base fee of `block`, when the blob schedule gives it.
    fn blob_fee(&self, block: &VerifiedBlock) -> Option<u128> {
        self.blobs
            .blob_fee(block.header.timestamp, block.header.excess_blob_gas)
    }

    /// The upstream (for methods passed through unverified).
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// Answers `method` with `params`, verified; [`RpcError::Unverifiable`] for any method
    /// not in [`METHODS`].
    pub async fn call(&self, method: &str, params: &[Value]) -> Result<Value, RpcError> {
        match method {
            "eth_chainId" => Ok(json!(hex(self.chain_id))),
            "eth_blockNumber" => Ok(json!(hex(self.resolve(BlockRef::Latest).await?.number))),
            "eth_getBalance"
            | "eth_getTransactionCount"
            | "eth_getCode"
            | "eth_getStorageAt"
            | "eth_getProof" => self.state(method, params).await,
            "eth_getBlockByNumber" | "eth_getBlockByHash" => {
                let r = match method {
                    "eth_getBlockByHash" => BlockRef::Hash(params::hash(params, 0)?),
                    _ => params::block_ref(params, 0)?,
                };
                let block = self.block(self.resolve(r).await?).await?;
                render::block(&block, params::flag(params, 1)?)
            }
            "eth_getTransactionByHash" => {
                let (block, index) = self.transaction_by_hash(params::hash(params, 0)?).await?;
                render::transaction(&block, index)
            }
            "eth_getTransactionByBlockHashAndIndex" | "eth_getTransactionByBlockNumberAndIndex" => {
                let r = match method {
                    "eth_getTransactionByBlockHashAndIndex" => {
                        BlockRef::Hash(params::hash(params, 0)?)
                    }
                    _ => params::block_ref(params, 0)?,
                };
                let index = params::quantity(params, 1)? as usize;
                let block = self.block(self.resolve(r).await?).await?;
                if index >= render::txs(&block)?.len() {
                    return Ok(Value::Null);
                }
                render::transaction(&block, index)
            }
            "eth_getTransactionReceipt" => {
                let (block, index) = self.transaction_by_hash(params::hash(params, 0)?).await?;
                let receipts = self.receipts(&block).await?;
                render::receipt(&block, &receipts, index, self.blob_fee(&block))
            }
            "eth_getBlockReceipts" => {
                let block = self
                    .block(self.resolve(params::block_ref(params, 0)?).await?)
                    .await?;
                let receipts = self.receipts(&block).await?;
                (0..receipts.len())
                    .map(|i| render::receipt(&block, &receipts, i, self.blob_fee(&block)))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array)
            }
            "eth_getLogs" => self.logs(params).await,
            "eth_call" => self.eth_call(params).await,
            "eth_estimateGas" => self.estimate_gas(params).await,
            other => Err(RpcError::Unverifiable(other.to_string())),
        }
    }

    /// The anchor of `r`: from the anchor source, else by parent hashes from one above.
    pub async fn resolve(&self, r: BlockRef) -> Result<Anchor, RpcError> {
        match (self.anchors.anchor(r).await, r) {
            (Ok(anchor), _) => Ok(anchor),
            (Err(AnchorError::NotAnchored(_)), BlockRef::Number(n)) => self.chain_back(n).await,
            (Err(AnchorError::NotAnchored(_)), BlockRef::Hash(h)) => {
                let claim = self
                    .upstream
                    .call("eth_getBlockByHash", json!([h, false]))
                    .await?;
                let n = claim
                    .get("number")
                    .and_then(Value::as_str)
                    .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
                    .ok_or_else(|| {
                        RpcError::Unprovable(format!("the upstream knows no block {h}"))
                    })?;
                let anchor = self.chain_back(n).await?;
                if anchor.hash != h {
                    return Err(RpcError::Unprovable(format!(
                        "block {h} is not on the anchored chain (block {n} there is {})",
                        anchor.hash
                    )));
                }
                Ok(anchor)
            }
            (Err(e), _) => Err(e.into()),
        }
    }

    /// Follows parent hashes from an anchored block above `n` (block `n + 1`, else `latest`).
    async fn chain_back(&self, n: u64) -> Result<Anchor, RpcError> {
        let top = match self
            .anchors
            .anchor(BlockRef::Number(n.saturating_add(1)))
            .await
        {
            Ok(a) => a,
            Err(_) => self.anchors.anchor(BlockRef::Latest).await?,
        };
        if top.number < n {
            return Err(AnchorError::NotAnchored(format!(
                "block {n}: the newest anchored block is {}",
                top.number
            ))
            .into());
        }
        if top.number - n > self.limits.max_chain_back {
            return Err(AnchorError::NotAnchored(format!(
                "block {n} is {} blocks below the nearest anchored block {}; at most {} are followed by parent hash ({})",
                top.number - n,
                top.number,
                self.limits.max_chain_back,
                Check::AnchorDistance.name()
            ))
            .into());
        }
        let mut current = top;
        while current.number > n {
            let check = if current == top {
                Check::BlockHash
            } else {
                Check::ParentHash
            };
            let header = self.el_header(&current, check).await?;
            current = Anchor {
                number: current.number - 1,
                hash: header.parent_hash,
                beacon_root: header.parent_beacon_block_root.unwrap_or_default(),
                ..current
            };
        }
        Ok(current)
    }

    /// The header of `anchor` from `eth_getBlockByNumber(n, false)`, checked by its hash.
    async fn el_header(&self, anchor: &Anchor, check: Check) -> Result<Header, RpcError> {
        let what = format!("eth_getBlockByNumber {}", hex(anchor.number));
        let answer = self
            .upstream
            .call("eth_getBlockByNumber", json!([hex(anchor.number), false]))
            .await?;
        if answer.is_null() {
            return Err(RpcError::Unprovable(format!(
                "the upstream has no block {}",
                anchor.number
            )));
        }
        match blocks::from_json(answer, anchor, &what) {
            Err(RpcError::Verification(mut m)) if m.check == Check::BlockHash => {
                m.check = check;
                Err(RpcError::Verification(m))
            }
            other => other.map(|b| b.header),
        }
    }

    /// The header of `anchor`: from a block already verified, the beacon block, or else the
    /// EL's `eth_getBlockByNumber(n, false)` (a header is all state methods need).
    async fn header(&self, anchor: &Anchor) -> Result<Header, RpcError> {
        if let Some(b) = self.cached(&anchor.hash) {
            return Ok(b.header.clone());
        }
        let beacon_error = match self.beacon_block(anchor).await {
            Ok(Some(b)) => return Ok(b.header.clone()),
            Ok(None) => None,
            Err(RpcError::Upstream(e)) => Some(e),
            Err(e) => return Err(e),
        };
        match self.el_header(anchor, Check::BlockHash).await {
            // Both failed: the preferred source's failure is the one reported.
            Err(RpcError::Upstream(e)) => Err(beacon_error.unwrap_or(e).into()),
            other => other,
        }
    }

    fn cached(&self, hash: &B256) -> Option<Arc<VerifiedBlock>> {
        self.cache.lock().ok()?.get(hash).cloned()
    }

    /// The block of `anchor` from its beacon block's execution payload; `None` without a
    /// Beacon API or a beacon root.
    async fn beacon_block(&self, anchor: &Anchor) -> Result<Option<Arc<VerifiedBlock>>, RpcError> {
        let Some(beacon) = &self.beacon else {
            return Ok(None);
        };
        if anchor.beacon_root.is_zero() {
            return Ok(None);
        }
        Ok(beacon.block(anchor).await?.map(|block| self.keep(block)))
    }

    /// The block of `anchor` with its transactions: from the beacon block's execution payload
    /// when a Beacon API is configured (falling back to the EL when it has no answer), else
    /// `eth_getBlockByHash(hash, true)`.
    async fn block(&self, anchor: Anchor) -> Result<Arc<VerifiedBlock>, RpcError> {
        if let Some(b) = self.cached(&anchor.hash) {
            return Ok(b);
        }
        let beacon_error = match self.beacon_block(&anchor).await {
            Ok(Some(block)) => return Ok(block),
            Ok(None) => None,
            // No beacon answer: the EL may still have the block.
            Err(RpcError::Upstream(e)) => Some(e),
            Err(e) => return Err(e),
        };
        let what = format!("eth_getBlockByHash {}", anchor.hash);
        let answer = match self
            .upstream
            .call("eth_getBlockByHash", json!([anchor.hash, true]))
            .await
        {
            Ok(answer) => answer,
            // Both failed: the preferred source's failure is the one reported.
            Err(e) => return Err(beacon_error.unwrap_or(e).into()),
        };
        if answer.is_null() {
            return Err(RpcError::Unprovable(format!(
                "the upstream has no block {}",
                anchor.hash
            )));
        }
        let block = blocks::from_json(answer, &anchor, &what)?;
        render::txs(&block)?;
        Ok(self.keep(block))
    }

    /// Keeps `block` for reuse.
    fn keep(&self, block: VerifiedBlock) -> Arc<VerifiedBlock> {
        let block = Arc::new(block);
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHED_BLOCKS {
                cache.clear();
            }
            cache.insert(block.anchor.hash, block.clone());
        }
        block
    }

    /// The verified receipts of `block`.
    async fn receipts(
        &self,
        block: &VerifiedBlock,
    ) -> Result<Vec<alloy_consensus::ReceiptEnvelope<alloy_primitives::Log>>, RpcError> {
        let n = hex(block.anchor.number);
        let answer = self
            .upstream
            .call("eth_getBlockReceipts", json!([n]))
            .await?;
        receipts::check_receipts(answer, block, &format!("eth_getBlockReceipts {n}"))
    }

    /// The verified block holding transaction `hash`, and its index there. The upstream only
    /// says which block to look in; the index is found in the verified transactions.
    async fn transaction_by_hash(
        &self,
        hash: B256,
    ) -> Result<(Arc<VerifiedBlock>, usize), RpcError> {
        let claim = self
            .upstream
            .call("eth_getTransactionByHash", json!([hash]))
            .await?;
        if claim.is_null() {
            return Err(RpcError::Unprovable(format!(
                "the upstream knows no transaction {hash}; its absence cannot be proven"
            )));
        }
        let number = claim
            .get("blockNumber")
            .and_then(Value::as_str)
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .ok_or_else(|| RpcError::Unprovable(format!("transaction {hash} is not in a block")))?;
        let block = self
            .block(self.resolve(BlockRef::Number(number)).await?)
            .await?;
        match render::txs(&block)?.iter().position(|t| t.hash == hash) {
            Some(index) => Ok((block, index)),
            None => mismatch(
                Check::TransactionHash,
                "blockNumber",
                format!(
                    "the upstream places {hash} in block {number}, which has no such transaction"
                ),
            ),
        }
    }

    /// `eth_getBalance`, `…TransactionCount`, `…Code`, `…StorageAt`, `…Proof`.
    async fn state(&self, method: &str, p: &[Value]) -> Result<Value, RpcError> {
        let address = params::address(p, 0)?;
        let (keys, block_index) = match method {
            "eth_getStorageAt" => (
                vec![params::storage_key(
                    params::opt(p, 1).unwrap_or(&Value::Null),
                    1,
                )?],
                2,
            ),
            "eth_getProof" => {
                let list = params::opt(p, 1).and_then(Value::as_array).ok_or_else(|| {
                    RpcError::InvalidParams("param 1: not a list of storage keys".into())
                })?;
                if list.len() > self.limits.max_proof_keys {
                    return Err(RpcError::InvalidParams(format!(
                        "param 1: {} storage keys, at most {}",
                        list.len(),
                        self.limits.max_proof_keys
                    )));
                }
                let keys = list
                    .iter()
                    .map(|k| params::storage_key(k, 1))
                    .collect::<Result<_, _>>()?;
                (keys, 2)
            }
            _ => (Vec::new(), 1),
        };
        let anchor = self.resolve(params::block_ref(p, block_index)?).await?;
        let header = self.header(&anchor).await?;
        let number = hex(anchor.number);
        let proof: EIP1186AccountProofResponse = self
            .upstream
            .call_as("eth_getProof", json!([address, keys, number]))
            .await?
            .ok_or_else(|| {
                RpcError::Unprovable(format!("the upstream has no proof for {address}"))
            })?;
        let account = state::check_account_proof(&proof, header.state_root, address, &keys)?;
        Ok(match method {
            "eth_getBalance" => json!(account.balance),
            "eth_getTransactionCount" => json!(hex(account.nonce)),
            "eth_getStorageAt" => json!(B256::from(proof.storage_proof[0].value)),
            "eth_getProof" => serde_json::to_value(&proof)
                .map_err(|e| RpcError::Unprovable(format!("cannot render: {e}")))?,
            _ => self.code(address, account.code_hash, &number).await?,
        })
    }

    /// `eth_getCode`: the code whose hash is the proven code hash.
    async fn code(
        &self,
        address: Address,
        code_hash: B256,
        number: &str,
    ) -> Result<Value, RpcError> {
        let code = self.code_by_hash(address, code_hash, number, None).await?;
        Ok(json!(code))
    }

    /// Code hashing to `code_hash`: from `hint` when it does, else `eth_getCode` at the block,
    /// else at `latest` (code is bound by its hash, not by where it was read).
    async fn code_by_hash(
        &self,
        address: Address,
        code_hash: B256,
        number: &str,
        hint: Option<&Bytes>,
    ) -> Result<Bytes, RpcError> {
        if code_hash == KECCAK_EMPTY {
            return Ok(Bytes::new());
        }
        if let Some(code) = hint.filter(|c| keccak256(c) == code_hash) {
            return Ok(code.clone());
        }
        let mut last = None;
        for block in [number, "latest"] {
            match self
                .upstream
                .call_as::<Bytes>("eth_getCode", json!([address, block]))
                .await
            {
                Ok(code) => {
                    let code = code.unwrap_or_default();
                    if keccak256(&code) == code_hash {
                        return Ok(code);
                    }
                    last = Some(Ok(code));
                }
                Err(e) => last = Some(Err(e)),
            }
        }
        match last {
            Some(Ok(code)) => mismatch(
                Check::CodeHash,
                "code",
                format!(
                    "{} bytes of code of {address} hash to {}, the proven code hash is {code_hash}",
                    code.len(),
                    keccak256(&code)
                ),
            ),
            Some(Err(e)) => Err(e.into()),
            None => Err(RpcError::Unprovable(format!("no code for {address}"))),
        }
    }

    /// `eth_call`: run in revm over state proven against the block's state root.
    async fn eth_call(&self, p: &[Value]) -> Result<Value, RpcError> {
        let (call, mut run) = self.call_setup(p, "eth_call").await?;
        match self.run_proven(&mut run, &call).await? {
            Ok(result) => call_result(result),
            Err(invalid) => Err(RpcError::Halted(invalid.why)),
        }
    }

    /// `eth_estimateGas`: geth's estimate (its steps and tolerance, `call::estimate`), every
    /// run over proven state.
    async fn estimate_gas(&self, p: &[Value]) -> Result<Value, RpcError> {
        let (mut call, mut run) = self.call_setup(p, "eth_estimateGas").await?;
        let spec = crate::call::spec_of(&run.header, &self.blobs);
        let hi = crate::call::estimate_cap(&call, run.header.gas_limit, spec);
        let plain = crate::call::plain_transfer(&call, &run.state);
        let mut runs = EstimateRuns {
            verifier: self,
            run: &mut run,
            call: &mut call,
        };
        let gas = crate::call::estimate(hi, plain, &mut runs).await?;
        Ok(json!(hex(gas)))
    }

    /// The call of `eth_call`/`eth_estimateGas` params, and its block's state with what the
    /// upstream hints it reads already proven.
    async fn call_setup(
        &self,
        p: &[Value],
        method: &str,
    ) -> Result<(CallRequest, CallRun), RpcError> {
        if params::opt(p, 2).is_some() {
            return Err(RpcError::Unverifiable(format!(
                "{method} with state overrides"
            )));
        }
        let call = CallRequest::parse(params::opt(p, 0), self.chain_id)?;
        // A request whose EVM time is spent asks nothing upstream (the hints below make the
        // execution RPC run the call too).
        let deadline = EvmDeadline::now();
        if deadline.at <= std::time::Instant::now() {
            return Err(RpcError::Halted(deadline.why()));
        }
        let anchor = self.resolve(params::block_ref(p, 1)?).await?;
        let header = self.header(&anchor).await?;
        let number = hex(anchor.number);
        let mut state = ProvenState::default();
        state.provisional.extend([call.from, header.beneficiary]);
        state.provisional.remove(&call.to);
        let (mut wanted, codes) = self.prefetch(&call, &number).await;
        wanted.retain(|a, _| !state.provisional.contains(a));
        wanted.entry(call.to).or_default();
        let mut run = CallRun {
            header,
            number,
            state,
            codes,
            deadline,
        };
        for (address, keys) in wanted {
            self.prove_account(&mut run, address, keys).await?;
        }
        Ok((call, run))
    }

    /// Runs `call` until it finishes over proven state, proving what each run missed; a
    /// transaction the EVM refuses is answered as such.
    async fn run_proven(&self, run: &mut CallRun, call: &CallRequest) -> Result<Attempt, RpcError> {
        for _ in 0..MAX_CALL_ROUNDS {
            let block = BlockContext::of_header(&run.header, &self.blobs);
            let deadline = Some(run.deadline.at);
            let ran = crate::call::run_until(&run.state, &block, self.chain_id, call, deadline);
            let mut needs = match ran {
                Run::Done(result) => return Ok(Ok(result)),
                Run::Invalid(invalid) => return Ok(Err(invalid)),
                Run::Failed(why) => return Err(RpcError::Unprovable(why)),
                Run::TimedOut => return Err(RpcError::Halted(run.deadline.why())),
                Run::Needs(needs) => needs,
            };
            if let Some(why) = needs.unprovable {
                return Err(RpcError::Unprovable(why));
            }
            for address in &needs.touched {
                run.state.provisional.remove(address);
                needs.slots.entry(*address).or_default();
            }
            for (address, keys) in needs.slots {
                self.prove_account(run, address, keys).await?;
            }
        }
        Err(RpcError::Unprovable(format!(
            "the call still reads unproven state after {MAX_CALL_ROUNDS} runs"
        )))
    }

    /// Accounts and slots a call will likely read, and their code, from the upstream's
    /// `eth_createAccessList` or, failing that, `debug_traceCall` with the prestate tracer.
    /// Only hints: whatever is used is proven.
    async fn prefetch(
        &self,
        call: &CallRequest,
        number: &str,
    ) -> (BTreeMap<Address, BTreeSet<B256>>, HashMap<Address, Bytes>) {
        let mut wanted: BTreeMap<Address, BTreeSet<B256>> = BTreeMap::new();
        let mut codes = HashMap::new();
        let text = format!("[{},\"{number}\"]", call.to_json_text());
        let listed = self
            .upstream
            .call_raw("eth_createAccessList", &text)
            .await
            .ok()
            .and_then(|answer| {
                serde_json::from_value::<alloy_eips::eip2930::AccessList>(
                    answer["accessList"].clone(),
                )
                .ok()
            });
        if let Some(list) = listed {
            for item in list.0 {
                wanted
                    .entry(item.address)
                    .or_default()
                    .extend(item.storage_keys);
            }
            return (wanted, codes);
        }
        let text = format!(
            "[{},\"{number}\",{{\"tracer\":\"prestateTracer\"}}]",
            call.to_json_text()
        );
        if let Ok(Value::Object(prestate)) = self.upstream.call_raw("debug_traceCall", &text).await
        {
            for (address, account) in prestate {
                let Ok(address) = address.parse::<Address>() else {
                    continue;
                };
                let slots = wanted.entry(address).or_default();
                if let Some(storage) = account.get("storage").and_then(Value::as_object) {
                    slots.extend(storage.keys().filter_map(|k| k.parse::<B256>().ok()));
                }
                if let Some(code) = account
                    .get("code")
                    .and_then(|c| serde_json::from_value::<Bytes>(c.clone()).ok())
                {
                    codes.insert(address, code);
                }
            }
        }
        (wanted, codes)
    }

    /// Proves `address` with `keys` (those not proven yet) against the header's state root.
    async fn prove_account(
        &self,
        run: &mut CallRun,
        address: Address,
        keys: BTreeSet<B256>,
    ) -> Result<(), RpcError> {
        let known = run.state.accounts.get(&address);
        let keys: Vec<B256> = keys
            .into_iter()
            .filter(|k| known.is_none_or(|a| !a.storage.contains_key(k)))
            .collect();
        if known.is_some() && keys.is_empty() {
            return Err(RpcError::Unprovable(format!(
                "the call reads {address} again after it was proven"
            )));
        }
        let proof: EIP1186AccountProofResponse = self
            .upstream
            .call_as("eth_getProof", json!([address, keys, run.number]))
            .await?
            .ok_or_else(|| {
                RpcError::Unprovable(format!("the upstream has no proof for {address}"))
            })?;
        let account = state::check_account_proof(&proof, run.header.state_root, address, &keys)?;
        let code = match known {
            Some(a) => a.info.code.clone(),
            None => {
                let hint = run.codes.get(&address);
                let code = self
                    .code_by_hash(address, account.code_hash, &run.number, hint)
                    .await?;
                Some(revm::bytecode::Bytecode::new_raw(code))
            }
        };
        let entry = run
            .state
            .accounts
            .entry(address)
            .or_insert_with(|| ProvenAccount {
                info: revm::state::AccountInfo::default(),
                storage: HashMap::new(),
            });
        entry.info.balance = account.balance;
        entry.info.nonce = account.nonce;
        entry.info.code_hash = account.code_hash;
        entry.info.code = code;
        for slot in &proof.storage_proof {
            entry.storage.insert(slot.key.as_b256(), slot.value);
        }
        Ok(())
    }

    /// A block number of a log filter bound.
    async fn filter_bound(&self, bound: Option<&BlockNumberOrTag>) -> Result<u64, RpcError> {
        let r = match bound.copied().unwrap_or(BlockNumberOrTag::Latest) {
            BlockNumberOrTag::Latest => BlockRef::Latest,
            BlockNumberOrTag::Safe => BlockRef::Safe,
            BlockNumberOrTag::Finalized => BlockRef::Finalized,
            BlockNumberOrTag::Number(n) => return Ok(n),
            other => {
                return Err(RpcError::InvalidParams(format!(
                    "block {other} cannot be verified"
                )));
            }
        };
        Ok(self.resolve(r).await?.number)
    }

    /// The anchors of blocks `from..=top.number`, oldest first: each from the anchor source,
    /// else by the parent hash of the verified header above it (one walk for the range).
    async fn anchors_down(&self, top: Anchor, from: u64) -> Result<Vec<Anchor>, RpcError> {
        let mut anchors = vec![top];
        let mut current = top;
        while current.number > from {
            let below = match self
                .anchors
                .anchor(BlockRef::Number(current.number - 1))
                .await
            {
                Ok(anchor) => anchor,
                Err(AnchorError::NotAnchored(_)) => {
                    let header = self.header(&current).await?;
                    Anchor {
                        number: current.number - 1,
                        hash: header.parent_hash,
                        beacon_root: header.parent_beacon_block_root.unwrap_or_default(),
                        ..current
                    }
                }
                Err(e) => return Err(e.into()),
            };
            anchors.push(below);
            current = below;
        }
        anchors.reverse();
        Ok(anchors)
    }

    /// `eth_getLogs`: the matching logs of the verified receipts of every block in the range
    /// whose verified bloom may hold them.
    async fn logs(&self, p: &[Value]) -> Result<Value, RpcError> {
        let filter: Filter =
            serde_json::from_value(params::opt(p, 0).cloned().unwrap_or(Value::Null))
                .map_err(|e| RpcError::InvalidParams(format!("param 0: not a log filter: {e}")))?;
        let anchors = match &filter.block_option {
            FilterBlockOption::AtBlockHash(h) => vec![self.resolve(BlockRef::Hash(*h)).await?],
            FilterBlockOption::Range {
                from_block,
                to_block,
            } => {
                let from = self.filter_bound(from_block.as_ref()).await?;
                let to = self.filter_bound(to_block.as_ref()).await?;
                if to < from || to - from >= self.limits.max_log_blocks {
                    return Err(RpcError::InvalidParams(format!(
                        "block range {from}..={to}: at most {} blocks, from ≤ to",
                        self.limits.max_log_blocks
                    )));
                }
                let top = self.resolve(BlockRef::Number(to)).await?;
                self.anchors_down(top, from).await?
            }
        };
        let mut out = Vec::new();
        for anchor in anchors {
            let header = self.header(&anchor).await?;
            if !filter.matches_bloom(header.logs_bloom) {
                continue;
            }
            let block = self.block(anchor).await?;
            let receipts = self.receipts(&block).await?;
            let bloom = receipts
                .iter()
                .fold(alloy_primitives::Bloom::ZERO, |acc, r| acc | r.bloom());
            if bloom != header.logs_bloom {
                return mismatch(
                    Check::LogsBloom,
                    "logsBloom",
                    format!(
                        "the receipts' blooms of block {} do not make the header's bloom",
                        anchor.number
                    ),
                );
            }
            out.extend(render::logs(&block, &receipts, |log| {
                filter.matches_address(log.address) && filter.matches_topics(log.topics())
            })?);
        }
        Ok(Value::Array(out))
    }
}

/// A call's block and the state proven for it so far.
struct CallRun {
    header: Header,
    number: String,
    state: ProvenState,
    /// Code the upstream hinted at, used only when it hashes to a proven code hash.
    codes: HashMap<Address, Bytes>,
    /// When the EVM must stop.
    deadline: EvmDeadline,
}

/// When a call's EVM runs must stop: [`EVM_TIMEOUT`] after its setup, or earlier when the
/// request's budget (a batch shares one) says so.
#[derive(Debug, Clone, Copy)]
struct EvmDeadline {
    at: std::time::Instant,
    /// The request's budget is the nearer bound: its limit.
    budget: Option<std::time::Duration>,
}

impl EvmDeadline {
    /// The deadline of a call set up now, in the current request's budget if any.
    fn now() -> EvmDeadline {
        let own = std::time::Instant::now() + EVM_TIMEOUT;
        match sszgate_serve::Budget::current() {
            Some(budget) if budget.evm_deadline() < own => EvmDeadline {
                at: budget.evm_deadline(),
                budget: Some(budget.evm_limit()),
            },
            _ => EvmDeadline {
                at: own,
                budget: None,
            },
        }
    }

    /// The error of a run stopped at it: geth's for one call's timeout.
    fn why(&self) -> String {
        match self.budget {
            None => format!("execution aborted (timeout = {}s)", EVM_TIMEOUT.as_secs()),
            Some(limit) => format!(
                "execution aborted: the request's EVM time of {}s is spent: narrow the request or split the batch",
                limit.as_secs()
            ),
        }
    }
}

/// The runs of an `eth_estimateGas` call: each at its gas limit over proven state.
struct EstimateRuns<'a, A> {
    verifier: &'a Verifier<A>,
    run: &'a mut CallRun,
    call: &'a mut CallRequest,
}

impl<A: AnchorSource> crate::call::Runs for EstimateRuns<'_, A> {
    fn at(&mut self, gas: u64) -> impl Future<Output = Result<Attempt, RpcError>> + Send {
        self.call.gas = Some(gas);
        self.verifier.run_proven(self.run, self.call)
    }
}

/// The JSON-RPC answer of a call run over proven state.
fn call_result(result: ExecutionResult) -> Result<Value, RpcError> {
    crate::call::call_output(result).map(|output| json!(output))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use sszgate_serve::{Budget, BudgetLimits};

    use super::{EVM_TIMEOUT, EvmDeadline};

    #[test]
    fn a_call_outside_a_request_gets_geths_timeout() {
        let before = Instant::now();
        let deadline = EvmDeadline::now();
        assert!(deadline.at >= before + EVM_TIMEOUT);
        assert_eq!(deadline.why(), "execution aborted (timeout = 5s)");
    }

    #[tokio::test]
    async fn a_requests_evm_budget_bounds_its_calls_when_it_is_nearer() {
        let budget = Budget::new(BudgetLimits {
            evm: Duration::from_secs(1),
            ..BudgetLimits::default()
        });
        let ends = budget.evm_deadline();
        let deadline = budget.scope(async { EvmDeadline::now() }).await;
        assert_eq!(deadline.at, ends);
        assert!(
            deadline
                .why()
                .contains("the request's EVM time of 1s is spent")
        );
        // A budget further away than one call's timeout leaves the call's own.
        let roomy = Budget::new(BudgetLimits {
            evm: Duration::from_secs(60),
            ..BudgetLimits::default()
        });
        let far = roomy.evm_deadline();
        let deadline = roomy.scope(async { EvmDeadline::now() }).await;
        assert!(deadline.at < far);
        assert_eq!(deadline.why(), "execution aborted (timeout = 5s)");
    }
}
