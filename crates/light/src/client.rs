//! The light client facade: bootstrap from a checkpoint (or a saved store), sync the store to
//! the current period, and anchor execution blocks by tag, number or hash.
//!
//! The client is `Send + Sync` when its API is: a sync validates and applies updates to a
//! copy of the store on tokio's blocking pool and swaps the result in under a lock held only
//! for the swap, so anchors are answered (from the store as it was) while a sync runs; syncs
//! themselves run one at a time. BLS checks run on the blocking pool, never on an async worker.
//!
//! What does not live here: resolving a block reference to an anchor (see `resolve`), the
//! checks (see `store`, `anchor`), the transport (see `api`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use alloy_primitives::B256;

use crate::Anchor;
use crate::api::{BeaconApi, LcAnswer};
use crate::error::LightError;
use crate::json::{self, LcObject};
use crate::participation::ParticipationPolicy;
use crate::persist;
use crate::spec::ChainSpec;
use crate::store::LightClientStore;
use crate::types::{Bootstrap, Update, split_update_stream};

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
/// Slots a signature may be ahead of the local clock.
pub const CLOCK_DISPARITY_SLOTS: u64 = 1;
/// Tries of the slot arithmetic that finds a block by number.
pub const MAX_NUMBER_SEARCH_STEPS: usize = 16;
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

/// Where the store stands, for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LightStatus {
    /// Slot of the finalized header.
    pub finalized_slot: u64,
    /// Slot of the newest supermajority-signed header in the store.
    pub safe_slot: u64,
    /// Slot of the optimistic header.
    pub optimistic_slot: u64,
    /// Period of the finalized header.
    pub period: u64,
    /// Whether the next period's committee is known.
    pub next_committee_known: bool,
    /// The wall clock's slot.
    pub current_slot: u64,
}

/// The light client over a Beacon API.
pub struct LightClient<A: BeaconApi> {
    pub(crate) api: A,
    pub(crate) spec: ChainSpec,
    /// The verified store; replaced whole by a sync, so reads never wait for one.
    store: RwLock<Arc<LightClientStore>>,
    /// Held for the whole of a sync, so that two syncs do not interleave their updates.
    sync_lock: tokio::sync::Mutex<()>,
    store_path: Option<PathBuf>,
    clock: fn() -> u64,
    /// Which sync aggregates may anchor a block.
    pub(crate) policy: ParticipationPolicy,
    pub(crate) anchors: Mutex<AnchorCache>,
}

/// Anchors by execution number (lookups by hash scan it: it is small), and the head's
/// verified parent with the clock slot it was asked in (`None`: it could not be verified).
#[derive(Default)]
pub(crate) struct AnchorCache {
    pub(crate) by_number: HashMap<u64, Anchor>,
    pub(crate) head: Option<(u64, Option<Anchor>)>,
}

impl AnchorCache {
    /// Remembers `anchor`, starting over when full (a simple bound).
    pub(crate) fn insert(&mut self, anchor: Anchor) {
        if self.by_number.len() >= ANCHOR_CACHE_SIZE {
            self.by_number.clear();
        }
        self.by_number.insert(anchor.number, anchor);
    }
}

/// Seconds since the Unix epoch by the system clock.
pub fn system_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Which chain the light client follows, as the operator named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// Mainnet, unless the node serves the parameters of a chain that is not built in (a
    /// devnet): then the node's, with a warning.
    Default,
    /// These parameters (a built-in network or a file's): the node's, when it serves them,
    /// must agree.
    Named(ChainSpec),
    /// The node's parameters, with a warning (checked against a built-in chain's when the
    /// genesis validators root is one's).
    Node,
}

