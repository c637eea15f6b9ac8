//! The trust input: an [`AnchorSource`] names execution blocks (number and hash) it verified,
//! and [`FixedAnchors`] is one built from a fixed list (tests, or a pinned block).
//!
//! Not here: how anchors are verified (the light client's business) or blocks derived from
//! an anchor by parent hash (`verifier`).

use std::{
    collections::{BTreeMap, HashMap},
    future::Future,
};

use alloy_primitives::B256;
use sszgate_light::{Anchor, BlockRef};

use crate::error::AnchorError;

/// The largest recorded beacon block read (mainnet blocks are a few MB at most).
const MAX_BLOCK_FILE: u64 = 64 << 20;

/// A source of trusted execution blocks; the verifier trusts nothing else.
pub trait AnchorSource: Send + Sync + 'static {
    /// The anchor of `r`, or why there is none.
    fn anchor(&self, r: BlockRef) -> impl Future<Output = Result<Anchor, AnchorError>> + Send;

    /// Where the source stands (a light client's slots), for metrics; `None` when it has no
    /// such state.
    fn status(&self) -> Option<sszgate_light::client::LightStatus> {
        None
    }
}

/// A fixed set of anchors, by number and hash, and which of them the tags name.
#[derive(Debug, Clone, Default)]
pub struct FixedAnchors {
    by_number: BTreeMap<u64, Anchor>,
    by_hash: HashMap<B256, Anchor>,
    latest: Option<u64>,
    safe: Option<u64>,
    finalized: Option<u64>,
}

impl FixedAnchors {
    /// No anchors.
    pub fn new() -> FixedAnchors {
        FixedAnchors::default()
    }

    /// Adds `anchor`; the newest added so far is `latest` unless a tag says otherwise.
    pub fn with(mut self, anchor: Anchor) -> FixedAnchors {
        self.by_number.insert(anchor.number, anchor);
        self.by_hash.insert(anchor.hash, anchor);
        self
    }

    /// Names the anchored block `number` as `tag` (`Latest`, `Safe` or `Finalized`).
    pub fn tag(mut self, tag: BlockRef, number: u64) -> FixedAnchors {
        match tag {
            BlockRef::Latest => self.latest = Some(number),
            BlockRef::Safe => self.safe = Some(number),
            BlockRef::Finalized => self.finalized = Some(number),
            BlockRef::Number(_) | BlockRef::Hash(_) => {}
        }
        self
    }

    /// The block a tag names; `latest` defaults to the newest anchor, the others to none.
    fn by_tag(&self, tag: Option<u64>, name: &str) -> Result<Anchor, AnchorError> {
        let newest = (name == "latest")
            .then(|| self.by_number.keys().next_back().copied())
            .flatten();
        let number = tag
            .or(newest)
            .ok_or_else(|| AnchorError::NotAnchored(name.to_string()))?;
        self.number(number)
    }

    /// Anchors taken on trust from SSZ beacon blocks stored in `dir` as a recording names
    /// them (`eth_v2_beacon_blocks_<root>.ssz`); `latest` is the parent of the block stored as
    /// `eth_v2_beacon_blocks_head.ssz` (what colibri's recordings prove for `latest`), when
    /// there is one. Each block's root is recomputed from its bytes, not read from the name.
    /// For replaying recorded data and for pinning blocks a user already trusts.
    pub fn from_recorded_blocks(
        spec: &sszgate_light::ChainSpec,
        dir: &std::path::Path,
    ) -> Result<FixedAnchors, String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut fixed = FixedAnchors::new();
        let mut head_parent = None;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name
                .strip_prefix("eth_v2_beacon_blocks_")
                .and_then(|rest| rest.strip_suffix(".ssz"))
            else {
                continue;
            };
            let bytes = sszgate_light::persist::read_file_bounded(&entry.path(), MAX_BLOCK_FILE)
                .map_err(|e| format!("{name}: {e}"))?;
            let block = sszgate_light::block::AnyBlock::from_ssz(spec, &bytes)
                .map_err(|e| format!("{name}: {e}"))?
                .summary();
            if id == "head" {
                head_parent = Some(block.header.parent_root);
                continue;
            }
            fixed = fixed.with(Anchor {
                slot: block.header.slot,
                beacon_root: block.root,
                number: block.execution_number,
                hash: block.execution_hash,
                trust: sszgate_light::Trust::Finalized,
            });
        }
        let latest = head_parent.and_then(|parent| {
            fixed
                .by_number
                .values()
                .find(|a| a.beacon_root == parent)
                .map(|a| a.number)
        });
        Ok(match latest {
            Some(n) => fixed.tag(BlockRef::Latest, n),
            None => fixed,
        })
    }

    /// Every anchor, by block number.
    pub fn anchors(&self) -> impl Iterator<Item = &Anchor> {
        self.by_number.values()
    }

    fn number(&self, n: u64) -> Result<Anchor, AnchorError> {
        self.by_number
            .get(&n)
            .copied()
            .ok_or_else(|| AnchorError::NotAnchored(format!("block {n}")))
    }
}

