//! The light client facade: bootstrap from a checkpoint (or a saved store), sync the store to
//! the current period, and anchor execution blocks by tag, number or hash.
//!
//! `Latest` is the newest signed block: the head's parent (signed by the head's sync
//! aggregate) or the store's optimistic header, whichever is newer. `Safe` is the newest block
//! signed by at least 2/3 of the committee (sync-committee supermajority, not Casper
//! justification). `Finalized` is the store's finalized header. A block by number is found by
//! slot arithmetic from the newest signed block and verified through its child's aggregate,
//! or as a parent of a verified block when its committee is not in the store.
//!
//! What does not live here: the checks (see `store`, `anchor`), the transport (see `api`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use alloy_primitives::B256;

use crate::anchor::{
    VerifiedHeader, anchor_block, anchor_from_lc_header, trust_of, verify_parent,
    verify_signed_by_child,
};
use crate::api::BeaconApi;
use crate::block::{AnyBlock, BlockSummary};
use crate::error::LightError;
use crate::persist;
use crate::spec::ChainSpec;
use crate::store::{LightClientStore, TrustedHeader};
use crate::types::{Bootstrap, Update, split_update_stream};
use crate::{Anchor, BlockRef, Trust};

/// Largest SSZ block read (mainnet blocks are well under 2 MiB; blobs are not in blocks).
pub const MAX_BLOCK_BYTES: usize = 16 << 20;
/// Largest updates list read.
pub const MAX_UPDATES_BYTES: usize = 8 << 20;
/// Largest bootstrap, finality or optimistic update read.
pub const MAX_LC_OBJECT_BYTES: usize = 1 << 20;
/// Largest JSON answer read (config, genesis, checkpoints).
pub const MAX_JSON_BYTES: usize = 1 << 20;
/// Updates asked for in one request (the Beacon API's `MAX_REQUEST_LIGHT_CLIENT_UPDATES`).
pub const MAX_UPDATES_PER_REQUEST: u64 = 128;
/// Slots after a block searched for its child (missed slots in between).
pub const MAX_CHILD_SEARCH_SLOTS: u64 = 32;
/// Parents walked back from a verified block to reach one whose committee is not stored.
pub const MAX_PARENT_CHAIN: u64 = 64;
/// Tries of the slot arithmetic that finds a block by number.
const MAX_NUMBER_SEARCH_STEPS: usize = 16;
/// Anchors remembered for lookups by number and hash.
const ANCHOR_CACHE_SIZE: usize = 4096;

/// What one `sync` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncReport {
    /// Updates from `light_client/updates` applied.
    pub updates_applied: usize,
    /// The finality update moved the finalized header.
    pub finality_applied: bool,
    /// The optimistic update moved the optimistic header.
    pub optimistic_applied: bool,
    /// Finalized slot after the sync.
    pub finalized_slot: u64,
    /// Optimistic slot after the sync.
    pub optimistic_slot: u64,
}

/// The light client over a Beacon API.
pub struct LightClient<A: BeaconApi> {
    api: A,
    store: LightClientStore,
    store_path: Option<PathBuf>,
    clock: fn() -> u64,
    anchors: Mutex<AnchorCache>,
}

/// Anchors by execution number (lookups by hash scan it: it is small).
#[derive(Default)]
struct AnchorCache {
    by_number: HashMap<u64, Anchor>,
}

/// Seconds since the Unix epoch by the system clock.
pub fn system_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Reads the chain's parameters from the beacon node (`/eth/v1/config/spec`,
/// `/eth/v1/beacon/genesis`); when the genesis validators root is a built-in chain's, the
/// node's fork schedule must agree with it.
pub async fn fetch_chain_spec(api: &impl BeaconApi) -> Result<ChainSpec, LightError> {
    let config = api.get_json("/eth/v1/config/spec", MAX_JSON_BYTES).await?;
    let genesis = api
        .get_json("/eth/v1/beacon/genesis", MAX_JSON_BYTES)
        .await?;
    let spec = ChainSpec::from_beacon_api(&config, &genesis)?;
    let Some(known) = ChainSpec::known(&spec.genesis_validators_root) else {
        return Ok(spec);
    };
    // Every fork the built-in chain schedules must be the node's too; forks scheduled after
    // these built-ins were written come from the node.
    let disagrees = known
        .forks
        .iter()
        .zip(&spec.forks)
        .any(|(ours, theirs)| ours.1 != u64::MAX && ours != theirs);
    if disagrees || known.genesis_time != spec.genesis_time {
        return Err(LightError::FieldMismatch {
            check: "chain_spec",
            field: "fork schedule",
            detail: format!("the node's differs from built-in {}", known.name),
        });
    }
    Ok(ChainSpec {
        name: known.name,
        ..spec
    })
}