/// The chain's parameters for `network`. A built-in or given chain's own values are used,
/// never the node's: the node's (`/eth/v1/config/spec`, `/eth/v1/beacon/genesis`) are only
/// compared, when it serves them, and a difference is refused naming the field.
pub async fn resolve_chain_spec(
    api: &impl BeaconApi,
    network: Network,
) -> Result<ChainSpec, LightError> {
    let node = node_chain_spec(api).await?;
    let warn_untrusted = |spec: &ChainSpec| {
        tracing::warn!(
            genesis_validators_root = %spec.genesis_validators_root,
            "the chain's parameters (genesis time, slot time, period length, forks) are the beacon node's, taken on trust: name the network with --network mainnet|sepolia|hoodi|FILE"
        );
    };
    match (network, node) {
        (Network::Named(ours), Some(node)) => ours.check_same(&node, "node").map(|()| ours),
        (Network::Named(ours), None) => Ok(ours),
        (Network::Default, None) => Ok(ChainSpec::mainnet()),
        (Network::Default | Network::Node, Some(node)) => {
            match ChainSpec::known(&node.genesis_validators_root) {
                Some(known) => known.check_same(&node, "node").map(|()| known),
                None => {
                    warn_untrusted(&node);
                    Ok(node)
                }
            }
        }
        (Network::Node, None) => Err(LightError::Config {
            field: "the node's /eth/v1/config/spec and /eth/v1/beacon/genesis (not served)",
        }),
    }
}

/// The node's parameters; `None` when it does not serve its config or genesis.
async fn node_chain_spec(api: &impl BeaconApi) -> Result<Option<ChainSpec>, LightError> {
    let absent = |e: &LightError| matches!(e, LightError::NotFound { .. });
    let config = match api.get_json("/eth/v1/config/spec", MAX_JSON_BYTES).await {
        Err(e) if absent(&e) => return Ok(None),
        other => other?,
    };
    let genesis = match api.get_json("/eth/v1/beacon/genesis", MAX_JSON_BYTES).await {
        Err(e) if absent(&e) => return Ok(None),
        other => other?,
    };
    ChainSpec::from_beacon_api(&config, &genesis).map(Some)
}

