//! The prover's eth_getLogs in sszgate's `LogsRangeProof` (`crate::logs` verifies it): the
//! newest block of the range resolved and tied to a signature as every proof's data block is
//! (`Prover::resolve`, `tie`), the older ones fetched by their beacon parent roots, and for
//! each block whose bloom may match the filter all its receipts and the transactions of those
//! with matching logs. The node's `eth_getLogs` is not asked: the verifier computes the logs.
//!
//! Bounds: the range (`bounds::log_range`), and the receipts' bytes over the whole range
//! ([`MAX_RANGE_RECEIPT_BYTES`]), checked as they arrive. Not here: colibri's `LogsProof`
//! (`Prover::logs`).

use alloy_primitives::Bloom;
use serde_json::Value;
use ssz_types::VariableList;
use sszgate_light::block::AnyBlock;

use super::receipts::BlockReceipts;
use super::tree::BodyTree;
use super::{Blocks, ProveError, Prover, bounds, nodes, tie, tx_at, upstream};
use crate::filter::{self, Filter};
use crate::multiproof::{
    BLOCK_HASH, BLOCK_NUMBER, LOGS_BLOOM, PARENT_HASH, RECEIPTS_ROOT, transaction_gindex,
};
use crate::params::BlockArg;
use crate::types::{BigBytes, DataUnion, LogsRangeBlock, LogsRangeProof, LogsRangeTx, ProofUnion};

/// The most receipt bytes one range proof carries (a remote verifier reads proofs of at most
/// 32 MiB): a wider range or filter is refused, naming the block where it ran out.
pub(crate) const MAX_RANGE_RECEIPT_BYTES: usize = 24 << 20;

impl Prover {
    /// eth_getLogs as a `LogsRangeProof`.
    pub(super) async fn logs_range(
        &self,
        params: &Value,
    ) -> Result<(DataUnion, ProofUnion), ProveError> {
        bounds::check("eth_getLogs", params)?;
        let filter = Filter::parse(params).map_err(|e| ProveError::Params(e.to_string()))?;
        let (newest, count) = self.range_newest(params, &filter).await?;
        let (_, header_proof, tree) = tie(&newest)?;
        let mut chain = vec![(newest.data, tree)];
        while chain.len() < count {
            let (last, _) = &chain[chain.len() - 1];
            let parent = self.block(&last.parent_root().to_string()).await?;
            let tree = BodyTree::new(&parent);
            chain.push((parent, tree));
        }
        chain.reverse();
        let mut blocks = Vec::with_capacity(count);
        let mut bytes = 0usize;
        for (block, tree) in &chain {
            let p = block.execution_payload();
            let receipts = match filter.may_match(&Bloom::new(p.logs_bloom.0)) {
                true => Some(self.range_receipts(block, &mut bytes).await?),
                false => None,
            };
            blocks.push(range_block(block, tree, receipts.as_ref(), &filter)?);
        }
        let proof = LogsRangeProof {
            blocks: VariableList::new(blocks)
                .map_err(|e| upstream(format!("too many blocks: {e:?}")))?,
            header_proof,
        };
        Ok((DataUnion::None, ProofUnion::LogsRange(Box::new(proof))))
    }

