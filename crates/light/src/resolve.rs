//! Resolving a block reference to an anchor: tags from the store's headers and the head's
//! signed parent, numbers by slot arithmetic and the child's (or a parent chain's) signature,
//! hashes from what is already verified or through a number.
//!
//! `Latest` is the newest signed block: the head's parent (signed by the head's sync
//! aggregate) or the store's optimistic header, whichever is newer. `Safe` is the newest block
//! signed by at least 2/3 of the committee (sync-committee supermajority, not Casper
//! justification). `Finalized` is the store's finalized header.
//!
//! What does not live here: the checks (see `anchor`), the store (see `store`).

use alloy_primitives::B256;

use crate::anchor::{
    VerifiedHeader, anchor_block, anchor_from_lc_header, trust_of, verify_parent,
    verify_signed_by_child,
};
use crate::api::BeaconApi;
use crate::block::{AnyBlock, BlockSummary};
use crate::client::{
    LightClient, MAX_BLOCK_BYTES, MAX_CHILD_SEARCH_SLOTS, MAX_NUMBER_SEARCH_STEPS, MAX_PARENT_CHAIN,
};
use crate::error::LightError;
use crate::store::TrustedHeader;
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

    /// An anchor the store's headers or the cache already hold, matching `wanted`.
    fn known_anchor(&self, wanted: impl Fn(&Anchor) -> bool) -> Option<Anchor> {
        let store = self.read_store();
        let headers = [
            (&store.finalized_header, Trust::Finalized),
            (
                &store.safe.header,
                if store.safe.header == store.finalized_header {
                    Trust::Finalized
                } else {
                    Trust::Supermajority
                },
            ),
            (
                &store.optimistic.header,
                trust_of(store.optimistic.participants),
            ),
        ];
        if let Some(anchor) = headers
            .into_iter()
            .filter_map(|(h, t)| anchor_from_lc_header(h, t).ok())
            .find(&wanted)
        {
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
        let verified = verify_signed_by_child(&self.read_store(), &parent, &head)?;
        Ok((verified, parent))
    }

    /// The store's newest signed header (with `supermajority`, the newest signed by 2/3).
    fn stored_newest(&self, supermajority: bool) -> Result<Anchor, LightError> {
        let store = self.read_store();
        let trusted: &TrustedHeader = if supermajority {
            &store.safe
        } else {
            &store.optimistic
        };
        let trust = if trusted.header == store.finalized_header {
            Trust::Finalized
        } else if supermajority {
            Trust::Supermajority
        } else {
            trust_of(trusted.participants)
        };
        anchor_from_lc_header(&trusted.header, trust)
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
        if number > newest.number {
            return Err(LightError::NotConnected {
                detail: format!(
                    "block {number} is newer than the newest signed block {}",
                    newest.number
                ),
            });
        }
        let block = self.find_by_number(number, newest).await?;
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

    /// The canonical beacon block whose payload is execution block `number` (not yet trusted:
    /// the caller verifies it).
    async fn find_by_number(
        &self,
        number: u64,
        newest: Anchor,
    ) -> Result<BlockSummary, LightError> {
        // Each non-missed slot adds one execution block, so the slot `newest.number - number`
        // slots back holds a number of at least `number`; step back by the excess until it
        // matches (a missed slot: one more back).
        let mut slot = newest.slot.saturating_sub(newest.number - number);
        for _ in 0..MAX_NUMBER_SEARCH_STEPS {
            match self.fetch_block(&slot.to_string()).await? {
                None => slot = slot.saturating_sub(1),
                Some(block) if block.execution_number == number => return Ok(block),
                Some(block) if block.execution_number > number => {
                    slot = slot.saturating_sub(block.execution_number - number)
                }
                Some(block) => {
                    return Err(LightError::NotConnected {
                        detail: format!(
                            "slot {slot} holds block {} below {number}: the node's chain does not match the signed head",
                            block.execution_number
                        ),
                    });
                }
            }
        }
        Err(LightError::NotConnected {
            detail: format!("block {number} not found within {MAX_NUMBER_SEARCH_STEPS} lookups"),
        })
    }

    /// Verifies `block` through the first block after it (missed slots skipped).
    async fn signed_by_child(&self, block: &BlockSummary) -> Result<VerifiedHeader, LightError> {
        let first = block.header.slot.saturating_add(1);
        for slot in first..=block.header.slot.saturating_add(MAX_CHILD_SEARCH_SLOTS) {
            if let Some(child) = self.fetch_block(&slot.to_string()).await? {
                return verify_signed_by_child(&self.read_store(), block, &child);
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