impl AnchorSource for FixedAnchors {
    async fn anchor(&self, r: BlockRef) -> Result<Anchor, AnchorError> {
        match r {
            BlockRef::Latest => self.by_tag(self.latest, "latest"),
            BlockRef::Safe => self.by_tag(self.safe.or(self.finalized), "safe"),
            BlockRef::Finalized => self.by_tag(self.finalized, "finalized"),
            BlockRef::Number(n) => self.number(n),
            BlockRef::Hash(h) => self
                .by_hash
                .get(&h)
                .copied()
                .ok_or_else(|| AnchorError::NotAnchored(format!("block {h}"))),
        }
    }
}

/// The beacon light client as the verifier's anchor source: a block it cannot connect to a
/// signed header is not anchored (the verifier may still reach it by parent hash from one it
/// can); any other failure of the light client makes it unavailable.
pub struct LightAnchors<A: sszgate_light::BeaconApi>(
    pub std::sync::Arc<sszgate_light::LightClient<A>>,
);

impl<A: sszgate_light::BeaconApi + 'static> AnchorSource for LightAnchors<A> {
    async fn anchor(&self, r: BlockRef) -> Result<Anchor, AnchorError> {
        self.0.anchor(r).await.map_err(anchor_error)
    }

    fn status(&self) -> Option<sszgate_light::client::LightStatus> {
        Some(self.0.status())
    }
}

/// What a light-client failure means for a block: not anchored when the light client could
/// not tie it to a signed header — not connected, a block whose recomputed root is not the
/// header's (a node serving containers of another spec version, or a changed block), or one
/// whose signing aggregate is below the participation rule (a property of that block, not of
/// the source) — so the verifier may still reach it by parent hash from a block that is
/// anchored; unavailable for anything else (not synced, the beacon node down …).
fn anchor_error(e: sszgate_light::LightError) -> AnchorError {
    use sszgate_light::LightError;
    match e {
        LightError::NotConnected { .. }
        | LightError::RootMismatch { .. }
        | LightError::Participation { .. } => AnchorError::NotAnchored(e.to_string()),
        other => AnchorError::Unavailable(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sszgate_light::LightError;

    #[test]
    fn a_block_the_light_client_cannot_tie_is_not_anchored_other_failures_unavailable() {
        let mismatch = LightError::RootMismatch {
            check: "block_root",
            field: "body",
            got: B256::ZERO,
            expected: B256::repeat_byte(1),
        };
        assert!(
            matches!(anchor_error(mismatch), AnchorError::NotAnchored(m) if m.contains("block_root"))
        );
        let weak = LightError::Participation {
            participants: 0,
            required: 342,
            field: "child.sync_aggregate",
        };
        assert!(
            matches!(anchor_error(weak), AnchorError::NotAnchored(m) if m.contains("0 of 512 signed, 342 required"))
        );
        let config = LightError::Config {
            field: "SECONDS_PER_SLOT",
        };
        assert!(matches!(anchor_error(config), AnchorError::Unavailable(_)));
    }
}