/// Reads the chain's parameters from the beacon node (`/eth/v1/config/spec`,
/// `/eth/v1/beacon/genesis`); when the genesis validators root is a built-in chain's, the
/// node's must agree with it, and the built-in ones are used.
pub async fn fetch_chain_spec(api: &impl BeaconApi) -> Result<ChainSpec, LightError> {
    resolve_chain_spec(api, Network::Node).await
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
        let answer = api.get_lc_object(&path, MAX_LC_OBJECT_BYTES).await?;
        let bytes = lc_object_ssz(&spec, LcObject::Bootstrap, answer, &path)?;
        let bootstrap = Bootstrap::from_ssz(&spec, &bytes)?;
        let store = LightClientStore::bootstrap(spec, checkpoint, &bootstrap)?;
        Ok(Self::from_store(api, store))
    }

    /// A client over an existing store (e.g. one loaded with [`persist::load`]).
    pub fn from_store(api: A, store: LightClientStore) -> Self {
        LightClient {
            api,
            spec: store.spec.clone(),
            store: RwLock::new(Arc::new(store)),
            sync_lock: tokio::sync::Mutex::new(()),
            store_path: None,
            clock: system_clock,
            policy: ParticipationPolicy::default(),
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

    /// Anchors under `policy` instead of the default 2/3 of the committee.
    pub fn with_participation(mut self, policy: ParticipationPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The participation rule anchors are held to.
    pub fn participation(&self) -> ParticipationPolicy {
        self.policy
    }

    /// The store, read under its lock (keep `f` short: syncs wait for it).
    pub fn with_store<R>(&self, f: impl FnOnce(&LightClientStore) -> R) -> R {
        f(&self.read_store())
    }

    /// Where the store stands.
    pub fn status(&self) -> LightStatus {
        let current_slot = self.current_slot();
        self.with_store(|s| LightStatus {
            finalized_slot: s.finalized_header.beacon.slot,
            safe_slot: s.safe.header.beacon.slot,
            optimistic_slot: s.optimistic.header.beacon.slot,
            period: s.finalized_period(),
            next_committee_known: s.next_sync_committee().is_some(),
            current_slot,
        })
    }

    /// The chain.
    pub fn spec(&self) -> &ChainSpec {
        &self.spec
    }

    /// The slot of the wall clock.
    pub fn current_slot(&self) -> u64 {
        self.spec.slot_at((self.clock)())
    }

    /// The store as it stands (a snapshot: a sync swaps a new one in, never changes it).
    pub(crate) fn read_store(&self) -> Arc<LightClientStore> {
        // Only a swap happens under the write lock: a poisoned lock still holds a whole store.
        self.store.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `store` in place of the current one.
    fn swap_store(&self, store: LightClientStore) -> Arc<LightClientStore> {
        let store = Arc::new(store);
        *self.store.write().unwrap_or_else(|e| e.into_inner()) = store.clone();
        store
    }

    /// Brings the store to the current period (updates by period), then applies the latest
    /// finality and optimistic updates, and saves the store if it has a path.
    ///
    /// Updates are validated and applied to a copy of the store, off the async workers;
    /// anchors are answered from the store as it was until the copy is swapped in at the end.
    /// Only validated changes are in the copy, so it is swapped in even when a later step
    /// fails (that error is then returned, and the store not saved).
    pub async fn sync(&self) -> Result<SyncReport, LightError> {
        let _one_at_a_time = self.sync_lock.lock().await;
        let current_slot = self.current_slot();
        let working = WorkingStore::new(&self.read_store());
        let stages = self.sync_stages(&working, current_slot).await;
        let store = self.swap_store(working.into_store());
        let (updates_applied, finality_applied, optimistic_applied) = stages?;
        if let Some(path) = &self.store_path {
            persist::save(&store, path)?;
        }
        Ok(SyncReport {
            updates_applied,
            finality_applied,
            optimistic_applied,
            finalized_slot: store.finalized_header.beacon.slot,
            optimistic_slot: store.optimistic.header.beacon.slot,
        })
    }

    /// The sync's steps on `working`: updates by period, then the latest finality and
    /// optimistic updates; returns (updates applied, finality applied, optimistic applied).
    async fn sync_stages(
        &self,
        working: &WorkingStore,
        current_slot: u64,
    ) -> Result<(usize, bool, bool), LightError> {
        // Signatures up to one slot ahead of the local clock are accepted (clock disparity
        // between this host and the beacon node).
        let newest_signature_slot = current_slot.saturating_add(CLOCK_DISPARITY_SLOTS);
        let mut updates_applied = 0;
        while let Some((start, count, required)) =
            working.read(|store| periods_to_fetch(store, current_slot))
        {
            let applied = match self
                .apply_updates(working, start, count, newest_signature_slot)
                .await
            {
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
        let finality_applied = self
            .apply_latest(working, "finality_update", newest_signature_slot)
            .await?;
        let optimistic_applied = self
            .apply_latest(working, "optimistic_update", newest_signature_slot)
            .await?;
        Ok((updates_applied, finality_applied, optimistic_applied))
    }

    /// Fetches `count` updates from `start` and applies them to `working`; returns how many
    /// were applied.
    async fn apply_updates(
        &self,
        working: &WorkingStore,
        start: u64,
        count: u64,
        current_slot: u64,
    ) -> Result<usize, LightError> {
        let path =
            format!("/eth/v1/beacon/light_client/updates?start_period={start}&count={count}");
        let updates = match self.api.get_lc_object(&path, MAX_UPDATES_BYTES).await? {
            LcAnswer::Ssz(bytes) => split_update_stream(&bytes, count as usize)?
                .into_iter()
                .map(|item| Update::from_ssz(&self.spec, item))
                .collect::<Result<Vec<_>, _>>()?,
            LcAnswer::Json(doc) => json::updates_ssz(&self.spec, &doc, count as usize, &path)?
                .iter()
                .map(|item| Update::from_ssz(&self.spec, item))
                .collect::<Result<Vec<_>, _>>()?,
        };
        working
            .apply(move |store| {
                let mut applied = 0;
                for update in &updates {
                    match store.process_update(update, current_slot) {
                        Ok(outcome) if outcome.applied => applied += 1,
                        Ok(_) | Err(LightError::Irrelevant { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(applied)
            })
            .await?
    }

    /// Applies `light_client/{kind}` (finality or optimistic update) to `working`; a node
    /// without one (404) or one the store already has is not an error.
    async fn apply_latest(
        &self,
        working: &WorkingStore,
        kind: &str,
        current_slot: u64,
    ) -> Result<bool, LightError> {
        let path = format!("/eth/v1/beacon/light_client/{kind}");
        let answer = match self.api.get_lc_object(&path, MAX_LC_OBJECT_BYTES).await {
            Ok(answer) => answer,
            // None yet: a node before its chain's first finality answers 404, or (Lodestar)
            // 500 "No finality update available". What was offered is still checked; what
            // was not leaves the store as it is.
            Err(LightError::NotFound { .. } | LightError::Api { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        let update = if kind == "finality_update" {
            let bytes = lc_object_ssz(&self.spec, LcObject::FinalityUpdate, answer, &path)?;
            Update::from_finality_ssz(&self.spec, &bytes)?
        } else {
            let bytes = lc_object_ssz(&self.spec, LcObject::OptimisticUpdate, answer, &path)?;
            Update::from_optimistic_ssz(&self.spec, &bytes)?
        };
        let outcome = working
            .apply(move |store| store.process_update(&update, current_slot))
            .await?;
        match outcome {
            Ok(outcome) => Ok(outcome.applied || outcome.optimistic_advanced),
            Err(LightError::Irrelevant { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The SSZ bytes of a light-client object as the node sent it (JSON turned into the SSZ of
/// its fork's container, so both go through the same decoding and checks).
fn lc_object_ssz(
    spec: &ChainSpec,
    what: LcObject,
    answer: LcAnswer,
    path: &str,
) -> Result<Vec<u8>, LightError> {
    match answer {
        LcAnswer::Ssz(bytes) => Ok(bytes),
        LcAnswer::Json(doc) => json::lc_object_ssz(spec, what, &doc, path),
    }
}

/// The `(start_period, count, required)` of updates still to fetch, or `None` when in
/// sync. Required: without them signatures at `current_slot` cannot be verified; not
/// required: the next committee, fetched ahead of the period's end.
fn periods_to_fetch(store: &LightClientStore, current_slot: u64) -> Option<(u64, u64, bool)> {
    let finalized = store.finalized_period();
    let current = store.spec.period(current_slot);
    let next_known = store.next_sync_committee().is_some();
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

/// The copy of the store a sync works on, shared with the blocking threads that change it
/// (only the sync holding `sync_lock` uses it, so its lock is never contended).
struct WorkingStore(Arc<Mutex<LightClientStore>>);

impl WorkingStore {
    fn new(store: &LightClientStore) -> Self {
        WorkingStore(Arc::new(Mutex::new(store.clone())))
    }

    /// `f` of the copy as it stands.
    fn read<R>(&self, f: impl FnOnce(&LightClientStore) -> R) -> R {
        f(&self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `f` on the copy on tokio's blocking pool (BLS checks and committee decompression
    /// are CPU-bound). The store's steps that can fail run before it changes, so a copy whose
    /// lock a panic poisoned is still whole.
    async fn apply<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut LightClientStore) -> T + Send + 'static,
    ) -> Result<T, LightError> {
        let store = self.0.clone();
        off_workers(move || f(&mut store.lock().unwrap_or_else(|e| e.into_inner()))).await
    }

    /// The copy, to swap in.
    fn into_store(self) -> LightClientStore {
        match Arc::try_unwrap(self.0) {
            Ok(store) => store.into_inner().unwrap_or_else(|e| e.into_inner()),
            Err(shared) => shared.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }
}

/// Runs the CPU-bound `f` on tokio's blocking pool, not on an async worker; a panic in `f`
/// goes on in the caller.
pub(crate) async fn off_workers<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, LightError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(LightError::Api {
            path: "(blocking pool)".into(),
            detail: "the runtime is shutting down".into(),
        }),
    }
}
