//! Resolving a block reference to an anchor: tags from the store's headers and the head's
//! signed parent, numbers by slot arithmetic and the child's (or a parent chain's) signature,
//! hashes from what is already verified or through a number.
//!
//! Every signed header used here must pass the client's [`crate::ParticipationPolicy`]
//! (2/3 of the committee by default). `Latest` is the newest such block: the head's parent
//! (signed by the head's sync aggregate) or the store's optimistic header, whichever is newer.
//! A number newer than both is anchored by its own child's aggregate. Children from the
//! future (beyond the clock disparity) are refused. `Safe` is the newest block
//! signed by at least 2/3 of the committee (sync-committee supermajority, not Casper
//! justification). `Finalized` is the store's finalized header.
//!
//! What does not live here: the checks (see `anchor`), the store (see `store`).

use alloy_primitives::B256;

use crate::anchor::{
    VerifiedHeader, anchor_block, anchor_from_lc_header, verify_parent, verify_signed_by_child,
};
use crate::api::BeaconApi;
use crate::block::{AnyBlock, BlockSummary};
use crate::client::{
    CLOCK_DISPARITY_SLOTS, LightClient, MAX_BLOCK_BYTES, MAX_CHILD_SEARCH_SLOTS,
    MAX_NUMBER_SEARCH_STEPS, MAX_PARENT_CHAIN, off_workers,
};
use crate::error::LightError;
use crate::store::{LightClientStore, TrustedHeader};
use crate::types::BeaconBlockHeader;
use crate::{Anchor, BlockRef, Trust};

impl<A: BeaconApi> LightClient<A> {
    /// The execution block `block` refers to, proven from a verified beacon header.
    pub async fn anchor(&self, block: BlockRef) -> Result<Anchor, LightError> {
        let anchor = match block {
            BlockRef::Finalized => {
                anchor_from_lc_header(&self.read_store().finalized_header, Trust::Finalized)?
            }
            BlockRef::Safe => self.newest_signed(true).await?,
            BlockRef::Latest => self.newest_signed(false).await?,
            BlockRef::Number(number) => self.anchor_number(number).await?,
            BlockRef::Hash(hash) => self.anchor_hash(hash, None).await?,
        };
        self.remember(anchor);
        Ok(anchor)
    }

    /// What is already verified for `block`, without asking the beacon node: the store's
    /// headers for the tags, the store's headers and earlier anchors for numbers and hashes.
    pub fn known(&self, block: BlockRef) -> Option<Anchor> {
        match block {
            BlockRef::Finalized => {
                anchor_from_lc_header(&self.read_store().finalized_header, Trust::Finalized).ok()
            }
            BlockRef::Safe => self.stored_newest(true).ok(),
            BlockRef::Latest => self.stored_newest(false).ok(),
            BlockRef::Number(number) => self.known_anchor(|a| a.number == number),
            BlockRef::Hash(hash) => self.known_anchor(|a| a.hash == hash),
        }
    }

    /// The execution block with hash `hash`. The Beacon API cannot look a block up by its
    /// execution hash: unless the block is already known, `number_hint` (e.g. the number the
    /// execution node gives for the hash) is anchored and its hash compared.
    pub async fn anchor_hash(
        &self,
        hash: B256,
        number_hint: Option<u64>,
    ) -> Result<Anchor, LightError> {
        if let Some(anchor) = self.known_anchor(|a| a.hash == hash) {
            return Ok(anchor);
        }
        let Some(number) = number_hint else {
            return Err(LightError::NotConnected {
                detail: format!(
                    "block hash {hash} is not among the verified headers, and a beacon node cannot look up an execution hash: anchor its number and compare"
                ),
            });
        };
        let anchor = self.anchor_number(number).await?;
        if anchor.hash != hash {
            return Err(LightError::FieldMismatch {
                check: "block_hash",
                field: "execution block hash",
                detail: format!(
                    "block {number} is {} in the verified chain, not {hash}",
                    anchor.hash
                ),
            });
        }
        self.remember(anchor);
        Ok(anchor)
    }

    /// An anchor the store's headers (those the participation rule admits) or the cache
    /// already hold, matching `wanted`.
    fn known_anchor(&self, wanted: impl Fn(&Anchor) -> bool) -> Option<Anchor> {
        let store = self.read_store();
        if let Some(anchor) = self.stored_anchors(&store, false).find(&wanted) {
            return Some(anchor);
        }
        let cache = self.anchors.lock().ok()?;
        cache.by_number.values().find(|a| wanted(a)).copied()
    }