/// The beacon node's finalized checkpoint root (trust on first use: the caller warns).
pub async fn fetch_finalized_checkpoint(api: &impl BeaconApi) -> Result<B256, LightError> {
    const PATH: &str = "/eth/v1/beacon/states/head/finality_checkpoints";
    let doc = api.get_json(PATH, MAX_JSON_BYTES).await?;
    doc["data"]["finalized"]["root"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| LightError::Api {
            path: PATH.into(),
            detail: "no data.finalized.root".into(),
        })
}

impl<A: BeaconApi> LightClient<A> {
    /// Bootstraps from the trusted block root `checkpoint`.
    pub async fn bootstrap(api: A, spec: ChainSpec, checkpoint: B256) -> Result<Self, LightError> {
        let path = format!("/eth/v1/beacon/light_client/bootstrap/{checkpoint}");
        let bytes = api.get_ssz(&path, MAX_LC_OBJECT_BYTES).await?;
        let bootstrap = Bootstrap::from_ssz(&spec, &bytes)?;
        let store = LightClientStore::bootstrap(spec, checkpoint, &bootstrap)?;
        Ok(Self::from_store(api, store))
    }

    /// A client over an existing store (e.g. one loaded with [`persist::load`]).
    pub fn from_store(api: A, store: LightClientStore) -> Self {
        LightClient {
            api,
            store,
            store_path: None,
            clock: system_clock,
            anchors: Mutex::new(AnchorCache::default()),
        }
    }

    /// Resumes from the store saved at `path` if there is one, else bootstraps from
    /// `checkpoint`; the store is saved there after every sync.
    pub async fn open(
        api: A,
        spec: ChainSpec,
        path: PathBuf,
        checkpoint: B256,
    ) -> Result<Self, LightError> {
        let client = match persist::load(&spec, &path)? {
            Some(store) => Self::from_store(api, store),
            None => Self::bootstrap(api, spec, checkpoint).await?,
        };
        Ok(client.with_store_path(path))
    }

    /// Saves the store to `path` after every sync.
    pub fn with_store_path(mut self, path: PathBuf) -> Self {
        self.store_path = Some(path);
        self
    }

    /// Uses `clock` (Unix seconds) for the current slot instead of the system clock.
    pub fn with_clock(mut self, clock: fn() -> u64) -> Self {
        self.clock = clock;
        self
    }

    /// The store.
    pub fn store(&self) -> &LightClientStore {
        &self.store
    }

    /// The chain.
    pub fn spec(&self) -> &ChainSpec {
        &self.store.spec
    }

    /// The slot of the wall clock.
    pub fn current_slot(&self) -> u64 {
        self.store.spec.slot_at((self.clock)())
    }

    /// Brings the store to the current period (updates by period), then applies the latest
    /// finality and optimistic updates, and saves the store if it has a path.
    pub async fn sync(&mut self) -> Result<SyncReport, LightError> {
        let current_slot = self.current_slot();
        let mut updates_applied = 0;
        while let Some((start, count, required)) = self.periods_to_fetch(current_slot) {
            let applied = match self.apply_updates(start, count, current_slot).await {
                Ok(applied) => applied,
                // The next committee of the current period is not offered yet: signatures
                // of this period still verify with the current one.
                Err(LightError::NotFound { .. }) if !required => 0,
                Err(e) => return Err(e),
            };
            if applied == 0 {
                break; // nothing newer on offer: stop rather than ask again
            }
            updates_applied += applied;
        }
        let finality_applied = self.apply_latest("finality_update", current_slot).await?;
        let optimistic_applied = self.apply_latest("optimistic_update", current_slot).await?;
        if let Some(path) = &self.store_path {
            persist::save(&self.store, path)?;
        }
        Ok(SyncReport {
            updates_applied,
            finality_applied,
            optimistic_applied,
            finalized_slot: self.store.finalized_header.beacon.slot,
            optimistic_slot: self.store.optimistic.header.beacon.slot,
        })
    }

    /// The `(start_period, count, required)` of updates still to fetch, or `None` when in
    /// sync. Required: without them signatures at `current_slot` cannot be verified; not
    /// required: the next committee, fetched ahead of the period's end.
    fn periods_to_fetch(&self, current_slot: u64) -> Option<(u64, u64, bool)> {
        let finalized = self.store.finalized_period();
        let current = self.store.spec.period(current_slot);
        let next_known = self.store.next_sync_committee().is_some();
        if current > finalized + 1 || (current == finalized + 1 && !next_known) {
            Some((
                finalized,
                (current - finalized).min(MAX_UPDATES_PER_REQUEST),
                true,
            ))
        } else if current <= finalized && !next_known {
            Some((finalized, 1, false))
        } else {
            None
        }
    }