    /// The range's newest block with its signing blocks, and how many blocks the range has:
    /// the `blockHash` block; or `toBlock` (absent or `latest`: the newest block signed by 2/3
    /// of the committee, as every `latest` proof) back to `fromBlock` (`latest`: the same).
    async fn range_newest(
        &self,
        params: &Value,
        filter: &Filter,
    ) -> Result<(Blocks, usize), ProveError> {
        let (from_arg, to_arg) = match &filter.blocks {
            filter::Blocks::Hash(h) => {
                let b = self.resolve(&BlockArg::Hash(*h)).await?;
                let got = b.data.execution_payload().block_hash;
                return match got == *h {
                    true => Ok((b, 1)),
                    false => Err(upstream(format!(
                        "the beacon block found for {h} holds {got}"
                    ))),
                };
            }
            filter::Blocks::Range { from, to } => (from, to),
        };
        let latest = BlockArg::Tag("latest".into());
        let newest = match to_arg {
            BlockArg::Tag(t) if t == "latest" => self.resolve(&latest).await?,
            _ => {
                let to = self.filter_block(params[0].get("toBlock")).await?;
                self.resolve(&BlockArg::Number(to)).await?
            }
        };
        let to = newest.data.execution_payload().block_number;
        let from = match from_arg {
            BlockArg::Tag(t) if t == "latest" => to,
            _ => self.filter_block(params[0].get("fromBlock")).await?,
        };
        let count = bounds::log_range(from, to)?;
        Ok((newest, count as usize))
    }

    /// `block`'s receipts from the node, checked against its receiptsRoot; `bytes` counts the
    /// range's receipt bytes so far, bounded by [`MAX_RANGE_RECEIPT_BYTES`].
    async fn range_receipts(
        &self,
        block: &AnyBlock,
        bytes: &mut usize,
    ) -> Result<BlockReceipts, ProveError> {
        let p = block.execution_payload();
        let (_, receipts) = self.block_receipts(p.block_number).await?;
        if receipts.root() != p.receipts_root {
            return Err(upstream(format!(
                "eth_getBlockReceipts {}: the receipts do not make the block's receiptsRoot",
                p.block_number
            )));
        }
        *bytes = receipts
            .encoded()
            .iter()
            .fold(*bytes, |sum, r| sum.saturating_add(r.len()));
        if *bytes > MAX_RANGE_RECEIPT_BYTES {
            return Err(ProveError::Unsupported(format!(
                "the receipts up to block {} exceed {MAX_RANGE_RECEIPT_BYTES} bytes in one proof (narrow the range or the filter)",
                p.block_number
            )));
        }
        Ok(receipts)
    }
}

/// One block of a range proof from its body's tree: number, hash, parent hash and bloom, and
/// when its bloom may match `filter`, all its `receipts` (needed then, ignored else) and the
/// transactions of those holding matching logs.
pub fn range_block(
    block: &AnyBlock,
    tree: &BodyTree,
    receipts: Option<&BlockReceipts>,
    filter: &Filter,
) -> Result<LogsRangeBlock, ProveError> {
    let p = block.execution_payload();
    let mut leaves = vec![BLOCK_NUMBER, BLOCK_HASH, PARENT_HASH, LOGS_BLOOM];
    let (mut raw, mut txs) = (Vec::new(), Vec::new());
    if filter.may_match(&Bloom::new(p.logs_bloom.0)) {
        let receipts = receipts.ok_or_else(|| {
            upstream(format!(
                "block {}: its bloom may match, its receipts are needed",
                p.block_number
            ))
        })?;
        leaves.push(RECEIPTS_ROOT);
        for index in receipts.matching(filter) {
            leaves.push(transaction_gindex(index));
            txs.push(LogsRangeTx {
                transaction: tx_at(p, index)?.clone(),
                transaction_index: index,
            });
        }
        raw = receipts
            .encoded()
            .iter()
            .map(|r| BigBytes::new(r.clone()).map_err(|e| upstream(format!("a receipt: {e:?}"))))
            .collect::<Result<_, _>>()?;
    }
    let list = |e: ssz_types::Error| upstream(format!("block {}: {e:?}", p.block_number));
    Ok(LogsRangeBlock {
        block_number: p.block_number,
        block_hash: p.block_hash,
        parent_hash: p.parent_hash,
        logs_bloom: p.logs_bloom,
        receipts: VariableList::new(raw).map_err(list)?,
        txs: VariableList::new(txs).map_err(list)?,
        proof: nodes(tree.multiproof(&leaves))?,
        header: block.header_with(tree.root()),
    })
}