    fn remember(&self, anchor: Anchor) {
        if let Ok(mut cache) = self.anchors.lock() {
            cache.insert(anchor);
        }
    }

    /// A block by its beacon id (`head`, a slot or a root); `Ok(None)` when there is none
    /// (a missed slot).
    async fn fetch_block(&self, id: &str) -> Result<Option<BlockSummary>, LightError> {
        match self
            .api
            .get_ssz(&format!("/eth/v2/beacon/blocks/{id}"), MAX_BLOCK_BYTES)
            .await
        {
            Ok(bytes) => Ok(Some(AnyBlock::from_ssz(&self.spec, &bytes)?.summary())),
            Err(LightError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The head's parent, verified by the head's sync aggregate, as (header, parent block).
    async fn signed_head_parent(&self) -> Result<(VerifiedHeader, BlockSummary), LightError> {
        let head = self
            .fetch_block("head")
            .await?
            .ok_or_else(|| LightError::NotConnected {
                detail: "the beacon node has no head block".into(),
            })?;
        let parent = self
            .fetch_block(&head.header.parent_root.to_string())
            .await?
            .ok_or_else(|| LightError::NotConnected {
                detail: format!(
                    "the head's parent {} is not served",
                    head.header.parent_root
                ),
            })?;
        let verified = self.verify_by_child(&parent, &head).await?;
        Ok((verified, parent))
    }

    /// `parent` verified by `child`'s aggregate under the participation rule; a child from
    /// the future (beyond the clock disparity) is refused first.
    /// The BLS check runs on the blocking pool.
    async fn verify_by_child(
        &self,
        parent: &BlockSummary,
        child: &BlockSummary,
    ) -> Result<VerifiedHeader, LightError> {
        self.check_not_future(&child.header)?;
        let (store, policy) = (self.read_store(), self.policy);
        let (parent, child) = (parent.clone(), child.clone());
        off_workers(move || verify_signed_by_child(&store, policy, &parent, &child)).await?
    }

    /// Refuses a header whose slot is ahead of the wall clock by more than
    /// [`CLOCK_DISPARITY_SLOTS`]: no honest committee has signed it yet.
    fn check_not_future(&self, header: &BeaconBlockHeader) -> Result<(), LightError> {
        let newest = self.current_slot().saturating_add(CLOCK_DISPARITY_SLOTS);
        if header.slot > newest {
            return Err(LightError::SlotOrder {
                detail: format!(
                    "block at slot {} is ahead of the wall clock (slot {}, {CLOCK_DISPARITY_SLOTS} slot of disparity allowed)",
                    header.slot,
                    self.current_slot()
                ),
            });
        }
        Ok(())
    }

    /// The trust a header the store holds gives under the participation rule; `None` when
    /// its aggregate had too few signers to anchor (the finalized header always anchors).
    fn stored_trust(&self, store: &LightClientStore, trusted: &TrustedHeader) -> Option<Trust> {
        if trusted.header == store.finalized_header {
            return Some(Trust::Finalized);
        }
        let threshold = store.safety_threshold();
        self.policy
            .check(trusted.participants, threshold, "store header aggregate")
            .ok()
    }

    /// The store's headers that may anchor (with `supermajority`, only those signed by 2/3):
    /// the finalized header, then the supermajority and optimistic headers the rule admits.
    fn stored_anchors<'s>(
        &self,
        store: &'s LightClientStore,
        supermajority: bool,
    ) -> impl Iterator<Item = Anchor> + 's {
        let signed = [&store.safe, &store.optimistic].map(|t| (t, self.stored_trust(store, t)));
        let admitted = signed
            .into_iter()
            .filter_map(move |(trusted, trust)| match trust {
                Some(Trust::Signed) if supermajority => None,
                Some(trust) => Some((&trusted.header, trust)),
                None => None,
            });
        std::iter::once((&store.finalized_header, Trust::Finalized))
            .chain(admitted)
            .filter_map(|(header, trust)| anchor_from_lc_header(header, trust).ok())
    }

    /// The store's newest header that may anchor (with `supermajority`, signed by 2/3).
    fn stored_newest(&self, supermajority: bool) -> Result<Anchor, LightError> {
        let store = self.read_store();
        let newest = self
            .stored_anchors(&store, supermajority)
            .max_by_key(|a| a.slot);
        match newest {
            Some(anchor) => Ok(anchor),
            // The finalized header's branch does not verify: say so.
            None => anchor_from_lc_header(&store.finalized_header, Trust::Finalized),
        }
    }

    /// The newest signed block (with `supermajority`, the newest signed by 2/3): the head's
    /// parent when the head's aggregate verifies and qualifies, else the store's header.
    async fn newest_signed(&self, supermajority: bool) -> Result<Anchor, LightError> {
        let stored = self.stored_newest(supermajority)?;
        match self.head_parent().await {
            Some(head)
                if head.slot > stored.slot
                    && (!supermajority || head.trust == Trust::Supermajority) =>
            {
                Ok(head)
            }
            // The head cannot be verified (node lagging, committee not yet known): the store's
            // own header is still a verified answer.
            _ => Ok(stored),
        }
    }

    /// The head's parent as verified by the head's aggregate, asked of the node once per
    /// slot of the local clock (every `latest` and `safe` in that slot reuses it).
    async fn head_parent(&self) -> Option<Anchor> {
        let slot = self.current_slot();
        if let Some((cached_slot, head)) = self.anchors.lock().ok()?.head
            && cached_slot == slot
        {
            return head;
        }
        let head = match self.signed_head_parent().await {
            Ok((verified, parent)) => anchor_block(&verified, &parent).ok(),
            // One request's spent budget says nothing of the head: not remembered.
            Err(LightError::Budget { .. }) => return None,
            Err(_) => None,
        };
        if let Ok(mut cache) = self.anchors.lock() {
            cache.head = Some((slot, head));
        }
        head
    }

    /// The execution block `number`: found by slot arithmetic from the newest signed block,
    /// verified by its child's aggregate or, when that committee is not stored, as a parent
    /// of a verified block within [`MAX_PARENT_CHAIN`] slots.
    async fn anchor_number(&self, number: u64) -> Result<Anchor, LightError> {
        if let Some(anchor) = self.known_anchor(|a| a.number == number) {
            return Ok(anchor);
        }
        let newest = self.newest_signed(false).await?;
        let block = self.find_by_number(number, newest).await?;
        if number > newest.number {
            // Newer than every signed header: only its own child's aggregate can sign it.
            return anchor_block(&self.signed_by_child(&block).await?, &block);
        }
        let (period, known) = match self.signed_by_child(&block).await {
            Ok(verified) => return anchor_block(&verified, &block),
            Err(LightError::UnknownCommittee { period, known }) => (period, known),
            Err(e) => return Err(e),
        };
        // The child's committee is not in the store: connect through parents instead.
        self.chained_from(newest, &block)
            .await
            .map_err(|e| LightError::NotConnected {
                detail: format!(
                    "block {number} (slot {}) is signed by the committee of period {period}, which \
                 the store does not hold ({known}), and the parent chain failed: {e}",
                    block.header.slot
                ),
            })
    }

    /// The canonical beacon block whose payload is execution block `number`, searched from
    /// the newest signed block `newest` backwards or (a newer block) forwards up to the wall
    /// clock's slot. Not yet trusted: the caller verifies it.
    async fn find_by_number(
        &self,
        number: u64,
        newest: Anchor,
    ) -> Result<BlockSummary, LightError> {
        // Each non-missed slot adds one execution block, so `newest.number.abs_diff(number)`
        // slots away from `newest` holds a number no closer to `newest`'s than `number` is;
        // step on by the difference until it matches (a missed slot: one more step).
        let forward = number > newest.number;
        let step = |slot: u64, by: u64| {
            if forward {
                slot.saturating_add(by)
            } else {
                slot.saturating_sub(by)
            }
        };
        let last = self.current_slot().saturating_add(CLOCK_DISPARITY_SLOTS);
        let mut slot = step(newest.slot, newest.number.abs_diff(number));
        for _ in 0..MAX_NUMBER_SEARCH_STEPS {
            if slot > last {
                break;
            }
            match self.fetch_block(&slot.to_string()).await? {
                None => slot = step(slot, 1),
                Some(block) if block.execution_number == number => return Ok(block),
                Some(block) if (block.execution_number < number) == forward => {
                    slot = step(slot, block.execution_number.abs_diff(number))
                }
                Some(block) => {
                    return Err(LightError::NotConnected {
                        detail: format!(
                            "slot {slot} holds block {}, past {number} from the newest anchored block {}: the node's chain does not match the signed head",
                            block.execution_number, newest.number
                        ),
                    });
                }
            }
        }
        Err(LightError::NotConnected {
            detail: format!(
                "no verified beacon header anchors block {number}: the newest anchored block is {}, and block {number} was not found within {MAX_NUMBER_SEARCH_STEPS} lookups up to the wall clock's slot {last}",
                newest.number
            ),
        })
    }

    /// Verifies `block` through the first block after it (missed slots skipped). When that
    /// child's aggregate is too weak for the participation rule, `block` is verified through
    /// the chain of parent roots from the first later block whose own child's aggregate meets
    /// it (within [`MAX_PARENT_CHAIN`] slots) — never by a weak aggregate itself.
    async fn signed_by_child(&self, block: &BlockSummary) -> Result<VerifiedHeader, LightError> {
        let mut chain = vec![block.clone()];
        let mut weak: Option<LightError> = None;
        loop {
            let current = chain.last().unwrap_or(block);
            let outcome = match self.next_block(current).await {
                Ok(child) => self
                    .verify_by_child(current, &child)
                    .await
                    .map_err(|e| (e, Some(child))),
                Err(e) => Err((e, None)),
            };
            match (outcome, weak.take()) {
                (Ok(verified), _) => return inherit_back(verified, &chain),
                (Err((e @ LightError::Participation { .. }, Some(child))), first) => {
                    let past = child.header.slot.saturating_sub(block.header.slot);
                    if past > MAX_PARENT_CHAIN {
                        return Err(no_qualifying_descendant(
                            block,
                            first.unwrap_or(e),
                            "over the bound",
                        ));
                    }
                    weak = Some(first.unwrap_or(e));
                    chain.push(child);
                }
                // The committee is not stored: the caller connects through parents instead.
                (Err((e @ LightError::UnknownCommittee { .. }, _)), _) | (Err((e, _)), None) => {
                    return Err(e);
                }
                (Err((e, _)), Some(first)) => {
                    return Err(no_qualifying_descendant(block, first, &e.to_string()));
                }
            }
        }
    }

    /// The first block after `block` (missed slots skipped, up to [`MAX_CHILD_SEARCH_SLOTS`]).
    async fn next_block(&self, block: &BlockSummary) -> Result<BlockSummary, LightError> {
        let first = block.header.slot.saturating_add(1);
        for slot in first..=block.header.slot.saturating_add(MAX_CHILD_SEARCH_SLOTS) {
            if let Some(child) = self.fetch_block(&slot.to_string()).await? {
                return Ok(child);
            }
        }
        Err(LightError::NotConnected {
            detail: format!(
                "no block within {MAX_CHILD_SEARCH_SLOTS} slots after slot {}",
                block.header.slot
            ),
        })
    }

    /// Verifies `block` by walking parent roots back from the verified block `from`.
    async fn chained_from(&self, from: Anchor, block: &BlockSummary) -> Result<Anchor, LightError> {
        if from.slot.saturating_sub(block.header.slot) > MAX_PARENT_CHAIN {
            return Err(LightError::NotConnected {
                detail: format!(
                    "{} slots back, over the {MAX_PARENT_CHAIN}-slot parent-chain bound",
                    from.slot - block.header.slot
                ),
            });
        }
        let mut current = self
            .fetch_block(&from.beacon_root.to_string())
            .await?
            .ok_or_else(|| LightError::NotConnected {
                detail: format!("verified block {} not served", from.beacon_root),
            })?;
        let mut verified = VerifiedHeader {
            header: current.header,
            root: current.root,
            trust: from.trust,
        };
        if verified.root != from.beacon_root {
            return Err(LightError::RootMismatch {
                check: "block_root",
                field: "block root",
                got: verified.root,
                expected: from.beacon_root,
            });
        }
        while verified.header.slot > block.header.slot {
            current = self
                .fetch_block(&verified.header.parent_root.to_string())
                .await?
                .ok_or_else(|| LightError::NotConnected {
                    detail: format!("parent {} not served", verified.header.parent_root),
                })?;
            verified = verify_parent(&verified, &current)?;
        }
        anchor_block(&verified, block)
    }
}

/// `verified` (the last block of `chain`, `chain[0]` the block asked for, each the parent of
/// the next) carried back by parent roots to `chain[0]`.
fn inherit_back(
    mut verified: VerifiedHeader,
    chain: &[BlockSummary],
) -> Result<VerifiedHeader, LightError> {
    for parent in chain.iter().rev().skip(1) {
        verified = verify_parent(&verified, parent)?;
    }
    Ok(verified)
}

/// Why `block` cannot be anchored: its child's aggregate is too weak (`weak`), and the walk
/// to a later block signed under the rule ended (`ended`).
fn no_qualifying_descendant(block: &BlockSummary, weak: LightError, ended: &str) -> LightError {
    LightError::NotConnected {
        detail: format!(
            "block {} (slot {}): its child's aggregate does not meet the participation rule ({weak}), and no later block within {MAX_PARENT_CHAIN} slots linked to it by parent roots is signed under the rule ({ended})",
            block.execution_number, block.header.slot
        ),
    }
}