    /// Fetches and applies `count` updates from `start`; returns how many were applied.
    async fn apply_updates(
        &mut self,
        start: u64,
        count: u64,
        current_slot: u64,
    ) -> Result<usize, LightError> {
        let path =
            format!("/eth/v1/beacon/light_client/updates?start_period={start}&count={count}");
        let bytes = self.api.get_ssz(&path, MAX_UPDATES_BYTES).await?;
        let mut applied = 0;
        for item in split_update_stream(&bytes, count as usize)? {
            let update = Update::from_ssz(&self.store.spec, item)?;
            match self.store.process_update(&update, current_slot) {
                Ok(outcome) if outcome.applied => applied += 1,
                Ok(_) | Err(LightError::Irrelevant { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(applied)
    }

    /// Applies `light_client/{kind}` (finality or optimistic update); a node without one (404)
    /// or one the store already has is not an error.
    async fn apply_latest(&mut self, kind: &str, current_slot: u64) -> Result<bool, LightError> {
        let path = format!("/eth/v1/beacon/light_client/{kind}");
        let bytes = match self.api.get_ssz(&path, MAX_LC_OBJECT_BYTES).await {
            Ok(bytes) => bytes,
            Err(LightError::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        let update = if kind == "finality_update" {
            Update::from_finality_ssz(&self.store.spec, &bytes)?
        } else {
            Update::from_optimistic_ssz(&self.store.spec, &bytes)?
        };
        match self.store.process_update(&update, current_slot) {
            Ok(outcome) => Ok(outcome.applied || outcome.optimistic_advanced),
            Err(LightError::Irrelevant { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The store's header as a verified header, `Finalized` when it is the finalized one.
fn store_header(store: &LightClientStore, trusted: &TrustedHeader, trust: Trust) -> VerifiedHeader {
    let trust = if trusted.header == store.finalized_header {
        Trust::Finalized
    } else {
        trust
    };
    VerifiedHeader::from_lc_header(&trusted.header, trust)
}

impl<A: BeaconApi> LightClient<A> {
    /// The execution block `block` refers to, proven from a verified beacon header.
    pub async fn anchor(&self, block: BlockRef) -> Result<Anchor, LightError> {
        let anchor = match block {
            BlockRef::Finalized => {
                anchor_from_lc_header(&self.store.finalized_header, Trust::Finalized)?
            }
            BlockRef::Safe => self.newest_signed(true).await?,
            BlockRef::Latest => self.newest_signed(false).await?,
            BlockRef::Number(number) => self.anchor_number(number).await?,
            BlockRef::Hash(hash) => self.anchor_hash(hash, None).await?,
        };
        self.remember(anchor);
        Ok(anchor)
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
        let store = &self.store;
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
            if cache.by_number.len() >= ANCHOR_CACHE_SIZE {
                *cache = AnchorCache::default(); // simple bound: start over
            }
            cache.by_number.insert(anchor.number, anchor);
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
            Ok(bytes) => Ok(Some(
                AnyBlock::from_ssz(&self.store.spec, &bytes)?.summary(),
            )),
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
        Ok((verify_signed_by_child(&self.store, &parent, &head)?, parent))
    }

    /// The newest signed block (with `supermajority`, the newest signed by 2/3): the head's
    /// parent when the head's aggregate verifies and qualifies, else the store's header.
    async fn newest_signed(&self, supermajority: bool) -> Result<Anchor, LightError> {
        let stored = if supermajority {
            store_header(&self.store, &self.store.safe, Trust::Supermajority)
        } else {
            store_header(
                &self.store,
                &self.store.optimistic,
                trust_of(self.store.optimistic.participants),
            )
        };
        let from_store = |s: &LightClientStore| {
            let header = if supermajority {
                &s.safe.header
            } else {
                &s.optimistic.header
            };
            anchor_from_lc_header(header, stored.trust)
        };
        match self.signed_head_parent().await {
            Ok((verified, parent))
                if verified.header.slot > stored.header.slot
                    && (!supermajority || verified.trust == Trust::Supermajority) =>
            {
                anchor_block(&verified, &parent)
            }
            // The head cannot be verified (node lagging, committee not yet known): the store's
            // own header is still a verified answer.
            Ok(_) | Err(_) => from_store(&self.store),
        }
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
        match self.signed_by_child(&block).await {
            Ok(verified) => anchor_block(&verified, &block),
            Err(LightError::UnknownCommittee { period, known }) => self.chained_from(newest, &block).await.map_err(|e| LightError::NotConnected {
                detail: format!("block {number} (slot {}) is signed by the committee of period {period}, which the store does not hold ({known}), and the parent chain failed: {e}", block.header.slot),
            }),
            Err(e) => Err(e),
        }
    }

    /// The canonical beacon block whose payload is execution block `number` (not yet trusted:
    /// the caller verifies it).
    async fn find_by_number(
        &self,
        number: u64,
        newest: Anchor,
    ) -> Result<BlockSummary, LightError> {
        // Each non-missed slot adds one execution block, so `gap` slots back holds a number
        // at least `number`; step back by the excess until it matches.
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
        for slot in block.header.slot + 1..=block.header.slot + MAX_CHILD_SEARCH_SLOTS {
            if let Some(child) = self.fetch_block(&slot.to_string()).await? {
                return verify_signed_by_child(&self.store, block, &child);
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
